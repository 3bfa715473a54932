# A small unittest suite; its report includes "Ran N tests in 0.00Xs".
import unittest, json, time

class T(unittest.TestCase):
    def test_json(self):
        self.assertEqual(json.loads(json.dumps({"a": [1, 2]})), {"a": [1, 2]})
    def test_sleep(self):
        time.sleep(0.01)
        self.assertTrue(True)
    def test_sum(self):
        self.assertEqual(sum(range(1000)), 499500)
    @unittest.skip("skipped on purpose")
    def test_skipped(self):
        pass

if __name__ == "__main__":
    unittest.main(verbosity=2)
