# Every fuzz target replays its committed corpus (seeds and past crash
# reproducers) under ASan+UBSan, without libFuzzer (tests/fuzz/run --replay).

t_fuzz_corpora_replay() {
	command -v gcc > /dev/null || skip "gcc missing"
	out=$(cd "$SBX_SRC" && timeout 300 tests/fuzz/run --replay 2>&1) || { echo "$out"; fail "a corpus input crashed a target"; }
	echo "$out"
	assert_contains "$out" "replayed"
}

t_fuzz_targets_bounded_run() {
	command -v clang > /dev/null || skip "clang is not installed (scripts/deps.sh test installs it)"
	local rc=0
	out=$(cd "$SBX_SRC" && FUZZ_TIME=${SBX_FUZZ_TIME:-5} timeout 600 tests/fuzz/run 2>&1) || rc=$?
	if [ $rc = 124 ]; then
		# About 10 s a target; a target that runs on is stuck in one
		# input (a timeout or out-of-memory report on its way).
		echo "$out" | tail -n 40
		fail "the fuzz run took over 600 s (the last target above was still running)"
	elif [ $rc != 0 ]; then
		# Each failing target's report in full (from its "== run" line to
		# its FAIL line), not the tail of whichever target ran last.
		echo "$out" | awk '/^== run /{buf=""} {buf=buf $0 "\n"} /^FAIL: /{printf "%s", buf}' | tail -n 300
		echo "$out" | tail -n 5
		fail "a fuzz target found a crash"
	fi
	echo "$out" | grep -E "^== run|number_of_executed_units|DONE +cov"
	# Every target must have run, and executed inputs: a target that
	# builds but never runs (or stops at once) would pass vacuously.
	local targets ran
	targets=$(ls "$SBX_SRC"/tests/fuzz/fuzz_*.c | wc -l)
	ran=$(echo "$out" | grep -cE 'stat::number_of_executed_units: *[1-9][0-9]*' || true)
	assert_eq "$ran" "$targets" "fuzz targets that executed inputs"
}
