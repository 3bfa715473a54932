# The warm pool (docs/warm.md): sbx pool set/ls/rm, creates that take an
# entry, the entries' equivalence with cold creates, and hygiene.

# ready SOURCE N: waits until the pool of SOURCE has N ready entries.
ready() {
	for _ in $(seq 300); do
		n=$(sbx pool ls --json | python3 -c 'import json,sys; print(sum(p["ready"] for p in json.load(sys.stdin)["pools"] if p["source"] == sys.argv[1]))' "$1")
		[ "$n" = "$2" ] && return 0
		sleep 0.05
	done
	fail "pool $1 has $n ready entries, not $2: $(sbx pool ls)"
}

from_pool() { python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["environment_id"], j["from_pool"])'; }

t_pool_create_takes_an_entry() {
	sbx pool set host --size 1 > /dev/null
	ready host 1
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" "0" "pool entries are listed"
	read -r id fp <<< "$(sbx create --json | from_pool)"
	assert_eq "$fp" "True"
	assert_eq "$(sbx exec "$id" -- echo hi)" "hi"
	sbx ls | grep -q "$id.*running" || fail "a taken entry is not listed: $(sbx ls)"
	ready host 1 # refilled in the background
	# Any other option builds cold.
	read -r id2 fp2 <<< "$(sbx create --json --name other | from_pool)"
	assert_eq "$fp2" "False"
	read -r id3 fp3 <<< "$(sbx create --json --policy strict | from_pool)"
	assert_eq "$fp3" "False"
	read -r id4 fp4 <<< "$(sbx create --json -p 0:8000 | from_pool)" # entries bind no host port
	assert_eq "$fp4" "False"
	sbx rm "$id" "$id2" "$id3" "$id4"
	sbx pool rm host > /dev/null
}

# A pool named by a policy file or a template name is keyed by that name, but
# what it names may change: an entry built before the change is never handed
# out (a cold create would get the new policy or snapshot); the next ones are
# built from what the names say now.
t_pool_follows_its_policy_file_and_template_name() {
	pol=$TMPDIR_TEST/pol.json
	pids() { sbx inspect "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["limits"]["pids"])'; }
	echo '{"name":"mine","limits":{"pids":100}}' > "$pol"
	sbx pool set host --size 1 --policy "$pol" > /dev/null
	ready host 1
	echo '{"name":"mine","limits":{"pids":50}}' > "$pol"
	read -r id fp <<< "$(sbx create --json --policy "$pol" | from_pool)"
	assert_eq "$fp $(pids "$id")" "False 50" "an entry of the old policy file was handed out"
	ready host 1
	read -r id2 fp2 <<< "$(sbx create --json --policy "$pol" | from_pool)"
	assert_eq "$fp2 $(pids "$id2")" "True 50" "the refill follows the file"
	sbx rm "$id" "$id2" > /dev/null
	sbx pool rm host --policy "$pol" > /dev/null
	src=$(sbx create)
	sbx exec "$src" -- sh -c 'echo one > /root/v'
	s1=$(sbx snapshot "$src")
	sbx exec "$src" -- sh -c 'echo two > /root/v'
	s2=$(sbx snapshot "$src")
	sbx template add tt "$s1" > /dev/null
	sbx pool set tt --size 1 > /dev/null
	ready tt 1
	sbx template add tt "$s2" > /dev/null
	read -r id3 fp3 <<< "$(sbx create --json --template tt | from_pool)"
	assert_eq "$fp3 $(sbx exec "$id3" -- cat /root/v)" "False two" "an entry of the old template target"
	ready tt 1
	read -r id4 fp4 <<< "$(sbx create --json --template tt | from_pool)"
	assert_eq "$fp4 $(sbx exec "$id4" -- cat /root/v)" "True two" "the refill follows the name"
	sbx rm "$src" "$id3" "$id4" > /dev/null
	sbx pool rm tt > /dev/null
}

# An entry waits hidden: nothing can exec in it, pause it, copy into it or
# remove it by its id (or a prefix) before a create takes it, so nothing done
# to it reaches the next taker (files, a process, a pause).
t_pool_entry_is_hidden_until_taken() {
	sbx pool set host --size 1 > /dev/null
	ready host 1
	e=$(ls "$SBX_ROOT"/pools/*.d/)
	[[ "$e" =~ ^[0-9a-f]{12}$ ]] || fail "no single entry: '$e'"
	for cmd in "exec $e -- sh -c 'echo evil > /root/evil'" "exec ${e:0:6} -- true" "pause $e" \
		"inspect $e" "rm $e" "snapshot $e" "ps $e"; do
		eval "expect_status 125 sbx $cmd"
		assert_contains "$ERR" "no such environment"
	done
	echo x > "$TMPDIR_TEST/x"
	expect_status 125 sbx cp "$TMPDIR_TEST/x" "$e:/root/x"
	read -r id fp <<< "$(sbx create --json | from_pool)"
	assert_eq "$id $fp" "$e True" "the entry was taken"
	assert_eq "$(sbx exec "$id" -- sh -c 'ls /root; echo $$')" "2" "the taken entry's files or first pid"
	assert_eq "$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')" "running"
	sbx rm "$id"
	sbx pool rm host > /dev/null
}

# An entry being created has its mark (envs/<id>/pool-entry) before its
# state says "pool": listed then, it was one no lookup found, so a client that
# listed and then removed it got not_found (CI's t_faults_kill9_serve, with a
# server's warm set filling). The mark alone hides it from the listing too.
t_pool_entry_being_created_is_not_listed() {
	id=$(sbx create)
	touch "$SBX_ROOT/envs/$id/pool-entry"
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print([e["environment_id"] for e in json.load(sys.stdin)["environments"]])')" "[]" \
		"an entry hidden from lookups is listed"
	expect_status 125 sbx inspect "$id"
	rm "$SBX_ROOT/envs/$id/pool-entry"
	sbx ls | grep -q "$id.*running" || fail "an environment without the mark is not listed: $(sbx ls)"
	sbx rm "$id"
}

# What a pooled environment shows is what a cold one with the same options
# shows: the isolation report, limits, the walls as the kernel reports them
# inside, its first pid and host name; its uid range is its own (the map's
# size is compared, its host base must differ).
t_pool_entry_equals_cold_create() {
	sbx pool set host --size 1 --policy dev > /dev/null
	ready host 1
	sleep 1 # it waited
	read -r pid fp <<< "$(sbx create --json --policy dev | from_pool)"
	assert_eq "$fp" "True"
	read -r cid fp <<< "$(sbx create --json --policy dev --output-limit 64m | from_pool)"
	assert_eq "$fp" "False"
	view='echo $$; hostname; grep -E "^(Seccomp|Seccomp_filters|NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb|Uid|Gid):" /proc/self/status; awk "{print \$1, \$3}" /proc/self/uid_map /proc/self/gid_map; ulimit -a; ls /proc/self/ns | wc -l'
	assert_eq "$(sbx exec "$pid" -- sh -c "$view")" "$(sbx exec "$cid" -- sh -c "$view")"
	for k in isolation limits landlock_abi template policy user; do
		a=$(sbx inspect "$pid" | python3 -c 'import json,sys; j=json.load(sys.stdin); v=j.get(sys.argv[1]); [v.pop(k, None) for k in ("uid_map", "egress_log")] if isinstance(v, dict) else None; import re; print(re.sub("[0-9a-f]{12}", "ID", json.dumps(v, sort_keys=True)))' "$k")
		b=$(sbx inspect "$cid" | python3 -c 'import json,sys; j=json.load(sys.stdin); v=j.get(sys.argv[1]); [v.pop(k, None) for k in ("uid_map", "egress_log")] if isinstance(v, dict) else None; import re; print(re.sub("[0-9a-f]{12}", "ID", json.dumps(v, sort_keys=True)))' "$k")
		assert_eq "$a" "$b" "inspect .$k differs"
	done
	if is_root; then
		ready host 1
		n=$(cat "$SBX_ROOT"/envs/*/state.json | python3 -c 'import json,sys
dec = json.JSONDecoder(); s = sys.stdin.read(); i = 0; u = []
while i < len(s):
    while i < len(s) and s[i].isspace(): i += 1
    if i >= len(s): break
    o, i = dec.raw_decode(s, i); u.append(o["host_uid"])
print(len(u), len(set(u)))')
		assert_eq "$n" "3 3" "uid ranges shared"
	fi
	sbx rm "$pid" "$cid"
	sbx pool rm host --policy dev > /dev/null
}

t_pool_rm_and_gc_leave_nothing() {
	sbx pool set host --size 2 > /dev/null
	ready host 2
	out=$(sbx pool rm host --json)
	assert_eq "$(echo "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["removed"]))')" "2"
	[ -z "$(ls "$SBX_ROOT/envs" | grep -E '^[0-9a-f]{12}$')" ] || fail "environments left: $(ls "$SBX_ROOT/envs")"
	[ -z "$(ls "$SBX_RUN" 2> /dev/null | grep -E '^[0-9a-f]{12}$')" ] || fail "run dirs left"
	if is_root && grep -rqs "$SBX_ROOT" /run/sbx-uidslots; then fail "uid slots left"; fi
	expect_status 125 sbx pool rm host
	assert_contains "$ERR" "no pool"
	# A pool whose configuration went (a pool rm killed halfway): gc removes its entries.
	sbx pool set host --size 1 > /dev/null
	ready host 1
	rm "$SBX_ROOT"/pools/*.json
	sbx gc > /dev/null
	[ -z "$(ls "$SBX_ROOT/envs" | grep -E '^[0-9a-f]{12}$')" ] || fail "gc left pool entries: $(ls "$SBX_ROOT/envs")"
}

t_pool_snapshot_source_and_errors() {
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo base > /root/b'
	sid=$(sbx snapshot "$id" --label pbase)
	sbx pool set pbase --size 1 > /dev/null
	ready "$sid" 1
	read -r fid fp <<< "$(sbx fork --json "$sid" | from_pool)"
	assert_eq "$fp" "True"
	assert_eq "$(sbx exec "$fid" -- cat /root/b)" "base"
	expect_status 125 sbx pool set host
	expect_status 125 sbx pool set host --size 1000
	expect_status 125 sbx pool set host --size 1 --policy no-such-policy
	sbx rm "$id" "$fid"
	sbx pool rm "$sid" > /dev/null
}

t_pool_mcp() {
	out=$(python3 - "$SBX_BIN" << 'PY'
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = [0]
def rpc(method, params):
    n[0] += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n[0], "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        j = json.loads(p.stdout.readline())
        if j.get("id") == n[0]:
            return j
call = lambda name, args: rpc("tools/call", {"name": name, "arguments": args})["result"]["structuredContent"]
rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
call("pool_set", {"source": "host", "size": 1})
for _ in range(300):
    if sum(q["ready"] for q in call("pool_list", {})["pools"]) == 1:
        break
    time.sleep(0.05)
c = call("environment_create", {})
r = call("environment_execute", {"environment_id": c["environment_id"], "command": "echo ok"})
call("environment_destroy", {"environment_id": c["environment_id"]})
rm = call("pool_set", {"source": "host", "size": 0, "remove": True})
print(c["from_pool"], r["stdout"].strip(), len(call("pool_list", {})["pools"]), len(rm["removed"]) >= 0)
p.stdin.close()
p.wait()
PY
)
	assert_eq "$out" "True ok 0 True"
}

# sbx run --json says whether the environment came from a pool and how long
# the create took (API.md: from_pool, create_ms), cold or pooled.
t_pool_run_json_reports_from_pool() {
	out=$(sbx run --json -- echo hi | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["from_pool"], j["create_ms"] >= 0, j["stdout"].strip())')
	assert_eq "$out" "False True hi"
	sbx pool set host --size 1 > /dev/null
	ready host 1
	out=$(sbx run --json -- echo hi | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["from_pool"], j["create_ms"] >= 0, j["stdout"].strip())')
	assert_eq "$out" "True True hi"
	sbx pool rm host > /dev/null
}

# A pooled sbx run's entry is handed out by its supervisor, a moment after
# the take (docs/warm.md): a run that lasts is then listed as an ordinary
# running environment (from_pool, created now, no longer a pool entry, its
# claim dropped), its warnings are the entry's, and the run's command came
# on the take's own connection.
t_pool_run_is_handed_out_while_it_runs() {
	sbx run -- true 2> "$TMPDIR_TEST/cold.err" || fail "cold sbx run failed"
	sbx pool set host --size 1 > /dev/null
	ready host 1
	before=$(date +%s)
	sbx run -- sleep 2 > /dev/null 2> "$TMPDIR_TEST/run.err" &
	run=$!
	ids=""
	for _ in $(seq 100); do
		ids=$(sbx ls --json | python3 -c 'import json,sys; print(" ".join(e["environment_id"] for e in json.load(sys.stdin)["environments"] if e["state"] == "running"))')
		[ -n "$ids" ] && break
		sleep 0.01
	done
	[ -n "$ids" ] || fail "the pooled run was never listed as running"
	assert_eq "$(echo "$ids" | wc -w)" "1" "listed runs"
	out=$(sbx inspect "$ids" --json | python3 -c '
import json,sys,calendar,time
j=json.load(sys.stdin)
c=calendar.timegm(time.strptime(j["created_at"],"%Y-%m-%dT%H:%M:%SZ"))
print(j["from_pool"], "pool" in j, c >= '"$before"' - 1)')
	assert_eq "$out" "True False True" "handed-out state (from_pool, still a pool entry, created at the take)"
	claims=$(ls "$SBX_ROOT"/pools/*.taken 2> /dev/null | grep -c . || true)
	assert_eq "$claims" "0" "claims left after the hand-out"
	wait "$run" || fail "sbx run failed: $(cat "$TMPDIR_TEST/run.err")"
	# Its warnings (the entry's, from the supervisor's "owned") are a cold run's.
	unid() { sed -E "s/[0-9a-f]{12}/ID/g" "$1"; }
	assert_eq "$(unid "$TMPDIR_TEST/run.err")" "$(unid "$TMPDIR_TEST/cold.err")" "the pooled run's warnings against a cold run's"
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" "0" "listed after its run"
	sbx pool rm host > /dev/null
}

# sbx run answers once every process of its command is gone and the
# environment is out of every view (docs/runtime.md "One-shot runs"); its
# supervisor destroys the cgroup, frees the uid range and hands the files to
# the reclaimer just after (off the run's path), and sbx gc waits for that.
# Cold and from a pool; a daemonized child must be dead at the return, with
# no retry.
t_pool_run_returns_with_its_processes_gone() {
	for pooled in 0 1; do
		if [ "$pooled" = 1 ]; then
			sbx pool set host --size 1 > /dev/null
			ready host 1
		fi
		# The run lives 3 s: long enough to be seen on a loaded machine.
		sbx run --json -- sh -c 'setsid sleep 3607 < /dev/null > /dev/null 2>&1 & sleep 3; echo started' > "$TMPDIR_TEST/run.json" &
		run=$!
		id=""
		for _ in $(seq 500); do # the run's environment: the one not waiting in a pool (no process per look)
			for st in "$SBX_ROOT"/envs/*/state.json; do
				[ -f "$st" ] && ! grep -q '"pool"' "$st" 2> /dev/null && id=$(basename "$(dirname "$st")") && break
			done
			[ -n "$id" ] && break
			sleep 0.01
		done
		[ -n "$id" ] || fail "the run's environment never appeared (pooled=$pooled)"
		wait "$run" || fail "sbx run failed (pooled=$pooled)"
		pgrep -f "sleep 3607" > /dev/null && fail "a process of the run outlived its return (pooled=$pooled): $(pgrep -af 'sleep 3607')"
		[ -e "$SBX_ROOT/envs/$id" ] && fail "the run's state is still there at its return (pooled=$pooled)"
		assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" "0" "listed after its run"
		[ "$pooled" = 1 ] && want="True started" || want="False started"
		assert_eq "$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["from_pool"], j["stdout"].strip())' "$TMPDIR_TEST/run.json")" "$want"
		sbx gc > /dev/null
		if is_root; then
			ls -d /sys/fs/cgroup/*/sbx/"$id" /sys/fs/cgroup/sbx/"$id" 2> /dev/null | grep -q . && fail "the run's cgroup is left after gc (pooled=$pooled)"
			grep -lxF "$SBX_ROOT/envs/$id" /run/sbx-uidslots/* 2> /dev/null | grep -q . && fail "the run's uid range is still taken after gc (pooled=$pooled)"
		fi
		grep -q "$id" /proc/self/mountinfo && fail "a mount of the run is left after gc (pooled=$pooled)"
	done
	sbx pool rm host > /dev/null
}

# A refiller that lingers after filling (watching for takes) ends when its
# pool is removed: sbx pool rm, which waits for it, does not wait out the
# linger.
t_pool_rm_ends_a_lingering_refiller() {
	SBX_POOL_LINGER_MS=600000 sbx pool set host --size 1 > /dev/null
	ready host 1
	id=$(SBX_POOL_LINGER_MS=600000 sbx create)
	ready host 1
	timeout 20 "$SBX_BIN" pool rm host > /dev/null || fail "sbx pool rm waited for the lingering refiller"
	sbx rm "$id"
	[ -z "$(ls "$SBX_ROOT/envs" | grep -E '^[0-9a-f]{12}$')" ] || fail "environments left: $(ls "$SBX_ROOT/envs")"
}

# Regression: a refiller waiting for a quiet spell after takes (the pool
# still above a quarter) held the pool's lock through sbx pool rm, since the
# configuration going counted as one more take: rm waited out the quiet.
t_pool_rm_ends_a_refiller_waiting_for_quiet() {
	SBX_POOL_LINGER_MS=0 sbx pool set host --size 4 > /dev/null
	ready host 4
	lock=$(ls "$SBX_ROOT"/pools/*.lock)
	for _ in $(seq 200); do
		flock -n "$lock" true && break
		sleep 0.05
	done
	# The take starts a refiller that waits for 10 minutes without a take.
	a=$(SBX_POOL_QUIET_MS=600000 SBX_POOL_LINGER_MS=600000 sbx create)
	for _ in $(seq 200); do
		flock -n "$lock" true || break
		sleep 0.05
	done
	flock -n "$lock" true && fail "no refiller holds the pool's lock"
	timeout 20 "$SBX_BIN" pool rm host > /dev/null || fail "sbx pool rm waited for the refiller's quiet spell"
	sbx rm "$a" > /dev/null
	[ -z "$(ls "$SBX_ROOT/envs" | grep -E '^[0-9a-f]{12}$')" ] || fail "environments left: $(ls "$SBX_ROOT/envs")"
}

# The CLI's own supervisors stay its children (ctx_short_lived), but a
# refiller forked from a CLI that took an entry must detach the supervisors
# of the entries it builds (a double fork): it lingers, and children it never
# reaps would be its zombies.
t_pool_refiller_detaches_its_supervisors() {
	SBX_POOL_LINGER_MS=0 sbx pool set host --size 1 > /dev/null
	ready host 1
	# Its refiller gone (it holds the pool's lock while it lives), the take
	# below forks a new one, which lingers.
	for _ in $(seq 200); do
		flock -n "$(ls "$SBX_ROOT"/pools/*.lock)" true && break
		sleep 0.05
	done
	id=$(SBX_POOL_LINGER_MS=600000 sbx create)
	ready host 1 # refilled by the refiller forked from that create
	n=0
	for d in "$SBX_ROOT"/envs/*/; do
		e=$(basename "$d")
		if [ "$e" = "$id" ] || ! [ -e "$d/state.json" ]; then continue; fi
		sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("supervisor_pid", 0))' "$d/state.json")
		[ "$sup" -gt 0 ] || continue
		ppid=$(awk '/^PPid:/ {print $2}' "/proc/$sup/status")
		comm=$(cat "/proc/$ppid/comm" 2> /dev/null || true)
		case $comm in sbx | sbx-pool-fill) fail "the refilled entry's supervisor $sup is the child of $comm process $ppid" ;; esac
		n=$((n + 1))
	done
	[ "$n" -ge 1 ] || fail "no refilled entry found: $(ls "$SBX_ROOT/envs")"
	timeout 20 "$SBX_BIN" pool rm host > /dev/null || fail "sbx pool rm"
	sbx rm "$id"
}

# A taker that dies after winning an entry (before the entry is handed out)
# leaves nothing that sbx gc does not clean, while the pool still exists.
t_pool_crashed_taker_is_cleaned_by_gc() {
	sbx pool set host --size 1 > /dev/null
	ready host 1
	id=$(ls "$SBX_ROOT"/pools/*.d/)
	rc=0
	SBX_POOL_FAULT=claimed "$SBX_BIN" create > /dev/null 2>&1 || rc=$?
	assert_eq "$rc" "70" "the taker did not die where the test wanted"
	ready host 1 # the refiller replaced it
	SBX_POOL_CLAIM_STALE_S=0 sbx gc > /dev/null
	[ ! -e "$SBX_ROOT/envs/$id" ] || fail "gc left the entry a dead taker had claimed"
	[ ! -e "$SBX_RUN/$id" ] || fail "gc left its run dir"
	sbx pool rm host > /dev/null
}

# A pool set with SBX_POOL_LAYER=tmpfs (root): its entries' writable layer is
# a tmpfs of their own in the host's mount namespace (upper/ and work/ bound
# from it, as a disk quota's are), so removal is an unmount; the pool's
# configuration says so (a take or refill needs no variable). What a snapshot,
# a diff and a fork see is what they see of a cold environment's layer; sbx rm
# and sbx pool rm leave no mount (the harness checks mounts after the test).
t_pool_tmpfs_layer() {
	is_root || skip_ok "a tmpfs writable layer needs root (a mount in the host namespace)"
	SBX_POOL_LAYER=tmpfs sbx pool set host --size 1 > /dev/null
	ready host 1
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["pools"][0]["layer"])')" "tmpfs"
	read -r pid fp <<< "$(sbx create --json | from_pool)"
	assert_eq "$fp" "True"
	assert_eq "$(findmnt -n -o FSTYPE "$SBX_ROOT/envs/$pid/upper")" "tmpfs" "the taken entry's layer is not a tmpfs"
	assert_eq "$(findmnt -n -o FSTYPE "$SBX_ROOT/envs/$pid/work")" "tmpfs"
	cid=$(sbx create --name cold)
	[ -z "$(findmnt -n "$SBX_ROOT/envs/$cid/upper")" ] || fail "a cold environment got a tmpfs layer"
	w='echo data > /root/f; mkdir -p /opt/d; echo x > /opt/d/g; rm -f /etc/hostname; apt-get --version > /dev/null 2>&1 || true'
	sbx exec "$pid" -- sh -c "$w"
	sbx exec "$cid" -- sh -c "$w"
	assert_eq "$(sbx diff "$pid")" "$(sbx diff "$cid")" "diff of a tmpfs layer differs from a cold one's"
	sid=$(sbx snapshot "$pid")
	fid=$(sbx fork "$sid")
	assert_eq "$(sbx exec "$fid" -- cat /root/f /opt/d/g)" "data
x"
	# Restore empties the layer (onto the disk, as a cold environment's).
	sbx exec "$pid" -- sh -c 'echo later > /root/later'
	sbx restore "$pid" "$sid" > /dev/null
	assert_eq "$(sbx exec "$pid" -- sh -c 'cat /root/f; ls /root/later 2>&1 >/dev/null | wc -l')" "data
1"
	sbx rm "$pid" "$cid" "$fid"
	[ -z "$(grep " $SBX_ROOT/envs/$pid" /proc/self/mounts)" ] || fail "sbx rm left the tmpfs mounted"
	ready host 1
	eid=$(ls "$SBX_ROOT"/pools/*.d/)
	assert_eq "$(findmnt -n -o FSTYPE "$SBX_ROOT/envs/$eid/upper")" "tmpfs"
	sbx pool rm host > /dev/null
	[ -z "$(grep " $SBX_ROOT/envs/" /proc/self/mounts)" ] || fail "pool rm left mounts: $(grep " $SBX_ROOT/envs/" /proc/self/mounts)"
}

# files VIEW_ID: a listing of what a fork holds (paths, sizes, modes of the
# trees a snapshot carries), to compare a pooled fork with a cold one.
fork_files() { sbx exec "$1" -- sh -c 'find /root /etc /opt /var /usr/local -xdev -printf "%p %s %m %u\n" 2> /dev/null | sort | md5sum'; }

# A snapshot named by its label, its digest or a prefix of it is one pool
# (its key is the digest's): a pool set by label serves forks by digest,
# prefix and label, through sbx fork and sbx create --snapshot alike; each
# fork holds exactly the snapshot's files (what a cold fork holds), and
# forks are independent of each other and of the environment snapshotted.
# A fork from a snapshot's pool has a cold fork's walls (the same checks
# as t_pool_entry_equals_cold_create, with a snapshot as the source), and
# so does it after an in-place restore to that snapshot.
t_pool_fork_equals_cold_fork() {
	id=$(sbx create --policy dev)
	sbx exec "$id" -- sh -c 'echo base > /root/b'
	sid=$(sbx snapshot "$id")
	sbx pool set "$sid" --size 1 --policy dev > /dev/null
	ready "$sid" 1
	sleep 1 # it waited
	read -r pid fp <<< "$(sbx fork --json "$sid" --policy dev | from_pool)"
	assert_eq "$fp" "True"
	read -r cid fp <<< "$(sbx fork --json "$sid" --policy dev --output-limit 64m | from_pool)"
	assert_eq "$fp" "False"
	view='hostname; grep -E "^(Seccomp|Seccomp_filters|NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb|Uid|Gid):" /proc/self/status; awk "{print \$1, \$3}" /proc/self/uid_map /proc/self/gid_map; ulimit -a; ls /proc/self/ns | wc -l; cat /root/b'
	for round in fork restore; do
		assert_eq "$(sbx exec "$pid" -- sh -c "$view")" "$(sbx exec "$cid" -- sh -c "$view")" "$round: a command's view"
		for k in isolation limits landlock_abi template policy user snapshot_id; do
			a=$(sbx inspect "$pid" | python3 -c 'import json,sys; j=json.load(sys.stdin); v=j.get(sys.argv[1]); [v.pop(k, None) for k in ("uid_map", "egress_log")] if isinstance(v, dict) else None; import re; print(re.sub("[0-9a-f]{12}", "ID", json.dumps(v, sort_keys=True)))' "$k")
			b=$(sbx inspect "$cid" | python3 -c 'import json,sys; j=json.load(sys.stdin); v=j.get(sys.argv[1]); [v.pop(k, None) for k in ("uid_map", "egress_log")] if isinstance(v, dict) else None; import re; print(re.sub("[0-9a-f]{12}", "ID", json.dumps(v, sort_keys=True)))' "$k")
			assert_eq "$a" "$b" "$round: inspect .$k differs"
		done
		sbx restore "$pid" "$sid" > /dev/null
		sbx restore "$cid" "$sid" > /dev/null
	done
	sbx rm "$id" "$pid" "$cid"
	sbx pool rm "$sid" --policy dev > /dev/null
}

t_pool_fork_names_one_pool() {
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo base > /root/b; mkdir -p /opt/tree; echo leaf > /opt/tree/leaf; rm -f /etc/hostname'
	sid=$(sbx snapshot "$id" --label fbase)
	sbx pool set fbase --size 2 > /dev/null
	ready "$sid" 2
	sbx pool set "$sid" --size 2 > /dev/null
	sbx pool set "${sid:7:12}" --size 2 > /dev/null
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" "1" "a label, digest and prefix made different pools"
	ids=""
	for ref in "$sid" "${sid:7:12}" fbase "sha256:${sid:7:10}"; do
		ready "$sid" 2
		read -r fid fp <<< "$(sbx fork --json "$ref" | from_pool)"
		assert_eq "$fp" "True" "sbx fork $ref did not take an entry"
		ids+=" $fid"
	done
	ready "$sid" 2
	read -r cfid fp <<< "$(sbx create --snapshot fbase --json | from_pool)"
	assert_eq "$fp" "True" "sbx create --snapshot did not take an entry"
	read -r cold fp <<< "$(sbx fork --json "$sid" --output-limit 10m | from_pool)"
	assert_eq "$fp" "False"
	# Exactly the snapshot's files (a fork's machine id is its own, as a cold fork's).
	assert_eq "$(sbx diff "$cfid")" "M /etc/machine-id" "a pooled fork differs from its snapshot"
	assert_eq "$(sbx diff "$cold")" "M /etc/machine-id"
	assert_eq "$(sbx exec "$cfid" -- sh -c 'cat /root/b /opt/tree/leaf; ls /etc/hostname 2>&1 > /dev/null | wc -l')" "base
leaf
1"
	assert_eq "$(fork_files "$cfid")" "$(fork_files "$cold")" "a pooled fork's files differ from a cold fork's"
	# Independent: writes in one fork show in no other fork nor in the original.
	set -- $ids
	sbx exec "$1" -- sh -c 'echo one > /root/only1; rm /root/b; echo changed > /opt/tree/leaf'
	sbx exec "$2" -- sh -c 'echo two > /root/only2'
	assert_eq "$(sbx exec "$2" -- sh -c 'cat /root/b /opt/tree/leaf; ls /root')" "base
leaf
b
only2"
	assert_eq "$(sbx exec "$cfid" -- ls /root)" "b"
	assert_eq "$(sbx exec "$id" -- sh -c 'cat /opt/tree/leaf; ls /root')" "leaf
b"
	ready "$sid" 2
	read -r late fp <<< "$(sbx fork --json fbase | from_pool)"
	assert_eq "$fp" "True"
	assert_eq "$(sbx exec "$late" -- sh -c 'cat /opt/tree/leaf; ls /root')" "leaf
b"
	sbx rm "$id" $ids "$cfid" "$cold" "$late"
	sbx pool rm "${sid:7:12}" > /dev/null
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" "0"
}

# A pool holds environments of one snapshot (the digest its name resolved
# to at pool set). A label moved to another snapshot names that snapshot:
# a fork by the label builds it cold (it does not get the old snapshot's
# entries), a fork by the old digest still takes one.
t_pool_fork_after_label_moves() {
	a=$(sbx create)
	sbx exec "$a" -- sh -c 'echo A > /root/which'
	sa=$(sbx snapshot "$a" --label moving)
	sbx pool set moving --size 1 > /dev/null
	ready "$sa" 1
	sbx exec "$a" -- sh -c 'echo B > /root/which'
	sb=$(sbx snapshot "$a" --label moving)
	[ "$sa" != "$sb" ] || fail "the second snapshot has the first one's digest"
	read -r f1 fp <<< "$(sbx fork --json moving | from_pool)"
	assert_eq "$fp" "False" "a fork by a moved label took an entry of the label's old snapshot"
	assert_eq "$(sbx exec "$f1" -- cat /root/which)" "B"
	read -r f2 fp <<< "$(sbx fork --json "$sa" | from_pool)"
	assert_eq "$fp" "True"
	assert_eq "$(sbx exec "$f2" -- cat /root/which)" "A"
	expect_status 125 sbx pool rm moving
	sbx rm "$a" "$f1" "$f2"
	sbx pool rm "$sa" > /dev/null
}

# A snapshot that is gone from the store (its manifest deleted) is not
# forked from its pool either: the fork fails as a cold fork does, by any
# name, and the entries stay hidden until the pool is removed.
t_pool_fork_of_a_deleted_snapshot() {
	a=$(sbx create)
	sbx exec "$a" -- sh -c 'echo A > /root/which'
	sa=$(sbx snapshot "$a" --label gone)
	sbx pool set gone --size 1 > /dev/null
	ready "$sa" 1
	man="$SBX_ROOT/snapshots/sha256/${sa#sha256:}.json"
	[ -f "$man" ] || fail "no manifest at $man"
	mv "$man" "$TMPDIR_TEST/manifest"
	expect_status 125 sbx fork gone
	expect_status 125 sbx fork "$sa"
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" "1" "a fork of a deleted snapshot was handed out"
	mv "$TMPDIR_TEST/manifest" "$man"
	read -r f fp <<< "$(sbx fork --json gone | from_pool)"
	assert_eq "$fp" "True"
	sbx rm "$a" "$f"
	sbx pool rm "$sa" > /dev/null
}

# Options a pool's entries were not built with build cold, so they get what
# a cold create does: a fork naming another template is refused, a device
# is looked up (and refused when no CDI spec has it).
# Variables do not change what an entry is: a create naming some takes one
# and its commands get them over the entry's own (a snapshot's), as a cold
# create's would; they last across an in-place restore and are in the
# state (inspect); the entry refilled after it has none of them. A code
# create and a one-shot run with variables still build cold: the kernel was
# started with the entry's variables, and a one-shot entry is handed out by
# its supervisor.
t_pool_env_given_at_handout() {
	src=$(sbx create --env FROMSNAP=s --env KEEP=old)
	sid=$(sbx snapshot "$src")
	sbx pool set "$sid" --size 1 > /dev/null
	ready "$sid" 1
	read -r pid fp <<< "$(sbx fork --json "$sid" --env KEEP=new --env ADDED='a b' | from_pool)"
	assert_eq "$fp" "True" "a fork with variables did not take an entry"
	read -r cid fp <<< "$(sbx fork --json "$sid" --env KEEP=new --env ADDED='a b' --output-limit 10m | from_pool)"
	assert_eq "$fp" "False"
	view='echo "$FROMSNAP|$KEEP|$ADDED"'
	assert_eq "$(sbx exec "$pid" -- sh -c "$view")" "s|new|a b"
	assert_eq "$(sbx exec "$cid" -- sh -c "$view")" "s|new|a b"
	env_of() { sbx inspect "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["env"])'; }
	assert_eq "$(env_of "$pid")" "$(env_of "$cid")" "the state's variables differ"
	sbx restore "$pid" "$sid" > /dev/null
	assert_eq "$(sbx exec "$pid" -- sh -c "$view")" "s|new|a b" "after a restore in place"
	ready "$sid" 1
	read -r plain fp <<< "$(sbx fork --json "$sid" | from_pool)"
	assert_eq "$fp" "True"
	assert_eq "$(sbx exec "$plain" -- sh -c "$view")" "s|old|" "the refilled entry has the last create's variables"
	sbx rm "$src" "$pid" "$cid" "$plain"
	sbx pool rm "$sid" > /dev/null
	sbx pool set host --size 1 > /dev/null
	ready host 1
	assert_eq "$(sbx run --json --env X=1 -- sh -c 'echo $X' | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["from_pool"], j["stdout"].strip())')" "False 1"
	assert_eq "$(sbx run --json -- true | python3 -c 'import json,sys; print(json.load(sys.stdin)["from_pool"])')" "True"
	sbx pool rm host > /dev/null
}

t_pool_other_options_build_cold() {
	sbx pool set host --size 1 > /dev/null
	ready host 1
	expect_status 125 env SBX_CDI_SPEC_DIRS="$TMPDIR_TEST/no-cdi" "$SBX_BIN" create --device example.com/gpu=0
	assert_contains "$ERR" "example.com/gpu"
	a=$(sbx create --name fsrc)
	sid=$(sbx snapshot "$a")
	sbx pool set "$sid" --size 1 > /dev/null
	ready "$sid" 1
	mkdir -p "$TMPDIR_TEST/tdir"
	expect_status 125 sbx fork "$sid" --template "dir:$TMPDIR_TEST/tdir"
	assert_contains "$ERR" "was taken from template"
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" "1" "an entry was handed out"
	sbx rm "$a"
	sbx pool rm "$sid" > /dev/null
	sbx pool rm host > /dev/null
}

# sbx pool set of a name that is neither a snapshot nor a template (a typo
# of a label) is refused rather than making a pool that never fills.
t_pool_set_unknown_source_is_refused() {
	expect_status 125 sbx pool set no-such-label --size 1
	assert_contains "$ERR" "no-such-label"
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" "0"
	mkdir -p "$TMPDIR_TEST/tdir"
	sbx pool set "dir:$TMPDIR_TEST/tdir" --size 0 > /dev/null
	sbx pool rm "dir:$TMPDIR_TEST/tdir" > /dev/null
	for bad in "" "+3" " 3" "-1" "257" "2x"; do
		expect_status 125 sbx pool set host --size "$bad"
		assert_contains "$ERR" "invalid --size"
	done
	# A dir: template that is no directory would never fill either.
	expect_status 125 sbx pool set dir:/nonexistent --size 1
	assert_contains "$ERR" "is not a directory"
	expect_status 125 sbx pool set dir:/etc/hostname --size 1
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" "0"
	# "host" is the host template's name: no snapshot label may take it
	# (pool set host would have made a pool of that snapshot).
	id=$(sbx create)
	expect_status 125 sbx snapshot "$id" --label host
	assert_contains "$ERR" "not 'host'"
	sbx rm "$id" > /dev/null
	expect_status 125 sbx pool rm host
	assert_contains "$ERR" "sbx pool ls"
}

# The C API: sbx_env_create with opts.snapshot takes an entry too (by label
# and by digest), and says so (sbx_env_from_pool); as root, then as an
# unprivileged user (its own store).
t_pool_fork_c_api() {
	lib="$(dirname "$SBX_BIN")/../lib/libsbx.a"
	[ -f "$lib" ] && [ -f "$SBX_SRC/include/sbx.h" ] || skip_ok "no libsbx.a or sbx.h here (the rootless copy: the root run of this test runs it as an unprivileged user too)"
	cat > "$TMPDIR_TEST/cfork.c" << 'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sbx.h"
int main(int argc, char **argv)
{
	sbx_ctx *ctx = NULL;
	sbx_err *e = NULL;
	if (sbx_ctx_open(&ctx, &e) < 0)
		return fprintf(stderr, "%s\n", sbx_err_message(e)), 1;
	for (int i = 1; i < argc; i++) {
		sbx_create_opts o = SBX_CREATE_OPTS_INIT;
		o.snapshot = argv[i];
		char *id = NULL;
		if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
			return fprintf(stderr, "%s\n", sbx_err_message(e)), 1;
		char *data = NULL;
		size_t len = 0;
		if (sbx_env_read_file(ctx, id, "/root/b", 0, &data, &len, NULL, NULL, &e) < 0)
			return fprintf(stderr, "%s\n", sbx_err_message(e)), 1;
		/* What it was made from, as recorded (sbx_env_origin): the
		 * snapshot the reference names, and the pool. */
		char *snap = NULL, *want = NULL;
		bool pooled = false;
		if (sbx_env_origin(ctx, id, &snap, &pooled, &e) < 0 || sbx_snapshot_resolve(ctx, argv[i], &want, &e) < 0)
			return fprintf(stderr, "%s\n", sbx_err_message(e)), 1;
		printf("%d %d %d %.*s", sbx_env_from_pool(ctx, id), pooled, snap && want && strcmp(snap, want) == 0,
		       (int)len, data);
		free(snap);
		free(want);
		free(data);
		(void)sbx_env_remove(ctx, id, NULL);
		free(id);
	}
	sbx_ctx_free(ctx);
	return 0;
}
C
	san="" # an ASan+UBSan build's library (make asan) links with its runtimes
	grep -q __asan_init "$lib" && san="-fsanitize=address,undefined"
	# shellcheck disable=SC2086
	cc -std=gnu11 $san -I"$SBX_SRC/include" -o "$TMPDIR_TEST/cfork" "$TMPDIR_TEST/cfork.c" "$lib" \
		-lseccomp -ljansson -lyaml -lcrypto -lz -lzstd -lm -lbpf -lelf || fail "cfork did not build"
	cf() { # STORE-ENV...: a snapshot labelled cbase, its pool, then forks through the C API
		local s="$1" sid
		shift
		"$@" sh -c "id=\$(\"\$SBX_BIN\" create) && \"\$SBX_BIN\" exec \$id -- sh -c 'echo base > /root/b' &&
			sid=\$(\"\$SBX_BIN\" snapshot \$id --label cbase) && \"\$SBX_BIN\" rm \$id > /dev/null &&
			\"\$SBX_BIN\" pool set cbase --size 1 > /dev/null && echo \$sid" > "$s/sid" || fail "setup failed"
		sid=$(cat "$s/sid")
		for ref in cbase "$sid"; do
			for _ in $(seq 300); do
				"$@" sh -c '"$SBX_BIN" pool ls --json' | grep -q '"ready": 1' && break
				sleep 0.05
			done
			"$@" "$TMPDIR_TEST/cfork" "$ref"
		done
		"$@" sh -c '"$SBX_BIN" pool rm cbase > /dev/null; "$SBX_BIN" gc > /dev/null'
	}
	assert_eq "$(cf "$TMPDIR_TEST" env SBX_BIN="$SBX_BIN")" "1 1 1 base
1 1 1 base"
	is_root || return 0
	chmod 755 "$TMPDIR_TEST"
	chmod a+rx "$TMPDIR_TEST/cfork"
	w="$TMPDIR_TEST/rl-store"
	mkdir -p "$w"
	chmod 1777 "$w"
	assert_eq "$(cf "$w" as_user env SBX_ROOT="$w/root" SBX_RUN="$w/run" HOME=/tmp)" "1 1 1 base
1 1 1 base" "rootless"
}

# MCP environment_create {snapshot}: by label, digest and prefix, from the
# same pool, each with the snapshot's files.
t_pool_fork_mcp() {
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo base > /root/b'
	sid=$(sbx snapshot "$id" --label mbase)
	sbx rm "$id"
	sbx pool set mbase --size 1 > /dev/null
	out=$(PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$SBX_BIN" "$sid" << 'PY'
import sys, time
from mcp_client import Client
cl = Client(sys.argv[1])
call = lambda name, args: cl.call(name, args)[1]
sid = sys.argv[2]
for ref in ["mbase", sid, sid[7:19]]:
    for _ in range(300):
        if sum(q["ready"] for q in call("pool_list", {})["pools"]) == 1:
            break
        time.sleep(0.05)
    c = call("environment_create", {"snapshot": ref})
    r = call("environment_execute", {"environment_id": c["environment_id"], "command": "cat /root/b"})
    print(c["from_pool"], c["snapshot_id"] == sid, r["stdout"].strip())
    call("environment_destroy", {"environment_id": c["environment_id"]})
PY
)
	assert_eq "$out" "True True base
True True base
True True base"
	sbx pool rm "$sid" > /dev/null
}

# A server that keeps itself warm (docs/warm.md): `sbx mcp` gets a pool of
# what its client creates often, owned by it, and removes it at exit; a
# pool a user set is left alone; --warm 0 turns it off.
warm_session() {
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$SBX_BIN" "$@" << 'PY'
import json, os, signal, subprocess, sys, time
from mcp_client import Client
sbx, mode = sys.argv[1], sys.argv[2]
c = Client(sbx)
if mode == "off":
    c.close()
    c.p = subprocess.Popen([sbx, "mcp", "--warm", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    c._send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
             "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    c.p.stdout.readline()
def cycle():
    _, r = c.call("environment_create", {})
    c.call("environment_destroy", {"environment_id": r["environment_id"]})
    return r["from_pool"]
for _ in range(8):
    cycle()
def pools():
    return c.call("pool_list", {})[1]["pools"]
deadline = time.time() + 30
while time.time() < deadline and mode != "off":
    p = [q for q in pools() if q["source"] == "host"]
    if p and p[0]["ready"] >= 1:
        break
    time.sleep(0.1)
if mode == "off":
    time.sleep(2)
p = [q for q in pools() if q["source"] == "host"]
owner = p[0].get("owner") if p else None
print("pools", len(p), "owned", bool(owner) and owner["pid"] == c.p.pid,
      "size", p[0]["size"] if p else 0)
if mode == "on":
    print("from_pool", any(cycle() for _ in range(10)))
if mode == "kill":
    os.kill(c.p.pid, signal.SIGKILL)
    c.p.wait()
    sys.exit(0)
if mode == "term":
    # SIGTERM, and again and again while it cleans up (as `timeout` sends
    # it twice, and a user presses Ctrl-C twice): it still ends cleanly.
    while c.p.poll() is None:
        try:
            os.kill(c.p.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
        time.sleep(0.002)
    print("exit", c.p.wait())
    sys.exit(0)
c.close()
PY
}

t_pool_server_keeps_itself_warm() {
	out=$(warm_session on)
	assert_contains "$out" "pools 1 owned True"
	assert_contains "$out" "from_pool True"
	# The server's exit removed its pool and every ready entry (the last
	# destroys of its reaper may finish just after it: rootless, CI saw two
	# directories that were gone a moment later).
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" "0"
	no_envs() { [ "$(find "$SBX_ROOT/envs" -mindepth 1 -maxdepth 1 | wc -l)" = 0 ]; }
	eventually 10 no_envs || fail "environments left: $(ls "$SBX_ROOT/envs")"
	# Killed, it leaves an owned pool whose refiller (watching its owner)
	# removes it with its entries, without waiting for sbx gc.
	out=$(warm_session kill)
	assert_contains "$out" "pools 1 owned True"
	no_pool() { [ "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" = 0 ]; }
	eventually 30 no_pool || fail "a killed server's pool stays: $(sbx pool ls)"
	# (A destroy the killed server's reaper had begun is left stopped, as
	# before the warm set: sbx gc's.)
	sbx gc > /dev/null
	assert_eq "$(find "$SBX_ROOT/envs" -mindepth 1 -maxdepth 1 | wc -l)" "0" "environments left: $(ls "$SBX_ROOT/envs")"
}

# A stop signal ends the server; more of them while it removes its warm
# set's pools do not kill it half-way (CI's `timeout` sends SIGTERM to the
# server and then to its process group: sbx serve died of the second, 143).
t_pool_server_stops_cleanly_under_repeated_signals() {
	out=$(warm_session term)
	assert_contains "$out" "pools 1 owned True"
	assert_contains "$out" "exit 0"
	assert_eq "$(sbx pool ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["pools"]))')" "0" \
		"the pools of a server stopped by signals"
}

t_pool_server_warm_leaves_a_users_pool_and_turns_off() {
	sbx pool set host --size 1 > /dev/null
	ready host 1
	out=$(warm_session on)
	assert_contains "$out" "pools 1 owned False size 1"
	ready host 1 # still the user's, as set
	sbx pool rm host > /dev/null
	out=$(warm_session off)
	assert_contains "$out" "pools 0"
	sbx mcp --warm x < /dev/null 2> "$TMPDIR_TEST/err" && fail "--warm x accepted"
	assert_contains "$(cat "$TMPDIR_TEST/err")" "invalid --warm 'x'"
	sbx mcp --warm-memory lots < /dev/null 2> "$TMPDIR_TEST/err" && fail "--warm-memory lots accepted"
	true
}
