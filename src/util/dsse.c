/* DSSE: base64, PAE and the envelope (see dsse.h for the rules). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/dsse.h"
#include "util/json.h"

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *dsse_b64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
		return NULL;
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	if (!out)
		return NULL;
	size_t i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = b64_std[v >> 18];
		*o++ = b64_std[(v >> 12) & 63];
		*o++ = b64_std[(v >> 6) & 63];
		*o++ = b64_std[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		*o++ = b64_std[v >> 18];
		*o++ = b64_std[(v >> 12) & 63];
		*o++ = '=';
		*o++ = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		*o++ = b64_std[v >> 18];
		*o++ = b64_std[(v >> 12) & 63];
		*o++ = b64_std[(v >> 6) & 63];
		*o++ = '=';
	}
	*o = 0;
	return out;
}

/* 0..63, or -1 for a character outside both alphabets. *alpha records which
 * alphabet's special characters were seen: 1 standard, 2 URL-safe. */
static int b64_value(unsigned char c, int *alpha)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '/') {
		*alpha |= 1;
		return c == '+' ? 62 : 63;
	}
	if (c == '-' || c == '_') {
		*alpha |= 2;
		return c == '-' ? 62 : 63;
	}
	return -1;
}

int dsse_b64_decode(const char *s, size_t len, size_t max, unsigned char **ret, size_t *ret_len,
		    sbx_err **err)
{
	size_t pad = 0;
	while (pad < len && s[len - 1 - pad] == '=')
		pad++;
	size_t n = len - pad; /* characters that carry data */
	if (pad > 2)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "base64: more than two '=' of padding");
	if (n % 4 == 1)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "base64: truncated (length %zu)", len);
	if (pad && (len % 4 != 0 || pad != (4 - n % 4) % 4))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "base64: wrong padding");
	size_t out_len = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
	if (out_len > max)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "base64: decodes to %zu bytes, at most %zu",
			       out_len, max);
	_cleanup_free_ unsigned char *out = malloc(out_len + 1);
	if (!out)
		return err_oom(err);
	int alpha = 0;
	uint32_t acc = 0;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)s[i], &alpha);
		if (v < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "base64: invalid character at offset %zu", i);
		acc = acc << 6 | (uint32_t)v;
		if (i % 4 == 3) {
			out[o++] = (unsigned char)(acc >> 16);
			out[o++] = (unsigned char)(acc >> 8);
			out[o++] = (unsigned char)acc;
			acc = 0;
		}
	}
	if (alpha == 3)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "base64: mixes the standard and URL-safe alphabets");
	if (n % 4 == 2) {
		if (acc & 0x0f)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "base64: non-zero trailing bits");
		out[o++] = (unsigned char)(acc >> 4);
	} else if (n % 4 == 3) {
		if (acc & 0x03)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "base64: non-zero trailing bits");
		out[o++] = (unsigned char)(acc >> 10);
		out[o++] = (unsigned char)(acc >> 2);
	}
	out[o] = 0;
	*ret = TAKE_PTR(out);
	*ret_len = o;
	return 0;
}

char *dsse_pae(const char *type, size_t type_len, const void *body, size_t body_len, size_t *ret_len)
{
	char head[64];
	int h1 = snprintf(head, sizeof(head), "DSSEv1 %zu ", type_len);
	char mid[32];
	int h2 = snprintf(mid, sizeof(mid), " %zu ", body_len);
	if (type_len > SIZE_MAX / 4 || body_len > SIZE_MAX / 4)
		return NULL;
	size_t total = (size_t)h1 + type_len + (size_t)h2 + body_len;
	char *out = malloc(total + 1), *o = out;
	if (!out)
		return NULL;
	memcpy(o, head, (size_t)h1);
	o += h1;
	memcpy(o, type, type_len);
	o += type_len;
	memcpy(o, mid, (size_t)h2);
	o += h2;
	if (body_len)
		memcpy(o, body, body_len);
	out[total] = 0;
	*ret_len = total;
	return out;
}

void dsse_envelope_clear(dsse_envelope *e)
{
	if (!e)
		return;
	free(e->payload_type);
	free(e->payload);
	for (size_t i = 0; i < e->n_sigs; i++) {
		free(e->sigs[i].keyid);
		free(e->sigs[i].sig);
	}
	*e = (dsse_envelope){0};
}

static void envelope_clearp(dsse_envelope *e)
{
	dsse_envelope_clear(e);
}

int dsse_envelope_parse(const char *buf, size_t len, const char *want_type, dsse_envelope *ret, sbx_err **err)
{
	if (len > DSSE_ENVELOPE_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "envelope: %zu bytes, at most %u", len,
			       DSSE_ENVELOPE_MAX);
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "envelope: not JSON: %s (line %d)",
			       je.text, je.line);
	if (!json_is_object(j))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "envelope: not a JSON object");
	json_t *pt = json_object_get(j, "payloadType"), *pl = json_object_get(j, "payload"),
	       *sigs = json_object_get(j, "signatures");
	if (!json_is_string(pt))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "envelope: payloadType: missing or not a string");
	if (!json_is_string(pl))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "envelope: payload: missing or not a string");
	if (!json_is_array(sigs))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "envelope: signatures: missing or not an array");
	const char *type = json_string_value(pt);
	if (json_string_length(pt) == 0 || json_string_length(pt) > DSSE_TYPE_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "envelope: payloadType: empty or too long");
	if (want_type && !streq(type, want_type))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "envelope: payloadType '%.64s' is not '%s'", type, want_type);
	size_t n = json_array_size(sigs);
	if (n == 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "envelope: signatures: none");
	if (n > DSSE_SIGNATURES_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "envelope: signatures: %zu, at most %d", n,
			       DSSE_SIGNATURES_MAX);
	_cleanup_(envelope_clearp) dsse_envelope e = {0};
	if (!(e.payload_type = strdup(type)))
		return err_oom(err);
	if (dsse_b64_decode(json_string_value(pl), json_string_length(pl), DSSE_PAYLOAD_MAX, &e.payload,
			    &e.payload_len, err) < 0)
		return err_wrap(err, "envelope: payload");
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(sigs, i);
		if (!json_is_object(s))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "envelope: signatures[%zu]: not an object", i);
		json_t *sig = json_object_get(s, "sig"), *kid = json_object_get(s, "keyid");
		if (!json_is_string(sig))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "envelope: signatures[%zu].sig: missing or not a string", i);
		if (kid && !json_is_string(kid))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "envelope: signatures[%zu].keyid: not a string", i);
		if (kid && json_string_length(kid) > DSSE_KEYID_MAX)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "envelope: signatures[%zu].keyid: longer than %d", i, DSSE_KEYID_MAX);
		dsse_sig *d = &e.sigs[e.n_sigs++];
		if (kid && !(d->keyid = strdup(json_string_value(kid))))
			return err_oom(err);
		if (dsse_b64_decode(json_string_value(sig), json_string_length(sig), DSSE_SIG_MAX, &d->sig,
				    &d->sig_len, err) < 0)
			return err_wrap(err, "envelope: signatures[%zu].sig", i);
	}
	*ret = e;
	e = (dsse_envelope){0};
	return 0;
}

json_t *dsse_envelope_build(const char *type, const void *payload, size_t payload_len, const char *keyid,
			    const void *sig, size_t sig_len)
{
	_cleanup_free_ char *p = dsse_b64_encode(payload, payload_len), *s = dsse_b64_encode(sig, sig_len);
	if (!p || !s)
		return NULL;
	json_t *one = keyid ? json_pack("{s:s,s:s}", "keyid", keyid, "sig", s) : json_pack("{s:s}", "sig", s);
	return json_pack("{s:s,s:s,s:[o]}", "payloadType", type, "payload", p, "signatures", one);
}
