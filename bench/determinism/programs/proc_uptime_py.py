# /proc/uptime: seconds since boot, and idle time, read as a file. The engine
# serves it from the virtual boot clock (determ_procfs.h), so it rises with
# virtual time: across a sleep, and in a child started later.
import subprocess, time
a = open("/proc/uptime").read()
time.sleep(0.2)
b = open("/proc/uptime").read()
print(a.split(), b.split(), float(b.split()[0]) - float(a.split()[0]) >= 0.2)
print(subprocess.run(["cat", "/proc/uptime"], capture_output=True, text=True).stdout, end="")
