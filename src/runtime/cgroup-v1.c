/* cgroup v1 backend: the group <mount>/sbx/<id> in each hierarchy that
 * carries a controller sbx uses (memory, pids, cpu, cpuacct, freezer).
 * Co-mounted controllers (cpu,cpuacct) share one hierarchy and one group.
 *
 * Limits: memory.limit_in_bytes (+ memory.memsw.limit_in_bytes, and
 * swappiness 0, so the limit cannot spill into swap), pids.max,
 * cpu.cfs_quota_us over a 100 ms period. v1 has no cgroup.kill: kill freezes
 * the group (so nothing forks past us), SIGKILLs every listed pid, thaws (a
 * frozen task cannot die) and waits until every hierarchy is empty. */
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

typedef struct v1_hier {
	char *mount;	/* mount point of the hierarchy */
	unsigned ctrls; /* 1 << cg_ctrl, for the controllers it carries */
	int parent_fd;	/* <mount>/sbx */
	int fd;		/* <mount>/sbx/<id>; -1 if not (yet) there */
	bool created;	/* made by this create call (for undo) */
} v1_hier;

typedef struct v1 {
	cg_backend base;
	char *id;
	v1_hier h[CG_CTRL_MAX];
	size_t n;
} v1;

#define V1(b) ((v1 *)(b))

static void v1_free(cg_backend *b)
{
	v1 *v = V1(b);
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		free(v->h[i].mount);
		safe_close(v->h[i].parent_fd);
		safe_close(v->h[i].fd);
	}
	free(v->id);
	free(v);
}
static inline void v1_freep(v1 **v)
{
	v1_free(*v ? &(*v)->base : NULL);
}

/* A backend instance with one (closed) entry per distinct hierarchy; NULL on ENOMEM. */
static v1 *v1_new(const cg_mounts *m, const char *id)
{
	v1 *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->base.ops = &cg_v1_ops;
	if (!(v->id = strdup(id))) {
		free(v);
		return NULL;
	}
	for (int c = 0; c < CG_CTRL_MAX; c++) {
		if (!m->v1[c])
			continue;
		size_t i;
		for (i = 0; i < v->n; i++)
			if (streq(v->h[i].mount, m->v1[c]))
				break;
		if (i == v->n) {
			v->h[i] = (v1_hier){.parent_fd = -1, .fd = -1};
			if (!(v->h[i].mount = strdup(m->v1[c]))) {
				v1_free(&v->base);
				return NULL;
			}
			v->n++;
		}
		v->h[i].ctrls |= 1u << c;
	}
	return v;
}

/* The group fd in the hierarchy of controller c, or -1. */
static int v1_fd(v1 *v, cg_ctrl c)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->h[i].ctrls & (1u << c))
			return v->h[i].fd;
	return -1;
}

static bool has(int dfd, const char *file)
{
	return dfd >= 0 && faccessat(dfd, file, F_OK, 0) == 0;
}

/* A new cpuset group starts with no cpus or mems and refuses tasks; copy
 * the parent's (matters only where cpuset is co-mounted with a used controller). */
static void v1_cpuset_inherit(int parent_fd, int fd)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		_cleanup_free_ char *cur = NULL, *par = NULL;
		if (fs_read_fileat(fd, files[i], 4096, &cur, NULL) < 0 || strspn(cur, " \n") != strlen(cur))
			continue;
		if (fs_read_fileat(parent_fd, files[i], 4096, &par, NULL) < 0)
			continue;
		(void)fs_write_stringat(fd, files[i], par);
	}
}

static void v1_undo(v1 *v)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->h[i].created)
			(void)cg_rmdir(v->h[i].parent_fd, v->id);
}

static int v1_create(const cg_mounts *m, const char *id, cg_backend **ret, sbx_err **err)
{
	_cleanup_(v1_freep) v1 *v = v1_new(m, id);
	if (!v)
		return err_errnum(err, ENOMEM, "v1");
	if (v->n == 0)
		return -ENOENT;
	for (size_t i = 0; i < v->n; i++) {
		v1_hier *h = &v->h[i];
		_cleanup_close_ int mfd = cg_open_dir(AT_FDCWD, h->mount);
		if (mfd < 0) {
			v1_undo(v);
			return err_errnum(err, mfd, "open %s", h->mount);
		}
		bool created_parent = false;
		h->parent_fd = cg_mkdir_open(mfd, CG_PARENT, &created_parent);
		if (h->parent_fd < 0) {
			int r = h->parent_fd;
			v1_undo(v);
			return err_errnum(err, r, "mkdir %s/%s", h->mount, CG_PARENT);
		}
		if (created_parent)
			v1_cpuset_inherit(mfd, h->parent_fd);
		/* Old kernels default to a flat memory hierarchy, where a child's
		 * usage is not charged to sbx/; new ones ignore the knob. */
		int64_t hier = 1;
		if ((h->ctrls & (1u << CG_MEMORY)) &&
		    cg_read_int64at(h->parent_fd, "memory.use_hierarchy", &hier) == 0 && hier == 0)
			(void)fs_write_stringat(h->parent_fd, "memory.use_hierarchy", "1");
		if (mkdirat(h->parent_fd, id, 0755) < 0) {
			int r = err_errno(err, "mkdir %s/%s/%s", h->mount, CG_PARENT, id);
			v1_undo(v);
			return r;
		}
		h->created = true;
		h->fd = cg_open_dir(h->parent_fd, id);
		if (h->fd < 0) {
			int r = h->fd;
			v1_undo(v);
			return err_errnum(err, r, "open %s/%s/%s", h->mount, CG_PARENT, id);
		}
		v1_cpuset_inherit(h->parent_fd, h->fd);
	}
	*ret = &TAKE_PTR(v)->base;
	return 0;
}

static int v1_open(const cg_mounts *m, const char *id, cg_backend **ret, sbx_err **err)
{
	_cleanup_(v1_freep) v1 *v = v1_new(m, id);
	if (!v)
		return err_errnum(err, ENOMEM, "v1");
	bool any = false;
	for (size_t i = 0; i < v->n; i++) {
		v1_hier *h = &v->h[i];
		_cleanup_free_ char *parent = fs_path_join(h->mount, CG_PARENT);
		if (!parent)
			return err_errnum(err, ENOMEM, "v1");
		h->parent_fd = cg_open_dir(AT_FDCWD, parent);
		if (h->parent_fd == -ENOENT) {
			h->parent_fd = -1;
			continue;
		}
		if (h->parent_fd < 0) {
			int r = h->parent_fd;
			h->parent_fd = -1;
			return err_errnum(err, r, "open %s", parent);
		}
		h->fd = cg_open_dir(h->parent_fd, id);
		if (h->fd == -ENOENT) {
			h->fd = -1; /* half-created or half-removed: skip this hierarchy */
			continue;
		}
		if (h->fd < 0) {
			int r = h->fd;
			h->fd = -1;
			return err_errnum(err, r, "open %s/%s", parent, id);
		}
		any = true;
	}
	if (!any)
		return -ENOENT;
	*ret = &TAKE_PTR(v)->base;
	return 0;
}

static const char *v1_mount_of(v1 *v, cg_ctrl c)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->h[i].ctrls & (1u << c))
			return v->h[i].mount;
	return "?";
}

static int v1_write(v1 *v, cg_ctrl c, const char *file, const char *val, sbx_err **err)
{
	int r = fs_write_stringat(v1_fd(v, c), file, val);
	if (r < 0)
		return err_errnum(err, r, "write '%s' to %s/%s/%s/%s", val, v1_mount_of(v, c), CG_PARENT,
				  v->id, file);
	return 0;
}

static int v1_limits(cg_backend *b, const cgroup_limits *lim, unsigned want, unsigned *ret_applied,
		     sbx_err **err)
{
	v1 *v = V1(b);
	int mem = v1_fd(v, CG_MEMORY), pids = v1_fd(v, CG_PIDS), cpu = v1_fd(v, CG_CPU);
	unsigned can = 0;
	if (has(mem, "memory.limit_in_bytes"))
		can |= CG_LIMIT_MEMORY;
	if (has(pids, "pids.max"))
		can |= CG_LIMIT_PIDS;
	if (has(cpu, "cpu.cfs_quota_us"))
		can |= CG_LIMIT_CPU;
	want &= can;
	char buf[64];
	int r;
	if (want & CG_LIMIT_MEMORY) {
		snprintf(buf, sizeof(buf), "%lld", (long long)lim->memory_bytes);
		/* memsw (memory + swap) must be >= the memory limit: set it after
		 * when lowering, before when raising (the first write then fails). */
		bool sw = has(mem, "memory.memsw.limit_in_bytes");
		if (v1_write(v, CG_MEMORY, "memory.limit_in_bytes", buf, NULL) < 0 &&
		    ((sw && (r = v1_write(v, CG_MEMORY, "memory.memsw.limit_in_bytes", buf, err)) < 0) ||
		     (r = v1_write(v, CG_MEMORY, "memory.limit_in_bytes", buf, err)) < 0))
			return r;
		if (sw && (r = v1_write(v, CG_MEMORY, "memory.memsw.limit_in_bytes", buf, err)) < 0)
			return r;
		(void)fs_write_stringat(mem, "memory.swappiness", "0");
	}
	if (want & CG_LIMIT_PIDS) {
		snprintf(buf, sizeof(buf), "%lld", (long long)lim->pids);
		if ((r = v1_write(v, CG_PIDS, "pids.max", buf, err)) < 0)
			return r;
	}
	if (want & CG_LIMIT_CPU) {
		long long quota = (long long)(lim->cpus * 100000 + 0.5);
		if (quota < 1000)
			quota = 1000; /* the kernel's minimum quota is 1 ms */
		snprintf(buf, sizeof(buf), "%lld", quota);
		if ((r = v1_write(v, CG_CPU, "cpu.cfs_period_us", "100000", err)) < 0 ||
		    (r = v1_write(v, CG_CPU, "cpu.cfs_quota_us", buf, err)) < 0)
			return r;
	}
	*ret_applied = want;
	return 0;
}

static int v1_attach(cg_backend *b, pid_t pid, sbx_err **err)
{
	v1 *v = V1(b);
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	for (size_t i = 0; i < v->n; i++) {
		if (v->h[i].fd < 0)
			continue;
		int r = fs_write_stringat(v->h[i].fd, "cgroup.procs", buf);
		if (r < 0)
			return err_errnum(err, r, "write '%s' to %s/%s/%s/cgroup.procs", buf, v->h[i].mount,
					  CG_PARENT, v->id);
	}
	return 0;
}

static int v1_self_fds(cg_backend *b, int *fds, size_t max)
{
	v1 *v = V1(b);
	size_t n = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (v->h[i].fd < 0)
			continue;
		int fd = n < max ? openat(v->h[i].fd, "tasks", O_WRONLY | O_CLOEXEC) : (errno = E2BIG, -1);
		if (fd < 0) {
			int e = errno;
			while (n > 0)
				safe_close(fds[--n]);
			return -e;
		}
		fds[n++] = fd;
	}
	return (int)n;
}

static void v1_stats(cg_backend *b, cgroup_stats *st)
{
	v1 *v = V1(b);
	int mem = v1_fd(v, CG_MEMORY), pids = v1_fd(v, CG_PIDS), acct = v1_fd(v, CG_CPUACCT);
	int64_t x;
	if (mem >= 0) {
		if (st->memory_current < 0 && cg_read_int64at(mem, "memory.usage_in_bytes", &x) == 0)
			st->memory_current = x;
		if (st->memory_peak < 0 && cg_read_int64at(mem, "memory.max_usage_in_bytes", &x) == 0)
			st->memory_peak = x;
		if (st->oom_kills < 0 && cg_read_keyat(mem, "memory.oom_control", "oom_kill", &x) == 0)
			st->oom_kills = x;
	}
	if (pids >= 0 && st->pids_current < 0 && cg_read_int64at(pids, "pids.current", &x) == 0)
		st->pids_current = x;
	if (acct >= 0 && st->cpu_usage_us < 0 && cg_read_int64at(acct, "cpuacct.usage", &x) == 0)
		st->cpu_usage_us = x / 1000; /* ns */
}

static int v1_set_freezer(v1 *v, bool frozen, sbx_err **err)
{
	int fd = v1_fd(v, CG_FREEZER);
	if (fd < 0)
		return -EOPNOTSUPP;
	const char *want = frozen ? "FROZEN" : "THAWED";
	int r = v1_write(v, CG_FREEZER, "freezer.state", want, err);
	if (r < 0)
		return r;
	for (unsigned waited = 0;; waited += 5) {
		_cleanup_free_ char *s = NULL;
		if (fs_read_fileat(fd, "freezer.state", 64, &s, NULL) < 0 ||
		    strncmp(s, want, strlen(want)) == 0)
			return 0;
		if (waited >= CG_FREEZE_WAIT_MS)
			return err_set(err, SBX_E_INTERNAL, ETIMEDOUT, "%s/%s/%s: not %s after %u ms",
				       v1_mount_of(v, CG_FREEZER), CG_PARENT, v->id, want, waited);
		if (frozen) /* rewriting FROZEN retries tasks that were busy */
			(void)fs_write_stringat(fd, "freezer.state", want);
		cg_sleep_ms(5);
	}
}

static int v1_freeze(cg_backend *b, bool frozen, sbx_err **err)
{
	return v1_set_freezer(V1(b), frozen, err);
}

/* SIGKILLs every pid listed in any hierarchy; returns how many were listed. */
static size_t v1_kill_listed(v1 *v)
{
	size_t total = 0;
	for (size_t i = 0; i < v->n; i++) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0;
		if (v->h[i].fd < 0 || cg_read_procs(v->h[i].fd, &pids, &n) < 0)
			continue;
		for (size_t j = 0; j < n; j++)
			(void)kill(pids[j], SIGKILL);
		total += n;
	}
	return total;
}

static int v1_kill(cg_backend *b, sbx_err **err)
{
	v1 *v = V1(b);
	/* Nothing listed: nothing to kill (the common case at teardown, after
	 * the pid namespace died with init). */
	if (v1_kill_listed(v) == 0)
		return 0;
	/* Frozen, the members cannot fork new ones between listing and killing.
	 * A failed freeze only makes the loop below take more rounds. */
	bool frozen = v1_set_freezer(v, true, NULL) == 0;
	size_t n = v1_kill_listed(v);
	if (frozen)
		(void)v1_set_freezer(v, false, NULL);
	for (unsigned waited = 0; n > 0; waited += 5) {
		if (waited >= CG_KILL_WAIT_MS)
			return err_set(err, SBX_E_INTERNAL, EBUSY,
				       "v1 group '%s': %zu processes still running %u ms after kill", v->id,
				       n, waited);
		cg_sleep_ms(5);
		n = v1_kill_listed(v);
	}
	return 0;
}

static int v1_destroy(cg_backend *b, sbx_err **err)
{
	v1 *v = V1(b);
	int ret = 0;
	for (size_t i = 0; i < v->n; i++) {
		if (v->h[i].parent_fd < 0)
			continue;
		int r = cg_rmdir(v->h[i].parent_fd, v->id);
		if (r < 0 && ret == 0)
			ret = err_errnum(err, r, "rmdir %s/%s/%s", v->h[i].mount, CG_PARENT, v->id);
	}
	return ret;
}

static int v1_v2_fd(cg_backend *b)
{
	return -1;
}

static int v1_list(const cg_mounts *m, char ***ids)
{
	for (int c = 0; c < CG_CTRL_MAX; c++) {
		if (!m->v1[c])
			continue;
		_cleanup_free_ char *parent = fs_path_join(m->v1[c], CG_PARENT);
		if (!parent)
			return -ENOMEM;
		int r = cg_list_children(parent, ids);
		if (r < 0)
			return r;
	}
	return 0;
}

const cg_ops cg_v1_ops = {
    .name = "v1",
    .create = v1_create,
    .open = v1_open,
    .limits = v1_limits,
    .attach = v1_attach,
    .self_fds = v1_self_fds,
    .stats = v1_stats,
    .kill = v1_kill,
    .freeze = v1_freeze,
    .destroy = v1_destroy,
    .v2_fd = v1_v2_fd,
    .list = v1_list,
    .free = v1_free,
};
