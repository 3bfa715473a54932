# Published ports (docs/ports.md): sbx create -p [HOSTIP:]HOSTPORT:PORT, a
# TCP listener of the environment's supervisor on the host that relays each
# connection to PORT on the environment's own loopback; sbx port.

# fetch HOSTPORT [PATH]: the body of http://127.0.0.1:HOSTPORT/PATH, or
# nothing (status 1) when the connection fails or closes without an answer.
fetch() {
	python3 - "$1" "${2:-}" << 'EOF'
import sys, urllib.request
try:
    with urllib.request.urlopen("http://127.0.0.1:%s/%s" % (sys.argv[1], sys.argv[2]), timeout=5) as r:
        sys.stdout.write(r.read().decode())
except Exception:
    sys.exit(1)
EOF
}

# refused HOSTPORT: nothing listens on 127.0.0.1:HOSTPORT (connect refused).
refused() {
	python3 - "$1" << 'EOF'
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2).close()
except ConnectionRefusedError:
    sys.exit(0)
sys.exit(1)
EOF
}

# serve ID TEXT [PORT]: an HTTP server inside ID on its 127.0.0.1:PORT (8000)
# whose index is TEXT.
serve() {
	sbx exec "$1" -- sh -c "mkdir -p /srv && echo '$2' > /srv/index.html"
	sbx exec -d "$1" -- python3 -m http.server "${3:-8000}" --bind 127.0.0.1 --directory /srv > /dev/null
}

# host_port ID PORT: the host port PORT is published on (sbx port ID PORT).
host_port() { sbx port "$1" "$2" | sed 's/.*://'; }

no_envs() { assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" 0; }

t_ports_reach_server_inside() {
	id=$(sbx create -p 0:8000)
	out=$(sbx port "$id")
	[[ "$out" =~ ^8000/tcp\ -\>\ 127\.0\.0\.1:([0-9]+)$ ]] || fail "sbx port printed: $out"
	hp=${BASH_REMATCH[1]}
	[ "$hp" -gt 0 ] || fail "HOSTPORT 0 was not replaced by the port bound"
	serve "$id" "hello from inside"
	eventually 30 fetch "$hp" > /dev/null || fail "no answer through the published port"
	assert_eq "$(fetch "$hp")" "hello from inside"
	# --json, and inspect shows the same mappings (from the record).
	j=$(sbx port --json "$id")
	assert_eq "$(echo "$j" | python3 -c 'import json,sys; p=json.load(sys.stdin)["ports"][0]; print(p["port"], p["protocol"], p["host_ip"], p["host_port"])')" "8000 tcp 127.0.0.1 $hp"
	assert_contains "$(sbx inspect "$id")" "\"host_port\": $hp"
	# sbx ls shows them as docker ps does; its JSON (environment.list) has them.
	assert_contains "$(sbx ls | grep "^$id")" "127.0.0.1:$hp->8000/tcp"
	assert_eq "$(sbx ls --json | python3 -c "import json,sys; print([e.get('ports') for e in json.load(sys.stdin)['environments'] if e['environment_id'] == '$id'][0][0]['host_port'])")" "$hp"
	other=$(sbx create)
	assert_contains "$(sbx ls | grep "^$other")" " -"
	assert_eq "$(sbx ls --json | python3 -c "import json,sys; print(['ports' in e for e in json.load(sys.stdin)['environments'] if e['environment_id'] == '$other'][0])")" "False"
	sbx rm "$other" > /dev/null
	# Many connections in a row and at once: each gets its own relay.
	for i in 1 2 3 4 5; do fetch "$hp" > /dev/null & done
	wait
	sbx rm "$id" > /dev/null
}

t_ports_two_envs_same_inner_port() {
	a=$(sbx create -p 0:8000)
	b=$(sbx create -p 0:8000)
	serve "$a" "env A"
	serve "$b" "env B"
	ha=$(host_port "$a" 8000) hb=$(host_port "$b" 8000)
	[ "$ha" != "$hb" ] || fail "two environments got one host port"
	eventually 30 fetch "$ha" > /dev/null || fail "A does not answer"
	eventually 30 fetch "$hb" > /dev/null || fail "B does not answer"
	assert_eq "$(fetch "$ha")" "env A"
	assert_eq "$(fetch "$hb")" "env B"
	sbx rm "$a" "$b" > /dev/null
}

t_ports_port_in_use_fails_cleanly() {
	start_server # the host's own server holds 127.0.0.1:$PORT
	expect_status 125 sbx create -p "$PORT:8000"
	assert_contains "$ERR" "in use"
	assert_contains "$ERR" "$PORT"
	expect_status 125 sbx run -p "$PORT:8000" -- true # a one-shot's supervisor removes its own
	assert_contains "$ERR" "in use"
	no_envs
	[ -z "$(ls "$SBX_ROOT/envs" 2> /dev/null | grep -E '^[0-9a-f]{12}$')" ] || fail "an environment was left on disk"
	kill "$SRV"
}

t_ports_bad_specs_are_usage_errors() {
	for spec in 8000 70000:80 1:0 1:65536 abc:1:80 localhost:1:80 ::1:8080:80 1:2:3:4 -1:80; do
		expect_status 125 sbx create -p "$spec"
		assert_contains "$ERR" "sbx create --help"
	done
	expect_status 125 sbx create --publish 18081:80 -p 127.0.0.1:18081:81
	assert_contains "$ERR" "repeats"
	expect_status 125 sbx create --network open -p 0:80
	assert_contains "$ERR" "network open"
	expect_status 125 sbx port
	no_envs
}

t_ports_rm_closes_listener() {
	id=$(sbx create -p 0:8000)
	hp=$(host_port "$id" 8000)
	serve "$id" "up"
	eventually 30 fetch "$hp" > /dev/null || fail "no answer"
	# A connection held open across the removal: rm does not wait on it,
	# and it ends with the environment.
	python3 - "$hp" > "$TMPDIR_TEST/held" 2>&1 << 'EOF' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)
s.settimeout(60)
print("open", flush=True)
print("eof" if s.recv(100) == b"" else "data", flush=True)
EOF
	held=$!
	eventually 10 grep -q open "$TMPDIR_TEST/held"
	sup=$(python3 -c "import json; print(json.load(open('$SBX_ROOT/envs/$id/state.json'))['supervisor_pid'])")
	timeout 30 "$SBX_BIN" rm "$id" > /dev/null || fail "rm failed or hung"
	wait "$held" || true
	assert_contains "$(cat "$TMPDIR_TEST/held")" "eof"
	refused "$hp" || fail "the listener outlived the environment"
	eventually 10 sh -c "! kill -0 $sup 2> /dev/null" || fail "the supervisor (and its threads) outlived rm"
}

t_ports_relay_reaches_only_the_environment() {
	# The host serves on 127.0.0.1:$PORT; the environment publishes its own
	# port $PORT, where nothing listens: the relay goes into the
	# environment's loopback only, never to the host's.
	start_server
	id=$(sbx create -p "0:$PORT")
	hp=$(host_port "$id" "$PORT")
	if out=$(fetch "$hp"); then
		fail "a request through the published port got an answer: $out"
	fi
	assert_not_contains "$out" "hello from the host"
	# The listener itself stays (the next connection is relayed again).
	serve "$id" "inside" "$PORT"
	eventually 30 fetch "$hp" > /dev/null || fail "no answer once a server listens inside"
	assert_eq "$(fetch "$hp")" "inside"
	kill "$SRV"
	sbx rm "$id" > /dev/null
}

t_ports_pause_restore_fork() {
	id=$(sbx create -p 0:8000)
	hp=$(host_port "$id" 8000)
	serve "$id" "first"
	eventually 30 fetch "$hp" > /dev/null || fail "no answer"
	# Paused: a connection is refused inside (closed), the pause holds.
	sbx pause "$id" > /dev/null
	if fetch "$hp" > /dev/null; then fail "a paused environment answered"; fi
	assert_contains "$(sbx inspect "$id")" '"state": "paused"'
	sbx resume "$id" > /dev/null
	eventually 30 fetch "$hp" > /dev/null || fail "no answer after resume"
	# Restore in place keeps the mapping (same host port); its processes
	# restart, so a new server answers there.
	snap=$(sbx snapshot "$id")
	sbx restore "$id" "$snap" > /dev/null
	assert_eq "$(host_port "$id" 8000)" "$hp"
	serve "$id" "restored"
	eventually 30 fetch "$hp" > /dev/null || fail "no answer after restore"
	assert_eq "$(fetch "$hp")" "restored"
	# A fork does not inherit host ports (they would collide).
	f=$(sbx fork "$snap")
	assert_eq "$(sbx port "$f")" ""
	assert_eq "$(sbx port --json "$f" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ports"])')" "[]"
	sbx rm "$id" "$f" > /dev/null
}

t_ports_suspend_wake_rebinds() {
	id=$(sbx create -p 0:8000 --idle-suspend 1s)
	hp=$(host_port "$id" 8000)
	suspended() { [ -e "$SBX_ROOT/envs/$id/suspended" ] && ! [ -S "$SBX_RUN/$id/ctl.sock" ]; }
	eventually 30 suspended || fail "not suspended: $(sbx ls)"
	refused "$hp" || fail "a suspended environment's port still listens"
	sbx resume "$id" > /dev/null
	assert_eq "$(host_port "$id" 8000)" "$hp"
	serve "$id" "awake"
	eventually 30 fetch "$hp" > /dev/null || fail "no answer after the wake"
	sbx rm "$id" > /dev/null
}

t_ports_rootless() {
	is_root || skip_ok "already unprivileged: the other tests run rootless"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	command -v setpriv > /dev/null || skip "setpriv (util-linux) is missing"
	mkdir -p "$TMPDIR_TEST/rl"
	chmod 1777 "$TMPDIR_TEST/rl"
	chmod 755 "$TMPDIR_TEST"
	export SBX_ROOT="$TMPDIR_TEST/rl/store" SBX_RUN="$TMPDIR_TEST/rl/run"
	rl() { as_user env HOME=/home/sbxtest SBX_ROOT="$SBX_ROOT" SBX_RUN="$SBX_RUN" sh -c '"$SBX_BIN" "$@"' sbx "$@"; }
	id=$(rl create -p 0:8000)
	hp=$(rl port "$id" 8000 | sed 's/.*://')
	[ "$hp" -ge 1024 ] || fail "host port $hp"
	rl exec "$id" -- sh -c "mkdir -p /tmp/srv && echo rootless > /tmp/srv/index.html"
	rl exec -d "$id" -- python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/srv > /dev/null
	eventually 30 fetch "$hp" > /dev/null || fail "no answer rootless"
	assert_eq "$(fetch "$hp")" "rootless"
	if [ "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start 2> /dev/null || echo 1024)" -gt 80 ]; then
		expect_status 125 rl create -p 80:8000
		assert_contains "$ERR" "permission denied"
	fi
	rl rm "$id" > /dev/null
	refused "$hp" || fail "the listener outlived the environment"
}

t_ports_explicit_addresses() {
	# Beyond loopback only when HOSTIP says so; IPv6 in brackets.
	id=$(sbx create -p 0.0.0.0:0:8000 -p 127.0.0.1::8001)
	out=$(sbx port "$id")
	assert_contains "$out" "8000/tcp -> 0.0.0.0:"
	assert_contains "$out" "8001/tcp -> 127.0.0.1:"
	serve "$id" "any address"
	hp=$(host_port "$id" 8000)
	eventually 30 fetch "$hp" > /dev/null || fail "no answer on 0.0.0.0"
	sbx rm "$id" > /dev/null
	if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2> /dev/null; then
		id=$(sbx create -p "[::1]:0:8000")
		assert_contains "$(sbx port "$id")" "8000/tcp -> [::1]:"
		serve "$id" "v6"
		hp=$(host_port "$id" 8000)
		v6() { python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://[::1]:$hp/', timeout=5).read().decode())"; }
		eventually 30 v6 > /dev/null || fail "no answer on [::1]"
		assert_eq "$(v6)" "v6"
		sbx rm "$id" > /dev/null
	fi
	expect_status 125 sbx create -p 192.0.2.1:0:8000 # an address this host does not have
	assert_contains "$ERR" "no such address"
	no_envs
}

t_ports_connection_limit() {
	# 256 connections at once; one more is accepted and closed at once.
	id=$(sbx create -p 0:8000)
	hp=$(host_port "$id" 8000)
	sbx exec -d "$id" -- python3 -c '
import socket
s = socket.socket(); s.bind(("127.0.0.1", 8000)); s.listen(1024)
held = []
while True:
    c, _ = s.accept(); held.append(c); c.send(b"hi")
' > /dev/null
	up() { python3 -c "import socket; s=socket.create_connection(('127.0.0.1', $hp), 5); s.settimeout(5); assert s.recv(2) == b'hi'"; }
	eventually 30 up || fail "the server inside does not answer"
	out=$(python3 - "$hp" << 'EOF'
import socket, sys
hp = int(sys.argv[1]); held = []; served = 0
for i in range(262):
    s = socket.create_connection(("127.0.0.1", hp), 5); s.settimeout(5)
    try:
        served += s.recv(2) == b"hi"
    except OSError:
        pass
    held.append(s)
print(served)
EOF
	)
	# The probes above still hold their slots (a relay lasts until both sides
	# have closed, and this server never closes): at most 256 served, and
	# nearly all of them.
	[ "$out" -le 256 ] && [ "$out" -ge 240 ] || fail "served $out of 262 connections"
	sbx rm "$id" > /dev/null
}

t_ports_wake_with_port_taken_warns() {
	# A wake binds the recorded host port again; taken meanwhile, the
	# environment comes back without it, and says so.
	id=$(sbx create -p 0:8000 --idle-suspend 1s)
	hp=$(host_port "$id" 8000)
	suspended() { [ -e "$SBX_ROOT/envs/$id/suspended" ] && ! [ -S "$SBX_RUN/$id/ctl.sock" ]; }
	eventually 30 suspended || fail "not suspended: $(sbx ls)"
	python3 -c "
import socket, time
s = socket.socket(); s.bind(('127.0.0.1', $hp)); s.listen(1)
open('$TMPDIR_TEST/taken', 'w').close(); time.sleep(60)" &
	holder=$!
	eventually 10 test -e "$TMPDIR_TEST/taken"
	sbx resume "$id" > /dev/null
	assert_eq "$(sbx exec "$id" -- echo up)" "up"
	assert_contains "$(sbx inspect "$id")" "publish port 8000"
	assert_eq "$(host_port "$id" 8000)" "$hp" # still the environment's mapping
	kill "$holder"
	sbx rm "$id" > /dev/null
}

t_ports_mcp_publish_loopback_only() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	out=$(PYTHONPATH="$SBX_SRC/tests/integration" python3 - "$SBX_BIN" << 'EOF'
import sys, time, urllib.request
from mcp_client import Client
call = Client(sys.argv[1]).call
bad, c = call("environment_create", {"publish": ["0:8000"]})
env = c["environment_id"]
p = c["ports"][0]
print("ports", bad, p["port"], p["host_ip"], p["host_port"] > 0)
call("environment_execute", {"environment_id": env, "command": "mkdir -p /srv && echo mcp > /srv/index.html"})
call("environment_execute", {"environment_id": env, "background": True,
     "argv": ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "/srv"]})
body = None
for _ in range(300):
    try:
        body = urllib.request.urlopen("http://127.0.0.1:%d/" % p["host_port"], timeout=5).read().decode().strip()
        break
    except Exception:
        time.sleep(0.1)
print("fetch", body)
bad, e = call("environment_create", {"publish": ["0.0.0.0:0:8000"]})
print("wide", bad, e["error"]["code"], "loopback only" in e["error"]["message"])
bad, e = call("environment_create", {"publish": ["nonsense"]})
print("bad", bad, e["error"]["code"])
call("environment_destroy", {"environment_id": env})
EOF
	)
	echo "$out"
	assert_contains "$out" "ports False 8000 127.0.0.1 True"
	assert_contains "$out" "fetch mcp"
	assert_contains "$out" "wide True invalid_argument True"
	assert_contains "$out" "bad True invalid_argument"
	eventually 30 no_envs
}
