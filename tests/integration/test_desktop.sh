# Desktops (docs/desktop.md): environment_screenshot and environment_input
# over `sbx mcp`, with Xvfb, openbox, scrot and xdotool running inside the
# environment (the host template shows the host's /usr; scripts/deps.sh
# test installs them, and xterm to type into); and E2B's @e2b/desktop SDK,
# unchanged, against `sbx serve`'s template desktop.

source "${SBX_SRC:-.}/tests/integration/e2b_lib.sh"

need_desktop() {
	local p
	for p in Xvfb xdotool scrot xterm python3; do
		command -v "$p" > /dev/null || skip "$p is not installed (scripts/deps.sh test installs xvfb xdotool scrot openbox xterm)"
	done
}

# desk_py ARGS < SCRIPT: a python3 script with `call(name, args)` ->
# (kind, value): ("ok", structuredContent), ("tool_error", error) or
# ("rpc_error", JSON-RPC error), and `raw(name, args)`: the whole result.
desk_py() {
	PYTHONPATH="$(dirname "${BASH_SOURCE[0]}")" python3 -c '
import json, sys
from mcp_client import Client
c = Client(sys.argv[1])
def raw(name, args):
    c.n += 1
    c._send({"jsonrpc": "2.0", "id": c.n, "method": "tools/call", "params": {"name": name, "arguments": args}})
    while True:
        m = json.loads(c.p.stdout.readline())
        if m.get("id") == c.n:
            return m
def call(name, args):
    m = raw(name, args)
    if "error" in m:
        return "rpc_error", m["error"]
    r = m["result"]
    if r.get("isError"):
        return "tool_error", r["structuredContent"]["error"]
    return "ok", r["structuredContent"]
exec(sys.stdin.read())
' "$SBX_BIN" "$@"
}

t_desktop_screenshot_mouse_keyboard() {
	need_desktop
	out=$(desk_py << 'PY'
import base64, struct, time
_, e = call("environment_create", {})
env = e["environment_id"]
m = raw("environment_screenshot", {"environment_id": env})
r = m["result"]
img = [i for i in r["content"] if i["type"] == "image"]
png = base64.b64decode(img[0]["data"])
w, h = struct.unpack(">II", png[16:24])
sc = r["structuredContent"]
print("png", png[:8] == b"\x89PNG\r\n\x1a\n", img[0]["mimeType"], w, h, sc["width"], sc["height"], "png" in sc)
# The mouse: where xdotool says it is.
k, v = call("environment_input", {"environment_id": env, "actions": [{"type": "move", "x": 123, "y": 45}]})
print("move", k, v)
_, x = call("environment_execute", {"environment_id": env, "argv": ["xdotool", "getmouselocation"], "env": {"DISPLAY": ":0"}})
print("mouse", x["stdout"].split(" screen")[0])
# The keyboard: type into an xterm, which writes the line it reads.
call("environment_execute", {"environment_id": env, "background": True, "env": {"DISPLAY": ":0"},
     "argv": ["xterm", "-geometry", "80x10+0+0", "-e", "sh", "-c", "read l; printf %s \"$l\" > /tmp/typed"]})
for _ in range(100):
    _, s = call("environment_execute", {"environment_id": env, "argv": ["xdotool", "search", "--class", "xterm"], "env": {"DISPLAY": ":0"}})
    if s["exit_code"] == 0:
        break
    time.sleep(0.1)
k, v = call("environment_input", {"environment_id": env, "actions": [
    {"type": "click", "x": 100, "y": 50}, {"type": "type", "text": "hello $(id); `x`"}, {"type": "key", "keys": "enter"}]})
print("typed-call", k, v)
for _ in range(50):
    _, t = call("environment_read_file", {"environment_id": env, "path": "/tmp/typed"})
    if "content" in t:
        break
    time.sleep(0.1)
print("typed", repr(t.get("content")))
# Hostile input: refused before anything runs, with a reason.
hostile = [
    [{"type": "key", "keys": "a;touch /tmp/pwned"}],
    [{"type": "key", "keys": "$(touch /tmp/pwned)"}],
    [{"type": "type", "text": "x" * (1 << 20)}],
    [{"type": "move", "x": -5, "y": 0}],
    [{"type": "move", "x": 1, "y": 10 ** 12}],
    [{"type": "launch", "x": 1, "y": 1}],
    [{"type": "click", "command": "touch /tmp/pwned"}],
    [{"type": "move", "x": 1, "y": 1}, {"type": "key", "keys": "-h"}],
]
for a in hostile:
    k, v = call("environment_input", {"environment_id": env, "actions": a})
    print("hostile", k in ("rpc_error", "tool_error"), (v.get("message") or "")[:100])
_, x = call("environment_execute", {"environment_id": env, "argv": ["xdotool", "getmouselocation"], "env": {"DISPLAY": ":0"}})
print("unmoved", x["stdout"].split(" screen")[0])
_, p = call("environment_execute", {"environment_id": env, "command": "ls /tmp/pwned 2>&1; true"})
print("pwned", p["stdout"].strip())
call("environment_destroy", {"environment_id": env})
PY
)
	echo "$out"
	assert_contains "$out" "png True image/png 1024 768 1024 768 False"
	assert_contains "$out" "move ok {'performed': 1, 'display': 0}"
	assert_contains "$out" "mouse x:123 y:45"
	assert_contains "$out" "typed-call ok {'performed': 3"
	assert_contains "$out" "typed 'hello \$(id); \`x\`'"
	[ "$(echo "$out" | grep -c '^hostile True ')" = 8 ] || fail "every hostile input must be refused"
	assert_contains "$out" "may hold only letters"
	assert_contains "$out" "unmoved x:100 y:50"
	assert_contains "$out" "No such file"
}

# Each environment's display is its own: the X socket lives in its /tmp,
# Xvfb listens on nothing else, and it ends with the environment.
t_desktop_isolated_and_gone_with_env() {
	need_desktop
	out=$(desk_py << 'PY'
_, a = call("environment_create", {})
_, b = call("environment_create", {})
A, B = a["environment_id"], b["environment_id"]
k, s = call("environment_screenshot", {"environment_id": A, "display": 37})
print("shot", k, s.get("width"))
_, x = call("environment_execute", {"environment_id": A, "command": "ls /tmp/.X11-unix; cat /proc/net/unix | grep -c '@/tmp/.X11' ; true"})
print("in-a", x["stdout"].split())
_, x = call("environment_execute", {"environment_id": B, "argv": ["xdotool", "getdisplaygeometry"], "env": {"DISPLAY": ":37"}})
print("from-b", x["exit_code"] != 0)
_, x = call("environment_execute", {"environment_id": B, "command": "ls /tmp/.X11-unix 2>&1; true"})
print("b-tmp", x["stdout"].strip())
call("environment_destroy", {"environment_id": A})
call("environment_destroy", {"environment_id": B})
k, v = call("environment_screenshot", {"environment_id": A})
print("gone", k, v.get("code"))
PY
)
	echo "$out"
	assert_contains "$out" "shot ok 1024"
	assert_contains "$out" "in-a ['X37', '0']"
	assert_contains "$out" "from-b True"
	assert_contains "$out" "No such file"
	assert_contains "$out" "gone tool_error not_found"
	[ ! -e /tmp/.X11-unix/X37 ] || fail "the host has /tmp/.X11-unix/X37"
	eventually 10 host_lacks_process "Xvfb :37 " || fail "Xvfb :37 outlived its environment"
}

# Without Xvfb in the environment the call says what is missing.
t_desktop_refused_without_xvfb() {
	need_desktop
	[ -x /bin/busybox ] || skip "no /bin/busybox (scripts/deps.sh test installs busybox-static)"
	mkdir -p "$TMPDIR_TEST/rootfs/bin" "$TMPDIR_TEST/rootfs/tmp"
	cp /bin/busybox "$TMPDIR_TEST/rootfs/bin/"
	ln -s busybox "$TMPDIR_TEST/rootfs/bin/sh"
	id=$(sbx create --template "dir:$TMPDIR_TEST/rootfs")
	out=$(desk_py "$id" << 'PY'
k, v = call("environment_screenshot", {"environment_id": sys.argv[2]})
print("refused", k, v.get("code"), v.get("message"))
PY
)
	sbx rm "$id" > /dev/null
	echo "$out"
	assert_contains "$out" "refused tool_error unavailable"
	assert_contains "$out" "apt-get install xvfb xdotool scrot"
}

# @e2b/desktop 2.4.0 (tests/e2b/desktop.mjs): Sandbox.create() of template
# desktop starts Xvfb and XFCE inside the sandbox; then a screenshot of the
# screen's size, the cursor where moveMouse put it, and text typed into an
# xterm through leftClick, write and press.
t_desktop_e2b_sdk() {
	need_desktop
	local p
	for p in startxfce4 xfwm4 xfdesktop xdpyinfo xrandr; do
		command -v "$p" > /dev/null || skip "$p is not installed (scripts/deps.sh test installs xfce4-session xfwm4 xfdesktop4 x11-utils x11-xserver-utils)"
	done
	need_e2b_sdk @e2b/desktop
	# The live view needs x11vnc, noVNC (Debian's novnc) and netstat (the SDK's port check).
	local stream=1
	command -v x11vnc > /dev/null && command -v netstat > /dev/null && [ -f /usr/share/novnc/vnc.html ] || stream=0
	e2b_start
	out=$(SBX_DESKTOP_STREAM=$stream E2B_NODE_TIMEOUT=150 e2b_node desktop.mjs 2>&1) || fail "desktop.mjs: $out"
	echo "$out"
	assert_contains "$out" "desktop ok"
	[ $stream = 0 ] || assert_contains "$out" "stream ok"
	e2b_alive
}
