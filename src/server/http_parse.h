/* Pure checks of an HTTP request's headers for every route family of
 * http_server.h: no I/O, no state. libmicrohttpd parses the request line
 * and the headers; these read the values it hands over. Unit-tested in
 * tests/unit/test_http_parse.c and fuzzed with the whole server
 * (tests/fuzz/fuzz_http.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

/* Origin is http(s)://localhost, 127.0.0.1 or [::1], with any port or none:
 * a browser page from anywhere else must not reach a local server (DNS
 * rebinding). */
bool http_origin_local(const char *origin);

/* Content-Type ct is the media type `type` (e.g. "application/json"),
 * parameters (charset) allowed. */
bool http_content_type_is(const char *ct, const char *type);

/* An Accept header that names media type `type` ("text/event-stream");
 * accept may be NULL. */
bool http_accepts(const char *accept, const char *type);

/* Compares in time that depends only on the expected token's length (want):
 * every route family's token check goes through it. */
bool http_token_equal(const char *given, size_t given_len, const char *want, size_t want_len);

/* The token of an "Authorization: Bearer <token>" header (the scheme's case
 * ignored, spaces around the token dropped): *ret points into header.
 * False if header is NULL or of another scheme. */
bool http_bearer_token(const char *header, const char **ret, size_t *ret_len);

/* A request's framing headers as received: how many Content-Length and
 * Transfer-Encoding headers it has, and the first value of each. */
typedef struct http_framing {
	unsigned n_content_length, n_transfer_encoding;
	const char *content_length, *transfer_encoding;
} http_framing;

/* RFC 9112 section 6: a request two parsers could frame apart, which a proxy
 * in front of the server would read as one request and the server as two
 * (request smuggling). 0 when the framing is sound; else the status to
 * refuse it with, and *ret_why: 400 for Content-Length twice, Content-Length
 * with Transfer-Encoding, or a Content-Length that is not a plain number;
 * 501 for a Transfer-Encoding other than one "chunked". The refusal closes
 * the connection: where its body ends is unknown. */
unsigned http_framing_check(const http_framing *f, const char **ret_why);
