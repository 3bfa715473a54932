/* envd's directory watch on the E2B data plane (e2b_rpc.h): the
 * filesystem.Filesystem calls WatchDir (a server stream: the JS SDK's
 * files.watchDir) and CreateWatcher, GetWatcherEvents, RemoveWatcher (the
 * same events polled: the Python sync SDK's).
 *
 * The directory is opened inside the environment as the call's user
 * (sbx_env_dir_open: resolved there, read permission checked there), and
 * watched from here with inotify through that descriptor
 * (/proc/self/fd/N), so nothing outside the environment's tree is ever
 * named. A recursive watch adds each directory under it, opened from its
 * parent's descriptor one name at a time (openat2 RESOLVE_BENEATH, no
 * symlinks, no mount crossings), and each one made or moved in later.
 * Events are named by their path under the watched directory, typed as
 * envd types them (e2b_watch_map.h). At most E2B_WATCH_DIRS directories
 * per watch: past that the call fails with resource_exhausted at its start,
 * and a directory made later is not watched.
 *
 * The watch ends when the client goes, the call's deadline passes, the
 * watched directory is removed or moved away, or the sandbox stops (seen
 * within E2B_WATCH_LIVE_CHECK_MS): then the stream is cut, with no
 * end-stream (e2b_stream_cut), as envd's goes with its VM.
 * Watchers of the polled form: at most E2B_WATCHERS in all, each bound to
 * its sandbox (another sandbox's token cannot read or remove it), with
 * at most E2B_WATCHER_QUEUE events kept between two polls (older ones are
 * dropped); one whose sandbox is gone is freed at its next use or when a
 * new one needs room. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server/e2b_data.h"
#include "server/e2b_rpc.h"
#include "server/e2b_watch_map.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

#define E2B_WATCH_DIRS 4096
#define E2B_WATCHERS 256
#define E2B_WATCHER_QUEUE 4096
#define E2B_WATCH_LIVE_CHECK_MS 2000

typedef struct watch {
	int in; /* inotify */
	e2b_watch_table dirs;
	int *fds; /* each watched directory's descriptor, by slot of fds (kept open: a
		     recursive watch opens children from them) */
	int *fd_wd;
	size_t n_fds, cap_fds;
	bool recursive, root_gone;
	bool include_entry; /* each event carries the entry's EntryInfo (envd >= 0.6.3) */
	char *root;	    /* the path watched, as the client gave it */
} watch;

static void watch_free(watch *w)
{
	if (!w)
		return;
	safe_close(w->in);
	for (size_t i = 0; i < w->n_fds; i++)
		safe_close(w->fds[i]);
	free(w->fds);
	free(w->fd_wd);
	e2b_watch_table_free(&w->dirs);
	free(w->root);
	free(w);
}

static int fd_of_wd(const watch *w, int wd)
{
	for (size_t i = 0; i < w->n_fds; i++)
		if (w->fd_wd[i] == wd)
			return w->fds[i];
	return -1;
}

static void forget_wd(watch *w, int wd)
{
	for (size_t i = 0; i < w->n_fds; i++)
		if (w->fd_wd[i] == wd) {
			safe_close(w->fds[i]);
			w->fds[i] = w->fds[--w->n_fds];
			w->fd_wd[i] = w->fd_wd[w->n_fds];
			break;
		}
	e2b_watch_table_drop(&w->dirs, wd);
}

static int add_dir(watch *w, int fd, const char *rel);

/* Watches the directories under fd (at rel), depth first. */
static int add_children(watch *w, int fd, const char *rel)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		safe_close(dup);
		return 0; /* unreadable: its own events still come */
	}
	struct dirent *de;
	int r = 0;
	while (r == 0 && (de = readdir(d))) {
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
				       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
						  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
		int cfd = (int)syscall(SYS_openat2, fd, de->d_name, &how, sizeof(how));
		if (cfd < 0)
			continue; /* not a directory, gone, or another mount */
		char crel[4096];
		if (e2b_watch_name(rel, de->d_name, crel, sizeof(crel)) < 0) {
			safe_close(cfd);
			continue;
		}
		r = add_dir(w, cfd, crel);
	}
	closedir(d);
	return r;
}

/* Watches directory fd (taken) at rel, and with recursion what is under it. */
static int add_dir(watch *w, int fd, const char *rel)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	int wd = inotify_add_watch(w->in, p, e2b_watch_mask());
	if (wd < 0) {
		int e = errno;
		safe_close(fd);
		return e == ENOSPC ? -ENOSPC : 0; /* the kernel's watch limit; else gone meanwhile */
	}
	if (fd_of_wd(w, wd) >= 0) { /* already watched (moved within the tree) */
		safe_close(fd);
		return e2b_watch_table_put(&w->dirs, wd, rel);
	}
	int r = e2b_watch_table_put(&w->dirs, wd, rel);
	if (r < 0) {
		(void)inotify_rm_watch(w->in, wd);
		safe_close(fd);
		return r;
	}
	if (w->n_fds == w->cap_fds) {
		size_t cap = w->cap_fds ? w->cap_fds * 2 : 16;
		int *f = realloc(w->fds, cap * sizeof(int)),
		    *g = f ? realloc(w->fd_wd, cap * sizeof(int)) : NULL;
		if (f)
			w->fds = f;
		if (!f || !g) {
			e2b_watch_table_drop(&w->dirs, wd);
			(void)inotify_rm_watch(w->in, wd);
			safe_close(fd);
			return -ENOMEM;
		}
		w->fd_wd = g;
		w->cap_fds = cap;
	}
	w->fds[w->n_fds] = fd;
	w->fd_wd[w->n_fds++] = wd;
	return w->recursive ? add_children(w, fd, rel) : 0;
}

/* A watch of path in the call's sandbox, as its user. */
static int watch_open(e2b_call *c, const json_t *in, watch **ret, sbx_err **err)
{
	const char *path = json_str(in, "path");
	if (!path || !*path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path: a path is required");
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = c->user;
	_cleanup_json_ json_t *st = NULL;
	if (sbx_env_stat(c->ctx, c->sandbox_id, path, &o, &st, err) < 0)
		return -1;
	const char *type = json_str(st, "type") ?: "";
	if (!streq(type, "dir") && !streq(type, "symlink"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, ENOTDIR, "path '%.200s' is not a directory",
			       path);
	int fd = -1;
	if (sbx_env_dir_open(c->ctx, c->sandbox_id, path, &o, &fd, err) < 0)
		return -1;
	watch *w = calloc(1, sizeof(*w));
	if (!w) {
		safe_close(fd);
		return err_oom(err);
	}
	w->in = -1;
	w->dirs.max = E2B_WATCH_DIRS;
	w->recursive = json_is_true(json_object_get(in, "recursive"));
	w->include_entry = json_is_true(json_object_get(in, "includeEntry")) ||
			   json_is_true(json_object_get(in, "include_entry"));
	/* allowNetworkMounts: accepted; a recursive watch never crosses a
	 * mount (RESOLVE_NO_XDEV), network or not, and the root may be one. */
	if (!(w->root = strdup(path))) {
		safe_close(fd);
		watch_free(w);
		return err_oom(err);
	}
	w->in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	int r = w->in < 0 ? -errno : add_dir(w, fd, "");
	if (r < 0) {
		watch_free(w);
		if (r == -ENOSPC)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOSPC,
				       "watch '%.200s': more than %d directories (or the kernel's inotify "
				       "limit); watch less",
				       path, E2B_WATCH_DIRS);
		return err_errnum(err, r, "watch '%.200s'", path);
	}
	*ret = w;
	return 0;
}

/* Reads what inotify has, calling emit(ud, name, type) for each envd event.
 * 0, or -EAGAIN when nothing was there. */
static int watch_read(watch *w, void (*emit)(void *ud, const char *name, const char *type), void *ud)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n = read(w->in, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	for (char *p = buf; p < buf + n;) {
		const struct inotify_event *ev = (const struct inotify_event *)p;
		p += sizeof(*ev) + ev->len;
		const char *rel = e2b_watch_table_get(&w->dirs, ev->wd);
		if (!rel)
			continue;
		if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
			if (!*rel)
				w->root_gone = true;
			if (ev->mask & IN_IGNORED)
				forget_wd(w, ev->wd);
			continue;
		}
		if (!ev->len)
			continue;
		char name[4096];
		if (e2b_watch_name(rel, ev->name, name, sizeof(name)) < 0)
			continue;
		const char *types[5];
		size_t k = e2b_watch_types(ev->mask, types);
		for (size_t i = 0; i < k; i++)
			emit(ud, name, types[i]);
		/* A directory made or moved in: watched too (recursive). */
		if (w->recursive && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
			int pfd = fd_of_wd(w, ev->wd);
			struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW,
					       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
							  RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
			int cfd = pfd >= 0 ? (int)syscall(SYS_openat2, pfd, ev->name, &how, sizeof(how)) : -1;
			if (cfd >= 0)
				(void)add_dir(w, cfd, name);
		}
	}
	return 0;
}

/* Whether the call's sandbox still runs: only a sure "gone" ends a watch. */
static bool sandbox_live(e2b_call *c)
{
	return e2b_sandbox_state(c->ctx, c->sandbox_id) != 0;
}

/* envd's FilesystemEvent {name, type, entry?}: the entry (when asked for
 * and the path still exists) as the call's user stats it. NULL on ENOMEM or
 * a name that is not UTF-8. */
static json_t *fs_event(e2b_call *c, const watch *w, const char *name, const char *type)
{
	json_t *ev = json_pack("{s:s,s:s}", "name", name, "type", type);
	if (!ev || !w->include_entry)
		return ev;
	char full[8192];
	size_t rl = strlen(w->root);
	bool slash = rl && w->root[rl - 1] == '/';
	if (snprintf(full, sizeof(full), "%s%s%s", w->root, slash ? "" : "/", name) >= (int)sizeof(full))
		return ev;
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = c->user;
	_cleanup_json_ json_t *st = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_stat(c->ctx, c->sandbox_id, full, &o, &st, &e) == 0) {
		json_t *info = e2b_entry_info(st);
		if (info)
			json_object_set_new(ev, "entry", info);
	}
	return ev;
}

/* ---- WatchDir: a server stream --------------------------------------------------------------- */

typedef struct stream_emit {
	e2b_call *c;
	const watch *w;
	e2b_stream *s;
	int r;
} stream_emit;

static void emit_stream(void *ud, const char *name, const char *type)
{
	stream_emit *se = ud;
	if (se->r < 0)
		return;
	json_t *ev = fs_event(se->c, se->w, name, type);
	if (!ev) /* a name that is not UTF-8: as envd, nothing for it */
		return;
	_cleanup_json_ json_t *m = json_pack("{s:o}", "filesystem", ev);
	if (!m)
		return;
	if (e2b_stream_send(se->s, m) < 0)
		se->r = -EPIPE;
}

static int fs_watch_dir(e2b_call *c, const json_t *in, e2b_stream *s, sbx_err **err)
{
	watch *w = NULL;
	if (watch_open(c, in, &w, err) < 0)
		return -1;
	_cleanup_json_ json_t *start = json_pack("{s:{}}", "start");
	int r = start && e2b_stream_send(s, start) == 0 ? 0 : -EPIPE;
	int64_t next_check = clock_ms(CLOCK_MONOTONIC) + E2B_WATCH_LIVE_CHECK_MS;
	while (r == 0) {
		stream_emit se = {c, w, s, 0};
		while (watch_read(w, emit_stream, &se) == 0 && se.r == 0)
			;
		if (se.r < 0 || e2b_stream_closed(s)) {
			r = -EPIPE;
			break;
		}
		if (w->root_gone) { /* the directory itself went: the watch is over */
			if (e2b_sandbox_state(c->ctx, c->sandbox_id) == 0)
				r = -ESRCH; /* with its sandbox */
			break;
		}
		int64_t now = clock_ms(CLOCK_MONOTONIC);
		if (c->deadline_ms >= 0 && now >= c->deadline_ms) {
			r = -ETIMEDOUT;
			break;
		}
		if (now >= next_check) {
			if (!sandbox_live(c)) {
				r = -ESRCH;
				break;
			}
			next_check = now + E2B_WATCH_LIVE_CHECK_MS;
		}
		struct pollfd pf = {.fd = w->in, .events = POLLIN};
		(void)poll(&pf, 1, 200);
	}
	watch_free(w);
	if (r == -EPIPE)
		return err_set(err, SBX_E_UNAVAILABLE, ECANCELED, "the client went away");
	if (r == -ETIMEDOUT)
		return err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT, "the call's deadline passed");
	if (r == -ESRCH) {
		/* The sandbox went under the watch (killed, timed out, paused):
		 * envd's connection goes with its VM, so cut ours as a command's
		 * is (e2b_process.c). The SDK then asks /health, which already
		 * answers 502, and onExit gets its "killed" error; an end-stream,
		 * even with an error, would say the sandbox ended the watch. */
		e2b_stream_cut(s);
		return err_set(err, SBX_E_UNAVAILABLE, ESRCH, "the sandbox is not running anymore");
	}
	return 0;
}

/* ---- CreateWatcher, GetWatcherEvents, RemoveWatcher ------------------------------------------- */

typedef struct watcher {
	char id[33];
	char sandbox[64];
	watch *w;
	json_t *events; /* queued since the last poll */
	size_t dropped;
} watcher;

static pthread_mutex_t watchers_lock = PTHREAD_MUTEX_INITIALIZER;
static watcher *watchers[E2B_WATCHERS];

static void watcher_free(watcher *x)
{
	if (!x)
		return;
	watch_free(x->w);
	json_decref(x->events);
	free(x);
}

static int watcher_find(const char *id, const char *sandbox)
{
	for (int i = 0; i < E2B_WATCHERS; i++)
		if (watchers[i] && streq(watchers[i]->id, id) && streq(watchers[i]->sandbox, sandbox))
			return i;
	return -1;
}

static int watcher_id(const json_t *in, const char **ret, sbx_err **err)
{
	const char *id = json_str(in, "watcherId") ?: json_str(in, "watcher_id");
	if (!id || !*id)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "watcherId: an id is required");
	*ret = id;
	return 0;
}

static int fs_create_watcher(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	watcher *x = calloc(1, sizeof(*x));
	if (!x)
		return err_oom(err);
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		free(x);
		return err_errno(err, "getrandom");
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(x->id + 2 * i, 3, "%02x", rnd[i]);
	snprintf(x->sandbox, sizeof(x->sandbox), "%s", c->sandbox_id);
	x->events = json_array();
	if (!x->events || watch_open(c, in, &x->w, err) < 0) {
		watcher_free(x);
		return x->events ? -1 : err_oom(err);
	}
	pthread_mutex_lock(&watchers_lock);
	int slot = -1;
	for (int i = 0; i < E2B_WATCHERS && slot < 0; i++)
		if (!watchers[i])
			slot = i;
	pthread_mutex_unlock(&watchers_lock);
	if (slot < 0) { /* full: free those whose sandbox is gone, outside the lock */
		for (int i = 0; i < E2B_WATCHERS; i++) {
			pthread_mutex_lock(&watchers_lock);
			char sb[64] = "";
			if (watchers[i])
				snprintf(sb, sizeof(sb), "%s", watchers[i]->sandbox);
			pthread_mutex_unlock(&watchers_lock);
			e2b_call other = *c;
			other.sandbox_id = sb;
			if (!*sb || sandbox_live(&other))
				continue;
			pthread_mutex_lock(&watchers_lock);
			if (watchers[i] && streq(watchers[i]->sandbox, sb)) {
				watcher_free(watchers[i]);
				watchers[i] = NULL;
			}
			pthread_mutex_unlock(&watchers_lock);
		}
	}
	pthread_mutex_lock(&watchers_lock);
	for (int i = 0; i < E2B_WATCHERS && slot < 0; i++)
		if (!watchers[i])
			slot = i;
	if (slot >= 0)
		watchers[slot] = x;
	pthread_mutex_unlock(&watchers_lock);
	if (slot < 0) {
		watcher_free(x);
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOSPC,
			       "%d watchers exist already; remove one (RemoveWatcher) first", E2B_WATCHERS);
	}
	*out = json_pack("{s:s}", "watcherId", x->id);
	return *out ? 0 : err_oom(err);
}

typedef struct queue_emit {
	e2b_call *c;
	watcher *x;
} queue_emit;

static void emit_queue(void *ud, const char *name, const char *type)
{
	queue_emit *qe = ud;
	watcher *x = qe->x;
	if (json_array_size(x->events) >= E2B_WATCHER_QUEUE) {
		json_array_remove(x->events, 0);
		x->dropped++;
	}
	json_t *e = fs_event(qe->c, x->w, name, type);
	if (e)
		json_array_append_new(x->events, e);
}

static int fs_get_watcher_events(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *id = NULL;
	if (watcher_id(in, &id, err) < 0)
		return -1;
	if (!sandbox_live(c)) {
		pthread_mutex_lock(&watchers_lock);
		int i = watcher_find(id, c->sandbox_id);
		if (i >= 0) {
			watcher_free(watchers[i]);
			watchers[i] = NULL;
		}
		pthread_mutex_unlock(&watchers_lock);
		return err_set(err, SBX_E_UNAVAILABLE, ESRCH, "the sandbox is not running anymore");
	}
	pthread_mutex_lock(&watchers_lock);
	int i = watcher_find(id, c->sandbox_id);
	if (i < 0) {
		pthread_mutex_unlock(&watchers_lock);
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no watcher '%.64s' in this sandbox", id);
	}
	watcher *x = watchers[i];
	queue_emit qe = {c, x};
	while (watch_read(x->w, emit_queue, &qe) == 0)
		;
	json_t *events = x->events;
	x->events = json_array();
	pthread_mutex_unlock(&watchers_lock);
	if (!events || !(*out = json_pack("{s:o}", "events", events)))
		return err_oom(err);
	return 0;
}

static int fs_remove_watcher(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *id = NULL;
	if (watcher_id(in, &id, err) < 0)
		return -1;
	pthread_mutex_lock(&watchers_lock);
	int i = watcher_find(id, c->sandbox_id);
	watcher *x = i >= 0 ? watchers[i] : NULL;
	if (i >= 0)
		watchers[i] = NULL;
	pthread_mutex_unlock(&watchers_lock);
	if (!x)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no watcher '%.64s' in this sandbox", id);
	watcher_free(x);
	*out = json_object();
	return *out ? 0 : err_oom(err);
}

const e2b_method e2b_watch_methods[] = {
    /* WatchDirResponse holds the oneof itself: {"start":{}}, {"filesystem":{...}},
     * {"keepalive":{}} */
    {"filesystem.Filesystem", "WatchDir", .stream = fs_watch_dir, .keepalive = "{\"keepalive\":{}}"},
    {"filesystem.Filesystem", "CreateWatcher", .unary = fs_create_watcher},
    {"filesystem.Filesystem", "GetWatcherEvents", .unary = fs_get_watcher_events},
    {"filesystem.Filesystem", "RemoveWatcher", .unary = fs_remove_watcher},
    {0},
};
