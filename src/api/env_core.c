/* The core of an environment's lifecycle, below every feature of src/api
 * (docs/layout.md): the states it is in beyond live or not (paused,
 * suspended), its name, stopping its supervisor, and removing its files.
 * Starting one is env_start.c; the record and the control socket are
 * env_state.c. Nothing here calls a feature (exec, pause, pool, snapshot,
 * trace): they call this. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "api/core.h"
#include "api/reclaim.h"
#include "runtime/cgroup.h"
#include "runtime/ctl_proto.h"
#include "runtime/devices.h"
#include "runtime/quota.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "util/fs.h"
#include "util/json.h"

int64_t now_ms_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool marker_exists(const char *dir, const char *id, const char *name)
{
	char p[8300];
	snprintf(p, sizeof(p), "%s/%s/%s", dir, id, name);
	return access(p, F_OK) == 0;
}

static bool env_is_suspended(const sbx_ctx *ctx, const char *id)
{
	char d[4200];
	snprintf(d, sizeof(d), "%s/envs", ctx->root);
	return marker_exists(d, id, "suspended");
}

/* The state sbx ls and inspect show, refining env.c's summary: NULL when
 * it has nothing to add. */
const char *env_warm_state(const sbx_ctx *ctx, const char *id, bool live)
{
	if (live)
		return marker_exists(ctx->run, id, "paused") ? "paused" : "running";
	return env_is_suspended(ctx, id) ? "suspended" : NULL;
}

/* The last idle suspend ({reason, suspended_ms, processes_ended, resumed}),
 * or NULL if it never was. */
json_t *env_suspend_info(const sbx_ctx *ctx, const char *id)
{
	const char *names[] = {"suspended", "resumed"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char p[4300];
		snprintf(p, sizeof(p), "%s/envs/%s/%s", ctx->root, id, names[i]);
		_cleanup_free_ char *buf = NULL;
		if (fs_read_file(p, 4096, &buf, NULL) < 0)
			continue;
		json_t *j = json_loads(buf, 0, NULL);
		if (!json_is_object(j)) {
			json_decref(j);
			continue;
		}
		json_object_set_new(j, "resumed", json_boolean(i == 1));
		json_object_set_new(
		    j, "note",
		    json_string("processes that were running when it was suspended were ended; "
				"files and environment were kept"));
		return j;
	}
	return NULL;
}

bool env_suspended_now(const sbx_ctx *ctx, const char *id)
{
	return env_is_suspended(ctx, id);
}

/* Names: $SBX_ROOT/names/<name> is a symlink to the id. symlink() is the
 * atomic test-and-set that makes names unique without a store lock. */
int env_name_register(sbx_ctx *ctx, const char *name, const char *id, sbx_err **err)
{
	char dir[4200], link[4300], target[64];
	snprintf(dir, sizeof(dir), "%s/names", ctx->root);
	(void)fs_mkdir_mode(dir, 0711);
	snprintf(link, sizeof(link), "%s/%s", dir, name);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (symlink(id, link) == 0)
			return 0;
		if (errno != EEXIST)
			return err_errno(err, "register name '%s'", name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			_cleanup_free_ char *other = ctx_env_dir(ctx, target);
			if (other && fs_exists(other))
				return err_set(err, SBX_E_CONFLICT, EEXIST,
					       "an environment named '%s' already exists (%s)", name, target);
		}
		(void)unlink(link); /* stale: its environment is gone */
	}
	return err_set(err, SBX_E_CONFLICT, EEXIST, "an environment named '%s' is being created", name);
}

void env_name_unregister(sbx_ctx *ctx, const char *name, const char *id)
{
	char link[4300], target[64];
	snprintf(link, sizeof(link), "%s/names/%s", ctx->root, name);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n > 0 && (target[n] = 0, streq(target, id)))
		(void)unlink(link);
}

/* What the first half of a removal in two (env_dispose_hide) leaves to
 * the second: the uid range, and the trash entry's removal. */
typedef struct env_hidden {
	sbx_ctx *ctx;
	char *dir, *trash; /* dir: where it was; trash: its name there, or NULL */
	int64_t uid_slot;
} env_hidden;

/* The files' part of a removal. h: only hide the environment (its
 * processes may still be dying, and it has no quota's mounts): the uid
 * range and the trash's removal are left in *h for env_dispose_finish. */
void env_remove_files(sbx_ctx *ctx, const char *id, env_hidden *h)
{
	_cleanup_free_ char *dir = ctx_env_dir(ctx, id), *run = ctx_run_dir(ctx, id);
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (dir && env_record_read(ctx, id, &st) == 0 && st.uid_slot >= 0 && !h)
		userns_slot_free_owned((unsigned)st.uid_slot, dir);
	if (st.name)
		env_name_unregister(ctx, st.name, id);
	startup_mark("remove: uid range and name freed");
	/* A disk quota's mounts first (the env is stopped): nothing may leak. */
	if (dir && !h)
		(void)quota_teardown(dir);
	startup_mark("remove: quota checked");
	/* The run directory (lock, mnt/) rides along into the trash when it is
	 * on the same filesystem: unlinking its inodes inline cost 1-4 ms of a
	 * removal on a busy ext4 (their eviction), more than all the rest of
	 * the files' part. Elsewhere (a tmpfs $SBX_RUN) it goes inline. */
	char inner[4300];
	bool moved = dir && run && snprintf(inner, sizeof(inner), "%s/.run", dir) < (int)sizeof(inner) &&
		     rename(run, inner) == 0;
	startup_mark("remove: run directory moved");
	/* Into the trash at once (a rename: a concurrent reader never sees half
	 * an environment, and the id is free again); the bytes go in the
	 * background (api/reclaim.h), or, hiding, once the finish says so. */
	if (dir && !(h && reclaim_hide(ctx, dir, id, &h->trash) == 0))
		(void)reclaim_dir(ctx, dir, id);
	if (run && !moved)
		fs_rm_rf(run);
	if (h) {
		h->ctx = ctx;
		h->dir = TAKE_PTR(dir);
		h->uid_slot = st.uid_slot;
	}
}

/* env_config.dispose: a one-shot environment's supervisor removes it
 * (runtime.h), in its own process, before it answers "stopped". The trees
 * go to the trash while its mounts may still linger: this process holds
 * the lock that a reclaimer waits for, so it must not wait for it itself. */
void env_dispose(void *arg, const char *id)
{
	reclaim_self_lingering();
	env_remove_files(arg, id, NULL);
}

/* env_config.dispose_hide / dispose_finish: env_dispose in two halves
 * (runtime.h; the supervisor uses dispose when there is a quota). */
void *env_dispose_hide(void *arg, const char *id)
{
	reclaim_self_lingering();
	env_hidden *h = calloc(1, sizeof(*h));
	env_remove_files(arg, id, h); /* out of memory (h NULL): the whole removal now */
	return h;
}

void env_dispose_finish(void *arg, void *hidden)
{
	env_hidden *h = hidden;
	if (!h)
		return;
	if (h->uid_slot >= 0 && h->dir)
		userns_slot_free_owned((unsigned)h->uid_slot, h->dir);
	if (h->trash) {
		const char *nv[] = {h->trash};
		(void)reclaim_moved(h->ctx, nv, 1);
	}
	free(h->trash);
	free(h->dir);
	free(h);
}

/* fd: a connection to id's supervisor that asked it to stop (a stop, or an
 * exec with CTL_F_STOP_AFTER). Waits for its "stopped", which comes after
 * its teardown (anything before it is skipped; EOF or 15 s: not seen),
 * then for it to exit (it does at once; its lock, without polling), unless
 * it lingers (asked with CTL_F_LINGER: every process and the cgroup are
 * gone, its mounts go after the reply, and it exits then; reclaim.c waits
 * for that before removing the trees). */
int env_stop_wait(sbx_ctx *ctx, const char *id, int fd)
{
	bool lingering = false, removed = false;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 15000) <= 0)
			return STOP_NOT_SEEN;
		json_t *m = NULL;
		if (json_recv(fd, &m, NULL, NULL) <= 0)
			return STOP_NOT_SEEN;
		bool stopped = streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_STOPPED);
		lingering = json_bool(m, CTL_F_LINGERING, false);
		removed = json_bool(m, CTL_F_REMOVED, false);
		json_decref(m);
		if (stopped)
			break;
	}
	if (removed)
		return STOP_REMOVED; /* its lock and mounts go as it exits: nothing is ours to wait for */
	if (lingering)
		return STOP_LINGERING;
	char lp[4300];
	snprintf(lp, sizeof(lp), "%s/%s/lock", ctx->run, id);
	_cleanup_close_ int lk = open(lp, O_RDONLY | O_CLOEXEC);
	if (lk >= 0 && flock(lk, LOCK_SH) == 0)
		flock(lk, LOCK_UN);
	return STOP_DONE;
}

/* Stops the supervisor (if alive) and waits until it has cleaned up, or
 * (linger: the caller removes the environment's files next) until every
 * process and the cgroup are gone, the supervisor still unmounting
 * (STOP_LINGERING), or until a one-shot environment removed itself
 * (STOP_REMOVED). */
static int stop_supervisor_linger(sbx_ctx *ctx, const char *id, bool linger)
{
	int stopped = STOP_NOT_SEEN; /* it said so: its teardown destroyed the cgroup */
	_cleanup_close_ int fd = env_connect(ctx, id, NULL);
	/* A supervisor still starting (its creator or restorer killed a moment
	 * ago) holds the lock before it listens: give it a few seconds to
	 * listen (or to fail and exit) rather than tearing its cgroup down under
	 * it and finding it still alive. */
	for (int i = 0; fd < 0 && i < 1500 && env_is_live(ctx, id); i++) {
		usleep(2000);
		fd = env_connect(ctx, id, NULL);
	}
	if (fd >= 0) {
		_cleanup_json_ json_t *req =
		    json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP, CTL_F_LINGER, linger);
		if (req && json_send(fd, req, NULL, 0) == 0)
			stopped = env_stop_wait(ctx, id, fd);
	}
	/* Whatever is left (a dead supervisor's cgroup and processes) goes too.
	 * Not after a "stopped": its teardown destroyed the cgroup, and looking
	 * again over every v1 hierarchy cost ~0.3 ms of each removal. */
	sbx_cgroup *cg = NULL;
	if (!stopped && cgroup_open(id, &cg, NULL) == 0) {
		(void)cgroup_destroy(cg, NULL);
		cgroup_free(cg);
	}
	devcg_remove(id); /* CDI devices' v1 device group (runtime/devices.h) */
	if (stopped == STOP_LINGERING || stopped == STOP_REMOVED)
		return stopped;
	/* Wait for the supervisor to release its lock (it exits right after). */
	for (int i = 0; i < 2000 && env_is_live(ctx, id); i++)
		usleep(1000);
	return stopped;
}

void stop_supervisor(sbx_ctx *ctx, const char *id)
{
	(void)stop_supervisor_linger(ctx, id, false);
}

/* Removal, once the supervisor is gone (or lingering: only unmounting):
 * the files. */
int env_remove_stopped(sbx_ctx *ctx, const char *id, bool lingering, sbx_err **err)
{
	startup_mark("remove: supervisor stopped");
	if (!lingering && env_is_live(ctx, id))
		return err_set(err, SBX_E_INTERNAL, EBUSY, "environment '%s' did not stop", id);
	env_remove_files(ctx, id, NULL);
	startup_mark("remove: files removed");
	return 0;
}

_public_ int sbx_env_remove(sbx_ctx *ctx, const char *ref, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	startup_mark("remove: begin");
	int stopped = stop_supervisor_linger(ctx, id, true);
	if (stopped == STOP_REMOVED)
		return 0;
	return env_remove_stopped(ctx, id, stopped == STOP_LINGERING, err);
}
