/* The agent phase's plan (docs/secrets.md), made at create from the setup
 * and agent policies (secrets.h phase_plan): what sbx_env_phase (phase.c)
 * switches to. Below the create that calls it, and apart from the switch. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "api/secrets.h"
#include "policy/egress_match.h"
#include "policy/policy.h"
#include "runtime/caps.h"
#include "runtime/user.h"
#include "util/json.h"

/* A policy's network mode "open" is "internet": every public host and port
 * through the proxy; only an environment made without a policy has the
 * host's network ("open", which no phase narrows). */
static int net_rank(const char *m)
{
	return streq(m, "open") ? 3 : streq(m, "internet") ? 2 : streq(m, "allow") ? 1 : 0;
}

static const char *mode_name(policy_net_mode m)
{
	return m == POLICY_NET_OPEN ? "internet" : m == POLICY_NET_ALLOW ? "allow" : "none";
}

/* A limit of the agent policy (<= 0: unset) is a ceiling, as any policy's:
 * larger than the setup policy's is an error (policy_merge's rule); the
 * agent phase gets the smaller of it and what the setup phase has (*cur,
 * <= 0: none). */
static int narrow(const char *field, int64_t agent, int64_t setup_pol, int64_t *cur, sbx_err **err)
{
	if (agent <= 0)
		return 0;
	if (setup_pol > 0 && agent > setup_pol)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EPERM,
		    "limits.%s: %lld is larger than the setup policy's %lld; the agent phase may only narrow",
		    field, (long long)agent, (long long)setup_pol);
	if (*cur <= 0 || agent < *cur)
		*cur = agent;
	return 0;
}

/* Is `rule` within `by`, or within network mode internet where `internet`? */
static bool covered_in(const char *rule, bool internet, char *const *by)
{
	egress_rule r;
	return egress_rule_parse(rule, &r, NULL) == 0 &&
	       egress_rule_within(&r, internet, (const char *const *)by);
}

static bool secret_exists(const env_config *c, const char *name)
{
	size_t nl = strlen(name);
	for (char **kv = c->secret_env; kv && *kv; kv++)
		if (strncmp(*kv, name, nl) == 0 && (*kv)[nl] == '=')
			return true;
	for (size_t i = 0; i < c->n_secret_files; i++)
		if (streq(c->secret_files[i].name, name))
			return true;
	return false;
}

static bool volumes_equal(const env_config *c, const policy *a)
{
	if (a->n_volumes != c->n_volumes)
		return false;
	for (size_t i = 0; i < a->n_volumes; i++) {
		_cleanup_free_ char *real = realpath(a->volumes[i].host, NULL);
		bool found = false;
		for (size_t k = 0; k < c->n_volumes && !found; k++)
			found = streq(c->volumes[k].host, real ? real : a->volumes[i].host) &&
				streq(c->volumes[k].path, a->volumes[i].path) &&
				c->volumes[k].readonly == a->volumes[i].readonly;
		if (!found)
			return false;
	}
	return true;
}

static bool plugins_equal(const env_config *c, const policy *a)
{
	size_t n = 0;
	for (char **p = a->plugins; p && *p; p++, n++) {
		bool found = false;
		size_t i;
		json_t *v;
		json_array_foreach(c->plugins, i, v) found |= streq(json_str(v, "path") ?: "", *p);
		if (!found)
			return false;
	}
	return n == json_array_size(c->plugins);
}

int phase_plan(const env_config *c, const char *setup_spec, const char *spec, json_t **ret, sbx_err **err)
{
	_cleanup_policy_ policy *a = NULL, *sp = NULL;
	if (spec && policy_load_spec(spec, &a, err) < 0)
		return -1;
	if (a && setup_spec && policy_load_spec(setup_spec, &sp, err) < 0)
		return -1;
	const char *net = c->network;
	json_t *allow = json_from_strv((const char *const *)c->network_allow);
	_cleanup_json_ json_t *plan =
	    json_pack("{s:o,s:s,s:o,s:[],s:[]}", "policy",
		      spec ? json_string(spec[0] == '{' ? "(inline)" : spec) : json_null(), "network", net,
		      "network_allow", allow ? allow : json_array(), "secrets", "warnings");
	_cleanup_json_ json_t *env = json_from_strv((const char *const *)c->env);
	if (!plan || !env)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	int64_t mem = c->limits.memory_bytes, pids = c->limits.pids, timeout = c->timeout_ms, ttl = c->ttl_ms,
		output = c->output_bytes;
	double cpus = c->limits.cpus;
	if (a) {
		if (a->override)
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EPERM,
			    "\"override\" is not allowed: the agent phase may only narrow the setup phase");
		/* Network: what the setup policy allows bounds the agent policy
		 * (an error past it); what the setup phase has (options may have
		 * narrowed the policy) bounds the result. */
		if (a->net_mode != POLICY_NET_UNSET) {
			const char *am = mode_name(a->net_mode);
			if (sp && sp->net_mode != POLICY_NET_UNSET &&
			    net_rank(am) > net_rank(mode_name(sp->net_mode)))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "network.mode: \"%s\" is wider than the setup policy's \"%s\"",
					       am, mode_name(sp->net_mode));
			for (size_t i = 0;
			     sp && sp->net_mode == POLICY_NET_ALLOW && sp->allow && a->allow && a->allow[i];
			     i++)
				if (!covered_in(a->allow[i], false, sp->allow))
					return err_set(
					    err, SBX_E_INVALID_ARGUMENT, EPERM,
					    "network.allow[%zu]: '%s' is not allowed by the setup policy", i,
					    a->allow[i]);
			if (streq(net, "open") && !streq(am, "open"))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "network.mode: the setup phase has network open (the host's "
					       "own network), "
					       "which cannot be narrowed while the environment runs; give "
					       "the setup phase "
					       "an allowlist instead");
			if (streq(am, "none") || streq(net, "none")) {
				json_object_set_new(plan, "network",
						    json_string(streq(net, "open") ? "open" : "none"));
				json_object_set_new(plan, "network_allow", json_array());
			} else if (net_proxied(am) && net_proxied(net)) {
				/* Both lists' rules that the other covers: within both.
				 * Internet on one side covers the other's names and public
				 * addresses; on both, the lists are internal addresses. */
				bool a_int = streq(am, "internet"), n_int = streq(net, "internet");
				json_t *both = json_array();
				for (char **r = a->allow; r && *r; r++)
					if (covered_in(*r, n_int, c->network_allow))
						json_array_append_new(both, json_string(*r));
				for (char **r = c->network_allow; r && *r; r++)
					if (covered_in(*r, a_int, a->allow)) {
						bool dup = false;
						size_t i;
						json_t *v;
						json_array_foreach(both, i, v) dup |=
						    streq(json_string_value(v), *r);
						if (!dup)
							json_array_append_new(both, json_string(*r));
					}
				json_object_set_new(plan, "network_allow", both);
				json_object_set_new(plan, "network",
						    json_string(a_int && n_int ? "internet" : "allow"));
			}
		}
		const policy_limits *l = &a->limits, *sl = sp ? &sp->limits : NULL;
		if (narrow("memory_bytes", l->memory_bytes, sl ? sl->memory_bytes : -1, &mem, err) < 0 ||
		    narrow("pids", l->pids, sl ? sl->pids : -1, &pids, err) < 0 ||
		    narrow("timeout_ms", l->timeout_ms, sl ? sl->timeout_ms : -1, &timeout, err) < 0 ||
		    narrow("ttl_ms", l->ttl_ms, sl ? sl->ttl_ms : -1, &ttl, err) < 0 ||
		    narrow("output_bytes", l->output_bytes, sl ? sl->output_bytes : -1, &output, err) < 0)
			return -1;
		if (l->cpus > 0) {
			if (sl && sl->cpus > 0 && l->cpus > sl->cpus)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "limits.cpus: %g is larger than the setup policy's %g; the "
					       "agent phase may only "
					       "narrow",
					       l->cpus, sl->cpus);
			if (cpus <= 0 || l->cpus < cpus)
				cpus = l->cpus;
		}
		if (l->disk_bytes > 0 && sl && sl->disk_bytes > 0 && l->disk_bytes > sl->disk_bytes)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "limits.disk_bytes: %lld is larger than the setup policy's %lld; the "
				       "agent phase may only "
				       "narrow",
				       (long long)l->disk_bytes, (long long)sl->disk_bytes);
		if (l->disk_bytes > 0 && (c->disk_bytes <= 0 || l->disk_bytes < c->disk_bytes)) {
			json_array_append_new(
			    json_object_get(plan, "warnings"),
			    json_string("the agent policy's disk quota (limits.disk_bytes) is not applied: "
					"a quota cannot change while the environment runs"));
		}
		if (a->volumes_set && !volumes_equal(c, a))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EPERM,
			    "filesystem.volumes: volumes cannot change while the environment runs; the agent "
			    "policy must list exactly the setup phase's (or none of its own)");
		for (char **h = a->hidden; h && *h; h++) {
			bool found = false;
			for (char **k = c->hidden; k && *k && !found; k++)
				found = streq(*k, *h);
			if (!found)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "filesystem.hidden: '%s' is not hidden in the setup phase; "
					       "paths are hidden when "
					       "the environment is created: list it in the setup policy",
					       *h);
		}
		for (size_t i = 0; i < a->n_secrets; i++) {
			if (!secret_exists(c, a->secrets[i].name))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "secrets.%s: not given in the setup phase",
					       a->secrets[i].name);
			json_array_append_new(json_object_get(plan, "secrets"),
					      json_string(a->secrets[i].name));
		}
		if (a->plugins && !plugins_equal(c, a))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "plugins: plugins cannot change while the environment runs; the agent "
				       "policy must "
				       "list exactly the setup phase's (or none of its own)");
		/* user and capabilities (docs/policy.md): what later commands run
		 * as; only a narrowing of what the setup phase has */
		if (a->user) {
			user_spec au, su;
			if (user_spec_parse(a->user, &au, err) < 0)
				return -1;
			bool setup_user =
			    c->user && user_spec_parse(c->user, &su, NULL) == 0 && !user_spec_is_root(&su);
			if (user_spec_is_root(&au) && (setup_user || c->no_root))
				return err_set(
				    err, SBX_E_INVALID_ARGUMENT, EPERM,
				    "user '%s': root is wider than the setup phase's user '%s'; the agent "
				    "phase may only narrow",
				    a->user, c->user ? c->user : "?");
			json_object_set_new(plan, "user", json_string(a->user));
		}
		if (a->caps_set) {
			uint64_t wider = a->caps & ~c->caps;
			if (wider)
				return err_set(
				    err, SBX_E_INVALID_ARGUMENT, EPERM,
				    "capabilities: %s is not kept in the setup phase; the agent phase may "
				    "only narrow",
				    caps_name(__builtin_ctzll(wider)));
			json_object_set_new(plan, "capabilities", caps_to_json(a->caps));
		}
		/* env: the agent policy's on top (later wins) */
		for (char **kv = a->env; kv && *kv; kv++) {
			size_t kl = strcspn(*kv, "=") + 1;
			size_t i;
			json_t *v;
			bool replaced = false;
			json_array_foreach(env, i,
					   v) if (!replaced && strncmp(json_string_value(v), *kv, kl) == 0)
			{
				json_array_set_new(env, i, json_string(*kv));
				replaced = true;
			}
			if (!replaced)
				json_array_append_new(env, json_string(*kv));
		}
	}
	json_object_set(plan, "env", env);
	json_object_set_new(plan, "limits",
			    json_pack("{s:I,s:I,s:f,s:I,s:I,s:I}", "memory_bytes", (json_int_t)mem, "pids",
				      (json_int_t)pids, "cpus", cpus, "timeout_ms", (json_int_t)timeout,
				      "ttl_ms", (json_int_t)ttl, "output_bytes", (json_int_t)output));
	*ret = TAKE_PTR(plan);
	return 0;
}
