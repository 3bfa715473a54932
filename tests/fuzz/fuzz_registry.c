/* libFuzzer target: the registry client's pure parsers (src/store/registry.h).
 * The first byte picks one: a reference, a WWW-Authenticate challenge, a
 * docker config.json lookup, a token answer, a manifest check, an upload
 * location. Accepted results must hold what the I/O relies on: a
 * reference's parts are in their grammar (no byte that could end a URL or a
 * header), a token has no space or control byte (it goes into a header), a
 * location stays on the registry's base URL. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/registry.h"
#include "util/err.h"

static void no_ctl(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0] % 6;
	char *s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	size_t len = size - 1;
	sbx_err *e = NULL;
	if (sel == 0) {
		reg_ref r = {0};
		if (reg_ref_parse(s, &r, &e) == 0) {
			if (!r.registry || !r.repo || (!r.tag && !r.digest[0]))
				abort();
			no_ctl(r.registry);
			no_ctl(r.repo);
			no_ctl(r.tag);
			if (strchr(r.registry, '/') || strchr(r.repo, '?') || strchr(r.repo, '#') ||
			    strstr(r.repo, ".."))
				abort();
			if (r.digest[0] && !store_digest_valid(r.digest))
				abort();
			reg_ref_clear(&r);
		}
	} else if (sel == 1) {
		reg_challenge c = {0};
		if (reg_challenge_parse(s, &c, &e) == 0) {
			if (c.scheme == REG_AUTH_BEARER && (!c.realm || strncmp(c.realm, "http", 4)))
				abort();
			reg_challenge_clear(&c);
		}
	} else if (sel == 2) {
		char *u = NULL, *p = NULL;
		int k = reg_auth_lookup(s, len, "127.0.0.1:5000", &u, &p, &e);
		if (k == 1 && (!u || !p))
			abort();
		if (k != 1 && (u || p))
			abort();
		free(u);
		free(p);
	} else if (sel == 3) {
		char *t = NULL;
		if (reg_token_parse(s, len, &t, &e) == 0) {
			if (!*t)
				abort();
			no_ctl(t);
			free(t);
		}
	} else if (sel == 4) {
		bool ix;
		char d[STORE_DIGEST_SIZE];
		if (reg_manifest_check(s, len, NULL, NULL, NULL, &ix, d, &e) == 0 && !store_digest_valid(d))
			abort();
	} else {
		char *u = NULL;
		if (reg_url_with_query("http://h:1", s, "digest", "sha256:x y", &u, &e) == 0) {
			if (strncmp(u, "http://h:1/", 11))
				abort();
			no_ctl(u);
			free(u);
		}
	}
	sbx_err_free(e);
	free(s);
	return 0;
}
