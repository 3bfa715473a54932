/* A live environment's egress allowlist, changed (sbx_env_egress_set): the
 * supervisor's proxy swaps its allowlist (sup_egress_set), and the record
 * keeps it for the next start (a resume, a wake from suspend, a restore). */
#include <errno.h>
#include <string.h>

#include "api/api.h"
#include "policy/egress_match.h"
#include "runtime/ctl_proto.h"
#include "util/json.h"

_public_ int sbx_env_egress_set(sbx_ctx *ctx, const char *ref, const char *const *allow, json_t **ret,
				sbx_err **err)
{
	return sbx_env_network_set(ctx, ref, "allow", allow, ret, err);
}

_public_ int sbx_env_network_set(sbx_ctx *ctx, const char *ref, const char *network, const char *const *allow,
				 json_t **ret, sbx_err **err)
{
	if (!net_proxied(network))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "network '%s': a live environment's network is allow or internet",
			       network ?: "(null)");
	_cleanup_free_ char *id = NULL;
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_load(ctx, ref, &id, &st, err) < 0)
		return -1;
	const char *net = st.network ?: "none";
	if (!net_proxied(net))
		return err_set(err, SBX_E_CONFLICT, EPERM,
			       "environment '%s' has network %s: only one created with network allow (even "
			       "an empty list) or internet has an egress proxy whose rules can change",
			       id, net);
	/* The library does not know the ceiling of an environment made under a
	 * policy (or with an agent phase's policy): those keep the allowlist
	 * they were given. */
	if (st.policy || st.agent_policy || json_is_string(json_object_get(st.agent_phase, "policy")))
		return err_set(err, SBX_E_CONFLICT, EPERM,
			       "environment '%s' was created under a policy: its allowlist is the policy's",
			       id);
	_cleanup_egress_allowlist_ egress_allowlist *al = NULL;
	if ((streq(network, "internet") ? egress_allowlist_parse_open(allow, &al, err)
					: egress_allowlist_parse(allow, &al, err)) < 0)
		return err_wrap(err, "network allowlist");
	_cleanup_json_ json_t *list = json_from_strv(allow);
	if (!list)
		return err_oom(err);
	_cleanup_json_ json_t *reply = NULL;
	bool live = env_is_live(ctx, id);
	if (live) {
		_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:O}", CTL_F_OP, CTL_OP_EGRESS, "network",
						       network, "network_allow", list);
		if (!req)
			return err_oom(err);
		if (env_call(ctx, id, req, &reply, err) < 0)
			return err_wrap(err, "change the egress allowlist of '%s'", id);
	}
	st.network = network;
	st.network_allow = list;
	/* Without a policy the agent phase keeps the setup phase's network: the
	 * same list, so that a later switch neither widens nor undoes it. */
	if (json_is_object(st.agent_phase) &&
	    (json_object_set(st.agent_phase, "network_allow", list) < 0 ||
	     json_object_set_new(st.agent_phase, "network", json_string(network)) < 0))
		return err_oom(err);
	_cleanup_json_ json_t *rec = env_record_format(&st);
	int r = rec ? env_state_write(ctx, id, rec) : -ENOMEM;
	if (r < 0)
		return err_errnum(err, -r, "record the egress allowlist of '%s'", id);
	if (ret && !(*ret = json_pack("{s:s,s:s,s:O,s:b}", "environment_id", id, "network", network,
				      "network_allow", list, "live", live)))
		return err_oom(err);
	return 0;
}
