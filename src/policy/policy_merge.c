/* Composition of policy documents (policy.h policy_merge): a later policy
 * over a base may only narrow it (network, limits, volumes, secrets,
 * plugins and their config, capabilities, devices, user), unless it says
 * "override": true. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/egress_match.h"
#include "policy/policy.h"
#include "policy/policy_internal.h"
#include "runtime/caps.h"
#include "runtime/cdi.h"
#include "runtime/user.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

#define WIDEN_HINT "; set \"override\": true to widen"

int policy_merge(const policy *base, const policy *later, policy **ret, sbx_err **err)
{
	bool ov = later->override;
	_cleanup_policy_ policy *m = policy_new();
	if (!m)
		return policy_oom(err);
	const char *name = later->name ? later->name : base->name;
	if (name && !(m->name = strdup(name)))
		return policy_oom(err);

	/* network */
	policy_net_mode bm = base->net_mode == POLICY_NET_UNSET ? POLICY_NET_NONE : base->net_mode;
	policy_net_mode lm = later->net_mode == POLICY_NET_UNSET ? bm : later->net_mode;
	if (!ov && lm > bm)
		return policy_bad(err, "network.mode", "\"%s\" is wider than the base's \"%s\"" WIDEN_HINT,
				  policy_mode_name(lm), policy_mode_name(bm));
	m->net_mode = lm;
	char *const *allow = later->allow ? later->allow : base->allow;
	if (!ov && later->allow && lm == POLICY_NET_ALLOW && bm == POLICY_NET_ALLOW) {
		for (size_t i = 0; later->allow[i]; i++) {
			egress_rule li;
			if (egress_rule_parse(later->allow[i], &li, NULL) < 0)
				return policy_bad(err, "network.allow", "invalid pattern");
			bool covered = false;
			for (size_t j = 0; base->allow && base->allow[j] && !covered; j++) {
				egress_rule bj;
				covered = egress_rule_parse(base->allow[j], &bj, NULL) == 0 &&
					  egress_rule_covers(&bj, &li);
			}
			if (!covered)
				return err_set(
				    err, SBX_E_INVALID_ARGUMENT, EINVAL,
				    "network.allow[%zu]: '%s' is not allowed by the base policy" WIDEN_HINT,
				    i, later->allow[i]);
		}
	}
	if (lm != POLICY_NET_NONE && allow && policy_strv_copy(allow, &m->allow) < 0)
		return policy_oom(err);

	/* limits */
	for (size_t i = 0; i < policy_n_limit_ints; i++) {
		int64_t b = *(const int64_t *)((const char *)&base->limits + policy_limit_ints[i].off);
		int64_t l = *(const int64_t *)((const char *)&later->limits + policy_limit_ints[i].off);
		if (!ov && l > 0 && b > 0 && l > b)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "limits.%s: %lld is larger than the base's %lld" WIDEN_HINT,
				       policy_limit_ints[i].key, (long long)l, (long long)b);
		*(int64_t *)((char *)&m->limits + policy_limit_ints[i].off) = l > 0 ? l : b;
	}
	if (!ov && later->limits.cpus > 0 && base->limits.cpus > 0 && later->limits.cpus > base->limits.cpus)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "limits.cpus: %g is larger than the base's %g" WIDEN_HINT, later->limits.cpus,
			       base->limits.cpus);
	m->limits.cpus = later->limits.cpus > 0 ? later->limits.cpus : base->limits.cpus;

	/* volumes: later may drop volumes or make them read-only */
	const policy *vsrc = later->volumes_set ? later : base;
	if (!ov && later->volumes_set)
		for (size_t i = 0; i < later->n_volumes; i++) {
			const policy_volume *lv = &later->volumes[i];
			const policy_volume *bv = NULL;
			for (size_t j = 0; j < base->n_volumes && !bv; j++)
				if (streq(base->volumes[j].host, lv->host) &&
				    streq(base->volumes[j].path, lv->path))
					bv = &base->volumes[j];
			if (!bv)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "filesystem.volumes[%zu]: '%.200s' is not mounted by the base "
					       "policy" WIDEN_HINT,
					       i, lv->path);
			if (bv->readonly && !lv->readonly)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "filesystem.volumes[%zu]: '%.200s' is read-only in the base "
					       "policy" WIDEN_HINT,
					       i, lv->path);
		}
	m->volumes_set = vsrc->volumes_set;
	if (vsrc->n_volumes) {
		m->volumes = calloc(vsrc->n_volumes, sizeof(policy_volume));
		if (!m->volumes)
			return policy_oom(err);
		for (size_t i = 0; i < vsrc->n_volumes; i++) {
			m->volumes[i].readonly = vsrc->volumes[i].readonly;
			m->volumes[i].host = strdup(vsrc->volumes[i].host);
			m->volumes[i].path = strdup(vsrc->volumes[i].path);
			m->n_volumes++;
			if (!m->volumes[i].host || !m->volumes[i].path)
				return policy_oom(err);
		}
	}

	/* hidden: union (hiding more only narrows) */
	if (base->hidden || later->hidden) {
		if (policy_strv_copy(base->hidden, &m->hidden) < 0)
			return policy_oom(err);
		for (char *const *h = later->hidden; h && *h; h++)
			if (!policy_strv_has(m->hidden, *h) && policy_strv_push_copy_n(&m->hidden, *h) < 0)
				return policy_oom(err);
	}

	/* env: union, later wins */
	if (base->env || later->env) {
		if (policy_strv_copy(later->env, &m->env) < 0)
			return policy_oom(err);
		for (char *const *e = base->env; e && *e; e++) {
			size_t kl = strcspn(*e, "=");
			bool dup = false;
			for (char *const *q = later->env; q && *q && !dup; q++)
				dup = strncmp(*q, *e, kl + 1) == 0;
			if (!dup && policy_strv_push_copy_n(&m->env, *e) < 0)
				return policy_oom(err);
		}
		qsort(m->env, policy_strv_len(m->env), sizeof(char *), policy_cmp_str);
	}

	/* secrets: later may only keep a subset, from the same source */
	const policy *ssrc = later->secrets_set ? later : base;
	if (!ov && later->secrets_set)
		for (size_t i = 0; i < later->n_secrets; i++) {
			const policy_secret *ls = &later->secrets[i];
			bool ok = false;
			for (size_t j = 0; j < base->n_secrets && !ok; j++) {
				const policy_secret *bs = &base->secrets[j];
				ok = streq(bs->name, ls->name) && bs->from_env == ls->from_env &&
				     (!bs->file) == (!ls->file) && (!bs->file || streq(bs->file, ls->file));
			}
			if (!ok)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "secrets.%.64s: not granted by the base policy" WIDEN_HINT,
					       ls->name);
		}
	m->secrets_set = ssrc->secrets_set;
	if (ssrc->n_secrets) {
		m->secrets = calloc(ssrc->n_secrets, sizeof(policy_secret));
		if (!m->secrets)
			return policy_oom(err);
		for (size_t i = 0; i < ssrc->n_secrets; i++) {
			m->secrets[i].from_env = ssrc->secrets[i].from_env;
			m->secrets[i].name = strdup(ssrc->secrets[i].name);
			m->secrets[i].file = ssrc->secrets[i].file ? strdup(ssrc->secrets[i].file) : NULL;
			m->n_secrets++;
			if (!m->secrets[i].name || (ssrc->secrets[i].file && !m->secrets[i].file))
				return policy_oom(err);
		}
	}

	/* plugins: host code loaded into the supervisor; only a subset */
	if (!ov && later->plugins)
		for (size_t i = 0; later->plugins[i]; i++)
			if (!policy_strv_has(base->plugins, later->plugins[i]))
				return err_set(
				    err, SBX_E_INVALID_ARGUMENT, EINVAL,
				    "plugins[%zu]: '%.200s' is not loaded by the base policy" WIDEN_HINT, i,
				    later->plugins[i]);
	char *const *plugins = later->plugins ? later->plugins : base->plugins;
	if (plugins && policy_strv_copy(plugins, &m->plugins) < 0)
		return policy_oom(err);
	/* a plugin's config: the base's, unless the later one (with override, or
	 * saying exactly the same) sets it; a config is part of what a plugin
	 * enforces, so changing it is not a narrowing sbx can check */
	for (size_t i = 0; plugins && plugins[i]; i++) {
		json_t *bc = json_object_get(base->plugin_config, plugins[i]);
		json_t *lc = json_object_get(later->plugin_config, plugins[i]);
		if (!ov && lc && !json_equal(lc, bc))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "plugins[%zu]: '%.200s': the config differs from the base policy's" WIDEN_HINT, i,
			    plugins[i]);
		json_t *c = lc ? lc : bc;
		if (c && ((!m->plugin_config && !(m->plugin_config = json_object())) ||
			  json_object_set(m->plugin_config, plugins[i], c) < 0))
			return policy_oom(err);
	}
	/* capabilities: a ceiling; later keeps a subset */
	if (!ov && later->caps_set && base->caps_set && (later->caps & ~base->caps)) {
		int c = __builtin_ctzll(later->caps & ~base->caps);
		return policy_bad(err, "capabilities", "%s is not kept by the base policy" WIDEN_HINT,
				  caps_name(c));
	}
	m->caps_set = later->caps_set || base->caps_set;
	m->caps = later->caps_set ? later->caps : base->caps;
	/* devices: an allowlist; later's entries must each be allowed by the
	 * base's (unset: none) */
	for (char **d = later->devices; !ov && d && *d; d++)
		if (!cdi_allowed((const char *const *)base->devices, *d))
			return policy_bad(err, "devices",
					  "'%.200s' is not allowed by the base policy" WIDEN_HINT, *d);
	char **devs = later->devices ? later->devices : base->devices;
	_cleanup_json_ json_t *dj = devs ? json_from_strv((const char *const *)devs) : NULL;
	if (devs && (!dj || !(m->devices = json_to_strv(dj))))
		return policy_oom(err);

	/* user: later's if set; root where the base's user is not root widens */
	user_spec bu, lu;
	if (!ov && later->user && base->user && user_spec_parse(base->user, &bu, NULL) == 0 &&
	    user_spec_parse(later->user, &lu, NULL) == 0 && !user_spec_is_root(&bu) && user_spec_is_root(&lu))
		return policy_bad(err, "user", "'%.64s' (root) is wider than the base's '%.64s'" WIDEN_HINT,
				  later->user, base->user);
	const char *user = later->user ? later->user : base->user;
	if (user && !(m->user = strdup(user)))
		return policy_oom(err);
	*ret = TAKE_PTR(m);
	return 0;
}
