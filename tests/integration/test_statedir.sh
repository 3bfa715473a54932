# The state directories under load and in odd places: concurrent creates on a
# fresh and on an existing store (every cache several creates may build at
# once is built once), and SBX_ROOT/SBX_RUN under a private (0700) directory
# as `mktemp -d` makes them, as root and rootless.

# parallel_creates N: N `sbx create` at once; every one must succeed. Prints
# the wall time in ms on fd 3 when it is open.
parallel_creates() {
	local i
	local n=$1 i pids=() ok=0 t0 t1
	t0=$(date +%s%N)
	for i in $(seq "$n"); do
		("$SBX_BIN" create > "$TMPDIR_TEST/c$i.out" 2> "$TMPDIR_TEST/c$i.err"; echo $? > "$TMPDIR_TEST/c$i.rc") &
		pids+=($!)
	done
	wait "${pids[@]}"
	t1=$(date +%s%N)
	echo "$n parallel creates: $(((t1 - t0) / 1000000)) ms" >&2
	local bad=""
	for i in $(seq "$n"); do
		if [ "$(cat "$TMPDIR_TEST/c$i.rc")" = 0 ]; then
			ok=$((ok + 1))
		else
			bad+=" [create $i exited $(cat "$TMPDIR_TEST/c$i.rc"): $(cat "$TMPDIR_TEST/c$i.err")]"
		fi
	done
	for i in $(seq "$n"); do
		local id
		id=$(cat "$TMPDIR_TEST/c$i.out")
		[ -z "$id" ] || "$SBX_BIN" rm "$id" > /dev/null 2>&1 || true
	done
	[ "$ok" = "$n" ] || fail "$((n - ok)) of $n concurrent creates failed:$bad"
}

t_concurrent_creates_fresh_store() {
	# Several rounds, each on a store no create has touched yet: the caches
	# (the host mask, ...) are built while the others wait for them.
	local r
	for r in 1 2 3; do
		export SBX_ROOT="$TMPDIR_TEST/root$r" SBX_RUN="$TMPDIR_TEST/run$r"
		parallel_creates 12
		"$SBX_BIN" gc > /dev/null
	done
}

t_concurrent_creates_existing_store() {
	id=$(sbx create)
	sbx rm "$id" > /dev/null
	# Without its cached files and trees (as after a host change, which
	# changes the mask's key) the caches are rebuilt while the store already
	# exists.
	local r
	for r in 1 2; do
		rm -rf "$SBX_ROOT"/masks/*
		parallel_creates 12
	done
}

# The same through one `sbx serve` process: its threads create at once (a
# temp name per process is shared by its threads: issue 13's 9-of-160).
t_concurrent_creates_one_server() {
	timeout 300 "$SBX_BIN" serve --listen 127.0.0.1:0 2> "$TMPDIR_TEST/serve.err" &
	local pid=$! url="" r
	for _ in $(seq 100); do
		url=$(sed -n 's/^sbx: serving MCP on \(http[^ ]*\).*/\1/p' "$TMPDIR_TEST/serve.err")
		[ -n "$url" ] && break
		sleep 0.1
	done
	[ -n "$url" ] || fail "sbx serve did not start: $(cat "$TMPDIR_TEST/serve.err")"
	for r in 1 2 3; do
		rm -rf "$SBX_ROOT"/masks
		set +e
		python3 - "$url" 16 > "$TMPDIR_TEST/py.out" 2>&1 <<'PY'
import json, sys, threading, urllib.request
url, n = sys.argv[1], int(sys.argv[2])
res = [None] * n
def call(method, params):
    req = urllib.request.Request(url, data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode(),
                                 headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(req, timeout=120) as f:
        return json.loads(f.read())
def one(i):
    try:
        res[i] = call("environment.create", {})
    except Exception as e:
        res[i] = {"exception": repr(e)}
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
[t.start() for t in ts]
[t.join() for t in ts]
bad = [r for r in res if "result" not in r]
for r in res:
    if "result" in r:
        call("environment.destroy", {"environment_id": r["result"]["environment_id"]})
print(f"{n - len(bad)} of {n} creates succeeded; failures (first 3): {bad[:3]}")
sys.exit(1 if bad else 0)
PY
		local rc=$?
		set -e
		[ "$rc" = 0 ] || { kill "$pid"; fail "round $r through sbx serve: $(cat "$TMPDIR_TEST/py.out")"; }
	done
	kill -TERM "$pid"
	wait "$pid" || true
}

# private_cycle: create, exec, write, snapshot, restore, rm under the current
# SBX_ROOT/SBX_RUN; prints what failed.
private_cycle() {
	local id snap out
	id=$(sbx create) || fail "create under a private directory failed (see above)"
	assert_eq "$(sbx exec "$id" -- echo hi)" "hi" "exec"
	sbx exec "$id" -- sh -c 'echo one > /root/f'
	snap=$(sbx snapshot "$id") || fail "snapshot failed"
	sbx exec "$id" -- sh -c 'echo two > /root/f'
	sbx restore "$id" "$snap" > /dev/null || fail "restore failed"
	assert_eq "$(sbx exec "$id" -- cat /root/f)" "one" "file after restore"
	f=$(sbx fork "$snap") || fail "fork failed"
	assert_eq "$(sbx exec "$f" -- cat /root/f)" "one" "file in the fork"
	assert_eq "$(sbx run -- echo ephemeral)" "ephemeral" "sbx run"
	sbx rm "$id" "$f" > /dev/null || fail "rm failed"
}

# issue 13.5: SBX_ROOT and SBX_RUN inside a `mktemp -d` directory (0700,
# owned by root; the harness's own temp dir is 0755, so make one here).
t_private_state_dir_root() {
	is_root || skip_ok "needs root (the rootless case is t_private_state_dir_rootless)"
	local p
	p=$(mktemp -d "$TMPDIR_TEST/priv.XXXXXX")
	chmod 700 "$p"
	export SBX_ROOT="$p/root" SBX_RUN="$p/run"
	private_cycle
	# A traced command and its replay (the recorder and the replay's restore).
	local id tid
	id=$(sbx create)
	tid=$(sbx exec --json --trace "$id" -- echo traced | python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_id"])')
	expect_status 0 sbx replay "$tid"
	assert_contains "$OUT" MATCH
	sbx rm "$id" > /dev/null
	[ "$(stat -c %a "$p")" = 700 ] || fail "sbx changed the private directory's mode to $(stat -c %a "$p")"
	sbx gc > /dev/null
}

t_private_state_dir_rootless() {
	is_root || skip_ok "run as root, it tests rootless mode through the user sbxtest"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	command -v setpriv > /dev/null || skip "setpriv (util-linux) is missing"
	local rl="$TMPDIR_TEST/rl"
	mkdir -p "$rl"
	cp "$SBX_BIN" "$rl/sbx"
	chmod 755 "$TMPDIR_TEST" "$rl" "$rl/sbx"
	set +e
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env \
		env PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/sbxtest SBX_BIN="$rl/sbx" bash -c '
		set -e
		p=$(mktemp -d)
		trap "chmod -R u+rwX \$p 2>/dev/null; rm -rf \$p" EXIT
		export SBX_ROOT=$p/root SBX_RUN=$p/run
		id=$($SBX_BIN create)
		[ "$($SBX_BIN exec $id -- echo hi)" = hi ] || { echo "exec failed"; exit 1; }
		$SBX_BIN exec $id -- sh -c "echo one > /root/f"
		snap=$($SBX_BIN snapshot $id)
		$SBX_BIN exec $id -- sh -c "echo two > /root/f"
		$SBX_BIN restore $id $snap > /dev/null
		got=$($SBX_BIN exec $id -- cat /root/f)
		[ "$got" = one ] || { echo "after restore: $got"; exit 1; }
		$SBX_BIN rm $id > /dev/null
		$SBX_BIN gc > /dev/null
		[ "$(stat -c %a $p)" = 700 ] || { echo "mode changed: $(stat -c %a $p)"; exit 1; }
		echo cycle-ok' 2>&1)
	set -e
	assert_contains "$out" "cycle-ok"
}

# issue 13.6: a private (0700) root-owned volume reads as its owner reads it;
# it stays unwritable, and nothing setuid can be planted through it.
t_private_root_owned_volume_readable_not_writable() {
	is_root || skip_ok "only root owns root-owned directories"
	local d
	d=$(mktemp -d "$TMPDIR_TEST/vol.XXXXXX")
	chmod 700 "$d"
	echo secret-data > "$d/f"
	chmod 600 "$d/f"
	mkdir "$d/sub"
	chmod 700 "$d/sub"
	for mode in rw ro; do
		local spec="$d:/v" out
		[ $mode = ro ] && spec="$d:/v:ro"
		id=$(sbx create -v "$spec" 2> "$TMPDIR_TEST/warn")
		[ $mode = rw ] && assert_contains "$(cat "$TMPDIR_TEST/warn")" "owned by host root"
		expect_status 0 sbx exec "$id" -- cat /v/f
		assert_eq "$OUT" "secret-data" "cat of a 0600 root-owned file in a 0700 volume ($mode)"
		expect_status 0 sbx exec "$id" -- ls /v/sub
		expect_status 1 sbx exec "$id" -- sh -c 'echo x > /v/new 2>/dev/null || exit 1'
		expect_status 1 sbx exec "$id" -- sh -c 'echo x >> /v/f 2>/dev/null || exit 1'
		expect_status 1 sbx exec "$id" -- sh -c 'cp /bin/sh /v/sub/sh 2>/dev/null && chmod 4755 /v/sub/sh 2>/dev/null || exit 1'
		expect_status 1 sbx exec "$id" -- sh -c 'chmod 4777 /v/f 2>/dev/null || exit 1'
		expect_status 1 sbx exec "$id" -- sh -c 'chown 1:1 /v/f 2>/dev/null || exit 1'
		out=$(sbx exec "$id" -- sh -c 'grep " /v " /proc/self/mounts')
		assert_contains "$out" "ro,"
		assert_contains "$out" "nosuid"
		sbx rm "$id" > /dev/null
		[ ! -e "$d/new" ] && [ ! -e "$d/sub/sh" ] || fail "the environment wrote into a root-owned volume ($mode)"
		assert_eq "$(stat -c '%a %u' "$d/f")" "600 0"
		assert_eq "$(cat "$d/f")" "secret-data"
	done
}
