# File times of a file written, seen and written again microseconds apart
# (within one kernel tick or across two), with the clock read in between.
import os, time
os.makedirs("/root/out", exist_ok=True)
f = "/root/out/rewrite_py.txt"
for i in range(30):
    with open(f, "a") as w:
        w.write("x")
    s = os.stat(f)
    time.time()
    print(s.st_mtime_ns, s.st_ctime_ns)
os.unlink(f)
