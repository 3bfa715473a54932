/* The OCI distribution client's pure parts (see registry.h): references,
 * WWW-Authenticate challenges, docker config.json credentials, token
 * answers, manifest checks, URLs. No I/O (registry.c holds the libcurl I/O). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/oci.h"
#include "store/registry.h"
#include "util/json.h"

#define BAD(...) err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, __VA_ARGS__)

void reg_ref_clear(reg_ref *r)
{
	if (!r)
		return;
	free(r->registry);
	free(r->repo);
	free(r->tag);
	*r = (reg_ref){0};
}

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool component_valid(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (lower_alnum(s[i]))
			continue;
		if (s[i] == '.' || s[i] == '_') {
			size_t run = 1;
			while (i + run < n && s[i + run] == s[i])
				run++;
			if (s[i] == '.' ? run > 1 : run > 2)
				return false;
			i += run - 1;
			if (!lower_alnum(s[i + 1]))
				return false;
		} else if (s[i] == '-') {
			while (i + 1 < n && s[i + 1] == '-')
				i++;
			if (!lower_alnum(s[i + 1]))
				return false;
		} else
			return false;
	}
	return true;
}

static bool repo_valid(const char *r)
{
	size_t len = strlen(r);
	if (len == 0 || len > REG_MAX_REPO)
		return false;
	const char *p = r;
	for (;;) {
		const char *sl = strchr(p, '/');
		size_t n = sl ? (size_t)(sl - p) : strlen(p);
		if (!component_valid(p, n))
			return false;
		if (!sl)
			return true;
		p = sl + 1;
	}
}

static bool host_valid(const char *h, size_t n)
{
	if (n == 0 || n > 255)
		return false;
	size_t colon = n;
	for (size_t i = 0; i < n; i++) {
		char c = h[i];
		if (c == ':') {
			if (colon != n)
				return false;
			colon = i;
		} else if (colon == n ? !(isalnum((unsigned char)c) || c == '.' || c == '-')
				      : !isdigit((unsigned char)c))
			return false;
	}
	if (colon == 0 || (colon != n && (colon + 1 == n || n - colon - 1 > 5)))
		return false;
	if (colon != n && atoi(h + colon + 1) > 65535)
		return false;
	return true;
}

int reg_ref_parse(const char *s, reg_ref *ret, sbx_err **err)
{
	if (!s || !*s)
		return BAD("empty registry reference");
	if (strlen(s) > 1024)
		return BAD("registry reference longer than 1024 characters");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return BAD("registry reference '%.80s' has a space or a control character", s);
	_cleanup_free_ char *buf = strdup(s);
	if (!buf)
		return err_oom(err);
	reg_ref r = {0};
	char *at = strchr(buf, '@');
	if (at) {
		*at++ = 0;
		if (!store_digest_valid(at))
			return BAD("'%.100s': the digest must be sha256:<64 lowercase hex>", s);
		memcpy(r.digest, at, STORE_DIGEST_SIZE);
	}
	char *name = buf;
	/* The tag: after the last ':' that follows the last '/'. */
	char *sl = strrchr(name, '/');
	char *colon = strrchr(sl ? sl : name, ':');
	const char *tag = NULL;
	if (colon) {
		*colon = 0;
		tag = colon + 1;
		if (!oci_tag_valid(tag))
			return BAD("'%.100s': invalid tag '%.130s'", s, tag);
	}
	char *first_sl = strchr(name, '/');
	const char *host, *repo;
	_cleanup_free_ char *lib = NULL;
	if (first_sl &&
	    (memchr(name, '.', (size_t)(first_sl - name)) || memchr(name, ':', (size_t)(first_sl - name)) ||
	     ((size_t)(first_sl - name) == 9 && !strncmp(name, "localhost", 9)))) {
		*first_sl = 0;
		host = name;
		repo = first_sl + 1;
		if (!host_valid(host, strlen(host)))
			return BAD("'%.100s': invalid registry host '%.100s'", s, host);
		if (streq(host, "docker.io") || streq(host, "index.docker.io"))
			host = REG_DOCKER_HUB;
	} else {
		host = REG_DOCKER_HUB;
		repo = name;
	}
	if (streq(host, REG_DOCKER_HUB) && !strchr(repo, '/')) {
		if (asprintf(&lib, "library/%s", repo) < 0)
			return err_oom(err);
		repo = lib;
	}
	if (!repo_valid(repo))
		return BAD("'%.100s': invalid repository '%.100s' (lowercase letters, digits and separators "
			   ". _ __ -, "
			   "components joined by '/', at most %d characters)",
			   s, repo, REG_MAX_REPO);
	r.registry = strdup(host);
	r.repo = strdup(repo);
	r.tag = tag ? strdup(tag) : r.digest[0] ? NULL : strdup("latest");
	if (!r.registry || !r.repo || (!r.tag && (tag || !r.digest[0]))) {
		reg_ref_clear(&r);
		return err_oom(err);
	}
	*ret = r;
	return 0;
}

/* ---- WWW-Authenticate ------------------------------------------------------ */

void reg_challenge_clear(reg_challenge *c)
{
	if (!c)
		return;
	free(c->realm);
	free(c->service);
	free(c->scope);
	*c = (reg_challenge){0};
}

static bool tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~/:=", c) && c != '=');
}

int reg_challenge_parse(const char *hdr, reg_challenge *ret, sbx_err **err)
{
	if (!hdr)
		return BAD("no WWW-Authenticate header");
	if (strlen(hdr) > 8192)
		return BAD("WWW-Authenticate header longer than 8192 bytes");
	const char *p = hdr;
	while (*p == ' ' || *p == '\t')
		p++;
	const char *sch = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	size_t sl = (size_t)(p - sch);
	reg_challenge c = {0};
	if (sl == 5 && !strncasecmp(sch, "Basic", 5))
		c.scheme = REG_AUTH_BASIC;
	else if (sl == 6 && !strncasecmp(sch, "Bearer", 6))
		c.scheme = REG_AUTH_BEARER;
	else
		return BAD("unsupported authentication scheme '%.*s'", (int)(sl > 40 ? 40 : sl), sch);
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (!*p)
			break;
		const char *k = p;
		while (tchar(*p))
			p++;
		size_t kl = (size_t)(p - k);
		while (*p == ' ' || *p == '\t')
			p++;
		if (kl == 0 || *p != '=') {
			reg_challenge_clear(&c);
			return BAD("malformed WWW-Authenticate parameter at '%.40s'", k);
		}
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		_cleanup_free_ char *v = malloc(strlen(p) + 1);
		if (!v) {
			reg_challenge_clear(&c);
			return err_oom(err);
		}
		size_t vl = 0;
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1])
					p++;
				v[vl++] = *p++;
			}
			if (*p != '"') {
				reg_challenge_clear(&c);
				return BAD("unterminated quoted string in WWW-Authenticate");
			}
			p++;
		} else
			while (*p && *p != ',' && *p != ' ' && *p != '\t')
				v[vl++] = *p++;
		v[vl] = 0;
		char **slot = NULL;
		if (kl == 5 && !strncasecmp(k, "realm", 5))
			slot = &c.realm;
		else if (kl == 7 && !strncasecmp(k, "service", 7))
			slot = &c.service;
		else if (kl == 5 && !strncasecmp(k, "scope", 5))
			slot = &c.scope;
		if (slot) {
			free(*slot);
			*slot = TAKE_PTR(v);
		}
	}
	if (c.scheme == REG_AUTH_BEARER &&
	    (!c.realm || !(startswith(c.realm, "https://") || startswith(c.realm, "http://")))) {
		reg_challenge_clear(&c);
		return BAD("Bearer challenge without an http(s) realm");
	}
	*ret = c;
	return 0;
}

/* ---- docker config.json ----------------------------------------------------- */

static int b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Standard base64 (padding optional); NUL-terminated result. */
static int b64_decode(const char *s, char **ret, size_t *ret_len)
{
	size_t n = strlen(s);
	char *out = malloc(n / 4 * 3 + 4);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	size_t i = 0;
	for (; i < n && s[i] != '='; i++) {
		int v = b64val((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return -EINVAL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	for (; i < n; i++)
		if (s[i] != '=') {
			free(out);
			return -EINVAL;
		}
	out[o] = 0;
	*ret = out;
	*ret_len = o;
	return 0;
}

/* "https://host:port/v1/" -> "host:port"; "host" -> "host". */
static bool auth_key_matches(const char *key, const char *registry)
{
	const char *k = key;
	if (startswith(k, "https://"))
		k += 8;
	else if (startswith(k, "http://"))
		k += 7;
	size_t kl = strcspn(k, "/");
	if (kl == strlen(registry) && !strncmp(k, registry, kl))
		return true;
	if (streq(registry, REG_DOCKER_HUB))
		return (kl == 15 && !strncmp(k, "index.docker.io", 15)) ||
		       (kl == 9 && !strncmp(k, "docker.io", 9));
	return false;
}

int reg_auth_lookup(const char *json, size_t len, const char *registry, char **ret_user, char **ret_pass,
		    sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j))
		return BAD("docker config: not a JSON object%s%s", j ? "" : ": ", j ? "" : je.text);
	json_t *auths = json_object_get(j, "auths");
	if (!auths)
		return 0;
	if (!json_is_object(auths))
		return BAD("docker config: \"auths\" is not an object");
	const char *key;
	json_t *e;
	json_object_foreach(auths, key, e)
	{
		if (!auth_key_matches(key, registry))
			continue;
		if (!json_is_object(e))
			return BAD("docker config: auths[\"%.100s\"] is not an object", key);
		const char *a = json_str(e, "auth"), *u = json_str(e, "username"),
			   *pw = json_str(e, "password");
		_cleanup_free_ char *dec = NULL;
		if (a && *a) {
			size_t dl = 0;
			int r = b64_decode(a, &dec, &dl);
			if (r == -ENOMEM)
				return err_oom(err);
			if (r < 0 || memchr(dec, 0, dl))
				return BAD("docker config: auths[\"%.100s\"].auth is not base64", key);
			char *c = strchr(dec, ':');
			if (!c)
				return BAD(
				    "docker config: auths[\"%.100s\"].auth is not base64 of user:password",
				    key);
			*c = 0;
			u = dec;
			pw = c + 1;
		}
		if (!u || !pw)
			continue; /* e.g. an identitytoken or a credential helper's entry */
		char *uu = strdup(u), *pp = strdup(pw);
		if (!uu || !pp) {
			free(uu);
			free(pp);
			return err_oom(err);
		}
		*ret_user = uu;
		*ret_pass = pp;
		return 1;
	}
	return 0;
}

int reg_token_parse(const char *json, size_t len, char **ret, sbx_err **err)
{
	_cleanup_json_ json_t *j = json_loadb(json, len, 0, NULL);
	if (!j || !json_is_object(j))
		return BAD("token answer is not a JSON object");
	const char *t = json_str(j, "token");
	if (!t || !*t)
		t = json_str(j, "access_token");
	if (!t || !*t)
		return BAD("token answer has no \"token\" nor \"access_token\"");
	if (strlen(t) > 65536)
		return BAD("token longer than 65536 bytes");
	for (const char *p = t; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return BAD("token has a space or a control character");
	return (*ret = strdup(t)) ? 0 : err_oom(err);
}

int reg_manifest_check(const char *body, size_t len, const char *content_type, const char *want_digest,
		       const char *header_digest, bool *ret_is_index, char ret_digest[STORE_DIGEST_SIZE],
		       sbx_err **err)
{
	if (len > OCI_MAX_JSON)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "manifest larger than %u bytes",
			       OCI_MAX_JSON);
	char d[STORE_DIGEST_SIZE];
	if (store_digest_buf(body, len, d, err) < 0)
		return -1;
	if (want_digest && *want_digest && !streq(d, want_digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "manifest digest %s, expected %s", d,
			       want_digest);
	if (header_digest && *header_digest && !streq(d, header_digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "manifest digest %s, but the registry says %.80s", d, header_digest);
	/* The media type: the header's, unless generic, else the body's. */
	_cleanup_free_ char *ct = NULL;
	if (content_type) {
		size_t n = strcspn(content_type, ";");
		while (n && content_type[n - 1] == ' ')
			n--;
		ct = strndup(content_type, n);
		if (!ct)
			return err_oom(err);
	}
	_cleanup_json_ json_t *j = json_loadb(body, len, 0, NULL);
	if (!j || !json_is_object(j))
		return BAD("manifest is not a JSON object");
	const char *mt = ct;
	if (!mt || !*mt || streq(mt, "application/json") || streq(mt, "text/plain") ||
	    streq(mt, "application/octet-stream"))
		mt = json_str(j, "mediaType");
	if (!mt) /* an OCI document may omit mediaType: tell by its shape */
		mt = json_object_get(j, "manifests") ? OCI_MT_INDEX : OCI_MT_MANIFEST;
	const char *bmt = json_str(j, "mediaType");
	if (bmt && !streq(bmt, mt))
		return BAD("manifest media type '%.100s' but its body says '%.100s'", mt, bmt);
	if (oci_media_is_index(mt))
		*ret_is_index = true;
	else if (oci_media_is_manifest(mt))
		*ret_is_index = false;
	else
		return BAD("media type '%.100s' is not an OCI or docker image manifest or index", mt);
	memcpy(ret_digest, d, STORE_DIGEST_SIZE);
	return 0;
}

int reg_url_with_query(const char *base, const char *loc, const char *k, const char *v, char **ret,
		       sbx_err **err)
{
	if (!loc || !*loc)
		return BAD("registry sent no upload location");
	_cleanup_free_ char *url = NULL;
	if (loc[0] == '/') {
		if (loc[1] == '/')
			return BAD("upload location '%.100s' is not an absolute path", loc);
		if (asprintf(&url, "%s%s", base, loc) < 0)
			return err_oom(err);
	} else {
		size_t bl = strlen(base);
		if (strncmp(loc, base, bl) || loc[bl] != '/' || loc[bl + 1] == '/')
			return BAD("upload location '%.100s' is not a path on %s", loc, base);
		if (!(url = strdup(loc)))
			return err_oom(err);
	}
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return BAD("upload location has a space or a control character");
	if (!k) {
		*ret = TAKE_PTR(url);
		return 0;
	}
	return reg_url_add_query(url, k, v, ret, err);
}

int reg_url_add_query(const char *url, const char *k, const char *v, char **ret, sbx_err **err)
{
	_cleanup_free_ char *esc = malloc(strlen(v) * 3 + 1);
	if (!esc)
		return err_oom(err);
	size_t o = 0;
	for (const char *p = v; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			esc[o++] = (char)c;
		else
			o += (size_t)sprintf(esc + o, "%%%02X", c);
	}
	esc[o] = 0;
	char *out = NULL;
	if (asprintf(&out, "%s%c%s=%s", url, strchr(url, '?') ? '&' : '?', k, esc) < 0)
		return err_oom(err);
	*ret = out;
	return 0;
}
