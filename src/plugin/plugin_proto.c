/* The plugin host's wire form (pure: no I/O). Hook requests carry an info
 * document, decoded here into the C structures of sbx_plugin.h; what a plugin
 * decides is checked and folded back into the document (so the next plugin
 * sees it) and into the adjustments returned to the supervisor.
 *
 *   create  {"environment_id", "name"?, "template", "network", "network_allow": [..],
 *            "limits": {"memory_bytes", "pids", "cpus", "timeout_ms", "ttl_ms",
 *                       "output_bytes"},          (-1: unlimited)
 *            "volumes": [{"host", "path", "readonly"}], "rootless"}
 *   exec    {"environment_id", "argv": [..], "env": [..], "cwd"?, "timeout_ms", "tty"}
 *   egress  {"environment_id", "kind": "connect"|"http", "host", "port"}
 * Replies: {"result": "allow", "adjust"?: {"limits"} | {"argv", "env"}}
 *          {"result": "deny" | "error", "plugin": NAME, "message": TEXT} */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "plugin/plugin.h"
#include "util/json.h"

static const struct {
	const char *name, *fn;
	unsigned bit;
} hooks[] = {
    {"create", "on_create", PLUGIN_HOOK_CREATE},
    {"exec", "on_exec", PLUGIN_HOOK_EXEC},
    {"egress", "on_egress", PLUGIN_HOOK_EGRESS},
};

static const char *hook_name(unsigned bit)
{
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++)
		if (hooks[i].bit == bit)
			return hooks[i].name;
	return "?";
}

unsigned plugin_hook_bit(const char *hook)
{
	for (size_t i = 0; hook && i < ARRAY_SIZE(hooks); i++)
		if (streq(hooks[i].name, hook))
			return hooks[i].bit;
	return 0;
}

const char *plugin_hook_fn(const char *hook)
{
	for (size_t i = 0; hook && i < ARRAY_SIZE(hooks); i++)
		if (streq(hooks[i].name, hook))
			return hooks[i].fn;
	return "hook";
}

void plugin_sanitize(char *s)
{
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = ' ';
	json_t *j = json_string(s);
	if (j) {
		json_decref(j);
		return;
	}
	for (unsigned char *p = (unsigned char *)s; *p; p++)
		if (*p >= 0x80)
			*p = '?';
}

/* ---- decoding ---------------------------------------------------------------- */

/* A NULL-terminated array of pointers to the strings of JSON array a
 * (absent or null: empty). */
static int ptrs(const json_t *a, const char *field, size_t max, const char ***ret, sbx_err **err)
{
	if (a && !json_is_null(a) && !json_is_array(a))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "plugin info: %s must be an array",
			       field);
	size_t n = json_array_size(a);
	if (n > max)
		return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG,
			       "plugin info: %s has more than %zu entries", field, max);
	const char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		if (!(v[i] = json_string_value(json_array_get(a, i)))) {
			free(v);
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "plugin info: %s[%zu] must be a string", field, i);
		}
	*ret = v;
	return 0;
}

static int64_t lim(const json_t *l, const char *k)
{
	int64_t v = json_int(l, k, -1);
	return v > 0 ? v : -1;
}

void plugin_info_done(plugin_info *pi)
{
	json_decref(pi->doc);
	free(pi->v1);
	free(pi->v2);
	free(pi->vols);
	*pi = (plugin_info){0};
}

int plugin_info_decode(const char *hook, json_t *info, plugin_info *ret, sbx_err **err)
{
	plugin_info pi = {.hook = plugin_hook_bit(hook), .doc = json_incref(info)};
	const char *id = json_str(info, "environment_id");
	int r = -1;
	if (!pi.hook) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown hook '%s'", hook ? hook : "");
		goto out;
	}
	if (!json_is_object(info) || !id) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			"plugin info: not an object with an environment_id");
		goto out;
	}
	if (pi.hook == PLUGIN_HOOK_CREATE) {
		sbx_plugin_create *c = &pi.create;
		json_t *l = json_object_get(info, "limits"), *vs = json_object_get(info, "volumes");
		json_t *cpus = json_object_get(l, "cpus");
		c->size = sizeof(*c);
		c->environment_id = id;
		c->name = json_str(info, "name");
		c->template_spec = json_str(info, "template") ?: "host";
		c->network = json_str(info, "network") ?: "none";
		if (ptrs(json_object_get(info, "network_allow"), "network_allow", 4096, &pi.v1, err) < 0)
			goto out;
		c->network_allow = pi.v1;
		c->limits = (sbx_plugin_limits){
		    .memory_bytes = lim(l, "memory_bytes"),
		    .pids = lim(l, "pids"),
		    .cpus =
			json_is_number(cpus) && json_number_value(cpus) > 0 ? json_number_value(cpus) : -1,
		    .timeout_ms = lim(l, "timeout_ms"),
		    .ttl_ms = lim(l, "ttl_ms"),
		    .output_bytes = lim(l, "output_bytes"),
		};
		size_t nv = json_array_size(vs);
		pi.vols = calloc(nv + 1, sizeof(sbx_plugin_volume));
		if (!pi.vols) {
			err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < nv; i++) {
			json_t *v = json_array_get(vs, i);
			pi.vols[i] = (sbx_plugin_volume){json_str(v, "host") ?: "", json_str(v, "path") ?: "",
							 json_bool(v, "readonly", false)};
		}
		c->volumes = pi.vols;
		c->n_volumes = nv;
		c->rootless = json_bool(info, "rootless", false);
	} else if (pi.hook == PLUGIN_HOOK_EXEC) {
		sbx_plugin_exec *x = &pi.exec;
		x->size = sizeof(*x);
		x->environment_id = id;
		if (ptrs(json_object_get(info, "argv"), "argv", PLUGIN_MAX_ARGV, &pi.v1, err) < 0)
			goto out;
		if (!pi.v1[0] || !pi.v1[0][0]) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "plugin info: empty argv");
			goto out;
		}
		if (ptrs(json_object_get(info, "env"), "env", 65536, &pi.v2, err) < 0)
			goto out;
		x->argv = pi.v1;
		x->env = pi.v2;
		x->cwd = json_str(info, "cwd");
		x->timeout_ms = json_int(info, "timeout_ms", 0);
		x->tty = json_bool(info, "tty", false);
	} else {
		sbx_plugin_egress *g = &pi.egress;
		g->size = sizeof(*g);
		g->environment_id = id;
		g->kind = json_str(info, "kind") ?: "connect";
		g->host = json_str(info, "host");
		g->port = (int)json_int(info, "port", 0);
		if (!g->host || g->port <= 0 || g->port > 65535) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				"plugin info: egress needs a host and a port");
			goto out;
		}
	}
	*ret = pi;
	pi = (plugin_info){0};
	r = 0;
out:
	plugin_info_done(&pi);
	return r;
}

/* ---- verdicts ------------------------------------------------------------------ */

static int reply_new(const char *result, const char *name, const char *msg, json_t **ret)
{
	char m[SBX_PLUGIN_MESSAGE_MAX + 128];
	snprintf(m, sizeof(m), "%s", msg);
	plugin_sanitize(m);
	*ret = json_pack("{s:s,s:s,s:s}", "result", result, "plugin", name, "message", m);
	return 0;
}

static int fail(const char *name, json_t **ret, const char *fmt, ...) _printf_(3, 4);
static int fail(const char *name, json_t **ret, const char *fmt, ...)
{
	char m[SBX_PLUGIN_MESSAGE_MAX + 128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	return reply_new("error", name, m, ret);
}

/* Copies a plugin's NULL-terminated string list into a JSON array, checked. */
static json_t *list_json(const char *const *v, size_t max, size_t *bytes, bool is_env, const char **why)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v[i]; i++) {
		size_t len = strlen(v[i]);
		*bytes += len + 1;
		if (i >= max)
			*why = "too many entries";
		else if (*bytes > PLUGIN_MAX_ADJUST_BYTES)
			*why = "more than 256 KiB in all";
		else if (is_env && (!strchr(v[i], '=') || v[i][0] == '='))
			*why = "an entry is not K=V";
		else if (!is_env && i == 0 && !len)
			*why = "argv[0] is empty";
		else if (json_array_append_new(a, json_string(v[i])) < 0)
			*why = "an entry is not valid UTF-8";
		if (*why) {
			json_decref(a);
			return NULL;
		}
	}
	if (!a)
		*why = "out of memory";
	return a;
}

static int apply_create(plugin_info *pi, const char *name, const sbx_plugin_verdict *v, json_t *adjust,
			json_t **ret_reply)
{
	json_t *l = json_object_get(pi->doc, "limits");
	if (!json_is_object(l)) {
		l = json_object();
		json_object_set_new(pi->doc, "limits", l);
	}
	const struct {
		const char *k;
		int64_t want, cur;
	} ints[] = {
	    {"memory_bytes", v->limits.memory_bytes, pi->create.limits.memory_bytes},
	    {"pids", v->limits.pids, pi->create.limits.pids},
	    {"timeout_ms", v->limits.timeout_ms, pi->create.limits.timeout_ms},
	    {"ttl_ms", v->limits.ttl_ms, pi->create.limits.ttl_ms},
	    {"output_bytes", v->limits.output_bytes, pi->create.limits.output_bytes},
	};
	bool changed = false;
	for (size_t i = 0; i < ARRAY_SIZE(ints); i++) {
		if (ints[i].want == 0 || ints[i].want == ints[i].cur)
			continue;
		if (ints[i].want < 0)
			return fail(name, ret_reply,
				    "on_create set limits.%s to %" PRId64
				    " (only positive values lower a limit)",
				    ints[i].k, ints[i].want);
		if (ints[i].cur > 0 && ints[i].want > ints[i].cur)
			return fail(name, ret_reply,
				    "on_create tried to raise limits.%s from %" PRId64 " to %" PRId64
				    " (plugins only lower limits)",
				    ints[i].k, ints[i].cur, ints[i].want);
		json_object_set_new(l, ints[i].k, json_integer(ints[i].want));
		changed = true;
	}
	double cpus = v->limits.cpus, cur = pi->create.limits.cpus;
	if (cpus != 0 && cpus != cur) {
		if (!(cpus > 0) || cpus > 1024)
			return fail(name, ret_reply,
				    "on_create set limits.cpus to %g (only positive values lower a limit)",
				    cpus);
		if (cur > 0 && cpus > cur)
			return fail(
			    name, ret_reply,
			    "on_create tried to raise limits.cpus from %g to %g (plugins only lower limits)",
			    cur, cpus);
		json_object_set_new(l, "cpus", json_real(cpus));
		changed = true;
	}
	if (changed)
		json_object_set(adjust, "limits", l);
	return 1;
}

static int apply_exec(plugin_info *pi, const char *name, const sbx_plugin_verdict *v, json_t *adjust,
		      json_t **ret_reply)
{
	size_t bytes = 0;
	const char *why = NULL;
	if (v->argv) {
		json_t *a = list_json(v->argv, PLUGIN_MAX_ARGV, &bytes, false, &why);
		if (!a || json_array_size(a) == 0) {
			json_decref(a);
			return fail(name, ret_reply, "on_exec returned an invalid argv (%s)",
				    why ? why : "empty");
		}
		json_object_set_new(pi->doc, "argv", a);
		json_object_set(adjust, "argv", a);
	}
	if (v->env_add && v->env_add[0]) {
		json_t *add = list_json(v->env_add, PLUGIN_MAX_ENV, &bytes, true, &why);
		if (!add)
			return fail(name, ret_reply, "on_exec returned an invalid env_add (%s)", why);
		/* the command's list without the keys being set, then the new entries */
		json_t *old = json_object_get(pi->doc, "env"), *env = json_array();
		size_t i;
		json_t *e;
		json_array_foreach(old, i, e)
		{
			const char *kv = json_string_value(e);
			size_t kl = kv ? strcspn(kv, "=") : 0;
			bool replaced = false;
			for (size_t k = 0; kv && k < json_array_size(add) && !replaced; k++)
				replaced =
				    strncmp(json_string_value(json_array_get(add, k)), kv, kl + 1) == 0;
			if (kv && !replaced)
				json_array_append(env, e);
		}
		json_array_extend(env, add);
		json_decref(add);
		json_object_set_new(pi->doc, "env", env);
		json_object_set(adjust, "env", env);
	}
	return 1;
}

int plugin_verdict_apply(plugin_info *pi, const char *name, int rc, const sbx_plugin_verdict *v,
			 json_t *adjust, json_t **ret_reply)
{
	char msg[SBX_PLUGIN_MESSAGE_MAX];
	memcpy(msg, v->message, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	const char *hook = hook_name(pi->hook), *fn = plugin_hook_fn(hook);
	if (rc != 0)
		return fail(name, ret_reply, "%s failed (returned %d)%s%s", fn, rc, msg[0] ? ": " : "", msg);
	if (v->deny)
		return reply_new("deny", name, msg[0] ? msg : "no reason given", ret_reply);
	const sbx_plugin_limits *l = &v->limits;
	bool changed = false;
	int r = 1;
	if (pi->hook == PLUGIN_HOOK_CREATE) {
		changed = l->memory_bytes || l->pids || l->cpus != 0 || l->timeout_ms || l->ttl_ms ||
			  l->output_bytes;
		r = changed ? apply_create(pi, name, v, adjust, ret_reply) : 1;
	} else if (pi->hook == PLUGIN_HOOK_EXEC) {
		changed = v->argv || (v->env_add && v->env_add[0]);
		r = changed ? apply_exec(pi, name, v, adjust, ret_reply) : 1;
	}
	if (r != 1 || !changed)
		return r;
	/* Re-decode, so the next plugin sees the adjusted document. */
	plugin_info again;
	_cleanup_err_ sbx_err *e = NULL;
	if (plugin_info_decode(hook, pi->doc, &again, &e) < 0)
		return fail(name, ret_reply, "%s: %s", fn, sbx_err_message(e));
	plugin_info_done(pi);
	*pi = again;
	return 1;
}

int plugin_reply_decode(const json_t *reply, const char *hook, json_t **ret_adjust, sbx_err **err)
{
	const char *res = json_str(reply, "result") ?: "";
	const char *name = json_str(reply, "plugin") ?: "?";
	const char *msg = json_str(reply, "message") ?: "";
	if (streq(res, "allow")) {
		json_t *a = json_object_get(reply, "adjust");
		if (ret_adjust)
			*ret_adjust = json_is_object(a) && json_object_size(a) ? json_incref(a) : NULL;
		return 0;
	}
	if (streq(res, "deny"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM, "plugin '%s' refused: %s", name, msg);
	if (streq(res, "error"))
		return err_set(err, SBX_E_UNAVAILABLE, EIO, "plugin '%s' failed: %s; refusing", name, msg);
	return err_set(err, SBX_E_UNAVAILABLE, EPROTO, "plugin host sent a malformed reply to %s; refusing",
		       plugin_hook_fn(hook));
}
