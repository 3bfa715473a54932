/* The egress proxy engine: an HTTP CONNECT and plain-HTTP forward proxy that
 * lets connections through to exactly the hosts an egress_allowlist allows.
 *
 * It is independent of the sandbox: it serves an already-listening TCP socket
 * that someone else created. In sbx that socket is created inside the
 * environment's network namespace (which has only loopback) and served from
 * outside by the supervisor, so the proxy's own connections leave from the
 * host's network namespace while the sandbox can reach nothing but the proxy.
 *
 * Per connection (one request per client connection):
 *   CONNECT host:port   allowlist check; resolve (names only, on the proxy
 *                       side, once); every resolved address must pass
 *                       egress_check_addr (internal addresses need an IP rule:
 *                       SSRF protection); connect; "200 Connection established";
 *                       for port 443 or o->require_sni the TLS ClientHello that
 *                       follows must carry an SNI equal to the CONNECT host
 *                       (IP targets: no SNI), else the connection is closed
 *                       and logged; then bytes flow both ways.
 *   GET http://h[:p]/x  the same checks on the URI host; a Host header naming
 *                       another host or port is refused; the head is rewritten
 *                       to origin-form with proxy headers dropped and
 *                       "Connection: close", then bytes flow both ways.
 * Refusals are "HTTP/1.1 403 Forbidden" with header X-Sbx-Policy-Rule and the
 * body "sbx egress policy refused HOST:PORT: WHY. Connections only go through
 * this proxy; other routes are blocked, so retrying another way will not work."
 * Relaying uses 64 KiB buffers per direction with back-pressure, half-close
 * (a FIN is passed on with shutdown(SHUT_WR)) and an idle timeout. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "policy/egress_match.h"
#include "sbx.h"

#define PROXY_MAX_ADDRS 8

/* Resolves a host name (never an IP literal) to at most max addresses; the
 * port in the returned addresses is ignored. Returns 0 with *ret_n >= 1, or a
 * negative errno. Called from a short-lived resolver thread, so it may block;
 * a result that arrives after connect_timeout_ms is dropped. */
typedef int (*proxy_resolve_fn)(void *ud, const char *host, struct sockaddr_storage *ret, size_t max,
				size_t *ret_n);
/* One event per client connection, when it ends: {"event":"egress", "kind":
 * "connect"|"http"|null, "host", "port", "verdict": "allowed"|"denied"|
 * "failed"|"bad_request"|"busy", "rule" (the matching rule, or why it was
 * denied), "reason" (why it ended, if not cleanly), "address" (upstream
 * "ip:port"), "bytes_up" (sent to the upstream), "bytes_down" (received from
 * it), "duration_ms"}. The event is borrowed: json_incref it to keep it.
 * Called in the thread running proxy_serve. */
typedef void (*proxy_log_fn)(void *ud, json_t *event);
/* A further veto (plugins), asked for each request after gate 1 (the
 * allowlist) and before resolution, in the request's resolver thread (so it
 * may block; the resolve+connect timeout covers it). kind is "connect" or
 * "http". Returns 1 to go on, anything else to refuse with a 403 saying
 * `why` (a NUL-terminated line written into why[cap]). */
typedef int (*proxy_check_fn)(void *ud, const char *kind, const char *host, int port, char *why, size_t cap);

#define PROXY_OPTS_VERSION 1
typedef struct proxy_opts {
	unsigned version;
	int stop_fd;		  /* readable or hung up: proxy_serve returns 0; -1: none */
	unsigned max_conns;	  /* concurrent client connections; 0: 256. Over it: 503 */
	int idle_timeout_ms;	  /* relay with no bytes either way; 0: 300000 */
	int head_timeout_ms;	  /* request head and ClientHello; 0: 10000 */
	int connect_timeout_ms;	  /* resolution + TCP connect; 0: 10000 */
	bool require_sni;	  /* check SNI on every CONNECT, not only port 443 */
	proxy_log_fn log;	  /* may be NULL */
	proxy_resolve_fn resolve; /* NULL: getaddrinfo */
	void *ud;		  /* passed to log, resolve and check */
	proxy_check_fn check;	  /* NULL: none */
} proxy_opts;
#define PROXY_OPTS_INIT                                                                                      \
	{                                                                                                    \
		.version = PROXY_OPTS_VERSION, .stop_fd = -1                                                 \
	}

/* Serves listen_fd (a listening TCP socket; set non-blocking by this call, not
 * closed) in the calling thread until o->stop_fd becomes readable. al must
 * outlive the call and is only read (several proxies may share one). Returns
 * 0 when stopped, negative on a fatal error (epoll). Per-connection failures
 * never end the loop; they are answered, logged and closed. */
int proxy_serve(int listen_fd, const egress_allowlist *al, const proxy_opts *o, sbx_err **err);

/* The refusal text for host:port and a reason (what the 403 body says), in
 * buf. Exposed so front ends can tell a model the same thing. */
void proxy_refusal_text(const char *host, int port, const char *why, char *buf, size_t cap);
