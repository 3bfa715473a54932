# sbx trace html: one self-contained page per trace, loaded for real by
# headless Chromium: its script ran (a marker in the DOM, no script error),
# it shows the process tree the trace has, and a replay's first divergence.

need_chromium() { command -v chromium > /dev/null || skip "SKIP: chromium is not installed (scripts/deps.sh test)"; }

# render PAGE: the DOM after the page's scripts ran ($TMPDIR_TEST/page.dom) and a screenshot.
render() {
	HOME=$TMPDIR_TEST timeout 90 chromium --headless --disable-gpu --no-sandbox --window-size=1400,1400 \
		--user-data-dir="$TMPDIR_TEST/chromium" --screenshot="$TMPDIR_TEST/page.png" --dump-dom "file://$1" \
		> "$TMPDIR_TEST/page.dom" 2> "$TMPDIR_TEST/chromium.err" || fail "chromium failed: $(tail -n 5 "$TMPDIR_TEST/chromium.err")"
	DOM=$(cat "$TMPDIR_TEST/page.dom")
	[ -s "$TMPDIR_TEST/page.png" ] || fail "no screenshot"
	dom_lacks 'id="sbx-error"'
	dom_has 'id="sbx-done"'
}

# The DOM is long: failures name only what was looked for.
dom_has() { [[ "$DOM" == *"$1"* ]] || fail "the rendered page lacks: $1"; }
dom_lacks() { [[ "$DOM" != *"$1"* ]] || fail "the rendered page has: $1"; }

jq_py() { python3 -c "import json,sys; j=json.load(sys.stdin); print(eval(sys.argv[1]))" "$1"; }

trace_run() { # ID CMD: prints the trace id
	sbx exec --trace --json "$1" -- sh -c "$2" | jq_py 'j["trace_id"]'
}

t_trace_html_renders_tree_and_divergence() {
	need_chromium
	mkdir -p "$TMPDIR_TEST/vol"
	echo one > "$TMPDIR_TEST/vol/in.txt"
	ID=$(sbx create -v "$TMPDIR_TEST/vol:/data:ro")
	T=$(trace_run "$ID" 'cat /data/in.txt; ls / > /dev/null; date > /tmp/d')
	procs=$(sbx trace stats --json "$T" | jq_py 'j["processes"]["count"]')
	sbx trace html "$T" -o "$TMPDIR_TEST/t.html" 2> /dev/null
	# Self-contained: nothing fetched from anywhere.
	page=$(cat "$TMPDIR_TEST/t.html")
	for bad in '<link' ' src=' 'http://' 'https://' '@import' 'url('; do
		[[ "$page" != *"$bad"* ]] || fail "the page refers outside itself: $bad"
	done
	render "$TMPDIR_TEST/t.html"
	dom_has "data-processes=\"$procs\""
	[ "$(grep -o 'class="proc"' "$TMPDIR_TEST/page.dom" | wc -l)" = "$procs" ] || fail "process tree rows != $procs"
	dom_has "/usr/bin/cat cat /data/in.txt"
	dom_has "/data/in.txt"
	dom_lacks '<span class="badge'
	# A replay that matches...
	sbx trace html "$T" --replay -o "$TMPDIR_TEST/m.html" 2> /dev/null
	render "$TMPDIR_TEST/m.html"
	dom_has '<span class="badge match">replay: MATCH</span>'
	dom_has "data-replay-processes=\"$procs\"" # the replay's own timeline beside
	dom_lacks 'data-divergence="'
	# ...and, after the input changed, one whose divergence is highlighted on the recording's timeline.
	echo two > "$TMPDIR_TEST/vol/in.txt"
	sbx replay --json "$T" > "$TMPDIR_TEST/replay.json" || true
	idx=$(jq_py 'j["divergence"]["index"]' < "$TMPDIR_TEST/replay.json")
	sbx trace html "$T" --replay="$TMPDIR_TEST/replay.json" -o "$TMPDIR_TEST/d.html" 2> /dev/null
	render "$TMPDIR_TEST/d.html"
	cp "$TMPDIR_TEST/page.png" "${SBX_KEEP_SCREENSHOT:-/dev/null}" 2> /dev/null || true
	dom_has '<span class="badge diverged">replay: DIVERGED</span>'
	dom_has "kind: input   path: /data/in.txt"
	dom_has "data-divergence=\"$idx\""
	dom_has '<tr class="hl"><td class="mono">'"$idx"'</td>'
	sbx rm "$ID"
}

t_trace_html_large_trace_aggregates() {
	need_chromium
	ID=$(sbx create)
	T=$(trace_run "$ID" 'for i in 1 2 3 4 5 6; do ls -R /usr/share/doc > /dev/null; done')
	n=$(sbx trace show --json "$T" | jq_py 'len(j["events"])')
	[ "$n" -gt 20000 ] || fail "only $n events: not a large trace"
	sbx trace html "$T" -o "$TMPDIR_TEST/big.html" 2> /dev/null
	start=$SECONDS
	render "$TMPDIR_TEST/big.html"
	[ $((SECONDS - start)) -lt 60 ] || fail "rendering $n events took $((SECONDS - start)) s"
	dom_has "data-events=\"$n\""
	dom_has "data-processes=\"$(sbx trace stats --json "$T" | jq_py 'j["processes"]["count"]')\""
	sbx rm "$ID"
}

t_trace_html_refusals() {
	expect_status 125 sbx trace html sha256:0000000000000000000000000000000000000000000000000000000000000000
	expect_status 125 sbx trace html
	[ -n "$ERR" ] || fail "no usage message"
}
