/* The library context (internal layout of sbx_ctx). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "sbx.h"

struct sbx_ctx {
	char *root;    /* SBX_ROOT: store and per-environment state */
	char *run;     /* SBX_RUN: sockets, locks, staging mounts */
	bool rootless; /* not real root in the initial user namespace */
	uid_t uid;
	gid_t gid;
	sbx_progress_fn progress; /* long operations report here, if set */
	void *progress_ud;
	char *attest_key_path; /* sbx_ctx_set_attest_key: sbx_attest's default key */
	char **host_dirs;      /* sbx_ctx_allow_host_dir: real paths an operator allowed (host_dirs.c) */
	const char *pool_key;  /* set while building a warm pool entry (src/api/pool.c) */
	bool pool_tmpfs;       /* and its writable layer goes on a tmpfs (ctx_pool_layer_tmpfs) */
	/* and the digest of what it is built from that may change under the
	 * pool's name (pool.c pool_inputs), NULL when nothing may */
	const char *pool_inputs;
	/* and what that entry's create (env_start.c, below the pool) asks of
	 * the pool, set with pool_key: the entry's token and claim paths
	 * (malloc'd), for CTL_OP_OWN, and its hand-out (env_config.handout,
	 * runtime.h: its state rewritten as handed out; arg is the entry's
	 * creator's context) */
	void (*pool_entry_paths)(const sbx_ctx *ctx, const char *id, char **ret_token, char **ret_claim);
	int (*pool_handout)(void *arg, const char *id, int64_t taken_ms);
	pid_t short_lived; /* ctx_short_lived: the process whose supervisors stay its children */
	/* A one-shot create's pool take (pool.c): the connection on which the
	 * entry's supervisor said "owned", kept for the entry's first command
	 * (ctx_taken_sock), and that entry's id; -1 and "" when none. */
	int taken_sock;
	char taken_id[16];
	/* The last pool entry this process took one-shot: its supervisor hands
	 * it out a moment later, and until then lookups of it must still find
	 * it here (env_state.h ENV_POOL_MARK). "" when none. */
	char own_entry[16];
	/* sbx_ctx_set_create_observer (pool.c pool_observe) */
	sbx_create_observer_fn create_observer;
	sbx_create_observer_opts_fn create_observer_opts; /* or this one (only one is set) */
	void *create_observer_ud;
};

/* The caller is a short-lived process (a CLI command such as `sbx run`):
 * the supervisors it starts stay its children (one fork, no intermediate
 * process; they are reparented when it exits) instead of being detached by
 * a double fork. Only for the calling process: a process forked from it
 * (a pool's refiller) detaches its supervisors again, since a long-lived
 * parent that never reaps them would collect zombies. */
void ctx_short_lived(sbx_ctx *ctx);

/* $SBX_ROOT/envs/<id> and $SBX_RUN/<id>; malloc'd. */
char *ctx_env_dir(const sbx_ctx *ctx, const char *id);
char *ctx_run_dir(const sbx_ctx *ctx, const char *id);
/* Whether the entry being built gets its writable layer on a tmpfs of its
 * own (its pool was set with SBX_POOL_LAYER=tmpfs, as root;
 * runtime/quota.h quota_setup_tmpfs). */
bool ctx_pool_layer_tmpfs(const sbx_ctx *ctx);
/* The connection a one-shot pool take of entry id kept (taken_sock), now
 * the caller's; -1 if none. */
int ctx_taken_sock(sbx_ctx *ctx, const char *id);
