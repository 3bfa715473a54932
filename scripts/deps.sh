#!/bin/sh
# Installs what sbx needs on Debian 12: `scripts/deps.sh build` for building,
# `scripts/deps.sh test` for the test suite too. As root it runs apt-get
# (update first: a fresh machine may have empty package lists); otherwise it
# names what is missing and fails.
set -eu
what=${1:-build}
# clang, libbpf-dev and libelf-dev build the eBPF recorder (src/trace/bpf/).
# e2fsprogs: mke2fs formats the image of a disk quota (src/runtime/quota.c).
# zstd: the OCI tests compress a layer with the zstd command.
# libcurl4-openssl-dev: sbx push/pull; docker-registry: the registry tests run one.
# chromium: tests/integration/test_trace_html.sh loads the trace page headless.
# file: the OCI, registry and replay tests check that /bin/busybox is static.
# man-db: tests/integration/test_install.sh renders the man pages with man -l.
# strace: tests/integration/test_coldstart.sh checks the cold path's syscalls.
# json-schema-test-suite: test_jschema runs the MCP argument checker against the official cases.
# node-typescript, node-acorn, python3-pexpect: the code interpreter's kernels for typescript
# (transpiled by Debian's tsc library), javascript (acorn: Debian's nodejs parses top-level await
# with it) and bash (docs/code.md "Languages"); node itself is nodejs, below.
# acl: setfacl/getfacl, the ACL round trips of test_snapshot.sh and test_oci.sh.
# xvfb, xdotool, scrot, openbox: desktops (docs/desktop.md), the X server, input, screenshots
# and window manager that environment_screenshot/environment_input run inside an environment;
# xterm: test_desktop.sh types into one. xfce4-session, xfwm4, xfdesktop4, x11-utils,
# x11-xserver-utils, dbus-x11: what @e2b/desktop starts and probes in E2B's template desktop;
# x11vnc, novnc, net-tools: its live view (stream.start() checks the port with netstat).
build_pkgs="gcc make libc6-dev pkg-config libseccomp-dev libjansson-dev libyaml-dev libmicrohttpd-dev libssl-dev zlib1g-dev libzstd-dev libcurl4-openssl-dev clang libbpf-dev libelf-dev e2fsprogs"
test_pkgs="clang-format libcap2-bin acl python3 python3-cryptography python3-pip python3-setuptools python3-venv openssl zstd busybox-static util-linux bsdutils procps passwd nodejs npm valgrind umoci skopeo docker-registry curl clang libclang-rt-14-dev chromium file man-db strace json-schema-test-suite python3-ipykernel python3-zmq python3-jupyter-client python3-matplotlib python3-pandas node-typescript node-acorn python3-pexpect xvfb xdotool scrot openbox xterm xfce4-session xfwm4 xfdesktop4 x11-utils x11-xserver-utils dbus-x11 x11vnc novnc net-tools"
# linux-perf and bpftool profile the eBPF recorder (docs/BENCHMARKS.md, tracing).
bench_pkgs="bubblewrap crun busybox-static hyperfine zstd nodejs npm strace python3 openssl linux-perf bpftool"
# containerd, runc, crun, docker.io, podman, conmon: test_runc.sh drives
# sbx-runc from the real engines and compares it with runc and crun.
test_pkgs="$test_pkgs containerd runc crun docker.io podman conmon"
case "$what" in
build) pkgs="$build_pkgs" ;;
demo) pkgs="$build_pkgs python3" ;;
test) pkgs="$build_pkgs $test_pkgs" ;;
bench) pkgs="$build_pkgs $bench_pkgs" ;;
*) echo "usage: scripts/deps.sh build|demo|test|bench" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
	# Node.js may come from elsewhere (NodeSource ships npm inside nodejs and
	# conflicts with Debian's npm): working commands are enough.
	case "$p" in
	nodejs) command -v node > /dev/null 2>&1 && continue ;;
	npm) command -v npm > /dev/null 2>&1 && continue ;;
	esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "sbx: missing Debian packages:$missing" >&2
	echo "sbx: install them as root: apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
echo "sbx: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >&2
