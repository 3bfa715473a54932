/* Attestations: DSSE's PAE and base64 (against the spec's vectors), the
 * envelope parser's refusals, Ed25519 keys and signatures (the DSSE test
 * vectors' RFC 8032 key), key files and their errors, the statement. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/attest_key.h"
#include "store/attest_stmt.h"
#include "store/digest.h"
#include "unit.h"
#include "util/dsse.h"
#include "util/json.h"

static void hex_to(const char *hex, unsigned char *out)
{
	for (size_t i = 0; hex[2 * i]; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

static char *to_hex(const void *p, size_t n)
{
	char *s = malloc(2 * n + 1);
	for (size_t i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", ((const unsigned char *)p)[i]);
	s[2 * n] = 0;
	return s;
}

/* The DSSE test vectors' key A (RFC 8032 section 7.1, test 1). */
static const char key_a_seed[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char key_a_pub[] = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
static const char stmt_b64[] = "eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEifQ==";
static const char stmt_sig[] =
    "2WAfaHm5jluo0w+0rk8uVkluELJYWjSmU9x7EUzx+AyteDGJ4/nqyJXfmAUVFIAoQafWm7AxBZNw5M9ixNHiCA==";

TEST(pae_spec_example)
{
	size_t n;
	char *p = dsse_pae("http://example.com/HelloWorld", 29, "hello world", 11, &n);
	CHECK_STREQ(p, "DSSEv1 29 http://example.com/HelloWorld 11 hello world");
	CHECK(n == strlen(p));
	free(p);
}

TEST(pae_vectors_empty_body_and_utf8_type)
{
	size_t n;
	char *p = dsse_pae(DSSE_INTOTO_TYPE, strlen(DSSE_INTOTO_TYPE), "", 0, &n);
	char *h = to_hex(p, n);
	/* "... 0 ": an empty body still ends with the space. */
	CHECK_STREQ(h, "445353457631203238206170706c69636174696f6e2f766e642e696e2d746f746f2b6a736f6e203020");
	free(p);
	free(h);
	const char *t = "application/vnd.ex\xc3\xa4mple+json"; /* 28 characters, 29 bytes */
	p = dsse_pae(t, strlen(t), "x", 1, &n);
	CHECK(strncmp(p, "DSSEv1 29 ", 10) == 0);
	free(p);
	/* Binary bodies with NULs are lengths, not strings. */
	p = dsse_pae("t", 1, "a\0b", 3, &n);
	CHECK(n == strlen("DSSEv1 1 t 3 ") + 3 && memcmp(p + n - 3, "a\0b", 3) == 0);
	free(p);
}

TEST(b64_known_and_round_trip)
{
	char *s = dsse_b64_encode("hello world", 11);
	CHECK_STREQ(s, "aGVsbG8gd29ybGQ=");
	free(s);
	unsigned char buf[70];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof(buf); n++) {
		char *e = dsse_b64_encode(buf, n);
		unsigned char *d = NULL;
		size_t dl = 0;
		CHECK(dsse_b64_decode(e, strlen(e), 1000, &d, &dl, NULL) == 0);
		CHECK(dl == n && memcmp(d, buf, n) == 0);
		/* Unpadded is accepted too, and decodes the same. */
		size_t el = strlen(e);
		while (el && e[el - 1] == '=')
			el--;
		free(d);
		CHECK(dsse_b64_decode(e, el, 1000, &d, &dl, NULL) == 0 && dl == n && memcmp(d, buf, n) == 0);
		free(d);
		free(e);
	}
}

TEST(b64_url_safe_vector)
{
	unsigned char *d = NULL;
	size_t n = 0;
	CHECK(dsse_b64_decode("-_-_Pj8=", 8, 100, &d, &n, NULL) == 0);
	char *h = to_hex(d, n);
	CHECK_STREQ(h, "fbffbf3e3f");
	free(h);
	free(d);
}

TEST(b64_refuses_non_canonical)
{
	static const char *const bad[] = {
	    "a",		 /* one character cannot carry a byte */
	    "aGVsbG8gd29ybGR=",	 /* non-zero unused bits */
	    "aGVsbG8gd29ybA=",	 /* padding without a multiple of 4 */
	    "aGVsbG8gd29ybGQ==", /* one '=' too many */
	    "aGVs bG8=",	 /* whitespace */
	    "aGVs\nbG8=",
	    "aG=VsbG8", /* '=' inside */
	    "====",
	    "+-AA", /* both alphabets */
	    "aGVs*G8=",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		unsigned char *d = NULL;
		size_t n = 0;
		sbx_err *e = NULL;
		if (dsse_b64_decode(bad[i], strlen(bad[i]), 100, &d, &n, &e) == 0) {
			fprintf(stderr, "  accepted '%s'\n", bad[i]);
			CHECK(0);
		}
		CHECK(sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
		sbx_err_free(e);
	}
	/* Over the size limit. */
	unsigned char *d = NULL;
	size_t n = 0;
	sbx_err *e = NULL;
	CHECK(dsse_b64_decode("AAAAAAAA", 8, 5, &d, &n, &e) < 0 && sbx_err_code(e) == SBX_E_LIMIT_EXCEEDED);
	sbx_err_free(e);
}

static int parse(const char *json, char **ret_msg)
{
	dsse_envelope env;
	sbx_err *e = NULL;
	int r = dsse_envelope_parse(json, strlen(json), DSSE_INTOTO_TYPE, &env, &e);
	if (r == 0)
		dsse_envelope_clear(&env);
	*ret_msg = e ? strdup(sbx_err_message(e)) : NULL;
	sbx_err_free(e);
	return r;
}

TEST(envelope_parse_errors_name_the_field)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
	    {"not json", "not JSON"},
	    {"[1]", "not a JSON object"},
	    {"{\"payload\":\"\",\"signatures\":[{\"sig\":\"\"}]}", "payloadType: missing"},
	    {"{\"payloadType\":\"application/json\",\"payload\":\"\",\"signatures\":[{\"sig\":\"\"}]}",
	     "payloadType 'application/json' is not"},
	    {"{\"payloadType\":\"\",\"payload\":\"\",\"signatures\":[{\"sig\":\"\"}]}", "payloadType: empty"},
	    {"{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":7,\"signatures\":[]}",
	     "payload: missing or not"},
	    {"{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"\",\"signatures\":[]}",
	     "signatures: none"},
	    {"{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"\",\"signatures\":{}}",
	     "signatures: missing"},
	    {"{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"a "
	     "b\",\"signatures\":[{\"sig\":\"\"}]}",
	     "payload: base64"},
	    {"{\"payloadType\":\"application/"
	     "vnd.in-toto+json\",\"payload\":\"\",\"signatures\":[{\"sig\":\"!\"}]}",
	     "signatures[0].sig: base64"},
	    {"{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"\",\"signatures\":[{}]}",
	     "signatures[0].sig: missing"},
	    {"{\"payloadType\":\"application/"
	     "vnd.in-toto+json\",\"payload\":\"\",\"signatures\":[{\"sig\":\"\",\"keyid\":1}]}",
	     "signatures[0].keyid: not a string"},
	    {"{\"payloadType\":\"application/"
	     "vnd.in-toto+json\",\"payload\":\"\",\"payload\":\"\",\"signatures\":[{\"sig\":\"\"}]}",
	     "not JSON"},
	    {"{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"\",\"signatures\":[1]}",
	     "signatures[0]: not an object"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *msg = NULL;
		int r = parse(cases[i].json, &msg);
		if (r == 0 || !msg || !strstr(msg, cases[i].want)) {
			fprintf(stderr, "  case %zu: got '%s', want '%s'\n", i, msg ? msg : "(accepted)",
				cases[i].want);
			free(msg);
			CHECK(0);
		}
		free(msg);
	}
	/* Too many signatures, and too large an envelope. */
	char big[4096] =
	    "{\"payloadType\":\"application/vnd.in-toto+json\",\"payload\":\"\",\"signatures\":[";
	for (int i = 0; i < DSSE_SIGNATURES_MAX + 1; i++)
		strcat(big, i ? ",{\"sig\":\"\"}" : "{\"sig\":\"\"}");
	strcat(big, "]}");
	char *msg = NULL;
	CHECK(parse(big, &msg) < 0 && strstr(msg, "at most"));
	free(msg);
	sbx_err *e = NULL;
	dsse_envelope env;
	CHECK(dsse_envelope_parse("{}", DSSE_ENVELOPE_MAX + 1, NULL, &env, &e) < 0 &&
	      sbx_err_code(e) == SBX_E_LIMIT_EXCEEDED);
	sbx_err_free(e);
}

TEST(envelope_build_parse_round_trip)
{
	unsigned char sig[64];
	memset(sig, 7, sizeof(sig));
	json_t *j = dsse_envelope_build(DSSE_INTOTO_TYPE, "{\"a\":1}", 7, "sha256:x", sig, sizeof(sig));
	char *s = json_dumps(j, JSON_COMPACT);
	dsse_envelope env;
	CHECK(dsse_envelope_parse(s, strlen(s), DSSE_INTOTO_TYPE, &env, NULL) == 0);
	CHECK(env.payload_len == 7 && memcmp(env.payload, "{\"a\":1}", 7) == 0);
	CHECK(env.n_sigs == 1 && env.sigs[0].sig_len == 64 && memcmp(env.sigs[0].sig, sig, 64) == 0);
	CHECK_STREQ(env.sigs[0].keyid, "sha256:x");
	dsse_envelope_clear(&env);
	free(s);
	json_decref(j);
}

static int verify_vector(const char *payload_b64, const char *sig_b64)
{
	unsigned char pub[32];
	hex_to(key_a_pub, pub);
	attest_key *k = attest_key_from_raw(pub, false);
	unsigned char *body = NULL, *sig = NULL;
	size_t bl = 0, sl = 0, pl = 0;
	if (dsse_b64_decode(payload_b64, strlen(payload_b64), 1000, &body, &bl, NULL) < 0 ||
	    dsse_b64_decode(sig_b64, strlen(sig_b64), 1000, &sig, &sl, NULL) < 0)
		return -1;
	char *pae = dsse_pae(DSSE_INTOTO_TYPE, strlen(DSSE_INTOTO_TYPE), body, bl, &pl);
	int r = attest_verify_sig(k, pae, pl, sig, sl, NULL);
	free(pae);
	free(body);
	free(sig);
	attest_key_free(k);
	return r;
}

TEST(dsse_vectors_verify_with_ed25519)
{
	CHECK(verify_vector(stmt_b64, stmt_sig) == 1);
	CHECK(
	    verify_vector(
		"-_-_Pj8=",
		"P-_KHICeR7tI6S_YyejJTRtrXhcQyQ2LYPaL8h90KjC9qN8HU_svOQ6TuDOT1HIrsGW886DbWNWcCmX5twLrAw==") ==
	    1);
	/* The same signature over another body does not hold. */
	CHECK(verify_vector("-_-_Pj8=", stmt_sig) == 0);
	/* Ed25519 is deterministic: signing with key A gives the vector's signature. */
	unsigned char seed[32], sig[ATTEST_SIG_LEN];
	hex_to(key_a_seed, seed);
	attest_key *k = attest_key_from_raw(seed, true);
	unsigned char *body = NULL;
	size_t bl = 0, pl = 0;
	CHECK(dsse_b64_decode(stmt_b64, strlen(stmt_b64), 1000, &body, &bl, NULL) == 0);
	char *pae = dsse_pae(DSSE_INTOTO_TYPE, strlen(DSSE_INTOTO_TYPE), body, bl, &pl);
	CHECK(attest_sign(k, pae, pl, sig, NULL) == 0);
	char *b = dsse_b64_encode(sig, sizeof(sig));
	CHECK_STREQ(b, stmt_sig);
	/* The key id: SHA-256 of the 44-byte SubjectPublicKeyInfo DER. */
	char kid[STORE_DIGEST_SIZE];
	CHECK(attest_key_id(k, kid, NULL) == 0);
	CHECK_STREQ(kid, "sha256:06e3fd8fda29bb60ab59557de61edb0aecdb231134be30e75b455f8e1b792fa9");
	free(b);
	free(pae);
	free(body);
	attest_key_free(k);
}

static char *tmpdir(void)
{
	char t[] = "/tmp/sbx-test-attest-XXXXXX";
	return strdup(mkdtemp(t));
}

static const char *err_of(int r, sbx_err *e)
{
	static char buf[512];
	snprintf(buf, sizeof(buf), "%s", r < 0 && e ? sbx_err_message(e) : "(no error)");
	sbx_err_free(e);
	return buf;
}

TEST(key_files_and_their_errors)
{
	char *d = tmpdir(), path[256], pub[300];
	snprintf(path, sizeof(path), "%s/k", d);
	snprintf(pub, sizeof(pub), "%s/k.pub", d);
	char kid[STORE_DIGEST_SIZE], kid2[STORE_DIGEST_SIZE];
	CHECK(attest_keygen(path, kid, NULL) == 0);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(stat(pub, &st) == 0 && (st.st_mode & 0777) == 0644);
	attest_key *k = NULL, *p = NULL;
	CHECK(attest_key_load_private(path, &k, NULL) == 0);
	CHECK(attest_key_load_public(pub, &p, NULL) == 0);
	CHECK(attest_key_id(p, kid2, NULL) == 0);
	CHECK_STREQ(kid2, kid);
	/* Sign with one, verify with the other; one flipped bit fails. */
	unsigned char sig[ATTEST_SIG_LEN];
	char msg[] = "DSSEv1 1 t 1 x";
	CHECK(attest_sign(k, msg, strlen(msg), sig, NULL) == 0);
	CHECK(attest_verify_sig(p, msg, strlen(msg), sig, sizeof(sig), NULL) == 1);
	msg[strlen(msg) - 1] = 'y';
	CHECK(attest_verify_sig(p, msg, strlen(msg), sig, sizeof(sig), NULL) == 0);
	CHECK(attest_verify_sig(p, msg, strlen(msg), sig, 10, NULL) == 0);
	attest_key_free(k);
	attest_key_free(p);
	k = p = NULL;

	sbx_err *e = NULL;
	int r = attest_keygen(path, kid, &e);
	CHECK(r < 0 && sbx_err_code(e) == SBX_E_CONFLICT);
	CHECK(strstr(err_of(r, e), "refusing to overwrite"));
	e = NULL;
	r = attest_key_load_private(pub, &k, &e);
	CHECK(strstr(err_of(r, e), "a public key; signing needs the private key"));
	e = NULL;
	r = attest_key_load_public(path, &p, &e);
	CHECK(strstr(err_of(r, e), "a private key; verifying takes the public key"));
	char missing[300];
	snprintf(missing, sizeof(missing), "%s/none", d);
	e = NULL;
	r = attest_key_load_private(missing, &k, &e);
	CHECK(r < 0 && sbx_err_code(e) == SBX_E_NOT_FOUND);
	CHECK(strstr(err_of(r, e), "no such file"));
	chmod(path, 0640);
	e = NULL;
	r = attest_key_load_private(path, &k, &e);
	CHECK(strstr(err_of(r, e), "permissions 0640 are too open"));
	chmod(path, 0604);
	e = NULL;
	r = attest_key_load_private(path, &k, &e);
	CHECK(strstr(err_of(r, e), "too open"));
	chmod(path, 0400);
	CHECK(attest_key_load_private(path, &k, NULL) == 0);
	attest_key_free(k);
	char junk[300];
	snprintf(junk, sizeof(junk), "%s/junk", d);
	int fd = open(junk, O_WRONLY | O_CREAT | O_EXCL, 0600);
	CHECK(fd >= 0 && write(fd, "hello\n", 6) == 6);
	close(fd);
	e = NULL;
	r = attest_key_load_private(junk, &k, &e);
	CHECK(strstr(err_of(r, e), "not a PEM private key"));
	e = NULL;
	r = attest_key_load_public(junk, &p, &e);
	CHECK(strstr(err_of(r, e), "not a PEM public key"));
	/* A key of another type. */
	static const char rsa_pub[] = "-----BEGIN PUBLIC KEY-----\n"
				      "MFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAMPeRlSHDaKxoMNiWiwgUnsWuE7TnK7e\n"
				      "lMw8MiTv8UsYrLQbXbDtxGW3TwYfOl4akU/c15nWo5JZCiX9TfCb+OsCAwEAAQ==\n"
				      "-----END PUBLIC KEY-----\n";
	char other[300];
	snprintf(other, sizeof(other), "%s/rsa.pub", d);
	fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0644);
	CHECK(fd >= 0 && write(fd, rsa_pub, strlen(rsa_pub)) == (ssize_t)strlen(rsa_pub));
	close(fd);
	e = NULL;
	r = attest_key_load_public(other, &p, &e);
	CHECK(strstr(err_of(r, e), "not Ed25519"));
	unlink(other);
	unlink(junk);
	unlink(path);
	unlink(pub);
	rmdir(d);
	free(d);
}

static json_t *manifest(void)
{
	return json_pack(
	    "{s:s,s:s,s:f,s:{s:[s,s],s:[],s:s},s:{s:s,s:[]},s:{s:s,s:I,s:s},s:{s:b},"
	    "s:{s:i,s:i,s:b,s:i,s:{s:s},s:{s:s},s:{s:s,s:i}}}",
	    "snapshot_id", "sha256:1111111111111111111111111111111111111111111111111111111111111111",
	    "created_at", "2026-12-01T16:00:05Z", "record_ms", 2500.0, "command", "argv", "sh", "-c", "env",
	    "cwd", "/root", "environment", "environment_id", "e1", "volumes", "events", "digest",
	    "sha256:2222222222222222222222222222222222222222222222222222222222222222", "syscalls",
	    (json_int_t)86, "recorder", "bpf", "determinism", "enabled", 1, "result", "exit_code", 0,
	    "signal", 0, "timed_out", 0, "duration_ms", 40, "stdout", "digest",
	    "sha256:98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4", "stderr", "digest",
	    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "fs", "digest",
	    "sha256:3333333333333333333333333333333333333333333333333333333333333333", "changes", 1);
}

TEST(statement_build_and_parse)
{
	json_t *m = manifest(), *st = NULL, *back = NULL;
	CHECK(m);
	const char *tid = "sha256:4444444444444444444444444444444444444444444444444444444444444444";
	json_t *files = json_pack("[{s:s,s:s}]", "name", "/root/f", "digest",
				  "sha256:54034ac5c6e9ea95734ec2b729fd6d62abf64af34a9f9ce5d466cb788191a73d");
	CHECK(attest_statement_build(m, tid, files, NULL, "0.1.0", &st, NULL) == 0);
	CHECK_STREQ(json_str(st, "_type"), ATTEST_STATEMENT_TYPE);
	CHECK_STREQ(json_str(st, "predicateType"), ATTEST_PREDICATE_TYPE);
	json_t *subs = json_object_get(st, "subject");
	CHECK(json_array_size(subs) == 3);
	CHECK_STREQ(json_str(json_array_get(subs, 0), "name"), "stdout");
	CHECK_STREQ(json_str(json_object_get(json_array_get(subs, 0), "digest"), "sha256"),
		    "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4");
	CHECK_STREQ(json_str(json_array_get(subs, 2), "name"), "/root/f");
	json_t *pred = json_object_get(st, "predicate");
	CHECK_STREQ(json_str(pred, "trace_id"), tid);
	CHECK_STREQ(json_str(pred, "started_at"), "2026-12-01T16:00:02Z"); /* 16:00:05 - 2.5 s, rounded up */
	CHECK(json_is_object(json_object_get(pred, "inputs")) &&
	      !json_object_get(json_object_get(pred, "inputs"), "read_set"));
	char *s = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK(attest_statement_parse(s, strlen(s), &back, NULL) == 0);
	CHECK(json_equal(back, st));
	free(s);
	json_decref(back);
	/* A read set in the manifest goes into the inputs. */
	json_object_set_new(m, "read_set", json_pack("[{s:s}]", "path", "/work/a"));
	json_decref(st);
	CHECK(attest_statement_build(m, tid, files, NULL, "0.1.0", &st, NULL) == 0);
	CHECK(json_is_array(
	    json_object_get(json_object_get(json_object_get(st, "predicate"), "inputs"), "read_set")));
	json_decref(st);
	json_decref(files);
	json_decref(m);
}

TEST(statement_parse_refusals)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
	    {"[]", "not a JSON object"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v0.1\"}", "_type"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicateType\":\"x\"}", "predicateType"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicateType\":\"https://sbx.dev/attestation/"
	     "run/v1\","
	     "\"subject\":[]}",
	     "subject: missing or empty"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicateType\":\"https://sbx.dev/attestation/"
	     "run/v1\","
	     "\"subject\":[{\"name\":\"stdout\",\"digest\":{\"sha256\":\"ABC\"}}]}",
	     "no sha256 digest"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicateType\":\"https://sbx.dev/attestation/"
	     "run/v1\","
	     "\"subject\":[{\"digest\":{}}]}",
	     "subject[0].name"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicateType\":\"https://sbx.dev/attestation/"
	     "run/v1\","
	     "\"subject\":[{\"name\":\"a\",\"digest\":{\"sha256\":"
	     "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}},"
	     "{\"name\":\"a\",\"digest\":{\"sha256\":"
	     "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}}]}",
	     "appears twice"},
	    {"{\"_type\":\"https://in-toto.io/Statement/v1\",\"predicateType\":\"https://sbx.dev/attestation/"
	     "run/v1\","
	     "\"subject\":[{\"name\":\"a\",\"digest\":{\"sha256\":"
	     "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}}],"
	     "\"predicate\":{\"trace_id\":\"sha256:1\"}}",
	     "predicate.trace_id"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		json_t *st = NULL;
		sbx_err *e = NULL;
		int r = attest_statement_parse(cases[i].json, strlen(cases[i].json), &st, &e);
		if (r == 0 || !strstr(sbx_err_message(e), cases[i].want)) {
			fprintf(stderr, "  case %zu: got '%s', want '%s'\n", i,
				r == 0 ? "(accepted)" : sbx_err_message(e), cases[i].want);
			CHECK(0);
		}
		sbx_err_free(e);
	}
}

TEST(time_minus)
{
	char out[32];
	CHECK(attest_time_minus("2026-01-01T00:00:00Z", 1, out) == 0);
	CHECK_STREQ(out, "2025-12-31T23:59:59Z");
	CHECK(attest_time_minus("2026-01-01T00:00:00", 0, out) < 0);
	CHECK(attest_time_minus("garbage", 0, out) < 0);
	CHECK(attest_time_minus(NULL, 0, out) < 0);
}
