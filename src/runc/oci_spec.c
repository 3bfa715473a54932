/* Pure parsing of the OCI runtime spec (oci_spec.h): the process, mounts,
 * hooks and the whole config.json; runc exec's process from its flags. */
#include "runc/oci_spec.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "util/json.h"
#include "util/macro.h"
#include "runc/oci_spec_internal.h"

/* ---- process ---- */

static int parse_caps(const json_t *c, oci_caps *ret, sbx_err **err)
{
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
	uint64_t *dst[] = {&ret->bounding, &ret->effective, &ret->inheritable, &ret->permitted, &ret->ambient};
	ret->present = true;
	for (size_t i = 0; i < ARRAY_SIZE(sets); i++) {
		json_t *a = json_object_get(c, sets[i]);
		if (!a || json_is_null(a))
			continue;
		if (!json_is_array(a))
			return ospec_bad(err, "process.capabilities", "an object of arrays of strings");
		size_t j;
		json_t *v;
		json_array_foreach (a, j, v) {
			if (!json_is_string(v))
				return ospec_bad(err, "process.capabilities", "an object of arrays of strings");
			int cap = oci_cap_from_name(json_string_value(v));
			/* Unknown capabilities are ignored, as runc does (a newer
			 * engine may name one this kernel table lacks). */
			if (cap >= 0)
				*dst[i] |= 1ULL << cap;
		}
	}
	return 0;
}

void oci_process_done(oci_process *p)
{
	if (!p)
		return;
	strv_free(p->args);
	strv_free(p->env);
	free(p->cwd);
	free(p->user.additional_gids);
	free(p->rlimits);
	memset(p, 0, sizeof(*p));
}

int oci_process_parse_json(const json_t *j, oci_process *ret, sbx_err **err)
{
	oci_process p = {0};
	int r;
	if (!json_is_object(j))
		return ospec_bad(err, "process", "an object");
	if ((r = ospec_get_strv(j, "args", "process.args", &p.args, err)) < 0)
		goto fail;
	if (!p.args || !p.args[0] || !*p.args[0]) {
		r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'process.args' must not be empty");
		goto fail;
	}
	if ((r = ospec_get_strv(j, "env", "process.env", &p.env, err)) < 0)
		goto fail;
	if (!p.env && !(p.env = calloc(1, sizeof(char *)))) {
		r = err_oom(err);
		goto fail;
	}
	if ((r = ospec_get_str(j, "cwd", "process.cwd", &p.cwd, err)) < 0)
		goto fail;
	if (!p.cwd && !(p.cwd = strdup("/"))) {
		r = err_oom(err);
		goto fail;
	}
	if (p.cwd[0] != '/') {
		r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'process.cwd' must be an absolute path");
		goto fail;
	}
	if ((r = ospec_get_bool(j, "terminal", "process.terminal", &p.terminal, err)) < 0 ||
	    (r = ospec_get_bool(j, "noNewPrivileges", "process.noNewPrivileges", &p.no_new_privileges, err)) < 0)
		goto fail;
	if ((r = ospec_check_obj(j, "user", "process.user", err)) < 0)
		goto fail;
	json_t *u = ospec_get_obj(j, "user");
	if (u) {
		int64_t x = 0;
		if ((r = ospec_get_int(u, "uid", "process.user.uid", 0, UINT32_MAX, &x, err)) < 0)
			goto fail;
		p.user.uid = (uint32_t)x;
		x = 0;
		if ((r = ospec_get_int(u, "gid", "process.user.gid", 0, UINT32_MAX, &x, err)) < 0)
			goto fail;
		p.user.gid = (uint32_t)x;
		x = -1;
		if ((r = ospec_get_int(u, "umask", "process.user.umask", 0, 07777, &x, err)) < 0)
			goto fail;
		if (x >= 0)
			p.user.has_umask = true, p.user.umask = (uint32_t)x;
		if ((r = ospec_check_arr(u, "additionalGids", "process.user.additionalGids", err)) < 0)
			goto fail;
		json_t *g = json_object_get(u, "additionalGids");
		if (json_is_array(g) && json_array_size(g) > 0) {
			if (json_array_size(g) > 65536) {
				r = err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many additionalGids");
				goto fail;
			}
			p.user.additional_gids = calloc(json_array_size(g), sizeof(gid_t));
			if (!p.user.additional_gids) {
				r = err_oom(err);
				goto fail;
			}
			size_t i;
			json_t *v;
			json_array_foreach (g, i, v) {
				if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX) {
					r = ospec_bad(err, "process.user.additionalGids", "an array of gids");
					goto fail;
				}
				p.user.additional_gids[p.user.n_additional_gids++] = (gid_t)json_integer_value(v);
			}
		}
	}
	if ((r = ospec_check_obj(j, "capabilities", "process.capabilities", err)) < 0)
		goto fail;
	if (ospec_get_obj(j, "capabilities") && (r = parse_caps(ospec_get_obj(j, "capabilities"), &p.caps, err)) < 0)
		goto fail;
	if ((r = ospec_check_arr(j, "rlimits", "process.rlimits", err)) < 0)
		goto fail;
	json_t *rl = json_object_get(j, "rlimits");
	if (json_is_array(rl) && json_array_size(rl) > 0) {
		if (json_array_size(rl) > 64) {
			r = err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many rlimits");
			goto fail;
		}
		p.rlimits = calloc(json_array_size(rl), sizeof(*p.rlimits));
		if (!p.rlimits) {
			r = err_oom(err);
			goto fail;
		}
		size_t i;
		json_t *v;
		json_array_foreach (rl, i, v) {
			oci_rlimit *l = &p.rlimits[p.n_rlimits];
			if (!json_is_object(v)) {
				r = ospec_bad(err, "process.rlimits", "an array of objects");
				goto fail;
			}
			l->resource = oci_rlimit_from_name(json_str(v, "type"));
			if (l->resource < 0) {
				r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown rlimit type '%s'",
					    json_str(v, "type") ?: "(none)");
				goto fail;
			}
			if ((r = ospec_get_u64(v, "soft", "process.rlimits.soft", &l->soft, err)) < 0 ||
			    (r = ospec_get_u64(v, "hard", "process.rlimits.hard", &l->hard, err)) < 0)
				goto fail;
			p.n_rlimits++;
		}
	}
	int64_t adj = INT64_MIN;
	if ((r = ospec_get_int(j, "oomScoreAdj", "process.oomScoreAdj", -1000, 1000, &adj, err)) < 0)
		goto fail;
	if (adj != INT64_MIN)
		p.has_oom_score_adj = true, p.oom_score_adj = (int)adj;
	*ret = p;
	return 0;
fail:
	oci_process_done(&p);
	return r;
}

int oci_process_parse(const char *text, size_t len, oci_process *ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "process: %s (line %d)", je.text, je.line);
	return oci_process_parse_json(j, ret, err);
}

static int id_parse(const char *s, uint32_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || v > UINT32_MAX || *s == '-')
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int append_strs(json_t *o, const char *k, const char *const *v)
{
	if (!v || !*v)
		return 0;
	json_t *a = json_object_get(o, k);
	if (!a || !json_is_array(a)) {
		a = json_array();
		if (!a || json_object_set_new(o, k, a) < 0)
			return -ENOMEM;
	}
	for (; *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0)
			return -ENOMEM;
	return 0;
}

int oci_exec_process(const json_t *spec_process, const oci_exec_args *a, json_t **ret, sbx_err **err)
{
	if (!a->argv || !a->argv[0])
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "exec args cannot be empty");
	_cleanup_json_ json_t *p = json_is_object(spec_process) ? json_deep_copy(spec_process) : json_object();
	_cleanup_json_ json_t *args = json_array();
	if (!p || !args)
		return err_oom(err);
	for (char *const *v = a->argv; *v; v++)
		if (json_array_append_new(args, json_string(*v)) < 0)
			return err_oom(err);
	if (json_object_set(p, "args", args) < 0 || append_strs(p, "env", a->env) < 0 ||
	    json_object_set_new(p, "terminal", json_boolean(a->tty)) < 0)
		return err_oom(err);
	if (a->cwd && json_object_set_new(p, "cwd", json_string(a->cwd)) < 0)
		return err_oom(err);
	if (a->no_new_privs && json_object_set_new(p, "noNewPrivileges", json_true()) < 0)
		return err_oom(err);
	json_t *u = json_object_get(p, "user");
	if (!json_is_object(u)) {
		u = json_pack("{s:i,s:i}", "uid", 0, "gid", 0);
		if (!u || json_object_set_new(p, "user", u) < 0)
			return err_oom(err);
	}
	if (a->user) {
		_cleanup_free_ char *dup = strdup(a->user);
		if (!dup)
			return err_oom(err);
		char *colon = strchr(dup, ':');
		uint32_t uid, gid;
		if (colon)
			*colon = 0;
		if (id_parse(dup, &uid) < 0 || (colon && id_parse(colon + 1, &gid) < 0))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--user '%s': want uid[:gid], numbers",
				       a->user);
		if (json_object_set_new(u, "uid", json_integer(uid)) < 0 ||
		    (colon && json_object_set_new(u, "gid", json_integer(gid)) < 0))
			return err_oom(err);
	}
	for (const char *const *g = a->gids; g && *g; g++) {
		uint32_t gid;
		if (id_parse(*g, &gid) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--additional-gids '%s': want a number", *g);
		json_t *l = json_object_get(u, "additionalGids");
		if (!json_is_array(l)) {
			l = json_array();
			if (!l || json_object_set_new(u, "additionalGids", l) < 0)
				return err_oom(err);
		}
		if (json_array_append_new(l, json_integer(gid)) < 0)
			return err_oom(err);
	}
	if (a->caps && *a->caps) {
		json_t *c = json_object_get(p, "capabilities");
		if (!json_is_object(c)) {
			c = json_object();
			if (!c || json_object_set_new(p, "capabilities", c) < 0)
				return err_oom(err);
		}
		/* Not inheritable: runc 1.1 stopped adding there (CVE-2022-29162). */
		static const char *const sets[] = {"bounding", "effective", "permitted", "ambient"};
		for (size_t i = 0; i < ARRAY_SIZE(sets); i++)
			if (append_strs(c, sets[i], a->caps) < 0)
				return err_oom(err);
	}
	*ret = TAKE_PTR(p);
	return 0;
}

/* ---- mounts ---- */

static void mount_done(oci_mount *m)
{
	free(m->destination);
	free(m->type);
	free(m->source);
	free(m->data);
}

static int parse_mount(const json_t *j, oci_mount *m, sbx_err **err)
{
	int r;
	if (!json_is_object(j))
		return ospec_bad(err, "mounts", "an array of objects");
	if ((r = ospec_get_str(j, "destination", "mounts.destination", &m->destination, err)) < 0 ||
	    (r = ospec_get_str(j, "type", "mounts.type", &m->type, err)) < 0 ||
	    (r = ospec_get_str(j, "source", "mounts.source", &m->source, err)) < 0)
		return r;
	if (!m->destination || m->destination[0] != '/')
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "a mount's destination must be an absolute path");
	_cleanup_strv_free_ char **opts = NULL;
	if ((r = ospec_get_strv(j, "options", "mounts.options", &opts, err)) < 0)
		return r;
	size_t n = 0;
	while (opts && opts[n])
		n++;
	if ((r = oci_mount_options((const char *const *)opts, n, &m->flags, &m->propagation, &m->data, &m->bind,
				   err)) < 0)
		return err_wrap(err, "mount '%s'", m->destination);
	/* A mount without a type is a bind mount when its options say so (CDI
	 * writes such mounts); "bind" as a type always is. */
	if ((!m->type || !*m->type) && m->bind) {
		free(m->type);
		if (!(m->type = strdup("bind")))
			return err_oom(err);
	}
	if (m->type && streq(m->type, "bind"))
		m->bind = true, m->flags |= MS_BIND;
	if (!m->type || !*m->type)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "mount '%s' has no type", m->destination);
	if (m->bind && !m->source)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "bind mount '%s' has no source", m->destination);
	return 0;
}

/* ---- hooks ---- */

void oci_hooks_free(oci_hook *h, size_t n)
{
	for (size_t i = 0; h && i < n; i++) {
		free(h[i].path);
		strv_free(h[i].args);
		strv_free(h[i].env);
	}
	free(h);
}

int oci_hooks_parse(const json_t *hooks, oci_hook_kind kind, oci_hook **ret, size_t *ret_n, sbx_err **err)
{
	json_t *a = hooks ? json_object_get(hooks, oci_hook_names[kind]) : NULL;
	*ret = NULL;
	*ret_n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 1024)
		return ospec_bad(err, oci_hook_names[kind], "an array of hooks");
	size_t n = json_array_size(a);
	if (n == 0)
		return 0;
	oci_hook *h = calloc(n, sizeof(*h));
	if (!h)
		return err_oom(err);
	size_t i;
	json_t *v;
	int r;
	json_array_foreach (a, i, v) {
		if (!json_is_object(v)) {
			r = ospec_bad(err, oci_hook_names[kind], "an array of objects");
			goto fail;
		}
		int64_t t = 0;
		if ((r = ospec_get_str(v, "path", "hooks.path", &h[i].path, err)) < 0 ||
		    (r = ospec_get_strv(v, "args", "hooks.args", &h[i].args, err)) < 0 ||
		    (r = ospec_get_strv(v, "env", "hooks.env", &h[i].env, err)) < 0 ||
		    (r = ospec_get_int(v, "timeout", "hooks.timeout", 0, 86400, &t, err)) < 0)
			goto fail;
		if (!h[i].path || h[i].path[0] != '/') {
			r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "a %s hook's path must be absolute",
				    oci_hook_names[kind]);
			goto fail;
		}
		h[i].timeout = (int)t;
	}
	*ret = h;
	*ret_n = n;
	return 0;
fail:
	oci_hooks_free(h, n);
	return r;
}

/* ---- the whole spec ---- */

void oci_spec_free(oci_spec *s)
{
	if (!s)
		return;
	free(s->oci_version);
	oci_process_done(&s->process);
	free(s->root_path);
	free(s->hostname);
	for (size_t i = 0; i < s->n_mounts; i++)
		mount_done(&s->mounts[i]);
	free(s->mounts);
	for (size_t i = 0; i < s->n_namespaces; i++)
		free(s->namespaces[i].path);
	free(s->namespaces);
	for (size_t i = 0; i < s->n_devices; i++)
		free(s->devices[i].path);
	free(s->devices);
	free(s->uid_mappings);
	free(s->gid_mappings);
	oci_resources_done(&s->resources);
	free(s->cgroups_path);
	strv_free(s->masked_paths);
	strv_free(s->readonly_paths);
	for (int k = 0; k < OCI_HOOK_MAX; k++)
		oci_hooks_free(s->hooks[k], s->n_hooks[k]);
	json_decref(s->hooks_json);
	json_decref(s->annotations);
	json_decref(s->seccomp);
	json_decref(s->sysctl);
	free(s);
}

static int parse_idmaps(const json_t *l, const char *k, oci_idmap **ret, size_t *ret_n, sbx_err **err)
{
	json_t *a = json_object_get(l, k);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 340 /* the kernel's limit */)
		return ospec_bad(err, k, "an array of at most 340 mappings");
	if (json_array_size(a) == 0)
		return 0;
	oci_idmap *m = calloc(json_array_size(a), sizeof(*m));
	if (!m)
		return err_oom(err);
	size_t i;
	json_t *v;
	json_array_foreach (a, i, v) {
		int64_t c = -1, h = -1, s = -1;
		int r;
		if (!json_is_object(v) || (r = ospec_get_int(v, "containerID", k, 0, UINT32_MAX, &c, err)) < 0 ||
		    (r = ospec_get_int(v, "hostID", k, 0, UINT32_MAX, &h, err)) < 0 ||
		    (r = ospec_get_int(v, "size", k, 1, UINT32_MAX, &s, err)) < 0 || c < 0 || h < 0 || s < 1) {
			free(m);
			return ospec_bad(err, k, "an array of {containerID, hostID, size}");
		}
		m[i] = (oci_idmap){(uint32_t)c, (uint32_t)h, (uint32_t)s};
	}
	*ret = m;
	*ret_n = json_array_size(a);
	return 0;
}

int oci_spec_parse(const char *text, size_t len, oci_spec **ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, 0, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "config.json: %s (line %d)", je.text, je.line);
	if (!json_is_object(j))
		return ospec_bad(err, "config.json", "an object");
	_cleanup_oci_spec_ oci_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return err_oom(err);
	int r;
	if ((r = ospec_get_str(j, "ociVersion", "ociVersion", &s->oci_version, err)) < 0 ||
	    (r = ospec_get_str(j, "hostname", "hostname", &s->hostname, err)) < 0)
		return r;
	if (!json_is_object(json_object_get(j, "process")))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "config.json has no process");
	if ((r = oci_process_parse_json(json_object_get(j, "process"), &s->process, err)) < 0)
		return r;
	json_t *root = ospec_get_obj(j, "root");
	if ((r = ospec_check_obj(j, "root", "root", err)) < 0)
		return r;
	if (root && ((r = ospec_get_str(root, "path", "root.path", &s->root_path, err)) < 0 ||
		     (r = ospec_get_bool(root, "readonly", "root.readonly", &s->root_readonly, err)) < 0))
		return r;
	if (!s->root_path && !(s->root_path = strdup("rootfs")))
		return err_oom(err);

	if ((r = ospec_check_arr(j, "mounts", "mounts", err)) < 0)
		return r;
	json_t *ms = json_object_get(j, "mounts");
	if (json_is_array(ms) && json_array_size(ms) > 0) {
		if (json_array_size(ms) > 4096)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many mounts");
		if (!(s->mounts = calloc(json_array_size(ms), sizeof(*s->mounts))))
			return err_oom(err);
		size_t i;
		json_t *v;
		json_array_foreach (ms, i, v) {
			r = parse_mount(v, &s->mounts[s->n_mounts], err);
			s->n_mounts++; /* counted either way so that free releases it */
			if (r < 0)
				return r;
		}
	}

	if ((r = ospec_check_obj(j, "hooks", "hooks", err)) < 0)
		return r;
	json_t *hooks = ospec_get_obj(j, "hooks");
	if (hooks) {
		s->hooks_json = json_incref(hooks);
		for (int k = 0; k < OCI_HOOK_MAX; k++)
			if ((r = oci_hooks_parse(hooks, k, &s->hooks[k], &s->n_hooks[k], err)) < 0)
				return r;
	}
	if ((r = ospec_check_obj(j, "annotations", "annotations", err)) < 0)
		return r;
	json_t *an = ospec_get_obj(j, "annotations");
	s->annotations = an ? json_incref(an) : json_object();
	if (!s->annotations)
		return err_oom(err);

	if ((r = ospec_check_obj(j, "linux", "linux", err)) < 0)
		return r;
	json_t *l = ospec_get_obj(j, "linux");
	if (!(s->masked_paths = calloc(1, sizeof(char *))) || !(s->readonly_paths = calloc(1, sizeof(char *))))
		return err_oom(err);
	if (!l)
		goto done;
	if ((r = ospec_check_arr(l, "namespaces", "linux.namespaces", err)) < 0)
		return r;
	json_t *ns = json_object_get(l, "namespaces");
	if (json_is_array(ns) && json_array_size(ns) > 0) {
		if (json_array_size(ns) > 16)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many namespaces");
		if (!(s->namespaces = calloc(json_array_size(ns), sizeof(*s->namespaces))))
			return err_oom(err);
		size_t i;
		json_t *v;
		json_array_foreach (ns, i, v) {
			if (!json_is_object(v))
				return ospec_bad(err, "linux.namespaces", "an array of objects");
			int t = oci_namespace_type(json_str(v, "type"));
			if (!t)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown namespace type '%s'",
					       json_str(v, "type") ?: "(none)");
			for (size_t k = 0; k < s->n_namespaces; k++)
				if (s->namespaces[k].type == t)
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
						       "namespace '%s' is listed twice", json_str(v, "type"));
			oci_namespace *n = &s->namespaces[s->n_namespaces++];
			n->type = t;
			if ((r = ospec_get_str(v, "path", "linux.namespaces.path", &n->path, err)) < 0)
				return r;
			if (n->path && !*n->path)
				n->path = mfree(n->path);
		}
	}
	if ((r = ospec_check_arr(l, "devices", "linux.devices", err)) < 0)
		return r;
	json_t *dv = json_object_get(l, "devices");
	if (json_is_array(dv) && json_array_size(dv) > 0) {
		if (json_array_size(dv) > 4096)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many devices");
		if (!(s->devices = calloc(json_array_size(dv), sizeof(*s->devices))))
			return err_oom(err);
		size_t i;
		json_t *v;
		json_array_foreach (dv, i, v) {
			oci_device *d = &s->devices[s->n_devices];
			if (!json_is_object(v))
				return ospec_bad(err, "linux.devices", "an array of objects");
			if ((r = ospec_get_str(v, "path", "linux.devices.path", &d->path, err)) < 0)
				return r;
			s->n_devices++;
			const char *t = json_str(v, "type");
			if (!d->path || d->path[0] != '/' || !t || strlen(t) != 1 || !strchr("cbup", t[0]))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "a device needs an absolute path and a type c, b, u or p");
			d->type = t[0] == 'u' ? 'c' : t[0];
			int64_t x = -1;
			if ((r = ospec_get_int(v, "major", "linux.devices.major", 0, 0xfff, &d->major, err)) < 0 ||
			    (r = ospec_get_int(v, "minor", "linux.devices.minor", 0, 0xfffff, &d->minor, err)) < 0)
				return r;
			if ((r = ospec_get_int(v, "fileMode", "linux.devices.fileMode", 0, 07777, &x, err)) < 0)
				return r;
			if (x >= 0)
				d->has_mode = true, d->mode = (uint32_t)x;
			x = -1;
			if ((r = ospec_get_int(v, "uid", "linux.devices.uid", 0, UINT32_MAX, &x, err)) < 0)
				return r;
			if (x >= 0)
				d->has_uid = true, d->uid = (uint32_t)x;
			x = -1;
			if ((r = ospec_get_int(v, "gid", "linux.devices.gid", 0, UINT32_MAX, &x, err)) < 0)
				return r;
			if (x >= 0)
				d->has_gid = true, d->gid = (uint32_t)x;
		}
	}
	if ((r = parse_idmaps(l, "uidMappings", &s->uid_mappings, &s->n_uid_mappings, err)) < 0 ||
	    (r = parse_idmaps(l, "gidMappings", &s->gid_mappings, &s->n_gid_mappings, err)) < 0)
		return r;
	if ((r = ospec_check_obj(l, "resources", "linux.resources", err)) < 0)
		return r;
	if (ospec_get_obj(l, "resources") &&
	    (r = oci_resources_parse_json(ospec_get_obj(l, "resources"), &s->resources, err)) < 0)
		return r;
	if ((r = ospec_get_str(l, "cgroupsPath", "linux.cgroupsPath", &s->cgroups_path, err)) < 0)
		return r;
	char **mp = NULL, **rp = NULL;
	if ((r = ospec_get_strv(l, "maskedPaths", "linux.maskedPaths", &mp, err)) < 0)
		return r;
	if (mp)
		strv_free(s->masked_paths), s->masked_paths = mp;
	if ((r = ospec_get_strv(l, "readonlyPaths", "linux.readonlyPaths", &rp, err)) < 0)
		return r;
	if (rp)
		strv_free(s->readonly_paths), s->readonly_paths = rp;
	if ((r = ospec_check_obj(l, "seccomp", "linux.seccomp", err)) < 0 ||
	    (r = ospec_check_obj(l, "sysctl", "linux.sysctl", err)) < 0)
		return r;
	if (ospec_get_obj(l, "seccomp"))
		s->seccomp = json_incref(ospec_get_obj(l, "seccomp"));
	if (ospec_get_obj(l, "sysctl"))
		s->sysctl = json_incref(ospec_get_obj(l, "sysctl"));
done:
	*ret = TAKE_PTR(s);
	return 0;
}
