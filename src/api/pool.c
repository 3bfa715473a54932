/* The warm pool (docs/warm.md): environments built ahead of time, each a
 * whole environment created by the ordinary create path with the pool's
 * options (so its walls are a cold create's by construction), waiting
 * hidden until a create with the same options takes one.
 *
 *   $SBX_ROOT/pools/<key>.json     {source, kind: template|snapshot, size, policy, code}
 *   $SBX_ROOT/pools/<key>.d/<id>   one empty token per ready entry; taking an
 *                                  entry is winning the rename of its token
 *   $SBX_ROOT/pools/<key>.taken/<id>  the token while its taker hands the
 *                                  entry out (gc: a claim its taker left)
 *   $SBX_ROOT/pools/<key>.lock     held by the one refiller of that pool
 * An entry's state.json carries "pool": key until it is taken; sbx ls and
 * gc leave such environments alone (gc removes those of a pool that no
 * longer exists, and those of stale claims). Refilling needs no daemon: the create that takes an entry
 * and sbx pool set start a detached refiller, which creates entries until
 * the pool is full, the host-wide maximum (SBX_POOL_MAX, default 64 ready
 * entries in this store) is reached or less memory than SBX_POOL_MIN_FREE
 * (default 1g) is available.
 *
 * This file: the refiller and take; pool_files.c: keys, paths, a pool's
 * configuration and removal; pool_admin.c: set, list, gc (pool_internal.h
 * the calls between them). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/code.h"
#include "api/pool_internal.h"
#include "build/image_config.h"
#include "runtime/ctl_proto.h"
#include "runtime/startup_trace.h"
#include "util/clock.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/proc.h"
#include "util/syscalls.h"

/* A create matches a pool when it names the same source and policy and
 * nothing else that would change what is built (pure). Variables do not:
 * they are the environment's to hand commands, given to an entry as it is
 * handed out (pool_take), except to a code entry, whose kernel was started
 * with the entry's own, and to a one-shot take, which its supervisor hands
 * out itself. */
bool pool_opts_plain(const sbx_create_opts *o)
{
	if (!o)
		return true;
	bool oneshot = o->version >= 7 && o->one_shot, code = o->version >= 9 && o->code;
	bool env_ok = !o->env || !(oneshot || code);
	for (const char *const *e = o->env; env_ok && e && *e; e++) /* the cold create says why */
		env_ok = strchr(*e, '=') && **e != '=';
	bool plain = !o->name && env_ok && o->n_volumes == 0 && (!o->network || streq(o->network, "none")) &&
		     o->memory_bytes == 0 && o->pids == 0 && o->cpus == 0 && o->timeout_ms == 0 &&
		     o->ttl_ms == 0 && o->output_bytes == 0;
	if (o->version >= 2)
		plain = plain && !o->keep_identity;
	if (o->version >= 3)
		plain = plain && o->disk_bytes == 0 && !o->hidden && !o->secrets && !o->agent_policy &&
			!o->hostname && !o->ttl_keep;
	if (o->version >= 4)
		plain = plain && !o->user && !o->cap_drop && !o->cap_add && !o->user_no_root;
	if (o->version >= 5)
		plain = plain && o->idle_suspend_ms == 0 && !o->devices;
	if (o->version >= 8) /* an entry binds no host port */
		plain = plain && !o->publish;
	/* A fork naming a template too: the cold create checks that it is the
	 * snapshot's (the pool's entries were built with the snapshot's own). */
	return plain && !(o->snapshot && o->template_spec);
}

/* code (version 9) names another pool than the plain one; never one-shot
 * (a one-shot take is the supervisor's, which cannot check the kernel). */
bool pool_opts_code(const sbx_create_opts *o)
{
	return o && o->version >= 9 && o->code;
}

static int64_t mem_available(void)
{
	_cleanup_free_ char *buf = NULL;
	if (fs_read_file("/proc/meminfo", 1 << 16, &buf, NULL) < 0)
		return -1;
	const char *p = strstr(buf, "MemAvailable:");
	return p ? strtoll(p + strlen("MemAvailable:"), NULL, 10) * 1024 : -1;
}

/* Ready entries of every pool of this store. */
static size_t pool_total(const sbx_ctx *ctx)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/pools", ctx->root);
	DIR *d = opendir(p);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (pool_endswith(de->d_name, ".d")) {
			char q[4600];
			snprintf(q, sizeof(q), "%s/%s", p, de->d_name);
			n += pool_count_tokens(q);
		}
	if (d)
		closedir(d);
	return n;
}

/* Whether the pool of key wants another entry and the caps allow one. */
static bool pool_wants_more(sbx_ctx *ctx, const char *key, const char *dir)
{
	_cleanup_json_ json_t *cfg = NULL;
	if (pool_read(ctx, key, &cfg) < 0)
		return false; /* removed meanwhile */
	if (pool_count_tokens(dir) >= (size_t)json_int(cfg, "size", 0) ||
	    pool_total(ctx) >= (size_t)pool_env_int("SBX_POOL_MAX", 64))
		return false;
	int64_t avail = mem_available();
	return avail < 0 || avail >= pool_env_int("SBX_POOL_MIN_FREE", 1LL << 30);
}

/* The refiller's view of takes: an inotify descriptor on the pool's
 * token directory (a take unlinks a token) and on pools/ (its
 * configuration changed or went), and when it last saw a take. */
typedef struct pool_watch {
	int fd;
	int64_t last_take;
	int owner_fd;	 /* an owned pool's owner (a pidfd), or -1 */
	bool owner_gone; /* it ended */
} pool_watch;

bool pool_owner_alive(const json_t *owner)
{
	json_int_t pid = json_integer_value(json_object_get(owner, "pid"));
	uint64_t start = 0;
	if (pid <= 1 || pid > 0x3fffffff)
		return false;
	if (proc_start_time((pid_t)pid, &start) < 0)
		return false;
	return (json_int_t)start == json_integer_value(json_object_get(owner, "start"));
}

/* An owned pool's refiller watches its owner (docs/warm.md "A server that
 * keeps itself warm"): a pidfd, opened and then checked to be that very
 * process (a pid reused since fails the start time). Sets owner_gone when
 * the owner has already ended; -1 where pidfds are missing (then the
 * refiller lingers as for any pool, and sbx gc removes the pool). */
static void pool_watch_owner(pool_watch *w, const json_t *owner)
{
	w->owner_fd = -1;
	if (!json_is_object(owner))
		return;
	json_int_t pid = json_integer_value(json_object_get(owner, "pid"));
	int fd = pid > 1 && pid <= 0x3fffffff ? sys_pidfd_open((pid_t)pid, 0) : -1;
	if (fd < 0 && errno != ESRCH && pid > 1)
		return;
	if (fd < 0 || !pool_owner_alive(owner)) {
		safe_close(fd);
		w->owner_gone = true;
		return;
	}
	w->owner_fd = fd;
}

/* Waits up to ms for an event; returns whether one came (and drains). The
 * owner's end is no event: it sets owner_gone and ends the wait. */
static bool pool_watch_wait(pool_watch *w, int64_t ms)
{
	struct pollfd pfd[2] = {{.fd = w->fd, .events = POLLIN}, {.fd = w->owner_fd, .events = POLLIN}};
	int r = poll(pfd, w->owner_fd >= 0 ? 2 : 1, (int)(ms > 60000 ? 60000 : ms < 0 ? 0 : ms));
	if (r > 0 && w->owner_fd >= 0 && pfd[1].revents) {
		w->owner_gone = true;
		return false;
	}
	if (r <= 0 || !pfd[0].revents)
		return false;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	while (read(w->fd, buf, sizeof(buf)) > 0)
		;
	w->last_take = clock_ms(CLOCK_MONOTONIC);
	return true;
}

/* Building an entry costs a cold create's CPU: during a burst of takes it
 * would compete with the creates it serves (two cores here). So the
 * refiller waits until SBX_POOL_QUIET_MS (default 50) have passed without
 * a take, unless the pool is down to a quarter of its size, or until the
 * pool's configuration goes (sbx pool rm waits for the lock: an event on
 * pools/ also wakes the wait). */
static void pool_wait_quiet(const sbx_ctx *ctx, const char *key, pool_watch *w, const char *dir, size_t size)
{
	int64_t quiet = pool_env_int("SBX_POOL_QUIET_MS", 50);
	_cleanup_free_ char *cfg = pool_path(ctx, key, ".json");
	for (int i = 0; i < 10000 && cfg && pool_count_tokens(dir) * 4 > size; i++) {
		int64_t left = w->last_take + quiet - clock_ms(CLOCK_MONOTONIC);
		if (left <= 0 || !pool_watch_wait(w, left))
			if (clock_ms(CLOCK_MONOTONIC) >= w->last_take + quiet)
				return;
		if (access(cfg, F_OK) < 0)
			return; /* removed: the caller sees it */
	}
}

static void pool_entry_paths(const sbx_ctx *ctx, const char *id, char **ret_token, char **ret_claim);
static int pool_handout(void *arg, const char *id, int64_t taken_ms);

/* Creates entries until the pool is full or a cap says stop, holding the
 * pool's lock. Returns false when building one failed. */
static bool pool_fill_locked(sbx_ctx *ctx, const char *key, const char *dir, pool_watch *w)
{
	for (int round = 0; round < POOL_SIZE_MAX && pool_wants_more(ctx, key, dir); round++) {
		_cleanup_json_ json_t *cfg = NULL;
		if (pool_read(ctx, key, &cfg) < 0)
			return true;
		if (w->fd >= 0) {
			pool_wait_quiet(ctx, key, w, dir, (size_t)json_int(cfg, "size", 0));
			if (!pool_wants_more(ctx, key, dir))
				return true;
		}
		sbx_create_opts o = SBX_CREATE_OPTS_INIT;
		bool snap = streq(json_str(cfg, "kind") ?: "", "snapshot");
		o.snapshot = snap ? json_str(cfg, "source") : NULL;
		o.template_spec = snap ? NULL : json_str(cfg, "source");
		o.policy = json_str(cfg, "policy");
		_cleanup_free_ char *id = NULL;
		_cleanup_json_ json_t *wr = NULL;
		char inputs[17];
		pool_inputs(ctx, o.template_spec, o.policy, inputs);
		ctx->pool_key = key;
		ctx->pool_tmpfs = streq(json_str(cfg, "layer") ?: "", "tmpfs");
		ctx->pool_inputs = inputs[0] ? inputs : NULL;
		ctx->pool_entry_paths = pool_entry_paths;
		ctx->pool_handout = pool_handout;
		startup_mark("create: begin");
		int r = env_create_cold(ctx, &o, &id, &wr, NULL); /* not a take of an entry */
		ctx->pool_key = NULL;
		ctx->pool_tmpfs = false;
		ctx->pool_inputs = NULL;
		ctx->pool_entry_paths = NULL;
		ctx->pool_handout = NULL;
		if (r < 0)
			return false;
		/* A code pool's entry is ready once its bridge answers (its default
		 * kernel started, as the environment's user), before its token. */
		if (json_bool(cfg, "code", false)) {
			env_see_pool_entries(true);
			r = code_bridge_prepare(ctx, id, NULL);
			env_see_pool_entries(false);
			if (r < 0) {
				pool_remove_entry(ctx, id, NULL);
				return false;
			}
		}
		_cleanup_free_ char *tok = NULL;
		_cleanup_close_ int fd = -1;
		if (asprintf(&tok, "%s/%s", dir, id) < 0 ||
		    (fd = open(tok, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
		    pool_read(ctx, key, &wr) < 0) {
			pool_remove_entry(ctx, id, NULL); /* the pool went while it was built */
			if (tok)
				(void)unlink(tok);
			return true;
		}
	}
	return true;
}

/* The refiller (detached, or inline with SBX_POOL_SYNC=1). A create that
 * takes an entry while a refiller holds the lock starts none (see
 * pool_refill_async): so the refiller looks again after each fill, and
 * lingers, holding the lock, for linger_ms (SBX_POOL_LINGER_MS, default
 * 30000; 0 inline) watching for takes, so that a burst of creates forks
 * no refiller after the first. It ends when the pool is removed (sbx pool
 * rm waits for the lock) or after that long without a take. */
static void pool_fill(sbx_ctx *ctx, const char *key, int64_t linger_ms)
{
	_cleanup_free_ char *lp = pool_path(ctx, key, ".lock"), *dir = pool_path(ctx, key, ".d"),
			    *cfg_path = pool_path(ctx, key, ".json");
	if (!lp || !dir || !cfg_path)
		return;
	_cleanup_close_ int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk < 0 || flock(lk, LOCK_EX | LOCK_NB) < 0)
		return; /* another refiller is at it */
	char pools[4300];
	snprintf(pools, sizeof(pools), "%s/pools", ctx->root);
	_cleanup_close_ int in = linger_ms > 0 ? inotify_init1(IN_CLOEXEC | IN_NONBLOCK) : -1;
	if (in >= 0 &&
	    (inotify_add_watch(in, dir, IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF) < 0 ||
	     inotify_add_watch(in, pools, IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE_SELF) < 0))
		in = safe_close(in);
	/* Started by a take (or pool set): that was the last take. */
	pool_watch w = {.fd = in, .last_take = clock_ms(CLOCK_MONOTONIC), .owner_fd = -1};
	_cleanup_json_ json_t *first = NULL;
	if (pool_read(ctx, key, &first) < 0)
		return; /* removed */
	if (in >= 0)
		pool_watch_owner(&w, json_object_get(first, "owner"));
	_cleanup_close_ int owner_fd = w.owner_fd;
	for (;;) {
		_cleanup_json_ json_t *cfg = NULL;
		if (w.owner_gone || pool_read(ctx, key, &cfg) < 0)
			break; /* removed, or its owner ended */
		if (!pool_fill_locked(ctx, key, dir, &w))
			return;
		/* Watching since before the fill: a take meanwhile is pending
		 * (and the configuration's removal, unless the fill's quiet wait
		 * consumed that event: looked at first). An owned pool's
		 * refiller lingers as long as its owner lives. */
		if (in < 0 || access(cfg_path, F_OK) < 0)
			break;
		if (pool_wants_more(ctx, key, dir) || pool_watch_wait(&w, owner_fd >= 0 ? 60000 : linger_ms))
			continue;
		if (owner_fd < 0 || w.owner_gone)
			break;
	}
	safe_close(TAKE_FD(lk));
	if (w.owner_gone) {
		/* The server that owned the pool ended without removing it
		 * (SIGKILL): its entries go now, not at the next sbx gc. */
		_cleanup_json_ json_t *out = NULL;
		sbx_pool_opts po = SBX_POOL_OPTS_INIT;
		po.policy = json_str(first, "policy");
		po.code = json_bool(first, "code", false);
		(void)sbx_pool_remove_opts(ctx, json_str(first, "source"), &po, &out, NULL);
		return;
	}
	/* Unlocked, a take starts a new refiller; one that took an entry
	 * between our last look and the unlock started none: look again. */
	if (pool_wants_more(ctx, key, dir))
		pool_fill(ctx, key, 0);
}

/* Starts a detached refiller (not our child: it outlives the caller). */
void pool_refill_async(sbx_ctx *ctx, const char *key)
{
	if (pool_env_int("SBX_POOL_SYNC", 0)) {
		pool_fill(ctx, key, 0);
		return;
	}
	/* A refiller at work sees the taken entry gone (pool_fill looks again
	 * after unlocking): no fork needed. */
	_cleanup_free_ char *lp = pool_path(ctx, key, ".lock");
	int lk = lp ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
	bool busy = lk >= 0 && flock(lk, LOCK_EX | LOCK_NB) < 0;
	safe_close(lk);
	if (busy)
		return;
	/* A short-lived caller (sbx run, ctx.h) forks the refiller directly:
	 * it is reparented when the caller exits, and the caller does not wait
	 * for an intermediate process to be scheduled and end. */
	bool direct = ctx->short_lived > 0 && ctx->short_lived == getpid();
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		if (setsid() < 0 || (!direct && fork() != 0))
			_exit(0);
		(void)prctl(PR_SET_NAME, "sbx-pool-fill", 0, 0, 0); /* for ps, top, perf */
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int i = 0; i < 3 && null >= 0; i++)
			dup2(null, i);
		sys_close_range(3, ~0U, 0);
		signal(SIGPIPE, SIG_IGN);
		/* Not the handlers of a CLI that forwards its signals (sbx run). */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		ctx->progress = NULL;
		ctx->create_observer = NULL; /* the caller's (a server's warm set), not this copy's */
		ctx->short_lived = 0;	     /* its own supervisors are detached (ctx.h) */
		pool_fill(ctx, key, pool_env_int("SBX_POOL_LINGER_MS", 30000));
		_exit(0);
	}
	if (!direct)
		(void)RETRY_EINTR(waitpid(pid, NULL, 0));
}

/* renameat for fs_write_atomicat: exchange, then keep what was there as
 * pool-state.json (the entry's state while it waited; removed with the
 * environment). Replacing an existing file by rename makes ext4 start
 * writing the new one back at once (auto_da_alloc), and unlinking the old
 * one frees its blocks through the journal: together about 0.3-4 ms of a
 * take, measured. An exchange does neither, and readers see the old or the
 * new state, never neither. */
static int rename_exchange(int olddfd, const char *old, int newdfd, const char *new_)
{
	if (renameat2(olddfd, old, newdfd, new_, RENAME_EXCHANGE) < 0)
		return errno == ENOENT || errno == EINVAL ? renameat(olddfd, old, newdfd, new_) : -1;
	if (renameat(olddfd, old, olddfd, "pool-state.json") < 0)
		(void)unlinkat(olddfd, old, 0);
	return 0;
}

/* env_state_write's format, written without the ext4 flush (runtime
 * state, not store data: atomic but not fsync'd, as env_state_write). */
static int pool_state_write(const sbx_ctx *ctx, const char *id, const json_t *st)
{
	static const fs_atomic_ops ops = {.write = write, .fsync = fsync, .renameat = rename_exchange};
	char p[4200];
	snprintf(p, sizeof(p), "%s/envs/%s", ctx->root, id);
	_cleanup_free_ char *s = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);
	_cleanup_close_ int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!s)
		return -ENOMEM;
	if (dfd < 0)
		return -errno;
	return fs_write_atomicat(dfd, "state.json", s, strlen(s), 0644, 0, &ops);
}

/* Whether any pool is set (a <key>.d directory under pools/): without one, a
 * create skips the key's digest, whose first use in a process initializes
 * OpenSSL (about 0.5 ms of every cold `sbx run`). */
static bool pool_any(const sbx_ctx *ctx)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/pools", ctx->root);
	DIR *d = opendir(p);
	if (!d)
		return false;
	struct dirent *de;
	bool any = false;
	while (!any && (de = readdir(d)))
		any = de->d_name[0] != '.' && pool_endswith(de->d_name, ".d");
	closedir(d);
	return any;
}

/* ctx.h pool_entry_paths: a pool entry's token and claim paths. */
static void pool_entry_paths(const sbx_ctx *ctx, const char *id, char **ret_token, char **ret_claim)
{
	*ret_token = *ret_claim = NULL;
	if (!ctx->pool_key)
		return;
	_cleanup_free_ char *dir = pool_path(ctx, ctx->pool_key, ".d"),
			    *taken = pool_path(ctx, ctx->pool_key, ".taken");
	if (dir && taken) {
		*ret_token = fs_path_join(dir, id);
		*ret_claim = fs_path_join(taken, id);
	}
}

/* A one-shot create's claim of entry id: its supervisor claims it and
 * takes our pidfd as its owner in one request (CTL_OP_OWN), and then hands
 * it out (pool_handout). 1 when owned (*ret_sock: that connection, kept
 * for the first command; *ret_warnings: the entry's), 0 when another
 * create won it, -1 when its supervisor did not answer. */
static int pool_own(sbx_ctx *ctx, const char *id, int *ret_sock, json_t **ret_warnings)
{
	_cleanup_close_ int self = sys_pidfd_open(getpid(), 0);
	_cleanup_close_ int fd = self >= 0 ? env_connect(ctx, id, NULL) : -1;
	if (fd < 0)
		return -1;
	_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_OWN), *m = NULL;
	if (!req || json_send(fd, req, &self, 1) < 0 || json_recv(fd, &m, NULL, NULL) <= 0)
		return -1;
	if (streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_OWNED)) {
		json_t *w = json_object_get(m, CTL_F_WARNINGS);
		json_decref(*ret_warnings);
		*ret_warnings = json_is_array(w) ? json_incref(w) : json_array();
		*ret_sock = TAKE_FD(fd);
		return 1;
	}
	return streq(json_str(m, CTL_F_CODE) ?: "", "conflict") ? 0 : -1;
}

/* The create's variables given to entry id, over those it was built with
 * (st's: an image's Env, a snapshot's), as a cold create merges them
 * (env_create.c): the supervisor and init take them (ctl_proto.h
 * CTL_OP_ENV), and st records them. */
static int pool_entry_env(sbx_ctx *ctx, const char *id, json_t *st, const char *const *env)
{
	_cleanup_strv_free_ char **built = json_to_strv(json_object_get(st, "env"));
	const image_layer img = {.env = (const char *const *)built}, cre = {.env = env};
	image_merged m;
	if (image_merge((const image_layer *const[]){&img, &cre}, 2, &m, NULL) < 0)
		return -ENOMEM;
	json_t *merged = json_from_strv((const char *const *)m.env);
	free(m.env);
	_cleanup_json_ json_t *reply = NULL,
			      *req =
				  merged ? json_pack("{s:s,s:o}", CTL_F_OP, CTL_OP_ENV, "env", merged) : NULL;
	if (!req)
		return -ENOMEM;
	env_see_pool_entries(true);
	int r = env_call(ctx, id, req, &reply, NULL);
	env_see_pool_entries(false);
	if (r < 0)
		return -EIO;
	return json_object_set(st, "env", json_object_get(req, "env")) < 0 ? -ENOMEM : 0;
}

/* An entry's state as handed out: no longer a pool entry; created at
 * taken_ms (realtime), from the pool, with the create's variables if any
 * (pool_entry_env). Into *ret_st if given. */
static int pool_state_handout(sbx_ctx *ctx, const char *id, int64_t taken_ms, const char *const *env,
			      json_t **ret_st)
{
	_cleanup_json_ json_t *st = NULL;
	int r = env_state_read(ctx, id, &st);
	if (r == 0 && env)
		r = pool_entry_env(ctx, id, st, env);
	if (r < 0)
		return r;
	char created[32];
	time_t sec = (time_t)(taken_ms / 1000);
	struct tm tm;
	gmtime_r(&sec, &tm);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_del(st, "pool");
	json_object_set_new(st, "created_at", json_string(created));
	json_object_set_new(st, "created_ms", json_integer(taken_ms));
	json_object_set_new(st, "from_pool", json_true());
	startup_mark("pool: state read");
	r = pool_state_write(ctx, id, st);
	startup_mark("pool: state written");
	if (r == 0) { /* no longer hidden (env_state.h ENV_POOL_MARK) */
		char p[4300];
		snprintf(p, sizeof(p), "%s/envs/%s/" ENV_POOL_MARK, ctx->root, id);
		(void)unlink(p);
	}
	if (r == 0 && ret_st)
		*ret_st = TAKE_PTR(st);
	return r;
}

/* ctx.h pool_handout: env_config.handout (runtime.h) of a pool entry. */
static int pool_handout(void *arg, const char *id, int64_t taken_ms)
{
	return pool_state_handout(arg, id, taken_ms, NULL, NULL);
}

/* Whether code entry id (still hidden) has its bridge and a pristine, live
 * default kernel. */
static bool pool_entry_code_ready(sbx_ctx *ctx, const char *id)
{
	env_see_pool_entries(true);
	bool ready = code_bridge_ready(ctx, id);
	env_see_pool_entries(false);
	return ready;
}

/* Takes a ready entry matching o, if there is one: returns 1 and its id,
 * 0 when none matches, negative on failure. The entry becomes an ordinary
 * environment: created now, from_pool, no longer hidden. */
int pool_take(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings)
{
	if (ctx->pool_key || !pool_opts_plain(o) || !pool_any(ctx))
		return 0;
	bool oneshot = o && o->version >= 7 && o->one_shot;
	bool code = pool_opts_code(o);
	if (code && oneshot)
		return 0;
	const char *kind;
	_cleanup_free_ char *source = NULL;
	if (pool_source_of(ctx, o, &kind, &source, NULL) < 0)
		return 0;
	char key[17], want[17];
	pool_key(kind, source, o ? o->policy : NULL, code, key);
	_cleanup_free_ char *dir = pool_path(ctx, key, ".d"), *taken = pool_path(ctx, key, ".taken");
	DIR *d = dir && taken ? opendir(dir) : NULL;
	if (!d)
		return 0;
	pool_inputs(ctx, o ? o->template_spec : NULL, o ? o->policy : NULL, want);
	struct dirent *de;
	_cleanup_free_ char *got = NULL;
	_cleanup_close_ int sock = -1;
	_cleanup_json_ json_t *warnings = NULL;
	char claim[4400];
	while (!got && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char tok[4400];
		snprintf(tok, sizeof(tok), "%s/%s", dir, de->d_name);
		snprintf(claim, sizeof(claim), "%s/%s", taken, de->d_name);
		/* Built before its policy file or template name changed: never
		 * handed out (a cold create would use what they are now). */
		if (want[0] && !pool_entry_current(ctx, de->d_name, want)) {
			if ((mkdir(taken, 0700) == 0 || errno == EEXIST) && rename(tok, claim) == 0) {
				pool_remove_entry(ctx, de->d_name, NULL);
				(void)unlink(claim);
			}
			continue;
		}
		/* Winning the rename of the token into <key>.taken/ is winning the
		 * entry; the claim stays until the entry is handed out, so that
		 * sbx gc finds an entry whose taker died (pool_gc_claims). */
		/* One-shot: the entry's supervisor claims it for us, and it is ours
		 * from the same moment (a taker killed between the two would leave
		 * a claimed entry nobody removes); it then hands it out itself. */
		if (oneshot && mkdir(taken, 0700) < 0 && errno != EEXIST)
			continue;
		int own = oneshot ? pool_own(ctx, de->d_name, &sock, &warnings) : -1;
		startup_mark("pool: entry owned");
		if (own == 0)
			continue; /* another create won it */
		int r = own > 0 ? 0 : rename(tok, claim);
		if (r < 0 && errno == ENOENT && mkdir(taken, 0700) == 0) /* a pool set before .taken/ */
			r = rename(tok, claim);
		if (r < 0)
			continue; /* another create won it */
		if (streq(getenv("SBX_POOL_FAULT") ?: "", "claimed"))
			_exit(70); /* tests: a taker that dies holding an entry */
		if (own <= 0 && !env_is_live(ctx, de->d_name)) {
			pool_remove_entry(ctx, de->d_name, NULL); /* its supervisor died while it waited */
			(void)unlink(claim);
			continue;
		}
		/* A code entry whose bridge or default kernel died while it
		 * waited is not ready: removed, and the next one tried (one GET
		 * /ready through init, about a millisecond). */
		if (code && !pool_entry_code_ready(ctx, de->d_name)) {
			pool_remove_entry(ctx, de->d_name, NULL);
			(void)unlink(claim);
			continue;
		}
		got = strdup(de->d_name);
		if (!got) {
			if (own > 0)
				sock = safe_close(sock); /* owned: ends with us, then removed */
			else
				(void)unlink(claim); /* left for gc's sweep of hidden entries */
		}
	}
	closedir(d);
	if (!got) {
		pool_refill_async(ctx, key);
		return 0;
	}
	if (sock < 0) { /* ours to hand out */
		_cleanup_json_ json_t *st = NULL;
		int r = pool_state_handout(ctx, got, now_ms_real(), o ? o->env : NULL, &st);
		if (r < 0)
			pool_remove_entry(ctx, got, NULL);
		(void)unlink(claim); /* handed out (or removed) */
		if (r < 0)
			return 0;
		warnings = json_incref(json_object_get(st, "warnings") ?: json_array());
	} else {
		/* Handed out by its supervisor; the connection serves the first
		 * command (exec.c), and tells the library it came from the pool. */
		safe_close(ctx->taken_sock);
		ctx->taken_sock = TAKE_FD(sock);
		snprintf(ctx->taken_id, sizeof(ctx->taken_id), "%s", got);
		snprintf(ctx->own_entry, sizeof(ctx->own_entry), "%s", got);
	}
	if (ret_warnings)
		*ret_warnings = TAKE_PTR(warnings);
	pool_refill_async(ctx, key);
	startup_mark("pool: refill kicked");
	*ret_id = TAKE_PTR(got);
	return 1;
}

_public_ int sbx_env_origin(sbx_ctx *ctx, const char *id, char **ret_snapshot_id, bool *ret_from_pool,
			    sbx_err **err)
{
	_cleanup_json_ json_t *st = NULL;
	int r = env_state_read(ctx, id, &st);
	if (r < 0)
		return r == -ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment: '%s'", id)
				    : err_errnum(err, r, "read the state of environment '%s'", id);
	if (ret_snapshot_id) {
		const char *snap = json_str(st, "snapshot_id");
		*ret_snapshot_id = snap ? strdup(snap) : NULL;
		if (snap && !*ret_snapshot_id)
			return err_oom(err);
	}
	if (ret_from_pool) /* just taken, its hand-out may be under way */
		*ret_from_pool =
		    (ctx->taken_sock >= 0 && streq(ctx->taken_id, id)) || json_bool(st, "from_pool", false);
	return 0;
}

_public_ bool sbx_env_from_pool(sbx_ctx *ctx, const char *id)
{
	bool pooled = false;
	return sbx_env_origin(ctx, id, NULL, &pooled, NULL) == 0 && pooled;
}
