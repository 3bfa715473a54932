/* E2B ids, tokens, /files signatures, Basic auth and Host routing
 * (src/server/e2b_auth.h). */
#include <errno.h>
#include <regex.h>
#include <stdint.h>

#include "server/e2b_auth.h"
#include "unit.h"

static bool matches(const char *re, const char *s)
{
	regex_t r;
	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	bool m = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return m;
}

TEST(id_mint_known_and_form)
{
	uint8_t zero[E2B_ID_ENTROPY] = {0}, ones[E2B_ID_ENTROPY];
	memset(ones, 0xff, sizeof(ones));
	char id[E2B_ID_LEN + 1];
	e2b_id_mint(zero, id);
	CHECK_STREQ(id, "aaaaaaaaaaaaaaaaaaaa");
	e2b_id_mint(ones, id);
	CHECK_STREQ(id, "77777777777777777777");
	/* RFC 4648 base32 of "foobar" is MZXW6YTBOI: the same bits, lowercase */
	uint8_t foobar[E2B_ID_ENTROPY] = {'f', 'o', 'o', 'b', 'a', 'r'};
	e2b_id_mint(foobar, id);
	CHECK(strncmp(id, "mzxw6ytboi", 10) == 0);
	CHECK(strlen(id) == E2B_ID_LEN);
	/* every minted id is valid, of E2B's form, and the last byte's bits count */
	uint8_t rnd[E2B_ID_ENTROPY];
	for (int i = 0; i < 256; i++) {
		for (size_t j = 0; j < sizeof(rnd); j++)
			rnd[j] = (uint8_t)(i * 31 + j * 7);
		e2b_id_mint(rnd, id);
		CHECK(e2b_id_valid(id));
		CHECK(matches("^[a-z0-9]+$", id));
	}
	char a[E2B_ID_LEN + 1], b[E2B_ID_LEN + 1];
	memset(rnd, 0, sizeof(rnd));
	e2b_id_mint(rnd, a);
	rnd[E2B_ID_ENTROPY - 1] = 0x10; /* bit 99 of the 100 used */
	e2b_id_mint(rnd, b);
	CHECK(strcmp(a, b) != 0);
}

TEST(id_valid)
{
	CHECK(e2b_id_valid("abc123"));
	CHECK(e2b_id_valid("0"));
	static const char *const bad[] = {"", "ABC", "a-b", "a.b", "a_b", "a b", "é", NULL};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(!e2b_id_valid(bad[i]));
	char longest[E2B_ID_MAX + 2];
	memset(longest, 'a', sizeof(longest));
	longest[E2B_ID_MAX] = 0;
	CHECK(e2b_id_valid(longest));
	longest[E2B_ID_MAX] = 'a';
	longest[E2B_ID_MAX + 1] = 0;
	CHECK(!e2b_id_valid(longest));
}

TEST(token_mint)
{
	uint8_t rnd[E2B_TOKEN_ENTROPY];
	for (size_t i = 0; i < sizeof(rnd); i++)
		rnd[i] = (uint8_t)(i * 17 + 1);
	char t[E2B_TOKEN_LEN + 1];
	e2b_token_mint(rnd, t);
	CHECK(strlen(t) == 64 && matches("^[0-9a-f]{64}$", t));
	CHECK(strncmp(t, "01122334", 8) == 0);
}

TEST(secret_equal)
{
	CHECK(e2b_secret_equal("e2b_abc", "e2b_abc"));
	CHECK(!e2b_secret_equal("e2b_abd", "e2b_abc"));
	CHECK(!e2b_secret_equal("e2b_ab", "e2b_abc"));
	CHECK(!e2b_secret_equal("e2b_abcd", "e2b_abc"));
	CHECK(!e2b_secret_equal("", "e2b_abc"));
	CHECK(e2b_secret_equal("", ""));
	CHECK(!e2b_secret_equal(NULL, "x"));
	CHECK(!e2b_secret_equal("x", NULL));
}

/* Known answers from the e2b SDK's own getSignature (npm e2b 2.51.0,
 * dist/index.mjs "src/sandbox/signature.ts"), run with node 20 in
 * tests/e2b; the expiring ones with Date.now pinned to 1700000000123 and
 * expirationInSeconds 60, so signature_expiration is 1700000060:
 *   import { getSignature } from 'e2b';
 *   (await getSignature({path, operation, user, envdAccessToken})).signature */
static const struct {
	const char *path, *op, *user, *token, *exp, *sig;
} vectors[] = {
    {"/home/user/file.txt", "read", NULL, "tok", NULL, "v1_nT2FCEDLtj7Loi6fgVyk+yZjMFDcPS1PjhdFjqMxwpY"},
    {"/home/user/file.txt", "write", "user", "0123456789abcdef", NULL,
     "v1_aT8KRAlBAt73W3kiB4BJLMgppB/I+6CzqUaYp5e6RVk"},
    {"", "write", NULL, "abc", NULL, "v1_Yzj7CvCwghpT+oeBE5gl9Haw/6Z5RY/zXPNKyPJw36s"},
    {"a:b/c d.txt", "read", "root", "e2b-token", NULL, "v1_vh27KeZeJ+S1a/mabIMls3csxgts7DATqR3jAuKiuXc"},
    {"/home/user/file.txt", "read", NULL, "tok", "1700000060",
     "v1_dXPsbVzlYWakEA04TEQs8iL1u/jG+RV9TmBoQACnJjc"},
    {"/home/user/file.txt", "write", "user", "0123456789abcdef", "1700000060",
     "v1_f5LIwJVYsaIqQLDNBeAu3/4msJerpZJhyc9Qun0D7Fg"},
};

TEST(signature_known_answers)
{
	for (size_t i = 0; i < ARRAY_SIZE(vectors); i++) {
		char sig[E2B_SIGNATURE_LEN + 1];
		CHECK(e2b_file_signature(vectors[i].path, vectors[i].op, vectors[i].user, vectors[i].token,
					 vectors[i].exp, sig, NULL) == 0);
		CHECK_STREQ(sig, vectors[i].sig);
		CHECK(strlen(sig) == E2B_SIGNATURE_LEN);
		/* "" and no user sign alike (the SDK and envd both use "") */
		if (!vectors[i].user) {
			char sig2[E2B_SIGNATURE_LEN + 1];
			CHECK(e2b_file_signature(vectors[i].path, vectors[i].op, "", vectors[i].token,
						 vectors[i].exp, sig2, NULL) == 0);
			CHECK_STREQ(sig2, sig);
		}
	}
	char sig[E2B_SIGNATURE_LEN + 1];
	_cleanup_err_ sbx_err *err = NULL;
	CHECK(e2b_file_signature("/f", "delete", NULL, "t", NULL, sig, &err) == -EINVAL && err);
	CHECK(e2b_file_signature(NULL, "read", NULL, "t", NULL, sig, NULL) < 0);
	CHECK(e2b_file_signature("/f", "read", NULL, NULL, NULL, sig, NULL) < 0);
}

TEST(signature_verify)
{
	const int64_t before = 1700000000, after = 1700000061;
	for (size_t i = 0; i < ARRAY_SIZE(vectors); i++) {
		const char *p = vectors[i].path, *op = vectors[i].op, *u = vectors[i].user,
			   *t = vectors[i].token, *x = vectors[i].exp, *s = vectors[i].sig;
		CHECK(e2b_file_signature_verify(p, op, u, t, s, x, before) == E2B_SIG_OK);
		/* expired only when signed with an expiry, and only past it */
		CHECK(e2b_file_signature_verify(p, op, u, t, s, x, after) ==
		      (x ? E2B_SIG_EXPIRED : E2B_SIG_OK));
		CHECK(e2b_file_signature_verify(p, op, u, t, s, x, 1700000060) ==
		      E2B_SIG_OK); /* exp < now only */
		/* any field changed is BAD, never EXPIRED */
		CHECK(e2b_file_signature_verify("/other", op, u, t, s, x, after) == E2B_SIG_BAD);
		CHECK(e2b_file_signature_verify(p, strcmp(op, "read") ? "read" : "write", u, t, s, x,
						after) == E2B_SIG_BAD);
		CHECK(e2b_file_signature_verify(p, op, u ? NULL : "user", t, s, x, after) == E2B_SIG_BAD);
		CHECK(e2b_file_signature_verify(p, op, u, "other-token", s, x, after) == E2B_SIG_BAD);
		CHECK(e2b_file_signature_verify(p, op, u, t, s, x ? NULL : "1700000060", before) ==
		      E2B_SIG_BAD);
		/* the signature altered, cut, extended, padded, or without its prefix */
		char m[E2B_SIGNATURE_LEN + 4];
		snprintf(m, sizeof(m), "%s", s);
		m[10] ^= 1;
		CHECK(e2b_file_signature_verify(p, op, u, t, m, x, before) == E2B_SIG_BAD);
		snprintf(m, sizeof(m), "%s", s);
		m[E2B_SIGNATURE_LEN - 1] = 0;
		CHECK(e2b_file_signature_verify(p, op, u, t, m, x, before) == E2B_SIG_BAD);
		snprintf(m, sizeof(m), "%s=", s);
		CHECK(e2b_file_signature_verify(p, op, u, t, m, x, before) == E2B_SIG_BAD);
		CHECK(e2b_file_signature_verify(p, op, u, t, s + 3, x, before) == E2B_SIG_BAD);
	}
	/* empty token or signature; exp spellings other than the canonical one */
	const char *s0 = vectors[0].sig;
	CHECK(e2b_file_signature_verify("/home/user/file.txt", "read", NULL, "", s0, NULL, 0) == E2B_SIG_BAD);
	CHECK(e2b_file_signature_verify("/home/user/file.txt", "read", NULL, "tok", "", NULL, 0) ==
	      E2B_SIG_BAD);
	CHECK(e2b_file_signature_verify("/home/user/file.txt", "read", NULL, "tok", NULL, NULL, 0) ==
	      E2B_SIG_BAD);
	static const char *const exps[] = {"",
					   "01700000060",
					   "+1700000060",
					   "-1",
					   "1700000060 ",
					   "99999999999999999999",
					   "9223372036854775808"};
	for (size_t i = 0; i < ARRAY_SIZE(exps); i++) {
		char sig[E2B_SIGNATURE_LEN + 1];
		CHECK(e2b_file_signature("/f", "read", NULL, "tok", exps[i], sig, NULL) == 0);
		CHECK(e2b_file_signature_verify("/f", "read", NULL, "tok", sig, exps[i], 0) == E2B_SIG_BAD);
	}
	/* the largest exp there is, and 0 */
	char sig[E2B_SIGNATURE_LEN + 1];
	CHECK(e2b_file_signature("/f", "read", NULL, "tok", "9223372036854775807", sig, NULL) == 0);
	CHECK(e2b_file_signature_verify("/f", "read", NULL, "tok", sig, "9223372036854775807", INT64_MAX) ==
	      E2B_SIG_OK);
	CHECK(e2b_file_signature("/f", "read", NULL, "tok", "0", sig, NULL) == 0);
	CHECK(e2b_file_signature_verify("/f", "read", NULL, "tok", sig, "0", 1) == E2B_SIG_EXPIRED);
}

TEST(basic_auth)
{
	char u[E2B_USER_MAX + 1];
	/* Buffer.from("user:").toString("base64"), as the SDK's encode64 */
	CHECK(e2b_basic_auth_user("Basic dXNlcjo=", u, NULL) == 0);
	CHECK_STREQ(u, "user");
	CHECK(e2b_basic_auth_user("basic cm9vdDo=", u, NULL) == 0); /* "root:"; the scheme in any case */
	CHECK_STREQ(u, "root");
	CHECK(e2b_basic_auth_user("BASIC dXNlcjpzZWNyZXQ=", u, NULL) == 0); /* "user:secret": ignored */
	CHECK_STREQ(u, "user");
	CHECK(e2b_basic_auth_user("Basic MTAwMDo=", u, NULL) == 0); /* "1000:", a uid */
	CHECK_STREQ(u, "1000");
	strcpy(u, "unchanged");
	static const char *const bad[] = {
	    NULL,
	    "",
	    "Basic",
	    "Basic ",
	    "Bearer dXNlcjo=",
	    "Basic  dXNlcjo=", /* two spaces */
	    "Basic dXNlcjo= ", /* trailing space */
	    "Basic dXNlcjo",   /* unpadded */
	    "Basic dXNlcjo-",  /* URL-safe alphabet */
	    "Basic dXNl\ncjo=",
	    "Basic dXNlcg==",					      /* "user": no ':' */
	    "Basic Og==",					      /* ":": no user */
	    "Basic LXU6",					      /* "-u:" */
	    "Basic dSB2Og==",					      /* "u v:" */
	    "Basic dQB2Og==",					      /* "u\0v:" */
	    "Basic YTpiOmM=",					      /* "a:b:c" is user a: fine, see below */
	    "Basic w6k6",					      /* "é:" */
	    "Basic YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhOg==", /* 33 characters */
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (bad[i] && strcmp(bad[i], "Basic YTpiOmM=") == 0) {
			CHECK(e2b_basic_auth_user(bad[i], u, NULL) == 0 && strcmp(u, "a") == 0);
			strcpy(u, "unchanged");
			continue;
		}
		_cleanup_err_ sbx_err *e = NULL;
		if (e2b_basic_auth_user(bad[i], u, &e) != -EINVAL) {
			fprintf(stderr, "  accepted: %s\n", bad[i] ? bad[i] : "(null)");
			CHECK(0);
		}
		CHECK(e && sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
		CHECK_STREQ(u, "unchanged");
	}
	/* 32 characters is the longest name */
	CHECK(e2b_basic_auth_user("Basic YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE6", u, NULL) == 0);
	CHECK(strlen(u) == 32);
	/* a value over E2B_AUTH_HEADER_MAX is refused before decoding */
	char big[E2B_AUTH_HEADER_MAX + 16] = "Basic ";
	memset(big + 6, 'A', sizeof(big) - 7);
	big[sizeof(big) - 1] = 0;
	CHECK(e2b_basic_auth_user(big, u, NULL) == -EINVAL);
}

TEST(port_parse)
{
	uint16_t p = 7;
	CHECK(e2b_port_parse("49983", 5, &p) == 0 && p == 49983);
	CHECK(e2b_port_parse("1", 1, &p) == 0 && p == 1);
	CHECK(e2b_port_parse("65535", 5, &p) == 0 && p == 65535);
	CHECK(e2b_port_parse("4998312", 4, &p) == 0 && p == 4998); /* only len characters */
	p = 7;
	static const char *const bad[] = {"0",	"65536", "99999", "049983", "",
					  "-1", "+1",	 "1a",	  " 1",	    "100000"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(e2b_port_parse(bad[i], strlen(bad[i]), &p) == -EINVAL);
	CHECK(p == 7);
	CHECK(e2b_port_parse(NULL, 0, &p) == -EINVAL);
}

TEST(host_parse)
{
	uint16_t port = 0;
	char id[E2B_ID_MAX + 1] = "";
	CHECK(e2b_host_parse("49983-abc123.sbx.example", "sbx.example", &port, id, NULL) == 1);
	CHECK(port == 49983);
	CHECK_STREQ(id, "abc123");
	CHECK(e2b_host_parse("49999-ABC123.SBX.Example:8080", "sbx.example", &port, id, NULL) == 1);
	CHECK(port == 49999);
	CHECK_STREQ(id, "abc123"); /* the host is case-insensitive, the id lowercase */
	CHECK(e2b_host_parse("1-a.d", "D", &port, id, NULL) == 1 && port == 1 && strcmp(id, "a") == 0);
	/* routed by the headers instead: 0, nothing written */
	port = 7;
	strcpy(id, "keep");
	static const char *const others[] = {
	    "localhost",
	    "localhost:3000",
	    "127.0.0.1:3000",
	    "[::1]:3000",
	    "sbx.example", /* the domain itself */
	    ".sbx.example",
	    "sandbox.sbx.example", /* E2B's shared host */
	    "SANDBOX.sbx.example:80",
	    "49983-abc.example",       /* another domain */
	    "49983-abc.xsbx.example",  /* a suffix that is not a label boundary */
	    "49983-abc.sbx.example.",  /* a trailing dot */
	    "49983-abc.sbx.example:",  /* ":" without a port */
	    "49983-abc.sbx.example:0", /* a bad listener port */
	    "49983-abc.sbx.example:1:2",
	    "",
	    NULL,
	};
	for (size_t i = 0; i < ARRAY_SIZE(others); i++) {
		if (e2b_host_parse(others[i], "sbx.example", &port, id, NULL) != 0) {
			fprintf(stderr, "  not 0: %s\n", others[i] ? others[i] : "(null)");
			CHECK(0);
		}
	}
	CHECK(port == 7 && strcmp(id, "keep") == 0);
	CHECK(e2b_host_parse("49983-abc.sbx.example", NULL, &port, id, NULL) == 0);
	CHECK(e2b_host_parse("49983-abc.sbx.example", "", &port, id, NULL) == 0);
	/* under the domain, not of the form: an error, not a fallback */
	static const char *const bad[] = {
	    "www.sbx.example",		 "abc.sbx.example",	   "0-abc.sbx.example",
	    "65536-abc.sbx.example",	 "049983-abc.sbx.example", "49983-.sbx.example",
	    "-abc.sbx.example",		 "49983-a_b.sbx.example",  "49983-a-b.sbx.example",
	    "49983-abc.def.sbx.example", "x49983-abc.sbx.example",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		_cleanup_err_ sbx_err *e = NULL;
		if (e2b_host_parse(bad[i], "sbx.example", &port, id, &e) >= 0) {
			fprintf(stderr, "  accepted: %s\n", bad[i]);
			CHECK(0);
		}
		CHECK(sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
	}
	CHECK(port == 7 && strcmp(id, "keep") == 0);
	/* the longest id passes, one more does not */
	char h[E2B_ID_MAX + 32];
	memset(h, 'a', sizeof(h));
	memcpy(h, "80-", 3);
	snprintf(h + 3 + E2B_ID_MAX, sizeof(h) - 3 - E2B_ID_MAX, ".d");
	CHECK(e2b_host_parse(h, "d", &port, id, NULL) == 1 && strlen(id) == E2B_ID_MAX);
	memset(h + 3, 'a', E2B_ID_MAX + 1);
	snprintf(h + 4 + E2B_ID_MAX, sizeof(h) - 4 - E2B_ID_MAX, ".d");
	CHECK(e2b_host_parse(h, "d", &port, id, NULL) < 0);
}

TEST(domain_valid)
{
	CHECK(e2b_domain_valid("sbx.example", NULL) == 0);
	CHECK(e2b_domain_valid("a-b.c0.example.com", NULL) == 0);
	const char *bad[] = {"",     "localhost", ".example", "example.", "a..b",   "-a.b",
			     "a-.b", "A.b",	  "a_b.c",    "a b.c",	  "a.b:80", "*.example"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECK(e2b_domain_valid(bad[i], NULL) < 0);
	char big[260];
	memset(big, 'a', sizeof(big));
	big[100] = '.';
	big[sizeof(big) - 1] = 0;
	CHECK(e2b_domain_valid(big, NULL) < 0); /* too long in all, and a label over 63 */
}

TEST(metadata_header)
{
	char k[E2B_METADATA_KEY_MAX + 1];
	CHECK(e2b_metadata_header("X-Metadata-Owner", "alice", k, NULL) == 1 && strcmp(k, "owner") == 0);
	CHECK(e2b_metadata_header("x-metadata-Build.ID", "a b ~", k, NULL) == 1 &&
	      strcmp(k, "build.id") == 0);
	CHECK(e2b_metadata_header("X-Metadata-k", "", k, NULL) == 1); /* an empty value */
	CHECK(e2b_metadata_header("Content-Type", "x", k, NULL) == 0);
	CHECK(e2b_metadata_header("X-Metadat", "x", k, NULL) == 0);
	CHECK(e2b_metadata_header("X-Metadata-", "x", k, NULL) < 0);	/* no key */
	CHECK(e2b_metadata_header("X-Metadata-a/b", "x", k, NULL) < 0); /* not a token */
	CHECK(e2b_metadata_header("X-Metadata-a b", "x", k, NULL) < 0);
	CHECK(e2b_metadata_header("X-Metadata-k", "caf\xc3\xa9", k, NULL) < 0); /* not ASCII */
	CHECK(e2b_metadata_header("X-Metadata-k", "a\tb", k, NULL) < 0);	/* a control */
	char big[E2B_METADATA_VALUE_MAX + 2];
	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(e2b_metadata_header("X-Metadata-k", big, k, NULL) < 0);
	char longkey[16 + E2B_METADATA_KEY_MAX];
	snprintf(longkey, sizeof(longkey), "X-Metadata-");
	memset(longkey + 11, 'k', sizeof(longkey) - 12);
	longkey[sizeof(longkey) - 1] = 0;
	CHECK(e2b_metadata_header(longkey, "v", k, NULL) < 0);
}
