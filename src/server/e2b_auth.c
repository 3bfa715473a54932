/* E2B ids, tokens, /files signatures, Basic auth and Host routing (see
 * e2b_auth.h for the rules). Pure. SHA-256 is the store's
 * (store/digest.h), base64 DSSE's (util/dsse.h). */
#include "server/e2b_auth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "store/digest.h"
#include "util/ct.h"
#include "util/dsse.h"

void e2b_id_mint(const uint8_t rnd[E2B_ID_ENTROPY], char ret[E2B_ID_LEN + 1])
{
	static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
	for (size_t i = 0; i < E2B_ID_LEN; i++) {
		size_t bit = i * 5, byte = bit / 8, shift = bit % 8;
		unsigned v = (unsigned)rnd[byte] << 8 | (byte + 1 < E2B_ID_ENTROPY ? rnd[byte + 1] : 0);
		ret[i] = b32[(v >> (11 - shift)) & 31];
	}
	ret[E2B_ID_LEN] = 0;
}

bool e2b_id_valid(const char *id)
{
	if (!id)
		return false;
	size_t n = 0;
	for (; id[n]; n++)
		if (n >= E2B_ID_MAX || !((id[n] >= 'a' && id[n] <= 'z') || (id[n] >= '0' && id[n] <= '9')))
			return false;
	return n > 0;
}

void e2b_token_mint(const uint8_t rnd[E2B_TOKEN_ENTROPY], char ret[E2B_TOKEN_LEN + 1])
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < E2B_TOKEN_ENTROPY; i++) {
		ret[2 * i] = hx[rnd[i] >> 4];
		ret[2 * i + 1] = hx[rnd[i] & 15];
	}
	ret[E2B_TOKEN_LEN] = 0;
}

bool e2b_secret_equal(const char *given, const char *expected)
{
	if (!given || !expected)
		return false;
	return ct_equal(given, strlen(given), expected, strlen(expected));
}

static bool op_valid(const char *op)
{
	return op && (strcmp(op, "read") == 0 || strcmp(op, "write") == 0);
}

int e2b_file_signature(const char *path, const char *op, const char *user, const char *token, const char *exp,
		       char ret[E2B_SIGNATURE_LEN + 1], sbx_err **err)
{
	if (!path || !token || !op_valid(op))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "file signature: needs a path, a token and the operation read or write");
	_cleanup_free_ char *raw = NULL;
	int n = exp ? asprintf(&raw, "%s:%s:%s:%s:%s", path, op, user ? user : "", token, exp)
		    : asprintf(&raw, "%s:%s:%s:%s", path, op, user ? user : "", token);
	if (n < 0) {
		raw = NULL;
		return err_oom(err);
	}
	char hex[STORE_DIGEST_SIZE];
	uint8_t md[STORE_DIGEST_RAW_LEN];
	int r = store_digest_buf(raw, (size_t)n, hex, err);
	explicit_bzero(raw, (size_t)n); /* it holds the token */
	if (r < 0)
		return r;
	if (store_digest_parse(hex, md) < 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "file signature: bad digest");
	_cleanup_free_ char *b64 = dsse_b64_encode(md, sizeof(md));
	if (!b64)
		return err_oom(err);
	size_t bl = strlen(b64);
	while (bl && b64[bl - 1] == '=')
		bl--;
	if (bl != E2B_SIGNATURE_LEN - 3)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "file signature: unexpected length");
	memcpy(ret, "v1_", 3);
	memcpy(ret + 3, b64, bl);
	ret[E2B_SIGNATURE_LEN] = 0;
	return 0;
}

/* signature_expiration: 1-19 digits, no leading zero (one spelling per
 * value, as the SDK writes it), within int64. */
static int exp_parse(const char *s, int64_t *ret)
{
	size_t n = strlen(s);
	if (n == 0 || n > 19 || (s[0] == '0' && n > 1))
		return -EINVAL;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > (uint64_t)INT64_MAX)
		return -EINVAL;
	*ret = (int64_t)v;
	return 0;
}

e2b_sig_verdict e2b_file_signature_verify(const char *path, const char *op, const char *user,
					  const char *token, const char *signature, const char *exp,
					  int64_t now)
{
	int64_t exp_s = 0;
	if (!token || !*token || !signature || !*signature || (exp && exp_parse(exp, &exp_s) < 0))
		return E2B_SIG_BAD;
	char want[E2B_SIGNATURE_LEN + 1];
	if (e2b_file_signature(path, op, user, token, exp, want, NULL) < 0)
		return E2B_SIG_BAD;
	bool same = ct_equal(signature, strlen(signature), want, E2B_SIGNATURE_LEN);
	explicit_bzero(want, sizeof(want));
	if (!same)
		return E2B_SIG_BAD;
	return exp && exp_s < now ? E2B_SIG_EXPIRED : E2B_SIG_OK;
}

int e2b_basic_auth_user(const char *value, char ret[E2B_USER_MAX + 1], sbx_err **err)
{
	if (!value || strnlen(value, E2B_AUTH_HEADER_MAX + 1) > E2B_AUTH_HEADER_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "authorization: missing or too long");
	if (strncasecmp(value, "Basic ", 6) != 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "authorization: not the Basic scheme");
	const char *b = value + 6;
	size_t bl = strlen(b);
	/* canonical standard base64: its alphabet, padded to a multiple of 4 */
	if (bl == 0 || bl % 4 != 0 ||
	    strspn(b, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != bl)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "authorization: Basic credentials are not base64");
	_cleanup_free_ unsigned char *dec = NULL;
	size_t dl;
	_cleanup_err_ sbx_err *e = NULL;
	if (dsse_b64_decode(b, bl, E2B_AUTH_HEADER_MAX, &dec, &dl, &e) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "authorization: %s", sbx_err_message(e));
	const unsigned char *colon = memchr(dec, ':', dl);
	if (!colon)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "authorization: Basic credentials without ':'");
	size_t ul = (size_t)(colon - dec);
	if (ul == 0 || ul > E2B_USER_MAX || memchr(dec, 0, ul))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "authorization: no valid user name");
	char name[E2B_USER_MAX + 1];
	memcpy(name, dec, ul);
	name[ul] = 0;
	/* The one grammar of a user name (--user, MCP's user); a number is a uid. */
	user_spec spec;
	if (user_spec_parse(name, &spec, NULL) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "authorization: no valid user name");
	memcpy(ret, name, ul + 1);
	return 0;
}

int e2b_port_parse(const char *s, size_t len, uint16_t *ret)
{
	if (!s || len == 0 || len > 5 || s[0] == '0')
		return -EINVAL;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return -EINVAL;
	*ret = (uint16_t)v;
	return 0;
}

int e2b_host_parse(const char *host, const char *domain, uint16_t *ret_port, char ret_id[E2B_ID_MAX + 1],
		   sbx_err **err)
{
	if (!host || !domain || !*domain)
		return 0;
	size_t hl = strnlen(host, E2B_HOST_MAX + 7);
	if (hl > E2B_HOST_MAX + 6) /* a name and ":65535" */
		return 0;
	/* An optional :port of the listener; a bracketed IPv6 literal is never
	 * under a domain, so any ':' ends the name. */
	const char *colon = memchr(host, ':', hl);
	if (colon) {
		uint16_t lp;
		if (e2b_port_parse(colon + 1, hl - (size_t)(colon - host) - 1, &lp) < 0)
			return 0;
		hl = (size_t)(colon - host);
	}
	size_t dl = strlen(domain);
	if (hl <= dl + 1 || host[hl - dl - 1] != '.' || strncasecmp(host + hl - dl, domain, dl) != 0)
		return 0;
	size_t pl = hl - dl - 1; /* the label(s) before ".domain" */
	if (pl == 7 && strncasecmp(host, "sandbox", 7) == 0)
		return 0;
	const char *dash = memchr(host, '-', pl);
	uint16_t port;
	if (!dash || e2b_port_parse(host, (size_t)(dash - host), &port) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "host: not {port}-{sandbox id}.%s (the port 1-65535)", domain);
	const char *id = dash + 1;
	size_t il = pl - (size_t)(id - host);
	char buf[E2B_ID_MAX + 1];
	if (il == 0 || il > E2B_ID_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "host: no valid sandbox id");
	for (size_t i = 0; i < il; i++) {
		char c = id[i];
		buf[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	buf[il] = 0;
	if (!e2b_id_valid(buf))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "host: no valid sandbox id");
	*ret_port = port;
	memcpy(ret_id, buf, il + 1);
	return 1;
}

int e2b_domain_valid(const char *domain, sbx_err **err)
{
	size_t n = strlen(domain), label = 0;
	bool dot = false, ok = n > 0 && n <= 200;
	for (size_t i = 0; ok && i <= n; i++) {
		char c = domain[i];
		if (c == '.' || c == 0) {
			ok = label > 0 && domain[i - 1] != '-';
			dot |= c == '.';
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && label > 0)) {
			ok = ++label <= 63;
		} else {
			ok = false;
		}
	}
	if (!ok || !dot)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "--domain '%.220s': a lowercase DNS name with a dot (e.g. sbx.example.com), "
			       "its labels of a-z, 0-9 and '-'",
			       domain);
	return 0;
}

int e2b_metadata_header(const char *name, const char *value, char ret_key[E2B_METADATA_KEY_MAX + 1],
			sbx_err **err)
{
	static const char prefix[] = "X-Metadata-";
	if (strncasecmp(name, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	const char *k = name + sizeof(prefix) - 1;
	size_t n = strlen(k);
	if (n == 0 || n > E2B_METADATA_KEY_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "%.64s: a metadata key of 1 to %d characters", name, E2B_METADATA_KEY_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)k[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("!#$%&'*+-.^_`|~", c)))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "%.64s: a metadata key is made of HTTP token characters", name);
		ret_key[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
	}
	ret_key[n] = 0;
	size_t vl = strlen(value ?: "");
	if (vl > E2B_METADATA_VALUE_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "%.64s: a metadata value of at most %d bytes", name, E2B_METADATA_VALUE_MAX);
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)value[i] < 0x20 || (unsigned char)value[i] > 0x7e)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "%.64s: a metadata value is printable US-ASCII", name);
	return 1;
}
