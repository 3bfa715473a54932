# Limits: memory, pids, CPU, output; one environment's bomb does not starve another.

need_cgroups() { is_root || skip_ok "cgroup limits need root or a delegated cgroup (rootless: reported as missing)"; }

t_memory_limit_reports_oom() {
	need_cgroups
	id=$(sbx create --memory 64m)
	out=$(sbx exec --json "$id" -- python3 -c 'b = bytearray(300 * 1024 * 1024); print(len(b))' || true)
	python3 -c "import json,sys; r=json.loads(sys.argv[1]); assert r['oom_killed'] is True and r['exit_code'] is None and r['signal']==9, r" "$out"
	expect_status 137 sbx exec "$id" -- python3 -c 'b = bytearray(300 * 1024 * 1024)'
	assert_contains "$ERR" "out of memory"
	assert_eq "$(sbx exec "$id" -- echo still-usable)" "still-usable"
	sbx rm "$id"
}

t_pids_limit_fork_fails_inside() {
	need_cgroups
	id=$(sbx create --pids 20)
	out=$(sbx exec "$id" -- python3 -c '
import os, time
kids, err = [], None
for i in range(60):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno; break
    if pid == 0:
        time.sleep(3); os._exit(0)
    kids.append(pid)
print("forked", len(kids), "errno", err)
for k in kids: os.kill(k, 9)
for k in kids: os.waitpid(k, 0)
')
	assert_contains "$out" "errno 11"
	assert_eq "$(sbx exec "$id" -- echo usable)" "usable"
	sbx rm "$id"
}

t_fork_bomb_does_not_starve_others() {
	need_cgroups
	a=$(sbx create --pids 64 --cpus 0.5)
	b=$(sbx create)
	# A classic fork bomb, bounded by the pid limit and killed by the timeout.
	"$SBX_BIN" exec --timeout 4s "$a" -- sh -c 'bomb() { bomb | bomb & }; bomb' > /dev/null 2>&1 &
	sleep 1
	start=$(date +%s%N)
	assert_eq "$(sbx exec "$b" -- echo responsive)" "responsive"
	ms=$((($(date +%s%N) - start) / 1000000))
	[ $ms -lt 2000 ] || fail "other environment took ${ms} ms to answer during a fork bomb"
	wait || true
	sbx rm "$a" "$b"
}

t_memory_bomb_does_not_starve_others() {
	need_cgroups
	a=$(sbx create --memory 128m)
	b=$(sbx create)
	"$SBX_BIN" exec --timeout 5s "$a" -- python3 -c '
x = []
while True: x.append(bytearray(16 * 1024 * 1024))' > /dev/null 2>&1 &
	sleep 0.5
	assert_eq "$(sbx exec "$b" -- echo responsive)" "responsive"
	wait || true
	sbx rm "$a" "$b"
}

t_limits_shown_in_inspect() {
	need_cgroups
	id=$(sbx create --memory 100m --pids 50 --cpus 1.5)
	sbx inspect "$id" | python3 -c "
import json,sys
i=json.load(sys.stdin); l=i['limits']
assert l['memory_bytes']==100*1024*1024 and l['pids']==50 and l['cpus']==1.5, l
assert i['usage']['pids'] >= 1, i['usage']
assert i['isolation']['missing']==[], i['isolation']
"
	sbx rm "$id"
}

t_cpu_limit_enforced() {
	need_cgroups
	id=$(sbx create --cpus 0.2)
	out=$(sbx exec "$id" -- python3 -c '
import time, os
s = time.time(); c0 = os.times()
while time.time() - s < 1.0: pass
c1 = os.times()
print(round((c1.user + c1.system - c0.user - c0.system) / (time.time() - s), 2))')
	python3 -c "import sys; v=float(sys.argv[1]); assert v < 0.45, v" "$out" || fail "CPU share $out above the 0.2 limit"
	sbx rm "$id"
}
