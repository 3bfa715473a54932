# valgrind memcheck of the CLI: no leak, no invalid access, on success and
# error paths. (create forks a supervisor that clones namespaces, which
# valgrind cannot follow; its client side is covered by the ASan run.)

t_cli_under_valgrind() {
	command -v valgrind > /dev/null || skip "valgrind is not installed (scripts/deps.sh test installs it)"
	# An ASan build cannot run under valgrind (both replace the allocator);
	# the ASan run covers that binary itself.
	grep -q __asan_init "$SBX_BIN" && skip_ok "the binary is built with AddressSanitizer"
	id=$(sbx create --name vg)
	vg() {
		set +e
		timeout 120 valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
			--errors-for-leak-kinds=definite,indirect,possible --error-exitcode=99 "$SBX_BIN" "$@" \
			> /dev/null 2> "$TMPDIR_TEST/vg.log"
		local rc=$?
		set -e
		# What valgrind says of itself ("--PID--" lines: a syscall it does not
		# know, such as openat2) is noise next to the errors: shown apart.
		vglog() { grep -v '^--[0-9]*-- ' "$TMPDIR_TEST/vg.log" | head -100; }
		[ $rc != 99 ] || { vglog; fail "valgrind found errors in: sbx $*"; }
		# A forked child's errors (a reclaimer, a refiller) do not change
		# the exit status: with -q, any "==PID==" line but a warning about
		# valgrind's own limits is one.
		! grep '^==[0-9]*== ' "$TMPDIR_TEST/vg.log" | grep -qv '^==[0-9]*== Warning: ' ||
			{ vglog; fail "valgrind found errors in a child of: sbx $*"; }
		[ $rc != 124 ] || fail "sbx $* timed out under valgrind"
	}
	vg ls
	vg ls --json
	vg inspect "$id"
	vg ps vg
	vg exec "$id" -- echo hi
	vg exec --json "$id" -- sh -c 'echo x; echo y >&2; exit 3'
	echo input | vg exec -i "$id" -- cat
	vg exec "$id" -- /nonexistent
	vg exec --timeout 200ms "$id" -- sleep 5
	vg exec --trace "$id" -- sh -c 'cat /etc/hostname; exit 2'
	vg exec --deterministic "$id" -- date
	tid=$("$SBX_BIN" trace ls --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["traces"][-1]["trace_id"])')
	vg trace ls
	vg trace show "$tid"
	vg trace show --json "$tid" --syscall openat,read --pid 3
	vg trace stats "$tid"
	vg trace stats --json "$tid"
	vg trace export "$tid" --format chrome -o "$TMPDIR_TEST/c.json"
	vg trace inspect "$tid"
	# Attestations: libcrypto's key code is opened with dlopen on first use.
	vg keygen "$TMPDIR_TEST/k"
	vg keygen "$TMPDIR_TEST/k"
	vg attest "$tid" --key "$TMPDIR_TEST/k" -o "$TMPDIR_TEST/att.json"
	vg verify "$TMPDIR_TEST/att.json" --key "$TMPDIR_TEST/k.pub"
	vg verify "$TMPDIR_TEST/att.json" --key "$TMPDIR_TEST/k"
	vg trace show nosuchtrace
	vg replay nosuchtrace
	vg inspect nosuch
	vg create --memory bogus
	vg create --template dir:/nonexistent
	vg run --bogus
	# sbx run from a pool (a cold one cannot run under valgrind: it knows
	# neither open_tree nor pidfd_open; without pidfd_open the one-shot
	# binding falls back to an ordinary take and removal, whose reclaimer is
	# a fork valgrind follows).
	"$SBX_BIN" pool set host --size 1 > /dev/null
	for _ in $(seq 300); do
		"$SBX_BIN" pool ls --json | grep -q '"ready": 1' && break
		sleep 0.05
	done
	vg run --json -- true
	"$SBX_BIN" pool rm host > /dev/null
	vg --help
	vg rm "$id"
	vg rm "$id"
	vg gc
}
