/* The MCP tools of environments: create, fork, destroy, list, inspect,
 * logs and the phase switch (docs/secrets.md). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/secrets.h"
#include "server/reaper.h"
#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

const char tool_environment_create_in[] =
    "{'type':'object','additionalProperties':false,'properties':{"
    "'template':{'type':'string','description':'Root filesystem: host (default: the host OS tree, "
    "read-only, under a private writable layer) or dir:/absolute/path.'},"
    "'policy':{'description':'A policy that caps everything else: a built-in profile (@profiles) or a "
    "policy document object. "
    "Other arguments may narrow it, never widen "
    "it.','oneOf':[{'type':'string','enum':['@profiles']},"
    "{'type':'object'}]},"
    "'phases':{'type':'object','additionalProperties':false,'description':'Two phases (instead of policy): "
    "setup, the policy in force at first (e.g. the package hosts and secrets a setup script needs), and "
    "agent, a narrower policy that environment_phase switches to for good: every process of the setup phase "
    "ends and its secrets are removed. Secrets are named, never given: {NAME: {env: true}} takes the host "
    "variable NAME, only if the server operator offers it (SBX_MCP_SECRETS).','properties':{"
    "'setup':{'oneOf':[{'type':'string','enum':['@profiles']},{'type':'object'}]},"
    "'agent':{'oneOf':[{'type':'string','enum':['@profiles']},{'type':'object'}]}}},"
    "'snapshot':{'type':'string','minLength':1,'description':'Start from this snapshot (a snapshot_id "
    "from environment_snapshot or snapshot_list, or its label) instead of a fresh template: a fork.'},"
    "'name':{'type':'string','minLength':1,'description':'Optional unique name, usable wherever an "
    "environment_id is.'},"
    "'code':{'type':'boolean','description':'You mean to run code in it (environment_run_code): take an "
    "environment of a pool set with code, whose Python kernel is already started, so the first run "
    "answers at once. Without such a pool it is an ordinary create.'},"
    "'env':{'type':'object','additionalProperties':{'type':'string'},'description':'Environment "
    "variables for every command, as {NAME: value}.'},"
    "'limits':{'type':'object','additionalProperties':false,'description':'Resource limits; omitted "
    "ones take defaults (1 GiB memory, 1024 pids, no CPU cap, no timeout, no TTL, 10 MiB output, no disk "
    "quota).',"
    "'properties':{"
    "'memory_bytes':{'type':'integer','minimum':4194304,'maximum':70368744177664,'description':'Memory "
    "limit in bytes, 4 MiB to 64 TiB.'},"
    "'pids':{'type':'integer','minimum':1,'maximum':4194304,'description':'Maximum number of processes, "
    "1 to 4194304.'},"
    "'cpus':{'type':'number','minimum':0,'maximum':1024,'description':'CPU limit in cores, e.g. 0.5 "
    "(0: none; at most 1024).'},"
    "'timeout_ms':{'type':'integer','minimum':0,'maximum':2592000000,'description':'Default timeout of "
    "each command in milliseconds (0: none; at most 30 days).'},"
    "'ttl_ms':{'type':'integer','minimum':0,'maximum':31536000000,'description':'Destroy the environment "
    "after it has been idle this many milliseconds (0: never; at most 365 days).'},"
    "'ttl_keep':{'type':'boolean','description':'When the idle TTL ends the environment, keep its state "
    "(files) so it can still be snapshotted; environment_destroy removes it.'},"
    "'output_bytes':{'type':'integer','minimum':1,'maximum':1073741824,'description':'Cap on captured "
    "stdout and stderr per command, each, up to 1 GiB; a result is cut further to fit an 8 MiB message "
    "(stdout_truncated).'},"
    "'disk_bytes':{'type':'integer','minimum':0,'maximum':70368744177664,'description':'Quota on the "
    "writable layer in bytes, "
    "at least 4194304: writes beyond it fail inside with ENOSPC (No space left on device). 0: none. Needs "
    "a server running as root.'},"
    "'idle_suspend_ms':{'type':'integer','minimum':0,'maximum':31536000000,'description':'Suspend the "
    "environment after it has been idle this many milliseconds: its processes end, its files stay; the "
    "next call starts it again with the same environment_id (0: never).'}}},"
    "'network':{'description':'Network access. none (the default): loopback only. {allow: [host[:port], "
    "...]}: "
    "HTTP(S) through the sbx egress proxy (HTTP_PROXY/HTTPS_PROXY are set inside) to exactly these hosts "
    "(*.example.com for subdomains; a rule without a port allows 80 and 443); no DNS and no other route. "
    "internet: the same proxy to every public host and port (loopback, private and link-local addresses "
    "such as cloud metadata stay unreachable). open: "
    "the host network, "
    "unisolated.','oneOf':[{'type':'string','enum':['none','internet','open']},{'type':'object',"
    "'additionalProperties':false,'required':['allow'],'properties':{'allow':{'type':'array','minItems':1,"
    "'items':{'type':'string','minLength':1}}}}]},"
    "'volumes':{'type':'array','description':'Host directories to bind inside.','items':{'type':"
    "'object','additionalProperties':false,'required':['host','path'],'properties':{"
    "'host':{'type':'string','description':'Absolute host path.'},"
    "'path':{'type':'string','description':'Absolute path inside the environment.'},"
    "'readonly':{'type':'boolean','description':'Mount read-only (default false).'}}}},"
    "'devices':{'type':'array','maxItems':64,'description':'CDI devices, vendor/class=name (e.g. "
    "nvidia.com/gpu=0, "
    "nvidia.com/gpu=0:1 for a MIG slice, nvidia.com/gpu=all), from the CDI specs on the server host; a "
    "policy "
    "allows only the devices it names.','items':{'type':'string','minLength':1}},"
    "'publish':{'type':'array','maxItems':64,'description':'Ports of the environment to publish on the "
    "server host, each [HOSTIP:]HOSTPORT:PORT as docker run -p takes them (e.g. 0:8000: a free host "
    "port): a TCP connection to HOSTIP:HOSTPORT reaches PORT on the environment loopback, even with "
    "network none. Loopback host addresses only (127.0.0.1, the default, or [::1]). The result lists "
    "the host ports bound.','items':{'type':'string','minLength':3,'maxLength':100}}," USER_PROP(
	"Run every command (default root)") "}}";

const char tool_environment_create_out[] =
    OUTPUT("'environment_id':{'type':'string'},'snapshot_id':{'type':['string','null']},"
	   "'create_ms':{'type':'number'},'warnings':{'type':'array','items':{'type':'string'}},"
	   "'from_pool':{'type':'boolean','description':'Taken from a warm pool (pool_set).'},"
	   "'ports':{'type':'array','description':'The published ports (publish).','items':{'type':'object',"
	   "'properties':{'port':{'type':'integer'},'protocol':{'type':'string'},'host_ip':{'type':'string'},"
	   "'host_port':{'type':'integer'}}}}",
	   "'environment_id','create_ms'");

const char tool_environment_destroy_out[] =
    OUTPUT("'destroyed':{'type':'boolean'},'environment_id':{'type':'string'}", "'destroyed'");

const char tool_environment_list_out[] =
    OUTPUT("'environments':{'type':'array','items':{'type':'object','properties':{"
	   "'environment_id':{'type':'string'},'name':{'type':['string','null']},'state':{'type':'string'},"
	   "'created_at':{},'snapshot_id':{'type':['string','null']}}}}",
	   "'environments'");

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A host path a client names in environment_create must lie in a directory
 * the operator allowed (--allow-host-dir; symlinks and '..' resolved):
 * otherwise the client would choose which host directory the server mounts,
 * past the host template's mask (a volume of /etc reads /etc/shadow). */
static int create_host_path(tool_call *c, const char *what, const char *path, sbx_err **err)
{
	_cleanup_free_ char *real = path ? sbx_ctx_host_dir_allowed(c->ctx, path) : NULL;
	return real ? 0 : tools_host_path_refused(what, path, err);
}

/* The host paths of a policy document (filesystem.volumes[].host). */
static int create_policy_host_paths(tool_call *c, const json_t *doc, const char *what, sbx_err **err)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(doc, "filesystem"), "volumes"), i, v)
	{
		const char *host = json_str(v, "host");
		char field[96];
		snprintf(field, sizeof(field), "%s.filesystem.volumes[%zu].host", what, i);
		if (host && create_host_path(c, field, host, err) < 0)
			return -1;
	}
	return 0;
}

/* A template spec naming a host directory (dir:PATH, oci:DIR[:TAG]). */
int tools_template_host_path(tool_call *c, const char *what, const char *tpl, sbx_err **err)
{
	if (tpl && startswith(tpl, "dir:"))
		return create_host_path(c, what, tpl + 4, err);
	if (tpl && startswith(tpl, "oci:")) { /* as oci_ref_parse splits it: a tag after the last '/' */
		const char *slash = strrchr(tpl + 4, '/'), *colon = strrchr(slash ? slash : tpl + 4, ':');
		_cleanup_free_ char *dir =
		    colon ? strndup(tpl + 4, (size_t)(colon - tpl - 4)) : strdup(tpl + 4);
		if (!dir)
			return err_oom(err);
		return create_host_path(c, what, dir, err);
	}
	return 0;
}

/* volumes[].host, the policy documents' volumes, a dir: or oci: template. */
static int create_host_paths(tool_call *c, const json_t *pol, const char *pol_name, const json_t *agent,
			     sbx_err **err)
{
	const json_t *a = c->args;
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(a, "volumes"), i, v)
	{
		char field[48];
		snprintf(field, sizeof(field), "volumes[%zu].host", i);
		if (create_host_path(c, field, json_str(v, "host"), err) < 0)
			return -1;
	}
	if ((json_is_object(pol) && create_policy_host_paths(c, pol, pol_name, err) < 0) ||
	    (json_is_object(agent) && create_policy_host_paths(c, agent, "phases.agent", err) < 0))
		return -1;
	return tools_template_host_path(c, "template's directory", json_str(a, "template"), err);
}

int tool_environment_create(tool_call *c, json_t **ret, sbx_err **err)
{
	const json_t *a = c->args;
	/* policy: a built-in profile name or a policy document (object). */
	_cleanup_free_ char *pol = NULL, *agent_pol = NULL;
	json_t *pj = json_object_get(a, "policy"), *phases = json_object_get(a, "phases");
	json_t *aj = json_object_get(phases, "agent");
	/* phases: {setup, agent} (docs/secrets.md); setup is the policy. */
	if (phases && pj)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "give either policy or phases (whose setup is the policy), not both");
	if (phases)
		pj = json_object_get(phases, "setup");
	if ((json_is_object(pj) && secrets_mcp_check(pj, phases ? "phases.setup" : "policy", err) < 0) ||
	    (json_is_object(aj) && secrets_mcp_check(aj, "phases.agent", err) < 0))
		return -1;
	if (create_host_paths(c, pj, phases ? "phases.setup" : "policy", aj, err) < 0)
		return -1;
	if (json_is_object(pj) && !(pol = json_dumps(pj, JSON_COMPACT)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (json_is_object(aj) && !(agent_pol = json_dumps(aj, JSON_COMPACT)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.policy = pol ? pol : json_string_value(pj);
	o.agent_policy = agent_pol ? agent_pol : json_string_value(aj);
	if (o.agent_policy && !agent_pol && !tools_profile_known(o.agent_policy))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "phases.agent '%s': give a built-in profile (%s) or a policy document object",
			       o.agent_policy, tools_profile_names());
	/* Only names and documents over MCP: a path would let the model make the
	 * server read host files. */
	if (!pol && o.policy && !tools_profile_known(o.policy))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "policy '%s': give a built-in profile (%s) or a policy document object",
			       o.policy, tools_profile_names());
	o.template_spec = json_str(a, "template");
	o.snapshot = json_str(a, "snapshot");
	_cleanup_free_ char *base = NULL;
	if (o.snapshot && sbx_snapshot_resolve(c->ctx, o.snapshot, &base, err) < 0)
		return err_wrap(err, "snapshot '%s' (call snapshot_list to see the snapshots)", o.snapshot);
	o.name = json_str(a, "name");
	/* network: "none" | "internet" | "open" | {"allow": [patterns]}: the patterns go to
	 * the library as they are (network_allow; each checked there, never split) */
	_cleanup_strv_free_ char **net_allow = NULL;
	json_t *nj = json_object_get(a, "network");
	if (json_is_object(nj)) {
		json_t *allow = json_object_get(nj, "allow");
		size_t i;
		json_t *v;
		if (!json_is_array(allow))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "network.allow must be an array of host patterns");
		json_array_foreach(allow, i, v) if (!json_is_string(v)) return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "network.allow[%zu] must be a host pattern such as example.com or *.example.com:443", i);
		if (!(net_allow = json_to_strv(allow)))
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		o.network = "allow";
		o.network_allow = (const char *const *)net_allow;
	} else
		o.network = json_str(a, "network");
	_cleanup_strv_free_ char **env = NULL;
	int r = tools_env_strv(c, "env", &env);
	if (r < 0)
		return c->bad_params ? r : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	o.env = (const char *const *)env;
	json_t *lim = json_object_get(a, "limits");
	o.memory_bytes = json_int(lim, "memory_bytes", 0);
	o.pids = json_int(lim, "pids", 0);
	o.cpus = json_is_number(json_object_get(lim, "cpus"))
		     ? json_number_value(json_object_get(lim, "cpus"))
		     : 0;
	o.timeout_ms = json_int(lim, "timeout_ms", 0);
	o.ttl_ms = json_int(lim, "ttl_ms", 0);
	o.ttl_keep = json_bool(lim, "ttl_keep", false);
	o.output_bytes = json_int(lim, "output_bytes", 0);
	o.disk_bytes = json_int(lim, "disk_bytes", 0);
	o.idle_suspend_ms = json_int(lim, "idle_suspend_ms", 0); /* docs/warm.md */
	o.code = json_bool(a, "code", false);			 /* docs/code.md "Warm kernels" */
	char ubuf[300];
	if ((r = tools_user_arg(c, ubuf, sizeof(ubuf), &o.user)) < 0)
		return r;
	json_t *vols = json_object_get(a, "volumes");
	_cleanup_free_ sbx_volume *v = NULL;
	if (json_array_size(vols) > 0) {
		v = calloc(json_array_size(vols), sizeof(*v));
		if (!v)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		size_t i;
		json_t *vol;
		json_array_foreach(vols, i, vol)
		{
			v[i] = (sbx_volume){.host = json_str(vol, "host"),
					    .path = json_str(vol, "path"),
					    .readonly = json_bool(vol, "readonly", false)};
		}
		o.volumes = v;
		o.n_volumes = json_array_size(vols);
	}
	_cleanup_strv_free_ char **devices =
	    json_to_strv(json_object_get(a, "devices")); /* CDI (docs/devices.md) */
	o.devices = (const char *const *)devices;
	/* Published ports (docs/ports.md): on the server host's loopback only. A
	 * client (over HTTP, perhaps not on this host) does not choose to expose
	 * an environment to the server's network; the CLI's -p can. */
	_cleanup_strv_free_ char **publish = json_to_strv(json_object_get(a, "publish"));
	for (char **p = publish; p && *p; p++) {
		sbx_port_map m;
		if (sbx_parse_publish(*p, &m, err) < 0)
			return -1;
		if (strncmp(m.host_ip, "127.", 4) != 0 && !streq(m.host_ip, "::1"))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "publish '%s': an MCP client publishes on the server host's loopback only "
			    "(127.0.0.1 or [::1])",
			    *p);
	}
	o.publish = publish && *publish ? (const char *const *)publish : NULL;
	_cleanup_free_ char *id = NULL;
	_cleanup_json_ json_t *warnings = NULL;
	int64_t t0 = now_us();
	if (sbx_env_create(c->ctx, &o, &id, &warnings, err) < 0)
		return -1;
	double ms = (double)(now_us() - t0) / 1000.0;
	/* Its base snapshot (a template's own base without --snapshot), as
	 * recorded: no live information is needed here. */
	_cleanup_free_ char *recorded = NULL;
	bool from_pool = false;
	(void)sbx_env_origin(c->ctx, id, &recorded, &from_pool, NULL);
	if (!base)
		base = TAKE_PTR(recorded);
	json_t *res = json_pack("{s:s,s:o,s:f}", "environment_id", id, "snapshot_id",
				base ? json_string(base) : json_null(), "create_ms", ms);
	if (!res)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (json_array_size(warnings) > 0)
		json_object_set(res, "warnings", warnings);
	json_object_set_new(res, "from_pool", json_boolean(from_pool)); /* docs/warm.md */
	json_t *ports = NULL;
	if (publish && sbx_env_ports(c->ctx, id, &ports, NULL) == 0)
		json_object_set(res, "ports", json_object_get(ports, "ports"));
	json_decref(ports);
	*ret = res;
	return 0;
}

void tool_environment_create_undo(tool_call *c, const json_t *result)
{
	const char *id = json_str(result, "environment_id");
	if (id)
		(void)sbx_env_remove(c->ctx, id, NULL);
}

int tool_environment_destroy(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	/* Answered at once, torn down in the background (server/reaper.h);
	 * inline when the reaper's queue is full. */
	if (reaper_submit(c->ctx, id) < 0 && sbx_env_remove(c->ctx, id, err) < 0)
		return -1;
	*ret = json_pack("{s:b,s:s}", "destroyed", 1, "environment_id", id);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

int tool_environment_list(tool_call *c, json_t **ret, sbx_err **err)
{
	/* Without those being torn down: pending before the listing (their
	 * removal may end during it) or after it. */
	_cleanup_strv_free_ char **before = reaper_pending_ids();
	if (!before)
		return err_oom(err);
	if (sbx_env_list(c->ctx, ret, err) < 0)
		return -1;
	json_t *a = json_object_get(*ret, "environments");
	for (size_t i = json_array_size(a); i-- > 0;) {
		const char *id = json_str(json_array_get(a, i), "environment_id") ?: "";
		if (strv_contains(before, id) || reaper_pending(id))
			json_array_remove(a, i);
	}
	return 0;
}

int tool_environment_phase(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_phase(c->ctx, id, json_str(c->args, "phase"), ret, err);
}

const char tool_environment_phase_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ",'phase':{'type':'string','enum':['agent','setup'],'description':'agent: switch for good (there is no "
    "way "
    "back to setup). Absent: only report the current phase.'}}}";

const char tool_environment_phase_out[] =
    OUTPUT("'environment_id':{'type':'string'},'phase':{'type':'string','enum':['setup','agent']},"
	   "'previous_phase':{'type':'string'},'processes_ended':{'type':'integer'},"
	   "'secrets_removed':{'type':'array','items':{'type':'string'}},'network':{'type':'string'},"
	   "'network_allow':{'type':'array','items':{'type':'string'}},'limits':{'type':'object'},"
	   "'phase_ms':{'type':'number'},'changed':{'type':'boolean'}",
	   "'environment_id','phase'");

const char tool_environment_fork_in[] =
    "{'type':'object','additionalProperties':false,'required':['snapshot_id'],'properties':{"
    "'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to start from (a snapshot_id, "
    "unique "
    "prefix or label).'},'name':{'type':'string','minLength':1,'description':'Optional unique name.'}}}";

int tool_environment_fork(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *args = json_pack("{s:O}", "snapshot", json_object_get(c->args, "snapshot_id"));
	if (!args)
		return err_oom(err);
	if (json_object_get(c->args, "name"))
		json_object_set(args, "name", json_object_get(c->args, "name"));
	tool_call fc = *c;
	fc.args = args;
	return tool_environment_create(&fc, ret, err);
}

int tool_environment_inspect(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_inspect(c->ctx, id, ret, err);
}

int tool_environment_logs(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_net_log(c->ctx, id, ret, err);
}
