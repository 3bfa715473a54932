/* The MCP tools (see tools.h): one row per tool whose capability exists.
 *
 * Tools whose capability has not landed (replay) are not listed at
 * all: a client must never see a tool that can only fail. Arguments of such
 * capabilities on listed tools ("policy" on create, "trace" on execute) are
 * accepted by the validator and answered with an `unavailable` tool error
 * that says what to do. */
#include "server/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/env_state.h"
#include "api/secrets.h"
#include "runtime/user.h"
#include "server/reaper.h"
#include "util/dsse.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

/* ---- schemas ------------------------------------------------------------
 * Written with single quotes for readability; tools_init() turns them into
 * double quotes, so no text inside may contain an apostrophe. */

#define ENV_ID_PROP                                                                                          \
	"'environment_id':{'type':'string','minLength':1,'description':'Id (or unique name) of a live "      \
	"environment, as returned by environment_create or environment_list.'}"

#define ERROR_PROP                                                                                           \
	"'error':{'type':'object','description':'Set only when isError is true.','properties':{"             \
	"'code':{'type':'string','enum':['not_found','invalid_argument','limit_exceeded','conflict',"        \
	"'unavailable','internal']},'message':{'type':'string'}},'required':['code','message']}"

/* Output schemas accept either the result or the error object, because
 * clients validate structuredContent of error results too. */
#define OUTPUT(props, req)                                                                                   \
	"{'type':'object','properties':{" props "," ERROR_PROP "},'anyOf':[{'required':[" req                \
	"]},{'required':['error']}]}"

#define USER_PROP(what)                                                                                      \
	"'user':{'type':['string','integer'],'minimum':0,'description':'" what " as this user: a uid (an "   \
	"integer such as 1000, or the same as a string), uid:gid (1000:1000) or a name from the "            \
	"environment "                                                                                       \
	"/etc/passwd (nobody). A user other than root has no capabilities and cannot gain any (no su, sudo " \
	"or "                                                                                                \
	"setuid).'}"

/* The built-in profiles (sbx_policy_list(), loaded by tools_init): the
 * schemas' "@profiles" placeholders become their names and descriptions. */
static json_t *profiles;	     /* [{"name", "description", ...}] */
static char profile_names[256] = ""; /* "strict, dev, open" */

static bool profile_known(const char *name)
{
	size_t i;
	json_t *p;
	json_array_foreach(profiles, i, p) if (streq(json_str(p, "name") ?: "", name)) return true;
	return false;
}

static const char create_in[] =
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
    "open: "
    "the host network, unisolated.','oneOf':[{'type':'string','enum':['none','open']},{'type':'object',"
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
    "allows only the devices it names.','items':{'type':'string','minLength':1}}," USER_PROP(
	"Run every command (default root)") "}}";

static const char create_out[] =
    OUTPUT("'environment_id':{'type':'string'},'snapshot_id':{'type':['string','null']},"
	   "'create_ms':{'type':'number'},'warnings':{'type':'array','items':{'type':'string'}},"
	   "'from_pool':{'type':'boolean','description':'Taken from a warm pool (pool_set).'}",
	   "'environment_id','create_ms'");

static const char execute_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ","
    "'command':{'type':'string','minLength':1,'description':'Shell command, run by /bin/sh -c. Give "
    "either command or argv.'},"
    "'argv':{'type':'array','minItems':1,'items':{'type':'string'},'description':'Program and "
    "arguments, run without a shell (argv[0] looked up in PATH). Give either command or argv.'},"
    "'cwd':{'type':'string','description':'Absolute working directory (default /root).'},"
    "'env':{'type':'object','additionalProperties':{'type':'string'},'description':'Extra environment "
    "variables for this command, as {NAME: value}.'},"
    "'stdin':{'type':'string','description':'Text fed to the standard input of the command (default: "
    "empty, closed).'},"
    "'timeout_ms':{'type':'integer','minimum':-1,'maximum':2592000000,'description':'Kill the command after "
    "this many "
    "milliseconds and report timed_out (0 or absent: the environment default; -1: none).'},"
    "'trace':{'type':'boolean','description':'Record every system call of the environment while the "
    "command runs; the result carries trace_id, which environment_replay re-runs and verifies. The "
    "trace starts from a snapshot taken just before the command.'},"
    "'deterministic':{'type':'boolean','description':'Determinism controls (virtual clock, seeded "
    "randomness, fixed hostname, no ASLR, one CPU). Default: true when trace is set, so that a replay "
    "can match.'}," USER_PROP(
	"Run this command (default: the environment user)") ","
							    "'background':{'type':'boolean','description':'"
							    "Start the command and return at once with its "
							    "process_id (for servers, watchers, long "
							    "builds): it keeps running after this call, its "
							    "output is kept "
							    "up to the environment output limit; use "
							    "environment_process_output, "
							    "environment_process_wait and "
							    "environment_process_kill with that id. Only "
							    "timeout_ms bounds it (not the environment "
							    "default); no "
							    "stdin, no trace.'}}}";

static const char execute_out[] =
    OUTPUT("'exit_code':{'type':['integer','null'],'description':'null if the command was killed by a "
	   "signal'},'signal':{'type':'integer'},'stdout':{'type':'string'},'stderr':{'type':'string'},"
	   "'stdout_truncated':{'type':'boolean'},'stderr_truncated':{'type':'boolean'},"
	   "'timed_out':{'type':'boolean'},'duration_ms':{'type':'number'},"
	   "'oom_killed':{'type':'boolean'},'cancelled':{'type':'boolean'},"
	   "'trace_id':{'type':['string','null']},'process_id':{'type':'string','description':'background: "
	   "the process id (p1, ...)'},'pid':{'type':'integer'},'started_at':{'type':'string'}",
	   "'exit_code','stdout','stderr','timed_out','duration_ms'"
	   "]},{'required':['process_id'");

static const char env_only_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],"
    "'properties':{" ENV_ID_PROP "}}";

static const char destroy_out[] =
    OUTPUT("'destroyed':{'type':'boolean'},'environment_id':{'type':'string'}", "'destroyed'");

static const char list_in[] = "{'type':'object','additionalProperties':false,'properties':{}}";

static const char list_out[] =
    OUTPUT("'environments':{'type':'array','items':{'type':'object','properties':{"
	   "'environment_id':{'type':'string'},'name':{'type':['string','null']},'state':{'type':'string'},"
	   "'created_at':{},'snapshot_id':{'type':['string','null']}}}}",
	   "'environments'");

static const char read_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path'],'properties':"
    "{" ENV_ID_PROP ","
    "'path':{'type':'string','minLength':1,'description':'File to read; relative paths are taken from "
    "/root.'},"
    "'encoding':{'type':'string','enum':['utf8','base64'],'description':'utf8 (default) for text, "
    "base64 for binary files.'},"
    "'max_bytes':{'type':'integer','minimum':1,'description':'Read at most this many bytes (default "
    "10 MiB); truncated tells whether the file is longer.'}}}";

static const char read_out[] = OUTPUT("'content':{'type':'string'},'encoding':{'type':'string'},"
				      "'size':{'type':'integer'},'truncated':{'type':'boolean'}",
				      "'content','encoding','size','truncated'");

static const char write_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path','content'],"
    "'properties':{" ENV_ID_PROP ","
    "'path':{'type':'string','minLength':1,'description':'File to create or replace (its directory "
    "must exist); relative paths are taken from /root.'},"
    "'content':{'type':'string','description':'The new content, encoded as encoding says.'},"
    "'encoding':{'type':'string','enum':['utf8','base64'],'description':'utf8 (default) or base64 "
    "for binary content.'},"
    "'mode':{'type':'integer','minimum':0,'maximum':4095,'description':'Permission bits as a number, "
    "e.g. 493 for 0755 (default 420, i.e. 0644).'}}}";

static const char write_out[] = OUTPUT("'bytes_written':{'type':'integer'}", "'bytes_written'");

static const char list_files_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path'],'properties':"
    "{" ENV_ID_PROP ","
    "'path':{'type':'string','minLength':1,'description':'Directory to list; relative paths are taken "
    "from /root.'}}}";

static const char list_files_out[] =
    OUTPUT("'entries':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},"
	   "'type':{'type':'string'},'size':{'type':'integer'},'mode':{'type':'integer'}}}}",
	   "'entries'");

/* ---- helpers ------------------------------------------------------------ */

static int bad_params(tool_call *c, const char *fmt, ...) _printf_(2, 3);
static int bad_params(tool_call *c, const char *fmt, ...)
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

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* "user": a string ("1000", "1000:1000", "nobody") or a non-negative
 * integer, into buf; anything else is invalid params naming the field. */
static int user_arg(tool_call *c, char *buf, size_t n, const char **ret)
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
		return bad_params(c, "'user' must be a uid (1000 or \"1000\"), \"uid:gid\" or a user name");
	_cleanup_err_ sbx_err *e = NULL;
	user_spec us;
	if (user_spec_parse(buf, &us, &e) < 0)
		return bad_params(c, "%s", sbx_err_message(e));
	*ret = buf;
	return 0;
}

/* Resolves an id or name; a miss gets a message that tells a model what to do. */
static int resolve_env(tool_call *c, char **ret_id, sbx_err **err)
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
static int env_strv(tool_call *c, const char *field, char ***ret)
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
			return bad_params(
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

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Decodes standard base64 (whitespace ignored, padding optional). Returns
 * 0, or -EINVAL for anything else. */
static int b64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len)
{
	unsigned char *out = malloc(len / 4 * 3 + 3), *o = out;
	if (!out)
		return -ENOMEM;
	uint32_t acc = 0;
	int bits = 0, pad = 0;
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		if (ch && strchr(" \t\r\n", ch))
			continue;
		if (ch == '=') {
			pad++;
			continue;
		}
		const char *q = ch ? strchr(b64_alphabet, ch) : NULL;
		if (!q || pad) {
			free(out);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)(q - b64_alphabet);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			*o++ = (unsigned char)(acc >> bits);
		}
	}
	if (pad > 2 || bits >= 6) {
		free(out);
		return -EINVAL;
	}
	*ret_len = (size_t)(o - out);
	*ret = out;
	return 0;
}

/* ---- handlers ------------------------------------------------------------ */

/* A host path a client names in environment_create must lie in a directory
 * the operator allowed (--allow-host-dir; symlinks and '..' resolved):
 * otherwise the client would choose which host directory the server mounts,
 * past the host template's mask (a volume of /etc reads /etc/shadow). */
static int create_host_path(tool_call *c, const char *what, const char *path, sbx_err **err)
{
	_cleanup_free_ char *real = path ? sbx_ctx_host_dir_allowed(c->ctx, path) : NULL;
	if (real)
		return 0;
	return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
		       "%s '%s' is not in a host directory the operator allowed (sbx mcp/serve "
		       "--allow-host-dir DIR; symlinks and '..' are resolved first)",
		       what, path ? path : "");
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
static int template_host_path(tool_call *c, const char *what, const char *tpl, sbx_err **err)
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
	return template_host_path(c, "template's directory", json_str(a, "template"), err);
}

static int t_create(tool_call *c, json_t **ret, sbx_err **err)
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
	if (o.agent_policy && !agent_pol && !profile_known(o.agent_policy))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "phases.agent '%s': give a built-in profile (%s) or a policy document object",
			       o.agent_policy, profile_names);
	/* Only names and documents over MCP: a path would let the model make the
	 * server read host files. */
	if (!pol && o.policy && !profile_known(o.policy))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "policy '%s': give a built-in profile (%s) or a policy document object",
			       o.policy, profile_names);
	o.template_spec = json_str(a, "template");
	o.snapshot = json_str(a, "snapshot");
	_cleanup_free_ char *base = NULL;
	if (o.snapshot && sbx_snapshot_resolve(c->ctx, o.snapshot, &base, err) < 0)
		return err_wrap(err, "snapshot '%s' (call snapshot_list to see the snapshots)", o.snapshot);
	o.name = json_str(a, "name");
	/* network: "none" | "open" | {"allow": [patterns]}: the patterns go to
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
	int r = env_strv(c, "env", &env);
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
	char ubuf[300];
	if ((r = user_arg(c, ubuf, sizeof(ubuf), &o.user)) < 0)
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
	*ret = res;
	return 0;
}

static void t_create_undo(tool_call *c, const json_t *result)
{
	const char *id = json_str(result, "environment_id");
	if (id)
		(void)sbx_env_remove(c->ctx, id, NULL);
}

/* Bytes `s` takes once more escaped as a JSON string (the text content item
 * carries the structuredContent again, as a string). */
static size_t escaped_len(const char *s, size_t n)
{
	size_t out = 2;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		out += ch == '"' || ch == '\\' ? 2 : ch < 0x20 ? 6 : 1;
	}
	return out;
}

size_t tools_result_size(const json_t *structured)
{
	_cleanup_free_ char *d = json_dumps(structured, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!d)
		return SIZE_MAX;
	size_t n = strlen(d);
	return n + escaped_len(d, n) + 128;
}

/* Cuts the longer of stdout and stderr until the whole CallToolResult fits
 * in `budget` bytes, setting its *_truncated flag: a command's output must
 * never make a message that a client refuses (the TypeScript SDK's stdio
 * transport drops the connection at 10 MiB) or that costs the server an
 * unbounded amount of memory. Cuts fall on a UTF-8 character boundary. */
int tools_fit_output(json_t *res, size_t budget)
{
	for (int round = 0; round < 64; round++) {
		size_t total = tools_result_size(res);
		if (total == SIZE_MAX)
			return -ENOMEM;
		if (total <= budget)
			return 0;
		json_t *so = json_object_get(res, "stdout"), *se = json_object_get(res, "stderr");
		size_t lo = json_string_length(so), le = json_string_length(se);
		if (lo == 0 && le == 0)
			return -E2BIG;
		bool out = lo >= le;
		json_t *str = out ? so : se;
		size_t len = out ? lo : le;
		/* Shrink in proportion to the excess, and by at least an eighth. */
		size_t want = (size_t)((double)len * ((double)budget / (double)total) * 0.9);
		if (want > len - len / 8)
			want = len - len / 8;
		const char *v = json_string_value(str);
		while (want > 0 && ((unsigned char)v[want] & 0xC0) == 0x80)
			want--;
		json_t *cut = json_stringn_nocheck(v, want);
		if (!cut || json_object_set_new(res, out ? "stdout" : "stderr", cut) < 0 ||
		    json_object_set_new(res, out ? "stdout_truncated" : "stderr_truncated", json_true()) < 0)
			return -ENOMEM;
	}
	return -E2BIG;
}

/* Under a policy its timeout is a ceiling, as its other limits are: an
 * execute may shorten it, never lift it (-1) or lengthen it, and a
 * background process without a timeout of its own gets the policy's. */
static int exec_timeout_capped(tool_call *c, const char *id, bool background, int64_t *timeout_ms,
			       sbx_err **err)
{
	_cleanup_env_record_ env_record st = {0};
	if (env_record_read(c->ctx, id, &st) < 0 || !st.policy || st.limits.timeout_ms <= 0)
		return 0;
	int64_t cap = st.limits.timeout_ms, t = *timeout_ms;
	if (t == 0 && background)
		*timeout_ms = cap;
	if (t == -1 || t > cap)
		return bad_params(
		    c,
		    "'timeout_ms' %lld: the environment's policy '%s' allows at most %lld ms; an "
		    "explicit value may only narrow it",
		    (long long)t, st.policy, (long long)cap);
	return 0;
}

static int t_execute(tool_call *c, json_t **ret, sbx_err **err)
{
	const json_t *a = c->args;
	const char *command = json_str(a, "command");
	json_t *argv_j = json_object_get(a, "argv");
	if (command && argv_j)
		return bad_params(c, "give either 'command' (a shell command string) or 'argv' (an array of "
				     "strings), not both");
	if (!command && !argv_j)
		return bad_params(c,
				  "missing 'command' (a shell command string, run by /bin/sh -c) or 'argv' "
				  "(an array of strings)");
	_cleanup_strv_free_ char **argv = NULL;
	if (command) {
		argv = calloc(4, sizeof(char *));
		if (!argv || !(argv[0] = strdup("/bin/sh")) || !(argv[1] = strdup("-c")) ||
		    !(argv[2] = strdup(command)))
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	} else if (!(argv = json_to_strv(argv_j)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	_cleanup_strv_free_ char **env = NULL;
	int r = env_strv(c, "env", &env);
	if (r < 0)
		return c->bad_params ? r : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = (const char *const *)argv;
	o.env = (const char *const *)env;
	o.cwd = json_str(a, "cwd");
	o.timeout_ms = json_int(a, "timeout_ms", 0);
	json_t *in = json_object_get(a, "stdin");
	if (in) {
		o.stdin_data = json_string_value(in);
		o.stdin_len = json_string_length(in);
	}
	o.trace = json_bool(a, "trace", false);
	char ubuf[300];
	if ((r = user_arg(c, ubuf, sizeof(ubuf), &o.user)) < 0)
		return r;
	json_t *det = json_object_get(a, "deterministic");
	o.deterministic = json_is_boolean(det) ? json_is_true(det) : -1;
	if ((r = exec_timeout_capped(c, id, json_bool(a, "background", false), &o.timeout_ms, err)) < 0)
		return r;
	if (json_bool(a, "background", false)) { /* docs/processes.md */
		if (in || o.trace)
			return bad_params(c, "a background command takes no 'stdin' and no 'trace'");
		return sbx_process_start(c->ctx, id, &o, ret, err);
	}
	o.capture = true;
	o.on_output = c->on_output;
	o.userdata = c->userdata;
	o.cancel_fd = c->cancel_fd;
	sbx_exec_result res = {0};
	if (sbx_env_exec(c->ctx, id, &o, &res, err) < 0)
		return -1;
	json_t *j = sbx_exec_result_json(&res);
	sbx_exec_result_free(&res);
	if (!j)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (tools_fit_output(j, TOOLS_RESULT_MAX) < 0) {
		json_decref(j);
		return err_set(err, SBX_E_INTERNAL, ENOMEM,
			       "out of memory shrinking the output to fit a message");
	}
	*ret = j;
	return 0;
}

static int t_destroy(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	/* Answered at once, torn down in the background (server/reaper.h);
	 * inline when the reaper's queue is full. */
	if (reaper_submit(c->ctx, id) < 0 && sbx_env_remove(c->ctx, id, err) < 0)
		return -1;
	*ret = json_pack("{s:b,s:s}", "destroyed", 1, "environment_id", id);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

static int t_list(tool_call *c, json_t **ret, sbx_err **err)
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

static int t_read_file(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path");
	const char *enc = json_str(c->args, "encoding") ?: "utf8";
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int64_t size = 0;
	bool truncated = false;
	if (sbx_env_read_file(c->ctx, id, path, json_int(c->args, "max_bytes", 0), &data, &len, &size,
			      &truncated, err) < 0)
		return -1;
	json_t *content;
	if (streq(enc, "base64")) {
		_cleanup_free_ char *b = dsse_b64_encode(data, len);
		content = b ? json_string(b) : NULL;
	} else {
		/* A cut may split a multi-byte character: drop its first bytes. */
		if (truncated)
			for (size_t k = 1; k <= 3 && k <= len; k++) {
				unsigned char ch = (unsigned char)data[len - k];
				if ((ch & 0xC0) == 0x80)
					continue;
				size_t need = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
				if (need > k)
					len -= k;
				break;
			}
		content = json_stringn(data, len);
		if (!content)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EILSEQ,
				       "'%s' is not UTF-8 text; read it again with encoding \"base64\"",
				       path);
	}
	*ret = json_pack("{s:o,s:s,s:I,s:b}", "content", content, "encoding", enc, "size", (json_int_t)size,
			 "truncated", truncated);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

static int t_write_file(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path");
	const char *enc = json_str(c->args, "encoding") ?: "utf8";
	json_t *content = json_object_get(c->args, "content");
	const char *data = json_string_value(content);
	size_t len = json_string_length(content);
	_cleanup_free_ unsigned char *decoded = NULL;
	if (streq(enc, "base64")) {
		int r = b64_decode(data, len, &decoded, &len);
		if (r == -EINVAL)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "'content' is not valid base64; encode the bytes with standard base64 "
				       "(A-Z a-z 0-9 + /, = padding) or use encoding \"utf8\" for text");
		if (r < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		data = (const char *)decoded;
	}
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	if (sbx_env_write_file(c->ctx, id, path, data, len, (int)json_int(c->args, "mode", -1), err) < 0)
		return -1;
	*ret = json_pack("{s:I}", "bytes_written", (json_int_t)len);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

static int t_list_files(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_list_files(c->ctx, id, json_str(c->args, "path"), ret, err);
}

static int t_snapshot(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_snapshot(c->ctx, id, json_str(c->args, "label"), ret, err);
}

static int t_restore(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	const char *snap = json_str(c->args, "snapshot_id");
	if (sbx_env_restore(c->ctx, id, snap, ret, err) < 0)
		return sbx_err_code(*err) == SBX_E_NOT_FOUND
			   ? err_wrap(err, "restore (call snapshot_list to see the snapshots)")
			   : -1;
	return 0;
}

static int t_snapshot_list(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_snapshot_list(c->ctx, ret, err);
}

static int t_phase(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_phase(c->ctx, id, json_str(c->args, "phase"), ret, err);
}

static const char phase_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ",'phase':{'type':'string','enum':['agent','setup'],'description':'agent: switch for good (there is no "
    "way "
    "back to setup). Absent: only report the current phase.'}}}";
static const char phase_out[] =
    OUTPUT("'environment_id':{'type':'string'},'phase':{'type':'string','enum':['setup','agent']},"
	   "'previous_phase':{'type':'string'},'processes_ended':{'type':'integer'},"
	   "'secrets_removed':{'type':'array','items':{'type':'string'}},'network':{'type':'string'},"
	   "'network_allow':{'type':'array','items':{'type':'string'}},'limits':{'type':'object'},"
	   "'phase_ms':{'type':'number'},'changed':{'type':'boolean'}",
	   "'environment_id','phase'");

static const char snapshot_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ",'label':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$','description':'Optional "
    "name for the snapshot, usable wherever a snapshot_id is (moves if reused).'}}}";
static const char snapshot_out[] =
    OUTPUT("'snapshot_id':{'type':'string'},'size_bytes':{'type':'integer'},'new_bytes':{'type':'integer'},"
	   "'files':{'type':'integer'},'snapshot_ms':{'type':'number'},'label':{'type':'string'}",
	   "'snapshot_id','size_bytes','new_bytes','files','snapshot_ms'");
static const char restore_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','snapshot_id'],'properties':"
    "{" ENV_ID_PROP ",'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to roll back "
    "to: a snapshot_id (or unique prefix) or a label.'}}}";
static const char restore_out[] = OUTPUT(
    "'environment_id':{'type':'string'},'snapshot_id':{'type':'string'},'restore_ms':{'type':'number'}",
    "'environment_id','snapshot_id','restore_ms'");
static const char snapshot_list_out[] = OUTPUT(
    "'snapshots':{'type':'array','items':{'type':'object','properties':{'snapshot_id':{'type':'string'},"
    "'label':{'type':['string','null']},'parent':{'type':['string','null']},'created_at':{'type':'string'},"
    "'size_bytes':{'type':'integer'}}}}",
    "'snapshots'");

static const char replay_in[] =
    "{'type':'object','additionalProperties':false,'required':['trace_id'],'properties':{"
    "'trace_id':{'type':'string','minLength':1,'description':'A trace_id from environment_execute with "
    "trace: true (or a unique prefix of its hex).'},"
    "'inputs':{'type':'string','enum':['read_set','volumes'],'description':'What is checked before the "
    "re-run: the files the recording read (read_set, the default) or every whole volume (volumes).'}}}";
static const char replay_out[] = OUTPUT(
    "'verdict':{'type':'string','enum':['match','diverged']},'divergence':{'type':'object','properties':{"
    "'kind':{'type':'string','enum':['input','exit','stdout','stderr','filesystem','syscall']},"
    "'index':{'type':'integer'},'pid':{'type':['integer','null']},'expected':{'type':'string'},"
    "'actual':{'type':'string'},'path':{'type':'string'}}},'inputs':{'type':'string'},"
    "'replay_ms':{'type':'number'},'trace_id':{'type':'string'},"
    "'replay_trace_id':{'type':'string'},'lost':{'type':'integer'},"
    "'notes':{'type':'array','items':{'type':'string'}}",
    "'verdict','replay_ms'");

static int t_replay(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_trace_replay_inputs(c->ctx, json_str(c->args, "trace_id"), json_str(c->args, "inputs"),
				       ret, err);
}

static int t_diff(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	const char *snap = json_str(c->args, "snapshot_id");
	if (sbx_env_diff(c->ctx, id, snap, ret, err) < 0)
		return snap && sbx_err_code(*err) == SBX_E_NOT_FOUND
			   ? err_wrap(err, "diff (call snapshot_list to see the snapshots)")
			   : -1;
	return 0;
}

static const char diff_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ",'snapshot_id':{'type':'string','minLength':1,'description':'Compare with this snapshot (a snapshot_id, "
    "unique prefix or label) instead of the environment base (what it was created or last restored "
    "from).'}}}";
static const char diff_out[] =
    OUTPUT("'added':{'type':'array','items':{'type':'string'}},'modified':{'type':'array','items':{'type':'"
	   "string'}},"
	   "'deleted':{'type':'array','items':{'type':'string'}},'environment_id':{'type':'string'},"
	   "'snapshot_id':{'type':['string','null']}",
	   "'added','modified','deleted'");

/* ---- environment_attest: a signed attestation of a traced run ------------- */

static const char attest_in[] =
    "{'type':'object','additionalProperties':false,'required':['trace_id'],'properties':{"
    "'trace_id':{'type':'string','minLength':1,'description':'A trace_id from environment_execute with "
    "trace: true (or a unique prefix of its hex).'},'replay':{'type':'boolean','description':'Replay the "
    "trace first and record the verdict in the attestation (default false).'}}}";
static const char attest_out[] = OUTPUT(
    "'envelope':{'type':'object','description':'The DSSE envelope: payloadType, payload (base64 of the "
    "in-toto Statement v1), signatures [{keyid, "
    "sig}].'},'keyid':{'type':'string'},'trace_id':{'type':'string'},"
    "'subjects':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},"
    "'digest':{'type':'string'}}}},'replay':{'type':'object'}",
    "'envelope','keyid','subjects'");

static int t_attest(tool_call *c, json_t **ret, sbx_err **err)
{
	/* The key is the server's (sbx mcp/serve --attest-key), never the client's. */
	sbx_attest_opts o = SBX_ATTEST_OPTS_INIT;
	o.replay = json_bool(c->args, "replay", false);
	return sbx_attest(c->ctx, json_str(c->args, "trace_id"), &o, ret, err);
}

/* ---- template_build: a template from a Dockerfile (docs/build.md) --------- */

static const char build_in[] =
    "{'type':'object','additionalProperties':false,'required':['dockerfile','context','tag'],'properties':{"
    "'dockerfile':{'type':'string','minLength':1,'description':'The Dockerfile text (FROM a template, "
    "snapshot, "
    "oci:DIR[:TAG] or scratch; RUN, COPY, ADD, ENV, ARG, WORKDIR, USER, LABEL, SHELL, CMD, ENTRYPOINT, "
    "EXPOSE).'},"
    "'context':{'type':'string','minLength':1,'description':'The host directory COPY and ADD read from: one "
    "the "
    "operator allowed (sbx mcp/serve --allow-host-dir DIR) or beneath one.'},"
    "'tag':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$','description':'The template name "
    "to "
    "create or replace (environment_create template: NAME).'},"
    "'build_args':{'type':'object','description':'ARG values {NAME: value}.'},"
    "'network':{'type':'string','description':'RUN network: none (default), open, or allow=HOST[:PORT],...'},"
    "'no_cache':{'type':'boolean','description':'Run every step even if cached (default false).'}}}";
static const char build_out[] =
    OUTPUT("'template':{'type':'string'},'snapshot_id':{'type':'string'},'steps':{'type':'array','items':{"
	   "'type':'object'}},'cache_hits':{'type':'integer'},'cache_misses':{'type':'integer'},'config':{"
	   "'type':'object'},'build_ms':{'type':'number'}",
	   "'template','snapshot_id','steps','cache_hits','cache_misses'");

static int t_build(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *ctxdir = json_str(c->args, "context");
	_cleanup_free_ char *real = sbx_ctx_host_dir_allowed(c->ctx, ctxdir);
	if (!real)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EPERM,
		    "build context '%s' is not a host directory the operator allowed (sbx mcp/serve "
		    "--allow-host-dir DIR)",
		    ctxdir);
	json_t *ba = json_object_get(c->args, "build_args");
	size_t n = ba ? json_object_size(ba) : 0, k = 0;
	_cleanup_strv_free_ char **args = calloc(n + 1, sizeof(char *));
	if (!args)
		return err_oom(err);
	const char *key;
	json_t *v;
	json_object_foreach(ba, key, v)
	{
		if (!json_is_string(v) || asprintf(&args[k], "%s=%s", key, json_string_value(v)) < 0) {
			args[k] = NULL;
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "build_args.%s: expected a string", key);
		}
		k++;
	}
	const char *text = json_str(c->args, "dockerfile");
	sbx_build_opts o = SBX_BUILD_OPTS_INIT;
	o.dockerfile = text;
	o.dockerfile_len = strlen(text);
	o.context = real;
	o.tag = json_str(c->args, "tag");
	o.network = json_str(c->args, "network");
	o.build_args = n ? (const char *const *)args : NULL;
	o.no_cache = json_bool(c->args, "no_cache", false);
	o.on_output = c->on_output;
	o.userdata = c->userdata;
	return sbx_build(c->ctx, &o, ret, err);
}

/* ---- snapshots through OCI registries (snapshot_push, snapshot_pull) ---------- */

static int t_snapshot_push(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_snapshot_push(c->ctx, json_str(c->args, "snapshot_id"), json_str(c->args, "ref"),
				 json_bool(c->args, "insecure", false), ret, err);
}

static int t_snapshot_pull(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_snapshot_pull(c->ctx, json_str(c->args, "ref"), json_str(c->args, "name"),
				 json_bool(c->args, "insecure", false), ret, err);
}

#define REGISTRY_REF_PROP(what)                                                                              \
	"'ref':{'type':'string','minLength':1,'maxLength':1024,'description':'REGISTRY/REPO:TAG" what        \
	" (e.g. registry.example.com/team/app:v1; a first component without a dot or colon means "           \
	"docker.io).'}"
#define REGISTRY_INSECURE_PROP                                                                               \
	"'insecure':{'type':'boolean','description':'Plain HTTP instead of HTTPS (a registry on "            \
	"loopback).'}"
static const char snapshot_push_in[] =
    "{'type':'object','additionalProperties':false,'required':['snapshot_id','ref'],'properties':{"
    "'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to push: a snapshot_id (or "
    "unique prefix) or a label.'}," REGISTRY_REF_PROP("") "," REGISTRY_INSECURE_PROP "}}";
static const char snapshot_push_out[] = OUTPUT(
    "'snapshot_id':{'type':'string'},'ref':{'type':'string'},'manifest_digest':{'type':'string'},"
    "'config_digest':{'type':'string'},'blobs':{'type':'array','items':{'type':'object','properties':{"
    "'digest':{'type':'string'},'size':{'type':'integer'},'action':{'type':'string','enum':['uploaded',"
    "'skipped','mounted']}}}},'uploaded_bytes':{'type':'integer'},'skipped_bytes':{'type':'integer'},"
    "'uploaded_blobs':{'type':'integer'},'skipped_blobs':{'type':'integer'},'mounted_blobs':{'type':'integer'"
    "},"
    "'seconds':{'type':'number'}",
    "'manifest_digest','uploaded_bytes','skipped_bytes'");
static const char snapshot_pull_in[] =
    "{'type':'object','additionalProperties':false,'required':['ref'],'properties':{" REGISTRY_REF_PROP(
	"[@sha256:DIGEST]") ",'name':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$',"
			    "'description':'The label of the pulled snapshot (default: the last component of "
			    "the repository); moves if reused.'}," REGISTRY_INSECURE_PROP "}}";
static const char snapshot_pull_out[] = OUTPUT(
    "'snapshot_id':{'type':'string'},'label':{'type':'string'},'ref':{'type':'string'},"
    "'manifest_digest':{'type':'string'},'layers':{'type':'array','items':{'type':'string'}},"
    "'downloaded_bytes':{'type':'integer'},'reused_blobs':{'type':'integer'},'size_bytes':{'type':'integer'},"
    "'seconds':{'type':'number'}",
    "'snapshot_id','label','manifest_digest'");

/* ---- snapshot_export, snapshot_import: OCI layouts in allowed host directories ---- */

static int host_path_refused(const char *what, const char *path, sbx_err **err)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
		       "%s '%s' is not in a host directory the operator allowed (sbx mcp/serve "
		       "--allow-host-dir DIR; symlinks and '..' are resolved first)",
		       what, path ? path : "");
}

static int t_snapshot_export(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path"), *tag = json_str(c->args, "tag");
	_cleanup_free_ char *real = sbx_ctx_host_dest_allowed(c->ctx, path), *ref = NULL;
	if (!real)
		return host_path_refused("export path", path, err);
	if (tag && strchr(real, ':'))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "export path '%s': a path with ':' cannot take a tag", real);
	if (tag && asprintf(&ref, "oci:%s:%s", real, tag) < 0)
		return err_oom(err);
	return sbx_snapshot_export(c->ctx, json_str(c->args, "snapshot_id"), ref ? ref : real, ret, err);
}

static int t_snapshot_import(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path"), *tag = json_str(c->args, "tag");
	_cleanup_free_ char *real = sbx_ctx_host_dir_allowed(c->ctx, path), *ref = NULL;
	if (!real)
		return host_path_refused("import path", path, err);
	if (strchr(real, ':'))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "import path '%s': a path with ':' cannot be named as oci:DIR[:TAG]", real);
	if (asprintf(&ref, "oci:%s%s%s", real, tag ? ":" : "", tag ? tag : "") < 0)
		return err_oom(err);
	return sbx_image_import(c->ctx, ref, json_str(c->args, "name"), ret, err);
}

#define OCI_TAG_PROP(what)                                                                                   \
	"'tag':{'type':'string','pattern':'^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$','description':'" what "'}"
static const char snapshot_export_in[] =
    "{'type':'object','additionalProperties':false,'required':['snapshot_id','path'],'properties':{"
    "'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to export: a snapshot_id (or "
    "unique prefix), a label, or template.NAME for a template.'},"
    "'path':{'type':'string','minLength':1,'description':'The OCI image layout directory to write (made if "
    "absent; an existing layout gains the tag): in or beneath a host directory the operator allowed (sbx "
    "mcp/serve --allow-host-dir DIR).'}," OCI_TAG_PROP("The image tag in the layout (default latest).") "}}";
static const char snapshot_export_out[] = OUTPUT(
    "'snapshot_id':{'type':'string'},'oci_dir':{'type':'string'},'tag':{'type':'string'},'manifest_digest':{"
    "'type':'string'},'config_digest':{'type':'string'},'layers':{'type':'array','items':{'type':'object'}},"
    "'size_bytes':{'type':'integer'}",
    "'snapshot_id','oci_dir','tag','manifest_digest'");
static const char snapshot_import_in[] =
    "{'type':'object','additionalProperties':false,'required':['path'],'properties':{"
    "'path':{'type':'string','minLength':1,'description':'An OCI image layout directory (docker, podman, "
    "skopeo, umoci or sbx export write them) in or beneath a host directory the operator allowed (sbx "
    "mcp/serve --allow-host-dir DIR).'},"
    "'name':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,118}$','description':'The template name "
    "(environment_create template: NAME; default the tag, else the directory name); replaced if it "
    "exists.'}," OCI_TAG_PROP("The image to take from the layout (default its only one, or latest).") "}}";
static const char snapshot_import_out[] =
    OUTPUT("'snapshot_id':{'type':'string'},'name':{'type':'string'},'ref':{'type':'string'},'layers':{"
	   "'type':'array','items':{'type':'string'}},'diff_ids':{'type':'array','items':{'type':'string'}},"
	   "'manifest_digest':{'type':'string'},'size_bytes':{'type':'integer'}",
	   "'snapshot_id','name','manifest_digest'");

/* ---- the table ------------------------------------------------------------ */

/* ---- warm environments: pause, resume (docs/warm.md) ---------------------- */

static const char pause_out[] =
    OUTPUT("'environment_id':{'type':'string'},'state':{'type':'string','enum':['paused','running']},"
	   "'pause_ms':{'type':'number'},'resume_ms':{'type':'number'},'restarted':{'type':'boolean'},"
	   "'was_paused':{'type':'boolean'},'processes_ended':{'type':'boolean'}",
	   "'environment_id','state'");

static int t_pause(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_pause(c->ctx, id, ret, err);
}

static int t_resume(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_resume(c->ctx, id, ret, err);
}

static const char pool_set_in[] =
    "{'type':'object','additionalProperties':false,'required':['source','size'],'properties':{"
    "'source':{'type':'string','minLength':1,'description':'A template (host, dir:PATH, oci:PATH, a name) or "
    "a "
    "snapshot (snapshot_id or label) whose environments the pool keeps built.'},"
    "'size':{'type':'integer','minimum':0,'maximum':256,'description':'How many to keep ready (0 empties "
    "it).'},"
    "'policy':{'type':'string','enum':['@profiles'],'description':'The built-in profile they are built "
    "under (@profiles); only a create with the same policy takes one.'},"
    "'remove':{'type':'boolean','description':'Remove the pool and its ready environments instead.'}}}";

#define POOL_PROPS                                                                                           \
	"'pool':{'type':'string'},'kind':{'type':'string','enum':['template','snapshot']},'source':{'type':" \
	"'string'},"                                                                                         \
	"'size':{'type':'integer'},'policy':{'type':['string','null']},'ready':{'type':'integer'},"          \
	"'layer':{'type':'string','enum':['disk','tmpfs']}"

static const char pool_set_out[] =
    OUTPUT(POOL_PROPS ",'removed':{'type':'array','items':{'type':'string'}}", "'pool'");

static const char pool_list_out[] =
    OUTPUT("'pools':{'type':'array','items':{'type':'object','properties':{" POOL_PROPS
	   "}}},'max_ready':{'type':'integer'}",
	   "'pools'");

static int t_pool_set(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *source = json_str(c->args, "source"), *pol = json_str(c->args, "policy");
	if (pol && !profile_known(pol)) /* as environment_create: no host path over MCP */
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "policy '%.64s': give a built-in profile (%s)", pol, profile_names);
	if (json_bool(c->args, "remove", false))
		return sbx_pool_remove(c->ctx, source, pol, ret, err);
	if (template_host_path(c, "source's directory", source, err) < 0)
		return -1;
	return sbx_pool_set(c->ctx, source, (int)json_int(c->args, "size", 0), pol, ret, err);
}

static int t_pool_list(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_pool_list(c->ctx, ret, err);
}

static const char *const create_reserved[] = {NULL};
static const char *const execute_binary[] = {"stdin", NULL};
static const char *const write_binary[] = {"content", NULL};
static const char *const execute_reserved[] = {NULL};

/* ---- the rest of the CLI an agent uses (issue 14): fork, inspect, logs,
 * templates, trees in and out ------------------------------------------------ */

static const char fork_in[] =
    "{'type':'object','additionalProperties':false,'required':['snapshot_id'],'properties':{"
    "'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to start from (a snapshot_id, "
    "unique "
    "prefix or label).'},'name':{'type':'string','minLength':1,'description':'Optional unique name.'}}}";

static int t_fork(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *args = json_pack("{s:O}", "snapshot", json_object_get(c->args, "snapshot_id"));
	if (!args)
		return err_oom(err);
	if (json_object_get(c->args, "name"))
		json_object_set(args, "name", json_object_get(c->args, "name"));
	tool_call fc = *c;
	fc.args = args;
	return t_create(&fc, ret, err);
}

static int t_inspect(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_inspect(c->ctx, id, ret, err);
}

static int t_logs(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_net_log(c->ctx, id, ret, err);
}

static int t_template_list(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_template_list(c->ctx, ret, err);
}

#define TREE_MAX (32LL << 20) /* a tree in or out of one call, as a tar before base64 */

static const char upload_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path','content'],'"
    "properties':{" ENV_ID_PROP
    ",'path':{'type':'string','minLength':1,'description':'Directory inside the environment to unpack "
    "into (made if missing; its parent must exist).'},'content':{'type':'string','description':'A tar "
    "archive, "
    "base64: its entries land under path. At most 32 MiB of tar.'}}}";
static const char upload_out[] = OUTPUT("'environment_id':{'type':'string'},'path':{'type':'string'},"
					"'bytes':{'type':'integer'}",
					"'environment_id','path','bytes'");

static int t_upload(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	const char *b64 = json_str(c->args, "content") ?: "";
	size_t n = strlen(b64);
	if (n / 4 * 3 > (size_t)TREE_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "content: more than 32 MiB of tar (use sbx cp)");
	_cleanup_free_ unsigned char *tar = NULL;
	size_t len = 0;
	int r = b64_decode(b64, n, &tar, &len);
	if (r == -ENOMEM)
		return err_oom(err);
	if (r < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "content: not base64");
	_cleanup_close_ int fd = memfd_create("sbx-upload", MFD_CLOEXEC);
	if (fd < 0 || fd_write_all(fd, tar, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return err_errno(err, "upload: buffer the archive");
	const char *path = json_str(c->args, "path");
	if (sbx_env_tar_in(c->ctx, id, path, fd, true, err) < 0)
		return -1;
	*ret = json_pack("{s:s,s:s,s:I}", "environment_id", id, "path", path, "bytes", (json_int_t)len);
	return *ret ? 0 : err_oom(err);
}

static const char download_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','path'],'properties':"
    "{" ENV_ID_PROP ",'path':{'type':'string','minLength':1,'description':'A directory inside the "
    "environment: its contents come "
    "back as one tar archive (base64), at most 32 MiB of tar.'}}}";
static const char download_out[] =
    OUTPUT("'environment_id':{'type':'string'},'path':{'type':'string'},"
	   "'content':{'type':'string'},'encoding':{'type':'string'},'bytes':{'type':'integer'}",
	   "'content','bytes'");

static int t_download(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	const char *path = json_str(c->args, "path");
	_cleanup_close_ int fd = memfd_create("sbx-download", MFD_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "download: buffer the archive");
	/* The memfd is bounded by a seal-free size check after the fact; the
	 * tar of a huge tree is refused rather than cut (a cut tar is useless). */
	if (sbx_env_tar_out(c->ctx, id, path, fd, err) < 0)
		return -1;
	off_t size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		return err_errno(err, "download: size the archive");
	if (size > TREE_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "'%s' is %lld bytes as a tar, over the 32 MiB of one call (use sbx cp)", path,
			       (long long)size);
	_cleanup_free_ unsigned char *tar = malloc((size_t)size + 1);
	if (!tar)
		return err_oom(err);
	if (pread(fd, tar, (size_t)size, 0) != size)
		return err_errno(err, "download: read the archive");
	_cleanup_free_ char *b64 = dsse_b64_encode(tar, (size_t)size);
	if (!b64)
		return err_oom(err);
	*ret = json_pack("{s:s,s:s,s:s,s:s,s:I}", "environment_id", id, "path", path, "content", b64,
			 "encoding", "base64+tar", "bytes", (json_int_t)size);
	return *ret ? 0 : err_oom(err);
}

static const char any_out[] = "{'type':'object'}";

/* ---- background processes (docs/processes.md) ---------------------------- */

#define PROC_ID_PROP                                                                                         \
	"'process_id':{'type':'string','pattern':'^p[1-9][0-9]{0,8}$','description':'A process id (p1, "     \
	"...) "                                                                                              \
	"from environment_execute with background: true, or environment_process_list.'}"

#define PROC_RECORD_PROPS                                                                                    \
	"'process_id':{'type':'string'},'pid':{'type':'integer'},'argv':{'type':'array','items':{'type':'"   \
	"string'}},'command':{'type':'string'},'state':{'type':'string','enum':['running','exited']},"       \
	"'exit_code':{'type':['integer','null']},'signal':{'type':['integer','null']},'timed_out':{'type':'" \
	"boolean'},'end_reason':{'type':'string'},'started_at':{'type':'string'},'duration_ms':{'type':'"    \
	"integer'},'stdout_bytes':{'type':'integer'},'stderr_bytes':{'type':'integer'},'stdout_truncated':{" \
	"'type':'boolean'},'stderr_truncated':{'type':'boolean'},'output_limit':{'type':'integer'}"

static const char proc_list_out[] = OUTPUT("'environment_id':{'type':'string'},'processes':{'type':'array','"
					   "items':{'type':'object','properties':{" PROC_RECORD_PROPS "}}}",
					   "'processes'");

static const char proc_output_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','process_id'],'properties':"
    "{" ENV_ID_PROP "," PROC_ID_PROP ","
    "'stdout_offset':{'type':'integer','minimum':0,'description':'Read stdout from this byte offset (default "
    "0): pass the stdout_offset of the previous call to get only what is new.'},"
    "'stderr_offset':{'type':'integer','minimum':0,'description':'The same for stderr.'},"
    "'max_bytes':{'type':'integer','minimum':1,'maximum':262144,'description':'At most this many bytes of "
    "each stream (default 65536); stdout_more/stderr_more say whether more is already there.'}}}";

static const char proc_output_out[] = OUTPUT(
    PROC_RECORD_PROPS ",'stdout':{'type':'string'},'stderr':{'type':'string'},'stdout_offset':{'type':'"
		      "integer'},'stderr_offset':{'type':'integer'},'stdout_more':{'type':'boolean'},"
		      "'stderr_more':{'type':'boolean'},'exited':{'type':'boolean'}",
    "'stdout','stderr','stdout_offset','stderr_offset','exited'");

static const char proc_kill_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','process_id'],'properties':"
    "{" ENV_ID_PROP "," PROC_ID_PROP ","
    "'signal':{'type':['integer','string'],'minimum':1,'maximum':64,'description':'Signal to send: a "
    "number or a name (TERM, the default; KILL, INT, HUP, ...).'}}}";

static const char proc_kill_out[] =
    OUTPUT("'environment_id':{'type':'string'},'process_id':{'type':'string'},'signal':{'type':'integer'},"
	   "'delivered':{'type':'boolean','description':'false: it had exited already'},'state':{'type':'"
	   "string'}",
	   "'process_id','delivered'");

static const char proc_wait_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','process_id'],'properties':"
    "{" ENV_ID_PROP "," PROC_ID_PROP ","
    "'timeout_ms':{'type':'integer','minimum':0,'maximum':300000,'description':'Wait at most this long "
    "(default 30000; 0: do not wait, just report). state running in the result means it is still "
    "running.'}}}";

static const char proc_wait_out[] =
    OUTPUT(PROC_RECORD_PROPS ",'waited_ms':{'type':'integer'}", "'process_id','state'");

static int t_proc_list(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_process_list(c->ctx, id, ret, err);
}

static int t_proc_output(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	const json_t *a = c->args;
	return sbx_process_output(c->ctx, id, json_str(a, "process_id"), json_int(a, "stdout_offset", 0),
				  json_int(a, "stderr_offset", 0), json_int(a, "max_bytes", 65536), ret, err);
}

static int t_proc_kill(tool_call *c, json_t **ret, sbx_err **err)
{
	json_t *sj = json_object_get(c->args, "signal");
	int sig = SIGTERM;
	if (json_is_integer(sj))
		sig = (int)json_integer_value(sj);
	else if (sj) {
		_cleanup_err_ sbx_err *e = NULL;
		if (sbx_parse_signal(json_string_value(sj), &sig, &e) < 0)
			return bad_params(c, "'signal': %s", sbx_err_message(e));
	}
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_process_kill(c->ctx, id, json_str(c->args, "process_id"), sig, ret, err);
}

static int t_proc_wait(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_process_wait(c->ctx, id, json_str(c->args, "process_id"),
				json_int(c->args, "timeout_ms", 30000), ret, err);
}

static const tool tools[] = {
    {
	.name = "environment_fork",
	.alias = "environment.fork",
	.title = "Start a new environment from a snapshot",
	.description =
	    "Create a new environment whose filesystem starts as a snapshot's (a fork): the same as "
	    "environment_create with snapshot. Use it to try several continuations of one state side by "
	    "side; each fork is independent and costs no copy.",
	.input_schema = fork_in,
	.output_schema = create_out,
	.run = t_fork,
	.undo = t_create_undo,
    },
    {
	.name = "environment_inspect",
	.alias = "environment.inspect",
	.title = "Describe an environment",
	.description =
	    "Everything about one environment: state, template and base snapshot, limits, the user and "
	    "capabilities its commands run with, the isolation walls in force and any missing, usage.",
	.input_schema = env_only_in,
	.output_schema = any_out,
	.read_only = true,
	.idempotent = true,
	.run = t_inspect,
    },
    {
	.name = "environment_logs",
	.alias = "environment.logs",
	.title = "Show an environment's network log",
	.description =
	    "The egress proxy's log of an environment created with a network allowlist: each connection "
	    "it allowed or refused, with the host, port and the rule that decided. Use it to see why a "
	    "download failed.",
	.input_schema = env_only_in,
	.output_schema = any_out,
	.read_only = true,
	.run = t_logs,
    },
    {
	.name = "template_list",
	.alias = "template.list",
	.title = "List templates",
	.description =
	    "The named templates environment_create accepts as template (besides host and dir:PATH): "
	    "imported images and named snapshots, with their snapshot_id and size.",
	.input_schema = list_in,
	.output_schema = any_out,
	.read_only = true,
	.idempotent = true,
	.run = t_template_list,
    },
    {
	.name = "environment_upload",
	.alias = "environment.upload",
	.title = "Upload a directory tree into an environment",
	.description =
	    "Unpack a tar archive (base64) into a directory inside a live environment, as the "
	    "environment's user: many files in one call. For one file, environment_write_file is simpler.",
	.input_schema = upload_in,
	.output_schema = upload_out,
	.destructive = true,
	.run = t_upload,
    },
    {
	.name = "environment_download",
	.alias = "environment.download",
	.title = "Download a directory tree from an environment",
	.description =
	    "A directory inside a live environment as one tar archive (base64): its files, directories "
	    "and symlinks with their modes and times. For one file, environment_read_file is simpler.",
	.input_schema = download_in,
	.output_schema = download_out,
	.read_only = true,
	.run = t_download,
    },
    {
	.name = "environment_create",
	.alias = "environment.create",
	.title = "Create a sandboxed environment",
	.description =
	    "Create a new isolated Linux environment (its own filesystem view, processes, and no "
	    "network) and return its environment_id. Pass that id to environment_execute, the file "
	    "tools and environment_destroy. Environments persist across calls until destroyed: reuse "
	    "one for related steps, and destroy it when done. By default the root filesystem is the "
	    "host OS, read-only, under a private writable layer, so installed tools are available and "
	    "changes stay inside.",
	.input_schema = create_in,
	.output_schema = create_out,
	.reserved = create_reserved,
	.run = t_create,
	.undo = t_create_undo,
    },
    {
	.name = "environment_execute",
	.alias = "environment.execute",
	.title = "Run a command in an environment",
	.description =
	    "Run a command inside a live environment and wait for it. Give command (a shell string "
	    "run by /bin/sh -c, so pipes and redirections work) or argv (no shell). Returns "
	    "exit_code, stdout, stderr, timed_out and duration_ms. A command that exits non-zero is "
	    "still a successful call: read exit_code and stderr. Files written persist for later "
	    "calls in the same environment. Long-running commands report output as progress when "
	    "the request carries a progressToken.",
	.input_schema = execute_in,
	.output_schema = execute_out,
	.reserved = execute_reserved,
	.destructive = true,
	.binary = execute_binary,
	.run = t_execute,
    },
    {
	.name = "environment_destroy",
	.alias = "environment.destroy",
	.title = "Destroy an environment",
	.description = "Destroy a live environment: kill every process in it and delete its files. The "
		       "environment_id is invalid afterwards.",
	.input_schema = env_only_in,
	.output_schema = destroy_out,
	.destructive = true,
	.idempotent = true,
	.run = t_destroy,
    },
    {
	.name = "environment_pause",
	.alias = "environment.pause",
	.title = "Pause an environment",
	.description = "Freeze every process of a live environment: memory is kept, nothing runs and "
		       "command timeouts stand still. The next environment_execute or file call resumes it "
		       "first; environment_resume does so explicitly.",
	.input_schema = env_only_in,
	.output_schema = pause_out,
	.idempotent = true,
	.run = t_pause,
    },
    {
	.name = "environment_resume",
	.alias = "environment.resume",
	.title = "Resume an environment",
	.description = "Thaw a paused environment, or start a suspended (idle_suspend_ms) or stopped one "
		       "again on its files with the same environment_id; then restarted is true and the "
		       "processes it had are gone.",
	.input_schema = env_only_in,
	.output_schema = pause_out,
	.idempotent = true,
	.run = t_resume,
    },
    {
	.name = "pool_set",
	.alias = "pool.set",
	.title = "Keep environments built ahead",
	.description =
	    "Keep size environments of a template or snapshot (under an optional policy) built and "
	    "waiting, so that environment_create with the same template or snapshot and policy and no "
	    "other option returns at once (from_pool: true). Refilled in the background. remove: "
	    "true removes the pool.",
	.input_schema = pool_set_in,
	.output_schema = pool_set_out,
	.idempotent = true,
	.run = t_pool_set,
    },
    {
	.name = "pool_list",
	.alias = "pool.list",
	.title = "List warm pools",
	.description = "List the warm pools: source, policy, size and how many environments are ready.",
	.input_schema = list_in,
	.output_schema = pool_list_out,
	.read_only = true,
	.idempotent = true,
	.run = t_pool_list,
    },
    {
	.name = "environment_list",
	.alias = "environment.list",
	.title = "List environments",
	.description = "List the environments that exist, with their environment_id, name, state and "
		       "creation time. Use it to find an id again or to clean up.",
	.input_schema = list_in,
	.output_schema = list_out,
	.read_only = true,
	.idempotent = true,
	.run = t_list,
    },
    {
	.name = "environment_read_file",
	.alias = "environment.read_file",
	.title = "Read a file in an environment",
	.description = "Read a regular file inside a live environment. Text comes back as UTF-8; use "
		       "encoding base64 for binary files. size is the full file size and truncated "
		       "tells whether max_bytes cut it.",
	.input_schema = read_in,
	.output_schema = read_out,
	.read_only = true,
	.idempotent = true,
	.run = t_read_file,
    },
    {
	.name = "environment_write_file",
	.alias = "environment.write_file",
	.title = "Write a file in an environment",
	.description = "Create or replace a regular file inside a live environment (its parent directory "
		       "must exist; create it with environment_execute and mkdir -p). Use this rather "
		       "than shell quoting for file content.",
	.input_schema = write_in,
	.output_schema = write_out,
	.destructive = true,
	.idempotent = true,
	.binary = write_binary,
	.run = t_write_file,
    },
    {
	.name = "environment_list_files",
	.alias = "environment.list_files",
	.title = "List a directory in an environment",
	.description = "List the entries of a directory inside a live environment: name, type (file, "
		       "dir, symlink, other), size and mode.",
	.input_schema = list_files_in,
	.output_schema = list_files_out,
	.read_only = true,
	.idempotent = true,
	.run = t_list_files,
    },
    {
	.name = "environment_snapshot",
	.alias = "environment.snapshot",
	.title = "Snapshot an environment",
	.description = "Capture the filesystem of an environment (its processes are frozen meanwhile) as "
		       "an immutable, content-addressed snapshot and return its snapshot_id. Take one "
		       "before a risky step; environment_restore rolls back to it, and environment_create "
		       "with snapshot starts new environments (forks) from it. Running processes are not "
		       "part of a snapshot.",
	.input_schema = snapshot_in,
	.output_schema = snapshot_out,
	.run = t_snapshot,
    },
    {
	.name = "environment_restore",
	.alias = "environment.restore",
	.title = "Roll an environment back to a snapshot",
	.description = "Roll a live environment back in place to a snapshot: every process in it is "
		       "ended, and its filesystem becomes exactly the snapshot's. The environment_id "
		       "stays the same.",
	.input_schema = restore_in,
	.output_schema = restore_out,
	.destructive = true,
	.idempotent = true,
	.run = t_restore,
    },
    {
	.name = "environment_diff",
	.alias = "environment.diff",
	.title = "Show what changed in an environment",
	.description = "List the files and directories that were added, modified or deleted in an "
		       "environment (absolute paths, sorted), since its base (what it was created or last "
		       "restored from) or since a given snapshot_id. Use it to review what a command "
		       "changed before snapshotting or restoring. A live environment is read as it is at "
		       "that moment.",
	.input_schema = diff_in,
	.output_schema = diff_out,
	.read_only = true,
	.idempotent = true,
	.run = t_diff,
    },
    {
	.name = "snapshot_list",
	.alias = "snapshot.list",
	.title = "List snapshots",
	.description = "List the snapshots in the store: snapshot_id, label, parent, created_at and "
		       "size_bytes.",
	.input_schema = list_in,
	.output_schema = snapshot_list_out,
	.read_only = true,
	.idempotent = true,
	.run = t_snapshot_list,
    },
    {
	.name = "snapshot_push",
	.alias = "snapshot.push",
	.title = "Push a snapshot to an OCI registry",
	.description =
	    "Push a snapshot to REGISTRY/REPO:TAG over the OCI distribution API as an OCI image "
	    "(what sbx export writes: docker and skopeo read it). Blobs the registry already has are "
	    "not sent. Credentials come from the host's docker config (~/.docker/config.json or "
	    "$REGISTRY_AUTH_FILE). Returns the manifest digest and what was uploaded or skipped.",
	.input_schema = snapshot_push_in,
	.output_schema = snapshot_push_out,
	.idempotent = true,
	.open_world = true,
	.run = t_snapshot_push,
    },
    {
	.name = "snapshot_pull",
	.alias = "snapshot.pull",
	.title = "Pull a snapshot from an OCI registry",
	.description =
	    "Pull REGISTRY/REPO:TAG (an sbx snapshot or any OCI or docker image) into the store as a "
	    "snapshot labelled name; every digest is verified before anything is stored. Pass the "
	    "returned snapshot_id (or the label) to environment_create's snapshot to fork it.",
	.input_schema = snapshot_pull_in,
	.output_schema = snapshot_pull_out,
	.open_world = true,
	.run = t_snapshot_pull,
    },
    {
	.name = "environment_replay",
	.alias = "environment.replay",
	.title = "Replay a traced command and verify it",
	.description =
	    "Re-run a traced command (environment_execute with trace: true) from the snapshot it started "
	    "from, in a fresh environment, under determinism controls (the recorded clock, random seed, "
	    "hostname and pids), and compare exit status, stdout, stderr, filesystem changes and the "
	    "syscall sequence. verdict is match, or diverged with the first divergence: its kind "
	    "(input, exit, stdout, stderr, filesystem, syscall), where, and expected versus actual. A "
	    "divergence is a successful call.",
	.input_schema = replay_in,
	.output_schema = replay_out,
	.read_only = true,
	.run = t_replay,
    },
    {
	.name = "environment_phase",
	.alias = "environment.phase",
	.title = "Switch an environment from its setup phase to its agent phase",
	.description =
	    "Environments start in the setup phase (created with phases: the setup policy, with its secrets "
	    "and "
	    "network). Switching to the agent phase is for good: every process started in the setup phase "
	    "ends, "
	    "the secrets are removed (variables and /run/secrets files), and the agent policy's narrower "
	    "network "
	    "allowlist and limits apply to later commands. Files written during setup stay. Without phase, "
	    "reports the current phase.",
	.input_schema = phase_in,
	.output_schema = phase_out,
	.destructive = true,
	.run = t_phase,
    },
    {
	.name = "environment_attest",
	.alias = "environment.attest",
	.title = "Sign an attestation of a traced command",
	.description =
	    "Sign, with the server's key, a DSSE envelope holding an in-toto Statement v1 of a traced "
	    "command "
	    "(environment_execute with trace: true): its subjects are stdout, stderr and every file the "
	    "command "
	    "wrote, by sha256; its predicate the snapshot it started from, the command, environment, exit "
	    "status "
	    "and trace_id. Anyone with the public key can check it (sbx verify). Call it before changing the "
	    "environment further. unavailable if the server was started without --attest-key.",
	.input_schema = attest_in,
	.output_schema = attest_out,
	.run = t_attest,
    },
    {
	.name = "template_build",
	.alias = "template.build",
	.title = "Build a template from a Dockerfile",
	.description =
	    "Build a template (environment_create template: NAME) from Dockerfile text and a host context "
	    "directory the operator allowed. Each step is a snapshot, cached: a step whose parent, "
	    "instruction "
	    "and input files are unchanged costs nothing, so after editing one RUN only that step and the "
	    "ones "
	    "after it run. RUN has no network unless network allows it. An instruction sbx cannot honour "
	    "(HEALTHCHECK, VOLUME, RUN --mount, multi-stage, heredocs) is an error naming its line; a "
	    "failing "
	    "RUN is an error with its exit status and output, and leaves an existing template unchanged.",
	.input_schema = build_in,
	.output_schema = build_out,
	.run = t_build,
    },
    {
	.name = "environment_process_list",
	.alias = "environment.process_list",
	.title = "List background processes",
	.description =
	    "The background processes of an environment (environment_execute with background: true), oldest "
	    "first: process_id, pid, command, state (running or exited), exit_code or signal, duration and "
	    "how "
	    "much output each kept. Use it to find a process_id or to check what is still running.",
	.input_schema = env_only_in,
	.output_schema = proc_list_out,
	.read_only = true,
	.idempotent = true,
	.run = t_proc_list,
    },
    {
	.name = "environment_process_output",
	.alias = "environment.process_output",
	.title = "Read a background process's output",
	.description =
	    "What a background process printed, from byte offsets on (bounded by max_bytes per stream): pass "
	    "the returned stdout_offset and stderr_offset to the next call to read only what is new, e.g. to "
	    "follow a server's log. exited says whether it has ended (then exit_code or signal are set).",
	.input_schema = proc_output_in,
	.output_schema = proc_output_out,
	.read_only = true,
	.run = t_proc_output,
    },
    {
	.name = "environment_process_kill",
	.alias = "environment.process_kill",
	.title = "Signal a background process",
	.description =
	    "Send a signal (default TERM) to a background process and its process group, e.g. to stop a "
	    "server. delivered is false if it had exited already. Follow with environment_process_wait to "
	    "see "
	    "it end.",
	.input_schema = proc_kill_in,
	.output_schema = proc_kill_out,
	.destructive = true,
	.run = t_proc_kill,
    },
    {
	.name = "environment_process_wait",
	.alias = "environment.process_wait",
	.title = "Wait for a background process",
	.description =
	    "Wait up to timeout_ms for a background process to exit and return its record: state exited with "
	    "exit_code (or signal), or state running if it is still running when the time is up. Use "
	    "environment_process_output for what it printed.",
	.input_schema = proc_wait_in,
	.output_schema = proc_wait_out,
	.read_only = true,
	.run = t_proc_wait,
    },
    {
	.name = "snapshot_export",
	.alias = "snapshot.export",
	.title = "Export a snapshot as an OCI image",
	.description =
	    "Write a snapshot (or a template: template.NAME) as an OCI image layout into a host directory "
	    "the operator allowed, for docker, podman, skopeo or another sbx to use; a built template's CMD, "
	    "ENTRYPOINT, WORKDIR, USER, ENV, EXPOSE and LABEL go into the image config. A path outside the "
	    "allowed directories (after resolving symlinks and '..') is refused. To move snapshots between "
	    "machines through a registry use snapshot_push instead.",
	.input_schema = snapshot_export_in,
	.output_schema = snapshot_export_out,
	.idempotent = true,
	.run = t_snapshot_export,
    },
    {
	.name = "snapshot_import",
	.alias = "snapshot.import",
	.title = "Import an OCI image as a template",
	.description =
	    "Import an OCI image layout from a host directory the operator allowed as a template "
	    "(environment_create template: NAME): its layers are verified and extracted safely, its Env, "
	    "WorkingDir, User, Cmd and Entrypoint apply to the environments made from it. A path outside "
	    "the allowed directories is refused. For an image in a registry use snapshot_pull.",
	.input_schema = snapshot_import_in,
	.output_schema = snapshot_import_out,
	.run = t_snapshot_import,
    },
};

static json_t *schemas[ARRAY_SIZE(tools)][2];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;
static int schemas_ok = -1;
static char schemas_error[512] = "a built-in tool schema is not valid JSON";

static json_t *load_schema(const char *text)
{
	_cleanup_free_ char *s = strdup(text);
	if (!s)
		return NULL;
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return json_loads(s, JSON_REJECT_DUPLICATES, NULL);
}

/* Replaces, under j, every enum ["@profiles"] with the profiles' names and
 * "@profiles" in a description with "name: description; ...". */
static int fill_profiles(json_t *j, const char *described)
{
	const char *k;
	json_t *v;
	if (json_is_array(j)) {
		size_t i;
		json_array_foreach(j, i, v) if (fill_profiles(v, described) < 0) return -1;
		return 0;
	}
	json_object_foreach(j, k, v)
	{
		if (streq(k, "enum") && json_array_size(v) == 1 &&
		    streq(json_string_value(json_array_get(v, 0)) ?: "", "@profiles")) {
			json_t *names = json_array();
			size_t i;
			json_t *p;
			json_array_foreach(profiles, i, p)
			    json_array_append(names, json_object_get(p, "name"));
			if (!names || json_object_set_new(j, k, names) < 0)
				return -1;
		} else if (streq(k, "description") && strstr(json_string_value(v) ?: "", "@profiles")) {
			const char *s = json_string_value(v), *at = strstr(s, "@profiles");
			_cleanup_free_ char *t = NULL;
			if (asprintf(&t, "%.*s%s%s", (int)(at - s), s, described, at + strlen("@profiles")) <
				0 ||
			    json_object_set_new(j, k, json_string(t)) < 0)
				return -1;
		} else if (fill_profiles(v, described) < 0)
			return -1;
	}
	return 0;
}

static int profiles_load(void)
{
	json_t *l = NULL;
	if (sbx_policy_list(&l, NULL) < 0)
		return -1;
	profiles = json_incref(json_object_get(l, "policies"));
	json_decref(l);
	size_t i;
	json_t *p;
	char described[1024] = "";
	json_array_foreach(profiles, i, p)
	{
		snprintf(profile_names + strlen(profile_names), sizeof(profile_names) - strlen(profile_names),
			 "%s%s", i ? ", " : "", json_str(p, "name") ?: "");
		snprintf(described + strlen(described), sizeof(described) - strlen(described), "%s%s: %s",
			 i ? "; " : "", json_str(p, "name") ?: "", json_str(p, "description") ?: "");
	}
	for (size_t k = 0; k < ARRAY_SIZE(tools); k++)
		if (fill_profiles(schemas[k][0], described) < 0)
			return -1;
	return 0;
}

static void schemas_load(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
		schemas[i][0] = load_schema(tools[i].input_schema);
		schemas[i][1] = load_schema(tools[i].output_schema);
		if (!schemas[i][0] || !schemas[i][1])
			return;
		/* Publish no schema the validator cannot hold a client to. */
		for (int k = 0; k < 2; k++) {
			_cleanup_free_ char *why = NULL;
			if (tools_schema_supported(schemas[i][k], &why) < 0) {
				snprintf(schemas_error, sizeof(schemas_error), "tool %s's %s schema: %s",
					 tools[i].name, k ? "output" : "input", why ? why : "out of memory");
				return;
			}
		}
	}
	if (profiles_load() < 0) {
		snprintf(schemas_error, sizeof(schemas_error), "the built-in policy profiles did not load");
		return;
	}
	schemas_ok = 0;
}

int tools_init(void)
{
	pthread_once(&schemas_once, schemas_load);
	return schemas_ok;
}

const char *tools_init_error(void)
{
	return tools_init() < 0 ? schemas_error : NULL;
}

const tool *tools_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (streq(tools[i].name, name) || streq(tools[i].alias, name))
			return &tools[i];
	return NULL;
}

json_t *tools_list_json(void)
{
	if (tools_init() < 0)
		return NULL;
	json_t *a = json_array();
	for (size_t i = 0; a && i < ARRAY_SIZE(tools); i++) {
		const tool *t = &tools[i];
		json_t *ann = json_pack("{s:s,s:b,s:b,s:b,s:b}", "title", t->title, "readOnlyHint",
					t->read_only, "destructiveHint", t->destructive, "idempotentHint",
					t->idempotent, "openWorldHint", t->open_world);
		json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:O,s:O,s:o}", "name", t->name, "title",
						   t->title, "description", t->description, "inputSchema",
						   schemas[i][0], "outputSchema", schemas[i][1],
						   "annotations", ann));
	}
	return a;
}

/* ---- argument validation: the subset of JSON Schema the tables use ------- */

static bool type_is(const char *type, const json_t *v)
{
	if (streq(type, "object"))
		return json_is_object(v);
	if (streq(type, "array"))
		return json_is_array(v);
	if (streq(type, "string"))
		return json_is_string(v);
	if (streq(type, "integer"))
		return json_is_integer(v);
	if (streq(type, "number"))
		return json_is_number(v);
	if (streq(type, "boolean"))
		return json_is_boolean(v);
	if (streq(type, "null"))
		return json_is_null(v);
	return false;
}

static const char *type_noun(const char *type)
{
	if (streq(type, "object"))
		return "an object";
	if (streq(type, "array"))
		return "an array";
	if (streq(type, "integer"))
		return "an integer";
	if (streq(type, "null"))
		return "null";
	return streq(type, "string") ? "a string" : streq(type, "number") ? "a number" : "a boolean";
}

static const char *json_noun(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a non-integer number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static int fail(char **msg, const char *fmt, ...) _printf_(2, 3);
static int fail(char **msg, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(msg, fmt, ap) < 0)
		*msg = NULL;
	va_end(ap);
	return -1;
}

static int check(const json_t *s, const json_t *v, const char *path, const char *const *reserved, char **msg);

/* "a string or an object": the types an alternative's "type" names. */
static void alt_types(FILE *f, const json_t *alts)
{
	size_t i;
	json_t *a;
	json_array_foreach(alts, i, a)
	{
		json_t *t = json_object_get(a, "type");
		fprintf(f, "%s%s",
			i == 0				 ? ""
			: i + 1 == json_array_size(alts) ? " or "
							 : ", ",
			json_is_string(t) ? type_noun(json_string_value(t)) : "a value of another form");
	}
}

/* oneOf (exactly one alternative matches) and anyOf (at least one). The
 * error names the deepest field: when one alternative has the value's type,
 * its own complaint is the one that helps. */
static int check_alternatives(const json_t *alts, bool one, const json_t *v, const char *path, char **msg)
{
	size_t i, matched = 0, typed = 0;
	json_t *a;
	char *typed_msg = NULL;
	json_array_foreach(alts, i, a)
	{
		char *m = NULL;
		if (check(a, v, path, NULL, &m) == 0) {
			matched++;
			continue;
		}
		json_t *t = json_object_get(a, "type");
		if (json_is_string(t) && type_is(json_string_value(t), v)) {
			typed++;
			free(typed_msg);
			typed_msg = m;
		} else
			free(m);
	}
	if (matched == 1 || (!one && matched > 1)) {
		free(typed_msg);
		return 0;
	}
	if (matched > 1) {
		free(typed_msg);
		return fail(msg, "'%s' matches more than one of its accepted forms", path);
	}
	if (typed == 1) {
		*msg = typed_msg;
		return -1;
	}
	free(typed_msg);
	_cleanup_free_ char *forms = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&forms, &len);
	if (f) {
		alt_types(f, alts);
		fclose(f);
	}
	return fail(msg, "'%s' must be %s, not %s", path, forms ? forms : "of an accepted form",
		    json_noun(v));
}

/* The schemas' "pattern", as a POSIX extended regular expression: the
 * patterns in the table keep to what ERE and ECMA-262 read alike (anchors,
 * bracket expressions, bounded repeats), which tools_schema_supported checks
 * by compiling them. */
static int check_pattern(const char *pattern, const json_t *v, const char *path, char **msg)
{
	regex_t re;
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		return fail(msg, "internal error: the schema pattern for '%s' does not compile", path);
	size_t n = json_string_length(v);
	const char *str = json_string_value(v);
	bool ok = strlen(str) == n && regexec(&re, str, 0, NULL, 0) == 0; /* a NUL never matches */
	regfree(&re);
	if (!ok)
		return fail(msg, "'%s' must match the pattern %s", path, pattern);
	return 0;
}

static int check(const json_t *s, const json_t *v, const char *path, const char *const *reserved, char **msg)
{
	json_t *type = json_object_get(s, "type");
	if (json_is_string(type) && !type_is(json_string_value(type), v))
		return fail(msg, "'%s' must be %s, not %s", path, type_noun(json_string_value(type)),
			    json_noun(v));
	if (json_is_array(type)) {
		bool ok = false;
		size_t i;
		json_t *t;
		json_array_foreach(type, i, t) ok = ok || type_is(json_string_value(t) ?: "", v);
		if (!ok)
			return fail(msg, "'%s' has the wrong type (%s)", path, json_noun(v));
	}
	json_t *en = json_object_get(s, "enum");
	if (en) {
		bool ok = false;
		size_t i;
		json_t *e;
		json_array_foreach(en, i, e) ok = ok || json_equal(e, v);
		if (!ok) {
			_cleanup_free_ char *list = json_dumps(en, JSON_COMPACT);
			return fail(msg, "'%s' must be one of %s", path, list ? list : "the listed values");
		}
	}
	json_t *alts;
	if ((alts = json_object_get(s, "oneOf")) && check_alternatives(alts, true, v, path, msg) < 0)
		return -1;
	if ((alts = json_object_get(s, "anyOf")) && check_alternatives(alts, false, v, path, msg) < 0)
		return -1;
	if (json_is_number(v)) {
		json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
		/* Integers compare as integers: a double cannot hold every int64. */
		bool lo = json_is_integer(v) && json_is_integer(mn)
			      ? json_integer_value(v) < json_integer_value(mn)
			      : mn && json_number_value(v) < json_number_value(mn);
		bool hi = json_is_integer(v) && json_is_integer(mx)
			      ? json_integer_value(v) > json_integer_value(mx)
			      : mx && json_number_value(v) > json_number_value(mx);
		if (lo)
			return fail(msg, "'%s' must be at least %.17g", path, json_number_value(mn));
		if (hi)
			return fail(msg, "'%s' must be at most %.17g", path, json_number_value(mx));
	}
	if (json_is_string(v)) {
		if (json_object_get(s, "minLength") &&
		    json_string_length(v) < (size_t)json_int(s, "minLength", 0))
			return fail(msg, "'%s' must not be empty", path);
		if (json_object_get(s, "maxLength") &&
		    json_string_length(v) > (size_t)json_int(s, "maxLength", 0))
			return fail(msg, "'%s' must be at most %lld bytes long", path,
				    (long long)json_int(s, "maxLength", 0));
		json_t *pat = json_object_get(s, "pattern");
		if (json_is_string(pat) && check_pattern(json_string_value(pat), v, path, msg) < 0)
			return -1;
	}
	if (json_is_array(v)) {
		if (json_array_size(v) < (size_t)json_int(s, "minItems", 0))
			return fail(msg, "'%s' must not be empty", path);
		if (json_object_get(s, "maxItems") && json_array_size(v) > (size_t)json_int(s, "maxItems", 0))
			return fail(msg, "'%s' may have at most %lld items", path,
				    (long long)json_int(s, "maxItems", 0));
		json_t *items = json_object_get(s, "items");
		size_t i;
		json_t *e;
		if (items)
			json_array_foreach(v, i, e)
			{
				_cleanup_free_ char *p = NULL;
				if (asprintf(&p, "%s[%zu]", path, i) < 0)
					return fail(msg, "out of memory");
				if (check(items, e, p, NULL, msg) < 0)
					return -1;
			}
	}
	if (json_is_object(v)) {
		json_t *props = json_object_get(s, "properties"),
		       *addl = json_object_get(s, "additionalProperties");
		size_t i;
		json_t *r;
		json_array_foreach(json_object_get(s, "required"), i, r)
		{
			const char *k = json_string_value(r);
			if (k && !json_object_get(v, k)) {
				if (!*path)
					return fail(msg, "missing required argument '%s'", k);
				return fail(msg, "'%s' is missing its required field '%s'", path, k);
			}
		}
		const char *k;
		json_t *e;
		json_object_foreach((json_t *)v, k, e)
		{
			_cleanup_free_ char *p = NULL;
			if (asprintf(&p, "%s%s%s", path, *path ? "." : "", k) < 0)
				return fail(msg, "out of memory");
			json_t *ps = json_object_get(props, k);
			if (!ps && json_is_object(addl))
				ps = addl;
			if (ps) {
				if (check(ps, e, p, NULL, msg) < 0)
					return -1;
				continue;
			}
			bool ok = !json_is_false(addl);
			for (const char *const *q = reserved; !ok && q && *q; q++)
				ok = streq(*q, k);
			if (!ok) {
				_cleanup_free_ char *known = NULL;
				size_t len = 0;
				FILE *f = open_memstream(&known, &len);
				const char *pk;
				json_t *pv;
				bool first = true;
				if (f) {
					json_object_foreach(props, pk, pv)
					{
						fprintf(f, "%s%s", first ? "" : ", ", pk);
						first = false;
					}
					fclose(f);
				}
				return fail(msg, "unknown argument '%s' (accepted: %s)", p,
					    known && *known ? known : "none");
			}
		}
	}
	return 0;
}

static bool known_type(const char *t)
{
	static const char *const types[] = {"object", "array",	 "string", "integer",
					    "number", "boolean", "null"};
	for (size_t i = 0; t && i < ARRAY_SIZE(types); i++)
		if (streq(types[i], t))
			return true;
	return false;
}

/* The keywords check() implements, and the annotations it may ignore. */
static const char *const schema_keywords[] = {
    "type",	 "enum",	"oneOf",    "anyOf",	"minimum",  "maximum",	  "minLength",
    "maxLength", "pattern",	"minItems", "maxItems", "items",    "properties", "additionalProperties",
    "required",	 "description", "title",    "default",	"examples", NULL,
};

static int supported(const json_t *s, const char *path, char **msg)
{
	if (!json_is_object(s))
		return fail(msg, "%s: a schema must be an object", path);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)s, k, v)
	{
		bool known = false;
		for (const char *const *q = schema_keywords; *q && !known; q++)
			known = streq(*q, k);
		if (!known)
			return fail(msg, "%s: keyword '%s' is not implemented by the argument checker", path,
				    k);
		_cleanup_free_ char *sub = NULL;
		if (streq(k, "properties")) {
			if (!json_is_object(v))
				return fail(msg, "%s: properties must be an object", path);
			const char *pk;
			json_t *pv;
			json_object_foreach(v, pk, pv)
			{
				_cleanup_free_ char *pp = NULL;
				if (asprintf(&pp, "%s.%s", path, pk) < 0 || supported(pv, pp, msg) < 0)
					return pp ? -1 : fail(msg, "out of memory");
			}
		} else if (streq(k, "items") || (streq(k, "additionalProperties") && !json_is_boolean(v))) {
			if (asprintf(&sub, "%s.%s", path, k) < 0 || supported(v, sub, msg) < 0)
				return sub ? -1 : fail(msg, "out of memory");
		} else if (streq(k, "oneOf") || streq(k, "anyOf")) {
			if (!json_is_array(v) || json_array_size(v) == 0)
				return fail(msg, "%s: %s must be a non-empty array", path, k);
			size_t i;
			json_t *a;
			json_array_foreach(v, i, a)
			{
				_cleanup_free_ char *ap = NULL;
				if (asprintf(&ap, "%s.%s[%zu]", path, k, i) < 0 || supported(a, ap, msg) < 0)
					return ap ? -1 : fail(msg, "out of memory");
			}
		} else if (streq(k, "pattern")) {
			regex_t re;
			if (!json_is_string(v) ||
			    regcomp(&re, json_string_value(v), REG_EXTENDED | REG_NOSUB) != 0)
				return fail(msg, "%s: pattern is not a POSIX extended regular expression",
					    path);
			regfree(&re);
		} else if (streq(k, "type")) {
			bool ok =
			    json_is_string(v) ? known_type(json_string_value(v)) : json_array_size(v) > 0;
			size_t i;
			json_t *t;
			json_array_foreach(v, i, t) ok = ok && known_type(json_string_value(t));
			if (!ok)
				return fail(msg, "%s: unknown type", path);
		} else if ((streq(k, "minimum") || streq(k, "maximum")) && !json_is_number(v))
			return fail(msg, "%s: %s must be a number", path, k);
		else if ((streq(k, "minLength") || streq(k, "maxLength") || streq(k, "minItems") ||
			  streq(k, "maxItems")) &&
			 (!json_is_integer(v) || json_integer_value(v) < 0))
			return fail(msg, "%s: %s must be a non-negative integer", path, k);
		else if ((streq(k, "enum") || streq(k, "required")) && !json_is_array(v))
			return fail(msg, "%s: %s must be an array", path, k);
	}
	return 0;
}

int tools_schema_supported(const json_t *schema, char **ret_msg)
{
	return supported(schema, "#", ret_msg);
}

int tools_check_value(const json_t *schema, const json_t *v, char **ret_msg)
{
	return check(schema, v, "", NULL, ret_msg);
}

int tools_validate(const tool *t, const json_t *args, char **ret_msg)
{
	if (tools_init() < 0)
		return fail(ret_msg, "internal error: tool schemas failed to load");
	size_t i = (size_t)(t - tools);
	if (!json_is_object(args))
		return fail(ret_msg, "'arguments' must be an object, not %s", json_noun(args));
	if (check(schemas[i][0], args, "", t->reserved, ret_msg) < 0)
		return -1;
	/* A NUL byte survives only where bytes are meant (t->binary): a path,
	 * name, argv element or variable would be cut short at it. */
	_cleanup_free_ char *where = NULL;
	int r = json_find_nul(args, t->binary, &where);
	if (r < 0)
		return fail(ret_msg, "out of memory");
	if (r > 0)
		return fail(ret_msg,
			    "'%s' contains NUL (\\u0000), which it cannot carry (a path, name, command "
			    "or variable is a C string)",
			    where);
	return 0;
}

/* ---- results ------------------------------------------------------------- */

static json_t *call_result(json_t *structured, bool is_error)
{
	if (!structured)
		return NULL;
	_cleanup_free_ char *text = json_dumps(structured, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_t *r = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
			      text ? text : "{}", "structuredContent", structured, "isError", is_error);
	return r;
}

json_t *tools_result(json_t *structured)
{
	return call_result(structured, false);
}

json_t *tools_error_result(sbx_code code, const char *message)
{
	json_t *m = json_string(message ? message : "unknown error");
	if (!m)
		m = json_string("error (message not valid UTF-8)");
	return call_result(json_pack("{s:{s:s,s:o}}", "error", "code", sbx_code_name(code), "message", m),
			   true);
}
