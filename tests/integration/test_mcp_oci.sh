# MCP snapshot_export / snapshot_import (docs/server.md "Host directories"):
# OCI layouts only into and out of host directories the operator allowed
# (sbx mcp --allow-host-dir DIR); '..', symlinks out of the allowed directory
# and paths elsewhere are refused and leave nothing behind.

# mcp_oci ALLOWED_DIR|- 'PYTHON': runs the python body with c = a client of
# `sbx mcp [--allow-host-dir ALLOWED_DIR]`; call(name, args) -> (is_error, structuredContent).
mcp_oci() {
	local w=$TMPDIR_TEST/sbx-mcp
	if [ "$1" = - ]; then
		printf '#!/bin/sh\nexec "%s" "$@"\n' "$SBX_BIN" > "$w"
	else
		printf '#!/bin/sh\nexec "%s" "$@" --allow-host-dir "%s"\n' "$SBX_BIN" "$1" > "$w"
	fi
	chmod +x "$w"
	PYTHONPATH="$SBX_SRC/tests/integration" timeout 120 python3 -c "
import json, os, sys
from mcp_client import Client
c = Client(sys.argv[1])
def check(cond, what):
    if not cond:
        print('FAIL:', what); sys.exit(1)
$2
" "$w"
}

tiny_template() {
	[ -x /bin/busybox ] || skip "SKIP: no static /bin/busybox"
	mkdir -p "$TMPDIR_TEST/ctx"
	cp /bin/busybox "$TMPDIR_TEST/ctx/"
	printf 'FROM scratch\nCOPY busybox /bin/busybox\nWORKDIR /srv\nCMD ["/bin/busybox", "pwd"]\n' > "$TMPDIR_TEST/ctx/Dockerfile"
	sbx build -t tiny "$TMPDIR_TEST/ctx" > /dev/null 2>&1
}

t_mcp_oci_export_import_allowed_dir() {
	tiny_template
	A=$TMPDIR_TEST/allowed
	mkdir -p "$A"
	mcp_oci "$A" "
e, r = c.call('snapshot_export', {'snapshot_id': 'template.tiny', 'path': '$A/img', 'tag': 'v1'})
check(not e, 'export: %s' % r)
check(r['tag'] == 'v1' and r['oci_dir'] == '$A/img' and r['manifest_digest'].startswith('sha256:'), r)
e, r = c.call('snapshot_import', {'path': '$A/img', 'tag': 'v1', 'name': 'back'})
check(not e, 'import: %s' % r)
check(r['name'] == 'back' and r['snapshot_id'].startswith('sha256:'), r)
"
	[ -f "$A/img/index.json" ] || fail "no layout written"
	if command -v skopeo > /dev/null; then
		assert_eq "$(timeout 60 skopeo inspect --config "oci:$A/img:v1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["Cmd"])')" \
			"['/bin/busybox', 'pwd']"
	fi
	# The imported template runs with the image's config.
	assert_eq "$(sbx run --template back)" "/srv"
}

t_mcp_oci_refuses_paths_outside() {
	tiny_template
	A=$TMPDIR_TEST/allowed
	O=$TMPDIR_TEST/other
	mkdir -p "$A" "$O"
	ln -s "$O" "$A/out"                # a symlink out of the allowed directory
	ln -s "$O/new" "$A/dangling"       # ...to a path that does not exist yet
	sbx export template.tiny "oci:$O/img:v1" > /dev/null # an image outside to import
	mcp_oci "$A" "
for p in ['$O/x', '$A/../other/x', '$A/out/x', '$A/out', '$A/dangling', '$A/..', '/', '$A/sub/x']:
    e, r = c.call('snapshot_export', {'snapshot_id': 'template.tiny', 'path': p})
    check(e and r['error']['code'] in ('invalid_argument', 'not_found'), 'export to %s: %s' % (p, r))
    check('allow-host-dir' in r['error']['message'], r)
for p in ['$O/img', '$A/../other/img', '$A/out/img', '$A/out']:
    e, r = c.call('snapshot_import', {'path': p, 'tag': 'v1', 'name': 'stolen'})
    check(e and r['error']['code'] == 'invalid_argument' and 'allow-host-dir' in r['error']['message'], 'import %s: %s' % (p, r))
e, r = c.call('snapshot_export', {'snapshot_id': 'template.tiny', 'path': '$A/ok'})
check(not e and r['tag'] == 'latest', r)
"
	# Nothing written outside, nothing imported.
	assert_eq "$(ls "$O")" "img"
	[ ! -e "$O/new" ] || fail "export followed a dangling symlink out"
	sbx template ls | grep -q '^stolen ' && fail "an image outside the allowed directory was imported"
	[ -f "$A/ok/index.json" ] || fail "the allowed export was not written"
	# Without --allow-host-dir every path is refused.
	mcp_oci - "
e, r = c.call('snapshot_export', {'snapshot_id': 'template.tiny', 'path': '$A/none'})
check(e and 'allow-host-dir' in r['error']['message'], r)
e, r = c.call('snapshot_import', {'path': '$A/ok'})
check(e and 'allow-host-dir' in r['error']['message'], r)
"
	[ ! -e "$A/none" ] || fail "exported without an allowed directory"
}
