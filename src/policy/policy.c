/* Policy documents: parse, validate, the profiles, the canonical form (see
 * policy.h); composition is policy_merge.c (policy_internal.h the calls
 * between them). */
#include "policy/policy.h"
#include "policy/policy_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "runtime/caps.h"
#include "runtime/cdi.h"
#include "runtime/user.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"

#define POLICY_PATH_MAX 4096
#define POLICY_LIST_MAX 256

int policy_bad(sbx_err **err, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s: %s", field, msg);
}

int policy_oom(sbx_err **err)
{
	return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
}

policy *policy_free(policy *p)
{
	if (!p)
		return NULL;
	free(p->name);
	strv_free(p->allow);
	for (size_t i = 0; i < p->n_volumes; i++) {
		free(p->volumes[i].host);
		free(p->volumes[i].path);
	}
	free(p->volumes);
	strv_free(p->hidden);
	strv_free(p->env);
	for (size_t i = 0; i < p->n_secrets; i++) {
		free(p->secrets[i].name);
		free(p->secrets[i].file);
	}
	free(p->secrets);
	strv_free(p->plugins);
	strv_free(p->devices);
	json_decref(p->plugin_config);
	free(p->user);
	free(p);
	return NULL;
}

policy *policy_new(void)
{
	policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->net_mode = POLICY_NET_UNSET;
	p->limits = (policy_limits){-1, -1, -1, -1, -1, -1, -1};
	return p;
}

/* A JSON string without NUL bytes, at most max bytes; NULL otherwise. */
static const char *jstr(const json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	if (!s || strlen(s) != json_string_length(v) || strlen(s) > max)
		return NULL;
	return s;
}

/* Absolute, normalized enough: no "..", no empty name. */
static const char *path_invalid(const char *s)
{
	if (s[0] != '/')
		return "must be an absolute path";
	for (const char *p = s; *p;) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		if (e - p == 2 && p[0] == '.' && p[1] == '.')
			return "must not contain '..'";
		p = e;
	}
	return NULL;
}

size_t policy_strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

bool policy_strv_has(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

/* Appends a copy of s (v may be NULL). Returns 0 or -ENOMEM. */
int policy_strv_push_copy_n(char ***v, const char *s)
{
	size_t n = policy_strv_len(*v);
	char **nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[n] = strdup(s))) {
		nv[n] = NULL;
		return -ENOMEM;
	}
	nv[n + 1] = NULL;
	return 0;
}

int policy_strv_copy(char *const *src, char ***ret)
{
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	for (; src && *src; src++)
		if (policy_strv_push_copy_n(&v, *src) < 0)
			return -ENOMEM;
	*ret = TAKE_PTR(v);
	return 0;
}

static int check_keys(const json_t *obj, const char *field, const char *const *known, sbx_err **err)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
	{
		bool ok = false;
		for (const char *const *q = known; *q; q++)
			ok |= streq(*q, k);
		if (!ok)
			return policy_bad(err, field, "unknown field '%.64s'", k);
	}
	return 0;
}

static int parse_paths(const json_t *a, const char *field, bool so, char ***ret, sbx_err **err)
{
	if (!json_is_array(a))
		return policy_bad(err, field, "must be an array of absolute paths");
	if (json_array_size(a) > POLICY_LIST_MAX)
		return policy_bad(err, field, "more than %d entries", POLICY_LIST_MAX);
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	if (!v)
		return policy_oom(err);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		char f[96];
		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		const char *s = jstr(e, POLICY_PATH_MAX);
		if (!s)
			return policy_bad(err, f, "must be a path string (at most %d bytes, no NUL)",
					  POLICY_PATH_MAX);
		const char *why = path_invalid(s);
		if (why)
			return policy_bad(err, f, "'%.200s' %s", s, why);
		if (so && (strlen(s) < 4 || strcmp(s + strlen(s) - 3, ".so") != 0))
			return policy_bad(err, f, "'%.200s' is not a shared object (.so)", s);
		if (policy_strv_push_copy_n(&v, s) < 0)
			return policy_oom(err);
	}
	*ret = TAKE_PTR(v);
	return 0;
}

/* "plugins": ["/abs/x.so" | {"path": "/abs/x.so", "config": ANY}, ...] */
static int parse_plugins(const json_t *a, policy *p, sbx_err **err)
{
	if (!json_is_array(a))
		return policy_bad(err, "plugins",
				  "must be an array of shared object paths or {path, config} objects");
	_cleanup_json_ json_t *paths = json_array();
	if (!paths)
		return policy_oom(err);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		static const char *const pkeys[] = {"path", "config", NULL};
		char f[64];
		snprintf(f, sizeof(f), "plugins[%zu]", i);
		if (json_is_object(e) && check_keys(e, f, pkeys, err) < 0)
			return -EINVAL;
		json_t *path = json_is_object(e) ? json_object_get(e, "path") : e;
		if (!path)
			return policy_bad(err, f, "needs a \"path\"");
		if (json_array_append(paths, path) < 0)
			return policy_oom(err);
	}
	if (parse_paths(paths, "plugins", true, &p->plugins, err) < 0)
		return -EINVAL;
	json_array_foreach(a, i, e)
	{
		for (size_t j = 0; j < i; j++)
			if (streq(p->plugins[j], p->plugins[i]))
				return policy_bad(err, "plugins", "'%.200s' is named twice", p->plugins[i]);
		json_t *cfg = json_is_object(e) ? json_object_get(e, "config") : NULL;
		if (!cfg)
			continue;
		if (!p->plugin_config && !(p->plugin_config = json_object()))
			return policy_oom(err);
		if (json_object_set(p->plugin_config, p->plugins[i], cfg) < 0)
			return policy_oom(err);
	}
	return 0;
}

static int parse_network(const json_t *n, policy *p, sbx_err **err)
{
	static const char *const keys[] = {"mode", "allow", NULL};
	if (!json_is_object(n))
		return policy_bad(err, "network", "must be an object");
	if (check_keys(n, "network", keys, err) < 0)
		return -EINVAL;
	json_t *m = json_object_get(n, "mode");
	if (m) {
		const char *s = json_string_value(m);
		if (s && streq(s, "none"))
			p->net_mode = POLICY_NET_NONE;
		else if (s && streq(s, "allow"))
			p->net_mode = POLICY_NET_ALLOW;
		else if (s && streq(s, "open"))
			p->net_mode = POLICY_NET_OPEN;
		else
			return policy_bad(err, "network.mode", "must be \"none\", \"allow\" or \"open\"");
	}
	json_t *a = json_object_get(n, "allow");
	if (!a)
		return 0;
	if (!json_is_array(a))
		return policy_bad(err, "network.allow", "must be an array of host[:port] patterns");
	if (json_array_size(a) > EGRESS_RULES_MAX)
		return policy_bad(err, "network.allow", "more than %d patterns", EGRESS_RULES_MAX);
	if (p->net_mode == POLICY_NET_NONE && json_array_size(a) > 0)
		return policy_bad(err, "network.allow",
				  "network mode \"none\" allows no hosts; use mode \"allow\"");
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	if (!v)
		return policy_oom(err);
	size_t i;
	json_t *e;
	json_array_foreach(a, i, e)
	{
		char f[64];
		snprintf(f, sizeof(f), "network.allow[%zu]", i);
		const char *s = jstr(e, EGRESS_PATTERN_MAX);
		if (!s)
			return policy_bad(err, f, "must be a host[:port] string of at most %d bytes",
					  EGRESS_PATTERN_MAX);
		egress_rule r;
		_cleanup_err_ sbx_err *e2 = NULL;
		if (egress_rule_parse(s, &r, &e2) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s: %s", f, sbx_err_message(e2));
		if (policy_strv_push_copy_n(&v, r.text) < 0)
			return policy_oom(err);
	}
	p->allow = TAKE_PTR(v);
	if (p->net_mode == POLICY_NET_UNSET)
		p->net_mode = POLICY_NET_ALLOW;
	return 0;
}

static int parse_filesystem(const json_t *f, policy *p, sbx_err **err)
{
	static const char *const keys[] = {"volumes", "hidden", NULL};
	if (!json_is_object(f))
		return policy_bad(err, "filesystem", "must be an object");
	if (check_keys(f, "filesystem", keys, err) < 0)
		return -EINVAL;
	json_t *h = json_object_get(f, "hidden");
	if (h && parse_paths(h, "filesystem.hidden", false, &p->hidden, err) < 0)
		return -EINVAL;
	json_t *vs = json_object_get(f, "volumes");
	if (!vs)
		return 0;
	if (!json_is_array(vs))
		return policy_bad(err, "filesystem.volumes", "must be an array of {host, path, readonly}");
	if (json_array_size(vs) > POLICY_LIST_MAX)
		return policy_bad(err, "filesystem.volumes", "more than %d entries", POLICY_LIST_MAX);
	p->volumes = calloc(json_array_size(vs) + 1, sizeof(policy_volume));
	if (!p->volumes)
		return policy_oom(err);
	p->volumes_set = true;
	size_t i;
	json_t *v;
	json_array_foreach(vs, i, v)
	{
		static const char *const vkeys[] = {"host", "path", "readonly", NULL};
		char fld[64];
		snprintf(fld, sizeof(fld), "filesystem.volumes[%zu]", i);
		if (!json_is_object(v))
			return policy_bad(err, fld, "must be an object {host, path, readonly}");
		if (check_keys(v, fld, vkeys, err) < 0)
			return -EINVAL;
		const char *host = jstr(json_object_get(v, "host"), POLICY_PATH_MAX);
		const char *path = jstr(json_object_get(v, "path"), POLICY_PATH_MAX);
		json_t *ro = json_object_get(v, "readonly");
		if (!host)
			return policy_bad(err, fld, "host must be a path string");
		if (!path)
			return policy_bad(err, fld, "path must be a path string");
		const char *why = path_invalid(host);
		if (why)
			return policy_bad(err, fld, "host '%.200s' %s", host, why);
		if ((why = path_invalid(path)))
			return policy_bad(err, fld, "path '%.200s' %s", path, why);
		if (ro && !json_is_boolean(ro))
			return policy_bad(err, fld, "readonly must be true or false");
		for (size_t j = 0; j < p->n_volumes; j++)
			if (streq(p->volumes[j].path, path))
				return policy_bad(err, fld, "path '%.200s' is mounted twice", path);
		policy_volume *pv = &p->volumes[p->n_volumes];
		pv->readonly = ro ? json_is_true(ro) : true; /* read-only unless asked */
		if (!(pv->host = strdup(host)) || !(pv->path = strdup(path))) {
			free(pv->host);
			pv->host = NULL;
			return policy_oom(err);
		}
		p->n_volumes++;
	}
	return 0;
}

/* The integer limits (cpus is a double, apart): one table for parsing and
 * for composition, so that a new limit cannot reach one and not the other. */
const policy_limit_int policy_limit_ints[] = {
    {"memory_bytes", offsetof(policy_limits, memory_bytes)},
    {"pids", offsetof(policy_limits, pids)},
    {"timeout_ms", offsetof(policy_limits, timeout_ms)},
    {"ttl_ms", offsetof(policy_limits, ttl_ms)},
    {"idle_suspend_ms", offsetof(policy_limits, idle_suspend_ms)},
    {"output_bytes", offsetof(policy_limits, output_bytes)},
    {"disk_bytes", offsetof(policy_limits, disk_bytes)},
};
const size_t policy_n_limit_ints = ARRAY_SIZE(policy_limit_ints);

static int parse_limits(const json_t *l, policy *p, sbx_err **err)
{
	static const char *const keys[] = {
	    "memory_bytes",    "pids", "cpus", "timeout_ms", "ttl_ms", "output_bytes", "disk_bytes",
	    "idle_suspend_ms", NULL};
	if (!json_is_object(l))
		return policy_bad(err, "limits", "must be an object");
	if (check_keys(l, "limits", keys, err) < 0)
		return -EINVAL;
	for (size_t i = 0; i < policy_n_limit_ints; i++) {
		json_t *v = json_object_get(l, policy_limit_ints[i].key);
		if (!v)
			continue;
		char f[64];
		snprintf(f, sizeof(f), "limits.%s", policy_limit_ints[i].key);
		if (!json_is_integer(v) || json_integer_value(v) <= 0)
			return policy_bad(err, f, "must be a positive integer");
		*(int64_t *)((char *)&p->limits + policy_limit_ints[i].off) = (int64_t)json_integer_value(v);
	}
	json_t *c = json_object_get(l, "cpus");
	if (c) {
		double d = json_number_value(c);
		if (!json_is_number(c) || !(d > 0) || d > 4096 || !isfinite(d))
			return policy_bad(err, "limits.cpus",
					  "must be a number greater than 0 (at most 4096)");
		p->limits.cpus = d;
	}
	return 0;
}

static bool env_name_ok(const char *k)
{
	if (!*k || strlen(k) > 255 || !(isalpha((unsigned char)k[0]) || k[0] == '_'))
		return false;
	for (const char *q = k; *q; q++)
		if (!(isalnum((unsigned char)*q) || *q == '_'))
			return false;
	return true;
}

int policy_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int parse_env(const json_t *e, policy *p, sbx_err **err)
{
	if (!json_is_object(e))
		return policy_bad(err, "env", "must be an object of \"NAME\": \"value\"");
	if (json_object_size(e) > POLICY_LIST_MAX)
		return policy_bad(err, "env", "more than %d variables", POLICY_LIST_MAX);
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	if (!v)
		return policy_oom(err);
	const char *k;
	json_t *val;
	json_object_foreach((json_t *)e, k, val)
	{
		char f[300];
		snprintf(f, sizeof(f), "env.%.64s", k);
		if (!env_name_ok(k))
			return policy_bad(
			    err, f,
			    "invalid variable name (letters, digits and '_', not starting with a digit)");
		const char *s = jstr(val, 128 * 1024);
		if (!s)
			return policy_bad(err, f,
					  "value must be a string without NUL bytes (at most 128 KiB)");
		_cleanup_free_ char *kv = NULL;
		if (asprintf(&kv, "%s=%s", k, s) < 0 || policy_strv_push_copy_n(&v, kv) < 0)
			return policy_oom(err);
	}
	qsort(v, policy_strv_len(v), sizeof(char *), policy_cmp_str);
	p->env = TAKE_PTR(v);
	return 0;
}

static int parse_secrets(const json_t *s, policy *p, sbx_err **err)
{
	if (!json_is_object(s))
		return policy_bad(err, "secrets",
				  "must be an object of \"NAME\": {\"env\": true} or {\"file\": \"/path\"}");
	if (json_object_size(s) > POLICY_LIST_MAX)
		return policy_bad(err, "secrets", "more than %d secrets", POLICY_LIST_MAX);
	p->secrets = calloc(json_object_size(s) + 1, sizeof(policy_secret));
	if (!p->secrets)
		return policy_oom(err);
	p->secrets_set = true;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)s, k, v)
	{
		static const char *const keys[] = {"env", "file", NULL};
		char f[300];
		snprintf(f, sizeof(f), "secrets.%.64s", k);
		if (!env_name_ok(k))
			return policy_bad(
			    err, f,
			    "invalid secret name (letters, digits and '_', not starting with a digit)");
		if (!json_is_object(v))
			return policy_bad(
			    err, f,
			    "must be {\"env\": true} or {\"file\": \"/path\"}; values are never "
			    "stored in a policy");
		if (check_keys(v, f, keys, err) < 0)
			return -EINVAL;
		json_t *ev = json_object_get(v, "env"), *fv = json_object_get(v, "file");
		if (ev && !json_is_true(ev))
			return policy_bad(
			    err, f, "env must be true (take the value from the host variable of that name)");
		if (!!ev == !!fv)
			return policy_bad(err, f, "set exactly one of env or file");
		policy_secret *ps = &p->secrets[p->n_secrets];
		if (fv) {
			const char *path = jstr(fv, POLICY_PATH_MAX), *why;
			if (!path)
				return policy_bad(err, f, "file must be a path string");
			if ((why = path_invalid(path)))
				return policy_bad(err, f, "file '%.200s' %s", path, why);
			if (!(ps->file = strdup(path)))
				return policy_oom(err);
		}
		ps->from_env = ev != NULL;
		if (!(ps->name = strdup(k))) {
			free(ps->file);
			ps->file = NULL;
			return policy_oom(err);
		}
		p->n_secrets++;
	}
	return 0;
}

/* "user": "1000", "1000:1000", "nobody" or 1000 (user.h's forms). */
static int parse_user(const json_t *v, policy *p, sbx_err **err)
{
	char buf[32];
	const char *s = NULL;
	if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) < UINT32_MAX) {
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		s = buf;
	} else if (json_is_string(v))
		s = jstr(v, 256);
	if (!s)
		return policy_bad(
		    err, "user",
		    "must be a string (\"UID[:GID]\" or a user name) or a non-negative integer uid");
	user_spec us;
	_cleanup_err_ sbx_err *e = NULL;
	if (user_spec_parse(s, &us, &e) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s", sbx_err_message(e));
	if (!(p->user = strdup(s)))
		return policy_oom(err);
	return 0;
}

/* "capabilities": the names a root command keeps, within the safe set. */
static int parse_caps(const json_t *a, policy *p, sbx_err **err)
{
	if (!json_is_array(a) || json_array_size(a) > 64)
		return policy_bad(err, "capabilities",
				  "must be an array of capability names (within " CAPS_SAFE_NAMES ")");
	size_t i;
	json_t *v;
	uint64_t set = 0;
	json_array_foreach(a, i, v)
	{
		char f[64];
		snprintf(f, sizeof(f), "capabilities[%zu]", i);
		const char *n = jstr(v, 64);
		if (!n)
			return policy_bad(err, f, "must be a capability name such as CHOWN");
		const char *const one[] = {n, NULL};
		uint64_t bit;
		if (caps_parse_list(one, false, f, &bit, err) < 0)
			return -EINVAL;
		set |= bit;
	}
	p->caps_set = true;
	p->caps = set;
	return 0;
}

/* "devices": the CDI devices a create may ask for (runtime/cdi.h). */
static int parse_devices(const json_t *a, policy *p, sbx_err **err)
{
	if (!json_is_array(a) || json_array_size(a) > 256 || !(p->devices = json_to_strv(a)))
		return policy_bad(
		    err, "devices",
		    "must be an array of CDI device names (vendor/class=name, vendor/class=*, *)");
	for (size_t i = 0; p->devices[i]; i++) {
		char f[64], *k = NULL, *n = NULL, q[600];
		snprintf(f, sizeof(f), "devices[%zu]", i);
		size_t len = strlen(p->devices[i]);
		if (streq(p->devices[i], "*"))
			continue;
		snprintf(q, sizeof(q), "%.590s", p->devices[i]);
		if (len >= 2 && len <= 590 && streq(q + len - 2, "=*"))
			q[len - 1] = 'x'; /* "kind=*": the kind is checked as a name's */
		if (len > 590 || cdi_name_parse(q, &k, &n, NULL) < 0)
			return policy_bad(
			    err, f,
			    "'%.200s' is not a CDI device name (vendor/class=name, vendor/class=*, *)",
			    p->devices[i]);
		free(k);
		free(n);
	}
	return 0;
}

int policy_from_json(const json_t *doc, policy **ret, sbx_err **err)
{
	static const char *const keys[] = {"name",    "override", "network", "filesystem",   "limits",	"env",
					   "secrets", "plugins",  "user",    "capabilities", "devices", NULL};
	if (!json_is_object(doc))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "policy: must be a JSON object");
	_cleanup_policy_ policy *p = policy_new();
	if (!p)
		return policy_oom(err);
	if (check_keys(doc, "policy", keys, err) < 0)
		return -EINVAL;
	json_t *v;
	if ((v = json_object_get(doc, "name"))) {
		const char *s = jstr(v, 128);
		if (!s || !*s)
			return policy_bad(err, "name", "must be a non-empty string of at most 128 bytes");
		for (const char *q = s; *q; q++)
			if (!(isalnum((unsigned char)*q) || strchr("-_.+", *q)))
				return policy_bad(err, "name", "only letters, digits and '-_.+'");
		if (!(p->name = strdup(s)))
			return policy_oom(err);
	}
	if ((v = json_object_get(doc, "override"))) {
		if (!json_is_boolean(v))
			return policy_bad(err, "override", "must be true or false");
		p->override = json_is_true(v);
	}
	if ((v = json_object_get(doc, "network")) && parse_network(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "filesystem")) && parse_filesystem(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "limits")) && parse_limits(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "env")) && parse_env(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "secrets")) && parse_secrets(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "plugins")) && parse_plugins(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "user")) && parse_user(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "capabilities")) && parse_caps(v, p, err) < 0)
		return -EINVAL;
	if ((v = json_object_get(doc, "devices")) && parse_devices(v, p, err) < 0)
		return -EINVAL;
	*ret = TAKE_PTR(p);
	return 0;
}

int policy_parse(const char *json, size_t len, policy **ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "policy: invalid JSON at line %d: %s",
			       je.line, je.text);
	return policy_from_json(doc, ret, err);
}

/* ---- profiles ----------------------------------------------------------- */

/* strict runs commands as nobody (uid and gid 65534, numeric so that a
 * template without that passwd entry works too) with no capabilities. */
static const char PROFILE_STRICT[] =
    "{\"name\":\"strict\",\"network\":{\"mode\":\"none\"},\"filesystem\":{\"volumes\":[],\"hidden\":[]},"
    "\"limits\":{\"memory_bytes\":536870912,\"pids\":256,\"cpus\":1,\"timeout_ms\":600000,"
    "\"ttl_ms\":3600000,\"output_bytes\":16777216,\"disk_bytes\":1073741824},"
    "\"env\":{},\"secrets\":{},\"plugins\":[],\"user\":\"65534:65534\",\"capabilities\":[]}";
static const char PROFILE_DEV[] =
    "{\"name\":\"dev\",\"network\":{\"mode\":\"allow\",\"allow\":["
    "\"deb.debian.org\",\"security.debian.org\",\"pypi.org\",\"files.pythonhosted.org\","
    "\"registry.npmjs.org\",\"github.com\",\"objects.githubusercontent.com\",\"crates.io\","
    "\"static.crates.io\",\"proxy.golang.org\",\"sum.golang.org\"]},"
    "\"filesystem\":{\"volumes\":[],\"hidden\":[]},"
    "\"limits\":{\"memory_bytes\":4294967296,\"pids\":1024,\"cpus\":2,\"timeout_ms\":1800000,"
    "\"ttl_ms\":14400000,\"output_bytes\":67108864,\"disk_bytes\":8589934592},"
    "\"env\":{},\"secrets\":{},\"plugins\":[]}";
/* Unsafe: any public host and port through the proxy (internal addresses stay blocked). */
static const char PROFILE_OPEN[] =
    "{\"name\":\"open\",\"network\":{\"mode\":\"open\"},\"filesystem\":{\"volumes\":[],\"hidden\":[]},"
    "\"limits\":{\"memory_bytes\":4294967296,\"pids\":1024,\"cpus\":2,\"timeout_ms\":1800000,"
    "\"ttl_ms\":14400000,\"output_bytes\":67108864,\"disk_bytes\":8589934592},"
    "\"env\":{},\"secrets\":{},\"plugins\":[]}";

/* The built-in profiles, the default first: sbx_policy_list() and MCP's
 * schema are made from this table. */
static const policy_profile_info profiles[] = {
    {"strict", "the default: no network, 512 MiB, 256 pids, 1 cpu, run as nobody with no capabilities",
     PROFILE_STRICT},
    {"dev", "package registries and GitHub through the egress proxy, 4 GiB, 1024 pids, 2 cpus", PROFILE_DEV},
    {"open", "unsafe: any public host and port through the egress proxy (internal addresses stay blocked)",
     PROFILE_OPEN},
};

const policy_profile_info *policy_profiles(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(profiles);
	return profiles;
}

int policy_profile(const char *name, policy **ret, sbx_err **err)
{
	const char *doc = !name ? PROFILE_STRICT : NULL;
	for (size_t i = 0; i < ARRAY_SIZE(profiles) && !doc; i++)
		if (streq(name, profiles[i].name))
			doc = profiles[i].doc;
	if (!doc) {
		char names[256] = "";
		for (size_t i = 0; i < ARRAY_SIZE(profiles); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", i ? ", " : "",
				 profiles[i].name);
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "unknown policy profile '%.64s' (%s)", name,
			       names);
	}
	return policy_parse(doc, strlen(doc), ret, err);
}

/* ---- output ------------------------------------------------------------------ */

const char *policy_mode_name(policy_net_mode m)
{
	return m == POLICY_NET_OPEN ? "open" : m == POLICY_NET_ALLOW ? "allow" : "none";
}

json_t *policy_to_json(const policy *p)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	if (p->name)
		json_object_set_new(o, "name", json_string(p->name));
	if (p->override)
		json_object_set_new(o, "override", json_true());
	if (p->net_mode != POLICY_NET_UNSET || p->allow) {
		json_t *n = json_object();
		if (p->net_mode != POLICY_NET_UNSET)
			json_object_set_new(n, "mode", json_string(policy_mode_name(p->net_mode)));
		if (p->allow && p->net_mode != POLICY_NET_NONE)
			json_object_set_new(n, "allow", json_from_strv((const char *const *)p->allow));
		json_object_set_new(o, "network", n);
	}
	if (p->volumes_set || p->hidden) {
		json_t *f = json_object();
		if (p->volumes_set) {
			json_t *a = json_array();
			for (size_t i = 0; i < p->n_volumes; i++)
				json_array_append_new(
				    a, json_pack("{s:s,s:s,s:b}", "host", p->volumes[i].host, "path",
						 p->volumes[i].path, "readonly", p->volumes[i].readonly));
			json_object_set_new(f, "volumes", a);
		}
		if (p->hidden)
			json_object_set_new(f, "hidden", json_from_strv((const char *const *)p->hidden));
		json_object_set_new(o, "filesystem", f);
	}
	json_t *l = json_object();
	const policy_limits *L = &p->limits;
	const struct {
		const char *k;
		int64_t v;
	} lims[] = {{"memory_bytes", L->memory_bytes},	    {"pids", L->pids},
		    {"timeout_ms", L->timeout_ms},	    {"ttl_ms", L->ttl_ms},
		    {"output_bytes", L->output_bytes},	    {"disk_bytes", L->disk_bytes},
		    {"idle_suspend_ms", L->idle_suspend_ms}};
	for (size_t i = 0; i < ARRAY_SIZE(lims); i++)
		if (lims[i].v > 0)
			json_object_set_new(l, lims[i].k, json_integer(lims[i].v));
	if (L->cpus > 0)
		json_object_set_new(l, "cpus", json_real(L->cpus));
	if (json_object_size(l))
		json_object_set_new(o, "limits", l);
	else
		json_decref(l);
	if (p->env) {
		json_t *e = json_object();
		for (char *const *kv = p->env; *kv; kv++) {
			const char *eq = strchr(*kv, '=');
			_cleanup_free_ char *k = strndup(*kv, (size_t)(eq - *kv));
			if (k)
				json_object_set_new(e, k, json_string(eq + 1));
		}
		json_object_set_new(o, "env", e);
	}
	if (p->secrets_set) {
		json_t *s = json_object();
		for (size_t i = 0; i < p->n_secrets; i++)
			json_object_set_new(s, p->secrets[i].name,
					    p->secrets[i].file
						? json_pack("{s:s}", "file", p->secrets[i].file)
						: json_pack("{s:b}", "env", 1));
		json_object_set_new(o, "secrets", s);
	}
	if (p->plugins) {
		json_t *a = json_array();
		for (char *const *pl = p->plugins; a && *pl; pl++) {
			json_t *c = json_object_get(p->plugin_config, *pl);
			json_array_append_new(a, c ? json_pack("{s:s,s:O}", "path", *pl, "config", c)
						   : json_string(*pl));
		}
		json_object_set_new(o, "plugins", a);
	}
	if (p->user)
		json_object_set_new(o, "user", json_string(p->user));
	if (p->caps_set)
		json_object_set_new(o, "capabilities", caps_to_json(p->caps));
	if (p->devices)
		json_object_set_new(o, "devices", json_from_strv((const char *const *)p->devices));
	return o;
}

int policy_egress_allowlist(const policy *p, egress_allowlist **ret, sbx_err **err)
{
	if (p->net_mode == POLICY_NET_UNSET || p->net_mode == POLICY_NET_NONE) {
		*ret = NULL;
		return 0;
	}
	int r = p->net_mode == POLICY_NET_OPEN
		    ? egress_allowlist_parse_open((const char *const *)p->allow, ret, err)
		    : egress_allowlist_parse((const char *const *)p->allow, ret, err);
	return r < 0 ? err_wrap(err, "network.allow") : 0;
}

int policy_secret_value(const policy_secret *s, char **ret, sbx_err **err)
{
	if (s->from_env) {
		const char *v = getenv(s->name);
		if (!v)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "secret %s: host variable %s is not set",
				       s->name, s->name);
		char *d = strdup(v);
		if (!d)
			return policy_oom(err);
		*ret = d;
		return 0;
	}
	_cleanup_close_ int fd = open(s->file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return err_errno(err, "secret %s: open '%s'", s->name, s->file);
	char *buf = NULL;
	size_t len = 0;
	int r = fd_read_all(fd, 1024 * 1024, &buf, &len);
	if (r < 0)
		return err_errnum(err, r, "secret %s: read '%s'", s->name, s->file);
	*ret = buf;
	return 0;
}
