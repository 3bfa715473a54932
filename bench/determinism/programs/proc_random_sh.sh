# The kernel's random UUIDs read as files: a fresh v4 UUID per open of
# random/uuid, one boot_id for the whole run (what systemd and journald use
# to tell boots apart), from Python too.
for i in 1 2; do cat /proc/sys/kernel/random/uuid; done
cat /proc/sys/kernel/random/boot_id
python3 -c 'print(open("/proc/sys/kernel/random/uuid").read().strip(), open("/proc/sys/kernel/random/boot_id").read().strip())'
