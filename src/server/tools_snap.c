/* The MCP tools of snapshots (snapshot, restore, list, diff) and templates
 * (list, build from a Dockerfile: docs/build.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

int tool_environment_snapshot(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_snapshot(c->ctx, id, json_str(c->args, "label"), ret, err);
}

int tool_environment_restore(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	const char *snap = json_str(c->args, "snapshot_id");
	if (sbx_env_restore(c->ctx, id, snap, ret, err) < 0)
		return sbx_err_code(*err) == SBX_E_NOT_FOUND
			   ? err_wrap(err, "restore (call snapshot_list to see the snapshots)")
			   : -1;
	return 0;
}

int tool_snapshot_list(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_snapshot_list(c->ctx, ret, err);
}

const char tool_environment_snapshot_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ",'label':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$','description':'Optional "
    "name for the snapshot, usable wherever a snapshot_id is (moves if reused).'}}}";

const char tool_environment_snapshot_out[] =
    OUTPUT("'snapshot_id':{'type':'string'},'size_bytes':{'type':'integer'},'new_bytes':{'type':'integer'},"
	   "'files':{'type':'integer'},'snapshot_ms':{'type':'number'},'label':{'type':'string'}",
	   "'snapshot_id','size_bytes','new_bytes','files','snapshot_ms'");

const char tool_environment_restore_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','snapshot_id'],'properties':"
    "{" ENV_ID_PROP ",'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to roll back "
    "to: a snapshot_id (or unique prefix) or a label.'}}}";

const char tool_environment_restore_out[] = OUTPUT(
    "'environment_id':{'type':'string'},'snapshot_id':{'type':'string'},'restore_ms':{'type':'number'}",
    "'environment_id','snapshot_id','restore_ms'");

const char tool_snapshot_list_out[] = OUTPUT(
    "'snapshots':{'type':'array','items':{'type':'object','properties':{'snapshot_id':{'type':'string'},"
    "'label':{'type':['string','null']},'parent':{'type':['string','null']},'created_at':{'type':'string'},"
    "'size_bytes':{'type':'integer'}}}}",
    "'snapshots'");

int tool_environment_diff(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	const char *snap = json_str(c->args, "snapshot_id");
	if (sbx_env_diff(c->ctx, id, snap, ret, err) < 0)
		return snap && sbx_err_code(*err) == SBX_E_NOT_FOUND
			   ? err_wrap(err, "diff (call snapshot_list to see the snapshots)")
			   : -1;
	return 0;
}

const char tool_environment_diff_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    ",'snapshot_id':{'type':'string','minLength':1,'description':'Compare with this snapshot (a snapshot_id, "
    "unique prefix or label) instead of the environment base (what it was created or last restored "
    "from).'}}}";

const char tool_environment_diff_out[] =
    OUTPUT("'added':{'type':'array','items':{'type':'string'}},'modified':{'type':'array','items':{'type':'"
	   "string'}},"
	   "'deleted':{'type':'array','items':{'type':'string'}},'environment_id':{'type':'string'},"
	   "'snapshot_id':{'type':['string','null']}",
	   "'added','modified','deleted'");

/* ---- template_build: a template from a Dockerfile (docs/build.md) --------- */

const char tool_template_build_in[] =
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
    "'network':{'type':'string','description':'RUN network: none (default), internet, open, or "
    "allow=HOST[:PORT],...'},"
    "'no_cache':{'type':'boolean','description':'Run every step even if cached (default false).'}}}";

const char tool_template_build_out[] =
    OUTPUT("'template':{'type':'string'},'snapshot_id':{'type':'string'},'steps':{'type':'array','items':{"
	   "'type':'object'}},'cache_hits':{'type':'integer'},'cache_misses':{'type':'integer'},'config':{"
	   "'type':'object'},'build_ms':{'type':'number'}",
	   "'template','snapshot_id','steps','cache_hits','cache_misses'");

int tool_template_build(tool_call *c, json_t **ret, sbx_err **err)
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

int tool_template_list(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_template_list(c->ctx, ret, err);
}
