#!/usr/bin/env bash
# Runs every t_* function of one integration test file, each in a subshell
# with a fresh SBX_ROOT/SBX_RUN, and writes "passed failed skipped" to $2.
# A test fails by returning non-zero (use the helpers in lib.sh); it skips by
# calling `skip "reason"` (exit 77). Leftover processes, mounts and cgroups
# of the test's environments are checked after each test.
set -u
file=$1
result=$2
source "$(dirname "$0")/lib.sh"
source "$file"
passed=0 failed=0 skipped=0

# The process $1 and every process below it, one pid a line.
harness_tree() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ kids[$2] = kids[$2] " " $1 }
		END {
			n = split(root, q, " ")
			for (i = 1; i <= n; i++) {
				print q[i]
				m = split(kids[q[i]], k, " ")
				for (j = 1; j <= m; j++) q[++n] = k[j]
			}
		}'
}

# A watchdog per test: one still running after SBX_TEST_TIMEOUT seconds (900
# by default) is killed with every process under it and fails, named, instead
# of holding the whole run until CI's limit. It is the harness's child, not
# the test's, so a test's bare `wait` does not wait for it. $1: the test's
# directory, where the test writes its pid; $2: its name.
harness_watchdog() {
	local limit=${SBX_TEST_TIMEOUT:-900} s pid
	sleep "$limit" &
	s=$!
	trap 'kill $s 2> /dev/null; exit 0' TERM
	wait $s
	pid=$(cat "$1/pid" 2> /dev/null) || exit 0
	echo "harness: $2 still running after ${limit}s: killed" >> "$1/out"
	# stopped first, so none of them forks past the second look
	kill -STOP $(harness_tree "$pid") 2> /dev/null
	kill -KILL $(harness_tree "$pid") 2> /dev/null
}

tests=$(declare -F | awk '{print $3}' | grep '^t_' || true)
for t in $tests; do
	[ -n "${SBX_TEST_ONLY:-}" ] && [[ "$t" != *"$SBX_TEST_ONLY"* ]] && continue
	tmp=$(mktemp -d /tmp/sbxtest.XXXXXX)
	chmod 755 "$tmp"
	start=$(date +%s.%N)
	harness_watchdog "$tmp" "$t" &
	watchdog=$!
	(
		echo "$BASHPID" > "$tmp/pid"
		export SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run" TMPDIR_TEST="$tmp"
		set -e
		$t
	) > "$tmp/out" 2>&1
	rc=$?
	kill $watchdog 2> /dev/null
	wait $watchdog 2> /dev/null
	# Hygiene: after the test, gc must leave nothing behind.
	if [ $rc = 0 ]; then
		SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run" check_clean "$tmp" >> "$tmp/out" 2>&1 || rc=1
	else
		# A failed test may have left pools (whose refiller may still be
		# making an entry) and live environments: remove them too, pools first.
		SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run" timeout 30 "$SBX_BIN" pool ls --json 2> /dev/null |
			python3 -c 'import json, sys
for p in json.load(sys.stdin)["pools"]:
    print(" ".join([p["source"]] + (["--policy", p["policy"]] if p.get("policy") else []) + (["--code"] if p.get("code") else [])))' 2> /dev/null |
			while read -r args; do
				# shellcheck disable=SC2086
				SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run" timeout 30 "$SBX_BIN" pool rm $args > /dev/null 2>&1 || true
			done
		for id in $(ls "$tmp/root/envs" 2> /dev/null | grep -E '^[0-9a-f]{12}$'); do
			SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run" timeout 30 "$SBX_BIN" rm "$id" > /dev/null 2>&1 || true
		done
		SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run" timeout 30 "$SBX_BIN" gc > /dev/null 2>&1 || true
	fi
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')
	if [ $rc = 0 ]; then
		passed=$((passed + 1))
		echo "ok   $t (${secs}s)"
	elif [ $rc = 77 ]; then
		if [ "${SBX_TEST_STRICT:-0}" = 1 ] && ! grep -q 'SKIP-OK' "$tmp/out"; then
			failed=$((failed + 1))
			echo "FAIL $t (skipped in strict mode: $(tail -n 1 "$tmp/out"))"
		else
			skipped=$((skipped + 1))
			echo "SKIP $t: $(tail -n 1 "$tmp/out")"
		fi
	else
		failed=$((failed + 1))
		echo "FAIL $t (${secs}s)"
		sed 's/^/     | /' "$tmp/out" | tail -n 40
	fi
	rm -rf "$tmp" 2>/dev/null || { chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"; }
done
echo "$passed $failed $skipped" > "$result"
