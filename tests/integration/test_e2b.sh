# The E2B API of `sbx serve`: E2B's official SDK (npm e2b, pinned in
# tests/e2b/package.json) run unchanged against the server
# (tests/e2b/lifecycle.mjs).

source "${SBX_SRC:-.}/tests/integration/e2b_lib.sh"

# e2b CASE: one case of tests/e2b/lifecycle.mjs against the server.
e2b() { e2b_node lifecycle.mjs "$1"; }

t_e2b_sdk_lifecycle() {
	need_e2b_sdk
	e2b_start
	e2b lifecycle
}

t_e2b_sdk_auth_and_data_plane_tokens() {
	need_e2b_sdk
	e2b_start
	e2b auth
}

t_e2b_sdk_timeout_ends_the_sandbox() {
	need_e2b_sdk
	e2b_start
	e2b timeout
}

t_e2b_sdk_several_sandboxes() {
	need_e2b_sdk
	e2b_start
	e2b many
}

# A sandbox, its token and its deadline outlive a restart of `sbx serve`;
# the state is not readable by other users.
t_e2b_restart_keeps_sandboxes() {
	need_e2b_sdk
	e2b_start
	local out id token
	out=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const s = await Sandbox.create({ metadata: { k: 'v' } });
		console.log(s.sandboxId + ' ' + s.envdAccessToken);
	" 2>&1) || fail "create: $out"
	read -r id token <<< "$out"
	assert_eq "$(stat -c %a "$SBX_ROOT/e2b")" "700"
	assert_eq "$(stat -c %a "$SBX_ROOT/e2b/$id.json")" "600"
	e2b_stop
	e2b_start
	out=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const s = await Sandbox.connect('$id');
		const i = await s.getInfo();
		console.log(s.envdAccessToken + ' ' + i.metadata.k + ' ' + (await s.isRunning()) + ' ' + (await s.kill()));
	" 2>&1) || fail "after the restart: $out"
	assert_eq "$out" "$token v true true"
	assert_not_contains "$(sbx ls)" "$id"
}

# Without --token-file the control plane serves any key on a loopback-only
# server, and nobody on a server that listens beyond loopback (even a
# client that comes over loopback).
t_e2b_no_token_file() {
	need_e2b_sdk
	local list='import { Sandbox } from "e2b"; console.log((await Sandbox.list().nextItems()).length)'
	E2B_NO_TOKEN=1 e2b_start
	assert_contains "$(cat "$TMPDIR_TEST/serve.err")" "no --token-file"
	assert_eq "$(e2b_node --input-type=module -e "$list" 2>&1)" "0"
	e2b_stop
	# Beyond loopback without a token, sbx serve does not start at all...
	expect_status 125 timeout 30 "$SBX_BIN" serve --listen 0.0.0.0:0
	assert_contains "$ERR" "--token-file"
	assert_contains "$ERR" "--insecure-no-token"
	# ...unless told to; even then the E2B control plane takes no key.
	E2B_NO_TOKEN=1 E2B_LISTEN=0.0.0.0:0 e2b_start --insecure-no-token
	assert_contains "$(cat "$TMPDIR_TEST/serve.err")" "refused"
	assert_contains "$(e2b_node --input-type=module -e "$list" 2>&1)" "AuthenticationError"
}

# sandbox.files through /files (tests/e2b/files.mjs): text and binary round
# trips, several files at once, gzip, octet-stream, E2B's user `user`.
t_e2b_files_roundtrip_and_user() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs roundtrip
}

# Owner of what the SDK writes is `user` (through getInfo: needs the
# filesystem.Filesystem service; says so when it is not served yet).
t_e2b_files_owner_is_user() {
	need_e2b_sdk
	e2b_start
	local out
	out=$(e2b_node files.mjs owner 2>&1) || fail "$out"
	[[ "$out" != *SKIP-FS* ]] || skip "filesystem.Filesystem is not served yet (the Connect dispatcher)"
}

# filesystem.Filesystem through the SDK: list (depth), exists, getInfo,
# makeDir twice, rename, remove, symlinks described and not followed out.
t_e2b_files_filesystem_calls() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs fs
}

# File metadata through the official SDK: X-Metadata-* as user.e2b.*
# xattrs, shown by write, getInfo, list and rename; refusals.
t_e2b_files_metadata() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs metadata
}

# files.watchDir through the official SDK: envd's event names and types,
# recursive watches (directories made later too, symlinks not followed),
# refusals, the polled watchers bound to their sandbox, the end of a watch
# with its sandbox.
t_e2b_files_watch() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs watch
}

# A watch whose sandbox is killed or times out is cut (no clean end), as a
# command's stream is: the SDK's onExit gets its "killed" TimeoutError.
t_e2b_files_watch_cut_by_kill() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs watch_killed
}

# uploadUrl/downloadUrl and their refusals: wrong, expired, another path,
# another op, another sandbox's.
t_e2b_files_signed_urls() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs signed
}

# Climbing paths and symlinks stay inside, another sandbox's token, 413 for
# oversized bodies and gzip bombs, truncated multipart, NUL and non-UTF-8 paths.
t_e2b_files_attacks() {
	need_e2b_sdk
	e2b_start
	e2b_node files.mjs attacks
}

# envd's process.Process (tests/e2b/commands.mjs): commands and ptys
# through the SDK, and raw Connect requests against the dispatcher.
e2b_cmd() { e2b_node commands.mjs "$1"; }

t_e2b_commands_run_envs_cwd() {
	need_e2b_sdk
	e2b_start
	e2b_cmd run
}

t_e2b_commands_stream_order() {
	need_e2b_sdk
	e2b_start
	e2b_cmd stream
}

t_e2b_commands_background_connect_list_kill() {
	need_e2b_sdk
	e2b_start
	e2b_cmd background
}

t_e2b_commands_kill_is_final() {
	need_e2b_sdk
	e2b_start
	e2b_cmd kill_is_final
}

t_e2b_commands_stdin() {
	need_e2b_sdk
	e2b_start
	e2b_cmd stdin
}

t_e2b_commands_timeout() {
	need_e2b_sdk
	e2b_start
	e2b_cmd timeout
}

# The spare login shell serves a command after a pause exactly as a fresh
# bash -l -c would (docs/e2b.md "Spare shells").
t_e2b_commands_spare_shell() {
	need_e2b_sdk
	e2b_start
	e2b_cmd spare
}

# A sandbox killed under a command: the SDK's "sandbox was killed" error.
t_e2b_commands_killed_during_run() {
	need_e2b_sdk
	e2b_start
	e2b_cmd killed_during_run
}

# A Start without a stdin field opens stdin, as envd.
t_e2b_commands_stdin_absent_is_open() {
	need_e2b_sdk
	e2b_start
	e2b_cmd stdin_absent
}

# E2B_SANDBOX, E2B_SANDBOX_ID and their files under /run/e2b.
t_e2b_commands_default_envs() {
	need_e2b_sdk
	e2b_start
	e2b_cmd default_envs
}

t_e2b_pty_create_input_resize_kill() {
	need_e2b_sdk
	e2b_start
	e2b_cmd pty
}

t_e2b_rpc_attacks() {
	need_e2b_sdk
	e2b_start
	e2b_cmd attacks
}

# Streams dropped midway and concurrent commands leave no thread of the
# server and no process in the sandbox behind.
t_e2b_rpc_stream_flood() {
	need_e2b_sdk
	e2b_start
	local sp
	sp=$(pgrep -P "$E2B_PID" | head -1)
	[ -n "$sp" ] || fail "no sbx serve under $E2B_PID"
	SBX_SERVE_PID=$sp e2b_cmd flood
}

# getMetrics, snapshots and fork (tests/e2b/snapshots.mjs; src/server/e2b_snap.c).
e2b_snap() { e2b_node snapshots.mjs "$1"; }

t_e2b_metrics_shape_and_values() {
	need_e2b_sdk
	e2b_start
	e2b_snap metrics
}

t_e2b_snapshot_create_from_it_delete() {
	need_e2b_sdk
	e2b_start
	e2b_snap snapshot
}

t_e2b_snapshot_list_paging_and_filters() {
	need_e2b_sdk
	e2b_start
	e2b_snap list
}

t_e2b_fork_two_independent_sandboxes() {
	need_e2b_sdk
	e2b_start
	e2b_snap fork
}

t_e2b_snapshot_fork_attacks() {
	need_e2b_sdk
	e2b_start
	e2b_snap attacks
}

# Only snapshots made through the E2B API are E2B snapshots: one taken with
# `sbx snapshot` is not listed, not deletable there, and its label cannot be
# taken as a name.
t_e2b_snapshots_keep_to_their_own() {
	need_e2b_sdk
	e2b_start
	local id out
	id=$(sbx create)
	sbx snapshot "$id" --label "own-$$" > /dev/null
	out=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const all = [];
		const p = Sandbox.listSnapshots();
		while (p.hasNext) all.push(...(await p.nextItems()));
		const s = await Sandbox.create();
		let taken = 'no';
		try { await s.createSnapshot({ name: 'own-$$' }); } catch (e) { taken = 'refused'; }
		await s.kill();
		console.log(all.some((x) => x.names.includes('own-$$')) + ' ' + (await Sandbox.deleteSnapshot('own-$$')) + ' ' + taken);
	" 2>&1) || fail "$out"
	assert_eq "$out" "false false refused"
	assert_contains "$(sbx snapshots)" "own-$$"
	sbx rm "$id" > /dev/null
}

# Sandbox.create() without envVars is a plain create: it feeds the server's
# warm set and is served from it (docs/warm.md). It was not: an empty env
# list made every E2B create a cold one (bench/e2b found it).
t_e2b_creates_use_the_servers_warm_set() {
	need_e2b_sdk
	e2b_start
	local out
	out=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		import { execFileSync } from 'node:child_process';
		import fs from 'node:fs';
		for (let i = 0; i < 8; i++) await (await Sandbox.create()).kill();
		const waitReady = async () => {
			let ready = 0;
			for (let i = 0; i < 300 && ready < 1; i++) {
				const { pools } = JSON.parse(execFileSync(process.env.SBX_BIN, ['pool', 'ls', '--json'], { encoding: 'utf8' }));
				// as root, base is E2B's base snapshot (docs/e2b.md "Templates"); rootless, host
				ready = pools.filter((p) => p.owner && (p.source === 'host' || p.source.startsWith('sha256:'))).reduce((n, p) => n + p.ready, 0);
				if (ready < 1) await new Promise((r) => setTimeout(r, 100));
			}
			return ready >= 1;
		};
		const fromPool = (s) => JSON.parse(fs.readFileSync(process.env.SBX_ROOT + '/envs/' + s.sandboxId + '/state.json', 'utf8')).from_pool;
		let ready = await waitReady();
		const s = await Sandbox.create();
		const r = await s.commands.run('whoami');
		console.log('ready ' + ready + ' from_pool ' + fromPool(s) + ' ' + r.stdout.trim());
		await s.kill();
		// envs given at the create: from the warm set too, every command gets them
		ready = await waitReady();
		const e = await Sandbox.create({ envs: { GREETING: 'hi there', OTHER: 'x=y' } });
		const er = await e.commands.run('echo \"\$GREETING|\$OTHER\"; whoami');
		console.log('ready ' + ready + ' from_pool ' + fromPool(e) + ' ' + er.stdout.trim().split('\n').join(' '));
		await e.kill();
	" 2>&1) || fail "$out"
	assert_eq "$out" "ready true from_pool true user
ready true from_pool true hi there|x=y user"
}

# A base sandbox is a fork of E2B's base snapshot (the host template with
# E2B's user, made once and labelled e2b-base-<hash of the host's passwd
# and group>): no set-up on the create's path. Its user, home and python are there;
# many creates make one snapshot; a deleted one is made again.
t_e2b_base_is_one_snapshot() {
	is_root || skip_ok "rootless there is no base snapshot: E2B's user is not made (only uid 0 exists)"
	need_e2b_sdk
	e2b_start
	local script out labels
	script="
		import { Sandbox } from 'e2b';
		import fs from 'node:fs';
		const boxes = await Promise.all([0, 1, 2].map(() => Sandbox.create()));
		const out = [];
		for (const s of boxes) {
			const st = JSON.parse(fs.readFileSync(process.env.SBX_ROOT + '/envs/' + s.sandboxId + '/state.json', 'utf8'));
			const r = await s.commands.run('whoami; stat -c %U:%a ~; pwd; python -c \"print(6 * 7)\"');
			out.push((st.snapshot_id || 'none').slice(0, 7) + ' ' + r.stdout.trim().split('\\n').join(' '));
			await s.kill();
		}
		console.log([...new Set(out)].join('|'));
	"
	out=$(e2b_node --input-type=module -e "$script" 2>&1) || fail "$out"
	# E2B's image has python: on a host with python3 only, the snapshot links it
	assert_eq "$out" "sha256: user user:750 /home/user 42"
	labels=$(sbx snapshots --json | python3 -c '
import json, sys
print(" ".join(l for s in json.load(sys.stdin)["snapshots"] for l in s["labels"] if l.startswith("e2b-base-")))')
	[[ "$labels" =~ ^e2b-base-[0-9a-f]{16}$ ]] || fail "one base snapshot expected, labels: '$labels'"
	# Not an E2B snapshot: E2B's API neither lists nor deletes it.
	out=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const all = [];
		const p = Sandbox.listSnapshots();
		while (p.hasNext) all.push(...(await p.nextItems()));
		console.log(all.some((x) => x.names.includes('$labels')) + ' ' + (await Sandbox.deleteSnapshot('$labels')));
	" 2>&1) || fail "$out"
	assert_eq "$out" "false false"
	# Deleted behind the server's back: the next create makes it again.
	out=$(sbx snapshots rm "$labels" 2>&1) || fail "sbx snapshots rm $labels: $out"
	out=$(e2b_node --input-type=module -e "$script" 2>&1) || fail "$out"
	# E2B's image has python: on a host with python3 only, the snapshot links it
	assert_eq "$out" "sha256: user user:750 /home/user 42"
	assert_contains "$(sbx snapshots --json)" "\"$labels\""
}

# examples/e2b_agent.mjs, a loop written only against E2B's SDK, runs as a
# user would run it: a copy with `e2b` installed next to it (ESM ignores
# NODE_PATH), pointed at the server by the three variables.
t_e2b_example_agent_loop() {
	need_e2b_sdk
	e2b_start
	local out
	mkdir "$TMPDIR_TEST/agent"
	cp "$SBX_SRC/examples/e2b_agent.mjs" "$TMPDIR_TEST/agent/"
	ln -s "$E2B_DIR/node_modules" "$TMPDIR_TEST/agent/node_modules"
	out=$(e2b_node "$TMPDIR_TEST/agent/e2b_agent.mjs" 2>&1) || fail "$out"
	assert_contains "$out" 'write_file: "/home/user/agent/primes.py"'
	assert_contains "$out" '"exitCode":0'
	assert_contains "$out" 'list_files: ["primes.py","primes.txt"]'
	assert_contains "$out" '"killed":true,"running":false'
	assert_contains "$out" "answer: primes below 50: 2 3 5 7 11 13 17 19 23 29 31 37 41 43 47 (15 of them)"
	assert_contains "$out" "sandbox killed"
	# The sandbox is gone from the server's list.
	assert_eq "$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		console.log((await Sandbox.list().nextItems()).length);" 2>&1)" "0"
}

# The network a sandbox asks for, within sbx serve --policy's cap, updateNetwork
# and GET /envs (tests/e2b/network.mjs; src/server/e2b_network.c).
t_e2b_network_cap_and_envs() {
	need_e2b_sdk
	e2b_start
	e2b_node network.mjs cap_none
	e2b_alive
}

# Real egress through the proxy: an allowed host is reached, one not allowed
# is refused, and updateNetwork gives and takes it on a live sandbox.
t_e2b_network_egress_and_update() {
	need_e2b_sdk
	command -v curl > /dev/null || skip "curl is not installed"
	start_server
	export PORT
	e2b_start --policy '{"network": {"mode": "allow", "allow": ["127.0.0.1:*"]}}'
	e2b_node network.mjs egress
	e2b_alive
	kill $SRV
}

# All traffic under a cap of every public host (--policy open) is the egress
# proxy, not the host's network: the host's loopback and the metadata address
# stay out of reach, and updateNetwork moves a live sandbox to a list and back.
t_e2b_network_internet_is_not_the_host() {
	need_e2b_sdk
	command -v curl > /dev/null || skip "curl is not installed"
	start_server
	export PORT
	e2b_start --policy open
	e2b_node network.mjs internet
	e2b_alive
	kill $SRV
}

# Sandbox.list's metadata filter with a key and no '=' (or an empty value)
# crashed the server: the decoding wrote to a string literal. Every such
# query answers, and the server lives on.
t_e2b_list_filter_without_value() {
	need_e2b_sdk
	e2b_start
	local q code id
	# a sandbox to filter (with none, nothing was decoded)
	id=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		console.log((await Sandbox.create({ metadata: { k: 'v' } })).sandboxId);") || fail "create: $id"
	for q in 'metadata=missing' 'metadata=a%26b' 'metadata=%25' 'metadata=k%3D' 'metadata=%3D' 'state=,'; do
		code=$(python3 - "$E2B_URL" "$E2B_KEY" "$q" << 'PY'
import sys, urllib.request, urllib.error
url, key, q = sys.argv[1:]
req = urllib.request.Request("%s/v2/sandboxes?%s" % (url, q), headers={"X-API-Key": key})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.status, r.read().decode().strip())
except urllib.error.HTTPError as e:
    print(e.code)
except Exception as e:
    print("no answer:", e)
PY
		)
		assert_eq "$code" "200 []" "query $q"
		e2b_alive
	done
	e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const p = Sandbox.list({ query: { metadata: { k: 'v' } } });
		const got = await p.nextItems();
		if (got.length !== 1 || got[0].sandboxId !== '$id') throw new Error(JSON.stringify(got));
		await Sandbox.kill('$id');" || fail "the filter k=v did not find $id"
}
