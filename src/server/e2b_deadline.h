/* E2B's timeouts on `sbx serve` (docs/e2b.md "Timeouts"): E2B's timeout is
 * an absolute end, kept in each sandbox's record (e2b_store.h); a thread
 * ends each sandbox at its deadline: removes it, or pauses it when the
 * record says autoPause. An action that fails is tried again
 * E2B_RETRY_MS later. */
#pragma once
#include "sbx.h"
#include "server/e2b_events.h"
#include "server/e2b_store.h"

#define E2B_RETRY_MS 10000

typedef struct e2b_deadline e2b_deadline;

/* Starts the thread over store (borrowed: it outlives the thread); what it
 * does goes to the sandboxes' events (a reference is taken; NULL: none). */
int e2b_deadline_start(sbx_ctx *ctx, e2b_store *store, e2b_events *events, e2b_deadline **ret, sbx_err **err);
/* A deadline changed: the thread looks again now. NULL: no-op. */
void e2b_deadline_poke(e2b_deadline *d);
/* Stops the thread, waits for it, frees d. NULL: no-op. */
void e2b_deadline_stop(e2b_deadline *d);
