/* Reclaim: the trash and its one reclaimer per store (reclaim.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/ctx.h"
#include "api/reclaim.h"
#include "runtime/cgroup.h"
#include "runtime/runtime.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/syscalls.h"

#define HOLD_TIMEOUT_MS 30000

void reclaim_limits_from_env(reclaim_limits *l)
{
	*l = (reclaim_limits){.sync = false,
			      .max_entries = RECLAIM_MAX_DEFAULT,
			      .min_free = -1,
			      .linger_ms = RECLAIM_LINGER_DEFAULT_MS};
	const char *v = getenv("SBX_RECLAIM_SYNC");
	l->sync = v && streq(v, "1");
	v = getenv("SBX_RECLAIM_MAX");
	if (v && *v) {
		char *end;
		long long n = strtoll(v, &end, 10);
		if (!*end && n >= 0)
			l->max_entries = n;
	}
	v = getenv("SBX_RECLAIM_MIN_FREE");
	int64_t n;
	if (v && *v && sbx_parse_size(v, &n, NULL) == 0 && n >= 0)
		l->min_free = n;
	v = getenv("SBX_RECLAIM_LINGER_MS");
	if (v && *v) {
		char *end;
		long long ms = strtoll(v, &end, 10);
		if (!*end && ms >= 0)
			l->linger_ms = ms > RECLAIM_LIFETIME_MS ? RECLAIM_LIFETIME_MS : ms;
	}
}

bool reclaim_inline(const reclaim_limits *l, size_t entries, uint64_t avail_bytes, uint64_t total_bytes)
{
	if (l->sync || entries > (uint64_t)l->max_entries)
		return true;
	uint64_t floor = l->min_free >= 0 ? (uint64_t)l->min_free : total_bytes / 20;
	if (l->min_free < 0 && floor > (uint64_t)RECLAIM_MIN_FREE_CAP)
		floor = RECLAIM_MIN_FREE_CAP;
	if (total_bytes == 0 && avail_bytes == 0)
		return false; /* unknown */
	return avail_bytes < floor;
}

reclaim_event reclaim_linger_event(uint32_t mask, const char *name)
{
	if (mask & IN_Q_OVERFLOW)
		return RECLAIM_EV_WORK; /* events lost: look */
	if (mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT))
		return RECLAIM_EV_STOP;
	if (!name || !*name)
		return mask & IN_ATTRIB ? RECLAIM_EV_STOP : RECLAIM_EV_IGNORE;
	if ((mask & (IN_MOVED_TO | IN_CREATE)) && startswith(name, RECLAIM_PREFIX))
		return RECLAIM_EV_WORK;
	return RECLAIM_EV_IGNORE;
}

int reclaim_trash_name(const char *tag, uint32_t rnd, char *buf, size_t n)
{
	if (!tag || !*tag || strchr(tag, '/'))
		return -EINVAL;
	int w = snprintf(buf, n, RECLAIM_PREFIX "%s-%08x", tag, rnd);
	return w < 0 || (size_t)w >= n ? -EINVAL : 0;
}

/* ---- the trash -------------------------------------------------------- */

static bool in_strv(char **v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

static DIR *envs_opendir(int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d)
		safe_close(fd);
	return d;
}

/* The trash entries of the envs directory dfd, but those in skip; NULL when
 * there is none (or the directory cannot be read). */
static char **trash_scan(int dfd, char **skip)
{
	DIR *d = envs_opendir(dfd);
	char **v = NULL;
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (startswith(de->d_name, RECLAIM_PREFIX) && !in_strv(skip, de->d_name))
			(void)strv_push_copy(&v, &n, de->d_name);
	if (d)
		closedir(d);
	return v;
}

static size_t trash_count(int dfd)
{
	DIR *d = envs_opendir(dfd);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += startswith(de->d_name, RECLAIM_PREFIX);
	if (d)
		closedir(d);
	return n;
}

/* Waits for one byte on the hold FIFO (the test hook); closes it when a
 * wait times out. */
static void hold_wait(int *hold)
{
	if (*hold < 0)
		return;
	struct pollfd p = {.fd = *hold, .events = POLLIN};
	char c;
	if (RETRY_EINTR(poll(&p, 1, HOLD_TIMEOUT_MS)) <= 0 || read(*hold, &c, 1) != 1)
		*hold = safe_close(*hold);
}

/* A supervisor that answered "stopped" before its mounts were gone
 * (runtime/ctl_proto.h CTL_F_LINGER) holds its run directory's lock, moved
 * into the entry as .run/ (api/env_core.c), until it has unmounted them and
 * exits: its trees are removed after that (waiting at most 30 s). */
static void wait_lingering(int entry_fd)
{
	_cleanup_close_ int lk =
	    entry_fd >= 0 ? openat(entry_fd, ".run/lock", O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	for (int i = 0; lk >= 0 && i < 15000 && flock(lk, LOCK_SH | LOCK_NB) < 0; i++) {
		struct timespec ts = {.tv_nsec = 2 * 1000000};
		nanosleep(&ts, NULL);
	}
}

/* Set in a one-shot environment's supervisor (reclaim.h). */
static bool self_lingering;

void reclaim_self_lingering(void)
{
	self_lingering = true;
}

/* The host uid range of a removed environment whose remover left it to us
 * (one that did not free it first, or died before): once the entry's supervisor has exited
 * (wait_lingering), no process of it is left, and the range is free again
 * if its slot file still names the environment's directory, now gone (the
 * rule sbx gc applies to every slot; a slot already freed and taken again
 * names another directory and is left alone). */
static void release_slot(int entry_fd, const char *envs)
{
	_cleanup_free_ char *text = NULL;
	if (entry_fd < 0 || fs_read_fileat(entry_fd, "state.json", 1 << 20, &text, NULL) < 0)
		return;
	_cleanup_json_ json_t *st = json_loads(text, 0, NULL);
	int64_t slot = json_int(st, "uid_slot", -1);
	const char *id = json_str(st, "environment_id");
	if (slot < 0 || !id || !*id || strchr(id, '/'))
		return;
	_cleanup_free_ char *owner_want = fs_path_join(envs, id), *owner = NULL;
	char sp[128];
	snprintf(sp, sizeof(sp), "%s/%lld", USERNS_SLOT_DIR, (long long)slot);
	/* Its cgroup still there: a removal that found its supervisor dead
	 * may still be destroying it (killing what is left); gc frees it. */
	sbx_cgroup *cg = NULL;
	if (cgroup_open(id, &cg, NULL) == 0) {
		cgroup_free(cg);
		return;
	}
	if (owner_want && fs_read_file(sp, 8192, &owner, NULL) == 0 && streq(owner, owner_want) &&
	    !fs_exists(owner_want))
		(void)unlink(sp);
}

/* Removes one trash entry, part by part (its top-level children, then
 * itself). Negative errno when something of it is left. */
static int remove_entry(const char *envs, int dfd, const char *name, int *hold)
{
	_cleanup_free_ char *path = fs_path_join(envs, name);
	if (!path)
		return -ENOMEM;
	int r = 0;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	wait_lingering(fd);
	release_slot(fd, envs);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d)
		safe_close(fd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		hold_wait(hold);
		_cleanup_free_ char *c = fs_path_join(path, de->d_name);
		int q = c ? fs_rm_rf(c) : -ENOMEM;
		if (q < 0 && r == 0)
			r = q;
	}
	if (d)
		closedir(d);
	int q = fs_rm_rf(path); /* the entry (or what a chmod'ed parent hid) */
	return r < 0 ? r : q;
}

/* A lingering reclaimer's wait (reclaim.h): true when trash may have
 * arrived within ms on the inotify descriptor in, false once ms passed or
 * something says stop. */
static bool linger_wait(int in, int64_t ms)
{
	int64_t until = clock_ms(CLOCK_MONOTONIC) + ms;
	for (int64_t left = ms; left > 0; left = until - clock_ms(CLOCK_MONOTONIC)) {
		struct pollfd p = {.fd = in, .events = POLLIN};
		if (RETRY_EINTR(poll(&p, 1, (int)left)) <= 0)
			return false;
		char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
		ssize_t n;
		bool work = false;
		while ((n = read(in, buf, sizeof(buf))) > 0)
			for (char *q = buf; q < buf + n;) {
				const struct inotify_event *ev = (const struct inotify_event *)q;
				reclaim_event e = reclaim_linger_event(ev->mask, ev->len ? ev->name : "");
				if (e == RECLAIM_EV_STOP)
					return false;
				work |= e == RECLAIM_EV_WORK;
				q += sizeof(*ev) + ev->len;
			}
		if (work)
			return true;
	}
	return false;
}

/* A watch on envs/ for a lingering reclaimer (reclaim_linger_event), or -1. */
static int watch_envs(const char *envs)
{
	int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in >= 0 && inotify_add_watch(in, envs,
					 IN_MOVED_TO | IN_CREATE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF |
					     IN_ONLYDIR) < 0)
		in = safe_close(in);
	return in;
}

/* The reclaimer's loop (also sbx gc's): work is the envs directory, locked
 * (or not, when gc gave up waiting), owned and closed here, before the
 * gate (the order reclaim.h's protocol needs). With linger_ms > 0 and the
 * trash empty, it waits up to linger_ms for more before the last look
 * (until RECLAIM_LIFETIME_MS after start), once it removed one at least:
 * the watch is made then, and the trash looked at once more (what came
 * before the watch); one that found nothing, started just after sbx gc
 * emptied the trash, makes none and ends at once (a watch's end waits for
 * an SRCU grace period, milliseconds on a loaded machine, with the store's
 * directory still open). sbx gc's nudge is repeated while it waits, so a
 * watch made after one sees the next. Entries that fail are left for gc.
 * The gate, when it ended holding it, goes to *ret_gate if set (the
 * reclaimer keeps it until it exits: sbx gc waits for the gate, so that
 * when gc returns the reclaimer is gone, not just its lock), else is
 * closed. */
static void reclaim_work(const char *root, int work, int hold, int64_t linger_ms,
			 void (*before)(const char *path), int *ret_gate)
{
	_cleanup_free_ char *envs = fs_path_join(root, "envs");
	_cleanup_strv_free_ char **failed = NULL;
	size_t n_failed = 0;
	int gate = -1;
	_cleanup_close_ int in = -1;
	int64_t start = clock_ms(CLOCK_MONOTONIC);
	bool removed = false;
	while (envs) {
		_cleanup_strv_free_ char **pending = trash_scan(work, failed);
		if (!pending && removed && linger_ms > 0 &&
		    clock_ms(CLOCK_MONOTONIC) - start < RECLAIM_LIFETIME_MS) {
			if (in < 0 && (in = watch_envs(envs)) >= 0)
				continue; /* the trash again: what came before the watch */
			if (in >= 0 && linger_wait(in, linger_ms))
				continue;
		}
		if (!pending) {
			gate = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (gate >= 0)
				(void)RETRY_EINTR(flock(gate, LOCK_EX));
			pending = trash_scan(work, failed);
			if (!pending)
				break;
			gate = safe_close(gate);
		}
		removed = true;
		for (char **t = pending; *t; t++) {
			if (before) {
				_cleanup_free_ char *p = fs_path_join(envs, *t);
				if (p)
					before(p);
			}
			if (remove_entry(envs, work, *t, &hold) < 0 &&
			    faccessat(work, *t, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
				char *dup = strdup(*t);
				if (!dup || strv_push(&failed, &n_failed, dup) < 0)
					goto out; /* out of memory: gc takes it */
			}
		}
	}
out:
	safe_close(work);
	if (ret_gate)
		*ret_gate = gate;
	else
		safe_close(gate);
	safe_close(hold);
}

/* The reclaimer's work, in a function of its own so that what it
 * allocates is freed before the process's _exit. */
static void reclaimer_run(const char *root)
{
	_cleanup_free_ char *envs = fs_path_join(root, "envs");
	_cleanup_close_ int work = envs ? open(envs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (work < 0 || flock(work, LOCK_EX | LOCK_NB) < 0)
		return; /* another one took it: it looks after taking it */
	reclaim_limits lim;
	reclaim_limits_from_env(&lim);
	const char *hp = getenv("SBX_RECLAIM_HOLD");
	int hold = hp && *hp ? open(hp, O_RDWR | O_NONBLOCK | O_CLOEXEC) : -1;
	int gate = -1;
	reclaim_work(root, TAKE_FD(work), hold, lim.linger_ms, NULL, &gate);
	(void)gate; /* held until _exit (reclaim_work) */
}

/* The reclaimer (the caller's child, in a session of its own). */
static _Noreturn void reclaimer_main(const char *root)
{
	(void)prctl(PR_SET_NAME, "sbx-reclaim", 0, 0, 0);
	(void)setpriority(PRIO_PROCESS, 0, 10);
	(void)!chdir("/");
	reclaimer_run(root);
	_exit(0);
}

/* The reclaimers this process started, not reaped yet (pidfds). A caller
 * does not wait for its reclaimer (waiting for a second process to be
 * scheduled cost several ms of a removal on a loaded machine, more than the
 * removal itself): a short-lived caller exits and init reaps it; a
 * long-lived one reaps those that ended on its next start. */
static pthread_mutex_t spawned_lock = PTHREAD_MUTEX_INITIALIZER;
static int spawned[8] = {-1, -1, -1, -1, -1, -1, -1, -1};

static void spawned_reap_add(int pidfd)
{
	pthread_mutex_lock(&spawned_lock);
	for (size_t i = 0; i < ARRAY_SIZE(spawned); i++) {
		siginfo_t si = {0};
		if (spawned[i] >= 0 &&
		    (waitid(P_PIDFD, (id_t)spawned[i], &si, WEXITED | WNOHANG) < 0 || si.si_pid != 0))
			spawned[i] = safe_close(spawned[i]); /* reaped (or by someone else) */
		if (spawned[i] < 0 && pidfd >= 0)
			spawned[i] = TAKE_FD(pidfd);
	}
	pthread_mutex_unlock(&spawned_lock);
	safe_close(pidfd); /* no room: init reaps it when we exit */
}

/* Starts a detached reclaimer: its own session, stdio on /dev/null, no
 * other fd. 0, or -1 when none could start. */
static int reclaim_spawn(const sbx_ctx *ctx)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		(void)setsid();
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int i = 0; i < 3 && null >= 0; i++)
			dup2(null, i);
		sys_close_range(3, ~0U, 0);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_IGN);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_IGN);
		signal(SIGQUIT, SIG_DFL);
		reclaimer_main(ctx->root);
	}
	spawned_reap_add(sys_pidfd_open(pid, 0));
	return 0;
}

/* Makes sure a reclaimer will see the trash (reclaim.h's protocol): 0 when
 * one runs or was started, -1 when none could start. */
static int reclaim_kick(const sbx_ctx *ctx, int work)
{
	if (flock(work, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return -1;
		int gate = open(ctx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (gate < 0 || RETRY_EINTR(flock(gate, LOCK_SH)) < 0) {
			safe_close(gate);
			return -1;
		}
		bool running = flock(work, LOCK_EX | LOCK_NB) < 0;
		safe_close(gate);
		if (running)
			return 0; /* and its last look is still to come */
	}
	/* Free: the reclaimer takes it itself (a lock held across fork would be
	 * shared with whatever another thread forks meanwhile). */
	(void)flock(work, LOCK_UN);
	return reclaim_spawn(ctx);
}

static void reclaim_arrange(const sbx_ctx *ctx, const char *envs, char **trash, size_t moved);

/* reclaim_defer: this thread's removals wait for its reclaim_drain. */
static __thread bool deferred;

void reclaim_defer(bool on)
{
	deferred = on;
}

int reclaim_dirs(const sbx_ctx *ctx, const char *const *paths, const char *const *tags, size_t n)
{
	_cleanup_free_ char *envs = fs_path_join(ctx->root, "envs");
	char *trash[8] = {0};
	size_t moved = 0;
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t rnd = 0;
		(void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
		char name[256];
		char *t = envs && moved < ARRAY_SIZE(trash) &&
				  reclaim_trash_name(tags[i], rnd, name, sizeof(name)) == 0
			      ? fs_path_join(envs, name)
			      : NULL;
		int q = 0;
		if (t && rename(paths[i], t) == 0)
			trash[moved++] = TAKE_PTR(t);
		else if (!t || errno != ENOENT)
			q = fs_rm_rf(paths[i]); /* EXDEV, EBUSY: inline, as before */
		free(t);
		if (q < 0 && r == 0)
			r = q;
	}
	if (moved == 0)
		return r;
	reclaim_arrange(ctx, envs, trash, moved);
	return r;
}

/* After the renames: a reclaimer for trash[0..moved) (freed here), or
 * their removal inline (reclaim.h's limits). */
static void reclaim_arrange(const sbx_ctx *ctx, const char *envs, char **trash, size_t moved)
{
	if (deferred) { /* the caller drains next (sbx gc) */
		for (size_t i = 0; i < moved; i++)
			free(trash[i]);
		return;
	}
	reclaim_limits l;
	reclaim_limits_from_env(&l);
	_cleanup_close_ int work = open(envs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t entries = 0;
	struct statvfs vfs = {0};
	if (work >= 0 && !l.sync) {
		entries = trash_count(work);
		if (fstatvfs(work, &vfs) < 0)
			vfs = (struct statvfs){0};
	}
	uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize, total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	/* Inline: these entries only (what else waits has its reclaimer). Left
	 * over on failure, they are in the trash all the same: gc finishes. */
	bool inl = work < 0 || reclaim_inline(&l, entries, avail, total) || reclaim_kick(ctx, work) < 0;
	for (size_t i = 0; i < moved; i++) {
		if (inl) {
			_cleanup_close_ int fd =
			    open(trash[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (!self_lingering)
				wait_lingering(fd);
			release_slot(fd, envs);
			(void)fs_rm_rf(trash[i]);
		}
		free(trash[i]);
	}
}

int reclaim_moved(const sbx_ctx *ctx, const char *const *names, size_t n)
{
	_cleanup_free_ char *envs = fs_path_join(ctx->root, "envs");
	char *trash[8] = {0};
	size_t k = 0;
	for (size_t i = 0; envs && i < n && k < ARRAY_SIZE(trash); i++)
		if (strncmp(names[i], RECLAIM_PREFIX, strlen(RECLAIM_PREFIX)) == 0 &&
		    !strchr(names[i], '/') && (trash[k] = fs_path_join(envs, names[i])))
			k++;
	if (k == 0)
		return n ? -EINVAL : 0;
	reclaim_arrange(ctx, envs, trash, k);
	return 0;
}

int reclaim_hide(const sbx_ctx *ctx, const char *path, const char *tag, char **ret_name)
{
	*ret_name = NULL;
	uint32_t rnd = 0;
	(void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
	char name[256];
	int q = reclaim_trash_name(tag, rnd, name, sizeof(name));
	if (q < 0)
		return q;
	_cleanup_free_ char *envs = fs_path_join(ctx->root, "envs");
	_cleanup_free_ char *t = envs ? fs_path_join(envs, name) : NULL;
	if (!t)
		return -ENOMEM;
	if (rename(path, t) < 0)
		return -errno;
	if (!(*ret_name = strdup(name))) {
		const char *nv[] = {name};
		(void)reclaim_moved(ctx, nv, 1); /* arranged now, then */
	}
	return 0;
}

int reclaim_dir(const sbx_ctx *ctx, const char *path, const char *tag)
{
	return reclaim_dirs(ctx, &path, &tag, 1);
}

void reclaim_drain(const sbx_ctx *ctx, int64_t wait_ms, void (*before)(const char *path))
{
	_cleanup_free_ char *envs = fs_path_join(ctx->root, "envs");
	int work = envs ? open(envs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (work < 0)
		return;
	/* A lingering reclaimer stops at this (reclaim.h), again every 50 ms
	 * (one that was at work makes its watch later). */
	for (int64_t waited = 0; flock(work, LOCK_EX | LOCK_NB) < 0 && waited < wait_ms; waited += 10) {
		if (waited % 50 == 0)
			(void)futimens(work, NULL);
		struct timespec ts = {.tv_nsec = 10 * 1000000};
		nanosleep(&ts, NULL);
	}
	/* A reclaimer that held the work lock keeps the gate until it exits
	 * (reclaim_work): once that is free too, it is gone. */
	int gate = open(ctx->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (gate >= 0)
		(void)RETRY_EINTR(flock(gate, LOCK_SH));
	safe_close(gate);
	reclaim_work(ctx->root, work, -1, 0, before, NULL);
}
