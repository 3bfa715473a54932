# The rest of E2B's control plane on `sbx serve` (src/server/e2b_ctl_extra.c):
# the deprecated POST /sandboxes/{id}/resume, POST .../refreshes, the logs
# (v1 and v2) and GET /sandboxes/metrics, each also attacked: unknown ids,
# a wrong key, bad bodies and parameters.

source "${SBX_SRC:-.}/tests/integration/e2b_lib.sh"

# api METHOD PATH [BODY [KEY]]: "STATUS BODY" of one control-plane call
# (KEY: the X-API-Key, default the server's).
api() {
	local args=(-s -o "$TMPDIR_TEST/api.out" -w '%{http_code}' -X "$1" -H "X-API-Key: ${4:-$E2B_KEY}")
	[ -n "${3:-}" ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	local code
	code=$(curl "${args[@]}" "$E2B_URL$2") || code="000"
	printf '%s %s' "$code" "$(cat "$TMPDIR_TEST/api.out" 2> /dev/null)"
}
# status METHOD PATH [BODY [KEY]]: the status alone.
status() { api "$@" | cut -d' ' -f1; }
# create [BODY]: a new sandbox's id.
create() {
	local out body=${1:-'{}'}
	out=$(api POST /sandboxes "$body")
	[ "${out%% *}" = 201 ] || fail "create: $out"
	printf '%s' "${out#* }" | jq -r .sandboxID
}
end_at() { api GET "/sandboxes/$1" | cut -d' ' -f2- | jq -r .endAt; }
wrong_key() { printf 'e2b_%s' "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; }

t_e2b_ctl_resume() {
	e2b_start
	local id out
	id=$(create '{"timeout":120}')
	assert_eq "$(status POST "/sandboxes/$id/resume" '{}')" 409 "resume of a running sandbox"
	assert_eq "$(status POST "/sandboxes/$id/pause")" 204
	assert_eq "$(api GET "/sandboxes/$id" | cut -d' ' -f2- | jq -r .state)" paused
	# attacks first, while it is paused: none may resume it
	assert_eq "$(status POST "/sandboxes/$id/resume" '{}' "$(wrong_key)")" 401 "wrong key"
	assert_eq "$(status POST "/sandboxes/$id/resume" '{"timeout":')" 400 "bad JSON"
	assert_eq "$(status POST "/sandboxes/$id/resume" '[1]')" 400 "not an object"
	assert_eq "$(status POST "/sandboxes/$id/resume" '{"timeout":-1}')" 400 "negative timeout"
	assert_eq "$(status POST "/sandboxes/$id/resume" '{"timeout":99999999999}')" 400 "huge timeout"
	assert_eq "$(status POST "/sandboxes/$id/resume" '{"timeout":"60"}')" 400 "timeout a string"
	assert_eq "$(status POST "/sandboxes/$id/resume" '{"autoPause":"yes"}')" 400 "autoPause a string"
	assert_eq "$(status POST /sandboxes/nosuchsandbox/resume '{}')" 404 "unknown id"
	assert_eq "$(status POST '/sandboxes/NOT..valid/resume' '{}')" 404 "invalid id"
	assert_eq "$(api GET "/sandboxes/$id" | cut -d' ' -f2- | jq -r .state)" paused
	out=$(api POST "/sandboxes/$id/resume" '{"timeout":90,"autoPause":true}')
	assert_eq "${out%% *}" 201 "resume: $out"
	assert_eq "$(printf '%s' "${out#* }" | jq -r .sandboxID)" "$id"
	[ -n "$(printf '%s' "${out#* }" | jq -r '.envdAccessToken // empty')" ] || fail "no envdAccessToken: $out"
	assert_eq "$(api GET "/sandboxes/$id" | cut -d' ' -f2- | jq -r .state)" running
	# the deadline is now + 90 s (not the 120 s of create, nor connect's 300)
	local end now
	end=$(date -d "$(end_at "$id")" +%s)
	now=$(date +%s)
	[ "$end" -ge $((now + 80)) ] && [ "$end" -le $((now + 95)) ] || fail "endAt $end, now $now"
	assert_eq "$(status POST "/sandboxes/$id/resume" '{}')" 409 "resumed twice"
	assert_eq "$(status DELETE "/sandboxes/$id")" 204
	assert_eq "$(status POST "/sandboxes/$id/resume" '{}')" 404 "resume of a killed sandbox"
	e2b_alive
}

t_e2b_ctl_refreshes() {
	e2b_start
	local id e0 e1 e2
	id=$(create '{"timeout":30}')
	e0=$(date -d "$(end_at "$id")" +%s)
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":600}')" 204
	e1=$(date -d "$(end_at "$id")" +%s)
	[ "$e1" -ge $((e0 + 500)) ] || fail "refresh 600 s did not extend: $e0 -> $e1"
	# never shortens
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":1}')" 204
	e2=$(date -d "$(end_at "$id")" +%s)
	assert_eq "$e2" "$e1" "a short refresh shortened the deadline"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":0}')" 204
	assert_eq "$(date -d "$(end_at "$id")" +%s)" "$e1"
	# attacks
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":3601}')" 400 "past the spec's maximum"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":-5}')" 400 "negative"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":1e308}')" 400 "a real"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":18446744073709551616}')" 400 "too big"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":"60"}')" 400 "a string"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":')" 400 "bad JSON"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '"x"')" 400 "not an object"
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":60}' "$(wrong_key)")" 401 "wrong key"
	assert_eq "$(status POST /sandboxes/nosuchsandbox/refreshes '{"duration":60}')" 404 "unknown id"
	assert_eq "$(date -d "$(end_at "$id")" +%s)" "$e1" "an attack moved the deadline"
	# a paused sandbox has no deadline running: 404, as E2B answers
	assert_eq "$(status POST "/sandboxes/$id/pause")" 204
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":60}')" 404 "paused"
	assert_eq "$(status DELETE "/sandboxes/$id")" 204
	assert_eq "$(status POST "/sandboxes/$id/refreshes" '{"duration":60}')" 404 "killed"
	e2b_alive
}

# The logs are the server's events for the sandbox: its creation, each
# command (pid, cmd, exit code), pause and resume; v1's shape and v2's
# (cursor, direction, level, search), and the ring's bound under a flood.
t_e2b_ctl_logs() {
	need_e2b_sdk
	e2b_start
	local id out
	id=$(create)
	out=$(e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const s = await Sandbox.connect('$id');
		await s.commands.run('echo hello-logs');
		try { await s.commands.run('exit 3'); } catch (e) {}
		await s.pause();
		await Sandbox.connect('$id');
	" 2>&1) || fail "SDK: $out; the server said: $(tail -60 "$TMPDIR_TEST/serve.err")"
	out=$(api GET "/sandboxes/$id/logs")
	assert_eq "${out%% *}" 200 "logs: $out"
	local body=${out#* }
	assert_eq "$(jq -r '.logEntries | map(.message) | join("|")' <<< "$body")" \
		"sandbox created|process started|process exited|process started|process exited|sandbox paused|sandbox resumed"
	assert_eq "$(jq -r '.logEntries[0].fields.templateID' <<< "$body")" base
	assert_contains "$(jq -r '.logEntries[1].fields.cmd' <<< "$body")" "echo hello-logs"
	[ "$(jq -r '.logEntries[1].fields.pid' <<< "$body")" -gt 0 ] || fail "no pid: $body"
	assert_eq "$(jq -r '.logEntries[2].fields.exitCode + " " + .logEntries[2].level' <<< "$body")" "0 info"
	assert_eq "$(jq -r '.logEntries[4].fields.exitCode + " " + .logEntries[4].level' <<< "$body")" "3 warn"
	assert_eq "$(jq -r '.logs | length' <<< "$body")" 7
	assert_eq "$(jq -r '.logs[0].line | fromjson | .message' <<< "$body")" "sandbox created"
	[[ "$(jq -r '.logEntries[0].timestamp' <<< "$body")" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$ ]] ||
		fail "not ISO-8601: $body"
	# v1: start and limit
	local t3
	t3=$(date -d "$(jq -r '.logEntries[3].timestamp' <<< "$body")" +%s%3N)
	assert_eq "$(api GET "/sandboxes/$id/logs?limit=2" | cut -d' ' -f2- | jq -r '.logEntries | length')" 2
	assert_eq "$(api GET "/sandboxes/$id/logs?start=$t3" | cut -d' ' -f2- | jq -r '.logEntries[0].message')" \
		"process started"
	assert_eq "$(api GET "/sandboxes/$id/logs?limit=99999999" | cut -d' ' -f2- | jq -r '.logEntries | length')" 7
	# v2: its own shape and parameters
	out=$(api GET "/v2/sandboxes/$id/logs?direction=backward&limit=1")
	assert_eq "${out%% *}" 200 "v2: $out"
	assert_eq "$(jq -r '.logs | length' <<< "${out#* }")" 1
	assert_eq "$(jq -r '.logs[0].message' <<< "${out#* }")" "sandbox resumed"
	assert_eq "$(jq -r 'has("logEntries")' <<< "${out#* }")" false
	assert_eq "$(api GET "/v2/sandboxes/$id/logs?level=warn" | cut -d' ' -f2- | jq -r '.logs | map(.fields.exitCode) | join(",")')" 3
	assert_eq "$(api GET "/v2/sandboxes/$id/logs?search=paused" | cut -d' ' -f2- | jq -r '.logs | length')" 1
	assert_eq "$(api GET "/v2/sandboxes/$id/logs?cursor=$t3&limit=2" | cut -d' ' -f2- | jq -r '.logs | map(.message) | join("|")')" \
		"process started|process exited"
	# attacks
	local q
	for q in 'limit=-1' 'limit=abc' 'start=-5' 'start=99999999999999999999999' 'limit=1e3'; do
		assert_eq "$(status GET "/sandboxes/$id/logs?$q")" 400 "v1 $q"
	done
	for q in 'limit=1001' 'limit=-1' 'cursor=x' 'direction=up' 'level=fatal' \
		"search=$(head -c 300 /dev/zero | tr '\0' a)"; do
		assert_eq "$(status GET "/v2/sandboxes/$id/logs?$q")" 400 "v2 $q"
	done
	assert_eq "$(status GET "/sandboxes/$id/logs" '' "$(wrong_key)")" 401 "wrong key"
	assert_eq "$(status GET "/v2/sandboxes/$id/logs" '' "$(wrong_key)")" 401 "wrong key v2"
	assert_eq "$(status GET /sandboxes/nosuchsandbox/logs)" 404 "unknown id"
	assert_eq "$(status GET /v2/sandboxes/nosuchsandbox/logs)" 404 "unknown id v2"
	# a sandbox's logs are its own: another's are not in them
	local other
	other=$(create)
	assert_eq "$(api GET "/sandboxes/$other/logs" | cut -d' ' -f2- | jq -r '.logEntries | length')" 1
	# a flood of commands: the ring keeps the newest E2B_EVENTS_PER_SANDBOX (128)
	out=$(E2B_NODE_TIMEOUT=300 e2b_node --input-type=module -e "
		import { Sandbox } from 'e2b';
		const s = await Sandbox.connect('$other');
		for (let i = 0; i < 70; i++) await s.commands.run('true #' + i);
	" 2>&1) || fail "SDK flood: $out; the server said: $(tail -60 "$TMPDIR_TEST/serve.err")"
	out=$(api GET "/sandboxes/$other/logs" | cut -d' ' -f2-)
	assert_eq "$(jq -r '.logEntries | length' <<< "$out")" 128
	assert_eq "$(jq -r '.logEntries[-1].fields.cmd' <<< "$out")" "/bin/bash -l -c true #69"
	# a fork starts its own logs, naming its parent
	local fork
	out=$(api POST "/sandboxes/$id/fork" '{}')
	assert_eq "${out%% *}" 201 "fork: $out"
	fork=$(jq -r '.[0].sandbox.sandboxID' <<< "${out#* }")
	assert_eq "$(api GET "/sandboxes/$fork/logs" | cut -d' ' -f2- | jq -r '.logEntries | map(.message + " " + .fields.forkOf) | join("|")')" \
		"sandbox created $id"
	assert_eq "$(status DELETE "/sandboxes/$fork")" 204
	# killed: its logs go with it
	assert_eq "$(status DELETE "/sandboxes/$id")" 204
	assert_eq "$(status GET "/sandboxes/$id/logs")" 404 "logs of a killed sandbox"
	e2b_alive
}

t_e2b_ctl_metrics() {
	e2b_start
	local a b own out
	a=$(create)
	b=$(create)
	own=$(sbx create) # an sbx environment, not an E2B sandbox of this server
	out=$(api GET "/sandboxes/metrics?sandbox_ids=$a,$b,nosuchsandbox,$own,$a")
	assert_eq "${out%% *}" 200 "metrics: $out"
	local body=${out#* }
	assert_eq "$(jq -r '.sandboxes | keys | sort | join(",")' <<< "$body")" "$(printf '%s\n' "$a" "$b" | sort | paste -sd,)"
	assert_eq "$(jq -r ".sandboxes[\"$a\"] | [has(\"timestampUnix\"), has(\"cpuUsedPct\"), has(\"memTotal\"), has(\"diskTotal\")] | all" <<< "$body")" true
	[ "$(jq -r ".sandboxes[\"$a\"].memUsed" <<< "$body")" -gt 0 ] || fail "memUsed: $body"
	[ "$(jq -r ".sandboxes[\"$b\"].cpuCount" <<< "$body")" -ge 1 ] || fail "cpuCount: $body"
	# a paused sandbox has no metrics (as GET /sandboxes/{id}/metrics)
	assert_eq "$(status POST "/sandboxes/$b/pause")" 204
	assert_eq "$(api GET "/sandboxes/metrics?sandbox_ids=$b" | cut -d' ' -f2-)" '{"sandboxes":{}}'
	# attacks
	local many
	many=$(seq -s, 1 101)
	assert_eq "$(status GET /sandboxes/metrics)" 400 "no sandbox_ids"
	assert_eq "$(status GET '/sandboxes/metrics?sandbox_ids=')" 400 "empty"
	assert_eq "$(status GET "/sandboxes/metrics?sandbox_ids=$a,,$b")" 400 "an empty id"
	assert_eq "$(status GET "/sandboxes/metrics?sandbox_ids=$many")" 400 "101 ids"
	assert_eq "$(status GET "/sandboxes/metrics?sandbox_ids=$(head -c 100 /dev/zero | tr '\0' a)")" 400 "a long id"
	assert_eq "$(status GET "/sandboxes/metrics?sandbox_ids=$a" '' "$(wrong_key)")" 401 "wrong key"
	assert_eq "$(api GET '/sandboxes/metrics?sandbox_ids=nosuch,..%2F..' | cut -d' ' -f2-)" '{"sandboxes":{}}'
	sbx rm -f "$own" > /dev/null 2>&1 || sbx rm "$own" > /dev/null
	e2b_alive
}
