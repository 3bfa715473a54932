# sbx-runc, the OCI runtime (docs/runc.md): its command line driven directly,
# then by the real engines from Debian (containerd's ctr, dockerd, podman),
# each started here with private state under $TMPDIR_TEST and killed after.
# t_runc_compare runs the same engine cases with runc and crun and prints the
# table docs/BENCHMARKS.md shows (SBX_RUNC_TABLE=FILE also writes it there).
RUNC_DIR=$(dirname "${BASH_SOURCE[0]}")/runc
source "$RUNC_DIR/engines.sh"
source "$RUNC_DIR/cases.sh"

sbx_runc() { echo "$SBX_SRC/$SBX_BUILD/bin/sbx-runc"; }
need() { command -v "$1" > /dev/null || skip "$1 is not installed (Debian package $2)"; }

# A bundle for direct tests: busybox root, config.json from a template.
mk_bundle() {
	local b=$1
	shift
	mkdir -p "$b"
	[ -d "$TMPDIR_TEST/bbroot" ] || busybox_rootfs "$TMPDIR_TEST/bbroot"
	cp -a "$TMPDIR_TEST/bbroot" "$b/rootfs"
	python3 - "$b/config.json" "$@" <<'PY'
import json, sys
out, args = sys.argv[1], sys.argv[2:]
caps = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID",
        "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
c = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "hostname": "sbxrunc",
     "process": {"args": args or ["sleep", "100"], "cwd": "/", "env": ["PATH=/bin", "FOO=bar"],
                 "user": {"uid": 0, "gid": 0},
                 "capabilities": {k: caps for k in ["bounding", "effective", "permitted"]}},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
                {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
                {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]}],
     "linux": {"namespaces": [{"type": t} for t in ["pid", "ipc", "uts", "mount", "network"]],
               "maskedPaths": ["/proc/kcore"], "readonlyPaths": ["/proc/sys"]},
     "annotations": {}}
json.dump(c, open(out, "w"), indent=1)
PY
}
# edit_spec BUNDLE PYTHON: runs PYTHON with `c` bound to the spec, saves it.
edit_spec() {
	python3 - "$1/config.json" "$2" <<'PY'
import json, sys
p, code = sys.argv[1], sys.argv[2]
c = json.load(open(p))
exec(code)
json.dump(c, open(p, "w"), indent=1)
PY
}
R() { timeout 30 "$(sbx_runc)" --root "$TMPDIR_TEST/state" "$@"; }
status_of() { R state "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])'; }

# create -> created (blocked before the user process), start -> running,
# the pid exits -> stopped; the pid in the pid file is the container's process.
t_runc_lifecycle() {
	local b=$TMPDIR_TEST/b pid
	mk_bundle "$b" sh -c 'echo "started $HOME" > /tmp/started; sleep 100'
	R create --bundle "$b" --pid-file "$TMPDIR_TEST/pid" c1
	pid=$(cat "$TMPDIR_TEST/pid")
	assert_eq "$(status_of c1)" created
	[ ! -e "$b/rootfs/tmp/started" ] || fail "the user process ran before start"
	R start c1
	assert_eq "$(status_of c1)" running
	for _ in $(seq 50); do [ -e "$b/rootfs/tmp/started" ] && break; sleep 0.05; done
	# HOME from the image's /etc/passwd when the spec sets none (as runc).
	assert_eq "$(cat "$b/rootfs/tmp/started")" "started /root"
	assert_contains "$(cat /proc/"$pid"/cmdline | tr '\0' ' ')" "sleep 100"
	expect_status 1 R start c1
	expect_status 1 R delete c1
	assert_contains "$ERR" "not stopped"
	R kill c1 9
	for _ in $(seq 100); do [ "$(status_of c1)" = stopped ] && break; sleep 0.05; done
	assert_eq "$(status_of c1)" stopped
	R state c1 | grep -q '"pid": 0' || fail "a stopped container reports pid 0"
	R delete c1
	expect_status 1 R state c1
	assert_contains "$ERR" "does not exist"
	# The shim's sequence: delete, then delete --force on the gone container.
	R delete --force c1
	expect_status 1 R delete c1
	[ ! -e "$TMPDIR_TEST/state/c1" ] || fail "state left behind"
}

# kill takes numbers, names and SIG names; a container killed by a signal
# has that signal as its status (the shim reaps it: here we are the parent
# of nothing, so look at the process instead).
t_runc_kill_signals() {
	local b=$TMPDIR_TEST/b
	mk_bundle "$b" sh -c 'trap "echo got-usr1 > /tmp/usr1" USR1; trap "exit 7" TERM; while :; do sleep 0.05; done'
	R create --bundle "$b" c2
	R start c2
	sleep 0.3
	R kill c2 10
	for _ in $(seq 60); do [ -e "$b/rootfs/tmp/usr1" ] && break; sleep 0.05; done
	assert_eq "$(cat "$b/rootfs/tmp/usr1")" got-usr1
	R kill c2 SIGTERM
	for _ in $(seq 100); do [ "$(status_of c2)" = stopped ] && break; sleep 0.05; done
	assert_eq "$(status_of c2)" stopped
	expect_status 1 R kill c2 NOSUCHSIG
	R delete c2
}

# Every hook kind runs, in its place, with the state on stdin.
t_runc_hooks() {
	local b=$TMPDIR_TEST/b m=$TMPDIR_TEST/marks
	mkdir -p "$m"
	mk_bundle "$b" sh -c 'echo user > /tmp/user-ran'
	printf '#!/bin/sh\ncat > "%s/$1.json"\n' "$m" > "$TMPDIR_TEST/hook.sh"
	chmod +x "$TMPDIR_TEST/hook.sh"
	# The in-container hooks (createContainer before pivot_root sees host
	# paths; startContainer runs in the container's root).
	cp "$TMPDIR_TEST/hook.sh" "$b/rootfs/hook.sh"
	mkdir -p "$b/rootfs$m"
	edit_spec "$b" "
h = '$TMPDIR_TEST/hook.sh'
c['hooks'] = {k: [{'path': h, 'args': ['hook', k]}] for k in ['prestart', 'createRuntime', 'createContainer', 'poststart', 'poststop']}
c['hooks']['startContainer'] = [{'path': '/hook.sh', 'args': ['hook', 'startContainer']}]
"
	R create --bundle "$b" c3
	for k in prestart createRuntime createContainer; do
		[ -s "$m/$k.json" ] || fail "$k hook did not run at create"
		assert_contains "$(cat "$m/$k.json")" '"id":"c3"'
	done
	[ ! -e "$m/poststart.json" ] || fail "poststart ran before start"
	R start c3
	[ -s "$m/poststart.json" ] || fail "poststart hook did not run"
	[ -s "$b/rootfs$m/startContainer.json" ] || fail "startContainer hook did not run in the container"
	for _ in $(seq 100); do [ "$(status_of c3)" = stopped ] && break; sleep 0.05; done
	R delete c3
	[ -s "$m/poststop.json" ] || fail "poststop hook did not run at delete"
	# A failing createRuntime hook fails create and leaves nothing.
	mk_bundle "$TMPDIR_TEST/b2"
	edit_spec "$TMPDIR_TEST/b2" "c['hooks'] = {'createRuntime': [{'path': '/bin/false'}]}"
	expect_status 1 R create --bundle "$TMPDIR_TEST/b2" c4
	assert_contains "$ERR" "createRuntime hook"
	expect_status 1 R state c4
}

# update: a zero field leaves the limit as it is (docker update --cpu-shares
# sends memory 0); a set field changes it. The pid sits in cgroupsPath.
t_runc_update_zero_unchanged() {
	local b=$TMPDIR_TEST/b cg pid
	mk_bundle "$b"
	edit_spec "$b" "c['linux']['resources'] = {'memory': {'limit': 100663296}, 'pids': {'limit': 50}}; c['linux']['cgroupsPath'] = '/sbxrunc-test/c5'"
	R create --bundle "$b" --pid-file "$TMPDIR_TEST/pid" c5
	pid=$(cat "$TMPDIR_TEST/pid")
	cg=/sys/fs/cgroup/memory/sbxrunc-test/c5
	local memf=$cg/memory.limit_in_bytes pidf=/sys/fs/cgroup/pids/sbxrunc-test/c5/pids.max
	if [ ! -d "$cg" ]; then
		cg=/sys/fs/cgroup/sbxrunc-test/c5
		memf=$cg/memory.max pidf=$cg/pids.max
	fi
	assert_eq "$(cat "$memf")" 100663296
	grep -qx "$pid" "$cg/cgroup.procs" || fail "the container's pid is not in its cgroupsPath"
	echo '{"memory": {"limit": 0, "swap": 0}, "pids": {"limit": 0}, "cpu": {"shares": 512}}' > "$TMPDIR_TEST/res.json"
	R update --resources "$TMPDIR_TEST/res.json" c5
	assert_eq "$(cat "$memf")" 100663296 "memory unchanged by a zero field"
	assert_eq "$(cat "$pidf")" 50 "pids unchanged by a zero field"
	echo '{"memory": {"limit": 134217728}}' | R update --resources - c5
	assert_eq "$(cat "$memf")" 134217728
	R delete --force c5
	[ ! -d "$cg" ] || fail "cgroup left behind"
	rmdir /sys/fs/cgroup/*/sbxrunc-test 2> /dev/null || true
}

# sbx's walls on top of the spec: seccomp (a second filter), capabilities
# cut to sbx's safe set (MKNOD, NET_RAW, AUDIT_WRITE go), masked paths; each
# annotation turns one off.
t_runc_walls_and_opt_out() {
	local b=$TMPDIR_TEST/b o
	mk_bundle "$b" sh -c 'grep -E "^(CapEff|Seccomp_filters)" /proc/self/status; echo timer=$(cat /proc/timer_list 2>/dev/null | wc -c); unshare -U true 2>/dev/null; echo unshare=$?'
	o=$(R run --bundle "$b" w1 2>&1)
	R delete --force w1
	# The spec's 14 cut to the safe set: CHOWN DAC_OVERRIDE FOWNER FSETID
	# KILL SETGID SETUID SETPCAP NET_BIND_SERVICE SYS_CHROOT SETFCAP.
	assert_contains "$o" "CapEff:	00000000800405fb"
	assert_contains "$o" "Seccomp_filters:	2" # the deny list and its personality filter
	assert_contains "$o" "unshare=1"
	assert_contains "$o" "timer=0"
	edit_spec "$b" "c['annotations'] = {'run.sbx.wall.capabilities': 'off', 'run.sbx.wall.seccomp': 'off', 'run.sbx.wall.mask': 'off'}"
	o=$(R run --bundle "$b" w2 2>&1)
	R delete --force w2
	assert_contains "$o" "CapEff:	00000000a80425fb"
	assert_contains "$o" "Seccomp_filters:	0"
	assert_not_contains "$o" "timer=0"
	# The global option does the same (for dockerd's runtimeArgs).
	o=$(timeout 30 "$(sbx_runc)" --root "$TMPDIR_TEST/state" --no-wall seccomp run --bundle "$b" w3 2>&1)
	R delete --force w3
	assert_contains "$o" "Seccomp_filters:	0"
}

# Errors: a missing command fails create with runc's words (docker maps them
# to 127), to stderr and as a JSON line in --log; features and --version.
t_runc_errors_features() {
	local b=$TMPDIR_TEST/b
	mk_bundle "$b" nosuchcmd
	expect_status 1 timeout 30 "$(sbx_runc)" --root "$TMPDIR_TEST/state" --log "$TMPDIR_TEST/log.json" --log-format json create --bundle "$b" e1
	assert_contains "$ERR" 'exec: "nosuchcmd": executable file not found in $PATH'
	python3 -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; assert l[-1]["level"]=="error" and "executable file not found" in l[-1]["msg"], l' "$TMPDIR_TEST/log.json"
	expect_status 1 R state e1
	# podman's form: --log-format=json --log=FILE, no --root.
	expect_status 1 timeout 30 "$(sbx_runc)" --log-format=json --log="$TMPDIR_TEST/log2.json" state nosuch
	grep -q '"level":"error"' "$TMPDIR_TEST/log2.json" || fail "no JSON error line"
	R features | python3 -c 'import json,sys; f=json.load(sys.stdin); assert "ociVersionMax" in f and "namespaces" in f["linux"]'
	assert_contains "$("$(sbx_runc)" --version)" "sbx-runc version"
}

# --console-socket: the pty master arrives over the socket (SCM_RIGHTS), the
# process has it as its controlling terminal.
t_runc_console_socket() {
	local b=$TMPDIR_TEST/b
	mk_bundle "$b" sh -c 'tty; echo done'
	edit_spec "$b" "c['process']['terminal'] = True"
	python3 - "$TMPDIR_TEST/console.sock" "$TMPDIR_TEST/console.out" <<'PY' &
import array, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(4096, socket.CMSG_SPACE(4))
for lvl, typ, data in anc:
    fds.frombytes(data[:4])
out = b""
m = fds[0]
while b"done" not in out:
    try:
        d = os.read(m, 4096)
    except OSError:
        break
    if not d:
        break
    out += d
open(sys.argv[2], "wb").write(out)
PY
	local py=$!
	for _ in $(seq 50); do [ -S "$TMPDIR_TEST/console.sock" ] && break; sleep 0.05; done
	R create --bundle "$b" --console-socket "$TMPDIR_TEST/console.sock" t1
	R start t1
	for _ in $(seq 100); do kill -0 $py 2> /dev/null || break; sleep 0.05; done
	kill $py 2> /dev/null || true
	R delete --force t1
	assert_contains "$(cat "$TMPDIR_TEST/console.out")" "/dev/pts/0"
}

# ---- engines ----
engine_setup() {
	W=$TMPDIR_TEST/w
	mkdir -p "$W" "$W/vol"
	VOL=$W/vol
	busybox_rootfs "$W/rootfs"
}

ctr_engine() {
	ENG_DIR=$W/ctd
	start_containerd "$ENG_DIR" || fail "containerd did not start"
	python3 "$RUNC_DIR/mkimage.py" oci "$W/rootfs" docker.io/library/sbxbb:latest "$W/img.tar"
	ctrc "$ENG_DIR" images import "$W/img.tar" > /dev/null
	IMG=docker.io/library/sbxbb:latest
}

t_runc_ctr() {
	need containerd containerd
	need ctr containerd
	engine_setup
	ctr_engine
	RT=$(sbx_runc)
	run_cases ctr sbx-runc $CTR_CASES
	stop_containerd "$ENG_DIR"
	cat "$W/results"
	if grep -q ' fail$' "$W/results"; then cat "$W/why"; fail "ctr cases failed"; fi
}

docker_engine() {
	ENG_DIR=$W/dk
	start_dockerd "$ENG_DIR" "$(sbx_runc)" || fail "dockerd did not start"
	python3 "$RUNC_DIR/mkimage.py" rootfs "$W/rootfs" "$W/rootfs.tar"
	dockerc "$ENG_DIR" import "$W/rootfs.tar" sbxbb:latest > /dev/null
	IMG=sbxbb:latest
}

t_runc_docker() {
	need dockerd docker.io
	need containerd containerd
	[ -x /usr/bin/docker ] || skip "/usr/bin/docker is not installed (Debian package docker.io)"
	engine_setup
	docker_engine
	RT=sbx
	run_cases docker sbx-runc $DOCKER_CASES
	stop_dockerd "$ENG_DIR"
	cat "$W/results"
	if grep -q ' fail$' "$W/results"; then cat "$W/why"; fail "docker cases failed"; fi
}

podman_engine() {
	ENG_DIR=$W/pm
	mkdir -p "$ENG_DIR/tmp"
	python3 "$RUNC_DIR/mkimage.py" rootfs "$W/rootfs" "$W/rootfs.tar"
	pod import "$W/rootfs.tar" localhost/sbxbb:latest > "$W/import.log" 2>&1 || fail "podman import failed: $(cat "$W/import.log")"
	IMG=localhost/sbxbb:latest
}

t_runc_podman() {
	need podman podman
	need conmon conmon
	engine_setup
	RT=$(sbx_runc)
	podman_engine
	run_cases podman sbx-runc $PODMAN_CASES
	pod rm -af > /dev/null 2>&1 || true
	umount_under "$ENG_DIR"
	cat "$W/results"
	if grep -q ' fail$' "$W/results"; then cat "$W/why"; fail "podman cases failed"; fi
}

# The same cases with sbx-runc, runc and crun in one run, and `run /bin/true`
# per engine and runtime: the table of docs/BENCHMARKS.md. Fails only if
# sbx-runc fails a case that runc passes.
t_runc_compare() {
	need runc runc
	need crun crun
	need containerd containerd
	engine_setup
	local times=$W/times rt label
	ctr_engine
	for label in sbx-runc runc crun; do
		case $label in sbx-runc) RT=$(sbx_runc) ;; *) RT=$(command -v $label) ;; esac
		run_cases ctr "$label" $CTR_CASES
		echo "ctr $label $(time_true ctr)" >> "$times"
	done
	stop_containerd "$ENG_DIR"
	if command -v dockerd > /dev/null && [ -x /usr/bin/docker ]; then
		docker() { /usr/bin/docker "$@"; }
		docker_engine
		for label in sbx-runc runc crun; do
			case $label in sbx-runc) RT=sbx ;; runc) RT=runc ;; crun) RT=crun ;; esac
			run_cases docker "$label" $DOCKER_CASES
			echo "docker $label $(time_true docker)" >> "$times"
		done
		stop_dockerd "$ENG_DIR"
	fi
	if command -v podman > /dev/null; then
		RT=$(sbx_runc)
		podman_engine
		for label in sbx-runc runc crun; do
			case $label in sbx-runc) RT=$(sbx_runc) ;; *) RT=$(command -v $label) ;; esac
			run_cases podman "$label" $PODMAN_CASES
			echo "podman $label $(time_true podman)" >> "$times"
		done
		pod rm -af > /dev/null 2>&1 || true
		umount_under "$ENG_DIR"
	fi
	python3 - "$W/results" "$times" > "$W/table.md" <<'PY'
import sys
res = {}
order = []
for l in open(sys.argv[1]):
    eng, rt, case, v = l.split()
    if (eng, case) not in order:
        order.append((eng, case))
    res[(eng, case, rt)] = v
rts = ["sbx-runc", "runc", "crun"]
print("| engine | case | " + " | ".join(rts) + " |")
print("|---|---|" + "---|" * len(rts))
for eng, case in order:
    print(f"| {eng} | {case} | " + " | ".join(res.get((eng, case, r), "-") for r in rts) + " |")
t = {}
for l in open(sys.argv[2]):
    eng, rt, ms = l.split()
    t[(eng, rt)] = ms
print()
print("| `run /bin/true` (ms, mean of 5) | " + " | ".join(rts) + " |")
print("|---|" + "---|" * len(rts))
for eng in sorted({e for e, _ in t}, key=["ctr", "docker", "podman"].index):
    cells = []
    for r in rts:
        # A time is meaningful only where the runtime actually ran the container.
        ok = res.get((eng, "output_exit", r)) == "pass"
        cells.append(t.get((eng, r), "-") if ok else "n/a (fails)")
    print(f"| {eng} | " + " | ".join(cells) + " |")
PY
	# The first reason each runtime failed a case, per engine.
	[ ! -s "$W/why" ] || { echo; echo "First failure per engine and runtime:"; awk -F/ '!seen[$1"/"$2]++' "$W/why" | cut -c1-240; } >> "$W/table.md"
	cat "$W/table.md"
	[ -z "${SBX_RUNC_TABLE:-}" ] || cp "$W/table.md" "$SBX_RUNC_TABLE"
	# sbx-runc must pass whatever runc passes.
	local bad
	bad=$(awk '{k=$1" "$3} $2=="runc"&&$4=="pass"{ok[k]=1} $2=="sbx-runc"&&$4=="fail"{f[k]=1} END{for(k in f) if(ok[k]) print k}' "$W/results")
	[ -z "$bad" ] || fail "sbx-runc fails where runc passes: $bad"
}

# A pod's containers: the second joins the first's network, ipc, uts and pid
# namespaces by path (as the CRI plugin writes them), and sees them.
t_runc_join_namespaces() {
	local b1=$TMPDIR_TEST/b1 b2=$TMPDIR_TEST/b2 pid o
	mk_bundle "$b1" sleep 100
	edit_spec "$b1" "c['hostname'] = 'podhost'"
	R create --bundle "$b1" --pid-file "$TMPDIR_TEST/pid1" sandbox
	R start sandbox
	pid=$(cat "$TMPDIR_TEST/pid1")
	mk_bundle "$b2" sh -c 'hostname; readlink /proc/self/ns/net; readlink /proc/self/ns/ipc; ps -o pid,args | grep -c "[s]leep 100"'
	edit_spec "$b2" "
c.pop('hostname')
c['linux']['namespaces'] = [{'type': 'mount'}] + [{'type': t, 'path': '/proc/$pid/ns/' + n} for t, n in [('network', 'net'), ('ipc', 'ipc'), ('uts', 'uts'), ('pid', 'pid')]]
"
	local netns
	netns=$(readlink /proc/"$pid"/ns/net)
	o=$(R run --bundle "$b2" member 2>&1)
	R delete --force member
	R delete --force sandbox
	assert_eq "$(echo "$o" | sed -n 1p)" podhost
	assert_eq "$(echo "$o" | sed -n 2p)" "$netns" "network namespace shared"
	assert_eq "$(echo "$o" | sed -n 4p)" 1 "the sandbox's process is visible in the shared pid namespace"
}

# linux.devices (docker --device, CDI device nodes): made in the container's
# /dev with their numbers, mode and owner.
t_runc_devices() {
	local b=$TMPDIR_TEST/b o
	mk_bundle "$b" sh -c 'stat -c "%F %t:%T %a %u" /dev/sbxnull /dev/sub/sbxzero; echo hi > /dev/sbxnull; head -c 3 /dev/sub/sbxzero | wc -c'
	edit_spec "$b" "c['linux']['devices'] = [{'path': '/dev/sbxnull', 'type': 'c', 'major': 1, 'minor': 3, 'fileMode': 0o666, 'uid': 0, 'gid': 0}, {'path': '/dev/sub/sbxzero', 'type': 'c', 'major': 1, 'minor': 5, 'fileMode': 0o640, 'uid': 65534}, {'path': '/dev/null', 'type': 'c', 'major': 1, 'minor': 3}]"
	o=$(R run --bundle "$b" dv1 2>&1)
	R delete --force dv1
	assert_contains "$o" "character special file 1:3 666 0"
	assert_contains "$o" "character special file 1:5 640 65534"
	assert_contains "$o" $'\n3'
}

# A user namespace with the spec's mappings (ctr --uidmap, hostUsers: false):
# root inside is host uid 100000, the image chowned to match.
t_runc_userns() {
	local b=$TMPDIR_TEST/b o pid
	mk_bundle "$b" sh -c 'id -u; cat /proc/self/uid_map; echo x > /tmp/f && echo wrote; sleep 100'
	chown -R 100000:100000 "$b/rootfs"
	edit_spec "$b" "c['linux']['namespaces'].append({'type': 'user'}); c['linux']['uidMappings'] = [{'containerID': 0, 'hostID': 100000, 'size': 65536}]; c['linux']['gidMappings'] = [{'containerID': 0, 'hostID': 100000, 'size': 65536}]"
	R create --bundle "$b" --pid-file "$TMPDIR_TEST/pid" u1 > "$TMPDIR_TEST/out" 2>&1
	R start u1
	pid=$(cat "$TMPDIR_TEST/pid")
	for _ in $(seq 60); do grep -q wrote "$TMPDIR_TEST/out" && break; sleep 0.05; done
	o=$(cat "$TMPDIR_TEST/out")
	assert_eq "$(awk '/^Uid:/ {print $2}' /proc/"$pid"/status)" 100000 "host uid of the container's root"
	R delete --force u1
	assert_contains "$o" $'0\n         0     100000      65536'
	assert_contains "$o" wrote
}

# The spec's seccomp profile and sbx's deny list both apply (two filters,
# the stricter answer wins): the profile denies mkdir, sbx denies unshare.
t_runc_seccomp_merge() {
	local b=$TMPDIR_TEST/b o
	mk_bundle "$b" sh -c 'mkdir /tmp/d 2>&1; echo mkdir=$?; unshare -U true 2>/dev/null; echo unshare=$?; grep Seccomp_filters /proc/self/status'
	edit_spec "$b" "c['linux']['seccomp'] = {'defaultAction': 'SCMP_ACT_ALLOW', 'architectures': ['SCMP_ARCH_X86_64'], 'syscalls': [{'names': ['mkdir', 'mkdirat'], 'action': 'SCMP_ACT_ERRNO', 'errnoRet': 1}]}"
	o=$(R run --bundle "$b" s1 2>&1)
	R delete --force s1
	assert_contains "$o" "Operation not permitted"
	assert_contains "$o" "mkdir=1"
	assert_contains "$o" "unshare=1"
	assert_contains "$o" "Seccomp_filters:	3"
	edit_spec "$b" "c['annotations'] = {'run.sbx.wall.seccomp': 'off'}"
	o=$(R run --bundle "$b" s2 2>&1)
	R delete --force s2
	assert_contains "$o" "mkdir=1"
	assert_contains "$o" "Seccomp_filters:	1"
}

# --systemd-cgroup: slice:prefix:name is the cgroupfs path systemd would use
# (no systemd here: sbx-runc manages it directly); kill --all reaches every
# process of the group.
t_runc_systemd_path_kill_all() {
	local b=$TMPDIR_TEST/b pid cg
	mk_bundle "$b" sh -c 'sleep 100 & sleep 100 & wait'
	edit_spec "$b" "c['linux']['cgroupsPath'] = 'sbxtest.slice:sbxrunc:k1'"
	timeout 30 "$(sbx_runc)" --root "$TMPDIR_TEST/state" --systemd-cgroup create --bundle "$b" --pid-file "$TMPDIR_TEST/pid" k1
	R start k1
	pid=$(cat "$TMPDIR_TEST/pid")
	cg=/sys/fs/cgroup/pids/sbxtest.slice/sbxrunc-k1.scope
	[ -d "$cg" ] || cg=/sys/fs/cgroup/sbxtest.slice/sbxrunc-k1.scope
	for _ in $(seq 60); do [ "$(wc -l < "$cg/cgroup.procs")" -ge 3 ] && break; sleep 0.05; done
	grep -qx "$pid" "$cg/cgroup.procs" || fail "pid not in the systemd-style path"
	assert_eq "$(wc -l < "$cg/cgroup.procs")" 3
	R kill --all k1 KILL
	for _ in $(seq 100); do [ "$(status_of k1)" = stopped ] && break; sleep 0.05; done
	assert_eq "$(status_of k1)" stopped
	R delete k1
	[ ! -d "$cg" ] || fail "cgroup left"
	rmdir /sys/fs/cgroup/*/sbxtest.slice 2> /dev/null || true
}

# A tmpfs with a propagation option (docker --tmpfs and --mount type=tmpfs
# write "rprivate"): the propagation applies to the new tmpfs, not to the
# directory it covers (which is no mount point: EINVAL).
t_runc_tmpfs_propagation() {
	local b=$TMPDIR_TEST/b o
	mk_bundle "$b" sh -c 'touch /x/a && echo wrote; grep " /[xy] " /proc/self/mountinfo; grep " /y " /proc/mounts'
	edit_spec "$b" "c['mounts'] += [{'destination': '/x', 'type': 'tmpfs', 'source': 'tmpfs', 'options': ['noexec', 'nosuid', 'nodev', 'rprivate']}, {'destination': '/y', 'type': 'tmpfs', 'source': 'tmpfs', 'options': ['ro', 'rshared', 'size=1m']}]; c['root']['readonly'] = True"
	o=$(R run --bundle "$b" tp1 2>&1) || fail "run: $o"
	R delete --force tp1
	assert_contains "$o" wrote
	assert_contains "$o" "tmpfs /y tmpfs ro"
	assert_not_contains "$(echo "$o" | grep ' /x ')" "shared:"
	# rshared took on the new tmpfs (and only there: /x stays private).
	assert_contains "$(echo "$o" | grep ' /y .* - ')" "shared:"
}

# list as runc prints it: a table, -q the ids only, --format json the state
# objects as an array (go-runc's List parses that).
t_runc_list_formats() {
	local b=$TMPDIR_TEST/b o
	trap 'R delete --force l1 > /dev/null 2>&1 || true' EXIT
	mk_bundle "$b"
	assert_eq "$(R list --format json)" "[]"
	R create --bundle "$b" --pid-file "$TMPDIR_TEST/pid" l1
	o=$(R list --format json)
	python3 -c '
import json, sys
l = json.loads(sys.argv[1])
assert isinstance(l, list) and len(l) == 1, l
s = l[0]
assert s["id"] == "l1" and s["status"] == "created" and s["pid"] == int(sys.argv[2]), s
assert s["bundle"] == sys.argv[3] and "created" in s and "ociVersion" in s, s
' "$o" "$(cat "$TMPDIR_TEST/pid")" "$b" || fail "list --format json: $o"
	assert_eq "$(R list -q)" l1
	assert_eq "$(R list --quiet)" l1
	o=$(R list)
	assert_contains "$(echo "$o" | head -n 1)" "ID"
	assert_contains "$(echo "$o" | sed -n 2p)" "l1"
	assert_contains "$(echo "$o" | sed -n 2p)" "created"
	expect_status 1 R list --format yaml
	R delete --force l1
}

# linux.resources that docker run writes and runc applies: memory
# swappiness and disableOOMKiller (--memory-swappiness, --oom-kill-disable),
# blockIO throttles (--device-read-bps, --device-write-iops), and update
# changes them too.
t_runc_resources_memory_blkio() {
	local b=$TMPDIR_TEST/b cg blk dev
	trap 'R delete --force r1 > /dev/null 2>&1 || true' EXIT
	[ -d /sys/fs/cgroup/memory ] || skip "a cgroup v1 memory hierarchy (swappiness, oom_control)"
	blk=/sys/fs/cgroup/blkio
	[ -e $blk/blkio.throttle.read_bps_device ] || skip "a cgroup v1 blkio hierarchy"
	dev=$(for d in /sys/block/*; do case ${d##*/} in loop* | ram* | zram* | nbd*) ;; *) cat "$d/dev" && break ;; esac; done)
	[ -n "$dev" ] || skip "a block device"
	mk_bundle "$b"
	edit_spec "$b" "
maj, mnr = map(int, '$dev'.split(':'))
c['linux']['cgroupsPath'] = '/sbxrunc-test/r1'
c['linux']['resources'] = {'memory': {'limit': 100663296, 'swappiness': 10, 'disableOOMKiller': True},
    'blockIO': {'throttleReadBpsDevice': [{'major': maj, 'minor': mnr, 'rate': 1048576}],
                'throttleWriteIOPSDevice': [{'major': maj, 'minor': mnr, 'rate': 300}]}}"
	R create --bundle "$b" r1
	cg=/sys/fs/cgroup/memory/sbxrunc-test/r1
	assert_eq "$(cat $cg/memory.swappiness)" 10
	assert_contains "$(cat $cg/memory.oom_control)" "oom_kill_disable 1"
	assert_eq "$(cat $blk/sbxrunc-test/r1/blkio.throttle.read_bps_device)" "$dev 1048576"
	assert_eq "$(cat $blk/sbxrunc-test/r1/blkio.throttle.write_iops_device)" "$dev 300"
	# update: absent fields stay, given ones change.
	echo '{"memory": {"swappiness": 20}, "blockIO": {"throttleReadBpsDevice": [{"major": '"${dev%:*}"', "minor": '"${dev#*:}"', "rate": 2097152}]}}' | R update --resources - r1
	assert_eq "$(cat $cg/memory.swappiness)" 20
	assert_contains "$(cat $cg/memory.oom_control)" "oom_kill_disable 1"
	assert_eq "$(cat $blk/sbxrunc-test/r1/blkio.throttle.read_bps_device)" "$dev 2097152"
	assert_eq "$(cat $blk/sbxrunc-test/r1/blkio.throttle.write_iops_device)" "$dev 300"
	R delete --force r1
	[ ! -d "$blk/sbxrunc-test/r1" ] || fail "blkio cgroup left behind"
	rmdir /sys/fs/cgroup/*/sbxrunc-test 2> /dev/null || true
}

# runc exec ID CMD... without --process: the bundle's process with the
# command replaced and --env/--cwd/--user/--additional-gids/--cap applied;
# options after the id belong to the command.
t_runc_exec_command_line() {
	local b=$TMPDIR_TEST/b o
	trap 'R delete --force x1 > /dev/null 2>&1 || true' EXIT
	mk_bundle "$b" sleep 100
	R create --bundle "$b" x1
	R start x1
	o=$(R exec x1 sh -c 'echo "$0 $FOO $(pwd) $(id -u):$(id -g)"' 2>&1) || fail "exec: $o"
	assert_eq "$o" "sh bar / 0:0"
	o=$(R exec --env A=1 -e B=2 --cwd /tmp -u 65534:65534 -g 5 -g 7 x1 sh -c 'echo "$A$B $FOO $(pwd) $(id -u):$(id -g) $(id -G)"' 2>&1) || fail "exec: $o"
	assert_eq "$o" "12 bar /tmp 65534:65534 65534 5 7"
	# The exit status is the command's; a missing command is runc's error.
	expect_status 3 R exec x1 sh -c 'exit 3'
	expect_status 1 R exec x1 nosuchcmd
	assert_contains "$ERR" 'executable file not found'
	expect_status 1 R exec x1
	assert_contains "$ERR" "exec needs --process FILE or a command"
	# --cap adds to the sets (within sbx's safe set: KILL is in it).
	edit_spec "$b" "c['process']['capabilities'] = {k: ['CAP_CHOWN'] for k in ['bounding', 'effective', 'permitted']}"
	o=$(R exec --cap CAP_KILL x1 grep CapEff /proc/self/status)
	assert_contains "$o" "0000000000000021"
	R delete --force x1
}

# ps as runc prints it: the host's ps table for the container's pids (what
# go-runc's Top parses: `ps --format table ID -ef`), --format json the pids.
t_runc_ps_table() {
	command -v ps > /dev/null || skip "ps is not installed (Debian package procps)"
	local b=$TMPDIR_TEST/b o pid
	trap 'R delete --force ps1 > /dev/null 2>&1 || true' EXIT
	mk_bundle "$b" sh -c 'sleep 100 & sleep 100 & wait'
	R create --bundle "$b" --pid-file "$TMPDIR_TEST/pid" ps1
	R start ps1
	pid=$(cat "$TMPDIR_TEST/pid")
	for _ in $(seq 60); do [ "$(R ps --format json ps1 | tr ',' '\n' | wc -l)" -ge 3 ] && break; sleep 0.05; done
	o=$(R ps ps1)
	assert_contains "$(echo "$o" | head -n 1)" "PID"
	assert_eq "$(echo "$o" | grep -c 'sleep 100')" 3 # sh -c '...' and its two sleeps
	assert_eq "$(echo "$o" | wc -l)" 4
	o=$(R ps --format table ps1 -o pid,comm)
	assert_eq "$(echo "$o" | head -n 1 | tr -s ' ')" " PID COMMAND"
	assert_contains "$o" "$pid sh"
	assert_not_contains "$o" "$$ "
	assert_eq "$(R ps --format json ps1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" 3
	expect_status 1 R ps --format yaml ps1
	R delete --force ps1
}

# A created container (waiting for start) dies of SIGTERM as runc's does
# (podman stop of an initialised container; a shim's kill before start), not
# only of SIGKILL; signal 0 checks that the container is alive.
t_runc_signal_created() {
	local b=$TMPDIR_TEST/b
	trap 'R delete --force sc1 > /dev/null 2>&1 || true' EXIT
	mk_bundle "$b" sh -c 'echo ran > /tmp/ran'
	R create --bundle "$b" sc1
	R kill sc1 0
	R kill sc1 TERM
	for _ in $(seq 100); do [ "$(status_of sc1)" = stopped ] && break; sleep 0.05; done
	assert_eq "$(status_of sc1)" stopped
	[ ! -e "$b/rootfs/tmp/ran" ] || fail "the user process ran"
	expect_status 1 R kill sc1 0
	assert_contains "$ERR" "not running"
	R delete sc1
}

# events as runc prints them: --stats one {"type":"stats"} line with cpu,
# memory and pids from the container's cgroup (go-runc's Stats); without it
# a line every --interval and an "oom" event when the OOM killer strikes,
# ending when the container does.
t_runc_events() {
	local b=$TMPDIR_TEST/b o
	trap 'R delete --force ev1 > /dev/null 2>&1 || true' EXIT
	mk_bundle "$b" sh -c 'sleep 100 & sleep 3; x=$(head -c 200000000 /dev/zero | tr "\0" a); sleep 100'
	edit_spec "$b" "c['linux']['resources'] = {'memory': {'limit': 33554432, 'swap': 33554432}, 'pids': {'limit': 50}}"
	R create --bundle "$b" ev1
	R start ev1
	o=$(R events --stats ev1)
	python3 -c '
import json, sys
e = json.loads(sys.argv[1])
assert e["type"] == "stats" and e["id"] == "ev1", e
d = e["data"]
assert d["pids"]["limit"] == 50 and d["pids"]["current"] >= 1, d["pids"]
assert d["memory"]["usage"]["limit"] == 33554432 and d["memory"]["usage"]["usage"] > 0, d["memory"]["usage"]
assert d["cpu"]["usage"]["total"] > 0, d["cpu"]
assert isinstance(d["memory"].get("raw"), dict)
' "$o" || fail "events --stats: $o"
	# The stream: stats lines, then the OOM kill of pid 1's pipeline.
	o=$(timeout 20 "$(sbx_runc)" --root "$TMPDIR_TEST/state" events --interval 300ms ev1 | head -n 30 | tr '\n' ' ' &
		sleep 6; R kill ev1 KILL > /dev/null 2>&1 || true)
	assert_contains "$o" '"type":"stats"'
	assert_contains "$o" '{"type":"oom","id":"ev1"}'
	for _ in $(seq 100); do [ "$(status_of ev1)" = stopped ] && break; sleep 0.05; done
	expect_status 1 R events --stats ev1
	expect_status 1 R events --interval bogus ev1
	R delete --force ev1
}

# features tells the truth (the runtime spec's features.md): each hook kind
# once, every seccomp action and operator the profile parser takes, the
# mount options it knows.
t_runc_features_truthful() {
	R features | python3 -c '
import json, sys
f = json.load(sys.stdin)
assert f["hooks"] == ["prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"], f["hooks"]
sc = f["linux"]["seccomp"]
for a in ["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_LOG", "SCMP_ACT_TRAP"]:
    assert a in sc["actions"], (a, sc)
assert "SCMP_ACT_NOTIFY" not in sc["actions"], sc
for o in ["SCMP_CMP_EQ", "SCMP_CMP_NE", "SCMP_CMP_MASKED_EQ"]:
    assert o in sc["operators"], (o, sc)
assert "SCMP_ARCH_X86_64" in sc["archs"], sc
mo = f["mountOptions"]
assert len(mo) == len(set(mo)), mo
for o in ["rshared", "runbindable", "nodiratime", "tmpcopyup", "ro", "rbind"]:
    assert o in mo, (o, mo)
' || fail "features: $(R features)"
}

# runc update's own flags (runc update ID --memory 64m --pids-limit 20):
# the same as a resources document with those fields.
t_runc_update_flags() {
	local b=$TMPDIR_TEST/b cg memf pidf quotaf
	trap 'R delete --force uf1 > /dev/null 2>&1 || true' EXIT
	mk_bundle "$b"
	edit_spec "$b" "c['linux']['resources'] = {'memory': {'limit': 100663296}, 'pids': {'limit': 50}}; c['linux']['cgroupsPath'] = '/sbxrunc-test/uf1'"
	R create --bundle "$b" uf1
	cg=/sys/fs/cgroup/memory/sbxrunc-test/uf1
	memf=$cg/memory.limit_in_bytes pidf=/sys/fs/cgroup/pids/sbxrunc-test/uf1/pids.max
	quotaf=/sys/fs/cgroup/cpu/sbxrunc-test/uf1/cpu.cfs_quota_us
	if [ ! -d "$cg" ]; then
		cg=/sys/fs/cgroup/sbxrunc-test/uf1
		memf=$cg/memory.max pidf=$cg/pids.max quotaf=
	fi
	R update --memory 64m --pids-limit 20 --cpu-quota 25000 uf1
	assert_eq "$(cat "$memf")" 67108864
	assert_eq "$(cat "$pidf")" 20
	[ -z "$quotaf" ] || assert_eq "$(cat "$quotaf")" 25000
	R update --memory=128MiB uf1
	assert_eq "$(cat "$memf")" 134217728
	assert_eq "$(cat "$pidf")" 20 "a flag not given leaves its limit"
	expect_status 1 R update --memory lots uf1
	expect_status 1 R update uf1
	R delete --force uf1
	rmdir /sys/fs/cgroup/*/sbxrunc-test 2> /dev/null || true
}
