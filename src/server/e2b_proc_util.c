/* The pure parts of envd's process.Process service (e2b_proc_util.h). */
#include "server/e2b_proc_util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/dsse.h"
#include "util/macro.h"

const char *e2b_user_home(const char *user, char *buf, size_t size)
{
	if (!user || !*user || streq(user, "root"))
		snprintf(buf, size, "/root");
	else
		snprintf(buf, size, "/home/%s", user);
	return buf;
}

static int bad(sbx_err **err, const char *what)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s", what);
}

void e2b_start_req_clear(e2b_start_req *r)
{
	strv_free(r->argv);
	strv_free(r->env);
	free(r->cwd);
	free(r->tag);
	json_decref(r->config);
	*r = (e2b_start_req){0};
}

static bool env_sets(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (; env && *env; env++)
		if (strncmp(*env, name, n) == 0 && (*env)[n] == '=')
			return true;
	return false;
}

char **e2b_env_with_defaults(char *const *env, const char *sandbox)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	char **v = calloc(n + 3, sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	if (!env_sets(env, "E2B_SANDBOX") && !(v[k++] = strdup("E2B_SANDBOX=true")))
		goto oom;
	if (!env_sets(env, "E2B_SANDBOX_ID") && asprintf(&v[k++], "E2B_SANDBOX_ID=%s", sandbox) < 0) {
		v[k - 1] = NULL;
		goto oom;
	}
	for (size_t i = 0; i < n; i++)
		if (!(v[k++] = strdup(env[i])))
			goto oom;
	return v;
oom:
	strv_free(v);
	return NULL;
}

bool e2b_env_went(const sbx_err *e)
{
	return e && sbx_err_code(e) == SBX_E_UNAVAILABLE &&
	       (sbx_err_errno(e) == ESRCH || sbx_err_errno(e) == EPIPE);
}

static bool text_ok(const char *s)
{
	return s && strlen(s) < 65536;
}

int e2b_start_parse(const json_t *in, const char *home, e2b_start_req *ret, sbx_err **err)
{
	const json_t *p = json_object_get(in, "process");
	if (!json_is_object(p))
		return bad(err, "process: the command to start is missing");
	const char *cmd = json_string_value(json_object_get(p, "cmd"));
	if (!text_ok(cmd) || !*cmd)
		return bad(err, "process.cmd: a command is required");
	const json_t *args = json_object_get(p, "args");
	if (args && !json_is_null(args) &&
	    (!json_is_array(args) || json_array_size(args) > E2B_PROC_ARGS_MAX))
		return bad(err, "process.args: an array of strings");
	const json_t *envs = json_object_get(p, "envs");
	if (envs && !json_is_null(envs) &&
	    (!json_is_object(envs) || json_object_size(envs) > E2B_PROC_ENVS_MAX))
		return bad(err, "process.envs: an object of strings");
	const json_t *cwdv = json_object_get(p, "cwd");
	if (cwdv && !json_is_null(cwdv) && !json_is_string(cwdv))
		return bad(err, "process.cwd: a string");
	const json_t *tagv = json_object_get(in, "tag");
	if (tagv && !json_is_null(tagv) && !json_is_string(tagv))
		return bad(err, "tag: a string");
	const json_t *stdinv = json_object_get(in, "stdin");
	if (stdinv && !json_is_null(stdinv) && !json_is_boolean(stdinv))
		return bad(err, "stdin: a boolean");

	e2b_start_req r = {0};
	size_t na = args && json_is_array(args) ? json_array_size(args) : 0;
	r.argv = calloc(na + 2, sizeof(char *));
	size_t ne = envs && json_is_object(envs) ? json_object_size(envs) : 0;
	r.env = calloc(ne + 1, sizeof(char *));
	r.config = json_object();
	json_t *cargs = json_array(), *cenvs = json_object();
	if (!r.argv || !r.env || !r.config || !cargs || !cenvs)
		goto oom;
	json_object_set_new(r.config, "cmd", json_string(cmd));
	json_object_set_new(r.config, "args", cargs);
	json_object_set_new(r.config, "envs", cenvs);
	if (!(r.argv[0] = strdup(cmd)))
		goto oom;
	for (size_t i = 0; i < na; i++) {
		const char *a = json_string_value(json_array_get(args, i));
		if (!text_ok(a)) {
			e2b_start_req_clear(&r);
			return bad(err, "process.args: an array of strings");
		}
		if (!(r.argv[i + 1] = strdup(a)))
			goto oom;
		json_array_append_new(cargs, json_string(a));
	}
	size_t k = 0;
	const char *key;
	json_t *val;
	json_object_foreach((json_t *)(envs && json_is_object(envs) ? envs : NULL), key, val)
	{
		const char *v = json_string_value(val);
		if (!*key || strchr(key, '=') || !text_ok(v)) {
			e2b_start_req_clear(&r);
			return bad(err, "process.envs: names without '=' and string values");
		}
		if (asprintf(&r.env[k], "%s=%s", key, v) < 0) {
			r.env[k] = NULL;
			goto oom;
		}
		k++;
		json_object_set_new(cenvs, key, json_string(v));
	}
	const char *cwd = json_string_value(cwdv);
	if (cwd && strlen(cwd) > 4096) {
		e2b_start_req_clear(&r);
		return bad(err, "process.cwd: too long");
	}
	if (!cwd || !*cwd)
		r.cwd = strdup(home);
	else if (cwd[0] == '/')
		r.cwd = strdup(cwd);
	else if (asprintf(&r.cwd, "%s/%s", home, cwd) < 0)
		r.cwd = NULL;
	if (!r.cwd)
		goto oom;
	json_object_set_new(r.config, "cwd", json_string(r.cwd));
	const char *tag = json_string_value(tagv);
	if (tag && !(r.tag = strdup(tag)))
		goto oom;
	r.stdin_open = !stdinv || json_is_null(stdinv) || json_is_true(stdinv); /* envd's default */
	const json_t *pty = json_object_get(in, "pty");
	if (pty && !json_is_null(pty)) {
		if (e2b_pty_size_parse(in, "pty", &r.cols, &r.rows, err) < 0) {
			e2b_start_req_clear(&r);
			return -EINVAL;
		}
		r.pty = true;
	}
	*ret = r;
	return 0;
oom:
	e2b_start_req_clear(&r);
	return err_oom(err);
}

/* A uint32 as proto3 JSON writes one: a number, or a string of digits. */
static bool u32_of(const json_t *v, uint32_t *ret)
{
	long long n;
	if (json_is_integer(v))
		n = json_integer_value(v);
	else if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t len = strlen(s);
		if (len == 0 || len > 10 || strspn(s, "0123456789") != len)
			return false;
		n = strtoll(s, NULL, 10);
	} else
		return false;
	if (n < 0 || n > (long long)UINT32_MAX)
		return false;
	*ret = (uint32_t)n;
	return true;
}

int e2b_selector_parse(const json_t *in, const char *key, e2b_selector *ret, sbx_err **err)
{
	const json_t *p = json_object_get(in, key);
	if (!json_is_object(p))
		return bad(err, "process: a selector {pid} or {tag} is required");
	const json_t *pid = json_object_get(p, "pid");
	const json_t *tag = json_object_get(p, "tag");
	e2b_selector s = {0};
	if (pid && !json_is_null(pid)) {
		if (!u32_of(pid, &s.pid) || s.pid == 0)
			return bad(err, "process.pid: a process id");
	} else if (json_is_string(tag) && *json_string_value(tag)) {
		s.tag = json_string_value(tag);
	} else
		return bad(err, "process: a selector {pid} or {tag} is required");
	*ret = s;
	return 0;
}

static const struct {
	const char *name;
	int sig;
} SIGNALS[] = {
    {"SIGNAL_SIGKILL", SIGKILL}, {"SIGNAL_SIGTERM", SIGTERM}, {"SIGNAL_SIGINT", SIGINT},
    {"SIGNAL_SIGHUP", SIGHUP},	 {"SIGNAL_SIGQUIT", SIGQUIT}, {"SIGNAL_SIGUSR1", SIGUSR1},
    {"SIGNAL_SIGUSR2", SIGUSR2},
};

int e2b_signal_parse(const json_t *v, int *ret, sbx_err **err)
{
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		for (size_t i = 0; i < ARRAY_SIZE(SIGNALS); i++)
			if (SIGNALS[i].sig == n) {
				*ret = SIGNALS[i].sig;
				return 0;
			}
	} else if (json_is_string(v)) {
		for (size_t i = 0; i < ARRAY_SIZE(SIGNALS); i++)
			if (streq(SIGNALS[i].name, json_string_value(v))) {
				*ret = SIGNALS[i].sig;
				return 0;
			}
	}
	return bad(err, "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM");
}

int e2b_pty_size_parse(const json_t *in, const char *key, uint16_t *ret_cols, uint16_t *ret_rows,
		       sbx_err **err)
{
	const json_t *size = json_object_get(json_object_get(in, key), "size");
	uint32_t c, r;
	if (!json_is_object(size) || !u32_of(json_object_get(size, "cols"), &c) ||
	    !u32_of(json_object_get(size, "rows"), &r) || c < 1 || r < 1 || c > E2B_PTY_DIM_MAX ||
	    r > E2B_PTY_DIM_MAX)
		return bad(err, "pty.size: cols and rows from 1 to 4096");
	*ret_cols = (uint16_t)c;
	*ret_rows = (uint16_t)r;
	return 0;
}

int e2b_input_parse(const json_t *in, unsigned char **ret, size_t *ret_len, bool *ret_pty, sbx_err **err)
{
	const json_t *input = json_object_get(in, "input");
	if (!json_is_object(input))
		return bad(err, "input: {stdin} or {pty} is required");
	const json_t *s = json_object_get(input, "stdin");
	const json_t *p = json_object_get(input, "pty");
	bool pty = !json_is_string(s) && json_is_string(p);
	const char *b64 = json_string_value(pty ? p : s);
	if (!b64)
		return bad(err, "input: {stdin} or {pty} is required");
	unsigned char *buf = NULL;
	size_t len = 0;
	if (!*b64) {
		if (!(buf = calloc(1, 1)))
			return err_oom(err);
	} else if (dsse_b64_decode(b64, strlen(b64), (size_t)16 << 20, &buf, &len, err) < 0)
		return err_wrap(err, "input");
	*ret = buf;
	*ret_len = len;
	*ret_pty = pty;
	return 0;
}

static const char *signal_words(int sig)
{
	switch (sig) { /* Go's (os.ProcessState.String: "signal: killed") */
	case SIGHUP:
		return "hangup";
	case SIGINT:
		return "interrupt";
	case SIGQUIT:
		return "quit";
	case SIGABRT:
		return "aborted";
	case SIGKILL:
		return "killed";
	case SIGSEGV:
		return "segmentation fault";
	case SIGPIPE:
		return "broken pipe";
	case SIGTERM:
		return "terminated";
	default:
		return NULL;
	}
}

json_t *e2b_end_event(int exit_code, int signal, const char *error)
{
	char status[64];
	if (signal > 0) {
		const char *w = signal_words(signal);
		if (w)
			snprintf(status, sizeof(status), "signal: %s", w);
		else
			snprintf(status, sizeof(status), "signal: signal %d", signal);
	} else
		snprintf(status, sizeof(status), "exit status %d", exit_code);
	json_t *end = json_pack("{s:i,s:b,s:s}", "exitCode", signal > 0 ? -1 : exit_code, "exited",
				signal <= 0, "status", status);
	/* envd's error is Go's cmd.Wait() error: its text is the status
	 * ("exit status 7", "signal: killed") when the command did not exit 0;
	 * the SDK's CommandExitError carries it as its message. */
	if (!error && (signal > 0 || exit_code != 0))
		error = status;
	if (end && error)
		json_object_set_new(end, "error", json_string(error));
	return end ? json_pack("{s:{s:o}}", "event", "end", end) : NULL;
}

json_t *e2b_data_event(int kind, const void *data, size_t len)
{
	_cleanup_free_ char *b64 = dsse_b64_encode(data, len);
	if (!b64)
		return NULL;
	const char *k = kind == 1 ? "stdout" : kind == 2 ? "stderr" : "pty";
	return json_pack("{s:{s:{s:s}}}", "event", "data", k, b64);
}
