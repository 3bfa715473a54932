# Secrets, two phases and hidden paths (docs/secrets.md).

# A value that appears nowhere unless sbx leaks it.
new_secret() { echo "sbxsecret-$RANDOM$RANDOM-$RANDOM$RANDOM-zq"; }

# leaks VALUE DIR...: every file under the DIRs that contains VALUE (sockets,
# devices and fifos skipped), one per line; empty when there is none.
leaks() {
	local v=$1
	shift
	grep -r -a -l -F --devices=skip -e "$v" "$@" 2> /dev/null || true
}

# busybox_rootfs DIR: a tiny dir: template (exportable, unlike the host template).
busybox_rootfs() {
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	mkdir -p "$1/bin" "$1/etc" "$1/root"
	cp /bin/busybox "$1/bin/busybox"
	for c in sh echo cat ls mkdir cp test wc stat sleep true env grep rm; do ln -s busybox "$1/bin/$c"; done
	echo "root:x:0:0:root:/root:/bin/sh" > "$1/etc/passwd"
	echo "busybox" > "$1/etc/hostname"
}

start_servers() {
	P1=$((20000 + RANDOM % 20000))
	P2=$((P1 + 1))
	mkdir -p "$TMPDIR_TEST/www"
	echo "hello from the host" > "$TMPDIR_TEST/www/index.html"
	(cd "$TMPDIR_TEST/www" && exec python3 -m http.server "$P1" --bind 127.0.0.1) > /dev/null 2>&1 &
	SRV1=$!
	(cd "$TMPDIR_TEST/www" && exec python3 -m http.server "$P2" --bind 127.0.0.1) > /dev/null 2>&1 &
	SRV2=$!
	for p in $P1 $P2; do
		for i in $(seq 50); do
			python3 -c "import socket; socket.create_connection(('127.0.0.1', $p), 1)" 2> /dev/null && break
			sleep 0.1
		done
	done
}
stop_servers() { kill "$SRV1" "$SRV2" 2> /dev/null || true; }
# fetch PORT: the body, or the proxy's status line when it refuses.
fetch() {
	sbx exec "$ID" -- curl -s -i --max-time 10 --noproxy '' -x http://127.0.0.1:3128 "http://127.0.0.1:$1/" |
		grep -E '^HTTP/|hello' | tail -n 1 | tr -d '\r'
}

t_secrets_reach_commands_as_variables_and_files() {
	export SBX_T_TOKEN=$(new_secret)
	local fv
	fv=$(new_secret)
	printf '%s' "$fv" > "$TMPDIR_TEST/npm"
	cat > "$TMPDIR_TEST/p.json" <<- EOF
		{"name": "withsecrets",
		 "secrets": {"SBX_T_TOKEN": {"env": true}, "NPM": {"file": "$TMPDIR_TEST/npm"}}}
	EOF
	ID=$(sbx create --policy "$TMPDIR_TEST/p.json")
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "$SBX_T_TOKEN"')" "$SBX_T_TOKEN"
	assert_eq "$(sbx exec "$ID" -- cat /run/secrets/NPM)" "$fv"
	# A tmpfs of its own, readable by the environment's root only.
	assert_eq "$(sbx exec "$ID" -- stat -f -c %T /run/secrets)" "tmpfs"
	assert_eq "$(sbx exec "$ID" -- stat -c %a /run/secrets/NPM)" "400"
	# inspect names them, never their values.
	out=$(sbx inspect "$ID")
	assert_contains "$out" "SBX_T_TOKEN"
	assert_contains "$out" "/run/secrets/NPM"
	assert_not_contains "$out" "$SBX_T_TOKEN"
	assert_not_contains "$out" "$fv"
	# --secret without a policy does the same.
	id2=$(sbx create --secret SBX_T_TOKEN --secret "F=$TMPDIR_TEST/npm")
	assert_eq "$(sbx exec "$id2" -- sh -c 'echo "$SBX_T_TOKEN"; cat /run/secrets/F')" "$SBX_T_TOKEN
$fv"
	sbx rm "$ID" "$id2" > /dev/null
}

# The issue's test: snapshot, export, trace, then search everything for the values.
t_secrets_never_stored() {
	export SBX_T_TOKEN=$(new_secret)
	local fv
	fv=$(new_secret)
	printf '%s' "$fv" > "$TMPDIR_TEST/cred"
	echo "{\"secrets\": {\"SBX_T_TOKEN\": {\"env\": true}, \"CRED\": {\"file\": \"$TMPDIR_TEST/cred\"}}}" > "$TMPDIR_TEST/p.json"
	busybox_rootfs "$TMPDIR_TEST/rootfs"
	ID=$(SBX_DEBUG=1 sbx create --template "dir:$TMPDIR_TEST/rootfs" --policy "$TMPDIR_TEST/p.json" 2> /dev/null)
	# The command sees both, and writes something of its own (so the snapshot has a layer).
	assert_eq "$(sbx exec "$ID" -- sh -c 'test "$SBX_T_TOKEN" = "'"$SBX_T_TOKEN"'" && test -s /run/secrets/CRED && echo ok')" "ok"
	sbx exec "$ID" -- sh -c 'mkdir -p /work && echo built > /work/out && cp /etc/hostname /work/h'
	snap=$(sbx snapshot "$ID" --label withsecrets)
	assert_contains "$(sbx exec "$ID" -- cat /work/out)" "built"
	# A traced command that uses the secret (through its environment).
	sbx exec --trace "$ID" -- sh -c 'test -n "$SBX_T_TOKEN" && cat /run/secrets/CRED > /dev/null' 2> "$TMPDIR_TEST/trace.err"
	trace=$(sed -n 's/^sbx: trace \(sha256:[0-9a-f]*\).*/\1/p' "$TMPDIR_TEST/trace.err")
	[ -n "$trace" ] || fail "no trace id: $(cat "$TMPDIR_TEST/trace.err")"
	sbx trace show "$trace" > "$TMPDIR_TEST/trace.txt"
	sbx trace inspect "$trace" > "$TMPDIR_TEST/trace.json"
	sbx export "$snap" "oci:$TMPDIR_TEST/export" > /dev/null
	# A fork of the snapshot has no secret unless its own policy gives one.
	fork=$(sbx fork "$snap")
	assert_eq "$(sbx exec "$fork" -- sh -c 'echo "${SBX_T_TOKEN:-none}"; ls -A /run/secrets 2> /dev/null | wc -l')" "none
0"
	for v in "$SBX_T_TOKEN" "$fv"; do
		found=$(leaks "$v" "$SBX_ROOT" "$SBX_RUN" "$TMPDIR_TEST/export" "$TMPDIR_TEST/trace.txt" "$TMPDIR_TEST/trace.json")
		[ -z "$found" ] || fail "a secret value was found in: $found"
	done
	# The layer blobs are compressed: look inside them too.
	for b in "$TMPDIR_TEST"/export/blobs/sha256/*; do
		if gzip -t "$b" 2> /dev/null && zcat "$b" | grep -a -q -F -e "$SBX_T_TOKEN" -e "$fv"; then
			fail "a secret value is inside exported blob $b"
		fi
	done
	sbx rm "$ID" "$fork" > /dev/null
}

t_secret_sources_checked_at_create() {
	unset SBX_T_MISSING
	expect_status 125 sbx create --secret SBX_T_MISSING
	assert_contains "$ERR" "SBX_T_MISSING is not set"
	expect_status 125 sbx create --secret "F=$TMPDIR_TEST/nope"
	assert_contains "$ERR" "nope"
	expect_status 125 sbx create --secret "1BAD"
	assert_contains "$ERR" "invalid name"
	# A policy that sets secrets lists all that may be given.
	export SBX_T_A=a SBX_T_B=b
	echo '{"secrets": {"SBX_T_A": {"env": true}}}' > "$TMPDIR_TEST/p.json"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json" --secret SBX_T_B
	assert_contains "$ERR" "not granted by the policy"
	id=$(sbx create --policy "$TMPDIR_TEST/p.json" --secret SBX_T_A)
	assert_eq "$(sbx exec "$id" -- sh -c 'echo "$SBX_T_A${SBX_T_B:-}"')" "a"
	sbx rm "$id" > /dev/null
	# Volumes cannot land on or over the secrets' tmpfs.
	mkdir -p "$TMPDIR_TEST/v"
	echo x > "$TMPDIR_TEST/f"
	expect_status 125 sbx create --secret "F=$TMPDIR_TEST/f" -v "$TMPDIR_TEST/v:/run"
	assert_contains "$ERR" "/run/secrets"
}

t_phases_switch_once_and_narrow() {
	command -v curl > /dev/null || skip "curl is not installed"
	start_servers
	export SBX_T_TOKEN=$(new_secret)
	printf 'filesecret' > "$TMPDIR_TEST/cred"
	cat > "$TMPDIR_TEST/setup.json" <<- EOF
		{"name": "setup", "network": {"allow": ["127.0.0.1:$P1", "127.0.0.1:$P2"]},
		 "limits": {"memory_bytes": 536870912, "pids": 512, "timeout_ms": 600000},
		 "secrets": {"SBX_T_TOKEN": {"env": true}, "CRED": {"file": "$TMPDIR_TEST/cred"}}}
	EOF
	cat > "$TMPDIR_TEST/agent.json" <<- EOF
		{"name": "agent", "network": {"allow": ["127.0.0.1:$P1"]},
		 "limits": {"memory_bytes": 268435456, "pids": 128}, "env": {"PHASE": "agent"}}
	EOF
	ID=$(sbx create --policy "$TMPDIR_TEST/setup.json" --agent-policy "$TMPDIR_TEST/agent.json")
	assert_eq "$(sbx phase "$ID")" "setup"
	# Setup: the secret, both hosts.
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "$SBX_T_TOKEN"')" "$SBX_T_TOKEN"
	assert_eq "$(sbx exec "$ID" -- cat /run/secrets/CRED)" "filesecret"
	assert_eq "$(fetch "$P1")" "hello from the host"
	assert_eq "$(fetch "$P2")" "hello from the host"
	# Something of the setup phase still running (with the secret in its environment).
	sbx exec "$ID" -- sh -c 'nohup sleep 1000 > /dev/null 2>&1 &'
	eventually 20 ps_shows "$ID" "sleep 1000" || fail "sleep 1000 never ran: $(sbx ps "$ID")"
	out=$(sbx phase --json "$ID" agent)
	echo "$out" | python3 -c "
import json,sys
r=json.load(sys.stdin)
assert r['phase']=='agent' and r['previous_phase']=='setup', r
assert r['processes_ended']>=1, r
assert sorted(r['secrets_removed'])==['CRED','SBX_T_TOKEN'], r
assert r['network_allow']==['127.0.0.1:$P1'], r
assert r['limits']['memory_bytes']==268435456 and r['limits']['pids']==128, r
"
	# Agent: no secret (variable or file), no setup process, the setup-only host refused.
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "${SBX_T_TOKEN:-gone}"; ls -A /run/secrets | wc -l; echo $PHASE')" "gone
0
agent"
	assert_not_contains "$(sbx ps "$ID")" "sleep 1000"
	assert_eq "$(fetch "$P1")" "hello from the host"
	assert_contains "$(fetch "$P2")" "403"
	# Limits were lowered live.
	inspect=$(sbx inspect "$ID")
	echo "$inspect" | python3 -c "
import json,sys
i=json.load(sys.stdin)
assert i['phase']=='agent' and i['limits']['memory_bytes']==268435456, i
assert 'SBX_T_TOKEN' not in json.dumps(i['secrets']), i
"
	for f in /sys/fs/cgroup/sbx/"$ID"/memory.max /sys/fs/cgroup/memory/sbx/"$ID"/memory.limit_in_bytes; do
		[ -f "$f" ] && assert_eq "$(cat "$f")" "268435456"
	done
	# Once and for good.
	expect_status 125 sbx phase "$ID" setup
	assert_contains "$ERR" "cannot go back"
	expect_status 125 sbx phase "$ID" agent
	assert_contains "$ERR" "already in the agent phase"
	sbx rm "$ID" > /dev/null
	stop_servers
}

t_phase_default_drops_secrets_only() {
	export SBX_T_TOKEN=$(new_secret)
	ID=$(sbx create --secret SBX_T_TOKEN --env KEEP=1)
	out=$(sbx phase "$ID" agent)
	assert_contains "$out" "1 secret(s) removed"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "${SBX_T_TOKEN:-gone} $KEEP"')" "gone 1"
	sbx rm "$ID" > /dev/null
}

t_agent_policy_may_only_narrow() {
	echo '{"network": {"allow": ["example.com"]}}' > "$TMPDIR_TEST/setup.json"
	echo '{"network": {"allow": ["example.org"]}}' > "$TMPDIR_TEST/wider.json"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/setup.json" --agent-policy "$TMPDIR_TEST/wider.json"
	assert_contains "$ERR" "network.allow[0]"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/setup.json" --agent-policy open
	assert_contains "$ERR" "wider"
	echo '{"limits": {"memory_bytes": 268435456}}' > "$TMPDIR_TEST/small.json"
	echo '{"limits": {"memory_bytes": 536870912}}' > "$TMPDIR_TEST/big.json"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/small.json" --agent-policy "$TMPDIR_TEST/big.json"
	assert_contains "$ERR" "limits.memory_bytes"
	echo '{"override": true}' > "$TMPDIR_TEST/ov.json"
	expect_status 125 sbx create --agent-policy "$TMPDIR_TEST/ov.json"
	assert_contains "$ERR" "override"
	echo '{"filesystem": {"hidden": ["/etc/hostname"]}}' > "$TMPDIR_TEST/hide.json"
	expect_status 125 sbx create --agent-policy "$TMPDIR_TEST/hide.json"
	assert_contains "$ERR" "filesystem.hidden"
	export SBX_T_A=a
	echo '{"secrets": {"SBX_T_A": {"env": true}}}' > "$TMPDIR_TEST/sa.json"
	expect_status 125 sbx create --agent-policy "$TMPDIR_TEST/sa.json"
	assert_contains "$ERR" "not given in the setup phase"
	mkdir -p "$TMPDIR_TEST/v"
	expect_status 125 sbx create -v "$TMPDIR_TEST/v:/v" --agent-policy strict
	assert_contains "$ERR" "volumes cannot change"
	# Network open is the host's network: it cannot be narrowed live.
	expect_status 125 sbx create --network open --agent-policy strict
	assert_contains "$ERR" "network open"
	# An agent policy is a ceiling, as any policy: the smaller of it and the setup phase's values.
	id=$(sbx create --memory 64m --agent-policy strict)
	sbx phase "$id" agent > /dev/null
	sbx inspect "$id" | python3 -c "
import json,sys
l=json.load(sys.stdin)['limits']
assert l['memory_bytes']==64*1024*1024 and l['pids']==256 and l['output_bytes']==10485760, l"
	sbx rm "$id" > /dev/null
	# The strict profile narrows a dev setup (its disk quota is reported, not applied).
	id=$(sbx create --policy dev --agent-policy strict 2> "$TMPDIR_TEST/warn")
	sbx phase "$id" agent > /dev/null
	sbx inspect "$id" | python3 -c "
import json,sys
i=json.load(sys.stdin)
assert i['network']=='none' and i['limits']['pids']==256, i"
	sbx rm "$id" > /dev/null
}

t_phase_and_secrets_survive_restore() {
	export SBX_T_TOKEN=$(new_secret)
	ID=$(sbx create --secret SBX_T_TOKEN --hide /etc/hostname)
	snap=$(sbx snapshot "$ID")
	# Setup phase: a restore starts again with the secret (read again from its source).
	sbx restore "$ID" "$snap" > /dev/null
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "$SBX_T_TOKEN"; test -e /etc/hostname || echo hidden')" "$SBX_T_TOKEN
hidden"
	sbx phase "$ID" agent > /dev/null
	# Agent phase: a restore stays there, without the secret.
	sbx restore "$ID" "$snap" > /dev/null
	assert_eq "$(sbx phase "$ID")" "agent"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "${SBX_T_TOKEN:-gone}"; test -e /etc/hostname || echo hidden')" "gone
hidden"
	found=$(leaks "$SBX_T_TOKEN" "$SBX_ROOT" "$SBX_RUN")
	[ -z "$found" ] || fail "the secret was found in: $found"
	sbx rm "$ID" > /dev/null
}

t_hidden_paths_are_gone() {
	cat > "$TMPDIR_TEST/p.json" <<- 'EOF'
		{"filesystem": {"hidden": ["/etc/issue", "/usr/share/doc", "/bin/true"]}}
	EOF
	ID=$(sbx create --policy "$TMPDIR_TEST/p.json")
	out=$(sbx exec "$ID" -- sh -c '
		cat /etc/issue 2>&1 || echo "open: refused"
		ls /etc | grep -qx issue && echo "listed" || echo "not listed"
		cat /proc/self/root/etc/issue 2>&1 || echo "proc root: refused"
		ln -s /etc/issue /tmp/l; cat /tmp/l 2>&1 || echo "symlink: refused"
		ln /etc/issue /tmp/h 2>&1 || echo "hard link: refused"
		ls /usr/share/doc 2>&1 || echo "dir: refused"
		ls /usr/share | grep -qx doc && echo "dir listed" || echo "dir not listed"
		test -e /usr/bin/true || echo "true: gone through its symlinked path too"
		python3 -c "import os; os.open(\"/etc/../etc/./issue\", os.O_RDONLY)" 2>&1 | tail -n 1')
	assert_contains "$out" "open: refused"
	assert_contains "$out" "not listed"
	assert_contains "$out" "proc root: refused"
	assert_contains "$out" "symlink: refused"
	assert_contains "$out" "hard link: refused"
	assert_contains "$out" "dir: refused"
	assert_contains "$out" "dir not listed"
	assert_contains "$out" "true: gone"
	assert_contains "$out" "FileNotFoundError"
	# Everything else works: reading, new files next to a hidden one, its own file at that path.
	out=$(sbx exec "$ID" -- sh -c '
		grep -q . /etc/os-release && echo "os-release ok"
		test "$(ls /etc | wc -l)" -gt 10 && echo "etc ok"
		echo mine > /etc/new && cat /etc/new
		echo own > /etc/issue && cat /etc/issue
		ls /usr/share | grep -c . | awk "\$1 > 5 {print \"share ok\"}"')
	assert_contains "$out" "os-release ok"
	assert_contains "$out" "etc ok"
	assert_contains "$out" "mine"
	assert_contains "$out" "own"
	assert_contains "$out" "share ok"
	# The hidden paths are not "deleted" changes of the environment.
	diff=$(sbx diff "$ID")
	assert_not_contains "$diff" "/usr/share/doc"
	sbx rm "$ID" > /dev/null
	# A whole system directory of the host template (it has an overlay of its own).
	if [ -d /opt ]; then
		ID=$(sbx create --hide /opt)
		assert_eq "$(sbx exec "$ID" -- sh -c 'ls / | grep -qx opt && echo listed || echo gone; mkdir /opt && ls -A /opt | wc -l')" "gone
0"
		sbx rm "$ID" > /dev/null
	fi
	expect_status 125 sbx create --hide /dev/null
	assert_contains "$ERR" "/dev and /proc"
}

t_hidden_paths_in_dir_templates_and_volumes() {
	mkdir -p "$TMPDIR_TEST/tree/secret" "$TMPDIR_TEST/tree/ok" "$TMPDIR_TEST/vol/keys"
	echo topsecret > "$TMPDIR_TEST/tree/secret/key"
	echo fine > "$TMPDIR_TEST/tree/ok/file"
	echo VOLSECRET > "$TMPDIR_TEST/vol/.env"
	echo VOLKEY > "$TMPDIR_TEST/vol/keys/id"
	echo visible > "$TMPDIR_TEST/vol/readme"
	busybox_rootfs "$TMPDIR_TEST/tree"
	ID=$(sbx create --template "dir:$TMPDIR_TEST/tree" -v "$TMPDIR_TEST/vol:/work" \
		--hide /secret --hide /work/.env --hide /work/keys)
	out=$(sbx exec "$ID" -- /bin/sh -c '
		ls /secret 2>&1 || echo "secret: gone"
		cat /ok/file
		cat /work/readme
		echo "[$(cat /work/.env)]"
		ls -A /work/keys | wc -l
		echo x > /work/.env 2>&1 || echo "env: read-only"')
	assert_contains "$out" "secret: gone"
	assert_contains "$out" "fine"
	assert_contains "$out" "visible"
	assert_contains "$out" "[]"
	assert_not_contains "$out" "VOLSECRET"
	assert_not_contains "$out" "VOLKEY"
	assert_contains "$out" "env: read-only"
	assert_eq "$(cat "$TMPDIR_TEST/vol/.env")" "VOLSECRET"
	sbx rm "$ID" > /dev/null
	# A second route to a hidden path is refused at create.
	expect_status 125 sbx create -v "$TMPDIR_TEST/vol:/a" -v "$TMPDIR_TEST/vol:/b" --hide /a/.env
	assert_contains "$ERR" "reachable as '/b/.env'"
	expect_status 125 sbx create -v "$TMPDIR_TEST/vol:/a" -v "$TMPDIR_TEST/vol/keys:/k" --hide /a/keys
	assert_contains "$ERR" "reachable as '/k'"
	expect_status 125 sbx create -v "$TMPDIR_TEST/vol:/a" -v "$TMPDIR_TEST/vol/keys:/k" --hide /a
	assert_contains "$ERR" "shows part of hidden path"
	id=$(sbx create -v "$TMPDIR_TEST/vol:/a" -v "$TMPDIR_TEST/vol:/b" --hide /a/.env --hide /b/.env)
	assert_eq "$(sbx exec "$id" -- cat /a/.env /b/.env /b/readme)" "visible"
	sbx rm "$id" > /dev/null
	expect_status 125 sbx create --hide relative/path
	assert_contains "$ERR" "absolute"
	expect_status 125 sbx create --hide /
}

t_hidden_paths_survive_snapshot_and_fork() {
	ID=$(sbx create --hide /etc/issue)
	sbx exec "$ID" -- sh -c 'echo data > /root/f'
	snap=$(sbx snapshot "$ID")
	# A fork starts from the snapshot: the template's file is there again
	# unless the fork hides it too (hidden paths belong to an environment).
	fork=$(sbx fork "$snap" --hide /etc/issue)
	assert_eq "$(sbx exec "$fork" -- sh -c 'cat /root/f; test -e /etc/issue || echo hidden')" "data
hidden"
	sbx rm "$ID" "$fork" > /dev/null
}

# mcp_call N 'params': one tools/call (id N) through its own server (calls
# of one server run concurrently); output appended to $TMPDIR_TEST/mcp.out.
mcp_call() {
	printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}' \
		'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		"{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":$2}" |
		SBX_MCP_SECRETS=SBX_T_TOKEN,OTHER timeout 60 "$SBX_BIN" mcp | grep -v '"id":0,' >> "$TMPDIR_TEST/mcp.out"
}

t_mcp_phases_and_secret_offers() {
	command -v node > /dev/null || skip "node is not installed (needed to parse MCP)"
	export SBX_T_TOKEN=$(new_secret)
	: > "$TMPDIR_TEST/mcp.out"
	mcp_call 1 '{"name":"environment_create","arguments":{"name":"mcpphase","phases":{"setup":{"secrets":{"SBX_T_TOKEN":{"env":true}}},"agent":"strict"}}}'
	mcp_call 2 '{"name":"environment_create","arguments":{"phases":{"setup":{"secrets":{"SBX_T_OTHER":{"env":true}}}}}}'
	mcp_call 3 '{"name":"environment_create","arguments":{"policy":{"secrets":{"F":{"file":"/etc/hostname"}}}}}'
	mcp_call 4 '{"name":"environment_execute","arguments":{"environment_id":"mcpphase","command":"echo $SBX_T_TOKEN"}}'
	mcp_call 5 '{"name":"environment_phase","arguments":{"environment_id":"mcpphase","phase":"agent"}}'
	mcp_call 6 '{"name":"environment_execute","arguments":{"environment_id":"mcpphase","command":"echo ${SBX_T_TOKEN:-gone}"}}'
	mcp_call 7 '{"name":"environment_phase","arguments":{"environment_id":"mcpphase","phase":"setup"}}'
	mcp_call 8 '{"name":"environment.phase","arguments":{"environment_id":"mcpphase"}}'
	q() { node "$SBX_SRC/tests/mcp/jsonq.mjs" "$TMPDIR_TEST/mcp.out" "$1"; }
	assert_eq "$(q 'id(1).result.isError')" "false"
	assert_eq "$(q 'id(2).result.isError')" "true"
	assert_contains "$(q 'id(2).result.structuredContent.error.message')" "does not offer that secret"
	assert_eq "$(q 'id(3).result.isError')" "true"
	assert_contains "$(q 'id(3).result.structuredContent.error.message')" "host file cannot be named over MCP"
	assert_eq "$(q 'id(4).result.structuredContent.stdout')" "$SBX_T_TOKEN"
	assert_eq "$(q 'id(5).result.structuredContent.phase')" "agent"
	assert_eq "$(q 'id(5).result.structuredContent.secrets_removed.join()')" "SBX_T_TOKEN"
	assert_eq "$(q 'id(6).result.structuredContent.stdout')" "gone"
	assert_eq "$(q 'id(7).result.isError')" "true"
	assert_eq "$(q 'id(7).result.structuredContent.error.code')" "conflict"
	assert_eq "$(q 'id(8).result.structuredContent.phase')" "agent"
	sbx inspect mcpphase | python3 -c "
import json,sys
i=json.load(sys.stdin)
assert i['phase']=='agent' and i['network']=='none' and i['limits']['pids']==256, i"
	sbx rm mcpphase > /dev/null
}

t_rootless_secrets_phases_hidden() {
	is_root || skip_ok "runs as root to switch to the unprivileged test user"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	local d="$TMPDIR_TEST/rl"
	mkdir -p "$d"
	chmod 777 "$d"
	printf 'rlfile' > "$d/cred"
	chmod 644 "$d/cred"
	out=$(as_user env SBX_ROOT="$d/root" SBX_RUN="$d/run" SBX_T_TOKEN=rlvalue sh -c '
		set -e
		id=$("$SBX_BIN" create --secret SBX_T_TOKEN --secret "C='"$d"'/cred" --hide /etc/issue 2> "'"$d"'/create.err") ||
			{ echo "create failed: $(cat "'"$d"'/create.err")"; exit 1; }
		"$SBX_BIN" exec "$id" -- sh -c "echo \$SBX_T_TOKEN; cat /run/secrets/C; echo; test -e /etc/issue || echo hidden"
		"$SBX_BIN" phase "$id" agent > /dev/null
		"$SBX_BIN" exec "$id" -- sh -c "echo \${SBX_T_TOKEN:-gone}; ls -A /run/secrets | wc -l"
		"$SBX_BIN" rm "$id" > /dev/null' 2>&1) || fail "rootless: ${out:-(no output)}; create said: $(cat "$d/create.err" 2> /dev/null)"
	assert_eq "$out" "rlvalue
rlfile
hidden
gone
0"
}

# Without user namespaces (degraded mode, see test_degraded.sh): variables
# work; what needs a mount or pid namespace is refused, not faked.
t_degraded_secrets() {
	command -v unshare > /dev/null && command -v setpriv > /dev/null || skip "util-linux unshare/setpriv missing"
	is_root || skip_ok "runs as root to switch to the unprivileged test user"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	local D="$TMPDIR_TEST/dg"
	mkdir -p "$D/bin" "$D/w"
	cp "$SBX_BIN" "$D/bin/sbx"
	chmod -R a+rX "$D"
	chmod 1777 "$D/w"
	chmod 755 "$TMPDIR_TEST"
	echo x > "$D/f"
	chmod 644 "$D/f"
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env PATH=/usr/local/bin:/usr/bin:/bin \
		HOME=/tmp SBX_ROOT="$D/w/root" SBX_RUN="$D/w/run" S="$D/bin/sbx" F="$D/f" SBX_T_TOKEN=dgvalue \
		timeout 120 unshare -U -r sh -c 'echo 0 > /proc/sys/user/max_user_namespaces
			id=$($S create --secret SBX_T_TOKEN 2>/dev/null) || { echo "create failed"; exit 1; }
			$S inspect $id | grep -q degraded || echo "not degraded"
			$S exec $id -- sh -c "echo \$SBX_T_TOKEN"
			$S phase $id agent 2>&1
			$S rm $id > /dev/null
			$S create --secret "C=$F" 2>&1
			$S create --hide /etc/issue 2>&1
			$S create --agent-policy strict 2>&1
			true' 2>&1)
	assert_not_contains "$out" "not degraded"
	assert_contains "$out" "dgvalue"
	assert_contains "$out" "phases need a pid namespace"
	assert_contains "$out" "file secrets need user namespaces"
	assert_contains "$out" "hidden paths need user namespaces"
	assert_contains "$out" "phases need user namespaces"
}

# A hidden file's other names (hard links in the template) cannot be hidden
# by hiding one name: create says so.
t_hidden_file_with_hard_links_is_reported() {
	f=$(find /usr/bin /usr/sbin -maxdepth 1 -type f -links +1 2> /dev/null | head -n 1)
	[ -n "$f" ] || skip_ok "no hard-linked file in /usr/bin on this host"
	ID=$(sbx create --hide "$f" 2> "$TMPDIR_TEST/warn")
	assert_contains "$(cat "$TMPDIR_TEST/warn")" "other hard link(s)"
	assert_contains "$(sbx inspect "$ID")" "other hard link(s)"
	sbx exec "$ID" -- sh -c "test ! -e '$f'" || fail "$f is visible"
	sbx rm "$ID" > /dev/null
}
