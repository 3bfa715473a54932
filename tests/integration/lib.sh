# Helpers for integration tests. Tests run with `set -e`; each helper fails
# the test (non-zero) with a message on stderr.
sbx() { timeout "${SBX_TIMEOUT:-60}" "$SBX_BIN" "$@"; }

fail() { echo "FAIL: $*" >&2; return 1; }
skip() { echo "$*"; exit 77; }
# skip_ok: a skip that is fine even in strict CI (the machine cannot do it).
skip_ok() { echo "SKIP-OK $*"; exit 77; }

# eventually SECONDS CMD [ARG...]: runs CMD until it succeeds, for at most
# SECONDS. For state that something started in the background reaches a
# moment later (a process's exec, a file, a listening port): a test asserts
# it only once it holds, never right after the start.
eventually() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.05
	done
}
# ps_shows ID TEXT: `sbx ps ID` lists a process whose line contains TEXT.
ps_shows() { [[ "$(sbx ps "$1" 2> /dev/null)" == *"$2"* ]]; }
# host_has_process REGEX: a process on the host whose command line matches.
host_has_process() { pgrep -f "$1" > /dev/null; }
host_lacks_process() { ! pgrep -f "$1" > /dev/null; }

assert_eq() { [ "$1" == "$2" ] || fail "expected '$2', got '$1'${3:+ ($3)}"; }
assert_contains() { [[ "$1" == *"$2"* ]] || fail "expected output to contain '$2', got: $1"; }
assert_not_contains() { [[ "$1" != *"$2"* ]] || fail "expected output not to contain '$2', got: $1"; }
# expect_status N CMD...: runs CMD, checks its exit status; output in $OUT/$ERR.
expect_status() {
	local want=$1
	shift
	local o e
	o=$(mktemp) e=$(mktemp)
	set +e
	"$@" > "$o" 2> "$e"
	local got=$?
	set -e
	OUT=$(cat "$o") ERR=$(cat "$e")
	rm -f "$o" "$e"
	[ "$got" == "$want" ] || fail "'$*' exited $got, expected $want; stdout: $OUT; stderr: $ERR"
}

is_root() { [ "$(id -u)" = 0 ]; }

# Runs the rest as the unprivileged test user (created by tests setup), with
# SBX_BIN a copy that user can run when the checkout is out of its reach (a
# clone in /root, mode 0700, on a fresh machine).
as_user() {
	local bin=$SBX_BIN
	if ! setpriv --reuid sbxtest --regid sbxtest --init-groups test -x "$bin" 2> /dev/null; then
		bin="$TMPDIR_TEST/as-user-bin/sbx"
		if [ ! -x "$bin" ]; then
			mkdir -p "$TMPDIR_TEST/as-user-bin"
			cp "$SBX_BIN" "$bin"
			chmod -R a+rX "$TMPDIR_TEST/as-user-bin"
			chmod 755 "$TMPDIR_TEST"
		fi
	fi
	setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env PATH="$PATH" SBX_BIN="$bin" "$@"
}

probe_volume() { echo "$SBX_HELPERS:/probe:ro"; }

# Nothing of this test's environments may remain once gc has run.
check_clean() {
	local tmp=$1
	timeout 30 "$SBX_BIN" gc > /dev/null || { echo "gc failed"; return 1; }
	local ids
	ids=$(ls "$SBX_ROOT/envs" 2>/dev/null | grep -E '^[0-9a-f]{12}$' || true)
	# Environments still running are the test's own business only if it
	# deliberately left them; by convention tests remove what they create.
	for id in $ids; do
		timeout 30 "$SBX_BIN" rm "$id" > /dev/null 2>&1 || true
	done
	# gc empties the trash (src/api/reclaim.h), waiting for a reclaimer at
	# work: none may be left, nor a reclaimer of this store.
	if [ -n "$ids" ]; then
		timeout 30 "$SBX_BIN" gc > /dev/null || { echo "gc failed"; return 1; }
	fi
	local trash p
	trash=$(ls -A "$SBX_ROOT/envs" 2> /dev/null | grep '^\.trash-' || true)
	if [ -n "$trash" ]; then
		echo "leaked trash after gc: $trash"
		return 1
	fi
	for p in $(pgrep -x sbx-reclaim || true); do
		if tr '\0' '\n' < "/proc/$p/environ" 2> /dev/null | grep -qxF "SBX_ROOT=$SBX_ROOT"; then
			echo "leaked reclaimer $p after gc"
			return 1
		fi
	done
	if grep -q "$tmp" /proc/self/mountinfo; then
		echo "leaked mount under $tmp"
		return 1
	fi
	for id in $ids; do
		if ls -d /sys/fs/cgroup/*/sbx/"$id" 2>/dev/null | grep -q .; then
			echo "leaked cgroup for $id"
			return 1
		fi
	done
	if pgrep -f "sbx-supervisor" > /dev/null && [ -n "$ids" ]; then
		for id in $ids; do
			if [ -S "$SBX_RUN/$id/ctl.sock" ]; then
				echo "leaked supervisor for $id"
				return 1
			fi
		done
	fi
	return 0
}

# start_server: a host HTTP server on 127.0.0.1:$PORT (pid $SRV) serving
# $TMPDIR_TEST/www/index.html ("hello from the host"). A random port another
# test holds makes the server exit: another port then. Python starts slowly
# on a loaded machine: up to 30 s.
start_server() {
	mkdir -p "$TMPDIR_TEST/www"
	echo "hello from the host" > "$TMPDIR_TEST/www/index.html"
	local try i
	for try in 1 2 3 4 5; do
		PORT=$((20000 + RANDOM % 20000))
		(cd "$TMPDIR_TEST/www" && exec python3 -m http.server "$PORT" --bind 127.0.0.1) > /dev/null 2>&1 &
		SRV=$!
		for i in $(seq 300); do
			python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" 2> /dev/null && return 0
			kill -0 "$SRV" 2> /dev/null || break
			sleep 0.1
		done
		kill "$SRV" 2> /dev/null || true
	done
	fail "test server did not start"
}
