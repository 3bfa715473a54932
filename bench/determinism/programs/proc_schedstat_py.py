# /proc/self/schedstat: ns really spent on a CPU and waiting for one, and the
# number of timeslices. Kernel scheduler accounting, not virtualized: the
# corpus's known-bad input (every replay should diverge).
sum(range(1000000))
print(open("/proc/self/schedstat").read(), end="")
