# The layering of src/api (docs/layout.md): scripts/check-layers.py reads the
# built objects' symbols and fails on a cycle between files or a call up the
# declared layers. Here on the real build, and on two made-up files that
# call each other, so that the checker is shown to catch what it guards.

t_src_api_has_no_cycle_and_no_call_up() {
	command -v nm > /dev/null || skip "nm is not installed (binutils: scripts/deps.sh build)"
	local build="$SBX_SRC/${SBX_BUILD:-build}"
	[ -n "$(ls "$build"/src/api/*.o 2> /dev/null)" ] || fail "no objects in $build/src/api: run make first"
	out=$(cd "$SBX_SRC" && scripts/check-layers.py --build "$build" 2>&1) ||
		fail "check-layers failed (make check-layers):
$out"
	assert_contains "$out" "no cycle, in layer order"
	# Every file of src/api was looked at, none left out of the layers.
	local srcs=("$SBX_SRC"/src/api/*.c)
	assert_contains "$out" "check-layers: ${#srcs[@]} files of src/api"
}

t_check_layers_finds_a_cycle_and_a_call_up() {
	command -v nm > /dev/null || skip "nm is not installed (binutils: scripts/deps.sh build)"
	local d="$TMPDIR_TEST/fake"
	mkdir -p "$d/src/api" "$d/build/src/api"
	# ctx (the bottom layer) calls env (the top), and env calls ctx back.
	printf 'int env_top(void);\nint ctx_low(void) { return env_top(); }\n' > "$d/src/api/ctx.c"
	printf 'int ctx_low(void);\nint env_top(void) { return ctx_low() + 1; }\n' > "$d/src/api/env.c"
	for f in ctx env; do
		cc -c -o "$d/build/src/api/$f.o" "$d/src/api/$f.c" || fail "cc $f.c"
	done
	expect_status 1 "$SBX_SRC/scripts/check-layers.py" --build "$d/build" --src "$d/src/api"
	out=$("$SBX_SRC/scripts/check-layers.py" --build "$d/build" --src "$d/src/api" 2>&1 || true)
	assert_contains "$out" "cycle among 2 files of src/api: ctx env"
	assert_contains "$out" "ctx -> env: env_top"
	assert_contains "$out" "call up: ctx (layer 0) -> env (layer 4): env_top"
	# Without the call back there is no cycle, and the call up still fails.
	printf 'int env_top(void) { return 1; }\n' > "$d/src/api/env.c"
	cc -c -o "$d/build/src/api/env.o" "$d/src/api/env.c" || fail "cc env.c"
	out=$("$SBX_SRC/scripts/check-layers.py" --build "$d/build" --src "$d/src/api" 2>&1 || true)
	assert_not_contains "$out" "cycle among"
	assert_contains "$out" "call up: ctx (layer 0) -> env (layer 4)"
}
