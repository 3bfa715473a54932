/* The code interpreter's HTTP API on port 49999 of an E2B sandbox
 * (e2b_ports.h, docs/e2b.md), as @e2b/code-interpreter 2.8 speaks it:
 *   POST   /execute {code, context_id?, language?, env_vars?}  -> 200 NDJSON
 *   POST   /contexts {language?, cwd?}                        -> {id, language, cwd}
 *   GET    /contexts                                          -> [{id, language, cwd}]
 *   DELETE /contexts/{id}                                     -> 204
 *   POST   /contexts/{id}/restart                             -> 204
 * Each is one library call (sbx_run_code, sbx_context_*). A run's events are
 * streamed as sbx_run_code's on_output gives them, one JSON object a line:
 * stdout/stderr {text, timestamp}, result {is_main_result, text, html, png,
 * ...}, error {name, value, traceback}; then number_of_executions
 * {execution_count} and end_of_execution. The run goes on a thread of its
 * own; the response's reader takes the lines as they come. A run that fails
 * before its first event (no such context: 404) answers with the error's
 * status; one that fails later ends its stream with an error event. A run
 * whose sandbox went under it (killed, timed out, paused) is cut unfinished,
 * whenever that happened, before its first event too: E2B's server answers
 * 200 as it takes the request, so its SDK sees the same cut either way.
 * Errors are {"code", "message"}: the SDK turns 404 into NotFoundError,
 * 502 into TimeoutError, anything else into SandboxError. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_data.h"
#include "server/e2b_ports.h"
#include "server/e2b_reply.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/strbuf.h"
#include "util/thread.h"

/* How long /execute waits for a first event before it answers 200: a run
 * that fails at once (a bad context) still gets its own status. */
#define FIRST_EVENT_WAIT_MS 1000
#define STREAM_BLOCK 65536
#define CLIENT_CHECK_MS 500
/* How long a run that broke looks for its sandbox's end (e2b_sandbox_gone_within). */
#define GONE_WAIT_MS 1500

static unsigned status_of(const sbx_err *e)
{
	switch (sbx_err_code(e)) {
	case SBX_E_NOT_FOUND:
		return HTTP_STATUS_NOT_FOUND;
	case SBX_E_INVALID_ARGUMENT:
		return HTTP_STATUS_BAD_REQUEST;
	case SBX_E_UNAVAILABLE:
		return HTTP_STATUS_SERVICE_UNAVAILABLE;
	default:
		return HTTP_STATUS_INTERNAL_SERVER_ERROR;
	}
}

static http_result reply_sbx_error(http_request *req, const sbx_err *e)
{
	return e2b_reply_message(req, status_of(e), sbx_err_message(e));
}

/* The JSON object body, or NULL with the 400 sent (*ret). */
static json_t *body_object(http_request *req, http_result *ret)
{
	if (req->too_large) {
		*ret = e2b_reply_message(req, HTTP_STATUS_CONTENT_TOO_LARGE, "the body is too large");
		return NULL;
	}
	if (!req->body || req->body_len == 0)
		return json_object();
	json_t *b = json_loadb(req->body, req->body_len, 0, NULL);
	if (!json_is_object(b)) {
		json_decref(b);
		*ret = e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, "the body must be a JSON object");
		return NULL;
	}
	return b;
}

/* An optional string member: true with *ret (NULL if absent or null). */
static bool opt_str(const json_t *b, const char *key, const char **ret)
{
	const json_t *v = json_object_get(b, key);
	*ret = json_is_string(v) ? json_string_value(v) : NULL;
	return !v || json_is_null(v) || json_is_string(v);
}

/* ---- POST /execute --------------------------------------------------------------------- */

typedef struct code_run {
	e2b_req_state base; /* req->state: the request's reference */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs; /* the request's and the thread's */
	strbuf q; /* lines not yet read by the client */
	size_t q_off;
	bool any;	/* an event came */
	bool finished;	/* the run is over and its last lines are in q */
	bool gone;	/* the request ended (the client left, or read it all) */
	bool streaming; /* the handler answered 200: an error is then an event */
	bool deciding;	/* the run failed before streaming: the handler waits for sandbox_went */
	bool aborted;	/* the sandbox went under the run: the stream ends unfinished */
	int status;	/* the error's status when finished with err and no event came */
	char *errmsg;
	int client;    /* the client's socket, watched for a hang-up; -1 unknown */
	int cancel[2]; /* a pipe: the request's end closes [1], which cancels the run ([0]) */
	/* the call */
	sbx_ctx *ctx;
	char *sandbox;
	json_t *body; /* the request (owns the strings below) */
	char **env;
} code_run;

static void run_unref(code_run *r)
{
	pthread_mutex_lock(&r->lock);
	bool last = --r->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (!last)
		return;
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	for (int i = 0; i < 2; i++)
		if (r->cancel[i] >= 0)
			close(r->cancel[i]);
	strbuf_free(&r->q);
	free(r->errmsg);
	free(r->sandbox);
	json_decref(r->body);
	strv_free(r->env);
	free(r);
}

/* Queues one event as a line (under no lock; takes ev). */
static void run_push(code_run *r, json_t *ev)
{
	char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	json_decref(ev);
	if (!s)
		return;
	pthread_mutex_lock(&r->lock);
	if (!r->gone) {
		if (r->q_off == r->q.len) {
			strbuf_reset(&r->q);
			r->q_off = 0;
		}
		strbuf_add(&r->q, s, strlen(s));
		strbuf_lit(&r->q, "\n");
		r->any = true;
		pthread_cond_broadcast(&r->cond);
	}
	pthread_mutex_unlock(&r->lock);
	free(s);
}

static void iso_now(char buf[40])
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 40 - n, ".%06ldZ", ts.tv_nsec / 1000);
}

/* A result as E2B's server gives it: its text/plain with one pair of
 * surrounding single quotes stripped (E2B's api/models/result.py: a Python
 * string's repr 'bar' reads bar; "it's" and 'a' + "'" keep theirs), so that
 * programs written for E2B see the same text. Only this door does it: sbx's
 * own results (CLI, MCP, library) keep Jupyter's repr (docs/e2b.md). */
static json_t *result_e2b(const json_t *ev)
{
	json_t *out = json_deep_copy(ev);
	const json_t *t = json_object_get(out, "text");
	size_t n = json_is_string(t) ? json_string_length(t) : 0;
	const char *s = n ? json_string_value(t) : NULL;
	if (out && s && s[0] == '\'' && s[n - 1] == '\'') /* "'" alone becomes "", as there */
		json_object_set_new(out, "text", json_stringn(s + 1, n >= 2 ? n - 2 : 0));
	return out;
}

/* sbx_run_code's on_output: E2B's events are sbx's, but for stdout and
 * stderr's timestamp and a result's text (result_e2b); sbx's own (timeout,
 * truncated) are not E2B's. */
static void on_event(const json_t *ev, void *ud)
{
	code_run *r = ud;
	const char *type = json_str(ev, "type");
	if (!type)
		return;
	if (streq(type, "stdout") || streq(type, "stderr")) {
		char ts[40];
		iso_now(ts);
		run_push(r, json_pack("{s:s,s:O,s:s}", "type", type, "text", json_object_get(ev, "text"),
				      "timestamp", ts));
	} else if (streq(type, "result"))
		run_push(r, result_e2b(ev));
	else if (streq(type, "error"))
		run_push(r, json_deep_copy(ev));
}

/* Whether a run broke because its sandbox went under it (killed, timed
 * out, paused). A kill breaks the run a moment before the sandbox stops
 * being running, so a failure is given GONE_WAIT_MS to be seen as that;
 * but one that says the request itself was wrong (no such context, a bad
 * argument) while the sandbox still runs is answered at once. A sandbox
 * that is no longer there at all is gone at once (its lookup is the one
 * that made the run fail "no such environment"). */
static bool sandbox_went(const code_run *r, const sbx_err *e)
{
	if (e2b_sandbox_state(r->ctx, r->sandbox) == 0)
		return true;
	if (sbx_err_code(e) == SBX_E_NOT_FOUND || sbx_err_code(e) == SBX_E_INVALID_ARGUMENT)
		return false;
	return e2b_sandbox_gone_within(r->ctx, r->sandbox, GONE_WAIT_MS);
}

static void *run_main(void *arg)
{
	code_run *r = arg;
	sbx_code_opts o = SBX_CODE_OPTS_INIT;
	o.code = json_str(r->body, "code");
	(void)opt_str(r->body, "context_id", &o.context_id);
	(void)opt_str(r->body, "language", &o.language);
	o.env = (const char *const *)r->env;
	o.on_output = on_event;
	o.userdata = r;
#if SBX_CODE_OPTS_VERSION >= 2
	o.cancel_fd = r->cancel[0]; /* the request's end interrupts the cell */
#else
	/* This library cannot cancel a run (sbx_code_opts.cancel_fd comes with
	 * version 2): a client that leaves lets its cell run to its end, its
	 * output dropped. */
#endif
	_cleanup_json_ json_t *out = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	int rc = sbx_run_code(r->ctx, r->sandbox, &o, &out, &e);
	/* A failure before the handler answered holds its answer until
	 * sandbox_went says what it is: an error status, or the cut. */
	pthread_mutex_lock(&r->lock);
	r->deciding = rc < 0 && !r->any && !r->streaming;
	pthread_mutex_unlock(&r->lock);
	/* A sandbox killed (or timed out, or paused) under its cell ends the
	 * stream unfinished, as E2B's proxy does, whether or not anything was
	 * streamed yet: the SDK sees the connection close, asks isRunning()
	 * (/health: 502) and rejects with its TimeoutError "the sandbox was
	 * killed while the request was in progress". Any other failure is an
	 * error status before the first event, an error event the run resolves
	 * with after it. */
	bool aborted = rc < 0 && sandbox_went(r, e);
	pthread_mutex_lock(&r->lock);
	bool streamed = r->any || r->streaming;
	if (rc < 0 && !streamed && !aborted) {
		r->status = (int)status_of(e);
		r->errmsg = strdup(sbx_err_message(e));
	}
	pthread_mutex_unlock(&r->lock);
	if (rc < 0 && streamed && !aborted)
		run_push(r, json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name", "SbxError", "value",
				      sbx_err_message(e), "traceback", sbx_err_message(e)));
	if (rc == 0) {
		json_t *n = json_object_get(out, "execution_count");
		run_push(r, json_pack("{s:s,s:O}", "type", "number_of_executions", "execution_count",
				      json_is_integer(n) ? n : json_null()));
	}
	if (rc == 0 || (streamed && !aborted))
		run_push(r, json_pack("{s:s}", "type", "end_of_execution"));
	pthread_mutex_lock(&r->lock);
	r->aborted = aborted;
	r->finished = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	run_unref(r);
	return NULL;
}

/* True once the client hung up (or the server shut its socket down). */
static bool client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return fd >= 0 && poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The stream's read callback: waits for lines, looking at the client every
 * CLIENT_CHECK_MS (a client that left while a cell is silent frees its
 * connection's thread: the request then ends, see run_state_free). */
static ssize_t run_read(void *cls, char *buf, size_t max)
{
	code_run *r = cls;
	pthread_mutex_lock(&r->lock);
	while (r->q_off == r->q.len && !r->finished) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += CLIENT_CHECK_MS * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT &&
		    client_gone(r->client)) {
			pthread_mutex_unlock(&r->lock);
			return HTTP_STREAM_ERROR;
		}
	}
	ssize_t n = r->aborted ? HTTP_STREAM_ERROR : HTTP_STREAM_END; /* no last chunk: see run_main */
	if (r->q_off < r->q.len) {
		size_t k = r->q.len - r->q_off < max ? r->q.len - r->q_off : max;
		memcpy(buf, r->q.p + r->q_off, k);
		r->q_off += k;
		n = (ssize_t)k;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void run_state_free(e2b_req_state *s)
{
	code_run *r = (code_run *)s;
	pthread_mutex_lock(&r->lock);
	r->gone = true;
	if (r->cancel[1] >= 0) /* the run's cancel_fd hangs up */
		close(r->cancel[1]);
	r->cancel[1] = -1;
	pthread_mutex_unlock(&r->lock);
	run_unref(r);
}

/* env_vars {K: V} as "K=V" strings; false if it is not an object of strings. */
static bool env_strv(const json_t *vars, char ***ret)
{
	*ret = NULL;
	if (!vars || json_is_null(vars))
		return true;
	if (!json_is_object(vars))
		return false;
	char **v = calloc(json_object_size(vars) + 1, sizeof(char *));
	if (!v)
		return false;
	size_t i = 0;
	const char *k;
	json_t *val;
	json_object_foreach((json_t *)vars, k, val)
	{
		if (!json_is_string(val) || !*k || strchr(k, '=') ||
		    asprintf(&v[i], "%s=%s", k, json_string_value(val)) < 0) {
			v[i] = NULL;
			strv_free(v);
			return false;
		}
		i++;
	}
	*ret = v;
	return true;
}

http_result e2b_code_execute(http_request *req)
{
	http_result ret = HTTP_CLOSE;
	_cleanup_json_ json_t *b = body_object(req, &ret);
	if (!b)
		return ret;
	const char *code, *cid, *lang;
	if (!opt_str(b, "code", &code) || !code)
		return e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, "code: a string is required");
	if (!opt_str(b, "context_id", &cid) || !opt_str(b, "language", &lang))
		return e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, "context_id, language: strings");
	char **env = NULL;
	if (!env_strv(json_object_get(b, "env_vars"), &env))
		return e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, "env_vars: an object of strings");

	code_run *r = calloc(1, sizeof(*r));
	if (!r || !(r->sandbox = strdup(e2b_req_sandbox(req)))) {
		free(r);
		strv_free(env);
		return e2b_reply_message(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->cancel[0] = r->cancel[1] = -1;
	r->base.free = run_state_free;
	r->refs = 2;
	r->client = http_request_fd(req);
	r->ctx = e2b_req_ctx(req);
	r->body = TAKE_PTR(b);
	r->env = env;
	req->state = r; /* the request's reference: e2b_req_state_done drops it */
	if (pipe2(r->cancel, O_CLOEXEC) < 0) {
		r->refs = 1;
		return e2b_reply_message(req, HTTP_STATUS_SERVICE_UNAVAILABLE,
					 "cannot make a pipe for the run");
	}
	if (thread_start_detached(run_main, r, 0) != 0) {
		r->refs = 1;
		return e2b_reply_message(req, HTTP_STATUS_SERVICE_UNAVAILABLE,
					 "cannot start a thread for the run");
	}
	http_request_busy(req, true);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long)(FIRST_EVENT_WAIT_MS % 1000) * 1000000;
	until.tv_sec += FIRST_EVENT_WAIT_MS / 1000 + until.tv_nsec / 1000000000;
	until.tv_nsec %= 1000000000;
	pthread_mutex_lock(&r->lock);
	while (!r->any && !r->finished) {
		if (r->deciding) /* a failure's verdict: run_main ends within GONE_WAIT_MS */
			pthread_cond_wait(&r->cond, &r->lock);
		else if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT && !r->deciding)
			break;
	}
	/* Finished without a status (its sandbox went: run_main's aborted), the
	 * 200 goes out and the stream is cut at once (run_read). */
	bool failed = r->finished && r->status;
	r->streaming = !failed;
	unsigned status = (unsigned)r->status;
	_cleanup_free_ char *msg = failed && r->errmsg ? strdup(r->errmsg) : NULL;
	pthread_mutex_unlock(&r->lock);
	if (failed)
		return e2b_reply_message(req, status, msg ? msg : "the run failed");
	http_response *resp = http_response_stream(req, STREAM_BLOCK, run_read, r);
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", "application/x-ndjson");
	return http_respond(req, HTTP_STATUS_OK, resp);
}

/* ---- /contexts ---------------------------------------------------------------------------- */

/* sbx's {context_id, language, cwd} as E2B's {id, language, cwd}. */
static json_t *context_e2b(const json_t *c)
{
	return json_pack("{s:O,s:O,s:O}", "id", json_object_get(c, "context_id"), "language",
			 json_object_get(c, "language"), "cwd", json_object_get(c, "cwd"));
}

/* Default contexts: E2B's server starts one for python and one for
 * javascript with itself, and its SDK's listCodeContexts() shows them. Here
 * a default context's id is its language's name (the bridge's, which starts
 * its kernel on first use: code_bridge.py), so that the list names it before
 * any kernel runs, or any bridge. javascript is listed where node is there
 * to run it: code-interpreter-v1 is the host template, which shows the
 * host's /usr. */
#define DEFAULT_CWD "/home/user" /* the bridge's default in a sandbox with E2B's user */

static bool has_node(void)
{
	static const char *const paths[] = {"/usr/local/bin/node", "/usr/bin/node"};
	for (size_t i = 0; i < ARRAY_SIZE(paths); i++)
		if (access(paths[i], X_OK) == 0)
			return true;
	return false;
}

static bool is_default_id(const char *id)
{
	return streq(id, "python") || streq(id, "javascript");
}

/* Adds to list (E2B's contexts) the default contexts it lacks. */
static void add_defaults(json_t *list)
{
	const char *langs[] = {"python", has_node() ? "javascript" : NULL};
	for (size_t i = 0; i < ARRAY_SIZE(langs) && langs[i]; i++) {
		bool there = false;
		size_t k;
		json_t *c;
		json_array_foreach(list, k, c) there = there || streq(json_str(c, "id") ?: "", langs[i]);
		if (!there)
			json_array_append_new(list, json_pack("{s:s,s:s,s:s}", "id", langs[i], "language",
							      langs[i], "cwd", DEFAULT_CWD));
	}
}

http_result e2b_code_contexts(http_request *req)
{
	sbx_ctx *ctx = e2b_req_ctx(req);
	const char *sb = e2b_req_sandbox(req), *p = req->path + strlen("/contexts");
	bool post = streq(req->method, "POST");
	_cleanup_err_ sbx_err *e = NULL;
	_cleanup_json_ json_t *out = NULL;
	if (!*p) {
		if (post) {
			http_result ret = HTTP_CLOSE;
			_cleanup_json_ json_t *b = body_object(req, &ret);
			if (!b)
				return ret;
			const char *lang, *cwd;
			if (!opt_str(b, "language", &lang) || !opt_str(b, "cwd", &cwd))
				return e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST,
							 "language, cwd: strings");
			http_request_busy(req, true);
			int r = sbx_context_create(ctx, sb, lang, cwd, &out, &e);
			http_request_busy(req, false);
			return r < 0 ? reply_sbx_error(req, e)
				     : e2b_reply_json(req, HTTP_STATUS_OK, context_e2b(out));
		}
		if (streq(req->method, "GET")) {
			if (sbx_context_list(ctx, sb, &out, &e) < 0)
				return reply_sbx_error(req, e);
			json_t *list = json_array();
			size_t i;
			json_t *c;
			json_array_foreach(json_object_get(out, "contexts"), i, c)
			    json_array_append_new(list, context_e2b(c));
			add_defaults(list);
			return e2b_reply_json(req, HTTP_STATUS_OK, list);
		}
		return e2b_reply_message(req, HTTP_STATUS_METHOD_NOT_ALLOWED, "/contexts: GET or POST");
	}
	/* /contexts/{id}[/restart]: the library checks the id's characters. */
	char id[256];
	size_t n = *p == '/' ? strcspn(p + 1, "/") : 0;
	if (n == 0 || n >= sizeof(id))
		return e2b_reply_message(req, HTTP_STATUS_NOT_FOUND, "no such context call");
	memcpy(id, p + 1, n);
	id[n] = 0;
	const char *rest = p + 1 + n;
	int r;
	http_request_busy(req, true);
	if (!*rest && streq(req->method, "DELETE"))
		r = sbx_context_remove(ctx, sb, id, &e);
	else if (streq(rest, "/restart") && post)
		r = sbx_context_restart(ctx, sb, id, &e);
	else {
		http_request_busy(req, false);
		return e2b_reply_message(req, HTTP_STATUS_NOT_FOUND, "no such context call");
	}
	http_request_busy(req, false);
	/* A default context whose bridge does not run yet: nothing to restart or
	 * remove (the next run starts it fresh). */
	if (r < 0 && sbx_err_code(e) == SBX_E_NOT_FOUND && is_default_id(id))
		r = 0;
	return r < 0 ? reply_sbx_error(req, e) : http_respond(req, 204, http_response_empty());
}

bool e2b_code_match(const http_request *req)
{
	return e2b_req_sandbox(req) && e2b_req_port(req) == E2B_CODE_PORT;
}

void e2b_req_state_done(http_request *req)
{
	e2b_req_state *s = req->state;
	req->state = NULL;
	if (!s)
		return;
	http_request_busy(req, false); /* a handler lifted the idle timeout: keep-alive gets it back */
	if (s->free)
		s->free(s);
}
