/* The environment record: $SBX_ROOT/envs/<id>/state.json, what an
 * environment is (written by create, phase and restore; read by everything
 * else), apart from its lifecycle (env_core.c, env_start.c). Also the two facts about a live
 * environment that are not in the record: its supervisor's liveness lock
 * ($SBX_RUN/<id>/lock) and its control socket ($SBX_RUN/<id>/ctl.sock). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/ctx.h"
#include "util/err.h"
#include "util/macro.h"

/* The typed view of state.json. Strings and the json_t members are
 * borrowed from `json`, which the record owns (one reference): keys not
 * typed here stay readable there. Absent keys read as NULL, 0 or false
 * (uid_slot: -1). */
typedef struct env_record {
	json_t *json;
	const char *id, *name, *hostname, *template_spec, *created_at, *network, *user, *snapshot_id, *state,
	    *phase, *policy, *pool;
	int64_t created_ms, host_uid, id_count, supervisor_pid, landlock_abi, restoring_ms, phase_changed_ms;
	int uid_slot; /* -1: rootless (no slot) */
	bool rootless, ephemeral, degraded, user_no_root, ttl_keep, phase_switching;
	struct {
		int64_t memory_bytes, pids, timeout_ms, ttl_ms, output_bytes, disk_bytes, idle_suspend_ms;
		double cpus;
	} limits;
	json_t *env, *volumes, *network_allow, *capabilities, *layers, *warnings, *agent_phase, *secrets,
	    *plugins, *agent_policy, *creator;
} env_record;

/* Fills *ret from st, taking a reference to st. Pure. -EBADMSG when st is
 * not an object. */
int env_record_parse(json_t *st, env_record *ret);
/* The record as a JSON object to write: r->json with the typed fields
 * above written over it (a new reference). NULL on ENOMEM. Pure. */
json_t *env_record_format(const env_record *r);
void env_record_clear(env_record *r); /* drops the reference; NULL-safe, idempotent */
/* Formats r and writes it as id's state.json (r is unchanged): 0 or a
 * negative errno. */
int env_record_write(const sbx_ctx *ctx, const char *id, const env_record *r);
/* Sets r's typed limits from a limits object's keys (those it has). Pure. */
void env_record_limits_update(env_record *r, const json_t *limits);
/* r's typed limits as an object of those that are set (non-zero); NULL on
 * ENOMEM. Pure. */
json_t *env_record_limits_json(const env_record *r);
#define _cleanup_env_record_ _cleanup_(env_record_clear)
/* Reads and parses id's state.json: 0, or a negative errno. */
int env_record_read(const sbx_ctx *ctx, const char *id, env_record *ret);
/* Resolves ref, then env_record_read; *ret_id is the resolved id. */
int env_record_load(sbx_ctx *ctx, const char *ref, char **ret_id, env_record *ret, sbx_err **err);

/* The raw forms (callers that rewrite the record as JSON). */
int env_state_read(const sbx_ctx *ctx, const char *id, json_t **ret);
int env_state_write(const sbx_ctx *ctx, const char *id, const json_t *st);
/* The same, for a record written moments ago (a create's "running" after
 * its "creating"): the new one takes the old one's place by an exchange,
 * and the old one stays as envs/<id>/creating-state.json until the
 * environment is removed. A rename over the old file makes ext4 start
 * writing the new one back at once (auto_da_alloc) and evict the old inode:
 * 0.2-0.6 ms on the create's path on this loaded disk, against ~0.01 ms.
 * Readers see the old or the new record, never neither. */
int env_state_write_replacing(const sbx_ctx *ctx, const char *id, const json_t *st);
/* Resolves ref and reads its state.json. */
int env_load(sbx_ctx *ctx, const char *ref, char **ret_id, json_t **ret_state, sbx_err **err);

/* A warm pool's entry (pool.c) waits hidden: envs/<id>/ENV_POOL_MARK exists
 * from its create until its hand-out, and while it does no lookup of an id,
 * a name or a prefix (sbx_env_resolve) finds it, so nothing can exec in,
 * pause or remove an entry before a create takes it. The process that took
 * it (ctx->own_entry) and the pool's own code (env_see_pool_entries, for
 * the calling thread) still see it. */
#define ENV_POOL_MARK "pool-entry"
void env_see_pool_entries(bool on);
/* Whether id exists and is not a pool entry hidden from this caller: what
 * a lookup finds, and so what a listing shows (an entry being created has
 * its mark before its state says "pool"). */
bool env_visible(const sbx_ctx *ctx, const char *id);

/* An environment id: 12 lowercase hex digits. */
bool env_valid_id(const char *s);
/* The ids under $SBX_ROOT/envs, a NULL-terminated strv (NULL on ENOMEM). */
char **env_list_ids(const sbx_ctx *ctx);
/* Is the supervisor of `id` alive? (It holds the lock for its whole life.) */
bool env_is_live(const sbx_ctx *ctx, const char *id);
/* A state written by a create (or restore) that never finished, whose
 * process (its "creator": pid and start time) is gone: nobody was given the
 * environment, nobody will finish it. False for records without a creator. */
bool env_creator_gone(const json_t *st);

/* Connects to the environment's control socket. */
int env_connect(const sbx_ctx *ctx, const char *id, sbx_err **err);
/* Sends one request and returns the single reply (errors become *err). */
int env_call(const sbx_ctx *ctx, const char *id, json_t *req, json_t **ret, sbx_err **err);
/* A supervisor's {"ev":"error", code, errno, message[, stage]} as *err;
 * stage 0 (the exec call failed) also sets sbx_err_spawn_errno(). */
int api_err_from_json(const json_t *m, sbx_err **err);
