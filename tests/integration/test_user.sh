# Users and capabilities (issue 13): --user on create and exec, the MCP and
# policy "user", --cap-drop/--cap-add within the safe set, the strict
# profile, and the escape probe run as a user. Driven through the real CLI
# and `sbx mcp`; rootless through setpriv as sbxtest.

PROBE=/probe/probe

# Every test but t_user_rootless needs more than one uid inside, which only
# an sbx running as root maps (t_user_rootless covers the rootless rules).
need_uids() { is_root || skip_ok "running unprivileged: one uid is mapped (t_user_rootless covers this mode)"; }

# status_field FIELD "$status": the value of one /proc/self/status line.
status_field() { printf '%s\n' "$2" | sed -n "s/^$1:[[:space:]]*//p"; }

# probe ATTACK inside $ID as $USER_ARG (exec --user), must print BLOCKED.
attack_as() {
	local user=$1 out rc
	shift
	set +e
	out=$(sbx exec --user "$user" "$ID" -- $PROBE "$@" 2>&1)
	rc=$?
	set -e
	echo "$out"
	[ $rc = 0 ] && [[ "$out" == BLOCKED* ]] || fail "attack '$*' as '$user' was not blocked (rc $rc): $out"
}

t_user_id_caps_and_nnp() {
	need_uids
	out=$(sbx run --user 1000:1000 -- sh -c 'id -u; id -g; grep -E "^(CapEff|CapPrm|CapInh|CapAmb|NoNewPrivs):" /proc/self/status')
	assert_contains "$out" "1000"
	assert_eq "$(echo "$out" | sed -n 1p)" "1000" "uid"
	assert_eq "$(echo "$out" | sed -n 2p)" "1000" "gid"
	for f in CapEff CapPrm CapInh CapAmb; do
		assert_eq "$(status_field $f "$out")" "0000000000000000" "$f as uid 1000"
	done
	assert_eq "$(status_field NoNewPrivs "$out")" "1" "no_new_privs"
	# root, by default, keeps the documented safe set (what apt-get needs)
	out=$(sbx run -- grep -E '^CapEff:' /proc/self/status)
	assert_eq "$(status_field CapEff "$out")" "00000000800405fb" "root's safe set"
}

t_user_names_resolved_with_groups_and_home() {
	need_uids
	ID=$(sbx create --user nobody)
	out=$(sbx exec "$ID" -- sh -c 'id; echo "HOME=$HOME USER=$USER"; pwd')
	assert_contains "$out" "uid=65534(nobody)"
	assert_contains "$out" "USER=nobody"
	# nobody's home (/nonexistent) does not exist: HOME and cwd are /tmp
	assert_contains "$out" "HOME=/tmp"
	# a user added inside is resolved by init at exec, with its groups
	sbx exec --user 0 "$ID" -- sh -c 'echo "dev:x:1500:1500:dev:/home/dev:/bin/sh" >> /etc/passwd;
		echo "dev:x:1500:" >> /etc/group; echo "extra:x:1600:other,dev" >> /etc/group;
		mkdir -p /home/dev && chown 1500:1500 /home/dev'
	out=$(sbx exec --user dev "$ID" -- sh -c 'id; echo "HOME=$HOME"; pwd')
	assert_contains "$out" "uid=1500(dev) gid=1500(dev) groups=1500(dev),1600(extra)"
	assert_contains "$out" "HOME=/home/dev"
	assert_contains "$out" "/home/dev"
	# exec --user overrides the environment's user for one command only
	assert_eq "$(sbx exec --user 0 "$ID" -- id -u)" "0"
	assert_eq "$(sbx exec "$ID" -- id -u)" "65534"
	sbx rm "$ID" > /dev/null
}

t_user_unknown_is_a_clear_error() {
	need_uids
	expect_status 125 sbx run --user no-such-user -- true
	assert_contains "$ERR" "user 'no-such-user': no such user in the environment's /etc/passwd"
	expect_status 125 sbx run --user 1000:no-such-group -- true
	assert_contains "$ERR" "no such group 'no-such-group'"
	expect_status 125 sbx run --user 'a b' -- true
	assert_contains "$ERR" "user 'a b': expected UID[:GID] or a user name"
	expect_status 125 sbx run --user 70000 -- true
	assert_contains "$ERR" "outside the environment's uid and gid map (0-65535)"
	ID=$(sbx create)
	expect_status 125 sbx exec --user ghost "$ID" -- true
	assert_contains "$ERR" "user 'ghost': no such user"
	sbx rm "$ID" > /dev/null
}

t_user_cannot_write_what_it_cannot() {
	need_uids
	ID=$(sbx create --user 1000)
	sbx exec --user 0 "$ID" -- sh -c 'mkdir -p /srv/mine && chown 1000:1000 /srv/mine && chmod 700 /root'
	expect_status 2 sbx exec "$ID" -- sh -c 'echo x >> /etc/passwd'
	assert_contains "$ERR" "Permission denied"
	expect_status 2 sbx exec "$ID" -- ls /root
	assert_contains "$ERR" "Permission denied"
	sbx exec "$ID" -- sh -c 'echo mine > /srv/mine/f && cat /srv/mine/f' | grep -qx mine ||
		fail "the user cannot write its own directory"
	# the environment's root still can (the default user is not a wall for root)
	sbx exec --user 0 "$ID" -- sh -c 'echo ok >> /etc/passwd'
	sbx rm "$ID" > /dev/null
}

t_user_setuid_escalation_impossible() {
	need_uids
	ID=$(sbx create --user 1000 -v "$(probe_volume)")
	# su is setuid root on the host tree: no_new_privs makes the bit inert
	set +e
	out=$(sbx exec "$ID" -- sh -c 'su -c "id -u" root < /dev/null; echo "su=$?"' 2>&1)
	set -e
	assert_not_contains "$out" $'\n0\n'
	assert_contains "$out" "su="
	assert_not_contains "$out" "su=0"
	if sbx exec "$ID" -- sh -c 'command -v sudo' > /dev/null 2>&1; then
		expect_status 1 sbx exec "$ID" -- sh -c 'sudo -n id -u || exit 1'
	fi
	# a setuid-root copy made by root inside runs as the user all the same
	sbx exec --user 0 "$ID" -- sh -c 'cp /probe/probe /usr/local/bin/suid-probe && chmod 4755 /usr/local/bin/suid-probe'
	out=$(sbx exec "$ID" -- /usr/local/bin/suid-probe info)
	assert_contains "$out" "uid: 1000 1000 1000"
	attack_as 1000 setuid
	attack_as 1000 capset
	sbx rm "$ID" > /dev/null
}

t_user_probe_finds_every_attack_blocked() {
	need_uids
	ID=$(sbx create --user 1000 -v "$(probe_volume)")
	for a in nocaps capset setuid caps nnp seccomp mount "umount /proc" mknod module bpf keyctl iouring perf \
		pivot_root userns x32 i386 sysctl sysfs fds "write /etc/passwd" "read /etc/shadow" \
		"chown /tmp 1000"; do
		# shellcheck disable=SC2086
		attack_as 1000 $a
	done
	# the probe can fail: as root it finds the safe set
	set +e
	out=$(sbx exec --user 0 "$ID" -- $PROBE nocaps)
	set -e
	assert_contains "$out" "ESCAPED"
	sbx rm "$ID" > /dev/null
}

t_cap_drop_and_add() {
	need_uids
	ID=$(sbx create --cap-drop CHOWN -v "$(probe_volume)")
	sbx exec "$ID" -- touch /tmp/f
	expect_status 1 sbx exec "$ID" -- chown 1234 /tmp/f
	assert_contains "$ERR" "Operation not permitted"
	attack_as 0 chown /tmp/f 1234
	out=$(sbx exec "$ID" -- grep '^CapEff:' /proc/self/status)
	assert_eq "$(status_field CapEff "$out")" "00000000800405fa" "safe set minus CHOWN"
	sbx rm "$ID" > /dev/null
	# names are case-insensitive, CAP_ optional; drops come before adds
	out=$(sbx run --cap-drop all --cap-add cap_kill -- grep '^CapEff:' /proc/self/status)
	assert_eq "$(status_field CapEff "$out")" "0000000000000020" "KILL alone"
	expect_status 125 sbx run --cap-add SYS_ADMIN -- true
	assert_contains "$ERR" "--cap-add SYS_ADMIN: not in the safe set (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, SETFCAP)"
	expect_status 125 sbx run --cap-drop NOPE -- true
	assert_contains "$ERR" "unknown capability"
}

t_policy_capabilities_is_a_ceiling() {
	need_uids
	pol="$TMPDIR_TEST/caps.json"
	echo '{"name":"twocaps","capabilities":["CHOWN","FOWNER"]}' > "$pol"
	out=$(sbx run --policy "$pol" -- grep '^CapEff:' /proc/self/status)
	assert_eq "$(status_field CapEff "$out")" "0000000000000009" "the policy's CHOWN and FOWNER"
	expect_status 125 sbx run --policy "$pol" --cap-add SETUID -- true
	assert_contains "$ERR" "--cap-add SETUID: the policy does not keep it"
	out=$(sbx run --policy "$pol" --cap-drop FOWNER -- grep '^CapEff:' /proc/self/status)
	assert_eq "$(status_field CapEff "$out")" "0000000000000001" "narrowed to CHOWN"
	echo '{"user":"1000:1000"}' > "$TMPDIR_TEST/user.json"
	assert_eq "$(sbx run --policy "$TMPDIR_TEST/user.json" -- id -u)" "1000"
	expect_status 125 sbx run --policy "$TMPDIR_TEST/user.json" --user root -- true
	assert_contains "$ERR" "user 'root': the policy runs commands as '1000:1000', not root"
}

# The probe, copied in through a command's stdin (strict allows no volume).
probe_in() { sbx exec -i "$ID" -- sh -c 'cat > /tmp/probe && chmod 755 /tmp/probe' < "$SBX_HELPERS/probe"; }

t_strict_profile_runs_unprivileged() {
	need_uids
	ID=$(sbx create --policy strict)
	probe_in
	out=$(sbx exec "$ID" -- sh -c 'id -u; grep -E "^(CapEff|CapPrm):" /proc/self/status')
	assert_eq "$(echo "$out" | sed -n 1p)" "65534" "strict's uid"
	assert_eq "$(status_field CapEff "$out")" "0000000000000000"
	assert_eq "$(status_field CapPrm "$out")" "0000000000000000"
	# root is refused under strict, at exec as at create
	expect_status 125 sbx exec --user 0 "$ID" -- true
	assert_contains "$ERR" "the environment's policy runs commands as '65534:65534', not root"
	PROBE=/tmp/probe
	for a in nocaps capset setuid caps nnp mount userns "write /etc/passwd"; do
		# shellcheck disable=SC2086
		attack_as 65534 $a
	done
	# another unprivileged user is a narrowing, and allowed
	assert_eq "$(sbx exec --user 1000 "$ID" -- id -u)" "1000"
	sbx rm "$ID" > /dev/null
	expect_status 125 sbx create --policy strict --user 0
	# a name for uid 0 is root too
	ID=$(sbx create --user 0)
	sbx exec "$ID" -- sh -c 'echo "toor:x:0:0::/root:/bin/sh" >> /etc/passwd'
	S=$(sbx snapshot "$ID")
	sbx rm "$ID" > /dev/null
	expect_status 125 sbx create --policy strict --snapshot "$S" --user toor
	assert_contains "$ERR" "user 'toor' is uid 0"
}

t_user_inspect_and_restore_keep_it() {
	need_uids
	ID=$(sbx create --user 1000 --cap-drop ALL --cap-add CHOWN)
	out=$(sbx inspect "$ID")
	assert_contains "$out" '"user": "1000"'
	# the default user's commands hold nothing; root's hold the kept set
	assert_contains "$out" '"capabilities": [],'
	assert_contains "$out" '"root_capabilities": [
      "CHOWN"
    ]'
	S=$(sbx snapshot "$ID")
	sbx restore "$ID" "$S" > /dev/null
	assert_eq "$(sbx exec "$ID" -- id -u)" "1000" "user after restore"
	out=$(sbx exec --user 0 "$ID" -- grep '^CapEff:' /proc/self/status)
	assert_eq "$(status_field CapEff "$out")" "0000000000000001" "capabilities after restore"
	sbx rm "$ID" > /dev/null
	out=$(sbx inspect "$(sbx create --name plain-$$)")
	assert_contains "$out" '"user": "root"'
	sbx rm "plain-$$" > /dev/null
}

# MCP: user as a string or an integer on create and execute; anything else
# is invalid params naming the field.
t_user_over_mcp() {
	need_uids
	command -v python3 > /dev/null || skip "python3 is not installed (drives sbx mcp here)"
	out=$(python3 - "$SBX_BIN" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = 0
def rpc(method, params):
    global n
    n += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == n:
            return m
def call(name, args):
    return rpc("tools/call", {"name": name, "arguments": args})
rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()
env = call("environment_create", {"user": "nobody"})["result"]["structuredContent"]["environment_id"]
def ex(args):
    r = call("environment_execute", dict({"environment_id": env}, **args))
    return r["result"]["structuredContent"]["stdout"].strip() if "result" in r and not r["result"].get("isError") else json.dumps(r)
print("default", ex({"command": "id -u; grep CapEff /proc/self/status"}).replace("\n", " "))
print("int", ex({"command": "id -u", "user": 1000}))
print("str", ex({"command": "id -u; id -g", "user": "1000:1001"}).replace("\n", " "))
print("name", ex({"command": "id -un", "user": "root"}))
for bad in [-1, 1.5, True, "", "a b", "1000:", [1000], {"uid": 1}]:
    r = call("environment_execute", {"environment_id": env, "command": "true", "user": bad})
    # tools/call reports a bad argument as a tool error (isError, invalid_argument)
    err = ((r.get("result") or {}).get("structuredContent") or {}).get("error") or {}
    print("bad", json.dumps(bad), err.get("code"), "user" in err.get("message", ""))
r = call("environment_execute", {"environment_id": env, "command": "true", "user": "ghost"})
print("ghost", r["result"]["isError"], r["result"]["structuredContent"]["error"]["code"])
r = call("environment_create", {"user": "x y"})
print("create-bad", (((r.get("result") or {}).get("structuredContent") or {}).get("error") or {}).get("code"))
c2 = call("environment_create", {"user": 1000, "policy": {"capabilities": []}})["result"]["structuredContent"]["environment_id"]
r = call("environment_execute", {"environment_id": c2, "command": "id -u; grep CapEff /proc/self/status", "user": 0})
print("policy-caps", r["result"]["structuredContent"]["stdout"].replace("\n", " ").strip())
# the file tools act as the environment's user too
def tool(name, args):
    r = call(name, dict({"environment_id": env}, **args))["result"]
    return r["structuredContent"]["error"]["message"] if r.get("isError") else r["structuredContent"]
print("wf-passwd", tool("environment_write_file", {"path": "/etc/passwd", "content": "x"}))
print("wf-tmp", tool("environment_write_file", {"path": "/tmp/mine", "content": "hello"}).get("bytes_written"))
print("wf-owner", ex({"command": "stat -c %u:%g /tmp/mine; cat /tmp/mine"}).replace("\n", " "))
ex({"command": "true"})
print("rf-root", tool("environment_read_file", {"path": "/root/.bashrc"}))
print("ls-root", tool("environment_list_files", {"path": "/root"}))
print("rf-tmp", tool("environment_read_file", {"path": "/tmp/mine"}).get("content"))
for e in (env, c2):
    call("environment_destroy", {"environment_id": e})
p.stdin.close()
p.wait(timeout=30)
PY
)
	echo "$out"
	assert_contains "$out" "default 65534 CapEff:	0000000000000000"
	assert_contains "$out" "int 1000"
	assert_contains "$out" "str 1000 1001"
	assert_contains "$out" "name root"
	for bad in '-1' '1.5' 'true' '""' '"a b"' '"1000:"' '[1000]' '{"uid": 1}'; do
		assert_contains "$out" "bad $bad invalid_argument True"
	done
	assert_contains "$out" "ghost True not_found"
	assert_contains "$out" "create-bad invalid_argument"
	assert_contains "$out" "policy-caps 0 CapEff:	0000000000000000"
	assert_contains "$out" "wf-passwd write '/etc/passwd': Permission denied"
	assert_contains "$out" "wf-tmp 5"
	assert_contains "$out" "wf-owner 65534:65534 hello"
	assert_contains "$out" "rf-root read '/root/.bashrc': Permission denied"
	assert_contains "$out" "ls-root list '/root': Permission denied"
	assert_contains "$out" "rf-tmp hello"
}

# Rootless (as sbxtest): one uid is mapped, so the strict profile's user
# becomes root with no capabilities (and says so); an explicit --user is a
# clear error; --cap-drop still narrows.
t_user_rootless() {
	is_root || skip_ok "already running unprivileged"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	command -v setpriv > /dev/null || skip "setpriv (util-linux) is missing"
	RL="$TMPDIR_TEST/rl"
	mkdir -p "$RL/w"
	cp "$SBX_BIN" "$RL/sbx"
	cp "$SBX_HELPERS/probe" "$RL/probe"
	chmod -R a+rX "$RL"
	chmod 1777 "$RL/w"
	chmod 755 "$TMPDIR_TEST"
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env HOME=/home/sbxtest \
		SBX_ROOT="$RL/w/store" SBX_RUN="$RL/w/run" sh -c "
		S='$RL/sbx'
		echo strict: \$(\$S run -i --policy strict -- sh -c 'cat > /tmp/p; chmod 755 /tmp/p; grep -E \"^(CapEff|CapPrm):\" /proc/self/status; /tmp/p nocaps' < '$RL/probe' 2>'$RL/w/warn' | tr '\n' ' ')
		cat '$RL/w/warn'
		echo attacks: \$(\$S run -i --policy strict -- sh -c 'cat > /tmp/p; chmod 755 /tmp/p; for a in nocaps capset caps nnp seccomp mount mknod module bpf keyctl perf userns sysctl; do /tmp/p \$a; done; /tmp/p write /etc/passwd' < '$RL/probe' 2>/dev/null | cut -d: -f1 | sort | uniq -c | tr '\n' ' ')
		\$S run --user 1000 -- true 2>&1; echo user-rc=\$?
		echo drop: \$(\$S run --cap-drop ALL --cap-add CHOWN -- grep CapEff /proc/self/status)
		echo default: \$(\$S run -- grep CapEff /proc/self/status)
		\$S run --cap-add SYS_ADMIN -- true 2>&1; echo add-rc=\$?" 2>&1)
	echo "$out"
	assert_contains "$out" "strict: CapPrm: 0000000000000000 CapEff: 0000000000000000 BLOCKED: nocaps"
	assert_contains "$out" "the policy's user is not used: rootless"
	assert_contains "$out" "attacks: 14 BLOCKED"
	assert_not_contains "$out" "ESCAPED"
	assert_contains "$out" "a rootless environment maps a single uid"
	assert_contains "$out" "user-rc=125"
	assert_contains "$out" "drop: CapEff: 0000000000000001"
	assert_contains "$out" "default: CapEff: 00000000800405fb"
	assert_contains "$out" "not in the safe set"
	assert_contains "$out" "add-rc=125"
}

# A traced command run as a user replays as that user, with the
# environment's capabilities: the manifest records both.
t_user_trace_replays_as_the_user() {
	need_uids
	command -v python3 > /dev/null || skip "python3 is not installed"
	ID=$(sbx create --user 1000 --cap-drop ALL --cap-add KILL)
	t=$(sbx exec --json --trace "$ID" -- sh -c 'id -u; grep CapEff /proc/self/status' |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_id"])')
	out=$(sbx exec --json --trace --user 0 "$ID" -- grep CapEff /proc/self/status)
	t0=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_id"])')
	assert_contains "$out" "0000000000000020"
	sbx rm "$ID" > /dev/null
	out=$(sbx replay "$t" 2>&1) || fail "replay of a user's command: $out"
	assert_contains "$out" "MATCH"
	out=$(sbx replay "$t0" 2>&1) || fail "replay of root's command with the kept capabilities: $out"
	assert_contains "$out" "MATCH"
}

# File secrets belong to the environment's user (a user's command could not
# read a root-only /run/secrets); other users still cannot read them.
t_user_reads_its_file_secrets() {
	need_uids
	echo "s3cret-$$" > "$TMPDIR_TEST/tok"
	ID=$(sbx create --user 1000 --secret "TOK=$TMPDIR_TEST/tok")
	assert_eq "$(sbx exec "$ID" -- cat /run/secrets/TOK)" "s3cret-$$"
	expect_status 1 sbx exec --user 2000 "$ID" -- cat /run/secrets/TOK
	assert_contains "$ERR" "Permission denied"
	sbx rm "$ID" > /dev/null
}

# A snapshot records the environment's user (its manifest's "user"); a fork
# runs as that user unless told otherwise.
t_user_fork_keeps_the_snapshot_user() {
	need_uids
	command -v python3 > /dev/null || skip "python3 is not installed"
	ID=$(sbx create --user 1000)
	S=$(sbx snapshot "$ID")
	sbx rm "$ID" > /dev/null
	assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["user"])' \
		"$SBX_ROOT/snapshots/sha256/${S#sha256:}.json")" "1000" "the manifest's user"
	F=$(sbx fork "$S")
	assert_eq "$(sbx exec "$F" -- id -u)" "1000" "fork's default user"
	sbx rm "$F" > /dev/null
	F=$(sbx fork "$S" --user 0)
	assert_eq "$(sbx exec "$F" -- id -u)" "0" "an explicit --user wins"
	sbx rm "$F" > /dev/null
}

# The agent phase's policy may name a user and capabilities: setup runs as
# root (apt-get), the agent as an unprivileged user, for good.
t_agent_phase_switches_user_and_capabilities() {
	need_uids
	echo '{"user":"1000:1000","capabilities":[]}' > "$TMPDIR_TEST/agent.json"
	ID=$(sbx create --agent-policy "$TMPDIR_TEST/agent.json")
	assert_eq "$(sbx exec "$ID" -- id -u)" "0" "setup phase"
	sbx phase "$ID" agent > /dev/null
	out=$(sbx exec "$ID" -- sh -c 'id -u; grep ^CapEff: /proc/self/status')
	assert_contains "$out" "1000"
	assert_contains "$out" "0000000000000000"
	expect_status 125 sbx exec --user 0 "$ID" -- true
	assert_contains "$ERR" "not root"
	assert_contains "$(sbx inspect "$ID")" '"user": "1000:1000"'
	sbx rm "$ID" > /dev/null
	# narrowing only: no capability the setup phase lacks, no root after a user
	echo '{"capabilities":["CHOWN"]}' > "$TMPDIR_TEST/wide.json"
	expect_status 125 sbx create --cap-drop CHOWN --agent-policy "$TMPDIR_TEST/wide.json"
	assert_contains "$ERR" "capabilities: CHOWN"
	echo '{"user":"root"}' > "$TMPDIR_TEST/root.json"
	expect_status 125 sbx create --user 1000 --agent-policy "$TMPDIR_TEST/root.json"
	assert_contains "$ERR" "user"
}
