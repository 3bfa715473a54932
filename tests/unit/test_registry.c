/* Pure parts of the registry client (src/store/registry.h): references,
 * WWW-Authenticate challenges, docker config.json credentials, token
 * answers, manifest checks and upload locations. */
#include <string.h>

#include "store/digest.h"
#include "store/oci.h"
#include "store/registry.h"
#include "unit.h"
#include "util/err.h"

static int ref(const char *s, reg_ref *r)
{
	*r = (reg_ref){0};
	return reg_ref_parse(s, r, NULL);
}

TEST(ref_registry_repo_tag)
{
	reg_ref r;
	CHECK(ref("127.0.0.1:5000/sbx/test:v1", &r) == 0);
	CHECK_STREQ(r.registry, "127.0.0.1:5000");
	CHECK_STREQ(r.repo, "sbx/test");
	CHECK_STREQ(r.tag, "v1");
	CHECK(r.digest[0] == 0);
	reg_ref_clear(&r);
	CHECK(ref("localhost/a", &r) == 0);
	CHECK_STREQ(r.registry, "localhost");
	CHECK_STREQ(r.tag, "latest");
	reg_ref_clear(&r);
	CHECK(ref("ghcr.io/o/p/q:1.2_x-y", &r) == 0);
	CHECK_STREQ(r.repo, "o/p/q");
	CHECK_STREQ(r.tag, "1.2_x-y");
	reg_ref_clear(&r);
}

TEST(ref_docker_hub_defaults)
{
	reg_ref r;
	CHECK(ref("busybox", &r) == 0);
	CHECK_STREQ(r.registry, REG_DOCKER_HUB);
	CHECK_STREQ(r.repo, "library/busybox");
	CHECK_STREQ(r.tag, "latest");
	reg_ref_clear(&r);
	CHECK(ref("docker.io/me/img:t", &r) == 0);
	CHECK_STREQ(r.registry, REG_DOCKER_HUB);
	CHECK_STREQ(r.repo, "me/img");
	reg_ref_clear(&r);
	/* "me" has no '.' or ':': a docker.io user, not a host. */
	CHECK(ref("me/img", &r) == 0);
	CHECK_STREQ(r.registry, REG_DOCKER_HUB);
	CHECK_STREQ(r.repo, "me/img");
	reg_ref_clear(&r);
}

TEST(ref_digest)
{
	reg_ref r;
	const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char s[200];
	snprintf(s, sizeof(s), "h.io:1/r@%s", d);
	CHECK(ref(s, &r) == 0);
	CHECK_STREQ(r.digest, d);
	CHECK(r.tag == NULL);
	reg_ref_clear(&r);
	snprintf(s, sizeof(s), "h.io/r:t@%s", d);
	CHECK(ref(s, &r) == 0);
	CHECK_STREQ(r.tag, "t");
	CHECK_STREQ(r.digest, d);
	reg_ref_clear(&r);
}

TEST(ref_refusals)
{
	reg_ref r;
	const char *bad[] = {"",
			     "h.io/Upper",
			     "h.io/a//b",
			     "h.io/-a",
			     "h.io/a-",
			     "h.io/a..b",
			     "h.io/a___b",
			     "h.io/a:",
			     "h.io/a:-t",
			     "h.io/a@sha256:abc",
			     "h.io/a@md5:0123456789abcdef0123456789abcdef",
			     "h.io:99999/a",
			     "h.io:/a",
			     "h:1:2/a",
			     "h.io/a b",
			     "h.io/a\n",
			     "h.io/",
			     "h_x.io/a",
			     NULL};
	for (const char **p = bad; *p; p++) {
		sbx_err *e = NULL;
		r = (reg_ref){0};
		int k = reg_ref_parse(*p, &r, &e);
		if (k == 0)
			fprintf(stderr, "  accepted '%s'\n", *p);
		CHECK(k < 0);
		CHECK(e && sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
		sbx_err_free(e);
	}
	char longrepo[400] = "h.io/";
	memset(longrepo + 5, 'a', 300);
	CHECK(ref(longrepo, &r) < 0);
}

TEST(challenge_bearer)
{
	reg_challenge c = {0};
	CHECK(reg_challenge_parse("Bearer realm=\"https://auth.io/token\",service=\"reg.io\","
				  "scope=\"repository:a/b:pull,push\"",
				  &c, NULL) == 0);
	CHECK(c.scheme == REG_AUTH_BEARER);
	CHECK_STREQ(c.realm, "https://auth.io/token");
	CHECK_STREQ(c.service, "reg.io");
	CHECK_STREQ(c.scope, "repository:a/b:pull,push");
	reg_challenge_clear(&c);
	/* Unquoted values, odd spacing, an escaped quote, an unknown param. */
	CHECK(
	    reg_challenge_parse("bearer  realm=http://x/t , service=\"a\\\"b\", error=\"insufficient_scope\"",
				&c, NULL) == 0);
	CHECK_STREQ(c.realm, "http://x/t");
	CHECK_STREQ(c.service, "a\"b");
	CHECK(c.scope == NULL);
	reg_challenge_clear(&c);
}

TEST(challenge_basic_and_refusals)
{
	reg_challenge c = {0};
	CHECK(reg_challenge_parse("Basic realm=\"Registry Realm\"", &c, NULL) == 0);
	CHECK(c.scheme == REG_AUTH_BASIC);
	CHECK_STREQ(c.realm, "Registry Realm");
	reg_challenge_clear(&c);
	const char *bad[] = {"Negotiate",
			     "Bearer",
			     "Bearer service=\"x\"",
			     "Bearer realm=\"ftp://x\"",
			     "Bearer realm=\"https://x",
			     "Bearer =x",
			     "Bearer realm",
			     NULL};
	for (const char **p = bad; *p; p++) {
		c = (reg_challenge){0};
		if (reg_challenge_parse(*p, &c, NULL) == 0)
			fprintf(stderr, "  accepted '%s'\n", *p);
		CHECK(reg_challenge_parse(*p, &c, NULL) < 0);
	}
	CHECK(reg_challenge_parse(NULL, &c, NULL) < 0);
}

static int auth(const char *json, const char *reg, char **u, char **p)
{
	*u = *p = NULL;
	return reg_auth_lookup(json, strlen(json), reg, u, p, NULL);
}

TEST(config_auth_lookup)
{
	char *u, *p;
	/* "alice:s3cr:et" */
	const char *j = "{\"auths\":{\"other.io\":{\"auth\":\"eDp5\"},"
			"\"127.0.0.1:5000\":{\"auth\":\"YWxpY2U6czNjcjpldA==\"}}}";
	CHECK(auth(j, "127.0.0.1:5000", &u, &p) == 1);
	CHECK_STREQ(u, "alice");
	CHECK_STREQ(p, "s3cr:et");
	free(u);
	free(p);
	CHECK(auth(j, "127.0.0.1:5001", &u, &p) == 0);
	CHECK(u == NULL);
	/* URL keys; username/password fields; docker.io's historic key. */
	CHECK(auth("{\"auths\":{\"https://r.io/v1/\":{\"username\":\"b\",\"password\":\"c\"}}}", "r.io", &u,
		   &p) == 1);
	CHECK_STREQ(u, "b");
	free(u);
	free(p);
	CHECK(auth("{\"auths\":{\"https://index.docker.io/v1/\":{\"auth\":\"eDp5\"}}}", REG_DOCKER_HUB, &u,
		   &p) == 1);
	CHECK_STREQ(u, "x");
	CHECK_STREQ(p, "y");
	free(u);
	free(p);
	/* A credential helper's entry (no secret here) is not a match. */
	CHECK(auth("{\"auths\":{\"r.io\":{}},\"credsStore\":\"pass\"}", "r.io", &u, &p) == 0);
	CHECK(auth("{}", "r.io", &u, &p) == 0);
}

TEST(config_auth_refusals)
{
	char *u, *p;
	CHECK(auth("[", "r.io", &u, &p) < 0);
	CHECK(auth("{\"auths\":[]}", "r.io", &u, &p) < 0);
	CHECK(auth("{\"auths\":{\"r.io\":5}}", "r.io", &u, &p) < 0);
	CHECK(auth("{\"auths\":{\"r.io\":{\"auth\":\"!!!\"}}}", "r.io", &u, &p) < 0);
	CHECK(auth("{\"auths\":{\"r.io\":{\"auth\":\"bm9jb2xvbg==\"}}}", "r.io", &u, &p) < 0); /* "nocolon" */
	CHECK(auth("{\"auths\":{\"r.io\":{\"auth\":\"YQBiOmM=\"}}}", "r.io", &u, &p) < 0);     /* "a\0b:c" */
	CHECK(u == NULL && p == NULL);
}

TEST(token_answers)
{
	char *t = NULL;
	CHECK(reg_token_parse("{\"token\":\"abc.def\"}", 19, &t, NULL) == 0);
	CHECK_STREQ(t, "abc.def");
	free(t);
	const char *j = "{\"access_token\":\"zz\",\"expires_in\":300}";
	CHECK(reg_token_parse(j, strlen(j), &t, NULL) == 0);
	CHECK_STREQ(t, "zz");
	free(t);
	const char *bad[] = {
	    "{}", "{\"token\":\"\"}", "{\"token\":\"a b\"}", "{\"token\":\"a\\r\\nX-Evil: 1\"}", "[]", NULL};
	for (const char **p = bad; *p; p++)
		CHECK(reg_token_parse(*p, strlen(*p), &t, NULL) < 0);
}

TEST(manifest_checks)
{
	const char *m = "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MT_MANIFEST "\",\"config\":{}}";
	char d[STORE_DIGEST_SIZE], got[STORE_DIGEST_SIZE];
	CHECK(store_digest_buf(m, strlen(m), d, NULL) == 0);
	bool ix = true;
	CHECK(reg_manifest_check(m, strlen(m), OCI_MT_MANIFEST, d, d, &ix, got, NULL) == 0);
	CHECK(!ix);
	CHECK_STREQ(got, d);
	/* No header, a generic content type: the body's mediaType decides. */
	CHECK(reg_manifest_check(m, strlen(m), "application/json; charset=utf-8", NULL, NULL, &ix, got,
				 NULL) == 0);
	const char *idx = "{\"schemaVersion\":2,\"manifests\":[]}";
	CHECK(reg_manifest_check(idx, strlen(idx), NULL, "", NULL, &ix, got, NULL) == 0);
	CHECK(ix);
	CHECK(reg_manifest_check(idx, strlen(idx), DOCKER_MT_LIST, "", NULL, &ix, got, NULL) == 0);
	CHECK(ix);
}

TEST(manifest_check_refusals)
{
	const char *m = "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MT_MANIFEST "\"}";
	const char *other = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
	char got[STORE_DIGEST_SIZE];
	bool ix;
	sbx_err *e = NULL;
	/* The reference's digest, then the header's, must be the body's. */
	CHECK(reg_manifest_check(m, strlen(m), NULL, other, NULL, &ix, got, &e) < 0);
	CHECK(sbx_err_errno(e) == EBADMSG);
	sbx_err_free(e);
	CHECK(reg_manifest_check(m, strlen(m), NULL, NULL, other, &ix, got, NULL) < 0);
	/* Header and body disagree; an unknown media type; not JSON. */
	CHECK(reg_manifest_check(m, strlen(m), OCI_MT_INDEX, NULL, NULL, &ix, got, NULL) < 0);
	CHECK(reg_manifest_check("{}", 2, "application/vnd.docker.distribution.manifest.v1+json", NULL, NULL,
				 &ix, got, NULL) < 0);
	CHECK(reg_manifest_check("nope", 4, OCI_MT_MANIFEST, NULL, NULL, &ix, got, NULL) < 0);
}

TEST(upload_location)
{
	char *u = NULL;
	CHECK(reg_url_with_query("http://h:1", "/v2/r/blobs/uploads/abc?_state=x", "digest", "sha256:ab", &u,
				 NULL) == 0);
	CHECK_STREQ(u, "http://h:1/v2/r/blobs/uploads/abc?_state=x&digest=sha256%3Aab");
	free(u);
	CHECK(reg_url_with_query("http://h:1", "http://h:1/v2/u", "digest", "d", &u, NULL) == 0);
	CHECK_STREQ(u, "http://h:1/v2/u?digest=d");
	free(u);
	CHECK(reg_url_with_query("http://h:1", "/v2/u", NULL, NULL, &u, NULL) == 0);
	CHECK_STREQ(u, "http://h:1/v2/u");
	free(u);
	/* Another host (or scheme), a protocol-relative or empty location, a CRLF. */
	const char *bad[] = {"http://evil/v2/u",
			     "https://h:1/v2/u",
			     "http://h:10/v2",
			     "//evil/x",
			     "",
			     "/v2/u\r\nX: y",
			     "http://h:1",
			     NULL};
	for (const char **p = bad; *p; p++)
		CHECK(reg_url_with_query("http://h:1", *p, "k", "v", &u, NULL) < 0);
}

TEST(token_url_query)
{
	char *u = NULL;
	CHECK(reg_url_add_query("https://auth.io/token", "service", "reg io", &u, NULL) == 0);
	CHECK_STREQ(u, "https://auth.io/token?service=reg%20io");
	char *u2 = NULL;
	CHECK(reg_url_add_query(u, "scope", "repository:a/b:pull,push", &u2, NULL) == 0);
	CHECK_STREQ(u2, "https://auth.io/token?service=reg%20io&scope=repository%3Aa%2Fb%3Apull%2Cpush");
	free(u);
	free(u2);
}
