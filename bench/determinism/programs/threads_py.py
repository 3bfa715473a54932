# Python threads incrementing a shared counter under a lock: the result is
# deterministic, the interleaving is not.
import threading
counter = 0
lock = threading.Lock()
def work(n):
    global counter
    for _ in range(n):
        with lock:
            counter += 1
ts = [threading.Thread(target=work, args=(20000,)) for _ in range(4)]
for t in ts: t.start()
for t in ts: t.join()
print("counter", counter)
