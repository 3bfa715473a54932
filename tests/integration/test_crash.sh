# Crash safety of the store: kill -9 at random points of snapshot, restore,
# import and gc must leave a store that `sbx fsck` passes, lose no earlier
# snapshot, and leave no environment frozen or unusable; a snapshot on a full
# disk fails cleanly (one-line ENOSPC error, no partial snapshot).
#
# Each killed command is the sbx binary itself (run in the background, not
# through the `sbx` timeout wrapper, so that SIGKILL hits it and nothing else),
# killed after a random delay between 0 and a bit more than the measured
# duration of the same operation.

# The OCI image builder (oci_py, busybox_rootfs, py) of test_oci.sh, without
# its tests.
# shellcheck source=tests/integration/test_oci.sh
source "${SBX_SRC:-.}/tests/integration/test_oci.sh"
unset -f $(declare -F | awk '{print $3}' | grep '^t_')

# Rounds per test are multiplied by SBX_CRASH_ROUNDS_X (default 1) for
# longer stress runs by hand.
rounds() { echo $(($1 * ${SBX_CRASH_ROUNDS_X:-1})); }

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# A random delay in [0, MAX] ms, as seconds for sleep.
rand_delay() {
	local ms=$((RANDOM * $1 / 32767))
	printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# kill9_after ARGS...: runs `$SBX_BIN ARGS...` in the background, kills it
# with SIGKILL after a random delay in [0, DUR] ms and waits for it. DUR
# starts as a measured duration of the same operation (plus 20%) and shrinks
# each time the command finishes first, so that most runs die mid-way even
# when the first measurement was slow. KILLED counts the kills that hit a
# still-running process.
KILLED=0
kill9_after() {
	local d
	d=$(rand_delay "$DUR")
	"$SBX_BIN" "$@" > /dev/null 2>&1 &
	local pid=$!
	sleep "$d"
	# A process that has exited is a zombie until waited for: not running.
	if [ "$(awk '{print $3}' "/proc/$pid/stat" 2> /dev/null)" != Z ] && kill -9 "$pid" 2> /dev/null; then
		KILLED=$((KILLED + 1))
		echo "  killed '$1' after ${d}s"
	else
		echo "  '$1' finished before ${d}s"
		DUR=$((DUR * 2 / 3 + 1))
	fi
	wait "$pid" 2> /dev/null || true
}

# The store passes fsck: exit 0, no problem line (tmp leftovers are not
# problems: fsck counts them, gc removes them).
fsck_clean() {
	expect_status 0 sbx fsck || { echo "$OUT"; return 1; }
	assert_contains "$OUT" "ok: "
	assert_not_contains "$OUT" "corrupt"
	expect_status 0 sbx fsck --json
	assert_contains "$OUT" '"ok": true'
}

# Nothing left in tmp/ nor half-written manifests or labels (after a gc with
# SBX_GC_GRACE_SECONDS=0).
store_tidy() {
	local left
	left=$(ls -A "$SBX_ROOT/tmp" 2> /dev/null; find "$SBX_ROOT/snapshots/sha256" "$SBX_ROOT/refs/labels" -maxdepth 1 -name '.tmp-*' 2> /dev/null)
	[ -z "$left" ] || fail "store leftovers after gc: $left"
}

# S0 (label base) still resolves, and a fork of it shows S0's content.
check_base() {
	local want_sum=$1 f
	assert_eq "$(sbx snapshots --json | python3 -c 'import json,sys; print(" ".join(s["snapshot_id"] for s in json.load(sys.stdin)["snapshots"] if "base" in s["labels"]))')" "$S0" "label base"
	f=$(sbx fork base)
	assert_eq "$(sbx exec "$f" -- sh -c 'cat /root/marker; cat /root/data/* | md5sum')" "s0
$want_sum" "fork of base"
	sbx rm "$f" > /dev/null
}

# The environment answers (not frozen, not stuck) within a few seconds.
check_responsive() {
	local id=$1 out ev
	out=$(timeout 10 "$SBX_BIN" exec "$id" -- echo alive) || fail "environment $id does not answer (frozen?)"
	assert_eq "$out" "alive"
	# The freezer itself: cgroup v2 (cgroup.events) or v1 (freezer.state).
	for ev in /sys/fs/cgroup/sbx/"$id"/cgroup.events /sys/fs/cgroup/*/sbx/"$id"/cgroup.events; do
		[ -f "$ev" ] || continue
		grep -qx 'frozen 0' "$ev" || fail "cgroup of $id is still frozen: $(cat "$ev")"
	done
	ev=/sys/fs/cgroup/freezer/sbx/$id/freezer.state
	[ ! -f "$ev" ] || [ "$(cat "$ev")" = THAWED ] || fail "cgroup of $id is still frozen: $(cat "$ev")"
}

# The live sbx processes (supervisors, inits) of this test's store: the pids
# of non-zombie processes named sbx* whose environment has our SBX_ROOT.
store_procs() {
	python3 - "$SBX_ROOT" <<'PY'
import os, sys
want = b"SBX_ROOT=" + sys.argv[1].encode()
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        comm = open("/proc/%s/comm" % p).read().strip()
        if not comm.startswith("sbx"):
            continue
        if open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()[0] == "Z":
            continue
        if want in open("/proc/%s/environ" % p, "rb").read().split(b"\0"):
            print(p, comm)
    except OSError:
        pass
PY
}

# After rm: nothing of the store runs any more. The reclaimer (sbx-reclaim)
# removes a tree in the background after rm answered, so its end is awaited,
# boundedly; a supervisor or init that stays is a leak.
no_store_procs_after_rm() {
	for _ in $(seq 100); do
		[ -z "$(store_procs)" ] && return 0
		sleep 0.1
	done
	fail "processes left after rm: $(store_procs)"
}

# An environment with ~40 MB of data in 40 files, /root/marker = s0.
make_data_env() {
	local i
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'mkdir -p /root/data; for i in $(seq 1 ${1:-40}); do head -c 1000000 /dev/urandom > /root/data/f$i; done; echo s0 > /root/marker' -- "${1:-40}"
	SUM=$(sbx exec "$ID" -- sh -c 'cat /root/data/* | md5sum')
}

t_kill9_during_snapshot() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	make_data_env 40
	local t0 i out
	t0=$(now_ms)
	S0=$(sbx snapshot "$ID" --label base)
	DUR=$((($(now_ms) - t0) * 6 / 5 + 5))
	echo "snapshot of 40 MB: ${DUR} ms (+20%)"
	for i in $(seq 1 "$(rounds 15)"); do
		# A change each time: every snapshot writes a new 40 MB layer.
		sbx exec "$ID" -- sh -c "echo $i > /root/marker"
		# Every other one also moves a label (an atomic ref update).
		if [ $((i % 2)) = 0 ]; then
			kill9_after snapshot "$ID" --label latest
		else
			kill9_after snapshot "$ID"
		fi
		fsck_clean
		check_base "$SUM"
		check_responsive "$ID"
		assert_eq "$(sbx exec "$ID" -- cat /root/marker)" "$i" "the environment's own state"
	done
	echo "$KILLED of $(rounds 15) snapshots killed while running"
	[ "$KILLED" -ge 3 ] || fail "only $KILLED snapshots were killed while running: the test did not exercise crashes"
	# A snapshot after all that works and is complete.
	sbx snapshot "$ID" --label after > /dev/null
	SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	fsck_clean
	store_tidy
	check_base "$SUM"
	out=$(sbx fork after)
	assert_eq "$(sbx exec "$out" -- cat /root/marker)" "$(rounds 15)"
	sbx rm "$out" "$ID" > /dev/null
	no_store_procs_after_rm
}

# Hard links after killed incremental snapshots: every snapshot that
# completes, restored or forked, has exactly the environment's hard-link
# groups (DESIGN.md "Never alias inodes"). Between snapshots files are
# deleted and created (ext4 hands freed inode numbers out again) and pairs
# made; a killed snapshot leaves its staging tree (links to the writable
# layer's files) for the next one to remove. HL_PY make|mutate|groups ROOT
# SEED N; groups prints one line per inode: its paths, and "nlink=K" where
# the link count is not the number of its paths inside ROOT.
HL_PY='
import os, sys, random
cmd, root, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
r = random.Random(seed)
def files():
    return sorted(os.path.join(dp, f) for dp, dn, fn in os.walk(root) for f in fn)
def new(p, s):
    with open(p, "w") as f: f.write(s)
if cmd == "make":
    for i in range(n):
        d = os.path.join(root, "d%03d" % (i // 100)); os.makedirs(d, exist_ok=True)
        new(os.path.join(d, "f%05d" % i), "%d\n" % i)
    for i, a in enumerate(r.sample(files(), n // 20)): os.link(a, a + ".l%d" % i)
elif cmd == "mutate":
    for p in r.sample(files(), n): os.unlink(p)
    for i in range(n):
        p = os.path.join(root, "d%03d" % r.randrange(15), "n%d_%d" % (seed, i)); new(p, "%d %d\n" % (seed, i))
        if i % 5 == 0: os.link(p, p + ".l")
    for p in r.sample(files(), n // 2):
        with open(p, "a") as f: f.write("m%d\n" % seed)
else:
    g = {}
    for p in files():
        st = os.lstat(p); g.setdefault(st.st_ino, [st.st_nlink, []])[1].append(os.path.relpath(p, root))
    lines = []
    for nl, ps in g.values():
        lines.append(" ".join(sorted(ps)) + ("" if nl == len(ps) or cmd == "paths" else " nlink=%d" % nl))
    print("\n".join(sorted(lines)))
'

# The hard-link groups of snapshot $1 (a fork of it) equal file $2.
check_links_of() {
	local f
	f=$(sbx fork "$1")
	sbx exec "$f" -- python3 -c "$HL_PY" groups /root/t 0 0 > "$TMPDIR_TEST/got"
	sbx rm "$f" > /dev/null
	diff "$2" "$TMPDIR_TEST/got" > "$TMPDIR_TEST/diff" ||
		fail "snapshot $1: hard links differ from the environment's (< environment, > fork): $(head -n 20 "$TMPDIR_TEST/diff")"
}

links_are_the_environments() { ! sbx exec "$ID" -- python3 -c "$HL_PY" groups /root/t 0 0 | grep -q nlink=; }

t_kill9_snapshot_keeps_hard_links() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	local i d pid rc t0 last="" completed=0
	ID=$(sbx create)
	sbx exec "$ID" -- python3 -c "$HL_PY" make /root/t 1 1500
	sbx snapshot "$ID" > /dev/null
	sbx exec "$ID" -- python3 -c "$HL_PY" mutate /root/t 1 40
	t0=$(now_ms)
	sbx snapshot "$ID" > /dev/null
	DUR=$((($(now_ms) - t0) * 6 / 5 + 5))
	echo "incremental snapshot: ${DUR} ms (+20%)"
	for i in $(seq 2 "$(rounds 12)"); do
		sbx exec "$ID" -- python3 -c "$HL_PY" mutate /root/t "$i" 40
		# The environment's own groups: paths only.
		sbx exec "$ID" -- python3 -c "$HL_PY" paths /root/t 0 0 > "$TMPDIR_TEST/want.cur"
		d=$(rand_delay "$DUR")
		"$SBX_BIN" snapshot "$ID" > "$TMPDIR_TEST/sid" 2> /dev/null &
		pid=$!
		sleep "$d"
		kill -9 "$pid" 2> /dev/null || true
		rc=0
		wait "$pid" 2> /dev/null || rc=$?
		if [ "$rc" = 0 ]; then
			last=$(cat "$TMPDIR_TEST/sid")
			cp "$TMPDIR_TEST/want.cur" "$TMPDIR_TEST/want.last"
			completed=$((completed + 1))
			DUR=$((DUR * 2 / 3 + 1))
		else
			KILLED=$((KILLED + 1))
			# The supervisor removes a dead snapshot's staging tree
			# before it thaws: no link the environment did not make.
			eventually 20 links_are_the_environments ||
				fail "a killed snapshot left links: $(sbx exec "$ID" -- python3 -c "$HL_PY" groups /root/t 0 0 | grep nlink= | head -n 3)"
		fi
	done
	echo "$KILLED of $(($(rounds 12) - 1)) snapshots killed, $completed completed"
	[ "$KILLED" -ge 3 ] || fail "only $KILLED snapshots were killed while running: the test did not exercise crashes"
	fsck_clean
	[ -z "$last" ] || check_links_of "$last" "$TMPDIR_TEST/want.last"
	# The snapshot after the kills: its staging trees gone, the links the
	# environment made and no others, in the environment and in a fork.
	last=$(sbx snapshot "$ID")
	sbx exec "$ID" -- python3 -c "$HL_PY" groups /root/t 0 0 > "$TMPDIR_TEST/want.last"
	if grep -q nlink= "$TMPDIR_TEST/want.last"; then
		fail "links the environment did not make: $(grep nlink= "$TMPDIR_TEST/want.last" | head -n 5)"
	fi
	check_links_of "$last" "$TMPDIR_TEST/want.last"
	fsck_clean
	sbx rm "$ID" > /dev/null
}

t_kill9_during_restore() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	# The two-step restore: one by the standby init (docs/warm.md) ends
	# before a kill can land; test_restore_fast.sh kills those.
	export SBX_RESTORE_STANDBY=0
	make_data_env 20
	local t0 i dirty
	S0=$(sbx snapshot "$ID" --label base)
	dirty='mkdir -p /root/junk; for i in $(seq 1 300); do echo $i > /root/junk/f$i; done; echo dirty > /root/marker; rm -f /root/data/f1'
	sbx exec "$ID" -- sh -c "$dirty"
	t0=$(now_ms)
	sbx restore "$ID" base > /dev/null
	DUR=$((($(now_ms) - t0) * 6 / 5 + 5))
	echo "restore: ${DUR} ms (+20%)"
	for i in $(seq 1 "$(rounds 12)"); do
		sbx exec "$ID" -- sh -c "$dirty"
		kill9_after restore "$ID" base
		fsck_clean
		# Restoring again always recovers the environment, whatever state
		# the killed restore left it in.
		sbx restore "$ID" base > /dev/null || fail "restore after a killed restore failed"
		check_responsive "$ID"
		assert_eq "$(sbx exec "$ID" -- sh -c 'cat /root/marker; cat /root/data/* | md5sum; ls /root/junk 2>/dev/null | wc -l')" "s0
$SUM
0" "restored content"
		[ "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" = 1 ] ||
			fail "a killed restore left extra environments: $(sbx ls)"
		# One supervisor and one init: a killed restore leaves none behind.
		# (a reclaimer emptying what the killed restores left in the
		# trash may still run: it is the store's, not the environment's)
		assert_eq "$(store_procs | awk '$2 != "sbx-reclaim" {print $2}' | sort | tr '\n' ' ')" "sbx-init sbx-supervisor " "processes of the environment"
	done
	echo "$KILLED of $(rounds 12) restores killed while running"
	[ "$KILLED" -ge 3 ] || fail "only $KILLED restores were killed while running"
	check_base "$SUM"
	SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	fsck_clean
	store_tidy
	sbx rm "$ID" > /dev/null
	no_store_procs_after_rm
}

# Every listed template is usable: its snapshot exists and an environment
# created from it runs the image's busybox.
check_templates() {
	local i
	local n e
	for n in $(sbx template ls | tail -n +2 | awk '{print $1}'); do
		e=$(sbx create --template "$n") || fail "template '$n' is listed but unusable"
		assert_eq "$(sbx exec "$e" -- busybox cat /root/img-marker)" "img" "template $n"
		sbx rm "$e" > /dev/null
	done
}

t_kill9_during_import() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	local L=$TMPDIR_TEST/img t0 i
	oci_py
	busybox_rootfs "$TMPDIR_TEST/rootfs"
	# ~24 MB of layer data so that an import takes tens of ms.
	mkdir -p "$TMPDIR_TEST/rootfs/data"
	for i in 1 2 3 4 5 6; do head -c 4000000 /dev/urandom > "$TMPDIR_TEST/rootfs/data/f$i"; done
	echo img > "$TMPDIR_TEST/rootfs/root/img-marker"
	py "import ociimg; ociimg.image('$L', 'crash', [ociimg.tar_dir('$TMPDIR_TEST/rootfs')])"
	# The duration of a full import, measured on a scratch store (warm:
	# the second one).
	for i in 1 2; do
		rm -rf "$TMPDIR_TEST/scratch"
		t0=$(now_ms)
		SBX_ROOT=$TMPDIR_TEST/scratch sbx import "oci:$L:crash" --name probe > /dev/null
		DUR=$((($(now_ms) - t0) * 6 / 5 + 5))
	done
	rm -rf "$TMPDIR_TEST/scratch"
	echo "import: ${DUR} ms (+20%)"
	for i in $(seq 1 "$(rounds 10)"); do
		kill9_after import "oci:$L:crash" --name "img$((i % 3))"
		fsck_clean
		check_templates
	done
	echo "$KILLED of $(rounds 10) imports killed while running"
	[ "$KILLED" -ge 3 ] || fail "only $KILLED imports were killed while running"
	sbx import "oci:$L:crash" --name final > /dev/null
	check_templates
	sbx template ls | grep -q '^final ' || fail "the final import is not listed"
	SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	fsck_clean
	store_tidy
	check_templates
}

# Adds N orphan layers (~2 MB and 300 files each): snapshot, then delete the
# manifest; the files go from the environment again so the next one differs.
make_orphans() {
	local i
	local n=$1 k s
	for k in $(seq 1 "$n"); do
		ORPH=$((ORPH + 1))
		sbx exec "$ID" -- sh -c "mkdir /root/o$ORPH; for i in \$(seq 1 300); do echo \$i > /root/o$ORPH/f\$i; done; head -c 2000000 /dev/urandom > /root/o$ORPH/big"
		s=$(sbx snapshot "$ID")
		rm "$SBX_ROOT/snapshots/sha256/${s#sha256:}.json"
		sbx exec "$ID" -- rm -rf "/root/o$ORPH"
	done
}

t_kill9_during_gc() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	export SBX_GC_GRACE_SECONDS=0
	local t0 i base_layer out
	ORPH=0
	make_data_env 10
	S0=$(sbx snapshot "$ID" --label base)
	# S0's layer below, an empty writable layer: orphans hold only their files.
	sbx restore "$ID" base > /dev/null
	base_layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][-1])' "$SBX_ROOT/snapshots/sha256/${S0#sha256:}.json")
	make_orphans 3
	t0=$(now_ms)
	out=$(sbx gc --json)
	DUR=$((($(now_ms) - t0) * 6 / 5 + 5))
	echo "gc of 3 orphans: ${DUR} ms (+20%)"
	assert_eq "$(echo "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers_removed"]))')" "3" "orphans removed by a full gc"
	for i in $(seq 1 "$(rounds 8)"); do
		make_orphans 3
		kill9_after gc
		fsck_clean
		[ -d "$SBX_ROOT/layers/sha256/${base_layer#sha256:}" ] || fail "gc removed the base snapshot's layer"
		check_base "$SUM"
		check_responsive "$ID"
	done
	echo "$KILLED of $(rounds 8) gc runs killed while running"
	[ "$KILLED" -ge 3 ] || fail "only $KILLED gc runs were killed while running"
	sbx gc > /dev/null
	fsck_clean
	store_tidy
	# Only S0's layer is left (the environment runs on it); layers keep no
	# tar copy, so no blob either.
	assert_eq "$(ls "$SBX_ROOT/layers/sha256")" "${base_layer#sha256:}" "layers after gc"
	assert_eq "$(find "$SBX_ROOT/objects" -type f -printf '%f\n' 2>/dev/null)" "" "blobs after gc"
	check_base "$SUM"
	sbx rm "$ID" > /dev/null
}

t_full_disk_snapshot() {
	is_root || skip_ok "mounting a tmpfs needs root"
	command -v python3 > /dev/null || skip "python3 is not installed"
	local before out
	# Global: the EXIT trap runs after this function's locals are gone.
	# gc before the unmount: it ends a reclaimer lingering on this store.
	M=$SBX_ROOT
	mkdir -p "$M"
	mount -t tmpfs -o size=20m,mode=0755 sbxtest-full "$M" || skip_ok "cannot mount a tmpfs here"
	trap 'for e in $(ls "$M/envs" 2>/dev/null | grep -E "^[0-9a-f]{12}$"); do timeout 30 "$SBX_BIN" rm "$e" > /dev/null 2>&1; done; timeout 30 "$SBX_BIN" gc > /dev/null 2>&1; umount "$M" 2>/dev/null || umount -l "$M"' EXIT
	ID=$(sbx create) || skip_ok "cannot create an environment on a tmpfs store"
	sbx exec "$ID" -- sh -c 'echo s0 > /root/marker'
	S0=$(sbx snapshot "$ID" --label base)
	before=$(sbx snapshots --json)
	# 8 MB: the tar fits, its extracted tree does not (20 MB in all).
	# 13 MB: the tar itself does not fit. The label must not move either.
	for mb in 8 13; do
		sbx exec "$ID" -- sh -c "rm -f /root/big; head -c ${mb}000000 /dev/urandom > /root/big" ||
			fail "could not fill the environment with $mb MB"
		df -k "$M" | tail -n 1
		expect_status 125 sbx snapshot "$ID" --label base
		echo "$mb MB: $ERR"
		assert_eq "$(echo "$ERR" | wc -l)" "1" "a one-line error"
		assert_contains "$ERR" "No space left on device"
		assert_eq "$OUT" ""
		assert_eq "$(sbx snapshots --json)" "$before" "snapshots after a failed snapshot"
		[ -z "$(ls -A "$M/tmp")" ] || fail "a failed snapshot left temp entries: $(ls -A "$M/tmp")"
		fsck_clean
		# Not left frozen.
		check_responsive "$ID"
	done
	# Space back: snapshots work again and base is intact.
	sbx exec "$ID" -- rm -f /root/big
	sbx snapshot "$ID" --label after > /dev/null
	fsck_clean
	out=$(sbx fork base)
	assert_eq "$(sbx exec "$out" -- cat /root/marker)" "s0"
	sbx rm "$out" "$ID" > /dev/null
}
