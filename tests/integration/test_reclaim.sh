# Background reclaim (src/api/reclaim.h): sbx rm, sbx restore and the pool
# move an environment's files into the store's trash (envs/.trash-*) and a
# detached reclaimer removes them. No timing: SBX_RECLAIM_HOLD=FIFO makes
# the reclaimer wait for one byte on FIFO before each part of an entry, so a
# test sees the trash while it is still there, and releases it by writing.

# The store's reclaimers: processes named sbx-reclaim with our SBX_ROOT.
reclaimers() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2> /dev/null)" = sbx-reclaim ] || continue
		tr '\0' '\n' < "$p/environ" 2> /dev/null | grep -qxF "SBX_ROOT=$SBX_ROOT" && echo "${p#/proc/}"
	done
	return 0
}
trash() { ls -A "$SBX_ROOT/envs" 2> /dev/null | grep '^\.trash-' || true; }

# Bounded waits (a generous bound, not a timing assertion).
wait_for() {
	local i
	local what=$1 i
	shift
	for i in $(seq 600); do
		"$@" && return 0
		sleep 0.05
	done
	fail "still not $what after 30 s: trash: $(trash | tr '\n' ' '); reclaimers: $(reclaimers | tr '\n' ' ')"
}
no_trash() { [ -z "$(trash)" ]; }
no_reclaimer() { [ -z "$(reclaimers)" ]; }
settled() { no_trash && no_reclaimer; }
# The caller does not wait for its reclaimer to start: wait for it.
a_reclaimer() { [ -n "$(reclaimers)" ]; }

# A FIFO on fd 3 that the test writes to release a held reclaimer.
hold_setup() {
	HOLD="$TMPDIR_TEST/hold"
	mkfifo "$HOLD"
	chmod 666 "$HOLD"
	exec 3<> "$HOLD"
}
release_all() { printf '%0400d' 0 >&3; }

# An environment with a tree of its own (upper/root/d: 40 files).
make_env() {
	local id
	id=$(sbx create "$@")
	sbx exec "$id" -- sh -c 'mkdir -p /root/d && for i in $(seq 40); do echo $i > /root/d/f$i; done'
	echo "$id"
}

gone_from_view() {
	local id=$1
	[ ! -e "$SBX_ROOT/envs/$id" ] || fail "envs/$id still there"
	[ ! -e "$SBX_RUN/$id" ] || fail "run dir of $id still there"
	sbx ls | grep -q "$id" && fail "$id still listed"
	expect_status 125 sbx exec "$id" -- true
	assert_contains "$ERR" "no such environment"
	if ls -d /sys/fs/cgroup/*/sbx/"$id" /sys/fs/cgroup/sbx/"$id" 2> /dev/null | grep -q .; then
		fail "cgroup of $id left"
	fi
	if [ -d /run/sbx-uidslots ] && grep -rqs "envs/$id\$" /run/sbx-uidslots; then
		fail "uid slot of $id still taken"
	fi
	return 0
}

# Regression (issue 12): rm returned only once the tree was removed.
t_rm_returns_before_the_tree_is_removed() {
	hold_setup
	id=$(make_env)
	SBX_RECLAIM_HOLD="$HOLD" sbx rm "$id" > /dev/null
	gone_from_view "$id"
	t=$(trash)
	[ -n "$t" ] || fail "rm removed the tree inline (no trash entry while the reclaimer is held)"
	assert_contains "$t" ".trash-$id-"
	[ -e "$SBX_ROOT/envs/$t/upper/root/d/f40" ] || fail "the tree is not in the trash: $(ls -A "$SBX_ROOT/envs/$t")"
	wait_for "a reclaimer at work" a_reclaimer
	release_all
	wait_for "reclaimed" settled
}

# A plain removal: gone at once, the trash empty shortly after, no process left.
t_rm_then_trash_empties() {
	a=$(make_env)
	b=$(make_env)
	sbx rm "$a" "$b" > /dev/null
	gone_from_view "$a"
	gone_from_view "$b"
	wait_for "reclaimed" settled
	# sbx run removes its environment the same way.
	assert_eq "$(sbx run -- echo hi)" "hi"
	wait_for "reclaimed after run" settled
}

# A reclaimer killed halfway leaves trash: the next reclaim finishes it, and
# so does gc.
t_killed_reclaimer_leaves_trash_for_the_next() {
	hold_setup
	id=$(make_env)
	SBX_RECLAIM_HOLD="$HOLD" sbx rm "$id" > /dev/null
	t=$(trash)
	[ -n "$t" ] || fail "no trash entry"
	n0=$(ls -A "$SBX_ROOT/envs/$t" | wc -l)
	printf 0 >&3 # one part goes, then it waits again
	parts_fewer() { [ "$(ls -A "$SBX_ROOT/envs/$t" 2> /dev/null | wc -l)" -lt "$n0" ]; }
	wait_for "one part removed" parts_fewer
	pid=$(reclaimers)
	[ -n "$pid" ] || fail "no reclaimer"
	kill -9 $pid
	wait_for "the reclaimer dead" no_reclaimer
	[ -e "$SBX_ROOT/envs/$t" ] || fail "the killed reclaimer's entry went anyway"
	# The next removal's reclaimer takes the leftover too.
	other=$(sbx create)
	sbx rm "$other" > /dev/null
	wait_for "reclaimed by the next reclaimer" settled

	# And gc, with no reclaimer at all, empties it before it returns.
	id=$(make_env)
	SBX_RECLAIM_HOLD="$HOLD" sbx rm "$id" > /dev/null
	t=$(trash)
	[ -n "$t" ] || fail "no trash entry (2)"
	wait_for "a reclaimer at work (2)" a_reclaimer
	kill -9 $(reclaimers)
	wait_for "the reclaimer dead (2)" no_reclaimer
	[ -n "$(trash)" ] || fail "trash gone before gc"
	sbx gc > /dev/null
	[ -z "$(trash)" ] || fail "gc left trash: $(trash)"
	no_reclaimer || fail "gc started a reclaimer"
}

# Over the cap the caller removes inline (back-pressure); SBX_RECLAIM_SYNC
# removes inline always.
t_cap_forces_inline_removal() {
	hold_setup
	a=$(make_env)
	b=$(make_env)
	c=$(make_env)
	SBX_RECLAIM_HOLD="$HOLD" SBX_RECLAIM_MAX=1 sbx rm "$a" > /dev/null
	assert_contains "$(trash)" ".trash-$a-"
	# One entry waits already: the second is over the cap of 1.
	SBX_RECLAIM_HOLD="$HOLD" SBX_RECLAIM_MAX=1 sbx rm "$b" > /dev/null
	gone_from_view "$b"
	assert_not_contains "$(trash)" ".trash-$b-"
	assert_contains "$(trash)" ".trash-$a-"
	# A cap of 0: never in the background.
	SBX_RECLAIM_HOLD="$HOLD" SBX_RECLAIM_MAX=0 sbx rm "$c" > /dev/null
	assert_not_contains "$(trash)" ".trash-$c-"
	release_all
	wait_for "reclaimed" settled
	d=$(make_env)
	SBX_RECLAIM_HOLD="$HOLD" SBX_RECLAIM_SYNC=1 sbx rm "$d" > /dev/null
	gone_from_view "$d"
	[ -z "$(trash)" ] || fail "SBX_RECLAIM_SYNC=1 left trash: $(trash)"
	no_reclaimer || fail "SBX_RECLAIM_SYNC=1 started a reclaimer"
}

# A restore moves the old writable layer to the trash: the restored
# environment sees exactly the snapshot's files.
t_restore_moves_the_old_layer_to_the_trash() {
	hold_setup
	id=$(make_env)
	before=$(sbx exec "$id" -- sh -c 'ls /root/d | sort; cat /root/d/f7')
	snap=$(sbx snapshot "$id")
	sbx exec "$id" -- sh -c 'dd if=/dev/zero of=/root/big bs=1M count=32 2> /dev/null; rm /root/d/f7; echo x > /root/d/f8; touch /root/d/new'
	SBX_RECLAIM_HOLD="$HOLD" sbx restore "$id" "$snap" > /dev/null
	t=$(trash)
	assert_contains "$t" ".trash-$id-upper-"
	up=$(echo "$t" | grep "^\.trash-$id-upper-")
	[ -e "$SBX_ROOT/envs/$up/root/big" ] || fail "the old upper is not in the trash"
	assert_eq "$(sbx exec "$id" -- sh -c 'ls /root/d | sort; cat /root/d/f7')" "$before" "restored tree"
	sbx exec "$id" -- test ! -e /root/big || fail "the restored environment sees the old layer's file"
	assert_eq "$(sbx exec "$id" -- cat /root/d/f8)" "8"
	release_all
	wait_for "reclaimed" settled
	# The environment works on after the old layer is gone.
	sbx exec "$id" -- sh -c 'echo after > /root/after'
	assert_eq "$(sbx exec "$id" -- cat /root/after /root/d/f7)" "after
7"
	sbx rm "$id" > /dev/null
	wait_for "reclaimed after rm" settled
}

# MCP environment_destroy (the server's reaper thread) goes the same way.
t_mcp_destroy_reclaims() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	hold_setup
	SBX_RECLAIM_HOLD="$HOLD" PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$SBX_BIN" "$SBX_ROOT" <<'PY' || fail "mcp"
import os, sys
from mcp_client import Client
cl = Client(sys.argv[1])
root = sys.argv[2]
eid = cl.call("environment_create", {})[1]["environment_id"]
assert cl.call("environment_destroy", {"environment_id": eid})[0] is False
cl.p.stdin.close()
assert cl.p.wait(timeout=60) == 0
assert not os.path.exists(os.path.join(root, "envs", eid)), "env dir left"
t = [e for e in os.listdir(os.path.join(root, "envs")) if e.startswith(".trash-" + eid)]
assert t, "destroy removed the tree inline"
PY
	release_all
	wait_for "reclaimed" settled
}

# A supervisor that died cannot say "stopped": rm itself removes what it
# left (its cgroup), then the files go the same way.
t_rm_after_a_dead_supervisor() {
	id=$(make_env)
	spid=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor_pid"])')
	kill -9 "$spid"
	dead() { ! kill -0 "$spid" 2> /dev/null || [ "$(awk '{print $3}' "/proc/$spid/stat" 2> /dev/null)" = Z ]; }
	wait_for "the supervisor dead" dead
	sbx rm "$id" > /dev/null
	gone_from_view "$id"
	wait_for "reclaimed" settled
}

# A removal no longer waits for the environment's mounts: its supervisor
# answers "stopped" once every process and the cgroup are gone, and
# unmounts after (runtime/ctl_proto.h CTL_F_LINGER), holding its lock,
# which the removal moved into the trash entry as .run/lock. The trees of
# such an entry are removed only once that lock is free (api/reclaim.c),
# by a reclaimer, by gc and inline alike (regression: gc removed it at once).
t_lingering_entry_waits_for_its_lock() {
	local e="$SBX_ROOT/envs/.trash-0123456789ab-0badf00d"
	mkdir -p "$SBX_ROOT/envs" && mkdir -p "$e/.run" "$e/upper/root" && : > "$e/.run/lock" && echo x > "$e/upper/root/f"
	flock "$e/.run/lock" sleep 3 &
	local holder=$! i
	for i in $(seq 100); do flock -n "$e/.run/lock" true 2> /dev/null || break; sleep 0.02; done
	flock -n "$e/.run/lock" true 2> /dev/null && fail "the test's holder never took the lock"
	sbx gc > /dev/null &
	local gc=$!
	sleep 1
	[ -e "$e/upper/root/f" ] || fail "gc removed a trash entry whose supervisor still holds its lock"
	wait "$holder"
	wait "$gc" || fail "gc failed"
	[ ! -e "$e" ] || fail "the entry was left after its lock was freed: $(ls -A "$e")"
	# Inline (SBX_RECLAIM_SYNC=1), through a real removal: the tree goes with it.
	id=$(make_env)
	SBX_RECLAIM_SYNC=1 sbx rm "$id" > /dev/null
	gone_from_view "$id"
	wait_for "reclaimed" settled
}

# sbx run leaves its uid range to the reclaimer (api/env.c hide_early): a
# reclaimer frees the range a trash entry's state names once the entry's
# supervisor has exited, when the range's slot file still names the
# environment's directory, which is gone; a slot naming anything else is
# left alone (another environment may hold it by now; here an existing
# directory, so that no sbx gc of another store frees it either). Regression: only
# sbx gc freed such a range, so a run's range stayed taken until a gc.
t_reclaimer_frees_the_uid_range_of_a_trash_entry() {
	is_root || skip_ok "uid ranges are root mode's"
	local s1="" s2="" s id1=0123456789ac id2=0123456789ad
	for s in $(seq 16383 -1 16000); do
		if [ ! -e "/run/sbx-uidslots/$s" ]; then
			if [ -z "$s1" ]; then s1=$s; elif [ -z "$s2" ]; then s2=$s && break; fi
		fi
	done
	mkdir -p /run/sbx-uidslots "$SBX_ROOT/envs/.trash-$id1-0badf00e" "$SBX_ROOT/envs/.trash-$id2-0badf00f"
	printf '{"environment_id":"%s","uid_slot":%d}' "$id1" "$s1" > "$SBX_ROOT/envs/.trash-$id1-0badf00e/state.json"
	printf '{"environment_id":"%s","uid_slot":%d}' "$id2" "$s2" > "$SBX_ROOT/envs/.trash-$id2-0badf00f/state.json"
	(set -o noclobber && printf '%s' "$SBX_ROOT/envs/$id1" > "/run/sbx-uidslots/$s1" &&
		printf '%s' "$TMPDIR_TEST" > "/run/sbx-uidslots/$s2") || fail "could not reserve test slots"
	a=$(sbx create)
	sbx rm "$a" > /dev/null # starts a reclaimer, which takes every entry
	wait_for "reclaimed" settled
	local left1=0 left2=0
	[ -e "/run/sbx-uidslots/$s1" ] && left1=1
	[ -e "/run/sbx-uidslots/$s2" ] && left2=1
	rm -f "/run/sbx-uidslots/$s1" "/run/sbx-uidslots/$s2"
	[ "$left1" = 0 ] || fail "the range of a removed environment stayed taken"
	[ "$left2" = 1 ] || fail "a range naming another owner was freed"
	# And a real sbx run: its range is free once the reclaimer is done.
	assert_eq "$(sbx run -- echo hi)" "hi"
	wait_for "reclaimed after run" settled
	if grep -rqs "^$SBX_ROOT/envs/" /run/sbx-uidslots; then fail "uid slots of this store left"; fi
}

# The reclaimer lingers for more trash (reclaim.h): four removals in a row
# are one reclaimer's, not four; sbx gc ends it at once (lingering 30 s, a
# reclaimer gc did not reach would still be there when gc gives up its
# 10 s wait and returns).
t_a_stream_of_removals_is_one_reclaimers() {
	local ids="" id seen=""
	for _ in 1 2 3 4; do ids="$ids $(sbx create)"; done
	export SBX_RECLAIM_LINGER_MS=30000
	for id in $ids; do
		sbx rm "$id" > /dev/null
		wait_for "a reclaimer" a_reclaimer
		wait_for "reclaimed" no_trash
		seen="$seen $(reclaimers)"
	done
	unset SBX_RECLAIM_LINGER_MS
	assert_eq "$(echo $seen | tr ' ' '\n' | sort -u | grep -c .)" "1" "reclaimers for four removals ($seen)"
	sbx gc > /dev/null
	no_reclaimer || fail "a reclaimer lingers after gc: $(reclaimers)"
}

# Regression: sbx gc removing a stopped environment started a reclaimer for
# its trash, then drained the trash itself; the reclaimer, not yet at its
# lock, started after gc returned and was alive with the store's directory
# open (and slow to end: its inotify watch waited for an SRCU grace period):
# an umount right after gc could fail. gc's own removals start none now.
t_gc_starts_no_reclaimer() {
	local id spid
	id=$(sbx create)
	spid=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor_pid"])')
	kill -9 "$spid"
	for _ in $(seq 100); do sbx ls | grep -q "$id.*stopped" && break; sleep 0.05; done
	sbx ls | grep -q "$id.*stopped" || fail "not stopped after its supervisor's kill: $(sbx ls)"
	# (LeakSanitizer cannot run under ptrace: an ASan build checks leaks elsewhere.)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=prctl -o "$TMPDIR_TEST/gc.strace" "$SBX_BIN" gc > /dev/null
	[ ! -e "$SBX_ROOT/envs/$id" ] || fail "gc did not remove $id"
	no_trash || fail "gc left trash: $(trash)"
	if grep -q 'sbx-reclaim' "$TMPDIR_TEST/gc.strace"; then
		fail "gc started a reclaimer: $(grep sbx-reclaim "$TMPDIR_TEST/gc.strace")"
	fi
	no_reclaimer || fail "a reclaimer of the store is alive after gc: $(reclaimers)"
}
