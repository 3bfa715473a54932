# The MCP tools that mirror the rest of the CLI (issue 14): fork, inspect,
# logs, template_list, and trees in and out (upload/download), over `sbx mcp`
# with plain JSON-RPC.

mcp_py() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$SBX_BIN" "$@"
}

t_mcp_fork_inspect_logs_templates() {
	out=$(mcp_py <<'PY'
import sys
from mcp_client import Client
call = Client(sys.argv[1]).call
_, c = call("environment_create", {})
env = c["environment_id"]
call("environment_write_file", {"environment_id": env, "path": "/root/f", "content": "base"})
_, s = call("environment_snapshot", {"environment_id": env})
bad, f = call("environment_fork", {"snapshot_id": s["snapshot_id"], "name": "forked"})
print("fork", bad, f.get("environment_id") != env)
_, r = call("environment_read_file", {"environment_id": "forked", "path": "/root/f"})
print("forked-content", r["content"])
_, i = call("environment_inspect", {"environment_id": "forked"})
print("inspect", i.get("environment_id") == f["environment_id"], "isolation" in i)
bad, l = call("environment_logs", {"environment_id": env})
print("logs-none", bad, l.get("error", {}).get("code"))
bad, t = call("template_list", {})
print("templates", bad, isinstance(t.get("templates"), list))
bad, e = call("environment_fork", {"snapshot_id": "sha256:" + "0" * 64})
print("fork-missing", bad, e["error"]["code"])
for x in (env, f["environment_id"]):
    call("environment_destroy", {"environment_id": x})
PY
)
	echo "$out"
	assert_contains "$out" "fork False True"
	assert_contains "$out" "forked-content base"
	assert_contains "$out" "inspect True True"
	assert_contains "$out" "logs-none True invalid_argument"
	assert_contains "$out" "templates False True"
	assert_contains "$out" "fork-missing True not_found"
}

t_mcp_upload_download_trees() {
	mkdir -p "$TMPDIR_TEST/src/sub"
	echo one > "$TMPDIR_TEST/src/a"
	head -c 5000 /dev/urandom > "$TMPDIR_TEST/src/sub/bin"
	ln -s a "$TMPDIR_TEST/src/link"
	tar -C "$TMPDIR_TEST/src" -cf "$TMPDIR_TEST/in.tar" .
	out=$(mcp_py "$TMPDIR_TEST" <<'PY'
import base64, hashlib, io, sys, tarfile
from mcp_client import Client
call = Client(sys.argv[1]).call
d = sys.argv[2]
_, c = call("environment_create", {})
env = c["environment_id"]
tar = open(d + "/in.tar", "rb").read()
bad, u = call("environment_upload", {"environment_id": env, "path": "/root/up", "content": base64.b64encode(tar).decode()})
print("upload", bad, u.get("bytes") == len(tar))
_, r = call("environment_execute", {"environment_id": env, "command": "cat /root/up/a; readlink /root/up/link; sha256sum < /root/up/sub/bin"})
print("inside", r["stdout"].split())
bad, dl = call("environment_download", {"environment_id": env, "path": "/root/up"})
t = tarfile.open(fileobj=io.BytesIO(base64.b64decode(dl["content"])))
names = sorted(m.name for m in t.getmembers())
print("names", names)
print("bin", hashlib.sha256(t.extractfile("sub/bin").read()).hexdigest() == hashlib.sha256(open(d + "/src/sub/bin", "rb").read()).hexdigest())
bad, e = call("environment_upload", {"environment_id": env, "path": "/root/x", "content": "***"})
print("bad-b64", bad, e["error"]["code"])
# a hostile archive: a path out of the directory is refused inside, nothing written
bio = io.BytesIO()
with tarfile.open(fileobj=bio, mode="w") as h:
    ti = tarfile.TarInfo("../../etc/evil"); data = b"x"; ti.size = 1
    h.addfile(ti, io.BytesIO(data))
bad, e = call("environment_upload", {"environment_id": env, "path": "/root/h", "content": base64.b64encode(bio.getvalue()).decode()})
print("hostile", bad, e.get("error", {}).get("code"))
_, r = call("environment_execute", {"environment_id": env, "command": "test -e /etc/evil && echo PLANTED || echo clean"})
print("evil", r["stdout"].strip())
bad, e = call("environment_download", {"environment_id": env, "path": "/nonexistent"})
print("missing", bad, e["error"]["code"])
call("environment_destroy", {"environment_id": env})
PY
)
	echo "$out"
	assert_contains "$out" "upload False True"
	assert_contains "$out" "inside ['one', 'a', '$(sha256sum < "$TMPDIR_TEST/src/sub/bin" | cut -d' ' -f1)'"
	assert_contains "$out" "'a', 'link', 'sub', 'sub/bin'"
	assert_contains "$out" "bin True"
	assert_contains "$out" "bad-b64 True invalid_argument"
	assert_contains "$out" "hostile True invalid_argument"
	assert_contains "$out" "evil clean"
	assert_contains "$out" "missing True not_found"
}

# The built-in profiles in environment_create's schema (policy, phases.setup,
# phases.agent) are the library's list (sbx_policy_list), names and
# descriptions, not a copy kept by hand.
t_mcp_policy_enum_from_library() {
	sbx policy ls --json > "$TMPDIR_TEST/pols.json"
	out=$(mcp_py "$TMPDIR_TEST/pols.json" <<'PY'
import json, sys
from mcp_client import Client
c = Client(sys.argv[1])
pols = json.load(open(sys.argv[2]))["policies"]
names = [p["name"] for p in pols]
c.n += 1
c._send({"jsonrpc": "2.0", "id": c.n, "method": "tools/list", "params": {}})
tools = json.loads(c.p.stdout.readline())["result"]["tools"]
create = [t for t in tools if t["name"] == "environment_create"][0]["inputSchema"]["properties"]
enums = [create["policy"]["oneOf"][0]["enum"],
         create["phases"]["properties"]["setup"]["oneOf"][0]["enum"],
         create["phases"]["properties"]["agent"]["oneOf"][0]["enum"]]
print("enums", all(e == names for e in enums), names)
print("described", all(p.get("description") and p["description"] in create["policy"]["description"] for p in pols))
bad, e = c.call("environment_create", {"policy": "nosuch"})
print("unknown", bad, e.get("error", {}).get("code"), all(n in e["error"]["message"] for n in names))
PY
)
	echo "$out"
	assert_contains "$out" "enums True"
	assert_contains "$out" "described True"
	assert_contains "$out" "unknown True invalid_argument True"
}

# pool_set's policy is a built-in profile's name, as environment_create's:
# a path would make the server read a host file the model names (and put
# what it read in the error).
t_mcp_pool_policy_names_only() {
	echo '{"name":"mine","limits":{"memory_bytes":134217728}}' > "$TMPDIR_TEST/pol.json"
	out=$(mcp_py "$TMPDIR_TEST/pol.json" <<'PY'
import sys
from mcp_client import Client
c = Client(sys.argv[1])
bad, e = c.call("pool_set", {"source": "host", "size": 0, "policy": sys.argv[2]})
print("path", bad, e.get("error", {}).get("code"), "strict" in e.get("error", {}).get("message", ""))
bad, e = c.call("pool_set", {"source": "host", "size": 0, "policy": "/etc/shadow"})
print("shadow", bad, e.get("error", {}).get("code"), "root" not in e.get("error", {}).get("message", ""))
bad, e = c.call("pool_set", {"source": "host", "size": 0, "policy": "strict"})
print("name", bad, e)
c.call("pool_set", {"source": "host", "size": 0, "policy": "strict", "remove": True})
PY
)
	echo "$out"
	assert_contains "$out" "path True invalid_argument True"
	assert_contains "$out" "shadow True invalid_argument True"
	assert_contains "$out" "name False"
}
