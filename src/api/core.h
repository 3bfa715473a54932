/* The core of src/api (docs/layout.md, checked by `make check-layers`):
 * starting an environment's supervisor (env_start.c), waking a suspended
 * one (env_wake.c), a create without the warm pool (env_create.c), and its
 * states, name, stop and removal (env_core.c). It calls only the bottom
 * layer (base.h); the features above call it, never the other way round
 * (the pool's part of a create comes through ctx.h's hooks). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/base.h"

/* Realtime milliseconds (env_core.c). */
int64_t now_ms_real(void);

/* The lifecycle's core (env_core.c). Stops the supervisor of `id` (if
 * alive), waiting for its teardown. */
void stop_supervisor(sbx_ctx *ctx, const char *id);
/* What env_stop_wait saw (STOP_REMOVED: a one-shot environment removed itself). */
enum { STOP_NOT_SEEN, STOP_DONE, STOP_LINGERING, STOP_REMOVED };
/* fd: a connection to id's supervisor that asked it to stop; waits for its
 * "stopped" (env_core.c says how long and what else): one of STOP_*. */
int env_stop_wait(sbx_ctx *ctx, const char *id, int fd);
/* Removal, once the supervisor is gone (or lingering: only unmounting):
 * the files (env_remove_files). */
int env_remove_stopped(sbx_ctx *ctx, const char *id, bool lingering, sbx_err **err);
/* The files' part of a removal; h NULL: all of it now (env_core.c). */
typedef struct env_hidden env_hidden;
void env_remove_files(sbx_ctx *ctx, const char *id, env_hidden *h);
/* env_config.dispose, dispose_hide and dispose_finish (runtime.h): a
 * one-shot environment's removal by its own supervisor; arg is the ctx. */
void env_dispose(void *arg, const char *id);
void *env_dispose_hide(void *arg, const char *id);
void env_dispose_finish(void *arg, void *hidden);
/* Names: $SBX_ROOT/names/<name>, a symlink to the id (env_core.c). */
int env_name_register(sbx_ctx *ctx, const char *name, const char *id, sbx_err **err);
void env_name_unregister(sbx_ctx *ctx, const char *name, const char *id);

/* Warm environments (docs/warm.md). env_wake.c: starts a suspended or
 * stopped environment again (*ret_restarted: it was not live); env_connect
 * that first starts a suspended environment again (or refuses,
 * !auto_resume). env_core.c: the state ls/inspect show (NULL: nothing to
 * add); the last idle suspend. */
int env_wake(sbx_ctx *ctx, const char *id, bool *ret_restarted, sbx_err **err);
int env_connect_resume(sbx_ctx *ctx, const char *id, bool auto_resume, sbx_err **err);
/* Whether id is idle-suspended now: a call whose connection its supervisor
 * closed unanswered may have met the suspend (the marker is written before
 * the supervisor stops) and is tried once more, which wakes it. */
bool env_suspended_now(const sbx_ctx *ctx, const char *id);
/* One request (no fds) and its first reply on a connection from
 * env_connect_resume, sent once more when it met an idle suspend
 * unanswered: 0 with *ret (and up to *n_fds fds, fds NULL for none), or -1
 * with err set. */
int env_request_resume(sbx_ctx *ctx, const char *id, bool auto_resume, const json_t *req, json_t **ret,
		       int *fds, size_t *n_fds, sbx_err **err);
const char *env_warm_state(const sbx_ctx *ctx, const char *id, bool live);
json_t *env_suspend_info(const sbx_ctx *ctx, const char *id);

struct store_snapshot;
/* What a create starts from (env_start.c's env_create_impl). A new environment
 * (sbx_env_create) gives o, and for a fork or an image template snap; a
 * restart (restore, wake) gives restore_state too. Everything is borrowed. */
typedef struct env_create_req {
	const sbx_create_opts *o;	   /* NULL: SBX_CREATE_OPTS_INIT */
	const json_t *restore_state;	   /* the record to start again under its own id, uid range
					    * and name; NULL: a new environment */
	const struct store_snapshot *snap; /* the layers to start on, or NULL */
	const char *snap_id;		   /* snap's digest (the record's snapshot_id) */
	const json_t *plugins;		   /* [{"path", "config"?}] from a policy (NULL: none; a
					    * restart takes restore_state's) */
} env_create_req;
/* Creates the environment q describes (steps in env_start.c); *ret_id its id. */
int env_create_impl(sbx_ctx *ctx, const env_create_req *q, char **ret_id, json_t **ret_warnings,
		    sbx_err **err);
/* sbx_env_create without the warm pool (env_create.c): the policy, an image
 * template or a fork resolved, then env_create_impl. */
int env_create_cold(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings,
		    sbx_err **err);

/* Create options from an environment's record (env_start.c; restore, wake):
 * strings borrowed from st; *env and *net_allow (network_allow's) are the
 * caller's to free. 0, -ENOMEM, -E2BIG (more volumes than max_vols). */
int opts_from_state(const json_t *st, sbx_create_opts *o, sbx_volume *vols, size_t max_vols, char ***env,
		    char ***net_allow);
