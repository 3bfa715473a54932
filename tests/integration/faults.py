#!/usr/bin/env python3
"""Fault injection for tests/integration/test_faults.sh: kill -9, at seeded
random points, of the sbx CLI, of an environment's supervisor and of
`sbx serve`; then what must hold: the call in flight ends (no hang), `sbx gc`
+ `sbx fsck` are clean, every snapshot taken before the kill restores exactly
(file contents compared), and nothing is left: no process, mount, cgroup or
uid slot of a removed environment (sbxleaks.py).

  faults.py cli|supervisor|frozen|creating|phase|restore|serve|run|run_trace|run_pool ROUNDS SEED

cli, supervisor and serve kill at random points of random operations and
check everything after each kill; frozen, creating, phase and restore each
aim at one window where a kill was found to break something (see the
functions' docstrings and docs/BENCHMARKS.md "Notes on load and faults"),
and the random modes log that symptom as "known" instead of failing on it.

SBX_BIN, SBX_ROOT, SBX_RUN and TMPDIR_TEST come from the harness. The seed
drives every choice and delay (timing itself is the machine's), so a failure
prints it with the round and what was killed, to run again with
SBX_FAULT_SEED=SEED. Exit 0 when everything held, 1 with the first failure.
"""
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbxleaks  # noqa: E402

SBX = os.environ["SBX_BIN"]
ROOT = os.environ["SBX_ROOT"]
RUN = os.environ["SBX_RUN"]
TMP = os.environ["TMPDIR_TEST"]
ID_RE = re.compile(r"^[0-9a-f]{12}$")


class Fail(Exception):
    pass


def log(*a):
    print(*a, flush=True)


def sbx(*args, timeout=60, check=True):
    try:
        p = subprocess.run([SBX, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Fail("'sbx %s' did not finish in %d s" % (" ".join(args), timeout))
    if check and p.returncode != 0:
        raise Fail("'sbx %s' exited %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p


def out(*args, **kw):
    return sbx(*args, **kw).stdout.strip()


SEEN = set()  # every id this run ever saw, for the final leak check


def seen(*ids):
    SEEN.update(i for i in ids if i)


def store_ids():
    """Ids under ROOT/envs and RUN: listed, half-made and half-removed ones."""
    ids = set()
    for d in (os.path.join(ROOT, "envs"), RUN):
        if os.path.isdir(d):
            ids |= {e for e in os.listdir(d) if ID_RE.match(e)}
    seen(*ids)
    return ids


def listed():
    """id -> state, as `sbx ls` says."""
    envs = json.loads(out("ls", "--json"))["environments"]
    seen(*(e["environment_id"] for e in envs))
    return {e["environment_id"]: e.get("state") for e in envs}


# Processes of the setup phase, which a switch to the agent phase ends.
SETUP_PROCS = "for i in $(seq 1 20); do sleep 1000 & done"

FP = 'cat /root/marker; md5sum /root/data/* 2>/dev/null | cut -c1-32 | tr "\\n" " "'


def fingerprint(id_):
    """The marker and a digest of every data file: what a snapshot must keep."""
    return out("exec", id_, "--", "sh", "-c", FP)


def fill(id_, marker, files=8, kib=256):
    sbx("exec", id_, "--", "sh", "-c",
        "mkdir -p /root/data; for i in $(seq 1 %d); do head -c %d /dev/urandom > /root/data/f$i; done; echo %s > /root/marker"
        % (files, kib * 1024, marker))


def check_snapshot(digest, want, why):
    f = out("fork", digest)
    seen(f)
    try:
        got = fingerprint(f)
    finally:
        sbx("rm", f)
    if got != want:
        raise Fail("snapshot %s (%s) does not restore exactly:\n  want %s\n  got  %s" % (digest, why, want, got))


def fsck_clean():
    p = sbx("fsck", check=False)
    if p.returncode != 0 or "corrupt" in p.stdout:
        raise Fail("sbx fsck is not clean (exit %d): %s %s" % (p.returncode, p.stdout.strip(), p.stderr.strip()))


def frozen(id_):
    for ev in [os.path.join(d, "cgroup.events") for d in sbxleaks.env_cgroups([id_])]:
        if os.path.exists(ev) and "frozen 1" in open(ev).read():
            return True
    st = "/sys/fs/cgroup/freezer/sbx/%s/freezer.state" % id_
    return os.path.exists(st) and open(st).read().strip() != "THAWED"


def responsive(id_):
    p = sbx("exec", id_, "--", "echo", "alive", timeout=15, check=False)
    if p.returncode != 0 or p.stdout != "alive\n":
        raise Fail("environment %s does not answer (exit %d): %s" % (id_, p.returncode, p.stderr.strip()))
    if frozen(id_):
        raise Fail("environment %s answers but its cgroup is still frozen" % id_)


def only_init(id_, what):
    """Within 5 s nothing runs in ID but its init."""
    deadline = time.time() + 5
    while True:
        ps = out("ps", id_)
        rest = [l for l in ps.splitlines()[1:] if not l.rstrip().endswith("sbx-init")]
        if not rest:
            return
        if time.time() > deadline:
            raise Fail("%s: processes still run in %s: %s" % (what, id_, rest))
        time.sleep(0.1)


def proc_states(id_):
    """For a failure message: the state of each process in ID's cgroups, and their freezers."""
    r = []
    for d in sbxleaks.env_cgroups([id_]):
        for f in ("freezer.state", "cgroup.freeze", "cgroup.events"):
            if os.path.exists(os.path.join(d, f)):
                r.append("%s/%s: %s" % (d, f, open(os.path.join(d, f)).read().strip().replace("\n", ", ")))
    for l in sbxleaks.env_procs([id_]):
        pid = l.split()[0]
        try:
            st = [x for x in open("/proc/%s/status" % pid) if x.startswith(("State", "SigPnd", "ShdPnd"))]
            r.append("%s: %s" % (pid, " ".join(x.strip() for x in st)))
        except OSError:
            pass
    return "; ".join(r)


def gone(pid):
    """Waits until PID has exited (a zombie, or reaped)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z":
                return
        except OSError:
            return
        time.sleep(0.01)
    raise Fail("process %d survived SIGKILL for 10 s" % pid)


def supervisors():
    """Live sbx-supervisor processes of this store."""
    want = b"SBX_ROOT=" + os.path.abspath(ROOT).encode()
    n = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if open("/proc/%s/comm" % p).read().strip() != "sbx-supervisor":
                continue
            if open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            if want in open("/proc/%s/environ" % p, "rb").read().split(b"\0"):
                n.append(int(p))
        except OSError:
            pass
    return n


def describe(pid):
    """A process, for a failure message: pid, parent, and the run dirs it has open."""
    try:
        ppid = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[2]
        fds = set()
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                t = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if t.startswith(RUN) or t.startswith(ROOT):
                fds.add(t.replace(TMP, "$TMP"))
        return "%d (ppid %s) %s" % (pid, ppid, sorted(fds))
    except OSError:
        return "%d (gone)" % pid


def supervisors_match():
    """One supervisor per running environment (a pool's entries included),
    none for anything else."""
    deadline = time.time() + 5
    while True:
        ls = listed()
        if any(st == "failed" for st in ls.values()):
            # A create killed after its supervisor told it "ready" and before
            # it wrote the state: its creator is gone, so gc removes it.
            sbx("gc")
            ls = listed()
        # 'creating' with a live supervisor: a create in progress, or one
        # whose caller was killed (t_faults_kill9_create_leaves_no_creating).
        # A pool's entries run too, hidden from `sbx ls`: a killed `sbx serve`
        # leaves its own warm set's pool until `sbx gc` (docs/warm.md).
        running = [i for i, s in ls.items() if s in ("running", "creating")] + sorted(pool_entries())
        sups = supervisors()
        if len(sups) == len(running):
            stuck = [i for i, s in ls.items() if s == "creating"]
            if stuck:
                log("  left 'creating' by a killed create (known): %s" % stuck)
            return
        if time.time() > deadline:
            raise Fail("%d supervisors for %d running environments (%s): %s; listed %s; under %s: %s"
                       % (len(sups), len(running), running, [describe(p) for p in sups], listed(), RUN, sorted(store_ids())))
        time.sleep(0.1)


def no_leaks(ids, what):
    """The removed environments IDS left nothing (after a gc)."""
    deadline = time.time() + 5
    while True:
        lk = sbxleaks.env_leaks(ROOT, ids)
        if not any(lk.values()):
            return
        if time.time() > deadline:
            raise Fail("%s left: %s" % (what, json.dumps({k: v for k, v in lk.items() if v})))
        time.sleep(0.2)


def remove_all():
    ids = list(listed())
    if ids:
        sbx("rm", *ids, timeout=120)
    sbx("gc", timeout=120)


def final_checks(snaps):
    for d, fp in snaps.items():
        check_snapshot(d, fp, "at the end")
    remove_all()
    fsck_clean()
    lk = sbxleaks.store_leaks(ROOT, RUN, TMP, SEEN)
    if any(lk.values()):
        raise Fail("left behind at the end: %s" % json.dumps({k: v for k, v in lk.items() if v}))


class Killer:
    """Runs commands and kills them at a random point: after a delay drawn
    uniformly from [0, 1.2 x the operation's running estimate]. The estimate
    starts from a measured run and follows the operation: shorter each time it
    finished first, longer each time it was killed."""

    def __init__(self, rnd):
        self.rnd = rnd
        self.est = {}
        self.killed = {}
        self.runs = {}
        self.stderr = ""

    def measure(self, op, ms):
        self.est[op] = max(ms, 2.0)

    def delay(self, op):
        return self.rnd.uniform(0, self.est[op] * 1.2) / 1000

    def account(self, op, killed, delay_ms=None):
        self.runs[op] = self.runs.get(op, 0) + 1
        if killed:
            self.killed[op] = self.killed.get(op, 0) + 1
            self.est[op] *= 1.1
        else:
            # It ended within delay_ms: an operation much faster than its
            # first measured run (a snapshot after the first, which wrote the
            # layers) comes down at once, not by a quarter per round.
            est = self.est[op] * 0.75
            self.est[op] = max(min(est, delay_ms) if delay_ms is not None else est, 2.0)

    def kill_cli(self, op, args, sig=signal.SIGKILL):
        """sbx ARGS sent SIG (default SIGKILL) after a random delay:
        (killed, returncode, stdout). killed: SIGKILL killed it, or another
        signal found it still running (a CLI that handles it)."""
        d = self.delay(op)
        p = subprocess.Popen([SBX, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(d)
        hit = p.poll() is None
        if hit:
            p.send_signal(sig)
        try:
            o, self.stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Fail("'sbx %s' still runs 60 s after %s" % (" ".join(args), signal.Signals(sig).name))
        killed = p.returncode == -signal.SIGKILL if sig == signal.SIGKILL else hit
        self.account(op, killed, d * 1000)
        log("  %-9s %s after %5.1f ms (estimate %.1f ms)%s" % (op, "killed" if killed else "finished", d * 1000, self.est[op],
                                                           "" if sig == signal.SIGKILL else " by %s: exit %d" % (signal.Signals(sig).name, p.returncode)))
        return killed, p.returncode, o.strip()

    def summary(self):
        return ", ".join("%s %d/%d" % (op, self.killed.get(op, 0), n) for op, n in sorted(self.runs.items()))


def timed(fn):
    t0 = time.monotonic()
    r = fn()
    return r, (time.monotonic() - t0) * 1000


# ---- kill -9 of the CLI ---------------------------------------------------------------------
def t_cli(rounds, rnd):
    k = Killer(rnd)
    main = out("create")
    seen(main)
    fill(main, "s0")
    fp = fingerprint(main)
    s0, ms = timed(lambda: out("snapshot", main, "--label", "base"))
    snaps = {s0: fp}
    k.measure("snapshot", ms)
    _, ms = timed(lambda: sbx("restore", main, s0))
    k.measure("restore", ms)
    f, ms = timed(lambda: out("fork", s0))
    k.measure("fork", ms)
    sbx("exec", f, "--", "sh", "-c", SETUP_PROCS)
    _, ms = timed(lambda: sbx("phase", f, "agent"))
    k.measure("phase", ms)
    _, ms = timed(lambda: sbx("rm", f))
    k.measure("rm", ms)
    f, ms = timed(lambda: out("create"))
    k.measure("create", ms)
    sbx("rm", f)
    k.measure("exec", 60)  # the command below sleeps 50 ms
    ops = ["create", "exec", "snapshot", "restore", "fork", "phase", "rm"]

    def schedule():
        for i in range(rounds):
            yield i, ops[i % len(ops)] if i < len(ops) else rnd.choice(ops)
        # An operation that no kill has hit yet (one that ends faster here
        # than most delays, as rm with its removal in the background): more
        # rounds of it, bounded, before the check below.
        for j in range(30):
            missing = [o for o in ops if not k.killed.get(o)]
            if not missing or rounds < 2 * len(ops):
                return
            yield rounds + j, missing[j % len(missing)]

    for i, op in schedule():
        log("round %d: %s" % (i, op))
        try:
            if op in ("create", "fork"):
                target = rnd.choice(sorted(snaps))
                before = store_ids()
                killed, rc, o = k.kill_cli(op, ["create"] if op == "create" else ["fork", target])
                time.sleep(0.2)  # what the killed command started goes on meanwhile
                new = store_ids() - before
                if not killed:
                    if rc != 0 or o not in new:
                        raise Fail("%s finished with exit %d, id '%s', new ids %s" % (op, rc, o, new))
                    if op == "fork" and fingerprint(o) != snaps[target]:
                        raise Fail("fork of %s is not exact" % target)
                # What a killed create left is dead (gc removes it), or it
                # is a whole environment that answers, or it is listed as
                # 'creating' for good (t_faults_kill9_create_leaves_no_creating).
                sbx("gc")
                for i2, st in listed().items():
                    if i2 in new and st == "running":
                        responsive(i2)
                    elif i2 in new and st == "creating":
                        log("  left 'creating' (known): %s" % i2)
                    elif i2 in new:
                        raise Fail("gc kept %s (state %s) left by a killed %s" % (i2, st, op))
                for i2 in new & set(listed()):
                    sbx("rm", i2)
                sbx("gc")
                no_leaks(new, "a %s killed then removed" % op)
            elif op == "exec":
                killed, rc, _ = k.kill_cli(op, ["exec", main, "--", "sh", "-c", "echo run >> /root/execlog; sleep 0.05"])
                if not killed and rc != 0:
                    raise Fail("exec finished with exit %d" % rc)
                only_init(main, "a killed exec")
                responsive(main)
            elif op == "snapshot":
                sbx("exec", main, "--", "sh", "-c", "echo s%d > /root/marker; head -c 300000 /dev/urandom > /root/data/f%d" % (i, i % 8 + 1))
                fp = fingerprint(main)
                args = ["snapshot", main] + (["--label", "l%d" % (i % 3)] if rnd.random() < 0.5 else [])
                killed, rc, o = k.kill_cli(op, args)
                if not killed:
                    if rc != 0 or not o.startswith("sha256:"):
                        raise Fail("snapshot finished with exit %d: '%s'" % (rc, o))
                    snaps[o] = fp
                responsive(main)
                if fingerprint(main) != fp:
                    raise Fail("a killed snapshot changed its environment")
            elif op == "restore":
                target = rnd.choice(sorted(snaps))
                sbx("exec", main, "--", "sh", "-c", "echo dirty > /root/marker; rm -f /root/data/f1; mkdir -p /root/junk; touch /root/junk/a /root/junk/b")
                killed, rc, _ = k.kill_cli(op, ["restore", main, target])
                if not killed and rc != 0:
                    raise Fail("restore finished with exit %d" % rc)
                if killed:
                    # The new supervisor a killed restore started is still
                    # starting; a restore at once fails after ~9 s ("did not
                    # stop"): t_faults_kill9_restore_then_restore checks that.
                    time.sleep(0.5)
                # Restoring again always recovers the environment.
                sbx("restore", main, target)
                responsive(main)
                got = fingerprint(main)
                if got != snaps[target]:
                    raise Fail("restore after a killed restore is not exact:\n  want %s\n  got  %s" % (snaps[target], got))
            elif op == "phase":
                e = out("fork", rnd.choice(sorted(snaps)))
                seen(e)
                # Setup-phase processes for the switch to end (and a wider window).
                sbx("exec", e, "--", "sh", "-c", SETUP_PROCS + "; echo setup > /root/phase")
                killed, rc, _ = k.kill_cli(op, ["phase", e, "agent"])
                if not killed and rc != 0:
                    raise Fail("phase finished with exit %d" % rc)
                ph = out("phase", e)
                if ph.split()[0] not in ("setup", "agent"):
                    raise Fail("phase after a killed switch: '%s'" % ph)
                lost = False
                if ph.split()[0] == "setup":
                    q = sbx("phase", e, "agent", check=False)
                    if q.returncode != 0 and "already in the agent phase" in q.stderr:
                        # The supervisor switched, the record did not
                        # (t_faults_kill9_phase_keeps_its_record).
                        log("  the switch happened but its record says setup (known)")
                        lost = True
                    elif q.returncode != 0:
                        raise Fail("phase agent after a killed switch: exit %d: %s" % (q.returncode, q.stderr.strip()))
                if not lost and out("phase", e).split()[0] != "agent":
                    raise Fail("phase did not reach agent: %s" % out("phase", e))
                responsive(e)
                if out("exec", e, "--", "cat", "/root/phase") != "setup":
                    raise Fail("the switch lost the environment's files")
                sbx("rm", e)
                sbx("gc")
                no_leaks([e], "an environment whose phase switch was killed")
            elif op == "rm":
                e = out("fork", rnd.choice(sorted(snaps)))
                seen(e)
                killed, rc, _ = k.kill_cli(op, ["rm", e])
                if not killed and rc != 0:
                    raise Fail("rm finished with exit %d" % rc)
                p = sbx("rm", e, check=False)
                if p.returncode != 0 and "no such environment" not in p.stderr:
                    raise Fail("rm after a killed rm: exit %d: %s" % (p.returncode, p.stderr.strip()))
                if e in listed():
                    raise Fail("%s is still listed after rm" % e)
                sbx("gc")
                no_leaks([e], "a killed rm, then rm and gc")
            fsck_clean()
            supervisors_match()
            if i % 5 == 4:
                d = rnd.choice(sorted(snaps))
                check_snapshot(d, snaps[d], "round %d" % i)
        except Fail as e:
            raise Fail("round %d (%s): %s" % (i, op, e))
    log("kills that hit a running command, per operation: " + k.summary())
    for op in ops:
        if not k.killed.get(op) and rounds >= 2 * len(ops):
            raise Fail("no '%s' was ever killed while running: the test did not exercise it (%s)" % (op, k.summary()))
    final_checks(snaps)
    log("%d snapshots restored exactly; nothing left" % len(snaps))


def t_create_creating(rounds, rnd):
    """`sbx create` killed at random points: 5 s later, and after a gc, no
    environment may be left 'creating' (alive, holding its cgroup, uid slot
    and processes, its id never given to anyone, and skipped by gc)."""
    sbx("rm", out("create"))  # the host mask cached (see test_load.sh)
    k = Killer(rnd)
    _, ms = timed(lambda: sbx("rm", out("create")))
    k.measure("create", ms)
    for _ in range(rounds):
        k.kill_cli("create", ["create"])
    time.sleep(5)
    sbx("gc")
    stuck = sorted(i for i, s in listed().items() if s == "creating")
    log("%d creates, %d killed while running; left 'creating' after 5 s and a gc: %d" % (rounds, k.killed.get("create", 0), len(stuck)))
    if stuck:
        info = [describe(p) for p in supervisors()]
        remove_all()
        raise Fail("%d of %d killed creates left an environment 'creating' with a live supervisor "
                   "that gc keeps: %s; %d supervisors, e.g. %s" % (len(stuck), k.killed.get("create", 0), stuck[:5], len(info), info[:2]))
    final_checks({})


def t_phase_record(rounds, rnd):
    """`sbx phase ID agent` killed at random points: afterwards the record
    and the environment agree: `sbx phase ID` says agent, or it says setup
    and a new `sbx phase ID agent` switches (not "already in the agent
    phase" while the record says setup, which a restore would then bring
    back)."""
    sbx("rm", out("create"))
    k = Killer(rnd)
    e = out("create")
    sbx("exec", e, "--", "sh", "-c", SETUP_PROCS)
    _, ms = timed(lambda: sbx("phase", e, "agent"))
    sbx("rm", e)
    k.measure("phase", ms)
    bad = []
    for i in range(rounds):
        e = out("create")
        seen(e)
        sbx("exec", e, "--", "sh", "-c", SETUP_PROCS)
        k.kill_cli("phase", ["phase", e, "agent"])
        time.sleep(0.2)
        ph = out("phase", e).split()[0]
        if ph == "setup":
            q = sbx("phase", e, "agent", check=False)
            if q.returncode != 0:
                bad.append("%s: 'sbx phase' says setup; 'sbx phase agent': %s" % (e, q.stderr.strip()))
        sbx("rm", e)
    log("%d switches, %d killed while running; %d left the record and the environment apart"
        % (rounds, k.killed.get("phase", 0), len(bad)))
    if bad:
        raise Fail("%d killed phase switches left the record behind the environment: %s" % (len(bad), bad[:3]))
    final_checks({})


def t_restore_again(rounds, rnd):
    """`sbx restore ID S` killed while the new supervisor it started is
    starting (plus a random 0-5 ms), then restored again at once (what a
    caller does to recover): the second restore must succeed."""
    e = out("create")
    seen(e)
    fill(e, "r0")
    s0 = out("snapshot", e)
    want = fingerprint(e)
    bad = []
    for i in range(rounds):
        sbx("exec", e, "--", "sh", "-c", "echo dirty > /root/marker")
        old = set(supervisors())
        d = rnd.uniform(0, 0.005)
        p = subprocess.Popen([SBX, "restore", e, s0], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while p.poll() is None and not set(supervisors()) - old and time.time() < deadline:
            time.sleep(0.0005)
        time.sleep(d)
        p.send_signal(signal.SIGKILL)
        p.wait()
        q, ms = timed(lambda: sbx("restore", e, s0, check=False))
        if q.returncode != 0:
            bad.append("round %d: killed %.1f ms after its new supervisor appeared; restored again: exit %d after %.1f s: %s"
                       % (i, d * 1000, q.returncode, ms / 1000, q.stderr.strip()))
            time.sleep(3)
            sbx("restore", e, s0)
            break  # one is enough (each costs ~10 s)
        if fingerprint(e) != want:
            raise Fail("restore after a killed restore is not exact")
    log("%d restores killed while their new supervisor started, each restored again at once: %d failed" % (i + 1, len(bad)))
    if bad:
        raise Fail("a restore right after a killed restore failed: %s" % bad[0])
    final_checks({s0: want})


# ---- sbx run killed ---------------------------------------------------------------------------
def pool_entries():
    """Ids of this store's warm pool entries (hidden: "pool" in their state,
    or, while being created, only their pool-entry mark)."""
    ids = set()
    for i in store_ids():
        try:
            if os.path.exists(os.path.join(ROOT, "envs", i, "pool-entry")) or \
                    "pool" in json.load(open(os.path.join(ROOT, "envs", i, "state.json"))):
                ids.add(i)
        except (OSError, ValueError):
            pass
    return ids


def trace_ids():
    d = os.path.join(ROOT, "traces")
    return {"sha256:" + f[:-5] for f in os.listdir(d) if f.endswith(".json")} if os.path.isdir(d) else set()


def run_left(before):
    """What a one-shot run left: listed environments, directories, supervisors
    and leaks (processes, cgroups, uid slots, mounts) of environments that are
    not warm pool entries."""
    pool = pool_entries()
    new = store_ids() - before - pool
    left = {k: v for k, v in sbxleaks.env_leaks(ROOT, new).items() if v}
    if listed():
        left["listed"] = listed()
    if new:
        left["dirs"] = sorted(new)
    sups = supervisors()
    if len(sups) > len(pool):
        left["supervisors"] = [describe(p) for p in sups]
    return left


def t_run(rounds, rnd, mode):
    """`sbx run` (plain, --trace, or taking a warm pool's entry) sent SIGKILL,
    SIGTERM, SIGINT or SIGHUP at random points of its life: within 10 s (its
    supervisor notices its caller is gone), nothing is left: nothing listed,
    no directory, supervisor, process, cgroup, uid slot or mount of the run's
    environment, and `sbx gc` has nothing to remove. A trace is whole or not
    there: every stored trace reads (sbx trace stats)."""
    args = ["run"] + (["--trace"] if mode == "trace" else []) + ["--", "sh", "-c", "echo run; sleep 0.05"]
    if mode == "pool":
        sbx("pool", "set", "host", "--size", "1")
    else:
        sbx("run", "--", "true")  # the host mask cached
    k = Killer(rnd)
    _, ms = timed(lambda: sbx(*args))
    k.measure("run", ms)
    sigs = [signal.SIGKILL, signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    for i in range(rounds):
        sig = sigs[i % len(sigs)] if i < len(sigs) else rnd.choice(sigs)
        if mode == "pool":  # an entry to take, most rounds
            deadline = time.time() + 10
            while not pool_entries() - set(listed()) and time.time() < deadline:
                time.sleep(0.05)
        before = store_ids() - pool_entries()
        traces = trace_ids()
        killed, rc, o = k.kill_cli("run", args, sig)
        if not killed and (rc != 0 or o != "run"):
            raise Fail("round %d: sbx run finished with exit %d, output '%s'" % (i, rc, o))
        if killed and sig != signal.SIGKILL and rc not in (0, 128 + sig) and rc != -sig:
            raise Fail("round %d: sbx run sent %s exited %d: %s" % (i, signal.Signals(sig).name, rc, k.stderr.strip()))
        deadline = time.time() + 10
        while True:
            left = run_left(before)
            if not left:
                break
            if time.time() > deadline:
                raise Fail("round %d: sbx run sent %s left, after 10 s: %s" % (i, signal.Signals(sig).name, json.dumps(left)))
            time.sleep(0.1)
        for t in trace_ids() - traces:
            p = sbx("trace", "stats", t, check=False)
            if p.returncode != 0:
                raise Fail("round %d: trace %s of a killed run does not read: %s" % (i, t, p.stderr.strip()))
        g = json.loads(out("gc", "--json"))
        if g["removed"]:
            raise Fail("round %d: sbx gc removed %s after a killed sbx run" % (i, g["removed"]))
    log("runs hit while running: " + k.summary())
    if not k.killed.get("run"):
        raise Fail("no sbx run was ever hit while running: the test did not exercise it")
    if mode == "pool":
        sbx("pool", "rm", "host")
    final_checks({})


# ---- kill -9 of the supervisor --------------------------------------------------------------
def t_supervisor(rounds, rnd):
    base = out("create")
    seen(base)
    fill(base, "s0")
    s0 = out("snapshot", base, "--label", "base")
    snaps = {s0: fingerprint(base)}
    sbx("rm", base)
    k = Killer(rnd)
    cases = {
        "idle": None,
        "exec": lambda e: ["exec", e, "--", "sh", "-c", "sleep 30"],
        "snapshot": lambda e: ["snapshot", e],
        "restore": lambda e: ["restore", e, s0],
        "phase": lambda e: ["phase", e, "agent"],
    }
    # Each call's duration, measured once on an environment like the ones below.
    k.measure("idle", 100)
    k.measure("exec", 200)
    for c in ("snapshot", "restore", "phase"):
        m = out("fork", s0)
        sbx("exec", m, "--", "sh", "-c", "head -c 4000000 /dev/urandom > /root/data/big; echo after > /root/marker")
        _, ms = timed(lambda: sbx(*cases[c](m)))
        k.measure(c, ms)
        sbx("rm", m)
    names = sorted(cases)
    for i in range(rounds):
        case = names[i % len(names)] if i < len(names) else rnd.choice(names)
        log("round %d: supervisor killed during %s" % (i, case))
        try:
            e = out("fork", s0)
            seen(e)
            # A snapshot of its own before the kill, then more data for the
            # snapshot that the kill interrupts.
            sbx("exec", e, "--", "sh", "-c", "echo e%d > /root/marker" % i)
            fp = fingerprint(e)
            si = out("snapshot", e)
            snaps[si] = fp
            sbx("exec", e, "--", "sh", "-c", "head -c 4000000 /dev/urandom > /root/data/big; echo after > /root/marker")
            fp_after = fingerprint(e)
            sup = json.loads(out("inspect", "--json", e))["supervisor_pid"]
            p = None
            t0 = time.monotonic()
            if cases[case]:
                p = subprocess.Popen([SBX, *cases[case](e)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            d = k.delay(case)
            time.sleep(d)
            hit = p is None or p.poll() is None
            try:
                os.kill(sup, signal.SIGKILL)
            except ProcessLookupError:
                hit = False  # a restore had already replaced it
            gone(sup)
            rc = None
            if p:
                try:
                    o, err = p.communicate(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    raise Fail("'%s' hangs after its supervisor was killed" % " ".join(cases[case](e)))
                rc = p.returncode
                # A snapshot that succeeded anyway (the dead supervisor's
                # freeze held) must be whole.
                if case == "snapshot" and rc == 0:
                    snaps[o.strip()] = fp_after
            k.account(case, hit)
            log("  supervisor killed after %.1f ms: %s (call took %.0f ms, exit %s)"
                % (d * 1000, "mid-call" if hit else "after the call", (time.monotonic() - t0) * 1000, rc))
            state = listed().get(e)
            if state == "running":
                # A restore that got past the kill has a new supervisor.
                responsive(e)
                if case == "restore" and rc == 0 and fingerprint(e) != snaps[s0]:
                    raise Fail("a restore that succeeded while its old supervisor was killed is not exact")
            else:
                # Dead: its processes die with the supervisor (unless a
                # snapshot's freeze holds them: t_faults_kill9_supervisor_frozen
                # checks that case; gc or rm below must clean it up), and a
                # call says so at once.
                deadline = time.time() + 5
                while sbxleaks.env_procs([e]) and not frozen(e):
                    if time.time() > deadline:
                        raise Fail("processes outlive their killed supervisor: %s; %s" % (sbxleaks.env_procs([e]), proc_states(e)))
                    time.sleep(0.1)
                if frozen(e):
                    log("  left frozen with its processes: %s" % proc_states(e))
                q = sbx("exec", e, "--", "true", timeout=10, check=False)
                if q.returncode == 0:
                    raise Fail("exec in an environment whose supervisor was killed succeeded")
            # Either remover cleans up after a dead supervisor.
            if state != "running" and rnd.random() < 0.5:
                sbx("gc")
                if e in listed():
                    raise Fail("gc kept %s (state %s) whose supervisor was killed" % (e, listed().get(e)))
            else:
                sbx("rm", e)
                sbx("gc")
            no_leaks([e], "an environment whose supervisor was killed during %s" % case)
            fsck_clean()
            check_snapshot(si, snaps[si], "taken before the supervisor was killed")
            supervisors_match()
        except Fail as x:
            raise Fail("round %d (supervisor killed during %s): %s" % (i, case, x))
    log("supervisor kills that hit a call under way: " + k.summary())
    final_checks(snaps)
    log("%d snapshots restored exactly; nothing left" % len(snaps))


def t_supervisor_frozen(rounds, rnd):
    """The supervisor killed while a snapshot holds the environment frozen:
    the environment's processes must still end with it, as they do when it
    is killed at any other time (not linger frozen until a gc)."""
    for i in range(rounds):
        e = out("create")
        seen(e)
        sbx("exec", e, "--", "sh", "-c", "head -c 20000000 /dev/zero > /root/big; sleep 1000 & echo started")
        sup = json.loads(out("inspect", "--json", e))["supervisor_pid"]
        p = subprocess.Popen([SBX, "snapshot", e], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        while not frozen(e):
            if time.time() > deadline or p.poll() is not None:
                p.kill()
                raise Fail("the snapshot never froze %s (it took too little time to catch)" % e)
            time.sleep(0.001)
        os.kill(sup, signal.SIGKILL)
        gone(sup)
        try:
            p.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            raise Fail("sbx snapshot hangs after its environment's supervisor was killed")
        log("round %d: supervisor of %s killed while frozen; snapshot exited %d" % (i, e, p.returncode))
        v1 = "/sys/fs/cgroup/freezer/sbx/%s/freezer.state" % e
        if os.path.exists(v1) and open(v1).read().strip() != "THAWED":
            # The v1 freezer holds even SIGKILL until a thaw: only gc or rm
            # (which thaw and kill) can end these processes.
            log("  frozen by the cgroup v1 freezer: checking gc's cleanup only")
        deadline = time.time() + 5
        while sbxleaks.env_procs([e]) and not (os.path.exists(v1) and open(v1).read().strip() != "THAWED"):
            if time.time() > deadline:
                states = proc_states(e)
                sbx("gc")
                raise Fail("the environment's processes outlive its supervisor, frozen, until a gc: %s" % states)
            time.sleep(0.1)
        sbx("gc")
        no_leaks([e], "an environment whose supervisor was killed while frozen")
    final_checks({})


# ---- kill -9 of sbx serve -------------------------------------------------------------------
class Serve:
    def __init__(self):
        self.err = open(os.path.join(TMP, "serve.err"), "w+")
        self.p = subprocess.Popen([SBX, "serve", "--listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.time() + 10
        self.url = None
        while time.time() < deadline and not self.url:
            self.err.seek(0)
            m = re.search(r"serving MCP on (http://\S+)", self.err.read())
            if m:
                self.url = urllib.parse.urlparse(m.group(1))
                break
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        if not self.url:
            self.err.seek(0)
            raise Fail("sbx serve did not start: " + self.err.read())

    def rpc(self, method, params, timeout=60):
        c = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=timeout)
        try:
            c.request("POST", self.url.path, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                      {"Content-Type": "application/json", "Accept": "application/json"})
            r = json.loads(c.getresponse().read())
        finally:
            c.close()
        if "error" in r:
            raise Fail("%s: %s" % (method, r["error"]))
        return r["result"]

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Fail("sbx serve did not stop on SIGTERM")
        if rc != 0:
            raise Fail("sbx serve exited %d on SIGTERM" % rc)


def t_serve(rounds, rnd):
    snaps = {}  # digest -> content of /root/f, recorded once the server answered
    lock = threading.Lock()
    # One create first: concurrent first creates on a new store race on the
    # host mask cache (test_load.sh's t_load_cold_store_concurrent_creates).
    sbx("rm", out("create"))
    for i in range(rounds):
        log("round %d" % i)
        try:
            srv = Serve()
            stop = threading.Event()
            sleeper = {}
            errors = []
            seeds = [rnd.random() for _ in range(3)]

            def cycles(w):
                wr = random.Random(seeds[w])
                n = 0
                while not stop.is_set():
                    try:
                        e = srv.rpc("environment.create", {})["environment_id"]
                        seen(e)
                        body = "round %d worker %d cycle %d %s\n" % (i, w, n, os.urandom(8).hex())
                        srv.rpc("environment.write_file", {"environment_id": e, "path": "/root/f", "content": body})
                        d = srv.rpc("environment.snapshot", {"environment_id": e})["snapshot_id"]
                        with lock:
                            snaps[d] = body
                        srv.rpc("environment.write_file", {"environment_id": e, "path": "/root/f", "content": "changed\n"})
                        srv.rpc("environment.restore", {"environment_id": e, "snapshot_id": d})
                        if wr.random() < 0.5:
                            srv.rpc("environment.destroy", {"environment_id": e})
                        n += 1
                    except (OSError, http.client.HTTPException, ValueError):
                        return  # the server is gone
                    except Fail as x:
                        errors.append(str(x))
                        return
            def sleep_call():
                try:
                    e = srv.rpc("environment.create", {})["environment_id"]
                    seen(e)
                    sleeper["id"] = e
                    srv.rpc("environment.execute", {"environment_id": e, "command": "sleep 30"}, timeout=60)
                    sleeper["finished"] = True
                except (OSError, http.client.HTTPException, ValueError):
                    pass
            threads = [threading.Thread(target=cycles, args=(w,)) for w in range(3)] + [threading.Thread(target=sleep_call)]
            for t in threads:
                t.start()
            d = rnd.uniform(0.3, 2.0)
            time.sleep(d)
            srv.p.send_signal(signal.SIGKILL)
            srv.p.wait()
            stop.set()
            for t in threads:
                t.join(timeout=70)
                if t.is_alive():
                    raise Fail("a client call hangs after sbx serve was killed")
            log("  sbx serve killed after %.2f s; %d snapshots so far" % (d, len(snaps)))
            if errors:
                raise Fail("calls failed before the server was killed: %s" % errors)
            if sleeper.get("finished"):
                raise Fail("execute of 'sleep 30' returned after the server was killed")
            # The command of a killed server's call does not run on.
            if sleeper.get("id") and sleeper["id"] in listed():
                only_init(sleeper["id"], "a call of a killed sbx serve")
            fsck_clean()
            supervisors_match()
            # A new server over the same store serves what the old one left.
            srv = Serve()
            envs = srv.rpc("environment.list", {})["environments"]
            if sorted(e["environment_id"] for e in envs) != sorted(listed()):
                raise Fail("environment.list of the new server %s differs from sbx ls %s" % (envs, listed()))
            for dg in rnd.sample(sorted(snaps), min(len(snaps), 6)):
                e = srv.rpc("environment.create", {"snapshot": dg})["environment_id"]
                seen(e)
                got = srv.rpc("environment.read_file", {"environment_id": e, "path": "/root/f"})["content"]
                if got != snaps[dg]:
                    raise Fail("snapshot %s does not restore exactly: want %r, got %r" % (dg, snaps[dg], got))
                srv.rpc("environment.destroy", {"environment_id": e})
            for e in envs:
                srv.rpc("environment.destroy", {"environment_id": e["environment_id"]})
            srv.stop()
            sbx("gc")
            no_leaks(SEEN - set(listed()), "environments of a killed sbx serve")
        except Fail as x:
            raise Fail("round %d: %s" % (i, x))
    if not snaps:
        raise Fail("no snapshot was taken before the kills: the test did not exercise the server")
    for dg, body in snaps.items():
        e = out("fork", dg)
        seen(e)
        got = out("exec", e, "--", "cat", "/root/f") + "\n"
        sbx("rm", e)
        if got != body:
            raise Fail("snapshot %s does not restore exactly: want %r, got %r" % (dg, body, got))
    final_checks({})
    log("%d snapshots restored exactly; nothing left" % len(snaps))


def main():
    what, rounds, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    log("faults.py %s: %d rounds, seed %d (again: SBX_FAULT_SEED=%d)" % (what, rounds, seed, seed))
    rnd = random.Random(seed)
    try:
        {"cli": t_cli, "supervisor": t_supervisor, "frozen": t_supervisor_frozen, "creating": t_create_creating, "phase": t_phase_record, "restore": t_restore_again, "serve": t_serve,
         "run": lambda n, r: t_run(n, r, "plain"), "run_trace": lambda n, r: t_run(n, r, "trace"),
         "run_pool": lambda n, r: t_run(n, r, "pool")}[what](rounds, rnd)
    except Fail as e:
        log("FAIL (seed %d): %s" % (seed, e))
        with open(os.path.join(TMP, "fault-ids"), "w") as f:
            f.write("\n".join(sorted(SEEN)) + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
