# Host load and boot time as programs see them: uptime(1) (reads
# /proc/uptime and /proc/loadavg), /proc/loadavg, the first cpu line and
# btime of /proc/stat, and the boot time Python derives from them.
uptime
cat /proc/loadavg
grep -E '^(cpu |btime )' /proc/stat
python3 -c 'import time; b = int([l.split()[1] for l in open("/proc/stat") if l.startswith("btime")][0]); print(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(b)))'
