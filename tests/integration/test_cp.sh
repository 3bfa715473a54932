# sbx cp: files and trees between the host and an environment, `docker cp`
# destinations, and what comes out of an environment treated as hostile.

t_cp_files_both_ways() {
	ID=$(sbx create)
	local d=$TMPDIR_TEST
	printf '#!/bin/sh\necho ran\n' > "$d/script"
	chmod 750 "$d/script"
	sbx cp "$d/script" "$ID:/root/" # into an existing directory, own name
	assert_eq "$(sbx exec "$ID" -- /root/script)" "ran"
	assert_eq "$(sbx exec "$ID" -- stat -c %a /root/script)" "750"
	sbx cp "$d/script" "$ID:/root/renamed" # a new name
	assert_eq "$(sbx exec "$ID" -- cat /root/renamed)" "$(cat "$d/script")"
	sbx exec "$ID" -- sh -c 'head -c 100000 /dev/urandom > /tmp/blob'
	sbx cp "$ID:/tmp/blob" "$d/"
	sbx cp "$ID:/tmp/blob" "$d/blob2"
	assert_eq "$(sha256sum < "$d/blob")" "$(sbx exec "$ID" -- sh -c 'sha256sum < /tmp/blob')"
	cmp "$d/blob" "$d/blob2"
	sbx rm "$ID"
}

t_cp_tree_round_trip() {
	ID=$(sbx create)
	local d=$TMPDIR_TEST/tree
	mkdir -p "$d/a/b/c" "$d/empty" "$d/with space"
	echo one > "$d/a/1"
	head -c 70000 /dev/urandom > "$d/a/b/bin"
	printf 'x' > "$d/with space/f"
	ln -s ../1 "$d/a/b/up"
	ln -s /etc/passwd "$d/abs"
	chmod 700 "$d/a/b/c"
	chmod 640 "$d/a/1"
	touch -d '2001-02-03 04:05:06' "$d/a/1"
	sbx cp "$d" "$ID:/root/"
	out=$(sbx exec "$ID" -- sh -c 'cd /root/tree && find . | sort && readlink a/b/up abs && stat -c "%a %Y" a/1 a/b/c')
	assert_contains "$out" "./with space/f"
	assert_contains "$out" "./empty"
	assert_contains "$out" "../1"
	assert_contains "$out" "/etc/passwd"
	assert_contains "$out" "640 $(stat -c %Y "$d/a/1")"
	assert_contains "$out" "700 "
	# and back out: the same tree
	sbx cp "$ID:/root/tree" "$TMPDIR_TEST/back"
	diff -r --no-dereference "$d" "$TMPDIR_TEST/back"
	assert_eq "$(readlink "$TMPDIR_TEST/back/abs")" "/etc/passwd"
	assert_eq "$(stat -c %a "$TMPDIR_TEST/back/a/1")" "640"
	# into an existing directory: merged
	sbx cp "$d/a" "$ID:/root/tree/"
	assert_eq "$(sbx exec "$ID" -- cat /root/tree/a/1)" "one"
	sbx rm "$ID"
}

# The environment controls the tree it hands out: links pointing out of the
# destination are copied as links and never followed, setuid bits and
# devices do not reach the host, nothing is written outside the destination.
t_cp_out_of_a_hostile_environment() {
	ID=$(sbx create)
	local outside=$TMPDIR_TEST/outside
	mkdir -p "$outside"
	sbx exec "$ID" -- sh -c "mkdir -p /root/evil && cd /root/evil &&
		ln -s $outside escape && ln -s ../../../../../../$outside rel &&
		echo payload > plain && cp /bin/true suid && chmod 4755 suid && mkfifo fifo"
	sbx cp "$ID:/root/evil" "$TMPDIR_TEST/got"
	[ -z "$(ls -A "$outside")" ] || fail "cp wrote outside the destination: $(ls -A "$outside")"
	[ -L "$TMPDIR_TEST/got/escape" ] || fail "escape is not a symlink"
	assert_eq "$(readlink "$TMPDIR_TEST/got/escape")" "$outside"
	assert_eq "$(cat "$TMPDIR_TEST/got/plain")" "payload"
	assert_eq "$(stat -c %a "$TMPDIR_TEST/got/suid")" "755"
	# A destination that already holds a link out: the copy does not follow it.
	mkdir -p "$TMPDIR_TEST/got2"
	ln -s "$outside" "$TMPDIR_TEST/got2/evil"
	expect_status 125 sbx cp "$ID:/root/evil" "$TMPDIR_TEST/got2/"
	[ -z "$(ls -A "$outside")" ] || fail "cp followed a symlink in the destination"
	sbx rm "$ID"
}

t_cp_errors_are_one_line() {
	ID=$(sbx create)
	expect_status 125 sbx cp "$ID:/nonexistent" "$TMPDIR_TEST/x"
	assert_contains "$ERR" "sbx: cp: copy from '/nonexistent': no such file or directory"
	expect_status 125 sbx cp "$TMPDIR_TEST/nonexistent" "$ID:/root/"
	assert_contains "$ERR" "No such file or directory"
	expect_status 125 sbx cp "$ID:/a" "$ID:/b"
	assert_contains "$ERR" "both sides"
	expect_status 125 sbx cp /etc/hostname /tmp/x
	assert_contains "$ERR" "ID:PATH"
	ln -s /etc "$TMPDIR_TEST/link"
	expect_status 125 sbx cp "$TMPDIR_TEST/link" "$ID:/root/"
	assert_contains "$ERR" "symbolic link"
	expect_status 125 sbx cp /etc/hostname "$ID:/no/such/dir/f"
	assert_contains "$ERR" "no such file or directory"
	expect_status 125 sbx cp /etc/hostname nosuchenv:/root/
	assert_contains "$ERR" "no such environment"
	sbx rm "$ID"
}

# In an environment whose user is not root, a copy acts as that user: it
# cannot write where the user cannot, and what it writes is the user's.
t_cp_as_the_environments_user() {
	is_root || skip_ok "rootless maps one uid: there is no other user"
	ID=$(sbx create --user nobody)
	echo data > "$TMPDIR_TEST/f"
	mkdir -p "$TMPDIR_TEST/tree/sub"
	echo x > "$TMPDIR_TEST/tree/sub/y"
	expect_status 125 sbx cp "$TMPDIR_TEST/f" "$ID:/etc/"
	assert_contains "$ERR" "ermission denied"
	expect_status 125 sbx cp "$TMPDIR_TEST/tree" "$ID:/etc/"
	sbx cp "$TMPDIR_TEST/f" "$ID:/tmp/"
	sbx cp "$TMPDIR_TEST/tree" "$ID:/tmp/"
	assert_eq "$(sbx exec "$ID" -- stat -c %U /tmp/f /tmp/tree/sub/y | sort -u)" "nobody"
	expect_status 125 sbx cp "$ID:/etc/shadow" "$TMPDIR_TEST/shadow"
	sbx rm "$ID"
}
