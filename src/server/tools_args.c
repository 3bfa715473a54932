/* The argument readers every family of MCP tools uses (tools_internal.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/user.h"
#include "server/reaper.h"
#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

int tools_bad_params(tool_call *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(c->bad_params);
	if (vasprintf(&c->bad_params, fmt, ap) < 0)
		c->bad_params = strdup("invalid params");
	va_end(ap);
	return -EINVAL;
}

static void err_pass(sbx_err **err, sbx_err *e)
{
	if (err && !*err)
		*err = e;
	else
		sbx_err_free(e);
}

/* "user": a string ("1000", "1000:1000", "nobody") or a non-negative
 * integer, into buf; anything else is invalid params naming the field. */
int tools_user_arg(tool_call *c, char *buf, size_t n, const char **ret)
{
	json_t *u = json_object_get(c->args, "user");
	*ret = NULL;
	if (!u)
		return 0;
	if (json_is_integer(u) && json_integer_value(u) >= 0 && json_integer_value(u) < UINT32_MAX)
		snprintf(buf, n, "%lld", (long long)json_integer_value(u));
	else if (json_is_string(u) && strlen(json_string_value(u)) == json_string_length(u))
		snprintf(buf, n, "%s", json_string_value(u));
	else
		return tools_bad_params(
		    c, "'user' must be a uid (1000 or \"1000\"), \"uid:gid\" or a user name");
	_cleanup_err_ sbx_err *e = NULL;
	user_spec us;
	if (user_spec_parse(buf, &us, &e) < 0)
		return tools_bad_params(c, "%s", sbx_err_message(e));
	*ret = buf;
	return 0;
}

/* Resolves an id or name; a miss gets a message that tells a model what to do. */
int tools_resolve_env(tool_call *c, char **ret_id, sbx_err **err)
{
	const char *ref = json_str(c->args, "environment_id");
	sbx_err *e = NULL;
	/* Destroyed, torn down in the background: pending before the resolve
	 * (its removal may end during it) or after. */
	_cleanup_strv_free_ char **before = reaper_pending_ids();
	if (!before)
		return err_oom(err);
	if (sbx_env_resolve(c->ctx, ref, ret_id, &e) >= 0) {
		if (!strv_contains(before, *ret_id) && !reaper_pending(*ret_id))
			return 0;
		free(TAKE_PTR(*ret_id));
		err_set(&e, SBX_E_NOT_FOUND, ENOENT, "destroyed");
	}
	if (sbx_err_code(e) == SBX_E_NOT_FOUND) {
		sbx_err_free(e);
		return err_set(
		    err, SBX_E_NOT_FOUND, ENOENT,
		    "environment '%s' not found; call environment_list to see the live environments or "
		    "environment_create to make one",
		    ref);
	}
	err_pass(err, e);
	return -1;
}

/* {K: V} -> NULL-terminated "K=V" vector (NULL for an absent object). */
int tools_env_strv(tool_call *c, const char *field, char ***ret)
{
	json_t *o = json_object_get(c->args, field);
	*ret = NULL;
	if (!o)
		return 0;
	char **v = calloc(json_object_size(o) + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	size_t n = 0;
	const char *k;
	json_t *val;
	json_object_foreach(o, k, val)
	{
		if (!*k || strchr(k, '=')) {
			strv_free(v);
			return tools_bad_params(
			    c,
			    "'%s' has an invalid variable name '%s': names must be non-empty and "
			    "contain no '='",
			    field, k);
		}
		if (asprintf(&v[n], "%s=%s", k, json_string_value(val)) < 0) {
			v[n] = NULL;
			strv_free(v);
			return -ENOMEM;
		}
		n++;
	}
	*ret = v;
	return 0;
}

/* One message for every tool that takes a host path. */
int tools_host_path_refused(const char *what, const char *path, sbx_err **err)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
		       "%s '%s' is not in a host directory the operator allowed (sbx mcp/serve "
		       "--allow-host-dir DIR; symlinks and '..' are resolved first)",
		       what, path ? path : "");
}
