#!/usr/bin/env python3
"""What a store's environments left on the host, after they were all removed
and `sbx gc` ran: used by tests/integration/test_faults.sh and bench/load/run.

  sbxleaks.py ROOT RUN BASE [IDS_FILE]     (store_leaks below)

faults.py imports it: env_leaks() checks removed environments while others
of the store still run.

ROOT and RUN are the store's SBX_ROOT and SBX_RUN, BASE a directory that holds
them (mounts under it are leaks), IDS_FILE every environment id the caller
ever created (one a line; ids found under ROOT/envs and RUN are added).
Prints one JSON object {processes, mounts, cgroups, uid_slots, envs, run_dirs}
of lists, and exits 1 if any list is non-empty.

- processes: live (non-zombie) processes that are sbx's own with this store
  (comm sbx*, SBX_ROOT=ROOT in their environment) or that sit in the cgroup of
  one of the ids (what ran inside an environment);
- mounts: lines of /proc/self/mountinfo naming BASE;
- cgroups: /sys/fs/cgroup/*/sbx/<id> and /sys/fs/cgroup/sbx/<id> of the ids;
- uid_slots: /run/sbx-uidslots entries whose owner is under ROOT
  (src/runtime/userns.c writes the owning environment's directory there);
- envs, run_dirs: whatever is left in ROOT/envs and RUN.
"""
import glob
import json
import os
import re
import sys

SLOT_DIR = "/run/sbx-uidslots"
ID_RE = re.compile(r"^[0-9a-f]{12}$")


def env_procs(ids, want_env=None):
    """Live processes in the cgroup of one of IDS, or (want_env) sbx's own
    processes with that SBX_ROOT=... entry in their environment."""
    cg_re = re.compile(r"/sbx/(%s)(/|$)" % "|".join(sorted(ids))) if ids else None
    procs = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            stat = open("/proc/%s/stat" % p).read()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            comm = open("/proc/%s/comm" % p).read().strip()
            why = None
            if want_env and comm.startswith("sbx") and want_env in open("/proc/%s/environ" % p, "rb").read().split(b"\0"):
                why = "sbx process of this store"
            elif cg_re:
                for line in open("/proc/%s/cgroup" % p):
                    m = cg_re.search(line.rstrip("\n").split(":", 2)[-1])
                    if m:
                        why = "in the cgroup of " + m.group(1)
                        break
            if why:
                cmd = open("/proc/%s/cmdline" % p, "rb").read().replace(b"\0", b" ").decode(errors="replace")
                procs.append("%s %s (%s): %s" % (p, comm, why, cmd.strip()[:120]))
        except (OSError, IndexError):
            pass  # gone meanwhile
    return procs


def env_cgroups(ids):
    out = []
    for i in sorted(ids):
        out += [d for d in glob.glob("/sys/fs/cgroup/*/sbx/" + i) + glob.glob("/sys/fs/cgroup/sbx/" + i) if os.path.isdir(d)]
    return out


def uid_slots(owner_prefix):
    """Entries of /run/sbx-uidslots whose owner starts with OWNER_PREFIX."""
    slots = []
    if os.path.isdir(SLOT_DIR):
        for s in os.listdir(SLOT_DIR):
            try:
                owner = open(os.path.join(SLOT_DIR, s)).read()
            except OSError:
                continue
            if owner.startswith(owner_prefix):
                slots.append("%s/%s -> %s" % (SLOT_DIR, s, owner))
    return slots


def mounts(needle):
    return [l.strip() for l in open("/proc/self/mountinfo") if needle in l]


def env_leaks(root, ids):
    """What is left of the environments IDS (already removed) while others of
    the store may still run: processes in their cgroups, the cgroups, their uid
    slots, mounts naming them."""
    out = {"processes": env_procs(set(ids)), "cgroups": env_cgroups(ids), "uid_slots": [], "mounts": []}
    for i in ids:
        out["uid_slots"] += uid_slots(os.path.join(root, "envs", i))
        out["mounts"] += mounts("/" + i)
    return out


def store_leaks(root, run, base, ids=()):
    """Everything left by a store whose environments were all removed."""
    root, run, base = (os.path.abspath(a) for a in (root, run, base))
    ids = set(ids)
    envs = sorted(os.listdir(os.path.join(root, "envs"))) if os.path.isdir(os.path.join(root, "envs")) else []
    # readset-digests.json: the store's cache of read-set digests (src/api/readset_io.c), not a leak.
    run_dirs = sorted(d for d in os.listdir(run) if d != "readset-digests.json") if os.path.isdir(run) else []
    ids |= {e for e in envs + run_dirs if ID_RE.match(e)}
    return {
        "processes": env_procs(ids, b"SBX_ROOT=" + root.encode()),
        "mounts": mounts(base),
        "cgroups": env_cgroups(ids),
        "uid_slots": uid_slots(root + "/"),
        "envs": envs,
        "run_dirs": run_dirs,
    }


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    ids = set()
    if len(sys.argv) > 4 and os.path.exists(sys.argv[4]):
        ids = {l.strip() for l in open(sys.argv[4]) if ID_RE.match(l.strip())}
    out = store_leaks(sys.argv[1], sys.argv[2], sys.argv[3], ids)
    print(json.dumps(out))
    return 1 if any(out.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
