# OCI interop: import an image built here (no network), run it, export a
# snapshot, check it with umoci and skopeo, round-trip the layer digests, and
# refuse a corpus of hostile image layouts.

# ociimg.py: builds OCI image layouts (gzip/zstd/plain layers) from a directory
# or from hand-crafted tar entries.
oci_py() {
	cat > "$TMPDIR_TEST/ociimg.py" <<'PY'
import gzip, hashlib, io, json, os, subprocess, tarfile

def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()

def init(layout):
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')

def put(layout, data):
    d = sha(data)
    with open(os.path.join(layout, "blobs", "sha256", d[7:]), "wb") as f:
        f.write(data)
    return d

def tar_dir(root):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for dp, dn, fn in os.walk(root):
            dn.sort()
            for name in sorted(dn + fn):
                p = os.path.join(dp, name)
                ti = t.gettarinfo(p, os.path.relpath(p, root))
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                if ti.isreg():
                    with open(p, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)
    return buf.getvalue()

def tar_entries(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        for e in entries:
            ti = tarfile.TarInfo(e["name"])
            ty = e.get("type", "file")
            ti.mode = e.get("mode", 0o755 if ty == "dir" else 0o644)
            data = e.get("data", b"")
            if ty == "dir":
                ti.type = tarfile.DIRTYPE
            elif ty == "sym":
                ti.type = tarfile.SYMTYPE; ti.linkname = e["link"]
            elif ty == "hard":
                ti.type = tarfile.LNKTYPE; ti.linkname = e["link"]
            elif ty == "chr":
                ti.type = tarfile.CHRTYPE; ti.devmajor, ti.devminor = e.get("dev", (1, 3))
            elif ty == "blk":
                ti.type = tarfile.BLKTYPE; ti.devmajor, ti.devminor = e.get("dev", (8, 0))
            if ty == "file":
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            else:
                t.addfile(ti)
    return buf.getvalue()

def acl_value(uid, version=2):
    """user::rw- user:UID:rwx group::r-- mask::rwx other::r-- as a pax value
    (the kernel's binary xattr format, bytes >= 0x80 as surrogates)."""
    import struct
    b = struct.pack("<I", version)
    for tag, perm, i in ((1, 6, 0xFFFFFFFF), (2, 7, uid), (4, 4, 0xFFFFFFFF), (0x10, 7, 0xFFFFFFFF), (0x20, 4, 0xFFFFFFFF)):
        b += struct.pack("<HHI", tag, perm, i)
    return b.decode("utf-8", "surrogateescape")

def acl_ids(tar_bytes, path, key="SCHILY.xattr.system.posix_acl_access"):
    """The named user ids of path's ACL in a tar, or None."""
    import struct
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*") as t:
        for m in t:
            if m.name.rstrip("/") == path and key in m.pax_headers:
                v = m.pax_headers[key].encode("utf-8", "surrogateescape")
                return [struct.unpack("<I", v[o + 4:o + 8])[0] for o in range(4, len(v), 8) if v[o] == 2]
    return None

def compress(raw, comp):
    if comp == "gzip":
        return gzip.compress(raw, mtime=0), "application/vnd.oci.image.layer.v1.tar+gzip"
    if comp == "zstd":
        out = subprocess.run(["zstd", "-q", "-c"], input=raw, stdout=subprocess.PIPE, check=True).stdout
        return out, "application/vnd.oci.image.layer.v1.tar+zstd"
    if comp == "docker":
        return gzip.compress(raw, mtime=0), "application/vnd.docker.image.rootfs.diff.tar.gzip"
    return raw, "application/vnd.oci.image.layer.v1.tar"

def image(layout, tag, tars, comp="gzip", env=None, cwd="/", diff_ids=None, blobs=None, extra_layers=0,
          layer_digest=None, user=None):
    """blobs: pre-made compressed blobs (list of (bytes, mediaType)) instead of compressing tars."""
    init(layout)
    layers, ids = [], []
    for i, raw in enumerate(tars):
        ids.append(sha(raw))
        blob, mt = blobs[i] if blobs else compress(raw, comp)
        layers.append({"mediaType": mt, "digest": put(layout, blob), "size": len(blob)})
    for i in range(extra_layers):
        layers.append(dict(layers[-1])); ids.append(ids[-1])
    if layer_digest:
        layers[0]["digest"] = layer_digest
    cfg = {"architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
           "os": "linux", "config": {"Env": env or ["PATH=/bin", "IMG=1"], "WorkingDir": cwd},
           "rootfs": {"type": "layers", "diff_ids": diff_ids if diff_ids is not None else ids}}
    if user is not None:
        cfg["config"]["User"] = user
    cb = json.dumps(cfg).encode()
    man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(layout, cb), "size": len(cb)},
           "layers": layers}
    mb = json.dumps(man).encode()
    md = put(layout, mb)
    idx = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": len(mb),
         "annotations": {"org.opencontainers.image.ref.name": tag}}]}
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(idx, f)
    return md
PY
}

# A busybox rootfs: /bin/busybox (static) and a few applet links.
busybox_rootfs() {
	local r=$1 bb
	bb=$(command -v busybox || true)
	[ -n "$bb" ] && file -L "$bb" 2>/dev/null | grep -q static || bb=/bin/busybox
	[ -x "$bb" ] || skip "busybox-static is not installed"
	mkdir -p "$r"/bin "$r"/root "$r"/tmp "$r"/proc "$r"/dev "$r"/sys "$r"/etc
	cp "$bb" "$r/bin/busybox"
	for a in sh echo cat ls test; do ln -s busybox "$r/bin/$a"; done
	echo "root:x:0:0:root:/root:/bin/sh" > "$r/etc/passwd"
}

# python3 -c with ociimg importable.
py() { PYTHONPATH="$TMPDIR_TEST" python3 -c "$@"; }

make_busybox_image() { # LAYOUT TAG [COMP]
	oci_py
	busybox_rootfs "$TMPDIR_TEST/rootfs"
	py "import ociimg; ociimg.image('$1', '$2', [ociimg.tar_dir('$TMPDIR_TEST/rootfs')], comp='${3:-gzip}')"
}

template_refs() { ls "$SBX_ROOT/refs/labels" 2>/dev/null | grep '^template\.' || true; }

t_import_run_export_roundtrip() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	local L=$TMPDIR_TEST/img
	make_busybox_image "$L" bb
	out=$(sbx import "oci:$L:bb")
	assert_contains "$out" "bb sha256:"
	sbx template ls | grep -q '^bb ' || fail "template ls does not list bb"
	ID=$(sbx create --template bb)
	assert_eq "$(sbx exec "$ID" -- busybox echo hi)" "hi"
	# Exactly the image's layers: no host tree.
	sbx exec "$ID" -- test -e /usr/bin && fail "the host's /usr is visible in an image environment"
	assert_eq "$(sbx exec "$ID" -- sh -c 'echo $IMG')" "1" "image Env"
	sbx exec "$ID" -- sh -c 'echo exported-data > /root/file'
	SNAP=$(sbx snapshot "$ID")
	sbx rm "$ID" > /dev/null
	local E=$TMPDIR_TEST/exp
	sbx export "$SNAP" "oci:$E:snap" > /dev/null
	[ -f "$E/oci-layout" ] && [ -f "$E/index.json" ] || fail "no image layout written"
	if command -v umoci > /dev/null; then
		timeout 60 umoci unpack --rootless --image "$E:snap" "$TMPDIR_TEST/bundle" > /dev/null
		assert_eq "$(cat "$TMPDIR_TEST/bundle/rootfs/root/file")" "exported-data" "umoci unpack"
		[ -x "$TMPDIR_TEST/bundle/rootfs/bin/busybox" ] || fail "umoci: busybox missing"
	else
		echo "umoci not installed: unpack not checked"
	fi
	if command -v skopeo > /dev/null; then
		timeout 60 skopeo copy "oci:$E:snap" "docker-archive:$TMPDIR_TEST/x.tar" > /dev/null
		[ -s "$TMPDIR_TEST/x.tar" ] || fail "skopeo wrote nothing"
	else
		echo "skopeo not installed: copy not checked"
	fi
	# Round trip: the re-imported image has exactly the snapshot's layers.
	want=$(sbx snapshots --json | python3 -c "import json,sys; print(' '.join([s for s in json.load(sys.stdin)['snapshots'] if s['snapshot_id']=='$SNAP'][0]['layers']))")
	got=$(sbx import --json "oci:$E:snap" --name rt | python3 -c "import json,sys; print(' '.join(json.load(sys.stdin)['layers']))")
	assert_eq "$got" "$want" "round-trip layer digests"
	ID2=$(sbx create --template rt)
	assert_eq "$(sbx exec "$ID2" -- cat /root/file)" "exported-data"
	sbx rm "$ID2" > /dev/null
	timeout 60 "$SBX_BIN" fsck > /dev/null || fail "fsck found problems after import/export"
	command -v umoci > /dev/null && command -v skopeo > /dev/null || skip "umoci/skopeo missing: partly checked"
}

t_template_oci_spec_and_zstd() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	command -v zstd > /dev/null || skip "zstd is not installed"
	local L=$TMPDIR_TEST/zimg
	make_busybox_image "$L" z zstd
	ID=$(sbx create --template "oci:$L:z")
	assert_eq "$(sbx exec "$ID" -- busybox echo zstd-ok)" "zstd-ok"
	sbx rm "$ID" > /dev/null
	[ "$(template_refs)" = "template.z" ] || fail "oci: template did not register 'z': $(template_refs)"
	# Plain tar and docker media types too.
	local P=$TMPDIR_TEST/pimg D=$TMPDIR_TEST/dimg
	py "import ociimg; ociimg.image('$P', 'p', [ociimg.tar_dir('$TMPDIR_TEST/rootfs')], comp='none')"
	py "import ociimg; ociimg.image('$D', 'd', [ociimg.tar_dir('$TMPDIR_TEST/rootfs')], comp='docker')"
	sbx import "oci:$P:p" > /dev/null
	sbx import "oci:$D" --name dock > /dev/null
	sbx template ls | grep -q '^dock ' || fail "import --name dock"
}

t_template_add_dir_and_ls() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	oci_py
	busybox_rootfs "$TMPDIR_TEST/rootfs"
	sbx template add mydir "dir:$TMPDIR_TEST/rootfs" > /dev/null
	sbx template ls --json | grep -q '"mydir"' || fail "template ls --json"
	ID=$(sbx create --template mydir)
	assert_eq "$(sbx exec "$ID" -- busybox echo dir-ok)" "dir-ok"
	sbx exec "$ID" -- sh -c 'echo x > /root/y'
	SNAP=$(sbx snapshot "$ID")
	sbx rm "$ID" > /dev/null
	# A dir: template's tree is exported as the bottom layer.
	sbx export "$SNAP" "oci:$TMPDIR_TEST/dexp" > /dev/null
	sbx import "oci:$TMPDIR_TEST/dexp:latest" --name again > /dev/null
	ID=$(sbx create --template again)
	assert_eq "$(sbx exec "$ID" -- cat /root/y)" "x"
	sbx rm "$ID" > /dev/null
	expect_status 125 sbx create --template nosuch
	assert_contains "$ERR" "unknown template 'nosuch'"
}

# As root a host-template snapshot exports with its base captured as a
# layer (t_host_template_push_pull_fork in test_registry.sh); unprivileged,
# the capture (overlay mounts, the host's owners) is refused in one line.
t_export_host_snapshot_needs_root() {
	is_root || skip_ok "needs root to run sbx as sbxtest"
	id sbxtest > /dev/null 2>&1 || skip "user sbxtest is missing (scripts/test.sh creates it)"
	U="$TMPDIR_TEST/u"
	mkdir -p "$U/bin"
	cp "$SBX_BIN" "$U/bin/sbx"
	chmod -R a+rX "$U"
	chown sbxtest "$U"
	chmod 755 "$TMPDIR_TEST"
	user_sbx() { setpriv --reuid sbxtest --regid sbxtest --init-groups --reset-env env PATH=/usr/bin:/bin \
		HOME=/home/sbxtest SBX_ROOT="$U/root" SBX_RUN="$U/run" timeout 60 "$U/bin/sbx" "$@"; }
	ID=$(user_sbx create)
	SNAP=$(user_sbx snapshot "$ID")
	user_sbx rm "$ID" > /dev/null
	expect_status 125 user_sbx export "$SNAP" "oci:$U/h"
	assert_contains "$ERR" "capturing the host template's base needs root"
	[ "$(echo "$ERR" | wc -l)" = 1 ] || fail "error is not one line: $ERR"
}

# Each hostile layout: exit 125, one "sbx: " line, nothing outside SBX_ROOT
# (the sentinel directory stays empty), no template ref.
hostile() { # NAME PYTHON-BODY (L = layout path, S = sentinel dir, ociimg imported)
	local name=$1 body=$2 L=$TMPDIR_TEST/h-$1 S=$TMPDIR_TEST/sentinel
	mkdir -p "$S"
	py "import ociimg, os, json, gzip, tarfile, io
L = '$L'; S = '$S'
$body" || fail "$name: building the layout failed"
	expect_status 125 sbx import "oci:$L:t" --name "h$name"
	[ "$(echo "$ERR" | wc -l)" = 1 ] || fail "$name: error is not one line: $ERR"
	[[ "$ERR" == "sbx: "* ]] || fail "$name: error does not start with 'sbx: ': $ERR"
	[ -z "$(ls -A "$S")" ] || fail "$name: something was written outside the store: $(ls -A "$S")"
	[ -z "$(template_refs)" ] || fail "$name: a template ref was left: $(template_refs)"
	echo "$name: $ERR"
	LAST_ERR=$ERR
}

t_hostile_images() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	oci_py
	local T="ociimg.tar_entries"
	hostile dotdot "ociimg.image(L, 't', [$T([{'name': '../../sentinel/evil', 'data': b'x'}])])"
	assert_contains "$LAST_ERR" ".."
	hostile absolute "ociimg.image(L, 't', [$T([{'name': S + '/evil', 'data': b'x'}])])"
	hostile symlink_write "ociimg.image(L, 't', [$T([{'name': 'link', 'type': 'sym', 'link': S}, {'name': 'link/evil', 'data': b'x'}])])"
	# A symlink in one layer and a write through it in the next: each layer is
	# extracted on its own, so the write makes a directory 'link' in the upper
	# layer (harmless, as in overlayfs); nothing reaches the target.
	py "import ociimg
L = '$TMPDIR_TEST/h-symlink_layers'
ociimg.image(L, 't', [$T([{'name': 'link', 'type': 'sym', 'link': '$TMPDIR_TEST/sentinel'}]), $T([{'name': 'link/evil', 'data': b'x'}])])"
	sbx import "oci:$TMPDIR_TEST/h-symlink_layers:t" --name twolayers > /dev/null
	[ -z "$(ls -A "$TMPDIR_TEST/sentinel")" ] || fail "symlink_layers: wrote through the symlink"
	sbx rm "$(sbx create --template twolayers)" > /dev/null
	[ -z "$(ls -A "$TMPDIR_TEST/sentinel")" ] || fail "symlink_layers: wrote through the symlink at mount"
	rm -f "$SBX_ROOT/refs/labels/template.twolayers"
	hostile hardlink_out "ociimg.image(L, 't', [$T([{'name': 'h', 'type': 'hard', 'link': '/etc/passwd'}])])"
	hostile hardlink_dotdot "ociimg.image(L, 't', [$T([{'name': 'h', 'type': 'hard', 'link': '../../../etc/passwd'}])])"
	hostile chardev "ociimg.image(L, 't', [$T([{'name': 'null2', 'type': 'chr', 'dev': (1, 3)}])])"
	hostile blockdev "ociimg.image(L, 't', [$T([{'name': 'sda', 'type': 'blk'}])])"
	# A declared size far beyond the data (and the limit): patch the size field and checksum.
	hostile huge_size "
raw = bytearray($T([{'name': 'big', 'data': b'x'}]))
raw[124:136] = b'%011o\0' % (0o77777777777)
raw[148:156] = b'        '
raw[148:156] = b'%06o\0 ' % sum(raw[0:512])
ociimg.image(L, 't', [bytes(raw)])"
	hostile truncated_tar "
raw = $T([{'name': 'f', 'data': b'y' * 5000}])
ociimg.image(L, 't', [raw[:1500]])"
	hostile corrupt_gzip "
raw = $T([{'name': 'f', 'data': os.urandom(20000)}])
g = bytearray(gzip.compress(raw, mtime=0)); g[200] ^= 0xff; g[201] ^= 0xff
ociimg.image(L, 't', [raw], blobs=[(bytes(g), 'application/vnd.oci.image.layer.v1.tar+gzip')])"
	hostile truncated_gzip "
raw = $T([{'name': 'f', 'data': os.urandom(20000)}])
g = gzip.compress(raw, mtime=0)
ociimg.image(L, 't', [raw], blobs=[(g[:len(g) // 2], 'application/vnd.oci.image.layer.v1.tar+gzip')])"
	hostile digest_mismatch "
ociimg.image(L, 't', [$T([{'name': 'f', 'data': b'ok'}])], comp='none')
m = json.load(open(L + '/index.json'))['manifests'][0]['digest'][7:]
man = json.load(open(L + '/blobs/sha256/' + m))
p = L + '/blobs/sha256/' + man['layers'][0]['digest'][7:]
b = bytearray(open(p, 'rb').read()); b[600] ^= 1; open(p, 'wb').write(b)"
	assert_contains "$LAST_ERR" "is corrupt"
	hostile diffid_mismatch "ociimg.image(L, 't', [$T([{'name': 'f', 'data': b'ok'}])], diff_ids=['sha256:' + '0' * 64])"
	assert_contains "$LAST_ERR" "diff_id"
	hostile outside_blobs "ociimg.image(L, 't', [$T([{'name': 'f'}])], layer_digest='sha256:../../../../etc/passwd')"
	assert_contains "$LAST_ERR" "not sha256"
	hostile bad_hex "ociimg.image(L, 't', [$T([{'name': 'f'}])], layer_digest='sha256:' + 'A' * 64)"
	hostile symlinked_blobs "
ociimg.image(L + '-real', 't', [$T([{'name': 'f'}])])
os.makedirs(L); os.symlink(L + '-real/blobs', L + '/blobs')
for f in ('oci-layout', 'index.json'): open(L + '/' + f, 'w').write(open(L + '-real/' + f).read())"
	hostile symlinked_index "
ociimg.image(L, 't', [$T([{'name': 'f'}])])
os.rename(L + '/index.json', L + '/real-index.json'); os.symlink('real-index.json', L + '/index.json')"
	hostile symlinked_blob "
ociimg.image(L, 't', [$T([{'name': 'f', 'data': b'z'}])], comp='none')
m = json.load(open(L + '/index.json'))['manifests'][0]['digest'][7:]
man = json.load(open(L + '/blobs/sha256/' + m))
p = L + '/blobs/sha256/' + man['layers'][0]['digest'][7:]
os.rename(p, L + '/moved'); os.symlink(L + '/moved', p)"
	hostile too_many_layers "ociimg.image(L, 't', [$T([{'name': 'f'}])], extra_layers=500)"
	assert_contains "$LAST_ERR" "max 500"
	hostile huge_index "
ociimg.image(L, 't', [$T([{'name': 'f'}])])
open(L + '/index.json', 'w').write(' ' * (17 << 20) + '{}')"
	hostile whiteout_escape "ociimg.image(L, 't', [$T([{'name': '.wh...'}])])"
	# POSIX ACLs in the kernel's binary xattr format (acl.h): a wrong version,
	# and a default ACL on a file, are refused.
	hostile acl_malformed "
ti = tarfile.TarInfo('f'); ti.pax_headers = {'SCHILY.xattr.system.posix_acl_access': ociimg.acl_value(1234, version=3)}
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t: t.addfile(ti, io.BytesIO(b''))
ociimg.image(L, 't', [buf.getvalue()])"
	assert_contains "$LAST_ERR" "malformed system.posix_acl_access"
	hostile acl_default_on_file "
ti = tarfile.TarInfo('f'); ti.pax_headers = {'SCHILY.xattr.system.posix_acl_default': ociimg.acl_value(1234)}
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t: t.addfile(ti, io.BytesIO(b''))
ociimg.image(L, 't', [buf.getvalue()])"
	assert_contains "$LAST_ERR" "a default ACL on a non-directory"
	hostile overlay_xattr "
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo('d'); ti.type = tarfile.DIRTYPE; ti.pax_headers = {'SCHILY.xattr.trusted.overlay.redirect': '/etc'}
    t.addfile(ti)
ociimg.image(L, 't', [buf.getvalue()])"
	hostile no_tag "ociimg.image(L, 'other', [$T([{'name': 'f'}])])"
	assert_contains "$LAST_ERR" "no image tagged 't'"
	# Owners far outside the id range, a directory replaced by a symlink and
	# written through (duplicate entries), '..' through a symlink to '.',
	# whiteouts and opaque markers through a symlink.
	hostile huge_uid "
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t:
    ti = tarfile.TarInfo('f'); ti.uid = 4294967295; ti.gid = 4294967294; ti.size = 1; t.addfile(ti, io.BytesIO(b'x'))
ociimg.image(L, 't', [buf.getvalue()])"
	assert_contains "$LAST_ERR" "outside the id range"
	hostile dup_dir_then_symlink "ociimg.image(L, 't', [$T([{'name': 'd', 'type': 'dir'}, {'name': 'd', 'type': 'sym', 'link': S}, {'name': 'd/evil', 'data': b'x'}])])"
	hostile dotdot_via_self_link "ociimg.image(L, 't', [$T([{'name': 'x', 'type': 'sym', 'link': '.'}, {'name': 'x/x/x/../../../evil', 'data': b'x'}])])"
	hostile whiteout_via_symlink "ociimg.image(L, 't', [$T([{'name': 'l', 'type': 'sym', 'link': S}, {'name': 'l/.wh.x'}])])"
	hostile opaque_via_symlink "ociimg.image(L, 't', [$T([{'name': 'l', 'type': 'sym', 'link': S}, {'name': 'l/.wh..wh..opq'}])])"
	# A User no create could honour must not quietly become root: uid -1
	# (setresuid's "no change"), a group name that is a path.
	hostile user_minus_one "ociimg.image(L, 't', [$T([{'name': 'f'}])], user='4294967295')"
	assert_contains "$LAST_ERR" "User"
	hostile user_bad_group "ociimg.image(L, 't', [$T([{'name': 'f'}])], user='app:../../etc')"
	# Nothing was committed as a template, and the store is consistent.
	timeout 60 "$SBX_BIN" fsck > /dev/null || fail "fsck found problems after the hostile imports"
}

# Import keeps every mode bit a layer has: setuid/setgid files, setgid and
# sticky directories (issue 13.8: a 2775 directory imported as 775). What
# makes setuid files safe is the mount, not the bits (docs/store.md "Mode
# bits"): the environment's trees are idmapped and nosuid.
t_import_keeps_mode_bits() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	make_busybox_image "$TMPDIR_TEST/bb" base
	local L=$TMPDIR_TEST/modes
	py "import ociimg; ociimg.image('$L', 't', [ociimg.tar_dir('$TMPDIR_TEST/rootfs'), ociimg.tar_entries([{'name': 'srv', 'type': 'dir', 'mode': 0o2775}, {'name': 'srv/shared', 'type': 'dir', 'mode': 0o3770}, {'name': 'scratch', 'type': 'dir', 'mode': 0o1777}, {'name': 'bin/su', 'data': b'#!', 'mode': 0o6755}, {'name': 'bin/sg', 'data': b'#!', 'mode': 0o2711}])])"
	sbx import "oci:$L:t" --name modes > /dev/null
	ID=$(sbx create --template modes)
	got=$(sbx exec "$ID" -- ls -ld /srv /srv/shared /scratch /bin/su /bin/sg | awk '{print $1, $NF}')
	want="-rwx--s--x /bin/sg
-rwsr-sr-x /bin/su
drwxrwxrwt /scratch
drwxrwsr-x /srv
drwxrws--T /srv/shared"
	[ "$got" = "$want" ] || fail "imported modes: got
$got
want
$want"
	# A snapshot of it and a fork from that keep them too.
	snap=$(sbx snapshot "$ID")
	F=$(sbx fork "$snap")
	got2=$(sbx exec "$F" -- ls -ld /srv /srv/shared /scratch /bin/su /bin/sg | awk '{print $1, $NF}')
	[ "$got2" = "$want" ] || fail "modes after snapshot and fork: $got2"
	sbx rm "$ID" "$F" > /dev/null
}

# POSIX ACLs (SCHILY.xattr.system.posix_acl_*, the kernel's binary format,
# the environment's ids) survive import, a snapshot of the imported
# template, and export: the exported layer holds the same ids, the store's
# tree the host-side ones (0-based as root: the same).
t_import_export_keeps_acls() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	is_root || skip_ok "rootless: only the store owner's id is mapped, an ACL naming uid 1234 is dropped"
	command -v getfacl > /dev/null || skip "getfacl (acl) is not installed"
	make_busybox_image "$TMPDIR_TEST/bb" base
	local L=$TMPDIR_TEST/acls E=$TMPDIR_TEST/acls-out
	py "import ociimg, io, tarfile
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t:
    d = tarfile.TarInfo('shared'); d.type = tarfile.DIRTYPE; d.mode = 0o775
    d.pax_headers = {'SCHILY.xattr.system.posix_acl_default': ociimg.acl_value(4321), 'SCHILY.xattr.system.posix_acl_access': ociimg.acl_value(4321)}
    t.addfile(d)
    f = tarfile.TarInfo('shared/f'); f.mode = 0o674; f.size = 2
    f.pax_headers = {'SCHILY.xattr.system.posix_acl_access': ociimg.acl_value(1234)}
    t.addfile(f, io.BytesIO(b'hi'))
ociimg.image('$L', 't', [ociimg.tar_dir('$TMPDIR_TEST/rootfs'), buf.getvalue()])"
	sbx import "oci:$L:t" --name acls > /dev/null
	local tree
	tree=$(ls -d "$SBX_ROOT"/layers/sha256/*/shared | head -1)
	[ -n "$tree" ] || fail "no layer holds /shared"
	assert_contains "$(getfacl -n "$tree/f" 2> /dev/null)" "user:1234:rwx"
	assert_contains "$(getfacl -n "$tree" 2> /dev/null)" "default:user:4321:rwx"
	ID=$(sbx create --template acls)
	sbx exec "$ID" -- sh -c 'echo new > /shared/g'
	s=$(sbx snapshot "$ID")
	sbx export "$s" "oci:$E:v1" > /dev/null
	py "import ociimg, json, gzip, sys
E = '$E'
idx = json.load(open(E + '/index.json'))
man = json.load(open(E + '/blobs/sha256/' + idx['manifests'][0]['digest'][7:]))
got = {}
for l in man['layers']:
    raw = gzip.decompress(open(E + '/blobs/sha256/' + l['digest'][7:], 'rb').read())
    for p, k in (('shared/f', 'access'), ('shared', 'default'), ('shared/g', 'access')):
        ids = ociimg.acl_ids(raw, p, 'SCHILY.xattr.system.posix_acl_' + k)
        if ids is not None: got[p + ' ' + k] = ids
want = {'shared/f access': [1234], 'shared default': [4321], 'shared/g access': [4321]}
sys.exit(0 if got == want else 'exported ACLs: %r, want %r' % (got, want))" || fail "the exported layers' ACLs differ"
	sbx rm "$ID" > /dev/null
}

# A snapshot may hold any name (issue 13.7); only export to OCI, whose format
# reserves ".wh." for whiteouts, refuses one, naming the file.
t_export_refuses_wh_names() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	make_busybox_image "$TMPDIR_TEST/bb" base
	sbx import "oci:$TMPDIR_TEST/bb:base" --name bb > /dev/null
	ID=$(sbx create --template bb)
	sbx exec "$ID" -- sh -c 'echo x > /root/.wh.userfile'
	s1=$(sbx snapshot "$ID")
	expect_status 125 sbx export "$s1" "oci:$TMPDIR_TEST/out1"
	assert_contains "$ERR" "'/root/.wh.userfile': names starting with '.wh.' cannot be stored in an OCI layer"
	# A fork of the snapshot has the file; without it (a full snapshot: a
	# delta would sit on the layer that holds it) the environment exports.
	F=$(sbx fork "$s1")
	assert_eq "$(sbx exec "$F" -- cat /root/.wh.userfile)" "x"
	sbx exec "$ID" -- sh -c 'rm /root/.wh.userfile; echo y > /root/plain'
	s2=$(SBX_SNAPSHOT_FULL=1 sbx snapshot "$ID")
	sbx export "$s2" "oci:$TMPDIR_TEST/out2" > /dev/null || fail "export without .wh. names: $ERR"
	sbx rm "$ID" "$F" > /dev/null
}

# A deletion is a whiteout `.wh.<name>` in an OCI layer, a name of at most
# 255 bytes: the deletion of a 251-byte name exports (and imports back as a
# deletion), that of a longer one is refused, naming the file; the store's
# own layers keep both (docs/store.md "Names").
t_export_long_deletions() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	local a b s1 s2 s3 F
	make_busybox_image "$TMPDIR_TEST/bb" base # (busybox_rootfs sets a)
	a=$(printf 'a%.0s' {1..252}) b=$(printf 'b%.0s' {1..251})
	sbx import "oci:$TMPDIR_TEST/bb:base" --name bb > /dev/null
	ID=$(sbx create --template bb)
	sbx exec "$ID" -- busybox mkdir /root/w
	sbx exec "$ID" -- busybox touch "/root/w/$a" "/root/w/$b" /root/w/keep
	s1=$(sbx snapshot "$ID")
	sbx export "$s1" "oci:$TMPDIR_TEST/out1" > /dev/null || fail "export of long names"
	sbx exec "$ID" -- busybox rm "/root/w/$b"
	s2=$(sbx snapshot "$ID")
	sbx export "$s2" "oci:$TMPDIR_TEST/out2" > /dev/null || fail "export of a 251-byte deletion"
	sbx import "oci:$TMPDIR_TEST/out2:latest" --name back > /dev/null
	F=$(sbx create --template back)
	assert_eq "$(sbx exec "$F" -- busybox ls /root/w)" "$(printf '%s\nkeep' "$a")" "imported back"
	sbx exec "$ID" -- busybox rm "/root/w/$a"
	s3=$(sbx snapshot "$ID")
	expect_status 125 sbx export "$s3" "oci:$TMPDIR_TEST/out3"
	assert_contains "$ERR" "the deletion of '/root/w/$a': a name over 251 bytes cannot be deleted in an OCI layer"
	[ ! -e "$TMPDIR_TEST/out3/index.json" ] || fail "a refused export wrote index.json"
	# The store itself keeps the deletion.
	assert_eq "$(sbx exec "$ID" -- busybox ls /root/w)" "keep"
	sbx rm "$ID" "$F" > /dev/null
	F=$(sbx fork "$s3")
	assert_eq "$(sbx exec "$F" -- busybox ls /root/w)" "keep" "fork"
	sbx rm "$F" > /dev/null
}

# Long operations show progress on a terminal (bytes, layers, rate), and
# nothing extra when stderr is not a terminal or with --json.
t_progress_on_a_terminal_only() {
	command -v script > /dev/null || skip "script (bsdutils) is not installed"
	busybox_rootfs "$TMPDIR_TEST/rootfs"
	ln -s busybox "$TMPDIR_TEST/rootfs/bin/head"
	ID=$(sbx create --template dir:"$TMPDIR_TEST/rootfs")
	sbx exec "$ID" -- sh -c 'head -c 60000000 /dev/urandom > /root/big'
	sbx snapshot "$ID" --label prog > /dev/null
	script -qec "$SBX_BIN export prog oci:$TMPDIR_TEST/img1" /dev/null > "$TMPDIR_TEST/tty.out"
	out=$(tr '\r' '\n' < "$TMPDIR_TEST/tty.out")
	assert_contains "$out" "export: "
	assert_contains "$out" "MiB of "
	assert_contains "$out" "/s"
	# not a terminal: only the result
	sbx export prog oci:"$TMPDIR_TEST/img2" > "$TMPDIR_TEST/plain.out" 2> "$TMPDIR_TEST/plain.err"
	[ ! -s "$TMPDIR_TEST/plain.err" ] || fail "progress written to a non-terminal: $(cat "$TMPDIR_TEST/plain.err")"
	# --json on a terminal: no progress either
	script -qec "$SBX_BIN import --json oci:$TMPDIR_TEST/img1 --name prog2" /dev/null > "$TMPDIR_TEST/tty2.out"
	grep -q "import: " "$TMPDIR_TEST/tty2.out" && fail "progress with --json"
	python3 -c 'import json,sys; json.loads(open(sys.argv[1]).read())' "$TMPDIR_TEST/tty2.out" || fail "--json output is not clean JSON"
	sbx rm "$ID" > /dev/null
}

# A zip-bomb-like layer: 512 MiB of zeros that zstd packs into kilobytes.
# Within the import budget it is imported, and costs the store no disk
# (zero blocks become holes), nor does the image's content change.
t_import_zero_bomb_costs_no_disk() {
	command -v python3 > /dev/null || skip "python3 is not installed"
	command -v zstd > /dev/null || skip "zstd is not installed"
	oci_py
	py "
import ociimg, tarfile, io, subprocess
class Zeros(io.RawIOBase):
    def __init__(s, n): s.n = n
    def readable(s): return True
    def readinto(s, b):
        k = min(len(b), s.n); b[:k] = bytes(k); s.n -= k; return k
z = subprocess.Popen(['zstd', '-q', '-c'], stdin=subprocess.PIPE, stdout=open('$TMPDIR_TEST/bomb.zst', 'wb'))
with tarfile.open(fileobj=z.stdin, mode='w|', format=tarfile.GNU_FORMAT) as t:
    ti = tarfile.TarInfo('zeros'); ti.size = 512 << 20; t.addfile(ti, Zeros(ti.size))
    ti = tarfile.TarInfo('tail'); ti.size = 4; t.addfile(ti, io.BytesIO(b'tail'))
z.stdin.close(); z.wait()
" || fail "building the layer failed"
	# the tar's digest (the diff_id), without keeping the 2 GiB tar
	local diff_id
	diff_id=sha256:$(zstd -q -d -c "$TMPDIR_TEST/bomb.zst" | sha256sum | cut -d' ' -f1)
	py "
import ociimg, json
L = '$TMPDIR_TEST/bomb'
ociimg.init(L)
blob = open('$TMPDIR_TEST/bomb.zst', 'rb').read()
layers = [{'mediaType': 'application/vnd.oci.image.layer.v1.tar+zstd', 'digest': ociimg.put(L, blob), 'size': len(blob)}]
cfg = json.dumps({'architecture': 'amd64', 'os': 'linux', 'config': {'Env': ['PATH=/bin']},
                  'rootfs': {'type': 'layers', 'diff_ids': ['$diff_id']}}).encode()
man = json.dumps({'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
                  'config': {'mediaType': 'application/vnd.oci.image.config.v1+json', 'digest': ociimg.put(L, cfg), 'size': len(cfg)},
                  'layers': layers}).encode()
md = ociimg.put(L, man)
json.dump({'schemaVersion': 2, 'manifests': [{'mediaType': 'application/vnd.oci.image.manifest.v1+json', 'digest': md,
           'size': len(man), 'annotations': {'org.opencontainers.image.ref.name': 't'}}]}, open(L + '/index.json', 'w'))
"
	rm -f "$TMPDIR_TEST/bomb.zst"
	sbx import "oci:$TMPDIR_TEST/bomb:t" --name bomb > /dev/null
	used=$(du -s --block-size=1M "$SBX_ROOT" | cut -f1)
	[ "$used" -lt 64 ] || fail "512 MiB of zeros took $used MiB in the store"
	tree=$(ls -d "$SBX_ROOT"/layers/sha256/*/ | head -1)
	assert_eq "$(stat -c %s "$tree/zeros")" "536870912"
	assert_eq "$(cat "$tree/tail")" "tail"
}
