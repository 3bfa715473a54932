# CDI devices (issue 11 section 3, docs/devices.md): --device against fake
# specs that map /dev/null and /dev/zero under other names, a bind mount, env,
# hooks writing markers and additional gids; YAML and JSON; =all and MIG-style
# names; the device cgroup (v1 list and v2 BPF program, each alone); errors
# for unknown names, malformed specs and policy refusals; MCP; rootless.
# No GPU is needed.

# spec_dir: $CDI with a fake spec (JSON) whose hooks write into $MARK.
spec_dir() {
	CDI="$TMPDIR_TEST/cdi"
	MARK="$TMPDIR_TEST/marks"
	SHARE="$TMPDIR_TEST/share"
	mkdir -p "$CDI" "$MARK" "$SHARE"
	chmod 1777 "$MARK"
	echo "library from the host" > "$SHARE/libfake.so"
	chmod -R a+rX "$SHARE"
	cat > "$CDI/fake.json" <<JSON
{"cdiVersion":"0.7.0","kind":"example.com/fakegpu",
 "containerEdits":{
   "env":["FAKE_DRIVER=1.0"],
   "mounts":[{"hostPath":"$SHARE","containerPath":"/opt/fake","options":["ro","nosuid","nodev","bind"]}],
   "hooks":[{"hookName":"createContainer","path":"/bin/sh","args":["sh","-c","cat > $MARK/create.json; echo \$HOOK_ENV > $MARK/create.env"],"env":["HOOK_ENV=from-spec"],"timeout":10},
            {"hookName":"poststop","path":"/bin/sh","args":["sh","-c","cat > $MARK/poststop.json"]}],
   "additionalGids":[44]},
 "devices":[
   {"name":"0","containerEdits":{"env":["FAKE_VISIBLE=0"],"deviceNodes":[{"path":"/dev/fakegpu0","hostPath":"/dev/null","type":"c","major":1,"minor":3}]}},
   {"name":"1","containerEdits":{"env":["FAKE_VISIBLE1=1"],"deviceNodes":[{"path":"/dev/fake/gpu1","hostPath":"/dev/zero"}]}}]}
JSON
	chmod 644 "$CDI/fake.json"
	export SBX_CDI_SPEC_DIRS="$CDI"
}

t_cdi_nodes_mounts_env_hooks_gids() {
	is_root || skip_ok "additionalGids need more than one gid inside (rootless: t_cdi_rootless)"
	spec_dir
	ID=$(sbx create --device example.com/fakegpu=0 --device example.com/fakegpu=1)
	out=$(sbx exec "$ID" -- sh -c 'stat -c "%n %t:%T %A" /dev/fakegpu0 /dev/fake/gpu1; echo data > /dev/fakegpu0 && echo wrote-null;
		head -c 3 /dev/fake/gpu1 | od -An -c; cat /opt/fake/libfake.so; touch /opt/fake/x 2>&1;
		echo "$FAKE_DRIVER $FAKE_VISIBLE $FAKE_VISIBLE1"; id -G')
	echo "$out"
	assert_contains "$out" "/dev/fakegpu0 1:3 crw-rw-rw-"
	assert_contains "$out" "/dev/fake/gpu1 1:5 crw-rw-rw-"
	assert_contains "$out" "wrote-null"
	assert_contains "$out" '\0  \0  \0'
	assert_contains "$out" "library from the host"
	assert_contains "$out" "Read-only file system"
	assert_contains "$out" "1.0 0 1"
	assert_contains "$out" "0 44"
	# the createContainer hook ran before create returned, with the OCI state
	[ -s "$MARK/create.json" ] || fail "createContainer hook did not run"
	assert_contains "$(cat "$MARK/create.json")" "\"id\":\"$ID\""
	assert_contains "$(cat "$MARK/create.json")" '"status":"created"'
	assert_eq "$(cat "$MARK/create.env")" "from-spec" "hook env"
	# inspect lists the devices; the state's env stays the user's
	ins=$(sbx inspect "$ID")
	assert_contains "$ins" '"example.com/fakegpu=0"'
	assert_contains "$ins" '"example.com/fakegpu=1"'
	assert_not_contains "$ins" "FAKE_DRIVER"
	[ ! -e "$MARK/poststop.json" ] || fail "poststop ran early"
	sbx rm "$ID"
	[ -s "$MARK/poststop.json" ] || fail "poststop hook did not run"
	assert_contains "$(cat "$MARK/poststop.json")" '"status":"stopped"'
	[ ! -e "/sys/fs/cgroup/devices/sbx/$ID" ] || fail "device cgroup left behind"
}

t_cdi_yaml_all_and_mig_names() {
	spec_dir
	rm "$CDI/fake.json"
	cat > "$CDI/mig.yaml" <<'YAML'
---
cdiVersion: 0.5.0
kind: example.com/mig
devices:
- name: "0:1"
  containerEdits:
    deviceNodes:
    - path: /dev/fakemig0-1
      hostPath: /dev/zero
- name: "0:2"
  containerEdits:
    deviceNodes:
    - path: /dev/fakemig0-2
      hostPath: /dev/null
containerEdits:
  env:
  - MIG_SPEC=yes
YAML
	chmod 644 "$CDI/mig.yaml"
	out=$(sbx run --device example.com/mig=0:1 -- sh -c 'ls /dev | grep fakemig; echo $MIG_SPEC')
	assert_eq "$out" "fakemig0-1
yes"
	# =all: every device of the kind when the spec has none named all
	out=$(sbx run --device example.com/mig=all -- sh -c 'ls /dev | grep fakemig')
	assert_eq "$out" "fakemig0-1
fakemig0-2"
}

t_cdi_errors_are_clear() {
	spec_dir
	expect_status 125 sbx run --device example.com/fakegpu=7 -- true
	out=$(sbx run --device example.com/fakegpu=7 -- true 2>&1 || true)
	assert_contains "$out" "kind 'example.com/fakegpu' has no device '7'"
	out=$(sbx run --device other.com/gpu=0 -- true 2>&1 || true)
	assert_contains "$out" "no CDI spec defines kind 'other.com/gpu'"
	out=$(sbx run --device nonsense -- true 2>&1 || true)
	assert_contains "$out" "expected a CDI name vendor/class=name"
	# a malformed spec is named, JSON and YAML alike
	echo '{"cdiVersion":"0.6.0","kind":' > "$CDI/broken.json"
	out=$(sbx run --device example.com/fakegpu=0 -- true 2>&1 || true)
	assert_contains "$out" "broken.json': malformed JSON"
	rm "$CDI/broken.json"
	printf 'cdiVersion: 0.6.0\nkind: [a\n' > "$CDI/broken.yaml"
	out=$(sbx run --device example.com/fakegpu=0 -- true 2>&1 || true)
	assert_contains "$out" "broken.yaml': malformed YAML"
	rm "$CDI/broken.yaml"
	printf '{"cdiVersion":"0.6.0","kind":"a.com/b","devices":[{"name":"x","containerEdits":{"deviceNodes":[{"path":"/dev/x","hostPath":"/dev/no-such-node"}]}}]}' > "$CDI/missing.json"
	out=$(sbx run --device a.com/b=x -- true 2>&1 || true)
	assert_contains "$out" "host node '/dev/no-such-node'"
	rm "$CDI/missing.json"
	# a spec others may write is refused (its hooks run with sbx's privilege)
	chmod 666 "$CDI/fake.json"
	out=$(sbx run --device example.com/fakegpu=0 -- true 2>&1 || true)
	assert_contains "$out" "not writable by group or others"
	chmod 644 "$CDI/fake.json"
	# a failing createContainer hook fails the create, leaving nothing
	sed -i 's|cat > [^;]*/create.json;|exit 3;|' "$CDI/fake.json"
	out=$(sbx run --device example.com/fakegpu=0 -- true 2>&1 || true)
	assert_contains "$out" "createContainer hook '/bin/sh' exited with status 3"
	assert_eq "$(sbx ls --json | grep -c environment_id || true)" "0" "environments left"
}

t_cdi_policy_allowlist() {
	spec_dir
	echo '{"devices":["example.com/fakegpu=0"]}' > "$TMPDIR_TEST/one.json"
	echo '{"devices":["example.com/fakegpu=*"]}' > "$TMPDIR_TEST/kind.json"
	echo '{"network":{"mode":"none"}}' > "$TMPDIR_TEST/none.json"
	assert_eq "$(sbx run --policy "$TMPDIR_TEST/one.json" --device example.com/fakegpu=0 -- ls /dev/fakegpu0)" "/dev/fakegpu0"
	out=$(sbx run --policy "$TMPDIR_TEST/one.json" --device example.com/fakegpu=1 -- true 2>&1 || true)
	assert_contains "$out" "device 'example.com/fakegpu=1': not allowed by policy"
	out=$(sbx run --policy "$TMPDIR_TEST/none.json" --device example.com/fakegpu=0 -- true 2>&1 || true)
	assert_contains "$out" "allowlist is empty"
	out=$(sbx run --policy strict --device example.com/fakegpu=0 -- true 2>&1 || true)
	assert_contains "$out" "not allowed by policy 'strict'"
	assert_eq "$(sbx run --policy "$TMPDIR_TEST/kind.json" --device example.com/fakegpu=1 -- ls /dev/fake)" "gpu1"
	echo '{"devices":["not a name"]}' > "$TMPDIR_TEST/bad.json"
	out=$(sbx run --policy "$TMPDIR_TEST/bad.json" -- true 2>&1 || true)
	assert_contains "$out" "devices[0]"
}

# The device cgroup: a host node with a major no driver has (240, local use:
# open gives ENXIO) and "r" access: reading gets to the driver (ENXIO),
# writing is refused by the cgroup (EPERM). Each backend alone, then both.
t_cdi_device_cgroup_v1_and_bpf() {
	is_root || skip_ok "the device cgroup needs root (rootless: t_cdi_rootless)"
	spec_dir
	node=/dev/sbx-cdi-test-$$
	mknod -m 666 "$node" c 240 0
	trap 'rm -f "$node"' EXIT
	cat > "$CDI/exp.json" <<JSON
{"cdiVersion":"0.5.0","kind":"example.com/exp","devices":[{"name":"r","containerEdits":{"deviceNodes":[{"path":"/dev/fakeexp","hostPath":"$node","permissions":"r"}]}}]}
JSON
	chmod 644 "$CDI/exp.json"
	for mode in v1 v2 ""; do
		out=$(SBX_TEST_DEVCG=$mode sbx run --device example.com/exp=r --device example.com/fakegpu=0 --device example.com/fakegpu=1 -- \
			sh -c 'cat /dev/fakeexp; echo > /dev/fakeexp; echo > /dev/fakegpu0 && echo null-ok; head -c1 /dev/fake/gpu1 > /dev/null && echo zero-ok' 2>&1 || true)
		echo "[$mode] $out"
		assert_contains "$out" "/dev/fakeexp: No such device or address"
		assert_contains "$out" "cannot create /dev/fakeexp: Operation not permitted"
		assert_contains "$out" "null-ok"
		assert_contains "$out" "zero-ok"
		assert_not_contains "$out" "warning"
	done
	# the v1 list is exactly sbx's /dev plus the CDI nodes
	ID=$(sbx create --device example.com/exp=r)
	list=$(cat "/sys/fs/cgroup/devices/sbx/$ID/devices.list")
	assert_contains "$list" "c 240:0 r"
	assert_not_contains "$list" "a *:*"
	sbx rm "$ID"
	[ ! -e "/sys/fs/cgroup/devices/sbx/$ID" ] || fail "device cgroup left behind"
}

t_cdi_over_mcp() {
	command -v python3 > /dev/null || skip "python3 is not installed (drives sbx mcp here)"
	spec_dir
	out=$(python3 - "$SBX_BIN" <<'PY'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = 0
def rpc(method, params):
    global n
    n += 1
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    while True:
        m = json.loads(p.stdout.readline())
        if m.get("id") == n:
            return m
def call(name, args):
    return rpc("tools/call", {"name": name, "arguments": args})
rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
p.stdin.flush()
r = call("environment_create", {"devices": ["example.com/fakegpu=0"]})["result"]
env = r["structuredContent"]["environment_id"]
x = call("environment_execute", {"environment_id": env, "command": "ls /dev/fakegpu0; echo $FAKE_VISIBLE"})
print("exec", x["result"]["structuredContent"]["stdout"].replace("\n", " "))
r = call("environment_create", {"devices": ["example.com/fakegpu=9"]})["result"]
print("unknown", r["isError"], r["structuredContent"]["error"]["code"])
r = call("environment_create", {"devices": "example.com/fakegpu=0"})
print("type", json.dumps(r)[:200])
r = call("environment_create", {"devices": ["example.com/fakegpu=0"], "policy": {"devices": ["example.com/fakegpu=1"]}})["result"]
print("policy", r["isError"], r["structuredContent"]["error"]["code"])
call("environment_destroy", {"environment_id": env})
p.stdin.close()
p.wait()
PY
)
	echo "$out"
	assert_contains "$out" "exec /dev/fakegpu0 0"
	assert_contains "$out" "unknown True not_found"
	assert_contains "$out" "devices"
	assert_contains "$out" "policy True invalid_argument"
}

t_cdi_rootless() {
	is_root || skip_ok "already running unprivileged"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	command -v setpriv > /dev/null || skip "setpriv (util-linux) is missing"
	spec_dir
	RL="$TMPDIR_TEST/rl"
	mkdir -p "$RL/w"
	cp "$SBX_BIN" "$RL/sbx"
	chmod -R a+rX "$RL"
	chmod 1777 "$RL/w"
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env HOME=/home/sbxtest \
		SBX_ROOT="$RL/w/store" SBX_RUN="$RL/w/run" SBX_CDI_SPEC_DIRS="$CDI" \
		"$RL/sbx" run --device example.com/fakegpu=0 -- sh -c 'echo x > /dev/fakegpu0 && echo node-ok; cat /opt/fake/libfake.so; echo $FAKE_VISIBLE; id -G' 2>&1 || true)
	echo "$out"
	assert_contains "$out" "node-ok"
	assert_contains "$out" "library from the host"
	assert_contains "$out" "additionalGids cannot be applied"
	assert_contains "$out" "rootless, the device cgroup cannot be set"
	# the hook ran as the calling user
	[ -s "$MARK/create.json" ] || fail "createContainer hook did not run rootless"
	assert_eq "$(stat -c %U "$MARK/create.json")" "sbxtest" "hook's user"
}

# A restore starts the environment again under its id: its devices are
# resolved again from the state, with their edits.
t_cdi_restore_keeps_devices() {
	spec_dir
	ID=$(sbx create --device example.com/fakegpu=1)
	SNAP=$(sbx snapshot "$ID")
	sbx exec "$ID" -- touch /root/after
	sbx restore "$ID" "$SNAP" > /dev/null
	out=$(sbx exec "$ID" -- sh -c 'ls /dev/fake; echo $FAKE_VISIBLE1; ls /root')
	assert_contains "$out" "gpu1"
	assert_contains "$out" "1"
	assert_not_contains "$out" "after"
	# state's env stays the user's across the restart (no device env twice)
	assert_not_contains "$(sbx inspect "$ID")" "FAKE_VISIBLE1"
	sbx rm "$ID"
}

# A supervisor killed with SIGKILL cannot remove its device cgroup: sbx rm
# (and gc) must.
t_cdi_kill9_supervisor_leaves_no_device_cgroup() {
	is_root || skip_ok "the device cgroup needs root"
	[ -e /sys/fs/cgroup/devices/devices.allow ] || skip_ok "no cgroup v1 devices hierarchy on this host"
	spec_dir
	ID=$(sbx create --device example.com/fakegpu=0)
	sp=$(sbx inspect "$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor_pid"])')
	[ -d "/sys/fs/cgroup/devices/sbx/$ID" ] || fail "no device cgroup"
	kill -9 "$sp"
	for _ in $(seq 50); do kill -0 "$sp" 2> /dev/null || break; sleep 0.1; done
	sbx rm "$ID" > /dev/null
	[ ! -e "/sys/fs/cgroup/devices/sbx/$ID" ] || fail "device cgroup left behind after sbx rm"
}

# An "all" of a GPU with many MIG slices names hundreds of nodes
# (/dev/nvidia-caps/nvidia-capN): /dev's tmpfs grows to hold them.
t_cdi_many_nodes() {
	spec_dir
	python3 -c '
import json, sys
nodes = [{"path": "/dev/nvidia-caps/nvidia-cap%d" % i, "hostPath": "/dev/null"} for i in range(300)]
json.dump({"cdiVersion": "0.5.0", "kind": "example.com/many", "devices": [{"name": "all", "containerEdits": {"deviceNodes": nodes}}]}, open(sys.argv[1], "w"))' "$CDI/many.json"
	chmod 644 "$CDI/many.json"
	assert_eq "$(sbx run --device example.com/many=all -- sh -c 'ls /dev/nvidia-caps | wc -l; echo x > /dev/nvidia-caps/nvidia-cap299 && echo ok')" "300
ok"
}
