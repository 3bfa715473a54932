/* envd's Connect RPC services on the E2B data plane (docs/e2b.md), JSON
 * codec: the dispatch (e2b_rpc.c) and the interface each service module
 * (e2b_process.c, e2b_fs.c, e2b_watch.c) implements. connect_rpc.h has the pure wire
 * format; this is its I/O side.
 *
 * e2b_rpc.c classifies a request (connect_request_classify), finds its
 * method in the services' tables, decodes the request message (a unary
 * body, or the one envelope of a server stream), then calls the method:
 *   unary   fills *out (a JSON object, the response message) or fails with
 *           err; e2b_rpc.c answers 200 + JSON, or the Connect error JSON
 *           with the code's HTTP status (connect_code_from_sbx)
 *   stream  sends messages with e2b_stream_send as they come, and returns
 *           when the stream is over: 0 (end-stream {}), or -1 with err
 *           (end-stream {error}). It runs on a thread of its own; the
 *           response is 200 application/connect+json from the first byte.
 * The error's code is connect_code_from_sbx's, except that errno ETIMEDOUT
 * is deadline_exceeded and ECANCELED canceled (sbx has no such codes).
 * A method must honour the call's deadline (Connect-Timeout-Ms: the end is
 * deadline_exceeded) and stop soon after e2b_stream_closed says the client
 * went away or the sandbox ended. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"
#include "server/e2b_events.h"
#include "server/http_server.h"

typedef struct e2b_stream e2b_stream;

typedef struct e2b_call {
	sbx_ctx *ctx;
	const char *sandbox_id;
	const char *user;	 /* the user of Authorization: Basic (E2B's "user:"), NULL: the default */
	int64_t deadline_ms;	 /* CLOCK_MONOTONIC ms at which the call is due, or -1 */
	const http_request *req; /* for headers (Keepalive-Ping-Interval); not valid in a stream
				  * method after it returned */
	e2b_events *events;	 /* the sandboxes' logs (a stream holds a reference) */
} e2b_call;

typedef struct e2b_method {
	const char *service; /* "process.Process" */
	const char *method;  /* "Start" */
	int (*unary)(e2b_call *c, const json_t *in, json_t **out, sbx_err **err);
	int (*stream)(e2b_call *c, const json_t *in, e2b_stream *s, sbx_err **err);
	/* A stream's keepalive message, as its response type spells it; NULL:
	 * a process stream's {"event":{"keepalive":{}}}. */
	const char *keepalive;
} e2b_method;

/* Sends one response message (borrowed). 0, or -EPIPE once the client has
 * gone (stop then). Blocks while the client is slow to read. */
int e2b_stream_send(e2b_stream *s, const json_t *msg);
/* True once the client has gone, or the server stops. */
bool e2b_stream_closed(const e2b_stream *s);
/* Ends the stream by cutting the connection once what was sent is out: no
 * end-stream follows, whatever the method returns (envd's streams when its
 * sandbox goes with them: the client sees the transport break, and E2B's
 * SDK then asks /health whether the sandbox is gone). */
void e2b_stream_cut(e2b_stream *s);

/* The services' tables (each module's), ended by an entry of NULL service. */
extern const e2b_method e2b_process_methods[];
extern const e2b_method e2b_fs_methods[];
extern const e2b_method e2b_watch_methods[]; /* e2b_watch.c: WatchDir and the watchers */

/* envd's EntryInfo of a library entry (sbx_env_stat's; borrowed), with its
 * user.e2b.* attributes as metadata (e2b_fs.c). NULL on ENOMEM. */
json_t *e2b_entry_info(const json_t *e);

/* The route handler of data_routes for every Connect call to envd's port. */
http_result e2b_rpc_headers(http_request *req);
http_result e2b_rpc_body(http_request *req);
/* A stream's state is the request's req->state, an e2b_req_state
 * (e2b_ports.h): the data family's done hook, e2b_req_state_done, lets go of
 * it when the request ends. */
/* The largest request body of a Connect call (data_routes' max_body). */
#define E2B_RPC_BODY_MAX ((size_t)2 << 20)
