/* Module-private interface of the warm pool (docs/warm.md): the calls
 * between the files it is split into:
 *
 *   pool_files.c  keys and inputs, paths, a pool's configuration, its
 *                 entries counted and removed, sbx pool rm
 *   pool.c        the refiller, take (and sbx_env_origin)
 *   pool_admin.c  sbx pool set, sbx pool ls, the pool part of sbx gc
 *
 * Calls go one way: pool_admin.c -> pool.c -> pool_files.c (and
 * pool_admin.c -> pool_files.c). The refiller removes an owned pool whose
 * owner ended, and pool set starts the refiller: so removal is below the
 * refiller and set above it. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

#define POOL_SIZE_MAX 256

/* pool_files.c */
/* The pool key of (kind, source, policy, code): 16 hex digits, into ret. */
void pool_key(const char *kind, const char *source, const char *pol, bool code, char ret[17]);
/* host and dir:PATH name templates, never a snapshot. */
bool pool_source_builtin(const char *source);
/* The digest of what may change under a pool's name ("" when nothing). */
void pool_inputs(sbx_ctx *ctx, const char *tmpl, const char *pol, char ret[17]);
/* Whether entry id was built from the inputs want (pool_inputs). */
bool pool_entry_current(const sbx_ctx *ctx, const char *id, const char *want);
/* $SBX_ROOT/pools/<key><suffix> (malloc'd), NULL on ENOMEM. */
char *pool_path(const sbx_ctx *ctx, const char *key, const char *suffix);
/* (kind, source) of a create: a snapshot by digest, else the template. */
int pool_source_of(sbx_ctx *ctx, const sbx_create_opts *o, const char **ret_kind, char **ret_source,
		   sbx_err **err);
/* The integer (a size for SBX_POOL_MIN_FREE) in environment variable
 * name, def when unset or invalid. */
int64_t pool_env_int(const char *name, int64_t def);
bool pool_endswith(const char *s, const char *suffix);
/* The entries of dir (names not starting with '.'). */
size_t pool_count_tokens(const char *dir);
/* The configuration of pool key (pools/<key>.json); -errno. */
int pool_read(const sbx_ctx *ctx, const char *key, json_t **ret);
/* Removes an entry (hidden from other lookups: env_state.h ENV_POOL_MARK). */
int pool_remove_entry(sbx_ctx *ctx, const char *id, sbx_err **err);
/* The entries of pool key (of pools that no longer exist: NULL) not
 * taken, removed: an array of their ids. */
json_t *pool_remove_entries(sbx_ctx *ctx, const char *key);

/* pool.c */
/* Starts the detached refiller of pool key (SBX_POOL_SYNC=1: fills it
 * before returning). */
void pool_refill_async(sbx_ctx *ctx, const char *key);
