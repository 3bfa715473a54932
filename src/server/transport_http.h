/* MCP over Streamable HTTP: POST /mcp (one JSON-RPC message per body),
 * DELETE /mcp (ends a session), GET /mcp -> 405 (no server-initiated
 * stream). The same handlers as stdio (mcp.c) answer every message; this
 * file adds sessions, the HTTP checks (Origin, bearer token, protocol
 * version header, body cap) and SSE for calls that report progress. */
#pragma once
#include <stdbool.h>

#include "sbx.h"

typedef struct mcp_http_opts {
	const char *listen;	/* "ADDR:PORT": 127.0.0.1:7777, [::1]:7777, localhost:0 (any free port) */
	const char *token_file; /* NULL: no authentication; else a file holding the bearer token,
				   which must not be readable by others */
	/* Called once the socket listens, with the endpoint's URL ("http://127.0.0.1:7777/mcp")
	 * and whether the address is loopback-only. May be NULL. */
	void (*on_ready)(const char *url, bool loopback, void *userdata);
	void *userdata;
	/* Connection limits (0: the default; docs/server.md). Past a limit a new
	 * connection evicts the oldest one only waiting for a request (the
	 * never-authorized first), or is refused if every one is busy. */
	unsigned max_connections;	   /* in total (default 256) */
	unsigned max_connections_per_peer; /* from one IP address (default 64) */
	unsigned idle_timeout_s;	   /* an authorized keep-alive connection may idle this long (60) */
	unsigned request_timeout_s;	   /* to send a request's headers and body, from the connection's
					      opening or its last response (30); a connection that has not
					      been authorized yet gets the smaller of the two */
	/* Session limits (0: the default; session_policy.h). An initialize
	 * evicts a half-open session (one that never sent a message after its
	 * initialize), its own peer's first; failing that, an established one
	 * idle for session_min_idle_s, its own peer's first; never one running
	 * a call. If none can go it gets 503 with Retry-After. */
	unsigned max_sessions;		/* in total (default 1024) */
	unsigned max_sessions_per_peer; /* from one IP address (default a quarter of max_sessions) */
	unsigned session_min_idle_s;	/* an established session used this recently is kept (60) */
} mcp_http_opts;

/* Serves until SIGINT, SIGTERM or SIGHUP, then cancels the calls in flight
 * (undoing what they created), waits for them and returns 0 (the previous
 * signal handlers are restored). Fails only if the server cannot start:
 * a bad address, a port in use, an unusable token file. */
int mcp_serve_http(sbx_ctx *ctx, const mcp_http_opts *opts, sbx_err **err);
