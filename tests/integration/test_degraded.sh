# Hosts that forbid unprivileged user namespaces (Ubuntu 24.04's AppArmor
# restriction): sbx falls back to Landlock + seccomp + no_new_privs and says
# which walls are missing. Reproduced for real: an unprivileged user inside a
# user namespace whose max_user_namespaces is 0, so the kernel refuses ours.

degraded_setup() {
	command -v unshare > /dev/null && command -v setpriv > /dev/null || skip "util-linux unshare/setpriv missing"
	is_root && ! id sbxtest > /dev/null 2>&1 && skip "user sbxtest is missing (scripts/test.sh creates it)"
	# Without user namespaces Landlock is the only filesystem wall; sbx
	# refuses to run without it, so a kernel without Landlock cannot do this.
	local id abi
	id=$(sbx create)
	abi=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["isolation"]["landlock_abi"])')
	sbx rm "$id" > /dev/null
	[ "$abi" -gt 0 ] || skip_ok "this kernel has no Landlock, which degraded mode requires"
	D="$TMPDIR_TEST/dg"
	mkdir -p "$D/bin" "$D/helpers" "$D/w"
	cp "$SBX_BIN" "$D/bin/sbx"
	cp "$SBX_HELPERS"/* "$D/helpers/"
	chmod -R a+rX "$D"
	chmod 1777 "$D/w"
	chmod 755 "$TMPDIR_TEST"
}

# dg 'shell commands' : runs them as an unprivileged user without user namespaces.
dg() {
	local pre=()
	is_root && pre=(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env)
	"${pre[@]}" env PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp SBX_ROOT="$D/w/root" SBX_RUN="$D/w/run" S="$D/bin/sbx" \
		P="$D/helpers/probe" timeout 120 unshare -U -r sh -c "echo 0 > /proc/sys/user/max_user_namespaces && $1"
}

t_degraded_runs_and_reports() {
	degraded_setup
	out=$(dg 'id=$($S create 2>"$SBX_ROOT.warn"); cat "$SBX_ROOT.warn"; $S rm $id')
	assert_contains "$out" "sbx: warning: user namespaces are not allowed"
	out=$(dg 'id=$($S create 2>/dev/null) && $S inspect $id && $S exec $id -- sh -c "pwd; echo hi > f; cat f" && $S rm $id')
	assert_contains "$out" '"mode": "degraded'
	assert_contains "$out" "/home"
	assert_contains "$out" "hi"
	assert_eq "$(dg '$S run -- echo one-shot' 2>/dev/null)" "one-shot"
}

t_degraded_walls_hold() {
	degraded_setup
	out=$(dg 'id=$($S create 2>/dev/null)
		$S exec $id -- sh -c "touch /etc/sbx-x 2>&1; ls /home /tmp 2>&1; cat \$HOME/../state.json 2>&1 | head -c 0"
		$S exec $id -- python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM)" 2>&1 | tail -n 1
		$S exec $id -- python3 -c "import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)" 2>&1 | tail -n 1
		$S exec $id -- sh -c "kill -0 $$ 2>&1 || echo cannot-signal-host"
		$S rm $id')
	assert_contains "$out" "cannot touch '/etc/sbx-x': Permission denied"
	assert_contains "$out" "cannot open directory '/home': Permission denied"
	assert_contains "$out" "cannot open directory '/tmp': Permission denied"
	assert_contains "$out" "PermissionError"
	assert_contains "$out" "cannot-signal-host"
	[ ! -e /etc/sbx-x ] || fail "wrote to the host's /etc"
}

t_degraded_teardown_kills_everything() {
	degraded_setup
	marker="sleep 4$RANDOM$RANDOM"
	dg "id=\$(\$S create 2>/dev/null) && \$S exec \$id -- sh -c 'setsid $marker > /dev/null 2>&1 & ($marker &) ; true' && \$S ps \$id && \$S rm \$id" > "$TMPDIR_TEST/ps.out"
	grep -q "${marker#sleep }" "$TMPDIR_TEST/ps.out" || fail "ps did not show the command: $(cat "$TMPDIR_TEST/ps.out")"
	sleep 0.3
	if pgrep -x -f "$marker" > /dev/null; then
		pkill -x -f "$marker"
		fail "a process outlived its degraded environment"
	fi
}

t_degraded_refuses_what_needs_namespaces() {
	degraded_setup
	out=$(dg '$S create --template dir:/usr 2>&1; $S create -v /tmp:/x 2>&1' || true)
	assert_contains "$out" "needs user namespaces"
	assert_contains "$out" "volumes need user namespaces"
}
