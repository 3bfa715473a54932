# Snapshots: capture, in-place restore, fork, labels, dedup.

# A python program that builds a random tree (seeded) or prints a manifest of
# one: type, mode, owner, size, content digest, symlink target, xattrs, and
# which paths share an inode (the hard-link structure).
TREE_PY='
import os, sys, random, hashlib, stat
cmd, root = sys.argv[1], sys.argv[2]
if cmd == "make":
    r = random.Random(int(sys.argv[3]))
    os.makedirs(root, exist_ok=True)
    dirs = [root]
    files = []
    for i in range(int(sys.argv[4])):
        d = r.choice(dirs)
        k = r.random()
        p = os.path.join(d, "n%d" % i)
        if k < 0.15:
            os.mkdir(p); dirs.append(p)
            os.chmod(p, r.choice([0o755, 0o2775, 0o1777, 0o3770, 0o700]))
        elif k < 0.55:
            with open(p, "wb") as f: f.write(os.urandom(r.randint(0, 5000)))
            os.chmod(p, r.choice([0o644, 0o600, 0o755, 0o444, 0o4755, 0o2755, 0o6711]))
            files.append(p)
        elif k < 0.65 and files:
            os.link(r.choice(files), p)
        elif k < 0.75:
            os.symlink(r.choice(["../x", "/etc/passwd", "n1", "dangling/target"]), p)
        elif k < 0.8:
            os.mkfifo(p)
        elif k < 0.9:
            os.mkdir(p)  # stays empty
        else:
            with open(p, "w") as f: f.write("x")
            try: os.setxattr(p, "user.sbx", b"v%d" % i)
            except OSError: pass
    sys.exit(0)
inodes = {}
out = []
for dp, dn, fn in os.walk(root):
    dn.sort()
    for name in sorted(dn + fn):
        p = os.path.join(dp, name)
        st = os.lstat(p)
        rel = os.path.relpath(p, root)
        line = [rel, stat.filemode(st.st_mode), str(st.st_uid), str(st.st_gid)]
        if stat.S_ISREG(st.st_mode):
            line += [str(st.st_size), hashlib.sha256(open(p, "rb").read()).hexdigest()[:16]]
            if st.st_nlink > 1:
                inodes.setdefault(st.st_ino, []).append(rel)
        elif stat.S_ISLNK(st.st_mode):
            line.append("-> " + os.readlink(p))
        try:
            line += ["%s=%s" % (x, os.getxattr(p, x, follow_symlinks=False)) for x in sorted(os.listxattr(p, follow_symlinks=False)) if x.startswith("user.")]
        except OSError:
            pass
        out.append(" ".join(line))
for ino, paths in sorted(inodes.items(), key=lambda kv: sorted(kv[1])):
    out.append("LINKS " + " ".join(sorted(paths)))
print("\n".join(out))
'

tree() { sbx exec "$ID" -- python3 -c "$TREE_PY" "$@"; }

t_roundtrip_random_trees() {
	ID=$(sbx create)
	for seed in 1 2 3; do
		tree make /root/t$seed $seed 150
		before=$(tree manifest /root/t$seed)
		snap=$(sbx snapshot "$ID")
		# Change everything: delete, rewrite, chmod, add, replace a dir by a file.
		sbx exec "$ID" -- sh -c "rm -rf /root/t$seed/n1* ; find /root/t$seed -type f | head -20 | xargs -r -I{} sh -c 'echo changed > {}'; find /root/t$seed -maxdepth 2 -type d | head -5 | xargs -r chmod 700; touch /root/t$seed/new-file; mkdir -p /root/t$seed/new-dir/deep; rm -f /etc/hostname"
		[ "$(tree manifest /root/t$seed)" != "$before" ] || fail "mutation changed nothing"
		sbx restore "$ID" "$snap" > /dev/null
		after=$(tree manifest /root/t$seed)
		if [ "$before" != "$after" ]; then
			diff <(echo "$before") <(echo "$after") | head -20
			fail "seed $seed: the restored tree differs from the snapshot"
		fi
		sbx exec "$ID" -- test -e /etc/hostname || fail "a deletion after the snapshot survived the restore"
	done
	sbx rm "$ID"
}

t_restore_ends_processes_and_keeps_identity() {
	ID=$(sbx create --name keepme)
	snap=$(sbx snapshot keepme --label base)
	sbx exec keepme -- sh -c 'sleep 300 > /dev/null 2>&1 &'
	eventually 20 ps_shows keepme "sleep 300" || fail "sleep not running"
	out=$(sbx restore --json keepme base)
	assert_contains "$out" "\"environment_id\": \"$ID\""
	assert_contains "$out" "$snap"
	sbx ps keepme | grep -q "sleep 300" && fail "a process survived the restore"
	assert_eq "$(sbx exec keepme -- hostname)" "keepme"
	sbx rm keepme
}

t_fork_is_independent_with_own_identity() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'echo parent > /root/who'
	snap=$(sbx snapshot "$ID" --label forkbase)
	a=$(sbx fork forkbase --name fork-a)
	b=$(sbx create --snapshot "$snap" --name fork-b)
	assert_eq "$(sbx exec fork-a -- cat /root/who)" "parent"
	sbx exec fork-a -- sh -c 'echo a > /root/who'
	assert_eq "$(sbx exec fork-b -- cat /root/who)" "parent"
	assert_eq "$(sbx exec "$ID" -- cat /root/who)" "parent"
	ma=$(sbx exec fork-a -- cat /etc/machine-id)
	mb=$(sbx exec fork-b -- cat /etc/machine-id)
	mp=$(sbx exec "$ID" -- cat /etc/machine-id)
	[ "$ma" != "$mb" ] && [ "$ma" != "$mp" ] || fail "forks share a machine-id ($ma $mb $mp)"
	assert_eq "$(sbx exec fork-a -- hostname)" "fork-a"
	# A fork of a fork keeps the whole history.
	s2=$(sbx snapshot fork-a)
	c=$(sbx fork "$s2")
	assert_eq "$(sbx exec "$c" -- cat /root/who)" "a"
	sbx snapshots --json | python3 -c "
import json,sys
s={x['snapshot_id']: x for x in json.load(sys.stdin)['snapshots']}
assert s['$s2']['parent'] == '$snap', s['$s2']
assert len(s['$s2']['layers']) == 2, s['$s2']
"
	sbx rm "$ID" "$a" "$b" "$c"
}

# sbx snapshots rm: deletes by label, digest or prefix with every label;
# refused while an environment started from the snapshot exists; a
# mistyped name fails and deletes nothing.
t_snapshots_rm() {
	ID=$(sbx create)
	s1=$(sbx snapshot "$ID" --label rm-one)
	sbx exec "$ID" -- sh -c 'echo 2 > /root/two'
	s2=$(sbx snapshot "$ID" --label rm-two)
	f=$(sbx fork rm-two)
	expect_status 125 sbx snapshots rm
	expect_status 125 sbx snapshots rm rm-no-such
	assert_contains "$ERR" "rm-no-such"
	expect_status 125 sbx snapshots rm rm-two
	assert_contains "$(sbx snapshots)" "rm-two"
	sbx rm "$f" > /dev/null
	out=$(sbx snapshots rm rm-two "${s1:0:19}") || fail "$out"
	out=$(sbx snapshots --json)
	assert_not_contains "$out" "$s1"
	assert_not_contains "$out" "$s2"
	assert_not_contains "$out" "rm-one"
	expect_status 125 sbx fork rm-two
	sbx rm "$ID"
}

t_snapshot_dedup_and_fields() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'head -c 200000 /dev/urandom > /root/data'
	j1=$(sbx snapshot --json "$ID")
	j2=$(sbx snapshot --json "$ID")
	python3 - "$j1" "$j2" <<'PY'
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for k in ("snapshot_id", "size_bytes", "new_bytes", "files", "snapshot_ms"):
    assert k in a, (k, a)
assert a["new_bytes"] >= 200000, a
assert b["new_bytes"] == 0, b          # same content: stored once
assert a["layer"] == b["layer"], (a, b)
PY
	sbx rm "$ID"
}

t_snapshot_while_writing() {
	ID=$(sbx create)
	"$SBX_BIN" exec "$ID" -- sh -c 'while true; do echo x >> /root/counter; done' > /dev/null 2>&1 &
	sleep 0.3
	snap=$(sbx snapshot "$ID")
	# The writer keeps running after the snapshot (thawed).
	v1=$(sbx exec "$ID" -- sh -c 'wc -l < /root/counter')
	sleep 0.2
	v2=$(sbx exec "$ID" -- sh -c 'wc -l < /root/counter')
	[ "$v2" -gt "$v1" ] || fail "the environment stayed frozen ($v1 -> $v2 lines)"
	f=$(sbx fork "$snap")
	sbx exec "$f" -- sh -c 'test -s /root/counter' || fail "snapshot missed the file"
	sbx rm "$f" "$ID"
	wait || true
}

t_snapshot_bad_input() {
	ID=$(sbx create)
	expect_status 125 sbx restore "$ID" sha256:0000000000000000000000000000000000000000000000000000000000000000
	assert_contains "$ERR" "snapshot"
	expect_status 125 sbx restore "$ID" nolabel
	expect_status 125 sbx fork nolabel
	expect_status 125 sbx snapshot "$ID" --label "bad label"
	assert_contains "$ERR" "invalid label"
	expect_status 125 sbx snapshot nosuchenv
	sbx rm "$ID"
}

t_snapshot_records_installed_packages() {
	ID=$(sbx create)
	s1=$(sbx snapshot "$ID")
	# A pip package "installed" by the environment (a dist-info directory is
	# what pip leaves: pip --user's place), and an npm one where the
	# environment may write /usr (not rootless: /usr is the host's there).
	sbx exec "$ID" -- sh -c 'mkdir -p /root/.local/lib/python3.11/site-packages/sbx_probe_pkg-1.2.3.dist-info'
	npm=0
	sbx exec "$ID" -- sh -c 'mkdir -p /usr/local/lib/node_modules/sbx-probe 2>/dev/null &&
		echo "{\"name\":\"sbx-probe\",\"version\":\"4.5.6\"}" > /usr/local/lib/node_modules/sbx-probe/package.json' && npm=1
	s2=$(sbx snapshot "$ID")
	python3 - "$SBX_ROOT" "$s1" "$s2" "$npm" <<'PY'
import json, sys, os
root, s1, s2, npm = sys.argv[1:]
def pk(s):
    return json.load(open(os.path.join(root, "snapshots/sha256", s[7:] + ".json"))).get("packages") or []
a, b = pk(s1), pk(s2)
if os.path.exists("/var/lib/dpkg/status"):
    assert any(x.startswith("dpkg:bash=") for x in a), a[:5]
assert "pip:sbx_probe_pkg=1.2.3" not in a and "pip:sbx_probe_pkg=1.2.3" in b, b[-5:]
assert npm == "0" or "npm:sbx-probe=4.5.6" in b, [x for x in b if x.startswith("npm:")]
assert b == sorted(b)
PY
	sbx rm "$ID"
}

# Any name Linux allows is stored exactly (issue 13.7): real files named like
# OCI whiteouts (`.wh.x`, `.wh..wh..opq`, `.wh.`), a real `.wh.x` next to a
# whiteout of x, newlines, 255-byte names, bytes that are not UTF-8, as
# files, directories, hard links and symlinks; through snapshot, fork,
# restore, an incremental snapshot and diff.
ODD_PY='
import os, sys, hashlib, stat
cmd, root = sys.argv[1], sys.argv[2].encode()
names = [b".wh.userfile", b".wh..wh..opq", b".wh.", b".wh..", b".wh...", b".wh..wh.x", b"nl\nname",
         b"\xff\xfe-not-utf8", b"a" * 255, b".wh." + b"b" * 251, b"back\\slash", b".wh..opq"]
if cmd == "make":
    os.makedirs(root)
    for i, n in enumerate(names):
        with open(os.path.join(root, n), "wb") as f: f.write(b"content %d\n" % i)
    d = os.path.join(root, b".wh.dir")
    os.mkdir(d)
    with open(os.path.join(d, b".wh.c"), "w") as f: f.write("c")
    os.mkdir(os.path.join(d, b".wh..wh..opq"))
    os.link(os.path.join(root, b".wh.userfile"), os.path.join(root, b".wh.link"))
    os.symlink(b".wh.userfile", os.path.join(root, b".wh.sym"))
    os.mkfifo(os.path.join(d, b".wh.fifo"))
    # A whiteout of a host file and a real file of its whiteout name, side by side.
    os.unlink(b"/etc/hostname")
    with open(b"/etc/.wh.hostname", "w") as f: f.write("real")
    sys.exit(0)
out = []
for dp, dn, fn in os.walk(root):
    dn.sort()
    for n in sorted(dn + fn):
        p = os.path.join(dp, n)
        st = os.lstat(p)
        line = [repr(os.path.relpath(p, root)), stat.filemode(st.st_mode), str(st.st_nlink)]
        if stat.S_ISREG(st.st_mode):
            line.append(hashlib.sha256(open(p, "rb").read()).hexdigest()[:12])
        elif stat.S_ISLNK(st.st_mode):
            line.append(repr(os.readlink(p)))
        out.append(" ".join(line))
out.append("hostname " + str(os.path.lexists(b"/etc/hostname")))
out.append("wh.hostname " + open(b"/etc/.wh.hostname").read())
print("\n".join(out))
'
odd() { local id=$1; shift; sbx exec "$id" -- python3 -c "$ODD_PY" "$@"; }

t_snapshot_any_file_name() {
	ID=$(sbx create)
	odd "$ID" make /root/odd
	before=$(odd "$ID" manifest /root/odd)
	assert_contains "$before" "'.wh.userfile' -rw-r--r-- 2"
	# diff against the base (the host template)
	d=$(sbx diff --json "$ID")
	echo "$d" | python3 -c '
import json, sys
d = json.load(sys.stdin)
a = set(d["added"])
for n in ["/root/odd/.wh.userfile", "/root/odd/.wh..wh..opq", "/root/odd/\\xff\\xfe-not-utf8", "/root/odd/nl\nname", "/root/odd/back\\\\slash", "/root/odd/.wh.dir/.wh..wh..opq", "/etc/.wh.hostname"]:
    assert n in a, (n, sorted(a))
assert d["deleted"] == ["/etc/hostname"], d["deleted"]
' || fail "diff against the base: $d"
	j=$(sbx snapshot --json "$ID") || fail "snapshot refused legal names: $ERR"
	s1=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')
	# fork
	F=$(sbx fork "$s1")
	assert_eq "$(odd "$F" manifest /root/odd)" "$before" "fork"
	# restore after changing everything
	sbx exec "$ID" -- sh -c 'rm -rf /root/odd; echo h > /etc/hostname; rm /etc/.wh.hostname'
	sbx restore "$ID" "$s1" > /dev/null
	assert_eq "$(odd "$ID" manifest /root/odd)" "$before" "restore"
	# incremental: add and remove such names
	sbx exec "$ID" -- python3 -c 'import os; os.unlink(b"/root/odd/.wh.."); open(b"/root/odd/.wh.new\n\xff", "w").write("n"); os.rename(b"/root/odd/.wh.dir/.wh.c", b"/root/odd/.wh.dir/.wh.d")'
	sbx snapshot "$ID" > /dev/null # the first after a restore is a full one
	# (deleting ".wh..opq" gives a whiteout whose tar name is the opaque marker's)
	sbx exec "$ID" -- python3 -c 'import os; os.unlink(b"/root/odd/.wh..opq"); os.unlink(b"/root/odd/.wh..."); open(b"/root/odd/.wh.later", "w").write("l"); open(b"/root/odd/.wh.userfile", "a").write("more")  # overlayfs copy-up breaks its hard link'
	before2=$(odd "$ID" manifest /root/odd)
	j=$(sbx snapshot --json "$ID")
	assert_eq "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["incremental"])')" "True" "incremental: $j"
	s2=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')
	F2=$(sbx fork "$s2")
	assert_eq "$(odd "$F2" manifest /root/odd)" "$before2" "fork of the incremental snapshot"
	# diff names them exactly (bytes that are not UTF-8 as \xNN, a backslash as \\)
	d=$(sbx diff --json "$ID" "$s1")
	echo "$d" | python3 -c '
import json, sys
d = json.load(sys.stdin)
want = {"added": ["/root/odd/.wh.later", "/root/odd/.wh.new\n\\xff", "/root/odd/.wh.dir/.wh.d"],
        "modified": ["/root/odd/.wh.userfile"], "deleted": ["/root/odd/.wh..", "/root/odd/.wh.dir/.wh.c", "/root/odd/.wh..opq", "/root/odd/.wh..."]}
for k, v in want.items():
    assert sorted(d[k]) == sorted(v), (k, d[k], v)
' || fail "diff against the first snapshot: $d"
	sbx rm "$ID" "$F" "$F2" > /dev/null
}

# Deleting a name of 252 to 255 bytes: its whiteout cannot be spelled
# `.wh.<name>` on disk (over NAME_MAX), so the store's tar marks it
# (docs/store.md "Names"). Files and directories, in a delta and in a full
# snapshot, next to an opaque directory with a long name; restore and fork
# each snapshot, diff, fsck.
t_snapshot_deletes_long_names() {
	local a b c d o x j s1 s2 s3 l1 l2 l3 e out
	a=$(printf 'a%.0s' {1..255}) b=$(printf 'b%.0s' {1..252}) c=$(printf 'c%.0s' {1..255})
	d=$(printf 'd%.0s' {1..252}) o=$(printf 'o%.0s' {1..255}) x=$(printf 'x%.0s' {1..255})
	lst() { sbx exec "$1" -- sh -c 'cd /w && find . -mindepth 1 | LC_ALL=C sort | while read -r p; do
		if [ -f "$p" ]; then echo "$p $(cat "$p")"; else echo "$p"; fi; done'; }
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'mkdir -p /w/"$3"/sub /w/"$4" /w/"$5" && echo a > /w/"$1" && echo b > /w/"$2" &&
		echo c > /w/"$3"/sub/f && echo x > /w/"$4"/"$6" && echo keep > /w/"$4"/keep &&
		echo old > /w/"$5"/old && echo k > /w/keep' sh "$a" "$b" "$c" "$d" "$o" "$x"
	s1=$(sbx snapshot "$ID")
	l1=$(lst "$ID")
	assert_contains "$l1" "./$c/sub/f c"
	del='rm -r /w/"$1" /w/"$2" /w/"$3" /w/"$4"/"$5"'
	# A delta: the whiteouts of the names S1 has.
	sbx exec "$ID" -- sh -c "$del" sh "$a" "$b" "$c" "$d" "$x"
	j=$(sbx snapshot --json "$ID") || fail "snapshot after deleting long names"
	assert_eq "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["incremental"])')" "True" "incremental: $j"
	s2=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')
	l2=$(lst "$ID")
	assert_eq "$l2" "$(printf './%s\n./%s/keep keep\n./keep k\n./%s\n./%s/old old' "$d" "$d" "$o" "$o")" "after the deletions"
	out=$(sbx diff "$ID" "$s1")
	for e in "D /w/$a" "D /w/$b" "D /w/$c" "D /w/$d/$x"; do
		assert_contains "$out" "$e"
	done
	# A full snapshot (the first after a restore) with the same whiteouts,
	# and a long-named directory made opaque.
	sbx restore "$ID" "$s1" > /dev/null
	assert_eq "$(lst "$ID")" "$l1" "restore to the first snapshot"
	sbx exec "$ID" -- sh -c "$del"' && rm -r /w/"$6" && mkdir /w/"$6" && echo new > /w/"$6"/new' sh "$a" "$b" "$c" "$d" "$x" "$o"
	j=$(sbx snapshot --json "$ID") || fail "full snapshot after deleting long names"
	assert_eq "$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["incremental"])')" "False" "full: $j"
	s3=$(echo "$j" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')
	l3=$(lst "$ID")
	assert_eq "$l3" "$(printf './%s\n./%s/keep keep\n./keep k\n./%s\n./%s/new new' "$d" "$d" "$o" "$o")" "after the deletions (full)"
	out=$(sbx diff "$ID" "$s1")
	for e in "D /w/$a" "D /w/$b" "D /w/$c" "D /w/$d/$x" "D /w/$o/old" "A /w/$o/new"; do
		assert_contains "$out" "$e"
	done
	# Each snapshot restores and forks to exactly what it captured.
	local snaps=("$s2" "$s1" "$s3") lists=("$l2" "$l1" "$l3") i
	for i in 0 1 2; do
		sbx restore "$ID" "${snaps[$i]}" > /dev/null
		assert_eq "$(lst "$ID")" "${lists[$i]}" "restore to ${snaps[$i]}"
		F=$(sbx fork "${snaps[$i]}")
		assert_eq "$(lst "$F")" "${lists[$i]}" "fork of ${snaps[$i]}"
		sbx rm "$F" > /dev/null
	done
	expect_status 0 sbx fsck
	sbx rm "$ID" > /dev/null
}

# Every environment has a content-addressed base (issue 13.9): for the host
# template a snapshot without layers whose manifest names the host tree (its
# directories, the mask, the package databases), the same for every create
# on the same host, built once even by concurrent creates. Restoring to it
# gives the pristine host view; it is the parent of the first snapshot.
t_host_base_snapshot() {
	local jid base
	jid=$(sbx create --json)
	base=$(echo "$jid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')
	ID=$(echo "$jid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["environment_id"])')
	[[ "$base" == sha256:* ]] || fail "create --json: snapshot_id is '$base'"
	assert_eq "$(sbx inspect "$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')" "$base" "inspect"
	python3 - "$SBX_ROOT" "$base" <<'PY' || fail "the base manifest"
import json, os, sys
root, base = sys.argv[1:]
m = json.load(open(os.path.join(root, "snapshots/sha256", base[7:] + ".json")))
assert m["base_template"] == "host" and m["layers"] == [] and m["parent"] is None, m
ids = dict(x.split("=", 1) for x in m["base_identity"])
assert ids["template"] == "host" and ids["mask"].startswith("sha256:") and "usr" in ids["dirs"].split(","), ids
if os.path.exists("/var/lib/dpkg/status"):
    assert ids["pkgdb:/var/lib/dpkg/status"].startswith("sha256:"), ids
PY
	# Restore to the base: the pristine host view.
	sbx exec "$ID" -- sh -c 'echo mine > /root/mine; rm -f /etc/hostname'
	s1=$(sbx snapshot --json "$ID" | python3 -c 'import json,sys; print(json.load(sys.stdin)["snapshot_id"])')
	assert_eq "$(sbx snapshots --json | python3 -c "import json,sys; print([s['parent'] for s in json.load(sys.stdin)['snapshots'] if s['snapshot_id']=='$s1'][0])")" "$base" "parent of the first snapshot"
	sbx restore "$ID" "$base" > /dev/null
	sbx exec "$ID" -- test ! -e /root/mine || fail "restore to the base kept /root/mine"
	assert_eq "$(sbx exec "$ID" -- cat /etc/hostname)" "$(cat /etc/hostname)" "hostname after restore to the base"
	assert_eq "$(sbx diff "$ID")" "" "diff after restore to the base"
	# Concurrent creates on a fresh store: one base, the same id for all, no temp files.
	rm -rf "$SBX_ROOT/snapshots/sha256/${base#sha256:}.json"
	local pids=() i
	for i in 1 2 3 4 5 6; do
		sbx create --json > "$TMPDIR_TEST/c$i.json" 2> "$TMPDIR_TEST/c$i.err" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do wait "${pids[$i]}" || fail "concurrent create $((i + 1)): $(cat "$TMPDIR_TEST/c$((i + 1)).err")"; done
	for i in 1 2 3 4 5 6; do
		assert_eq "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["snapshot_id"])' "$TMPDIR_TEST/c$i.json")" "$base" "concurrent create $i"
	done
	[ -f "$SBX_ROOT/snapshots/sha256/${base#sha256:}.json" ] || fail "the base manifest is missing"
	assert_eq "$(ls -A "$SBX_ROOT/snapshots/sha256" | grep -c '^\.tmp' || true)" "0" "temp manifests left"
	sbx fsck > /dev/null || fail "fsck after concurrent creates"
	for i in 1 2 3 4 5 6; do sbx rm "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["environment_id"])' "$TMPDIR_TEST/c$i.json")" > /dev/null; done
	sbx rm "$ID" > /dev/null
}

# The same through MCP: environment_create gives the base, environment_restore
# to it gives the pristine view (a JSON-RPC client over `sbx mcp`).
t_host_base_snapshot_mcp() {
	python3 - "$SBX_BIN" <<'PY' || fail "MCP: the host template's base snapshot"
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
n = 0
def rpc(method, params=None, notify=False):
    global n
    n += 1
    msg = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if not notify:
        msg["id"] = n
    p.stdin.write(json.dumps(msg) + "\n"); p.stdin.flush()
    if notify:
        return None
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("id") == n:
            return r
def tool(name, args):
    r = rpc("tools/call", {"name": name, "arguments": args})["result"]
    assert not r.get("isError"), (name, r)
    return r.get("structuredContent") or json.loads(r["content"][0]["text"])
rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
rpc("notifications/initialized", notify=True)
c = tool("environment_create", {})
eid, base = c["environment_id"], c["snapshot_id"]
assert isinstance(base, str) and base.startswith("sha256:"), c
assert tool("environment_create", {}) ["snapshot_id"] == base
tool("environment_execute", {"environment_id": eid, "command": "echo x > /root/mine"})
r = tool("environment_restore", {"environment_id": eid, "snapshot_id": base})
assert r["snapshot_id"] == base, r
assert tool("environment_execute", {"environment_id": eid, "command": "test -e /root/mine"})["exit_code"] == 1
for e in tool("environment_list", {})["environments"]:
    tool("environment_destroy", {"environment_id": e["environment_id"]})
p.stdin.close(); p.wait(timeout=30)
PY
}

# A unix socket left in the environment (a server's, an agent's, gpg's)
# cannot be a layer entry (tar has no type for it, and a bound socket means
# nothing without its listener): it is stored as the path's deletion, as
# docker leaves sockets out of its layers. The snapshot (and so a traced
# exec, which snapshots first) must not fail, and a socket over a file of a
# lower layer must not let that file show through again.
t_snapshot_stores_socket_as_deleted() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'echo lower > /root/s; echo keep > /root/k'
	s0=$(sbx snapshot "$ID")
	sbx exec "$ID" -- python3 -c '
import socket, os
os.unlink("/root/s")
for p in ("/root/s", "/root/fresh.sock"):
    socket.socket(socket.AF_UNIX).bind(p)'
	s1=$(sbx snapshot "$ID") || fail "snapshot with sockets in the tree"
	F=$(sbx fork "$s1")
	sbx exec "$F" -- test ! -e /root/s || fail "the lower file under the socket came back: $(sbx exec "$F" -- ls -l /root/s)"
	sbx exec "$F" -- test ! -e /root/fresh.sock || fail "a socket was restored as something"
	assert_eq "$(sbx exec "$F" -- cat /root/k)" keep
	# incremental (the index saw the sockets), restore, trace
	sbx exec "$ID" -- sh -c 'echo more > /root/m'
	j=$(sbx snapshot --json "$ID") || fail "incremental snapshot with sockets"
	sbx restore "$ID" "$s0" > /dev/null
	assert_eq "$(sbx exec "$ID" -- cat /root/s)" lower
	sbx exec "$ID" -- python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("/root/t.sock")'
	out=$(sbx exec --json --trace "$ID" -- echo traced) || fail "a traced exec next to a socket: $out"
	sbx fsck > /dev/null || fail "fsck: $(sbx fsck)"
	sbx rm "$ID" "$F" > /dev/null
}

# A sparse file (a disk image, a database's preallocated file) keeps its
# holes through snapshot, fork and restore: the layer's tar has no sparse
# map, so the extractor leaves zero blocks unwritten. Bytes are the same.
t_snapshot_keeps_sparse_files() {
	ID=$(sbx create)
	sbx exec "$ID" -- python3 -c '
f = open("/root/sparse", "wb"); f.write(b"head"); f.seek(64 << 20); f.write(b"tail"); f.close()'
	want=$(sbx exec "$ID" -- sh -c 'sha256sum < /root/sparse; stat -c %s /root/sparse')
	s=$(sbx snapshot "$ID")
	F=$(sbx fork "$s")
	assert_eq "$(sbx exec "$F" -- sh -c 'sha256sum < /root/sparse; stat -c %s /root/sparse')" "$want" "bytes in the fork"
	kb=$(sbx exec "$F" -- du -k /root/sparse | cut -f1)
	[ "$kb" -lt 1024 ] || fail "the fork's sparse file takes $kb KiB of disk (64 MiB of holes written out)"
	sbx exec "$ID" -- rm /root/sparse
	sbx restore "$ID" "$s" > /dev/null
	kb=$(sbx exec "$ID" -- du -k /root/sparse | cut -f1)
	[ "$kb" -lt 1024 ] || fail "the restored sparse file takes $kb KiB"
	assert_eq "$(sbx exec "$ID" -- sh -c 'sha256sum < /root/sparse; stat -c %s /root/sparse')" "$want" "bytes after restore"
	sbx rm "$ID" "$F" > /dev/null
}

# POSIX ACLs (named users and groups, a directory's default ACL) survive a
# full snapshot, a delta, fork and restore, with the environment's ids; a
# file made in the directory before its default ACL keeps having none.
t_snapshot_keeps_acls() {
	command -v setfacl > /dev/null || skip "setfacl (acl) is not installed"
	local u=1234 g=77
	is_root || { u=0 g=0; } # rootless: only the environment's root is mapped
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c "mkdir -p /root/a/d/sub && touch /root/a/f /root/a/d/old &&
setfacl -m u:$u:rwx,g:$g:r /root/a/f && setfacl -m g:$g:rx /root/a/d && setfacl -d -m u:$u:rx /root/a/d &&
touch /root/a/d/inherits" || fail "setfacl inside the environment failed"
	acls() { sbx exec "$1" -- sh -c 'cd /root/a && find . | sort | xargs getfacl -n -p 2> /dev/null'; }
	want=$(acls "$ID")
	assert_contains "$want" "user:$u:rwx"
	assert_contains "$want" "default:user:$u:r-x"
	s=$(sbx snapshot "$ID")
	F=$(sbx fork "$s")
	assert_eq "$(acls "$F")" "$want" "ACLs in a fork of a full snapshot"
	# a delta: an ACL changed, one added, one removed
	sbx exec "$ID" -- sh -c "setfacl -m u:$u:r /root/a/f && touch /root/a/n && setfacl -m g:$g:rw /root/a/n && setfacl -b /root/a/d/inherits"
	want2=$(acls "$ID")
	s2=$(sbx snapshot "$ID")
	F2=$(sbx fork "$s2")
	assert_eq "$(acls "$F2")" "$want2" "ACLs in a fork of a delta"
	sbx exec "$ID" -- sh -c 'setfacl -b /root/a/f; setfacl -k /root/a/d'
	sbx restore "$ID" "$s" > /dev/null
	assert_eq "$(acls "$ID")" "$want" "ACLs after restore"
	sbx rm "$ID" "$F" "$F2" > /dev/null
}

# An 8 GiB sparse file with a few data extents: snapshot and fork give the
# same bytes and keep it sparse. Its holes are hashed, not read: the
# snapshot takes about as long as SHA-256 over 8 GiB (6 s here), where
# reading the holes twice took minutes, past sbx's 60 s test timeout.
t_snapshot_huge_sparse_file() {
	ID=$(sbx create)
	sbx exec "$ID" -- python3 -c '
f = open("/root/huge", "wb")
for off in (0, 5 << 30, (8 << 30) - 4096):
    f.seek(off); f.write(b"extent at %d\n" % off * 100)
f.truncate(8 << 30); f.close()'
	# the non-zero 4 KiB blocks and their offsets, read by SEEK_DATA (holes are not read)
	sbx exec -i "$ID" -- sh -c 'cat > /root/sum.py' <<'PY'
import hashlib, os
fd = os.open("/root/huge", os.O_RDONLY); h = hashlib.sha256(); off = 0; size = os.fstat(fd).st_size
while off < size:
    try: off = os.lseek(fd, off, os.SEEK_DATA) // 4096 * 4096
    except OSError: break
    end = os.lseek(fd, off, os.SEEK_HOLE)
    while off < end:
        b = os.pread(fd, 4096, off)
        if b.strip(b"\0"): h.update(b"%d:" % off + b)
        off += 4096
print(size, h.hexdigest())
PY
	want=$(sbx exec "$ID" -- python3 /root/sum.py)
	s=$(sbx snapshot "$ID") || fail "snapshot of an 8 GiB sparse file failed (or took over ${SBX_TIMEOUT:-60} s)"
	F=$(sbx fork "$s")
	assert_eq "$(sbx exec "$F" -- python3 /root/sum.py)" "$want" "the fork's data extents"
	kb=$(sbx exec "$F" -- du -k /root/huge | cut -f1)
	[ "$kb" -lt 4096 ] || fail "the fork's sparse file takes $kb KiB of disk"
	sbx rm "$ID" "$F" > /dev/null
}

# 50 cycles of restore to the last snapshot, a change, a snapshot (deltas on
# deltas over a random tree: files deleted from lower layers, directories
# renamed, hard links, symlinks, modes), with the tree wrecked every tenth
# cycle before the restore: the result must equal the same changes made in
# an environment that never restored, and a fork of the last snapshot too.
t_restore_snapshot_cycles_lose_nothing() {
	# rootless, the store owner cannot read the tree's mode-0000 files (no CAP_DAC_READ_SEARCH)
	is_root || skip_ok "rootless: a snapshot cannot read files of mode 0000"
	local pv n=${SBX_TEST_CYCLES:-50} i s
	pv=$(probe_volume)
	T=$(sbx create -v "$pv")
	R=$(sbx create -v "$pv")
	local mut='cd /root/t; i=$1
echo "c$i" > f$i
if [ -e f$((i - 3)) ]; then rm f$((i - 3)); fi
mkdir -p d$i/sub; echo "x$i" > d$i/sub/x
if [ -d d$((i - 2)) ]; then mv d$((i - 2)) r$((i - 2)); fi
if [ -d r$((i - 4)) ]; then rm -r r$((i - 4)); fi
chmod $((i % 2 ? 700 : 755)) d$i; ln f$i h$i; ln -s f$i s$i; mkfifo p$i
if [ -e s$((i - 1)) ]; then rm s$((i - 1)); ln -s elsewhere s$((i - 1)); fi'
	for id in "$T" "$R"; do sbx exec "$id" -- /probe/treeprobe make /root/t 11 150; done
	s=$(sbx snapshot "$T")
	for ((i = 1; i <= n; i++)); do
		sbx restore "$T" "$s" > /dev/null
		sbx exec "$T" -- sh -c "$mut" sh "$i"
		s=$(sbx snapshot "$T")
		if ((i % 10 == 0)); then sbx exec "$T" -- sh -c 'rm -rf /root/t/n1* /root/t/f*; echo junk > /root/t/junk'; fi
	done
	sbx exec "$R" -- sh -c "for i in \$(seq 1 $n); do sh -c '$mut' sh \$i; done"
	sbx restore "$T" "$s" > /dev/null
	want=$(sbx exec "$R" -- /probe/treeprobe manifest /root/t)
	[ "$(echo "$want" | wc -l)" -gt 200 ] || fail "too small a tree: $(echo "$want" | wc -l) lines"
	got=$(sbx exec "$T" -- /probe/treeprobe manifest /root/t)
	[ "$got" == "$want" ] || { diff <(echo "$want") <(echo "$got") | head -20; fail "after $n restore/snapshot cycles the tree differs"; }
	F=$(sbx fork "$s" -v "$pv")
	assert_eq "$(sbx exec "$F" -- /probe/treeprobe manifest /root/t)" "$want" "fork of the last snapshot"
	assert_eq "$(sbx diff "$T" "$s")" "" "diff against the last snapshot"
	sbx fsck > /dev/null || fail "fsck: $(sbx fsck)"
	sbx rm "$T" "$R" "$F" > /dev/null
}

# sbx diff's text output: names come from inside the environment; one with
# a newline must not forge a line, an escape character must not reach the
# terminal (control bytes are written as \xNN, as --json's strings write
# the bytes that are not UTF-8).
t_diff_text_names_cannot_forge_lines() {
	ID=$(sbx create)
	sbx exec "$ID" -- sh -c 'printf x > "/root/a
D fake"; printf y > "/root/e$(printf "\033")[2J"; echo z > /root/plain'
	out=$(sbx diff "$ID")
	echo "$out" | grep -qx 'D fake' && fail "a name forged a line: $out"
	case "$out" in *$'\033'*) fail "an escape character reached the terminal" ;; esac
	assert_contains "$out" 'A /root/a\x0aD fake'
	assert_contains "$out" 'A /root/e\x1b[2J'
	assert_contains "$out" 'A /root/plain'
	sbx rm "$ID" > /dev/null
}
