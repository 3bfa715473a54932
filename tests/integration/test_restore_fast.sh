# Restore in place (docs/runtime.md "Restore in place"): `sbx restore` of a
# live environment keeps its supervisor (its cgroup, lock, socket, uid range)
# and starts a new init on the snapshot's layers by the same code a cold start
# runs. Checked: the supervisor stays; the files are exactly the snapshot's;
# every process and background process is gone (and `sbx ps` says so); the
# walls (inspect and /proc/self/status) are the same before, after, and in a
# cold environment; 50 restores leak no process, mount, cgroup, uid slot or
# descriptor; network allow still goes through the proxy; the cases that need
# a new supervisor get one; a client or a supervisor killed between the two
# steps leaves an environment that restore (and gc) recover.
# The standby init (docs/warm.md "Restore"): a restore to the snapshot of the
# last restore switches to an init built meanwhile; checked: it is used, the
# environment it gives is indistinguishable from a restore without it, the
# limits are the user's, a dead or unwanted standby is dropped, nothing is
# left behind, a client killed anywhere leaves a consistent environment.

sup_pid() { sbx inspect --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor_pid"])'; }

# What a command sees of its walls (t_pool_entry_equals_cold_create's view).
VIEW='hostname; grep -E "^(Seccomp|Seccomp_filters|NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb|Uid|Gid):" /proc/self/status; awk "{print \$1, \$3}" /proc/self/uid_map /proc/self/gid_map; ulimit -a; ls /proc/self/ns | wc -l; cat /proc/self/cgroup; grep -c . /proc/self/mountinfo'

# inspect's walls, ids and per-environment paths taken out.
walls() {
	for k in isolation limits landlock_abi template policy user network warnings; do
		sbx inspect "$1" | python3 -c 'import json,re,sys; j=json.load(sys.stdin); v=j.get(sys.argv[1]); [v.pop(k, None) for k in ("uid_map", "egress_log")] if isinstance(v, dict) else None; print(sys.argv[1], re.sub("[0-9a-f]{12}", "ID", json.dumps(v, sort_keys=True)))' "$k"
	done
}

# The tree under /root: names, modes, sizes, contents.
files() { sbx exec "$1" -- sh -c 'cd /root && find . -printf "%p %M %s\n" | sort && find . -type f -exec md5sum {} + | sort'; }

t_restore_in_place_keeps_supervisor_and_exact_files() {
	id=$(sbx create --name inplace)
	sbx exec "$id" -- sh -c 'mkdir -p /root/d && echo one > /root/d/a && echo keep > /root/b && head -c 100000 /dev/urandom > /root/c'
	want=$(files "$id")
	snap=$(sbx snapshot "$id")
	sbx exec "$id" -- sh -c 'echo dirty > /root/d/a; rm /root/b; echo new > /root/new; mkdir /root/e'
	sbx exec -d "$id" -- sleep 300 > /dev/null
	sbx exec "$id" -- sh -c 'sleep 301 > /dev/null 2>&1 &'
	eventually 20 ps_shows "$id" "sleep 301" || fail "sleep not running"
	sup=$(sup_pid "$id")
	sbx restore "$id" "$snap" > /dev/null
	# Right after: exec works, on exactly the snapshot's files.
	assert_eq "$(sbx exec "$id" -- cat /root/d/a)" "one"
	assert_eq "$(sup_pid "$id")" "$sup" "restore started a new supervisor"
	assert_eq "$(files "$id")" "$want" "files after the restore"
	out=$(sbx ps --json "$id")
	echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin)
p = [x["comm"] for x in j["processes"] if x["pid"] != 1]
b = [(x["state"], x.get("end_reason")) for x in j["background"]]
assert not p, "processes survived: %s" % p
assert b == [("exited", "environment_stopped")], b' || fail "ps after restore: $out"
	assert_eq "$(sbx exec inplace -- hostname)" "inplace"
	[ "$(sbx ls --json | python3 -c 'import json,sys; print([e["state"] for e in json.load(sys.stdin)["environments"] if e["environment_id"] == sys.argv[1]][0])' "$id")" = running ] || fail "not listed as running"
	# A background process started after the restore numbers on.
	assert_eq "$(sbx exec -d "$id" -- true)" "p2"
	sbx rm "$id"
}

t_restore_in_place_same_walls_as_cold_create() {
	id=$(sbx create)
	snap=$(sbx snapshot "$id")
	before_v=$(sbx exec "$id" -- sh -c "$VIEW")
	before_w=$(walls "$id")
	sup=$(sup_pid "$id")
	sbx restore "$id" "$snap" > /dev/null
	assert_eq "$(sup_pid "$id")" "$sup" "restore started a new supervisor"
	assert_eq "$(sbx exec "$id" -- sh -c "$VIEW")" "$before_v" "a command's view after the restore"
	assert_eq "$(walls "$id")" "$before_w" "inspect after the restore"
	cold=$(sbx create)
	assert_eq "$(sbx exec "$cold" -- sh -c "$VIEW" | sed "s/$cold/ID/g")" "$(echo "$before_v" | sed "s/$id/ID/g")" "a cold create's view"
	assert_eq "$(walls "$cold")" "$before_w" "a cold create's inspect"
	sbx rm "$id" "$cold"
}

t_restore_in_place_repeated_leaks_nothing() {
	is_root || skip_ok "cgroups and uid slots are root's"
	id=$(sbx create)
	snap=$(sbx snapshot "$id")
	sup=$(sup_pid "$id")
	sbx restore "$id" "$snap" > /dev/null
	sb_all_ready "$id" # the same state at both counts: the next two standbys built
	fds=$(ls /proc/"$sup"/fd | wc -l)
	cgs=$(ls -d /sys/fs/cgroup/*/sbx/"$id"* /sys/fs/cgroup/sbx/"$id"* 2> /dev/null | wc -l)
	slots=$(grep -rl "$SBX_ROOT/envs/$id" /run/sbx-uidslots 2> /dev/null | wc -l)
	for i in $(seq 50); do
		sbx exec -d "$id" -- sleep 300 > /dev/null
		sbx restore "$id" "$snap" > /dev/null
	done
	assert_eq "$(sup_pid "$id")" "$sup" "restore started a new supervisor"
	sb_all_ready "$id"
	assert_eq "$(ls /proc/"$sup"/fd | wc -l)" "$fds" "supervisor descriptors"
	assert_eq "$(awk '/^Threads:/ {print $2}' /proc/"$sup"/status)" "1" "supervisor threads"
	assert_eq "$(sbx ps --json "$id" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["processes"]), sorted(set(b["state"] for b in j["background"])))')" "1 ['exited']" "processes inside, background records"
	assert_eq "$(ls -d /sys/fs/cgroup/*/sbx/"$id"* /sys/fs/cgroup/sbx/"$id"* 2> /dev/null | wc -l)" "$cgs" "cgroups"
	assert_eq "$(grep -rl "$SBX_ROOT/envs/$id" /run/sbx-uidslots 2> /dev/null | wc -l)" "$slots" "uid slots"
	assert_eq "$slots" "1" "uid slots"
	out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks
i = sys.argv[2]
print(len(sbxleaks.env_procs({i})), len(sbxleaks.mounts("/" + i)))' "$SBX_SRC/tests/integration" "$id")
	assert_eq "$out" "3 0" "processes in its cgroup (init and the two standby inits), host mounts naming it"
	sbx rm "$id"
	out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks, json; print(json.dumps(sbxleaks.env_leaks(sys.argv[2], [sys.argv[3]])))' "$SBX_SRC/tests/integration" "$SBX_ROOT" "$id")
	assert_eq "$out" '{"processes": [], "cgroups": [], "uid_slots": [], "mounts": []}' "left after rm"
}

t_restore_in_place_network_allow_uses_proxy() {
	command -v curl > /dev/null || skip "curl is not installed"
	id=$(sbx create --network allow=example.com)
	snap=$(sbx snapshot "$id")
	sup=$(sup_pid "$id")
	sbx restore "$id" "$snap" > /dev/null
	sbx restore "$id" "$snap" > /dev/null
	assert_eq "$(sup_pid "$id")" "$sup" "restore started a new supervisor"
	out=$(sbx exec "$id" -- curl -s -i --max-time 10 --noproxy '' -x http://127.0.0.1:3128 "http://denied.example.org/" || true)
	assert_contains "$out" "403"
	assert_contains "$(sbx exec "$id" -- sh -c 'echo $HTTPS_PROXY')" "127.0.0.1:3128"
	log=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["isolation"]["egress_log"])')
	grep -q 'denied.example.org' "$log" || fail "the refusal after the restore is not logged"
	# No route but the proxy.
	sbx exec "$id" -- python3 -c 'import socket; socket.create_connection(("1.1.1.1", 80), 2)' 2> /dev/null && fail "a direct connection got out"
	sbx rm "$id"
}

t_restore_in_place_paused_and_ttl() {
	id=$(sbx create --ttl 30s)
	snap=$(sbx snapshot "$id")
	sup=$(sup_pid "$id")
	sbx pause "$id" > /dev/null
	sbx restore "$id" "$snap" > /dev/null
	assert_eq "$(sup_pid "$id")" "$sup" "restore started a new supervisor"
	[ "$(sbx ls --json | python3 -c 'import json,sys; print([e["state"] for e in json.load(sys.stdin)["environments"] if e["environment_id"] == sys.argv[1]][0])' "$id")" = running ] || fail "still paused after the restore"
	assert_eq "$(sbx exec "$id" --no-auto-resume -- echo ok)" "ok"
	sbx rm "$id"
}

# Where the restart would not build what a new supervisor builds, a new one
# starts (and the restore still works).
t_restore_new_supervisor_where_needed() {
	export SBX_T_SECRET=s3cret
	id=$(sbx create --secret SBX_T_SECRET)
	snap=$(sbx snapshot "$id")
	sup=$(sup_pid "$id")
	sbx restore "$id" "$snap" > /dev/null
	[ "$(sup_pid "$id")" != "$sup" ] || fail "secrets: restored in place"
	assert_eq "$(sbx exec "$id" -- sh -c 'echo $SBX_T_SECRET')" "s3cret"
	sbx rm "$id"
	if is_root; then
		id=$(sbx create --disk 64m)
		sbx exec "$id" -- sh -c 'echo q > /root/q'
		snap=$(sbx snapshot "$id")
		sup=$(sup_pid "$id")
		sbx exec "$id" -- sh -c 'echo dirty > /root/q'
		sbx restore "$id" "$snap" > /dev/null
		[ "$(sup_pid "$id")" != "$sup" ] || fail "disk quota: restored in place"
		assert_eq "$(sbx exec "$id" -- cat /root/q)" "q"
		sbx rm "$id"
	fi
	# A stopped environment (its supervisor killed) starts with a new one.
	id=$(sbx create)
	snap=$(sbx snapshot "$id")
	kill -9 "$(sup_pid "$id")"
	sbx restore "$id" "$snap" > /dev/null
	assert_eq "$(sbx exec "$id" -- echo ok)" "ok"
	sbx rm "$id"
}

# The two steps by hand: "restart" (every process ends), then the client (or
# the supervisor) is killed before "start", or "start" names a directory
# outside the store.
restart_only() {
	python3 - "$SBX_RUN/$1/ctl.sock" "$2" "$SBX_ROOT/envs/$1/state.json" << 'EOF'
import json, os, signal, socket, sys, time
# The restore's first step: the record says restoring (gc leaves it alone).
st = json.load(open(sys.argv[3]))
st["restoring_ms"] = int(time.time() * 1000)
open(sys.argv[3] + ".t", "w").write(json.dumps(st))
os.rename(sys.argv[3] + ".t", sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(json.dumps({"op": "restart"}).encode())
r = json.loads(s.recv(65536))
assert r["ev"] == "ended", r
if sys.argv[2].startswith("/"):
    # "start" on a host directory outside the store: refused, the environment stops
    s.send(json.dumps({"op": "start", "layers": [sys.argv[2]]}).encode())
    r = json.loads(s.recv(65536))
    assert r["ev"] == "error" and "store" in r["message"], r
elif sys.argv[2] != "-":
    os.kill(int(sys.argv[2]), signal.SIGKILL)
EOF
}

t_restore_in_place_killed_between_steps_recovers() {
	for who in client supervisor start; do
		id=$(sbx create)
		sbx exec "$id" -- sh -c 'echo base > /root/m'
		want=$(files "$id")
		snap=$(sbx snapshot "$id")
		sbx exec "$id" -- sh -c 'echo dirty > /root/m'
		sup=$(sup_pid "$id")
		arg=-
		[ $who = supervisor ] && arg=$sup
		[ $who = start ] && arg=/etc
		restart_only "$id" "$arg" || fail "$who: restart refused"
		for i in $(seq 50); do kill -0 "$sup" 2> /dev/null || break; sleep 0.1; done
		kill -0 "$sup" 2> /dev/null && fail "$who: the supervisor lives on without init or client"
		expect_status 125 sbx exec "$id" -- true
		sbx restore "$id" "$snap" > /dev/null || fail "$who: restore after a killed restart"
		assert_eq "$(files "$id")" "$want" "$who: files"
		sbx rm "$id"
		is_root && { out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks, json; print(json.dumps(sbxleaks.env_leaks(sys.argv[2], [sys.argv[3]])))' "$SBX_SRC/tests/integration" "$SBX_ROOT" "$id")
			assert_eq "$out" '{"processes": [], "cgroups": [], "uid_slots": [], "mounts": []}' "$who: left after rm"; }
	done
	# One left stopped by a killed restart is kept by gc (its record says
	# restoring), for restore to recover.
	id=$(sbx create)
	sup=$(sup_pid "$id")
	restart_only "$id" -
	for i in $(seq 50); do kill -0 "$sup" 2> /dev/null || break; sleep 0.1; done
	sbx gc > /dev/null
	sbx ls | grep -q "$id" || fail "gc removed an environment a killed restore left"
	sbx rm "$id"
}

t_restore_in_place_rootless() {
	is_root || skip "runs as root, then as the test user"
	command -v setpriv > /dev/null || skip "setpriv is not installed"
	as_user bash -c '
set -e
export SBX_ROOT=$(mktemp -d) SBX_RUN=$(mktemp -d)
id=$($SBX_BIN create)
$SBX_BIN exec $id -- sh -c "echo r > /root/r"
snap=$($SBX_BIN snapshot $id)
$SBX_BIN exec $id -- sh -c "echo dirty > /root/r"
sup=$($SBX_BIN inspect --json $id | python3 -c "import json,sys; print(json.load(sys.stdin)[\"supervisor_pid\"])")
$SBX_BIN restore $id $snap > /dev/null
now=$($SBX_BIN inspect --json $id | python3 -c "import json,sys; print(json.load(sys.stdin)[\"supervisor_pid\"])")
[ "$now" = "$sup" ] || { echo "rootless: new supervisor"; exit 1; }
[ "$($SBX_BIN exec $id -- cat /root/r)" = r ] || { echo "rootless: files"; exit 1; }
$SBX_BIN rm $id
rm -rf "$SBX_ROOT" "$SBX_RUN"
' || fail "rootless in-place restore"
}

# The CLI killed (-9) anywhere in an in-place restore from S1 to S0: the
# environment is left running on S1's files (killed before the first step),
# or stopped, or running on S0's; whatever it is, a record that names S0's
# layers means S0's files exactly (a snapshot then captures what is there),
# and a restore at once recovers it.
t_restore_in_place_cli_killed_anywhere() {
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo base > /root/m && head -c 50000 /dev/urandom > /root/r'
	want0=$(files "$id")
	s0=$(sbx snapshot "$id")
	sbx exec "$id" -- sh -c 'echo one > /root/s1'
	s1=$(sbx snapshot "$id")
	layers() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"])' "$1"; }
	layers0=$(layers "$SBX_ROOT/snapshots/sha256/${s0#sha256:}.json")
	[ "$layers0" != "$(layers "$SBX_ROOT/snapshots/sha256/${s1#sha256:}.json")" ] || fail "S0 and S1 have the same layers"
	a=$(date +%s%N); "$SBX_BIN" restore "$id" "$s0" > /dev/null; b=$(date +%s%N)
	dur=$(((b - a) / 1000))
	hits=0
	for i in $(seq 20); do
		sbx restore "$id" "$s1" > /dev/null
		sbx exec "$id" -- sh -c 'echo dirty > /root/m; echo more > /root/new'
		[ "$i" = 1 ] && want1=$(files "$id")
		d=$(awk -v r="$RANDOM" -v d="$dur" 'BEGIN { printf "%.6f", r / 32767 * d * 1.2 / 1e6 }')
		"$SBX_BIN" restore "$id" "$s0" > /dev/null 2>&1 &
		p=$!
		read -r -t "$d" -u 7 || true
		kill -9 "$p" 2> /dev/null && hits=$((hits + 1))
		wait "$p" 2> /dev/null || true
		if sbx exec "$id" -- true 2> /dev/null; then
			if [ "$(layers "$SBX_ROOT/envs/$id/state.json")" = "$layers0" ]; then
				assert_eq "$(files "$id")" "$want0" "round $i: running on S0, as its record says"
			else
				assert_eq "$(files "$id")" "$want1" "round $i: running on S1 (and its changes), as its record says"
			fi
		fi
		sbx restore "$id" "$s0" > /dev/null || fail "round $i: restore after a killed restore"
		assert_eq "$(files "$id")" "$want0" "round $i: files"
	done
	echo "$hits of 20 restores killed before they finished"
	[ "$hits" -ge 5 ] || fail "only $hits kills hit a restore under way"
	sbx rm "$id"
	if is_root; then
		out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks, json; print(json.dumps(sbxleaks.env_leaks(sys.argv[2], [sys.argv[3]])))' "$SBX_SRC/tests/integration" "$SBX_ROOT" "$id")
		assert_eq "$out" '{"processes": [], "cgroups": [], "uid_slots": [], "mounts": []}' "left after rm"
	fi
}

# ---- the standby init ----------------------------------------------------

# Waits until the environment's standby init is ready (sbx inspect).
sb_ready() {
	local i
	for i in $(seq 200); do
		sbx inspect "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin).get("standby"); sys.exit(0 if s and s["ready"] else 1)' && return 0
		sleep 0.05
	done
	fail "no standby became ready for $1"
}
# Until both standby inits (docs/warm.md "Restore": two are kept) are ready.
sb_all_ready() {
	local i
	for i in $(seq 200); do
		sbx inspect "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin).get("standby"); sys.exit(0 if s and s["count"] == 2 and s["ready_count"] == 2 else 1)' && return 0
		sleep 0.05
	done
	fail "the two standbys of $1 did not become ready"
}
sb_pid() { sbx inspect "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin).get("standby"); print(s["pid"] if s else "")'; }
used_standby() { python3 -c 'import json,sys; print(json.load(sys.stdin).get("standby", False))'; }

# What an episode's commands see, beyond VIEW: their first pid, env, cwd,
# the walls' report of the process itself.
VIEW2='echo pid $$; pwd; env | sort | grep -v "^PWD=\|^SHLVL=\|^_="; id; cat /proc/sys/kernel/hostname; grep -E "^(Seccomp|Cap|NoNewPrivs)" /proc/1/status 2>/dev/null | wc -l'

t_restore_standby_used_and_same_as_without() {
	a=$(sbx create --name sba --env K=v --pids 50)
	b=$(sbx create --name sbb --env K=v --pids 50)
	for e in "$a" "$b"; do sbx exec "$e" -- sh -c 'mkdir -p /root/d && echo one > /root/d/a && echo keep > /root/b && ln -s d/a /root/l && chmod 600 /root/b'; done
	sa=$(sbx snapshot "$a")
	sb=$(SBX_RESTORE_STANDBY=0 sbx snapshot "$b")
	want=$(files "$a")
	assert_eq "$(files "$b")" "$want" "the two environments' files"
	sbx restore "$a" "$sa" > /dev/null
	SBX_RESTORE_STANDBY=0 sbx restore "$b" "$sb" > /dev/null
	[ -z "$(sb_pid "$b")" ] || fail "SBX_RESTORE_STANDBY=0 built a standby"
	for round in 1 2 3; do
		sb_ready "$a"
		for e in "$a" "$b"; do
			sbx exec "$e" -- sh -c 'echo dirty > /root/d/a; rm /root/b; echo new > /root/new; mkdir /root/e; echo t > /tmp/t'
			sbx exec -d "$e" -- sleep 300 > /dev/null
		done
		assert_eq "$(sbx restore --json "$a" "$sa" | used_standby)" "True" "round $round: the standby was not used"
		assert_eq "$(SBX_RESTORE_STANDBY=0 sbx restore --json "$b" "$sb" | used_standby)" "False" "round $round: standby used though disabled"
		# The same commands in both (the first pid is compared below).
		for e in "$a" "$b"; do
			assert_eq "$(files "$e")" "$want" "round $round: files after a restore (by the standby: $e = $a)"
			assert_eq "$(sbx exec "$e" -- sh -c 'ls /tmp; echo $K')" "v" "round $round: /tmp and env"
		done
		va=$(sbx exec "$a" -- sh -c "$VIEW; $VIEW2" | sed "s/$a/ID/g; s/sba/NAME/g")
		vb=$(sbx exec "$b" -- sh -c "$VIEW; $VIEW2" | sed "s/$b/ID/g; s/sbb/NAME/g")
		assert_eq "$va" "$vb" "round $round: a command's view, standby or not"
		assert_eq "$(walls "$a" | sed 's/sba/NAME/g')" "$(walls "$b" | sed 's/sbb/NAME/g')" "round $round: inspect, standby or not"
		out=$(sbx ps --json "$a")
		echo "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin)
p = [x["comm"] for x in j["processes"] if x["pid"] != 1]
assert not p, "processes survived: %s" % p' || fail "round $round: ps after the standby restore: $out"
	done
	# A snapshot after a restore by the standby captures the environment's files.
	sbx exec "$a" -- sh -c 'echo after > /root/after'
	s2=$(sbx snapshot "$a")
	c=$(sbx create --snapshot "$s2")
	assert_eq "$(sbx exec "$c" -- cat /root/after /root/d/a)" "after
one"
	sbx rm "$a" "$b" "$c"
}

# The replaced init's processes are gone when the restore returns (none of
# them is alive in the environment's cgroup, where they would count against
# its pids and memory limits and take its CPU), even the slow ones to end: a
# process with a large address space to unmap, a busy loop, a few sleeps.
# The check runs in the process that ran the restore, right after it.
t_restore_standby_old_processes_gone_when_it_returns() {
	is_root || skip_ok "the environment's cgroup is root's"
	id=$(sbx create --memory 2g)
	snap=$(sbx snapshot "$id")
	sbx restore "$id" "$snap" > /dev/null
	for round in 1 2 3 4 5; do
		sb_ready "$id"
		sbx exec -d "$id" -- python3 -c 'import time; b = bytearray(300 << 20); print("x", flush=True); time.sleep(300)' > /dev/null
		sbx exec -d "$id" -- sh -c 'while :; do :; done' > /dev/null
		for i in 1 2 3; do sbx exec -d "$id" -- sleep 300 > /dev/null; done
		for i in $(seq 100); do
			[ "$(sbx ps --json "$id" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["processes"]))')" -ge 6 ] && break
			sleep 0.05
		done
		sleep 0.5 # the python process has touched its 300 MB
		out=$(python3 -c 'import json, subprocess, sys; sys.path.insert(0, sys.argv[1]); import sbxleaks
r = subprocess.run([sys.argv[2], "restore", "--json", sys.argv[3], sys.argv[4]], capture_output=True, text=True)
left = [p for p in sbxleaks.env_procs({sys.argv[3]}) if p.split()[1] not in ("sbx-init", "sbx-supervisor")]
print(json.loads(r.stdout).get("standby"), left)' "$SBX_SRC/tests/integration" "$SBX_BIN" "$id" "$snap")
		assert_eq "$out" "True []" "round $round: the standby was used and nothing of the old init is alive"
	done
	sbx rm "$id"
}

# Each standby is one process of the environment's cgroup: the limits grow by
# what they take while they exist, so the commands can start as many
# processes as without one.
t_restore_standby_same_limits() {
	a=$(sbx create --pids 20 --memory 64m)
	b=$(sbx create --pids 20 --memory 64m)
	sa=$(sbx snapshot "$a")
	sb=$(sbx snapshot "$b")
	sbx restore "$a" "$sa" > /dev/null
	SBX_RESTORE_STANDBY=0 sbx restore "$b" "$sb" > /dev/null
	sb_all_ready "$a"
	count='import os, time
n, kids = 0, []
while n < 40:
    try:
        p = os.fork()
    except OSError:
        break
    if p == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(p)
    n += 1
print(n)
for p in kids:
    os.kill(p, 9)'
	na=$(sbx exec "$a" -- python3 -c "$count")
	nb=$(sbx exec "$b" -- python3 -c "$count")
	[ "$nb" -gt 5 ] && [ "$nb" -lt 25 ] || fail "the pids limit was not enforced: $nb processes"
	assert_eq "$na" "$nb" "processes a command can start, with a standby and without"
	if is_root && [ -d /sys/fs/cgroup/memory/sbx ]; then
		assert_eq "$(cat /sys/fs/cgroup/memory/sbx/"$a"/memory.limit_in_bytes)" "$((80 * 1024 * 1024))" "memory limit with two standbys (64m + 8m each)"
		assert_eq "$(cat /sys/fs/cgroup/memory/sbx/"$b"/memory.limit_in_bytes)" "$((64 * 1024 * 1024))" "memory limit without"
	fi
	sbx rm "$a" "$b"
}

# A standby killed (-9) is dropped: the next restore takes the two steps,
# and builds a new one; a restore to another snapshot drops it too.
t_restore_standby_killed_or_other_snapshot() {
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo s1 > /root/f'
	s1=$(sbx snapshot "$id")
	sbx exec "$id" -- sh -c 'echo s2 > /root/f'
	s2=$(sbx snapshot "$id")
	sbx restore "$id" "$s1" > /dev/null
	sb_ready "$id"
	p=$(sb_pid "$id")
	kill -9 "$p"
	for i in $(seq 50); do [ -z "$(sb_pid "$id")" ] && break; sleep 0.1; done
	[ -z "$(sb_pid "$id")" ] || fail "a dead standby was kept"
	assert_eq "$(sbx exec "$id" -- cat /root/f)" "s1" "the environment after its standby died"
	assert_eq "$(sbx restore --json "$id" "$s1" | used_standby)" "False" "restore after the standby died"
	assert_eq "$(sbx exec "$id" -- cat /root/f)" "s1"
	sb_ready "$id"
	assert_eq "$(sbx restore --json "$id" "$s2" | used_standby)" "False" "restore to another snapshot"
	assert_eq "$(sbx exec "$id" -- cat /root/f)" "s2"
	sb_ready "$id"
	assert_eq "$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["standby"]["snapshot_id"])')" "$s2" "the standby's snapshot"
	assert_eq "$(sbx restore --json "$id" "$s2" | used_standby)" "True"
	assert_eq "$(sbx exec "$id" -- cat /root/f)" "s2"
	sbx rm "$id"
}

# The RL loop (docs/warm.md "Restore"): restore -> exec -> restore, and
# restores back to back, are all served by a standby after the first (the
# two steps); two are kept, so with both ready two restores in a row find
# one ready each (standby_waited false: the second is the spare, not one
# built while it waited). Functional, not timed.
t_restore_standby_loop() {
	id=$(sbx create --pids 30 --memory 256m)
	sbx exec "$id" -- sh -c 'echo base > /root/f'
	s=$(sbx snapshot "$id")
	assert_eq "$(sbx restore --json "$id" "$s" | used_standby)" "False" "the first restore (two steps)"
	for i in $(seq 8); do
		assert_eq "$(sbx exec "$id" -- sh -c 'cat /root/f; echo dirty > /root/f; echo $$')" "base
2" "episode $i: the snapshot's file, the first pid"
		assert_eq "$(sbx restore --json "$id" "$s" | used_standby)" "True" "loop restore $i"
	done
	for i in $(seq 8); do
		assert_eq "$(sbx restore --json "$id" "$s" | used_standby)" "True" "back-to-back restore $i"
	done
	assert_eq "$(sbx exec "$id" -- cat /root/f)" "base"
	waited() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(j.get("standby"), j.get("standby_waited"))'; }
	sb_all_ready "$id"
	assert_eq "$(sbx restore --json "$id" "$s" | waited)" "True False" "first of two in a row, both ready"
	assert_eq "$(sbx restore --json "$id" "$s" | waited)" "True False" "second of two in a row: the spare"
	sb_all_ready "$id"
	if is_root && [ -d /sys/fs/cgroup/memory/sbx ]; then
		assert_eq "$(cat /sys/fs/cgroup/memory/sbx/"$id"/memory.limit_in_bytes)" "$(((256 + 16) * 1024 * 1024))" "memory limit: 8m for each standby"
		[ ! -f /sys/fs/cgroup/pids/sbx/"$id"/pids.max ] ||
			assert_eq "$(cat /sys/fs/cgroup/pids/sbx/"$id"/pids.max)" "32" "pids limit: one for each standby"
	fi
	# The writable layers are the environment's and the two standbys' only.
	assert_eq "$(ls "$SBX_ROOT/envs/$id/standby" | sort | tr '\n' ' ')" "0 1 " "the standbys' directories"
	sbx rm "$id"
	[ ! -e "$SBX_ROOT/envs/$id" ] || fail "rm left the environment's directory"
}

# Pause, snapshot, idle suspend, rm, gc, a supervisor killed: nothing of the
# standby is left (the harness checks mounts, cgroups, supervisors too).
t_restore_standby_leaves_nothing() {
	leaks() { is_root || return 0; out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks, json; print(json.dumps(sbxleaks.env_leaks(sys.argv[2], [sys.argv[3]])))' "$SBX_SRC/tests/integration" "$SBX_ROOT" "$1")
		assert_eq "$out" '{"processes": [], "cgroups": [], "uid_slots": [], "mounts": []}' "$2: left behind"; }
	id=$(sbx create)
	s=$(sbx snapshot "$id")
	sbx restore "$id" "$s" > /dev/null
	sb_ready "$id"
	sbx pause "$id" > /dev/null
	assert_eq "$(sbx restore --json "$id" "$s" | used_standby)" "True" "restore of a paused environment"
	assert_eq "$(sbx exec "$id" --no-auto-resume -- echo ok)" "ok"
	sb_ready "$id"
	sbx exec "$id" -- sh -c 'echo x > /root/x'
	s2=$(sbx snapshot "$id")
	sb_ready "$id"
	sbx rm "$id"
	leaks "$id" rm
	# Removed right after a restore by the standby: the replaced init's
	# mounts (held until the next standby is built) go with it.
	id=$(sbx create)
	s=$(sbx snapshot "$id")
	sbx restore "$id" "$s" > /dev/null
	sb_ready "$id"
	assert_eq "$(sbx restore --json "$id" "$s" | used_standby)" "True"
	sbx rm "$id"
	leaks "$id" "rm right after a restore"
	id=$(sbx create)
	s=$(sbx snapshot "$id")
	sbx restore "$id" "$s" > /dev/null
	sb_ready "$id"
	assert_eq "$(sbx restore --json "$id" "$s" | used_standby)" "True"
	kill -9 "$(sup_pid "$id")"
	sbx gc > /dev/null
	sbx rm "$id" > /dev/null 2>&1 || true
	leaks "$id" "supervisor killed right after a restore, then gc"
	# The supervisor killed: the standby dies with it (parent-death signal).
	id=$(sbx create)
	s=$(sbx snapshot "$id")
	sbx restore "$id" "$s" > /dev/null
	sb_ready "$id"
	p=$(sb_pid "$id")
	kill -9 "$(sup_pid "$id")"
	for i in $(seq 50); do kill -0 "$p" 2> /dev/null || break; sleep 0.1; done
	kill -0 "$p" 2> /dev/null && fail "the standby outlived its supervisor"
	sbx restore "$id" "$s" > /dev/null
	assert_eq "$(sbx exec "$id" -- echo ok)" "ok"
	sbx rm "$id"
	leaks "$id" "supervisor killed"
	# Idle suspend: no process left, and it wakes on the snapshot's files.
	# (3 s: the standby, built after the first command that follows the
	# restore, must be ready before the suspend; sb_ready polls slowly
	# on a loaded machine)
	id=$(sbx create --idle-suspend 3s)
	sbx exec "$id" -- sh -c 'echo w > /root/w'
	s=$(sbx snapshot "$id")
	sbx restore "$id" "$s" > /dev/null
	sbx exec "$id" -- true # the first command after it: the next standby is built now
	sb_ready "$id"
	sup=$(sup_pid "$id")
	for i in $(seq 100); do kill -0 "$sup" 2> /dev/null || break; sleep 0.1; done
	kill -0 "$sup" 2> /dev/null && fail "not suspended"
	is_root && assert_eq "$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks; print(len(sbxleaks.env_procs({sys.argv[2]})))' "$SBX_SRC/tests/integration" "$id")" "0" "processes of a suspended environment"
	assert_eq "$(sbx exec "$id" -- cat /root/w)" "w"
	sbx rm "$id"
	leaks "$id" "idle suspend"
}

# The CLI killed (-9) anywhere in restores to the same snapshot (the standby
# way): the environment runs either the episode's files or the snapshot's,
# its record names the snapshot's layers, and a restore recovers it.
t_restore_standby_cli_killed_anywhere() {
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo base > /root/m'
	want=$(files "$id")
	s=$(sbx snapshot "$id")
	sbx restore "$id" "$s" > /dev/null
	sb_ready "$id"
	# Timed and delayed by bash builtins: a forked date or sleep costs
	# about as much as the restore itself, and the kills came too late.
	a=$EPOCHREALTIME
	"$SBX_BIN" restore "$id" "$s" > /dev/null
	b=$EPOCHREALTIME
	dur=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%d", (b - a) * 1e6 }')
	exec 7<> <(:)
	hits=0
	for i in $(seq 20); do
		sb_ready "$id"
		sbx exec "$id" -- sh -c 'echo dirty > /root/m; echo more > /root/new'
		[ "$i" = 1 ] && want1=$(files "$id")
		d=$(awk -v r="$RANDOM" -v d="$dur" 'BEGIN { printf "%.6f", r / 32767 * d * 1.2 / 1e6 }')
		"$SBX_BIN" restore "$id" "$s" > /dev/null 2>&1 &
		p=$!
		read -r -t "$d" -u 7 || true
		kill -9 "$p" 2> /dev/null && hits=$((hits + 1))
		wait "$p" 2> /dev/null || true
		got=$(files "$id")
		[ "$got" = "$want" ] || [ "$got" = "$want1" ] || fail "round $i: neither the snapshot's files nor the episode's: $got"
		sbx restore "$id" "$s" > /dev/null || fail "round $i: restore after a killed restore"
		assert_eq "$(files "$id")" "$want" "round $i: files"
	done
	echo "$hits of 20 restores killed before they finished"
	[ "$hits" -ge 3 ] || fail "only $hits kills hit a restore under way"
	exec 7<&-
	sbx rm "$id"
}

t_restore_standby_rootless() {
	is_root || skip "runs as root, then as the test user"
	command -v setpriv > /dev/null || skip "setpriv is not installed"
	as_user bash -c '
set -e
export SBX_ROOT=$(mktemp -d) SBX_RUN=$(mktemp -d)
id=$($SBX_BIN create)
$SBX_BIN exec $id -- sh -c "echo r > /root/r"
snap=$($SBX_BIN snapshot $id)
$SBX_BIN restore $id $snap > /dev/null
for round in 1 2 3; do
	for i in $(seq 100); do $SBX_BIN inspect $id | grep -q "\"ready\": true" && break; sleep 0.05; done
	$SBX_BIN exec $id -- sh -c "echo dirty > /root/r; echo n > /root/n"
	$SBX_BIN restore --json $id $snap | grep -q "\"standby\": true" || { echo "rootless: standby not used"; exit 1; }
	[ "$($SBX_BIN exec $id -- sh -c "cat /root/r; ls /root")" = "r
r" ] || { echo "rootless: files"; exit 1; }
done
$SBX_BIN rm $id
$SBX_BIN gc > /dev/null
rm -rf "$SBX_ROOT" "$SBX_RUN"
' || fail "rootless restore by the standby"
}
