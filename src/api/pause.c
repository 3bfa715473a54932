/* Warm environments (docs/warm.md): pause and resume, and the way back from
 * an idle suspend.
 *
 * A pause is the supervisor's (src/runtime/supervisor.c "pause, resume,
 * idle suspend"): the cgroup freezer, or rootless init's SIGSTOP of every
 * other process; it leaves $SBX_RUN/<id>/paused while it holds. An idle
 * suspend ends the supervisor after writing $SBX_ROOT/envs/<id>/suspended
 * (JSON: reason, suspended_ms, processes_ended); what is kept is what a
 * stopped environment keeps, its state.json, upper/ and work/. Waking starts
 * it again on those with the same id, uid range, name and options, as a
 * restore does but without emptying the writable layer; the marker then
 * becomes envs/<id>/resumed so that inspect can still say which processes
 * went. Everything lives in $SBX_ROOT, so a reboot (all of $SBX_RUN gone)
 * leaves suspended and stopped environments wakeable with sbx resume. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "store/snapshot.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

static double pause_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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

/* After a reboot /run (and so the uid slot files) may be empty: take the
 * environment's range back, unless another environment holds it now. */
static int reclaim_slot(const char *env_dir, const json_t *st, sbx_err **err)
{
	if (json_bool(st, "rootless", false) || json_int(st, "uid_slot", -1) < 0)
		return 0;
	char p[4300];
	snprintf(p, sizeof(p), "%s/%lld", USERNS_SLOT_DIR, (long long)json_int(st, "uid_slot", -1));
	_cleanup_free_ char *owner = NULL;
	if (fs_read_file(p, 8192, &owner, NULL) == 0)
		return streq(owner, env_dir)
			   ? 0
			   : err_set(err, SBX_E_CONFLICT, EBUSY,
				     "its host uid range now belongs to another environment (%s)", owner);
	return userns_slot_take((unsigned)json_int(st, "uid_slot", -1), env_dir, err);
}

/* Starts a suspended or stopped environment again on its writable layer.
 * Serialized by envs/<id>/wake.lock: of concurrent callers one starts it
 * and the others find it live. */
static int env_wake(sbx_ctx *ctx, const char *id, bool *ret_restarted, sbx_err **err)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/envs/%s/wake.lock", ctx->root, id);
	_cleanup_close_ int lk = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk < 0 || flock(lk, LOCK_EX) < 0)
		return err_errno(err, "lock '%s'", p);
	startup_mark("wake: locked");
	/* A supervisor that is suspending right now is gone within its teardown. */
	for (int i = 0; i < 5000 && env_is_live(ctx, id) && env_is_suspended(ctx, id); i++)
		usleep(1000);
	startup_mark("wake: old supervisor gone");
	*ret_restarted = false;
	if (env_is_live(ctx, id))
		return 0;
	_cleanup_json_ json_t *st = NULL;
	int r = env_state_read(ctx, id, &st);
	if (r < 0)
		return err_errnum(err, r, "read state of '%s'", id);
	if (json_bool(st, "ephemeral", false) || json_bool(st, "degraded", false))
		return err_set(err, SBX_E_UNAVAILABLE, EPERM,
			       "environment '%s' cannot be started again (no persistent writable layer)", id);
	sbx_create_opts o;
	sbx_volume vols[64];
	_cleanup_strv_free_ char **env = NULL, **net = NULL;
	if (opts_from_state(st, &o, vols, ARRAY_SIZE(vols), &env, &net) < 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state of '%s'", id);
	/* The layers it ran on: a snapshot's (fork, restore, named template), or
	 * none recorded (the host template, whose base create rebuilds). */
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	const char *digest = json_str(st, "snapshot_id");
	if (json_array_size(json_object_get(st, "layers")) > 0 && digest) {
		if (store_snapshot_read(ctx->root, digest, &snap, err) < 0)
			return err_wrap(err, "start '%s' again", id);
		if (snap->base_template)
			o.template_spec = snap->base_template;
	}
	_cleanup_free_ char *env_dir = ctx_env_dir(ctx, id);
	if (!env_dir)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (reclaim_slot(env_dir, st, err) < 0)
		return err_wrap(err, "start '%s' again", id);
	json_object_set_new(st, "restoring_ms", json_integer(now_ms_real())); /* gc leaves it alone */
	(void)env_state_write(ctx, id, st);
	startup_mark("wake: state read, slot reclaimed, marked restoring");
	/* What a killed supervisor left (its cgroup, processes in it) goes first. */
	if (!env_is_suspended(ctx, id))
		stop_supervisor(ctx, id);
	startup_mark("wake: leftovers stopped");
	_cleanup_free_ char *nid = NULL;
	_cleanup_json_ json_t *w = NULL;
	env_create_req q = {.o = &o, .restore_state = st, .snap = snap, .snap_id = digest};
	if (env_create_impl(ctx, &q, &nid, &w, err) < 0)
		return err_wrap(err, "start '%s' again", id);
	char from[4300], to[4300];
	snprintf(from, sizeof(from), "%s/suspended", env_dir);
	snprintf(to, sizeof(to), "%s/resumed", env_dir);
	if (rename(from, to) < 0 && errno == ENOENT)
		(void)unlink(to); /* a stopped one: no suspend to tell of */
	startup_mark("wake: done");
	*ret_restarted = true;
	return 0;
}

bool env_suspended_now(const sbx_ctx *ctx, const char *id)
{
	return env_is_suspended(ctx, id);
}

int env_request_resume(sbx_ctx *ctx, const char *id, bool auto_resume, const json_t *req, json_t **ret,
		       int *fds, size_t *n_fds, sbx_err **err)
{
	size_t cap = n_fds ? *n_fds : 0;
	int r = -EPIPE;
	bool sent = false;
	/* A second try when the first met an idle suspend (api.h). */
	for (int attempt = 0; attempt < 2; attempt++) {
		_cleanup_close_ int sock = env_connect_resume(ctx, id, auto_resume, err);
		if (sock < 0)
			return -1;
		r = json_send(sock, req, NULL, 0);
		sent = r >= 0;
		if (sent) {
			if (n_fds)
				*n_fds = cap;
			r = json_recv(sock, ret, fds, n_fds);
		}
		if (r > 0 || (!sent && r != -EPIPE && r != -ECONNRESET) || !auto_resume ||
		    !env_is_suspended(ctx, id))
			break;
	}
	if (!sent)
		return err_errnum(err, r,
				  r == -E2BIG || r == -EMSGSIZE
				      ? "request to environment '%s' too large (command, environment, path)"
				      : "send request to environment '%s'",
				  id);
	if (r <= 0)
		return err_set(err, SBX_E_UNAVAILABLE, r ? -r : EPIPE, "environment '%s' stopped answering",
			       id);
	return 0;
}

/* env_connect for the calls that need processes (exec, file operations):
 * a suspended environment is started first, or refused. */
int env_connect_resume(sbx_ctx *ctx, const char *id, bool auto_resume, sbx_err **err)
{
	if (env_is_suspended(ctx, id)) {
		if (!auto_resume)
			return err_set(
			    err, SBX_E_CONFLICT, EAGAIN,
			    "environment '%s' is suspended (sbx resume %s, or leave out --no-auto-resume)",
			    id, id);
		bool restarted;
		if (env_wake(ctx, id, &restarted, err) < 0)
			return err_wrap(err, "resume suspended environment '%s'", id);
	}
	return env_connect(ctx, id, err);
}

_public_ int sbx_env_pause(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	double t0 = pause_now_ms();
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	if (!env_is_live(ctx, id))
		return env_is_suspended(ctx, id)
			   ? err_set(err, SBX_E_CONFLICT, ESRCH,
				     "environment '%s' is suspended: it has no processes to pause", id)
			   : err_set(err, SBX_E_UNAVAILABLE, ESRCH, "environment '%s' is not running", id);
	_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_PAUSE), *m = NULL;
	if (env_call(ctx, id, req, &m, err) < 0)
		return err_wrap(err, "pause '%s'", id);
	/* Rootless, init's own answer comes through: ok once every process stopped. */
	if (streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_STOP_ALL) && !json_bool(m, CTL_F_OK, false))
		return err_set(err, SBX_E_INTERNAL, EIO, "pause '%s': not every process could be stopped",
			       id);
	*ret = json_pack("{s:s,s:s,s:f}", "environment_id", id, "state", "paused", "pause_ms",
			 pause_now_ms() - t0);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

_public_ int sbx_env_resume(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	double t0 = pause_now_ms();
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	bool restarted = false, was_paused = false;
	if (env_is_live(ctx, id) && !env_is_suspended(ctx, id)) {
		_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_RESUME), *m = NULL;
		if (env_call(ctx, id, req, &m, err) < 0)
			return err_wrap(err, "resume '%s'", id);
		was_paused = json_bool(m, "was_paused", false);
	} else if (env_wake(ctx, id, &restarted, err) < 0)
		return err_wrap(err, "resume '%s'", id);
	*ret = json_pack("{s:s,s:s,s:f,s:b,s:b}", "environment_id", id, "state", "running", "resume_ms",
			 pause_now_ms() - t0, "restarted", restarted, "was_paused", was_paused);
	/* How many processes the suspend (or the stop) ended: an integer, as in
	 * inspect's "suspend" (0 when it ended none or nothing recorded it). */
	if (*ret && restarted) {
		_cleanup_json_ json_t *si = env_suspend_info(ctx, id);
		json_object_set_new(*ret, "processes_ended",
				    json_integer(json_int(si, "processes_ended", 0)));
	}
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
