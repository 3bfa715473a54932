#!/usr/bin/env python3
"""Interleaved A/B of removal (issue 12, docs/BENCHMARKS.md "Removal off the
critical path"): two sbx binaries on one store, alternating run by run, so
that the load of a shared machine falls on both alike.

  bench/reclaim_ab.py A_SBX B_SBX [what...]   what: run run-settled rm restore
                                              (default: run rm restore)

  run      `sbx run -- /bin/true`, back to back (a reclaimer of the last run
           may still be at work: that is the loop's real cost)
  run-settled  the same, each run once the last one's trash is gone
  rm       `sbx rm` of a fresh environment (created untimed just before)
  restore  `sbx restore` to an empty snapshot of an environment whose writable
           layer was just filled with SIZE MB (half 4 KiB files, half four
           large ones), with a cold `sbx create` timed in the same round;
           the trash is left to empty (untimed) before each timed step.
BENCH_RUNS (default 30) runs of run and rm, BENCH_RESTORE_RUNS (default 5;
3 at 1 GB) of restore, BENCH_SIZES (default "10 100 1000"). Root only.
Prints medians per binary and the ratio B/A."""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def sh(*a, **kw):
    return subprocess.run(a, check=True, capture_output=True, text=True, **kw).stdout.strip()


def timed(*a):
    t = time.perf_counter()
    subprocess.run(a, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000


def settle(root):
    """Until the trash is empty and no reclaimer runs (bounded)."""
    envs = os.path.join(root, "envs")
    for _ in range(6000):
        busy = any(e.startswith(".trash-") for e in os.listdir(envs))
        if not busy:
            for p in os.listdir("/proc"):
                try:
                    if p.isdigit() and open("/proc/%s/comm" % p).read().strip() == "sbx-reclaim":
                        busy = True
                        break
                except OSError:
                    pass
        if not busy:
            return
        time.sleep(0.01)


def fill(sbx, env, mb):
    sbx_exec = [sbx, "exec", env, "--", "python3", "-c", """
import os, shutil
n = %d * 1024 * 1024
shutil.rmtree('/root/w', ignore_errors=True)
os.makedirs('/root/w/small', exist_ok=True)
for i in range(n // 2 // 4096):
    d = '/root/w/small/%%03d' %% (i %% 256)
    os.makedirs(d, exist_ok=True)
    open('%%s/f%%d' %% (d, i), 'wb').write(b'x' * 4096)
for i in range(4):
    with open('/root/w/big%%d' %% i, 'wb') as f:
        for _ in range(n // 8 // (1 << 20)):
            f.write(b'y' * (1 << 20))
""" % mb]
    subprocess.run(sbx_exec, check=True)


def report(name, a, b):
    ma, mb = statistics.median(a), statistics.median(b)
    print("%-22s A %8.2f ms  B %8.2f ms  B/A %.2f  (n=%d, %d)" % (name, ma, mb, mb / ma, len(a), len(b)), flush=True)
    return ma, mb


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    A, B = sys.argv[1:3]
    what = sys.argv[3:] or ["run", "rm", "restore"]
    runs = int(os.environ.get("BENCH_RUNS", "30"))
    work = tempfile.mkdtemp(prefix="sbx-reclaim-ab.")
    os.environ["SBX_ROOT"] = root = os.path.join(work, "root")
    os.environ["SBX_RUN"] = os.path.join(work, "run")
    print("load %s" % open("/proc/loadavg").read().strip(), flush=True)
    sh(B, "run", "--", "/bin/true")  # the store's base, once
    if "run" in what:
        t = {A: [], B: []}
        for i in range(runs):
            for x in ((A, B) if i % 2 == 0 else (B, A)):
                t[x].append(timed(x, "run", "--", "/bin/true"))
        report("run -- /bin/true", t[A], t[B])
        settle(root)
    if "run-settled" in what:
        t = {A: [], B: []}
        for i in range(runs):
            for x in ((A, B) if i % 2 == 0 else (B, A)):
                t[x].append(timed(x, "run", "--", "/bin/true"))
                settle(root)
        report("run, trash settled", t[A], t[B])
    if "rm" in what:
        t = {A: [], B: []}
        for i in range(runs):
            for x in ((A, B) if i % 2 == 0 else (B, A)):
                env = sh(x, "create")
                t[x].append(timed(x, "rm", env))
        report("rm (fresh env)", t[A], t[B])
        settle(root)
    if "restore" in what:
        for mb in [int(s) for s in os.environ.get("BENCH_SIZES", "10 100 1000").split()]:
            n = int(os.environ.get("BENCH_RESTORE_RUNS", "5" if mb < 1000 else "3"))
            env = sh(B, "create", "--memory", "4g")
            snap = sh(B, "snapshot", env)
            rest = {A: [], B: []}
            cold = {A: [], B: []}
            for i in range(n):
                for x in ((A, B) if i % 2 == 0 else (B, A)):
                    fill(x, env, mb)
                    settle(root)
                    rest[x].append(timed(x, "restore", env, snap))
                    settle(root)
                    c0 = time.perf_counter()
                    c = sh(x, "create")
                    cold[x].append((time.perf_counter() - c0) * 1000)
                    sh(x, "rm", c)
                    settle(root)
            ra, rb = report("restore %d MB" % mb, rest[A], rest[B])
            ca, cb = report("  cold create", cold[A], cold[B])
            print("  restore/cold: A %.2fx  B %.2fx" % (ra / ca, rb / cb), flush=True)
            sh(B, "rm", env)
            settle(root)
    sh(B, "gc")
    subprocess.run(["rm", "-rf", work])
    return 0


if __name__ == "__main__":
    sys.exit(main())
