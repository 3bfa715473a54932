# Store administration: sbx diff (against the base and against snapshots),
# sbx fsck (a good store, a corrupted layer) and the store half of sbx gc
# (orphan layers removed, referenced and live ones kept).

# The layer digests a snapshot manifest names (bottom first).
snap_layers() { python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["layers"]))' "$SBX_ROOT/snapshots/sha256/${1#sha256:}.json"; }
json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print("\n".join(d[sys.argv[1]]) if isinstance(d[sys.argv[1]], list) else d[sys.argv[1]])' "$1"; }

t_diff_against_base() {
	local id out
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo new > /root/new.txt; echo changed > /etc/hostname; rm -f /etc/motd;
		mkdir -p /opt/newdir/sub; echo f > /opt/newdir/sub/file; mkdir /root/emptydir'
	out=$(sbx diff "$id")
	echo "$out"
	assert_contains "$out" "A /root/new.txt"
	assert_contains "$out" "M /etc/hostname"
	assert_contains "$out" "D /etc/motd"
	assert_contains "$out" "A /opt/newdir"
	assert_contains "$out" "A /opt/newdir/sub"
	assert_contains "$out" "A /opt/newdir/sub/file"
	assert_contains "$out" "A /root/emptydir"
	# Directories that only hold a change are not reported; nothing else appears.
	assert_not_contains "$out" " /root"$'\n'
	assert_not_contains "$out" "/etc/passwd"
	assert_not_contains "$out" " /opt"$'\n'
	# Sorted by path.
	assert_eq "$(echo "$out" | awk '{print $2}')" "$(echo "$out" | awk '{print $2}' | LC_ALL=C sort)"
	# A file rewritten with the same bytes is not modified; a chmod is.
	sbx exec "$id" -- sh -c 'cp /etc/passwd /tmp/p; cat /tmp/p > /etc/passwd; chmod 600 /etc/issue'
	out=$(sbx diff "$id")
	assert_not_contains "$out" "/etc/passwd"
	assert_contains "$out" "M /etc/issue"
	# rm -rf + mkdir of an existing directory: an opaque directory.
	sbx exec "$id" -- sh -c 'rm -rf /etc/apt && mkdir /etc/apt && touch /etc/apt/only'
	out=$(sbx diff "$id")
	assert_contains "$out" "A /etc/apt/only"
	assert_contains "$out" "D /etc/apt/apt.conf.d"
	out=$(sbx diff --json "$id")
	assert_eq "$(echo "$out" | json_field deleted | grep -c '^/etc/motd$')" "1"
	assert_contains "$(echo "$out" | json_field added)" "/root/new.txt"
	expect_status 125 sbx diff nosuchenv
	expect_status 125 sbx diff "$id" no-such-snapshot
	assert_contains "$ERR" "no such snapshot"
	sbx rm "$id" > /dev/null
}

t_diff_against_snapshots() {
	local id fork out s1 s2
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo a > /root/a; echo keep > /root/keep'
	s1=$(sbx snapshot "$id" --label s1)
	sbx exec "$id" -- sh -c 'echo b > /root/b; echo a2 > /root/a; rm /root/keep'
	out=$(sbx diff "$id" s1)
	echo "$out"
	assert_eq "$out" $'M /root/a\nA /root/b\nD /root/keep'
	s2=$(sbx snapshot "$id" --label s2)
	# Restored to s1: nothing differs from s1, s2 is a descendant.
	sbx restore "$id" s1 > /dev/null
	assert_eq "$(sbx diff "$id")" ""
	assert_eq "$(sbx diff "$id" s1)" ""
	out=$(sbx diff "$id" "$s2")
	assert_eq "$out" $'M /root/a\nD /root/b\nA /root/keep'
	# A fork of s2 against s1 (an ancestor of its base) and after changes.
	fork=$(sbx fork s2)
	sbx exec "$fork" -- sh -c 'echo c > /root/c'
	out=$(sbx diff "$fork" s1)
	assert_contains "$out" "M /root/a"
	assert_contains "$out" "A /root/b"
	assert_contains "$out" "A /root/c"
	assert_contains "$out" "D /root/keep"
	out=$(sbx diff "$fork")
	assert_contains "$out" "A /root/c"
	assert_not_contains "$out" "/root/b"
	sbx rm "$fork" "$id" > /dev/null
}

# Every field a snapshot keeps is a change when it changes: user xattrs (set
# on a file and on a directory, removed), POSIX ACLs (access, a directory's
# default), a file capability, a symlink's target, the hard-link structure (a
# link broken with the same bytes, one made: every path of the old and the new
# link set). A copy-up that keeps them all (touch, an xattr set to its value)
# is none: ACL ids and capabilities are compared as the snapshot stores them,
# not as the writable layer holds them. Once in the environment that took the
# snapshot, once in a fork of it (its changes are copy-ups from the layer).
t_diff_sees_every_kept_field() {
	command -v setfacl > /dev/null || skip "setfacl is not installed (apt-get install acl)"
	command -v setcap > /dev/null || skip "setcap is not installed (apt-get install libcap2-bin)"
	local id fork s e out change want w
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'mkdir -p /w/d /w/e; cd /w; echo c > f; echo g > g; echo a > a; ln a b
		echo x > x; echo x > y; echo acl > acl; echo cap > cap; ln -s t1 l; echo s > same
		echo k > keepacl; echo k > keepcap; setfacl -m u:1234:r keepacl; setcap cap_net_raw+ep keepcap
		python3 -c "import os; os.setxattr(\"g\", \"user.gone\", b\"1\"); os.setxattr(\"same\", \"user.keep\", b\"1\")"'
	s=$(sbx snapshot "$id")
	fork=$(sbx fork "$s")
	change='cd /w; python3 -c "import os; [os.setxattr(p, \"user.k\", b\"v\") for p in (\"f\", \"d\")]
os.removexattr(\"g\", \"user.gone\"); os.setxattr(\"same\", \"user.keep\", b\"1\")"
		setfacl -m u:1234:r acl; setfacl -d -m u:1234:rx e; setcap cap_net_raw+ep cap; touch keepacl keepcap
		rm l; ln -s t2 l; rm b; cp a b; rm y; ln x y'
	want=$'M /w/a\nM /w/acl\nM /w/b\nM /w/cap\nM /w/d\nM /w/e\nM /w/f\nM /w/g\nM /w/l\nM /w/x\nM /w/y'
	for e in "$id" "$fork"; do
		sbx exec "$e" -- sh -c "$change"
		w=$want
		[ "$e" != "$fork" ] || w=$'M /etc/machine-id\n'"$want" # a fork has its own
		out=$(sbx diff "$e" "$s")
		assert_eq "$out" "$w" "diff of $e against its snapshot"
		out=$(sbx diff --json "$e" "$s")
		assert_eq "$(echo "$out" | json_field modified)" "$(echo "$w" | cut -c3-)" "diff --json of $e"
	done
	# Put back, the environment is its snapshot again (ACL and capability removed,
	# the xattrs as they were; the hard-link structure as it was).
	sbx exec "$id" -- sh -c 'cd /w; setfacl -b acl; setfacl -k e; setcap -r cap; rm b y; ln a b; echo x > y
		python3 -c "import os; [os.removexattr(p, \"user.k\") for p in (\"f\", \"d\")]; os.setxattr(\"g\", \"user.gone\", b\"1\")"
		rm l; ln -s t1 l'
	out=$(sbx diff "$id" "$s")
	assert_eq "$out" "" "diff after undoing every change"
	sbx rm "$fork" "$id" > /dev/null
}

t_fsck_good_and_corrupt() {
	local id s layer f out
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'head -c 4096 /dev/urandom > /root/data.bin'
	s=$(sbx snapshot "$id")
	sbx rm "$id" > /dev/null
	expect_status 0 sbx fsck
	assert_contains "$OUT" "ok"
	expect_status 0 sbx fsck --json
	assert_contains "$OUT" '"ok": true'
	layer=$(snap_layers "$s" | tail -n 1)
	f="$SBX_ROOT/layers/sha256/${layer#sha256:}/root/data.bin"
	[ -f "$f" ] || fail "no $f"
	python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[100]^=0xff; open(p,"wb").write(b)' "$f"
	expect_status 1 sbx fsck
	echo "$OUT"
	assert_contains "$OUT" "corrupt $layer:"
	expect_status 1 sbx fsck --json
	assert_contains "$OUT" "\"object\": \"$layer\""
}

t_gc_removes_orphans_keeps_referenced() {
	local id live orphan_s orphan kept_s kept live_s live_l out
	export SBX_GC_GRACE_SECONDS=0
	# An orphan: its snapshot manifest and label are deleted, its environment removed.
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo orphan > /root/orphan'
	orphan_s=$(sbx snapshot "$id" --label gone)
	orphan=$(snap_layers "$orphan_s" | tail -n 1)
	sbx rm "$id" > /dev/null
	rm "$SBX_ROOT/snapshots/sha256/${orphan_s#sha256:}.json" "$SBX_ROOT/refs/labels/gone"
	# Kept: a snapshot's layer.
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo kept > /root/kept'
	kept_s=$(sbx snapshot "$id")
	kept=$(snap_layers "$kept_s" | tail -n 1)
	sbx rm "$id" > /dev/null
	# Kept: the layer a live environment runs on, even once no snapshot names it.
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo live > /root/live'
	live_s=$(sbx snapshot "$id")
	live_l=$(snap_layers "$live_s" | tail -n 1)
	sbx rm "$id" > /dev/null
	live=$(sbx fork "$live_s")
	rm "$SBX_ROOT/snapshots/sha256/${live_s#sha256:}.json"
	mkdir -p "$SBX_ROOT/tmp/blob-leftover"
	touch -d '2 hours ago' "$SBX_ROOT/tmp/blob-leftover"

	out=$(sbx gc --json)
	echo "$out"
	assert_eq "$(echo "$out" | json_field layers_removed)" "$orphan"
	[ ! -e "$SBX_ROOT/layers/sha256/${orphan#sha256:}" ] || fail "orphan layer still there"
	[ ! -e "$SBX_ROOT/objects/sha256/${orphan:7:2}/${orphan#sha256:}" ] || fail "orphan blob still there"
	[ -d "$SBX_ROOT/layers/sha256/${kept#sha256:}" ] || fail "a snapshot's layer was removed"
	[ -d "$SBX_ROOT/layers/sha256/${live_l#sha256:}" ] || fail "a live environment's layer was removed"
	[ ! -e "$SBX_ROOT/tmp/blob-leftover" ] || fail "tmp leftover not cleaned"
	# The live environment still works and still sees its layer.
	assert_eq "$(sbx exec "$live" -- cat /root/live)" "live"
	# A second gc removes nothing more.
	out=$(sbx gc --json)
	assert_eq "$(echo "$out" | json_field layers_removed)" ""
	assert_eq "$(sbx exec "$live" -- cat /root/live)" "live"
	# fsck: the manifest of the live env's snapshot is gone but nothing is corrupt.
	expect_status 0 sbx fsck
	sbx rm "$live" > /dev/null
	# Now nothing reaches it.
	out=$(sbx gc --json)
	assert_eq "$(echo "$out" | json_field layers_removed)" "$live_l"
}

t_gc_grace_keeps_young_layers() {
	local id s l out
	unset SBX_GC_GRACE_SECONDS
	id=$(sbx create)
	sbx exec "$id" -- sh -c 'echo y > /root/y'
	s=$(sbx snapshot "$id")
	l=$(snap_layers "$s" | tail -n 1)
	sbx rm "$id" > /dev/null
	rm "$SBX_ROOT/snapshots/sha256/${s#sha256:}.json"
	out=$(sbx gc --json)
	assert_eq "$(echo "$out" | json_field layers_removed)" ""
	assert_eq "$(echo "$out" | json_field layers_kept_young)" "$l"
	out=$(SBX_GC_GRACE_SECONDS=0 sbx gc --json)
	assert_eq "$(echo "$out" | json_field layers_removed)" "$l"
}
