# Plugins (docs/plugins.md): shared objects named by a policy, run in a
# plugin host process per environment, with hooks that veto or adjust
# create, exec and egress. The example plugins are build/plugins/*.so; the
# test plugin below (crashes, hangs, wrong ABI) is compiled here.

PLUGINS=$(realpath -m "$SBX_SRC/${SBX_BUILD:-build}/plugins")

# Plugins load only from the directories in SBX_PLUGIN_PATH (default
# /usr/lib/sbx/plugins:/usr/local/lib/sbx/plugins): here the build's and the test's.
trust_plugins() { export SBX_PLUGIN_PATH="$PLUGINS:$TMPDIR_TEST"; }

need_plugins() {
	[ -f "$PLUGINS/cmd_denylist.so" ] || fail "example plugins not built ($PLUGINS): run make all"
	trust_plugins
}

# A plugin for the failure cases: argv[0] "crash" segfaults in on_exec,
# "hang" never answers; every command gets PLUGIN_VAR=from-plugin; on_create
# refuses an environment named "forbidden" and lowers memory to 256 MiB;
# on_egress refuses hosts named "*.refused.test". -DABI=N builds it with
# another ABI version.
build_test_plugin() { # OUT [CFLAGS...]
	local out=$1
	shift
	trust_plugins
	cat > "$TMPDIR_TEST/tplugin.c" <<'EOF'
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "sbx_plugin.h"
#ifndef ABI
#define ABI SBX_PLUGIN_ABI_VERSION
#endif
static int on_exec(void *ctx, const sbx_plugin_exec *info, sbx_plugin_verdict *out)
{
	static const char *const add[] = {"PLUGIN_VAR=from-plugin", NULL};
	if (strcmp(info->argv[0], "crash") == 0)
		raise(SIGSEGV);
	if (strcmp(info->argv[0], "hang") == 0)
		pause();
	out->env_add = add;
	return 0;
}
static int on_create(void *ctx, const sbx_plugin_create *info, sbx_plugin_verdict *out)
{
	if (info->name && strcmp(info->name, "forbidden") == 0)
		sbx_plugin_deny(out, "environments may not be called %s", info->name);
	out->limits.memory_bytes = 256 << 20;
	return 0;
}
static int on_egress(void *ctx, const sbx_plugin_egress *info, sbx_plugin_verdict *out)
{
	const char *dot = strstr(info->host, ".refused.test");
	if (dot && dot[13] == '\0')
		sbx_plugin_deny(out, "%s to %s:%d is refused by the test plugin", info->kind, info->host, info->port);
	return 0;
}
static const struct sbx_plugin plugin = {
	.abi_version = ABI, .size = sizeof(struct sbx_plugin), .name = "tplugin",
	.on_create = on_create, .on_exec = on_exec, .on_egress = on_egress,
};
SBX_PLUGIN_DEFINE(plugin)
EOF
	cc -shared -fPIC -O1 -Wall -Werror -I"$SBX_SRC/include" "$@" -o "$out" "$TMPDIR_TEST/tplugin.c" ||
		fail "cannot build the test plugin"
}

# policy FILE PLUGIN_JSON...: a policy naming these plugins entries.
policy() {
	local f=$1
	shift
	local IFS=,
	echo "{\"name\":\"plugtest\",\"plugins\":[$*]}" > "$f"
}

t_denylist_refuses_named_commands() {
	need_plugins
	policy "$TMPDIR_TEST/p.json" "{\"path\":\"$PLUGINS/cmd_denylist.so\",\"config\":{\"deny\":[\"rm\",\"dd\"],\"message\":\"ask a human\"}}"
	id=$(sbx create --policy "$TMPDIR_TEST/p.json")
	assert_eq "$(sbx exec "$id" -- echo allowed)" "allowed"
	sbx exec "$id" -- touch /tmp/keep
	expect_status 125 sbx exec "$id" -- rm /tmp/keep
	assert_eq "$ERR" "sbx: exec: plugin 'cmd_denylist' refused: 'rm' is refused: ask a human"
	expect_status 125 sbx exec "$id" -- /bin/rm /tmp/keep
	expect_status 125 sbx exec "$id" -- sh -c 'rm -f /tmp/keep'
	assert_contains "$ERR" "'rm' is refused"
	# Nothing ran: the file is still there; other commands still work.
	assert_eq "$(sbx exec "$id" -- ls /tmp/keep)" "/tmp/keep"
	expect_status 125 sbx exec --json "$id" -- dd if=/dev/zero of=/dev/null count=1
	assert_contains "$OUT$ERR" "invalid_argument"
	# The environment records its plugins (a restore keeps them).
	sbx inspect "$id" | python3 -c 'import json,sys; p=json.load(sys.stdin)["plugins"]; assert p[0]["path"].endswith("cmd_denylist.so") and p[0]["config"]["deny"]==["rm","dd"], p'
	sbx rm "$id"
	# One-shot runs go through the same hooks; the list may come from the host environment.
	policy "$TMPDIR_TEST/env.json" "\"$PLUGINS/cmd_denylist.so\""
	SBX_CMD_DENYLIST="true, uname" expect_status 125 sbx run --policy "$TMPDIR_TEST/env.json" -- uname
	assert_contains "$ERR" "'uname' is refused"
	assert_eq "$(SBX_CMD_DENYLIST=true sbx run --policy "$TMPDIR_TEST/env.json" -- echo fine)" "fine"
}

t_denylist_survives_restore() {
	need_plugins
	policy "$TMPDIR_TEST/p.json" "{\"path\":\"$PLUGINS/cmd_denylist.so\",\"config\":{\"deny\":[\"rm\"]}}"
	id=$(sbx create --policy "$TMPDIR_TEST/p.json")
	snap=$(sbx snapshot "$id")
	sbx restore "$id" "$snap" > /dev/null
	expect_status 125 sbx exec "$id" -- rm -f /tmp/x
	assert_contains "$ERR" "plugin 'cmd_denylist' refused"
	sbx rm "$id"
}

t_plugin_adjusts_create_and_exec() {
	build_test_plugin "$TMPDIR_TEST/tplugin.so"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/tplugin.so\""
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json" --name forbidden
	assert_eq "$ERR" "sbx: create: create environment: plugin 'tplugin' refused: environments may not be called forbidden"
	[ -z "$(ls "$SBX_ROOT/envs" 2> /dev/null | grep -E '^[0-9a-f]{12}$')" ] || fail "a vetoed create left an environment"
	id=$(sbx create --policy "$TMPDIR_TEST/p.json" --name allowed)
	# on_create lowered the memory limit; on_exec added a variable.
	sbx inspect "$id" | python3 -c 'import json,sys; l=json.load(sys.stdin)["limits"]; assert l["memory_bytes"]==256<<20, l'
	if is_root; then # and the cgroup enforces it
		expect_status 137 sbx exec "$id" -- python3 -c 'b = bytearray(300 * 1024 * 1024)'
		assert_contains "$ERR" "out of memory"
	fi
	assert_eq "$(sbx exec "$id" -- sh -c 'echo $PLUGIN_VAR')" "from-plugin"
	assert_eq "$(sbx exec -e PLUGIN_VAR=mine "$id" -- sh -c 'echo $PLUGIN_VAR')" "from-plugin"
	sbx rm "$id"
}

# gone PID: the process ends (or is a zombie of someone else) within 5 s.
gone() {
	local i
	for i in $(seq 50); do
		grep -qs '^State:.*Z' "/proc/$1/status" || [ ! -d "/proc/$1" ] && return 0
		sleep 0.1
	done
	return 1
}

t_crashing_plugin_fails_closed() {
	build_test_plugin "$TMPDIR_TEST/tplugin.so"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/tplugin.so\""
	id=$(sbx create --policy "$TMPDIR_TEST/p.json")
	sup=$(sbx inspect "$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["supervisor_pid"])')
	host=$(pgrep -P "$sup" -x sbx-plugins) || fail "no plugin host under supervisor $sup"
	assert_eq "$(sbx exec "$id" -- echo before)" "before"
	expect_status 125 sbx exec "$id" -- crash
	assert_contains "$ERR" "sbx: exec: plugin host crashed: plugin 'tplugin' in on_exec: killed by signal 11"
	assert_contains "$ERR" "refusing"
	# Fail closed: every later command is refused too, with the reason.
	expect_status 125 sbx exec "$id" -- echo after
	assert_contains "$ERR" "plugin host crashed"
	# The host is gone (reaped, not a zombie); the supervisor is fine.
	[ ! -d "/proc/$host" ] || fail "plugin host $host still exists: $(cat /proc/$host/status 2> /dev/null | head -3)"
	kill -0 "$sup" || fail "the supervisor died with the plugin"
	sbx ps "$id" > /dev/null
	sbx rm "$id"
	gone "$sup" || fail "supervisor $sup left behind"
}

t_hanging_plugin_times_out() {
	build_test_plugin "$TMPDIR_TEST/tplugin.so"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/tplugin.so\""
	id=$(SBX_PLUGIN_TIMEOUT_MS=500 sbx create --policy "$TMPDIR_TEST/p.json")
	start=$(date +%s%N)
	expect_status 125 sbx exec "$id" -- hang
	assert_contains "$ERR" "plugin host did not answer within 500 ms (plugin 'tplugin' in on_exec) and was stopped; refusing"
	[ $((($(date +%s%N) - start) / 1000000)) -lt 10000 ] || fail "the timeout took too long"
	expect_status 125 sbx exec "$id" -- echo after
	assert_contains "$ERR" "did not answer"
	sbx rm "$id"
}

t_wrong_abi_and_bad_paths_refused() {
	build_test_plugin "$TMPDIR_TEST/old.so" -DABI=99
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/old.so\""
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
	assert_contains "$ERR" "plugin '$TMPDIR_TEST/old.so': ABI version 99, but this sbx loads version 1 only; rebuild it"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/nosuch.so\""
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
	assert_contains "$ERR" "plugin '$TMPDIR_TEST/nosuch.so': No such file or directory"
	echo "not a library" > "$TMPDIR_TEST/text.so"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/text.so\""
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
	assert_contains "$ERR" "plugin '$TMPDIR_TEST/text.so': cannot load it"
	# A real shared object that is not a plugin.
	lib=$(ldconfig -p | awk '/libz\.so\.1 .*x86-64|libz\.so\.1 \(libc6,AArch64/ {print $NF; exit}')
	if [ -n "$lib" ]; then
		cp "$lib" "$TMPDIR_TEST/libz.so"
		policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/libz.so\""
		expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
		assert_contains "$ERR" "not an sbx plugin (no sbx_plugin_entry symbol)"
	fi
	# Writable by everyone: refused (it would run with sbx's privileges).
	build_test_plugin "$TMPDIR_TEST/open.so"
	chmod 666 "$TMPDIR_TEST/open.so"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/open.so\""
	expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
	assert_contains "$ERR" "writable by every user"
	# Only from the plugin directories the operator named (a policy may come
	# from an agent, which can write files through a volume).
	build_test_plugin "$TMPDIR_TEST/tplugin.so"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/tplugin.so\""
	SBX_PLUGIN_PATH="$PLUGINS" expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
	assert_contains "$ERR" "plugin '$TMPDIR_TEST/tplugin.so' is not in a plugin directory ($PLUGINS)"
	timeout 60 env -u SBX_PLUGIN_PATH "$SBX_BIN" create --policy "$TMPDIR_TEST/p.json" 2> "$TMPDIR_TEST/err" && fail "loaded from outside the default directories"
	assert_contains "$(cat "$TMPDIR_TEST/err")" "(/usr/lib/sbx/plugins:/usr/local/lib/sbx/plugins)"
	mkdir -m 777 "$TMPDIR_TEST/open"
	cp "$TMPDIR_TEST/tplugin.so" "$TMPDIR_TEST/open/"
	policy "$TMPDIR_TEST/p.json" "\"$TMPDIR_TEST/open/tplugin.so\""
	SBX_PLUGIN_PATH="$TMPDIR_TEST/open" expect_status 125 sbx create --policy "$TMPDIR_TEST/p.json"
	assert_contains "$ERR" "plugin directory '$TMPDIR_TEST/open' is writable by every user"
	# Failed creates leave nothing behind.
	[ -z "$(ls "$SBX_ROOT/envs" 2> /dev/null | grep -E '^[0-9a-f]{12}$')" ] || fail "a failed create left an environment"
}

via_proxy() { sbx exec "$ID" -- curl -s --max-time 10 --noproxy '' -x http://127.0.0.1:3128 "$@"; }

t_egress_ratelimit_vetoes_through_the_proxy() {
	need_plugins
	command -v curl > /dev/null || skip "curl is not installed"
	start_server
	echo "{\"network\":{\"allow\":[\"127.0.0.1:$PORT\"]},\"plugins\":[{\"path\":\"$PLUGINS/egress_ratelimit.so\",\"config\":{\"max\":2,\"window_s\":60}}]}" > "$TMPDIR_TEST/p.json"
	ID=$(sbx create --policy "$TMPDIR_TEST/p.json")
	assert_eq "$(via_proxy "http://127.0.0.1:$PORT/")" "hello from the host"
	assert_eq "$(via_proxy -p "http://127.0.0.1:$PORT/")" "hello from the host"
	out=$(via_proxy -i "http://127.0.0.1:$PORT/")
	assert_contains "$out" "403"
	assert_contains "$out" "plugin 'egress_ratelimit' refused: more than 2 connections to 127.0.0.1:$PORT in 60 s"
	assert_contains "$out" "retrying another way will not work"
	out=$(sbx logs "$ID" --net)
	assert_contains "$out" "denied"
	assert_contains "$out" "egress_ratelimit"
	sbx logs --json "$ID" --net | python3 -c '
import json,sys
e=json.load(sys.stdin)["events"]
assert [x["verdict"] for x in e].count("allowed")==2, e
assert any(x["verdict"]=="denied" and "egress_ratelimit" in (x.get("rule") or "") for x in e), e'
	# The allowlist still comes first: a host it refuses never reaches the plugin.
	out=$(via_proxy -i "http://example.com/")
	assert_contains "$out" "no rule allows it"
	sbx rm "$ID"
	kill $SRV
}

t_egress_veto_and_crash_through_the_proxy() {
	command -v curl > /dev/null || skip "curl is not installed"
	build_test_plugin "$TMPDIR_TEST/tplugin.so"
	start_server
	echo "{\"network\":{\"allow\":[\"127.0.0.1:$PORT\",\"a.refused.test\"]},\"plugins\":[\"$TMPDIR_TEST/tplugin.so\"]}" > "$TMPDIR_TEST/p.json"
	ID=$(sbx create --policy "$TMPDIR_TEST/p.json")
	out=$(via_proxy -i -p "http://a.refused.test:443/" || true) # curl fails the tunnel
	assert_contains "$out" "403"
	assert_contains "$out" "plugin 'tplugin' refused: connect to a.refused.test:443 is refused by the test plugin"
	assert_eq "$(via_proxy "http://127.0.0.1:$PORT/")" "hello from the host"
	# A crashed plugin host refuses every connection from then on (a command
	# started before the crash asks, since no new command may start).
	sbx exec "$ID" -- sh -c "sleep 2; curl -s -i --max-time 10 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:$PORT/" > "$TMPDIR_TEST/late" &
	late=$!
	sleep 0.5
	expect_status 125 sbx exec "$ID" -- crash
	wait $late
	out=$(cat "$TMPDIR_TEST/late")
	assert_contains "$out" "403"
	assert_contains "$out" "plugin host crashed: plugin 'tplugin' in on_exec"
	sbx rm "$ID"
	kill $SRV
}

t_mcp_plugin_veto_is_an_error() {
	need_plugins
	command -v node > /dev/null || skip "node is not installed (needed to parse MCP output)"
	pol="{\"plugins\":[{\"path\":\"$PLUGINS/cmd_denylist.so\",\"config\":{\"deny\":[\"rm\"]}}]}"
	INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
	printf '%s\n' "$INIT" "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_create\",\"arguments\":{\"policy\":$pol}}}" |
		sbx mcp > "$TMPDIR_TEST/mcp.out"
	id=$(node "$SBX_SRC/tests/mcp/jsonq.mjs" "$TMPDIR_TEST/mcp.out" 'id(1).result.structuredContent.environment_id')
	[ -n "$id" ] && [ "$id" != undefined ] || fail "create failed: $(cat "$TMPDIR_TEST/mcp.out")"
	printf '%s\n' "$INIT" \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"command\":\"rm -rf /tmp\"}}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_execute\",\"arguments\":{\"environment_id\":\"$id\",\"argv\":[\"echo\",\"ok\"]}}}" |
		sbx mcp > "$TMPDIR_TEST/mcp.out"
	q() { node "$SBX_SRC/tests/mcp/jsonq.mjs" "$TMPDIR_TEST/mcp.out" "$1"; }
	assert_eq "$(q 'id(2).result.isError')" "true"
	assert_contains "$(q 'id(2).result.structuredContent.error.message')" "plugin 'cmd_denylist' refused: 'rm' is refused"
	assert_eq "$(q 'id(2).result.structuredContent.error.code')" "invalid_argument"
	assert_eq "$(q 'id(3).result.isError')" "false"
	sbx rm "$id"
}

t_rootless_plugins() {
	is_root || skip_ok "already running unprivileged: the other tests cover rootless mode"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	command -v setpriv > /dev/null || skip "setpriv (util-linux) is missing"
	need_plugins
	RL="$TMPDIR_TEST/rl"
	mkdir -p "$RL/state"
	cp "$SBX_BIN" "$PLUGINS/cmd_denylist.so" "$RL/"
	echo "{\"plugins\":[{\"path\":\"$RL/cmd_denylist.so\",\"config\":{\"deny\":[\"rm\"]}}]}" > "$RL/p.json"
	chmod -R a+rX "$RL"
	chown sbxtest "$RL/state"
	out=$(setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env PATH=/usr/local/bin:/usr/bin:/bin \
		SBX_ROOT="$RL/state/root" SBX_RUN="$RL/state/run" SBX_PLUGIN_PATH="$RL" RL="$RL" timeout 120 sh -c '
		id=$("$RL/sbx" create --policy "$RL/p.json" 2> /dev/null) || { echo "create failed"; exit 1; }
		"$RL/sbx" exec "$id" -- echo allowed
		"$RL/sbx" exec "$id" -- rm -f /tmp/x 2>&1
		echo "rc=$?"
		grep -E "^(Uid|NoNewPrivs):" /proc/$(pgrep -u sbxtest -x sbx-plugins | head -n 1)/status
		"$RL/sbx" rm "$id"' 2>&1)
	assert_contains "$out" "allowed"
	assert_contains "$out" "plugin 'cmd_denylist' refused: 'rm' is refused"
	assert_contains "$out" "rc=125"
	assert_contains "$out" "NoNewPrivs:	1"
	assert_contains "$out" "Uid:	$(id -u sbxtest)"
}
