# Exec semantics: stdio, exit codes, signals, env, cwd, timeouts, pty.

setup_env() { ID=$(sbx create "$@"); }

t_exit_codes_and_signals() {
	setup_env
	expect_status 7 sbx exec "$ID" -- sh -c 'exit 7'
	expect_status 137 sbx exec "$ID" -- sh -c 'kill -9 $$'
	expect_status 143 sbx exec "$ID" -- sh -c 'kill -TERM $$'
	sbx rm "$ID"
}

t_not_found_and_not_executable() {
	setup_env
	expect_status 127 sbx exec "$ID" -- /no/such/thing
	assert_contains "$ERR" "sbx: "
	assert_contains "$ERR" "not found"
	sbx exec "$ID" -- sh -c 'echo "#!/bin/sh" > /root/noexec; chmod 644 /root/noexec'
	expect_status 126 sbx exec "$ID" -- /root/noexec
	assert_contains "$ERR" "permission denied"
	# 127/126 come from the spawn errno the library reports, not from the
	# error's code and errno alone: a working directory the user may not
	# enter (EACCES at chdir, before the exec) is sbx's own error, 125.
	# (Root only: rootless, commands run as root alone.)
	if is_root; then
		sbx exec "$ID" -- sh -c 'mkdir -p /srv/closed && chmod 700 /srv/closed'
		expect_status 125 sbx exec --user 65534 --cwd /srv/closed "$ID" -- true
		assert_contains "$ERR" "working directory"
	fi
	sbx rm "$ID"
}

t_stdin_is_streamed() {
	setup_env
	out=$(printf 'line1\nline2\n' | sbx exec -i "$ID" -- wc -l)
	assert_eq "$out" "2"
	# Without -i the command gets /dev/null.
	out=$(echo ignored | sbx exec "$ID" -- cat)
	assert_eq "$out" ""
	# Large stdin and stdout round trip.
	head -c 3000000 /dev/urandom > "$TMPDIR_TEST/big"
	sum=$(sbx exec -i "$ID" -- sha256sum < "$TMPDIR_TEST/big" | cut -d' ' -f1)
	assert_eq "$sum" "$(sha256sum < "$TMPDIR_TEST/big" | cut -d' ' -f1)"
	n=$(sbx exec "$ID" -- head -c 5000000 /dev/zero | wc -c)
	assert_eq "$n" "5000000"
	sbx rm "$ID"
}

t_stdout_stderr_separate() {
	setup_env
	sbx exec "$ID" -- sh -c 'echo out; echo err >&2' > "$TMPDIR_TEST/o" 2> "$TMPDIR_TEST/e"
	assert_eq "$(cat "$TMPDIR_TEST/o")" "out"
	assert_eq "$(cat "$TMPDIR_TEST/e")" "err"
	sbx rm "$ID"
}

t_env_and_cwd() {
	setup_env --env A=1 --env B=2
	out=$(sbx exec --env B=3 --env C=4 --cwd /tmp "$ID" -- sh -c 'echo $A $B $C $(pwd) $HOME')
	assert_eq "$out" "1 3 4 /tmp /root"
	expect_status 125 sbx exec --cwd /nonexistent "$ID" -- true
	assert_contains "$ERR" "/nonexistent"
	sbx rm "$ID"
}

t_timeout_kills_and_reports() {
	setup_env
	expect_status 137 sbx exec --timeout 500ms "$ID" -- sleep 10
	assert_contains "$ERR" "timed out after 500 ms"
	out=$(sbx exec --json --timeout 300ms "$ID" -- sh -c 'echo before; sleep 10' || true)
	echo "$out"
	python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['timed_out'] is True and r['exit_code'] is None and r['signal']==9 and r['stdout']=='before\n', r" "$out"
	# The environment stays usable.
	assert_eq "$(sbx exec "$ID" -- echo alive)" "alive"
	sbx rm "$ID"
}

t_default_timeout_from_create() {
	setup_env --timeout 400ms
	expect_status 137 sbx exec "$ID" -- sleep 5
	# The message names the timeout that applied (the environment's), not "0 ms".
	assert_contains "$ERR" "timed out after 400 ms"
	sbx rm "$ID"
}

t_background_children_do_not_hang_exec() {
	setup_env
	start=$(date +%s)
	out=$(sbx exec "$ID" -- sh -c 'sleep 20 & echo done')
	assert_eq "$out" "done"
	[ $(($(date +%s) - start)) -lt 10 ] || fail "exec waited for a background child"
	sbx rm "$ID"
}

t_client_killed_cancels_command() {
	setup_env
	"$SBX_BIN" exec "$ID" -- sleep 300 &
	pid=$!
	sleep 0.5
	kill -9 $pid
	sleep 0.5
	sbx ps "$ID" | grep -q "sleep 300" && fail "command survived its client"
	sbx rm "$ID"
}

t_pty() {
	command -v script > /dev/null || skip "script(1) is not installed"
	setup_env
	# script gives sbx a terminal; -t allocates a pty inside.
	out=$(script -qec "$SBX_BIN exec -t $ID -- sh -c 'tty; test -t 0 && echo is-a-tty'" /dev/null)
	assert_contains "$out" "/dev/pts/"
	assert_contains "$out" "is-a-tty"
	sbx rm "$ID"
}

t_output_limit_truncates() {
	setup_env --output-limit 1k
	out=$(sbx exec --json "$ID" -- head -c 100000 /dev/zero)
	python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['stdout_truncated'] is True and len(r['stdout'])==1024, (r['stdout_truncated'], len(r['stdout']))" "$out"
	sbx rm "$ID"
}

t_binary_output_in_json() {
	setup_env
	out=$(sbx exec --json "$ID" -- printf 'a\377b\000c')
	python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['stdout']=='a\ufffdb\ufffdc', repr(r['stdout'])" "$out"
	sbx rm "$ID"
}

t_exec_tty_follows_terminal_resize() {
	ID=$(sbx create)
	f="$SBX_SRC/tests/integration/winch_pty.py"
	[ -f "$f" ] || f="$SBX_SRC/tests/winch_pty.py" # the rootless run's copy
	out=$(timeout 30 python3 "$f" "$SBX_BIN" "$ID") ||
		fail "the pty inside did not get the new size: $out"
	assert_contains "$out" "24 80"
	assert_contains "$out" "33 101"
	sbx rm "$ID"
}

# What a command starts with that init does not pass on: init ignores
# SIGPIPE and blocks SIGCHLD (its signalfd), a command has neither; init
# stays outside the time namespace, every command is in it (entered at fork
# or, for init's CLONE_VM spawn, at exec).
t_command_signals_and_time_namespace() {
	setup_env
	out=$(sbx exec "$ID" -- grep -E '^Sig(Ign|Blk):' /proc/self/status)
	assert_contains "$out" "SigBlk:	0000000000000000"
	assert_contains "$out" "SigIgn:	0000000000000000"
	# Again: the second spawn reuses what the first one set up.
	out=$(sbx exec "$ID" -- grep -E '^SigIgn:' /proc/self/status)
	assert_eq "$out" "SigIgn:	0000000000000000"
	# Whatever the creator ignored, glibc's own signals 32 and 33 included
	# (which glibc's sigaction cannot see or reset; CI's shell had them
	# ignored), commands start with nothing ignored.
	ign=$("$SBX_HELPERS/sigign" 2 13 15 32 33 -- "$SBX_BIN" create)
	out=$(sbx exec "$ign" -- grep -E '^SigIgn:' /proc/self/status)
	assert_eq "$out" "SigIgn:	0000000000000000" "signals the creator ignored stay ignored in commands"
	out=$(sbx exec -d "$ign" -- sh -c 'grep -E "^SigIgn:" /proc/self/status')
	sbx ps "$ign" "$out" --wait 10s > /dev/null
	assert_eq "$(sbx ps "$ign" "$out" --output)" "SigIgn:	0000000000000000" "in background processes too"
	sbx rm "$ign"
	if [ -e /proc/self/ns/time ]; then
		t=$(sbx exec "$ID" -- sh -c 'readlink /proc/self/ns/time; readlink /proc/self/ns/time_for_children')
		assert_eq "$(echo "$t" | sed -n 1p)" "$(echo "$t" | sed -n 2p)" "a command is in its own time namespace"
		[ "$(echo "$t" | sed -n 1p)" != "$(readlink /proc/self/ns/time)" ] ||
			fail "a command shares the host's time namespace"
	fi
	sbx rm "$ID"
}

# sbx run and sbx exec forward SIGINT, SIGTERM and SIGHUP to the command's
# process group, as docker run does, and exit with its status: its own when
# it handles the signal, 128+N when it dies of it. The run's environment is
# gone afterwards, the exec's stays; a traced run's trace is whole
# (docs/runtime.md "Signals").
t_run_and_exec_forward_signals() {
	setup_env
	python3 - "$SBX_BIN" "$ID" <<'PY' || fail "signal forwarding"
import json, re, signal, subprocess, sys
sbx, env = sys.argv[1], sys.argv[2]

def sent(args, sig):
    p = subprocess.Popen([sbx] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    assert first == "ready\n", (args, first, p.stderr.read())
    p.send_signal(sig)
    out, err = p.communicate(timeout=30)
    return p.returncode, out, err

for name in ("INT", "TERM", "HUP"):
    sig = getattr(signal, "SIG" + name)
    trap = "trap 'echo got %s; exit 7' %s; echo ready; sleep 30 & wait" % (name, name)
    rc, out, err = sent(["run", "--", "sh", "-c", trap], sig)
    assert (rc, out) == (7, "got %s\n" % name), ("run, handled", name, rc, out, err)
    rc, out, err = sent(["run", "--", "sh", "-c", "echo ready; exec sleep 30"], sig)
    assert rc == 128 + sig, ("run, default action", name, rc, err)
    rc, out, err = sent(["exec", env, "--", "sh", "-c", trap], sig)
    assert (rc, out) == (7, "got %s\n" % name), ("exec, handled", name, rc, out, err)
rc, out, err = sent(["run", "--trace", "--", "sh", "-c", "echo ready; exec sleep 30"], signal.SIGINT)
assert rc == 130, ("traced run", rc, err)
tid = re.search(r"trace (sha256:[0-9a-f]{64})", err).group(1)
subprocess.run([sbx, "trace", "stats", tid], check=True, capture_output=True)
envs = [e["environment_id"] for e in json.loads(subprocess.check_output([sbx, "ls", "--json"]))["environments"]]
assert envs == [env], ("environments after the runs", envs)
PY
	sbx rm "$ID"
}
