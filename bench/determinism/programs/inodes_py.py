# Inode and device numbers: the host file system's, virtual under determinism
# (stat results and directory listings agree; hard links stay one file).
import os
p = "/root/out/inode-probe"
for f in (p, p + ".link"):
    if os.path.exists(f):
        os.unlink(f)
open(p, "w").write("x")
os.link(p, p + ".link")
s = os.stat(p)
listed = {e.name: e.inode() for e in os.scandir("/root/out")}
assert listed["inode-probe"] == s.st_ino == os.stat(p + ".link").st_ino
print(s.st_ino, s.st_dev, os.stat("/root/corpus").st_ino, os.stat("/").st_dev, sorted(listed.values()))
