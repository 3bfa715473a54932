# The Python SDK (sdk/python) against the real sbx: its unittest suite over
# stdio (an `sbx mcp` child) and over Streamable HTTP (`sbx serve` with a
# token), then installed with pip from the checkout, offline.

PY=/usr/bin/python3 # Debian's Python (3.11), what the SDK promises to run on

need_py() { [ -x "$PY" ] || skip "Debian's python3 is not installed (scripts/deps.sh test installs it)"; }

t_sdk_over_stdio() {
	need_py
	out=$(SBX="$SBX_BIN" timeout 600 "$PY" "$SBX_SRC/sdk/python/tests/test_sdk.py" 2>&1) || { echo "$out"; fail "SDK tests failed over stdio"; }
	echo "$out" | tail -3
	assert_contains "$out" "OK"
}

t_sdk_over_http() {
	need_py
	head -c 32 /dev/urandom | base64 > "$TMPDIR_TEST/token"
	chmod 600 "$TMPDIR_TEST/token"
	timeout 600 "$SBX_BIN" serve --listen 127.0.0.1:0 --token-file "$TMPDIR_TEST/token" 2> "$TMPDIR_TEST/serve.err" &
	local pid=$! url=""
	for _ in $(seq 100); do
		url=$(sed -n 's/^sbx: serving MCP on \(http[^ ]*\).*/\1/p' "$TMPDIR_TEST/serve.err")
		[ -n "$url" ] && break
		sleep 0.05
	done
	[ -n "$url" ] || { kill "$pid"; fail "sbx serve did not start: $(cat "$TMPDIR_TEST/serve.err")"; }
	set +e
	out=$(SBX_URL="$url" SBX_TOKEN="$(cat "$TMPDIR_TEST/token")" timeout 600 "$PY" "$SBX_SRC/sdk/python/tests/test_sdk.py" 2>&1)
	rc=$?
	# A wrong token is refused with a clear error, not a hang.
	bad=$(SBX_URL="$url" SBX_TOKEN=wrong timeout 60 "$PY" -c "import sys; sys.path.insert(0, '$SBX_SRC/sdk/python')
import sbx
try:
    sbx.Sandbox.create()
except sbx.SbxError as e:
    print('refused', e.code, e)" 2>&1)
	set -e
	kill "$pid"
	wait "$pid" 2> /dev/null || true
	[ $rc = 0 ] || { echo "$out"; fail "SDK tests failed over HTTP"; }
	echo "$out" | tail -3
	assert_contains "$bad" "refused"
}

t_sdk_pip_install_offline() {
	need_py
	"$PY" -m pip --version > /dev/null 2>&1 || skip "pip is not installed (apt-get install python3-pip; scripts/deps.sh test installs it)"
	local d="$TMPDIR_TEST/site"
	# No package index: the build backend (setuptools) is Debian's.
	cp -r "$SBX_SRC/sdk/python" "$TMPDIR_TEST/src"
	"$PY" -m pip install --quiet --no-index --no-build-isolation --target "$d" "$TMPDIR_TEST/src" \
		|| fail "pip install of sdk/python failed"
	[ -f "$d/sbx/py.typed" ] || fail "py.typed is not installed"
	out=$(cd / && PYTHONPATH="$d" SBX="$SBX_BIN" timeout 120 "$PY" -c "
import sbx
with sbx.Sandbox.create() as sb:
    print(sb.commands.run('echo installed').stdout, end='')
print(sbx.__file__)")
	assert_contains "$out" "installed"
	assert_contains "$out" "$d/sbx/__init__.py"
}
