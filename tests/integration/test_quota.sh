# Disk quota on the writable layer (--disk, limits.disk_bytes): enforced with
# ENOSPC inside (root: an ext4 image on a loop device; one-shot runs: a sized
# tmpfs), kept across snapshot/restore, torn down by rm and gc.

need_root() { is_root || skip_ok "a disk quota on a persistent environment needs root (rootless: refused, tested below)"; }
need_loop() {
	[ -e /dev/loop-control ] || skip_ok "no /dev/loop-control on this host"
	command -v mke2fs > /dev/null || [ -x /usr/sbin/mke2fs ] || [ -x /sbin/mke2fs ] || skip "mke2fs (e2fsprogs) is missing"
}

# Nothing of environment $1's disk may remain: no mount under its directory,
# no loop device on its image (waits a little: autoclear follows the unmount).
assert_disk_gone() {
	local i
	local dir="$SBX_ROOT/envs/$1" i f
	! grep -q " $dir/" /proc/self/mountinfo || fail "a mount under $dir leaked: $(grep " $dir/" /proc/self/mountinfo)"
	for i in $(seq 50); do
		f=$(cat /sys/block/loop*/loop/backing_file 2> /dev/null | grep -F "$dir/disk.img" || true)
		[ -z "$f" ] && break
		sleep 0.1
	done
	[ -z "$f" ] || fail "a loop device still holds $dir/disk.img: $(losetup -a 2>&1 | grep -F "$dir" || true)"
	! losetup -a 2> /dev/null | grep -qF "$dir/disk.img" || fail "losetup -a still lists $dir/disk.img"
}

# JSON field of `sbx inspect $1`: a Python expression over i.
inspect_q() { sbx inspect "$1" | python3 -c "import json,sys; i=json.load(sys.stdin); print($2)"; }

t_quota_enospc_inside_and_space_comes_back() {
	need_root
	need_loop
	id=$(sbx create --disk 20m)
	expect_status 1 sbx exec "$id" -- dd if=/dev/zero of=/root/big bs=64k count=640
	assert_contains "$ERR" "No space left on device"
	# What was written before ENOSPC stays; the quota is the usable size.
	size=$(sbx exec "$id" -- stat -c %s /root/big)
	[ "$size" -gt $((39 << 19)) ] && [ "$size" -le $((20 << 20)) ] || fail "wrote $size bytes into a 20 MiB quota"
	# Deleting gives the space back.
	sbx exec "$id" -- rm /root/big
	sbx exec "$id" -- dd if=/dev/zero of=/root/big bs=1M count=15 status=none
	# /usr (a per-directory overlay of the host template) shares the quota.
	expect_status 1 sbx exec "$id" -- dd if=/dev/zero of=/usr/big bs=1M count=40
	assert_contains "$ERR" "No space left on device"
	# Without a quota, 40 MB is fine.
	other=$(sbx create)
	sbx exec "$other" -- dd if=/dev/zero of=/root/big bs=1M count=40 status=none
	[ "$(inspect_q "$other" "'disk' in i")" = False ] || fail "an environment without a quota shows one"
	sbx rm "$id" "$other"
	assert_disk_gone "$id"
}

t_quota_inspect_shows_quota_and_usage() {
	need_root
	need_loop
	id=$(sbx create --disk 32m)
	inspect_q "$id" "i['limits']['disk_bytes'], i['disk']['quota_bytes'], i['disk']['used_bytes']" > "$TMPDIR_TEST/a"
	sbx exec "$id" -- dd if=/dev/zero of=/root/f bs=1M count=8 status=none
	sbx inspect "$id" | python3 -c "
import json,sys
i=json.load(sys.stdin); d=i['disk']; q=32<<20
assert i['limits']['disk_bytes']==q and d['quota_bytes']==q, i
assert 8<<20 <= d['used_bytes'] < 10<<20, d
assert q*0.985 <= d['size_bytes'] <= q*1.015, d
assert d['available_bytes'] + d['used_bytes'] == d['size_bytes'], d
assert 'loop' in d['backing'], d
"
	python3 -c "import sys; q,d,u=sys.argv[1].split(); assert int(q)==int(d)==32<<20 and int(u) < 1<<20, sys.argv[1]" "$(cat "$TMPDIR_TEST/a")"
	sbx rm "$id"
}

t_quota_snapshot_restore_fork() {
	need_root
	need_loop
	id=$(sbx create --disk 20m)
	sbx exec "$id" -- sh -c 'echo kept > /root/a && dd if=/dev/zero of=/root/m bs=1M count=12 status=none'
	snap=$(sbx snapshot "$id" --label q)
	sbx exec "$id" -- sh -c 'rm /root/a; echo later > /root/b'
	sbx restore "$id" q
	assert_eq "$(sbx exec "$id" -- cat /root/a)" "kept"
	expect_status 1 sbx exec "$id" -- test -e /root/b
	# The restored environment still has its quota (a fresh layer: the
	# snapshot's files are in the store's layers below it).
	assert_eq "$(inspect_q "$id" "i['disk']['quota_bytes']")" "$((20 << 20))"
	expect_status 1 sbx exec "$id" -- dd if=/dev/zero of=/root/big bs=1M count=40
	assert_contains "$ERR" "No space left on device"
	# diff reads the writable layer through its bind.
	assert_contains "$(sbx diff "$id" q)" "/root/big"
	# A fork with its own quota, and one without.
	f=$(sbx fork q --disk 8m)
	assert_eq "$(sbx exec "$f" -- cat /root/a)" "kept"
	expect_status 1 sbx exec "$f" -- dd if=/dev/zero of=/root/big bs=1M count=20
	assert_contains "$ERR" "No space left on device"
	g=$(sbx fork "$snap")
	sbx exec "$g" -- dd if=/dev/zero of=/root/big bs=1M count=40 status=none
	# A snapshot of the quota'd fork works too.
	sbx exec "$f" -- sh -c 'rm /root/big; echo f > /root/c'
	s2=$(sbx snapshot "$f")
	h=$(sbx fork "$s2")
	assert_eq "$(sbx exec "$h" -- cat /root/c)" "f"
	sbx rm "$id" "$f" "$g" "$h"
	for e in "$id" "$f"; do assert_disk_gone "$e"; done
}

t_quota_rm_and_gc_after_kill_leave_nothing() {
	need_root
	need_loop
	a=$(sbx create --disk 16m)
	b=$(sbx create --disk 16m --name victim)
	grep -q " $SBX_ROOT/envs/$b/disk " /proc/self/mountinfo || fail "no disk mounted for $b"
	grep -qF "$SBX_ROOT/envs/$b/disk.img" /sys/block/loop*/loop/backing_file || fail "no loop device for $b"
	sbx exec "$b" -- sh -c 'sleep 1000 > /dev/null 2>&1 &'
	sbx rm "$a"
	assert_disk_gone "$a"
	pid=$(inspect_q "$b" "i['supervisor_pid']")
	kill -9 "$pid"
	for i in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
	assert_contains "$(sbx gc)" "1"
	assert_disk_gone "$b"
	expect_status 125 sbx inspect victim
}

t_quota_policy_applies_and_caps() {
	need_root
	need_loop
	echo '{"name":"small-disk","limits":{"disk_bytes":20971520}}' > "$TMPDIR_TEST/p.json"
	id=$(sbx create --policy "$TMPDIR_TEST/p.json" 2> "$TMPDIR_TEST/warn")
	assert_not_contains "$(cat "$TMPDIR_TEST/warn")" "not enforced"
	assert_eq "$(inspect_q "$id" "i['limits']['disk_bytes']")" "20971520"
	expect_status 1 sbx exec "$id" -- dd if=/dev/zero of=/root/big bs=1M count=40
	assert_contains "$ERR" "No space left on device"
	sbx rm "$id"
	# Narrowing is fine, widening names the field.
	id=$(sbx create --policy "$TMPDIR_TEST/p.json" --disk 8m)
	assert_eq "$(inspect_q "$id" "i['disk']['quota_bytes']")" "$((8 << 20))"
	sbx rm "$id"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json" --disk 1g
	assert_contains "$ERR" "disk quota"
	# The built-in profiles carry one.
	id=$(sbx create --policy strict 2> /dev/null)
	assert_eq "$(inspect_q "$id" "i['disk']['quota_bytes']")" "$((1 << 30))"
	sbx rm "$id"
}

t_quota_invalid_sizes_are_usage_errors() {
	for bad in abc 0 -5 12q; do
		expect_status 125 sbx create --disk "$bad"
		assert_contains "$ERR" "sbx: create:"
	done
	expect_status 125 sbx create --disk
	assert_contains "$ERR" "--disk needs a value"
	expect_status 125 sbx create --disk 1m
	assert_contains "$ERR" "at least 4m"
	expect_status 125 sbx run --disk 2m -- true
	assert_contains "$ERR" "at least 4m"
	[ -z "$(ls "$SBX_ROOT/envs" 2> /dev/null | grep -E '^[0-9a-f]{12}$' || true)" ] || fail "a refused create left an environment"
}

t_quota_one_shot_run_is_a_sized_tmpfs() {
	expect_status 1 sbx run --disk 16m -- dd if=/dev/zero of=/root/big bs=1M count=40
	assert_contains "$ERR" "No space left on device"
	out=$(sbx run --disk 16m -- sh -c 'dd if=/dev/zero of=/root/a bs=1M count=10 status=none; rm /root/a; dd if=/dev/zero of=/root/b bs=1M count=10 status=none && echo ok')
	assert_eq "$out" "ok"
}

t_quota_rootless_refused_clearly() {
	is_root || skip_ok "runs the rootless half as sbxtest from root"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	local RL="$TMPDIR_TEST/rl"
	mkdir -p "$RL/bin" "$RL/w"
	cp "$SBX_BIN" "$RL/bin/sbx"
	chmod -R a+rX "$RL"
	chmod 1777 "$RL/w"
	echo '{"limits":{"disk_bytes":20971520}}' > "$RL/p.json"
	chmod 644 "$RL/p.json"
	rl() {
		setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env HOME=/home/sbxtest \
			PATH=/usr/local/bin:/usr/bin:/bin SBX_ROOT="$RL/w/store" SBX_RUN="$RL/w/run" timeout 60 "$RL/bin/sbx" "$@"
	}
	expect_status 125 rl create --disk 20m
	assert_contains "$ERR" "a disk quota needs root"
	assert_contains "$ERR" "loop"
	# A policy's quota is a warning rootless (not a refusal, not silence).
	expect_status 0 rl create --policy "$RL/p.json"
	assert_contains "$ERR" "disk quota (limits.disk_bytes) is not enforced"
	rl rm "$OUT" > /dev/null
	# One-shot runs have their tmpfs, rootless too.
	expect_status 1 rl run --disk 16m -- dd if=/dev/zero of=/root/big bs=1M count=40
	assert_contains "$ERR" "No space left on device"
	rl gc > /dev/null
}

t_quota_mcp_create_limits_disk_bytes() {
	need_root
	need_loop
	local init='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
	printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"environment_create","arguments":{"limits":{"disk_bytes":20971520}}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"environment_create","arguments":{"limits":{"disk_bytes":1000}}}}' \
		'{"jsonrpc":"2.0","id":3,"method":"tools/list"}' | sbx mcp > "$TMPDIR_TEST/mcp.out"
	id=$(python3 - "$TMPDIR_TEST/mcp.out" << 'EOF'
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {m.get("id"): m for m in msgs if "method" not in m}
r1, r2, r3 = by[1]["result"], by[2]["result"], by[3]["result"]
assert not r1.get("isError"), r1
assert r2["isError"] and "at least 4m" in r2["structuredContent"]["error"]["message"], r2
create = [t for t in r3["tools"] if t["name"] == "environment_create"][0]
assert "disk_bytes" in create["inputSchema"]["properties"]["limits"]["properties"], create
print(r1["structuredContent"]["environment_id"])
EOF
)
	expect_status 1 sbx exec "$id" -- dd if=/dev/zero of=/root/big bs=1M count=40
	assert_contains "$ERR" "No space left on device"
	sbx rm "$id"
	assert_disk_gone "$id"
}
