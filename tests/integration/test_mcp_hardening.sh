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

# The limits are flags; bad values are usage errors.
t_http_limit_flags() {
	expect_status 125 sbx serve --listen 127.0.0.1:0 --max-connections 0
	expect_status 125 sbx serve --listen 127.0.0.1:0 --max-connections-per-peer abc
	expect_status 125 sbx serve --listen 127.0.0.1:0 --idle-timeout -5
	sbx serve --help 2>&1 | grep -q -- --max-connections-per-peer || fail "serve --help does not list --max-connections-per-peer"
}
