# Attestations: sbx keygen, sbx attest, sbx verify (docs/attest.md), checked
# by sbx itself and by an independent DSSE verifier written here in Python
# with python3-cryptography (PAE recomputed from the spec, Ed25519 checked
# with the .pub PEM).

jget() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d = d[int(k)] if isinstance(d, list) else d[k]
print(d if not isinstance(d,(dict,list)) else json.dumps(d))' "$1"; }

need_cryptography() {
	python3 -c 'import cryptography.hazmat.primitives.asymmetric.ed25519' 2> /dev/null ||
		skip "python3-cryptography is not installed (scripts/deps.sh test)"
}

# The independent verifier: envelope, public key PEM, and optionally the
# expected stdout; prints the statement's subjects as NAME=HEX lines.
independent_verify() {
	python3 - "$@" <<'PY'
import base64, hashlib, json, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
env = json.load(open(sys.argv[1]))
pub = serialization.load_pem_public_key(open(sys.argv[2], "rb").read())
assert isinstance(pub, Ed25519PublicKey), "not an Ed25519 key"
ptype = env["payloadType"]
assert ptype == "application/vnd.in-toto+json", ptype
body = base64.b64decode(env["payload"], validate=True)
t = ptype.encode()
pae = b"DSSEv1 " + str(len(t)).encode() + b" " + t + b" " + str(len(body)).encode() + b" " + body
der = pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
keyid = "sha256:" + hashlib.sha256(der).hexdigest()
sig = env["signatures"][0]
assert sig["keyid"] == keyid, (sig["keyid"], keyid)
pub.verify(base64.b64decode(sig["sig"], validate=True), pae)  # raises InvalidSignature
st = json.loads(body)
assert st["_type"] == "https://in-toto.io/Statement/v1", st["_type"]
assert st["predicateType"] == "https://sbx.dev/attestation/run/v1", st["predicateType"]
subj = {s["name"]: s["digest"]["sha256"] for s in st["subject"]}
if len(sys.argv) > 3:
	want = hashlib.sha256(sys.argv[3].encode()).hexdigest()
	assert subj["stdout"] == want, (subj["stdout"], want)
for k, v in subj.items():
	print(f"{k}={v}")
PY
}

# Re-signs a modified statement with the private key (a validly signed
# envelope that lies): python3 resign.py ENV KEY 'python expression on st'.
resign() {
	python3 - "$@" <<'PY'
import base64, json, sys
from cryptography.hazmat.primitives import serialization
env = json.load(open(sys.argv[1]))
key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), password=None)
st = json.loads(base64.b64decode(env["payload"]))
exec(sys.argv[3])
body = json.dumps(st).encode()
t = env["payloadType"].encode()
pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(body), body)
env["payload"] = base64.b64encode(body).decode()
env["signatures"][0]["sig"] = base64.b64encode(key.sign(pae)).decode()
print(json.dumps(env))
PY
}

# A traced run that prints "hi" and writes /root/f; sets ID and TID.
traced_run() {
	ID=$(sbx create)
	out=$(sbx exec --trace --json "$ID" -- sh -c 'echo hi; echo out > /root/f')
	TID=$(echo "$out" | jget trace_id)
	[[ "$TID" == sha256:* ]] || fail "no trace_id in $out"
	assert_eq "$(echo "$out" | jget stdout)" hi
}

t_attest_and_verify_independently() {
	need_cryptography
	K=$TMPDIR_TEST/k
	kid=$(sbx keygen "$K")
	[[ "$kid" == sha256:* ]] || fail "keygen printed '$kid'"
	assert_eq "$(stat -c %a "$K")" 600
	assert_eq "$(stat -c %a "$K.pub")" 644
	# The key id is the SHA-256 of the public key's DER, as documented.
	assert_eq "sha256:$(openssl pkey -pubin -in "$K.pub" -outform DER | sha256sum | cut -d' ' -f1)" "$kid"
	traced_run
	sbx attest "$TID" --key "$K" -o "$TMPDIR_TEST/env.json"
	# Printed to stdout by default, the same envelope shape.
	sbx attest "$TID" --key "$K" | jget payloadType | grep -qx 'application/vnd.in-toto+json'
	expect_status 0 sbx verify "$TMPDIR_TEST/env.json" --key "$K.pub"
	assert_contains "$OUT" "OK: signed by $kid"
	assert_contains "$OUT" "3 subjects match the store"
	expect_status 0 sbx verify - --key "$K.pub" < "$TMPDIR_TEST/env.json"
	# Independent: PAE, Ed25519, keyid, and stdout's digest = sha256 of "hi\n".
	subj=$(independent_verify "$TMPDIR_TEST/env.json" "$K.pub" $'hi\n') || fail "the independent verifier refused: $subj"
	assert_contains "$subj" "/root/f=$(printf 'out\n' | sha256sum | cut -d' ' -f1)"
	assert_contains "$subj" "stderr=$(printf '' | sha256sum | cut -d' ' -f1)"
	# The predicate names the run.
	pred=$(python3 -c 'import base64,json,sys; print(json.dumps(json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))["predicate"]))' "$TMPDIR_TEST/env.json")
	assert_eq "$(echo "$pred" | jget trace_id)" "$TID"
	assert_eq "$(echo "$pred" | jget snapshot_id)" "$(sbx trace inspect "$TID" | jget snapshot_id)"
	assert_eq "$(echo "$pred" | jget exit_code)" 0
	assert_eq "$(echo "$pred" | jget command.2)" 'echo hi; echo out > /root/f'
	# --json: the MCP tool's shape.
	j=$(sbx attest --json "$TID" --key "$K")
	assert_eq "$(echo "$j" | jget keyid)" "$kid"
	assert_eq "$(echo "$j" | jget subjects.2.name)" /root/f
	v=$(sbx verify --json "$TMPDIR_TEST/env.json" --key "$K.pub")
	assert_eq "$(echo "$v" | jget verified)" True
	# The subjects stay checkable after the environment is gone (blobs in the store).
	sbx rm "$ID"
	expect_status 0 sbx verify "$TMPDIR_TEST/env.json" --key "$K.pub"
}

t_attest_tampering_refused() {
	need_cryptography
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	traced_run
	E=$TMPDIR_TEST/env.json
	sbx attest "$TID" --key "$K" -o "$E"
	kid=$(sbx keygen --json "$TMPDIR_TEST/k1" | jget keyid)
	# A payload changed after signing.
	python3 -c 'import base64,json,sys; e=json.load(open(sys.argv[1])); b=base64.b64decode(e["payload"]).replace(b"echo hi", b"echo HI"); e["payload"]=base64.b64encode(b).decode(); print(json.dumps(e))' "$E" > "$TMPDIR_TEST/p.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/p.json" --key "$K.pub"
	assert_contains "$ERR" "sbx: verify: signature does not match key sha256:"
	# One bit of the signature.
	python3 -c 'import base64,json,sys; e=json.load(open(sys.argv[1])); s=bytearray(base64.b64decode(e["signatures"][0]["sig"])); s[5]^=1; e["signatures"][0]["sig"]=base64.b64encode(bytes(s)).decode(); print(json.dumps(e))' "$E" > "$TMPDIR_TEST/s.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/s.json" --key "$K.pub"
	assert_contains "$ERR" "signature does not match key"
	# Another key.
	expect_status 1 sbx verify "$E" --key "$TMPDIR_TEST/k1.pub"
	assert_eq "$ERR" "sbx: verify: signature does not match key $kid"
	# Another payloadType (signed over, so refused before the signature).
	sed 's#application/vnd.in-toto+json#application/json#' "$E" > "$TMPDIR_TEST/t.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/t.json" --key "$K.pub"
	assert_contains "$ERR" "payloadType 'application/json' is not"
	# Not an envelope at all.
	echo '{"payload":' > "$TMPDIR_TEST/j.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/j.json" --key "$K.pub"
	assert_contains "$ERR" "sbx: verify: envelope: not JSON"
	# Validly signed, but lying about the store: stdout, and a file the store never saw.
	resign "$E" "$K" 'st["subject"][0]["digest"]["sha256"] = "0" * 64' > "$TMPDIR_TEST/l1.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/l1.json" --key "$K.pub"
	assert_eq "$ERR" "sbx: verify: subject 'stdout' digest differs from the store"
	resign "$E" "$K" 'st["subject"][2]["digest"]["sha256"] = "1" * 64' > "$TMPDIR_TEST/l2.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/l2.json" --key "$K.pub"
	assert_contains "$ERR" "subject '/root/f' digest differs from the store"
	resign "$E" "$K" 'st["predicate"]["exit_code"] = 1' > "$TMPDIR_TEST/l3.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/l3.json" --key "$K.pub"
	assert_contains "$ERR" "exit code differs from trace"
	resign "$E" "$K" 'st["predicate"]["filesystem"]["digest"] = "sha256:" + "3" * 64' > "$TMPDIR_TEST/l5.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/l5.json" --key "$K.pub"
	assert_contains "$ERR" "filesystem digest differs from trace"
	resign "$E" "$K" 'st["predicate"]["trace_id"] = "sha256:" + "2" * 64' > "$TMPDIR_TEST/l4.json"
	expect_status 1 sbx verify "$TMPDIR_TEST/l4.json" --key "$K.pub"
	assert_contains "$ERR" "trace sha256:2222"
	# The unmodified one still verifies (the refusals above are not vacuous).
	expect_status 0 sbx verify "$E" --key "$K.pub"
	sbx rm "$ID"
}

t_attest_key_errors_are_one_line() {
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	expect_status 125 sbx keygen "$K"
	assert_eq "$ERR" "sbx: keygen: '$K' exists: refusing to overwrite a key"
	rm "$TMPDIR_TEST/k"
	expect_status 125 sbx keygen "$K"
	assert_eq "$ERR" "sbx: keygen: '$K.pub' exists: refusing to overwrite a key"
	sbx keygen "$TMPDIR_TEST/k2" > /dev/null
	traced_run
	expect_status 125 sbx attest "$TID" --key "$TMPDIR_TEST/none"
	assert_eq "$ERR" "sbx: attest: key '$TMPDIR_TEST/none': no such file"
	expect_status 125 sbx attest "$TID" --key "$TMPDIR_TEST/k2.pub"
	assert_eq "$ERR" "sbx: attest: key '$TMPDIR_TEST/k2.pub': a public key; signing needs the private key"
	chmod 644 "$TMPDIR_TEST/k2"
	expect_status 125 sbx attest "$TID" --key "$TMPDIR_TEST/k2"
	assert_contains "$ERR" "sbx: attest: key '$TMPDIR_TEST/k2': permissions 0644 are too open"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TMPDIR_TEST/ec.pem" 2> /dev/null
	chmod 600 "$TMPDIR_TEST/ec.pem"
	expect_status 125 sbx attest "$TID" --key "$TMPDIR_TEST/ec.pem"
	assert_eq "$ERR" "sbx: attest: key '$TMPDIR_TEST/ec.pem': a key of type EC, not Ed25519"
	echo 'not a key' > "$TMPDIR_TEST/junk"
	chmod 600 "$TMPDIR_TEST/junk"
	expect_status 125 sbx attest "$TID" --key "$TMPDIR_TEST/junk"
	assert_eq "$ERR" "sbx: attest: key '$TMPDIR_TEST/junk': not a PEM private key"
	chmod 600 "$TMPDIR_TEST/k2"
	sbx attest "$TID" --key "$TMPDIR_TEST/k2" -o "$TMPDIR_TEST/env.json"
	expect_status 125 sbx verify "$TMPDIR_TEST/env.json" --key "$TMPDIR_TEST/k2"
	assert_eq "$ERR" "sbx: verify: key '$TMPDIR_TEST/k2': a private key; verifying takes the public key (FILE.pub)"
	expect_status 125 sbx attest "$TID"
	assert_contains "$ERR" "--key FILE"
	[ "$(echo "$ERR" | wc -l)" = 1 ] || fail "more than one line: $ERR"
	sbx rm "$ID"
}

t_attest_refuses_a_changed_or_removed_environment() {
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	traced_run
	sbx exec "$ID" -- sh -c 'echo later > /root/g'
	expect_status 125 sbx attest "$TID" --key "$K"
	assert_contains "$ERR" "has changed since the run"
	sbx exec "$ID" -- rm /root/g
	sbx attest "$TID" --key "$K" > /dev/null
	sbx rm "$ID"
	expect_status 125 sbx attest "$TID" --key "$K"
	assert_contains "$ERR" "is gone"
	# A run that wrote nothing needs no environment afterwards.
	ID=$(sbx create)
	tid=$(sbx exec --trace --json "$ID" -- echo quiet | jget trace_id)
	sbx rm "$ID"
	sbx attest "$tid" --key "$K" -o "$TMPDIR_TEST/q.json"
	expect_status 0 sbx verify "$TMPDIR_TEST/q.json" --key "$K.pub"
	assert_contains "$OUT" "2 subjects"
}

t_attest_subjects_are_regular_files_only() {
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	ID=$(sbx create)
	tid=$(sbx exec --trace --json "$ID" -- sh -c 'mkdir -p /root/d/e; mkfifo /root/p; echo x > /root/d/e/x; printf y > /root/z' | jget trace_id)
	j=$(sbx attest --json "$tid" --key "$K")
	names=$(echo "$j" | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)["subjects"]))')
	assert_eq "$names" "stdout stderr /root/d/e/x /root/z"
	assert_eq "$(echo "$j" | jget subjects.3.digest)" "sha256:$(printf y | sha256sum | cut -d' ' -f1)"
	echo "$j" | jget envelope > "$TMPDIR_TEST/env.json"
	expect_status 0 sbx verify "$TMPDIR_TEST/env.json" --key "$K.pub"
	sbx rm "$ID"
}

t_attest_blobs_survive_gc() {
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	traced_run
	sbx attest "$TID" --key "$K" -o "$TMPDIR_TEST/env.json"
	sbx rm "$ID"
	# The written files' blobs are reached by no snapshot or trace: the
	# attestation itself must keep them.
	SBX_GC_GRACE_SECONDS=0 sbx gc > /dev/null
	expect_status 0 sbx verify "$TMPDIR_TEST/env.json" --key "$K.pub"
	expect_status 0 sbx fsck
}

t_attest_verify_replay() {
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	traced_run
	sbx attest "$TID" --key "$K" --replay -o "$TMPDIR_TEST/env.json"
	verdict=$(python3 -c 'import base64,json,sys; print(json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))["predicate"]["replay"]["verdict"])' "$TMPDIR_TEST/env.json")
	assert_eq "$verdict" match
	expect_status 0 sbx verify "$TMPDIR_TEST/env.json" --key "$K.pub" --replay
	assert_contains "$OUT" "replay MATCH"
	# A run whose replay cannot match: verify alone holds, --replay refuses.
	tid=$(sbx exec --json --trace "$ID" -- sh -c 'cat /proc/self/schedstat; sleep 0.01' | jget trace_id)
	sbx attest "$tid" --key "$K" -o "$TMPDIR_TEST/u.json"
	expect_status 0 sbx verify "$TMPDIR_TEST/u.json" --key "$K.pub"
	expect_status 1 sbx verify "$TMPDIR_TEST/u.json" --key "$K.pub" --replay
	assert_contains "$ERR" "sbx: verify: replay diverged: stdout"
	sbx rm "$ID"
}

t_attest_mcp_tool() {
	K=$TMPDIR_TEST/k
	sbx keygen "$K" > /dev/null
	INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
	ID=$(sbx create)
	TID=$(sbx exec --trace --json "$ID" -- sh -c 'echo hi; echo out > /root/f' | jget trace_id)
	call="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"environment_attest\",\"arguments\":{\"trace_id\":\"$TID\"}}}"
	printf '%s\n' "$INIT" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$call" |
		sbx mcp --attest-key "$K" > "$TMPDIR_TEST/mcp.out"
	grep '"id":1,' "$TMPDIR_TEST/mcp.out" > "$TMPDIR_TEST/r.json" || fail "no answer: $(cat "$TMPDIR_TEST/mcp.out")"
	sc=$(jget result.structuredContent < "$TMPDIR_TEST/r.json")
	assert_eq "$(echo "$sc" | jget keyid)" "$(sbx keygen --json "$TMPDIR_TEST/other" > /dev/null; openssl pkey -pubin -in "$K.pub" -outform DER | sha256sum | sed 's/^/sha256:/; s/ .*//')"
	assert_eq "$(echo "$sc" | jget subjects.0.name)" stdout
	assert_eq "$(echo "$sc" | jget subjects.2.name)" /root/f
	echo "$sc" | jget envelope > "$TMPDIR_TEST/env.json"
	expect_status 0 sbx verify "$TMPDIR_TEST/env.json" --key "$K.pub"
	# Without --attest-key: a tool error, unavailable, saying what to do.
	printf '%s\n' "$INIT" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$call" | sbx mcp > "$TMPDIR_TEST/mcp2.out"
	r=$(grep '"id":1,' "$TMPDIR_TEST/mcp2.out")
	assert_eq "$(echo "$r" | jget result.isError)" True
	assert_eq "$(echo "$r" | jget result.structuredContent.error.code)" unavailable
	assert_contains "$(echo "$r" | jget result.structuredContent.error.message)" "--attest-key FILE"
	# A bad key fails at start, in one line.
	expect_status 125 sbx mcp --attest-key "$K.pub"
	assert_contains "$ERR" "a public key; signing needs the private key"
	expect_status 125 sbx serve --listen 127.0.0.1:1 --attest-key "$TMPDIR_TEST/none"
	assert_eq "$ERR" "sbx: --attest-key: key '$TMPDIR_TEST/none': no such file"
	sbx rm "$ID"
}
