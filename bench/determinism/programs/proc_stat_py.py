# ps-like fields of /proc/self/stat that identify the process: pid, comm,
# state, ppid, pgrp, session, num_threads; and /proc/self/status Pid lines.
import os
f = open("/proc/self/stat").read()
comm_end = f.rindex(")")
pid, comm = f[:comm_end].split(" (", 1)
rest = f[comm_end + 2:].split()
print("pid", pid, "comm", comm, "state", rest[0], "ppid", rest[1], "pgrp", rest[2], "session", rest[3], "threads", rest[17])
print([l for l in open("/proc/self/status").read().splitlines() if l.split(":")[0] in ("Pid", "PPid", "Tgid", "NSpid", "Threads", "Cpus_allowed_list")])
