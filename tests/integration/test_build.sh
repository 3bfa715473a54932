# sbx build: templates from Dockerfiles (docs/build.md): every supported
# instruction, the step cache (hits and misses counted by --json), a failing
# RUN, a changed COPY source, refusals naming the line, export as OCI.

build_ctx() {
	CTX=$TMPDIR_TEST/ctx
	mkdir -p "$CTX/sub"
	echo hello > "$CTX/a.txt"
	echo sub > "$CTX/sub/s.txt"
	echo secret-log > "$CTX/x.log"
	printf '*.log\n' > "$CTX/.dockerignore"
	DF=$TMPDIR_TEST/Dockerfile # outside the context: editing it changes no COPY source
	cat > "$DF" <<'DF'
# syntax=docker/dockerfile:1
ARG BASE=host
FROM $BASE
ARG GREETING=hi
ENV APP=/app MSG="two words"
WORKDIR /app
COPY a.txt ./
COPY --chmod=0640 sub /app/sub/
COPY . /app/ctx/
RUN echo "$GREETING $MSG" > /app/out.txt \
    && id -u > /app/uid
RUN ["/bin/sh", "-c", "echo exec-form > /app/exec.txt"]
SHELL ["/bin/sh", "-ec"]
RUN test -f /app/a.txt
USER nobody
LABEL org.example.k=v
EXPOSE 8000/tcp
CMD ["cat", "/app/out.txt"]
ENTRYPOINT ["/bin/sh", "-c"]
DF
}

json_field() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

t_build_every_instruction() {
	build_ctx
	out=$(sbx build --json -f "$DF" -t every --build-arg GREETING=hey "$CTX")
	assert_eq "$(echo "$out" | json_field 'j["cache_misses"], j["cache_hits"]')" "(7, 0)"
	assert_eq "$(echo "$out" | json_field 'j["config"]["cmd"], j["config"]["user"], j["config"]["expose"], j["config"]["labels"]')" \
		"(['cat', '/app/out.txt'], 'nobody', ['8000/tcp'], {'org.example.k': 'v'})"
	assert_eq "$(echo "$out" | json_field 'j["config"]["entrypoint"], j["config"]["workdir"], j["config"]["shell"]')" \
		"(['/bin/sh', '-c'], '/app', ['/bin/sh', '-ec'])"
	ID=$(sbx create --template every)
	assert_eq "$(sbx exec "$ID" -- cat /app/out.txt /app/exec.txt /app/uid)" "hey two words
exec-form
0"
	assert_eq "$(sbx exec "$ID" -- id -un)" "nobody"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "$MSG $APP"')" "two words /app"
	assert_eq "$(sbx exec --user root "$ID" -- stat -c %a /app/sub/s.txt)" "640"
	# .dockerignore: the context without what it excludes
	assert_eq "$(sbx exec "$ID" -- sh -c 'cd /app/ctx && find . | sort | tr "\n" " "')" ". ./.dockerignore ./a.txt ./sub ./sub/s.txt "
	sbx rm "$ID"
}

t_build_from_scratch_exports_as_oci() {
	[ -x /bin/busybox ] || skip "SKIP: no static /bin/busybox"
	CTX=$TMPDIR_TEST/s
	mkdir -p "$CTX"
	cp /bin/busybox "$CTX/"
	cat > "$CTX/Dockerfile" <<'DF'
FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "sh", "-c", "/bin/busybox mkdir -p /data && echo from-scratch > /data/out"]
CMD ["/bin/busybox", "cat", "/data/out"]
DF
	out=$(sbx build --json -t tiny "$CTX")
	ID=$(sbx create --template tiny)
	assert_eq "$(sbx exec "$ID" -- /bin/busybox cat /data/out)" "from-scratch"
	expect_status 127 sbx exec "$ID" -- /bin/sh -c true # nothing but what was copied
	sbx rm "$ID"
	# ...and exports as an OCI image that umoci unpacks.
	command -v umoci > /dev/null || skip "SKIP: umoci is not installed"
	sbx export "$(echo "$out" | json_field 'j["snapshot_id"]')" "oci:$TMPDIR_TEST/img:tiny" > /dev/null
	umoci unpack --rootless --image "$TMPDIR_TEST/img:tiny" "$TMPDIR_TEST/unpacked" > /dev/null
	assert_eq "$(cat "$TMPDIR_TEST/unpacked/rootfs/data/out")" "from-scratch"
	cmp "$TMPDIR_TEST/unpacked/rootfs/bin/busybox" /bin/busybox
}

t_build_cache_hits_and_changed_source() {
	build_ctx
	sbx build -f "$DF" -t c1 "$CTX" > /dev/null 2>&1
	out=$(sbx build --json -f "$DF" -t c1 "$CTX")
	assert_eq "$(echo "$out" | json_field 'j["cache_misses"], j["cache_hits"]')" "(0, 7)"
	# A changed COPY source: that step and everything after it run again.
	echo changed > "$CTX/a.txt"
	out=$(sbx build --json -f "$DF" -t c1 "$CTX")
	assert_eq "$(echo "$out" | json_field 'j["cache_hits"], j["cache_misses"]')" "(1, 6)"
	assert_eq "$(echo "$out" | json_field '[s["cached"] for s in j["steps"] if s["changes_files"]]')" \
		"[True, False, False, False, False, False, False]"
	ID=$(sbx create --template c1)
	assert_eq "$(sbx exec "$ID" -- cat /app/a.txt)" "changed"
	sbx rm "$ID"
	# A touched file with the same content is a hit (content digests, not times).
	touch -d '2001-01-01' "$CTX/a.txt"
	out=$(sbx build --json -f "$DF" -t c1 "$CTX")
	assert_eq "$(echo "$out" | json_field 'j["cache_misses"]')" "0"
	# Editing one RUN reruns from there only.
	sed -i 's/^RUN test -f/RUN test -e/' "$DF"
	out=$(sbx build --json -f "$DF" -t c1 "$CTX")
	assert_eq "$(echo "$out" | json_field 'j["cache_hits"], j["cache_misses"]')" "(6, 1)"
	# --no-cache runs everything.
	out=$(sbx build --json --no-cache -f "$DF" -t c1 "$CTX")
	assert_eq "$(echo "$out" | json_field 'j["cache_hits"]')" "0"
}

t_build_failing_run_keeps_template() {
	CTX=$TMPDIR_TEST/f
	mkdir -p "$CTX"
	printf 'FROM host\nRUN echo first > /root/f\n' > "$CTX/Dockerfile"
	sbx build -t keep "$CTX" > /dev/null 2>&1
	before=$(sbx template ls --json | json_field '[t["snapshot_id"] for t in j["templates"] if t["name"]=="keep"]')
	printf 'FROM host\nRUN echo second > /root/f\nRUN echo to-stdout; echo boom >&2; exit 3\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t keep "$CTX"
	assert_contains "$ERR" "to-stdout"
	assert_contains "$ERR" "sbx: build: Dockerfile:3: RUN echo to-stdout; echo boom >&2; exit 3: exit status 3: boom"
	after=$(sbx template ls --json | json_field '[t["snapshot_id"] for t in j["templates"] if t["name"]=="keep"]')
	assert_eq "$after" "$before"
	ID=$(sbx create --template keep)
	assert_eq "$(sbx exec "$ID" -- cat /root/f)" "first"
	sbx rm "$ID"
	# No build environment is left behind.
	assert_eq "$(sbx ls --json | json_field 'len(j["environments"])')" "0"
	# The network is off in RUN unless --network allows it.
	printf 'FROM host\nRUN python3 -c "import socket; socket.create_connection((\\"1.1.1.1\\", 80), 2)"\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t nonet "$CTX"
	assert_contains "$ERR" "exit status 1"
}

t_build_refusals_name_the_line() {
	CTX=$TMPDIR_TEST/r
	mkdir -p "$CTX"
	printf 'FROM host\nRUN true\nENV A=1\n\n# c\nLABEL x=y\nHEALTHCHECK CMD true\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t r "$CTX"
	assert_eq "$ERR" "sbx: build: Dockerfile:7: HEALTHCHECK is not supported (an sbx environment has no health monitor)"
	printf 'FROM host\nADD https://example.com/x /x\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t r "$CTX"
	assert_contains "$ERR" "Dockerfile:2: 'https://example.com/x': URLs are not supported"
	printf 'FROM host\nCOPY ../etc/passwd /x\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t r "$CTX"
	assert_contains "$ERR" "outside the build context"
	printf 'FROM host\nRUN <<EOF\necho\nEOF\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t r "$CTX"
	assert_contains "$ERR" "Dockerfile:2: RUN: heredocs (<<WORD) are not supported"
	printf 'FROM host\n' > "$CTX/Dockerfile"
	expect_status 125 sbx build -t r --build-arg NOPE=1 "$CTX"
	assert_contains "$ERR" "--build-arg NOPE: no ARG of that name"
	expect_status 0 sbx template ls --json
	[ "$(echo "$OUT" | json_field '[t["name"] for t in j["templates"] if t["name"]=="r"]')" = "[]" ] ||
		fail "a refused build made a template"
}

# MCP template_build: only with a context the operator allowed.
mcp_build() { # ALLOW_ARGS... -- CONTEXT: prints the tools/call result
	local args=() ctx
	while [ "$1" != -- ]; do args+=("$1"); shift; done
	ctx=$2
	python3 - "$ctx" > "$TMPDIR_TEST/req" <<'PY'
import json, sys
meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
args = {"dockerfile": "FROM host\nARG WHO=x\nRUN echo built-by-$WHO > /root/mcp.txt\n", "context": sys.argv[1],
        "tag": "viamcp", "build_args": {"WHO": "mcp"}}
print(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "template_build", "arguments": args, "_meta": meta}}))
PY
	sbx mcp "${args[@]}" < "$TMPDIR_TEST/req" > "$TMPDIR_TEST/resp"
	python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline())["result"]; print(r.get("isError", False), json.dumps(r["structuredContent"]))' "$TMPDIR_TEST/resp"
}

t_build_mcp_template_build() {
	mkdir -p "$TMPDIR_TEST/allowed/ctx" "$TMPDIR_TEST/other"
	expect_status 125 sbx mcp --allow-host-dir "$TMPDIR_TEST/missing" < /dev/null
	assert_contains "$ERR" "allowed host directory"
	out=$(mcp_build -- "$TMPDIR_TEST/other")
	assert_contains "$out" "True"
	assert_contains "$out" "is not a host directory the operator allowed"
	out=$(mcp_build --allow-host-dir "$TMPDIR_TEST/allowed" -- "$TMPDIR_TEST/allowed/../other")
	assert_contains "$out" "not a host directory the operator allowed"
	out=$(mcp_build --allow-host-dir "$TMPDIR_TEST/allowed" -- "$TMPDIR_TEST/allowed/ctx")
	assert_contains "$out" "False"
	assert_contains "$out" '"cache_misses": 1'
	ID=$(sbx create --template viamcp)
	assert_eq "$(sbx exec "$ID" -- cat /root/mcp.txt)" "built-by-mcp"
	sbx rm "$ID"
}

t_build_secret_given_to_run_never_stored() {
	CTX=$TMPDIR_TEST/sec
	mkdir -p "$CTX"
	printf 'FROM host\nRUN test "$BUILD_TOKEN" = s3cr3t-v4lue && echo seen > /root/seen\n' > "$CTX/Dockerfile"
	BUILD_TOKEN=s3cr3t-v4lue sbx build --secret BUILD_TOKEN -t sec "$CTX" > /dev/null 2>&1 || fail "the secret did not reach RUN"
	ID=$(sbx create --template sec)
	assert_eq "$(sbx exec "$ID" -- cat /root/seen)" "seen"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "${BUILD_TOKEN:-unset}"')" "unset"
	sbx rm "$ID"
	if grep -rqa s3cr3t-v4lue "$SBX_ROOT" 2> /dev/null; then fail "the secret is in the store"; fi
	# Without the secret the same RUN fails (it really read it).
	expect_status 125 sbx build --no-cache -t sec2 "$CTX"
}
