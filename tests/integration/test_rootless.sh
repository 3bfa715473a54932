# The lifecycle, exec and escape tests again, as an unprivileged user
# (setpriv), with the binaries copied where that user can read them.

rootless_setup() {
	is_root || skip_ok "already running unprivileged: the other files cover rootless mode"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	command -v setpriv > /dev/null || skip "setpriv (util-linux) is missing"
	RL="$TMPDIR_TEST/rl"
	mkdir -p "$RL/bin" "$RL/helpers" "$RL/tests"
	cp "$SBX_BIN" "$RL/bin/sbx"
	cp "$SBX_HELPERS"/* "$RL/helpers/"
	cp "$SBX_SRC"/tests/integration/*.sh "$SBX_SRC"/tests/integration/*.py "$RL/tests/"
	chmod -R a+rX "$RL"
	chmod 755 "$TMPDIR_TEST"
}

# Runs one integration file through the harness as sbxtest; all must pass.
run_as_user() {
	local file=$1 res="$RL/result-$1"
	touch "$res"
	chmod 666 "$res"
	setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env \
		env PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/sbxtest SBX_BIN="$RL/bin/sbx" \
		SBX_HELPERS="$RL/helpers" SBX_SRC="$RL" SBX_TEST_STRICT="${SBX_TEST_STRICT:-0}" \
		timeout 600 bash "$RL/tests/harness.sh" "$RL/tests/$file" "$res" > "$RL/log" 2>&1 || true
	cat "$RL/log"
	read -r p f s < "$res" || fail "the harness did not finish"
	[ "${p:-0}" -gt 0 ] || fail "no test passed as sbxtest"
	[ "$f" = 0 ] || fail "$f failed as an unprivileged user"
}

t_rootless_lifecycle() {
	rootless_setup
	run_as_user test_lifecycle.sh
}

t_rootless_exec() {
	rootless_setup
	run_as_user test_exec.sh
}

t_rootless_escape() {
	rootless_setup
	run_as_user test_escape.sh
}

t_rootless_reports_missing_walls() {
	rootless_setup
	mkdir -p "$RL/w"
	chmod 1777 "$RL/w"
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env HOME=/home/sbxtest \
		SBX_ROOT="$RL/w/store" SBX_RUN="$RL/w/run" sh -c "
		id=\$('$RL/bin/sbx' create 2>'$RL/w/warn'); '$RL/bin/sbx' inspect \$id; '$RL/bin/sbx' rm \$id >/dev/null; cat '$RL/w/warn'")
	assert_contains "$out" '"rootless": true'
	assert_contains "$out" "cgroup limits cannot be enforced"
	assert_contains "$out" "sbx: warning:"
}

# Pause (init's SIGSTOP, no cgroup freezer), idle suspend and resume (docs/warm.md).
t_rootless_pause() {
	rootless_setup
	run_as_user test_pause.sh
}

t_rootless_pool() {
	rootless_setup
	run_as_user test_pool.sh
}

t_rootless_mask() {
	rootless_setup
	run_as_user test_mask.sh
}

t_rootless_reclaim() {
	rootless_setup
	run_as_user test_reclaim.sh
}

t_rootless_snapshot() {
	rootless_setup
	run_as_user test_snapshot.sh
}

# Background processes (docs/processes.md): exec -d, ps, kill, the MCP tools;
# pause through init's SIGSTOP.
t_rootless_process() {
	rootless_setup
	run_as_user test_process.sh
}

# Rootless, traces are recorded by the ptrace engine (no eBPF): the same
# tests, and the manifest says which recorder ran and why.
t_rootless_trace() {
	rootless_setup
	run_as_user test_trace.sh
}

# issue 13.11: rootless, host root is unmapped and its directories appeared
# owned by nobody, so only those the mask happened to mirror (holding a
# private file, like /etc/default on some hosts) took new files: "cannot
# create /etc/default/sbxtouch" on a fresh Debian. Every directory under
# /etc, /var/lib and /opt must take a new file, and create says what stays
# read-only (files of host root cannot be changed in place).
t_rootless_host_dirs_take_new_files() {
	rootless_setup
	mkdir -p "$RL/w"
	chmod 1777 "$RL/w"
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env HOME=/home/sbxtest \
		SBX_ROOT="$RL/w/store" SBX_RUN="$RL/w/run" sh -c "
		id=\$('$RL/bin/sbx' create 2>'$RL/w/warn') || { cat '$RL/w/warn'; exit 1; }
		'$RL/bin/sbx' exec \$id -- sh -c 'n=0; for d in /etc/*/ /var/lib/*/ /opt/*/; do
			[ -d \"\$d\" ] || continue; n=\$((n + 1))
			( : > \"\$d.sbxprobe\" ) 2>/dev/null || echo \"cannot create in \$d\"; done
			rm -f /etc/hostname && echo hi > /etc/hostname && echo replaced-ok; echo dirs=\$n'
		'$RL/bin/sbx' rm \$id >/dev/null; cat '$RL/w/warn'" 2>&1)
	assert_not_contains "$out" "cannot create in"
	assert_contains "$out" "replaced-ok"
	assert_contains "$out" "files owned by host root appear owned by nobody"
	local n
	n=$(echo "$out" | sed -n 's/^dirs=//p')
	[ "${n:-0}" -gt 3 ] || fail "too few host directories were probed ($n): $out"
}
