/* Secrets and hidden paths at create (docs/secrets.md; see secrets.h).
 *
 * A secret is named by where its value is on the host: the creating
 * process's variable NAME, or a host file. The value is read here, when the
 * environment is created (and again when a restore starts it anew), into
 * env_config only: the supervisor and init inherit it in memory (fork and
 * clone), this process wipes its copy when the config is freed. What state.json
 * records is the name and the source, never the value; snapshot manifests,
 * OCI configs and trace manifests take the environment's variables from
 * state.json, so they never see one. */
#include "api/secrets.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy.h"
#include "util/fd.h"
#include "util/json.h"

#define SECRETS_MAX 256
#define SECRET_MAX_BYTES (1024 * 1024)

static bool name_ok(const char *k, size_t n)
{
	if (n == 0 || n > 255 || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)k[i]) || k[i] == '_'))
			return false;
	return true;
}

/* "/a//b/./c/" -> "/a/b/c"; NULL with a reason when it is not an absolute
 * path without "..", or is "/" itself. */
static char *hidden_normalize(const char *in, const char **why)
{
	*why = NULL;
	if (!in || in[0] != '/') {
		*why = "must be an absolute path";
		return NULL;
	}
	size_t n = strlen(in);
	if (n > 4000) {
		*why = "is too long";
		return NULL;
	}
	char *out = malloc(n + 2);
	if (!out)
		return NULL;
	size_t k = 0;
	for (const char *p = in; *p;) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		size_t l = (size_t)(e - p);
		if (l == 2 && p[0] == '.' && p[1] == '.') {
			free(out);
			*why = "must not contain '..'";
			return NULL;
		}
		if (l && !(l == 1 && p[0] == '.')) {
			out[k++] = '/';
			memcpy(out + k, p, l);
			k += l;
		}
		p = e;
	}
	out[k] = 0;
	if (k == 0) {
		free(out);
		*why = "would hide the whole root";
		return NULL;
	}
	return out;
}

static bool under(const char *p, const char *m)
{
	size_t l = strlen(m);
	if (l == 1 && m[0] == '/')
		return true;
	return strncmp(p, m, l) == 0 && (p[l] == 0 || p[l] == '/');
}

static bool is_hidden(char *const *hidden, const char *p)
{
	for (; hidden && *hidden; hidden++)
		if (under(p, *hidden))
			return true;
	return false;
}

int secrets_policy_apply(const policy *p, sbx_create_opts *o, policy_storage *keep, sbx_err **err)
{
	/* Hidden paths: the caller's and the policy's (hiding more only narrows). */
	if (p->hidden && p->hidden[0]) {
		size_t n = 0;
		_cleanup_strv_free_ char **all = NULL;
		for (const char *const *h = o->hidden; h && *h; h++)
			if (strv_push(&all, &n, strdup(*h)) < 0)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		for (char **h = p->hidden; *h; h++)
			if (strv_push(&all, &n, strdup(*h)) < 0)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		strv_free(keep->hidden);
		keep->hidden = TAKE_PTR(all);
		o->hidden = (const char *const *)keep->hidden;
	}
	if (!p->secrets_set)
		return 0;
	/* Secrets: a policy that sets them lists every one that may be given. */
	if (o->secrets) {
		for (const char *const *s = o->secrets; *s; s++) {
			size_t nl = strcspn(*s, "=");
			const char *file = (*s)[nl] == '=' ? *s + nl + 1 : NULL;
			bool ok = false;
			for (size_t i = 0; i < p->n_secrets && !ok; i++) {
				const policy_secret *ps = &p->secrets[i];
				ok = strlen(ps->name) == nl && strncmp(ps->name, *s, nl) == 0 &&
				     (file ? ps->file && streq(ps->file, file) : ps->from_env);
			}
			if (!ok)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "secret '%.*s': not granted by the policy", (int)nl, *s);
		}
		return 0;
	}
	size_t n = 0;
	for (size_t i = 0; i < p->n_secrets; i++) {
		const policy_secret *ps = &p->secrets[i];
		char *spec = NULL;
		if (ps->file ? asprintf(&spec, "%s=%s", ps->name, ps->file) < 0 : !(spec = strdup(ps->name)))
			spec = NULL;
		if (strv_push(&keep->secrets, &n, spec) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	static const char *const none[] = {NULL};
	o->secrets = keep->secrets ? (const char *const *)keep->secrets : none;
	return 0;
}

/* A file secret's value, any bytes, at most 1 MiB. */
static int read_secret_file(const char *name, const char *path, char **ret, size_t *ret_len, sbx_err **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return err_set(err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
			       "secret %s: open host file '%s': %s", name, path, strerror(errno));
	int r = fd_read_all(fd, SECRET_MAX_BYTES, ret, ret_len);
	if (r < 0)
		return err_set(err, r == -EFBIG ? SBX_E_LIMIT_EXCEEDED : SBX_E_INVALID_ARGUMENT, -r,
			       "secret %s: read host file '%s': %s", name, path,
			       r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
	return 0;
}

/* The secrets' sources, as state.json records them (from o, or a restore's state). */
static int secret_sources(const sbx_create_opts *o, const json_t *restore_state, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *a = json_array();
	if (!a)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (restore_state) {
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(restore_state, "secrets"), i, v)
		{
			const char *name = json_str(v, "name"), *from = json_str(v, "from");
			if (!name || !from || !name_ok(name, strlen(name)) ||
			    (streq(from, "file") && !json_str(v, "host_file")))
				return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state: secrets[%zu]", i);
			json_array_append(a, v);
		}
		*ret = TAKE_PTR(a);
		return 0;
	}
	size_t n = 0;
	for (const char *const *s = o ? o->secrets : NULL; s && *s; s++, n++) {
		size_t nl = strcspn(*s, "=");
		const char *file = (*s)[nl] == '=' ? *s + nl + 1 : NULL;
		if (!name_ok(*s, nl))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "secret '%.*s': invalid name (letters, digits and '_', not starting "
				       "with a digit)",
				       (int)(nl > 64 ? 64 : nl), *s);
		if (file && (file[0] != '/' || strlen(file) > PATH_MAX))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "secret '%.*s': the host file must be an absolute path", (int)nl, *s);
		if (n >= SECRETS_MAX)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "more than %d secrets", SECRETS_MAX);
		for (size_t i = 0; i < json_array_size(a); i++) {
			const char *other = json_str(json_array_get(a, i), "name");
			if (strlen(other) == nl && strncmp(other, *s, nl) == 0)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "secret '%s' is given twice", other);
		}
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)nl, *s);
		json_t *e = file ? json_pack("{s:s,s:s,s:s,s:s}", "name", name, "from", "file", "host_file",
					     file, "path", "")
				 : json_pack("{s:s,s:s}", "name", name, "from", "env");
		if (e && file) {
			char inside[300];
			snprintf(inside, sizeof(inside), SECRETS_DIR "/%s", name);
			json_object_set_new(e, "path", json_string(inside));
		}
		if (!e || json_array_append_new(a, e) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(a);
	return 0;
}

/* Reads every value into c (memory only). */
static int resolve_values(env_config *c, const json_t *sources, sbx_err **err)
{
	size_t ne = 0, i;
	json_t *v;
	json_array_foreach(sources, i, v)
	{
		const char *name = json_str(v, "name");
		if (streq(json_str(v, "from"), "env")) {
			const char *val = getenv(name);
			if (!val)
				return err_set(err, SBX_E_NOT_FOUND, ENOENT,
					       "secret %s: the host variable %s is not set (in the process "
					       "that creates or "
					       "restores the environment)",
					       name, name);
			char *kv = NULL;
			if (asprintf(&kv, "%s=%s", name, val) < 0 || strv_push(&c->secret_env, &ne, kv) < 0)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
			continue;
		}
		env_secret s = {0};
		if (read_secret_file(name, json_str(v, "host_file"), &s.value, &s.len, err) < 0)
			return -1;
		env_secret *nf = realloc(c->secret_files, (c->n_secret_files + 1) * sizeof(env_secret));
		if (!nf || !(s.name = strdup(name))) {
			explicit_bzero(s.value, s.len);
			free(s.value);
			if (nf)
				c->secret_files = nf;
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		}
		c->secret_files = nf;
		c->secret_files[c->n_secret_files++] = s;
	}
	return 0;
}

/* The host path that `p` inside shows, through the template or a volume
 * (NULL: none, e.g. an image's layers), with the volume it goes through. */
static char *host_equivalent(const env_config *c, const char *p, const env_volume **ret_vol)
{
	const env_volume *best = NULL;
	size_t best_len = 0;
	for (size_t i = 0; i < c->n_volumes; i++) {
		const char *vp = c->volumes[i].path;
		size_t l = strlen(vp);
		while (l > 1 && vp[l - 1] == '/')
			l--;
		if (strncmp(p, vp, l) == 0 && (p[l] == 0 || p[l] == '/') && l >= best_len) {
			best = &c->volumes[i];
			best_len = l;
		}
	}
	*ret_vol = best;
	char *r = NULL;
	if (best)
		return asprintf(&r, "%s%s", best->host, p + best_len) < 0 ? NULL : r;
	if (c->mask) /* the host template: the host's own tree */
		return strdup(p);
	if (c->template_spec && startswith(c->template_spec, "dir:") && c->n_lowers == 1)
		return asprintf(&r, "%s%s", c->lowers[0], p) < 0 ? NULL : r;
	return NULL;
}

/* A hidden path must not be reachable again through a volume that mounts
 * the same host directory (or a part of it) elsewhere. */
static int check_second_routes(const env_config *c, sbx_err **err)
{
	for (char **h = c->hidden; h && *h; h++) {
		const env_volume *via = NULL;
		_cleanup_free_ char *host = host_equivalent(c, *h, &via);
		if (!host)
			continue;
		for (size_t i = 0; i < c->n_volumes; i++) {
			const env_volume *w = &c->volumes[i];
			if (w == via)
				continue;
			if (under(host, w->host)) {
				/* w shows the hidden host path at w->path + the rest */
				_cleanup_free_ char *inside = NULL;
				if (asprintf(&inside, "%s%s", w->path, host + strlen(w->host)) < 0)
					return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
				if (!is_hidden(c->hidden, inside))
					return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
						       "hidden path '%s' would still be reachable as '%s' "
						       "through volume "
						       "'%s:%s': hide that path too, or drop the volume",
						       *h, inside, w->host, w->path);
			} else if (under(w->host, host) && !is_hidden(c->hidden, w->path)) {
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "volume '%s:%s' shows part of hidden path '%s': hide '%s' "
					       "too, or drop the volume",
					       w->host, w->path, *h, w->path);
			}
		}
	}
	return 0;
}

int secrets_prepare(const sbx_create_opts *o, const json_t *restore_state, env_config *c, json_t **ret_state,
		    sbx_err **err)
{
	c->secrets_dirfd = -1;
	bool v3 = o && o->version >= 3;
	const char *phase = restore_state ? json_str(restore_state, "phase") ?: "setup" : "setup";
	if (!streq(phase, "setup") && !streq(phase, "agent"))
		return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state: phase '%s'", phase);
	c->agent_phase = streq(phase, "agent");

	/* Hidden paths: normalized, unique. */
	size_t nh = 0;
	_cleanup_strv_free_ char **given =
	    restore_state ? json_to_strv(json_object_get(restore_state, "hidden")) : NULL;
	const char *const *src = restore_state ? (const char *const *)given : v3 ? o->hidden : NULL;
	for (const char *const *h = src; h && *h; h++) {
		const char *why;
		char *n = hidden_normalize(*h, &why);
		if (!n)
			return why ? err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "hidden path '%s' %s", *h,
					     why)
				   : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		if (!restore_state && (under(n, "/dev") || under(n, "/proc"))) {
			int e = err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "hidden path '%s': /dev and /proc are made by sbx for each environment (nothing "
			    "of the "
			    "host is in them) and what runs there needs them; hiding there is not supported",
			    *h);
			free(n);
			return e;
		}
		bool dup = false;
		for (size_t i = 0; i < nh && !dup; i++)
			dup = streq(c->hidden[i], n);
		if (dup) {
			free(n);
			continue;
		}
		if (nh >= 256) {
			free(n);
			return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "more than 256 hidden paths");
		}
		if (strv_push(&c->hidden, &nh, n) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}

	_cleanup_json_ json_t *sources = NULL;
	if (secret_sources(v3 || restore_state ? o : NULL, restore_state, &sources, err) < 0)
		return -1;
	bool files = false;
	size_t i;
	json_t *v;
	json_array_foreach(sources, i, v) files |= streq(json_str(v, "from"), "file");

	if (c->degraded && nh)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "hidden paths need user namespaces (a mount namespace of its own), which this host does "
		    "not allow");
	if (c->degraded && files)
		return err_set(err, SBX_E_UNAVAILABLE, EPERM,
			       "file secrets need user namespaces (their tmpfs is mounted in the "
			       "environment), which this "
			       "host does not allow; give them as variables instead");
	if (c->degraded && v3 && o->agent_policy && !restore_state)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "phases need user namespaces (a pid namespace whose processes end with the setup phase), "
		    "which this host does not allow");
	for (size_t k = 0; files && k < c->n_volumes; k++) {
		const char *p = c->volumes[k].path;
		if (under(SECRETS_DIR, p) || under(p, SECRETS_DIR))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "volume at '%s' conflicts with the file secrets' tmpfs at " SECRETS_DIR, p);
	}
	if (check_second_routes(c, err) < 0)
		return -1;
	if (resolve_values(c, sources, err) < 0)
		return -1;

	/* The agent phase, planned now: a policy that would widen anything
	 * fails the create, not the switch. */
	_cleanup_json_ json_t *agent = NULL;
	if (restore_state)
		agent = json_deep_copy(json_object_get(restore_state, "agent_phase"));
	else if (phase_plan(c, o ? o->policy : NULL, v3 ? o->agent_policy : NULL, &agent, err) < 0)
		return err_wrap(err, "agent phase");
	size_t nw = 0;
	while (c->warnings && c->warnings[nw])
		nw++;
	json_array_foreach(json_object_get(agent, "warnings"), i,
			   v) if (strv_push(&c->warnings, &nw, strdup(json_string_value(v) ?: "")) <
				  0) return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	json_object_del(agent, "warnings");

	json_t *st = json_pack("{s:s,s:O}", "phase", phase, "secrets", sources);
	if (!st)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (nh)
		json_object_set_new(st, "hidden", json_from_strv((const char *const *)c->hidden));
	if (agent && !c->agent_phase)
		json_object_set(st, "agent_phase", agent);
	*ret_state = st;
	return 0;
}

int secrets_mcp_check(const json_t *doc, const char *what, sbx_err **err)
{
	json_t *s = json_object_get(doc, "secrets");
	if (!json_is_object(s))
		return 0; /* absent, or a type error the policy parser reports */
	const char *offered = getenv("SBX_MCP_SECRETS");
	const char *name;
	json_t *v;
	json_object_foreach(s, name, v)
	{
		if (json_object_get(v, "file"))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "%s.secrets.%s: a host file cannot be named over MCP (the client "
				       "would choose which "
				       "host file the server reads); the operator offers host variables with "
				       "SBX_MCP_SECRETS",
				       what, name);
		bool ok = false;
		size_t nl = strlen(name);
		for (const char *p = offered; p && *p && !ok;) {
			const char *e = strchrnul(p, ',');
			ok = (size_t)(e - p) == nl && strncmp(p, name, nl) == 0;
			p = *e ? e + 1 : e;
		}
		if (!ok)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "%s.secrets.%s: this server does not offer that secret (its operator "
				       "lists the host "
				       "variables an MCP client may use in SBX_MCP_SECRETS, comma-separated)",
				       what, name);
	}
	return 0;
}
