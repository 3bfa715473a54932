# The engine cases of test_runc.sh (sourced), run the same way for sbx-runc,
# runc and crun. Each case_* returns 0 (pass) or prints why and returns 1.
# Globals set by the caller: ENG_DIR (the engine's private directory), RT
# (runtime binary path, or docker runtime name), IMG, VOL, W (scratch).

# ---- ctr ----
ctr_run() { ctrc "$ENG_DIR" run --runc-binary "$RT" --runc-root "$W/runc-root" --fifo-dir "$W/fifo" "$@"; }
ctr_exec() { ctrc "$ENG_DIR" tasks exec --fifo-dir "$W/fifo" "$@"; }
uid_n=0
cid() { uid_n=$((uid_n + 1)); echo "c$$-$uid_n"; }

case_ctr_output_exit() {
	local o rc=0
	o=$(ctr_run --rm "$IMG" "$(cid)" sh -c 'echo hello; exit 3' 2>&1) || rc=$?
	[ "$rc" = 3 ] && [ "$o" = hello ] || { echo "rc=$rc out=$o"; return 1; }
}
case_ctr_env_cwd() {
	local o
	o=$(ctr_run --rm --env FOO=bar --cwd /tmp "$IMG" "$(cid)" sh -c 'echo "$FOO $(pwd)"' 2>&1) || return 1
	[ "$o" = "bar /tmp" ] || { echo "out=$o"; return 1; }
}
case_ctr_readonly_root() {
	local o
	o=$(ctr_run --rm --read-only "$IMG" "$(cid)" sh -c 'touch /x 2>&1; echo rc=$?' 2>&1)
	[[ "$o" == *"Read-only file system"*"rc=1"* ]] || { echo "out=$o"; return 1; }
}
case_ctr_bind_ro_rw() {
	local o
	echo data > "$VOL/f"
	o=$(ctr_run --rm --mount "type=bind,src=$VOL,dst=/data,options=rbind:ro" "$IMG" "$(cid)" \
		sh -c 'cat /data/f; { echo x > /data/g; } 2>/dev/null; echo rc=$?' 2>&1)
	[ "$o" = "data
rc=1" ] || { echo "ro: out=$o"; return 1; }
	o=$(ctr_run --rm --mount "type=bind,src=$VOL,dst=/data,options=rbind:rw" "$IMG" "$(cid)" \
		sh -c 'echo written > /data/g; echo rc=$?' 2>&1)
	[ "$o" = rc=0 ] && [ "$(cat "$VOL/g")" = written ] || { echo "rw: out=$o"; return 1; }
}
case_ctr_not_found() {
	local o rc=0
	o=$(timeout 20 ctrc "$ENG_DIR" run --runc-binary "$RT" --runc-root "$W/runc-root" --fifo-dir "$W/fifo" --rm "$IMG" "$(cid)" nosuchcmd 2>&1) || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || { echo "rc=$rc (124: hung)"; return 1; }
	[[ "$o" == *"executable file not found"* || "$o" == *"No such file or directory"* || "$o" == *"no such file"* ]] || {
		echo "out=$o"
		return 1
	}
}
task_status() { ctrc "$ENG_DIR" tasks ls 2> /dev/null | awk -v c="$1" '$1==c {print $3}'; }
wait_status() {
	local i
	for i in $(seq 100); do [ "$(task_status "$1")" = "$2" ] && return 0; sleep 0.05; done
	echo "status of $1: $(task_status "$1"), wanted $2"
	return 1
}
task_pid() { ctrc "$ENG_DIR" tasks ls 2> /dev/null | awk -v c="$1" '$1==c {print $2}'; }
ctr_cleanup() {
	ctrc "$ENG_DIR" tasks kill -s SIGKILL "$1" > /dev/null 2>&1 || true
	ctrc "$ENG_DIR" tasks delete -f "$1" > /dev/null 2>&1 || true
	ctrc "$ENG_DIR" containers delete "$1" > /dev/null 2>&1 || true
}
case_ctr_kill_delete_clean() {
	local c pid rc=0 o
	c=$(cid)
	ctr_run -d "$IMG" "$c" sleep 100 > /dev/null 2>&1 || { echo "run -d failed"; return 1; }
	wait_status "$c" RUNNING || return 1
	pid=$(task_pid "$c")
	ctrc "$ENG_DIR" tasks kill -s SIGKILL "$c" || return 1
	wait_status "$c" STOPPED || return 1
	o=$(ctrc "$ENG_DIR" tasks delete "$c" 2>&1) || rc=$?
	ctrc "$ENG_DIR" containers delete "$c" > /dev/null 2>&1 || true
	# ctr prints the exit status it got from the shim: killed by SIGKILL.
	[[ "$o" == *137* ]] || { echo "delete said: $o"; return 1; }
	if kill -0 "$pid" 2> /dev/null; then echo "pid $pid still alive"; return 1; fi
	if grep -q "/$c/rootfs" /proc/self/mountinfo; then echo "rootfs mount left"; return 1; fi
	if ls -d /sys/fs/cgroup/*/default/"$c" 2> /dev/null | grep -q .; then echo "cgroup left"; return 1; fi
	if [ -e "$W/runc-root/$c" ]; then echo "state left in $W/runc-root/$c"; return 1; fi
}
case_ctr_exec() {
	local c o rc=0
	c=$(cid)
	ctr_run -d "$IMG" "$c" sleep 100 > /dev/null 2>&1 || { echo "run -d failed"; return 1; }
	wait_status "$c" RUNNING || { ctr_cleanup "$c"; return 1; }
	o=$(ctr_exec --exec-id e1 "$c" sh -c 'echo in-exec; exit 5' 2>&1) || rc=$?
	[ "$rc" = 5 ] && [ "$o" = in-exec ] || { echo "rc=$rc out=$o"; ctr_cleanup "$c"; return 1; }
	rc=0
	o=$(timeout 20 ctrc "$ENG_DIR" tasks exec --fifo-dir "$W/fifo" --exec-id e2 "$c" nosuchcmd 2>&1) || rc=$?
	ctr_cleanup "$c"
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || { echo "exec of a missing command: rc=$rc"; return 1; }
}
case_ctr_ps_pause() {
	local c pid o
	c=$(cid)
	ctr_run -d "$IMG" "$c" sleep 100 > /dev/null 2>&1 || { echo "run -d failed"; return 1; }
	wait_status "$c" RUNNING || { ctr_cleanup "$c"; return 1; }
	pid=$(task_pid "$c")
	o=$(ctrc "$ENG_DIR" tasks ps "$c" 2>&1)
	[[ "$o" == *"$pid"* ]] || { echo "ps: $o"; ctr_cleanup "$c"; return 1; }
	ctrc "$ENG_DIR" tasks pause "$c" && wait_status "$c" PAUSED || { ctr_cleanup "$c"; return 1; }
	ctrc "$ENG_DIR" tasks resume "$c" && wait_status "$c" RUNNING || { ctr_cleanup "$c"; return 1; }
	ctr_cleanup "$c"
}
case_ctr_oom() {
	local o rc=0
	o=$(ctr_run --rm --memory-limit 33554432 "$IMG" "$(cid)" sh -c 'x=$(head -c 200000000 /dev/zero | tr "\0" a); echo survived' 2>&1) || rc=$?
	[ "$rc" = 137 ] || { echo "rc=$rc out=$o"; return 1; }
}
case_ctr_tty() {
	local o
	o=$(script -qec "ctr --address $ENG_DIR/containerd.sock run --runc-binary $RT --runc-root $W/runc-root --fifo-dir $W/fifo --rm -t $IMG $(cid) tty" /dev/null < /dev/null 2>&1)
	[[ "$o" == *"/dev/pts/"* ]] || { echo "out=$o"; return 1; }
}
case_ctr_ten() {
	local i c cs=() bad=0
	for i in $(seq 10); do
		c=$(cid)
		cs+=("$c")
		ctr_run -d "$IMG" "$c" sleep 100 > /dev/null 2>&1 &
	done
	wait
	for c in "${cs[@]}"; do wait_status "$c" RUNNING > /dev/null || bad=$((bad + 1)); done
	for c in "${cs[@]}"; do ctr_cleanup "$c" & done
	wait
	[ "$bad" = 0 ] || { echo "$bad of 10 not running"; return 1; }
}
CTR_CASES="output_exit env_cwd readonly_root bind_ro_rw not_found kill_delete_clean exec ps_pause oom tty ten"

# ---- docker ----
drun() { dockerc "$ENG_DIR" run --runtime "$RT" --network none "$@"; }
dinspect() { dockerc "$ENG_DIR" inspect -f "$2" "$1" 2> /dev/null; }
case_docker_output_exit() {
	local o rc=0
	o=$(drun --rm "$IMG" sh -c 'echo hello; exit 3' 2>&1) || rc=$?
	[ "$rc" = 3 ] && [ "$o" = hello ] || { echo "rc=$rc out=$o"; return 1; }
}
case_docker_env_cwd_user() {
	local o
	o=$(drun --rm -e FOO=bar -w /tmp -u 65534:65534 "$IMG" sh -c 'echo "$FOO $(pwd) $(id -u):$(id -g)"' 2>&1) || { echo "$o"; return 1; }
	[ "$o" = "bar /tmp 65534:65534" ] || { echo "out=$o"; return 1; }
}
case_docker_readonly_bind() {
	local o
	echo data > "$VOL/f"
	o=$(drun --rm --read-only -v "$VOL:/data:ro" "$IMG" sh -c '{ touch /x; } 2>/dev/null; echo root=$?; cat /data/f; { echo x > /data/g; } 2>/dev/null; echo ro=$?' 2>&1)
	[ "$o" = "root=1
data
ro=1" ] || { echo "out=$o"; return 1; }
	o=$(drun --rm -v "$VOL:/data" "$IMG" sh -c 'echo written > /data/h; echo rw=$?' 2>&1)
	[ "$o" = rw=0 ] && [ "$(cat "$VOL/h")" = written ] || { echo "rw: out=$o"; return 1; }
}
case_docker_not_found() {
	local rc=0 o
	o=$(timeout 30 bash -c "DOCKER_HOST=unix://$ENG_DIR/docker.sock docker run --rm --runtime $RT --network none $IMG nosuchcmd" 2>&1) || rc=$?
	[ "$rc" = 127 ] || { echo "rc=$rc (want 127) out=$o"; return 1; }
}
case_docker_exec_stop_rm() {
	local c o rc=0 pid
	c=$(drun -d "$IMG" sleep 100) || { echo "run -d: $c"; return 1; }
	o=$(dockerc "$ENG_DIR" exec "$c" sh -c 'echo in-exec; exit 5' 2>&1) || rc=$?
	[ "$rc" = 5 ] && [ "$o" = in-exec ] || { echo "exec rc=$rc out=$o"; dockerc "$ENG_DIR" rm -f "$c" > /dev/null; return 1; }
	rc=0
	o=$(timeout 30 bash -c "DOCKER_HOST=unix://$ENG_DIR/docker.sock docker exec $c nosuchcmd" 2>&1) || rc=$?
	[ "$rc" = 126 ] || [ "$rc" = 127 ] || { echo "exec nosuchcmd rc=$rc out=$o"; dockerc "$ENG_DIR" rm -f "$c" > /dev/null; return 1; }
	pid=$(dinspect "$c" '{{.State.Pid}}')
	dockerc "$ENG_DIR" stop -t 1 "$c" > /dev/null || { echo "stop failed"; return 1; }
	o=$(dinspect "$c" '{{.State.Status}} {{.State.ExitCode}}')
	dockerc "$ENG_DIR" rm "$c" > /dev/null || { echo "rm failed"; return 1; }
	[ "$o" = "exited 137" ] || { echo "after stop: $o"; return 1; }
	if kill -0 "$pid" 2> /dev/null; then echo "pid $pid alive after rm"; return 1; fi
}
case_docker_oom() {
	local c o
	c=$(drun -d --memory 64m --memory-swap 64m "$IMG" sh -c 'x=$(head -c 300000000 /dev/zero | tr "\0" a); echo survived') || { echo "run: $c"; return 1; }
	dockerc "$ENG_DIR" wait "$c" > /dev/null
	o=$(dinspect "$c" '{{.State.ExitCode}} {{.State.OOMKilled}}')
	dockerc "$ENG_DIR" rm -f "$c" > /dev/null
	[ "$o" = "137 true" ] || { echo "exit/oom: $o"; return 1; }
}
case_docker_pids() {
	# Eight tasks at most: the shell and seven sleepers; then fork fails
	# (busybox sh gives up with status 2).
	local o
	o=$(drun --rm --pids-limit 8 "$IMG" sh -c 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max; for i in $(seq 20); do sleep 5 & done; echo loop-done' 2>&1)
	[[ "$o" == 8*"can't fork"* && "$o" != *loop-done* ]] || { echo "out=$o"; return 1; }
}
case_docker_pause_top() {
	local c o
	c=$(drun -d "$IMG" sleep 100) || return 1
	o=$(dockerc "$ENG_DIR" top "$c" 2>&1)
	[[ "$o" == *"sleep 100"* ]] || { echo "top: $o"; dockerc "$ENG_DIR" rm -f "$c" > /dev/null; return 1; }
	dockerc "$ENG_DIR" pause "$c" > /dev/null
	o=$(dinspect "$c" '{{.State.Status}}')
	dockerc "$ENG_DIR" unpause "$c" > /dev/null
	o="$o $(dinspect "$c" '{{.State.Status}}')"
	dockerc "$ENG_DIR" rm -f "$c" > /dev/null
	[ "$o" = "paused running" ] || { echo "pause/unpause: $o"; return 1; }
}
case_docker_update() {
	# docker update --cpu-shares writes a resources document whose memory
	# fields are 0: "unchanged", the memory limit must stay.
	local c o
	c=$(drun -d --memory 96m "$IMG" sleep 100) || return 1
	dockerc "$ENG_DIR" update --cpu-shares 512 "$c" > /dev/null 2>&1 || { echo "update failed"; dockerc "$ENG_DIR" rm -f "$c" > /dev/null; return 1; }
	o=$(dockerc "$ENG_DIR" exec "$c" cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/cpu/cpu.shares 2>&1 | tr '\n' ' ')
	dockerc "$ENG_DIR" rm -f "$c" > /dev/null
	[ "$o" = "100663296 512 " ] || { echo "limits after update: $o"; return 1; }
}
case_docker_tty() {
	local o c
	o=$(script -qec "DOCKER_HOST=unix://$ENG_DIR/docker.sock docker run --rm -t --runtime $RT --network none $IMG tty" /dev/null < /dev/null 2>&1)
	[[ "$o" == *"/dev/pts/"* ]] || { echo "run -t: out=$o"; return 1; }
	# exec -t: the exec's own pty over its console socket.
	c=$(drun -d "$IMG" sleep 100) || return 1
	o=$(script -qec "DOCKER_HOST=unix://$ENG_DIR/docker.sock docker exec -t $c tty" /dev/null < /dev/null 2>&1)
	dockerc "$ENG_DIR" rm -f "$c" > /dev/null
	[[ "$o" == *"/dev/pts/"* ]] || { echo "exec -t: out=$o"; return 1; }
}
case_docker_tmpfs() {
	# docker writes "rprivate" on --tmpfs and --mount type=tmpfs mounts.
	local o
	o=$(drun --rm --read-only --tmpfs /run:rw,size=1m,mode=1777 --mount type=tmpfs,dst=/y "$IMG" \
		sh -c 'touch /run/a /y/b && stat -c %a /run && cut -d" " -f2,3 /proc/mounts | grep -c -e "^/run tmpfs" -e "^/y tmpfs"' 2>&1)
	[ "$o" = "1777
2" ] || { echo "out=$o"; return 1; }
}
DOCKER_CASES="output_exit env_cwd_user readonly_bind tmpfs not_found exec_stop_rm oom pids pause_top update tty"

# ---- podman ----
pod() { timeout 90 podman --root "$ENG_DIR/root" --runroot "$ENG_DIR/runroot" --storage-driver vfs --cgroup-manager cgroupfs \
	--events-backend file --tmpdir "$ENG_DIR/tmp" --runtime "$RT" "$@"; }
# podman raises RLIMIT_NOFILE and RLIMIT_NPROC by default; without CAP_SYS_RESOURCE
# (this CI machine's root lacks it) runc, crun and sbx-runc all refuse, so
# runs ask for limits below what conmon hands on.
podrun() { pod run --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 "$@"; }
case_podman_output_exit() {
	local o rc=0
	o=$(podrun --rm --network none "$IMG" sh -c 'echo hello; exit 3' 2>&1) || rc=$?
	[ "$rc" = 3 ] && [ "$o" = hello ] || { echo "rc=$rc out=$o"; return 1; }
}
case_podman_exec_kill_rm() {
	local c o rc=0
	c=$(podrun -d --network none "$IMG" sleep 100 2>&1) || { echo "run -d: $c"; return 1; }
	c=$(echo "$c" | tail -n 1)
	o=$(pod exec "$c" sh -c 'echo in-exec; exit 5' 2>&1) || rc=$?
	[ "$rc" = 5 ] && [ "$o" = in-exec ] || { echo "exec rc=$rc out=$o"; pod rm -f "$c" > /dev/null 2>&1; return 1; }
	pod kill "$c" > /dev/null 2>&1 || { echo "kill failed"; pod rm -f "$c" > /dev/null 2>&1; return 1; }
	pod wait "$c" > /dev/null 2>&1 || true
	o=$(pod inspect -f '{{.State.Status}}' "$c" 2>&1)
	pod rm "$c" > /dev/null 2>&1 || { echo "rm failed"; return 1; }
	[ "$o" = exited ] || { echo "after kill: $o"; return 1; }
}
PODMAN_CASES="output_exit exec_kill_rm"

# run_cases ENGINE LABEL CASES...: runs each case, appends "ENGINE LABEL CASE pass|fail" to $W/results.
run_cases() {
	local eng=$1 label=$2 c out
	shift 2
	for c in "$@"; do
		if out=$("case_${eng}_$c" 2>&1); then
			echo "$eng $label $c pass" >> "$W/results"
		else
			echo "$eng $label $c fail" >> "$W/results"
			echo "  $eng/$label/$c: $(echo "$out" | tail -n 3 | tr '\n' ' ')" >> "$W/why"
		fi
	done
}

# time_true ENGINE: mean wall time of `run /bin/true` over 5 runs, in ms.
time_true() {
	local eng=$1 t0 t1 i
	t0=$(date +%s%N)
	for i in 1 2 3 4 5; do
		case $eng in
		ctr) ctr_run --rm "$IMG" "$(cid)" /bin/true > /dev/null 2>&1 ;;
		docker) drun --rm "$IMG" /bin/true > /dev/null 2>&1 ;;
		podman) podrun --rm --network none "$IMG" /bin/true > /dev/null 2>&1 ;;
		esac
	done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 5000000))
}
