# A file written by the previous run and not read since: reading it makes the
# kernel update its atime (relatime: atime <= mtime), and the stat after it
# shows a time from inside the run, which the engine maps to a fresh virtual
# time. The clock read after it shows whether the replay went the same way.
p=/root/out/atime_probe
[ -f $p ] || echo first > $p
cat $p > /dev/null
stat -c 'atime %x' $p
date +%s.%N
echo "written $(date +%s%N)" > $p   # written, not read: the next run reads it first
