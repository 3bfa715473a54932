# environment_destroy answers at once and tears the environment down in the
# background (src/server/reaper.h): the server treats it as gone from the
# answer on, and nothing is left once the server has ended.

mcp_py() {
	command -v python3 > /dev/null || skip "python3 is not installed (scripts/deps.sh test installs it)"
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 - "$SBX_BIN" "$@"
}

# A list that runs while the reaper finishes a removal must still leave the
# destroyed environment out: the list is read before the removal ends, the
# pending check after it (a CI flake of session 7).
t_mcp_list_during_removal_never_shows_destroyed() {
	out=$(mcp_py <<'PY'
import sys
from mcp_client import Client
cl = Client(sys.argv[1])
call = cl.call
seen = 0
for _ in range(6):
    ids = [call("environment_create", {})[1]["environment_id"] for _ in range(6)]
    for i in ids:
        call("environment_destroy", {"environment_id": i})
    for _ in range(12):
        listed = {e["environment_id"] for e in call("environment_list", {})[1]["environments"]}
        seen += len(listed & set(ids))
print("seen", seen)
cl.p.stdin.close()
print("exit", cl.p.wait())
PY
)
	assert_eq "$out" "seen 0
exit 0"
}

t_mcp_destroy_is_gone_at_once_and_leaves_nothing() {
	out=$(mcp_py <<'PY'
import sys
from mcp_client import Client
cl = Client(sys.argv[1])
call = cl.call
ids = [call("environment_create", {})[1]["environment_id"] for _ in range(4)]
keep = call("environment_create", {})[1]["environment_id"]
print("destroyed", all(call("environment_destroy", {"environment_id": i}) == (False, {"destroyed": True, "environment_id": i}) for i in ids))
listed = {e["environment_id"] for e in call("environment_list", {})[1]["environments"]}
print("listed", sorted(listed & set(ids)), keep in listed)
bad, r = call("environment_execute", {"environment_id": ids[0], "command": "true"})
print("execute", bad, r["error"]["code"])
bad, r = call("environment_destroy", {"environment_id": ids[1]})
print("again", bad, r["error"]["code"])
print("kept", call("environment_execute", {"environment_id": keep, "command": "echo ok"})[1]["stdout"].strip())
call("environment_destroy", {"environment_id": keep})
cl.p.stdin.close()
print("exit", cl.p.wait())
PY
)
	assert_eq "$out" "destroyed True
listed [] True
execute True not_found
again True not_found
kept ok
exit 0"
	# The server drained its queue before exiting.
	[ -z "$(ls "$SBX_ROOT/envs" | grep -E '^[0-9a-f]{12}$')" ] || fail "environments left: $(ls "$SBX_ROOT/envs")"
	[ -z "$(ls "$SBX_RUN" 2> /dev/null | grep -E '^[0-9a-f]{12}$')" ] || fail "run dirs left: $(ls "$SBX_RUN")"
	assert_eq "$(sbx ls --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["environments"]))')" "0"
}

# An argument of megabytes quoted in an error must not make the reply too big
# for the client: environment_fork with a 3 MiB snapshot_id answered 12 MB
# (the id twice, each escaped twice), past the official SDK's 10 MiB limit.
t_mcp_huge_argument_error_stays_small() {
	out=$(mcp_py <<'PY'
import sys, json
from mcp_client import Client
cl = Client(sys.argv[1])
cl.n += 1
cl._send({"jsonrpc": "2.0", "id": cl.n, "method": "tools/call",
          "params": {"name": "environment_fork", "arguments": {"snapshot_id": "a" * (3 << 20)}}})
line = cl.p.stdout.readline()
m = json.loads(line)
assert m["id"] == cl.n and m["result"]["isError"], m
print(len(line) < (64 << 10), m["result"]["structuredContent"]["error"]["code"])
print(cl.call("environment_list", {})[0])
PY
)
	assert_eq "$out" $'True not_found\nFalse' "the reply's size or code, or the session after it"
}

# A request over the 4 MiB limit is refused with its own id (read from its
# start), so that the client's call ends at once: with "id": null the
# official SDK waited for its timeout.
t_mcp_oversized_request_keeps_its_id() {
	out=$(mcp_py <<'PY'
import sys, json
from mcp_client import Client
cl = Client(sys.argv[1])
big = {"jsonrpc": "2.0", "id": 77, "method": "tools/call",
       "params": {"name": "environment_write_file",
                  "arguments": {"environment_id": "x", "path": "/f", "content": "a" * (5 << 20)}}}
cl._send(big)
m = json.loads(cl.p.stdout.readline())
print(m["id"], m["error"]["code"])
print(cl.call("environment_list", {})[0])
PY
)
	assert_eq "$out" $'77 -32600\nFalse' "the oversized request's reply, or the session after it"
}
