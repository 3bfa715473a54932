# Escape attempts from inside an environment. Every attack must fail; a test
# fails if the attack works. The probe (tests/helpers/probe.c) prints
# "BLOCKED: ..." (exit 0) or "ESCAPED: ..." (exit 1).

PROBE=/probe/probe

with_env() { ID=$(sbx create -v "$(probe_volume)" "$@"); }

# probe ATTACK [ARGS] inside $ID, as the environment's root.
attack() {
	local out
	set +e
	out=$(sbx exec "$ID" -- $PROBE "$@" 2>&1)
	local rc=$?
	set -e
	echo "$out"
	[ $rc = 0 ] && [[ "$out" == BLOCKED* ]] || fail "attack '$*' was not blocked (rc $rc): $out"
}

t_kernel_interfaces_blocked() {
	with_env
	for a in mount "umount /proc" mknod module bpf keyctl iouring perf pivot_root userns x32 i386 sysctl sysfs; do
		# shellcheck disable=SC2086
		attack $a
	done
	sbx rm "$ID"
}

t_privileges_dropped() {
	with_env
	attack caps
	attack nnp
	attack seccomp
	sbx rm "$ID"
}

t_tiocsti_blocked() {
	with_env
	attack tiocsti
	command -v script > /dev/null || { sbx rm "$ID"; skip "script(1) missing for the pty case"; }
	out=$(script -qec "$SBX_BIN exec -t $ID -- $PROBE tiocsti" /dev/null)
	assert_contains "$out" "BLOCKED"
	sbx rm "$ID"
}

t_host_secrets_invisible() {
	# A private key planted where host keys live: the directory (0710
	# root:ssl-cert) must look empty inside and the key must not open, so
	# the attack on /etc/ssl/private cannot pass on an empty directory.
	local key=""
	if is_root && [ -d /etc/ssl/private ]; then
		key=/etc/ssl/private/sbx-probe-$$.key
		echo "PRIVATE-KEY" > "$key"
		chmod 600 "$key"
	fi
	with_env
	set +e
	for f in /etc/shadow /etc/gshadow /root/.bash_history /etc/ssl/private $key; do
		attack read "$f" || { [ -z "$key" ] || rm -f "$key"; return 1; }
	done
	set -e
	[ -z "$key" ] || rm -f "$key"
	# A secret planted in a host home directory and in /root.
	is_root || skip_ok "planting a secret in /root needs root"
	secret=/root/.sbx-test-secret-$$
	echo "TOPSECRET" > "$secret"
	chmod 600 "$secret"
	out=$(sbx exec "$ID" -- sh -c "cat $secret 2>/dev/null; ls -a /root /home" 2>&1 || true)
	rm -f "$secret"
	assert_not_contains "$out" "TOPSECRET"
	assert_not_contains "$out" ".sbx-test-secret"
	attack read "$secret"
	sbx rm "$ID"
}

t_state_dir_and_other_envs_invisible() {
	with_env
	other=$(sbx create)
	sbx exec "$other" -- sh -c 'echo OTHER-ENV-SECRET > /root/secret'
	out=$(sbx exec "$ID" -- sh -c "ls -a $SBX_ROOT $SBX_RUN /var/lib/sbx /run/sbx 2>/dev/null; cat $SBX_ROOT/envs/$other/upper/root/secret 2>/dev/null; grep -r OTHER-ENV-SECRET /tmp /root /var /run 2>/dev/null" || true)
	assert_not_contains "$out" "OTHER-ENV-SECRET"
	assert_not_contains "$out" "$other"
	assert_not_contains "$out" "envs"
	attack read "$SBX_ROOT/envs/$other/upper/root/secret"
	sbx rm "$other" "$ID"
}

t_host_loopback_unreachable() {
	with_env
	port=$((20000 + RANDOM % 20000))
	python3 -m http.server "$port" --bind 127.0.0.1 > /dev/null 2>&1 &
	srv=$!
	# Reachable from the host (so the test can fail), not from inside: waited
	# for (a loaded machine takes seconds to start python).
	up() { python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 2)" 2> /dev/null; }
	eventually 30 up || { kill $srv; fail "test server not up"; }
	attack connect 127.0.0.1 "$port"
	attack connect 10.0.2.2 80
	kill $srv
	sbx rm "$ID"
}

t_no_network_but_loopback() {
	with_env
	out=$(sbx exec "$ID" -- cat /proc/net/dev)
	n=$(echo "$out" | grep -c ':' || true)
	assert_eq "$n" "1" "only lo: $out"
	sbx rm "$ID"
}

t_processes_outside_invisible() {
	with_env
	sleep 300 &
	host_pid=$!
	out=$(sbx exec "$ID" -- ps -e -o pid,comm 2>&1 || sbx exec "$ID" -- ls /proc)
	assert_not_contains "$out" "sbx-supervisor"
	# pid 1 is init, not ptraceable; host pids do not exist here.
	attack ptrace 1
	attack kill "$host_pid"
	kill $host_pid
	sbx rm "$ID"
}

t_inherited_fds_closed() {
	with_env
	exec 7< /etc/passwd 8> "$TMPDIR_TEST/fdtest"
	attack fds
	exec 7<&- 8>&-
	sbx rm "$ID"
}

t_setuid_gains_nothing() {
	is_root || skip_ok "rootless maps a single uid: there is no other user to switch to"
	with_env
	sbx exec "$ID" -- sh -c "cp $PROBE /root/suid && chmod 4755 /root/suid"
	out=$(sbx exec "$ID" -- setpriv --reuid 1000 --regid 1000 --clear-groups /root/suid setuid 2>&1 || true)
	assert_contains "$out" "BLOCKED"
	sbx rm "$ID"
}

t_chroot_escape_fails() {
	with_env
	is_root || skip_ok "needs root to plant the marker"
	marker=/root/.sbx-host-marker-$$
	touch "$marker"
	set +e
	out=$(sbx exec "$ID" -- $PROBE chroot_escape "$marker" 2>&1)
	set -e
	rm -f "$marker"
	assert_contains "$out" "BLOCKED"
	sbx rm "$ID"
}

t_proc_and_sys_readonly() {
	with_env
	out=$(sbx exec "$ID" -- sh -c '{ echo 1 > /proc/sys/kernel/domainname; } 2>&1; { echo 1 > /proc/sys/vm/drop_caches; } 2>&1; ls /sys | wc -l' || true)
	assert_contains "$out" "Read-only"
	assert_not_contains "$out" "drop_caches: Permission"
	[ "$(echo "$out" | tail -n 1)" = 0 ] || fail "/sys is not empty: $out"
	attack sysctl
	attack sysfs
	sbx rm "$ID"
}

t_env_root_is_unprivileged_on_host() {
	is_root || skip_ok "uid ranges apply only with root"
	with_env
	sbx exec "$ID" -- sleep 30 &
	eventually 20 host_has_process "^sleep 30$" || fail "sleep not found"
	pid=$(pgrep -f "^sleep 30$" | head -1)
	[ -n "$pid" ] || fail "sleep not found"
	uid=$(awk '/^Uid:/{print $2}' /proc/$pid/status)
	[ "$uid" -ge 65536 ] || fail "environment root runs as host uid $uid"
	# Two environments never share a host uid.
	other=$(sbx create)
	u1=$(sbx inspect "$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["host_uid"])')
	u2=$(sbx inspect "$other" | python3 -c 'import json,sys; print(json.load(sys.stdin)["host_uid"])')
	[ "$u1" != "$u2" ] || fail "two environments share host uid $u1"
	sbx rm "$ID" "$other"
	wait || true
}

# More kernel doors: the new mount API, open_by_handle_at ("shocker"),
# userfaultfd, the host clock, the kernel log, the runtime's own binary
# through /proc/1/exe (CVE-2019-5736), an abstract unix socket the host
# listens on, the cgroup tree, /proc files that act on the host.
more_doors() {
	local name=sbx-probe-$$-$RANDOM
	python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind('\0' + sys.argv[1]); s.listen(); time.sleep(60)" "$name" &
	local lpid=$!
	set +e
	local rc=0
	for a in newmount handle uffd settime syslog procexe "abstract $name" cgroup procfiles; do
		# shellcheck disable=SC2086
		attack $a || rc=1
	done
	set -e
	kill "$lpid" 2> /dev/null || true
	return $rc
}

t_more_kernel_doors_blocked() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	with_env
	more_doors
	sbx rm "$ID"
}

# The strict profile is no weaker than the default against any probe.
t_strict_profile_blocks_every_probe() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	# The strict profile allows no volume: the probe is copied in.
	ID=$(sbx create --policy strict)
	sbx exec -i "$ID" -- sh -c 'cat > /tmp/probe && chmod 755 /tmp/probe' < "$SBX_HELPERS/probe"
	local PROBE=/tmp/probe
	set +e
	local rc=0
	for a in mount "umount /proc" mknod module bpf keyctl iouring perf pivot_root userns x32 i386 sysctl sysfs \
		caps nnp seccomp tiocsti; do
		# shellcheck disable=SC2086
		attack $a || rc=1
	done
	for f in /etc/shadow /etc/gshadow /etc/ssl/private; do
		attack read "$f" || rc=1
	done
	set -e
	[ $rc = 0 ] || { sbx rm "$ID"; return 1; }
	more_doors || { sbx rm "$ID"; return 1; }
	sbx rm "$ID"
}

# What the environment writes, the host later reads and stores: a sparse
# file costs the environment no disk (nor quota), so a snapshot must not
# turn its holes into allocated zeros in the store (a `truncate -s 1T`
# would fill the host's disk), and the content must come back the same.
t_sparse_file_snapshot_stays_sparse() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'truncate -s 1G /root/sparse && printf middle | dd of=/root/sparse bs=1 seek=536870912 conv=notrunc 2>/dev/null && printf end >> /root/sparse'
	snap=$(sbx snapshot "$ID")
	used=$(du -s --block-size=1M "$SBX_ROOT/layers" | cut -f1)
	[ "$used" -lt 64 ] || fail "a 1 GiB sparse file took $used MiB in the store's layers"
	F=$(sbx fork "$snap")
	assert_eq "$(sbx exec "$F" -- stat -c %s /root/sparse)" "1073741827"
	assert_eq "$(sbx exec "$F" -- dd if=/root/sparse bs=1 skip=536870912 count=6 2>/dev/null)" "middle"
	assert_eq "$(sbx exec "$F" -- tail -c 3 /root/sparse)" "end"
	sbx rm "$ID" "$F" > /dev/null
}

# Init (pid 1, the host's sbx binary) out of reach: its /proc entries, its
# memory and descriptors (process_vm_readv, pidfd_getfd, kcmp), every
# signal (kill -9 1 included); afterwards the environment still runs
# commands. Then new namespaces (unshare, clone3, setns), personality flags,
# the kernel's usermode helpers (core_pattern, modprobe, release_agent), as
# root, as a user (--user nobody) and in a template that is not the host.
init_and_kernel_probes() {
	local a
	set +e
	local rc=0
	for a in initproc "signal_init inside" newns personality usermodehelper "ptrace 1"; do
		# shellcheck disable=SC2086
		attack $a || rc=1
	done
	set -e
	[ $rc = 0 ] || return 1
	out=$(sbx exec "$ID" -- sh -c 'kill -9 1; kill -STOP 1; kill -TERM 1; echo sent' 2>&1) || fail "kill 1: $out"
	assert_eq "$(sbx exec "$ID" -- echo alive)" "alive"
}

t_init_and_new_namespaces_out_of_reach() {
	with_env
	init_and_kernel_probes
	sbx rm "$ID"
	is_root || skip_ok "rootless maps one uid: --user has no other user to run as"
	with_env --user nobody
	init_and_kernel_probes
	sbx rm "$ID"
}

t_init_probes_in_a_minimal_template() {
	local r=$TMPDIR_TEST/rootfs
	mkdir -p "$r/bin" "$r/tmp" "$r/proc" "$r/dev" "$r/etc" "$r/root" "$r/probe"
	cp "$SBX_HELPERS/probe" "$r/bin/probe"
	local bb
	bb=$(command -v busybox || true)
	[ -n "$bb" ] && file -L "$bb" 2> /dev/null | grep -q static || bb=/bin/busybox
	[ -x "$bb" ] || skip "busybox-static is not installed"
	cp "$bb" "$r/bin/busybox"
	for a in sh kill echo; do ln -s busybox "$r/bin/$a"; done
	echo "root:x:0:0:root:/root:/bin/sh" > "$r/etc/passwd"
	ID=$(sbx create --template dir:"$r")
	local PROBE=/bin/probe
	init_and_kernel_probes
	sbx rm "$ID"
}

# What one environment leaves in IPC objects is not another's: SysV shared
# memory, /dev/shm, abstract unix sockets (the network namespace's), also
# with an egress allowlist (the proxy's namespace is the environment's own).
ipc_isolated() { # CREATE-OPTS...
	local name=sbx-probe-$$-$RANDOM
	A=$(sbx create -v "$(probe_volume)" "$@")
	ID=$(sbx create -v "$(probe_volume)" "$@")
	sbx exec "$A" -- sh -c 'ipcmk -M 4096 > /dev/null && echo A-SECRET > /dev/shm/a-marker'
	sbx exec "$A" -- python3 -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind('\0' + sys.argv[1]); s.listen(); time.sleep(30)" "$name" &
	local lpid=$!
	sleep 1
	[ "$(sbx exec "$A" -- sh -c 'ipcs -m | grep -c 0x')" -ge 1 ] || { kill $lpid; fail "A's segment is not there"; }
	out=$(sbx exec "$ID" -- sh -c 'ipcs -m; ls -A /dev/shm; cat /dev/shm/a-marker 2> /dev/null; true')
	assert_not_contains "$out" "0x"
	assert_not_contains "$out" "A-SECRET"
	assert_not_contains "$out" "a-marker"
	local rc=0
	attack abstract "$name" || rc=1
	kill $lpid 2> /dev/null || true
	wait $lpid 2> /dev/null || true
	sbx rm "$A" "$ID" > /dev/null
	return $rc
}

t_ipc_isolated_between_environments() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	command -v ipcmk > /dev/null || skip "ipcmk (util-linux) is not installed"
	ipc_isolated
	ipc_isolated --network allow=example.com
}

# File capabilities are privilege, like setuid bits: the environment's root
# may set them on its own files (CAP_SETFCAP in its namespace), but `sbx cp`
# out of it, run by the host's root, must not hand the host a binary that
# any host user can run with CAP_DAC_OVERRIDE (read /etc/shadow).
t_cp_out_drops_file_capabilities() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'command -v setcap' > /dev/null || { sbx rm "$ID"; skip "setcap (libcap2-bin) is not installed"; }
	sbx exec "$ID" -- sh -c 'mkdir -p /root/d && cp /bin/cat /root/d/cat && setcap cap_dac_override+ep /root/d/cat && cp /bin/cat /root/cat && setcap cap_dac_override+ep /root/cat'
	sbx cp "$ID:/root/d" "$TMPDIR_TEST/d"
	sbx cp "$ID:/root/cat" "$TMPDIR_TEST/cat"
	for f in "$TMPDIR_TEST/d/cat" "$TMPDIR_TEST/cat"; do
		[ -f "$f" ] || fail "$f was not copied"
		if python3 -c 'import os, sys; os.getxattr(sys.argv[1], "security.capability")' "$f" 2> /dev/null; then
			fail "$f reached the host with file capabilities: $(getcap "$f" 2>&1)"
		fi
	done
	sbx rm "$ID"
}

# A fork bomb must meet the pids limit even where sbx has no cgroup
# (rootless): the host's pid space (kernel.pid_max, often 32768) is shared,
# and an unbounded bomb leaves no process for anyone on the host.
t_pids_bounded_even_without_cgroups() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	ID=$(sbx create --pids 64)
	out=$(sbx exec "$ID" -- python3 -c '
import os, signal, time
kids = []
for i in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
print(len(kids))
for k in kids:
    os.kill(k, signal.SIGKILL)
for k in kids:
    os.waitpid(k, 0)
')
	[ "$out" -lt 64 ] || fail "$out processes started under --pids 64"
	assert_eq "$(sbx exec "$ID" -- echo alive)" "alive"
	sbx rm "$ID"
}

# A tree deeper than any walk descends (4500 nested
# directories cost the environment nothing) must not outlive its
# environment: `sbx rm` and `gc` leave no trash behind.
t_deep_tree_is_removed_with_its_environment() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	ID=$(sbx create)
	sbx exec "$ID" -- python3 -c '
import os
os.chdir("/root")
for i in range(4500):
    os.mkdir("d")
    os.chdir("d")
open("leaf", "w").write("x")'
	sbx rm "$ID" > /dev/null
	sbx gc > /dev/null
	left=$(ls -A "$SBX_ROOT/envs")
	[ -z "$left" ] || fail "left in the store after rm and gc: $left"
}

# The kernel's per-user inotify limits: an environment that takes every
# inotify instance it can must leave some for another environment and for
# the host user (rootless, all are the caller's uid on the host).
t_inotify_exhaustion_stays_inside() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	A=$(sbx create)
	ID=$(sbx create)
	sbx exec "$A" -- python3 -c '
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
n = 0
while libc.inotify_init1(0) >= 0:
    n += 1
print(n, flush=True)
time.sleep(10)' > "$TMPDIR_TEST/a.out" &
	local apid=$!
	for _ in $(seq 50); do [ -s "$TMPDIR_TEST/a.out" ] && break; sleep 0.1; done
	local check='import ctypes, os
fd = ctypes.CDLL(None, use_errno=True).inotify_init1(0)
print("ok" if fd >= 0 else os.strerror(ctypes.get_errno()))'
	local other host
	other=$(sbx exec "$ID" -- python3 -c "$check")
	host=$(python3 -c "$check")
	kill $apid 2> /dev/null || true
	wait $apid 2> /dev/null || true
	[ -s "$TMPDIR_TEST/a.out" ] || fail "the first environment did not report"
	assert_eq "$other" "ok" "another environment's inotify_init1 after the first took $(cat "$TMPDIR_TEST/a.out")"
	assert_eq "$host" "ok" "the host user's inotify_init1"
	sbx rm "$A" "$ID" > /dev/null
}

t_init_shows_nothing_of_its_creator() {
	# pid 1 is cloned from the supervisor, which is forked from the
	# creator: its cmdline and environ were `sbx create`'s, with host paths
	# and the values of --env. Inside, anyone may read /proc/1/cmdline.
	mkdir -p "$TMPDIR_TEST/creator-secret-dir"
	export SBX_CREATOR_ONLY=creator-env-value-$$
	ID=$(sbx create --env TOKEN=creator-arg-value-$$ -v "$TMPDIR_TEST/creator-secret-dir:/data" --name creator-name-$$)
	unset SBX_CREATOR_ONLY
	out=$(sbx exec "$ID" -- sh -c 'cat /proc/1/cmdline; cat /proc/1/environ 2>/dev/null' | tr '\0' ' ')
	assert_contains "$out" "sbx-init"
	assert_not_contains "$out" "creator-arg-value"
	assert_not_contains "$out" "creator-env-value"
	assert_not_contains "$out" "creator-secret-dir"
	assert_not_contains "$out" "creator-name"
	# what the environment gets on purpose still arrives
	assert_eq "$(sbx exec "$ID" -- printenv TOKEN)" "creator-arg-value-$$"
	# from a pool: the refiller is the creator
	sbx pool set host --size 1 > /dev/null
	for _ in $(seq 100); do
		[ "$(sbx pool ls --json | python3 -c 'import json,sys; print(sum(p.get("ready",0) for p in json.load(sys.stdin)["pools"]))' 2>/dev/null)" = 1 ] && break
		sleep 0.1
	done
	P=$(sbx create)
	out=$(sbx exec "$P" -- cat /proc/1/cmdline | tr '\0' ' ')
	assert_eq "$out" "sbx-init "
	sbx rm "$ID" "$P"
	sbx pool rm host > /dev/null
}
