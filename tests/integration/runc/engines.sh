# Private engines for test_runc.sh (sourced). Each start_* puts all its state
# under $1 (a directory of the test's own), never /var/lib/docker or
# /run/containerd's state; stop_* kills what start_* started (by pid) and
# unmounts. What the engines hard-code and no option moves: containerd 1.6's
# shim binds its socket in /run/containerd/s/ (removed when the shim exits),
# dockerd 20.10 makes /run/docker/plugins (empty). The trust key goes to the
# private directory ("deprecated-key-path"), ctr's FIFOs and the runc root
# too (--fifo-dir, --runc-root).

# busybox_rootfs DIR: a busybox-static root with passwd/group for user tests.
busybox_rootfs() {
	local r=$1
	mkdir -p "$r"/{bin,proc,sys,dev,tmp,etc,root,data,ro,mnt}
	cp /bin/busybox "$r/bin/busybox"
	for a in $("$r/bin/busybox" --list); do
		[ -e "$r/bin/$a" ] || ln -s busybox "$r/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$r/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' > "$r/etc/group"
}

start_containerd() {
	local d=$1
	mkdir -p "$d"
	# The shim's socket directory (see above): removed after, only if this
	# test made it and it is empty again.
	[ -e /run/containerd ] || touch "$d/made-run-containerd"
	cat > "$d/config.toml" <<TOML
version = 2
root = "$d/root"
state = "$d/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$d/containerd.sock"
[ttrpc]
  address = "$d/containerd.sock.ttrpc"
[debug]
  address = "$d/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"
TOML
	containerd --config "$d/config.toml" > "$d/containerd.log" 2>&1 &
	echo $! > "$d/containerd.pid"
	local i
	for i in $(seq 100); do
		ctr --address "$d/containerd.sock" version > /dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$d/containerd.log" >&2
	return 1
}

# ctrc DIR ARGS...: ctr against the private containerd.
ctrc() {
	local d=$1
	shift
	timeout 60 ctr --address "$d/containerd.sock" "$@"
}

stop_containerd() {
	local d=$1 pid
	pid=$(cat "$d/containerd.pid" 2> /dev/null) || return 0
	# Tasks first (their shims are ours too).
	for t in $(ctrc "$d" tasks ls -q 2> /dev/null); do
		ctrc "$d" tasks kill -s SIGKILL "$t" > /dev/null 2>&1 || true
	done
	for c in $(ctrc "$d" containers ls -q 2> /dev/null); do
		ctrc "$d" tasks delete -f "$c" > /dev/null 2>&1 || true
		ctrc "$d" containers delete "$c" > /dev/null 2>&1 || true
	done
	kill "$pid" 2> /dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2> /dev/null || true
	if [ -e "$d/made-run-containerd" ]; then
		# Exiting shims remove their sockets a moment later.
		for _ in $(seq 30); do rmdir /run/containerd/s /run/containerd 2> /dev/null && break; sleep 0.1; done
	fi
	# Shims of this containerd (their command line names its address).
	for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $d/containerd.sock" || true); do
		kill -9 "$p" 2> /dev/null || true
	done
	umount_under "$d"
}

umount_under() {
	local d=$1 m
	for m in $(awk -v d="$d" '$5 ~ "^"d {print $5}' /proc/self/mountinfo | sort -r); do
		umount -l "$m" 2> /dev/null || true
	done
}

start_dockerd() {
	local d=$1 sbx_runc=$2
	mkdir -p "$d/data" "$d/exec"
	[ -e /run/docker ] || touch "$d/made-run-docker"
	# A containerd of its own (dockerd would otherwise start one under
	# its exec-root, which is fine too, but then we could not kill it by pid).
	start_containerd "$d/ctd" || return 1
	cat > "$d/daemon.json" <<JSON
{"runtimes": {"sbx": {"path": "$sbx_runc"}, "crun": {"path": "$(command -v crun || echo /usr/bin/crun)"}},
 "deprecated-key-path": "$d/key.json"}
JSON
	dockerd --data-root "$d/data" --exec-root "$d/exec" --host "unix://$d/docker.sock" --pidfile "$d/docker.pid" \
		--containerd "$d/ctd/containerd.sock" --config-file "$d/daemon.json" --iptables=false --ip-masq=false \
		--bridge=none --storage-driver vfs > "$d/dockerd.log" 2>&1 &
	echo $! > "$d/dockerd.pid2"
	for _ in $(seq 150); do
		DOCKER_HOST="unix://$d/docker.sock" docker version > /dev/null 2>&1 && return 0
		sleep 0.1
	done
	tail -n 30 "$d/dockerd.log" >&2
	return 1
}

dockerc() {
	local d=$1
	shift
	DOCKER_HOST="unix://$d/docker.sock" timeout 90 docker "$@"
}

stop_dockerd() {
	local d=$1 pid
	for c in $(dockerc "$d" ps -aq 2> /dev/null); do
		dockerc "$d" rm -f "$c" > /dev/null 2>&1 || true
	done
	pid=$(cat "$d/dockerd.pid2" 2> /dev/null) || true
	if [ -n "$pid" ]; then
		kill "$pid" 2> /dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2> /dev/null || true
	fi
	stop_containerd "$d/ctd"
	umount_under "$d"
	[ ! -e "$d/made-run-docker" ] || rmdir /run/docker/plugins /run/docker 2> /dev/null || true
}
