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
	sbx ps "$id" | grep -q "sleep 301" || fail "sleep not running"
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
	fds=$(ls /proc/"$sup"/fd | wc -l)
	cgs=$(ls -d /sys/fs/cgroup/*/sbx/"$id"* /sys/fs/cgroup/sbx/"$id"* 2> /dev/null | wc -l)
	slots=$(grep -rl "$SBX_ROOT/envs/$id" /run/sbx-uidslots 2> /dev/null | wc -l)
	for i in $(seq 50); do
		sbx exec -d "$id" -- sleep 300 > /dev/null
		sbx restore "$id" "$snap" > /dev/null
	done
	assert_eq "$(sup_pid "$id")" "$sup" "restore started a new supervisor"
	assert_eq "$(ls /proc/"$sup"/fd | wc -l)" "$fds" "supervisor descriptors"
	assert_eq "$(awk '/^Threads:/ {print $2}' /proc/"$sup"/status)" "1" "supervisor threads"
	assert_eq "$(sbx ps --json "$id" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(len(j["processes"]), sorted(set(b["state"] for b in j["background"])))')" "1 ['exited']" "processes inside, background records"
	assert_eq "$(ls -d /sys/fs/cgroup/*/sbx/"$id"* /sys/fs/cgroup/sbx/"$id"* 2> /dev/null | wc -l)" "$cgs" "cgroups"
	assert_eq "$(grep -rl "$SBX_ROOT/envs/$id" /run/sbx-uidslots 2> /dev/null | wc -l)" "$slots" "uid slots"
	assert_eq "$slots" "1" "uid slots"
	out=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import sbxleaks
i = sys.argv[2]
print(len(sbxleaks.env_procs({i})), len(sbxleaks.mounts("/" + i)))' "$SBX_SRC/tests/integration" "$id")
	assert_eq "$out" "1 0" "processes in its cgroup (init only), host mounts naming it"
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
		sleep "$d"
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
