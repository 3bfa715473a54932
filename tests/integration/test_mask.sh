# The host template's mask (src/runtime/mask.c): one tree per store, shared
# read-only by every environment, and the per-environment replay where the
# tree cannot be built.

mask_tree() { ls -d "$SBX_ROOT"/masks/host-*.d 2> /dev/null; }
# Everything about the tree an environment could change: names, types,
# modes, owners, times, contents of links, the opaque flags.
tree_digest() {
	python3 - "$1" << 'EOF'
import os, sys, hashlib
h = hashlib.sha256()
for d, dirs, files in sorted(os.walk(sys.argv[1])):
    for n in sorted([d] + [os.path.join(d, f) for f in dirs + files]):
        st = os.lstat(n)
        x = sorted((a, os.getxattr(n, a, follow_symlinks=False)) for a in os.listxattr(n, follow_symlinks=False))
        h.update(repr((n, st.st_mode, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_rdev,
                       os.readlink(n) if os.path.islink(n) else None, x)).encode())
print(h.hexdigest())
EOF
}
# Whether the root overlay of environment $1 uses a replayed mask (a
# directory of the staging tmpfs) rather than the store's tree.
replayed() { sbx exec "$1" -- sh -c 'grep " / / " /proc/self/mountinfo' | grep -Eq 'mnt/mask[,:]'; }

t_mask_tree_shared_and_unchanged() {
	local a b tree before ino
	a=$(sbx create)
	tree=$(mask_tree)
	[ -n "$tree" ] && [ "$(echo "$tree" | wc -l)" = 1 ] || fail "expected one mask tree, got: '$tree'"
	replayed "$a" && fail "the environment replayed its mask instead of using the store's tree"
	before=$(tree_digest "$tree")
	ino=$(stat -c %i "$tree")
	# Everything the environment's root may try on the mask's entries: a
	# file over a whiteout, into a mirrored and an opaque directory, a
	# whited-out top-level name made again, links and directories removed.
	sbx exec "$a" -- sh -c 'echo x > /etc/shadow; touch /etc/sbx-mask-probe /root/probe /home/probe;
		mkdir -p /srv/probe; rm -f /bin /lib64; rm -rf /var/tmp; chmod 700 /etc; touch -d @0 /usr;
		true'
	sbx rm "$a"
	assert_eq "$(tree_digest "$tree")" "$before" "the mask tree after an environment wrote over it"
	b=$(sbx create)
	assert_eq "$(stat -c %i "$tree")" "$ino" "the second create built the tree again"
	out=$(sbx exec "$b" -- sh -c 'ls -A /root /home; ls /etc/sbx-mask-probe /etc/shadow /srv 2>&1; stat -c %a /etc; readlink /bin')
	assert_contains "$out" "/etc/sbx-mask-probe': No such file"
	assert_contains "$out" "/etc/shadow': No such file"
	assert_contains "$out" "/srv': No such file"
	assert_not_contains "$out" "probe"$'\n'
	assert_contains "$out" "755"
	assert_contains "$out" "usr/bin"
	sbx rm "$b"
}

t_mask_tree_unbuildable_falls_back() {
	local a tree out
	a=$(sbx create)
	sbx rm "$a"
	tree=$(mask_tree)
	[ -n "$tree" ] || fail "no mask tree"
	# A file where the tree belongs: the build's rename fails, every create
	# replays the list into its own tmpfs instead, with the same view.
	rm -rf "$tree"
	touch "$tree"
	a=$(sbx create)
	replayed "$a" || fail "no tree, yet the environment did not replay its mask"
	out=$(sbx exec "$a" -- sh -c 'ls /etc/shadow /srv 2>&1; ls -A /root /home; readlink /bin')
	assert_contains "$out" "/etc/shadow': No such file"
	assert_contains "$out" "/srv': No such file"
	assert_contains "$out" "usr/bin"
	sbx rm "$a"
	[ -f "$tree" ] || fail "the file at the tree's name was replaced"
	[ -z "$(ls -d "$SBX_ROOT"/masks/.tree-* 2> /dev/null)" ] || fail "a failed build left its directory behind"
	rm -f "$tree"
}
