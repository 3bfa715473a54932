/* What the MCP tool table (tools.c) and its handlers share; private to
 * src/server/tools*.c.
 *
 * A tool is one row of tools.c's table: its name, description, schemas,
 * annotations and handler. The handlers live by family, each next to the
 * schemas of its arguments and result:
 *   tools_env.c       environments: create, fork, destroy, list, inspect, logs, phase
 *   tools_exec.c      commands: execute, background processes (list, output, kill, wait)
 *   tools_files.c     files: read, write, list, upload and download of trees
 *   tools_snap.c      snapshots: snapshot, restore, list, diff; templates: list, build
 *   tools_trace.c     traces: replay, attest
 *   tools_warm.c      warm environments: pause, resume, pools
 *   tools_registry.c  OCI: push, pull, export, import
 *   tools_code.c      the code interpreter: run code, contexts (create, list, restart, remove)
 *   tools_desktop.c   desktops: screenshot, input (mouse and keyboard)
 *   tools_args.c      argument readers every family uses
 * The handler of tool NAME is tool_NAME, its schemas tool_NAME_in and
 * tool_NAME_out. Handlers get arguments already checked against their input
 * schema (tools_validate). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sbx.h"
#include "server/tools.h"
#include "util/macro.h"

/* ---- schemas --------------------------------------------------------------
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

/* The schemas several families' tools share. */
#define TOOLS_ENV_ONLY_IN                                                                                    \
	"{'type':'object','additionalProperties':false,'required':['environment_id'],"                       \
	"'properties':{" ENV_ID_PROP "}}"
#define TOOLS_LIST_IN "{'type':'object','additionalProperties':false,'properties':{}}"
#define TOOLS_ANY_OUT "{'type':'object'}"

/* ---- tools.c: the built-in policy profiles (loaded by tools_init) --------- */

/* Whether name is a built-in profile's. */
bool tools_profile_known(const char *name);
/* Their names for messages: "strict, dev, open". */
const char *tools_profile_names(void);

/* ---- tools_args.c ---------------------------------------------------------- */

/* Sets c->bad_params (invalid params, -32602) and returns -EINVAL. */
int tools_bad_params(tool_call *c, const char *fmt, ...) _printf_(2, 3);
/* "user": a string ("1000", "1000:1000", "nobody") or a non-negative
 * integer, into buf; *ret NULL if absent. Anything else is invalid params. */
int tools_user_arg(tool_call *c, char *buf, size_t n, const char **ret);
/* Resolves "environment_id" (an id or name) to an id (malloc'd); a miss, or
 * an environment being torn down, is not_found with what to call instead. */
int tools_resolve_env(tool_call *c, char **ret_id, sbx_err **err);
/* The object argument field {K: V} as a NULL-terminated "K=V" vector (NULL
 * for an absent object); a bad name is invalid params, else -ENOMEM. */
int tools_env_strv(tool_call *c, const char *field, char ***ret);
/* The error for a host path outside the directories the operator allowed. */
int tools_host_path_refused(const char *what, const char *path, sbx_err **err);

/* ---- tools_env.c ------------------------------------------------------------ */

/* A template spec naming a host directory (dir:PATH, oci:DIR[:TAG]) must
 * name one the operator allowed; other specs pass. */
int tools_template_host_path(tool_call *c, const char *what, const char *tpl, sbx_err **err);

/* ---- the handlers and their schemas, by family ----------------------------- */

#define TOOL_DECL(name)                                                                                      \
	int tool_##name(tool_call *c, json_t **ret, sbx_err **err);                                          \
	extern const char tool_##name##_in[];                                                                \
	extern const char tool_##name##_out[]
/* A tool whose input or output schema is a shared one (TOOLS_*). */
#define TOOL_DECL_RUN(name) int tool_##name(tool_call *c, json_t **ret, sbx_err **err)
#define TOOL_DECL_OUT(name)                                                                                  \
	int tool_##name(tool_call *c, json_t **ret, sbx_err **err);                                          \
	extern const char tool_##name##_out[]

/* tools_env.c */
TOOL_DECL(environment_create);
void tool_environment_create_undo(tool_call *c, const json_t *result);
TOOL_DECL_RUN(environment_fork);
extern const char tool_environment_fork_in[];
TOOL_DECL_OUT(environment_destroy);
TOOL_DECL_OUT(environment_list);
TOOL_DECL_RUN(environment_inspect);
TOOL_DECL_RUN(environment_logs);
TOOL_DECL(environment_phase);
/* tools_exec.c */
TOOL_DECL(environment_execute);
TOOL_DECL_OUT(environment_process_list);
TOOL_DECL(environment_process_output);
TOOL_DECL(environment_process_kill);
TOOL_DECL(environment_process_wait);
/* tools_files.c */
TOOL_DECL(environment_read_file);
TOOL_DECL(environment_write_file);
TOOL_DECL(environment_list_files);
TOOL_DECL(environment_upload);
TOOL_DECL(environment_download);
/* tools_snap.c */
TOOL_DECL(environment_snapshot);
TOOL_DECL(environment_restore);
TOOL_DECL_OUT(snapshot_list);
TOOL_DECL(environment_diff);
TOOL_DECL_RUN(template_list);
TOOL_DECL(template_build);
/* tools_trace.c */
TOOL_DECL(environment_replay);
TOOL_DECL(environment_attest);
/* tools_warm.c: pause and resume share one result schema */
TOOL_DECL_OUT(environment_pause);
TOOL_DECL_RUN(environment_resume);
TOOL_DECL(pool_set);
TOOL_DECL_OUT(pool_list);
/* tools_registry.c */
TOOL_DECL(snapshot_push);
TOOL_DECL(snapshot_pull);
TOOL_DECL(snapshot_export);
TOOL_DECL(snapshot_import);
/* tools_code.c */
TOOL_DECL(environment_run_code);
TOOL_DECL(environment_context_create);
TOOL_DECL_OUT(environment_context_list);
TOOL_DECL(environment_context_restart);
TOOL_DECL_OUT(environment_context_remove);
/* environment_run_code's images as MCP image content items
 * [{type: image, data, mimeType}] (a new reference; NULL on ENOMEM). */
json_t *tools_code_images(const json_t *structured);
/* tools_desktop.c */
TOOL_DECL(environment_screenshot);
TOOL_DECL(environment_input);
/* environment_screenshot's png as an MCP image content item (a new
 * reference; NULL on ENOMEM). */
json_t *tools_screenshot_image(const json_t *structured);
