/* The Connect protocol's pure parts (src/server/connect_rpc.h): codes and
 * their HTTP statuses, envelopes, the request decoder, request
 * classification. Expected values are connect-es 2.3.0's (the version e2b
 * 2.51.0 pins; tests/e2b/node_modules/@connectrpc/connect/dist/esm/
 * protocol-connect/http-status.js, content-type.js, parse-timeout.js). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>

#include "server/connect_rpc.h"
#include "unit.h"

TEST(code_names_round_trip)
{
	static const char *const names[] = {
	    "canceled",	       "unknown",	    "invalid_argument",	  "deadline_exceeded",	 "not_found",
	    "already_exists",  "permission_denied", "resource_exhausted", "failed_precondition", "aborted",
	    "out_of_range",    "unimplemented",	    "internal",		  "unavailable",	 "data_loss",
	    "unauthenticated",
	};
	for (int c = 1; c <= 16; c++) {
		CHECK_STREQ(connect_code_name((connect_code)c), names[c - 1]);
		connect_code back = CONNECT_OK;
		CHECK(connect_code_from_name(names[c - 1], &back) == 0);
		CHECK((int)back == c);
	}
	CHECK(connect_code_name(CONNECT_OK) == NULL);
	CHECK(connect_code_name((connect_code)17) == NULL);
	CHECK(connect_code_name((connect_code)-1) == NULL);
	connect_code c = CONNECT_UNKNOWN;
	CHECK(connect_code_from_name("NotFound", &c) == -EINVAL);
	CHECK(connect_code_from_name("not_found ", &c) == -EINVAL);
	CHECK(connect_code_from_name("", &c) == -EINVAL);
	CHECK(connect_code_from_name(NULL, &c) == -EINVAL);
	CHECK(c == CONNECT_UNKNOWN); /* untouched on failure */
}

TEST(code_http_status_is_connect_es)
{
	/* codeToHttpStatus, case by case */
	static const int want[17] = {200, 499, 500, 400, 504, 404, 409, 403, 429,
				     400, 409, 400, 501, 500, 503, 500, 401};
	for (int c = 0; c <= 16; c++)
		CHECK(connect_code_http_status((connect_code)c) == want[c]);
	CHECK(connect_code_http_status((connect_code)99) == 500); /* "same as CodeUnknown" */
}

TEST(sbx_codes_map)
{
	CHECK(connect_code_from_sbx(SBX_E_NOT_FOUND, ENOENT) == CONNECT_NOT_FOUND);
	CHECK(connect_code_from_sbx(SBX_E_INVALID_ARGUMENT, EINVAL) == CONNECT_INVALID_ARGUMENT);
	CHECK(connect_code_from_sbx(SBX_E_LIMIT_EXCEEDED, 0) == CONNECT_RESOURCE_EXHAUSTED);
	CHECK(connect_code_from_sbx(SBX_E_UNAVAILABLE, 0) == CONNECT_UNAVAILABLE);
	CHECK(connect_code_from_sbx(SBX_E_INTERNAL, EIO) == CONNECT_INTERNAL);
	CHECK(connect_code_from_sbx(SBX_E_CONFLICT, EEXIST) == CONNECT_ALREADY_EXISTS);
	CHECK(connect_code_from_sbx(SBX_E_CONFLICT, -EEXIST) == CONNECT_ALREADY_EXISTS);
	CHECK(connect_code_from_sbx(SBX_E_CONFLICT, EBUSY) == CONNECT_ABORTED);
	CHECK(connect_code_from_sbx(SBX_E_CONFLICT, EAGAIN) == CONNECT_ABORTED);
	CHECK(connect_code_from_sbx(SBX_E_CONFLICT, EALREADY) == CONNECT_FAILED_PRECONDITION);
	CHECK(connect_code_from_sbx(SBX_E_CONFLICT, 0) == CONNECT_FAILED_PRECONDITION);
	CHECK(connect_code_from_sbx((sbx_code)42, 0) == CONNECT_INTERNAL);
}

TEST(envelope_encode_known_bytes)
{
	size_t n = 0;
	uint8_t *e = connect_envelope_encode(0, "{\"a\":1}", 7, &n, NULL);
	CHECK(e && n == 12);
	static const uint8_t want[] = {0, 0, 0, 0, 7, '{', '"', 'a', '"', ':', '1', '}'};
	CHECK(memcmp(e, want, n) == 0);
	free(e);
	/* a length that needs every prefix byte */
	uint8_t p[5];
	CHECK(connect_envelope_prefix(0x02, 0x010203, p) == 0);
	CHECK(p[0] == 2 && p[1] == 0 && p[2] == 1 && p[3] == 2 && p[4] == 3);
	CHECK(connect_envelope_prefix(0, CONNECT_MESSAGE_MAX + 1, p) == -EMSGSIZE);
	_cleanup_err_ sbx_err *err = NULL;
	CHECK(connect_envelope_encode(0, "", CONNECT_MESSAGE_MAX + (size_t)1, &n, &err) == NULL);
	CHECK(sbx_err_code(err) == SBX_E_LIMIT_EXCEEDED);
	/* empty payload */
	e = connect_envelope_encode(0, NULL, 0, &n, NULL);
	CHECK(e && n == 5 && memcmp(e, "\0\0\0\0\0", 5) == 0);
	free(e);
}

TEST(end_stream_ok_is_empty_object)
{
	size_t n;
	uint8_t *e = connect_end_stream_encode(CONNECT_OK, "ignored", NULL, &n, NULL);
	CHECK(e && n == 7);
	CHECK(memcmp(e, "\x02\0\0\0\x02{}", 7) == 0);
	free(e);
}

TEST(end_stream_error_and_metadata)
{
	const char *md[] = {"X-Trace", "a", "x-trace", "b", "retry-after", "3", NULL};
	_cleanup_free_ char *j =
	    connect_end_stream_json(CONNECT_DEADLINE_EXCEEDED, "took too long", md, NULL);
	CHECK(j);
	json_error_t je;
	json_t *o = json_loads(j, 0, &je);
	CHECK(o);
	json_t *err = json_object_get(o, "error");
	CHECK_STREQ(json_string_value(json_object_get(err, "code")), "deadline_exceeded");
	CHECK_STREQ(json_string_value(json_object_get(err, "message")), "took too long");
	json_t *m = json_object_get(o, "metadata");
	CHECK(json_object_size(m) == 2);
	json_t *tr = json_object_get(m, "x-trace"); /* lowercased, values collected in order */
	CHECK(json_array_size(tr) == 2);
	CHECK_STREQ(json_string_value(json_array_get(tr, 0)), "a");
	CHECK_STREQ(json_string_value(json_array_get(tr, 1)), "b");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(m, "retry-after"), 0)), "3");
	json_decref(o);
	/* the envelope: flag 0x02 and the JSON's length */
	size_t n;
	uint8_t *e = connect_end_stream_encode(CONNECT_DEADLINE_EXCEEDED, "took too long", md, &n, NULL);
	CHECK(e && n == 5 + strlen(j) && e[0] == 2);
	CHECK(((size_t)e[3] << 8 | e[4]) == strlen(j) && memcmp(e + 5, j, strlen(j)) == 0);
	free(e);
}

TEST(end_stream_refuses_bad_metadata)
{
	_cleanup_err_ sbx_err *e1 = NULL, *e2 = NULL, *e3 = NULL;
	const char *odd[] = {"k", NULL};
	CHECK(connect_end_stream_json(CONNECT_INTERNAL, "m", odd, &e1) == NULL && e1);
	const char *bad[] = {"bad key", "v", NULL};
	CHECK(connect_end_stream_json(CONNECT_INTERNAL, "m", bad, &e2) == NULL && e2);
	const char *empty[] = {"", "v", NULL};
	CHECK(connect_end_stream_json(CONNECT_INTERNAL, "m", empty, &e3) == NULL && e3);
	/* too many pairs */
	const char *many[2 * CONNECT_METADATA_MAX + 3];
	for (int i = 0; i < 2 * CONNECT_METADATA_MAX + 2; i++)
		many[i] = "k";
	many[2 * CONNECT_METADATA_MAX + 2] = NULL;
	CHECK(connect_end_stream_json(CONNECT_INTERNAL, "m", many, NULL) == NULL);
	many[2 * CONNECT_METADATA_MAX] = NULL; /* exactly the limit */
	char *ok = connect_end_stream_json(CONNECT_INTERNAL, "m", many, NULL);
	CHECK(ok);
	free(ok);
}

TEST(error_json_sanitizes_and_cuts)
{
	_cleanup_free_ char *j = connect_error_json(CONNECT_NOT_FOUND, "no \xff file", NULL);
	CHECK_STREQ(j, "{\"code\":\"not_found\",\"message\":\"no \xef\xbf\xbd file\"}");
	_cleanup_free_ char *nomsg = connect_error_json(CONNECT_UNAVAILABLE, NULL, NULL);
	CHECK_STREQ(nomsg, "{\"code\":\"unavailable\"}");
	_cleanup_err_ sbx_err *err = NULL;
	CHECK(connect_error_json(CONNECT_OK, "x", &err) == NULL && err);
	/* a long message is cut, on a character boundary (é is 2 bytes) */
	size_t big = CONNECT_MESSAGE_TEXT_MAX + 100;
	_cleanup_free_ char *m = malloc(big + 1);
	CHECK(m);
	for (size_t i = 0; i < big; i += 2)
		memcpy(m + i, "\xc3\xa9", 2);
	m[big] = 0;
	m[CONNECT_MESSAGE_TEXT_MAX - 1] = '\xc3'; /* a lead byte right at the cut */
	_cleanup_free_ char *cut = connect_error_json(CONNECT_INTERNAL, m, NULL);
	CHECK(cut);
	json_t *o = json_loads(cut, 0, NULL);
	CHECK(o);
	size_t ml = strlen(json_string_value(json_object_get(o, "message")));
	json_decref(o);
	CHECK(ml <= CONNECT_MESSAGE_TEXT_MAX && ml >= CONNECT_MESSAGE_TEXT_MAX - 4);
}

TEST(envelope_parse_need_more_vs_malformed)
{
	static const uint8_t env[] = {0, 0, 0, 0, 3, 'a', 'b', 'c', 'X'};
	connect_envelope e;
	for (size_t n = 0; n < 8; n++)
		CHECK(connect_envelope_parse(env, n, 0, 1024, &e, NULL) == 0); /* need more */
	CHECK(connect_envelope_parse(env, 8, 0, 1024, &e, NULL) == 1);
	CHECK(e.flags == 0 && e.len == 3 && e.size == 8 && memcmp(e.payload, "abc", 3) == 0);
	CHECK(connect_envelope_parse(env, 9, 0, 1024, &e, NULL) == 1 &&
	      e.size == 8); /* the rest is the caller's */
	/* malformed from the prefix alone */
	_cleanup_err_ sbx_err *e1 = NULL, *e2 = NULL, *e3 = NULL, *e4 = NULL;
	static const uint8_t compressed[] = {1, 0, 0, 0, 3};
	CHECK(connect_envelope_parse(compressed, 5, 0xff, 1024, &e, &e1) < 0);
	CHECK(sbx_err_code(e1) == SBX_E_INVALID_ARGUMENT);
	static const uint8_t end[] = {2, 0, 0, 0, 2, '{', '}'};
	CHECK(connect_envelope_parse(end, 7, 0, 1024, &e, &e2) < 0);
	CHECK(connect_envelope_parse(end, 7, CONNECT_FLAG_END_STREAM, 1024, &e, NULL) == 1);
	CHECK(e.flags == CONNECT_FLAG_END_STREAM && e.len == 2);
	static const uint8_t huge[] = {0, 0xff, 0xff, 0xff, 0xff};
	CHECK(connect_envelope_parse(huge, 5, 0, 1024, &e, &e3) < 0);
	CHECK(sbx_err_code(e3) == SBX_E_LIMIT_EXCEEDED);
	static const uint8_t just_over[] = {0, 0, 0, 4, 1};
	CHECK(connect_envelope_parse(just_over, 5, 0, 1024, &e, &e4) < 0);
	static const uint8_t at_max[] = {0, 0, 0, 4, 0};
	CHECK(connect_envelope_parse(at_max, 5, 0, 1024, &e, NULL) == 0); /* at the limit: wait for it */
	/* a max over CONNECT_MESSAGE_MAX is clamped */
	static const uint8_t over_cap[] = {0, 0x01, 0, 0, 1};
	CHECK(connect_envelope_parse(over_cap, 5, 0, SIZE_MAX, &e, NULL) < 0);
}

TEST(encode_then_parse_round_trip)
{
	size_t n;
	_cleanup_free_ uint8_t *enc = connect_end_stream_encode(CONNECT_NOT_FOUND, "gone", NULL, &n, NULL);
	CHECK(enc);
	connect_envelope e;
	CHECK(connect_envelope_parse(enc, n, CONNECT_FLAG_END_STREAM, CONNECT_MESSAGE_MAX, &e, NULL) == 1);
	CHECK(e.size == n && e.flags == CONNECT_FLAG_END_STREAM);
	CHECK(e.len == strlen("{\"error\":{\"code\":\"not_found\",\"message\":\"gone\"}}"));
	CHECK(memcmp(e.payload, "{\"error\":{\"code\":\"not_found\",\"message\":\"gone\"}}", e.len) == 0);
}

static const char start_req[] = "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"]}}";

static uint8_t *start_envelope(size_t *n)
{
	return connect_envelope_encode(0, start_req, strlen(start_req), n, NULL);
}

TEST(decoder_byte_by_byte)
{
	size_t n;
	_cleanup_free_ uint8_t *enc = start_envelope(&n);
	CHECK(enc);
	connect_decoder d;
	connect_decoder_init(&d, 4096);
	for (size_t i = 0; i + 1 < n; i++) {
		CHECK(connect_decoder_feed(&d, enc + i, 1, NULL) == 0);
		CHECK(connect_decoder_finish(&d, NULL) < 0); /* truncated so far */
	}
	CHECK(connect_decoder_feed(&d, enc + n - 1, 1, NULL) == 1);
	CHECK(d.want == strlen(start_req) && strcmp((char *)d.payload, start_req) == 0);
	CHECK(connect_decoder_finish(&d, NULL) == 0);
	CHECK(connect_decoder_feed(&d, NULL, 0, NULL) == 1); /* an empty read changes nothing */
	connect_decoder_clear(&d);
	CHECK(d.payload == NULL && d.max == 4096 && !d.whole);
}

TEST(decoder_whole_at_once_and_empty_message)
{
	size_t n;
	_cleanup_free_ uint8_t *enc = start_envelope(&n);
	connect_decoder d;
	connect_decoder_init(&d, 4096);
	CHECK(connect_decoder_feed(&d, enc, n, NULL) == 1);
	CHECK(connect_decoder_finish(&d, NULL) == 0);
	connect_decoder_clear(&d);
	/* a zero-length message is one whole envelope */
	CHECK(connect_decoder_feed(&d, "\0\0\0\0\0", 5, NULL) == 1);
	CHECK(d.want == 0 && d.payload && d.payload[0] == 0);
	connect_decoder_clear(&d);
}

TEST(decoder_refusals)
{
	size_t n;
	_cleanup_free_ uint8_t *enc = start_envelope(&n);
	connect_decoder d;
	/* trailing bytes after the one envelope, in the same piece or later */
	connect_decoder_init(&d, 4096);
	_cleanup_free_ uint8_t *two = malloc(n + 1);
	memcpy(two, enc, n);
	two[n] = 0;
	_cleanup_err_ sbx_err *e1 = NULL;
	CHECK(connect_decoder_feed(&d, two, n + 1, &e1) < 0 && e1);
	CHECK(connect_decoder_feed(&d, NULL, 0, NULL) < 0); /* stays refused */
	CHECK(connect_decoder_finish(&d, NULL) < 0);
	connect_decoder_clear(&d);
	CHECK(connect_decoder_feed(&d, enc, n, NULL) == 1);
	CHECK(connect_decoder_feed(&d, "x", 1, NULL) < 0);
	connect_decoder_clear(&d);
	/* compressed and end-stream flags */
	CHECK(connect_decoder_feed(&d, "\x01\0\0\0\x01x", 6, NULL) < 0);
	connect_decoder_clear(&d);
	CHECK(connect_decoder_feed(&d, "\x02\0\0\0\x02{}", 7, NULL) < 0);
	connect_decoder_clear(&d);
	/* over max: refused at the prefix, before any payload byte */
	connect_decoder_init(&d, 16);
	_cleanup_err_ sbx_err *e2 = NULL;
	CHECK(connect_decoder_feed(&d, "\0\0\0\0\x11", 5, &e2) < 0);
	CHECK(sbx_err_code(e2) == SBX_E_LIMIT_EXCEEDED && d.payload == NULL);
	connect_decoder_clear(&d);
	CHECK(connect_decoder_feed(&d, "\0\0\0\0\x10", 5, NULL) == 0); /* exactly max: fine */
	connect_decoder_clear(&d);
	/* an empty body, a prefix cut short, a payload cut short */
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(connect_decoder_finish(&d, &e3) < 0 && strstr(sbx_err_message(e3), "empty"));
	CHECK(connect_decoder_feed(&d, "\0\0", 2, NULL) == 0);
	CHECK(connect_decoder_finish(&d, NULL) < 0);
	connect_decoder_clear(&d);
	CHECK(connect_decoder_feed(&d,
				   "\0\0\0\0\x04"
				   "ab",
				   7, NULL) == 0);
	_cleanup_err_ sbx_err *e4 = NULL;
	CHECK(connect_decoder_finish(&d, &e4) < 0 && strstr(sbx_err_message(e4), "7 of 9"));
	connect_decoder_clear(&d);
}

TEST(decoder_grows_only_with_data)
{
	/* a prefix announcing 1 MiB allocates nothing like that until bytes come */
	connect_decoder d;
	connect_decoder_init(&d, 1 << 20);
	CHECK(connect_decoder_feed(&d, "\0\0\x10\0\0", 5, NULL) == 0);
	CHECK(d.cap <= 256);
	char chunk[1000] = {0};
	CHECK(connect_decoder_feed(&d, chunk, sizeof(chunk), NULL) == 0);
	CHECK(d.cap <= 2048 && d.have == 1000);
	connect_decoder_clear(&d);
}

TEST(content_types)
{
	connect_kind k;
	CHECK(connect_content_type_kind("application/json", &k) == 0 && k == CONNECT_UNARY);
	CHECK(connect_content_type_kind("application/connect+json", &k) == 0 && k == CONNECT_STREAM);
	CHECK(connect_content_type_kind("Application/JSON; charset=UTF-8", &k) == 0 && k == CONNECT_UNARY);
	CHECK(connect_content_type_kind("application/connect+json;charset=utf8", &k) == 0 &&
	      k == CONNECT_STREAM);
	static const char *const refused[] = {
	    "application/proto",
	    "application/connect+proto",
	    "application/grpc",
	    "application/grpc+json",
	    "text/json",
	    "application/json; charset=latin1",
	    "application/json;  charset=utf-8",
	    "application/json; charset=utf-8; x=y",
	    "application/jsonx",
	    "application/connect+",
	    "application/connect json",
	    "",
	    NULL,
	};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
		CHECK(connect_content_type_kind(refused[i], &k) == -EPROTONOSUPPORT);
}

TEST(paths)
{
	char s[CONNECT_NAME_MAX + 1], m[CONNECT_NAME_MAX + 1];
	CHECK(connect_path_split("/process.Process/Start", s, m) == 0);
	CHECK_STREQ(s, "process.Process");
	CHECK_STREQ(m, "Start");
	CHECK(connect_path_split("/filesystem.Filesystem/ListDir", s, m) == 0);
	CHECK(connect_path_split("/a.b.c_1.Svc/M_2", s, m) == 0 && strcmp(s, "a.b.c_1.Svc") == 0);
	static const char *const bad[] = {
	    "",
	    "/",
	    "process.Process/Start",
	    "/Process/Start",	       /* no package */
	    "/process.Process/",       /* no method */
	    "/process.Process/Start/", /* trailing slash */
	    "/process.Process/Start?x=1",
	    "//Start",
	    "/.Process/Start",
	    "/process./Start",
	    "/process..Process/Start",
	    "/1process.Process/Start",
	    "/process.Process/1Start",
	    "/process.Pro-cess/Start",
	    "/process.Process/St%61rt",
	    "/process.Process/../Start",
	    NULL,
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(connect_path_split(bad[i], s, m) == -ENOENT);
	/* name lengths: exactly CONNECT_NAME_MAX passes, one more does not */
	char p[2 * CONNECT_NAME_MAX + 8];
	memset(p, 'a', sizeof(p));
	p[0] = '/';
	p[2] = '.';
	p[1 + CONNECT_NAME_MAX] = '/';
	p[2 + 2 * CONNECT_NAME_MAX] = 0;
	CHECK(connect_path_split(p, s, m) == 0 && strlen(s) == CONNECT_NAME_MAX &&
	      strlen(m) == CONNECT_NAME_MAX);
	p[2 + 2 * CONNECT_NAME_MAX] = 'a';
	p[3 + 2 * CONNECT_NAME_MAX] = 0;
	CHECK(connect_path_split(p, s, m) == -ENOENT);
}

TEST(timeouts_are_strict)
{
	int64_t t = -5;
	CHECK(connect_timeout_parse("0", &t) == 0 && t == 0);
	CHECK(connect_timeout_parse("60000", &t) == 0 && t == 60000);
	CHECK(connect_timeout_parse("9999999999", &t) == 0 && t == 9999999999LL);
	CHECK(connect_timeout_parse("0000000001", &t) == 0 && t == 1);
	static const char *const bad[] = {"",	 "10000000000", "-1",	"+1", " 1", "1 ",
					  "1.5", "1e3",		"0x10", "１", NULL};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		t = 7;
		CHECK(connect_timeout_parse(bad[i], &t) == -EINVAL && t == 7);
	}
}

TEST(classify)
{
	connect_request q;
	CHECK(connect_request_classify("POST", "/process.Process/Start", "application/connect+json", "1",
				       "60000", &q, NULL) == 0);
	CHECK(q.kind == CONNECT_STREAM && q.timeout_ms == 60000);
	CHECK_STREQ(q.service, "process.Process");
	CHECK_STREQ(q.method, "Start");
	CHECK(connect_request_classify("POST", "/filesystem.Filesystem/Stat", "application/json", NULL, NULL,
				       &q, NULL) == 0);
	CHECK(q.kind == CONNECT_UNARY && q.timeout_ms == -1);
	/* refusals in connect-es's order: path, method, media type, headers */
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(connect_request_classify("GET", "/health", "text/plain", "2", "x", &q, &e) == -404);
	CHECK(sbx_err_code(e) == SBX_E_NOT_FOUND);
	CHECK(connect_request_classify("GET", "/process.Process/List", "text/plain", "2", "x", &q, NULL) ==
	      -405);
	CHECK(connect_request_classify(NULL, "/process.Process/List", "application/json", NULL, NULL, &q,
				       NULL) == -405);
	CHECK(connect_request_classify("POST", "/process.Process/List", "application/proto", "2", "x", &q,
				       NULL) == -415);
	CHECK(connect_request_classify("POST", "/process.Process/List", NULL, NULL, NULL, &q, NULL) == -415);
	CHECK(connect_request_classify("POST", "/process.Process/List", "application/json", "2", NULL, &q,
				       NULL) == -400);
	CHECK(connect_request_classify("POST", "/process.Process/List", "application/json", "", NULL, &q,
				       NULL) == -400);
	_cleanup_err_ sbx_err *e2 = NULL;
	CHECK(connect_request_classify("POST", "/process.Process/List", "application/json", "1", "-1", &q,
				       &e2) == -400);
	CHECK(strstr(sbx_err_message(e2), "Connect-Timeout-Ms"));
	CHECK(connect_request_classify("POST", "/process.Process/List", "application/json", "1", "", &q,
				       NULL) == -400);
}
