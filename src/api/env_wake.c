/* The way back from an idle suspend (docs/warm.md; pause.c says what a
 * suspend keeps): a suspended or stopped environment started again on its
 * writable layer with the same id, uid range, name and options, and the
 * connect (or one request) of the calls that need processes, which wakes
 * it first. Part of the core below the features (docs/layout.md): exec,
 * files, processes and sbx resume call it; it calls only the core. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "api/core.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "store/snapshot.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

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
int env_wake(sbx_ctx *ctx, const char *id, bool *ret_restarted, sbx_err **err)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/envs/%s/wake.lock", ctx->root, id);
	_cleanup_close_ int lk = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk < 0 || flock(lk, LOCK_EX) < 0)
		return err_errno(err, "lock '%s'", p);
	startup_mark("wake: locked");
	/* A supervisor that is suspending right now is gone within its teardown. */
	for (int i = 0; i < 5000 && env_is_live(ctx, id) && env_suspended_now(ctx, id); i++)
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
	if (!env_suspended_now(ctx, id))
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

int env_request_resume(sbx_ctx *ctx, const char *id, bool auto_resume, const json_t *req, json_t **ret,
		       int *fds, size_t *n_fds, sbx_err **err)
{
	size_t cap = n_fds ? *n_fds : 0;
	int r = -EPIPE;
	bool sent = false;
	/* A second try when the first met an idle suspend (core.h). */
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
		    !env_suspended_now(ctx, id))
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
	if (env_suspended_now(ctx, id)) {
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
