/* The features of src/api (docs/layout.md, checked by `make
 * check-layers`): what exec.c, files.c, packages.c, pool.c, snap.c and
 * store_admin.c give the files above them (or beside them, without a
 * cycle): the traced runs (trace.c, trace_api.h) and the entry points on
 * top (env.c's sbx_env_create, sbx_env_exec, sbx_gc; replay, build,
 * attest). The features call the core (core.h) and the bottom (base.h). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/core.h"

/* The warm pool (src/api/pool.c): a ready entry for a create (1, or 0
 * if none matches); sbx gc's removal of entries of pools that are gone
 * (pool_admin.c, as pool_set and pool_config_read). */
int pool_take(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings);
void pool_gc(sbx_ctx *ctx, json_t *removed);
/* sbx_pool_set with an owner ({pid, start}: pool_owned.c) kept in the
 * pool's configuration (NULL: an explicit pool). */
int pool_set(sbx_ctx *ctx, const char *source, int size, const char *pol_spec, bool code, const json_t *owner,
	     json_t **ret, sbx_err **err);
/* The configuration of the pool of (kind "template"|"snapshot", source,
 * policy): its key into ret_key, 0 with *ret, or -ENOENT when there is
 * none. */
int pool_config_read(const sbx_ctx *ctx, const char *kind, const char *source, const char *pol_spec,
		     bool code, char ret_key[17], json_t **ret);
/* Whether owner ({pid, start}) is a live process, that very one (pool.c). */
bool pool_owner_alive(const json_t *owner);
/* pool_owned.c: the create observer's call after a create (env.c), and sbx
 * gc's removal of owned pools whose owner is gone. */
bool pool_opts_plain(const sbx_create_opts *o); /* pool.c: options a pool can serve (pure) */
bool pool_opts_code(const sbx_create_opts *o);	/* pool.c: o wants a code pool's entry (pure) */
void pool_observe(sbx_ctx *ctx, const sbx_create_opts *o, bool from_pool);
void pool_gc_owned(sbx_ctx *ctx, json_t *removed);

/* A file request to init (files.c): the reply and the n_fds fds with it. */
int api_file_call(sbx_ctx *ctx, const char *ref, json_t *req, json_t **ret, int *ret_fds, size_t n_fds,
		  sbx_err **err);

/* Why a restore of the environment rec with snap needs a new supervisor
 * (snap.c; docs/runtime.md "Restore in place"), or NULL if its live one
 * can start the new init. Pure. */
const char *snap_in_place_refusal(const env_record *rec, const struct store_snapshot *snap);
/* sbx_env_snapshot for a traced run (snap.c): where the capture finds the
 * writable layer exactly as the environment's last snapshot captured it
 * (and the record gives the same manifest), that snapshot's id, nothing
 * written ("reused": true in *ret); otherwise a new snapshot. */
int api_env_snapshot_or_last(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);

/* The store half of sbx_gc (store_admin.c): objects nothing reaches, added
 * to result's "removed". */
int store_admin_gc(sbx_ctx *ctx, json_t *result, sbx_err **err);

/* Installed packages (dpkg, pip, npm) for a snapshot manifest (packages.c). */
char **env_packages(sbx_ctx *ctx, const char *id, const char *env_dir, const char *parent);

/* exec with extras (src/api/exec.c), used by tracing (src/api/trace.c). */
#define EXEC_EXTRA_FDS 2
typedef struct exec_extra {
	json_t *req_fields;		      /* merged into the exec request (borrowed) */
	int fds[EXEC_EXTRA_FDS];	      /* sent after the stdio fds (borrowed) */
	const char *fd_names[EXEC_EXTRA_FDS]; /* request key that carries each fd's index */
	size_t n_fds;
	unsigned close_after_send; /* bit i: exec_core closes fds[i] once sent (and sets it to -1) */
	int trace_rd;		   /* a pipe to copy into trace_out while the command runs, or -1 */
	int trace_out;		   /* file */
	json_t *started, *exit;	   /* out: the supervisor's "started" and "exit" events (caller decrefs) */
	bool keep_sock;		   /* hand the connection out in sock once the request was sent */
	int sock;		   /* out with keep_sock: that connection (caller closes), or -1 */
} exec_extra;
/* The checks every exec makes of its options (foreground or background):
 * a command, K=V variables, an absolute cwd, bounded timeout and output cap,
 * a well-formed user. */
int exec_opts_check(const sbx_exec_opts *o, sbx_err **err);
int exec_core(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, exec_extra *x, sbx_exec_result *ret,
	      sbx_err **err);
