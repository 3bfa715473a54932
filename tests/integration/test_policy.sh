# Policies: built-in profiles, files, narrowing-only composition with options.

t_policy_cli() {
	out=$(sbx policy ls)
	assert_contains "$out" "strict"
	assert_contains "$out" "dev"
	assert_contains "$out" "open"
	assert_contains "$out" "the default: no network" # each with its description (sbx_policy_list)
	sbx policy show dev | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "pypi.org" in d["network"]["allow"], d'
	echo '{"name":"mine","network":{"mode":"allow","allow":["example.com:443"]},"limits":{"memory_bytes":134217728}}' > "$TMPDIR_TEST/ok.json"
	assert_contains "$(sbx policy check "$TMPDIR_TEST/ok.json")" "valid"
	echo '{"network":{"mode":"allow","allow":["*"]}}' > "$TMPDIR_TEST/bad.json"
	expect_status 125 sbx policy check "$TMPDIR_TEST/bad.json"
	assert_contains "$ERR" "network.allow[0]"
	echo '{"limits":{"memory_bytes":"lots"}}' > "$TMPDIR_TEST/bad2.json"
	expect_status 125 sbx policy check "$TMPDIR_TEST/bad2.json"
	assert_contains "$ERR" "limits.memory_bytes"
	expect_status 125 sbx policy show nosuch
}

t_strict_applies_and_cannot_be_widened() {
	is_root || skip_ok "limits need cgroups (root)"
	id=$(sbx create --policy strict 2> /dev/null)
	sbx inspect "$id" | python3 -c "
import json,sys
i=json.load(sys.stdin); l=i['limits']
assert l['memory_bytes']==512*1024*1024 and l['pids']==256 and l['cpus']==1.0, l
assert i['network']=='none' and i['policy']=='strict', i
"
	sbx rm "$id"
	# Narrowing is fine, widening is refused with the field named.
	id=$(sbx create --policy strict --memory 64m 2> /dev/null)
	sbx rm "$id"
	expect_status 125 sbx create --policy strict --memory 8g
	assert_contains "$ERR" "memory"
	expect_status 125 sbx create --policy strict --network open
	assert_contains "$ERR" "network"
	expect_status 125 sbx create --policy strict --pids 100000
}

t_policy_file_allowlist_is_a_ceiling() {
	echo '{"name":"web","network":{"mode":"allow","allow":["*.example.com:443","pypi.org"]}}' > "$TMPDIR_TEST/web.json"
	id=$(sbx create --policy "$TMPDIR_TEST/web.json")
	sbx inspect "$id" | python3 -c "import json,sys; i=json.load(sys.stdin); assert i['network']=='allow' and 'pypi.org' in i['network_allow'], i"
	sbx rm "$id"
	id=$(sbx create --policy "$TMPDIR_TEST/web.json" --network allow=api.example.com:443)
	sbx rm "$id"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/web.json" --network allow=evil.com
	assert_contains "$ERR" "not within the policy"
	# Secrets are read from the host at create (tests/integration/test_secrets.sh).
	echo '{"secrets":{"SBX_T_UNSET":{"env":true}}}' > "$TMPDIR_TEST/sec.json"
	expect_status 125 sbx create --policy "$TMPDIR_TEST/sec.json"
	assert_contains "$ERR" "SBX_T_UNSET is not set"
}
