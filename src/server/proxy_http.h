/* The pure HTTP/1.1 head handling of the E2B port proxy (e2b_proxy.c):
 * which headers pass each way, the request head sent into the sandbox, and
 * the response head read back from it. No I/O. The sandbox's server is
 * hostile (the sandbox's code): its head is bounded (PROXY_HEAD_MAX),
 * parsed strictly, and only headers of valid names and values come back.
 *
 * The request towards the sandbox is rebuilt, never copied: its method and
 * path as libmicrohttpd parsed them, the query re-encoded, the end-to-end
 * headers, and a framing of our own (Content-Length of the body read whole,
 * "Connection: close", or "Connection: Upgrade" with the Upgrade header of
 * the client), so a client cannot smuggle a second request through it
 * (two Content-Lengths, Content-Length with Transfer-Encoding: the framing
 * it sent is never forwarded). Hop-by-hop headers (RFC 9110 7.6.1, and any
 * the Connection header names) and the front door's own (E2b-Sandbox-Id,
 * E2b-Sandbox-Port, X-Access-Token, E2b-Traffic-Access-Token: the sandbox's
 * credentials stay out of it) are dropped. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/strbuf.h"

#define PROXY_HEAD_MAX (64 << 10)

/* True if token (case-insensitive) is an element of the comma-separated
 * list (NULL: none). */
bool proxy_token_in(const char *list, const char *token);
/* True if a client's request header goes on to the sandbox's server;
 * connection is the request's Connection header (may be NULL). */
bool proxy_req_header_kept(const char *name, const char *connection);
/* True if a response header of the sandbox's server goes back to the
 * client; connection is the response's Connection header (may be NULL).
 * upgrade: a 101 answer, whose Upgrade header is kept. */
bool proxy_resp_header_kept(const char *name, const char *connection, bool upgrade);

/* The request head: "METHOD PATH" (path as given, a '/' first), then
 * proxy_req_query for each query argument in order, then proxy_req_line,
 * then proxy_req_end. -1 if method or path holds a byte that cannot be in a
 * request line (a space, a control character). */
int proxy_req_start(strbuf *b, const char *method, const char *path);
/* name[=value] (value NULL: no '='), percent-encoded. */
void proxy_req_query(strbuf *b, bool first, const char *name, const char *value);
/* Ends the request line, " HTTP/1.1\r\n". */
void proxy_req_line_end(strbuf *b);
/* "Name: value\r\n"; values with CR or LF are dropped (-1). */
int proxy_req_header(strbuf *b, const char *name, const char *value);
/* The framing: Content-Length (always, 0 included, for a body or a method
 * that has one), and Connection: close, or Connection: Upgrade plus
 * "Upgrade: upgrade" when upgrade is not NULL; then the blank line. */
void proxy_req_end(strbuf *b, size_t body_len, bool with_length, const char *upgrade);

/* A response head, parsed. */
typedef void (*proxy_header_fn)(void *ud, const char *name, size_t name_len, const char *value,
				size_t value_len);
/* Parses buf[0..len) as the start of a response: the length of its head
 * (through the blank line) with *ret_status and each header passed to fn
 * (value trimmed); 0 while the head is not complete (and len below
 * PROXY_HEAD_MAX); -1 if it is malformed or over PROXY_HEAD_MAX. A 1xx
 * other than 101 is a head like any (the caller skips it). */
ssize_t proxy_resp_head(const char *buf, size_t len, int *ret_status, proxy_header_fn fn, void *ud);
