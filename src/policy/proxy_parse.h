/* Pure parsers of the egress proxy (no I/O; unit-tested and fuzzed): the
 * client's HTTP request head (CONNECT or absolute-URI forward request) and
 * the server name (SNI) in a TLS ClientHello. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "policy/egress_match.h"
#include "sbx.h"

#define PROXY_HEAD_MAX (32 * 1024)  /* request line + headers */
#define PROXY_HELLO_MAX (64 * 1024) /* TLS records holding the ClientHello */

typedef enum proxy_req_kind {
	PROXY_REQ_CONNECT, /* CONNECT host:port HTTP/1.x */
	PROXY_REQ_HTTP,	   /* METHOD http://host[:port]/path HTTP/1.x */
} proxy_req_kind;

typedef struct proxy_request {
	proxy_req_kind kind;
	char host[EGRESS_HOST_MAX + 2]; /* normalized (lowercase, no trailing dot, no brackets) */
	int port;
	size_t head_len;   /* bytes of buf the head used (through the blank line) */
	char *origin_head; /* PROXY_REQ_HTTP: the head to send upstream (origin-form
			    * target, proxy headers dropped, "Connection: close"); malloc'd */
	size_t origin_head_len;
} proxy_request;

void proxy_request_done(proxy_request *req); /* frees origin_head */

/* Parses the request head at the start of buf[0..len).
 * Returns 1 (parsed, *ret filled), 0 (incomplete: read more), or negative:
 * -EINVAL malformed or unsupported (answer 400), -EPERM a request that tries
 * to name two hosts (Host header disagreeing with the URI; answer 403),
 * -E2BIG head larger than PROXY_HEAD_MAX. *err says why in words. */
int proxy_request_parse(const char *buf, size_t len, proxy_request *ret, sbx_err **err);

/* Finds the SNI host name in the TLS records at buf[0..len) that carry a
 * ClientHello (it may span several records). Returns 1 with the name in
 * ret (NUL-terminated, as sent), 0 for a complete ClientHello without SNI,
 * -EAGAIN if more bytes are needed, -EINVAL if this is not a TLS ClientHello
 * or is malformed, -E2BIG if it exceeds PROXY_HELLO_MAX, -ENOMEM. */
int proxy_tls_sni(const uint8_t *buf, size_t len, char *ret, size_t cap);
