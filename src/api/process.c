/* Background processes (docs/processes.md): sbx_process_*.
 *
 * A background process is an exec that the supervisor owns: it creates the
 * pipes, drains them into capped files and keeps the process's record
 * (runtime/sup_proc.h) under $SBX_RUN/<id>/procs/p<n>/. Starting, killing
 * and waiting talk to the supervisor; listing and reading output read those
 * files, so they work from any process and after the environment stopped. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "api/api.h"
#include "api/env_state.h"
#include "build/image_config.h"
#include "runtime/ctl_proto.h"
#include "runtime/user.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/utf8.h"

#define DEFAULT_OUTPUT_CHUNK (64LL << 10)

static const char *const streams[2] = {"stdout", "stderr"};

/* $SBX_RUN/<id>/procs/<pid>/<name> */
static char *proc_path(const sbx_ctx *ctx, const char *id, const char *pid, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s/%s/procs/%s%s%s", ctx->run, id, pid ? pid : "", name ? "/" : "",
		     name ? name : "") < 0)
		return NULL;
	return p;
}

static int check_proc_id(const char *pid, sbx_err **err)
{
	if (ctl_proc_id_parse(pid) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid process id '%s': expected p<number> as returned by a background exec",
			       pid ? pid : "");
	return 0;
}

static int64_t file_size(const sbx_ctx *ctx, const char *id, const char *pid, const char *name)
{
	_cleanup_free_ char *p = proc_path(ctx, id, pid, name);
	struct stat st;
	return p && lstat(p, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
}

/* The record of pid as callers see it: the supervisor's status.json, with
 * the output sizes as they are now, a running process's duration so far,
 * and, when the environment is no longer live, a process the record still
 * calls running marked as ended with it. */
static int read_record(const sbx_ctx *ctx, const char *id, const char *pid, bool live, json_t **ret,
		       sbx_err **err)
{
	_cleanup_free_ char *p = proc_path(ctx, id, pid, "status.json"), *txt = NULL;
	if (!p)
		return err_oom(err);
	int r = fs_read_file(p, 1 << 20, &txt, NULL);
	if (r == -ENOENT)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT,
			       "process '%s' not found in environment '%s' (sbx ps %s lists them)", pid, id,
			       id);
	if (r < 0)
		return err_errnum(err, -r, "read '%s'", p);
	json_t *j = json_loads(txt, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "malformed process record '%s'", p);
	}
	const char *state = json_str(j, "state") ?: "";
	if (!streq(state, "exited") && !live) {
		json_object_set_new(j, "state", json_string("exited"));
		json_object_set_new(j, "end_reason", json_string("environment_stopped"));
		json_object_set_new(j, "exit_code", json_null());
		if (!json_object_get(j, "signal"))
			json_object_set_new(j, "signal", json_null());
	} else if (!streq(state, "exited")) {
		json_object_set_new(j, "state", json_string("running")); /* "starting": a moment from it */
		int64_t now = clock_ms(CLOCK_REALTIME);
		json_object_set_new(j, "duration_ms", json_integer(now - json_int(j, "started_ms", now)));
	}
	for (int i = 0; i < 2; i++) {
		char k[32];
		snprintf(k, sizeof(k), "%s_bytes", streams[i]);
		json_object_set_new(j, k, json_integer(file_size(ctx, id, pid, streams[i])));
	}
	/* The command line as one string, for people. */
	_cleanup_free_ char *cmd = NULL;
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(j, "argv"), i, a)
	{
		char *n = NULL;
		if (asprintf(&n, "%s%s%s", cmd ? cmd : "", cmd ? " " : "", json_string_value(a) ?: "") < 0)
			break;
		free(cmd);
		cmd = n;
	}
	json_object_set_new(j, "command", json_string(cmd ? cmd : ""));
	*ret = j;
	return 0;
}

_public_ int sbx_process_start(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *o, json_t **ret,
			       sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (exec_opts_check(o, err) < 0)
		return -1;
	if (o->tty || (o->version >= 2 && o->trace))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "a background process has no terminal and cannot be traced");
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	bool no_resume = o->version >= 4 && o->no_auto_resume;
	_cleanup_json_ json_t *req =
	    json_pack("{s:s,s:b,s:o,s:o,s:I,s:I}", CTL_F_OP, CTL_OP_EXEC, CTL_F_BACKGROUND, 1, "argv",
		      json_from_strv(o->argv), "env", json_from_strv(o->env), "timeout_ms",
		      (json_int_t)(o->timeout_ms > 0 ? o->timeout_ms : 0), CTL_F_OUTPUT_BYTES,
		      (json_int_t)o->output_bytes);
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "command or environment is not valid UTF-8");
	/* No cwd: the image's WORKDIR, as for a foreground exec (exec.c). */
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	const char *cwd = o->cwd;
	if (!cwd && env_record_read(ctx, id, &st) == 0)
		cwd = image_config_workdir(json_object_get(st.json, "image"));
	if (cwd)
		json_object_set_new(req, "cwd", json_string(cwd));
	if (o->version >= 3 && o->user)
		json_object_set_new(req, "user", json_string(o->user));
	if (no_resume)
		json_object_set_new(req, "no_auto_resume", json_true());
	_cleanup_json_ json_t *m = NULL;
	if (env_request_resume(ctx, id, !no_resume, req, &m, NULL, NULL, err) < 0)
		return -1;
	if (streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_ERROR))
		return api_err_from_json(m, err);
	const char *pid = json_str(m, CTL_F_PROCESS_ID);
	if (!pid || ctl_proc_id_parse(pid) < 0)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "the supervisor named no process id");
	char at[32];
	time_t t = (time_t)(json_int(m, "started_ms", clock_ms(CLOCK_REALTIME)) / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	*ret = json_pack("{s:s,s:s,s:I,s:s,s:I}", "environment_id", id, "process_id", pid, "pid",
			 (json_int_t)json_int(m, CTL_F_PID, 0), "started_at", at, "started_ms",
			 (json_int_t)json_int(m, "started_ms", 0));
	return *ret ? 0 : err_oom(err);
}

static int cmp_proc(const void *a, const void *b)
{
	int64_t x = ctl_proc_id_parse(*(char *const *)a), y = ctl_proc_id_parse(*(char *const *)b);
	return x < y ? -1 : x > y;
}

_public_ int sbx_process_list(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	bool live = env_is_live(ctx, id);
	_cleanup_free_ char *dir = proc_path(ctx, id, NULL, NULL);
	if (!dir)
		return err_oom(err);
	_cleanup_strv_free_ char **names = NULL;
	size_t n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (ctl_proc_id_parse(de->d_name) > 0 && strv_push_copy(&names, &n, de->d_name) < 0) {
			closedir(d);
			return err_oom(err);
		}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof(char *), cmp_proc);
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *rec = NULL;
		if (read_record(ctx, id, names[i], live, &rec, NULL) == 0) /* half-made: skipped */
			json_array_append_new(a, rec);
	}
	*ret = a ? json_pack("{s:s,s:o}", "environment_id", id, "processes", a) : NULL;
	return *ret ? 0 : err_oom(err);
}

_public_ int sbx_process_get(sbx_ctx *ctx, const char *ref, const char *process_id, json_t **ret,
			     sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (check_proc_id(process_id, err) < 0 || sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	return read_record(ctx, id, process_id, env_is_live(ctx, id), ret, err);
}

/* Up to max bytes of stream i from *off on, as a JSON string; *off moves on. */
static int read_chunk(const sbx_ctx *ctx, const char *id, const char *pid, int i, int64_t *off, int64_t max,
		      bool final, json_t *res, sbx_err **err)
{
	_cleanup_free_ char *p = proc_path(ctx, id, pid, streams[i]);
	if (!p)
		return err_oom(err);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	int64_t size = fd >= 0 && fstat(fd, &st) == 0 ? (int64_t)st.st_size : 0;
	if (*off > size)
		*off = size;
	int64_t want = size - *off < max ? size - *off : max;
	_cleanup_free_ char *buf = malloc((size_t)want + 1);
	if (!buf)
		return err_oom(err);
	ssize_t got = want > 0 ? pread(fd, buf, (size_t)want, *off) : 0;
	if (got < 0)
		return err_errno(err, "read '%s'", p);
	size_t keep = (size_t)got;
	/* A character cut by the bound (or still being written) waits for the
	 * next call; at the very end of an exited process's output it is shown
	 * as the replacement character. */
	if (!final || *off + got < size) {
		size_t c = utf8_complete_prefix(buf, keep);
		if (c > 0 || keep < 4)
			keep = c;
	}
	size_t tl;
	_cleanup_free_ char *text = utf8_sanitize(buf, keep, &tl);
	if (!text)
		return err_oom(err);
	*off += (int64_t)keep;
	char k[32];
	json_object_set_new(res, streams[i], json_stringn(text, tl));
	snprintf(k, sizeof(k), "%s_offset", streams[i]);
	json_object_set_new(res, k, json_integer(*off));
	snprintf(k, sizeof(k), "%s_more", streams[i]);
	json_object_set_new(res, k, json_boolean(*off < size));
	return 0;
}

_public_ int sbx_process_output(sbx_ctx *ctx, const char *ref, const char *process_id, int64_t stdout_offset,
				int64_t stderr_offset, int64_t max_bytes, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (check_proc_id(process_id, err) < 0 || sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	if (stdout_offset < 0 || stderr_offset < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "offsets must not be negative");
	if (max_bytes <= 0)
		max_bytes = DEFAULT_OUTPUT_CHUNK;
	if (max_bytes > SBX_PROCESS_OUTPUT_MAX)
		max_bytes = SBX_PROCESS_OUTPUT_MAX;
	_cleanup_json_ json_t *rec = NULL;
	/* The record first: output read after it saw "exited" is complete. */
	if (read_record(ctx, id, process_id, env_is_live(ctx, id), &rec, err) < 0)
		return -1;
	bool exited = streq(json_str(rec, "state") ?: "", "exited");
	int64_t off[2] = {stdout_offset, stderr_offset};
	for (int i = 0; i < 2; i++)
		if (read_chunk(ctx, id, process_id, i, &off[i], max_bytes, exited, rec, err) < 0)
			return -1;
	json_object_set_new(rec, "exited", json_boolean(exited));
	json_object_set_new(rec, "environment_id", json_string(id));
	*ret = TAKE_PTR(rec);
	return 0;
}

_public_ int sbx_process_kill(sbx_ctx *ctx, const char *ref, const char *process_id, int sig, json_t **ret,
			      sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sig == 0)
		sig = SIGTERM;
	if (sig < 1 || sig > 64)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid signal %d (1 to 64)", sig);
	if (check_proc_id(process_id, err) < 0 || sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	_cleanup_json_ json_t *rec = NULL;
	if (read_record(ctx, id, process_id, env_is_live(ctx, id), &rec, err) < 0)
		return -1;
	bool delivered = false;
	if (!streq(json_str(rec, "state") ?: "", "exited")) {
		_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:i}", CTL_F_OP, CTL_OP_PROC_KILL,
						       CTL_F_PROCESS_ID, process_id, CTL_F_SIG, sig),
				      *m = NULL;
		if (env_call(ctx, id, req, &m, err) < 0)
			return err_wrap(err, "kill process '%s'", process_id);
		delivered = json_bool(m, "delivered", false);
	}
	json_decref(rec);
	rec = NULL;
	if (read_record(ctx, id, process_id, env_is_live(ctx, id), &rec, err) < 0)
		return -1;
	*ret = json_pack("{s:s,s:s,s:i,s:b,s:s}", "environment_id", id, "process_id", process_id, "signal",
			 sig, "delivered", delivered, "state", json_str(rec, "state") ?: "exited");
	return *ret ? 0 : err_oom(err);
}

_public_ int sbx_process_wait(sbx_ctx *ctx, const char *ref, const char *process_id, int64_t timeout_ms,
			      json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (check_proc_id(process_id, err) < 0 || sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	if (timeout_ms < -1)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid timeout %lld ms",
			       (long long)timeout_ms);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	json_t *rec = NULL;
	if (read_record(ctx, id, process_id, env_is_live(ctx, id), &rec, err) < 0)
		return -1;
	if (timeout_ms != 0 && !streq(json_str(rec, "state") ?: "", "exited")) {
		/* The supervisor answers proc_exit when it has exited (or at once
		 * if it is not running there); EOF: the environment ended. */
		_cleanup_close_ int sock = env_connect(ctx, id, NULL);
		_cleanup_json_ json_t *req =
		    json_pack("{s:s,s:s}", CTL_F_OP, CTL_OP_PROC_WAIT, CTL_F_PROCESS_ID, process_id);
		if (sock >= 0 && req && json_send(sock, req, NULL, 0) == 0) {
			struct pollfd pf = {.fd = sock, .events = POLLIN};
			int q;
			do {
				int64_t left = -1;
				if (timeout_ms > 0) {
					clock_gettime(CLOCK_MONOTONIC, &t1);
					int64_t spent = (t1.tv_sec - t0.tv_sec) * 1000 +
							(t1.tv_nsec - t0.tv_nsec) / 1000000;
					left = timeout_ms > spent ? timeout_ms - spent : 0;
				}
				q = poll(&pf, 1, left > INT32_MAX ? INT32_MAX : (int)left);
			} while (q < 0 && errno == EINTR);
			if (q > 0) {
				_cleanup_json_ json_t *m = NULL;
				if (json_recv(sock, &m, NULL, NULL) > 0 &&
				    streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_ERROR)) {
					json_decref(rec);
					return api_err_from_json(m, err);
				}
			}
		}
		json_decref(rec);
		rec = NULL;
		if (read_record(ctx, id, process_id, env_is_live(ctx, id), &rec, err) < 0)
			return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	json_object_set_new(
	    rec, "waited_ms",
	    json_integer((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	json_object_set_new(rec, "environment_id", json_string(id));
	*ret = rec;
	return 0;
}

_public_ int sbx_parse_signal(const char *s, int *ret, sbx_err **err)
{
	char *end;
	errno = 0;
	long n = s && *s ? strtol(s, &end, 10) : -1;
	if (s && *s && !*end && !errno) {
		if (n < 1 || n > 64)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid signal %s (1 to 64)", s);
		*ret = (int)n;
		return 0;
	}
	const char *name = s && strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
	for (int i = 1; name && i < NSIG && i <= 64; i++) {
		const char *abbrev = sigabbrev_np(i);
		if (abbrev && strcasecmp(abbrev, name) == 0) {
			*ret = i;
			return 0;
		}
	}
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "unknown signal '%s' (a name such as TERM, KILL or INT, or 1 to 64)", s ? s : "");
}
