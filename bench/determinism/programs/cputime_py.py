# CPU time from Python: process_time (CLOCK_PROCESS_CPUTIME_ID), thread_time.
import time
a = time.process_time()
sum(i * i for i in range(300000))
b = time.process_time()
print(a, b, b - a)
print(time.thread_time(), time.process_time_ns())
