# The accounting fields of /proc/self/stat: utime, stime, starttime (clock
# ticks since boot), vsize, rss, minflt. Read from the kernel, not virtualized.
f = open("/proc/self/stat").read()
rest = f[f.rindex(")") + 2:].split()
print("minflt", rest[7], "utime", rest[11], "stime", rest[12], "starttime", rest[19], "vsize", rest[20], "rss", rest[21])
