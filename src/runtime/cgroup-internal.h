/* Module-private interface between cgroup.c (detection, composition) and its
 * two backends, cgroup-v2.c and cgroup-v1.c. Each backend manages the group
 * sbx/<id> in the hierarchies of its kind; cgroup.c holds a list of backend
 * instances and fans every operation out to them.
 *
 * Ownership: create/open hand out a cg_backend that the caller releases with
 * ops->free (which closes fds but removes nothing). destroy removes the group
 * directories but keeps the instance valid, so it may be called again. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/cgroup.h"

/* Limit kinds, as a bit set. */
enum {
	CG_LIMIT_MEMORY = 1u << 0,
	CG_LIMIT_PIDS = 1u << 1,
	CG_LIMIT_CPU = 1u << 2,
};

/* The v1 controllers sbx uses. */
typedef enum cg_ctrl {
	CG_MEMORY,
	CG_PIDS,
	CG_CPU,
	CG_CPUACCT,
	CG_FREEZER,
	CG_CTRL_MAX,
} cg_ctrl;
extern const char *const cg_ctrl_names[CG_CTRL_MAX];

/* What /proc/self/mountinfo says about cgroup filesystems. Paths are mount
 * points (unescaped); roots are the hierarchy paths mounted there ("/" unless
 * a subtree was bind-mounted, as container runtimes without cgroupns do). */
typedef struct cg_mounts {
	char *v2;      /* cgroup2 mount point, NULL if none */
	char *v2_root; /* its root within the hierarchy */
	char *v1[CG_CTRL_MAX];
	char *v1_root[CG_CTRL_MAX];
	bool v1_any; /* some v1 controller hierarchy is mounted (even one sbx does not use) */
} cg_mounts;

/* Pure parser of mountinfo text. Fills *ret (zeroed first); -ENOMEM only.
 * Where a controller is mounted twice, a mount under /sys/fs/cgroup wins. */
int cgroup_parse_mountinfo(const char *text, cg_mounts *ret);
/* Pure: the v1 controllers (1 << cg_ctrl) a create joins, of those mounted.
 * have_v2: a writable v2 group exists beside them (hybrid host). */
unsigned cgroup_v1_needed(const cg_mounts *m, bool have_v2);
/* "v2", "v1", "hybrid" or "none" for parsed mounts. */
const char *cgroup_mounts_mode(const cg_mounts *m);
void cgroup_mounts_done(cg_mounts *m);
/* Pure: the v2 path ("0::<path>" line) of /proc/<pid>/cgroup text; -ENOENT if none. */
int cgroup_parse_self_v2(const char *text, char **ret);
/* Path of hierarchy path `path` below a mount whose root is `root`, relative
 * to the mount point ("" for the mount point itself); NULL if the path is not
 * visible through that mount. Points into `path`. */
const char *cgroup_path_below_root(const char *path, const char *root);

typedef struct cg_backend cg_backend;
typedef struct cg_ops {
	const char *name; /* "v2", "v1": used in messages */
	/* Creates sbx/<id> (and sbx/ itself if missing). Returns -EEXIST (with
	 * nothing created) if the group exists, -EACCES/-EPERM/-EROFS if the
	 * hierarchy is not writable, -ENOENT if this backend has no hierarchy.
	 * On failure nothing created by this call is left behind. */
	int (*create)(const cg_mounts *m, const char *id, cg_backend **ret, sbx_err **err);
	/* Opens an existing group; -ENOENT if it has no directory in any of this
	 * backend's hierarchies. */
	int (*open)(const cg_mounts *m, const char *id, cg_backend **ret, sbx_err **err);
	/* Writes the limits among `want` (CG_LIMIT_*) that this backend can
	 * enforce; *ret_applied gets those. A failed write is an error. */
	int (*limits)(cg_backend *b, const cgroup_limits *lim, unsigned want, unsigned *ret_applied,
		      sbx_err **err);
	int (*attach)(cg_backend *b, pid_t pid, sbx_err **err);
	/* Opens, into fds[0..max), the files a process writes "0" to in order
	 * to move itself in (v1: each hierarchy's `tasks`; a thread moving
	 * itself takes no global lock, so it does not wait for an RCU grace
	 * period as a write of another's pid does). Returns how many, 0 if this
	 * backend has none (v2: CLONE_INTO_CGROUP), or -errno with none left
	 * open. NULL: none. */
	int (*self_fds)(cg_backend *b, int *fds, size_t max);
	/* Fills the fields of *st that are still -1 and that it knows. */
	void (*stats)(cg_backend *b, cgroup_stats *st);
	/* SIGKILLs every member and waits (bounded) until the group is empty. */
	int (*kill)(cg_backend *b, sbx_err **err);
	/* Freezes or thaws, waiting (bounded) until the state is reached;
	 * -EOPNOTSUPP if this backend cannot freeze. */
	int (*freeze)(cg_backend *b, bool frozen, sbx_err **err);
	/* Removes the group directories; missing ones are fine. Does not kill. */
	int (*destroy)(cg_backend *b, sbx_err **err);
	/* The v2 group directory fd, or -1. Borrowed. */
	int (*v2_fd)(cg_backend *b);
	/* Appends the names of the groups under this backend's sbx/ parents to
	 * *ids (a strv), skipping names already there. -ENOMEM only. */
	int (*list)(const cg_mounts *m, char ***ids);
	void (*free)(cg_backend *b);
} cg_ops;

struct cg_backend {
	const cg_ops *ops;
};

extern const cg_ops cg_v2_ops;
extern const cg_ops cg_v1_ops;

/* Name of the parent directory of every group, in every hierarchy. */
#define CG_PARENT "sbx"
/* Bounds on waiting for the kernel. */
#define CG_KILL_WAIT_MS 2000
#define CG_FREEZE_WAIT_MS 2000
#define CG_RMDIR_WAIT_MS 1000

/* Helpers shared by the backends (cgroup.c). All return 0 or -errno. */
bool cg_errno_is_access(int errnum); /* EACCES, EPERM, EROFS */
int cg_open_dir(int dfd, const char *path);
/* mkdirat, then open it; *ret_created tells whether this call made it. */
int cg_mkdir_open(int dfd, const char *name, bool *ret_created);
int cg_read_int64at(int dfd, const char *file, int64_t *ret);
/* Value N of the line "key N" in a flat keyed file (memory.events, cpu.stat). */
int cg_read_keyat(int dfd, const char *file, const char *key, int64_t *ret);
/* Whether a whitespace-separated list file (cgroup.controllers) has `word`. */
bool cg_list_has(int dfd, const char *file, const char *word);
/* The pids in dfd/cgroup.procs, in a malloc'd array. */
int cg_read_procs(int dfd, pid_t **ret, size_t *ret_n);
/* unlinkat(AT_REMOVEDIR), retried on EBUSY for up to CG_RMDIR_WAIT_MS; ENOENT is success. */
int cg_rmdir(int dfd, const char *name);
/* Sleeps ms milliseconds (EINTR retried). */
void cg_sleep_ms(unsigned ms);
/* Appends the subdirectory names of dir (missing dir: nothing) to *ids, unique. */
int cg_list_children(const char *dir, char ***ids);
