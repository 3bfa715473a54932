# The host name read from files instead of uname(2).
cat /proc/sys/kernel/hostname
cat /etc/hostname 2>&1 || true
