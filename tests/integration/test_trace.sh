# Traces and replay: recording, viewing, determinism, replay verdicts.

jget() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[int(k)] if isinstance(d, list) else d[k]
print(d if not isinstance(d,(dict,list)) else json.dumps(d))' "$1"; }

t_trace_records_known_calls() {
	ID=$(sbx create)
	out=$(sbx exec --json --trace "$ID" -- sh -c 'cat /nonexistent-sbx-trace 2>/dev/null; echo hi > /root/f; exit 3' || true)
	tid=$(echo "$out" | jget trace_id)
	[[ "$tid" == sha256:* ]] || fail "no trace_id in $out"
	assert_eq "$(echo "$out" | jget exit_code)" 3
	show=$(sbx trace show "$tid")
	# The failed open of a known path, with its errno, in the right process.
	echo "$show" | grep -E 'open(at)?\(.*"/nonexistent-sbx-trace".*ENOENT' > /dev/null ||
		fail "the failed open is missing: $(echo "$show" | grep -n nonexistent | head)"
	echo "$show" | grep -E 'openat\(.*"/root/f", .*O_CREAT' > /dev/null || fail "the write of /root/f is missing"
	echo "$show" | grep -E '\+\+\+ exec .*cat' > /dev/null || fail "the exec of cat is missing"
	echo "$show" | grep -E 'exit_group\(3\)' > /dev/null || fail "exit_group(3) is missing"
	# Nothing of the runtime's own processes (init is pid 1 inside).
	echo "$show" | grep -E '^ *[0-9.]+ \[1\]' && fail "init's syscalls leaked into the trace"
	# Filters.
	only=$(sbx trace show "$tid" --syscall openat)
	echo "$only" | grep -vE '\+\+\+|!!!|~~~' | grep -vq 'openat(' && fail "the syscall filter let other calls through"
	# stats and JSON agree on the openat count.
	n_show=$(echo "$show" | grep -c ' openat(' || true)
	n_stats=$(sbx trace stats --json "$tid" | python3 -c '
import json,sys; s=json.load(sys.stdin)
print(sum(x["count"] for x in s["syscalls"] if x["name"]=="openat"))')
	assert_eq "$n_stats" "$n_show" "openat count in stats vs show"
	sbx trace stats "$tid" | grep -q "/root/f" || fail "stats does not list /root/f as written"
	# Chrome export parses and has complete events.
	sbx trace export "$tid" --format chrome -o "$TMPDIR_TEST/t.json"
	python3 - "$TMPDIR_TEST/t.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert any(e.get("ph") == "X" and e.get("name") == "openat" for e in ev), "no X openat"
assert any(e.get("ph") == "M" for e in ev), "no metadata"
PY
	# The manifest names the snapshot it started from, and ls lists it.
	snap=$(sbx trace inspect "$tid" | jget snapshot_id)
	sbx snapshots | grep -q "${snap:7:12}" || fail "the trace's snapshot $snap is not in the store"
	sbx trace ls | grep -q "${tid:0:19}" || fail "trace ls does not list $tid"
	sbx rm "$ID"
}

t_trace_lost_events_are_zero_and_reported() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'for i in $(seq 1 300); do cat /etc/hostname > /dev/null; done' | jget trace_id)
	lost=$(sbx trace inspect "$tid" | jget events.lost)
	assert_eq "$lost" 0 "lost events for a modest workload"
	n=$(sbx trace stats --json "$tid" | python3 -c '
import json,sys; s=json.load(sys.stdin)
print(sum(1 for e in s["execs"] if "cat" in e["filename"]))')
	assert_eq "$n" 300 "every exec of cat is in the trace"
	sbx rm "$ID"
}

t_replay_deterministic_programs_match() {
	ID=$(sbx create)
	prog='import random, time, os, uuid, tempfile, socket
print(random.random(), time.time(), time.monotonic() > 0, os.urandom(8).hex(), uuid.uuid4())
print(hash("abc"), {"x", "y", "zz", "w"}, os.getpid(), socket.gethostname())
f = tempfile.NamedTemporaryFile(dir="/root", delete=False); f.write(b"x"); f.close(); print(f.name)
'
	out=$(sbx exec --json --trace "$ID" -- python3 -c "$prog")
	tid=$(echo "$out" | jget trace_id)
	r=$(sbx replay --json "$tid") || fail "replay diverged: $r"
	assert_eq "$(echo "$r" | jget verdict)" match
	# The trace says whether a program could read the CPU's generator: as the
	# CPU says (rdrand is never hidden yet, docs/trace.md).
	want=$(grep -qw -e rdrand -e rdseed /proc/cpuinfo && echo True || echo False)
	assert_eq "$(sbx trace inspect "$tid" | jget determinism.rdrand_visible)" "$want"
	# The shell's date and $RANDOM too, and a C program's raw syscalls (the probe is static).
	tid2=$(sbx exec --json --trace "$ID" -- sh -c 'date +%s.%N; echo $$ $RANDOM; od -An -N8 -tx1 /dev/urandom; ls -la /root | head -3' | jget trace_id)
	expect_status 0 sbx replay "$tid2"
	assert_contains "$OUT" MATCH
	sbx rm "$ID"
}

# The procfs files of time, randomness and load are virtual: a recording
# that reads them replays MATCH while the host's uptime, load and UUIDs move
# on, and the values look like the kernel's (uptime rising with virtual time,
# a new v4 UUID per open, one boot_id per run).
t_replay_procfs_matches() {
	ID=$(sbx create)
	out=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/uptime; cat /proc/sys/kernel/random/uuid
cat /proc/sys/kernel/random/uuid; cat /proc/sys/kernel/random/boot_id; cat /proc/sys/kernel/random/boot_id
python3 -c "print(open(\"/proc/uptime\").read(), end=\"\")"
python3 -c "import time; a = open(\"/proc/uptime\").read(); time.sleep(0.05); print(a.split()[0], open(\"/proc/uptime\").read().split()[0])"
cat /proc/loadavg; grep ^btime /proc/stat')
	tid=$(echo "$out" | jget trace_id)
	echo "$out" | jget stdout > "$TMPDIR_TEST/procfs.out"
	python3 - "$TMPDIR_TEST/procfs.out" <<'PY' || fail "procfs values: $(cat "$TMPDIR_TEST/procfs.out")"
import re, sys
l = open(sys.argv[1]).read().split("\n")
v4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
up = re.compile(r"^\d+\.\d\d \d+\.\d\d$")
assert up.match(l[0]) and float(l[0].split()[0]) < 1001, l[0]
assert v4.match(l[1]) and v4.match(l[2]) and l[1] != l[2], l[1:3]
assert v4.match(l[3]) and l[3] == l[4] and l[3] not in (l[1], l[2]), l[3:5]
assert up.match(l[5]), l[5]
a, b = map(float, l[6].split())
assert b >= a + 0.05, l[6]
assert re.match(r"^\d+\.\d\d \d+\.\d\d \d+\.\d\d \d+/\d+ \d+$", l[7]), l[7]
assert re.match(r"^btime \d+$", l[8]), l[8]
PY
	r=$(sbx replay --json "$tid") || fail "replay of procfs readers diverged: $r"
	assert_eq "$(echo "$r" | jget verdict)" match
	# Each answered open is in the trace, with what the program was given.
	n=$(sbx trace show --json "$tid" | python3 -c '
import json, sys
print(sum(1 for e in json.load(sys.stdin)["events"] if e["type"] == "determ" and e["kind"] == "procfs"))')
	assert_eq "$n" 10 "procfs records (uptime 4, uuid 2, boot_id 2, loadavg, stat)"
	n=$(sbx trace show "$tid" | grep -c 'openat answered by determinism engine: /proc/uptime ~~~' || true)
	assert_eq "$n" 4 "show's lines for the opens of /proc/uptime"
	sbx rm "$ID"
}

# CPU accounting is virtual (docs/trace.md, "CPU accounting"): getrusage,
# wait4's rusage and times report the virtual clock (a busy loop costs
# nothing, a child's sleep counts), every counter 0, and replay MATCH.
t_replay_rusage_matches() {
	ID=$(sbx create)
	out=$(sbx exec --json --trace "$ID" -- python3 -S -c 'import os, resource, time
sum(range(2000000))
s = resource.getrusage(resource.RUSAGE_SELF)
pid = os.fork()
if pid == 0:
  time.sleep(0.2); os._exit(0)
_, st, w = os.wait4(pid, 0)
c = resource.getrusage(resource.RUSAGE_CHILDREN)
t = os.times()
print(s.ru_utime, s.ru_stime, s.ru_maxrss, s.ru_minflt, s.ru_nvcsw, s.ru_nivcsw)
print(w.ru_utime, c.ru_utime, c.ru_maxrss, t.user, t.system, t.children_user)')
	tid=$(echo "$out" | jget trace_id)
	echo "$out" | jget stdout > "$TMPDIR_TEST/rusage.out"
	python3 - "$TMPDIR_TEST/rusage.out" <<'PY' || fail "rusage values: $(cat "$TMPDIR_TEST/rusage.out")"
import sys
a, b = [l.split() for l in open(sys.argv[1]).read().split("\n")[:2]]
assert float(a[0]) < 0.05 and a[1:] == ["0.0", "0", "0", "0", "0"], a
assert 0.2 <= float(b[0]) == float(b[1]) < 0.3 and b[2] == "0" and b[4] == "0.0", b
assert 0.2 <= float(b[5]) < 0.3, b
PY
	r=$(sbx replay --json "$tid") || fail "replay of getrusage/times diverged: $r"
	assert_eq "$(echo "$r" | jget verdict)" match
	sbx rm "$ID"
}

# A process's stat line is virtual (docs/trace.md, "procfs files"): utime,
# cutime and starttime from the virtual clock, faults and rss 0; cat and a
# Python reader of /proc/self/stat and /proc/PID/stat replay MATCH.
# /proc/self/schedstat (real ns on the CPU) stays the canary that diverges.
t_replay_pid_stat_matches() {
	ID=$(sbx create)
	out=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/stat; python3 -S -c "import os, time
sum(range(2000000)); time.sleep(0.3)
print(open(\"/proc/%d/stat\" % os.getpid()).read().rsplit(\") \", 1)[1].split()[7:22])"')
	tid=$(echo "$out" | jget trace_id)
	echo "$out" | jget stdout > "$TMPDIR_TEST/pidstat.out"
	python3 - "$TMPDIR_TEST/pidstat.out" <<'PY' || fail "stat values: $(cat "$TMPDIR_TEST/pidstat.out")"
import ast, sys
l = open(sys.argv[1]).read().split("\n")
f = l[0].rsplit(") ", 1)[1].split()
assert f[7:11] == ["0"] * 4 and f[12] == "0" and f[14] == "0" and f[21] == "0", f
assert int(f[11]) < 5 and int(f[19]) == 100000 and f[0] == "R", f
p = ast.literal_eval(l[1])
assert p[:4] == ["0"] * 4 and 30 <= int(p[4]) < 40 and p[5] == "0" and int(p[12]) == 100000, p
PY
	r=$(sbx replay --json "$tid") || fail "replay of /proc/PID/stat readers diverged: $r"
	assert_eq "$(echo "$r" | jget verdict)" match
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/stat; cat /proc/self/schedstat' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged "the schedstat canary: $r"
	sbx rm "$ID"
}

# Virtual time is exact: clock-heavy programs replayed several times each,
# with busy loops on every CPU (scheduling differences are what expose a
# clock that depends on the order the engine sees stops in). The 50-run
# loops are test_ptrace_engine's det_clock_programs_replay_exactly.
t_replay_clock_programs_exact() {
	ID=$(sbx create)
	local progs=(
		'date; date -u +%s.%N; date -R; for i in 1 2 3 4 5; do date +%s.%N; done'
		'cd /root && for i in 1 2 3; do echo $i > f$i; done; ls -l --full-time f1 f2 f3; stat -c "%n %y %z" f1 f2 f3'
		'date +%N | (date +%N; cat) | (date +%N; cat) | cat; a=$(date +%N & date +%N; wait); echo "$a" | sort'
		'python3 -S -c "import time
for i in range(10): print(time.time_ns(), time.monotonic_ns())"'
	)
	local tids=() p tid
	for p in "${progs[@]}"; do
		tid=$(sbx exec --json --trace "$ID" -- sh -c "$p" | jget trace_id)
		[[ "$tid" == sha256:* ]] || fail "no trace for: $p"
		tids+=("$tid")
	done
	local n=$(nproc) i k pids=()
	for ((i = 0; i < n; i++)); do
		(exec timeout 60 sh -c 'while :; do :; done') &
		pids+=($!)
	done
	local bad=""
	for tid in "${tids[@]}"; do
		for ((k = 0; k < 5; k++)); do
			r=$(sbx replay "$tid" 2>&1) || { bad="$bad
$tid run $k: $r"; break; }
		done
	done
	kill "${pids[@]}" 2> /dev/null || true
	wait "${pids[@]}" 2> /dev/null || true
	[ -z "$bad" ] || fail "replays of clock programs diverged:$bad"
	sbx rm "$ID"
}

# Inode and device numbers are the host file system's: a replay's fresh
# environment holds the same files under other numbers, and its overlay has
# another device. Under determinism they are virtual (first observation, per
# device), in stat results and in directory listings alike, so a program that
# prints them replays exactly, and hard links and `ls -i` still agree.
t_replay_inode_numbers_are_virtual() {
	ID=$(sbx create)
	# Files from before the run, removed and made again in it: the file
	# system may reuse a number in the recording (ext4 upper layer) and not in
	# the replay (the snapshot's files are in a lower layer).
	local again='cd /root && for f in old old2; do [ -e $f ] && stat -c "%n %i" $f && rm $f; done;
echo new > old && ln old old2 && ls -i'
	sbx exec "$ID" -- sh -c "$again" > /dev/null
	sbx exec "$ID" -- sh -c "$again" > /dev/null
	# A directory of files from before the run, with more made in it: the
	# recording's overlay lists it from its upper layer alone, the replay's
	# from the snapshot's lower layer and then its upper: another order.
	sbx exec "$ID" -- sh -c 'mkdir /root/many && cd /root/many && for i in $(seq 40); do echo $i > f$i; done'
	local p="$again"' && (cd many && for i in $(seq 41 80); do echo $i > f$i; done && ls -i) &&
echo x > a && ln a b && mkdir -p d && touch d/f d/g &&
stat -c "%n %i %d %h" a b d d/f / && ls -i d && ls -id a b &&
python3 -S -c "import os
print(sorted((e.name, e.inode()) for e in os.scandir(\"/root/d\")), os.stat(\"/root/d/f\").st_ino, os.stat(\"/\").st_dev)"'
	local r tid out
	r=$(sbx exec --json --trace "$ID" -- sh -c "$p")
	tid=$(echo "$r" | jget trace_id)
	out=$(echo "$r" | jget stdout)
	[[ "$tid" == sha256:* ]] || fail "no trace: $r"
	# virtual: the first file the run looks at on a device is number 1000
	local ia ib iff
	ia=$(echo "$out" | awk '$1 == "a" { print $2 }')
	ib=$(echo "$out" | awk '$1 == "b" { print $2 }')
	iff=$(echo "$out" | awk '$1 == "d/f" { print $2 }')
	[ -n "$ia" ] && [ "$ia" -ge 1000 ] && [ "$ia" -lt 2000 ] || fail "inode of a not virtual: $out"
	assert_eq "$ib" "$ia" "a hard link is the same file"
	assert_contains "$out" "$iff f" "ls -i agrees with stat"
	assert_contains "$out" "('f', $iff)" "os.scandir's d_ino agrees with stat"
	# the real numbers differ between environments, the virtual ones do not
	local real
	real=$(sbx exec "$ID" -- stat -c %i /root/a)
	[ "$real" != "$ia" ] || fail "the real inode number showed through: $real"
	r=$(sbx replay --json "$tid") || fail "replay diverged: $r"
	assert_eq "$(echo "$r" | jget verdict)" match
	sbx rm "$ID"
}

t_replay_detects_changed_result() {
	ID=$(sbx create)
	# Reads real time through a path the engine does not virtualize: its own
	# /proc/self/schedstat, whose first field is the ns the process really
	# ran on a CPU (its stat's times are virtual). The replay must not hide the difference.
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/schedstat; sleep 0.01' | jget trace_id)
	expect_status 1 sbx replay "$tid"
	assert_contains "$OUT" "DIVERGED: stdout"
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged
	assert_eq "$(echo "$r" | jget divergence.kind)" stdout
	sbx rm "$ID"
}

t_replay_without_determinism_diverges() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace --no-deterministic "$ID" -- python3 -c 'import os; print(os.urandom(16).hex())' | jget trace_id)
	assert_eq "$(sbx trace inspect "$tid" | jget determinism.enabled)" False
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged
	assert_eq "$(echo "$r" | jget divergence.kind)" stdout
	sbx rm "$ID"
}

# Without determinism the eBPF recorder alone records: the command is init's
# own child as an untraced one is (no ptrace engine between them, whose
# fork, set-up and stops were most of a short command's cost), nothing of
# init shows but the fork of the command, and the pid a replay's engine
# reaches is the one before the command's, so a replay's command has the
# recorded pid. With determinism the engine is the command's parent.
t_trace_without_determinism_runs_no_engine() {
	is_root || skip_ok "rootless traces record with ptrace, which is the engine"
	ID=$(sbx create)
	sbx exec "$ID" -- true # the command below is not the first pid after init's
	out=$(sbx exec --json --trace --no-deterministic "$ID" -- sh -c 'echo $PPID; cat /etc/hostname > /dev/null; exit 4' || true)
	assert_eq "$(echo "$out" | jget exit_code)" 4
	assert_eq "$(echo "$out" | jget stdout)" 1 "the command's parent is not init"
	tid=$(echo "$out" | jget trace_id)
	assert_eq "$(sbx trace inspect "$tid" | jget events.recorder)" bpf
	show=$(sbx trace show "$tid")
	echo "$show" | grep -E '\+\+\+ exec .*cat' > /dev/null || fail "the exec of cat is missing"
	echo "$show" | grep -E 'exit_group\(4\)' > /dev/null || fail "exit_group(4) is missing"
	leaked=$(echo "$show" | grep -E '^ *[0-9.]+ \[1\]' | grep -v '+++ fork child' || true)
	[ -z "$leaked" ] || fail "init's own records leaked into the trace: $leaked"
	echo "$show" | grep -E ' (setsid|close_range|umask)\(' && fail "the spawn's set-up before exec is in the trace"
	# The manifest names the command's pid (there is no engine's); a replay,
	# which runs the engine, of a program that does the same every time matches.
	out=$(sbx exec --json --trace --no-deterministic "$ID" -- sh -c 'echo $$; cat /etc/hostname')
	tid=$(echo "$out" | jget trace_id)
	assert_eq "$(sbx trace inspect "$tid" | jget determinism.command_pid)" "$(echo "$out" | jget stdout | head -n 1)"
	assert_eq "$(sbx trace inspect "$tid" | jget determinism.engine_pid)" 0
	tid=$(sbx exec --json --trace --no-deterministic "$ID" -- sh -c 'cat /etc/hostname; ls /' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" match "$r"
	assert_eq "$(sbx exec --trace "$ID" -- sh -c 'test $PPID != 1 && echo engine')" engine "with determinism the engine is the parent"
	sbx rm "$ID"
}

t_replay_reports_changed_volume_input() {
	mkdir -p "$TMPDIR_TEST/vol"
	echo one > "$TMPDIR_TEST/vol/in.txt"
	chmod -R a+rX "$TMPDIR_TEST/vol"
	ID=$(sbx create -v "$TMPDIR_TEST/vol:/data:ro")
	tid=$(sbx exec --json --trace "$ID" -- cat /data/in.txt | jget trace_id)
	sbx replay "$tid" > /dev/null || fail "replay of an unchanged input diverged"
	echo two > "$TMPDIR_TEST/vol/in.txt"
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget divergence.kind)" input
	assert_eq "$(echo "$r" | jget divergence.path)" /data/in.txt
	assert_contains "$(echo "$r" | jget divergence.expected)" "sha256:"
	sbx rm "$ID"
}

t_replay_stdin_and_filesystem() {
	ID=$(sbx create)
	tid=$(echo "hello stdin" | sbx exec --json -i --trace "$ID" -- sh -c 'cat > /root/copy; wc -c < /root/copy' | jget trace_id)
	expect_status 0 sbx replay "$tid"
	# A fs change that differs: the program writes the clock's real value
	# obtained through a file the engine cannot virtualize.
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/schedstat > /root/up' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget divergence.kind)" filesystem
	sbx rm "$ID"
}

t_trace_refuses_bad_input() {
	ID=$(sbx create)
	expect_status 125 sbx trace show nosuchtrace
	assert_contains "$ERR" "no such trace"
	expect_status 125 sbx replay sha256:0000000000000000000000000000000000000000000000000000000000000000
	expect_status 125 sbx exec --trace -t "$ID" -- true
	assert_contains "$ERR" "terminal"
	tid=$(sbx exec --json --trace "$ID" -- true | jget trace_id)
	expect_status 125 sbx trace show "$tid" --syscall not_a_syscall
	expect_status 125 sbx trace export "$tid" --format perfetto
	sbx rm "$ID"
}

t_trace_store_fsck_and_gc_keep_traces() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace "$ID" -- echo kept | jget trace_id)
	sbx rm "$ID"
	SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	sbx fsck > /dev/null || fail "fsck after gc: $(sbx fsck)"
	sbx trace show "$tid" > /dev/null || fail "gc removed a trace's blobs"
	r=$(sbx replay --json "$tid") || fail "replay after gc: $r"
	# A corrupt events blob is named by fsck.
	blob=$(sbx trace inspect "$tid" | jget events.digest)
	hex=${blob#sha256:}
	chmod u+w "$SBX_ROOT/objects/sha256/${hex:0:2}/$hex" 2>/dev/null || true
	echo garbage >> "$SBX_ROOT/objects/sha256/${hex:0:2}/$hex"
	expect_status 1 sbx fsck
	assert_contains "$OUT$ERR" "$hex"
}

t_trace_shows_calls_the_sandbox_refused() {
	# seccomp refuses these before the kernel's sys_enter tracepoint fires:
	# the recorder must still show them (an audit wants them most).
	ID=$(sbx create)
	tid=$(sbx exec --json --trace --no-deterministic "$ID" -- sh -c 'mount -t tmpfs x /mnt; unshare -U true; true' | jget trace_id)
	show=$(sbx trace show "$tid" --syscall mount,unshare)
	echo "$show" | grep -E 'mount\("x", "/mnt".*= -1 EPERM' > /dev/null || fail "the refused mount is missing: $show"
	echo "$show" | grep -E 'unshare\(CLONE_NEWUSER\) = -1 EPERM' > /dev/null || fail "the refused unshare is missing: $show"
	rec=$(sbx trace inspect "$tid" | jget events.recorder)
	if is_root; then assert_eq "$rec" bpf; else assert_eq "$rec" ptrace; fi
	sbx rm "$ID"
}

t_trace_one_shot_run_replays_after_it_is_gone() {
	out=$(sbx run --json --trace -- sh -c 'echo $$; date +%s%N; head -c 8 /dev/urandom | od -An -tx1')
	tid=$(echo "$out" | jget trace_id)
	[ -z "$(sbx ls --json | python3 -c 'import json,sys; print(" ".join(e["environment_id"] for e in json.load(sys.stdin)["environments"]))')" ] ||
		fail "sbx run left its environment behind"
	expect_status 0 sbx replay "$tid"
	assert_contains "$OUT" MATCH
}

# What a run leaves in the filesystem is more than paths and the first bytes
# of the first files: modes, owners, xattrs and every byte of every changed
# file. A program that sets them from a value the engine does not virtualize
# (its /proc/self/schedstat run time, real ns on the CPU) must not replay as a
# match; nor one whose nondeterministic bytes lie past the first 256 MiB of
# a (sparse) file. Plain python, one process: its syscall sequence is the
# same in both runs, only the filesystem can tell.
t_replay_detects_nondeterministic_file_metadata() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace "$ID" -- python3 -S -c '
import os
t = int(open("/proc/self/schedstat").read().split()[0])
open("/root/meta", "w").close()
os.chmod("/root/meta", 0o400 | t % 256)
os.chown("/root/meta", 1 + t % 60000, 1 + t % 60000)
os.setxattr("/root/meta", "user.t", str(t).encode())' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged "metadata from /proc/self/schedstat: $r"
	assert_eq "$(echo "$r" | jget divergence.kind)" filesystem
	assert_contains "$(echo "$r" | jget divergence.expected)" /root/meta
	# past the first 256 MiB of a sparse file
	tid=$(sbx exec --json --trace "$ID" -- python3 -S -c '
f = open("/root/big", "wb"); f.seek(256 << 20); f.write(open("/proc/self/schedstat", "rb").read()); f.close()' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged "bytes past 256 MiB: $r"
	assert_eq "$(echo "$r" | jget divergence.kind)" filesystem
	assert_contains "$(echo "$r" | jget divergence.expected)" /root/big
	# a content change names its file too (the paths alone are the same)
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/schedstat > /root/c' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget divergence.kind)" filesystem
	assert_contains "$(echo "$r" | jget divergence.expected)" /root/c
	# and the same programs with a fixed value still match
	tid=$(sbx exec --json --trace "$ID" -- python3 -S -c '
import os
open("/root/meta2", "w").close(); os.chmod("/root/meta2", 0o640); os.chown("/root/meta2", 7, 8)
os.setxattr("/root/meta2", "user.t", b"v"); os.symlink("meta2", "/root/lnk2"); os.mkfifo("/root/fifo2")' | jget trace_id)
	r=$(sbx replay --json "$tid") || fail "a deterministic metadata writer diverged: $r"
	sbx rm "$ID"
}

# Concurrency forgives the order in which processes ran, not what they ran:
# a command substitution makes the shell and its child run at once, and
# must not turn an exec whose argument comes from /proc/self/schedstat (real
# ns on the CPU) into a match. A pipeline whose processes do the same
# things in another order still matches (t_replay_clock_programs_exact).
t_replay_concurrency_does_not_hide_exec_differences() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace "$ID" -- sh -c '/bin/true $(cut -d" " -f1 /proc/self/schedstat)' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged "an exec argument from /proc/self/schedstat: $r"
	assert_eq "$(echo "$r" | jget divergence.kind)" syscall
	assert_contains "$(echo "$r" | jget divergence.expected)" "exec"
	# the same shape with a fixed argument matches
	tid=$(sbx exec --json --trace "$ID" -- sh -c '/bin/true $(echo 1 | cat); ls /root | cat | wc -l' | jget trace_id)
	r=$(sbx replay --json "$tid") || fail "a deterministic pipeline diverged: $r"
	sbx rm "$ID"
}

# A replay killed midway (kill -9 of the CLI, a client gone) must not leave
# its fresh environment running for ever: it has an idle lifetime
# (SBX_REPLAY_TTL_MS, 10 minutes by default), after which gc removes it.
t_replay_killed_leaves_no_environment() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'sleep 1; echo done' | jget trace_id)
	SBX_REPLAY_TTL_MS=1500 "$SBX_BIN" replay "$tid" > /dev/null 2>&1 &
	local p=$! i n
	for i in $(seq 100); do
		n=$(ls "$SBX_ROOT/envs" | grep -cE '^[0-9a-f]{12}$' || true)
		[ "$n" -ge 2 ] && break
		sleep 0.1
	done
	[ "$n" -ge 2 ] || fail "the replay's environment never appeared"
	kill -9 "$p"
	wait "$p" 2> /dev/null || true
	sleep 4 # the command ends (1 s), then 1.5 s idle
	SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(" ".join(e["environment_id"] for e in json.load(sys.stdin)["environments"]))')" "$ID" "environments after a killed replay and gc"
	expect_status 0 sbx replay "$tid"
	sbx rm "$ID"
}

# /tmp is the environment's tmpfs: no snapshot holds it and the filesystem
# digest does not see it, but later commands read what a run left there.
# A file written there from an unvirtualized value must diverge, named.
t_replay_detects_tmpfs_outputs() {
	ID=$(sbx create)
	tid=$(sbx exec --json --trace "$ID" -- python3 -S -c 'open("/tmp/state", "w").write(open("/proc/self/schedstat").read())' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget verdict)" diverged "a /tmp file from /proc/self/schedstat: $r"
	assert_eq "$(echo "$r" | jget divergence.kind)" filesystem
	assert_eq "$(echo "$r" | jget divergence.path)" /tmp/state
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'echo fixed > /tmp/same; mkdir -p /dev/shm/d; date > /dev/shm/d/t' | jget trace_id)
	r=$(sbx replay --json "$tid") || fail "deterministic /tmp writes diverged: $r"
	sbx rm "$ID"
}

# A recording whose output hit the capture cap (10 MiB by default) keeps the
# first 10 MiB: the replay compares that much, not the whole output the
# uncapped replay sees, and still diverges on a difference inside it.
t_replay_truncated_output_matches() {
	ID=$(sbx create)
	out=$(sbx exec --json --trace "$ID" -- sh -c 'yes abcdefgh | head -c 10600000')
	assert_eq "$(echo "$out" | jget stdout_truncated)" True
	tid=$(echo "$out" | jget trace_id)
	r=$(sbx replay --json "$tid") || fail "a deterministic 10.6 MB output diverged: $(echo "$r" | head -c 600)"
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cut -d" " -f1 /proc/self/schedstat; yes abcdefgh | head -c 10600000' | jget trace_id)
	r=$(sbx replay --json "$tid" || true)
	assert_eq "$(echo "$r" | jget divergence.kind)" stdout
	sbx rm "$ID"
}

# A replay must end even when the world outside stopped answering: the
# recorded command had no timeout and was quick; at replay time its server
# accepts and never answers. The replay is bounded (20 x the recorded
# duration, at least a minute; SBX_REPLAY_TIMEOUT_MS here) and reports it.
t_replay_of_a_hanging_command_ends() {
	command -v curl > /dev/null || skip "curl is not installed"
	local port=$((20000 + RANDOM % 20000))
	python3 - "$port" "$TMPDIR_TEST/stall" > /dev/null 2>&1 <<'PY' &
import socket, sys, os, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
held = []
while True:
    c, _ = s.accept()
    if os.path.exists(sys.argv[2]):
        held.append(c)  # accept, never answer
        continue
    c.recv(65536); c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n"); c.close()
PY
	local srv=$!
	for _ in $(seq 50); do curl -s "http://127.0.0.1:$port/" > /dev/null && break; sleep 0.1; done
	ID=$(sbx create --network "allow=127.0.0.1:$port")
	tid=$(sbx exec --json --trace "$ID" -- curl -s --noproxy '' -x http://127.0.0.1:3128 "http://127.0.0.1:$port/" | jget trace_id)
	touch "$TMPDIR_TEST/stall"
	local t0=$SECONDS
	r=$(SBX_REPLAY_TIMEOUT_MS=3000 timeout 60 "$SBX_BIN" replay --json "$tid" || true)
	kill "$srv" 2> /dev/null || true
	wait "$srv" 2> /dev/null || true
	[ $((SECONDS - t0)) -lt 30 ] || fail "the replay took $((SECONDS - t0)) s"
	assert_eq "$(echo "$r" | jget verdict)" diverged "$r"
	assert_eq "$(echo "$r" | jget divergence.kind)" exit
	assert_eq "$(echo "$r" | jget divergence.actual)" "timed out"
	sbx rm "$ID"
}
