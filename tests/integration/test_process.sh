# Background processes (docs/processes.md): sbx exec -d, sbx ps, sbx kill,
# the MCP tools environment_execute background / environment_process_*.
# Runs as root and, through test_rootless.sh, as an unprivileged user.

proc_field() { # ID PROC FIELD: one field of the process's record
	sbx ps --json "$1" "$2" | python3 -c "import json,sys; v=json.load(sys.stdin).get('$3'); print('null' if v is None else str(v).lower() if isinstance(v, bool) else v)"
}

t_process_outlives_its_client() {
	id=$(sbx create)
	# A server in the background; exec -d returns at once with its id.
	start=$(date +%s%N)
	p=$(sbx exec -d "$id" -- sh -c 'echo ready; exec sleep 300')
	ms=$((($(date +%s%N) - start) / 1000000))
	[[ "$p" =~ ^p[0-9]+$ ]] || fail "exec -d printed '$p', not a process id"
	[ "$ms" -lt 10000 ] || fail "exec -d took $ms ms"
	# A second client (a new sbx process) sees it running.
	sleep 0.5
	assert_eq "$(proc_field "$id" "$p" state)" "running"
	out=$(sbx ps "$id")
	assert_contains "$out" "sleep 300"
	assert_contains "$out" "$p "
	sbx ps --json "$id" | python3 -c "import json,sys; d=json.load(sys.stdin); assert any(b['process_id']=='$p' and b['state']=='running' for b in d['background']), d"
	assert_eq "$(sbx ps "$id" "$p" --output)" "ready"
	# Still the same process a moment later: nobody killed it when exec -d ended.
	pid=$(proc_field "$id" "$p" pid)
	sbx exec "$id" -- kill -0 "$pid" || fail "process $pid is gone"
	# Ids are unique within the environment.
	p2=$(sbx exec -d "$id" -- true)
	[ "$p2" != "$p" ] || fail "two processes got id $p"
	sbx rm "$id"
}

t_process_kill_and_wait() {
	id=$(sbx create)
	p=$(sbx exec -d "$id" -- sleep 300)
	# wait with a timeout while it runs: still running (exit status 1)
	expect_status 1 sbx ps "$id" "$p" --wait 300ms
	assert_contains "$OUT" "state:       running"
	sbx kill "$id" "$p"
	expect_status 0 sbx ps "$id" "$p" --wait 10s
	assert_contains "$OUT" "signal 15"
	assert_eq "$(proc_field "$id" "$p" signal)" "15"
	assert_eq "$(proc_field "$id" "$p" exit_code)" "null"
	# another signal by name
	p=$(sbx exec -d "$id" -- sleep 300)
	sbx kill "$id" "$p" KILL
	sbx ps "$id" "$p" --wait 10s > /dev/null
	assert_eq "$(proc_field "$id" "$p" signal)" "9"
	# killing an exited one is no error, and says so
	expect_status 0 sbx kill "$id" "$p"
	assert_contains "$ERR" "already exited"
	# an exit status
	p=$(sbx exec -d "$id" -- sh -c 'exit 7')
	sbx ps "$id" "$p" --wait 10s > /dev/null
	assert_eq "$(proc_field "$id" "$p" exit_code)" "7"
	assert_eq "$(proc_field "$id" "$p" state)" "exited"
	# refusals
	expect_status 125 sbx kill "$id" "$p" NOSUCHSIG
	expect_status 125 sbx kill "$id" p999
	assert_contains "$ERR" "not found"
	expect_status 125 sbx kill "$id" ../../etc
	assert_contains "$ERR" "invalid process id"
	expect_status 125 sbx exec -d -t "$id" -- true
	sbx rm "$id"
}

# A process's own timeout applies; the environment's default does not.
t_process_timeouts() {
	id=$(sbx create --timeout 1s)
	p=$(sbx exec -d "$id" -- sleep 3)
	p2=$(sbx exec -d --timeout 500ms "$id" -- sleep 30)
	sbx ps "$id" "$p2" --wait 10s > /dev/null
	assert_eq "$(proc_field "$id" "$p2" timed_out)" "true"
	assert_eq "$(proc_field "$id" "$p2" signal)" "9"
	sbx ps "$id" "$p" --wait 10s > /dev/null
	assert_eq "$(proc_field "$id" "$p" exit_code)" "0" "the environment's 1 s default killed a background process"
	sbx rm "$id"
}

# Output read incrementally by offsets, over MCP; the cap flagged without
# holding the process up; wrong-typed arguments refused.
t_process_mcp_output_offsets_and_cap() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	out=$(PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$SBX_BIN" <<'PY'
import json, sys, time
from mcp_client import Client
cl = Client(sys.argv[1])
call = cl.call
_, c = call("environment_create", {"limits": {"output_bytes": 4096}})
env = c["environment_id"]
bad, r = call("environment_execute", {"environment_id": env, "background": True,
              "command": "for i in 1 2 3 4 5; do echo line$i; sleep 0.4; done; echo oops >&2; exit 4"})
print("start", bad, r.get("process_id"), "exit_code" in r)
p = r["process_id"]
bad, l = call("environment_process_list", {"environment_id": env})
print("list", bad, [x["process_id"] for x in l["processes"]] == [p], l["processes"][0]["state"])
seen, off, chunks = "", 0, 0
deadline = time.time() + 20
while time.time() < deadline:
    bad, o = call("environment_process_output", {"environment_id": env, "process_id": p, "stdout_offset": off})
    if o["stdout"]:
        chunks += 1
    seen += o["stdout"]
    assert o["stdout_offset"] == off + len(o["stdout"].encode()), o
    off = o["stdout_offset"]
    if o["exited"] and not o["stdout_more"]:
        break
    time.sleep(0.15)
print("incremental", seen == "".join(f"line{i}\n" for i in range(1, 6)), chunks >= 3, o["stderr"], o["exit_code"])
# bounded: max_bytes 3 gives 3 bytes and the next offset
bad, o = call("environment_process_output", {"environment_id": env, "process_id": p, "max_bytes": 3, "stdout_offset": 2})
print("bounded", o["stdout"], o["stdout_offset"], o["stdout_more"])
# wait: a running one times out as running, then the exit status
bad, r = call("environment_execute", {"environment_id": env, "background": True, "argv": ["sleep", "300"]})
q = r["process_id"]
bad, w = call("environment_process_wait", {"environment_id": env, "process_id": q, "timeout_ms": 300})
print("wait-running", bad, w["state"], w["waited_ms"] >= 250)
bad, k = call("environment_process_kill", {"environment_id": env, "process_id": q, "signal": "INT"})
print("kill", bad, k["delivered"], k["signal"])
bad, w = call("environment_process_wait", {"environment_id": env, "process_id": q, "timeout_ms": 10000})
print("wait-exited", bad, w["state"], w["signal"])
bad, w = call("environment_process_wait", {"environment_id": env, "process_id": p, "timeout_ms": 10000})
print("wait-status", w["state"], w["exit_code"])
# the cap: 64 MiB printed, 4096 kept, flagged; the process ran to its end
bad, r = call("environment_execute", {"environment_id": env, "background": True,
              "command": "head -c 67108864 /dev/zero | tr '\\0' y; echo end >&2"})
bad, w = call("environment_process_wait", {"environment_id": env, "process_id": r["process_id"], "timeout_ms": 60000})
print("cap", w["state"], w["exit_code"], w["stdout_bytes"], w["stdout_truncated"], w["stderr_truncated"])
bad, o = call("environment_process_output", {"environment_id": env, "process_id": r["process_id"]})
print("cap-output", len(o["stdout"]), o["stderr"].strip(), o["stdout_truncated"])
# wrong types and bad ids are refused before anything runs (by the schema)
for name, args in (("environment_process_output", {"environment_id": env, "process_id": p, "stdout_offset": "0"}),
                   ("environment_process_output", {"environment_id": env, "process_id": p, "max_bytes": 1 << 30}),
                   ("environment_process_kill", {"environment_id": env, "process_id": p, "signal": True}),
                   ("environment_process_kill", {"environment_id": env, "process_id": "../x"}),
                   ("environment_process_wait", {"environment_id": env, "process_id": 1}),
                   ("environment_process_wait", {"environment_id": env, "process_id": p, "timeout_ms": -5}),
                   ("environment_execute", {"environment_id": env, "command": "true", "background": "yes"})):
    bad, e = call(name, args)
    print("refused", name, bad, e.get("error", {}).get("code"))
bad, e = call("environment_process_kill", {"environment_id": env, "process_id": p, "signal": "BOGUS"})
print("bad-signal", bad, e.get("error", {}).get("code"))
bad, e = call("environment_process_wait", {"environment_id": env, "process_id": "p4242"})
print("missing", bad, e.get("error", {}).get("code"))
bad, l = call("environment_process_list", {"environment_id": env})
print("count", len(l["processes"]))
call("environment_destroy", {"environment_id": env})
PY
)
	echo "$out"
	assert_contains "$out" "start False p1 False"
	assert_contains "$out" "list False True running"
	assert_contains "$out" "incremental True True oops"
	assert_contains "$out" "bounded ne1 5 True"
	assert_contains "$out" "wait-running False running True"
	assert_contains "$out" "kill False True 2"
	assert_contains "$out" "wait-exited False exited 2"
	assert_contains "$out" "wait-status exited 4"
	assert_contains "$out" "cap exited 0 4096 True False"
	assert_contains "$out" "cap-output 4096 end True"
	[ "$(echo "$out" | grep -c 'refused .* True invalid_argument')" = 7 ] || fail "not every malformed call was refused"
	assert_contains "$out" "bad-signal True invalid_argument"
	assert_contains "$out" "missing True not_found"
	assert_contains "$out" "count 3" # nothing was started by a refused call
}

# Destroying an environment with running background processes leaves no
# process, cgroup, mount or record; their output files go with it.
t_process_destroy_leaves_nothing() {
	id=$(sbx create)
	# Durations of our own: the check below looks at the whole host, where
	# another session may run a `sleep 300` of its own.
	n=$((3000000 + RANDOM * 2))
	p=$(sbx exec -d "$id" -- sh -c "sleep $n & sleep $((n + 1))")
	p2=$(sbx exec -d "$id" -- sh -c 'while :; do echo tick; sleep 0.1; done')
	# Both running before the removal, or the check below proves nothing.
	eventually 20 host_has_process "sleep $((n + 1))\$" || fail "the background process never ran"
	eventually 20 ps_shows "$id" "echo tick" || fail "the second background process never ran"
	[ -d "$SBX_RUN/$id/procs/$p" ] || fail "no record directory"
	sbx rm "$id"
	for _ in $(seq 50); do [ -e "$SBX_RUN/$id" ] || break; sleep 0.1; done
	[ ! -e "$SBX_RUN/$id/procs" ] || fail "process records left after rm"
	! pgrep -f "sleep ($n|$((n + 1)))\$" > /dev/null ||
		fail "a background process survived rm: $(pgrep -fa "sleep ($n|$((n + 1)))\$")"
	check_clean "$TMPDIR_TEST"
}

# Restore ends the processes (records say so); a restarted supervisor goes
# on numbering after the old ids.
t_process_restore_ends_them() {
	id=$(sbx create)
	s=$(sbx snapshot "$id")
	p=$(sbx exec -d "$id" -- sleep 300)
	sbx restore "$id" "$s" > /dev/null
	assert_eq "$(proc_field "$id" "$p" state)" "exited"
	assert_eq "$(proc_field "$id" "$p" end_reason)" "environment_stopped"
	p2=$(sbx exec -d "$id" -- true)
	[ "${p2#p}" -gt "${p#p}" ] || fail "id $p2 reused after a restart (had $p)"
	sbx rm "$id"
}

# Pause freezes background processes too: a counter stands still.
t_process_paused_with_the_environment() {
	id=$(sbx create)
	p=$(sbx exec -d "$id" -- sh -c 'i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done')
	sleep 0.5
	sbx pause "$id" > /dev/null
	a=$(proc_field "$id" "$p" stdout_bytes)
	sleep 0.6
	b=$(proc_field "$id" "$p" stdout_bytes)
	assert_eq "$b" "$a" "the background process ran while paused"
	assert_eq "$(proc_field "$id" "$p" state)" "running"
	sbx resume "$id" > /dev/null
	sleep 0.5
	c=$(proc_field "$id" "$p" stdout_bytes)
	[ "$c" -gt "$b" ] || fail "it did not go on after resume ($b -> $c)"
	sbx rm "$id"
}

# A background process is confined as a foreground one is: same user, same
# seccomp mode, same capabilities, under the strict policy.
t_process_strict_policy_confined() {
	id=$(sbx create --policy strict)
	fg=$(sbx exec "$id" -- sh -c 'id -u; grep -E "^(Seccomp|CapEff|NoNewPrivs):" /proc/self/status')
	p=$(sbx exec -d "$id" -- sh -c 'id -u; grep -E "^(Seccomp|CapEff|NoNewPrivs):" /proc/self/status')
	sbx ps "$id" "$p" --wait 10s > /dev/null
	bg=$(sbx ps "$id" "$p" --output)
	echo "foreground: $fg"
	echo "background: $bg"
	assert_eq "$bg" "$fg"
	assert_contains "$bg" "Seccomp:	2"
	# (rootless, strict's user cannot be mapped: root without capabilities, both ways)
	! is_root || [ "$(echo "$bg" | head -1)" != 0 ] || fail "strict runs commands as a non-root user, the background one ran as root"
	assert_contains "$bg" "CapEff:	0000000000000000"
	sbx rm "$id"
}

# A running background process keeps the environment from idle-suspending;
# once it has exited, the environment suspends and the record stays.
t_process_keeps_idle_suspend_off() {
	id=$(sbx create --idle-suspend 700ms)
	p=$(sbx exec -d "$id" -- sleep 2)
	sleep 1.4
	[ ! -e "$SBX_ROOT/envs/$id/suspended" ] || fail "suspended while a background process ran"
	assert_eq "$(proc_field "$id" "$p" state)" "running"
	for _ in $(seq 100); do [ -e "$SBX_ROOT/envs/$id/suspended" ] && break; sleep 0.05; done
	[ -e "$SBX_ROOT/envs/$id/suspended" ] || fail "not suspended after the process exited"
	assert_eq "$(proc_field "$id" "$p" exit_code)" "0"
	sbx rm "$id"
}

# A command that exits while a child it left behind goes on writing to the
# same pipe: its record is written and the supervisor stays responsive.
t_process_exit_with_a_writing_child() {
	id=$(sbx create)
	p=$(sbx exec -d "$id" -- sh -c 'yes & sleep 0.2; exit 3')
	expect_status 0 sbx ps "$id" "$p" --wait 20s
	assert_eq "$(proc_field "$id" "$p" exit_code)" "3"
	assert_eq "$(sbx exec "$id" -- echo alive)" "alive"
	sbx rm "$id"
}
