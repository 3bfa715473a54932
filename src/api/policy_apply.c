/* --policy: a policy document (a built-in profile, a file or inline JSON)
 * becomes the ceiling of a create's options. Explicit options may narrow it,
 * never widen it: a wider limit, network or volume is an error that names
 * the field, since a policy is what an operator decided an agent may touch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/base.h"
#include "api/secrets.h"
#include "plugin/plugin.h"
#include "policy/policy.h"
#include "runtime/caps.h"
#include "runtime/cdi.h"
#include "runtime/user.h"
#include "util/json.h"

/* One limit: explicit value (0 = unset) against the policy's (-1 = unset). */
static int cap_limit(const char *field, int64_t *opt, int64_t pol, sbx_err **err)
{
	if (pol < 0)
		return 0;
	if (*opt == 0) {
		*opt = pol;
		return 0;
	}
	if (*opt < 0 || *opt > pol)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
			       "%s: the policy allows at most %lld; an explicit value may only narrow it",
			       field, (long long)pol);
	return 0;
}

int policy_apply(const policy *p, sbx_create_opts *o, policy_storage *keep, sbx_err **err)
{
	/* Refused rather than ignored: a policy must never look stricter than
	 * what is enforced. */
	const char *pname = p->name ? p->name : "(inline)";
	/* secrets and hidden paths (docs/secrets.md): given to the create,
	 * which reads the values on the host and hides the paths */
	if (secrets_policy_apply(p, o, keep, err) < 0)
		return err_wrap(err, "policy '%s'", pname);
	/* plugins: loaded by the environment's plugin host (docs/plugins.md);
	 * a file that cannot be loaded is reported here, before anything is
	 * created (the host checks again) */
	if (p->plugins && p->plugins[0] && !(keep->plugins = json_array()))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (char **pl = p->plugins; pl && *pl; pl++) {
		_cleanup_free_ char *real = NULL;
		if (plugin_path_check(*pl, &real, err) < 0)
			return err_wrap(err, "policy '%s'", pname);
		json_t *cfg = json_object_get(p->plugin_config, *pl);
		json_t *e = cfg ? json_pack("{s:s,s:O}", "path", *pl, "config", cfg)
				: json_pack("{s:s}", "path", *pl);
		if (!e || json_array_append_new(keep->plugins, e) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	/* user: the policy's is the default; where it is not root, an explicit
	 * user may not be root either, nor may a later exec ask for root */
	if (p->user) {
		user_spec pu, ou;
		bool p_nonroot = user_spec_parse(p->user, &pu, NULL) == 0 && !user_spec_is_root(&pu);
		if (o->user && user_spec_parse(o->user, &ou, err) < 0)
			return -1;
		if (o->user && p_nonroot && user_spec_is_root(&ou))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "user '%s': the policy runs commands as '%s', not root; an explicit "
				       "user may only "
				       "narrow it",
				       o->user, p->user);
		if (!o->user)
			o->user = p->user;
		o->user_no_root = o->user_no_root || p_nonroot;
	}
	/* capabilities: the policy's list is the ceiling of --cap-add; the
	 * result goes on as drops from the safe set */
	if (p->caps_set) {
		uint64_t kept;
		if (caps_compute(p->caps, true, o->cap_drop, o->cap_add, &kept, err) < 0)
			return err_wrap(err, "policy '%s'", pname);
		if (!(keep->cap_drop = calloc(65, sizeof(char *))))
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		size_t n = 0;
		for (int cap = 0; cap < 64; cap++)
			if ((caps_safe_set & (UINT64_C(1) << cap)) && !(kept & (UINT64_C(1) << cap)))
				keep->cap_drop[n++] = caps_name(cap);
		o->cap_drop = keep->cap_drop;
		o->cap_add = NULL;
	}
	/* devices: each one asked for must be on the policy's allowlist (unset:
	 * none); runtime/cdi.h */
	for (const char *const *d = o->devices; d && *d; d++)
		if (!cdi_allowed((const char *const *)p->devices, *d))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EPERM,
			    "device '%s': not allowed by policy '%s' (its \"devices\" allowlist %s)", *d,
			    pname, p->devices ? "does not name it" : "is empty");
	/* disk quota (o is a whole current struct here; rootless: sbx_env_create) */
	if (cap_limit("disk quota", &o->disk_bytes, p->limits.disk_bytes, err) < 0)
		return -1;
	const policy_limits *l = &p->limits;
	if (cap_limit("memory", &o->memory_bytes, l->memory_bytes, err) < 0 ||
	    cap_limit("pids", &o->pids, l->pids, err) < 0 ||
	    cap_limit("timeout", &o->timeout_ms, l->timeout_ms, err) < 0 ||
	    cap_limit("ttl", &o->ttl_ms, l->ttl_ms, err) < 0 ||
	    cap_limit("output limit", &o->output_bytes, l->output_bytes, err) < 0)
		return -1;
	if (o->idle_suspend_ms == 0 && l->idle_suspend_ms > 0) /* a default, not a ceiling */
		o->idle_suspend_ms = l->idle_suspend_ms;
	if (l->cpus > 0) {
		if (o->cpus == 0)
			o->cpus = l->cpus;
		else if (o->cpus > l->cpus)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "cpus: the policy allows at most %g", l->cpus);
	}
	/* Network: none < allow (a subset of the policy's rules) < internet (the
	 * policy's mode "open": every public host and port through the proxy,
	 * internal addresses only by the policy's IP rules). The host's network
	 * (network "open") is beyond every policy. */
	const char *want = NULL;
	_cleanup_strv_free_ char **want_allow = NULL;
	if (o->network && api_network_opts(o, &want, &want_allow, err) < 0) /* api/limits.c */
		return err_wrap(err, "network");
	if (p->net_mode == POLICY_NET_NONE || p->net_mode == POLICY_NET_UNSET) {
		if (want && !streq(want, "none"))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "network %s: the policy allows no network", want);
		o->network = "none";
		o->network_allow = NULL;
	} else if (p->net_mode == POLICY_NET_ALLOW) {
		if (want && (streq(want, "open") || streq(want, "internet")))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "network %s: the policy only allows its host list", want);
		if (want && streq(want, "allow")) {
			/* Every requested rule must be covered by one of the policy's. */
			for (char **t = want_allow; *t; t++) {
				egress_rule r;
				if (egress_rule_parse(*t, &r, err) < 0)
					return err_wrap(err, "network");
				if (!egress_rule_within(&r, false, (const char *const *)p->allow))
					return err_set(
					    err, SBX_E_INVALID_ARGUMENT, EPERM,
					    "network allow '%s': not within the policy's allowlist", *t);
			}
			keep->network_allow = TAKE_PTR(want_allow);
		} else if (!want || !streq(want, "none")) {
			size_t n = 0;
			for (char **a = p->allow; a && *a; a++)
				if (strv_push_copy(&keep->network_allow, &n, *a) < 0)
					return err_oom(err);
		}
		if (!want || !streq(want, "none")) {
			o->network = "allow";
			o->network_allow = (const char *const *)keep->network_allow;
		}
	} else {
		/* Mode open: what was asked within public hosts, or every one. */
		if (want && streq(want, "open"))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "network open (the host's own network): beyond the policy, which "
				       "allows public hosts through the egress proxy; ask for network "
				       "internet");
		for (char **t = want_allow; t && *t; t++) {
			/* An internal address only where the policy's rules name it. */
			egress_rule r;
			if (egress_rule_parse(*t, &r, err) < 0)
				return err_wrap(err, "network");
			if (!egress_rule_within(&r, true, (const char *const *)p->allow))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "network %s '%s': an internal address the policy does not "
					       "allow",
					       want, *t);
		}
		if (!want) {
			size_t n = 0;
			for (char **a = p->allow; a && *a; a++)
				if (strv_push_copy(&keep->network_allow, &n, *a) < 0)
					return err_oom(err);
			o->network = "internet";
			o->network_allow = (const char *const *)keep->network_allow;
		} else if (streq(want, "internet")) {
			o->network = "internet";
			o->network_allow = (const char *const *)(keep->network_allow = TAKE_PTR(want_allow));
		}
	}
	/* Volumes: a policy that sets them lists all that are allowed. */
	if (p->volumes_set) {
		for (size_t i = 0; i < o->n_volumes; i++) {
			bool ok = false;
			for (size_t k = 0; k < p->n_volumes && !ok; k++)
				ok = streq(p->volumes[k].host, o->volumes[i].host) &&
				     streq(p->volumes[k].path, o->volumes[i].path) &&
				     (o->volumes[i].readonly || !p->volumes[k].readonly);
			if (!ok)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "volume '%s:%s': not allowed by the policy",
					       o->volumes[i].host, o->volumes[i].path);
		}
		if (o->n_volumes == 0 && p->n_volumes > 0) {
			keep->volumes = calloc(p->n_volumes, sizeof(sbx_volume));
			if (!keep->volumes)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
			for (size_t k = 0; k < p->n_volumes; k++)
				keep->volumes[k] = (sbx_volume){p->volumes[k].host, p->volumes[k].path,
								p->volumes[k].readonly};
			o->volumes = keep->volumes;
			o->n_volumes = p->n_volumes;
		}
	}
	/* Environment: the policy's first, the caller's after (later wins). */
	if (p->env && p->env[0]) {
		size_t n = 0, m = 0;
		while (p->env[n])
			n++;
		while (o->env && o->env[m])
			m++;
		keep->env = calloc(n + m + 1, sizeof(char *));
		if (!keep->env)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			keep->env[i] = p->env[i];
		for (size_t i = 0; i < m; i++)
			keep->env[n + i] = (char *)o->env[i];
		o->env = (const char *const *)keep->env;
	}
	return 0;
}

void policy_storage_clear(policy_storage *k)
{
	strv_free(k->network_allow);
	free(k->volumes);
	free(k->env);
	json_decref(k->plugins);
	strv_free(k->hidden);
	strv_free(k->secrets);
	free(k->cap_drop);
}

_public_ int sbx_policy_list(json_t **ret, sbx_err **err)
{
	json_t *a = json_array();
	size_t n;
	const policy_profile_info *pi = policy_profiles(&n);
	for (size_t i = 0; i < n; i++) {
		_cleanup_policy_ policy *p = NULL;
		if (policy_profile(pi[i].name, &p, err) < 0) {
			json_decref(a);
			return -1;
		}
		json_t *j = policy_to_json(p);
		if (j)
			json_object_set_new(j, "description", json_string(pi[i].description));
		json_array_append_new(a, j);
	}
	*ret = json_pack("{s:o}", "policies", a);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

_public_ int sbx_policy_show(const char *spec, json_t **ret, sbx_err **err)
{
	_cleanup_policy_ policy *p = NULL;
	if (policy_load_spec(spec, &p, err) < 0)
		return -1;
	*ret = policy_to_json(p);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
