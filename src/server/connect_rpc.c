/* The Connect protocol's framing, codes and request classification (see
 * connect_rpc.h for the rules). Pure: no I/O. */
#include "server/connect_rpc.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/json.h"
#include "util/utf8.h"

/* ---- codes ---------------------------------------------------------------- */

static const char *const code_names[] = {
    [CONNECT_CANCELED] = "canceled",
    [CONNECT_UNKNOWN] = "unknown",
    [CONNECT_INVALID_ARGUMENT] = "invalid_argument",
    [CONNECT_DEADLINE_EXCEEDED] = "deadline_exceeded",
    [CONNECT_NOT_FOUND] = "not_found",
    [CONNECT_ALREADY_EXISTS] = "already_exists",
    [CONNECT_PERMISSION_DENIED] = "permission_denied",
    [CONNECT_RESOURCE_EXHAUSTED] = "resource_exhausted",
    [CONNECT_FAILED_PRECONDITION] = "failed_precondition",
    [CONNECT_ABORTED] = "aborted",
    [CONNECT_OUT_OF_RANGE] = "out_of_range",
    [CONNECT_UNIMPLEMENTED] = "unimplemented",
    [CONNECT_INTERNAL] = "internal",
    [CONNECT_UNAVAILABLE] = "unavailable",
    [CONNECT_DATA_LOSS] = "data_loss",
    [CONNECT_UNAUTHENTICATED] = "unauthenticated",
};

const char *connect_code_name(connect_code c)
{
	if ((int)c <= 0 || (size_t)c >= ARRAY_SIZE(code_names))
		return NULL;
	return code_names[c];
}

int connect_code_from_name(const char *name, connect_code *ret)
{
	if (!name)
		return -EINVAL;
	for (size_t i = 1; i < ARRAY_SIZE(code_names); i++)
		if (strcmp(name, code_names[i]) == 0) {
			*ret = (connect_code)i;
			return 0;
		}
	return -EINVAL;
}

int connect_code_http_status(connect_code c)
{
	switch (c) {
	case CONNECT_OK:
		return 200;
	case CONNECT_CANCELED:
		return 499; /* Client Closed Request */
	case CONNECT_INVALID_ARGUMENT:
	case CONNECT_FAILED_PRECONDITION:
	case CONNECT_OUT_OF_RANGE:
		return 400;
	case CONNECT_DEADLINE_EXCEEDED:
		return 504;
	case CONNECT_NOT_FOUND:
		return 404;
	case CONNECT_ALREADY_EXISTS:
	case CONNECT_ABORTED:
		return 409;
	case CONNECT_PERMISSION_DENIED:
		return 403;
	case CONNECT_RESOURCE_EXHAUSTED:
		return 429;
	case CONNECT_UNIMPLEMENTED:
		return 501;
	case CONNECT_UNAVAILABLE:
		return 503;
	case CONNECT_UNAUTHENTICATED:
		return 401;
	case CONNECT_UNKNOWN:
	case CONNECT_INTERNAL:
	case CONNECT_DATA_LOSS:
	default:
		return 500;
	}
}

connect_code connect_code_from_sbx(sbx_code code, int errnum)
{
	switch (code) {
	case SBX_E_NOT_FOUND:
		return CONNECT_NOT_FOUND;
	case SBX_E_INVALID_ARGUMENT:
		return CONNECT_INVALID_ARGUMENT;
	case SBX_E_LIMIT_EXCEEDED:
		return CONNECT_RESOURCE_EXHAUSTED;
	case SBX_E_UNAVAILABLE:
		return CONNECT_UNAVAILABLE;
	case SBX_E_CONFLICT:
		errnum = errnum < 0 ? -errnum : errnum;
		if (errnum == EEXIST)
			return CONNECT_ALREADY_EXISTS;
		if (errnum == EBUSY || errnum == EAGAIN)
			return CONNECT_ABORTED;
		return CONNECT_FAILED_PRECONDITION;
	case SBX_E_INTERNAL:
	default:
		return CONNECT_INTERNAL;
	}
}

/* ---- envelopes ------------------------------------------------------------ */

int connect_envelope_prefix(uint8_t flags, size_t len, uint8_t ret[CONNECT_ENVELOPE_PREFIX])
{
	if (len > CONNECT_MESSAGE_MAX)
		return -EMSGSIZE;
	ret[0] = flags;
	ret[1] = (uint8_t)(len >> 24);
	ret[2] = (uint8_t)(len >> 16);
	ret[3] = (uint8_t)(len >> 8);
	ret[4] = (uint8_t)len;
	return 0;
}

uint8_t *connect_envelope_encode(uint8_t flags, const void *payload, size_t len, size_t *ret_len,
				 sbx_err **err)
{
	uint8_t prefix[CONNECT_ENVELOPE_PREFIX];
	if (connect_envelope_prefix(flags, len, prefix) < 0) {
		err_set(err, SBX_E_LIMIT_EXCEEDED, EMSGSIZE,
			"connect envelope: %zu bytes is over the %u-byte limit", len, CONNECT_MESSAGE_MAX);
		return NULL;
	}
	uint8_t *out = malloc(CONNECT_ENVELOPE_PREFIX + len);
	if (!out) {
		err_oom(err);
		return NULL;
	}
	memcpy(out, prefix, CONNECT_ENVELOPE_PREFIX);
	if (len)
		memcpy(out + CONNECT_ENVELOPE_PREFIX, payload, len);
	*ret_len = CONNECT_ENVELOPE_PREFIX + len;
	return out;
}

/* A JSON string of s, invalid UTF-8 and NUL as U+FFFD, cut to at most max
 * bytes on a character boundary. NULL on ENOMEM. */
static json_t *text_json(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max)
		n = utf8_complete_prefix(s, max);
	size_t clean_len;
	_cleanup_free_ char *clean = utf8_sanitize(s, n, &clean_len);
	if (!clean)
		return NULL;
	if (clean_len > max) /* replacements are longer than the bytes they replace */
		clean_len = utf8_complete_prefix(clean, max);
	return json_stringn(clean, clean_len);
}

static json_t *error_object(connect_code code, const char *message, sbx_err **err)
{
	const char *name = connect_code_name(code);
	if (!name) {
		err_set(err, SBX_E_INTERNAL, EINVAL, "connect error: %d is not a Connect code", (int)code);
		return NULL;
	}
	_cleanup_json_ json_t *o = json_object();
	if (!o || json_object_set_new(o, "code", json_string(name)) < 0 ||
	    (message &&
	     json_object_set_new(o, "message", text_json(message, CONNECT_MESSAGE_TEXT_MAX)) < 0)) {
		err_oom(err);
		return NULL;
	}
	return TAKE_PTR(o);
}

static char *dump(const json_t *o, sbx_err **err)
{
	char *s = json_dumps(o, JSON_COMPACT);
	if (!s)
		err_oom(err);
	return s;
}

char *connect_error_json(connect_code code, const char *message, sbx_err **err)
{
	_cleanup_json_ json_t *o = error_object(code, message, err);
	return o ? dump(o, err) : NULL;
}

static bool header_name_valid(const char *k)
{
	/* RFC 9110 token characters. */
	static const char extra[] = "!#$%&'*+-.^_`|~";
	if (!*k)
		return false;
	for (const char *p = k; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      (c && strchr(extra, c))))
			return false;
	}
	return strlen(k) <= CONNECT_NAME_MAX;
}

static json_t *metadata_object(const char *const *md, sbx_err **err)
{
	_cleanup_json_ json_t *o = json_object();
	if (!o) {
		err_oom(err);
		return NULL;
	}
	size_t pairs = 0;
	for (; md[0]; md += 2) {
		if (!md[1]) {
			err_set(err, SBX_E_INTERNAL, EINVAL, "connect metadata: key '%s' has no value",
				md[0]);
			return NULL;
		}
		if (++pairs > CONNECT_METADATA_MAX) {
			err_set(err, SBX_E_INTERNAL, E2BIG, "connect metadata: more than %d pairs",
				CONNECT_METADATA_MAX);
			return NULL;
		}
		if (!header_name_valid(md[0])) {
			err_set(err, SBX_E_INTERNAL, EINVAL, "connect metadata: '%s' is not a header name",
				md[0]);
			return NULL;
		}
		char key[CONNECT_NAME_MAX + 1];
		size_t i = 0;
		for (; md[0][i]; i++)
			key[i] = (char)((md[0][i] >= 'A' && md[0][i] <= 'Z') ? md[0][i] + 32 : md[0][i]);
		key[i] = 0;
		json_t *vals = json_object_get(o, key);
		if (!vals) {
			vals = json_array();
			if (!vals || json_object_set_new(o, key, vals) < 0) {
				err_oom(err);
				return NULL;
			}
		}
		if (json_array_append_new(vals, text_json(md[1], CONNECT_MESSAGE_TEXT_MAX)) < 0) {
			err_oom(err);
			return NULL;
		}
	}
	return TAKE_PTR(o);
}

char *connect_end_stream_json(connect_code code, const char *message, const char *const *metadata,
			      sbx_err **err)
{
	_cleanup_json_ json_t *o = json_object();
	if (!o) {
		err_oom(err);
		return NULL;
	}
	if (code != CONNECT_OK) {
		json_t *e = error_object(code, message, err);
		if (!e)
			return NULL;
		if (json_object_set_new(o, "error", e) < 0) {
			err_oom(err);
			return NULL;
		}
	}
	if (metadata && metadata[0]) {
		json_t *m = metadata_object(metadata, err);
		if (!m)
			return NULL;
		if (json_object_set_new(o, "metadata", m) < 0) {
			err_oom(err);
			return NULL;
		}
	}
	return dump(o, err);
}

uint8_t *connect_end_stream_encode(connect_code code, const char *message, const char *const *metadata,
				   size_t *ret_len, sbx_err **err)
{
	_cleanup_free_ char *json = connect_end_stream_json(code, message, metadata, err);
	if (!json)
		return NULL;
	return connect_envelope_encode(CONNECT_FLAG_END_STREAM, json, strlen(json), ret_len, err);
}

/* Checks a prefix: 0, or negative with err. */
static int prefix_check(const uint8_t p[CONNECT_ENVELOPE_PREFIX], uint8_t allow_flags, size_t max,
			size_t *ret_len, sbx_err **err)
{
	if (p[0] & CONNECT_FLAG_COMPRESSED)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO,
			       "connect envelope: compressed (flag 0x01), but no compression was negotiated");
	if (p[0] & ~allow_flags)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO,
			       "connect envelope: unexpected flags 0x%02x", p[0]);
	size_t len = (size_t)p[1] << 24 | (size_t)p[2] << 16 | (size_t)p[3] << 8 | p[4];
	if (max > CONNECT_MESSAGE_MAX)
		max = CONNECT_MESSAGE_MAX;
	if (len > max)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EMSGSIZE,
			       "connect envelope: a %zu-byte message is over the %zu-byte limit", len, max);
	*ret_len = len;
	return 0;
}

int connect_envelope_parse(const uint8_t *buf, size_t n, uint8_t allow_flags, size_t max,
			   connect_envelope *ret, sbx_err **err)
{
	if (n < CONNECT_ENVELOPE_PREFIX)
		return 0;
	size_t len;
	int r = prefix_check(buf, allow_flags, max, &len, err);
	if (r < 0)
		return r;
	if (n - CONNECT_ENVELOPE_PREFIX < len)
		return 0;
	*ret = (connect_envelope){
	    .flags = buf[0],
	    .payload = buf + CONNECT_ENVELOPE_PREFIX,
	    .len = len,
	    .size = CONNECT_ENVELOPE_PREFIX + len,
	};
	return 1;
}

void connect_decoder_init(connect_decoder *d, size_t max)
{
	*d = (connect_decoder){.max = max > CONNECT_MESSAGE_MAX ? CONNECT_MESSAGE_MAX : max};
}

void connect_decoder_clear(connect_decoder *d)
{
	free(d->payload);
	connect_decoder_init(d, d->max);
}

static int decoder_fail(connect_decoder *d, int r)
{
	d->failed = true;
	return r;
}

int connect_decoder_feed(connect_decoder *d, const void *data, size_t len, sbx_err **err)
{
	const uint8_t *p = data;
	if (d->failed)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO,
			       "connect request: the body was already refused");
	if (d->whole) {
		if (len == 0)
			return 1;
		return decoder_fail(d, err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO,
					       "connect request: more than one message for a server stream"));
	}
	while (len && d->prefix_len < CONNECT_ENVELOPE_PREFIX) {
		d->prefix[d->prefix_len++] = *p++;
		len--;
		if (d->prefix_len == CONNECT_ENVELOPE_PREFIX) {
			int r = prefix_check(d->prefix, 0, d->max, &d->want, err);
			if (r < 0)
				return decoder_fail(d, r);
		}
	}
	if (d->prefix_len < CONNECT_ENVELOPE_PREFIX)
		return 0;
	size_t take = len < d->want - d->have ? len : d->want - d->have;
	if (d->have + take + 1 > d->cap) {
		/* Grow toward the announced length as bytes arrive, never past it. */
		size_t cap = d->cap ? d->cap : 256;
		while (cap < d->have + take + 1)
			cap *= 2;
		if (cap > d->want + 1)
			cap = d->want + 1;
		uint8_t *np = realloc(d->payload, cap);
		if (!np)
			return decoder_fail(d, err_oom(err));
		d->payload = np;
		d->cap = cap;
	}
	if (take)
		memcpy(d->payload + d->have, p, take);
	d->have += take;
	d->payload[d->have] = 0;
	if (d->have < d->want)
		return 0;
	d->whole = true;
	if (len > take)
		return decoder_fail(d, err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO,
					       "connect request: more than one message for a server stream"));
	return 1;
}

int connect_decoder_finish(const connect_decoder *d, sbx_err **err)
{
	if (d->failed)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO, "connect request: the body was refused");
	if (d->whole)
		return 0;
	if (d->prefix_len == 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO,
			       "connect request: an empty body, no message");
	return err_set(
	    err, SBX_E_INVALID_ARGUMENT, EPROTO, "connect request: incomplete envelope (%zu of %zu bytes)",
	    d->prefix_len < CONNECT_ENVELOPE_PREFIX ? d->prefix_len : CONNECT_ENVELOPE_PREFIX + d->have,
	    d->prefix_len < CONNECT_ENVELOPE_PREFIX ? (size_t)CONNECT_ENVELOPE_PREFIX
						    : CONNECT_ENVELOPE_PREFIX + d->want);
}

/* ---- requests ------------------------------------------------------------- */

int connect_content_type_kind(const char *ct, connect_kind *ret)
{
	static const char app[] = "application/";
	if (!ct || strncasecmp(ct, app, sizeof(app) - 1) != 0)
		return -EPROTONOSUPPORT;
	const char *p = ct + sizeof(app) - 1;
	connect_kind k = CONNECT_UNARY;
	if (strncasecmp(p, "connect+", 8) == 0) {
		k = CONNECT_STREAM;
		p += 8;
	}
	if (strncasecmp(p, "json", 4) != 0)
		return -EPROTONOSUPPORT;
	p += 4;
	if (*p) {
		/* "; ?charset=utf-?8", as connect-es's contentTypeRegExp */
		if (*p++ != ';')
			return -EPROTONOSUPPORT;
		if (*p == ' ')
			p++;
		if (strncasecmp(p, "charset=utf", 11) != 0)
			return -EPROTONOSUPPORT;
		p += 11;
		if (*p == '-')
			p++;
		if (strcmp(p, "8") != 0)
			return -EPROTONOSUPPORT;
	}
	*ret = k;
	return 0;
}

static bool ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
	return ident_start(c) || (c >= '0' && c <= '9');
}

int connect_path_split(const char *path, char service[CONNECT_NAME_MAX + 1],
		       char method[CONNECT_NAME_MAX + 1])
{
	if (!path || path[0] != '/')
		return -ENOENT;
	const char *s = path + 1, *slash = strchr(s, '/');
	if (!slash)
		return -ENOENT;
	size_t sl = (size_t)(slash - s), labels = 0;
	if (sl == 0 || sl > CONNECT_NAME_MAX)
		return -ENOENT;
	/* service: identifiers joined by '.', at least two (package and service) */
	for (size_t i = 0; i < sl;) {
		if (!ident_start(s[i]))
			return -ENOENT;
		while (i < sl && ident_char(s[i]))
			i++;
		labels++;
		if (i < sl) {
			if (s[i] != '.' || i + 1 == sl)
				return -ENOENT;
			i++;
		}
	}
	if (labels < 2)
		return -ENOENT;
	const char *m = slash + 1;
	size_t ml = 0;
	if (!ident_start(m[0]))
		return -ENOENT;
	while (ident_char(m[ml]))
		ml++;
	if (m[ml] || ml > CONNECT_NAME_MAX)
		return -ENOENT;
	memcpy(service, s, sl);
	service[sl] = 0;
	memcpy(method, m, ml + 1);
	return 0;
}

int connect_timeout_parse(const char *s, int64_t *ret_ms)
{
	if (!s || !*s)
		return -EINVAL;
	int64_t v = 0;
	size_t i = 0;
	for (; s[i]; i++) {
		if (i >= CONNECT_TIMEOUT_DIGITS || s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	*ret_ms = v;
	return 0;
}

int connect_request_classify(const char *http_method, const char *path, const char *content_type,
			     const char *protocol_version, const char *timeout, connect_request *ret,
			     sbx_err **err)
{
	connect_request q = {.timeout_ms = -1};
	if (connect_path_split(path, q.service, q.method) < 0) {
		err_set(err, SBX_E_NOT_FOUND, ENOENT, "not a Connect method path");
		return -404;
	}
	if (!http_method || strcmp(http_method, "POST") != 0) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "/%s/%s: Connect calls here are POST only",
			q.service, q.method);
		return -405;
	}
	if (connect_content_type_kind(content_type, &q.kind) < 0) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EPROTONOSUPPORT,
			"/%s/%s: content type must be application/json or application/connect+json",
			q.service, q.method);
		return -415;
	}
	if (protocol_version && strcmp(protocol_version, "1") != 0) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "Connect-Protocol-Version must be \"1\"");
		return -400;
	}
	if (timeout && connect_timeout_parse(timeout, &q.timeout_ms) < 0) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			"protocol error: invalid Connect-Timeout-Ms (1 to %d digits)",
			CONNECT_TIMEOUT_DIGITS);
		return -400;
	}
	*ret = q;
	return 0;
}
