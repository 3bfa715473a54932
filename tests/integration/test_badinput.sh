# Bad input: one line "sbx: ..." on stderr, exit 125, nothing left behind.

nothing_left() {
	local n
	n=$(ls "$SBX_ROOT/envs" 2>/dev/null | grep -cE '^[0-9a-f]{12}$' || true)
	[ "$n" = 0 ] || fail "an environment was left behind: $(ls "$SBX_ROOT/envs")"
}

one_line_error() {
	[ "$(echo "$ERR" | wc -l)" = 1 ] || fail "expected one line on stderr, got: $ERR"
	assert_contains "$ERR" "sbx: "
}

t_unknown_id() {
	expect_status 125 sbx exec nosuchenv -- true
	one_line_error
	assert_contains "$ERR" "no such environment"
	expect_status 125 sbx rm nosuchenv
	expect_status 125 sbx inspect nosuchenv
	expect_status 125 sbx ps nosuchenv
	# --json: the error object on stdout, and the error line on stderr as always.
	expect_status 125 sbx exec --json nosuchenv -- true
	assert_contains "$OUT" '"code": "not_found"'
	assert_contains "$ERR" "sbx: exec: no such environment"
}

t_bad_template() {
	expect_status 125 sbx create --template dir:/no/such/dir
	one_line_error
	expect_status 125 sbx create --template nonsense
	assert_contains "$ERR" "unknown template"
	expect_status 125 sbx run --template dir:/etc/passwd -- true
	assert_contains "$ERR" "not a directory"
	nothing_left
}

t_bad_volume() {
	expect_status 125 sbx create -v /no/such:/x
	one_line_error
	expect_status 125 sbx create -v relative:/x
	expect_status 125 sbx create -v /tmp:relative
	expect_status 125 sbx create -v /tmp:/x:rx
	expect_status 125 sbx create -v /tmp:/../etc
	nothing_left
}

t_bad_sizes_and_durations() {
	for a in "--memory lots" "--memory -5m" "--memory 1k" "--pids 0" "--pids x" "--cpus -1" "--cpus abc" "--ttl forever" "--timeout 5x"; do
		# shellcheck disable=SC2086
		expect_status 125 sbx create $a
		one_line_error
	done
	nothing_left
}

t_usage_errors() {
	expect_status 125 sbx
	expect_status 125 sbx frobnicate
	assert_contains "$ERR" "unknown command"
	expect_status 125 sbx create --bogus
	assert_contains "$ERR" "unknown option"
	expect_status 125 sbx run
	assert_contains "$ERR" "missing command"
	expect_status 125 sbx create --name "bad name!"
	assert_contains "$ERR" "invalid name"
	expect_status 125 sbx exec
	expect_status 0 sbx --help
	assert_contains "$OUT" "Usage"
	expect_status 0 sbx exec --help
	assert_contains "$OUT" "sbx exec"
	# A command's help lists the option blocks its usage names, no others
	# (pause --help listed --memory, which pause refuses).
	assert_contains "$OUT" "EXEC-OPTS:"
	[[ "$OUT" != *"CREATE-OPTS:"* ]] || fail "exec --help lists the create options"
	for c in pause resume pool gc rm snapshot restore; do
		expect_status 0 sbx "$c" --help
		[[ "$OUT" != *"--memory SIZE"* && "$OUT" != *"--cwd DIR"* ]] || fail "$c --help lists options it refuses"
		assert_contains "$OUT" "--json"
	done
	expect_status 0 sbx run --help
	assert_contains "$OUT" "CREATE-OPTS:"
	assert_contains "$OUT" "EXEC-OPTS:"
	nothing_left
}

# `sbx --help` is a page people read, as git's and docker's are: commands in
# groups, one short line each, no line wider than a terminal; the detail is in
# `sbx COMMAND --help` (also `sbx help COMMAND`) and the man page.
t_help_page_is_short_and_grouped() {
	expect_status 0 sbx --help
	local page=$OUT
	for g in "Environments:" "Commands:" "Files:" "Snapshots:" "Images and registries:" "Traces:" "Servers:" "Maintenance:"; do
		assert_contains "$page" "$g"
	done
	[[ "$page" != *"CREATE-OPTS:"* ]] || fail "sbx --help prints the create options"
	wide=$(printf '%s\n' "$page" | awk 'length > 80')
	[ -z "$wide" ] || fail "lines over 80 columns: $wide"
	# Every command once, each on a line of its own.
	for c in run create exec code ls inspect ps kill phase logs cp rm pause resume pool snapshot restore fork \
		snapshots diff export import push pull template build policy trace replay keygen attest verify gc fsck mcp serve; do
		n=$(printf '%s\n' "$page" | grep -cE "^  $c +[A-Z]")
		assert_eq "$n" "1" "command $c listed once"
		expect_status 0 sbx help "$c"
		a=$OUT
		expect_status 0 sbx "$c" --help
		assert_eq "$a" "$OUT" "sbx help $c is sbx $c --help"
	done
	expect_status 125 sbx help nosuchcommand
	assert_contains "$ERR" "unknown command"
}

t_bad_env() {
	expect_status 125 sbx create --env NOEQUALS
	id=$(sbx create)
	expect_status 125 sbx exec --env =x "$id" -- true
	expect_status 125 sbx exec --cwd relative "$id" -- true
	sbx rm "$id"
}

t_not_yet_available_is_clear() {
	id=$(sbx create)
	expect_status 125 sbx exec --trace -t "$id" -- true
	assert_contains "$ERR" "terminal"
	sbx rm "$id"
	expect_status 125 sbx create --snapshot sha256:abc
	assert_contains "$ERR" "no such snapshot"
	nothing_left
}

t_corrupt_state_is_an_error_not_a_crash() {
	id=$(sbx create)
	echo '{not json' > "$SBX_ROOT/envs/$id/state.json"
	set +e
	timeout 10 "$SBX_BIN" ls > /dev/null 2>&1
	rc=$?
	set -e
	[ $rc -lt 128 ] || fail "sbx ls crashed (rc $rc) on a corrupt state file"
	sbx rm "$id" || true
	sbx gc > /dev/null
}
