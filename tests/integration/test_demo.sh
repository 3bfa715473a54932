# The README's demo (examples/demo.sh, what scripts/demo.sh runs after
# installing and building): it runs end to end, under a minute, and shows
# what it claims.

t_demo_runs_and_shows_it() {
	local start=$SECONDS
	out=$(SBX="$SBX_BIN" SBX_ROOT="$TMPDIR_TEST/root" SBX_RUN="$TMPDIR_TEST/run" timeout 120 sh "$SBX_SRC/examples/demo.sh" 2>&1) ||
		fail "demo failed: $out"
	[ $((SECONDS - start)) -lt 60 ] || fail "the demo took $((SECONDS - start)) s"
	assert_contains "$out" "fib(12) = 144"
	assert_contains "$out" "Network is unreachable"
	assert_contains "$out" "python3: command not found"
	assert_contains "$out" "D /root/fib.py"
	assert_contains "$out" "fib(30) = 832040"
	assert_contains "$out" "fib(90) = 2880067194370816120"
	assert_contains "$out" "MATCH"
	assert_contains "$out" "DIVERGED: input"
	assert_contains "$out" "path /data/input.txt"
	[[ "$out" == *"create, write, run, kill"*" 42 "* ]] || fail "no SDK result: $out"
	assert_contains "$out" "done in"
}
