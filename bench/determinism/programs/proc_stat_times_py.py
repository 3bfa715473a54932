# The accounting fields of /proc/self/stat and of a child's /proc/PID/stat:
# utime, stime, cutime, starttime, minflt, rss from the virtual clock (0 for
# the counters), vsize as the kernel says (ASLR off: the same mappings). A
# running child's utime is not printed: what its clock reads when another
# process looks is timing (its starttime is fixed at the fork).
import os, time
def stat(pid="self"):
    f = open("/proc/%s/stat" % pid).read()
    return f[f.rindex(")") + 2:].split()
sum(range(1000000))
r = stat()
print("minflt", r[7], "utime", r[11], "stime", r[12], "starttime", r[19], "vsize", r[20], "rss", r[21])
time.sleep(0.1)
pid = os.fork()
if pid == 0:
    time.sleep(0.2)
    os._exit(0)
c = stat(pid)
os.waitpid(pid, 0)
r = stat()
print("child starttime", c[19], "cutime", r[13], "after", r[11])
