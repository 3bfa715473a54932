# Helpers of the E2B API's suites (test_e2b.sh, test_e2b_proxy.sh), sourced
# by them (not a suite itself: tests/run runs test_*.sh only). Each test
# runs in its own subshell (harness.sh) with TMPDIR_TEST, SBX_BIN and
# SBX_SRC set.

E2B_DIR="$SBX_SRC/tests/e2b"

# need_e2b_sdk [PACKAGE]: E2B's SDK PACKAGE (default e2b; the code
# interpreter's is @e2b/code-interpreter) in tests/e2b/node_modules,
# installed from tests/e2b's lock file when it is not there yet.
need_e2b_sdk() {
	command -v node > /dev/null || skip "node is not installed (needed to run E2B's SDK)"
	[ -f "$E2B_DIR/node_modules/${1:-e2b}/package.json" ] && return 0
	command -v npm > /dev/null || skip "npm is not installed (needed to install E2B's SDK)"
	(cd "$E2B_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error > /dev/null 2>&1) ||
		skip "npm ci in tests/e2b failed (no access to the npm registry?)"
}

# e2b_start [ARGS...]: a token file of the form e2b_<32 hex> (the SDK's key
# check), and `sbx serve` with it on a free 127.0.0.1 port; sets E2B_URL,
# E2B_KEY and E2B_PID, and stops the server when the test's subshell exits.
# E2B_LISTEN and E2B_NO_TOKEN=1 change the address and drop the token file;
# E2B_SERVE_TIMEOUT (seconds, default 300) bounds the server's life.
e2b_start() {
	E2B_KEY="e2b_$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
	printf '%s\n' "$E2B_KEY" > "$TMPDIR_TEST/token"
	chmod 600 "$TMPDIR_TEST/token"
	: > "$TMPDIR_TEST/serve.err"
	local tf=(--token-file "$TMPDIR_TEST/token")
	[ "${E2B_NO_TOKEN:-0}" = 1 ] && tf=()
	timeout "${E2B_SERVE_TIMEOUT:-300}" "$SBX_BIN" serve --listen "${E2B_LISTEN:-127.0.0.1:0}" "${tf[@]}" "$@" \
		2> "$TMPDIR_TEST/serve.err" &
	E2B_PID=$!
	trap e2b_stop EXIT
	E2B_URL=""
	for _ in $(seq 100); do
		E2B_URL=$(sed -n 's/^sbx: serving the E2B API on \(http[^ ]*\).*/\1/p' "$TMPDIR_TEST/serve.err" |
			sed 's|//0\.0\.0\.0:|//127.0.0.1:|')
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

# e2b_node ARGS...: node in tests/e2b (where the SDKs resolve), pointed at
# the server; E2B_NODE_TIMEOUT (seconds, default 120) bounds it.
e2b_node() {
	(cd "$E2B_DIR" && E2B_API_URL="$E2B_URL" E2B_SANDBOX_URL="$E2B_URL" E2B_API_KEY="$E2B_KEY" \
		SBX_BIN="$SBX_BIN" timeout "${E2B_NODE_TIMEOUT:-120}" node "$@")
}
# e2b_alive: the server is still up (no crash under the attacks).
e2b_alive() { kill -0 "$E2B_PID" 2> /dev/null || fail "sbx serve died: $(tail -5 "$TMPDIR_TEST/serve.err")"; }
