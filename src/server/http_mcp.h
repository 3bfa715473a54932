/* MCP over Streamable HTTP: the route family of http_server.h that serves
 * POST /mcp (one JSON-RPC message per body), DELETE /mcp (ends a session)
 * and GET /mcp -> 405 (no server-initiated stream). The same handlers as
 * stdio (mcp.c) answer every message; this family adds sessions, its checks
 * (bearer token, protocol version header, media type) and SSE for calls
 * that report progress. */
#pragma once

#include "sbx.h"
#include "server/http_server.h"

#define HTTP_MCP_PATH "/mcp"

typedef struct http_mcp_opts {
	const char *token_file; /* NULL: no authentication; else a file holding the bearer token,
				   which must not be readable by others */
	/* Session limits (0: the default; session_policy.h). An initialize
	 * evicts a half-open session (one that never sent a message after its
	 * initialize), its own peer's first; failing that, an established one
	 * idle for session_min_idle_s, its own peer's first; never one running
	 * a call. If none can go it gets 503 with Retry-After. */
	unsigned max_sessions;		/* in total (default 1024) */
	unsigned max_sessions_per_peer; /* from one IP address (default a quarter of max_sessions) */
	unsigned session_min_idle_s;	/* an established session used this recently is kept (60) */
} http_mcp_opts;

/* Adds MCP's routes to hs (and its not-found page as hs's fallback, if it
 * is the first family). When hs stops, the calls in flight are cancelled
 * (undoing what they created) and waited for, and environment_destroy's
 * queued removals drained. Fails on an unusable token file. */
int http_mcp_add(http_server *hs, sbx_ctx *ctx, const http_mcp_opts *opts, sbx_err **err);
