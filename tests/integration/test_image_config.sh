# An image's config applied as `docker run` applies it (docs/build.md "Image
# config"): a built template's and an imported OCI image's WORKDIR, ENV and
# USER are every exec's defaults (exec and create options win), its CMD and
# ENTRYPOINT are what `sbx run --template NAME` runs, and `sbx export` writes
# them all into the OCI config that skopeo reads and podman runs.

jf() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

built_ctx() { # a host-based template: WORKDIR, ENV, USER, CMD
	CTX=$TMPDIR_TEST/ctx
	mkdir -p "$CTX"
	cat > "$CTX/Dockerfile" <<'DF'
FROM host
ENV FOO=bar MSG="from image"
WORKDIR /app
RUN echo data > /app/data
USER nobody
LABEL org.example.k=v
EXPOSE 8080/tcp
CMD ["sh", "-c", "echo cmd-ran; pwd; id -u; echo $FOO"]
DF
	sbx build -t built "$CTX" > /dev/null
}

# A busybox image layout whose config has Env, WorkingDir, User, Cmd, Entrypoint.
oci_image() { # LAYOUT TAG CONFIG_JSON
	local r=$TMPDIR_TEST/rootfs
	[ -x /bin/busybox ] || skip "SKIP: no static /bin/busybox"
	mkdir -p "$r/bin" "$r/etc" "$r/work" "$r/root" "$r/tmp"
	cp /bin/busybox "$r/bin/busybox"
	for a in sh echo cat pwd id env; do ln -sf busybox "$r/bin/$a"; done
	printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/nonexistent:/bin/sh\n' > "$r/etc/passwd"
	printf 'root:x:0:\napp:x:1000:\n' > "$r/etc/group"
	chown 1000:1000 "$r/work"
	python3 - "$1" "$2" "$3" "$r" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
layout, tag, config, root = sys.argv[1:]
def put(b):
    d = "sha256:" + hashlib.sha256(b).hexdigest()
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    open(os.path.join(layout, "blobs", "sha256", d[7:]), "wb").write(b)
    return d
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    for dp, dn, fn in os.walk(root):
        dn.sort()
        for n in sorted(dn + fn):
            p = os.path.join(dp, n)
            ti = t.gettarinfo(p, os.path.relpath(p, root))
            ti.uname = ti.gname = ""
            t.addfile(ti, open(p, "rb") if ti.isreg() else None)
raw = buf.getvalue()
blob = gzip.compress(raw, mtime=0)
arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
cfg = json.dumps({"architecture": arch, "os": "linux", "config": json.loads(config),
                  "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}}).encode()
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                  "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(cfg), "size": len(cfg)},
                  "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": put(blob), "size": len(blob)}]}).encode()
md = put(man)
open(os.path.join(layout, "oci-layout"), "w").write('{"imageLayoutVersion":"1.0.0"}')
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md,
           "size": len(man), "annotations": {"org.opencontainers.image.ref.name": tag}}]},
          open(os.path.join(layout, "index.json"), "w"))
PY
}

t_image_built_workdir_env_user_are_exec_defaults() {
	built_ctx
	ID=$(sbx create --template built)
	assert_eq "$(sbx exec "$ID" -- pwd)" "/app" "WORKDIR is the default cwd"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "$FOO/$MSG"')" "bar/from image" "ENV"
	assert_eq "$(sbx exec "$ID" -- id -u)" "65534" "USER"
	# Each exec option wins over the image's.
	assert_eq "$(sbx exec --cwd /tmp "$ID" -- pwd)" "/tmp"
	assert_eq "$(sbx exec --env FOO=exec "$ID" -- sh -c 'echo $FOO')" "exec"
	assert_eq "$(sbx exec --user root "$ID" -- id -u)" "0"
	assert_eq "$(sbx exec --user root "$ID" -- pwd)" "/app" "--user leaves WORKDIR the cwd"
	# A background process starts there too (docs/processes.md).
	P=$(sbx exec -d "$ID" -- pwd)
	sbx ps "$ID" "$P" --wait 30s > /dev/null
	assert_eq "$(sbx ps "$ID" "$P" --output)" "/app" "a background process starts in WORKDIR"
	P=$(sbx exec -d --cwd /tmp "$ID" -- pwd)
	sbx ps "$ID" "$P" --wait 30s > /dev/null
	assert_eq "$(sbx ps "$ID" "$P" --output)" "/tmp"
	sbx rm "$ID" > /dev/null
	# ...and each create option too.
	ID=$(sbx create --template built --env FOO=create --user root)
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo $FOO; id -u; pwd')" "create
0
/app"
	# A snapshot of it carries the image's config on, as docker commit does.
	SNAP=$(sbx snapshot "$ID")
	sbx rm "$ID" > /dev/null
	ID=$(sbx fork "$SNAP")
	assert_eq "$(sbx exec "$ID" -- pwd)" "/app" "a fork keeps WORKDIR"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo "$FOO/$MSG"; id -u')" "create/from image
0" "a fork keeps the environment's variables and user"
	sbx rm "$ID" > /dev/null
	# The host template is unchanged: /root.
	ID=$(sbx create)
	assert_eq "$(sbx exec "$ID" -- pwd)" "/root"
	sbx rm "$ID" > /dev/null
}

t_image_oci_import_config_applied() {
	oci_image "$TMPDIR_TEST/img" v1 \
		'{"Env":["PATH=/bin","IMG=1"],"WorkingDir":"/work","User":"app","Entrypoint":["/bin/sh","-c"],"Cmd":["echo img-cmd; pwd; id -u"]}'
	sbx import "oci:$TMPDIR_TEST/img:v1" --name img > /dev/null
	ID=$(sbx create --template img)
	assert_eq "$(sbx exec "$ID" -- pwd)" "/work" "WorkingDir is the default cwd"
	assert_eq "$(sbx exec "$ID" -- id -u)" "1000" "User"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo $IMG')" "1" "Env"
	assert_eq "$(sbx exec --cwd / --user 0 --env IMG=2 "$ID" -- sh -c 'pwd; id -u; echo $IMG')" "/
0
2"
	sbx rm "$ID" > /dev/null
	# sbx run --template: the image's ENTRYPOINT + CMD, or ENTRYPOINT + the command given.
	assert_eq "$(sbx run --template img)" "img-cmd
/work
1000"
	assert_eq "$(sbx run --template img -- 'echo given')" "given"
}

t_image_run_template() {
	built_ctx
	# Any template sbx template ls lists runs with a command...
	assert_eq "$(sbx run --template built -- cat /app/data)" "data"
	assert_eq "$(sbx run --template built -- pwd)" "/app"
	# ...and without one runs the image's CMD, as docker run does.
	assert_eq "$(sbx run --template built)" "cmd-ran
/app
65534
bar"
	expect_status 3 sbx run --template built -- sh -c 'exit 3'
	# No CMD in the image: a clear error.
	mkdir -p "$TMPDIR_TEST/nocmd"
	printf 'FROM host\nWORKDIR /w\n' > "$TMPDIR_TEST/nocmd/Dockerfile"
	sbx build -t nocmd "$TMPDIR_TEST/nocmd" > /dev/null
	out=$(sbx run --template nocmd 2>&1) && fail "ran without a command: $out"
	assert_contains "$out" "no CMD or ENTRYPOINT"
	# No --template and no command: still a usage error.
	out=$(sbx run 2>&1) && fail "ran without a command: $out"
	assert_contains "$out" "missing command"
	[ -z "$(ls "$SBX_ROOT/envs" 2> /dev/null | grep -E '^[0-9a-f]{12}$')" ] || fail "run left an environment"
}

t_image_export_config_has_cmd() {
	command -v skopeo > /dev/null || skip "SKIP: skopeo is not installed"
	[ -x /bin/busybox ] || skip "SKIP: no static /bin/busybox"
	CTX=$TMPDIR_TEST/s
	mkdir -p "$CTX"
	cp /bin/busybox "$CTX/"
	cat > "$CTX/Dockerfile" <<'DF'
FROM scratch
COPY busybox /bin/busybox
ENV GREETING=hello
WORKDIR /srv
USER 1000:1000
LABEL org.example.k=v
EXPOSE 8080/tcp 53/udp
ENTRYPOINT ["/bin/busybox"]
CMD ["sh", "-c", "echo $GREETING from $(/bin/busybox pwd) as $(/bin/busybox id -u)"]
DF
	sbx build -t tiny "$CTX" > /dev/null
	sbx export "$(sbx template ls --json | jf '[t["snapshot_id"] for t in j["templates"] if t["name"]=="tiny"][0]')" \
		"oci:$TMPDIR_TEST/img:tiny" > /dev/null
	cfg=$(timeout 60 skopeo inspect --config "oci:$TMPDIR_TEST/img:tiny")
	assert_eq "$(echo "$cfg" | jf 'j["config"]["Cmd"]')" "['sh', '-c', 'echo \$GREETING from \$(/bin/busybox pwd) as \$(/bin/busybox id -u)']"
	assert_eq "$(echo "$cfg" | jf 'j["config"]["Entrypoint"], j["config"]["WorkingDir"], j["config"]["User"]')" \
		"(['/bin/busybox'], '/srv', '1000:1000')"
	assert_eq "$(echo "$cfg" | jf 'sorted(j["config"]["ExposedPorts"]), j["config"]["Labels"]')" \
		"(['53/udp', '8080/tcp'], {'org.example.k': 'v'})"
	assert_contains "$(echo "$cfg" | jf 'j["config"]["Env"]')" "GREETING=hello"
	# Imported back: the same config applies.
	sbx import "oci:$TMPDIR_TEST/img:tiny" --name back > /dev/null
	assert_eq "$(sbx run --template back)" "hello from /srv as 1000"
	# podman runs the exported image's CMD (private storage, no network).
	command -v podman > /dev/null || skip "SKIP: podman is not installed (config checked with skopeo)"
	P=$TMPDIR_TEST/pm
	mkdir -p "$P/tmp"
	# podman names an oci: image after its path, which must be lowercase.
	local L=/tmp/sbx-image-config-$$
	ln -sfn "$TMPDIR_TEST/img" "$L"
	out=$(timeout 120 podman --root "$P/root" --runroot "$P/runroot" --storage-driver vfs --cgroup-manager cgroupfs \
		--events-backend file --tmpdir "$P/tmp" --runtime runc run --rm --network none --ulimit nofile=4096:4096 \
		--ulimit nproc=4096:4096 "oci:$L:tiny" 2>&1) || { rm -f "$L"; fail "podman run failed: $out"; }
	rm -f "$L"
	assert_eq "$(echo "$out" | tail -n 1)" "hello from /srv as 1000" "podman runs the image's CMD"
	timeout 60 podman --root "$P/root" --runroot "$P/runroot" --storage-driver vfs --cgroup-manager cgroupfs \
		--events-backend file --tmpdir "$P/tmp" rmi -a -f > /dev/null 2>&1 || true
	rm -rf "$P" 2> /dev/null || true
}

t_image_build_from_built_inherits_config() {
	built_ctx
	mkdir -p "$TMPDIR_TEST/child"
	cat > "$TMPDIR_TEST/child/Dockerfile" <<'DF'
FROM built
RUN echo "seen: foo=$FOO pwd=$(pwd) uid=$(id -u)"
ENTRYPOINT ["cat"]
DF
	out=$(sbx build -t child "$TMPDIR_TEST/child" 2>&1)
	# RUN ran with the base's ENV, WORKDIR and USER, as docker build does.
	assert_eq "$(echo "$out" | grep '^seen: ')" "seen: foo=bar pwd=/app uid=65534"
	# The base's config is inherited; a new ENTRYPOINT resets the inherited CMD.
	assert_eq "$(sbx run --template child -- /app/data)" "data"
	out=$(sbx run --template child 2>&1) || true
	assert_eq "$out" "" "ENTRYPOINT cat with no CMD reads empty stdin"
}

t_image_rootless_run_template() {
	is_root || skip_ok "not root: cannot switch to sbxtest"
	id sbxtest > /dev/null 2>&1 || skip "SKIP: no user sbxtest"
	mkdir -p "$TMPDIR_TEST/rl/ctx"
	printf 'FROM host\nWORKDIR /app\nENV FOO=bar\nCMD ["sh", "-c", "pwd; echo $FOO"]\n' > "$TMPDIR_TEST/rl/ctx/Dockerfile"
	chmod -R a+rwX "$TMPDIR_TEST/rl"
	out=$(as_user env SBX_ROOT="$TMPDIR_TEST/rl/root" SBX_RUN="$TMPDIR_TEST/rl/run" sh -c \
		'"$SBX_BIN" build -t b "'"$TMPDIR_TEST"'/rl/ctx" > /dev/null 2>&1 && "$SBX_BIN" run --template b 2> /dev/null')
	assert_eq "$out" "/app
bar" "rootless: a one-shot run of a built template runs its CMD in its WORKDIR"
}
