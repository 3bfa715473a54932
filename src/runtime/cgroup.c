/* Per-environment cgroups: host detection, composition of the v2 and v1
 * backends (cgroup-internal.h), and helpers they share.
 *
 * Backends are kept in the order v2, v1. On a pure v2 host only v2 exists;
 * on a v1 host only v1; on a hybrid host v1 enforces the limits while the
 * controller-less v2 group gives membership, cgroup.kill, the freezer and a
 * CLONE_INTO_CGROUP fd. */
#include "runtime/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cgroup-internal.h"
#include "util/fs.h"
#include "util/macro.h"

const char *const cg_ctrl_names[CG_CTRL_MAX] = {
    [CG_MEMORY] = "memory",   [CG_PIDS] = "pids",	[CG_CPU] = "cpu",
    [CG_CPUACCT] = "cpuacct", [CG_FREEZER] = "freezer",
};

/* Every v1 controller the kernel has had; a mount carrying one of them makes the host v1 or hybrid. */
static const char *const v1_known[] = {
    "cpu",   "cpuacct",	   "cpuset",   "memory",  "devices", "freezer", "net_cls",
    "blkio", "perf_event", "net_prio", "hugetlb", "pids",    "rdma",	"misc",
};

#define MAX_BACKENDS 2

struct sbx_cgroup {
	char *id;
	cg_backend *b[MAX_BACKENDS];
	size_t n;
};

/* ---- shared helpers ---- */

bool cg_errno_is_access(int errnum)
{
	errnum = errnum < 0 ? -errnum : errnum;
	return errnum == EACCES || errnum == EPERM || errnum == EROFS;
}

int cg_open_dir(int dfd, const char *path)
{
	int fd = RETRY_EINTR(openat(dfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
	return fd < 0 ? -errno : fd;
}

int cg_mkdir_open(int dfd, const char *name, bool *ret_created)
{
	bool created = false;
	if (mkdirat(dfd, name, 0755) == 0)
		created = true;
	else if (errno != EEXIST)
		return -errno;
	int fd = cg_open_dir(dfd, name);
	if (fd < 0) {
		if (created)
			(void)unlinkat(dfd, name, AT_REMOVEDIR);
		return fd;
	}
	*ret_created = created;
	return fd;
}

int cg_read_int64at(int dfd, const char *file, int64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = fs_read_fileat(dfd, file, 4096, &s, NULL);
	if (r < 0)
		return r;
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	*ret = v;
	return 0;
}

int cg_read_keyat(int dfd, const char *file, const char *key, int64_t *ret)
{
	_cleanup_free_ char *s = NULL;
	int r = fs_read_fileat(dfd, file, 64 * 1024, &s, NULL);
	if (r < 0)
		return r;
	size_t kl = strlen(key);
	for (char *line = s; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
			char *end = NULL;
			errno = 0;
			long long v = strtoll(line + kl + 1, &end, 10);
			if (errno || end == line + kl + 1)
				return -EINVAL;
			*ret = v;
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

bool cg_list_has(int dfd, const char *file, const char *word)
{
	_cleanup_free_ char *s = NULL;
	if (fs_read_fileat(dfd, file, 4096, &s, NULL) < 0)
		return false;
	char *save = NULL;
	for (char *t = strtok_r(s, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save))
		if (streq(t, word))
			return true;
	return false;
}

int cg_read_procs(int dfd, pid_t **ret, size_t *ret_n)
{
	_cleanup_free_ char *s = NULL;
	int r = fs_read_fileat(dfd, "cgroup.procs", 16 * 1024 * 1024, &s, NULL);
	if (r < 0)
		return r;
	size_t n = 0, cap = 0;
	_cleanup_free_ pid_t *v = NULL;
	char *save = NULL;
	for (char *t = strtok_r(s, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		long p = strtol(t, NULL, 10);
		if (p <= 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			pid_t *nv = realloc(v, cap * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			v = nv;
		}
		v[n++] = (pid_t)p;
	}
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

void cg_sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int cg_rmdir(int dfd, const char *name)
{
	/* A group whose last task just died may still be busy for a moment (the
	 * css is released asynchronously); retry briefly. */
	for (unsigned waited = 0;; waited += 10) {
		if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY || waited >= CG_RMDIR_WAIT_MS)
			return -errno;
		cg_sleep_ms(10);
	}
}

static int strv_add_unique(char ***ids, const char *s)
{
	size_t n = 0;
	for (char **p = *ids; p && *p; p++, n++)
		if (streq(*p, s))
			return 0;
	char **nv = realloc(*ids, (n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*ids = nv;
	if (!(nv[n] = strdup(s))) {
		nv[n] = NULL;
		return -ENOMEM;
	}
	nv[n + 1] = NULL;
	return 0;
}

int cg_list_children(const char *dir, char ***ids)
{
	int fd = cg_open_dir(AT_FDCWD, dir);
	if (fd < 0)
		return 0; /* no sbx/ parent (or not readable): no groups there */
	DIR *d = fdopendir(fd);
	if (!d) {
		safe_close(fd);
		return 0;
	}
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if ((r = strv_add_unique(ids, de->d_name)) < 0)
			break;
	}
	closedir(d);
	return r;
}

/* ---- mountinfo ---- */

/* Unescapes mountinfo's octal escapes (\040 for space, ...) in place. */
static void unescape(char *s)
{
	char *w = s;
	for (char *p = s; *p;) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
		    p[3] <= '7') {
			*w++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
			p += 4;
		} else
			*w++ = *p++;
	}
	*w = '\0';
}

static bool under_sys_fs_cgroup(const char *p)
{
	return p && startswith(p, "/sys/fs/cgroup");
}

/* Records mount point/root in *slot unless a better one is there already. */
static int take_mount(char **slot, char **slot_root, const char *point, const char *root)
{
	if (*slot && (under_sys_fs_cgroup(*slot) || !under_sys_fs_cgroup(point)))
		return 0;
	char *p = strdup(point), *r = strdup(root);
	if (!p || !r) {
		free(p);
		free(r);
		return -ENOMEM;
	}
	free(*slot);
	free(*slot_root);
	*slot = p;
	*slot_root = r;
	return 0;
}

static int parse_mountinfo_line(char *line, cg_mounts *m)
{
	/* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
	char *f[6] = {NULL};
	size_t nf = 0;
	char *save = NULL, *t;
	for (t = strtok_r(line, " ", &save); t && nf < 6; t = strtok_r(NULL, " ", &save))
		f[nf++] = t;
	if (nf < 6)
		return 0;
	while (t && !streq(t, "-"))
		t = strtok_r(NULL, " ", &save);
	if (!t)
		return 0;
	char *fstype = strtok_r(NULL, " ", &save);
	char *source = strtok_r(NULL, " ", &save);
	char *superopts = source ? strtok_r(NULL, " ", &save) : NULL;
	if (!fstype)
		return 0;
	char *root = f[3], *point = f[4];
	unescape(root);
	unescape(point);

	if (streq(fstype, "cgroup2"))
		return take_mount(&m->v2, &m->v2_root, point, root);
	if (!streq(fstype, "cgroup") || !superopts)
		return 0;
	char *save2 = NULL;
	for (char *o = strtok_r(superopts, ",", &save2); o; o = strtok_r(NULL, ",", &save2)) {
		for (size_t i = 0; i < ARRAY_SIZE(v1_known); i++)
			if (streq(o, v1_known[i]))
				m->v1_any = true;
		for (int c = 0; c < CG_CTRL_MAX; c++)
			if (streq(o, cg_ctrl_names[c])) {
				int r = take_mount(&m->v1[c], &m->v1_root[c], point, root);
				if (r < 0)
					return r;
			}
	}
	return 0;
}

int cgroup_parse_mountinfo(const char *text, cg_mounts *ret)
{
	*ret = (cg_mounts){0};
	_cleanup_free_ char *copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int r = parse_mountinfo_line(line, ret);
		if (r < 0) {
			cgroup_mounts_done(ret);
			return r;
		}
	}
	return 0;
}

void cgroup_mounts_done(cg_mounts *m)
{
	free(m->v2);
	free(m->v2_root);
	for (int c = 0; c < CG_CTRL_MAX; c++) {
		free(m->v1[c]);
		free(m->v1_root[c]);
	}
	*m = (cg_mounts){0};
}

const char *cgroup_mounts_mode(const cg_mounts *m)
{
	if (m->v2 && m->v1_any)
		return "hybrid";
	if (m->v2)
		return "v2";
	if (m->v1_any)
		return "v1";
	return "none";
}

int cgroup_parse_self_v2(const char *text, char **ret)
{
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len >= 3 && strncmp(line, "0::", 3) == 0) {
			char *p = strndup(line + 3, len - 3);
			if (!p)
				return -ENOMEM;
			*ret = p;
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

const char *cgroup_path_below_root(const char *path, const char *root)
{
	size_t rl = strlen(root);
	while (rl > 0 && root[rl - 1] == '/')
		rl--;
	if (strncmp(path, root, rl) != 0 || (path[rl] != '\0' && path[rl] != '/'))
		return NULL;
	path += rl;
	while (*path == '/')
		path++;
	return path;
}

static int read_mounts(cg_mounts *ret)
{
	_cleanup_free_ char *text = NULL;
	int r = fs_read_file("/proc/self/mountinfo", 16 * 1024 * 1024, &text, NULL);
	if (r < 0)
		return r;
	return cgroup_parse_mountinfo(text, ret);
}

/* Beside a v2 group, v1 carries only the limits (memory, pids, cpu: the
 * agent phase may add a cpu limit later): cpu usage comes from v2's cpu.stat,
 * freezing from cgroup.freeze and killing from cgroup.kill, so the cpuacct
 * and freezer hierarchies would only cost a migration and a rmdir each. A
 * hierarchy co-mounted with a limit controller (cpu,cpuacct) is joined
 * through that one anyway. */
unsigned cgroup_v1_needed(const cg_mounts *m, bool have_v2)
{
	unsigned set = 0;
	for (int c = 0; c < CG_CTRL_MAX; c++)
		if (m->v1[c] && (!have_v2 || (c != CG_CPUACCT && c != CG_FREEZER)))
			set |= 1u << c;
	return set;
}

const char *cgroup_host_mode(void)
{
	cg_mounts m;
	if (read_mounts(&m) < 0)
		return "none";
	const char *mode = cgroup_mounts_mode(&m);
	cgroup_mounts_done(&m);
	return mode;
}

/* ---- composition ---- */

static const cg_ops *const all_ops[MAX_BACKENDS] = {&cg_v2_ops, &cg_v1_ops};

static bool valid_id(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 128 || streq(id, ".") || streq(id, ".."))
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

void cgroup_free(sbx_cgroup *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->n; i++)
		cg->b[i]->ops->free(cg->b[i]);
	free(cg->id);
	free(cg);
}
static inline void cgroup_freep(sbx_cgroup **p)
{
	cgroup_free(*p);
}

static sbx_cgroup *cg_new(const char *id)
{
	sbx_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return NULL;
	if (!(cg->id = strdup(id))) {
		free(cg);
		return NULL;
	}
	return cg;
}

static unsigned wanted_limits(const cgroup_limits *lim)
{
	unsigned w = 0;
	if (!lim)
		return 0;
	if (lim->memory_bytes > 0)
		w |= CG_LIMIT_MEMORY;
	if (lim->pids > 0)
		w |= CG_LIMIT_PIDS;
	if (lim->cpus > 0)
		w |= CG_LIMIT_CPU;
	return w;
}

/* "memory,pids" for a set of CG_LIMIT_* bits; NULL for none or ENOMEM. */
static char *limits_string(unsigned set)
{
	char buf[64] = "";
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {{CG_LIMIT_MEMORY, "memory"}, {CG_LIMIT_PIDS, "pids"}, {CG_LIMIT_CPU, "cpu"}};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (set & names[i].bit) {
			if (buf[0])
				strcat(buf, ",");
			strcat(buf, names[i].name);
		}
	return buf[0] ? strdup(buf) : NULL;
}

/* Removes the groups made so far; for unwinding a failed create. */
static void undo_create(sbx_cgroup *cg)
{
	for (size_t i = 0; i < cg->n; i++) {
		(void)cg->b[i]->ops->kill(cg->b[i], NULL);
		(void)cg->b[i]->ops->destroy(cg->b[i], NULL);
	}
}

int cgroup_create(const char *id, const cgroup_limits *lim, sbx_cgroup **ret, char **ret_missing,
		  sbx_err **err)
{
	if (!valid_id(id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "cgroup: invalid id '%s'", id ? id : "");
	_cleanup_(cgroup_mounts_done) cg_mounts m = {0};
	int r = read_mounts(&m);
	if (r < 0)
		return err_errnum(err, r, "cgroup '%s': read /proc/self/mountinfo", id);
	_cleanup_(cgroup_freep) sbx_cgroup *cg = cg_new(id);
	if (!cg)
		return err_errnum(err, ENOMEM, "cgroup '%s'", id);

	/* Reasons why hierarchies could not be written, for the message when none can. */
	char denied[512] = "";
	int denied_errno = 0;
	for (size_t i = 0; i < ARRAY_SIZE(all_ops); i++) {
		cg_backend *b = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		/* v1 after v2: only the controllers still needed (borrowed
		 * strings; v1 copies what it keeps). */
		cg_mounts use = m;
		if (all_ops[i] == &cg_v1_ops) {
			unsigned need = cgroup_v1_needed(&m, cgroup_v2_fd(cg) >= 0);
			for (int c = 0; c < CG_CTRL_MAX; c++)
				if (!(need & (1u << c)))
					use.v1[c] = NULL;
		}
		r = all_ops[i]->create(&use, id, &b, &e);
		if (r >= 0) {
			cg->b[cg->n++] = b;
			continue;
		}
		if (r == -ENOENT && !e)
			continue; /* no hierarchy of this kind */
		if (r == -EEXIST) {
			undo_create(cg);
			return err_set(err, SBX_E_CONFLICT, EEXIST, "cgroup '%s': already exists (%s)", id,
				       all_ops[i]->name);
		}
		if (cg_errno_is_access(r)) {
			size_t l = strlen(denied);
			snprintf(denied + l, sizeof(denied) - l, "%s%s", l ? "; " : "", sbx_err_message(e));
			denied_errno = -r;
			continue;
		}
		undo_create(cg);
		if (err && !*err)
			*err = TAKE_PTR(e);
		return err_wrap(err, "cgroup '%s'", id);
	}
	if (cg->n == 0) {
		if (denied[0])
			return err_set(
			    err, SBX_E_UNAVAILABLE, denied_errno,
			    "cgroup '%s': cgroup limits cannot be enforced: no cgroup hierarchy is writable "
			    "by this user (%s); run as root or inside a delegated cgroup v2 subtree",
			    id, denied);
		return err_set(
		    err, SBX_E_UNAVAILABLE, ENOENT,
		    "cgroup '%s': cgroup limits cannot be enforced: no cgroup filesystem is mounted", id);
	}

	unsigned remaining = wanted_limits(lim);
	for (size_t i = 0; i < cg->n && remaining; i++) {
		unsigned applied = 0;
		r = cg->b[i]->ops->limits(cg->b[i], lim, remaining, &applied, err);
		if (r < 0) {
			undo_create(cg);
			return err_wrap(err, "cgroup '%s': set limits", id);
		}
		remaining &= ~applied;
	}
	_cleanup_free_ char *missing = limits_string(remaining);
	if (remaining && !missing) {
		undo_create(cg);
		return err_errnum(err, ENOMEM, "cgroup '%s'", id);
	}
	if (remaining && lim->require) {
		undo_create(cg);
		return err_set(
		    err, SBX_E_UNAVAILABLE, EOPNOTSUPP,
		    "cgroup '%s': cgroup limits cannot be enforced: no writable hierarchy has the %s "
		    "controller(s)%s%s",
		    id, missing, denied[0] ? "; " : "", denied);
	}
	if (ret_missing)
		*ret_missing = TAKE_PTR(missing);
	*ret = TAKE_PTR(cg);
	return 0;
}

int cgroup_set_limits(sbx_cgroup *cg, const cgroup_limits *lim, sbx_err **err)
{
	unsigned remaining = wanted_limits(lim);
	for (size_t i = 0; cg && i < cg->n && remaining; i++) {
		unsigned applied = 0;
		if (cg->b[i]->ops->limits(cg->b[i], lim, remaining, &applied, err) < 0)
			return err_wrap(err, "cgroup '%s': set limits", cg->id);
		remaining &= ~applied;
	}
	return 0;
}

int cgroup_open(const char *id, sbx_cgroup **ret, sbx_err **err)
{
	if (!valid_id(id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "cgroup: invalid id '%s'", id ? id : "");
	_cleanup_(cgroup_mounts_done) cg_mounts m = {0};
	int r = read_mounts(&m);
	if (r < 0)
		return err_errnum(err, r, "cgroup '%s': read /proc/self/mountinfo", id);
	_cleanup_(cgroup_freep) sbx_cgroup *cg = cg_new(id);
	if (!cg)
		return err_errnum(err, ENOMEM, "cgroup '%s'", id);
	for (size_t i = 0; i < ARRAY_SIZE(all_ops); i++) {
		cg_backend *b = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		r = all_ops[i]->open(&m, id, &b, &e);
		if (r >= 0)
			cg->b[cg->n++] = b;
		else if (r != -ENOENT) {
			if (err && !*err)
				*err = TAKE_PTR(e);
			return err_wrap(err, "cgroup '%s'", id);
		}
	}
	if (cg->n == 0)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "cgroup '%s': not found", id);
	*ret = TAKE_PTR(cg);
	return 0;
}

int cgroup_attach(sbx_cgroup *cg, pid_t pid, bool in_v2, bool self_moved, sbx_err **err)
{
	for (size_t i = 0; i < cg->n; i++) {
		if (in_v2 && cg->b[i]->ops->v2_fd(cg->b[i]) >= 0)
			continue;
		if (self_moved && cg->b[i]->ops->self_fds)
			continue;
		int r = cg->b[i]->ops->attach(cg->b[i], pid, err);
		if (r < 0)
			return err_wrap(err, "cgroup '%s': attach %d", cg->id, (int)pid);
	}
	return 0;
}

int cgroup_self_fds(sbx_cgroup *cg, int *fds, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < cg->n; i++) {
		if (!cg->b[i]->ops->self_fds)
			continue;
		int r = cg->b[i]->ops->self_fds(cg->b[i], fds + n, max - n);
		if (r < 0) {
			while (n > 0)
				safe_close(fds[--n]);
			return r;
		}
		n += (size_t)r;
	}
	return (int)n;
}

int cgroup_self_move(const int *fds, size_t n, sbx_err **err)
{
	for (size_t i = 0; i < n; i++)
		if (write(fds[i], "0", 1) != 1)
			return err_errno(err, "move into the environment's cgroup");
	return 0;
}

int cgroup_v2_fd(sbx_cgroup *cg)
{
	for (size_t i = 0; cg && i < cg->n; i++) {
		int fd = cg->b[i]->ops->v2_fd(cg->b[i]);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

int cgroup_stats_read(sbx_cgroup *cg, cgroup_stats *ret)
{
	cgroup_stats st = {-1, -1, -1, -1, -1};
	for (size_t i = 0; i < cg->n; i++)
		cg->b[i]->ops->stats(cg->b[i], &st);
	*ret = st;
	return 0;
}

int cgroup_kill_all(sbx_cgroup *cg, sbx_err **err)
{
	/* v2 first: cgroup.kill is atomic against forks; v1 then finds its groups empty. */
	int ret = 0;
	for (size_t i = 0; i < cg->n; i++) {
		int r = cg->b[i]->ops->kill(cg->b[i], err);
		if (r < 0 && ret == 0)
			ret = err_wrap(err, "cgroup '%s': kill", cg->id);
	}
	return ret;
}

int cgroup_destroy(sbx_cgroup *cg, sbx_err **err)
{
	int ret = cgroup_kill_all(cg, err);
	for (size_t i = 0; i < cg->n; i++) {
		int r = cg->b[i]->ops->destroy(cg->b[i], err);
		if (r < 0 && ret == 0)
			ret = err_wrap(err, "cgroup '%s': remove", cg->id);
	}
	return ret;
}

int cgroup_freeze(sbx_cgroup *cg, bool frozen, sbx_err **err)
{
	/* Freezing uses one freezer only (v2's where there is one): a task held by
	 * the v1 freezer never reaches v2's freeze trap, so stacking them would make
	 * the v2 wait time out. Thawing asks every backend, which is harmless. */
	if (!frozen) {
		int ret = 0;
		for (size_t i = 0; i < cg->n; i++) {
			int r = cg->b[i]->ops->freeze(cg->b[i], false, err);
			if (r < 0 && r != -EOPNOTSUPP && ret == 0)
				ret = err_wrap(err, "cgroup '%s': thaw", cg->id);
		}
		return ret;
	}
	for (size_t i = 0; i < cg->n; i++) {
		int r = cg->b[i]->ops->freeze(cg->b[i], true, err);
		if (r == -EOPNOTSUPP)
			continue;
		if (r < 0) {
			(void)cg->b[i]->ops->freeze(cg->b[i], false, NULL);
			return err_wrap(err, "cgroup '%s': freeze", cg->id);
		}
		return 0;
	}
	return err_set(err, SBX_E_UNAVAILABLE, EOPNOTSUPP, "cgroup '%s': freeze: no freezer available",
		       cg->id);
}

char **cgroup_list_ids(void)
{
	char **ids = calloc(1, sizeof(char *));
	if (!ids)
		return NULL;
	cg_mounts m;
	if (read_mounts(&m) < 0)
		return ids;
	for (size_t i = 0; i < ARRAY_SIZE(all_ops); i++)
		if (all_ops[i]->list(&m, &ids) < 0) {
			strv_free(ids);
			ids = NULL;
			break;
		}
	cgroup_mounts_done(&m);
	return ids;
}
