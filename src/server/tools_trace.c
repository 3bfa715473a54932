/* The MCP tools of traced commands: replay and attest (docs/trace.md,
 * docs/attest.md). */
#include "server/tools_internal.h"
#include "util/json.h"

const char tool_environment_replay_in[] =
    "{'type':'object','additionalProperties':false,'required':['trace_id'],'properties':{"
    "'trace_id':{'type':'string','minLength':1,'description':'A trace_id from environment_execute with "
    "trace: true (or a unique prefix of its hex).'},"
    "'inputs':{'type':'string','enum':['read_set','volumes'],'description':'What is checked before the "
    "re-run: the files the recording read (read_set, the default) or every whole volume (volumes).'}}}";

const char tool_environment_replay_out[] = OUTPUT(
    "'verdict':{'type':'string','enum':['match','diverged']},'divergence':{'type':'object','properties':{"
    "'kind':{'type':'string','enum':['input','exit','stdout','stderr','filesystem','syscall']},"
    "'index':{'type':'integer'},'pid':{'type':['integer','null']},'expected':{'type':'string'},"
    "'actual':{'type':'string'},'path':{'type':'string'}}},'inputs':{'type':'string'},"
    "'replay_ms':{'type':'number'},'trace_id':{'type':'string'},"
    "'replay_trace_id':{'type':'string'},'lost':{'type':'integer'},"
    "'notes':{'type':'array','items':{'type':'string'}}",
    "'verdict','replay_ms'");

int tool_environment_replay(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_trace_replay_inputs(c->ctx, json_str(c->args, "trace_id"), json_str(c->args, "inputs"),
				       ret, err);
}

/* ---- environment_attest: a signed attestation of a traced run ------------- */

const char tool_environment_attest_in[] =
    "{'type':'object','additionalProperties':false,'required':['trace_id'],'properties':{"
    "'trace_id':{'type':'string','minLength':1,'description':'A trace_id from environment_execute with "
    "trace: true (or a unique prefix of its hex).'},'replay':{'type':'boolean','description':'Replay the "
    "trace first and record the verdict in the attestation (default false).'}}}";

const char tool_environment_attest_out[] = OUTPUT(
    "'envelope':{'type':'object','description':'The DSSE envelope: payloadType, payload (base64 of the "
    "in-toto Statement v1), signatures [{keyid, "
    "sig}].'},'keyid':{'type':'string'},'trace_id':{'type':'string'},"
    "'subjects':{'type':'array','items':{'type':'object','properties':{'name':{'type':'string'},"
    "'digest':{'type':'string'}}}},'replay':{'type':'object'}",
    "'envelope','keyid','subjects'");

int tool_environment_attest(tool_call *c, json_t **ret, sbx_err **err)
{
	/* The key is the server's (sbx mcp/serve --attest-key), never the client's. */
	sbx_attest_opts o = SBX_ATTEST_OPTS_INIT;
	o.replay = json_bool(c->args, "replay", false);
	return sbx_attest(c->ctx, json_str(c->args, "trace_id"), &o, ret, err);
}
