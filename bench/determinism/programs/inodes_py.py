# Inode and device numbers: assigned by the host file system, not virtualized.
import os
p = "/root/out/inode-probe"
open(p, "w").write("x")
s = os.stat(p)
print(s.st_ino, s.st_dev, os.stat("/root/corpus").st_ino, os.stat("/").st_dev)
