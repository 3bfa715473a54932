/* Internal helpers shared by the src/api files. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/ctx.h"
#include "api/env_state.h"
#include "util/err.h"

/* Warm environments (src/api/pause.c, docs/warm.md): env_connect that first
 * starts a suspended environment again (or refuses, !auto_resume); the
 * state ls/inspect show (NULL: nothing to add); the last idle suspend. */
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
/* The warm pool (src/api/pool.c): a ready entry for a create (1, or 0
 * if none matches); sbx gc's removal of entries of pools that are gone. */
int pool_take(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings);
void pool_gc(sbx_ctx *ctx, json_t *removed);
/* Whether the entry being built gets its writable layer on a tmpfs of its
 * own (its pool was set with SBX_POOL_LAYER=tmpfs, as root;
 * runtime/quota.h quota_setup_tmpfs). */
bool pool_layer_tmpfs(const sbx_ctx *ctx);
/* While building a pool entry (ctx->pool_key): its token and claim paths
 * (malloc'd; both NULL otherwise), for CTL_OP_OWN (runtime.h). */
void pool_entry_paths(const sbx_ctx *ctx, const char *id, char **ret_token, char **ret_claim);
/* env_config.handout (runtime.h) of a pool entry: its state rewritten as
 * handed out; arg is the entry's creator's context. */
int pool_handout(void *arg, const char *id, int64_t taken_ms);
/* The connection a one-shot pool take of entry id kept (ctx.h taken_sock),
 * now the caller's; -1 if none. */
int pool_taken_sock(sbx_ctx *ctx, const char *id);
/* A file request to init (files.c): the reply and the n_fds fds with it. */
int api_file_call(sbx_ctx *ctx, const char *ref, json_t *req, json_t **ret, int *ret_fds, size_t n_fds,
		  sbx_err **err);
int64_t now_ms_real(void);
/* Stops the supervisor of `id` (if alive), waiting for its teardown. */
void stop_supervisor(sbx_ctx *ctx, const char *id);
struct store_snapshot;
/* What a create starts from (env.c's env_create_impl). A new environment
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
/* Creates the environment q describes (steps in env.c); *ret_id its id. */
int env_create_impl(sbx_ctx *ctx, const env_create_req *q, char **ret_id, json_t **ret_warnings,
		    sbx_err **err);
/* Why a restore of the environment rec with snap needs a new supervisor
 * (snap.c; docs/runtime.md "Restore in place"), or NULL if its live one
 * can start the new init. Pure. */
const char *snap_in_place_refusal(const env_record *rec, const struct store_snapshot *snap);

/* A create's network (src/api/limits.c): o->network with o->network_allow,
 * or the string form "allow=P,P" split at commas (here only). *ret_mode is
 * "none", "open" or "allow" (static); *ret_allow the patterns, each checked
 * by egress_match (a strv, NULL but for allow). Pure. */
int api_network_opts(const sbx_create_opts *o, const char **ret_mode, char ***ret_allow, sbx_err **err);

/* Create options from an environment's record (snap.c; restore, resume):
 * strings borrowed from st; *env and *net_allow (network_allow's) are the
 * caller's to free. 0, -ENOMEM, -E2BIG (more volumes than max_vols). */
int opts_from_state(const json_t *st, sbx_create_opts *o, sbx_volume *vols, size_t max_vols, char ***env,
		    char ***net_allow);

/* --policy (src/api/policy_apply.c). */
struct policy;
typedef struct policy_storage {
	char **network_allow;  /* what o->network_allow may point to */
	sbx_volume *volumes;   /* what o->volumes may point to */
	char **env;	       /* what o->env may point to (strings borrowed) */
	const char *warning;   /* a part of the policy that is not enforced, or NULL */
	json_t *plugins;       /* the policy's plugins: [{"path", "config"?}], or NULL */
	char **hidden;	       /* what o->hidden may point to */
	char **secrets;	       /* what o->secrets may point to */
	const char **cap_drop; /* what o->cap_drop may point to (names are static) */
} policy_storage;
int policy_load_spec(const char *spec, struct policy **ret, sbx_err **err);
/* Whether a --policy spec names a built-in profile (strict, dev, open). */
bool policy_spec_is_profile(const char *spec);
int policy_apply(const struct policy *p, sbx_create_opts *o, policy_storage *keep, sbx_err **err);
void policy_storage_clear(policy_storage *k);

/* The store half of sbx_gc (store_admin.c): objects nothing reaches, added
 * to result's "removed". */
int store_admin_gc(sbx_ctx *ctx, json_t *result, sbx_err **err);
/* sbx_snapshot_export with a hook (oci.c; used by push): have() returning
 * true with d's digest and size filled means the destination has the
 * layer's gzip blob already, so export neither makes nor writes it. */
struct oci_descriptor;
typedef bool (*api_export_have_fn)(void *ud, const char *diff_id, struct oci_descriptor *d);
int api_oci_export(sbx_ctx *ctx, const char *snapshot, const char *oci_dir, api_export_have_fn have,
		   void *have_ud, json_t **ret, sbx_err **err);
/* An image's layers into the store (verified as sbx import does), then its
 * snapshot and the label ref (oci.c; used by import and pull). reuse_present:
 * a layer the store holds under its diff_id is not extracted again. */
struct oci_layout;
struct oci_manifest;
struct oci_config;
int api_oci_import_image(sbx_ctx *ctx, struct oci_layout *l, const struct oci_manifest *m,
			 const struct oci_config *cfg, const char *label, bool reuse_present,
			 char *ret_sid /* STORE_DIGEST_SIZE */, char ***ret_layers, uint64_t *ret_size,
			 sbx_err **err);
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
int trace_exec(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, sbx_exec_result *ret, sbx_err **err);
