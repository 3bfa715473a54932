# /proc/uptime: seconds since boot read from a file the engine does not
# virtualize. Expected to diverge.
print(open("/proc/uptime").read().split()[0])
