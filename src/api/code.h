/* The code interpreter's client side (docs/code.md): reaching the bridge
 * inside an environment (code_conn.c) and one HTTP exchange with it. Used
 * by code.c, which shapes requests and answers into sbx_run_code and
 * sbx_context_*. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"

#define CODE_BRIDGE_PORT 49999
#define CODE_BRIDGE_PATH "/tmp/.sbx-code-bridge.py"
#define CODE_START_TIMEOUT_MS 60000
/* A prepared pool entry's bridge answers GET /ready within this (it answers
 * from memory, in about a millisecond; a bridge that hangs is not ready). */
#define CODE_READY_TIMEOUT_MS 1000
/* The bridge reads requests up to 16 MiB (code_bridge.py MAX_REQUEST). */
#define CODE_REQUEST_MAX (16 << 20)

/* Body bytes of the answer as they arrive; a negative return closes the
 * connection there (code_call.stopped). */
typedef int (*code_body_fn)(void *ud, const char *data, size_t len);

typedef struct code_call {
	const char *method; /* "GET", "POST", "DELETE" */
	const char *path;   /* "/execute", "/contexts/ID/restart", ... */
	const json_t *body; /* sent as JSON; NULL: none */
	bool start;	    /* start the bridge when none listens (else: unavailable) */
	int64_t timeout_ms; /* the whole answer within it; <= 0: no bound */
	code_body_fn on_body;
	void *ud;
	bool cancellable; /* cancel_fd is watched while the answer comes */
	int cancel_fd;	  /* readable or hung up: the connection is closed (c->cancelled) */
	/* out */
	int status;	  /* the answer's HTTP status */
	bool stopped;	  /* on_body stopped it */
	bool not_running; /* !start and no bridge listens: 0 is returned, status 0 */
	bool cancelled;	  /* cancel_fd fired: 0 is returned, the connection closed (the bridge
			   * interrupts the cell when it sees its client leave) */
} code_call;

/* Connects to the environment's bridge (starting it first when c->start and
 * none listens), sends the request and feeds the answer's body to
 * c->on_body until it is complete, stopped, cancelled, or the time is up
 * (then unavailable). The answer is parsed by util/http1.h, bounded there. */
int code_call_run(sbx_ctx *ctx, const char *ref, code_call *c, sbx_err **err);

/* Warm kernels (docs/code.md "Warm kernels"), for a code pool's entries
 * (pool.c): starts the bridge and its default Python kernel in environment
 * ref when none listens, and returns once it answers (the start of the
 * first sbx_run_code, done ahead). */
int code_bridge_prepare(sbx_ctx *ctx, const char *ref, sbx_err **err);
/* Whether ref's bridge answers GET /ready with 200: it listens, and its
 * default Python kernel is alive and has run nothing (a take's check). */
bool code_bridge_ready(sbx_ctx *ctx, const char *ref);
