/* An environment's plugin hooks, as the supervisor calls them: the info
 * documents built from what the supervisor knows, and the adjustments
 * written back (plugin.h). */
#include <errno.h>
#include <string.h>

#include "plugin/plugin.h"
#include "runtime/runtime.h"
#include "util/json.h"

/* -1 for "unlimited", as the plugin ABI says. */
static json_int_t lim(int64_t v)
{
	return v > 0 ? (json_int_t)v : -1;
}

static json_t *create_info(const env_config *c)
{
	json_t *vols = json_array();
	for (size_t i = 0; vols && i < c->n_volumes; i++)
		json_array_append_new(vols,
				      json_pack("{s:s,s:s,s:b}", "host", c->volumes[i].host, "path",
						c->volumes[i].path, "readonly", c->volumes[i].readonly));
	return json_pack("{s:s,s:s?,s:s,s:s,s:o,s:{s:I,s:I,s:f,s:I,s:I,s:I},s:o,s:b}", "environment_id",
			 c->id, "name", c->name, "template", c->template_spec ? c->template_spec : "host",
			 "network", c->network ? c->network : "none", "network_allow",
			 json_from_strv((const char *const *)c->network_allow), "limits", "memory_bytes",
			 lim(c->limits.memory_bytes), "pids", lim(c->limits.pids), "cpus",
			 c->limits.cpus > 0 ? c->limits.cpus : -1.0, "timeout_ms", lim(c->timeout_ms),
			 "ttl_ms", lim(c->ttl_ms), "output_bytes", lim(c->output_bytes), "volumes", vols,
			 "rootless", c->rootless);
}

int plugin_env_create(env_config *c, plugin_host **ret, json_t **ret_limits, sbx_err **err)
{
	*ret = NULL;
	*ret_limits = NULL;
	if (!c->plugins || json_array_size(c->plugins) == 0)
		return 0;
	plugin_host *h = NULL;
	if (plugin_host_start(c->plugins, 0, &h, err) < 0)
		return err_wrap(err, "plugins");
	if (plugin_host_hooks(h) & PLUGIN_HOOK_CREATE) {
		_cleanup_json_ json_t *info = create_info(c), *adjust = NULL;
		if (!info) {
			plugin_host_free(h);
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		}
		if (plugin_host_call(h, "create", info, &adjust, err) < 0) {
			plugin_host_free(h);
			return -1;
		}
		json_t *l = json_object_get(adjust, "limits");
		if (l) {
			/* Only lower values arrive here (checked in the host). */
			int64_t v;
			if ((v = json_int(l, "memory_bytes", 0)) > 0)
				c->limits.memory_bytes = v;
			if ((v = json_int(l, "pids", 0)) > 0)
				c->limits.pids = v;
			json_t *cpus = json_object_get(l, "cpus");
			if (json_is_number(cpus) && json_number_value(cpus) > 0)
				c->limits.cpus = json_number_value(cpus);
			if ((v = json_int(l, "timeout_ms", 0)) > 0)
				c->timeout_ms = v;
			if ((v = json_int(l, "ttl_ms", 0)) > 0)
				c->ttl_ms = v;
			if ((v = json_int(l, "output_bytes", 0)) > 0)
				c->output_bytes = v;
			/* In the form of the environment's state.json. */
			*ret_limits = json_pack(
			    "{s:I,s:I,s:f,s:I,s:I,s:I}", "memory_bytes", (json_int_t)c->limits.memory_bytes,
			    "pids", (json_int_t)c->limits.pids, "cpus", c->limits.cpus, "timeout_ms",
			    (json_int_t)c->timeout_ms, "ttl_ms", (json_int_t)c->ttl_ms, "output_bytes",
			    (json_int_t)c->output_bytes);
		}
	}
	*ret = h;
	return 0;
}

int plugin_env_exec(plugin_host *h, const char *env_id, json_t *m, sbx_err **err)
{
	if (!h || !(plugin_host_hooks(h) & PLUGIN_HOOK_EXEC))
		return 0;
	json_t *env = json_object_get(m, "env");
	_cleanup_json_ json_t *info = json_pack(
	    "{s:s,s:O,s:O,s:I,s:b}", "environment_id", env_id, "argv",
	    json_object_get(m, "argv") ?: json_null(), "env", json_is_array(env) ? env : json_null(),
	    "timeout_ms", (json_int_t)json_int(m, "timeout_ms", 0), "tty", json_bool(m, "tty", false));
	_cleanup_json_ json_t *adjust = NULL;
	if (!info)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (json_str(m, "cwd"))
		json_object_set(info, "cwd", json_object_get(m, "cwd"));
	if (plugin_host_call(h, "exec", info, &adjust, err) < 0)
		return -1;
	if (json_object_get(adjust, "argv"))
		json_object_set(m, "argv", json_object_get(adjust, "argv"));
	if (json_object_get(adjust, "env"))
		json_object_set(m, "env", json_object_get(adjust, "env"));
	return 0;
}

int plugin_env_egress(plugin_host *h, const char *env_id, const char *kind, const char *host, int port,
		      sbx_err **err)
{
	if (!h || !(plugin_host_hooks(h) & PLUGIN_HOOK_EGRESS))
		return 0;
	_cleanup_json_ json_t *info = json_pack("{s:s,s:s,s:s,s:i}", "environment_id", env_id, "kind", kind,
						"host", host, "port", port);
	if (!info)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	return plugin_host_call(h, "egress", info, NULL, err);
}
