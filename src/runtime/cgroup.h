/* Per-environment cgroups. Two backends behind one interface
 * (cgroup-internal.h): cgroup v2 and cgroup v1. On a hybrid host (v1
 * controllers plus a controller-less v2 tree at /sys/fs/cgroup/unified) the
 * v1 backend enforces limits and a v2 group is made too, for membership,
 * cgroup.kill and tracing (the BPF cgroup-id helper sees only v2). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/err.h"

typedef struct cgroup_limits {
	int64_t memory_bytes; /* <= 0: unlimited */
	int64_t pids;	      /* <= 0: unlimited */
	double cpus;	      /* <= 0: unlimited */
	bool require;	      /* fail (SBX_E_UNAVAILABLE) if a requested limit cannot be enforced */
} cgroup_limits;

typedef struct cgroup_stats {
	int64_t memory_current; /* bytes, -1 unknown */
	int64_t memory_peak;	/* bytes, -1 unknown */
	int64_t oom_kills;	/* OOM kills so far, -1 unknown */
	int64_t pids_current;	/* -1 unknown */
	int64_t cpu_usage_us;	/* -1 unknown */
} cgroup_stats;

typedef struct sbx_cgroup sbx_cgroup;

/* What this host offers: "v2", "v1", "hybrid" or "none". Pure read of /proc/self/mountinfo. */
const char *cgroup_host_mode(void);

/* Creates sbx/<id> in every hierarchy we can write, with limits applied.
 * Fails with SBX_E_UNAVAILABLE if no hierarchy is writable (rootless
 * without delegation); with limits that no hierarchy can enforce it fails
 * only when `require` is set. *ret_missing (if non-NULL) gets a malloc'd,
 * comma-separated list of limits that could not be enforced, or NULL. */
int cgroup_create(const char *id, const cgroup_limits *lim, sbx_cgroup **ret, char **ret_missing,
		  sbx_err **err);
/* Writes new limits into the existing groups (the agent phase lowers them
 * live; docs/secrets.md). Limits <= 0 are left as they are. */
int cgroup_set_limits(sbx_cgroup *cg, const cgroup_limits *lim, sbx_err **err);
/* Opens the existing groups of environment `id` (for gc, inspect, rm). */
int cgroup_open(const char *id, sbx_cgroup **ret, sbx_err **err);
/* Moves pid into every group; but for the v2 group if in_v2 (the pid was
 * cloned into it with CLONE_INTO_CGROUP), and for the groups whose
 * cgroup_self_fds it was given if self_moved (it moved itself). */
int cgroup_attach(sbx_cgroup *cg, pid_t pid, bool in_v2, bool self_moved, sbx_err **err);
/* Descriptors through which a single-threaded process moves itself into the
 * groups that support it (cgroup v1: it writes "0" to each; cgroup_self_move).
 * Cheaper than cgroup_attach from outside: no wait for an RCU grace period.
 * Returns how many were opened into fds (0: none to hand out), or -errno
 * with none left open. The caller closes them. */
#define CGROUP_SELF_FDS_MAX 16
int cgroup_self_fds(sbx_cgroup *cg, int *fds, size_t max);
/* Run by the process to move, on the descriptors of cgroup_self_fds. */
int cgroup_self_move(const int *fds, size_t n, sbx_err **err);
/* An O_DIRECTORY fd of the v2 group (for CLONE_INTO_CGROUP), or -1. Borrowed. */
int cgroup_v2_fd(sbx_cgroup *cg);
int cgroup_stats_read(sbx_cgroup *cg, cgroup_stats *ret);
/* SIGKILLs every process in the groups (cgroup.kill on v2, else freeze +
 * kill + thaw on v1) and waits until they are empty (bounded). */
int cgroup_kill_all(sbx_cgroup *cg, sbx_err **err);
/* Kills everything and removes the groups. */
int cgroup_destroy(sbx_cgroup *cg, sbx_err **err);
/* Freeze/thaw (for consistent snapshots). */
int cgroup_freeze(sbx_cgroup *cg, bool frozen, sbx_err **err);
void cgroup_free(sbx_cgroup *cg);
/* Ids of environments that have a cgroup under sbx/ (for gc). NULL-terminated, strv. */
char **cgroup_list_ids(void);
