/* The MCP tools of warm environments (docs/warm.md): pause, resume and
 * the pools of environments built ahead. */
#include <errno.h>

#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

const char tool_environment_pause_out[] =
    OUTPUT("'environment_id':{'type':'string'},'state':{'type':'string','enum':['paused','running']},"
	   "'pause_ms':{'type':'number'},'resume_ms':{'type':'number'},'restarted':{'type':'boolean'},"
	   "'was_paused':{'type':'boolean'},'processes_ended':{'type':'boolean'}",
	   "'environment_id','state'");

int tool_environment_pause(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_pause(c->ctx, id, ret, err);
}

int tool_environment_resume(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_env_resume(c->ctx, id, ret, err);
}

const char tool_pool_set_in[] =
    "{'type':'object','additionalProperties':false,'required':['source','size'],'properties':{"
    "'source':{'type':'string','minLength':1,'description':'A template (host, dir:PATH, oci:PATH, a name) or "
    "a "
    "snapshot (snapshot_id or label) whose environments the pool keeps built.'},"
    "'size':{'type':'integer','minimum':0,'maximum':256,'description':'How many to keep ready (0 empties "
    "it).'},"
    "'policy':{'type':'string','enum':['@profiles'],'description':'The built-in profile they are built "
    "under (@profiles); only a create with the same policy takes one.'},"
    "'code':{'type':'boolean','description':'Each environment also has the code interpreter kernel started "
    "(it costs a Python kernel of memory); environment_create with code takes these. A code pool is "
    "another pool than the plain one of the same source and policy (give code with remove too).'},"
    "'remove':{'type':'boolean','description':'Remove the pool and its ready environments instead.'}}}";

#define POOL_PROPS                                                                                           \
	"'pool':{'type':'string'},'kind':{'type':'string','enum':['template','snapshot']},'source':{'type':" \
	"'string'},"                                                                                         \
	"'size':{'type':'integer'},'policy':{'type':['string','null']},'ready':{'type':'integer'},"          \
	"'layer':{'type':'string','enum':['disk','tmpfs']},'code':{'type':'boolean'},'owner':{'type':'"      \
	"object','description':'The "                                                                        \
	"server that "                                                                                       \
	"keeps this pool for itself (docs/warm.md): its pid and start time; absent for a pool set by "       \
	"hand.'}"

const char tool_pool_set_out[] =
    OUTPUT(POOL_PROPS ",'removed':{'type':'array','items':{'type':'string'}}", "'pool'");

const char tool_pool_list_out[] =
    OUTPUT("'pools':{'type':'array','items':{'type':'object','properties':{" POOL_PROPS
	   "}}},'max_ready':{'type':'integer'}",
	   "'pools'");

int tool_pool_set(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *source = json_str(c->args, "source"), *pol = json_str(c->args, "policy");
	if (pol && !tools_profile_known(pol)) /* as environment_create: no host path over MCP */
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "policy '%.64s': give a built-in profile (%s)", pol, tools_profile_names());
	sbx_pool_opts po = SBX_POOL_OPTS_INIT;
	po.policy = pol;
	po.code = json_bool(c->args, "code", false);
	if (json_bool(c->args, "remove", false))
		return sbx_pool_remove_opts(c->ctx, source, &po, ret, err);
	if (tools_template_host_path(c, "source's directory", source, err) < 0)
		return -1;
	return sbx_pool_set_opts(c->ctx, source, (int)json_int(c->args, "size", 0), &po, ret, err);
}

int tool_pool_list(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_pool_list(c->ctx, ret, err);
}
