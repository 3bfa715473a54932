/* cgroup v2 backend: one group <base>/sbx/<id> in the unified hierarchy.
 *
 * <base> is the hierarchy root when we may write there (root on the host),
 * else our own cgroup when that is writable (rootless with a delegated
 * subtree), else the root again so that the failure names it. On a hybrid
 * host the unified tree has no controllers: the group then enforces nothing
 * but still gives membership, cgroup.kill, cgroup.freeze and a
 * CLONE_INTO_CGROUP fd.
 *
 * Controllers are enabled top-down (base, then sbx/) only where the parent
 * offers them; a base that holds processes itself (our own cgroup) refuses
 * with EBUSY, and the limits it would carry are then reported missing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cgroup-internal.h"
#include "util/fs.h"
#include "util/macro.h"

typedef struct v2 {
	cg_backend base;
	char *path; /* <base>/sbx/<id>, for messages */
	char *id;
	int parent_fd; /* <base>/sbx */
	int fd;	       /* <base>/sbx/<id> */
} v2;

#define V2(b) ((v2 *)(b))

static const char *const v2_controllers[] = {"memory", "pids", "cpu"};

static int v2_base(const cg_mounts *m, char **ret)
{
	_cleanup_free_ char *text = NULL, *self = NULL;
	char *base = NULL;
	if (faccessat(AT_FDCWD, m->v2, W_OK, AT_EACCESS) == 0 ||
	    fs_read_file("/proc/self/cgroup", 64 * 1024, &text, NULL) < 0 ||
	    cgroup_parse_self_v2(text, &self) < 0)
		goto root;
	const char *rel = cgroup_path_below_root(self, m->v2_root ? m->v2_root : "/");
	if (!rel || !*rel)
		goto root;
	base = fs_path_join(m->v2, rel);
	if (!base)
		return -ENOMEM;
	if (faccessat(AT_FDCWD, base, W_OK, AT_EACCESS) == 0) {
		*ret = base;
		return 0;
	}
	free(base);
root:
	if (!(base = strdup(m->v2)))
		return -ENOMEM;
	*ret = base;
	return 0;
}

/* Enables in dfd's subtree the controllers dfd has; failures only mean fewer limits. */
static void v2_enable_controllers(int dfd)
{
	for (size_t i = 0; i < ARRAY_SIZE(v2_controllers); i++) {
		const char *c = v2_controllers[i];
		if (!cg_list_has(dfd, "cgroup.controllers", c) ||
		    cg_list_has(dfd, "cgroup.subtree_control", c))
			continue;
		char buf[32];
		snprintf(buf, sizeof(buf), "+%s", c);
		(void)fs_write_stringat(dfd, "cgroup.subtree_control", buf);
	}
}

static v2 *v2_new(const char *base, const char *id, int parent_fd, int fd)
{
	v2 *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->base.ops = &cg_v2_ops;
	v->parent_fd = parent_fd;
	v->fd = fd;
	if (!(v->id = strdup(id)) || asprintf(&v->path, "%s/%s/%s", base, CG_PARENT, id) < 0) {
		v->path = NULL;
		free(v->id);
		free(v);
		return NULL;
	}
	return v;
}

static int v2_create(const cg_mounts *m, const char *id, cg_backend **ret, sbx_err **err)
{
	if (!m->v2)
		return -ENOENT;
	_cleanup_free_ char *base = NULL;
	int r = v2_base(m, &base);
	if (r < 0)
		return err_errnum(err, r, "v2");
	_cleanup_close_ int base_fd = cg_open_dir(AT_FDCWD, base);
	if (base_fd < 0)
		return err_errnum(err, base_fd, "open %s", base);
	v2_enable_controllers(base_fd);
	bool created_parent = false;
	_cleanup_close_ int pfd = cg_mkdir_open(base_fd, CG_PARENT, &created_parent);
	if (pfd < 0)
		return err_errnum(err, pfd, "mkdir %s/%s", base, CG_PARENT);
	v2_enable_controllers(pfd);
	if (mkdirat(pfd, id, 0755) < 0)
		return err_errno(err, "mkdir %s/%s/%s", base, CG_PARENT, id);
	_cleanup_close_ int fd = cg_open_dir(pfd, id);
	if (fd < 0) {
		(void)unlinkat(pfd, id, AT_REMOVEDIR);
		return err_errnum(err, fd, "open %s/%s/%s", base, CG_PARENT, id);
	}
	v2 *v = v2_new(base, id, pfd, fd);
	if (!v) {
		(void)unlinkat(pfd, id, AT_REMOVEDIR);
		return err_errnum(err, ENOMEM, "v2");
	}
	TAKE_FD(pfd);
	TAKE_FD(fd);
	*ret = &v->base;
	return 0;
}

static int v2_open(const cg_mounts *m, const char *id, cg_backend **ret, sbx_err **err)
{
	if (!m->v2)
		return -ENOENT;
	_cleanup_free_ char *base = NULL;
	int r = v2_base(m, &base);
	if (r < 0)
		return err_errnum(err, r, "v2");
	_cleanup_free_ char *parent = fs_path_join(base, CG_PARENT);
	if (!parent)
		return err_errnum(err, ENOMEM, "v2");
	_cleanup_close_ int pfd = cg_open_dir(AT_FDCWD, parent);
	if (pfd < 0)
		return pfd == -ENOENT ? -ENOENT : err_errnum(err, pfd, "open %s", parent);
	_cleanup_close_ int fd = cg_open_dir(pfd, id);
	if (fd < 0)
		return fd == -ENOENT ? -ENOENT : err_errnum(err, fd, "open %s/%s", parent, id);
	v2 *v = v2_new(base, id, pfd, fd);
	if (!v)
		return err_errnum(err, ENOMEM, "v2");
	TAKE_FD(pfd);
	TAKE_FD(fd);
	*ret = &v->base;
	return 0;
}

static int v2_write(v2 *v, const char *file, const char *val, sbx_err **err)
{
	int r = fs_write_stringat(v->fd, file, val);
	if (r < 0)
		return err_errnum(err, r, "write '%s' to %s/%s", val, v->path, file);
	return 0;
}

static bool has(int dfd, const char *file)
{
	return faccessat(dfd, file, F_OK, 0) == 0;
}

static int v2_limits(cg_backend *b, const cgroup_limits *lim, unsigned want, unsigned *ret_applied,
		     sbx_err **err)
{
	v2 *v = V2(b);
	unsigned can = 0;
	if (has(v->fd, "memory.max"))
		can |= CG_LIMIT_MEMORY;
	if (has(v->fd, "pids.max"))
		can |= CG_LIMIT_PIDS;
	if (has(v->fd, "cpu.max"))
		can |= CG_LIMIT_CPU;
	want &= can;
	char buf[64];
	int r;
	if (want & CG_LIMIT_MEMORY) {
		snprintf(buf, sizeof(buf), "%lld", (long long)lim->memory_bytes);
		if ((r = v2_write(v, "memory.max", buf, err)) < 0)
			return r;
		/* Without this the limit would spill into swap and never OOM. */
		if (has(v->fd, "memory.swap.max") && (r = v2_write(v, "memory.swap.max", "0", err)) < 0)
			return r;
	}
	if (want & CG_LIMIT_PIDS) {
		snprintf(buf, sizeof(buf), "%lld", (long long)lim->pids);
		if ((r = v2_write(v, "pids.max", buf, err)) < 0)
			return r;
	}
	if (want & CG_LIMIT_CPU) {
		long long quota = (long long)(lim->cpus * 100000 + 0.5);
		if (quota < 1000)
			quota = 1000; /* the kernel's minimum quota is 1 ms */
		snprintf(buf, sizeof(buf), "%lld 100000", quota);
		if ((r = v2_write(v, "cpu.max", buf, err)) < 0)
			return r;
	}
	*ret_applied = want;
	return 0;
}

static int v2_attach(cg_backend *b, pid_t pid, sbx_err **err)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return v2_write(V2(b), "cgroup.procs", buf, err);
}

static void v2_stats(cg_backend *b, cgroup_stats *st)
{
	v2 *v = V2(b);
	int64_t x;
	if (st->memory_current < 0 && cg_read_int64at(v->fd, "memory.current", &x) == 0)
		st->memory_current = x;
	if (st->memory_peak < 0 && cg_read_int64at(v->fd, "memory.peak", &x) == 0)
		st->memory_peak = x;
	if (st->oom_kills < 0 && cg_read_keyat(v->fd, "memory.events", "oom_kill", &x) == 0)
		st->oom_kills = x;
	if (st->pids_current < 0 && cg_read_int64at(v->fd, "pids.current", &x) == 0)
		st->pids_current = x;
	if (st->cpu_usage_us < 0 && cg_read_keyat(v->fd, "cpu.stat", "usage_usec", &x) == 0)
		st->cpu_usage_us = x;
}

/* SIGKILLs the pids listed in cgroup.procs (for kernels without cgroup.kill). */
static void v2_kill_listed(v2 *v)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;
	if (cg_read_procs(v->fd, &pids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		(void)kill(pids[i], SIGKILL);
}

static int v2_kill(cg_backend *b, sbx_err **err)
{
	v2 *v = V2(b);
	int64_t empty = 1;
	if (cg_read_keyat(v->fd, "cgroup.events", "populated", &empty) == 0 && empty == 0)
		return 0; /* nothing to kill (the common case at teardown) */
	int r = fs_write_stringat(v->fd, "cgroup.kill", "1");
	bool fallback = r == -ENOENT && has(v->fd, "cgroup.procs"); /* before 5.14 */
	if (r == -ENOENT && !fallback)
		return 0; /* group already removed */
	if (r < 0 && !fallback)
		return err_errnum(err, r, "write '1' to %s/cgroup.kill", v->path);
	for (unsigned waited = 0;; waited += 5) {
		int64_t populated = 1;
		r = cg_read_keyat(v->fd, "cgroup.events", "populated", &populated);
		if (r == -ENOENT || (r == 0 && populated == 0))
			return 0;
		if (waited >= CG_KILL_WAIT_MS)
			return err_set(err, SBX_E_INTERNAL, EBUSY,
				       "%s: processes still running %u ms after kill", v->path, waited);
		if (fallback)
			v2_kill_listed(v);
		cg_sleep_ms(5);
	}
}

static int v2_freeze(cg_backend *b, bool frozen, sbx_err **err)
{
	v2 *v = V2(b);
	if (!has(v->fd, "cgroup.freeze"))
		return -EOPNOTSUPP; /* before 5.2 */
	int r = v2_write(v, "cgroup.freeze", frozen ? "1" : "0", err);
	if (r < 0)
		return r;
	for (unsigned waited = 0;; waited += 5) {
		int64_t state = -1;
		if (cg_read_keyat(v->fd, "cgroup.events", "frozen", &state) < 0 || state == (frozen ? 1 : 0))
			return 0;
		if (waited >= CG_FREEZE_WAIT_MS)
			return err_set(err, SBX_E_INTERNAL, ETIMEDOUT, "%s: not %s after %u ms", v->path,
				       frozen ? "frozen" : "thawed", waited);
		cg_sleep_ms(5);
	}
}

static int v2_destroy(cg_backend *b, sbx_err **err)
{
	v2 *v = V2(b);
	int r = cg_rmdir(v->parent_fd, v->id);
	if (r < 0)
		return err_errnum(err, r, "rmdir %s", v->path);
	return 0;
}

static int v2_fd(cg_backend *b)
{
	return V2(b)->fd;
}

static int v2_list(const cg_mounts *m, char ***ids)
{
	if (!m->v2)
		return 0;
	_cleanup_free_ char *base = NULL;
	int r = v2_base(m, &base);
	if (r < 0)
		return r;
	_cleanup_free_ char *parent = fs_path_join(base, CG_PARENT);
	if (!parent)
		return -ENOMEM;
	return cg_list_children(parent, ids);
}

static void v2_free(cg_backend *b)
{
	v2 *v = V2(b);
	if (!v)
		return;
	safe_close(v->parent_fd);
	safe_close(v->fd);
	free(v->path);
	free(v->id);
	free(v);
}

const cg_ops cg_v2_ops = {
    .name = "v2",
    .create = v2_create,
    .open = v2_open,
    .limits = v2_limits,
    .attach = v2_attach,
    .stats = v2_stats,
    .kill = v2_kill,
    .freeze = v2_freeze,
    .destroy = v2_destroy,
    .v2_fd = v2_fd,
    .list = v2_list,
    .free = v2_free,
};
