# Snapshots through OCI registries: sbx push / sbx pull against a real
# registry (Debian's docker-registry, on 127.0.0.1 with a private config and
# storage under $TMPDIR_TEST), skopeo reading what was pushed, a fake
# registry serving a corrupt blob, basic auth from a config.json, and a
# Bearer-token registry (fake) whose token endpoint wants the credentials.

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_registry [HTPASSWD]: sets REG (127.0.0.1:PORT), REG_PID, REG_LOG.
start_registry() {
	local reg=/usr/bin/docker-registry
	[ -x "$reg" ] || skip "docker-registry is not installed (scripts/deps.sh test)"
	local port
	port=$(free_port)
	REG="127.0.0.1:$port"
	REG_LOG="$TMPDIR_TEST/registry.log"
	{
		echo "version: 0.1"
		echo "log: {level: info}"
		echo "storage: {filesystem: {rootdirectory: $TMPDIR_TEST/registry-data}, delete: {enabled: true}}"
		echo "http: {addr: $REG}"
		[ -n "${1:-}" ] && echo "auth: {htpasswd: {realm: sbx-test, path: $1}}"
	} > "$TMPDIR_TEST/registry.yml"
	"$reg" serve "$TMPDIR_TEST/registry.yml" > "$REG_LOG" 2>&1 &
	REG_PID=$!
	for _ in $(seq 50); do
		curl -s -o /dev/null "http://$REG/v2/" && return 0
		sleep 0.1
	done
	cat "$REG_LOG" >&2
	fail "docker-registry did not start"
}
stop_registry() {
	if [ -n "${REG_PID:-}" ]; then
		kill "$REG_PID" 2> /dev/null || true
		wait "$REG_PID" 2> /dev/null || true
	fi
	REG_PID=
}

busybox_dir() { # DIR
	local bb
	bb=$(command -v busybox || true)
	[ -n "$bb" ] && file -L "$bb" 2> /dev/null | grep -q static || bb=/bin/busybox
	[ -x "$bb" ] || skip "busybox-static is not installed"
	mkdir -p "$1/bin" "$1/root"
	cp "$bb" "$1/bin/busybox"
	for a in sh echo cat ls mkdir dd sha256sum find; do ln -s busybox "$1/bin/$a"; done
}

# jget EXPR: EXPR (Python, the JSON document as d) evaluated over stdin.
jget() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

# A snapshot of an environment from a dir: template with files in /root: sets S (its id) and ENV_ID.
make_snapshot() {
	busybox_dir "$TMPDIR_TEST/rootfs"
	# a POSIX ACL in the template's tree (root: uid 1234 is in the layer's id range)
	if is_root && command -v setfacl > /dev/null; then
		mkdir -p "$TMPDIR_TEST/rootfs/acl" && touch "$TMPDIR_TEST/rootfs/acl/f"
		setfacl -m u:1234:rwx "$TMPDIR_TEST/rootfs/acl/f"
	fi
	sbx template add bb "dir:$TMPDIR_TEST/rootfs" > /dev/null
	ENV_ID=$(sbx create --template bb)
	sbx exec "$ENV_ID" -- sh -c 'echo hello > /root/file; mkdir -p /root/d/e; dd if=/dev/urandom of=/root/d/e/big bs=1k count=512 2>/dev/null; ln -s file /root/link' > /dev/null
	S=$(sbx snapshot "$ENV_ID")
}

# The files of an environment as "sha256 path" lines (regular files) plus the symlinks.
tree_sums() { sbx exec "$1" -- sh -c 'cd /root && find . -type f | sort | while read -r f; do sha256sum "$f"; done; ls -l link | sed "s/.* link/link/"'; }

t_push_pull_fork_identical() {
	start_registry
	trap stop_registry EXIT
	make_snapshot
	out=$(sbx push --json "$S" "$REG/sbx/test:v1" --insecure) || fail "push: $out"
	assert_eq "$(echo "$out" | jget 'd["skipped_blobs"]')" "0" "first push skips nothing"
	# The pull goes into another, empty store.
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	P=$(sbx pull "$REG/sbx/test:v1" --insecure --name got) || fail "pull: $P"
	[[ "$P" == sha256:* ]] || fail "pull prints the snapshot digest, got '$P'"
	ID2=$(sbx fork got)
	got=$(tree_sums "$ID2")
	sbx rm "$ID2" > /dev/null
	export SBX_ROOT="$TMPDIR_TEST/root" SBX_RUN="$TMPDIR_TEST/run"
	want=$(tree_sums "$ENV_ID")
	assert_eq "$got" "$want" "files after push, pull, fork"
	[ "$(echo "$want" | wc -l)" -ge 3 ] || fail "too few files compared: $want"
	# The pulled layers are the pushed snapshot's (same diff_ids) over its
	# dir: template's tree, which export makes the bottom layer.
	wl=$(sbx snapshots --json | jget "[s['layers'] for s in d['snapshots'] if s['snapshot_id']=='$S'][0]")
	SBX_ROOT="$TMPDIR_TEST/root2" sbx snapshots --json > "$TMPDIR_TEST/s2.json"
	gl=$(jget "[s['layers'] for s in d['snapshots'] if s['snapshot_id']=='$P'][0][1:]" < "$TMPDIR_TEST/s2.json")
	assert_eq "$gl" "$wl" "layer digests"
	# Nothing left in the partial-download area after a complete pull.
	[ -z "$(ls "$TMPDIR_TEST/root2/registry/partial/blobs/sha256")" ] || fail "partial downloads left behind"
	# ... and the ACL of the template's tree came along (docs/store.md "POSIX ACLs")
	if [ -e "$TMPDIR_TEST/rootfs/acl/f" ]; then
		a=$(ls -d "$TMPDIR_TEST"/root2/layers/sha256/*/acl/f | head -1)
		assert_contains "$(getfacl -n "$a" 2> /dev/null)" "user:1234:rwx"
	fi
	SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2" sbx gc > /dev/null
	sbx rm "$ENV_ID" > /dev/null
}

t_child_push_uploads_only_the_new_layer() {
	start_registry
	trap stop_registry EXIT
	make_snapshot
	sbx push "$S" "$REG/sbx/test:v1" --insecure > /dev/null
	puts1=$(grep -c '"PUT /v2/sbx/test/blobs/uploads/' "$REG_LOG")
	sbx exec "$ENV_ID" -- sh -c 'echo child > /root/child' > /dev/null
	S2=$(sbx snapshot "$ENV_ID")
	out=$(sbx push --json "$S2" "$REG/sbx/test:v2" --insecure) || fail "push: $out"
	echo "$out" > "$TMPDIR_TEST/push2.json"
	# Uploaded: the new layer and the config; skipped: the parent's layers.
	assert_eq "$(jget 'd["uploaded_blobs"]' < "$TMPDIR_TEST/push2.json")" "2" "uploaded blobs"
	nl=$(sbx snapshots --json | jget "[len(s['layers']) for s in d['snapshots'] if s['snapshot_id']=='$S'][0]")
	assert_eq "$(jget 'd["skipped_blobs"]' < "$TMPDIR_TEST/push2.json")" "$((nl + 1))" "skipped blobs (the parent's layers + the dir: base)"
	up=$(jget 'd["uploaded_bytes"]' < "$TMPDIR_TEST/push2.json")
	sizes=$(jget "sum(b['size'] for b in d['blobs'] if b['action']=='uploaded')" < "$TMPDIR_TEST/push2.json")
	assert_eq "$up" "$sizes" "uploaded bytes are the uploaded blobs' sizes"
	[ "$up" -lt 4096 ] || fail "a child push of one small file uploaded $up bytes"
	# The registry saw exactly two more blob uploads.
	puts2=$(grep -c '"PUT /v2/sbx/test/blobs/uploads/' "$REG_LOG")
	assert_eq "$((puts2 - puts1))" "2" "blob PUTs seen by the registry"
	# Pushing the same again uploads nothing (HEAD first), and skopeo reads it.
	out=$(sbx push --json "$S2" "$REG/sbx/test:v2" --insecure)
	assert_eq "$(echo "$out" | jget 'd["uploaded_blobs"]')" "0" "repeated push"
	if command -v skopeo > /dev/null; then
		sk=$(skopeo inspect --tls-verify=false "docker://$REG/sbx/test:v2") || fail "skopeo inspect: $sk"
		assert_eq "$(echo "$sk" | jget 'd["Digest"]')" "$(echo "$out" | jget 'd["manifest_digest"]')" "skopeo digest"
		assert_eq "$(echo "$sk" | jget 'd["Layers"]')" "$(echo "$out" | jget "[b['digest'] for b in d['blobs'][:-1]]")" "skopeo layers"
		skopeo copy --src-tls-verify=false "docker://$REG/sbx/test:v2" "oci:$TMPDIR_TEST/sk:v2" > /dev/null ||
			fail "skopeo copy"
	else
		skip "skopeo is not installed"
	fi
	# Another repository of the same registry: mounted, not uploaded.
	out=$(sbx push --json "$S2" "$REG/sbx/other:v2" --insecure)
	assert_eq "$(echo "$out" | jget 'd["uploaded_blobs"]')" "0" "push to another repository"
	[ "$(echo "$out" | jget 'd["mounted_blobs"]')" -ge 1 ] || fail "no cross-repository mount: $out"
	sbx rm "$ENV_ID" > /dev/null
}

# A fake registry: serves the image in an OCI layout (LAYOUT, tag t), with
# MODE corrupt (the first layer's bytes altered), baddiffid (the config's
# last diff_id is not the layer's), bearer (a token from
# /token, which wants basic user:pw) or fail-after-N (the N+1th blob 500s).
fake_registry() { # LAYOUT MODE
	cat > "$TMPDIR_TEST/fake.py" <<'PY'
import base64, http.server, json, os, sys
layout, mode, portfile = sys.argv[1], sys.argv[2], sys.argv[3]
idx = json.load(open(os.path.join(layout, "index.json")))
man_d = idx["manifests"][0]["digest"]
def blob(d):
    return open(os.path.join(layout, "blobs", "sha256", d[7:]), "rb").read()
man = json.loads(blob(man_d))
first_layer = man["layers"][0]["digest"]
extra = {}
if mode == "baddiffid":
    # A config whose last diff_id is not the layer's: blobs all hash right.
    import hashlib
    cfg = json.loads(blob(man["config"]["digest"]))
    cfg["rootfs"]["diff_ids"][-1] = "sha256:" + "0" * 64
    cb = json.dumps(cfg).encode()
    cd = "sha256:" + hashlib.sha256(cb).hexdigest()
    extra[cd] = cb
    man["config"]["digest"], man["config"]["size"] = cd, len(cb)
    mb = json.dumps(man).encode()
    man_d = "sha256:" + hashlib.sha256(mb).hexdigest()
    extra[man_d] = mb
def blob(d, _blob=blob):
    return extra[d] if d in extra else _blob(d)
served = [0]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        sys.stderr.write("%s %s\n" % (self.command, self.path))
    def send(self, code, body=b"", ct="application/json", extra=None):
        self.send_response(code)
        self.send_header("Content-Type", ct)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
    def authed(self):
        if mode != "bearer":
            return True
        if self.headers.get("Authorization") == "Bearer tok123":
            return True
        self.send(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"token"}]}', extra={
            "WWW-Authenticate": 'Bearer realm="http://%s/token",service="fake",scope="repository:x:pull"' % self.headers["Host"]})
        return False
    def do_GET(self):
        p = self.path
        if p.startswith("/token"):
            want = "Basic " + base64.b64encode(b"alice:s3cret").decode()
            if self.headers.get("Authorization") != want or "service=fake" not in p or "scope=repository%3Asbx%2Ffake%3Apull" not in p:
                return self.send(401, b"{}")
            return self.send(200, b'{"token":"tok123"}')
        if not self.authed():
            return
        if p == "/v2/":
            return self.send(200, b"{}")
        if p.startswith("/v2/sbx/fake/manifests/"):
            return self.send(200, blob(man_d), ct=man["mediaType"])
        if p.startswith("/v2/sbx/fake/blobs/"):
            d = p.rsplit("/", 1)[1]
            served[0] += 1
            if mode.startswith("fail-after-") and served[0] > int(mode[11:]):
                return self.send(500, b"{}")
            b = blob(d)
            if mode == "corrupt" and d == first_layer:
                b = bytearray(b); b[len(b) // 2] ^= 1; b = bytes(b)
            return self.send(200, b, ct="application/octet-stream")
        self.send(404, b"{}")
    do_HEAD = do_GET
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(portfile + ".tmp", "w").write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
PY
	rm -f "$TMPDIR_TEST/fake.port"
	python3 "$TMPDIR_TEST/fake.py" "$1" "$2" "$TMPDIR_TEST/fake.port" 2> "$TMPDIR_TEST/fake.log" &
	FAKE_PID=$!
	for _ in $(seq 50); do [ -s "$TMPDIR_TEST/fake.port" ] && break; sleep 0.1; done
	FAKE="127.0.0.1:$(cat "$TMPDIR_TEST/fake.port")"
}
stop_fake() {
	if [ -n "${FAKE_PID:-}" ]; then
		kill "$FAKE_PID" 2> /dev/null || true
		wait "$FAKE_PID" 2> /dev/null || true
	fi
	FAKE_PID=
}

store_is_empty() { # ROOT
	[ -z "$(ls "$1/snapshots/sha256" 2> /dev/null)" ] || fail "snapshots stored: $(ls "$1/snapshots/sha256")"
	[ -z "$(ls "$1/refs/labels" 2> /dev/null)" ] || fail "labels stored: $(ls "$1/refs/labels")"
	[ -z "$(ls "$1/layers/sha256" 2> /dev/null)" ] || fail "layers stored: $(ls "$1/layers/sha256")"
}

t_corrupt_blob_refused_nothing_stored() {
	make_snapshot
	sbx export "$S" "oci:$TMPDIR_TEST/img:t" > /dev/null
	sbx rm "$ENV_ID" > /dev/null
	fake_registry "$TMPDIR_TEST/img" corrupt
	trap stop_fake EXIT
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	expect_status 125 sbx pull "$FAKE/sbx/fake:t" --insecure
	out=$(sbx pull "$FAKE/sbx/fake:t" --insecure 2>&1 || true)
	assert_contains "$out" "hashes to"
	store_is_empty "$SBX_ROOT"
	# Nor in the partial-download area: only verified blobs get a name there.
	first=$(python3 -c "import json; m=json.load(open('$TMPDIR_TEST/img/blobs/sha256/'+json.load(open('$TMPDIR_TEST/img/index.json'))['manifests'][0]['digest'][7:])); print(m['layers'][0]['digest'][7:])")
	[ ! -e "$SBX_ROOT/registry/partial/blobs/sha256/$first" ] || fail "the corrupt blob was kept"
}

t_wrong_diff_id_refused_nothing_stored() {
	make_snapshot
	sbx export "$S" "oci:$TMPDIR_TEST/img:t" > /dev/null
	sbx rm "$ENV_ID" > /dev/null
	fake_registry "$TMPDIR_TEST/img" baddiffid
	trap stop_fake EXIT
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	expect_status 125 sbx pull "$FAKE/sbx/fake:t" --insecure
	assert_contains "$ERR" "diff_id"
	store_is_empty "$SBX_ROOT"
}

t_pull_resumes_after_interruption() {
	make_snapshot
	sbx export "$S" "oci:$TMPDIR_TEST/img:t" > /dev/null
	sbx rm "$ENV_ID" > /dev/null
	nblobs=$(ls "$TMPDIR_TEST/img/blobs/sha256" | wc -l)
	# The config and the first layer arrive, then the registry fails.
	fake_registry "$TMPDIR_TEST/img" fail-after-2
	trap stop_fake EXIT
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	expect_status 125 sbx pull "$FAKE/sbx/fake:t" --insecure
	store_is_empty "$SBX_ROOT"
	kept=$(ls "$SBX_ROOT/registry/partial/blobs/sha256" | wc -l)
	assert_eq "$kept" "2" "verified blobs kept by the interrupted pull"
	stop_fake
	fake_registry "$TMPDIR_TEST/img" ok
	out=$(sbx pull --json "$FAKE/sbx/fake:t" --insecure --name img) || fail "resumed pull: $out"
	assert_eq "$(echo "$out" | jget 'd["reused_blobs"]')" "2" "blobs not fetched again"
	got=$(grep -c '^GET /v2/sbx/fake/blobs/' "$TMPDIR_TEST/fake.log")
	# Blobs: config + layers = nblobs - 2 (manifest and the index are not blobs fetched as such).
	assert_eq "$got" "$((nblobs - 1 - 2))" "blob GETs on the resumed pull"
	ID=$(sbx fork img)
	assert_eq "$(sbx exec "$ID" -- cat /root/file)" "hello"
	sbx rm "$ID" > /dev/null
}

t_basic_auth_from_docker_config() {
	python3 -W ignore -c 'import crypt; print("alice:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)).replace("$2b$", "$2a$", 1))' > "$TMPDIR_TEST/htpasswd"
	start_registry "$TMPDIR_TEST/htpasswd"
	trap stop_registry EXIT
	make_snapshot
	sbx rm "$ENV_ID" > /dev/null
	# No credentials: refused, saying so.
	export HOME="$TMPDIR_TEST/home" REGISTRY_AUTH_FILE=
	mkdir -p "$HOME/.docker"
	out=$(sbx push "$S" "$REG/sbx/auth:v1" --insecure 2>&1) && fail "push without credentials succeeded"
	assert_contains "$out" "credentials"
	# ~/.docker/config.json, wrong password: refused.
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$REG" "$(printf alice:wrong | base64)" > "$HOME/.docker/config.json"
	expect_status 125 sbx push "$S" "$REG/sbx/auth:v1" --insecure
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$REG" "$(printf alice:s3cret | base64)" > "$HOME/.docker/config.json"
	sbx push "$S" "$REG/sbx/auth:v1" --insecure > /dev/null || fail "push with ~/.docker/config.json"
	# $REGISTRY_AUTH_FILE wins over ~/.docker/config.json.
	mv "$HOME/.docker/config.json" "$TMPDIR_TEST/auth.json"
	export REGISTRY_AUTH_FILE="$TMPDIR_TEST/auth.json" SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	P=$(sbx pull "$REG/sbx/auth:v1" --insecure) || fail "pull with REGISTRY_AUTH_FILE"
	[[ "$P" == sha256:* ]] || fail "pull: $P"
	ID=$(sbx fork auth)
	assert_eq "$(sbx exec "$ID" -- cat /root/file)" "hello"
	sbx rm "$ID" > /dev/null
}

t_bearer_token_challenge() {
	make_snapshot
	sbx export "$S" "oci:$TMPDIR_TEST/img:t" > /dev/null
	sbx rm "$ENV_ID" > /dev/null
	fake_registry "$TMPDIR_TEST/img" bearer
	trap stop_fake EXIT
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2" HOME="$TMPDIR_TEST/home"
	mkdir -p "$HOME/.docker"
	expect_status 125 sbx pull "$FAKE/sbx/fake:t" --insecure
	printf '{"auths":{"%s":{"auth":"%s"}}}' "$FAKE" "$(printf alice:s3cret | base64)" > "$HOME/.docker/config.json"
	P=$(sbx pull "$FAKE/sbx/fake:t" --insecure) || fail "pull with a bearer token: $P"
	grep -q '^GET /token' "$TMPDIR_TEST/fake.log" || fail "no token request"
	ID=$(sbx fork fake)
	assert_eq "$(sbx exec "$ID" -- cat /root/file)" "hello"
	sbx rm "$ID" > /dev/null
}

t_push_pull_bad_input() {
	expect_status 125 sbx push onlyone
	expect_status 125 sbx pull
	expect_status 125 sbx pull a b
	out=$(sbx pull 'Bad/Repo:x' --insecure 2>&1 || true)
	assert_contains "$out" "invalid repository"
	out=$(sbx push nosuchsnapshot 127.0.0.1:1/a:b --insecure 2>&1 || true)
	assert_contains "$out" "nosuchsnapshot"
	# Nothing listens: a clear error, no hang.
	out=$(sbx pull "127.0.0.1:$(free_port)/a:b" --insecure 2>&1 || true)
	assert_contains "$out" "registry 127.0.0.1"
}

t_mcp_snapshot_push_pull() {
	start_registry
	trap stop_registry EXIT
	make_snapshot
	INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
	INITED='{"jsonrpc":"2.0","method":"notifications/initialized"}'
	printf '%s\n' "$INIT" "$INITED" '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"snapshot_push\",\"arguments\":{\"snapshot_id\":\"$S\",\"ref\":\"$REG/sbx/mcp:v1\",\"insecure\":true}}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"snapshot_push\",\"arguments\":{\"snapshot_id\":\"$S\",\"ref\":\"$REG/sbx/mcp:v1\"}}}" |
		sbx mcp > "$TMPDIR_TEST/mcp1.out"
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	printf '%s\n' "$INIT" "$INITED" \
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"snapshot_pull\",\"arguments\":{\"ref\":\"$REG/sbx/mcp:v1\",\"name\":\"m\",\"insecure\":true}}}" |
		sbx mcp > "$TMPDIR_TEST/mcp2.out"
	python3 - "$TMPDIR_TEST/mcp1.out" "$TMPDIR_TEST/mcp2.out" << 'PY' || fail "MCP answers: $(cat "$TMPDIR_TEST/mcp1.out" "$TMPDIR_TEST/mcp2.out")"
import json, sys
r = {}
for f in sys.argv[1:]:
    for line in open(f):
        m = json.loads(line)
        if "id" in m:
            r[m["id"]] = m
names = [t["name"] for t in r[1]["result"]["tools"]]
assert "snapshot_push" in names and "snapshot_pull" in names, names
push = r[2]["result"]
assert not push.get("isError"), push
assert push["structuredContent"]["manifest_digest"].startswith("sha256:"), push
# Without insecure, HTTPS to a plain-HTTP registry: a tool error, not a crash.
bad = r[3]["result"]
assert bad.get("isError") and bad["structuredContent"]["error"]["code"] == "unavailable", bad
pull = r[4]["result"]
assert not pull.get("isError"), pull
assert pull["structuredContent"]["label"] == "m", pull
PY
	ID=$(sbx fork m)
	assert_eq "$(sbx exec "$ID" -- cat /root/file)" "hello"
	sbx rm "$ID" > /dev/null
	export SBX_ROOT="$TMPDIR_TEST/root" SBX_RUN="$TMPDIR_TEST/run"
	sbx rm "$ENV_ID" > /dev/null
}

# What an environment sees of the host, as lines to compare: every entry of
# the system directories (mode, owner, size, link target; directories'
# link counts differ between an overlay and a layer, so they are not
# listed), a few files' contents, the mask's work (no /etc/shadow, an empty
# /home) and the environment's own file. The host's package manager logs
# and state are left out: other programs on a shared host may run apt
# between the capture and the comparison (the live host is the reference).
host_view() { # ID
	sbx exec "$1" -- sh -c 'find /etc /usr /var /opt -xdev \( -path /var/log -o -path /var/lib/dpkg -o -path /var/lib/apt \
			-o -path /var/cache \) -prune -o \( -type d -printf "%M %u %g %p\n" \) -o -printf "%M %u %g %s %p %l\n" | sort
		sha256sum /etc/os-release /usr/bin/env /etc/passwd 2>&1
		test -e /etc/shadow && echo "shadow visible" || echo "no shadow"
		echo "home: $(ls -A /home | wc -l)"; cat /root/x'
}

t_host_template_push_pull_fork() {
	is_root || skip_ok "capturing the host base needs root"
	# The host base is every file of the host's system directories: on a
	# big host, gigabytes to copy, compress, upload and extract twice.
	kb=$(du -sxk /usr /etc /var /opt 2> /dev/null | awk '{s += $1} END {print s}')
	max=${SBX_TEST_HOST_BASE_MAX_MB:-3072}
	[ "${SBX_TEST_HOST_BASE:-0}" = 1 ] || [ "$kb" -le $((max * 1024)) ] ||
		skip_ok "the host base is $((kb / 1024)) MB (over ${max} MB): it costs that much disk four times and minutes; SBX_TEST_HOST_BASE=1 runs it"
	# Four copies of it: two stores' layers, the blob pushed, the registry's.
	free_kb=$(df -Pk "$TMPDIR_TEST" | awk 'NR == 2 {print $4}')
	[ "$free_kb" -ge $((kb * 4 + 512 * 1024)) ] ||
		skip_ok "the host base is $((kb / 1024)) MB and $TMPDIR_TEST has $((free_kb / 1024)) MB free: the round trip needs four times the base"
	start_registry
	trap stop_registry EXIT
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'echo host-env > /root/x' > /dev/null
	S=$(sbx snapshot "$ID")
	out=$(SBX_TIMEOUT=3600 sbx push --json "$S" "$REG/sbx/host:v1" --insecure) || fail "push: $out"
	echo "$out" > "$TMPDIR_TEST/hostpush.json"
	ls "$SBX_ROOT/refs/labels" | grep -q '^hostbase\.' || fail "no hostbase label"
	# A child snapshot: the base is neither captured nor compressed again, nor uploaded.
	sbx exec "$ID" -- sh -c 'echo child > /root/y' > /dev/null
	S2=$(sbx snapshot "$ID")
	out2=$(SBX_TIMEOUT=600 sbx push --json "$S2" "$REG/sbx/host:v2" --insecure) || fail "push child: $out2"
	assert_eq "$(echo "$out2" | jget 'd["uploaded_blobs"]')" "2" "child push: the new layer and the config"
	base=$(jget 'd["blobs"][0]["digest"]' < "$TMPDIR_TEST/hostpush.json")
	assert_eq "$(echo "$out2" | jget 'd["blobs"][0]["digest"]')" "$base" "the same host base blob"
	want=$(host_view "$ID")
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	P=$(SBX_TIMEOUT=3600 sbx pull "$REG/sbx/host:v1" --insecure --name h) || fail "pull: $P"
	ID2=$(sbx fork h)
	got=$(host_view "$ID2")
	sbx rm "$ID2" > /dev/null
	assert_eq "$got" "$want" "the host view after push, pull, fork"
	assert_contains "$got" "no shadow"
	export SBX_ROOT="$TMPDIR_TEST/root" SBX_RUN="$TMPDIR_TEST/run"
	sbx rm "$ID" > /dev/null
}

t_progress_push_pull_on_a_terminal() {
	command -v script > /dev/null || skip "script (bsdutils) is not installed"
	start_registry
	trap stop_registry EXIT
	busybox_dir "$TMPDIR_TEST/rootfs"
	ID=$(sbx create --template "dir:$TMPDIR_TEST/rootfs")
	sbx exec "$ID" -- sh -c 'dd if=/dev/urandom of=/root/big bs=1M count=40 2>/dev/null'
	sbx snapshot "$ID" --label prog > /dev/null
	sbx rm "$ID" > /dev/null
	script -qec "$SBX_BIN push prog $REG/sbx/prog:v1 --insecure" /dev/null > "$TMPDIR_TEST/tty.out"
	out=$(tr '\r' '\n' < "$TMPDIR_TEST/tty.out")
	assert_contains "$out" "push: "
	assert_contains "$out" "MiB of "
	script -qec "env SBX_ROOT=$TMPDIR_TEST/root2 SBX_RUN=$TMPDIR_TEST/run2 $SBX_BIN pull $REG/sbx/prog:v1 --insecure" /dev/null > "$TMPDIR_TEST/tty2.out"
	out=$(tr '\r' '\n' < "$TMPDIR_TEST/tty2.out")
	assert_contains "$out" "pull: "
	assert_contains "$out" "sha256:"
	# Not a terminal: only the result.
	sbx push prog "$REG/sbx/prog:v2" --insecure > "$TMPDIR_TEST/plain.out" 2> "$TMPDIR_TEST/plain.err"
	[ ! -s "$TMPDIR_TEST/plain.err" ] || fail "progress written to a non-terminal: $(cat "$TMPDIR_TEST/plain.err")"
}

t_chunked_upload() {
	start_registry
	trap stop_registry EXIT
	make_snapshot
	sbx rm "$ENV_ID" > /dev/null
	# 64 KiB chunks: the 512 KiB layer goes as PATCHes, then the PUT with its digest.
	out=$(SBX_REGISTRY_CHUNK=65536 sbx push --json "$S" "$REG/sbx/chunked:v1" --insecure) || fail "push: $out"
	patches=$(grep -c '"PATCH /v2/sbx/chunked/blobs/uploads/' "$REG_LOG")
	[ "$patches" -ge 8 ] || fail "expected chunked uploads, saw $patches PATCH requests"
	export SBX_ROOT="$TMPDIR_TEST/root2" SBX_RUN="$TMPDIR_TEST/run2"
	sbx pull "$REG/sbx/chunked:v1" --insecure > /dev/null || fail "pull of a chunked push"
	ID=$(sbx fork chunked)
	assert_eq "$(sbx exec "$ID" -- cat /root/file)" "hello"
	sbx rm "$ID" > /dev/null
}

# A random tree of every kind of entry (tests/helpers/treeprobe.c: odd modes,
# setuid/setgid, sticky and empty directories, hard links, dangling and long
# symlinks, fifos, sparse files, user.* xattrs and security.capability,
# names with newlines, spaces, invalid UTF-8 and 255 bytes), through
# snapshot -> fork -> diff -> export -> skopeo copy to the registry -> pull
# into an empty store -> fork, and import of the export into another empty
# store: the same manifest everywhere (bytes, modes, owners, xattrs, link
# structure, holes), and no diff between a fork and its snapshot.
t_random_tree_through_export_skopeo_pull() {
	command -v skopeo > /dev/null || skip "skopeo is not installed (scripts/deps.sh test)"
	start_registry
	trap stop_registry EXIT
	busybox_dir "$TMPDIR_TEST/rootfs"
	sbx template add bb "dir:$TMPDIR_TEST/rootfs" > /dev/null
	local pv
	pv=$(probe_volume)
	E=$(sbx create --template bb -v "$pv")
	sbx exec "$E" -- /probe/treeprobe make /root/t 7 300
	want=$(sbx exec "$E" -- /probe/treeprobe manifest /root/t)
	[ "$(echo "$want" | grep -c sparse)" -ge 5 ] && [ "$(echo "$want" | grep -c LINKS)" -ge 5 ] &&
		[ "$(echo "$want" | grep -c security.capability)" -ge 5 ] || fail "the tree lacks kinds: $(echo "$want" | head)"
	snap=$(sbx snapshot "$E")
	F=$(sbx fork "$snap" -v "$pv")
	assert_eq "$(sbx exec "$F" -- /probe/treeprobe manifest /root/t)" "$want" "fork"
	d=$(sbx diff "$F") || fail "diff of a fork"
	assert_eq "$(echo "$d" | grep -v '^M /etc/machine-id$' || true)" "" "diff of a fork against its snapshot"
	sbx export "$snap" "oci:$TMPDIR_TEST/oci:v1"
	skopeo copy -q --dest-tls-verify=false "oci:$TMPDIR_TEST/oci:v1" "docker://$REG/sbx/tree:v1" ||
		fail "skopeo copy to the registry"
	sbx rm "$E" "$F" > /dev/null
	for how in pull import; do
		export SBX_ROOT="$TMPDIR_TEST/root-$how" SBX_RUN="$TMPDIR_TEST/run-$how"
		if [ $how = pull ]; then
			P=$(sbx pull "$REG/sbx/tree:v1" --insecure --name got) || fail "pull: $P"
		else
			sbx import "oci:$TMPDIR_TEST/oci:v1" --name got > /dev/null || fail "import"
		fi
		if [ $how = pull ]; then G=$(sbx fork got -v "$pv"); else G=$(sbx create --template got -v "$pv"); fi
		assert_eq "$(sbx exec "$G" -- /probe/treeprobe manifest /root/t)" "$want" "after $how"
		d=$(sbx diff "$G") || fail "diff after $how"
		assert_eq "$(echo "$d" | grep -v '^M /etc/machine-id$' || true)" "" "diff after $how"
		sbx exec "$G" -- sh -c 'rm -r /root/t/n1; echo x > /root/t/added'
		d=$(sbx diff "$G" "$(sbx inspect "$G" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')") ||
			fail "diff against the image's snapshot after $how"
		assert_contains "$d" "D /root/t/n1"
		assert_contains "$d" "A /root/t/added"
		# a traced exec (its filesystem digest is a diff) and its replay, in an image's environment
		tr=$(sbx exec --json --trace "$G" -- sh -c 'echo traced > /root/tr') || fail "traced exec after $how: $tr"
		tid=$(echo "$tr" | jget 'd["trace_id"]')
		sbx replay "$tid" > /dev/null || fail "replay after $how: $(sbx replay "$tid" 2>&1)"
		sbx rm "$G" > /dev/null
		sbx fsck > /dev/null || fail "fsck after $how: $(sbx fsck)"
		SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	done
	export SBX_ROOT="$TMPDIR_TEST/root" SBX_RUN="$TMPDIR_TEST/run"
}
