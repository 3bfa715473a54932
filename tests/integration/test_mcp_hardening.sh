# The MCP servers under hostile load and hostile input (issue 13): idle
# connections that try to lock `sbx serve` out, slow clients, a command's
# output far larger than a message, wrong-typed arguments, NUL in strings.

MCP_DIR="$SBX_SRC/tests/mcp"

need_node() { command -v node > /dev/null || skip "node is not installed (needed to drive and parse MCP)"; }
need_sdk() {
	need_node
	[ -f "$MCP_DIR/node_modules/@modelcontextprotocol/sdk/package.json" ] && return 0
	command -v npm > /dev/null || skip "npm is not installed (needed to install @modelcontextprotocol/sdk)"
	(cd "$MCP_DIR" && timeout 300 npm ci --no-audit --no-fund --loglevel=error > /dev/null 2>&1) ||
		skip "npm ci in tests/mcp failed (no access to the npm registry?)"
}

# A 50 MB output through the official SDK client over stdio: the server
# caps it, flags it and keeps serving (it used to exit: "Connection closed").
t_mcp_sdk_big_output_survives() {
	need_sdk
	SBX_BIN="$SBX_BIN" timeout 300 node "$MCP_DIR/sdk_hardening.mjs" big_output
}

# ---- sbx serve under connection floods ---------------------------------------------
http_start() {
	timeout 300 "$SBX_BIN" serve --listen 127.0.0.1:0 "$@" 2> "$TMPDIR_TEST/serve.err" &
	HTTP_PID=$!
	trap http_stop EXIT
	HTTP_URL=""
	for _ in $(seq 100); do
		HTTP_URL=$(sed -n 's/^sbx: serving MCP on \(http[^ ]*\).*/\1/p' "$TMPDIR_TEST/serve.err")
		[ -n "$HTTP_URL" ] && return 0
		kill -0 "$HTTP_PID" 2> /dev/null || fail "sbx serve exited: $(cat "$TMPDIR_TEST/serve.err")"
		sleep 0.1
	done
	fail "sbx serve did not start: $(cat "$TMPDIR_TEST/serve.err")"
}
http_stop() {
	[ -n "${HTTP_PID:-}" ] || return 0
	kill -TERM "$HTTP_PID" 2> /dev/null || true
	wait "$HTTP_PID" 2> /dev/null || true
	HTTP_PID=""
}
need_python() { command -v python3 > /dev/null || skip "python3 is not installed (needed to open raw connections)"; }

# flood.py URL TOKEN MODE N: opens N connections that MODE (idle: send
# nothing; slow: send a header byte a second; body: headers, then a body
# that never ends), keeps them open, and meanwhile POSTs an authenticated
# ping; prints "ok <ms>" when it answers 200 within 5 s, else "FAIL ...".
# With MODE=closed it reports how many of the N connections the server
# closed within the wait given as N's suffix (N:SECONDS).
flood() {
	python3 - "$@" <<'PY'
import json, socket, sys, time, urllib.parse
url, token, mode, spec = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
n, wait = (int(spec.split(':')[0]), float(spec.split(':')[1])) if ':' in spec else (int(spec), 0)
u = urllib.parse.urlparse(url)
socks = []
for i in range(n):
    s = socket.create_connection((u.hostname, u.port), timeout=5)
    if mode in ('slow', 'body'):
        s.sendall(b'POST /mcp HTTP/1.1\r\n' if mode == 'slow' else
                  b'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n'
                  b'Content-Length: 100000\r\n\r\n{')
    socks.append(s)
time.sleep(0.5)
def ping():
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}).encode()
    req = (f'POST {u.path} HTTP/1.1\r\nHost: {u.hostname}\r\nContent-Type: application/json\r\n'
           f'Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n'
           f'Content-Length: {len(body)}\r\nConnection: close\r\n\r\n').encode() + body
    t0 = time.time()
    s = socket.create_connection((u.hostname, u.port), timeout=5)
    s.settimeout(5)
    s.sendall(req)
    data = b''
    while True:
        c = s.recv(65536)
        if not c: break
        data += c
    s.close()
    return data, int((time.time() - t0) * 1000)
if mode == 'closed':
    pass
else:
    try:
        data, ms = ping()
        line = data.split(b'\r\n', 1)[0].decode(errors='replace')
        print(f'ok {ms}' if ' 200 ' in line + ' ' and b'"result"' in data else f'FAIL answer: {data[:200]!r}')
    except Exception as e:
        print(f'FAIL {type(e).__name__}: {e}')
if wait:
    t_end = time.time() + wait
    closed = set()
    while time.time() < t_end and len(closed) < n:
        for i, s in enumerate(socks):
            if i in closed: continue
            try:
                s.setblocking(False)
                if mode == 'slow':
                    try: s.send(b'X')
                    except BlockingIOError: pass
                c = s.recv(4096)
                if c == b'' or (mode != 'closed' and c): closed.add(i)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(i)
        time.sleep(0.5)
    print(f'closed {len(closed)}')
PY
}

token_file() {
	echo "sekrit-$$" > "$TMPDIR_TEST/token"
	chmod 600 "$TMPDIR_TEST/token"
}

# 200 idle connections (more than the old total of 128) must not lock out
# an authenticated client: it used to be reset for as long as they stayed.
t_http_idle_flood_does_not_lock_out() {
	need_python
	token_file
	http_start --token-file "$TMPDIR_TEST/token"
	out=$(flood "$HTTP_URL" "sekrit-$$" idle 200)
	assert_contains "$out" "ok "
	kill -0 "$HTTP_PID" || fail "sbx serve died"
}

# A progress stream (SSE) whose client never reads: the progress events
# queued for it are bounded (they used to pile up without limit, 6 bytes of
# JSON for each control byte of output, about 1.5 MB a second here); the
# result still comes whole when the client reads.
t_http_unread_progress_stream_bounded() {
	need_python
	# Under ASan, freed memory waits in a quarantine (256 MiB) before it is
	# reused, so the server's RSS grows with everything it frees: without
	# the quarantine, the bound on the queue is what the RSS shows.
	[ -z "${ASAN_OPTIONS:-}" ] || export ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
	http_start
	local pid
	pid=$(pgrep -P "$HTTP_PID" -x sbx || echo "$HTTP_PID")
	out=$(python3 - "$HTTP_URL" "$pid" <<'PY'
import json, socket, sys, time, urllib.parse, urllib.request
url, pid = sys.argv[1], sys.argv[2]
u = urllib.parse.urlparse(url)
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
def post(msg):
    req = urllib.request.Request(url, data=json.dumps(msg).encode(), headers=hdrs)
    return json.loads(urllib.request.urlopen(req, timeout=30).read())
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith("VmRSS:"): return int(l.split()[1]) * 1024
env = post({"jsonrpc": "2.0", "id": 1, "method": "environment.create", "params": {"_meta": meta, "limits": {"output_bytes": 65536}}})["result"]["environment_id"]
before = rss()
cmd = 'i=0; while [ $i -lt 75 ]; do head -c 65536 /dev/zero | tr "\\0" "\\1"; sleep 0.2; i=$((i+1)); done'
body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"_meta": dict(meta, progressToken="p"), "name": "environment_execute", "arguments": {"environment_id": env, "command": cmd}}}).encode()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect((u.hostname, u.port))
s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
peak = 0
for _ in range(34):
    time.sleep(0.5)
    peak = max(peak, rss() - before)
# Now read it all: the result is there.
s.settimeout(30)
tail, total, found = b"", 0, False
while not found and total < 200 << 20:
    c = s.recv(1 << 20)
    if not c: break
    total += len(c)
    found = b'"id":2' in tail + c
    tail = c[-16:]
s.close()
post({"jsonrpc": "2.0", "id": 3, "method": "environment.destroy", "params": {"_meta": meta, "environment_id": env}})
got = "yes" if found else "no"
print(f"grew {peak >> 20} MiB, result {got}")
PY
)
	echo "$out"
	assert_contains "$out" "result yes"
	local grew
	grew=$(echo "$out" | sed -n 's/^grew \([0-9-]*\) MiB.*/\1/p')
	[ "${grew:-99}" -lt 6 ] || fail "the server grew by $grew MiB for a stream nobody read"
}

# Slowloris: headers a byte a second, and a body that never completes,
# are cut off after --request-timeout, while the ping still answers.
t_http_slow_clients_timed_out() {
	need_python
	token_file
	http_start --token-file "$TMPDIR_TEST/token" --request-timeout 2
	out=$(flood "$HTTP_URL" "sekrit-$$" slow 20:8)
	assert_contains "$out" "ok "
	assert_contains "$out" "closed 20"
	out=$(flood "$HTTP_URL" "sekrit-$$" body 20:8)
	assert_contains "$out" "ok "
	assert_contains "$out" "closed 20"
}

# A connection that never sends anything is closed after --idle-timeout.
t_http_idle_timeout() {
	need_python
	http_start --idle-timeout 2
	out=$(flood "$HTTP_URL" x closed 10:8)
	assert_contains "$out" "closed 10"
}

# Request smuggling (RFC 9112 section 6): a request that two parsers could
# frame apart (Content-Length twice, with Transfer-Encoding, not a number,
# or a Transfer-Encoding other than chunked) is refused on every route
# family, MCP's and E2B's alike, and its connection closed, since where its
# body ends is unknown. libmicrohttpd alone took the first two as one request.
t_http_ambiguous_framing_refused() {
	need_python
	http_start --warm 0
	out=$(python3 - "$HTTP_URL" << 'EOF'
import socket, sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
def send(raw):
    s = socket.create_connection((u.hostname, u.port)); s.settimeout(5)
    s.sendall(raw); out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return out + b"<closed>"
            out += d
    except socket.timeout:
        return out + b"<open>"
    except ConnectionResetError:
        return out + b"<closed>"
body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
chunked = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n"
for path in (b"/mcp", b"/sandboxes"):
    head = b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    cases = [("two lengths", b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(body) + body),
             ("length and chunked", b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked),
             ("chunked and length", b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n" + chunked),
             ("a signed length", b"Content-Length: +%d\r\n\r\n" % len(body) + body),
             ("gzip coding", b"Transfer-Encoding: gzip\r\n\r\n" + body),
             ("two codings", b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked)]
    for name, raw in cases:
        r = send(head + raw)
        status = r.split(b" ", 2)[1].decode() if r.startswith(b"HTTP/1.1 ") else "none"
        print(path.decode(), name, status, "closed" if r.endswith(b"<closed>") else "open")
    # Sound framing is served as before (whatever the route answers), on a
    # connection that stays open for the next request.
    r = send(head + b"Transfer-Encoding: chunked\r\n\r\n" + chunked)
    print(path.decode(), "chunked alone", "refused" if b"Transfer-Encoding" in r else "served", "open" if r.endswith(b"<open>") else "closed")
EOF
	)
	for p in /mcp /sandboxes; do
		for c in "two lengths 400" "length and chunked 400" "chunked and length 400" "a signed length 400" \
			"gzip coding 501" "two codings 501"; do
			assert_contains "$out" "$p $c closed"
		done
		assert_contains "$out" "$p chunked alone served open"
	done
}

# The limits are flags; bad values are usage errors.
t_http_limit_flags() {
	expect_status 125 sbx serve --listen 127.0.0.1:0 --max-connections 0
	expect_status 125 sbx serve --listen 127.0.0.1:0 --max-connections-per-peer abc
	expect_status 125 sbx serve --listen 127.0.0.1:0 --idle-timeout -5
	sbx serve --help 2>&1 | grep -q -- --max-connections-per-peer || fail "serve --help does not list --max-connections-per-peer"
	expect_status 125 sbx serve --listen 127.0.0.1:0 --max-sessions 0
	expect_status 125 sbx serve --listen 127.0.0.1:0 --max-sessions-per-peer x
	sbx serve --help 2>&1 | grep -q -- --max-sessions-per-peer || fail "serve --help does not list --max-sessions-per-peer"
	expect_status 125 sbx serve --listen 127.0.0.1:0 --session-min-idle 0
	expect_status 125 sbx serve --listen 127.0.0.1:0 --session-min-idle 3601
	sbx serve --help 2>&1 | grep -q -- --session-min-idle || fail "serve --help does not list --session-min-idle"
}

# Slowloris from several addresses, each under its share: 24 connections
# (twice --max-connections) that send nothing, half a header, or the headers
# and a body that never ends. A client on another address is still served:
# its connection evicts one of theirs. Those reading a body used to count as
# busy, never evicted, so the client was reset until the request timeout
# (30 s by default) cut them, and the attacker opened them again.
t_http_slowloris_many_peers_does_not_lock_out() {
	need_python
	http_start --max-connections 12 --max-connections-per-peer 4
	out=$(python3 - "$HTTP_URL" <<'PY'
import json, socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
def conn(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect((u.hostname, u.port))
    return s
opening = {"idle": b"",
           "header": b"POST /mcp HTTP/1.1\r\nHost: x\r\n",
           "body": b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 100000\r\n\r\n{"}
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}).encode()
for mode, data in opening.items():
    socks = []
    for a in range(2, 8):
        for _ in range(4):
            s = conn(f"127.0.0.{a}")
            if data:
                s.sendall(data)
            socks.append(s)
    time.sleep(0.5)
    try:
        s = conn("127.0.0.1")
        s.settimeout(10)
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
        got = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            got += c
        print(mode, got.split(b"\r\n")[0].decode())
    except OSError as e:
        print(mode, "FAIL", type(e).__name__, e)
    for s in socks:
        s.close()
    time.sleep(0.5)
PY
)
	echo "$out"
	assert_contains "$out" "idle HTTP/1.1 200"
	assert_contains "$out" "header HTTP/1.1 200"
	assert_contains "$out" "body HTTP/1.1 200"
}

# ---- wrong-typed and out-of-bounds arguments ------------------------------------------
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

# mcp_lines < LINES: one `sbx mcp` over the lines; output in $TMPDIR_TEST/mcp.out.
mcp_lines() {
	sbx mcp > "$TMPDIR_TEST/mcp.out" 2> "$TMPDIR_TEST/mcp.err" || fail "sbx mcp exited $?: $(cat "$TMPDIR_TEST/mcp.err")"
}
# reply ID: the response with that id, as one line of JSON.
reply() {
	python3 -c 'import json,sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("id") == int(sys.argv[2]): print(json.dumps(m)); break' "$TMPDIR_TEST/mcp.out" "$1"
}
# expect_invalid ID FIELD: response ID is -32602 (a JSON-RPC method) and
# names FIELD.
expect_invalid() {
	local r
	r=$(reply "$1")
	assert_contains "$r" '"code": -32602'
	assert_contains "$r" '"data": {"code": "invalid_argument"}' # as every plain method's failure (API.md)
	assert_contains "$r" "$2"
}
# expect_tool_invalid ID FIELD: response ID (tools/call) is an isError result
# with code invalid_argument naming FIELD.
expect_tool_invalid() {
	local r
	r=$(reply "$1")
	assert_contains "$r" '"isError": true'
	assert_contains "$r" '"code": "invalid_argument"'
	assert_contains "$r" "$2"
}

# Every argument that does not match its schema is refused naming the field
# (tools/call: isError invalid_argument; the dotted method: -32602); none creates an
# environment (policy 123 used to create one with no policy at all, and
# limits.pids -1 or 1e9 to reach the cgroup).
t_mcp_wrong_types_refused() {
	need_python
	local before bad i=10 ids=()
	before=$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')
	bad=(
		'{"policy":123}|policy'
		'{"policy":["strict"]}|policy'
		'{"policy":"lax"}|policy'
		'{"network":5}|network'
		'{"network":[]}|network'
		'{"network":{"allow":"example.com"}}|network'
		'{"network":{"allow":["example.com,evil.example"]}}|example.com,evil.example'
		'{"network":{"allow":["example.com,evil.example"]}}|invalid character in host name'
		'{"limits":{"memory_bytes":-1}}|limits.memory_bytes'
		'{"limits":{"memory_bytes":1}}|limits.memory_bytes'
		'{"limits":{"pids":-1}}|limits.pids'
		'{"limits":{"pids":1000000000}}|limits.pids'
		'{"limits":{"pids":1e9}}|limits.pids'
		'{"limits":{"pids":2.5}}|limits.pids'
		'{"limits":{"cpus":5000}}|limits.cpus'
		'{"limits":{"timeout_ms":-5}}|limits.timeout_ms'
		'{"limits":{"output_bytes":-1}}|limits.output_bytes'
		'{"limits":{"disk_bytes":-1}}|limits.disk_bytes'
		'{"volumes":[{"host":"/tmp","path":5}]}|volumes[0].path'
		'{"env":{"A":5}}|env.A'
	)
	{
		echo "$INIT"
		echo "$INITED"
		for b in "${bad[@]}"; do
			args=${b%|*}
			echo "{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_create\",\"arguments\":$args}}"
			echo "{\"jsonrpc\":\"2.0\",\"id\":$((i + 1)),\"method\":\"environment.create\",\"params\":$args}"
			i=$((i + 2))
		done
		echo '{"jsonrpc":"2.0","id":500,"method":"tools/call","params":{"name":"environment_snapshot","arguments":{"environment_id":"x","label":"no spaces allowed"}}}'
	} | mcp_lines
	i=10
	for b in "${bad[@]}"; do
		expect_tool_invalid $i "${b#*|}" || return 1
		expect_invalid $((i + 1)) "${b#*|}" || return 1
		i=$((i + 2))
	done
	expect_tool_invalid 500 label
	after=$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')
	assert_eq "$after" "$before" "no environment was created"
}

# A host path a client names in environment_create (a volume's host, one in a
# policy document's filesystem.volumes, a dir: or oci: template) must lie in a
# directory the operator allowed (--allow-host-dir), symlinks and '..'
# resolved: otherwise a client chose which host directory the server mounts,
# past the host template's mask (a volume of /etc read /etc/shadow).
t_mcp_host_paths_need_allow_host_dir() {
	need_python
	local ok="$TMPDIR_TEST/allowed" before after
	mkdir -p "$ok/sub"
	echo shared > "$ok/sub/f"
	ln -s /etc "$ok/etc"
	before=$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')
	call() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_create\",\"arguments\":$2}}"; }
	{
		echo "$INIT"
		call 10 '{"volumes":[{"host":"/etc","path":"/x"}]}'
		call 11 '{"policy":{"filesystem":{"volumes":[{"host":"/etc","path":"/x"}]}}}'
		call 12 '{"phases":{"setup":{"filesystem":{"volumes":[{"host":"/etc","path":"/x"}]}},"agent":"strict"}}'
		call 13 '{"template":"dir:/etc"}'
		call 14 '{"template":"oci:/etc:latest"}'
		call 15 "{\"volumes\":[{\"host\":\"$ok/sub\",\"path\":\"/x\"}]}"
		echo '{"jsonrpc":"2.0","id":16,"method":"environment.create","params":{"volumes":[{"host":"/etc","path":"/x"}]}}'
		echo '{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"pool_set","arguments":{"source":"dir:/etc","size":1}}}'
	} | mcp_lines
	for i in 10 11 12 13 14 15 17; do
		expect_tool_invalid $i "allow-host-dir" || return 1
	done
	assert_contains "$(reply 16)" "allow-host-dir"
	assert_contains "$(reply 16)" '"error"'
	# Allowed: the directory and what is beneath it, never a symlink out of it.
	{
		echo "$INIT"
		call 20 "{\"volumes\":[{\"host\":\"$ok/sub\",\"path\":\"/x\"}]}"
		call 21 "{\"volumes\":[{\"host\":\"$ok/etc\",\"path\":\"/x\"}]}"
		call 22 "{\"volumes\":[{\"host\":\"$ok/sub/../../..$ok/../../etc\",\"path\":\"/x\"}]}"
		# template_build's context is allowed; its FROM must be too.
		echo "{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"tools/call\",\"params\":{\"name\":\"template_build\",\"arguments\":{\"dockerfile\":\"FROM dir:/etc\\nRUN cat /shadow\",\"context\":\"$ok\",\"tag\":\"hostetc\"}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":24,\"method\":\"tools/call\",\"params\":{\"name\":\"template_build\",\"arguments\":{\"dockerfile\":\"ARG B=oci:/etc\\nFROM \$B\\nRUN true\",\"context\":\"$ok\",\"tag\":\"hostetc\"}}}"
	} | sbx mcp --allow-host-dir "$ok" > "$TMPDIR_TEST/mcp.out" 2> "$TMPDIR_TEST/mcp.err"
	assert_contains "$(reply 20)" '"isError": false'
	expect_tool_invalid 21 "allow-host-dir" || return 1
	expect_tool_invalid 22 "allow-host-dir" || return 1
	expect_tool_invalid 23 "allow-host-dir" || return 1
	expect_tool_invalid 24 "allow-host-dir" || return 1
	local id
	id=$(reply 20 | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["structuredContent"]["environment_id"])')
	assert_eq "$(sbx exec "$id" -- cat /x/f)" "shared"
	sbx rm "$id" > /dev/null
	after=$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')
	assert_eq "$after" "$before" "no environment was created by a refused call"
}

# Under a policy its timeout is a ceiling, as its other limits are: an
# execute may shorten it, never lift it (timeout_ms -1 used to run with no
# timeout at all under strict's 10 minutes) or lengthen it; a background
# process without a timeout_ms gets the policy's.
t_mcp_exec_timeout_capped_by_policy() {
	need_python
	local id
	printf '%s\n' "$INIT" '{"jsonrpc":"2.0","id":1,"method":"environment.create","params":{"policy":"strict"}}' | mcp_lines
	id=$(reply 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["environment_id"])')
	ex() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"echo ran\"$2}}}"; }
	{
		echo "$INIT"
		ex 10 ',"timeout_ms":-1'
		ex 11 ',"timeout_ms":3600000'
		ex 12 ',"timeout_ms":5000'
		ex 13 ''
		ex 14 ',"background":true'
	} | mcp_lines
	expect_tool_invalid 10 "timeout_ms" || return 1
	expect_tool_invalid 11 "600000" || return 1
	assert_contains "$(reply 12)" '"stdout": "ran\n"'
	assert_contains "$(reply 13)" '"stdout": "ran\n"'
	assert_contains "$(reply 14)" '"process_id"'
	printf '%s\n' "$INIT" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"environment.process_list\",\"params\":{\"environment_id\":\"$id\"}}" | mcp_lines
	assert_eq "$(reply 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["processes"][0]["timeout_ms"])')" "600000"
	sbx rm "$id" > /dev/null
}

# The library refuses absurd limits, whoever calls it: the CLI too.
t_cli_limits_refused() {
	expect_status 125 sbx create --pids -1
	expect_status 125 sbx create --memory -1
	expect_status 125 sbx create --pids 1000000000
	expect_status 125 sbx create --memory 100000t
	assert_contains "$ERR" "memory"
	expect_status 125 sbx create --cpus 5000
}

# ---- NUL (\u0000) in strings --------------------------------------------------------------
# Valid JSON with NUL in a string is not a parse error (it was -32700): file
# content and stdin keep the bytes exactly; a field a C string
# must carry (argv, command, env, path, id, method) is refused by name.
# (NUL in an object key stays a parse error: jansson cannot hold one.)
t_mcp_nul_in_strings() {
	need_python
	local id
	id=$(sbx create)
	local p="{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\""
	{
		echo "$INIT"
		echo "$INITED"
		echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_write_file\",\"arguments\":{\"environment_id\":\"$id\",\"path\":\"/tmp/nul\",\"content\":\"a\\u0000b\\u0000\"}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"argv\":[\"echo\",\"a\\u0000b\"]}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"true\\u0000rm -rf /\"}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"environment.execute\",\"params\":{\"environment_id\":\"$id\",\"command\":\"true\",\"env\":{\"A\":\"x\\u0000y\"}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_read_file\",\"arguments\":{\"environment_id\":\"$id\",\"path\":\"/etc/passwd\\u0000x\"}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_destroy\",\"arguments\":{\"environment_id\":\"$id\\u0000\"}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\\u0000x\"}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_list\\u0000x\",\"arguments\":{}}}"
		echo "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"wc -c; printf 'x\\\\000y'\",\"stdin\":\"a\\u0000b\"}}}"
		sleep 3
		echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_read_file\",\"arguments\":{\"environment_id\":\"$id\",\"path\":\"/tmp/nul\",\"encoding\":\"base64\"}}}"
		sleep 3
	} | mcp_lines
	r=$(reply 1)
	assert_contains "$r" '"bytes_written": 4'
	r=$(reply 2)
	assert_contains "$r" '"content": "YQBiAA=="'
	expect_tool_invalid 3 'argv[1]'
	expect_tool_invalid 4 "'command'"
	expect_invalid 5 'env.A'
	expect_tool_invalid 6 "'path'"
	expect_tool_invalid 7 environment_id
	r=$(reply 8)
	assert_contains "$r" '"code": -32600'
	expect_invalid 9 name
	r=$(reply 10)
	# stdin kept its 3 bytes; output is text: a NUL byte there comes back as
	# U+FFFD (src/api/exec.c; binary output: write a file, read it as base64).
	assert_contains "$r" '"stdout": "3\nx\ufffdy"'
	sbx rm "$id" > /dev/null
}

# One peer (127.0.0.2) holds at most --max-connections-per-peer connections:
# its 40th evicts its own oldest, never another peer's; a client on
# 127.0.0.1 is served throughout, also when the total limit is reached.
t_http_per_peer_cap() {
	need_python
	http_start --max-connections-per-peer 8 --max-connections 12
	out=$(python3 - "$HTTP_URL" <<'PY'
import json, socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
def conn(src):
    s = socket.socket()
    s.bind((src, 0))
    s.connect((u.hostname, u.port))
    return s
mine = [conn('127.0.0.1') for _ in range(4)]
flood = [conn('127.0.0.2') for _ in range(40)]
time.sleep(1)
def alive(socks):
    n = 0
    for s in socks:
        s.setblocking(False)
        try:
            n += s.recv(1) != b''
        except BlockingIOError:
            n += 1
        except OSError:
            pass
    return n
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}).encode()
s = conn('127.0.0.1')
s.settimeout(5)
s.sendall(b'POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n'
          b'Content-Length: %d\r\n\r\n' % len(body) + body)
data = b''
while True:
    c = s.recv(65536)
    if not c: break
    data += c
print('flood-alive', alive(flood), 'mine-alive', alive(mine), 'answer', data.split(b'\r\n')[0].decode())
PY
)
	echo "$out"
	assert_contains "$out" "flood-alive 8 "
	assert_contains "$out" "answer HTTP/1.1 200"
}

# ---- sbx serve under initialize floods ------------------------------------------------
# The Python both session tests start with: Peer(SRC) is an HTTP client bound
# to a source address, one keep-alive connection, reconnecting once if the
# server closed it; call_ok says whether a request got a JSON-RPC result.
sessions_py_lib() {
	cat <<'PY'
import http.client, json, socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])

class Peer:
    def __init__(self, src):
        self.src, self.c = src, None
    def post(self, msg, sid=None, hdrs=None):
        for attempt in range(2):
            if self.c is None:
                self.c = http.client.HTTPConnection(u.hostname, u.port, timeout=30, source_address=(self.src, 0))
            h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            if sid: h["Mcp-Session-Id"] = sid
            h.update(hdrs or {})
            try:
                self.c.request("POST", u.path, body=json.dumps(msg), headers=h)
                r = self.c.getresponse()
                body = r.read()
                return r.status, dict((k.lower(), v) for k, v in r.getheaders()), body
            except (http.client.HTTPException, OSError):
                self.c.close(); self.c = None  # an evicted keep-alive connection: reconnect once
        raise RuntimeError("no answer")

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}}}
INITED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
STATELESS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list",
             "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                  "io.modelcontextprotocol/clientCapabilities": {}}}}

def call_ok(p, msg, sid=None, hdrs=None):
    st, h, body = p.post(msg, sid, hdrs)
    return st == 200 and b'"result"' in body, st, body[:200]
PY
}

# session_flood URL N MODE: one Python process that keeps sessions across
# phases. A client on 127.0.0.1 (session A) initializes, sends
# notifications/initialized and a call, then idles; a client on 127.0.0.3
# (session B) only initializes. Then 127.0.0.2 floods: N initialize
# requests (more than the table holds; MODE established: each followed by
# notifications/initialized), a stateless 2026-07-28 call after every 100
# of them. Prints one line per check ("A ok", "B ok", "stateless ok N/N",
# "flood 200 N 503 N"), or "FAIL ..." lines.
session_flood() {
	{
		sessions_py_lib
		cat <<'PY'
flood_n, established = int(sys.argv[2]), sys.argv[3] == "established"
a, b, f, s = Peer("127.0.0.1"), Peer("127.0.0.3"), Peer("127.0.0.2"), Peer("127.0.0.4")
st, h, _ = a.post(INIT)
sid_a = h.get("mcp-session-id")
st2, _, _ = a.post(INITED, sid_a)
ok, st3, _ = call_ok(a, LIST, sid_a)
if not (st == 200 and sid_a and st2 == 202 and ok):
    print(f"FAIL setup A: {st} {sid_a} {st2} {st3}"); sys.exit(0)
st, h, _ = b.post(INIT)
sid_b = h.get("mcp-session-id")
if not (st == 200 and sid_b):
    print(f"FAIL setup B: {st}"); sys.exit(0)

counts, stateless_ok, stateless_n, retry_after = {}, 0, 0, None
for i in range(flood_n):
    st, h, body = f.post(INIT)
    counts[st] = counts.get(st, 0) + 1
    if st == 503 and retry_after is None:
        retry_after = h.get("retry-after")
        print("refused:", json.loads(body)["error"]["message"])
    if established and st == 200:
        f.post(INITED, h.get("mcp-session-id"))
    if i % 100 == 99:
        stateless_n += 1
        stateless_ok += call_ok(s, STATELESS, hdrs={"MCP-Protocol-Version": "2026-07-28"})[0]
print(f"flood 200 {counts.get(200, 0)} 503 {counts.get(503, 0)} other {flood_n - counts.get(200, 0) - counts.get(503, 0)}")
if retry_after is not None:
    print(f"retry-after {retry_after}")
print(f"stateless ok {stateless_ok}/{stateless_n}")
ok, st, body = call_ok(a, LIST, sid_a)
print("A ok" if ok else f"FAIL A after the flood: {st} {body!r}")
ok, st, body = call_ok(b, LIST, sid_b)
print("B ok" if ok else f"FAIL B after the flood: {st} {body!r}")
# A newcomer on a fourth address still gets a session.
st, h, _ = s.post(INIT)
print("newcomer ok" if st == 200 and h.get("mcp-session-id") else f"FAIL newcomer: {st}")
PY
	} | python3 - "$@"
}

# A flood of initialize requests (more than the session table's 1024) used
# to push out every idle session, least recently used first: a client that
# had initialized and made a call, then idled, got 404 on its next call.
# Now the flood displaces only half-open sessions (never sent anything after
# initialize) of its own address, so the idle client, a half-open one on
# another address, stateless 2026-07-28 calls and a newcomer are all served.
t_http_initialize_flood_keeps_sessions() {
	need_python
	http_start
	out=$(session_flood "$HTTP_URL" 1100 half-open)
	echo "$out"
	assert_not_contains "$out" "FAIL"
	assert_contains "$out" "A ok"
	assert_contains "$out" "B ok"
	assert_contains "$out" "stateless ok 11/11"
	assert_contains "$out" "flood 200 1100 503 0 other 0"
	assert_contains "$out" "newcomer ok"
}

# A flood that completes every handshake (initialize, then
# notifications/initialized) makes established sessions: one used in the
# last minute (--session-min-idle) is not displaced for a newcomer, so once
# the flood's address holds its share of the table (a quarter) its next
# initialize gets 503 with Retry-After (at most that minute: when its
# oldest session may give way), and everyone else is still served.
t_http_established_flood_holds_only_its_share() {
	need_python
	http_start
	out=$(session_flood "$HTTP_URL" 300 established)
	echo "$out"
	assert_not_contains "$out" "FAIL"
	assert_contains "$out" "A ok"
	assert_contains "$out" "B ok"
	assert_contains "$out" "stateless ok 3/3"
	assert_contains "$out" "flood 200 256 503 44 other 0"
	assert_contains "$out" "retry-after "
	assert_contains "$out" "refused: Service Unavailable: this address holds 256 sessions"
	local ra
	ra=$(echo "$out" | sed -n 's/^retry-after \([0-9]*\)$/\1/p')
	[ "${ra:-0}" -ge 1 ] && [ "$ra" -le 60 ] || fail "Retry-After '$ra' is not 1 to 60 seconds"
	assert_contains "$out" "newcomer ok"
}

# A client that completes --max-sessions-per-peer handshakes from 127.0.0.1
# and walks away (every client of a loopback server is 127.0.0.1) used to
# lock every new client of that address out for the sessions' idle hour:
# established sessions were never evicted, so each initialize got 503 with
# Retry-After 3600. Now a newcomer is refused only while the flood's
# sessions are fresh (Retry-After at most --session-min-idle), then displaces
# the least recently used idle one; a client of the same address that keeps
# working meanwhile keeps its session, and the displaced session gets 404
# and may initialize again, as the MCP spec has clients do.
t_http_established_flood_does_not_lock_out() {
	need_python
	http_start --max-sessions-per-peer 8 --session-min-idle 5
	out=$({
		sessions_py_lib
		cat <<'PY'
share, min_idle = int(sys.argv[2]), int(sys.argv[3])
def handshake(p):
    st, h, body = p.post(INIT)
    sid = h.get("mcp-session-id")
    if st != 200 or not sid:
        return None, st, h, body
    st2, _, _ = p.post(INITED, sid)
    return (sid if st2 == 202 else None), st, h, body

a, f, n = Peer("127.0.0.1"), Peer("127.0.0.1"), Peer("127.0.0.1")
sid_a = handshake(a)[0]
if not (sid_a and call_ok(a, LIST, sid_a)[0]):
    print("FAIL setup A"); sys.exit(0)
# The flood: handshakes until refused and as many again, then it walks away.
flood, refused, retry = [], 0, None
for i in range(2 * share):
    sid, st, h, body = handshake(f)
    if sid:
        flood.append(sid)
    elif st == 503:
        refused += 1
        retry = retry or h.get("retry-after")
    else:
        print(f"FAIL flood: {st} {body[:200]!r}")
print(f"flood 200 {len(flood)} 503 {refused} retry-after {retry}")
# While its sessions are fresh the newcomer is refused, told when to retry.
st, h, body = n.post(INIT)
print(f"fresh {st} retry-after {h.get('retry-after')}")
# A keeps working (a call every 0.5 s); the newcomer retries until seated.
t0, sid_n = time.monotonic(), None
while time.monotonic() < t0 + min_idle + 10:
    ok, st, body = call_ok(a, LIST, sid_a)
    if not ok:
        print(f"FAIL A while the newcomer waits: {st} {body!r}"); break
    sid_n = handshake(n)[0]
    if sid_n:
        break
    time.sleep(0.5)
print(f"newcomer seated after {time.monotonic() - t0:.1f} s" if sid_n else "FAIL newcomer never seated")
print("newcomer ok" if sid_n and call_ok(n, LIST, sid_n)[0] else "FAIL newcomer's call")
print("A ok" if call_ok(a, LIST, sid_a)[0] else "FAIL A after the newcomer")
# The flood's oldest session gave way: 404, and a new initialize seats it
# again (displacing the next oldest), as the spec has a client recover.
st, _, _ = f.post(LIST, flood[0]) if flood else (0, 0, 0)
print(f"displaced {st}")
st, _, _ = f.post(LIST, flood[-1]) if flood else (0, 0, 0)
print(f"last of the flood {st}")
print("reinitialized" if handshake(f)[0] else "FAIL reinitialize")
PY
	} | python3 - "$HTTP_URL" 8 5)
	echo "$out"
	assert_not_contains "$out" "FAIL"
	assert_contains "$out" "flood 200 7 503 9 "
	assert_contains "$out" "newcomer ok"
	assert_contains "$out" "A ok"
	assert_contains "$out" "displaced 404"
	assert_contains "$out" "last of the flood 200"
	assert_contains "$out" "reinitialized"
	local ra
	ra=$(echo "$out" | sed -n 's/^fresh 503 retry-after \([0-9]*\)$/\1/p')
	[ "${ra:-0}" -ge 1 ] && [ "$ra" -le 5 ] || fail "the fresh flood's Retry-After '$ra' is not 1 to 5 seconds"
}
