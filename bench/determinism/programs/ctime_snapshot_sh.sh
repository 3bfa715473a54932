# ctime and atime of files that are part of the snapshot (written before the
# recording, not changed by it): stat times are virtualized, so they must read
# the same in the replay's fresh environment.
stat -c '%n mtime %y ctime %z atime %x' /root/corpus/cproj/proj.h /root/bin/rdtsc_c
