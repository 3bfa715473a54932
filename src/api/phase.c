/* Two phases (docs/secrets.md): an environment starts in the setup phase,
 * with its policy's secrets and network; sbx_env_phase() switches it, once
 * and for good, to the agent phase: every process of the setup phase ends,
 * the secrets go (variables and files), and the agent phase's allowlist and
 * limits apply. The agent phase is planned at create (phase_plan.c), so a
 * policy that would widen anything fails the create, not the switch. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "policy/egress_match.h"
#include "policy/policy.h"
#include "runtime/caps.h"
#include "runtime/ctl_proto.h"
#include "runtime/user.h"
#include "util/json.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* An environment recorded before phases existed: the agent phase keeps
 * everything but the secrets. */
static json_t *default_plan(const env_record *st)
{
	json_t *lim = env_record_limits_json(st);
	return lim ? json_pack("{s:n,s:s,s:O,s:o,s:O,s:[]}", "policy", "network", st->network ?: "none",
			       "network_allow", st->network_allow ?: json_array(), "limits", lim, "env",
			       st->env ?: json_array(), "secrets")
		   : NULL;
}

_public_ int sbx_env_phase(sbx_ctx *ctx, const char *ref, const char *phase, json_t **ret, sbx_err **err)
{
	double t0 = now_ms();
	_cleanup_free_ char *id = NULL;
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_load(ctx, ref, &id, &st, err) < 0)
		return -1;
	const char *cur = st.phase ?: "setup";
	/* A switch that was asked for and interrupted (its process killed
	 * between telling the supervisor and writing the record) is finished
	 * first, whatever is asked now: the supervisor may already be in the
	 * agent phase, and moving to it is the narrowing direction. */
	bool pending = streq(cur, "setup") && st.phase_switching;
	if (pending)
		phase = "agent";
	if (!phase || streq(phase, cur)) {
		if (phase && streq(phase, "agent"))
			return err_set(
			    err, SBX_E_CONFLICT, EALREADY,
			    "environment '%s' is already in the agent phase (phases only move forward)", id);
		*ret = json_pack("{s:s,s:s,s:b}", "environment_id", id, "phase", cur, "changed", 0);
		if (*ret && streq(cur, "setup") && st.agent_phase)
			json_object_set(*ret, "agent_phase", st.agent_phase);
		return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	if (streq(phase, "setup"))
		return err_set(
		    err, SBX_E_CONFLICT, EPERM,
		    "environment '%s' is in the agent phase and cannot go back to setup (phases only move "
		    "forward; create a new environment, or restore a snapshot into one, for another setup)",
		    id);
	if (!streq(phase, "agent"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "unknown phase '%s': the phases are setup and agent", phase);
	_cleanup_json_ json_t *plan = json_incref(st.agent_phase);
	if (!plan && !(plan = default_plan(&st)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	_cleanup_json_ json_t *req =
	    json_pack("{s:s,s:s,s:O,s:O,s:O,s:O,s:O}", CTL_F_OP, CTL_OP_PHASE, "phase", "agent", "network",
		      json_object_get(plan, "network") ?: json_string("none"), "network_allow",
		      json_object_get(plan, "network_allow") ?: json_array(), "limits",
		      json_object_get(plan, "limits") ?: json_object(), "env",
		      json_object_get(plan, "env") ?: json_array(), "keep_secrets",
		      json_object_get(plan, "secrets") ?: json_array());
	if (!req)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (json_object_get(plan, "user"))
		json_object_set(req, "user", json_object_get(plan, "user"));
	if (json_object_get(plan, "capabilities"))
		json_object_set(req, "capabilities", json_object_get(plan, "capabilities"));
	_cleanup_json_ json_t *reply = NULL;
	bool live = env_is_live(ctx, id);
	/* Intent first: if this process dies once the supervisor has switched,
	 * the next phase or restore call finishes the record. */
	st.phase_switching = true;
	int w = env_record_write(ctx, id, &st);
	if (w < 0)
		return err_errnum(err, w, "record the switch of '%s' to the agent phase", id);
	_cleanup_err_ sbx_err *ce = NULL;
	if (live && env_call(ctx, id, req, &reply, &ce) < 0) {
		if (!(sbx_err_code(ce) == SBX_E_CONFLICT && sbx_err_errno(ce) == EALREADY)) {
			st.phase_switching = false;
			(void)env_record_write(ctx, id, &st);
			if (err)
				*err = TAKE_PTR(ce);
			return err_wrap(err, "switch '%s' to the agent phase", id);
		}
		/* The supervisor switched already (an interrupted switch): record it. */
	}
	if (reply && !json_bool(reply, CTL_F_OK, false))
		return json_str(reply, CTL_F_MESSAGE)
			   ? err_set(err, err_code_from_name(json_str(reply, CTL_F_CODE) ?: "internal"), EIO,
				     "switch '%s' to the agent phase: %s", id, json_str(reply, CTL_F_MESSAGE))
			   : err_set(err, SBX_E_INTERNAL, EIO, "switch '%s' to the agent phase: init refused",
				     id);

	/* The record: what a restore starts again with, and what inspect shows. */
	json_t *kept = json_object_get(plan, "secrets"), *removed = json_array();
	_cleanup_json_ json_t *secrets = json_array();
	json_t *s;
	size_t i, k;
	json_array_foreach(st.secrets, i, s)
	{
		bool keep = false;
		json_t *n;
		json_array_foreach(kept, k, n) keep |=
		    streq(json_string_value(n) ?: "", json_str(s, "name") ?: "");
		json_array_append(keep ? secrets : removed, keep ? s : json_object_get(s, "name"));
	}
	if (reply && json_is_array(json_object_get(reply, "secrets_removed"))) {
		json_decref(removed);
		removed = json_incref(json_object_get(reply, "secrets_removed"));
	}
	const char *net = json_str(plan, "network") ?: "none";
	st.phase = "agent";
	st.secrets = secrets;
	st.network = net;
	st.network_allow = net_proxied(net) ? json_object_get(plan, "network_allow") : NULL;
	env_record_limits_update(&st, json_object_get(plan, "limits"));
	if (json_object_get(plan, "env"))
		st.env = json_object_get(plan, "env");
	st.agent_policy = json_object_get(plan, "policy");
	user_spec pu;
	const char *pluser = json_str(plan, "user");
	if (pluser) {
		st.user = pluser;
		if (user_spec_parse(pluser, &pu, NULL) == 0 && !user_spec_is_root(&pu))
			st.user_no_root = true;
	}
	if (json_object_get(plan, "capabilities"))
		st.capabilities = json_object_get(plan, "capabilities");
	st.agent_phase = NULL;
	st.phase_switching = false;
	st.phase_changed_ms = now_ms_real();
	_cleanup_json_ json_t *rec = env_record_format(&st);
	int r = rec ? env_state_write(ctx, id, rec) : -ENOMEM;
	if (r < 0) {
		json_decref(removed);
		return err_errnum(err, r, "record the agent phase of '%s'", id);
	}
	*ret =
	    json_pack("{s:s,s:s,s:s,s:I,s:o,s:s,s:O,s:o,s:b,s:f}", "environment_id", id, "phase", "agent",
		      "previous_phase", "setup", "processes_ended",
		      (json_int_t)json_int(reply, "processes_ended", 0), "secrets_removed", removed,
		      "network", net, "network_allow", json_object_get(plan, "network_allow") ?: json_array(),
		      "limits", json_incref(json_object_get(rec, "limits")) ?: json_object(), "live", live,
		      "phase_ms", now_ms() - t0);
	if (*ret && json_str(reply, "limits_error"))
		json_object_set_new(*ret, "warnings", json_pack("[s]", json_str(reply, "limits_error")));
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
