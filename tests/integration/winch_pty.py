# Runs `sbx exec -it` on a pty, resizes the pty as a terminal would (new
# size, then SIGWINCH to sbx), and checks the command inside saw the new size.
# Usage: winch_pty.py SBX ENV_ID. Exit 0 when the new size arrived.
import os, pty, sys, time, fcntl, termios, struct, select
sbx, env = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execv(sbx, [sbx, "exec", "-it", env, "--", "sh", "-c", 'trap "stty size; exit 0" WINCH; stty size; i=0; while [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; echo nowinch'])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
out = b""
t0 = time.time()
resized = False
while time.time() - t0 < 8:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 1024)
        except OSError:
            break
        if not d: break
        out += d
    if not resized and b"24 80" in out:
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
        os.kill(pid, 28)  # the terminal would send SIGWINCH to its foreground process
        resized = True
os.waitpid(pid, 0)
print(out.decode(errors="replace"))
sys.exit(0 if b"33 101" in out else 1)
