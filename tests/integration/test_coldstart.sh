# The cold path (issue 12): what a create does to start, as far as it can be
# seen from outside. No timings: SBX_TRACE_STARTUP's lines are checked for
# presence and order, never for their numbers.

trace_lines() { grep '^sbx-startup:' <<< "$1" | sed 's/^sbx-startup: *[0-9.]* ms *\[[0-9]* [^]]*\] //'; }

t_coldstart_trace_startup_steps() {
	# On stderr: the create, the exec and the remove as the CLI sees them (the
	# supervisor and init give the creator's stderr back once ready).
	err=$(SBX_TRACE_STARTUP=1 sbx run -- /bin/true 2>&1 >/dev/null)
	steps=$(trace_lines "$err")
	for s in "create: begin" "supervisor: started" "supervisor: cloned" "child: root assembled" \
		"child: seccomp program built" "child: attached received" "child: seccomp" \
		"supervisor: child ready" "create: done" "exec: done" "remove: files removed"; do
		grep -qF "$s" <<< "$steps" || fail "no '$s' step in: $err"
	done
	assert_not_contains "$steps" "teardown:"
	# To a file: every process for its whole life, init's spawn and the teardown too.
	log=$(mktemp)
	SBX_TRACE_STARTUP=$log sbx run -- /bin/true 2> /dev/null
	all=$(trace_lines "$(cat "$log")")
	rm -f "$log"
	for s in "create: begin" "child: seccomp" "init: command exec'd" "exec: done" "teardown: init reaped" \
		"remove: files removed"; do
		grep -qF "$s" <<< "$all" || fail "no '$s' step in the file: $all"
	done
	# The seccomp program is built before the wait for the cgroup, loaded after it.
	b=$(grep -n "child: seccomp program built" <<< "$steps" | head -1 | cut -d: -f1)
	a=$(grep -n "child: attached received" <<< "$steps" | head -1 | cut -d: -f1)
	l=$(grep -nx "child: seccomp" <<< "$steps" | head -1 | cut -d: -f1)
	[ "$b" -lt "$a" ] && [ "$a" -lt "$l" ] || fail "seccomp built at line $b, attached at $a, loaded at $l: $steps"
	# Off by default: not a line without the variable.
	err=$(sbx run -- /bin/true 2>&1 >/dev/null)
	assert_not_contains "$err" "sbx-startup:"
}

# Born in its v2 group (CLONE_INTO_CGROUP), in v1 only where a limit lives.
t_coldstart_cgroups_of_init() {
	is_root || skip_ok "cgroups need root"
	[ -d /sys/fs/cgroup/unified ] || [ -e /sys/fs/cgroup/cgroup.controllers ] || skip_ok "no cgroup v2 mount"
	err=$(SBX_TRACE_STARTUP=1 sbx run -- /bin/true 2>&1 >/dev/null)
	assert_contains "$err" "born in its v2 group"
	id=$(sbx create)
	init=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["init_pid"])')
	cg=$(cat "/proc/$init/cgroup")
	assert_contains "$cg" "0::/sbx/$id"
	if [ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/unified ]; then
		# hybrid: the limits in v1, cpu usage and the freezer from v2
		grep -q "memory:/sbx/$id\$" <<< "$cg" || fail "init not in its v1 memory group: $cg"
		grep -q "pids:/sbx/$id\$" <<< "$cg" || fail "init not in its v1 pids group: $cg"
		if [ -d /sys/fs/cgroup/freezer ]; then
			grep -q "freezer:/sbx/$id" <<< "$cg" && fail "init joined the v1 freezer: $cg"
			[ -e "/sys/fs/cgroup/freezer/sbx/$id" ] && fail "a v1 freezer group was made"
		fi
		if [ -d /sys/fs/cgroup/cpuacct ] && ! [ /sys/fs/cgroup/cpuacct -ef /sys/fs/cgroup/cpu ]; then
			[ -e "/sys/fs/cgroup/cpuacct/sbx/$id" ] && fail "a v1 cpuacct group was made"
		fi
	fi
	# What those hierarchies were for still works: pause freezes, stats count cpu.
	sbx exec "$id" -- sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
	sbx pause "$id" > /dev/null
	state=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
	assert_eq "$state" "paused"
	sbx resume "$id" > /dev/null
	assert_eq "$(sbx exec "$id" -- echo alive)" "alive"
	sbx rm "$id"
	[ -e "/sys/fs/cgroup/unified/sbx/$id" ] && fail "v2 group left behind"
	[ -e "/sys/fs/cgroup/memory/sbx/$id" ] && fail "v1 memory group left behind"
	return 0
}

# Without a pool, a one-shot run does not initialize OpenSSL (the pool key's
# digest did, in every process: about half a millisecond of each cold run).
t_coldstart_run_without_pool_skips_openssl() {
	command -v strace > /dev/null || skip "strace is missing (scripts/deps.sh test installs it)"
	out=$(mktemp)
	strace -f -e trace=openat,open -o "$out" "$SBX_BIN" run -- /bin/true || fail "sbx run failed"
	opened=$(grep -B8 'openssl.cnf' "$out" || true)
	rm -f "$out"
	[ -z "$opened" ] || fail "sbx run without a pool initialized OpenSSL: $opened"
}
