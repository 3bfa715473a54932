# `make install` and the library as an outside program uses it: the README's
# C example built with pkg-config against an installed tree, shared and static.

t_install_and_build_against_it() {
	command -v pkg-config > /dev/null || skip "pkg-config is not installed (scripts/deps.sh build installs it)"
	local d="$TMPDIR_TEST/inst"
	make -s -C "$SBX_SRC" BUILD="${SBX_BUILD:-build}" install PREFIX=/usr DESTDIR="$d" > /dev/null
	for f in usr/bin/sbx usr/bin/sbx-runc usr/lib/libsbx.so usr/lib/libsbx.so.0 usr/lib/libsbx.a usr/include/sbx.h \
		usr/include/sbx_plugin.h usr/lib/pkgconfig/sbx.pc usr/share/man/man1/sbx.1 \
		usr/share/man/man1/sbx-runc.1; do
		[ -e "$d/$f" ] || fail "make install did not install $f"
	done
	# The man pages are the --help texts (scripts/mkman.sh), each command's too.
	if command -v man > /dev/null; then
		page=$(MANWIDTH=100 man -l "$d/usr/share/man/man1/sbx.1" 2> "$TMPDIR_TEST/man.err")
		[ ! -s "$TMPDIR_TEST/man.err" ] || fail "man -l sbx.1 complained: $(cat "$TMPDIR_TEST/man.err")"
		assert_contains "$page" "sbx - sandboxed environments for AI agents"
		assert_contains "$page" "sbx run"
		# Every group's commands get their section, the last group's too.
		assert_contains "$page" "sbx fsck"
		assert_contains "$page" "sbx serve"
		assert_contains "$page" "--network MODE"
		assert_contains "$(MANWIDTH=100 man -l "$d/usr/share/man/man1/sbx-runc.1")" "sbx-runc [--root DIR]"
	fi
	export PKG_CONFIG_PATH="$d/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$d"
	# shellcheck disable=SC2046
	cc -o "$TMPDIR_TEST/hello" "$SBX_SRC/examples/hello.c" $(pkg-config --cflags --libs sbx) -Wl,-rpath,"$d/usr/lib"
	# shellcheck disable=SC2046
	cc -static-libgcc -o "$TMPDIR_TEST/hello-static" "$SBX_SRC/examples/hello.c" $(pkg-config --cflags sbx) \
		-Wl,-Bstatic $(pkg-config --static --libs sbx | sed 's/-lm//') -Wl,-Bdynamic -lm
	ldd "$TMPDIR_TEST/hello" | grep -q "$d/usr/lib/libsbx.so.0" || fail "hello is not linked to the installed libsbx.so.0: $(ldd "$TMPDIR_TEST/hello")"
	if ldd "$TMPDIR_TEST/hello-static" | grep -q libsbx; then fail "hello-static still needs libsbx.so"; fi
	assert_eq "$("$TMPDIR_TEST/hello")" "exit 0: 42"
	assert_eq "$("$TMPDIR_TEST/hello-static")" "exit 0: 42"
	make -s -C "$SBX_SRC" BUILD="${SBX_BUILD:-build}" uninstall PREFIX=/usr DESTDIR="$d" > /dev/null
	[ -z "$(find "$d" -type f -o -type l)" ] || fail "make uninstall left: $(find "$d" -type f -o -type l)"
}

# README: plain `make` builds the CLI and the library (the BPF rules come
# first in the Makefile; once they made it build only the BPF object).
t_plain_make_builds_the_cli_and_library() {
	local plan
	plan=$(make -n -C "$SBX_SRC" BUILD="$TMPDIR_TEST/b" 2> /dev/null)
	for f in bin/sbx lib/libsbx.a lib/libsbx.so; do
		grep -q -- "-o $TMPDIR_TEST/b/$f\b\|$TMPDIR_TEST/b/$f " <<< "$plan" || fail "plain make does not build $f"
	done
}
