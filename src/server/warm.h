/* A server that keeps itself warm (docs/warm.md): `sbx serve` and `sbx mcp`
 * keep warm pools of what their clients actually create, sized by demand
 * (warm_plan.h), within a budget of ready entries, and remove them when the
 * demand goes and when the server stops. The pools are owned pools
 * (sbx_pool_set_owned): `sbx gc` removes those of a server that died, and a
 * pool a user set with `sbx pool set` is never touched. A create that takes
 * an entry is indistinguishable from a cold one, as with any pool. */
#pragma once
#include <stdint.h>

#include "sbx.h"

/* Ready entries are budgeted at this much memory each (an idle
 * environment: its supervisor and init, about 3 MiB resident, measured);
 * one with its code interpreter's kernel started at WARM_CODE_COST times
 * it (warm_plan.h). */
#define WARM_ENTRY_BYTES ((int64_t)4 << 20)
#define WARM_MEMORY_DEFAULT ((int64_t)256 << 20)
#define WARM_ENTRIES_DEFAULT 64

typedef struct warm_opts {
	int max_entries;      /* --warm N: at most N ready entries (0: off) */
	int64_t memory_bytes; /* --warm-memory: at most this much by WARM_ENTRY_BYTES each */
} warm_opts;

typedef struct warm warm;

/* Starts watching ctx's creates and the thread that sizes the pools.
 * *ret NULL (and 0) when the options turn it off. */
int warm_start(sbx_ctx *ctx, const warm_opts *o, warm **ret, sbx_err **err);
/* Stops the thread, stops watching, removes the pools it set. NULL: no-op. */
void warm_stop(warm *w);
