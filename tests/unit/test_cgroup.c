/* cgroup module: the pure mountinfo parser (no root), then the real thing
 * against this host's cgroupfs (root only). Every live test owns a fixture
 * whose cleanup kills its children and removes its groups, even when a
 * CHECK fails half-way. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cgroup-internal.h"
#include "unit.h"
#include "util/fs.h"

/* ---- pure ---- */

static const char mi_v2[] =
    "24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "28 24 0:24 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n"
    "30 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n";

static const char mi_v1[] =
    "25 24 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "26 25 0:24 / /sys/fs/cgroup/systemd rw,nosuid shared:10 - cgroup cgroup rw,xattr,name=systemd\n"
    "29 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:13 - cgroup cgroup rw,cpu,cpuacct\n"
    "30 25 0:28 / /sys/fs/cgroup/memory rw,nosuid shared:14 - cgroup cgroup rw,memory\n"
    "31 25 0:29 / /sys/fs/cgroup/pids rw,nosuid shared:15 - cgroup cgroup rw,pids\n"
    "32 25 0:30 / /sys/fs/cgroup/freezer rw,nosuid shared:16 - cgroup cgroup rw,freezer\n";

/* This host's layout: separate cpu and cpuacct, a controller-less unified tree. */
static const char mi_hybrid[] =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
    "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(mountinfo_v2)
{
	cg_mounts m;
	CHECK(cgroup_parse_mountinfo(mi_v2, &m) == 0);
	CHECK_STREQ(cgroup_mounts_mode(&m), "v2");
	CHECK_STREQ(m.v2, "/sys/fs/cgroup");
	CHECK_STREQ(m.v2_root, "/");
	for (int c = 0; c < CG_CTRL_MAX; c++)
		CHECK(m.v1[c] == NULL);
	cgroup_mounts_done(&m);
}

TEST(mountinfo_v1)
{
	cg_mounts m;
	CHECK(cgroup_parse_mountinfo(mi_v1, &m) == 0);
	CHECK_STREQ(cgroup_mounts_mode(&m), "v1");
	CHECK(m.v2 == NULL);
	CHECK_STREQ(m.v1[CG_MEMORY], "/sys/fs/cgroup/memory");
	CHECK_STREQ(m.v1[CG_CPU], "/sys/fs/cgroup/cpu,cpuacct");
	CHECK_STREQ(m.v1[CG_CPUACCT], "/sys/fs/cgroup/cpu,cpuacct");
	CHECK_STREQ(m.v1[CG_PIDS], "/sys/fs/cgroup/pids");
	CHECK_STREQ(m.v1[CG_FREEZER], "/sys/fs/cgroup/freezer");
	cgroup_mounts_done(&m);
}

TEST(mountinfo_hybrid)
{
	cg_mounts m;
	CHECK(cgroup_parse_mountinfo(mi_hybrid, &m) == 0);
	CHECK_STREQ(cgroup_mounts_mode(&m), "hybrid");
	CHECK_STREQ(m.v2, "/sys/fs/cgroup/unified");
	CHECK_STREQ(m.v1[CG_CPU], "/sys/fs/cgroup/cpu");
	CHECK_STREQ(m.v1[CG_CPUACCT], "/sys/fs/cgroup/cpuacct");
	CHECK_STREQ(m.v1[CG_MEMORY], "/sys/fs/cgroup/memory");
	cgroup_mounts_done(&m);
}

TEST(mountinfo_edge_cases)
{
	cg_mounts m;
	/* name=systemd alone is not a controller hierarchy. */
	CHECK(cgroup_parse_mountinfo("1 0 0:1 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n",
				     &m) == 0);
	CHECK_STREQ(cgroup_mounts_mode(&m), "none");
	cgroup_mounts_done(&m);
	/* Escaped mount points, a subtree root, garbage lines, a bind outside /sys/fs/cgroup first. */
	CHECK(cgroup_parse_mountinfo(
		  "garbage\n"
		  "1 0 0:1 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n"
		  "2 0 0:1 /docker/abc /sys/fs/cgroup rw shared:1 master:2 - cgroup2 cgroup2 rw\n"
		  "3 0 0:1 / /x rw - cgroup cgroup rw,devices\n",
		  &m) == 0);
	CHECK_STREQ(cgroup_mounts_mode(&m), "hybrid");
	CHECK_STREQ(m.v2, "/sys/fs/cgroup");
	CHECK_STREQ(m.v2_root, "/docker/abc");
	CHECK(m.v1[CG_MEMORY] == NULL);
	cgroup_mounts_done(&m);
	CHECK(cgroup_parse_mountinfo("1 0 0:1 / /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n", &m) == 0);
	CHECK_STREQ(m.v2, "/mnt/my cg");
	cgroup_mounts_done(&m);
	CHECK(cgroup_parse_mountinfo("", &m) == 0);
	CHECK_STREQ(cgroup_mounts_mode(&m), "none");
	cgroup_mounts_done(&m);
}

/* On a hybrid host the controller-less v2 group already gives cpu.stat,
 * cgroup.freeze and cgroup.kill: the v1 cpuacct and freezer hierarchies add
 * nothing but a migration and a rmdir each. Without v2 they are needed
 * (v1 kill freezes, stats read cpuacct). */
TEST(v1_controllers_needed)
{
	cg_mounts m;
	const unsigned limits = 1u << CG_MEMORY | 1u << CG_PIDS | 1u << CG_CPU;
	const unsigned all = limits | 1u << CG_CPUACCT | 1u << CG_FREEZER;
	CHECK(cgroup_parse_mountinfo(mi_hybrid, &m) == 0);
	CHECK(cgroup_v1_needed(&m, true) == limits);
	CHECK(cgroup_v1_needed(&m, false) == all); /* v2 not writable: v1 does it all */
	cgroup_mounts_done(&m);
	CHECK(cgroup_parse_mountinfo(mi_v1, &m) == 0);
	CHECK(cgroup_v1_needed(&m, false) == all);
	cgroup_mounts_done(&m);
	CHECK(cgroup_parse_mountinfo(mi_v2, &m) == 0);
	CHECK(cgroup_v1_needed(&m, true) == 0);
	cgroup_mounts_done(&m);
}

TEST(self_cgroup_paths)
{
	char *p = NULL;
	CHECK(cgroup_parse_self_v2("4:memory:/a\n0::/user.slice/x.scope\n", &p) == 0);
	CHECK_STREQ(p, "/user.slice/x.scope");
	free(p);
	CHECK(cgroup_parse_self_v2("4:memory:/a\n", &p) == -ENOENT);
	CHECK_STREQ(cgroup_path_below_root("/docker/abc/sub", "/docker/abc"), "sub");
	CHECK_STREQ(cgroup_path_below_root("/a/b", "/"), "a/b");
	CHECK_STREQ(cgroup_path_below_root("/", "/"), "");
	CHECK(cgroup_path_below_root("/docker/abcd", "/docker/abc") == NULL);
	CHECK(cgroup_path_below_root("/other", "/docker") == NULL);
}

TEST(host_mode)
{
	const char *m = cgroup_host_mode();
	CHECK(streq(m, "v2") || streq(m, "v1") || streq(m, "hybrid") || streq(m, "none"));
}

TEST(invalid_ids)
{
	sbx_cgroup *cg = NULL;
	sbx_err *e = NULL;
	cgroup_limits lim = {0};
	const char *bad[] = {"", ".", "..", "a/b", "../x", "a b", NULL};
	for (int i = 0; bad[i]; i++) {
		CHECK(cgroup_create(bad[i], &lim, &cg, NULL, &e) < 0);
		CHECK(sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
		sbx_err_free(e);
		e = NULL;
	}
}

/* ---- live (root) ---- */

#define MAX_KIDS 8

typedef struct fx {
	char id[64];
	cg_mounts m;
	sbx_cgroup *cg;
	pid_t kids[MAX_KIDS];
	int n_kids;
} fx;

/* Every directory the group may have; NULL-terminated, caller frees. */
/* The group directories in every hierarchy (joined_only: only those a
 * create joins, cgroup_v1_needed). */
static char **fx_dirs(fx *f, bool joined_only)
{
	unsigned needed = cgroup_v1_needed(&f->m, f->m.v2 != NULL);
	char **v = calloc(CG_CTRL_MAX + 2, sizeof(char *));
	size_t n = 0;
	if (!v)
		return NULL;
	if (f->m.v2 && asprintf(&v[n], "%s/sbx/%s", f->m.v2, f->id) >= 0)
		n++;
	for (int c = 0; c < CG_CTRL_MAX; c++) {
		if (!f->m.v1[c] || (joined_only && !(needed & (1u << c))))
			continue;
		bool dup = false;
		for (int d = 0; d < c; d++)
			dup |= f->m.v1[d] && streq(f->m.v1[d], f->m.v1[c]);
		if (!dup && asprintf(&v[n], "%s/sbx/%s", f->m.v1[c], f->id) >= 0)
			n++;
	}
	return v;
}

static void fx_done(fx *f)
{
	for (int i = 0; i < f->n_kids; i++)
		kill(f->kids[i], SIGKILL);
	if (f->cg) {
		sbx_err *e = NULL;
		if (cgroup_destroy(f->cg, &e) < 0)
			fprintf(stderr, "  cleanup: %s\n", sbx_err_message(e));
		sbx_err_free(e);
		cgroup_free(f->cg);
		f->cg = NULL;
	}
	for (int i = 0; i < f->n_kids; i++)
		waitpid(f->kids[i], NULL, 0);
	/* Belt and braces, should destroy itself have failed. */
	char **dirs = fx_dirs(f, false);
	for (char **d = dirs; d && *d; d++)
		rmdir(*d);
	strv_free(dirs);
	cgroup_mounts_done(&f->m);
}

/* Fills the fixture; returns the reason to skip, or NULL. */
static const char *fx_init(fx *f)
{
	*f = (fx){0};
	if (geteuid() != 0)
		return "needs root (creates cgroups under /sys/fs/cgroup)";
	char *text = NULL;
	if (fs_read_file("/proc/self/mountinfo", 1 << 24, &text, NULL) < 0)
		return "cannot read /proc/self/mountinfo";
	int r = cgroup_parse_mountinfo(text, &f->m);
	free(text);
	if (r < 0 || streq(cgroup_mounts_mode(&f->m), "none"))
		return "no cgroup filesystem mounted";
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(f->id, sizeof(f->id), "test-%d-%lx", (int)getpid(), (unsigned long)(ts.tv_nsec ^ ts.tv_sec));
	return NULL;
}

#define FX(f)                                                                                                \
	_cleanup_(fx_done) fx f;                                                                             \
	do {                                                                                                 \
		const char *_why = fx_init(&f);                                                              \
		if (_why)                                                                                    \
			SKIP_OK(_why);                                                                       \
	} while (0)

static const cgroup_limits std_limits = {.memory_bytes = 64LL << 20, .pids = 16, .cpus = 0.5};

static int fx_create(fx *f)
{
	sbx_err *e = NULL;
	char *missing = NULL;
	int r = cgroup_create(f->id, &std_limits, &f->cg, &missing, &e);
	if (r < 0)
		fprintf(stderr, "  cgroup_create: %s\n", sbx_err_message(e));
	else if (missing)
		fprintf(stderr, "  cgroup_create: limits not enforced: %s\n", missing);
	int ret = r < 0 ? r : missing ? -1 : 0;
	free(missing);
	sbx_err_free(e);
	return ret;
}

/* Forks a child that blocks on a pipe, then runs fn. Returns its pid; *go is
 * the write end: closing it releases the child. */
static pid_t fx_fork(fx *f, int (*fn)(void), int *go)
{
	int p[2];
	if (f->n_kids == MAX_KIDS || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(fn());
	}
	close(p[0]);
	f->kids[f->n_kids++] = pid;
	*go = p[1];
	return pid;
}

static int attach(fx *f, pid_t pid)
{
	sbx_err *e = NULL;
	int r = cgroup_attach(f->cg, pid, false, false, &e);
	if (r < 0)
		fprintf(stderr, "  cgroup_attach: %s\n", sbx_err_message(e));
	sbx_err_free(e);
	return r;
}

/* Waits for a kid (and forgets it); the wait status, or -1. */
static int reap(fx *f, pid_t pid)
{
	int st = -1;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	for (int i = 0; i < f->n_kids; i++)
		if (f->kids[i] == pid)
			f->kids[i] = f->kids[--f->n_kids];
	return st;
}

_noreturn_ static int do_sleep(void)
{
	for (;;)
		pause();
}

static char *read_at(const char *dir_mount, const char *id, const char *file)
{
	char *path = NULL, *s = NULL;
	if (asprintf(&path, "%s/sbx/%s/%s", dir_mount, id, file) < 0)
		return NULL;
	if (fs_read_file(path, 1 << 20, &s, NULL) < 0)
		s = NULL;
	free(path);
	if (s)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

static bool file_is(const char *mount, const char *id, const char *file, const char *want)
{
	char *s = read_at(mount, id, file);
	bool ok = s && streq(s, want);
	if (!ok)
		fprintf(stderr, "  %s/sbx/%s/%s: '%s', want '%s'\n", mount, id, file, s ? s : "(unreadable)",
			want);
	free(s);
	return ok;
}

static bool procs_has(const char *mount, const char *id, pid_t pid)
{
	char *s = NULL, *path = NULL;
	bool found = false;
	if (asprintf(&path, "%s/sbx/%s/cgroup.procs", mount, id) < 0)
		return false;
	if (fs_read_file(path, 1 << 20, &s, NULL) == 0) {
		for (char *t = strtok(s, "\n"); t; t = strtok(NULL, "\n"))
			found |= atoi(t) == pid;
	}
	free(s);
	free(path);
	return found;
}

static bool in_list(const char *id)
{
	char **ids = cgroup_list_ids();
	bool found = false;
	for (char **p = ids; p && *p; p++)
		found |= streq(*p, id);
	strv_free(ids);
	return found;
}

TEST(lifecycle_limits_attach_destroy)
{
	FX(f);
	CHECK(fx_create(&f) == 0);
	int go = -1;
	pid_t pid = fx_fork(&f, do_sleep, &go);
	CHECK(pid > 0);
	close(go);
	CHECK(attach(&f, pid) == 0);

	/* The limits, read back where the kernel keeps them. */
	if (f.m.v1[CG_MEMORY]) {
		CHECK(file_is(f.m.v1[CG_MEMORY], f.id, "memory.limit_in_bytes", "67108864"));
		char *sw = read_at(f.m.v1[CG_MEMORY], f.id, "memory.memsw.limit_in_bytes");
		bool ok = !sw || streq(sw, "67108864");
		free(sw);
		CHECK(ok);
	} else
		CHECK(file_is(f.m.v2, f.id, "memory.max", "67108864"));
	if (f.m.v1[CG_PIDS])
		CHECK(file_is(f.m.v1[CG_PIDS], f.id, "pids.max", "16"));
	else
		CHECK(file_is(f.m.v2, f.id, "pids.max", "16"));
	if (f.m.v1[CG_CPU]) {
		CHECK(file_is(f.m.v1[CG_CPU], f.id, "cpu.cfs_period_us", "100000"));
		CHECK(file_is(f.m.v1[CG_CPU], f.id, "cpu.cfs_quota_us", "50000"));
	} else
		CHECK(file_is(f.m.v2, f.id, "cpu.max", "50000 100000"));

	/* Membership everywhere it was created (hybrid_skips_cpuacct_freezer),
	 * including the controller-less v2 group of a hybrid host. */
	char **dirs = fx_dirs(&f, true);
	for (char **d = dirs; d && *d; d++) {
		struct stat st;
		bool ok = stat(*d, &st) == 0 && S_ISDIR(st.st_mode);
		if (!ok)
			fprintf(stderr, "  missing %s\n", *d);
		if (!ok) {
			strv_free(dirs);
			CHECK(ok);
		}
	}
	strv_free(dirs);
	if (f.m.v2) {
		CHECK(procs_has(f.m.v2, f.id, pid));
		CHECK(cgroup_v2_fd(f.cg) >= 0);
	}
	for (int c = 0; c < CG_CTRL_MAX; c++)
		if (f.m.v1[c] && (cgroup_v1_needed(&f.m, f.m.v2 != NULL) & (1u << c)))
			CHECK(procs_has(f.m.v1[c], f.id, pid));

	cgroup_stats st;
	CHECK(cgroup_stats_read(f.cg, &st) == 0);
	CHECK(st.pids_current >= 1);
	CHECK(st.memory_current >= 0);
	CHECK(st.oom_kills == 0);
	CHECK(st.cpu_usage_us >= 0);

	CHECK(in_list(f.id));

	/* A second create of the same id conflicts and leaves the first intact. */
	sbx_cgroup *cg2 = NULL;
	sbx_err *e = NULL;
	CHECK(cgroup_create(f.id, &std_limits, &cg2, NULL, &e) < 0);
	CHECK(sbx_err_code(e) == SBX_E_CONFLICT);
	sbx_err_free(e);
	e = NULL;
	CHECK(procs_has(f.m.v2 ? f.m.v2 : f.m.v1[CG_PIDS], f.id, pid));

	/* cgroup_open finds it; destroying through it kills the member and removes everything. */
	CHECK(cgroup_open(f.id, &cg2, &e) == 0);
	CHECK(cgroup_destroy(cg2, &e) == 0);
	CHECK(cgroup_destroy(cg2, &e) == 0); /* idempotent */
	cgroup_free(cg2);
	int ws = reap(&f, pid);
	CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	dirs = fx_dirs(&f, false);
	bool gone = true;
	for (char **d = dirs; d && *d; d++)
		if (access(*d, F_OK) == 0) {
			fprintf(stderr, "  still there: %s\n", *d);
			gone = false;
		}
	strv_free(dirs);
	CHECK(gone);
	CHECK(!in_list(f.id));
	CHECK(cgroup_open(f.id, &cg2, &e) < 0);
	CHECK(sbx_err_code(e) == SBX_E_NOT_FOUND);
	sbx_err_free(e);
}

/* A hybrid host's create joins v1 only where a limit lives (memory, pids,
 * cpu); cpu usage and freezing come from the v2 group. */
TEST(hybrid_skips_cpuacct_freezer)
{
	FX(f);
	if (!f.m.v2 || !f.m.v1[CG_FREEZER] || !f.m.v1[CG_CPUACCT] || !f.m.v1[CG_CPU] ||
	    streq(f.m.v1[CG_CPUACCT], f.m.v1[CG_CPU])) {
		SKIP_OK("not a hybrid host with separate cpuacct and freezer hierarchies");
	}
	CHECK(fx_create(&f) == 0);
	char p[4300];
	snprintf(p, sizeof(p), "%s/sbx/%s", f.m.v1[CG_FREEZER], f.id);
	CHECK(access(p, F_OK) < 0 && errno == ENOENT);
	snprintf(p, sizeof(p), "%s/sbx/%s", f.m.v1[CG_CPUACCT], f.id);
	CHECK(access(p, F_OK) < 0 && errno == ENOENT);
	snprintf(p, sizeof(p), "%s/sbx/%s", f.m.v1[CG_MEMORY], f.id);
	CHECK(access(p, F_OK) == 0);
	snprintf(p, sizeof(p), "%s/sbx/%s", f.m.v1[CG_PIDS], f.id);
	CHECK(access(p, F_OK) == 0);
	snprintf(p, sizeof(p), "%s/sbx/%s", f.m.v1[CG_CPU], f.id);
	CHECK(access(p, F_OK) == 0);
	int go = -1;
	pid_t pid = fx_fork(&f, do_sleep, &go);
	CHECK(pid > 0);
	close(go);
	CHECK(attach(&f, pid) == 0);
	cgroup_stats st;
	CHECK(cgroup_stats_read(f.cg, &st) == 0);
	CHECK(st.cpu_usage_us >= 0); /* from v2's cpu.stat */
	CHECK(cgroup_freeze(f.cg, true, NULL) == 0);
	CHECK(cgroup_freeze(f.cg, false, NULL) == 0);
	CHECK(cgroup_kill_all(f.cg, NULL) == 0);
	int ws = reap(&f, pid);
	CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
}

/* A process moves itself into the v1 groups through cgroup_self_fds (what
 * init does at setup step 1a), and cgroup_attach then leaves those groups
 * alone: after both, it is in every group a create joins. */
static int self_fds_n = -1;
static int self_fds[CGROUP_SELF_FDS_MAX];
static int do_self_move_then_sleep(void)
{
	if (cgroup_self_move(self_fds, (size_t)self_fds_n, NULL) < 0)
		_exit(3);
	for (int i = 0; i < self_fds_n; i++)
		close(self_fds[i]);
	for (;;)
		pause();
}

TEST(self_move_joins_v1_groups)
{
	FX(f);
	bool any_v1 = false;
	for (int c = 0; c < CG_CTRL_MAX; c++)
		any_v1 |= f.m.v1[c] != NULL;
	if (!any_v1)
		SKIP_OK("no cgroup v1 hierarchy: nothing moves itself (v2 uses CLONE_INTO_CGROUP)");
	CHECK(fx_create(&f) == 0);
	self_fds_n = cgroup_self_fds(f.cg, self_fds, CGROUP_SELF_FDS_MAX);
	CHECK(self_fds_n > 0);
	int go = -1;
	pid_t pid = fx_fork(&f, do_self_move_then_sleep, &go);
	CHECK(pid > 0);
	for (int i = 0; i < self_fds_n; i++)
		close(self_fds[i]);
	close(go); /* it moves itself now */
	/* Wait (bounded) until it is in the memory group: it moved itself. */
	const char *mem = f.m.v1[CG_MEMORY];
	for (int i = 0; mem && i < 2000 && !procs_has(mem, f.id, pid); i++)
		usleep(1000);
	CHECK(!mem || procs_has(mem, f.id, pid));
	CHECK(cgroup_attach(f.cg, pid, false, true, NULL) == 0);
	char **dirs = fx_dirs(&f, true);
	for (char **d = dirs; d && *d; d++) {
		const char *slash = strrchr(*d, '/');
		char *mount = strndup(*d, (size_t)(slash - *d) - strlen("/sbx"));
		bool in = mount && procs_has(mount, f.id, pid);
		if (!in)
			fprintf(stderr, "  pid %d not in %s\n", (int)pid, *d);
		CHECK(in);
		free(mount);
	}
	strv_free(dirs);
	CHECK(cgroup_kill_all(f.cg, NULL) == 0);
	int ws = reap(&f, pid);
	CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
}

TEST(open_unknown)
{
	FX(f);
	sbx_cgroup *cg = NULL;
	sbx_err *e = NULL;
	CHECK(cgroup_open(f.id, &cg, &e) < 0);
	CHECK(sbx_err_code(e) == SBX_E_NOT_FOUND);
	sbx_err_free(e);
}

static int do_oom(void)
{
	size_t n = 200u << 20;
	volatile char *p = malloc(n);
	if (!p)
		return 3;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	return 0;
}

TEST(oom_kill)
{
	FX(f);
	CHECK(fx_create(&f) == 0);
	cgroup_stats before, after;
	CHECK(cgroup_stats_read(f.cg, &before) == 0);
	CHECK(before.oom_kills >= 0);
	int go = -1;
	pid_t pid = fx_fork(&f, do_oom, &go);
	CHECK(pid > 0);
	int r = attach(&f, pid); /* before it allocates: it waits for `go` */
	close(go);
	CHECK(r == 0);
	int ws = reap(&f, pid);
	if (!(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL))
		fprintf(stderr, "  child status %#x\n", ws);
	CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	CHECK(cgroup_stats_read(f.cg, &after) == 0);
	CHECK(after.oom_kills > before.oom_kills);
	CHECK(after.memory_peak < 0 || after.memory_peak <= 64LL << 20);
}

static int do_fork_bomb(void)
{
	pid_t kids[32];
	int n = 0, err = 0;
	for (int i = 0; i < 32; i++) {
		pid_t k = fork();
		if (k == 0) {
			pause();
			_exit(0);
		}
		if (k < 0) {
			err = errno;
			break;
		}
		kids[n++] = k;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	return err == EAGAIN ? 0 : err ? 2 : 1;
}

TEST(pids_limit)
{
	FX(f);
	CHECK(fx_create(&f) == 0);
	int go = -1;
	pid_t pid = fx_fork(&f, do_fork_bomb, &go);
	CHECK(pid > 0);
	int r = attach(&f, pid);
	close(go);
	CHECK(r == 0);
	int ws = reap(&f, pid);
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		fprintf(stderr, "  child status %#x (exit 1: all 32 forks worked; 2: other errno)\n", ws);
	CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

static volatile uint64_t *spin_counter;
_noreturn_ static int do_spin(void)
{
	for (;;)
		(*spin_counter)++;
}

TEST(freeze_thaw)
{
	FX(f);
	CHECK(fx_create(&f) == 0);
	uint64_t *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(ctr != MAP_FAILED);
	spin_counter = ctr;
	int go = -1;
	pid_t pid = fx_fork(&f, do_spin, &go);
	int r = pid > 0 ? attach(&f, pid) : -1;
	if (go >= 0)
		close(go);
	if (pid <= 0 || r < 0)
		munmap(ctr, 4096);
	CHECK(pid > 0 && r == 0);
	sbx_err *e = NULL;
	usleep(20000);
	bool ok = cgroup_freeze(f.cg, true, &e) == 0;
	if (!ok)
		fprintf(stderr, "  freeze: %s\n", sbx_err_message(e));
	uint64_t a = *ctr;
	usleep(100000);
	uint64_t b = *ctr;
	bool stopped = a == b;
	ok = ok && cgroup_freeze(f.cg, false, &e) == 0;
	usleep(100000);
	uint64_t c = *ctr;
	munmap(ctr, 4096);
	if (e)
		fprintf(stderr, "  thaw: %s\n", sbx_err_message(e));
	sbx_err_free(e);
	CHECK(ok);
	CHECK(stopped);
	CHECK(c != b);
	/* Freeze, then kill while frozen: the group still empties. */
	CHECK(cgroup_freeze(f.cg, true, NULL) == 0);
	CHECK(cgroup_kill_all(f.cg, NULL) == 0);
	int ws = reap(&f, pid);
	CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	CHECK(cgroup_freeze(f.cg, false, NULL) == 0);
}

TEST(kill_all)
{
	FX(f);
	CHECK(fx_create(&f) == 0);
	pid_t pids[3];
	for (int i = 0; i < 3; i++) {
		int go = -1;
		pids[i] = fx_fork(&f, do_sleep, &go);
		CHECK(pids[i] > 0);
		close(go);
		CHECK(attach(&f, pids[i]) == 0);
	}
	sbx_err *e = NULL;
	int r = cgroup_kill_all(f.cg, &e);
	if (r < 0)
		fprintf(stderr, "  kill: %s\n", sbx_err_message(e));
	sbx_err_free(e);
	CHECK(r == 0);
	/* Listed nowhere any more, before we reap the zombies (pids.current still
	 * counts a zombie until it is reaped, so it is not the measure). */
	for (int i = 0; i < 3; i++) {
		if (f.m.v2)
			CHECK(!procs_has(f.m.v2, f.id, pids[i]));
		for (int c = 0; c < CG_CTRL_MAX; c++)
			if (f.m.v1[c])
				CHECK(!procs_has(f.m.v1[c], f.id, pids[i]));
	}
	for (int i = 0; i < 3; i++) {
		int ws = reap(&f, pids[i]);
		CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
	}
	cgroup_stats st;
	CHECK(cgroup_stats_read(f.cg, &st) == 0);
	CHECK(st.pids_current == 0);
	CHECK(cgroup_kill_all(f.cg, NULL) == 0); /* empty group: no-op */
}

TEST(destroy_half_created)
{
	FX(f);
	CHECK(fx_create(&f) == 0);
	char **dirs = fx_dirs(&f, false);
	CHECK(dirs && dirs[0]);
	bool only_one = !dirs[1];
	/* Remove one of the directories behind its back, as a crash mid-create would leave it. */
	bool removed = rmdir(dirs[0]) == 0;
	strv_free(dirs);
	CHECK(removed);
	sbx_cgroup *cg = NULL;
	sbx_err *e = NULL;
	if (only_one) {
		CHECK(cgroup_open(f.id, &cg, &e) < 0);
		sbx_err_free(e);
		return;
	}
	CHECK(cgroup_open(f.id, &cg, &e) == 0);
	int r = cgroup_destroy(cg, &e);
	if (r < 0)
		fprintf(stderr, "  destroy: %s\n", sbx_err_message(e));
	sbx_err_free(e);
	cgroup_free(cg);
	CHECK(r == 0);
	CHECK(!in_list(f.id));
	/* The fixture's own handle still destroys cleanly (idempotent). */
	CHECK(cgroup_destroy(f.cg, NULL) == 0);
}

TEST(failed_limit_undoes)
{
	FX(f);
	/* A cpu quota the kernel refuses (beyond its maximum bandwidth). */
	cgroup_limits lim = {.memory_bytes = 64LL << 20, .pids = 16, .cpus = 1e12};
	sbx_err *e = NULL;
	int r = cgroup_create(f.id, &lim, &f.cg, NULL, &e);
	if (r == 0)
		SKIP_OK("kernel accepted a huge cpu quota");
	fprintf(stderr, "  (expected) %s\n", sbx_err_message(e));
	sbx_err_free(e);
	char **dirs = fx_dirs(&f, false);
	bool gone = true;
	for (char **d = dirs; d && *d; d++)
		gone &= access(*d, F_OK) != 0;
	strv_free(dirs);
	CHECK(gone);
	CHECK(!in_list(f.id));
}

/* The v1 backend by itself (as on a pure v1 host): its freezer and its
 * freeze-kill-thaw kill, which on a hybrid host only ever see empty groups. */
TEST(v1_backend_alone)
{
	FX(f);
	if (!f.m.v1[CG_FREEZER] || !f.m.v1[CG_PIDS])
		SKIP_OK("no v1 freezer and pids hierarchies on this host");
	cg_mounts v1only = f.m;
	v1only.v2 = NULL;
	cg_backend *b = NULL;
	sbx_err *e = NULL;
	CHECK(cg_v1_ops.create(&v1only, f.id, &b, &e) == 0);
	uint64_t *ctr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	spin_counter = ctr;
	int go = -1;
	pid_t pid = ctr != MAP_FAILED ? fx_fork(&f, do_spin, &go) : -1;
	bool ok = pid > 0 && b->ops->attach(b, pid, &e) == 0;
	if (go >= 0)
		close(go);
	usleep(20000);
	ok = ok && b->ops->freeze(b, true, &e) == 0 &&
	     file_is(f.m.v1[CG_FREEZER], f.id, "freezer.state", "FROZEN");
	uint64_t x = ok ? *ctr : 0;
	usleep(50000);
	bool stopped = ok && *ctr == x;
	ok = ok && b->ops->freeze(b, false, &e) == 0 &&
	     file_is(f.m.v1[CG_FREEZER], f.id, "freezer.state", "THAWED");
	usleep(50000);
	bool resumed = ok && *ctr != x;
	/* Kill through the v1 path alone. */
	bool killed = ok && b->ops->kill(b, &e) == 0;
	int ws = pid > 0 ? reap(&f, pid) : -1;
	killed = killed && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL;
	bool destroyed = b->ops->destroy(b, &e) == 0;
	b->ops->free(b);
	if (ctr != MAP_FAILED)
		munmap(ctr, 4096);
	if (e)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	sbx_err_free(e);
	CHECK(ok);
	CHECK(stopped);
	CHECK(resumed);
	CHECK(killed);
	CHECK(destroyed);
	CHECK(access(f.m.v1[CG_FREEZER], F_OK) == 0 && !in_list(f.id));
}

/* The v2 backend by itself: what it can enforce matches the controllers the
 * unified tree offers (none on a hybrid host), and cgroup.kill works. */
TEST(v2_backend_alone)
{
	FX(f);
	if (!f.m.v2)
		SKIP_OK("no cgroup2 mount on this host");
	cg_backend *b = NULL;
	sbx_err *e = NULL;
	CHECK(cg_v2_ops.create(&f.m, f.id, &b, &e) == 0);
	unsigned applied = 99;
	bool ok =
	    b->ops->limits(b, &std_limits, CG_LIMIT_MEMORY | CG_LIMIT_PIDS | CG_LIMIT_CPU, &applied, &e) == 0;
	bool hybrid = streq(cgroup_mounts_mode(&f.m), "hybrid");
	bool consistent = hybrid ? applied == 0 : applied != 99;
	int go = -1;
	pid_t pid = fx_fork(&f, do_sleep, &go);
	if (go >= 0)
		close(go);
	ok = ok && pid > 0 && b->ops->attach(b, pid, &e) == 0 && b->ops->v2_fd(b) >= 0;
	ok = ok && b->ops->kill(b, &e) == 0;
	int ws = pid > 0 ? reap(&f, pid) : -1;
	bool killed = WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL;
	bool destroyed = b->ops->destroy(b, &e) == 0;
	b->ops->free(b);
	if (e)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	sbx_err_free(e);
	CHECK(ok);
	CHECK(consistent);
	CHECK(killed);
	CHECK(destroyed);
}
