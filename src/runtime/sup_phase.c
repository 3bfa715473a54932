/* The agent phase, the supervisor's side (docs/secrets.md): the one switch
 * from the setup phase to the agent phase. The supervisor narrows what
 * later commands get (egress allowlist, timeouts, TTL), init ends the
 * setup phase's processes and drops the secrets, and then the cgroup
 * limits are lowered. */
#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>

#include "policy/egress_match.h"
#include "runtime/ctl_proto.h"
#include "runtime/sup_internal.h"
#include "util/json.h"

/* setup -> agent, once. What later commands get is narrowed first (the
 * egress allowlist, timeouts), then init ends every process of the setup
 * phase and drops the secrets; when it answers, the cgroup limits are
 * lowered (nothing of the setup phase holds memory any more) and the client
 * gets init's reply. Requests that arrive meanwhile reach init after it. */
bool sup_phase_begin(supervisor *s, int conn, json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	if (!streq(json_str(m, "phase") ?: "", "agent"))
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"unknown phase '%s' (the only switch is to agent)", json_str(m, "phase") ?: "");
	else if (c->agent_phase || s->phase_pending)
		err_set(&e, SBX_E_CONFLICT, EALREADY,
			"the environment is already in the agent phase (phases only move forward)");
	else if (c->degraded)
		err_set(&e, SBX_E_UNAVAILABLE, EPERM,
			"phases need a pid namespace to end the setup phase's processes, and this host "
			"allows none");
	else if (s->freeze_conn >= 0)
		err_set(&e, SBX_E_CONFLICT, EBUSY,
			"a snapshot of this environment is in progress: switch after it");
	else if (s->n_waiters >= ARRAY_SIZE(s->waiters))
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many requests waiting for this environment");
	json_t *allow = json_object_get(m, "network_allow");
	if (!e && s->proxy_running && json_is_array(allow))
		(void)sup_egress_swap(s, allow, streq(json_str(m, "network") ?: "", "internet"), &e);
	if (!e) {
		json_t *l = json_object_get(m, "limits");
		c->timeout_ms = json_int(l, "timeout_ms", c->timeout_ms);
		c->output_bytes = json_int(l, "output_bytes", c->output_bytes);
		c->ttl_ms = json_int(l, "ttl_ms", c->ttl_ms);
		if (c->ttl_ms > 0 && s->ttl_fd < 0 &&
		    (s->ttl_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0)
			sup_ep_add(s, s->ttl_fd);
		sup_arm_ttl(s);
		if (json_send(s->init_sock, m, NULL, 0) < 0)
			err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
	}
	if (e) {
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	sup_restore_standby_drop(s); /* built for the setup phase's walls */
	s->waiters[s->n_waiters++] = conn;
	s->phase_pending = true;
	s->phase_limits = json_incref(json_object_get(m, "limits"));
	return true;
}

void sup_phase_end(supervisor *s, json_t *reply)
{
	s->phase_pending = false;
	s->c->agent_phase = json_bool(reply, "ok", false);
	json_t *l = s->phase_limits;
	if (s->c->agent_phase && s->cg && json_is_object(l)) {
		json_t *cpus = json_object_get(l, "cpus");
		cgroup_limits lim = {.memory_bytes = json_int(l, "memory_bytes", 0),
				     .pids = json_int(l, "pids", 0),
				     .cpus = json_is_number(cpus) ? json_number_value(cpus) : 0};
		_cleanup_err_ sbx_err *e = NULL;
		if (cgroup_set_limits(s->cg, &lim, &e) < 0)
			json_object_set_new(reply, "limits_error", json_string(sbx_err_message(e)));
	}
	json_decref(s->phase_limits);
	s->phase_limits = NULL;
}

/* Not a phase, but the same kind of change to what later commands get: the
 * environment's own variables, replaced whole (ctl_proto.h CTL_OP_ENV). Init
 * gets them on its socket ahead of any later spawn, so the reply can go at
 * once. */
void sup_env_set(supervisor *s, int conn, const json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	json_t *env = json_object_get(m, "env"), *v;
	size_t i;
	bool ok = json_is_array(env);
	json_array_foreach(env, i, v) ok =
	    ok && json_is_string(v) && strchr(json_string_value(v), '=') && json_string_value(v)[0] != '=';
	char **strv = ok ? json_to_strv(env) : NULL;
	if (!ok)
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "env: an array of K=V strings");
	else if (!strv)
		err_set(&e, SBX_E_INTERNAL, ENOMEM, "out of memory");
	else if (json_send(s->init_sock, m, NULL, 0) < 0) /* init reads only its env */
		err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
	if (e) {
		strv_free(strv);
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return;
	}
	strv_free(s->c->env);
	s->c->env = strv;
	sup_restore_standby_drop(s); /* its init has the old ones */
	sup_send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_ENV, CTL_F_OK, 1), NULL, 0);
}
