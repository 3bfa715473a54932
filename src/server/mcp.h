/* The MCP method handlers, shared by every transport.
 *
 * A transport hands each received message to mcp_server_handle() with a
 * sink for its replies. Quick methods (initialize, ping, tools/list,
 * server/discover) are answered before mcp_server_handle() returns; tool
 * calls run on worker threads (at most MCP_MAX_INFLIGHT at once) and answer
 * through the sink when done, so a slow command never holds up the others.
 * All state that matters lives in environment ids; the server keeps only
 * the handshake flag and the calls in flight (for cancellation). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sbx.h"

#define MCP_MAX_INFLIGHT 64
#define MCP_PROGRESS_INTERVAL_MS 250
#define MCP_STATELESS_VERSION "2026-07-28"

/* Where the replies (and progress notifications) of one message go. send()
 * may be called from any thread, concurrently: it must serialize itself.
 * It borrows msg. The sink is copied; userdata must stay valid until every
 * call started with it has answered (mcp_server_wait()). gone() (optional)
 * tells, after a send, whether that reply reached no one (the client went
 * away): a call whose result the client never saw is undone as a cancelled
 * one is, so that no environment it cannot know about stays behind. */
typedef struct mcp_sink {
	void (*send)(void *userdata, const json_t *msg);
	void *userdata;
	bool (*gone)(void *userdata);
} mcp_sink;

typedef struct mcp_server mcp_server;

/* threaded=false runs tool calls inline (tests, fuzzing). ctx is borrowed. */
int mcp_server_new(sbx_ctx *ctx, bool threaded, mcp_server **ret, sbx_err **err);
/* Cancels nothing: call mcp_server_cancel_all() and/or mcp_server_wait() first. */
void mcp_server_free(mcp_server *s);
/* Handles one received message (a line, a body): never fails, never blocks
 * on a tool call; every error goes back through the sink as JSON-RPC. */
void mcp_server_handle(mcp_server *s, const char *buf, size_t len, const mcp_sink *sink);
/* Same for a message that is already decoded (borrowed). */
void mcp_server_handle_json(mcp_server *s, json_t *msg, const mcp_sink *sink);
/* Cancels every call in flight (their replies are dropped). */
void mcp_server_cancel_all(mcp_server *s);
/* Waits until no call is in flight. */
void mcp_server_wait(mcp_server *s);
/* The same for at most timeout_ms: true if no call is in flight. */
bool mcp_server_wait_for(mcp_server *s, int timeout_ms);

/* Serves MCP over newline-delimited JSON-RPC on in_fd/out_fd (stdin/stdout)
 * until EOF on in_fd, then waits for the calls in flight and returns 0.
 * SIGINT, SIGTERM and SIGHUP cancel the calls in flight and return 0 (the
 * previous handlers are restored). Nothing but JSON-RPC is written to
 * out_fd. Fails only if the server cannot start. */
int mcp_serve_stdio(sbx_ctx *ctx, int in_fd, int out_fd, sbx_err **err);
