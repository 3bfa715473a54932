# Monotonic clocks from Python.
import time
a = time.monotonic()
print(a, time.monotonic_ns(), time.perf_counter(), time.perf_counter_ns())
print(time.clock_gettime(time.CLOCK_BOOTTIME))
sum(range(300000))
print("elapsed", time.monotonic() - a)
