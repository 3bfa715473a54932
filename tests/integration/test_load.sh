# sbx under load, shortly (bench/load/run is the long version and writes the
# figures in docs/BENCHMARKS.md): concurrent MCP clients of the official
# TypeScript SDK over HTTP and stdio cycle create -> write -> execute ->
# snapshot -> write -> restore -> read -> destroy, with 0 errors and 0 data
# mismatches, beside a fork bomb, a memory bomb and an output flood that stay
# contained; afterwards `sbx serve` is alive, fsck passes, nothing is left.
#
# SBX_LOAD_SECONDS (default 6) sets the length of each run.

need_load() {
	command -v node > /dev/null || skip "node is not installed (needed for the MCP SDK clients)"
	command -v python3 > /dev/null || skip "python3 is not installed"
	is_root || skip_ok "the load run creates host-template environments as root"
	[ -f "$SBX_SRC/tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json" ] && return 0
	command -v npm > /dev/null || skip "npm is not installed (needed to install @modelcontextprotocol/sdk)"
	(cd "$SBX_SRC/tests/mcp" && timeout 300 npm ci --no-audit --no-fund --loglevel=error > /dev/null 2>&1) ||
		skip "npm ci in tests/mcp failed (no access to the npm registry?)"
}

# load ARGS...: bench/load/run in a store under this test's directory; its
# summary JSON in $LOAD, its report (the tables, the problems) on stdout.
load() {
	local rc=0
	LOAD=$(BENCH_DOC=- BENCH_LOAD_WORK="$TMPDIR_TEST/load" SBX="$SBX_BIN" \
		timeout 600 bash "$SBX_SRC/bench/load/run" "$@" 2> "$TMPDIR_TEST/load.err") || rc=$?
	grep -v '^== ' "$TMPDIR_TEST/load.err" || true
	[ -n "$LOAD" ] || fail "bench/load/run printed no summary (exit $rc): $(tail -n 5 "$TMPDIR_TEST/load.err")"
	[ "$rc" = 0 ] || fail "bench/load/run found problems (exit $rc)"
}
# lq EXPR: a Python expression over the summary `d`.
lq() { python3 -c "import json,sys; d = json.loads(sys.argv[1]); print($1)" "$LOAD"; }

# The mixed run: 4 clients over each transport, then 16 over HTTP, with the
# three neighbours running throughout.
t_load_noisy_neighbours_http_and_stdio() {
	need_load
	load --clients 4 --transports http,stdio --seconds "${SBX_LOAD_SECONDS:-6}"
	load_checks 2
	rm -rf "$TMPDIR_TEST/load"
	load --clients 16 --transports http --seconds "${SBX_LOAD_SECONDS:-6}"
	load_checks 1
}

load_checks() {
	assert_eq "$(lq 'len(d["runs"])')" "$1" "runs"
	assert_eq "$(lq 'sum(r["errors_total"] for r in d["runs"])')" "0" "errors"
	assert_eq "$(lq 'sum(r["mismatches_total"] for r in d["runs"])')" "0" "data mismatches"
	# Every run completed cycles, and each cycle made every call once.
	assert_eq "$(lq 'all(r["cycles"] > 0 and r["latency"]["environment_restore"]["n"] == r["cycles"] for r in d["runs"])')" "True" "cycles completed"
	assert_eq "$(lq 'd["serve_alive"]')" "True" "sbx serve survived"
	# The bombs went off and hit their walls.
	assert_eq "$(lq 'd["neighbours"]["forkbomb"]["pids_peak"] <= 64 and d["neighbours"]["forkbomb"]["pids_max_hits"] > 0')" "True" "fork bomb contained"
	assert_eq "$(lq 'd["neighbours"]["membomb"]["oom_kills"] > 0')" "True" "memory bomb contained"
	assert_eq "$(lq 'all(not v for v in d["leaks"].values())')" "True" "nothing left behind"
}

# Many creates at once on a store that has never made one (no host mask
# cached yet): every one must succeed. Three new stores, since a race shows
# in most runs, not all.
t_load_cold_store_concurrent_creates() {
	need_load
	local i
	for i in 1 2 3; do
		rm -rf "$TMPDIR_TEST/load"
		load --clients 16 --transports http --seconds 3 --no-noise
		assert_eq "$(lq 'd["runs"][0]["errors_total"]')" "0" "errors (new store $i)"
		assert_eq "$(lq 'd["runs"][0]["latency"]["environment_create"]["n"] >= 16')" "True" "creates"
	done
}
