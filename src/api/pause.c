/* Warm environments (docs/warm.md): pause and resume; the way back from an
 * idle suspend is the core's (env_wake.c).
 *
 * A pause is the supervisor's (src/runtime/sup_warm.c: pause, resume, idle
 * suspend): the cgroup freezer, or rootless init's SIGSTOP of every
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
#include <time.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "util/json.h"

static double pause_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

_public_ int sbx_env_pause(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	double t0 = pause_now_ms();
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	if (!env_is_live(ctx, id))
		return env_suspended_now(ctx, id)
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
	if (env_is_live(ctx, id) && !env_suspended_now(ctx, id)) {
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
