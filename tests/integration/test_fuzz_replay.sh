# Every fuzz target replays its committed corpus (seeds and past crash
# reproducers) under ASan+UBSan, without libFuzzer (tests/fuzz/run --replay).

t_fuzz_corpora_replay() {
	command -v gcc > /dev/null || skip "gcc missing"
	out=$(cd "$SBX_SRC" && timeout 300 tests/fuzz/run --replay 2>&1) || { echo "$out"; fail "a corpus input crashed a target"; }
	echo "$out"
	assert_contains "$out" "replayed"
}
