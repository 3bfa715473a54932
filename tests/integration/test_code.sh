# The code interpreter (docs/code.md): sbx code against real environments,
# whose kernels are Debian's python3 with ipykernel (scripts/deps.sh test
# installs it; the host template shows the host's /usr).

need_kernel() {
	/usr/bin/python3 -c 'import ipykernel, jupyter_client' 2> /dev/null ||
		skip "/usr/bin/python3 lacks ipykernel or jupyter_client (scripts/deps.sh test installs them)"
}

# listening ID: something listens on the environment's 127.0.0.1:49999.
listening() { sbx exec "$1" -- python3 -c 'import socket; socket.create_connection(("127.0.0.1", 49999)).close()' 2> /dev/null; }

# jget FILE EXPR: a value of the JSON in FILE (EXPR in Python over d).
jget() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

t_code_state_contexts_results_errors() {
	need_kernel
	id=$(sbx create)
	# State lasts from one run to the next in a context.
	assert_eq "$(sbx code "$id" -- 'x = 41; x + 1')" "42"
	assert_eq "$(sbx code "$id" -- 'print(x)')" "41"
	# Code from stdin too.
	assert_eq "$(echo 'x * 2' | sbx code "$id")" "82"
	# Two contexts do not share state.
	c=$(sbx code "$id" --new-context)
	[[ "$c" =~ ^[0-9a-f-]{36}$ ]] || fail "--new-context printed '$c'"
	expect_status 1 sbx code "$id" --context "$c" -- 'x'
	assert_contains "$ERR" "NameError"
	sbx code "$id" --context "$c" -- 'x = 7' > /dev/null
	assert_eq "$(sbx code "$id" --context "$c" -- 'x')" "7"
	assert_eq "$(sbx code "$id" -- 'x')" "41"
	out=$(sbx code "$id" --contexts)
	assert_contains "$out" "$c"
	[ "$(echo "$out" | grep -c python)" = 2 ] || fail "expected two python contexts: $out"
	# An exception: its traceback on stderr, exit status 1, its name in --json.
	expect_status 1 sbx code "$id" -- 'def f(): return 1/0
f()'
	assert_contains "$ERR" "ZeroDivisionError"
	assert_contains "$ERR" "Traceback"
	sbx code "$id" --json -- '1/0' > "$TMPDIR_TEST/err.json" || true
	assert_eq "$(jget "$TMPDIR_TEST/err.json" "d['error']['name']")" "ZeroDivisionError"
	assert_contains "$(jget "$TMPDIR_TEST/err.json" "d['error']['traceback']")" "division by zero"
	# A matplotlib plot arrives as a PNG: written by --out (which makes its
	# directory), base64 in --json.
	plot='import matplotlib.pyplot as plt
plt.plot([1, 3, 2]); plt.show()'
	out=$(sbx code "$id" --out "$TMPDIR_TEST/img" -- "$plot")
	assert_contains "$out" "[image/png written to $TMPDIR_TEST/img/out-1.png]"
	assert_eq "$(head -c 8 "$TMPDIR_TEST/img/out-1.png" | od -An -tx1 | tr -d ' \n')" "89504e470d0a1a0a"
	assert_contains "$(file "$TMPDIR_TEST/img/out-1.png")" "PNG image data"
	sbx code "$id" --json -- "$plot" > "$TMPDIR_TEST/plot.json"
	assert_eq "$(jget "$TMPDIR_TEST/plot.json" "__import__('base64').b64decode(d['results'][0]['png'])[:8].hex()")" \
		"89504e470d0a1a0a"
	# Without --out the CLI says an image came and how to get it.
	assert_contains "$(sbx code "$id" -- "$plot")" "--out DIR"
	# A pandas DataFrame as HTML (and text).
	sbx code "$id" --json -- 'import pandas as pd
pd.DataFrame({"a": [1, 2], "b": [3, 4]})' > "$TMPDIR_TEST/df.json"
	assert_contains "$(jget "$TMPDIR_TEST/df.json" "d['results'][0]['html']")" "<table"
	assert_eq "$(jget "$TMPDIR_TEST/df.json" "d['results'][0]['is_main_result']")" "True"
	assert_eq "$(jget "$TMPDIR_TEST/df.json" "d['language']")" "python"
	# --env applies to its run only.
	assert_eq "$(sbx code "$id" --env SBX_CODE_T=v1 -- 'import os; print(os.environ.get("SBX_CODE_T"))')" "v1"
	assert_eq "$(sbx code "$id" -- 'import os; print(os.environ.get("SBX_CODE_T"))')" "None"
	# A removed context is gone; bad ids are refused before anything is sent.
	sbx code "$id" --remove "$c"
	expect_status 125 sbx code "$id" --context "$c" -- '1'
	assert_contains "$ERR" "not found"
	expect_status 125 sbx code "$id" --context '../health' -- '1'
	assert_contains "$ERR" "invalid context id"
	sbx rm "$id"
}

# sbx's kernels for javascript, typescript and bash (docs/code.md
# "Languages"), through the CLI: state, results, --env, errors, a timeout
# that keeps the state, and the environment's walls around every one.
t_code_javascript_typescript_bash() {
	need_kernel
	command -v node > /dev/null || skip "node is not installed (Debian: nodejs)"
	/usr/bin/python3 -c 'import pexpect' 2> /dev/null || skip "python3-pexpect is not installed (scripts/deps.sh test)"
	id=$(sbx create)
	assert_eq "$(sbx code "$id" --lang js -- 'console.log("Hello, World!")')" "Hello, World!"
	assert_eq "$(sbx code "$id" --lang js -- 'const add = (x, y) => x + y;
add(1, 2)')" "3"
	assert_eq "$(sbx code "$id" --lang javascript -- 'add(40, 2)')" "42"
	assert_eq "$(sbx code "$id" --lang js -- "async function main() { return 'Hello, World!' }
await main()")" "Hello, World!"
	sbx code "$id" --lang js --json -- 'add(1, 1)' > "$TMPDIR_TEST/js.json"
	assert_eq "$(jget "$TMPDIR_TEST/js.json" "d['language']")" "javascript"
	assert_eq "$(jget "$TMPDIR_TEST/js.json" "d['results'][0]['text']")" "2"
	# Modules: require, import() (node before 21 has no loader for vm scripts), a promise shown as such.
	assert_eq "$(sbx code "$id" --lang js -- "const os = await import('node:os'); os.platform()")" "linux"
	assert_eq "$(sbx code "$id" --lang js -- "require('path').join('a', 'b')")" "a/b"
	assert_eq "$(sbx code "$id" --lang js -- "Promise.resolve(1)")" "Promise { 1 }"
	assert_eq "$(sbx code "$id" --lang js --env FOO=bar -- 'process.env.FOO')" "bar"
	assert_eq "$(sbx code "$id" --lang js -- "process.env.FOO || 'default'")" "default"
	# An error: its name, value and the cell's frames.
	expect_status 1 sbx code "$id" --lang js -- "function boom() { throw new RangeError('too far') }
boom()"
	assert_contains "$ERR" "RangeError"
	assert_contains "$ERR" "at boom"
	sbx code "$id" --lang js --json -- 'null.x' > "$TMPDIR_TEST/jserr.json" || true
	assert_eq "$(jget "$TMPDIR_TEST/jserr.json" "d['error']['name']")" "TypeError"
	# A timeout interrupts the cell (busy, then awaiting); the state stays.
	expect_status 124 sbx code "$id" --lang js --timeout 1s -- 'while (true) {}'
	expect_status 124 sbx code "$id" --lang js --timeout 1s -- 'await new Promise(() => {})'
	assert_eq "$(sbx code "$id" --lang js -- 'add(2, 2)')" "4"
	# TypeScript, when Debian's node-typescript is there.
	if [ -d /usr/share/nodejs/typescript ]; then
		assert_eq "$(sbx code "$id" --lang ts -- 'function subtract(x: number, y: number): number { return x - y; }
subtract(1, 2)')" "-1"
		# A static import, turned into require by the same transpiler, in JavaScript too.
		assert_eq "$(sbx code "$id" --lang js -- "import { basename } from 'node:path'; basename('/x/y.js')")" "y.js"
	fi
	# Bash: state (variables, cwd), --env for one run, a timeout that keeps the state.
	assert_eq "$(sbx code "$id" --lang bash --env FOO=bar -- 'echo $FOO')" "bar"
	assert_eq "$(sbx code "$id" --lang bash -- 'echo ${FOO:-default}')" "default"
	sbx code "$id" --lang bash -- 'x=5; cd /tmp' > /dev/null
	assert_eq "$(sbx code "$id" --lang bash -- 'echo $x; pwd')" "5
/tmp"
	expect_status 124 sbx code "$id" --lang bash --timeout 1s -- 'sleep 60'
	expect_status 124 sbx code "$id" --lang bash --timeout 1s -- 'while :; do :; done'
	assert_eq "$(sbx code "$id" --lang bash -- 'echo $x')" "5"
	expect_status 1 sbx code "$id" --lang bash -- 'false'
	# The walls: a file of the host (and another environment's) is not there.
	echo "host-secret-$$" > "$TMPDIR_TEST/host-secret"
	id2=$(sbx create)
	sbx exec "$id2" -- sh -c "echo env2-secret-$$ > /tmp/env2-secret"
	expect_status 1 sbx code "$id" --lang js -- "require('fs').readFileSync('$TMPDIR_TEST/host-secret', 'utf8')"
	assert_contains "$ERR" "ENOENT"
	expect_status 1 sbx code "$id" --lang js -- "require('fs').readFileSync('/tmp/env2-secret', 'utf8')"
	assert_contains "$ERR" "ENOENT"
	out=$(sbx code "$id" --lang bash -- "cat '$TMPDIR_TEST/host-secret' /tmp/env2-secret" 2>&1 || true)
	case "$out" in *secret-$$*) fail "bash read another's file: $out" ;; esac
	# The python context is untouched by all this; contexts list the languages.
	assert_eq "$(sbx code "$id" -- '1 + 1')" "2"
	out=$(sbx code "$id" --contexts)
	assert_contains "$out" "javascript"
	assert_contains "$out" "bash"
	# A node that exits (or is killed) ends its kernel, said as such.
	expect_status 1 sbx code "$id" --lang js -- 'process.exit(3)'
	assert_contains "$ERR" "KernelDied"
	assert_contains "$ERR" "exit status 3"
	c=$(sbx code "$id" --new-context --lang js)
	expect_status 1 sbx code "$id" --context "$c" -- 'process.kill(process.pid, "SIGKILL")'
	assert_contains "$ERR" "SIGKILL"
	sbx code "$id" --restart "$c"
	assert_eq "$(sbx code "$id" --context "$c" -- '6 * 7')" "42"
	sbx rm "$id" "$id2"
}

# A JavaScript cell that SIGINT cannot stop (a loop after an await) gets its
# kernel restarted; its node, busy, goes with the kernel it belonged to.
t_code_javascript_restart_leaves_no_node_behind() {
	need_kernel
	command -v node > /dev/null || skip "node is not installed (Debian: nodejs)"
	id=$(sbx create)
	sbx code "$id" --lang js -- 'const before = 1' > /dev/null
	expect_status 124 sbx code "$id" --lang js --timeout 1s -- 'await 0; while (true) {}'
	assert_contains "$ERR" "KernelRestarted"
	assert_eq "$(sbx code "$id" --lang js -- 'typeof before')" "undefined"
	assert_eq "$(sbx ps "$id" | grep -c '[s]bx-code-node')" "1"
	sbx rm "$id"
}

# The same kernels over MCP: environment_run_code's language and env, a
# context of its own made with environment_context_create {language, cwd}.
t_code_mcp_javascript_and_bash() {
	need_kernel
	command -v node > /dev/null || skip "node is not installed (Debian: nodejs)"
	/usr/bin/python3 -c 'import pexpect' 2> /dev/null || skip "python3-pexpect is not installed (scripts/deps.sh test)"
	out=$(python3 - "$SBX_BIN" << 'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp", "--warm", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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
e = call("environment_create", {})["environment_id"]
run = lambda **a: call("environment_run_code", dict(environment_id=e, **a))
out = []
out.append(run(code="const z = 20", language="js").get("results"))
out.append(run(code="z + 1", language="javascript")["results"][0]["text"])
out.append(run(code="process.env.FOO", language="js", env={"FOO": "bar"})["results"][0]["text"])
r = run(code="throw new SyntaxError('nope')", language="js")
out.append([r["error"]["name"], r["error"]["value"]])
r = run(code="while (true) {}", language="js", timeout_ms=800)
out.append(r["timed_out"])
out.append(run(code="z", language="js")["results"][0]["text"])
out.append(run(code="echo $FOO", language="bash", env={"FOO": "bar"})["stdout"])
out.append(run(code="echo ${FOO:-default}", language="bash")["stdout"])
c = call("environment_context_create", {"environment_id": e, "language": "js", "cwd": "/tmp"})
out.append([c["language"], run(code="process.cwd()", context_id=c["context_id"])["results"][0]["text"]])
call("environment_destroy", {"environment_id": e})
print(json.dumps(out))
p.stdin.close()
p.wait()
PY
)
	assert_eq "$out" '[[], "21", "bar", ["SyntaxError", "nope"], true, "20", "bar\n", "default\n", ["javascript", "/tmp"]]'
}

t_code_streams_output_before_the_cell_ends() {
	need_kernel
	id=$(sbx create)
	sbx code "$id" -- 'pass' # the bridge and its kernel started
	out="$TMPDIR_TEST/stream.out"
	start=$(date +%s%N)
	sbx code "$id" -- "import time
print('a', flush=True)
time.sleep(2)
print('b')" > "$out" &
	pid=$!
	# 'a' is on the CLI's stdout well before the cell ends, 'b' not yet.
	until grep -q '^a$' "$out"; do
		ms=$((($(date +%s%N) - start) / 1000000))
		[ "$ms" -lt 1500 ] || fail "'a' did not arrive within 1.5 s: $(cat "$out")"
		sleep 0.02
	done
	ms=$((($(date +%s%N) - start) / 1000000))
	grep -q '^b$' "$out" && fail "'b' already there: the output was not streamed"
	wait $pid
	assert_eq "$(cat "$out")" "a
b"
	echo "first line after ${ms} ms"
	[ "$ms" -lt 1500 ] || fail "'a' took $ms ms"
	sbx rm "$id"
}

t_code_timeout_interrupts_and_keeps_state() {
	need_kernel
	id=$(sbx create)
	sbx code "$id" -- 'kept = "yes"' > /dev/null
	start=$SECONDS
	expect_status 124 sbx code "$id" --timeout 1s -- 'import time; time.sleep(60)'
	[ $((SECONDS - start)) -lt 15 ] || fail "the timeout took $((SECONDS - start)) s"
	assert_contains "$ERR" "timed out"
	set +e
	sbx code "$id" --json --timeout 500ms -- 'while True: pass' > "$TMPDIR_TEST/t.json"
	rc=$?
	set -e
	assert_eq "$rc" "124"
	assert_eq "$(jget "$TMPDIR_TEST/t.json" "d['timed_out']")" "True"
	# The kernel lives on with its state.
	assert_eq "$(sbx code "$id" -- 'print(kept)')" "yes"
	sbx rm "$id"
}

# A cancelled run interrupts its cell (the kernel and its state stay): over
# MCP (notifications/cancelled of an in-flight environment_run_code, the
# library's cancel_fd), and when the client's connection hangs up mid-cell
# (the CLI killed), which the bridge notices without any output to write.
t_code_mcp_cancel_interrupts_the_cell() {
	need_kernel
	id=$(sbx create)
	sbx code "$id" -- 'kept = "yes"' > /dev/null
	timeout 60 /usr/bin/python3 - "$SBX_BIN" "$id" << 'EOF'
import json, os, subprocess, sys, threading, time
sbx, env = sys.argv[1], sys.argv[2]
p = subprocess.Popen([sbx, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
step = "start"
def stuck():
    # A hang says where it was and what the environment runs, instead of
    # only the outer timeout's kill.
    print("stuck at step: %s" % step, file=sys.stderr)
    for argv in ([sbx, "code", env, "--contexts"], [sbx, "exec", env, "--", "ps", "-eo", "pid,stat,etime,args"]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        print("$ %s\n%s%s" % (" ".join(argv[1:]), r.stdout, r.stderr), file=sys.stderr)
    sys.stderr.flush()
    os._exit(3)
watchdog = threading.Timer(45, stuck)
watchdog.daemon = True
watchdog.start()
def send(m):
    p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
def call(n, code, token=None):
    params = {"name": "environment_run_code", "arguments": {"environment_id": env, "code": code}}
    if token:
        params["_meta"] = {"progressToken": token}
    send({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "sbx-tests", "version": "1"}}})
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
p.stdout.readline()
call(1, "print('spinning', flush=True)\nwhile True: pass", token="t1")
# The cell runs once its first line comes back as progress.
step = "waiting for the first cell's output as progress"
while True:
    m = json.loads(p.stdout.readline())
    assert m.get("id") != 1, "the endless cell answered: %s" % m
    if m.get("method") == "notifications/progress" and "spinning" in json.dumps(m):
        break
t0 = time.monotonic()
send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}})
# The next run in the same context waits for the context's kernel: it
# answers once the cancelled cell was interrupted, with the state kept (a
# kernel restarted after ignoring the interrupt for 5 s would have lost it).
step = "waiting for the answer to the next cell after the cancel"
call(2, "print(kept)")
while True:
    m = json.loads(p.stdout.readline())
    assert m.get("id") != 1, "a cancelled call was answered: %s" % m
    if m.get("id") == 2:
        break
took = time.monotonic() - t0
r = m["result"]
assert not r.get("isError"), r
sc = r["structuredContent"]
assert sc["stdout"] == "yes\n" and "error" not in sc, sc
print("next cell answered %.2f s after the cancel" % took)
assert took < 4, "took %.2f s" % took
step = "waiting for sbx mcp to exit"
p.stdin.close()
p.wait(timeout=30)
EOF
	# The CLI killed mid-cell: its connection hangs up, the bridge interrupts
	# the cell, and the next run gets the kernel at once with its state.
	"$SBX_BIN" code "$id" -- 'while True: pass' &
	pid=$!
	sleep 1
	kill -9 "$pid"
	wait "$pid" 2> /dev/null || true
	start=$(date +%s%N)
	assert_eq "$(sbx code "$id" -- 'print(kept)')" "yes"
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "next cell after the hang-up: ${ms} ms"
	[ "$ms" -lt 4000 ] || fail "the next cell took $ms ms: was the cell interrupted?"
	sbx rm "$id"
}

t_code_restart_and_dead_kernel() {
	need_kernel
	id=$(sbx create)
	sbx code "$id" -- 'z = 1' > /dev/null
	ctx=$(sbx code "$id" --contexts | awk 'NR == 2 {print $1}')
	[ -n "$ctx" ] || fail "no default context listed"
	# A restart clears the state.
	sbx code "$id" --restart "$ctx"
	expect_status 1 sbx code "$id" -- 'z'
	assert_contains "$ERR" "NameError"
	# A kernel that dies is reported, and every later run says to restart.
	expect_status 1 sbx code "$id" -- 'import os; os.kill(os.getpid(), 9)'
	assert_contains "$ERR" "KernelDied"
	assert_contains "$ERR" "SIGKILL"
	expect_status 1 sbx code "$id" -- 'print(1)'
	assert_contains "$ERR" "KernelDied"
	assert_contains "$ERR" "--restart $ctx"
	sbx code "$id" --restart "$ctx"
	assert_eq "$(sbx code "$id" -- 'print(2 + 2)')" "4"
	# An unknown context cannot be restarted.
	expect_status 125 sbx code "$id" --restart 00000000-0000-0000-0000-000000000000
	assert_contains "$ERR" "not found"
	sbx rm "$id"
}

t_code_huge_output_is_capped() {
	need_kernel
	id=$(sbx create)
	start=$SECONDS
	sbx code "$id" --json -- 'print("y" * (50 << 20))' > "$TMPDIR_TEST/big.json"
	[ $((SECONDS - start)) -lt 30 ] || fail "took $((SECONDS - start)) s"
	assert_eq "$(jget "$TMPDIR_TEST/big.json" "d['truncated']")" "True"
	n=$(jget "$TMPDIR_TEST/big.json" "len(d['stdout'])")
	[ "$n" -gt 0 ] && [ "$n" -le $((10 << 20)) ] || fail "stdout of $n bytes, expected 1..10 MiB"
	# The CLI says so; the environment and the next run still work.
	expect_status 0 sbx code "$id" -- 'print("z" * (20 << 20))'
	assert_contains "$ERR" "output past the limit was dropped"
	assert_eq "$(sbx exec "$id" -- echo alive)" "alive"
	assert_eq "$(sbx code "$id" -- 'print("next")')" "next"
	sbx rm "$id"
}

# What the bridge answers is the environment's: a bridge that streams
# without end is cut at the output bound (the output limit plus slack), one
# that answers garbage is an error, and neither hangs the client.
t_code_hostile_bridge_is_bounded() {
	need_kernel
	id=$(sbx create)
	cat > "$TMPDIR_TEST/fake.py" << 'EOF'
import socket, sys
mode = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 49999))
s.listen(4)
while True:
    c, _ = s.accept()
    c.recv(65536)
    try:
        if mode == "endless":
            c.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            line = b'{"type":"stdout","text":"' + b"x" * 65000 + b'"}\n'
            chunk = b"%x\r\n%s\r\n" % (len(line), line)
            while True:
                c.sendall(chunk)
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: nine\r\n\r\n")
    except OSError:
        pass
    c.close()
EOF
	sbx cp "$TMPDIR_TEST/fake.py" "$id:/tmp/fake.py"
	p=$(sbx exec -d "$id" -- python3 /tmp/fake.py endless)
	eventually 10 listening "$id"
	start=$SECONDS
	sbx code "$id" --json -- 'print(1)' > "$TMPDIR_TEST/endless.json"
	assert_eq "$(jget "$TMPDIR_TEST/endless.json" "d['truncated']")" "True"
	n=$(jget "$TMPDIR_TEST/endless.json" "len(d['stdout'])")
	[ "$n" -gt $((10 << 20)) ] && [ "$n" -le $((14 << 20)) ] || fail "kept $n bytes of an endless stream"
	[ $((SECONDS - start)) -lt 20 ] || fail "took $((SECONDS - start)) s"
	sbx kill "$id" "$p" KILL > /dev/null
	sbx ps "$id" "$p" --wait 10s > /dev/null
	p=$(sbx exec -d "$id" -- python3 /tmp/fake.py garbage)
	eventually 10 listening "$id"
	expect_status 125 sbx code "$id" -- 'print(1)'
	assert_contains "$ERR" "Content-Length"
	sbx rm "$id"
}

t_code_refused_where_the_network_is_the_hosts() {
	need_kernel
	id=$(sbx create --network open 2> /dev/null)
	expect_status 125 sbx code "$id" -- 'print(1)'
	assert_contains "$ERR" "no network namespace of its own"
	# Nothing was started there: it would listen on the host's loopback.
	assert_not_contains "$(sbx ps "$id")" "code-bridge"
	sbx rm "$id"
}

t_code_says_what_is_missing() {
	need_kernel
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	# No python3 at all: a busybox rootfs.
	rootfs="$TMPDIR_TEST/rootfs"
	mkdir -p "$rootfs/bin" "$rootfs/etc" "$rootfs/tmp"
	cp /bin/busybox "$rootfs/bin/busybox"
	for c in sh echo cat ls; do ln -s busybox "$rootfs/bin/$c"; done
	echo "root:x:0:0:root:/root:/bin/sh" > "$rootfs/etc/passwd"
	id=$(sbx create --template "dir:$rootfs")
	expect_status 125 sbx code "$id" -- 'print(1)'
	assert_contains "$ERR" "needs python3 with jupyter_client and ipykernel"
	assert_contains "$ERR" "python3 is not installed"
	sbx rm "$id"
	# python3 without jupyter_client: the host's, the module moved away in
	# the environment's own copy of /usr (the host's is untouched).
	id=$(sbx create)
	sbx exec "$id" -- mv /usr/lib/python3/dist-packages/jupyter_client /usr/lib/python3/dist-packages/jc.away
	expect_status 125 sbx code "$id" -- 'print(1)'
	assert_contains "$ERR" "needs python3 with jupyter_client and ipykernel"
	assert_contains "$ERR" "No module named 'jupyter_client'"
	[ -d /usr/lib/python3/dist-packages/jupyter_client ] || fail "the host's jupyter_client moved"
	sbx rm "$id"
}

# Two first calls at once may both start a bridge: one binds, the other
# exits (taking its kernel with it), and both calls succeed.
t_code_two_first_calls_at_once() {
	need_kernel
	id=$(sbx create)
	sbx code "$id" -- 'print("one")' > "$TMPDIR_TEST/1" 2>&1 &
	a=$!
	sbx code "$id" -- 'print("two")' > "$TMPDIR_TEST/2" 2>&1 &
	b=$!
	wait $a || fail "first call failed: $(cat "$TMPDIR_TEST/1")"
	wait $b || fail "second call failed: $(cat "$TMPDIR_TEST/2")"
	assert_eq "$(cat "$TMPDIR_TEST/1")" "one"
	assert_eq "$(cat "$TMPDIR_TEST/2")" "two"
	# One default context, one kernel: a losing bridge leaves none behind.
	assert_eq "$(sbx code "$id" --contexts | grep -c python)" "1"
	sbx ps "$id" # how many bridges were started (the race is not forced)
	kernels() { sbx exec "$id" -- pgrep -fc ipykernel_launcher || true; }
	one_kernel() { [ "$(kernels)" = 1 ]; }
	eventually 15 one_kernel || fail "$(kernels) kernels running"
	sbx rm "$id"
}

t_code_usage_refusals() {
	expect_status 125 sbx code
	assert_contains "$ERR" "missing environment id"
	expect_status 125 sbx code someid --context c1 --lang python -- 1
	assert_contains "$ERR" "--context and --lang"
	expect_status 125 sbx code someid --cwd /tmp -- 1
	assert_contains "$ERR" "--cwd is for --new-context"
	expect_status 125 sbx code someid --contexts -- 1
	assert_contains "$ERR" "take no code"
	expect_status 125 sbx code --json someid --out /tmp -- 1
	assert_contains "$ERR" "base64"
	expect_status 125 sbx code someid --timeout 0 -- 1
	assert_contains "$ERR" "positive"
	expect_status 125 sbx code nosuchenv -- 1
	assert_contains "$ERR" "nosuchenv"
}

# ---- Warm kernels: pools whose entries have the bridge and kernel started (docs/code.md) ----

# code_ready N: waits until the code pool of host has N ready entries.
code_ready() {
	for _ in $(seq 600); do
		n=$(sbx pool ls --json | jget /dev/stdin 'sum(p["ready"] for p in d["pools"] if p["code"])')
		[ "$n" = "$1" ] && return 0
		sleep 0.05
	done
	fail "the code pool has $n ready entries, not $1: $(sbx pool ls)"
}
# take: a create that wants code; prints "ID FROM_POOL".
take_code() { sbx create --code --json | jget /dev/stdin 'd["environment_id"], d["from_pool"]'; }
# host_pids_of ID REGEX: host pids of the processes of environment ID (its
# cgroup names it) whose command line matches REGEX.
host_pids_of() {
	for f in /proc/[0-9]*/cgroup; do
		grep -q "/$1\$" "$f" 2> /dev/null || continue
		p=${f#/proc/}
		p=${p%/cgroup}
		tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null | grep -Eq "$2" && echo "$p"
	done
	true
}
# dead PID...: each has exited (gone, or a zombie its parent has not reaped).
dead() {
	for p in "$@"; do
		[ ! -e "/proc/$p" ] || [ "$(awk '{print $3}' "/proc/$p/stat" 2> /dev/null)" = Z ] || return 1
	done
}

# A code pool's entry is handed out with its bridge running since before the
# take: the first run starts none (one bridge, the same process, before and
# after). Two takes never share a kernel's state; a plain create takes no code
# entry.
t_code_pool_entry_has_its_kernel_started() {
	need_kernel
	sbx pool set host --size 2 --code > /dev/null
	code_ready 2
	assert_contains "$(sbx pool ls)" " yes "
	t0=$(date +%s%3N)
	read -r id fp <<< "$(take_code)"
	assert_eq "$fp" "True" "a create with --code took no entry"
	started=$(sbx ps "$id" p1 --json | jget /dev/stdin 'd["started_ms"]')
	assert_contains "$(sbx ps "$id" p1 --json | jget /dev/stdin 'd["command"]')" ".sbx-code-bridge.py"
	[ "$started" -lt "$t0" ] || fail "the bridge started at $started, after the take at $t0"
	assert_eq "$(sbx code "$id" --json -- '1+1' | jget /dev/stdin 'd["results"][0]["text"], d["execution_count"]')" "2 1"
	assert_eq "$(sbx ps "$id" | grep -c 'sbx-code-bridge.py')" "2" "one bridge (ps's two tables)"
	assert_eq "$(sbx ps "$id" p1 --json | jget /dev/stdin 'd["started_ms"], d["state"]')" "$started running"
	# Another take: a kernel of its own, nothing of the first one's state.
	sbx code "$id" -- 'x = 41' > /dev/null
	read -r id2 fp2 <<< "$(take_code)"
	assert_eq "$fp2" "True"
	expect_status 1 sbx code "$id2" -- 'x'
	assert_contains "$ERR" "NameError"
	assert_eq "$(sbx code "$id" -- 'x + 1')" "42"
	# A plain create is not served by a code pool (and starts no kernel).
	read -r id3 fp3 <<< "$(sbx create --json | jget /dev/stdin 'd["environment_id"], d["from_pool"]')"
	assert_eq "$fp3" "False"
	assert_not_contains "$(sbx ps "$id3")" "sbx-code-bridge"
	sbx rm "$id" "$id2" "$id3"
	# The pool's removal leaves no process of its entries.
	code_ready 2
	entries=$(ls "$SBX_ROOT"/pools/*.d/)
	expect_status 125 sbx pool rm host # a code pool is removed with --code
	sbx pool rm host --code > /dev/null
	for e in $entries; do
		assert_eq "$(host_pids_of "$e" .)" "" "processes of removed entry $e"
	done
}

# A code entry waits hidden, its bridge too: nothing reaches it by its id.
t_code_pool_entry_is_hidden_until_taken() {
	need_kernel
	sbx pool set host --size 1 --code > /dev/null
	code_ready 1
	e=$(ls "$SBX_ROOT"/pools/*.d/)
	[[ "$e" =~ ^[0-9a-f]{12}$ ]] || fail "no single entry: '$e'"
	for cmd in "code $e -- 'y = 1'" "code $e --contexts" "code ${e:0:6} -- 1" "ps $e" "exec $e -- true"; do
		eval "expect_status 125 sbx $cmd"
		assert_contains "$ERR" "no such environment"
	done
	read -r id fp <<< "$(take_code)"
	assert_eq "$id $fp" "$e True" "the entry was taken"
	expect_status 1 sbx code "$id" -- 'y'
	assert_contains "$ERR" "NameError"
	assert_eq "$(sbx code "$id" --contexts | grep -c python)" "1"
	sbx rm "$id"
	sbx pool rm host --code > /dev/null
}

# A kernel that died in a waiting entry: the take checks the bridge (GET
# /ready) and removes that entry rather than hand it out. One that dies after
# the take, before anything ran in it, is started again by the first run (it
# held no state), not reported dead.
t_code_pool_dead_kernel_is_not_handed_out() {
	need_kernel
	sbx pool set host --size 1 --code > /dev/null
	code_ready 1
	e=$(ls "$SBX_ROOT"/pools/*.d/)
	k=$(host_pids_of "$e" ipykernel_launcher)
	[ -n "$k" ] || fail "no kernel found in entry $e"
	kill -9 $k
	eventually 10 dead $k || fail "the kernel $k did not die"
	read -r id fp <<< "$(take_code)"
	assert_eq "$fp" "False" "an entry whose kernel died was handed out"
	[ ! -e "$SBX_ROOT/envs/$e" ] || fail "the dead entry $e was not removed"
	assert_eq "$(sbx code "$id" -- '1+1')" "2"
	code_ready 1
	read -r id2 fp2 <<< "$(take_code)"
	assert_eq "$fp2" "True"
	k=$(host_pids_of "$id2" ipykernel_launcher)
	[ -n "$k" ] || fail "no kernel found in $id2"
	kill -9 $k
	eventually 10 dead $k || fail "the kernel $k did not die"
	assert_eq "$(sbx code "$id2" -- '2+2')" "4"
	sbx rm "$id" "$id2"
	sbx pool rm host --code > /dev/null
}

# Over MCP: pool_set code, pool_list's code, environment_create code, and the
# first environment_run_code answered by the kernel started ahead.
t_code_pool_mcp() {
	need_kernel
	out=$(python3 - "$SBX_BIN" << 'PY'
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "mcp", "--warm", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
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
s = call("pool_set", {"source": "host", "size": 1, "code": True})
for _ in range(600):
    if sum(q["ready"] for q in call("pool_list", {})["pools"] if q["code"]) == 1:
        break
    time.sleep(0.05)
plain = call("environment_create", {})
c = call("environment_create", {"code": True})
r = call("environment_run_code", {"environment_id": c["environment_id"], "code": "6*7"})
for e in (plain, c):
    call("environment_destroy", {"environment_id": e["environment_id"]})
rm = call("pool_set", {"source": "host", "size": 0, "code": True, "remove": True})
print(s["code"], plain["from_pool"], c["from_pool"], r["results"][0]["text"], r["execution_count"],
      len(call("pool_list", {})["pools"]))
p.stdin.close()
p.wait()
PY
)
	assert_eq "$out" "True False True 42 1 0"
}
