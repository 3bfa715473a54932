/* The MCP tools of the code interpreter (docs/code.md): environment_run_code
 * and the contexts (create, list, restart, remove). A run's images also go
 * out as MCP image content (tools_code_images), so that a client shows the
 * chart; its stdout and stderr stream as progress. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

/* What a run may keep of its output (stdout, stderr, results): its images
 * are in the result three times (structuredContent, the text item, the image
 * items), which must stay under TOOLS_RESULT_MAX. */
#define CODE_OUTPUT_BYTES ((int64_t)2 << 20)

#define CONTEXT_ID_PROP                                                                                      \
	"'context_id':{'type':'string','minLength':1,'maxLength':128,'pattern':'^[A-Za-z0-9_-]+$',"          \
	"'description':'A context id from environment_context_create or environment_context_list.'}"

#define LANGUAGE_PROP(what)                                                                                  \
	"'language':{'type':'string','minLength':1,'maxLength':64,'description':'" what "'}"

#define CONTEXT_PROPS "'context_id':{'type':'string'},'language':{'type':'string'},'cwd':{'type':'string'}"

const char tool_environment_run_code_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','code'],'properties':"
    "{" ENV_ID_PROP ",'code':{'type':'string','minLength':1,'description':'The code of one cell, run in a "
    "stateful Jupyter kernel: variables, imports and definitions stay for the next call in the same "
    "context. The value of its last expression is the main result.'}," LANGUAGE_PROP(
	"The kernel language (default python); its default context runs the code. Give either language "
	"or context_id.") "," CONTEXT_ID_PROP ",'timeout_ms':{'type':'integer','minimum':0,'maximum':"
			  "2592000000,'description':'Interrupt the cell "
			  "after this many milliseconds and report timed_out; the context and its state stay "
			  "(0 or absent: no "
			  "bound).'},'env':{'type':'object','additionalProperties':{'type':'string'},'"
			  "description':'Environment "
			  "variables for this run only, as {NAME: value} (python contexts).'}}}";

/* Not OUTPUT(): error is either the exception the cell raised (a
 * successful call) or a call error (isError). */
const char tool_environment_run_code_out[] =
    "{'type':'object','properties':{'results':{'type':'array','items':{'type':'object','properties':{"
    "'is_main_result':{'type':'boolean'},'text':{'type':'string'},'html':{'type':'string'},"
    "'markdown':{'type':'string'},'svg':{'type':'string'},'png':{'type':'string','description':'base64'},"
    "'jpeg':{'type':'string','description':'base64'},'pdf':{'type':'string','description':'base64'},"
    "'latex':{'type':'string'},'javascript':{'type':'string'}}},'description':'What the cell displayed, "
    "in order; the value of its last expression has is_main_result true. Images are also image content "
    "items of the call result.'},'stdout':{'type':'string'},'stderr':{'type':'string'},"
    "'error':{'type':'object','description':'The exception the cell raised, {name, value, traceback} "
    "(KernelDied: restart the context); or, when isError is true, the call error {code, message}.',"
    "'properties':{'name':{'type':'string'},'value':{'type':'string'},'traceback':{'type':'string'},"
    "'code':{'type':'string'},'message':{'type':'string'}},'anyOf':[{'required':['name','value']},"
    "{'required':['code','message']}]},'execution_count':{'type':['integer','null']},"
    "'context_id':{'type':'string'},'language':{'type':'string'},'timed_out':{'type':'boolean'},"
    "'truncated':{'type':'boolean'},'stdout_truncated':{'type':'boolean'},"
    "'stderr_truncated':{'type':'boolean'},'duration_ms':{'type':'number'}},"
    "'anyOf':[{'required':['results','stdout','stderr','context_id']},{'required':['error']}]}";

const char tool_environment_context_create_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    "," LANGUAGE_PROP("The kernel language (default python).") ",'cwd':{'type':'string','minLength':1,"
							       "'description':'Absolute working directory of "
							       "the kernel (default the user home).'}}}";

const char tool_environment_context_create_out[] = OUTPUT(CONTEXT_PROPS, "'context_id'");

const char tool_environment_context_list_out[] = OUTPUT(
    "'contexts':{'type':'array','items':{'type':'object','properties':{" CONTEXT_PROPS "}}}", "'contexts'");

const char tool_environment_context_restart_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','context_id'],'properties':"
    "{" ENV_ID_PROP "," CONTEXT_ID_PROP "}}";

const char tool_environment_context_restart_out[] =
    OUTPUT("'context_id':{'type':'string'},'restarted':{'type':'boolean'}", "'context_id','restarted'");

const char tool_environment_context_remove_out[] =
    OUTPUT("'context_id':{'type':'string'},'removed':{'type':'boolean'}", "'context_id','removed'");

/* A run's stdout and stderr events, as execute's output chunks (progress). */
static void on_code_event(const json_t *ev, void *userdata)
{
	tool_call *c = userdata;
	const char *type = json_str(ev, "type");
	json_t *text = json_object_get(ev, "text");
	if (!type || !json_is_string(text))
		return;
	int stream = streq(type, "stdout") ? SBX_STDOUT : streq(type, "stderr") ? SBX_STDERR : 0;
	if (stream)
		c->on_output(c->userdata, stream, json_string_value(text), json_string_length(text));
}

int tool_environment_run_code(tool_call *c, json_t **ret, sbx_err **err)
{
	const json_t *a = c->args;
	if (json_object_get(a, "language") && json_object_get(a, "context_id"))
		return tools_bad_params(c, "give either 'language' or 'context_id', not both (a context has "
					   "its language)");
	_cleanup_strv_free_ char **env = NULL;
	int r = tools_env_strv(c, "env", &env);
	if (r < 0)
		return c->bad_params ? r : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	sbx_code_opts o = SBX_CODE_OPTS_INIT;
	o.code = json_str(a, "code");
	o.language = json_str(a, "language");
	o.context_id = json_str(a, "context_id");
	o.env = (const char *const *)env;
	o.timeout_ms = json_int(a, "timeout_ms", 0);
	o.output_bytes = CODE_OUTPUT_BYTES;
	o.cancel_fd = c->cancel_fd; /* notifications/cancelled: the cell is interrupted */
	if (c->on_output) {
		o.on_output = on_code_event;
		o.userdata = c;
	}
	json_t *j = NULL;
	if (sbx_run_code(c->ctx, id, &o, &j, err) < 0)
		return -1;
	r = tools_fit_output(j, TOOLS_RESULT_MAX);
	if (r < 0) {
		json_decref(j);
		return r == -E2BIG ? err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
					     "the run's results do not fit in one message; write large "
					     "outputs to a file and read it with environment_read_file")
				   : err_set(err, SBX_E_INTERNAL, ENOMEM,
					     "out of memory shrinking the output to fit a message");
	}
	*ret = j;
	return 0;
}

json_t *tools_code_images(const json_t *structured)
{
	static const char *const kinds[][2] = {{"png", "image/png"}, {"jpeg", "image/jpeg"}};
	json_t *items = json_array();
	size_t i;
	json_t *res;
	json_array_foreach(json_object_get(structured, "results"), i, res)
	{
		for (size_t k = 0; items && k < ARRAY_SIZE(kinds); k++) {
			json_t *data = json_object_get(res, kinds[k][0]);
			if (json_is_string(data) &&
			    json_array_append_new(items, json_pack("{s:s,s:O,s:s}", "type", "image", "data",
								   data, "mimeType", kinds[k][1])) < 0) {
				json_decref(items);
				items = NULL;
			}
		}
	}
	return items;
}

int tool_environment_context_create(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_context_create(c->ctx, id, json_str(c->args, "language"), json_str(c->args, "cwd"), ret,
				  err);
}

int tool_environment_context_list(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_context_list(c->ctx, id, ret, err);
}

static int context_op(tool_call *c, bool restart, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	const char *ctx_id = json_str(c->args, "context_id");
	if ((restart ? sbx_context_restart : sbx_context_remove)(c->ctx, id, ctx_id, err) < 0)
		return -1;
	*ret = json_pack("{s:s,s:b}", "context_id", ctx_id, restart ? "restarted" : "removed", true);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

int tool_environment_context_restart(tool_call *c, json_t **ret, sbx_err **err)
{
	return context_op(c, true, ret, err);
}

int tool_environment_context_remove(tool_call *c, json_t **ret, sbx_err **err)
{
	return context_op(c, false, ret, err);
}
