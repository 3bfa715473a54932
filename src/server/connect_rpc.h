/* The Connect protocol (connectrpc.com/docs/protocol), JSON codec only: the
 * pure parts of serving it, with no I/O (unit-tested in
 * tests/unit/test_connect_rpc.c, fuzzed by tests/fuzz/fuzz_connect.c). This
 * is what envd's data plane speaks to E2B's SDKs (docs/e2b.md); the facts
 * below were checked against @connectrpc/connect 2.3.0, the version the e2b
 * SDK pins (protocol-connect/{content-type,http-status,parse-timeout,
 * end-stream}.js, protocol/envelope.js).
 *
 * Requests. A call is `POST /<pkg>.<Service>/<Method>` with
 *   Content-Type: application/json             a unary call, the body one JSON message
 *   Content-Type: application/connect+json     a streaming call, the body envelopes
 * (either may carry "; charset=utf-8", any case). connect_request_classify
 * answers what a request is, or which HTTP status refuses it:
 *   404  the path is not /<pkg>.<Service>/<Method> (identifiers only, a
 *        service of at least two dot-separated labels, each name at most
 *        CONNECT_NAME_MAX characters; no query, no trailing slash)
 *   405  the method is not POST (GET is only for idempotent methods, which
 *        envd has none of; answer with `Allow: POST`)
 *   415  the content type is not one of the two above (the binary codec
 *        application/proto and application/connect+proto included)
 *   400  a Connect error invalid_argument: Connect-Protocol-Version present
 *        and not "1" (absent is accepted, as connect-es servers do by
 *        default), or a Connect-Timeout-Ms that is not 1 to 10 ASCII digits
 * in that order (connect-es's). The method table, not the content type,
 * says whether a method streams: a unary method asked with
 * application/connect+json, or a streaming one with application/json, is a
 * 415 too (the router checks, as connect-es does). A 400 on a streaming
 * call is better answered as 200 with an end-stream error
 * (connect_end_stream_encode): a client maps a non-200 status on a stream
 * through the status (400 would become "internal"), not through the code.
 *
 * Envelopes. A streaming body, in both directions, is a sequence of
 *   flags (1 byte) | length (4 bytes, big-endian) | length bytes of JSON
 * flags 0x01: compressed (never sent here; refused in requests: sbx
 * negotiates no compression); 0x02: end-stream, the last envelope of a
 * response, whose JSON is {} or {"error":{"code","message"},"metadata":
 * {"key":["value",...]}}. A response stream without it is an error to the
 * client ("missing EndStreamResponse"). A server-streaming request body is
 * exactly one envelope with flags 0.
 *
 * Errors. A unary error is a non-200 status with the JSON body
 * {"code":"not_found","message":"..."}; the status is the code's
 * (connect_code_http_status, connect-es's codeToHttpStatus). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define CONNECT_ENVELOPE_PREFIX 5
#define CONNECT_FLAG_COMPRESSED 0x01
#define CONNECT_FLAG_END_STREAM 0x02
/* The largest message any caller may configure (a decoder's max is clamped
 * to it; an encoder refuses more). */
#define CONNECT_MESSAGE_MAX (16u << 20)
#define CONNECT_NAME_MAX 128	      /* a service ("process.Process") or a method ("Start") */
#define CONNECT_TIMEOUT_DIGITS 10     /* the spec's limit on Connect-Timeout-Ms */
#define CONNECT_METADATA_MAX 64	      /* key/value pairs in an end-stream's metadata */
#define CONNECT_MESSAGE_TEXT_MAX 8192 /* an error message is cut to this many bytes */

/* Connect's codes; the values are gRPC's (and connect-es's Code enum). */
typedef enum connect_code {
	CONNECT_OK = 0, /* not a wire code: success */
	CONNECT_CANCELED = 1,
	CONNECT_UNKNOWN = 2,
	CONNECT_INVALID_ARGUMENT = 3,
	CONNECT_DEADLINE_EXCEEDED = 4,
	CONNECT_NOT_FOUND = 5,
	CONNECT_ALREADY_EXISTS = 6,
	CONNECT_PERMISSION_DENIED = 7,
	CONNECT_RESOURCE_EXHAUSTED = 8,
	CONNECT_FAILED_PRECONDITION = 9,
	CONNECT_ABORTED = 10,
	CONNECT_OUT_OF_RANGE = 11,
	CONNECT_UNIMPLEMENTED = 12,
	CONNECT_INTERNAL = 13,
	CONNECT_UNAVAILABLE = 14,
	CONNECT_DATA_LOSS = 15,
	CONNECT_UNAUTHENTICATED = 16,
} connect_code;

/* "not_found", ...: the snake_case wire name; NULL for CONNECT_OK and for
 * values outside the enum. */
const char *connect_code_name(connect_code c);
/* The code a wire name names (exact, lowercase); -EINVAL if none. */
int connect_code_from_name(const char *name, connect_code *ret);
/* The HTTP status of a unary error with code c (connect-es's
 * codeToHttpStatus: canceled 499, invalid_argument, failed_precondition and
 * out_of_range 400, deadline_exceeded 504, not_found 404, already_exists
 * and aborted 409, permission_denied 403, resource_exhausted 429,
 * unimplemented 501, unavailable 503, unauthenticated 401, the rest 500);
 * 200 for CONNECT_OK. */
int connect_code_http_status(connect_code c);
/* sbx's error codes (docs/conventions.md) as Connect codes:
 *   not_found -> not_found, invalid_argument -> invalid_argument,
 *   limit_exceeded -> resource_exhausted, unavailable -> unavailable,
 *   internal -> internal,
 *   conflict -> already_exists with EEXIST (a name taken, a directory
 *     there: E2B's MakeDir answers already_exists and its SDK then returns
 *     false), aborted with EBUSY or EAGAIN (busy with a restore or a
 *     snapshot: retry), failed_precondition otherwise (a state the caller
 *     must change first, such as a paused environment).
 * errnum is the error's errno (sbx_err_errno); anything unknown is internal. */
connect_code connect_code_from_sbx(sbx_code code, int errnum);

/* ---- envelopes ---------------------------------------------------------- */

/* The 5-byte prefix of an envelope of len payload bytes. -EMSGSIZE when len
 * exceeds CONNECT_MESSAGE_MAX. */
int connect_envelope_prefix(uint8_t flags, size_t len, uint8_t ret[CONNECT_ENVELOPE_PREFIX]);
/* One whole envelope (prefix and payload), malloc'd, its size in *ret_len.
 * NULL with err on ENOMEM or a payload over CONNECT_MESSAGE_MAX. */
uint8_t *connect_envelope_encode(uint8_t flags, const void *payload, size_t len, size_t *ret_len,
				 sbx_err **err);

/* The JSON of a unary error: {"code":"...","message":"..."} ("message"
 * left out when message is NULL). Invalid UTF-8 in message becomes U+FFFD;
 * it is cut at CONNECT_MESSAGE_TEXT_MAX bytes. code must be a wire code
 * (not CONNECT_OK). Caller frees; NULL with err. */
char *connect_error_json(connect_code code, const char *message, sbx_err **err);
/* The JSON of an end-stream: {} for CONNECT_OK (message ignored), else
 * {"error":{"code","message"}}; with "metadata":{"key":["v",...]} when
 * metadata (NULL-terminated key, value, key, value, ...; at most
 * CONNECT_METADATA_MAX pairs) has pairs. Keys are HTTP header names
 * (token characters), lowercased; values are sanitized as messages are; a
 * key given twice collects its values in order. */
char *connect_end_stream_json(connect_code code, const char *message, const char *const *metadata,
			      sbx_err **err);
/* The end-stream envelope (flag 0x02) holding connect_end_stream_json. */
uint8_t *connect_end_stream_encode(connect_code code, const char *message, const char *const *metadata,
				   size_t *ret_len, sbx_err **err);

typedef struct connect_envelope {
	uint8_t flags;
	const uint8_t *payload; /* points into the parsed buffer */
	size_t len;
	size_t size; /* CONNECT_ENVELOPE_PREFIX + len: what the envelope took */
} connect_envelope;

/* Parses the envelope at the start of buf[0..n): 1 when it is whole (*ret
 * filled; bytes after it are the caller's), 0 when more bytes are needed,
 * negative with err when malformed: a flag outside allow_flags (the
 * compressed flag is refused whatever allow_flags says) or a length over
 * max (limit_exceeded), both decided from the prefix alone, before the
 * payload arrives. */
int connect_envelope_parse(const uint8_t *buf, size_t n, uint8_t allow_flags, size_t max,
			   connect_envelope *ret, sbx_err **err);

/* An incremental decoder for a server-streaming request body: exactly one
 * envelope with flags 0, fed in whatever pieces the HTTP server hands over.
 * It buffers only what arrived (growing toward the announced length), so a
 * prefix announcing a large message costs nothing until its bytes come. */
typedef struct connect_decoder {
	size_t max; /* largest payload accepted (at most CONNECT_MESSAGE_MAX) */
	uint8_t prefix[CONNECT_ENVELOPE_PREFIX];
	size_t prefix_len;
	uint8_t *payload; /* NUL-terminated once whole */
	size_t want, have, cap;
	bool whole;
	bool failed; /* a malformed input was seen: every later feed fails */
} connect_decoder;

void connect_decoder_init(connect_decoder *d, size_t max);
/* Feeds data[0..len): 0 while the envelope is incomplete, 1 once it is
 * whole (its payload in d->payload[0..d->want)); negative with err on a
 * malformed body (a flag set, a length over max, any byte after the
 * envelope) or ENOMEM. After a failure every feed fails. */
int connect_decoder_feed(connect_decoder *d, const void *data, size_t len, sbx_err **err);
/* At the end of the body: 0 when one whole envelope came, negative with
 * err (invalid_argument) when the body was empty or stopped inside it. */
int connect_decoder_finish(const connect_decoder *d, sbx_err **err);
/* Frees the buffer; d is back to its initial state (same max). */
void connect_decoder_clear(connect_decoder *d);

/* ---- requests ----------------------------------------------------------- */

typedef enum connect_kind {
	CONNECT_UNARY,	/* application/json */
	CONNECT_STREAM, /* application/connect+json: a server-streaming call here */
} connect_kind;

typedef struct connect_request {
	connect_kind kind;
	char service[CONNECT_NAME_MAX + 1]; /* "process.Process" */
	char method[CONNECT_NAME_MAX + 1];  /* "Start" */
	int64_t timeout_ms;		    /* -1: no Connect-Timeout-Ms; 0 is a deadline already due */
} connect_request;

/* The kind a Content-Type names; -EPROTONOSUPPORT for anything else. */
int connect_content_type_kind(const char *content_type, connect_kind *ret);
/* Splits "/<pkg>.<Service>/<Method>" (see the top); -ENOENT if it is not one. */
int connect_path_split(const char *path, char service[CONNECT_NAME_MAX + 1],
		       char method[CONNECT_NAME_MAX + 1]);
/* Connect-Timeout-Ms: 1 to 10 ASCII digits, nothing else (no sign, no
 * space); -EINVAL otherwise. */
int connect_timeout_parse(const char *s, int64_t *ret_ms);
/* Classifies a request from its method, path (without the query and any
 * mount prefix) and the values of Content-Type, Connect-Protocol-Version
 * and Connect-Timeout-Ms (NULL when absent). 0 with *ret filled, or minus
 * the HTTP status that refuses it (-404, -405, -415, -400: see the top)
 * with err set to why. */
int connect_request_classify(const char *http_method, const char *path, const char *content_type,
			     const char *protocol_version, const char *timeout, connect_request *ret,
			     sbx_err **err);
