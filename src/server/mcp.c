/* MCP method handlers (see mcp.h): the handshake, discovery, tools/list,
 * tools/call and the dotted environment-control methods, with concurrent
 * calls, cancellation and progress. */
#include "server/mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/jsonrpc.h"
#include "server/tools.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/thread.h"

/* Oldest first; initialize echoes the client's if listed, else the latest
 * handshake revision. */
static const char *const handshake_versions[] = {"2025-03-26", "2025-06-18", "2025-11-25"};
#define LATEST_HANDSHAKE_VERSION "2025-11-25"
/* The stateless revision names itself in each request's _meta. */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define PROGRESS_MESSAGE_MAX (64 * 1024)

static const char instructions[] =
    "sbx gives you isolated Linux environments to run commands in. Call environment_create once "
    "and keep its environment_id; then use environment_execute to run commands (a shell string in "
    "'command'), environment_write_file / environment_read_file / environment_list_files for files. "
    "State (files, installed packages) persists between calls in the same environment, so reuse it for "
    "related steps and call environment_destroy when finished. A command that exits non-zero is a "
    "normal result: read exit_code and stderr. isError results mean sbx could not do what was asked; "
    "structuredContent.error.message says what to fix. Environments have no network access.";

typedef struct mcp_call mcp_call;

struct mcp_server {
	sbx_ctx *ctx;
	bool threaded;
	atomic_bool initialized;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	mcp_call *inflight; /* under lock */
	unsigned n_inflight;
};

struct mcp_call {
	mcp_server *s;
	mcp_sink sink;
	json_t *msg; /* owned: the request; id and token borrow from it */
	json_t *id;
	const tool *t;
	bool as_method; /* a dotted JSON-RPC method: result = structuredContent */
	bool stateless; /* 2026-07-28: results carry resultType */
	json_t *args;	/* owned */
	json_t *progress_token;
	int cancel[2];
	bool cancelled; /* under s->lock */
	mcp_call *next;
	/* Progress (touched only by the worker thread). */
	char *pend;
	size_t pend_len, dropped;
	uint64_t total;
	int64_t last_us;
};

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void send_msg(const mcp_sink *sink, json_t *msg)
{
	if (msg && sink && sink->send)
		sink->send(sink->userdata, msg);
	json_decref(msg);
}

/* ---- server lifetime ------------------------------------------------------ */

int mcp_server_new(sbx_ctx *ctx, bool threaded, mcp_server **ret, sbx_err **err)
{
	if (tools_init() < 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "built-in tool schemas: %s", tools_init_error());
	mcp_server *s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	s->ctx = ctx;
	s->threaded = threaded;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	*ret = s;
	return 0;
}

void mcp_server_free(mcp_server *s)
{
	if (!s)
		return;
	mcp_server_wait(s);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->idle);
	free(s);
}

void mcp_server_wait(mcp_server *s)
{
	pthread_mutex_lock(&s->lock);
	while (s->n_inflight > 0)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

bool mcp_server_wait_for(mcp_server *s, int timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->lock);
	while (s->n_inflight > 0 && pthread_cond_timedwait(&s->idle, &s->lock, &until) == 0)
		;
	bool idle = s->n_inflight == 0;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

static void cancel_locked(mcp_call *c)
{
	if (c->cancelled)
		return;
	c->cancelled = true;
	if (c->cancel[1] >= 0)
		(void)!write(c->cancel[1], "x", 1);
}

void mcp_server_cancel_all(mcp_server *s)
{
	pthread_mutex_lock(&s->lock);
	for (mcp_call *c = s->inflight; c; c = c->next)
		cancel_locked(c);
	pthread_mutex_unlock(&s->lock);
}

static void cancel_request(mcp_server *s, const json_t *request_id)
{
	if (!request_id)
		return;
	pthread_mutex_lock(&s->lock);
	for (mcp_call *c = s->inflight; c; c = c->next)
		if (json_equal(c->id, (json_t *)request_id))
			cancel_locked(c);
	pthread_mutex_unlock(&s->lock);
}

/* ---- progress ---------------------------------------------------------------- */

/* Length of the longest prefix of p that does not end inside a multi-byte
 * UTF-8 character (the rest waits for the next chunk). */
static size_t utf8_complete_prefix(const char *p, size_t n)
{
	for (size_t k = 1; k <= 3 && k <= n; k++) {
		unsigned char ch = (unsigned char)p[n - k];
		if ((ch & 0xC0) == 0x80)
			continue;
		size_t need = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
		return need > k ? n - k : n;
	}
	return n;
}

/* Text for a JSON string: invalid UTF-8 and NUL become U+FFFD. */
static json_t *text_json(const char *p, size_t n)
{
	json_t *j = memchr(p, 0, n) ? NULL : json_stringn(p, n);
	if (j)
		return j;
	char *o = malloc(n * 3 + 1);
	if (!o)
		return json_string("");
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		unsigned char b = (unsigned char)p[i];
		size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
		bool ok = len > 0 && i + len <= n && b != 0;
		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)p[i + k] >> 6) == 2;
		if (ok && len > 1) {
			json_t *t = json_stringn(p + i, len); /* rejects overlongs and surrogates */
			ok = t != NULL;
			json_decref(t);
		}
		if (ok) {
			memcpy(o + w, p + i, len);
			w += len;
			i += len;
		} else {
			memcpy(o + w, "\xef\xbf\xbd", 3);
			w += 3;
			i++;
		}
	}
	j = json_stringn(o, w);
	free(o);
	return j ? j : json_string("");
}

static void progress_flush(mcp_call *c, bool final)
{
	size_t n = final ? c->pend_len : utf8_complete_prefix(c->pend, c->pend_len);
	if (n == 0 && c->dropped == 0)
		return;
	json_t *msg = text_json(c->pend ? c->pend : "", n);
	if (c->dropped) {
		char note[96];
		snprintf(note, sizeof(note),
			 "%s[... %zu bytes of output not shown here; the result has them ...]\n",
			 n ? "\n" : "", c->dropped);
		json_t *m2 = json_sprintf("%s%s", json_string_value(msg), note);
		if (m2) {
			json_decref(msg);
			msg = m2;
		}
	}
	memmove(c->pend, c->pend + n, c->pend_len - n);
	c->pend_len -= n;
	c->dropped = 0;
	c->last_us = now_us();
	json_t *params = json_pack("{s:O,s:I,s:o}", "progressToken", c->progress_token, "progress",
				   (json_int_t)c->total, "message", msg);
	send_msg(&c->sink, jsonrpc_notification("notifications/progress", params));
}

static void on_output(void *userdata, int stream, const char *buf, size_t len)
{
	mcp_call *c = userdata;
	c->total += len;
	if (!c->pend)
		c->pend = malloc(PROGRESS_MESSAGE_MAX);
	size_t room = c->pend ? PROGRESS_MESSAGE_MAX - c->pend_len : 0;
	size_t take = len < room ? len : room;
	if (take)
		memcpy(c->pend + c->pend_len, buf, take);
	c->pend_len += take;
	c->dropped += len - take;
	if (now_us() - c->last_us >= MCP_PROGRESS_INTERVAL_MS * 1000)
		progress_flush(c, false);
}

/* ---- tool calls ------------------------------------------------------------------ */

static void call_free(mcp_call *c)
{
	if (!c)
		return;
	safe_close(c->cancel[0]);
	safe_close(c->cancel[1]);
	json_decref(c->msg);
	json_decref(c->args);
	free(c->pend);
	free(c);
}

static json_t *with_result_type(json_t *result, bool stateless)
{
	if (result && stateless)
		json_object_set_new(result, "resultType", json_string("complete"));
	return result;
}

/* The isError result of tools/call arguments that do not fit the schema. */
static json_t *bad_arguments_result(const tool *t, const char *why)
{
	_cleanup_free_ char *m = NULL;
	if (asprintf(&m, "invalid arguments for %s: %s", t->name, why ? why : "out of memory") < 0)
		m = NULL;
	return tools_error_result(SBX_E_INVALID_ARGUMENT, m ? m : "invalid arguments");
}

static void call_run(mcp_call *c)
{
	mcp_server *s = c->s;
	tool_call tc = {
	    .ctx = s->ctx,
	    .args = c->args,
	    .cancel_fd = c->cancel[0],
	    .on_output = c->progress_token ? on_output : NULL,
	    .userdata = c,
	};
	json_t *structured = NULL;
	sbx_err *e = NULL;
	int r = c->t->run(&tc, &structured, &e);

	pthread_mutex_lock(&s->lock);
	for (mcp_call **p = &s->inflight; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	bool cancelled = c->cancelled;
	pthread_mutex_unlock(&s->lock);

	json_t *reply = NULL;
	if (cancelled) {
		/* The client gave up on this request: no reply (MCP cancellation),
		 * and nothing it cannot know about may stay behind. */
		if (r >= 0 && c->t->undo)
			c->t->undo(&tc, structured);
	} else if (tc.bad_params && c->as_method) {
		reply = jsonrpc_errorf(c->id, JSONRPC_INVALID_PARAMS, NULL, "invalid arguments for %s: %s",
				       c->t->name, tc.bad_params);
	} else if (tc.bad_params) {
		reply = jsonrpc_result(
		    c->id, with_result_type(bad_arguments_result(c->t, tc.bad_params), c->stateless));
	} else if (r < 0 && c->as_method) {
		sbx_code code = e ? sbx_err_code(e) : SBX_E_INTERNAL;
		reply = jsonrpc_error(c->id, JSONRPC_TOOL_FAILED, sbx_err_message(e),
				      json_pack("{s:s}", "code", sbx_code_name(code)));
	} else if (r < 0) {
		reply = jsonrpc_result(
		    c->id, with_result_type(
			       tools_error_result(e ? sbx_err_code(e) : SBX_E_INTERNAL, sbx_err_message(e)),
			       c->stateless));
	} else if (c->as_method) {
		reply = jsonrpc_result(c->id, with_result_type(json_incref(structured), c->stateless));
	} else {
		reply = jsonrpc_result(
		    c->id, with_result_type(tools_result_of(c->t, json_incref(structured)), c->stateless));
	}
	if (!cancelled) {
		if (c->progress_token && (c->pend_len || c->dropped))
			progress_flush(c, true);
		if (!reply)
			reply = jsonrpc_error(c->id, JSONRPC_INTERNAL_ERROR,
					      "out of memory building the result", NULL);
		send_msg(&c->sink, reply);
		/* Sent to no one (the client died mid-call): it will never know
		 * what the call made, so undo it as a cancelled call is. */
		if (r >= 0 && c->t->undo && c->sink.gone && c->sink.gone(c->sink.userdata))
			c->t->undo(&tc, structured);
	}
	json_decref(structured);
	sbx_err_free(e);
	free(tc.bad_params);
	call_free(c);

	pthread_mutex_lock(&s->lock);
	if (--s->n_inflight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

static void *call_thread(void *arg)
{
	call_run(arg);
	return NULL;
}

/* Takes ownership of c; always answers through c->sink. */
static void call_start(mcp_server *s, mcp_call *c)
{
	if (pipe2(c->cancel, O_CLOEXEC | O_NONBLOCK) < 0) {
		send_msg(&c->sink, jsonrpc_errorf(c->id, JSONRPC_INTERNAL_ERROR, NULL,
						  "cannot start the call: %s", strerror(errno)));
		call_free(c);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (s->n_inflight >= MCP_MAX_INFLIGHT) {
		pthread_mutex_unlock(&s->lock);
		json_t *res;
		const char *msg =
		    "too many calls in flight (the limit is 64): wait for some to finish, then retry";
		if (c->as_method)
			res = jsonrpc_error(c->id, JSONRPC_TOOL_FAILED, msg,
					    json_pack("{s:s}", "code", "limit_exceeded"));
		else
			res = jsonrpc_result(c->id, tools_error_result(SBX_E_LIMIT_EXCEEDED, msg));
		send_msg(&c->sink, res);
		call_free(c);
		return;
	}
	s->n_inflight++;
	c->next = s->inflight;
	s->inflight = c;
	pthread_mutex_unlock(&s->lock);

	if (s->threaded) {
		if (thread_start_detached(call_thread, c, 0) == 0)
			return;
	}
	call_run(c); /* unthreaded, or no thread to be had: serve it here */
}

/* ---- methods ----------------------------------------------------------------------- */

static json_t *server_info(void)
{
	return json_pack("{s:s,s:s,s:s}", "name", "sbx", "title", "sbx sandboxed environments", "version",
			 sbx_version());
}

static json_t *capabilities(void)
{
	return json_pack("{s:{s:b},s:{s:b,s:b}}", "tools", "listChanged", 0, "resources", "subscribe", 0,
			 "listChanged", 0);
}

static json_t *m_initialize(const json_t *params, char **ret_msg)
{
	json_t *v = json_object_get(params, "protocolVersion");
	if (!json_is_string(v)) {
		*ret_msg = strdup(
		    "initialize needs 'protocolVersion' (a string such as \"" LATEST_HANDSHAKE_VERSION "\")");
		return NULL;
	}
	const char *want = json_string_value(v), *got = LATEST_HANDSHAKE_VERSION;
	for (size_t i = 0; i < ARRAY_SIZE(handshake_versions); i++)
		if (streq(want, handshake_versions[i]))
			got = handshake_versions[i];
	return json_pack("{s:s,s:o,s:o,s:s}", "protocolVersion", got, "capabilities", capabilities(),
			 "serverInfo", server_info(), "instructions", instructions);
}

static json_t *m_discover(void)
{
	json_t *versions = json_array();
	for (size_t i = 0; i < ARRAY_SIZE(handshake_versions); i++)
		json_array_append_new(versions, json_string(handshake_versions[i]));
	json_array_append_new(versions, json_string(MCP_STATELESS_VERSION));
	return json_pack("{s:s,s:o,s:s,s:o,s:o,s:s}", "resultType", "complete", "supportedVersions", versions,
			 "protocolVersion", MCP_STATELESS_VERSION, "capabilities", capabilities(),
			 "serverInfo", server_info(), "instructions", instructions);
}

/* A 2026-07-28 request: its own _meta names the revision, no handshake. */
static bool is_stateless(const json_t *params)
{
	json_t *meta = json_object_get(params, "_meta");
	const char *v = json_str(meta, META_PROTOCOL_VERSION);
	return v && streq(v, MCP_STATELESS_VERSION);
}

/* ---- resources: snapshot manifests as sbx://snapshots/<digest> ------------------ */

#define SNAPSHOT_URI_PREFIX "sbx://snapshots/"
#define TRACE_URI_PREFIX "sbx://traces/"
#define MCP_RESOURCE_NOT_FOUND (-32002) /* MCP: resources/read of an unknown uri */

static json_t *m_resources_list(mcp_server *s, json_t *id)
{
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_snapshot_list(s->ctx, &j, &e) < 0) {
		json_t *r = jsonrpc_errorf(id, JSONRPC_INTERNAL_ERROR, NULL, "cannot list the snapshots: %s",
					   sbx_err_message(e));
		sbx_err_free(e);
		return r;
	}
	json_t *a = json_array();
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(j, "snapshots"), i, v)
	{
		const char *sid = json_str(v, "snapshot_id"), *label = json_str(v, "label");
		if (!sid || strlen(sid) < 19)
			continue;
		char name[160], desc[512];
		snprintf(name, sizeof(name), "%s", label ? label : sid + 7);
		if (!label)
			name[12] = 0;
		snprintf(desc, sizeof(desc),
			 "Snapshot manifest (layers, template, env, parent, created_at) of %s, created %s, "
			 "%lld bytes. "
			 "Pass its snapshot_id to environment_create (fork), environment_restore or "
			 "environment_diff.",
			 sid, json_str(v, "created_at") ?: "?", (long long)json_int(v, "size_bytes", 0));
		json_t *r = json_pack("{s:s++,s:s,s:s,s:s}", "uri", SNAPSHOT_URI_PREFIX, sid, "", "name",
				      name, "mimeType", "application/json", "description", desc);
		if (r) {
			json_object_set_new(r, "title", json_sprintf("Snapshot %s", name));
			json_array_append_new(a, r);
		}
	}
	json_decref(j);
	j = NULL;
	/* Traces: the manifest (snapshot, command, determinism, digests of
	 * outputs, recorder, lost events); the events via sbx://traces/<id>/events. */
	if (sbx_trace_list(s->ctx, &j, &e) == 0) {
		json_array_foreach(json_object_get(j, "traces"), i, v)
		{
			const char *tid = json_str(v, "trace_id");
			if (!tid || strlen(tid) < 19)
				continue;
			_cleanup_free_ char *cmdline = json_join_strings(json_object_get(v, "argv"), "", ' ');
			char desc[768];
			snprintf(desc, sizeof(desc),
				 "Trace of '%.200s' in environment %s from snapshot %.19s, recorded %s: %lld "
				 "syscalls, "
				 "%lld lost. Pass its trace_id to environment_replay. Events (strace-like "
				 "text): %s%s/events",
				 cmdline ? cmdline : "?", json_str(v, "environment_id") ?: "?",
				 json_str(v, "snapshot_id") ?: "?", json_str(v, "created_at") ?: "?",
				 (long long)json_int(v, "syscalls", 0), (long long)json_int(v, "lost", 0),
				 TRACE_URI_PREFIX, tid);
			json_t *r =
			    json_pack("{s:s+,s:s+,s:s,s:s}", "uri", TRACE_URI_PREFIX, tid, "name", "trace ",
				      tid + 7, "mimeType", "application/json", "description", desc);
			if (r) {
				json_object_set_new(r, "title", json_sprintf("Trace %.12s", tid + 7));
				json_array_append_new(a, r);
			}
		}
		json_decref(j);
	} else
		sbx_err_free(e);
	return jsonrpc_result(id, json_pack("{s:o}", "resources", a));
}

static json_t *m_resources_templates(json_t *id)
{
	return jsonrpc_result(
	    id, json_pack(
		    "{s:[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}]}",
		    "resourceTemplates", "uriTemplate", SNAPSHOT_URI_PREFIX "{snapshot_id}", "name",
		    "snapshot", "title", "Snapshot manifest", "mimeType", "application/json", "description",
		    "The manifest of a snapshot, by snapshot_id (sha256:<hex>), as listed by snapshot_list.",
		    "uriTemplate", TRACE_URI_PREFIX "{trace_id}", "name", "trace", "title", "Trace manifest",
		    "mimeType", "application/json", "description",
		    "The manifest of a trace (trace_id from environment_execute with trace: true).",
		    "uriTemplate", TRACE_URI_PREFIX "{trace_id}/events", "name", "trace-events", "title",
		    "Trace events", "mimeType", "text/plain", "description",
		    "Every recorded system call, process event and determinism substitution, strace-like."));
}

static bool digest_ok(const char *d)
{
	if (!startswith(d, "sha256:") || strlen(d) != 71)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

#define TRACE_EVENTS_TEXT_MAX (16u << 20)

/* sbx://traces/<id> (manifest) and sbx://traces/<id>/events (text). */
static json_t *read_trace(mcp_server *s, json_t *id, json_t *uri, const char *rest)
{
	char tid[72];
	bool events = strlen(rest) == 71 + 7 && streq(rest + 71, "/events");
	snprintf(tid, sizeof(tid), "%.71s", rest);
	sbx_err *e = NULL;
	_cleanup_free_ char *text = NULL;
	const char *mime = "application/json";
	if (!digest_ok(tid) || (strlen(rest) != 71 && !events))
		goto not_found;
	if (events) {
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		if (!f)
			return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
		int r = sbx_trace_show(s->ctx, tid, NULL, f, &e);
		fclose(f);
		if (r < 0)
			goto not_found;
		if (len > TRACE_EVENTS_TEXT_MAX)
			strcpy(text + TRACE_EVENTS_TEXT_MAX - 64, "\n... (truncated: use sbx trace show)\n");
		mime = "text/plain";
	} else {
		json_t *man = NULL;
		if (sbx_trace_manifest(s->ctx, tid, &man, &e) < 0)
			goto not_found;
		text = json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(man);
	}
	if (!text)
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	json_t *c = json_pack("{s:O,s:s,s:s}", "uri", uri, "mimeType", mime, "text", text);
	if (!c) /* not UTF-8: carried escaped */
		c = json_pack("{s:O,s:s,s:o}", "uri", uri, "mimeType", mime, "text",
			      json_stringn_nocheck(text, strlen(text)));
	return jsonrpc_result(id, json_pack("{s:[o]}", "contents", c));
not_found:
	sbx_err_free(e);
	return jsonrpc_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found",
			     json_pack("{s:O}", "uri", uri));
}

static json_t *m_resources_read(mcp_server *s, json_t *id, const json_t *params)
{
	json_t *uri = json_object_get(params, "uri");
	if (!json_is_string(uri))
		return jsonrpc_error(
		    id, JSONRPC_INVALID_PARAMS,
		    "invalid params for resources/read: 'uri' must be a string (from resources/list)", NULL);
	const char *u = json_string_value(uri);
	json_t *man = NULL;
	sbx_err *e = NULL;
	if (startswith(u, TRACE_URI_PREFIX))
		return read_trace(s, id, uri, u + strlen(TRACE_URI_PREFIX));
	if (!startswith(u, SNAPSHOT_URI_PREFIX) || !digest_ok(u + strlen(SNAPSHOT_URI_PREFIX)) ||
	    sbx_snapshot_manifest(s->ctx, u + strlen(SNAPSHOT_URI_PREFIX), &man, &e) < 0) {
		json_t *r = jsonrpc_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found",
					  json_pack("{s:O}", "uri", uri));
		sbx_err_free(e);
		return r;
	}
	_cleanup_free_ char *text = json_dumps(man, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(man);
	if (!text)
		return jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL);
	return jsonrpc_result(id, json_pack("{s:[{s:O,s:s,s:s}]}", "contents", "uri", uri, "mimeType",
					    "application/json", "text", text));
}

static void handle_request(mcp_server *s, json_t *msg, const jsonrpc_msg *m, const mcp_sink *sink)
{
	const char *method = m->method;
	json_t *params = m->params;
	json_t *id = m->id;
	if (params && !json_is_object(params)) {
		send_msg(sink, jsonrpc_errorf(id, JSONRPC_INVALID_PARAMS, NULL,
					      "invalid params for %s: 'params' must be an object", method));
		return;
	}
	bool stateless = is_stateless(params);
	/* NUL (\u0000) is accepted by the parser; no protocol field can carry it.
	 * Tool arguments are checked field by field by tools_validate. */
	{
		static const char *const tool_args[] = {"arguments", NULL};
		const tool *dt = tools_find(method);
		bool dotted = dt && dt->alias && streq(dt->alias, method);
		_cleanup_free_ char *where = NULL;
		int nul = dotted
			      ? 0
			      : json_find_nul(params, streq(method, "tools/call") ? tool_args : NULL, &where);
		if (nul != 0) {
			send_msg(sink, nul < 0
					   ? jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL)
					   : jsonrpc_errorf(id, JSONRPC_INVALID_PARAMS, NULL,
							    "invalid params for %s: 'params.%s' contains NUL "
							    "(\\u0000), which it cannot carry",
							    method, where));
			return;
		}
	}

	if (streq(method, "initialize")) {
		_cleanup_free_ char *why = NULL;
		json_t *res = m_initialize(params, &why);
		if (!res) {
			send_msg(sink, jsonrpc_errorf(id, JSONRPC_INVALID_PARAMS, NULL, "%s",
						      why ? why : "out of memory"));
			return;
		}
		atomic_store(&s->initialized, true);
		send_msg(sink, jsonrpc_result(id, res));
		return;
	}
	if (streq(method, "ping")) {
		send_msg(sink, jsonrpc_result(id, with_result_type(json_object(), stateless)));
		return;
	}
	if (streq(method, "server/discover")) {
		send_msg(sink, jsonrpc_result(id, m_discover()));
		return;
	}
	if (!atomic_load(&s->initialized) && !stateless) {
		send_msg(sink,
			 jsonrpc_errorf(id, JSONRPC_SERVER_NOT_INITIALIZED, NULL,
					"server not initialized: send 'initialize' first (or use protocol "
					"revision %s, with _meta {\"%s\": \"%s\"} in each request)",
					MCP_STATELESS_VERSION, META_PROTOCOL_VERSION, MCP_STATELESS_VERSION));
		return;
	}
	if (streq(method, "tools/list")) {
		json_t *tl = tools_list_json();
		send_msg(sink,
			 tl ? jsonrpc_result(id, with_result_type(json_pack("{s:o}", "tools", tl), stateless))
			    : jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "cannot list the tools", NULL));
		return;
	}

	if (streq(method, "resources/list") || streq(method, "resources/templates/list") ||
	    streq(method, "resources/read")) {
		json_t *r = streq(method, "resources/list")   ? m_resources_list(s, id)
			    : streq(method, "resources/read") ? m_resources_read(s, id, params)
							      : m_resources_templates(id);
		json_t *res = json_object_get(r, "result");
		if (res)
			with_result_type(res, stateless);
		send_msg(sink, r ? r : jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL));
		return;
	}

	const tool *t = NULL;
	json_t *args = NULL;
	bool as_method = false;
	json_t *meta = json_object_get(params, "_meta");
	if (streq(method, "tools/call")) {
		json_t *name = json_object_get(params, "name");
		if (!json_is_string(name)) {
			send_msg(sink, jsonrpc_error(
					   id, JSONRPC_INVALID_PARAMS,
					   "invalid params for tools/call: 'name' must be a string naming a "
					   "tool from tools/list",
					   NULL));
			return;
		}
		t = tools_find(json_string_value(name));
		if (!t) {
			send_msg(sink,
				 jsonrpc_errorf(id, JSONRPC_INVALID_PARAMS, NULL,
						"Unknown tool: '%s'; call tools/list for the available tools",
						json_string_value(name)));
			return;
		}
		args = json_object_get(params, "arguments");
		if (args && !json_is_object(args)) {
			send_msg(sink, jsonrpc_errorf(
					   id, JSONRPC_INVALID_PARAMS, NULL,
					   "invalid params for tools/call: 'arguments' must be an object"));
			return;
		}
		if (args)
			json_incref(args);
		else
			args = json_object();
	} else if ((t = tools_find(method)) && streq(t->alias, method)) {
		/* Dotted method: params are the arguments (less _meta). */
		as_method = true;
		args = params ? json_copy(params) : json_object();
		if (args)
			json_object_del(args, "_meta");
	} else {
		send_msg(sink, jsonrpc_errorf(
				   id, JSONRPC_METHOD_NOT_FOUND, NULL,
				   "method not found: '%s' (this server implements initialize, ping, "
				   "server/discover, tools/list, tools/call, resources/list, resources/read, "
				   "resources/templates/list and the environment.* methods)",
				   method));
		return;
	}
	if (!args) {
		send_msg(sink, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL));
		return;
	}
	_cleanup_free_ char *why = NULL;
	if (tools_validate(t, args, &why) < 0) {
		/* tools/call: a tool execution error the model can correct (MCP
		 * 2025-11-25: input validation errors are isError results); a plain
		 * JSON-RPC method: -32602. Either names the field. */
		send_msg(sink, as_method ? jsonrpc_errorf(id, JSONRPC_INVALID_PARAMS, NULL,
							  "invalid arguments for %s: %s", t->name,
							  why ? why : "out of memory")
					 : jsonrpc_result(id, with_result_type(bad_arguments_result(t, why),
									       stateless)));
		json_decref(args);
		return;
	}
	mcp_call *c = calloc(1, sizeof(*c));
	if (!c) {
		json_decref(args);
		send_msg(sink, jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "out of memory", NULL));
		return;
	}
	*c = (mcp_call){
	    .s = s,
	    .sink = *sink,
	    .msg = json_incref(msg),
	    .id = id,
	    .t = t,
	    .as_method = as_method,
	    .stateless = stateless,
	    .args = args,
	    .cancel = {-1, -1},
	};
	json_t *token = json_object_get(meta, "progressToken");
	if (json_is_string(token) || json_is_integer(token))
		c->progress_token = token;
	call_start(s, c);
}

static void handle_notification(mcp_server *s, const jsonrpc_msg *m)
{
	if (streq(m->method, "notifications/initialized"))
		atomic_store(&s->initialized, true);
	else if (streq(m->method, "notifications/cancelled"))
		cancel_request(s, json_object_get(m->params, "requestId"));
	/* Other notifications need nothing from us. */
}

void mcp_server_handle_json(mcp_server *s, json_t *msg, const mcp_sink *sink)
{
	jsonrpc_msg m;
	json_t *error = NULL;
	if (jsonrpc_classify(msg, &m, &error) < 0) {
		send_msg(sink, error);
		return;
	}
	switch (m.kind) {
	case JSONRPC_REQUEST:
		handle_request(s, msg, &m, sink);
		break;
	case JSONRPC_NOTIFICATION:
		handle_notification(s, &m);
		break;
	case JSONRPC_RESPONSE:
		break; /* we send no requests; stray replies are dropped */
	}
}

void mcp_server_handle(mcp_server *s, const char *buf, size_t len, const mcp_sink *sink)
{
	json_t *msg = NULL, *error = NULL;
	int r = jsonrpc_parse(buf, len, &msg, &error);
	if (r < 0) {
		send_msg(sink, error);
		return;
	}
	if (r > 0)
		return;
	mcp_server_handle_json(s, msg, sink);
	json_decref(msg);
}
