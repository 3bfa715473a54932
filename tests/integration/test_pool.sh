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
	sbx rm "$id" "$id2" "$id3"
	sbx pool rm host > /dev/null
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
	read -r cid fp <<< "$(sbx create --json --policy dev --env X=1 | from_pool)"
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
