# Directory listing order (readdir) of a directory this program fills, and of
# one that was in the snapshot.
import os, shutil, subprocess
d = "/root/out/listdir"
shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
for i in range(300):
    open(os.path.join(d, "f%03d-%x" % (i, (i * 2654435761) & 0xffff)), "w").write(str(i))
print(os.listdir(d)[:40])
print([e.name for e in os.scandir(d)][-20:])
print(subprocess.run(["ls", "-f", d], capture_output=True, text=True).stdout.split()[:20])
print(os.listdir("/root/corpus"))
