# Network modes: none (loopback only), allow (the egress proxy, only route
# out), internet (the same proxy, every public host), open (host network,
# flagged). Servers run on the host's 127.0.0.1.


# curl through the proxy, ignoring no_proxy for 127.0.0.1 (inside, 127.0.0.1 is the environment's own loopback).
via_proxy() { sbx exec "$ID" -- curl -s --max-time 10 --noproxy '' -x http://127.0.0.1:3128 "$@"; }

t_allow_reaches_allowed_host_only() {
	command -v curl > /dev/null || skip "curl is not installed"
	start_server
	ID=$(sbx create --network "allow=127.0.0.1:$PORT")
	assert_eq "$(via_proxy "http://127.0.0.1:$PORT/")" "hello from the host"
	# CONNECT tunnel to the same allowed host:port.
	assert_eq "$(via_proxy -p "http://127.0.0.1:$PORT/")" "hello from the host"
	# Another port, another host: 403 that says why and that other routes are blocked.
	out=$(via_proxy -i "http://127.0.0.1:$((PORT + 1))/")
	assert_contains "$out" "403"
	assert_contains "$out" "retrying another way will not work"
	out=$(via_proxy -i "http://example.com/")
	assert_contains "$out" "403"
	assert_contains "$out" "example.com:80"
	# The environment knows the proxy.
	assert_contains "$(sbx exec "$ID" -- sh -c 'echo $HTTPS_PROXY')" "127.0.0.1:3128"
	# Refusals and connections are logged.
	log=$(sbx inspect "$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["isolation"]["egress_log"])')
	grep -q '"verdict":"denied"' "$log" || fail "no denial logged"
	grep -q '"verdict":"allowed"' "$log" || fail "no allowed connection logged"
	out=$(sbx logs "$ID" --net)
	assert_contains "$out" "denied"
	assert_contains "$out" "example.com:80"
	sbx logs --json "$ID" --net | python3 -c 'import json,sys; e=json.load(sys.stdin)["events"]; assert any(x["verdict"]=="allowed" for x in e), e'
	none=$(sbx create)
	expect_status 125 sbx logs "$none" --net
	assert_contains "$ERR" "only network allow"
	sbx rm "$none"
	sbx rm "$ID"
	kill $SRV
}

t_allow_has_no_other_route() {
	start_server
	ID=$(sbx create --network "allow=127.0.0.1:$PORT" -v "$(probe_volume)")
	# Straight to the host's loopback, an outside address, IPv6, DNS: all fail.
	sbx exec "$ID" -- /probe/probe connect 127.0.0.1 "$PORT" | grep -q BLOCKED || fail "direct connect worked"
	sbx exec "$ID" -- /probe/probe connect 10.0.2.2 80 | grep -q BLOCKED || fail "outside address reachable"
	out=$(sbx exec "$ID" -- python3 -c "
import socket
try:
    socket.getaddrinfo('example.com', 80); print('dns works')
except Exception as e: print('no dns', e)
try:
    s = socket.socket(socket.AF_INET6); s.settimeout(2); s.connect(('::1', $PORT)); print('v6 connected')
except Exception as e: print('no v6', e)
")
	assert_contains "$out" "no dns"
	assert_contains "$out" "no v6"
	# CONNECT to an IP when only a name is allowed, and a name resolving to loopback: refused.
	sbx rm "$ID"
	ID=$(sbx create --network "allow=localhost:$PORT")
	out=$(sbx exec "$ID" -- curl -s -i --max-time 10 --noproxy '' -x http://127.0.0.1:3128 "http://localhost:$PORT/" || true)
	assert_contains "$out" "403"
	out=$(sbx exec "$ID" -- curl -s -i --max-time 10 --noproxy '' -p -x http://127.0.0.1:3128 "http://127.0.0.1:$PORT/" 2>&1 || true)
	assert_not_contains "$out" "hello from the host"
	sbx rm "$ID"
	kill $SRV
}

t_absolute_uri_tricks_refused() {
	start_server
	ID=$(sbx create --network "allow=127.0.0.1:$PORT")
	# An allowed absolute URI with a Host header naming another host.
	out=$(sbx exec "$ID" -- python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'GET http://127.0.0.1:$PORT/ HTTP/1.1\r\nHost: evil.example:80\r\n\r\n')
print(s.recv(200).decode(errors='replace'))")
	assert_contains "$out" "403"
	sbx rm "$ID"
	kill $SRV
}

t_network_none_is_default() {
	start_server
	ID=$(sbx create)
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo ${HTTPS_PROXY:-unset}')" "unset"
	out=$(sbx exec "$ID" -- python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', 3128), 1); print('proxy there')
except Exception: print('no proxy')")
	assert_eq "$out" "no proxy"
	sbx rm "$ID"
	kill $SRV
}

t_network_open_is_flagged() {
	start_server
	ID=$(sbx create --network open 2> "$TMPDIR_TEST/warn")
	assert_contains "$(cat "$TMPDIR_TEST/warn")" "network open"
	assert_contains "$(sbx inspect "$ID")" "open: the host's network"
	out=$(sbx exec "$ID" -- python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$PORT/', timeout=5).read().decode().strip())")
	assert_eq "$out" "hello from the host"
	sbx rm "$ID"
	kill $SRV
}

# The policy profile "open" promised every public host through the proxy
# with internal addresses blocked, and gave the host's network: the host's
# loopback services (and a cloud's metadata address) were reachable.
t_internet_reaches_public_hosts_only() {
	command -v curl > /dev/null || skip "curl is not installed"
	start_server
	local how
	for how in "--policy open" "--network internet"; do
		# shellcheck disable=SC2086
		ID=$(sbx create $how 2> "$TMPDIR_TEST/warn")
		assert_not_contains "$(cat "$TMPDIR_TEST/warn")" "host's network"
		assert_contains "$(sbx inspect "$ID")" "every public host"
		assert_contains "$(sbx exec "$ID" -- sh -c 'echo $HTTPS_PROXY')" "127.0.0.1:3128"
		# Straight out: no route (the environment's own loopback only).
		out=$(sbx exec "$ID" -- python3 -c "
import socket
try:
    socket.create_connection(('127.0.0.1', $PORT), 2); print('host reached')
except Exception as e: print('blocked', e)")
		assert_contains "$out" "blocked" "$how"
		# Through the proxy: the host's loopback, a name resolving to it, the
		# metadata address, private ranges: refused, saying why.
		for url in "http://127.0.0.1:$PORT/" "http://localhost:$PORT/" "http://169.254.169.254/latest/" \
			"http://10.0.0.1/" "http://[::1]:$PORT/"; do
			out=$(via_proxy -i "$url" || true)
			assert_contains "$out" "403" "$how $url"
			assert_not_contains "$out" "hello from the host" "$how $url"
		done
		assert_contains "$(via_proxy "http://localhost:$PORT/")" "internal address"
		# Any name passes the first gate: this one only fails to resolve.
		assert_contains "$(via_proxy "http://no-such-host.invalid/" || true)" "cannot resolve"
		sbx logs "$ID" --net | grep -q "every public host" || fail "$how: the log names the rule"
		sbx rm "$ID" > /dev/null
	done
	# The host's network is beyond a policy of public hosts.
	expect_status 125 sbx create --policy open --network open
	assert_contains "$ERR" "ask for network internet"
	# An internal address is reachable only where the policy names it.
	expect_status 125 sbx create --policy open --network "allow=127.0.0.1:$PORT"
	assert_contains "$ERR" "internal address the policy does not allow"
	echo "{\"network\": {\"mode\": \"open\", \"allow\": [\"127.0.0.1:$PORT\"]}}" > "$TMPDIR_TEST/pol.json"
	ID=$(sbx create --policy "$TMPDIR_TEST/pol.json")
	assert_eq "$(via_proxy "http://127.0.0.1:$PORT/")" "hello from the host"
	assert_contains "$(via_proxy -i "http://127.0.0.1:$((PORT + 1))/" || true)" "403"
	sbx rm "$ID" > /dev/null
	kill $SRV
}

t_bad_network_specs() {
	expect_status 125 sbx create --network sometimes
	assert_contains "$ERR" "expected none, internet, open or allow="
	expect_status 125 sbx create --network "allow=*"
	expect_status 125 sbx create --network "allow=a.com:99999"
	expect_status 125 sbx create --network "allow="
}

t_allow_survives_restore() {
	command -v curl > /dev/null || skip "curl is not installed"
	start_server
	ID=$(sbx create --network "allow=127.0.0.1:$PORT")
	snap=$(sbx snapshot "$ID")
	sbx restore "$ID" "$snap" > /dev/null
	assert_eq "$(via_proxy "http://127.0.0.1:$PORT/")" "hello from the host"
	sbx rm "$ID"
	kill $SRV
}
