/* Secrets, hidden paths and phases on the API side (docs/secrets.md):
 * src/api/secrets.c (create), src/api/phase_plan.c (the agent phase's
 * plan, at create), src/api/phase.c (the switch to it). The
 * runtime side is src/runtime/secrets.c, hide.c, setup.c, init.c and the
 * supervisor's sup_phase_begin/sup_phase_end (sup_phase.c). */
#pragma once
#include <jansson.h>

#include "api/base.h"
#include "runtime/runtime.h"

struct policy;

/* policy_apply's part: the policy's hidden paths are added to o->hidden; a
 * policy that sets secrets lists all that may be given (explicit o->secrets
 * must be among them; none explicit: all of the policy's). */
int secrets_policy_apply(const struct policy *p, sbx_create_opts *o, policy_storage *keep, sbx_err **err);

/* env_create_impl's part, once c's network, limits, env and volumes are
 * set: validates o's hidden paths and secrets (or takes restore_state's),
 * reads the secret values from the host into c (memory only), plans the
 * agent phase, and returns the state fields to record (never a value):
 * {"phase","secrets":[{"name","from","host_file"?,"path"?}],"hidden","agent_phase"}. */
int secrets_prepare(const sbx_create_opts *o, const json_t *restore_state, env_config *c, json_t **ret_state,
		    sbx_err **err);

/* The agent phase of an environment configured as c (under the policy
 * setup_spec, may be NULL), under the policy `agent_spec` (profile, file or
 * inline JSON; NULL: everything but the secrets kept):
 * {"policy","network","network_allow","limits","env","secrets","warnings"}.
 * As any policy, the agent policy is a ceiling: the agent phase gets the
 * narrower of it and what the setup phase has. It fails, naming the field,
 * where it is wider than the setup policy (policy_merge's rule, without
 * override) or would change what cannot change live (volumes, hidden paths,
 * plugins, the host network of network open). */
int phase_plan(const env_config *c, const char *setup_spec, const char *agent_spec, json_t **ret,
	       sbx_err **err);

/* MCP: a policy document from a client may name only the secrets that the
 * server's operator offers (SBX_MCP_SECRETS="NAME,NAME2": host variables),
 * never a host file. `what` names the argument in errors. */
int secrets_mcp_check(const json_t *policy_doc, const char *what, sbx_err **err);
