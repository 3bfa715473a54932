# The traced run's shortcuts (docs/trace.md "What a traced run does"): the
# snapshot before the command is the previous one when the writable layer
# has not changed since it, and the filesystem digest after is taken from
# the index's stat records when nothing changed. Each test here fails if a
# shortcut says "unchanged" of a change: the trace would then name a state
# it did not start from, or miss what the command did.

jget() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[int(k)] if isinstance(d, list) else d[k]
print(d if not isinstance(d,(dict,list)) else json.dumps(d))' "$1"; }

# traced ID CMD...: the trace id of a traced run of CMD.
traced() {
	local id=$1
	shift
	sbx exec --json --trace "$id" -- "$@" | jget trace_id
}
snap_of() { sbx trace inspect "$1" | jget snapshot_id; }
fs_of() { sbx trace inspect "$1" | jget result.fs; }

# A file whose content changes but whose size and mtime do not: only its
# ctime (and the bytes) say so.
same_size_same_mtime() {
	echo "sh -c 'm=\$(stat -c %y $1); printf X | dd of=$1 bs=1 seek=3 conv=notrunc 2>/dev/null; touch -d \"\$m\" $1'"
}

t_trace_reuses_the_unchanged_snapshot() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'mkdir -p /root/d; for i in $(seq 1 50); do head -c 20000 /dev/urandom > /root/d/f$i; done'
	t1=$(traced "$ID" /bin/true)
	t2=$(traced "$ID" /bin/true)
	assert_eq "$(snap_of "$t2")" "$(snap_of "$t1")" "the second trace starts from the first one's snapshot"
	assert_eq "$(fs_of "$t2" | jget changes)" 0
	# The stat-only digest is the one the full diff gives.
	t3=$(SBX_TRACE_FULL_DIGEST=1 traced "$ID" /bin/true)
	assert_eq "$(fs_of "$t3" | jget digest)" "$(fs_of "$t2" | jget digest)"
	assert_eq "$(fs_of "$t3" | jget meta_digest)" "$(fs_of "$t2" | jget meta_digest)"
	# The reused snapshot is the environment's state: a fork of it has the files.
	sbx replay "$t2" > /dev/null || fail "replay of a run on a reused snapshot diverged"
	sbx rm "$ID"
}

t_trace_new_snapshot_after_any_change() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'echo abcdefgh > /root/f; echo keep > /root/g; mkdir /root/d'
	prev=$(snap_of "$(traced "$ID" /bin/true)")
	echo hostfile > "$TMPDIR_TEST/h"
	chmod a+r "$TMPDIR_TEST/h"
	local how
	for how in "untraced exec: content, same size and mtime" "untraced exec: chmod" \
		"untraced exec: delete" "untraced exec: user xattr" "untraced exec: rename" \
		"untraced exec: directory mtime" "sbx cp" "traced exec" "background process"; do
		case "$how" in
		*"same size"*) sbx exec "$ID" -- sh -c "$(same_size_same_mtime /root/f)" ;;
		*chmod) sbx exec "$ID" -- chmod 600 /root/g ;;
		*delete) sbx exec "$ID" -- rm /root/g ;;
		*xattr) sbx exec "$ID" -- python3 -c 'import os; os.setxattr("/root/f", "user.k", b"v")' ;;
		*rename) sbx exec "$ID" -- mv /root/f /root/f2 ;;
		*"directory mtime"*) sbx exec "$ID" -- touch -d @1000 /root/d ;;
		"sbx cp") sbx cp "$TMPDIR_TEST/h" "$ID:/root/h" ;;
		"traced exec") traced "$ID" sh -c 'echo t > /root/t' > /dev/null ;;
		"background process")
			sbx exec "$ID" -- sh -c 'nohup sh -c "sleep 1; echo late > /root/late" > /dev/null 2>&1 &'
			# The run now may start from prev or not; the one after the write must not.
			sleep 2
			sbx exec "$ID" -- test -f /root/late || fail "the background process did not write"
			;;
		esac
		now=$(snap_of "$(traced "$ID" /bin/true)")
		[ "$now" != "$prev" ] || fail "$how: the trace reused snapshot $prev of a changed environment"
		prev=$now
	done
	sbx rm "$ID"
}

t_trace_fs_digest_sees_what_the_command_changed() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'echo abcdefgh > /root/f'
	traced "$ID" /bin/true > /dev/null
	# The command changes a file's bytes, keeping its size and mtime.
	tid=$(traced "$ID" sh -c "$(same_size_same_mtime /root/f)")
	fs=$(fs_of "$tid")
	assert_eq "$(echo "$fs" | jget changes)" 1 "$fs"
	assert_contains "$(echo "$fs" | jget paths)" "M /root/f"
	full=$(SBX_TRACE_FULL_DIGEST=1 traced "$ID" /bin/true)
	# The same change against that trace's snapshot: nothing since.
	assert_eq "$(fs_of "$full" | jget changes)" 0
	# A replay of the run that changed the file matches (it changes it the same way).
	sbx replay "$tid" > /dev/null || fail "replay diverged"
	sbx rm "$ID"
}

t_replay_on_a_reused_snapshot_still_catches_changes() {
	ID=$(sbx create)
	traced "$ID" /bin/true > /dev/null
	# Real time through a path the engine does not virtualize, into a file.
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/schedstat > /root/up' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget divergence.kind)" filesystem "$r"
	sbx rm "$ID"
}
