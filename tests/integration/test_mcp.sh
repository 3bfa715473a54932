# The MCP server (`sbx mcp`): the official TypeScript SDK as a client over
# stdio (tests/mcp/sdk_test.mjs), and raw JSON-RPC lines piped through the
# binary, parsed with node (tests/mcp/jsonq.mjs; jq is not assumed).

MCP_DIR="$SBX_SRC/tests/mcp"
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'

need_node() { command -v node > /dev/null || skip "node is not installed (needed to drive and parse MCP)"; }

# The SDK lives in tests/mcp/node_modules, installed from package-lock.json.
need_sdk() {
	need_node
	[ -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] && return 0
	command -v npm > /dev/null || skip "npm is not installed (needed to install @modelcontextprotocol/sdk)"
	(cd "$MCP_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error > /dev/null 2>&1) ||
		skip "npm ci in tests/mcp failed (no access to the npm registry?)"
}

sdk() {
	need_sdk
	SBX_BIN="$SBX_BIN" timeout 120 node "$MCP_DIR/sdk_test.mjs" "$1"
}

# mcp_pipe < lines: runs one server over the lines, output in $TMPDIR_TEST/mcp.out.
mcp_pipe() {
	need_node
	sbx mcp > "$TMPDIR_TEST/mcp.out" 2> "$TMPDIR_TEST/mcp.err" || fail "sbx mcp exited $?: $(cat "$TMPDIR_TEST/mcp.err")"
}
q() { node "$MCP_DIR/jsonq.mjs" "$TMPDIR_TEST/mcp.out" "$1"; }

t_mcp_sdk_tools_list() { sdk tools_list; }
t_mcp_sdk_lifecycle_and_files() { sdk lifecycle; }
t_mcp_sdk_errors() { sdk errors; }
t_mcp_sdk_snapshots() { sdk snapshots; }
t_mcp_sdk_cancel() { sdk cancel; }
t_mcp_sdk_progress() { sdk progress; }
t_mcp_sdk_concurrency() { sdk concurrency; }
t_mcp_sdk_diff() { sdk diff; }
t_mcp_sdk_code() {
	/usr/bin/python3 -c 'import ipykernel, jupyter_client, matplotlib' 2> /dev/null ||
		skip "/usr/bin/python3 lacks ipykernel, jupyter_client or matplotlib (scripts/deps.sh test installs them)"
	sdk code
}
t_mcp_sdk_processes() { sdk processes; }
t_mcp_sdk_trace_replay() { sdk trace_replay; }
t_mcp_sdk_resources() { sdk resources; }
t_mcp_sdk_huge_numbers() { sdk huge_numbers; }
t_mcp_sdk_every_tool() { sdk every_tool; }

t_mcp_raw_malformed_json_keeps_serving() {
	printf '%s\n' 'this is not json' "$INIT" '{"jsonrpc":"2.0","id":1,' '5' '[]' \
		'{"jsonrpc":"1.0","id":2,"method":"ping"}' '{"jsonrpc":"2.0","id":3,"method":7}' \
		'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}' '{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}' \
		'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}' '{"jsonrpc":"2.0","id":5,"method":"ping"}' '{"jsonrpc":"2.0","id":6,"method":"no/such"}' \
		'{"jsonrpc":"2.0","id":7,"result":{}}' | mcp_pipe
	assert_eq "$(q 'msgs.filter(m => m.id === null).map(m => m.error.code).join(",")')" "-32700,-32700,-32600,-32600,-32600"
	assert_eq "$(q 'id(0).result.protocolVersion')" "2025-11-25"
	assert_eq "$(q 'id(2).error.code')" "-32600"
	assert_eq "$(q 'id(3).error.code')" "-32600"
	assert_eq "$(q 'id(4).error.code')" "-32600"
	assert_eq "$(q 'id(8).error.code')" "-32602"
	assert_eq "$(q 'JSON.stringify(id(5).result)')" "{}"
	assert_eq "$(q 'id(6).error.code')" "-32601"
	# A response from the client is never answered.
	assert_eq "$(q 'msgs.length')" "12"
}

# A message jansson refuses for its content (invalid UTF-8 in a string, an
# integer past int64) still gets its id back, so the client's request ends.
t_mcp_raw_bad_content_keeps_the_id() {
	{
		echo "$INIT"
		printf '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}\n'
		echo '{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"environment_list","arguments":{"a":99999999999999999999}}}'
		echo '{"jsonrpc":"2.0","id":3,"method":"ping"'
		echo '{"jsonrpc":"2.0","id":4,"method":"ping"}'
	} | mcp_pipe
	assert_eq "$(q 'id(1).error.code')" "-32700"
	assert_eq "$(q 'id("two").error.code')" "-32602"
	assert_contains "$(q 'id("two").error.message')" "too big integer"
	assert_eq "$(q 'msgs.filter(m => m.id === null).map(m => m.error.code).join(",")')" "-32700"
	assert_eq "$(q 'JSON.stringify(id(4).result)')" "{}"
}

t_mcp_raw_before_initialize() {
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
		'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"environment_list","arguments":{}}}' \
		'{"jsonrpc":"2.0","id":3,"method":"ping"}' "$INIT" "$INITED" '{"jsonrpc":"2.0","id":4,"method":"tools/list"}' | mcp_pipe
	assert_eq "$(q 'id(1).error.code')" "-32002"
	assert_contains "$(q 'id(1).error.message')" "initialize"
	assert_eq "$(q 'id(2).error.code')" "-32002"
	assert_eq "$(q 'JSON.stringify(id(3).result)')" "{}"
	assert_eq "$(q 'id(4).result.tools.length')" "40"
}

t_mcp_raw_version_negotiation() {
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}' \
		'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}' | mcp_pipe
	assert_eq "$(q 'id(1).result.protocolVersion')" "2025-03-26"
	assert_eq "$(q 'id(2).result.protocolVersion')" "2025-11-25"
	assert_eq "$(q 'id(2).result.serverInfo.name')" "sbx"
	assert_eq "$(q 'id(2).result.capabilities.tools.listChanged')" "false"
	assert_eq "$(q 'id(3).error.code')" "-32602"
}

t_mcp_raw_dotted_methods() {
	local id
	id=$(sbx create)
	printf '%s\n' "$INIT" "$INITED" '{"jsonrpc":"2.0","id":1,"method":"environment.list"}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"environment.execute\",\"params\":{\"environment_id\":\"$id\",\"command\":\"echo dotted; exit 4\"}}" \
		'{"jsonrpc":"2.0","id":3,"method":"environment.execute","params":{"environment_id":"nope","command":"true"}}' \
		'{"jsonrpc":"2.0","id":4,"method":"environment.execute","params":{"environment_id":"nope","timeout_ms":"x","command":"true"}}' \
		'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"environment.list","arguments":{}}}' | mcp_pipe
	assert_contains "$(q 'id(1).result.environments.map(e => e.environment_id).join(" ")')" "$id"
	assert_eq "$(q 'id(2).result.stdout')" "dotted"
	assert_eq "$(q 'id(2).result.exit_code')" "4"
	assert_eq "$(q 'id(3).error.data.code')" "not_found"
	assert_contains "$(q 'id(3).error.message')" "environment_create"
	assert_eq "$(q 'id(4).error.code')" "-32602"
	assert_eq "$(q 'id(5).result.isError')" "false"
	printf '%s\n' "$INIT" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"environment.destroy\",\"params\":{\"environment_id\":\"$id\"}}" | mcp_pipe
	assert_eq "$(q 'id(1).result.destroyed')" "true"
	expect_status 125 sbx inspect "$id"
}

t_mcp_raw_stateless_2026() {
	printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$META}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{$META}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{$META,\"name\":\"environment_list\",\"arguments\":{}}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"environment.list\",\"params\":{$META}}" \
		'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}' | mcp_pipe
	assert_contains "$(q 'id(1).result.supportedVersions.join(" ")')" "2026-07-28"
	assert_eq "$(q 'id(1).result.serverInfo.name')" "sbx"
	assert_eq "$(q 'id(1).result.capabilities.tools.listChanged')" "false"
	assert_eq "$(q 'id(2).result.tools.length')" "40"
	assert_eq "$(q 'id(3).result.isError')" "false"
	assert_eq "$(q 'Array.isArray(id(4).result.environments)')" "true"
	# Without the _meta (and without initialize) it is still refused.
	assert_eq "$(q 'id(5).error.code')" "-32002"
}

t_mcp_raw_oversized_line() {
	need_node
	{
		echo "$INIT"
		node -e 'process.stdout.write(JSON.stringify({jsonrpc:"2.0",id:1,method:"ping",params:{pad:"x".repeat(5<<20)}})+"\n")'
		echo '{"jsonrpc":"2.0","id":2,"method":"ping"}'
	} | mcp_pipe
	# Refused with its own id, read from the line's start (with "id": null
	# the client's call waited for its timeout).
	assert_eq "$(q 'id(1).error.code')" "-32600"
	assert_contains "$(q 'id(1).error.message')" "too large"
	assert_eq "$(q 'msgs.filter(m => m.id === null).length')" "0"
	assert_eq "$(q 'JSON.stringify(id(2).result)')" "{}"
}

t_mcp_raw_eof_waits_for_calls() {
	local id
	id=$(sbx create)
	printf '%s\n' "$INIT" \
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"sleep 1; echo late\"}}}" | mcp_pipe
	assert_eq "$(q 'id(1).result.structuredContent.stdout')" "late"
	sbx rm "$id"
}

t_mcp_raw_sigterm_cancels_and_exits() {
	need_node
	local id fifo pid t0 rc
	id=$(sbx create)
	fifo="$TMPDIR_TEST/in"
	mkfifo "$fifo"
	"$SBX_BIN" mcp < "$fifo" > "$TMPDIR_TEST/mcp.out" 2> "$TMPDIR_TEST/mcp.err" &
	pid=$!
	exec 7> "$fifo"
	printf '%s\n' "$INIT" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"sleep 30\"}}}" >&7
	sleep 1
	t0=$(date +%s)
	kill -TERM "$pid"
	set +e
	timeout 10 tail --pid="$pid" -f /dev/null
	wait "$pid"
	rc=$?
	set -e
	exec 7>&-
	assert_eq "$rc" "0" "exit status after SIGTERM"
	[ $(($(date +%s) - t0)) -lt 8 ] || fail "sbx mcp took too long to stop"
	assert_eq "$(q 'id(0).result.serverInfo.name')" "sbx"
	out=$(sbx exec "$id" -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "')
	assert_not_contains "$out" "sleep 30"
	sbx rm "$id"
}

# A client that dies mid-call (its end of stdout closed: EPIPE on the reply)
# never learns the id of the environment its create made, so nothing may stay
# running: the create is undone, as a cancelled one is. The server also stops
# reading once nobody can get its answers (here stdin stays open for 8 s).
t_mcp_raw_client_gone_mid_create_leaves_nothing() {
	local t0
	t0=$(date +%s)
	{
		printf '%s\n' "$INIT" "$INITED" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"environment_create","arguments":{}}}'
		sleep 8
	} | {
		"$SBX_BIN" mcp 2> "$TMPDIR_TEST/mcp.err" || true
		date +%s > "$TMPDIR_TEST/end"
	} | head -c 10 > /dev/null
	[ $(($(cat "$TMPDIR_TEST/end") - t0)) -lt 6 ] || fail "sbx mcp went on reading after its client had gone"
	assert_eq "$(sbx ls --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).environments.length))')" "0" \
		"environments left by a create whose client had gone: $(sbx ls)"
}

# A client killed mid-call (stdin at EOF, nobody reading stdout) while a
# command without a timeout runs: the server cancels the call (the command
# ends) and exits, instead of waiting for a reply nobody can read. SIGTERM
# after EOF cancels too.
t_mcp_raw_client_killed_mid_execute_cancels() {
	local id pid catpid t0
	id=$(sbx create)
	mkfifo "$TMPDIR_TEST/kin" "$TMPDIR_TEST/kout"
	"$SBX_BIN" mcp < "$TMPDIR_TEST/kin" > "$TMPDIR_TEST/kout" 2> "$TMPDIR_TEST/mcp.err" &
	pid=$!
	exec 7> "$TMPDIR_TEST/kin"
	cat "$TMPDIR_TEST/kout" > /dev/null &
	catpid=$!
	printf '%s\n' "$INIT" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"sleep 60\"}}}" >&7
	sleep 1
	t0=$(date +%s)
	kill "$catpid"
	exec 7>&-
	timeout 15 tail --pid="$pid" -f /dev/null || true
	if kill -0 "$pid" 2> /dev/null; then
		kill -KILL "$pid"
		fail "sbx mcp still waits for a call whose client was killed"
	fi
	[ $(($(date +%s) - t0)) -lt 8 ] || fail "sbx mcp took too long to notice its client had gone"
	out=$(sbx exec "$id" -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "')
	assert_not_contains "$out" "sleep 60"
	# EOF with the reader still there: SIGTERM cancels the call.
	rm -f "$TMPDIR_TEST/kin"
	mkfifo "$TMPDIR_TEST/kin"
	"$SBX_BIN" mcp < "$TMPDIR_TEST/kin" > "$TMPDIR_TEST/mcp.out" 2> "$TMPDIR_TEST/mcp.err" &
	pid=$!
	printf '%s\n' "$INIT" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"sleep 60\"}}}" > "$TMPDIR_TEST/kin"
	sleep 1
	kill -TERM "$pid"
	timeout 15 tail --pid="$pid" -f /dev/null || true
	if kill -0 "$pid" 2> /dev/null; then
		kill -KILL "$pid"
		fail "SIGTERM after EOF did not stop sbx mcp"
	fi
	sbx rm "$id"
}

# ---- MCP over Streamable HTTP (`sbx serve`) -------------------------------------
# http_start [ARGS...]: starts `sbx serve` on a free 127.0.0.1 port (port 0:
# the kernel picks it; the server prints its URL), sets HTTP_URL and
# HTTP_PID, and stops it when the test's subshell exits.
http_start() {
	timeout 300 "$SBX_BIN" serve --listen 127.0.0.1:0 "$@" 2> "$TMPDIR_TEST/serve.err" &
	HTTP_PID=$!
	trap http_stop EXIT
	HTTP_URL=""
	for _ in $(seq 100); do
		HTTP_URL=$(sed -n 's/^sbx: serving MCP on \(http[^ ]*\).*/\1/p' "$TMPDIR_TEST/serve.err")
		[ -n "$HTTP_URL" ] && return 0
		kill -0 "$HTTP_PID" 2> /dev/null || fail "sbx serve exited: $(cat "$TMPDIR_TEST/serve.err")"
		sleep 0.1
	done
	fail "sbx serve did not start: $(cat "$TMPDIR_TEST/serve.err")"
}
http_stop() {
	[ -n "${HTTP_PID:-}" ] || return 0
	kill -TERM "$HTTP_PID" 2> /dev/null || true
	wait "$HTTP_PID" 2> /dev/null || true
	HTTP_PID=""
}
# http CASE [TOKEN]: one case of tests/mcp/http_test.mjs against the server.
http() {
	need_sdk
	timeout 120 node "$MCP_DIR/http_test.mjs" "$1" "$HTTP_URL" ${2:+"$2"}
}
# The server survived whatever the test did, and stops cleanly on SIGTERM.
http_check_alive_and_stop() {
	http alive "${1:-}"
	kill -0 "$HTTP_PID" || fail "sbx serve died: $(cat "$TMPDIR_TEST/serve.err")"
	local pid=$HTTP_PID rc
	kill -TERM "$pid"
	set +e
	wait "$pid"
	rc=$?
	set -e
	HTTP_PID=""
	assert_eq "$rc" "0" "sbx serve exit status after SIGTERM"
}

t_http_sdk_session_lifecycle() {
	need_sdk
	http_start
	http sdk
	http_check_alive_and_stop
}

t_http_sdk_progress_sse() {
	need_sdk
	http_start
	http progress
	http_check_alive_and_stop
}

t_http_concurrency() {
	need_sdk
	http_start
	http concurrency
	http_check_alive_and_stop
}

t_http_cancel_and_disconnect() {
	need_sdk
	http_start
	http cancel
	http_check_alive_and_stop
}

t_http_raw_status_codes() {
	need_sdk
	http_start
	http raw
	http_check_alive_and_stop
}

t_http_stateless_2026() {
	need_sdk
	http_start
	http stateless
	http_check_alive_and_stop
}

t_http_bearer_token() {
	need_sdk
	local tf="$TMPDIR_TEST/token"
	head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tf"
	chmod 644 "$tf"
	expect_status 125 timeout 10 "$SBX_BIN" serve --listen 127.0.0.1:0 --token-file "$tf"
	assert_contains "$ERR" "chmod 600"
	expect_status 125 timeout 10 "$SBX_BIN" serve --listen 127.0.0.1:0 --token-file "$TMPDIR_TEST/missing"
	assert_contains "$ERR" "token file"
	chmod 600 "$tf"
	http_start --token-file "$tf"
	http auth "$(cat "$tf")"
	http_check_alive_and_stop "$(cat "$tf")"
}

t_http_bad_listen() {
	expect_status 125 timeout 10 "$SBX_BIN" serve --listen nonsense
	assert_contains "$ERR" "ADDR:PORT"
	expect_status 125 timeout 10 "$SBX_BIN" serve
	assert_contains "$ERR" "--listen"
}

t_http_sigterm_cancels_calls() {
	need_sdk
	local id t0
	id=$(sbx create)
	http_start
	curl -s -o /dev/null -m 60 -H 'Content-Type: application/json' -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"environment.execute\",\"params\":{\"environment_id\":\"$id\",\"command\":\"sleep 33\"}}" "$HTTP_URL" &
	eventually 20 ps_shows "$id" "sleep 33" || fail "the call never started its command"
	t0=$(date +%s)
	http_stop
	[ $(($(date +%s) - t0)) -lt 8 ] || fail "sbx serve took too long to stop"
	out=$(sbx exec "$id" -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "')
	assert_not_contains "$out" "sleep 33"
	wait || true
	sbx rm "$id"
}

t_mcp_example_agent_loop() {
	need_sdk
	local out
	# ESM ignores NODE_PATH: run a copy next to the tests' node_modules.
	cp "$SBX_SRC/examples/agent_loop.mjs" "$TMPDIR_TEST/"
	ln -s "$MCP_DIR/node_modules" "$TMPDIR_TEST/node_modules"
	out=$(SBX_BIN="$SBX_BIN" timeout 120 node "$TMPDIR_TEST/agent_loop.mjs")
	assert_contains "$out" "hello from the sandbox"
	assert_contains "$out" "destroyed"
}
