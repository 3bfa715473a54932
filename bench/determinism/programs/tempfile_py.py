# tempfile names (random names from a Random() seeded by os.urandom).
import os, shutil, tempfile
d = "/root/out/tempfile_py"
shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
fd, p = tempfile.mkstemp(dir=d, suffix=".txt"); os.write(fd, b"x"); os.close(fd)
print(os.path.basename(p))
print(os.path.basename(tempfile.mkdtemp(dir=d)))
with tempfile.NamedTemporaryFile(dir=d, delete=False) as f:
    f.write(b"y"); print(os.path.basename(f.name))
print(os.path.basename(tempfile.NamedTemporaryFile().name))  # in /tmp, not kept
print(sorted(os.listdir(d)))
