/* libFuzzer target: the Connect protocol's request side (pure,
 * src/server/connect_rpc.h): the envelope parser and the incremental
 * decoder (the input as a body, cut into pieces by its own bytes), request
 * classification (the input as method, path and header values, one per
 * line), the timeout and content-type parsers, and error bodies built from
 * the input as a message. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/connect_rpc.h"

static void body(const uint8_t *data, size_t size)
{
	size_t max = size ? (size_t)(data[0] & 0x3f) << 4 : 0; /* 0..1008 */
	connect_envelope env;
	int one = connect_envelope_parse(data, size, CONNECT_FLAG_END_STREAM, max, &env, NULL);
	if (one == 1 &&
	    (env.size != CONNECT_ENVELOPE_PREFIX + env.len || env.size > size || env.len > max ||
	     env.payload != data + CONNECT_ENVELOPE_PREFIX || (env.flags & ~CONNECT_FLAG_END_STREAM)))
		abort();
	/* malformed exactly when the prefix says so; too short is "need more" */
	if (size >= CONNECT_ENVELOPE_PREFIX) {
		size_t len = (size_t)data[1] << 24 | (size_t)data[2] << 16 | (size_t)data[3] << 8 | data[4];
		if ((one < 0) != ((data[0] & ~CONNECT_FLAG_END_STREAM) != 0 || len > max))
			abort();
	} else if (one != 0) {
		abort();
	}
	/* The decoder, fed in pieces whose sizes come from the input, agrees
	 * with the one-shot parse: whole exactly when the input is one
	 * envelope with flags 0 and nothing after it. */
	connect_decoder d;
	connect_decoder_init(&d, max);
	size_t off = 0, step = 1;
	int r = 0;
	while (off < size) {
		step = (size_t)data[off] % 7 + 1;
		if (step > size - off)
			step = size - off;
		sbx_err *e = NULL;
		r = connect_decoder_feed(&d, data + off, step, &e);
		if ((r < 0) != (e != NULL))
			abort();
		sbx_err_free(e);
		off += step;
		if (r < 0)
			break;
	}
	int fin = connect_decoder_finish(&d, NULL);
	connect_envelope strict;
	bool exact = connect_envelope_parse(data, size, 0, max, &strict, NULL) == 1 && strict.size == size;
	if ((fin == 0) != exact)
		abort();
	if (fin == 0 && (d.want != strict.len || memcmp(d.payload, strict.payload, strict.len) != 0 ||
			 d.payload[d.want] != 0))
		abort();
	if (d.cap > d.want + 1 && d.payload)
		abort(); /* never more than the announced length */
	connect_decoder_clear(&d);
}

static char *line(char **p)
{
	if (!*p)
		return NULL;
	char *s = *p, *nl = strchr(s, '\n');
	if (nl) {
		*nl = 0;
		*p = nl + 1;
	} else {
		*p = NULL;
	}
	return s;
}

static void request(char *s)
{
	char *p = s;
	char *method = line(&p), *path = line(&p), *ct = line(&p), *ver = line(&p), *to = line(&p);
	connect_request q;
	sbx_err *e = NULL;
	int r = connect_request_classify(method, path, ct, ver, to, &q, &e);
	if (r == 0) {
		if (e || !q.service[0] || !q.method[0] || strchr(q.service, '/') || strchr(q.method, '/') ||
		    q.timeout_ms < -1 || q.timeout_ms > 9999999999LL || (to && q.timeout_ms < 0) ||
		    (!to && q.timeout_ms != -1))
			abort();
		char want[2 * CONNECT_NAME_MAX + 4];
		snprintf(want, sizeof(want), "/%s/%s", q.service, q.method);
		if (strcmp(want, path) != 0)
			abort();
	} else if (!e || (r != -404 && r != -405 && r != -415 && r != -400)) {
		abort();
	}
	sbx_err_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	body(data, size);
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	/* the whole input as one header value */
	int64_t t;
	if (connect_timeout_parse(s, &t) == 0) {
		size_t n = strlen(s);
		if (n < 1 || n > CONNECT_TIMEOUT_DIGITS || strspn(s, "0123456789") != n || t < 0)
			abort();
	}
	connect_kind k;
	if (connect_content_type_kind(s, &k) == 0 && strncasecmp(s, "application/", 12) != 0)
		abort();
	char svc[CONNECT_NAME_MAX + 1], m[CONNECT_NAME_MAX + 1];
	if (connect_path_split(s, svc, m) == 0 && (!strchr(svc, '.') || strlen(svc) > CONNECT_NAME_MAX))
		abort();
	/* the input as a message and as metadata: always valid JSON */
	char *j = connect_error_json(CONNECT_INTERNAL, s, NULL);
	if (j) {
		json_t *o = json_loads(j, 0, NULL);
		if (!o)
			abort();
		const char *msg = json_string_value(json_object_get(o, "message"));
		if (!msg || strlen(msg) > CONNECT_MESSAGE_TEXT_MAX)
			abort();
		json_decref(o);
		free(j);
	}
	const char *md[] = {"x-input", s, NULL};
	j = connect_end_stream_json(CONNECT_UNAVAILABLE, s, md, NULL);
	if (j) {
		json_t *o = json_loads(j, 0, NULL);
		if (!o)
			abort();
		json_decref(o);
		free(j);
	}
	request(s);
	free(s);
	return 0;
}
