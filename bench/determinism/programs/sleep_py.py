# Elapsed time measured across sleeps (monotonic and wall clock, Python and sh).
import subprocess, time
a, w = time.monotonic(), time.time()
time.sleep(0.1)
print("monotonic elapsed", time.monotonic() - a)
print("wall elapsed", time.time() - w)
print(subprocess.run(["sh", "-c", "a=$(date +%s%N); sleep 0.1; b=$(date +%s%N); echo sh elapsed ns $((b-a))"],
                     capture_output=True, text=True).stdout, end="")
