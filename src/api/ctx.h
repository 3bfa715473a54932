/* The library context (internal layout of sbx_ctx). */
#pragma once
#include <stdbool.h>
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
	bool pool_tmpfs;       /* and its writable layer goes on a tmpfs (pool_layer_tmpfs) */
	/* and the digest of what it is built from that may change under the
	 * pool's name (pool.c pool_inputs), NULL when nothing may */
	const char *pool_inputs;
	pid_t short_lived; /* ctx_short_lived: the process whose supervisors stay its children */
	/* A one-shot create's pool take (pool.c): the connection on which the
	 * entry's supervisor said "owned", kept for the entry's first command
	 * (pool_taken_sock), and that entry's id; -1 and "" when none. */
	int taken_sock;
	char taken_id[16];
	/* The last pool entry this process took one-shot: its supervisor hands
	 * it out a moment later, and until then lookups of it must still find
	 * it here (env_state.h ENV_POOL_MARK). "" when none. */
	char own_entry[16];
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
