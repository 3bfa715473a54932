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

# The SDK README's command, exactly, in a fresh venv of Debian's python3 with
# nothing added (pip 23.0.1, setuptools 66, no `wheel`): the build backend is
# the SDK's own (standard library only), so no package index is needed.
t_sdk_pip_install_fresh_venv() {
	need_py
	"$PY" -c 'import ensurepip' 2> /dev/null || skip "python3-venv is not installed (scripts/deps.sh test installs it)"
	local v="$TMPDIR_TEST/v"
	cp -r "$SBX_SRC/sdk/python" "$TMPDIR_TEST/src"
	"$PY" -m venv "$v" || fail "python3 -m venv failed"
	"$v/bin/python" -c 'import wheel' 2> /dev/null && fail "the fresh venv already has wheel: the test would not test the case"
	out=$("$v/bin/pip" install --no-index --no-build-isolation "$TMPDIR_TEST/src" 2>&1) || { echo "$out"; fail "the README's pip install failed in a fresh venv"; }
	out=$(cd / && SBX="$SBX_BIN" timeout 120 "$v/bin/python" -c "
import sbx, importlib.metadata as m, os
print(m.version('sbx'), os.path.isfile(os.path.join(os.path.dirname(sbx.__file__), 'py.typed')))
with sbx.Sandbox.create() as sb:
    print(sb.commands.run('echo installed').stdout, end='')
print(sbx.__file__)")
	assert_contains "$out" "0.1.0 True"
	assert_contains "$out" "installed"
	assert_contains "$out" "$v/lib/"
	# pip show reads the installed metadata; uninstall removes every file (RECORD).
	"$v/bin/pip" show sbx | grep -q '^Requires-Python\|^Name: sbx' || fail "pip show sbx"
	"$v/bin/pip" uninstall -y sbx > /dev/null || fail "pip uninstall"
	[ ! -e "$v/lib/python3.11/site-packages/sbx" ] || fail "uninstall left the package behind"
	# An editable install (PEP 660) and an sdist build work the same way.
	"$v/bin/pip" install --no-index --no-build-isolation -e "$TMPDIR_TEST/src" > /dev/null 2>&1 || fail "pip install -e failed"
	out=$(cd / && "$v/bin/python" -c 'import sbx; print(sbx.__file__)')
	assert_contains "$out" "$TMPDIR_TEST/src/sbx/__init__.py"
	(cd "$TMPDIR_TEST/src" && "$v/bin/python" -c '
import sys; sys.path.insert(0, "build_backend")
import sbx_build, tarfile, os
name = sbx_build.build_sdist(os.environ["TMPDIR_TEST"])
names = tarfile.open(os.path.join(os.environ["TMPDIR_TEST"], name)).getnames()
assert "sbx-0.1.0/PKG-INFO" in names and "sbx-0.1.0/sbx/__init__.py" in names, names
# Python 3.9 and 3.10 have no tomllib: the fallback reader must read the file the same way.
import tomllib
text = open("pyproject.toml").read()
assert sbx_build._read_project_plain(text) == tomllib.loads(text)["project"]
print(name)') > /dev/null || fail "sdist build"
}
