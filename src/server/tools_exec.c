/* The MCP tools of commands: environment_execute, in the foreground or in
 * the background, and the background processes (docs/processes.md). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/env_state.h"
#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

const char tool_environment_execute_in[] =
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

const char tool_environment_execute_out[] =
    OUTPUT("'exit_code':{'type':['integer','null'],'description':'null if the command was killed by a "
	   "signal'},'signal':{'type':'integer'},'stdout':{'type':'string'},'stderr':{'type':'string'},"
	   "'stdout_truncated':{'type':'boolean'},'stderr_truncated':{'type':'boolean'},"
	   "'timed_out':{'type':'boolean'},'duration_ms':{'type':'number'},"
	   "'oom_killed':{'type':'boolean'},'cancelled':{'type':'boolean'},"
	   "'trace_id':{'type':['string','null']},'process_id':{'type':'string','description':'background: "
	   "the process id (p1, ...)'},'pid':{'type':'integer'},'started_at':{'type':'string'}",
	   "'exit_code','stdout','stderr','timed_out','duration_ms'"
	   "]},{'required':['process_id'");

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
		return tools_bad_params(
		    c,
		    "'timeout_ms' %lld: the environment's policy '%s' allows at most %lld ms; an "
		    "explicit value may only narrow it",
		    (long long)t, st.policy, (long long)cap);
	return 0;
}

int tool_environment_execute(tool_call *c, json_t **ret, sbx_err **err)
{
	const json_t *a = c->args;
	const char *command = json_str(a, "command");
	json_t *argv_j = json_object_get(a, "argv");
	if (command && argv_j)
		return tools_bad_params(
		    c, "give either 'command' (a shell command string) or 'argv' (an array of "
		       "strings), not both");
	if (!command && !argv_j)
		return tools_bad_params(
		    c, "missing 'command' (a shell command string, run by /bin/sh -c) or 'argv' "
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
	int r = tools_env_strv(c, "env", &env);
	if (r < 0)
		return c->bad_params ? r : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
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
	if ((r = tools_user_arg(c, ubuf, sizeof(ubuf), &o.user)) < 0)
		return r;
	json_t *det = json_object_get(a, "deterministic");
	o.deterministic = json_is_boolean(det) ? json_is_true(det) : -1;
	if ((r = exec_timeout_capped(c, id, json_bool(a, "background", false), &o.timeout_ms, err)) < 0)
		return r;
	if (json_bool(a, "background", false)) { /* docs/processes.md */
		if (in || o.trace)
			return tools_bad_params(c, "a background command takes no 'stdin' and no 'trace'");
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

const char tool_environment_process_list_out[] =
    OUTPUT("'environment_id':{'type':'string'},'processes':{'type':'array','"
	   "items':{'type':'object','properties':{" PROC_RECORD_PROPS "}}}",
	   "'processes'");

const char tool_environment_process_output_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','process_id'],'properties':"
    "{" ENV_ID_PROP "," PROC_ID_PROP ","
    "'stdout_offset':{'type':'integer','minimum':0,'description':'Read stdout from this byte offset (default "
    "0): pass the stdout_offset of the previous call to get only what is new.'},"
    "'stderr_offset':{'type':'integer','minimum':0,'description':'The same for stderr.'},"
    "'max_bytes':{'type':'integer','minimum':1,'maximum':262144,'description':'At most this many bytes of "
    "each stream (default 65536); stdout_more/stderr_more say whether more is already there.'}}}";

const char tool_environment_process_output_out[] = OUTPUT(
    PROC_RECORD_PROPS ",'stdout':{'type':'string'},'stderr':{'type':'string'},'stdout_offset':{'type':'"
		      "integer'},'stderr_offset':{'type':'integer'},'stdout_more':{'type':'boolean'},"
		      "'stderr_more':{'type':'boolean'},'exited':{'type':'boolean'}",
    "'stdout','stderr','stdout_offset','stderr_offset','exited'");

const char tool_environment_process_kill_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','process_id'],'properties':"
    "{" ENV_ID_PROP "," PROC_ID_PROP ","
    "'signal':{'type':['integer','string'],'minimum':1,'maximum':64,'description':'Signal to send: a "
    "number or a name (TERM, the default; KILL, INT, HUP, ...).'}}}";

const char tool_environment_process_kill_out[] =
    OUTPUT("'environment_id':{'type':'string'},'process_id':{'type':'string'},'signal':{'type':'integer'},"
	   "'delivered':{'type':'boolean','description':'false: it had exited already'},'state':{'type':'"
	   "string'}",
	   "'process_id','delivered'");

const char tool_environment_process_wait_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','process_id'],'properties':"
    "{" ENV_ID_PROP "," PROC_ID_PROP ","
    "'timeout_ms':{'type':'integer','minimum':0,'maximum':300000,'description':'Wait at most this long "
    "(default 30000; 0: do not wait, just report). state running in the result means it is still "
    "running.'}}}";

const char tool_environment_process_wait_out[] =
    OUTPUT(PROC_RECORD_PROPS ",'waited_ms':{'type':'integer'}", "'process_id','state'");

int tool_environment_process_list(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_process_list(c->ctx, id, ret, err);
}

int tool_environment_process_output(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	const json_t *a = c->args;
	return sbx_process_output(c->ctx, id, json_str(a, "process_id"), json_int(a, "stdout_offset", 0),
				  json_int(a, "stderr_offset", 0), json_int(a, "max_bytes", 65536), ret, err);
}

int tool_environment_process_kill(tool_call *c, json_t **ret, sbx_err **err)
{
	json_t *sj = json_object_get(c->args, "signal");
	int sig = SIGTERM;
	if (json_is_integer(sj))
		sig = (int)json_integer_value(sj);
	else if (sj) {
		_cleanup_err_ sbx_err *e = NULL;
		if (sbx_parse_signal(json_string_value(sj), &sig, &e) < 0)
			return tools_bad_params(c, "'signal': %s", sbx_err_message(e));
	}
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_process_kill(c->ctx, id, json_str(c->args, "process_id"), sig, ret, err);
}

int tool_environment_process_wait(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	return sbx_process_wait(c->ctx, id, json_str(c->args, "process_id"),
				json_int(c->args, "timeout_ms", 30000), ret, err);
}
