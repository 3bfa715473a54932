# The E2B data plane beyond envd's port, through `sbx serve`'s front door:
# the code interpreter on port 49999 driven by E2B's own
# @e2b/code-interpreter (tests/e2b/code.mjs), and the port proxy into a
# sandbox's loopback (tests/e2b/ports.mjs, with servers started inside the
# sandbox), with attacks on both.

E2B_DIR="$SBX_SRC/tests/e2b"

need_e2b_sdk() {
	command -v node > /dev/null || skip "node is not installed (needed to run E2B's SDK)"
	[ -f "$E2B_DIR/node_modules/@e2b/code-interpreter/package.json" ] && return 0
	command -v npm > /dev/null || skip "npm is not installed (needed to install E2B's SDK)"
	(cd "$E2B_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error > /dev/null 2>&1) ||
		skip "npm ci in tests/e2b failed (no access to the npm registry?)"
}

need_ipykernel() {
	/usr/bin/python3 -c 'import ipykernel, jupyter_client, matplotlib, pandas' 2> /dev/null ||
		skip "/usr/bin/python3 with ipykernel, jupyter_client, matplotlib and pandas is not installed (scripts/deps.sh test)"
}

# e2b_start [ARGS...]: as test_e2b.sh's: `sbx serve` with a token file of
# the SDK's form on a free 127.0.0.1 port; sets E2B_URL, E2B_KEY, E2B_PID.
e2b_start() {
	E2B_KEY="e2b_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	printf '%s\n' "$E2B_KEY" > "$TMPDIR_TEST/token"
	chmod 600 "$TMPDIR_TEST/token"
	: > "$TMPDIR_TEST/serve.err"
	timeout 600 "$SBX_BIN" serve --listen 127.0.0.1:0 --token-file "$TMPDIR_TEST/token" "$@" \
		2> "$TMPDIR_TEST/serve.err" &
	E2B_PID=$!
	trap e2b_stop EXIT
	E2B_URL=""
	for _ in $(seq 100); do
		E2B_URL=$(sed -n 's/^sbx: serving the E2B API on \(http[^ ]*\).*/\1/p' "$TMPDIR_TEST/serve.err")
		[ -n "$E2B_URL" ] && return 0
		kill -0 "$E2B_PID" 2> /dev/null || fail "sbx serve exited: $(cat "$TMPDIR_TEST/serve.err")"
		sleep 0.1
	done
	fail "sbx serve did not start: $(cat "$TMPDIR_TEST/serve.err")"
}
e2b_stop() {
	[ -n "${E2B_PID:-}" ] || return 0
	kill -TERM "$E2B_PID" 2> /dev/null || true
	wait "$E2B_PID" 2> /dev/null || true
	E2B_PID=""
}
e2b_node() {
	(cd "$E2B_DIR" && E2B_API_URL="$E2B_URL" E2B_SANDBOX_URL="$E2B_URL" E2B_API_KEY="$E2B_KEY" \
		SBX_BIN="$SBX_BIN" timeout 180 node "$@")
}
# The server is still up (no crash under the attacks).
e2b_alive() { kill -0 "$E2B_PID" 2> /dev/null || fail "sbx serve died: $(tail -5 "$TMPDIR_TEST/serve.err")"; }

code_case() {
	need_e2b_sdk
	need_ipykernel
	e2b_start
	e2b_node code.mjs "$1"
	e2b_alive
}

t_e2b_code_state_and_streaming() { code_case state; }
t_e2b_code_rich_results() { code_case rich; }
t_e2b_code_error() { code_case error; }
t_e2b_code_contexts() { code_case contexts; }
t_e2b_code_timeout() { code_case timeout; }
t_e2b_code_auth() { code_case auth; }
# A client that hangs up mid-cell interrupts it: needs the library's cancel
# (sbx_code_opts.cancel_fd, SBX_CODE_OPTS_VERSION 2).
t_e2b_code_hangup_interrupts() {
	grep -Eq '^#define SBX_CODE_OPTS_VERSION ([2-9]|[1-9][0-9])' "$SBX_SRC/include/sbx.h" ||
		skip "the library cannot cancel a code run yet (sbx_code_opts.cancel_fd)"
	code_case hangup
}

port_case() {
	need_e2b_sdk
	e2b_start
	e2b_node ports.mjs "$1"
	e2b_alive
}

t_e2b_proxy_http_keepalive_stream() { port_case http; }
t_e2b_proxy_upgrade_relayed() { port_case upgrade; }
t_e2b_proxy_refusals_ports_tokens() { port_case refusals; }
t_e2b_proxy_smuggling_and_big_heads() { port_case smuggling; }
t_e2b_proxy_slow_clients() { port_case slow; }
t_e2b_proxy_sandbox_killed_mid_stream() { port_case killed; }
