/* Background removal for environment_destroy (docs/server.md "Destroy").
 *
 * A destroy answers once the environment is queued here; worker threads
 * remove it (sbx_env_remove: stop the supervisor, free the uid range,
 * remove the files). Until then the server treats it as gone: calls that
 * name it get not_found and environment_list leaves it out. The queue is
 * bounded (REAPER_MAX): when full, reaper_submit refuses and the caller
 * removes inline, so a client that destroys faster than environments can be
 * torn down is slowed to that pace instead of piling them up. The
 * transports drain the queue before the server exits (reaper_drain), so a
 * server that ends normally (end of input, SIGTERM, SIGINT) leaves nothing;
 * one that is killed leaves the queued environments as ordinary ones that
 * sbx ls shows and sbx rm removes. Process-wide; thread-safe. */
#pragma once

#include <stdbool.h>

#include "sbx.h"

#define REAPER_MAX 64
#define REAPER_THREADS 2

/* Queues id (copied) for removal with ctx, which must outlive
 * reaper_drain. Returns 0 when queued, -1 when full or no worker could
 * start (then nothing was queued). */
int reaper_submit(sbx_ctx *ctx, const char *id);
/* Whether id is queued or being removed. */
bool reaper_pending(const char *id);
/* A copy of the ids queued or being removed now, NULL-terminated (NULL
 * when out of memory). A reader that lists environments takes it first and
 * leaves out ids in it or pending after: a removal that ends during the
 * listing would otherwise pass both the listing and a later check. */
char **reaper_pending_ids(void);
/* Waits until every queued removal has finished. */
void reaper_drain(void);
