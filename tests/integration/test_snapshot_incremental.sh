# Incremental snapshots (docs/store.md "Incremental snapshots"): a snapshot
# after another one of the same environment stores only what changed, as a
# delta layer over the previous snapshot's layers, and every snapshot of the
# chain restores exactly the tree it captured. INC_SEED (default 7) picks the
# random tree and mutations of the chain tests.

# Deterministic trees (seeded: the same seed gives the same names, modes,
# contents, links and xattrs in any environment) and their manifests.
#   make ROOT SEED N      a random tree of N entries
#   mutate ROOT SEED N    N random changes; prints nothing
#   manifest ROOT         JSON {path: [type+mode, uid, gid, size, sha, target,
#                         xattrs, mtime]} plus "LINKS" (paths sharing an inode)
INC_PY='
import os, sys, random, hashlib, stat, shutil, json
cmd, root = sys.argv[1], sys.argv[2]
def entries(top):
    out = []
    for dp, dn, fn in os.walk(top):
        dn.sort()
        for name in sorted(dn + fn):
            out.append(os.path.join(dp, name))
    return out
def files(top): return [p for p in entries(top) if os.path.isfile(p) and not os.path.islink(p)]
def dirs(top): return [top] + [p for p in entries(top) if os.path.isdir(p) and not os.path.islink(p)]
def write(p, r, n):
    with open(p, "wb") as f: f.write(r.randbytes(n))
if cmd == "make":
    r = random.Random(int(sys.argv[3]))
    os.makedirs(root, exist_ok=True)
    ds, fs = [root], []
    for i in range(int(sys.argv[4])):
        d = r.choice(ds); p = os.path.join(d, "n%d" % i); k = r.random()
        if k < 0.15: os.mkdir(p); ds.append(p)
        elif k < 0.55:
            write(p, r, r.randint(0, 5000)); os.chmod(p, r.choice([0o644, 0o600, 0o755, 0o444])); fs.append(p)
        elif k < 0.65 and fs: os.link(r.choice(fs), p)
        elif k < 0.75: os.symlink(r.choice(["../x", "/etc/passwd", "n1", "dangling/target"]), p)
        elif k < 0.8: os.mkfifo(p)
        elif k < 0.9: os.mkdir(p)
        else:
            with open(p, "w") as f: f.write("x")
            try: os.setxattr(p, "user.sbx", b"v%d" % i)
            except OSError: pass
    sys.exit(0)
if cmd == "mutate":
    r = random.Random(int(sys.argv[3]))
    for i in range(int(sys.argv[4])):
        fs, ds = files(root), dirs(root)
        k = r.randrange(18); tag = "m%d_%d" % (int(sys.argv[3]), i)
        d = r.choice(ds); f = r.choice(fs) if fs else None
        try:
            if k == 0: write(os.path.join(d, tag), r, r.randint(0, 9000))
            elif k == 1 and f: write(f, r, os.path.getsize(f))            # same size, new bytes
            elif k == 2 and f:
                st = os.stat(f); write(f, r, st.st_size); os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime kept
            elif k == 3 and f: open(f, "ab").write(b"more")
            elif k == 4 and f: os.truncate(f, 0)
            elif k == 5 and f: os.unlink(f)
            elif k == 6 and d != root: shutil.rmtree(d)
            elif k == 7 and d != root: shutil.rmtree(d); write(d, r, 100)         # a dir becomes a file
            elif k == 8 and f: os.unlink(f); os.mkdir(f); write(os.path.join(f, "in"), r, 10)  # a file becomes a dir
            elif k == 9:  # (directories stay searchable by their owner: rootless, the store reads as that user)
                p = r.choice(entries(root) or [root])
                if os.path.isdir(p) and not os.path.islink(p): os.chmod(p, r.choice([0o700, 0o755, 0o750]))
                elif not os.path.islink(p): os.chmod(p, r.choice([0o644, 0o640, 0o600, 0o755]))
            elif k == 10 and f:
                try: os.chown(f, 1000, 1000)
                except OSError: os.chmod(f, 0o604)
            elif k == 11:
                p = os.path.join(d, tag); os.symlink(r.choice(["/x", "y", "../../z"]), p)
            elif k == 12: os.mkfifo(os.path.join(d, tag))
            elif k == 13 and f:
                try: os.setxattr(f, "user.sbx", b"changed%d" % i)
                except OSError: pass
            elif k == 14: os.mkdir(os.path.join(d, tag))
            elif k == 15 and f: os.link(f, os.path.join(d, tag))
            elif k == 16 and f: os.rename(f, os.path.join(d, tag))
            elif k == 17 and d != root: os.rename(d, os.path.join(os.path.dirname(d), tag))
            if k == 0 and r.random() < 0.3: os.utime(d, (1000000000, 1000000000))
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, FileExistsError):
            pass
    sys.exit(0)
inodes, out = {}, {}
for p in entries(root):
    st = os.lstat(p)
    rel = os.path.relpath(p, root)
    e = [stat.filemode(st.st_mode), st.st_uid, st.st_gid]
    if stat.S_ISREG(st.st_mode):
        e += [st.st_size, hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]]
        if st.st_nlink > 1: inodes.setdefault(st.st_ino, []).append(rel)
    elif stat.S_ISLNK(st.st_mode): e.append("-> " + os.readlink(p))
    try: e += ["%s=%s" % (x, os.getxattr(p, x, follow_symlinks=False)) for x in sorted(os.listxattr(p, follow_symlinks=False)) if x.startswith("user.")]
    except OSError: pass
    opt = sys.argv[3] if len(sys.argv) > 3 else ""
    if not stat.S_ISLNK(st.st_mode) and opt != "nomtime": e.append(st.st_mtime_ns)
    if opt == "ctime": e.append(st.st_ctime_ns)
    out[rel] = e
out["LINKS"] = sorted(sorted(v) for v in inodes.values())
print(json.dumps(out, sort_keys=True))
'

inc() { local id=$1; shift; sbx exec "$id" -- python3 -c "$INC_PY" "$@"; }
snap_json() { sbx snapshot --json "$@"; }
jfield() { python3 -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print(json.dumps(v) if isinstance(v,(list,dict,bool)) or v is None else v)' "$1"; }
# The state an environment shows: the test tree, a directory and a file of the base template.
state() {
	local id=$1 mt=${2:-}
	echo "T $(inc "$id" manifest /root/t $mt)"
	echo "D $(inc "$id" manifest /etc/default $mt)"
	echo "H $(sbx exec "$id" -- sh -c 'cat /etc/hostname 2>/dev/null || echo "(none)"')"
}
same_state() { # want got what
	[ "$1" == "$2" ] && return 0
	python3 - "$1" "$2" <<'PY' | head -20
import json, sys
for a, b in zip(sys.argv[1].splitlines(), sys.argv[2].splitlines()):
    if a == b: continue
    ka, kb = a[:2], b[:2]
    try: ja, jb = json.loads(a[2:]), json.loads(b[2:])
    except ValueError: print("want", a, "\ngot ", b); continue
    for k in sorted(set(ja) | set(jb)):
        if ja.get(k) != jb.get(k): print(ka, k, "want", ja.get(k), "got", jb.get(k))
PY
	fail "$3"
}
top_layer() { echo "$SBX_ROOT/layers/sha256/$(echo "$1" | jfield layer | sed 's/^sha256://')"; }

# The mutations of step k (same in every environment).
mutate() {
	local id=$1 k=$2
	inc "$id" mutate /root/t "$((${INC_SEED:-7} * 100 + k))" 40
	case $k in
	1) sbx exec "$id" -- sh -c 'rm -f /etc/hostname; mkdir -p /root/t/emptydir; echo touch > /etc/default/sbxtouch' ;;
	2) sbx exec "$id" -- sh -c 'rm -rf /etc/default && mkdir /etc/default && echo new > /etc/default/sbxnew' ;;
	3) sbx exec "$id" -- sh -c 'echo more > /etc/default/sbxnew2; echo back > /etc/hostname; rm -rf /root/t/emptydir' ;;
	esac
}

t_incremental_chain_roundtrip() {
	A=$(sbx create) # deltas
	B=$(sbx create) # the same history with full snapshots only
	for id in "$A" "$B"; do
		inc "$id" make /root/t "${INC_SEED:-7}" 200
		sbx exec "$id" -- sh -c 'head -c 3000000 /dev/zero | tr "\0" x > /root/big'
	done
	declare -A st sn bs
	j=$(snap_json "$A")
	assert_eq "$(echo "$j" | jfield incremental)" "false" "first snapshot"
	sn[0]=$(echo "$j" | jfield snapshot_id)
	st[0]=$(state "$A")
	bs[0]=$(SBX_SNAPSHOT_FULL=1 snap_json "$B" | jfield snapshot_id)
	after=$(inc "$A" manifest /root/t ctime)
	for k in 1 2 3; do
		mutate "$A" $k
		mutate "$B" $k
		st[$k]=$(state "$A")
		before=$(inc "$A" manifest /root/t ctime)
		[ "${st[$k]}" != "${st[$((k - 1))]}" ] || fail "step $k changed nothing"
		j=$(snap_json "$A")
		assert_eq "$(echo "$j" | jfield incremental)" "true" "snapshot $k: $(echo "$j" | jfield full_reason 2>/dev/null)"
		sn[$k]=$(echo "$j" | jfield snapshot_id)
		assert_eq "$(echo "$j" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers"]))')" "$((k + 1))"
		assert_eq "$(sbx snapshots --json | python3 -c "import json,sys; print([s['parent'] for s in json.load(sys.stdin)['snapshots'] if s['snapshot_id']=='${sn[$k]}'][0])")" "${sn[$((k - 1))]}" "parent"
		fj=$(SBX_SNAPSHOT_FULL=1 snap_json "$B")
		bs[$k]=$(echo "$fj" | jfield snapshot_id)
		# The delta holds the changes only: not the 3 MB file, a fraction of the full layer.
		layer=$(top_layer "$j")
		[ ! -e "$layer/root/big" ] || fail "delta $k holds an unchanged file"
		dn=$(echo "$j" | jfield new_bytes) fn=$(echo "$fj" | jfield new_bytes)
		[ "$dn" -lt $((fn / 3)) ] || fail "delta $k stored $dn bytes, the full snapshot $fn"
		# Every regular file in the delta is new or changed (ctime included)
		# since the previous snapshot.
		python3 - "$layer" "$after" "$before" <<'PY' || fail "delta $k holds unchanged files"
import json, os, sys
layer, b, a = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
changed = {p for p in a if p != "LINKS" and b.get(p) != a[p]}
# A path whose inode gained or lost a link changed too (link count, ctime).
def groups(m): return {p: tuple(g) for g in m["LINKS"] for p in g}
gb, ga = groups(b), groups(a)
changed |= {p for p in set(gb) | set(ga) if gb.get(p) != ga.get(p)}
for g in a["LINKS"]:
    if changed & set(g): changed |= set(g)
bad = []
base = os.path.join(layer, "root/t")
for dp, dn, fn in os.walk(base):
    for n in fn:
        p = os.path.join(dp, n)
        if os.path.isfile(p) and not os.path.islink(p):
            rel = os.path.relpath(p, base)
            if rel not in changed: bad.append(rel)
if bad: print("unchanged files in the delta:", bad[:10]); sys.exit(1)
PY
		after=$(inc "$A" manifest /root/t ctime)
	done
	# Delta layers are layers like any other: they re-tar to their digests.
	expect_status 0 sbx fsck
	# Every snapshot of the chain restores the tree it captured (contents,
	# modes, owners, xattrs, links, mtimes).
	for k in 0 1 2 3; do
		sbx restore "$A" "${sn[$k]}" > /dev/null
		same_state "${st[$k]}" "$(state "$A")" "restore of snapshot $k differs"
	done
	# The same as full snapshots of the same history (mtimes and inodes aside).
	for k in 0 1 2 3; do
		sbx restore "$B" "${bs[$k]}" > /dev/null
		sbx restore "$A" "${sn[$k]}" > /dev/null
		same_state "$(state "$B" nomtime)" "$(state "$A" nomtime)" "delta chain and full snapshot $k differ"
	done
	# A fork of the last one.
	F=$(sbx fork "${sn[3]}")
	same_state "${st[3]}" "$(state "$F")" "fork of the last delta differs"
	# diff against a snapshot in the middle of the chain, as with full snapshots.
	da=$(sbx diff "$A" "${sn[1]}")
	db=$(sbx diff "$B" "${bs[1]}")
	[ -n "$da" ] || fail "diff found nothing"
	assert_eq "$da" "$db" "diff against a delta snapshot"
	sbx rm "$A" "$B" "$F"
}

# Where ctime is coarse (no multigrain timestamps), entries whose ctime is in
# the clock tick of a snapshot are staged again by the next one ("racy"):
# the same chain, correct with that rule too.
t_incremental_coarse_ctime() {
	export SBX_SNAPSHOT_NO_MULTIGRAIN=1
	ID=$(sbx create)
	inc "$ID" make /root/t 3 120
	declare -A st sn
	sn[0]=$(snap_json "$ID" | jfield snapshot_id)
	st[0]=$(state "$ID")
	for k in 1 2 3; do
		mutate "$ID" $k
		st[$k]=$(state "$ID")
		j=$(snap_json "$ID")
		assert_eq "$(echo "$j" | jfield incremental)" "true"
		sn[$k]=$(echo "$j" | jfield snapshot_id)
	done
	for k in 0 1 2 3; do
		sbx restore "$ID" "${sn[$k]}" > /dev/null
		same_state "${st[$k]}" "$(state "$ID")" "restore of snapshot $k differs"
	done
	sbx rm "$ID"
}

t_incremental_fallbacks() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'echo 1 > /root/f'
	s1=$(snap_json "$ID" | jfield snapshot_id)
	sbx exec "$ID" -- sh -c 'echo 2 > /root/g'
	j=$(snap_json "$ID")
	assert_eq "$(echo "$j" | jfield incremental)" "true"
	# Nothing changed: no new layer, the same stack.
	j2=$(snap_json "$ID")
	assert_eq "$(echo "$j2" | jfield incremental)" "true"
	assert_eq "$(echo "$j2" | jfield new_bytes)" "0"
	assert_eq "$(echo "$j2" | jfield layers)" "$(echo "$j" | jfield layers)"
	# Forced.
	j=$(SBX_SNAPSHOT_FULL=1 snap_json "$ID")
	assert_eq "$(echo "$j" | jfield incremental)" "false"
	assert_contains "$(echo "$j" | jfield full_reason)" "SBX_SNAPSHOT_FULL"
	assert_eq "$(echo "$j" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers"]))')" "1"
	# After a restore the writable layer starts again: a full snapshot.
	sbx restore "$ID" "$s1" > /dev/null
	sbx exec "$ID" -- sh -c 'echo 3 > /root/h'
	j=$(snap_json "$ID")
	assert_eq "$(echo "$j" | jfield incremental)" "false"
	assert_contains "$(echo "$j" | jfield full_reason)" "no index"
	assert_eq "$(echo "$j" | jfield layers | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "2"
	# A corrupt index: a full snapshot, then deltas again.
	printf 'garbage' > "$SBX_ROOT/envs/$ID/snapindex"
	j=$(snap_json "$ID")
	assert_eq "$(echo "$j" | jfield incremental)" "false"
	assert_contains "$(echo "$j" | jfield full_reason)" "corrupt"
	# The chain is capped: past the limit a full snapshot starts a new one.
	n=2 maxn=0 fulls=0
	for i in $(seq 1 34); do
		sbx exec "$ID" -- sh -c "echo $i > /root/c$i"
		j=$(snap_json "$ID")
		n=$(echo "$j" | jfield layers | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
		[ "$n" -gt "$maxn" ] && maxn=$n
		if [ "$(echo "$j" | jfield incremental)" = false ]; then
			fulls=$((fulls + 1))
			assert_contains "$(echo "$j" | jfield full_reason)" "layers"
		fi
	done
	[ "$maxn" -le 32 ] || fail "a snapshot has $maxn layers"
	assert_eq "$fulls" "1" "full snapshots when the chain reached its limit"
	last=$(echo "$j" | jfield snapshot_id)
	F=$(sbx fork "$last")
	assert_eq "$(sbx exec "$F" -- sh -c 'cat /root/c1 /root/c34')" "$(printf '1\n34')"
	sbx rm "$ID" "$F"
}

# A write through a shared mapping to a page that was already dirty updates
# no timestamp: the snapshot writes the layer back so that the next one does.
# (With a disk quota, as root: the layer's filesystem is not the store's,
# whose sync would write it back too.)
t_incremental_mmap_write() {
	if is_root; then ID=$(sbx create --disk 64m 2>/dev/null) || ID=$(sbx create); else ID=$(sbx create); fi
	sbx exec "$ID" -- python3 -c '
import mmap, os, time, sys
if os.fork(): sys.exit(0)
os.setsid()
nul = os.open("/dev/null", os.O_RDWR)
for i in (0, 1, 2): os.dup2(nul, i)
fd = os.open("/root/m", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 4096)
m = mmap.mmap(fd, 4096)
m[0:1] = b"A"
open("/root/ready", "w").close()
while not os.path.exists("/root/go"): time.sleep(0.01)
m[0:1] = b"B"
open("/root/done", "w").close()
time.sleep(300)
' > /dev/null 2>&1
	for i in $(seq 100); do sbx exec "$ID" -- test -e /root/ready && break; sleep 0.05; done
	s1=$(snap_json "$ID" | jfield snapshot_id)
	sbx exec "$ID" -- touch /root/go
	for i in $(seq 100); do sbx exec "$ID" -- test -e /root/done && break; sleep 0.05; done
	j=$(snap_json "$ID")
	assert_eq "$(echo "$j" | jfield incremental)" "true"
	F=$(sbx fork "$(echo "$j" | jfield snapshot_id)")
	assert_eq "$(sbx exec "$F" -- head -c 1 /root/m)" "B" "the write through the mapping"
	G=$(sbx fork "$s1")
	assert_eq "$(sbx exec "$G" -- head -c 1 /root/m)" "A"
	sbx rm "$ID" "$F" "$G"
}

# With a disk quota the writable layer is on its own filesystem: the delta
# is staged there.
t_incremental_quota() {
	is_root || skip_ok "disk quotas need root"
	ID=$(sbx create --disk 64m) || skip "no disk quota here"
	sbx exec "$ID" -- sh -c 'head -c 2000000 /dev/urandom > /root/a'
	snap_json "$ID" > /dev/null
	sbx exec "$ID" -- sh -c 'echo b > /root/b'
	j=$(snap_json "$ID")
	assert_eq "$(echo "$j" | jfield incremental)" "true" "$(echo "$j" | jfield full_reason 2>/dev/null)"
	[ "$(echo "$j" | jfield new_bytes)" -lt 100000 ] || fail "the delta is not small"
	F=$(sbx fork "$(echo "$j" | jfield snapshot_id)")
	assert_eq "$(sbx exec "$F" -- sh -c 'wc -c < /root/a; cat /root/b')" "$(printf '2000000\nb')"
	ls -A "$SBX_ROOT/envs/$ID/disk" | grep -q sbx-delta && fail "a staging tree was left on the disk"
	sbx rm "$ID" "$F"
}

# Rootless: whiteouts are made with mknod 0:0, which needs no privilege.
t_incremental_rootless() {
	is_root || skip_ok "already unprivileged: the other tests cover it"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	RL="$TMPDIR_TEST/rl"
	mkdir -p "$RL/bin" "$RL/tests"
	cp "$SBX_BIN" "$RL/bin/sbx"
	cp "$SBX_SRC"/tests/integration/*.sh "$RL/tests/"
	chmod -R a+rX "$RL"
	chmod 755 "$TMPDIR_TEST"
	res="$RL/result"
	touch "$res"
	chmod 666 "$res"
	setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env \
		env PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/sbxtest SBX_BIN="$RL/bin/sbx" SBX_SRC="$RL" \
		timeout 900 bash "$RL/tests/harness.sh" \
		"$RL/tests/test_snapshot_incremental.sh" "$res" > "$RL/log" 2>&1 || true
	cat "$RL/log"
	read -r p f s < "$res" || fail "the harness did not finish"
	[ "${p:-0}" -ge 3 ] || fail "only $p tests passed as sbxtest"
	[ "$f" = 0 ] || fail "$f failed as an unprivileged user"
}
