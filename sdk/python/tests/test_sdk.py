"""Tests of the Python SDK against the real sbx (tests/integration/test_sdk_python.sh
runs them over stdio, then over HTTP with SBX_URL/SBX_TOKEN set). Needs $SBX
(or sbx on PATH), SBX_ROOT and SBX_RUN."""

import asyncio
import base64
import os
import shutil
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import sbx  # noqa: E402
from sbx import AsyncSandbox, InvalidArgument, NotFound, Sandbox  # noqa: E402


class SandboxTest(unittest.TestCase):
    def test_quick_start(self):
        with Sandbox.create(memory="256m", timeout=60) as sb:
            self.assertRegex(sb.id, r"^[0-9a-f]{12}$")
            self.assertEqual(sb.files.write("/root/main.py", "print(6*7)"), len("print(6*7)"))
            seen = []
            r = sb.commands.run("python3 /root/main.py", timeout=30, on_stdout=seen.append)
            self.assertEqual((r.exit_code, r.stdout, r.stderr, r.ok), (0, "42\n", "", True))
            self.assertEqual("".join(seen), "42\n")
            r = sb.commands.run(["sh", "-c", "echo err >&2; exit 3"])
            self.assertEqual((r.exit_code, r.stderr, r.ok), (3, "err\n", False))
        self.assertNotIn(sb.id, [e["environment_id"] for e in Sandbox.list()])

    def test_snapshot_restore_fork(self):
        with Sandbox.create() as sb:
            sb.files.write("/root/f", "v1")
            snap = sb.snapshot(label=f"sdk-before-{os.getpid()}")
            self.assertTrue(snap.id.startswith("sha256:"))
            sb.commands.run("rm -rf /root/f /usr/lib/python3*")
            self.assertNotEqual(sb.commands.run("test -e /root/f").exit_code, 0)
            sb.restore(snap)
            self.assertEqual(sb.files.read("/root/f"), "v1")
            self.assertEqual(sb.commands.run("python3 -c 'print(1)'").stdout, "1\n")
            a, b = Sandbox.fork(snap), Sandbox.fork(snap.id)
            try:
                a.files.write("/root/f", "a")
                b.files.write("/root/f", "b")
                self.assertEqual((a.files.read("/root/f"), b.files.read("/root/f")), ("a", "b"))
                self.assertIn("/root/f", a.diff(snap).modified)
            finally:
                a.kill()
                b.kill()

    def test_files_binary_and_listing(self):
        with Sandbox.create() as sb:
            data = bytes(range(256)) * 4
            sb.files.write("/tmp/blob", data, mode=0o600)
            self.assertEqual(sb.files.read("/tmp/blob", binary=True), data)
            names = {e.name: e for e in sb.files.list("/tmp")}
            self.assertEqual(names["blob"].size, len(data))
            self.assertEqual(names["blob"].mode & 0o777, 0o600)

    def test_trace_and_replay(self):
        with Sandbox.create() as sb:
            t = sb.commands.run("date +%s.%N; head -c 8 /dev/urandom | od -An -tx1", trace=True)
            self.assertEqual(t.exit_code, 0)
            self.assertTrue(t.trace_id and t.trace_id.startswith("sha256:"))
            r = sb.replay(t.trace_id)
            self.assertTrue(r.match, r.divergence)

    def test_background_process(self):
        with Sandbox.create() as sb:
            p = sb.commands.run("echo up; sleep 0.5; echo later; sleep 300", background=True)
            self.assertIsInstance(p, sbx.Process)
            self.assertRegex(p.process_id, r"^p[0-9]+$")
            self.assertGreater(p.pid, 1)
            self.assertTrue(p.running)
            self.assertIn(p.process_id, [r["process_id"] for r in sb.commands.list()])
            seen = ""
            for _ in range(100):
                out, _err = p.read()
                seen += out
                if "later" in seen:
                    break
                time.sleep(0.1)
            self.assertEqual(seen, "up\nlater\n")
            self.assertEqual(p.read(), ("", ""))  # nothing new
            with self.assertRaises(TimeoutError):
                p.wait(timeout=0.3)
            self.assertTrue(p.kill())
            r = p.wait(timeout=10)
            self.assertEqual((r.exit_code, r.signal, r.stdout), (None, 15, "up\nlater\n"))
            self.assertFalse(p.kill())  # exited already
            q = sb.commands.run(["sh", "-c", "echo out; echo err >&2; exit 5"], background=True)
            r = sb.commands.connect(q.process_id).wait(timeout=30)
            self.assertEqual((r.exit_code, r.stdout, r.stderr, r.ok), (5, "out\n", "err\n", False))
            with self.assertRaises(InvalidArgument):
                sb.commands.run("cat", background=True, stdin="x")
            with self.assertRaises(NotFound):
                sb.commands.connect("p999")

    def test_errors_carry_codes(self):
        with self.assertRaises(NotFound) as cm:
            Sandbox.connect("no-such-environment")
        self.assertEqual(cm.exception.code, "not_found")
        with self.assertRaises(InvalidArgument):
            Sandbox.create(memory="lots")
        with self.assertRaises(sbx.SbxError) as cm:
            Sandbox.create(template="dir:/nonexistent-sbx-sdk")
        self.assertIn(cm.exception.code, ("not_found", "invalid_argument"))
        with Sandbox.create() as sb:
            with self.assertRaises(NotFound):
                sb.files.read("/nonexistent")
            with self.assertRaises(InvalidArgument):
                sb.commands.run([])

    def test_connect_attaches_without_owning(self):
        sb = Sandbox.create(name=f"sdk-attach-{os.getpid()}")
        try:
            with Sandbox.connect(f"sdk-attach-{os.getpid()}") as again:
                self.assertEqual(again.id, sb.id)
                self.assertEqual(again.commands.run("echo hi").stdout, "hi\n")
            # leaving the block of an attached sandbox keeps it
            self.assertEqual(sb.commands.run("echo still").stdout, "still\n")
        finally:
            sb.kill()
        sb.kill()  # idempotent

    def test_concurrent_calls_from_threads(self):
        boxes = [Sandbox.create() for _ in range(3)]
        out = {}

        def work(i, b):
            out[i] = [b.commands.run(f"echo {i}-{k}").stdout for k in range(5)]

        ts = [threading.Thread(target=work, args=(i, b)) for i, b in enumerate(boxes)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for b in boxes:
            b.kill()
        for i in range(3):
            self.assertEqual(out[i], [f"{i}-{k}\n" for k in range(5)])

    def test_async(self):
        async def main():
            async with await AsyncSandbox.create() as a:
                await a.files.write("/root/x", "async")
                r1, r2 = await asyncio.gather(a.commands.run("cat /root/x"), a.commands.run("echo two"))
                return r1.stdout, r2.stdout

        self.assertEqual(asyncio.run(main()), ("async", "two\n"))

    def test_async_background(self):
        async def main():
            async with await AsyncSandbox.create() as a:
                p = await a.commands.run("echo bg; exit 2", background=True)
                r = await p.wait(timeout=30)
                return r.exit_code, r.stdout, [x["process_id"] for x in await a.commands.list()] == [p.process_id]

        self.assertEqual(asyncio.run(main()), (2, "bg\n", True))

    def test_run_code(self):
        try:
            import ipykernel, jupyter_client, matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("the host python3 lacks ipykernel, jupyter_client or matplotlib")
        with Sandbox.create() as sb:
            ex = sb.run_code("x = 41")
            self.assertIsNone(ex.error)
            self.assertEqual((ex.results, ex.text), ([], None))
            seen = []
            ex = sb.run_code("print('hi'); x + 1", on_stdout=seen.append)
            self.assertEqual((ex.text, ex.logs.stdout), ("42", ["hi\n"]))
            self.assertTrue(ex.results[0].is_main_result)
            self.assertIsInstance(ex.execution_count, int)
            self.assertEqual("".join(seen), "hi\n")
            got = []
            ex = sb.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()", on_result=got.append)
            pngs = [r.png for r in ex.results if r.png]
            self.assertEqual(len(pngs), 1, ex.results)
            self.assertEqual(base64.b64decode(pngs[0])[:8], b"\x89PNG\r\n\x1a\n")
            self.assertEqual([r.png for r in got], [pngs[0]])
            ex = sb.run_code("def f(): return 1/0\nf()")
            self.assertEqual(ex.error.name, "ZeroDivisionError")
            self.assertIn("division by zero", ex.error.traceback)
            self.assertEqual(ex.results, [])
            ctx = sb.create_code_context(cwd="/tmp")
            self.assertEqual((ctx.language, ctx.cwd), ("python", "/tmp"))
            self.assertEqual(sb.run_code("import os; os.getcwd()", context=ctx).text, "'/tmp'")
            self.assertEqual(sb.run_code("x", context=ctx).error.name, "NameError")
            self.assertIn(ctx.id, [c.id for c in sb.list_code_contexts()])
            sb.restart_code_context(ctx)
            sb.remove_code_context(ctx)
            self.assertNotIn(ctx.id, [c.id for c in sb.list_code_contexts()])
            with self.assertRaises(NotFound):
                sb.run_code("1", context=ctx)
            with self.assertRaises(InvalidArgument):
                sb.run_code("1", language="python", context=ctx)

            async def go():
                asb = await AsyncSandbox.connect(sb.id)
                return (await asb.run_code("x * 2")).text

            self.assertEqual(asyncio.run(go()), "82")

    @unittest.skipUnless(all(shutil.which(p) for p in ("Xvfb", "xdotool", "scrot")),
                         "Xvfb, xdotool or scrot is not installed (scripts/deps.sh test installs them)")
    def test_desktop(self):
        with Sandbox.create() as sb:
            shot = sb.screenshot()
            self.assertEqual(shot.png[:8], b"\x89PNG\r\n\x1a\n")
            self.assertEqual((shot.width, shot.height), (1024, 768))
            self.assertEqual(int.from_bytes(shot.png[16:20], "big"), shot.width)
            self.assertEqual(sb.input([{"type": "move", "x": 40, "y": 30}, {"type": "click"}]), 2)
            r = sb.commands.run(["xdotool", "getmouselocation"], env={"DISPLAY": ":0"})
            self.assertTrue(r.stdout.startswith("x:40 y:30 "), r.stdout)
            with self.assertRaises(InvalidArgument):
                sb.input([{"type": "key", "keys": "a;id"}])

            async def go():
                return (await (await AsyncSandbox.connect(sb.id)).screenshot()).width

            self.assertEqual(asyncio.run(go()), 1024)

    def test_sizes(self):
        self.assertEqual(sbx.parse_size("512m", "m"), 512 << 20)
        self.assertEqual(sbx.parse_size("2G", "m"), 2 << 30)
        self.assertEqual(sbx.parse_size(1000, "m"), 1000)
        with self.assertRaises(InvalidArgument):
            sbx.parse_size("12q", "m")


if __name__ == "__main__":
    unittest.main(verbosity=2)
