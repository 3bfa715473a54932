/* The processes of envd's process.Process service (e2b_process.c): each
 * one an sbx_env_exec on a thread of its own, its output log, the registry
 * of the running ones, and the sandboxes' spare login shells (e2b_spare.h).
 * What the methods (e2b_process.c) and this file share; internal to the
 * two. */
#pragma once
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"
#include "server/e2b_events.h"
#include "server/e2b_proc_util.h"
#include "util/err.h"

typedef struct chunk {
	struct chunk *next;
	uint64_t seq;
	int kind; /* 1 stdout, 2 stderr, 3 pty */
	size_t len;
	char data[];
} chunk;

typedef struct sub {
	struct sub *next;
	uint64_t cursor; /* the next seq it sends */
} sub;

typedef struct eproc {
	struct eproc *next; /* the registry's (reg_lock) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	sbx_ctx *ctx;
	e2b_events *events; /* the sandbox's logs (a reference; NULL: none) */
	char *sandbox;
	uint32_t pid; /* 0 until it runs (atomic: set by on_start, read anywhere) */
	e2b_start_req req;
	json_t *in;	     /* Start's request, for a retry as root */
	char *user;	     /* NULL: the environment's default */
	int64_t timeout_ms;  /* the exec's (-1: none) */
	chunk *head, *tail;  /* the log */
	uint64_t next_seq;   /* seq of the next chunk */
	size_t bytes;	     /* in the log */
	sub *subs;	     /* streams sending its output */
	bool done;	     /* the exec returned: what follows is set */
	sbx_exec_result res; /* exit_code, signal, timed_out (buffers unused) */
	sbx_err *fail;	     /* it could not run (or the environment went) */
	pthread_mutex_t in_lock;
	int in_w; /* stdin's write end (in_lock), -1 */
	int in_r; /* the exec's */
	int sig_r, sig_w;
	int winch_r, winch_w;
	int size_fd;		 /* a pty master holding the size (pty) */
	bool spare;		 /* untaken spare (p->lock; set before it is shared) */
	bool ended;		 /* its exec returned (p->lock) */
	bool asked_root;	 /* it runs as root because its user does not exist */
	int64_t born_ms;	 /* a spare's start */
	int deadline_fd;	 /* a spare's: a timerfd, armed when it is taken (-1) */
	e2b_start_req spare_req; /* a taken spare's own request: what its exec was started with */
} eproc;

/* Drops a reference (the last frees it). */
void eproc_unref(eproc *p);
/* Its pid inside the environment; 0 until it runs. */
uint32_t eproc_pid(eproc *p);
/* The running process of sandbox that sel names, with a reference; NULL
 * with err not_found. */
eproc *eproc_find(const char *sandbox, const e2b_selector *sel, sbx_err **err);
/* A process for Start's request in, not yet running (one reference). */
int eproc_alloc(sbx_ctx *ctx, e2b_events *events, const char *sandbox, const char *user, int64_t deadline_ms,
		const json_t *in, eproc **ret, sbx_err **err);
/* Lists p and starts it on its thread, me subscribed first; -1 with err
 * (limit_exceeded) when the sandbox or the server runs too many. The
 * caller's reference stays its own. */
int eproc_launch(eproc *p, sub *me, sbx_err **err);
/* Drops the chunks every subscriber has sent; the caller holds p->lock. */
void eproc_log_trim(eproc *p);
/* The sandbox's spare, taken for Start's request (c's sandbox and user,
 * deadline) when it fits, with me subscribed and a reference for the
 * caller; NULL: none (any spare of the sandbox is then gone). */
eproc *eproc_spare_take(sbx_ctx *ctx, const char *sandbox, const char *user, int64_t deadline_ms,
			const json_t *in, sub *me);
/* Writes to p's stdin, waiting at most E2B_INPUT_WAIT_MS (or until
 * deadline_ms) for room. */
int eproc_write_input(eproc *p, const unsigned char *buf, size_t len, int64_t deadline_ms, sbx_err **err);
/* List's processes of sandbox, oldest first; NULL on ENOMEM. */
json_t *eproc_list_json(const char *sandbox);
