/* MCP over Streamable HTTP (see http_mcp.h): a route family of http_server.h.
 *
 * Threads: each request runs on its connection's thread; each POST of a
 * request gets its own mcp_server (cheap: a mutex and a list), whose tool
 * calls run on worker threads and answer through a sink into this request's
 * mcp_req. The connection thread waits for the answer while watching the
 * client's socket: if the client hangs up, the call is cancelled (and its
 * undo runs), so a vanished client leaves nothing behind. A server per
 * request also scopes cancellation: JSON-RPC ids are only unique within one
 * client, so a notifications/cancelled is matched against the requests of
 * its own session only.
 *
 * Sessions are transport state only (an id, a last-use time): everything
 * that matters lives in environment ids. A request needs a session unless it
 * is initialize (which makes one), a stateless 2026-07-28 request,
 * server/discover, or a plain JSON-RPC dotted method.
 *
 * Reply shape: application/json with the JSON-RPC response, or
 * text/event-stream when the client accepts it and the request carries a
 * progressToken (progress notifications, then the response, then the end of
 * the stream). Notifications and responses from the client get 202. */
#include "server/http_mcp.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <time.h>

#include "server/http_parse.h"
#include "server/jsonrpc.h"
#include "server/mcp.h"
#include "server/reaper.h"
#include "server/session_policy.h"
#include "server/tools.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

#define HTTP_PATH HTTP_MCP_PATH
#define HTTP_MAX_BODY JSONRPC_MAX_MESSAGE /* larger bodies: 413 */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
/* Session table (session_policy.h; docs/server.md "Sessions"); one peer may
 * hold a quarter of it unless told otherwise. */
#define HTTP_MAX_SESSIONS 1024
#define HTTP_SESSION_IDLE_US ((int64_t)3600 * 1000000) /* a session unused this long expires */
/* An established session idle this long may give way to a newcomer: as
 * long as an idle keep-alive connection is kept (http_server.c HTTP_IDLE_TIMEOUT_S). */
#define HTTP_SESSION_MIN_IDLE_S 60
#define HTTP_SSE_BLOCK (32 * 1024)
/* Progress events a stream may hold unsent (a client that does not read):
 * past this they are dropped (the result has the whole output). */
#define HTTP_SSE_QUEUE_MAX ((size_t)1 << 20)
#define SESSION_ID_HEX 32 /* 128 random bits */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"

/* JSON-RPC codes of transport-level errors (the TypeScript SDK's server
 * uses the same -32000/-32001), and of a request cancelled before it could
 * answer (LSP's RequestCancelled). */
enum {
	HTTP_ERR_TRANSPORT = -32000,
	HTTP_ERR_SESSION_NOT_FOUND = -32001,
	HTTP_ERR_REQUEST_CANCELLED = -32800,
};

/* Revisions a client may name in the MCP-Protocol-Version header. */
static const char *const http_versions[] = {"2025-03-26", "2025-06-18", "2025-11-25", MCP_STATELESS_VERSION};

typedef struct sse_chunk {
	struct sse_chunk *next;
	size_t len;
	char data[]; /* "event: message\ndata: {...}\n\n" */
} sse_chunk;

typedef struct mcp_req mcp_req;

/* MCP's state on the HTTP server (the family's data). */
typedef struct http_mcp {
	sbx_ctx *ctx;
	char *token; /* NULL: no authentication */
	size_t token_len;
	pthread_mutex_t lock; /* guards everything below */
	/* The session table: n_sessions entries of two parallel arrays of
	 * sess_lim.max (the policy reads the metadata as one array). */
	session_meta *sess_meta;
	char (*sess_id)[SESSION_ID_HEX + 1];
	size_t n_sessions;
	session_limits sess_lim;
	mcp_req *active; /* POSTs whose call is in flight */
	bool stopping;
} http_mcp;

/* One POST, from its body to the end of its response (the request's
 * state). Owned by the connection thread; other threads reach it only
 * through hs->active (under hs->lock, to flag it cancelled) and through the
 * sink (under lock). */
struct mcp_req {
	http_mcp *hs;
	http_request *req;
	/* The call. */
	mcp_server *srv;
	char sid[SESSION_ID_HEX + 1]; /* the session it holds a reference on, "" if none */
	json_t *id;
	bool sse;
	int client_fd;
	int wake_fd;	       /* eventfd: the sink or a canceller has news */
	atomic_bool cancelled; /* by notifications/cancelled, DELETE or shutdown */
	bool hangup;	       /* the client went away (connection thread only) */
	bool ended;	       /* cancelled and waited for (connection thread only) */
	bool registered;       /* in hs->active */
	mcp_req *next;
	/* Filled by the sink. */
	pthread_mutex_t lock;
	bool answered;	  /* the JSON-RPC response came */
	bool result;	  /* ... and it is a result, not an error */
	char *response;	  /* JSON mode: the response */
	sse_chunk *head;  /* SSE mode: events not yet sent */
	sse_chunk **tail; /* SSE mode */
	size_t queued;	  /* SSE mode: bytes in head..tail */
	/* SSE output in progress (connection thread only). */
	sse_chunk *cur;
	size_t cur_off;
};

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- pure checks ----------------------------------------------------------------- */

static bool version_supported(const char *v)
{
	for (size_t i = 0; i < ARRAY_SIZE(http_versions); i++)
		if (streq(v, http_versions[i]))
			return true;
	return false;
}

static bool authorized(const http_mcp *hs, const char *header)
{
	if (!hs->token)
		return true;
	const char *t;
	size_t n;
	return http_bearer_token(header, &t, &n) && http_token_equal(t, n, hs->token, hs->token_len);
}

static bool meta_stateless(const json_t *params)
{
	const char *v = json_str(json_object_get(params, "_meta"), META_PROTOCOL_VERSION);
	return v && streq(v, MCP_STATELESS_VERSION);
}

/* Requests that may come without a session. */
static bool sessionless_method(const char *method)
{
	if (streq(method, "server/discover"))
		return true;
	const tool *t = tools_find(method); /* a plain JSON-RPC dotted method */
	return t && t->alias && streq(t->alias, method);
}

/* ---- sessions (all under hs->lock) ------------------------------------------------- */

static void session_drop_locked(http_mcp *hs, size_t i)
{
	size_t last = --hs->n_sessions;
	if (i != last) {
		hs->sess_meta[i] = hs->sess_meta[last];
		memcpy(hs->sess_id[i], hs->sess_id[last], sizeof(hs->sess_id[i]));
	}
}

/* Drops the expired sessions, then returns the index of session id, or -1.
 * An index is valid until the lock is released. */
static ssize_t session_find_locked(http_mcp *hs, const char *id)
{
	int64_t now = now_us();
	for (size_t i = hs->n_sessions; i-- > 0;) /* backwards: a drop moves in one already seen */
		if (session_expired(&hs->sess_meta[i], now, hs->sess_lim.ttl_us))
			session_drop_locked(hs, i);
	for (size_t i = 0; i < hs->n_sessions; i++)
		if (streq(hs->sess_id[i], id))
			return (ssize_t)i;
	return -1;
}

/* Makes a session for a client at peer, if the policy seats it (evicting
 * an idle session if it says so: that client's next call gets 404). Returns 0 and its id in ret_id; -1
 * with the refusal in *ret_refusal; -2 if no random id could be made. */
static int session_create_locked(http_mcp *hs, const session_peer *peer, char ret_id[SESSION_ID_HEX + 1],
				 session_decision *ret_refusal)
{
	(void)session_find_locked(hs, ""); /* drops the expired ones */
	int64_t now = now_us();
	session_decision d = session_admit(hs->sess_meta, hs->n_sessions, peer, &hs->sess_lim, now);
	if (d.verdict == SESSION_REFUSE_PEER || d.verdict == SESSION_REFUSE_FULL) {
		*ret_refusal = d;
		return -1;
	}
	unsigned char rnd[SESSION_ID_HEX / 2];
	size_t got = 0;
	while (got < sizeof(rnd)) {
		ssize_t n = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -2;
		got += (size_t)n;
	}
	if (d.verdict == SESSION_EVICT)
		session_drop_locked(hs, d.victim);
	size_t i = hs->n_sessions++;
	for (size_t k = 0; k < sizeof(rnd); k++)
		snprintf(hs->sess_id[i] + 2 * k, 3, "%02x", rnd[k]);
	hs->sess_meta[i] = (session_meta){.last_used_us = now, .peer = *peer};
	memcpy(ret_id, hs->sess_id[i], sizeof(hs->sess_id[i]));
	return 0;
}

/* ---- requests ------------------------------------------------------------------------ */

static void req_poke(mcp_req *r)
{
	(void)!eventfd_write(r->wake_fd, 1);
}

static void req_cancel_locked(mcp_req *r)
{
	atomic_store(&r->cancelled, true);
	req_poke(r);
}

/* The sink of r's mcp_server: keeps the response (and, on a stream, the
 * progress notifications before it). Runs on worker threads. */
static void req_send(void *userdata, const json_t *msg)
{
	mcp_req *r = userdata;
	bool is_response = !json_object_get(msg, "method");
	if (!is_response && !r->sse)
		return; /* progress with nowhere to go: the result has the output */
	char *s = jsonrpc_dump(msg);
	sse_chunk *c = NULL;
	if (s && r->sse) {
		size_t n = strlen(s);
		c = malloc(sizeof(*c) + n + 32);
		if (c) {
			c->next = NULL;
			c->len = (size_t)sprintf(c->data, "event: message\ndata: %s\n\n", s);
		}
		free(s);
		s = NULL;
	}
	pthread_mutex_lock(&r->lock);
	if (!r->answered) {
		if (c && (is_response || r->queued + c->len <= HTTP_SSE_QUEUE_MAX)) {
			*r->tail = c;
			r->tail = &c->next;
			r->queued += c->len;
			c = NULL;
		} else if (s && !r->sse) {
			r->response = s;
			s = NULL;
		}
		if (is_response) {
			r->answered = true;
			r->result = json_object_get(msg, "result") != NULL;
		}
	}
	pthread_mutex_unlock(&r->lock);
	free(c);
	free(s);
	req_poke(r);
}

static mcp_req *req_new(http_mcp *hs, http_request *req)
{
	mcp_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake_fd < 0) {
		free(r);
		return NULL;
	}
	r->hs = hs;
	r->req = req;
	r->client_fd = -1;
	r->tail = &r->head;
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

static void req_free(mcp_req *r)
{
	if (!r)
		return;
	http_mcp *hs = r->hs;
	pthread_mutex_lock(&hs->lock);
	if (r->registered)
		for (mcp_req **p = &hs->active; *p; p = &(*p)->next)
			if (*p == r) {
				*p = r->next;
				break;
			}
	if (r->sid[0]) {
		ssize_t i = session_find_locked(hs, r->sid);
		if (i >= 0) {
			hs->sess_meta[i].active--;
			hs->sess_meta[i].last_used_us = now_us();
		}
	}
	pthread_mutex_unlock(&hs->lock);
	if (r->srv) {
		pthread_mutex_lock(&r->lock);
		bool answered = r->answered;
		pthread_mutex_unlock(&r->lock);
		if (!answered) /* the client left mid-call: nothing may stay behind */
			mcp_server_cancel_all(r->srv);
		mcp_server_free(r->srv); /* waits for the call: no sink call after this */
	}
	free(r->cur);
	for (sse_chunk *c = r->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	free(r->response);
	json_decref(r->id);
	safe_close(r->wake_fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Blocks until the sink has something (sse: an event or the response; else
 * the response), or the client hangs up, or the request is cancelled; in
 * the last two cases cancels the call and waits until it has ended
 * (r->ended). */
static void req_wait(mcp_req *r, bool sse)
{
	for (;;) {
		pthread_mutex_lock(&r->lock);
		bool ready = r->answered || (sse && r->head);
		pthread_mutex_unlock(&r->lock);
		if (ready)
			return;
		if (r->hangup || atomic_load(&r->cancelled)) {
			mcp_server_cancel_all(r->srv);
			mcp_server_wait(r->srv);
			r->ended = true;
			return;
		}
		struct pollfd p[2] = {{.fd = r->wake_fd, .events = POLLIN},
				      {.fd = r->client_fd, .events = POLLRDHUP}};
		if (poll(p, r->client_fd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			r->hangup = true; /* cannot watch the client: give up on it */
			continue;
		}
		if (p[0].revents & POLLIN) {
			eventfd_t v;
			(void)!eventfd_read(r->wake_fd, &v);
		}
		if (r->client_fd >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR)))
			r->hangup = true;
	}
}

/* ---- responses ------------------------------------------------------------------------ */

/* A response whose body is the JSON message msg (stolen). */
static http_response *json_response(json_t *msg)
{
	char *s = msg ? jsonrpc_dump(msg) : NULL;
	json_decref(msg);
	if (!s)
		return NULL;
	http_response *resp = http_response_buffer(s, strlen(s));
	if (!resp)
		return NULL;
	http_response_header(resp, "Content-Type", "application/json");
	return resp;
}

static http_response *error_response(int code, const char *fmt, ...) _printf_(2, 3);
static http_response *error_response(int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_response(jsonrpc_error(NULL, code, msg, NULL));
}

/* The server's own refusals (403 Origin, 413 body) as JSON-RPC errors. */
static http_result mcp_error(http_request *req, unsigned status, const char *msg)
{
	return http_respond(req, status, error_response(HTTP_ERR_TRANSPORT, "%s", msg));
}

/* ---- SSE ------------------------------------------------------------------------------ */

static ssize_t sse_read(void *cls, char *buf, size_t max)
{
	mcp_req *r = cls;
	for (;;) {
		if (r->cur) {
			size_t n = r->cur->len - r->cur_off;
			if (n > max)
				n = max;
			memcpy(buf, r->cur->data + r->cur_off, n);
			r->cur_off += n;
			if (r->cur_off == r->cur->len) {
				free(r->cur);
				r->cur = NULL;
				r->cur_off = 0;
			}
			return (ssize_t)n;
		}
		pthread_mutex_lock(&r->lock);
		r->cur = r->head;
		if (r->cur) {
			r->head = r->cur->next;
			if (!r->head)
				r->tail = &r->head;
			r->queued -= r->cur->len;
		}
		bool answered = r->answered;
		pthread_mutex_unlock(&r->lock);
		if (r->cur)
			continue;
		if (answered || r->ended)
			http_request_busy(r->req, false);
		if (answered)
			return HTTP_STREAM_END;
		if (r->ended) /* cancelled: the stream ends without a response */
			return r->hangup ? HTTP_STREAM_ERROR : HTTP_STREAM_END;
		req_wait(r, true);
	}
}

/* ---- the endpoint ------------------------------------------------------------------- */

static http_result mcp_auth(http_request *req)
{
	const char *auth = http_request_header(req, "Authorization");
	if (authorized(req->data, auth))
		return HTTP_OK;
	http_response *resp = error_response(
	    HTTP_ERR_TRANSPORT, "Unauthorized: send 'Authorization: Bearer <token>' with the token "
				"from the server's --token-file");
	if (resp)
		http_response_header(resp, "WWW-Authenticate",
				     auth ? "Bearer realm=\"sbx\", error=\"invalid_token\""
					  : "Bearer realm=\"sbx\"");
	return http_respond(req, HTTP_STATUS_UNAUTHORIZED, resp);
}

static http_result not_found(http_request *req)
{
	return http_respond(req, HTTP_STATUS_NOT_FOUND,
			    error_response(HTTP_ERR_TRANSPORT, "Not Found: the MCP endpoint is " HTTP_PATH));
}

static http_result method_not_allowed(http_request *req)
{
	http_response *resp =
	    error_response(HTTP_ERR_TRANSPORT,
			   "Method Not Allowed: %.16s /mcp (this server has no server-initiated "
			   "stream; use POST, and DELETE to end a session)",
			   req->method);
	if (resp)
		http_response_header(resp, "Allow", "POST, DELETE");
	return http_respond(req, HTTP_STATUS_METHOD_NOT_ALLOWED, resp);
}

/* The MCP-Protocol-Version check of POST and DELETE: true if the request
 * may go on, else it has been answered (*ret). */
static bool version_ok(http_request *req, http_result *ret)
{
	const char *pv = http_request_header(req, "MCP-Protocol-Version");
	if (!pv || version_supported(pv))
		return true;
	*ret =
	    http_respond(req, HTTP_STATUS_BAD_REQUEST,
			 error_response(JSONRPC_INVALID_REQUEST,
					"Bad Request: unsupported MCP-Protocol-Version '%.64s' (supported: "
					"2025-03-26, 2025-06-18, 2025-11-25, " MCP_STATELESS_VERSION ")",
					pv));
	return false;
}

static http_result handle_delete(http_request *req)
{
	http_mcp *hs = req->data;
	http_result ret;
	if (!version_ok(req, &ret))
		return ret;
	const char *sid = http_request_header(req, "Mcp-Session-Id");
	if (!sid)
		return http_respond(
		    req, HTTP_STATUS_BAD_REQUEST,
		    error_response(JSONRPC_INVALID_REQUEST,
				   "Bad Request: DELETE /mcp needs the Mcp-Session-Id header"));
	pthread_mutex_lock(&hs->lock);
	ssize_t i = session_find_locked(hs, sid);
	bool found = i >= 0;
	if (found) {
		session_drop_locked(hs, (size_t)i);
		for (mcp_req *a = hs->active; a; a = a->next)
			if (streq(a->sid, sid))
				req_cancel_locked(a);
	}
	pthread_mutex_unlock(&hs->lock);
	if (!found)
		return http_respond(
		    req, HTTP_STATUS_NOT_FOUND,
		    error_response(HTTP_ERR_SESSION_NOT_FOUND, "Session not found: '%.64s'", sid));
	return http_respond(req, HTTP_STATUS_OK, http_response_empty());
}

/* A POST's checks that need only the headers: HTTP_OK without answering to
 * go on reading the body (the server answers 413 past HTTP_MAX_BODY). */
static http_result post_headers(http_request *req)
{
	http_result ret;
	if (!version_ok(req, &ret))
		return ret;
	const char *ct = http_request_header(req, "Content-Type");
	if (ct && !http_content_type_is(ct, "application/json"))
		return http_respond(
		    req, HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE,
		    error_response(HTTP_ERR_TRANSPORT,
				   "Unsupported Media Type: '%.64s' (POST one JSON-RPC message as "
				   "application/json)",
				   ct));
	return HTTP_OK;
}

/* Takes a reference on session sid for r. Returns false if there is no such session. */
static bool session_take(http_mcp *hs, mcp_req *r, const char *sid)
{
	pthread_mutex_lock(&hs->lock);
	ssize_t i = session_find_locked(hs, sid);
	if (i >= 0) {
		session_meta *m = &hs->sess_meta[i];
		m->active++;
		m->established = true; /* it named its session: no longer half-open */
		m->last_used_us = now_us();
		memcpy(r->sid, hs->sess_id[i], sizeof(r->sid));
	}
	pthread_mutex_unlock(&hs->lock);
	return i >= 0;
}

static http_result handle_client_notification(http_mcp *hs, mcp_req *r, const jsonrpc_msg *m)
{
	if (m->kind == JSONRPC_NOTIFICATION && streq(m->method, "notifications/cancelled") && r->sid[0]) {
		json_t *rid = json_object_get(m->params, "requestId");
		pthread_mutex_lock(&hs->lock);
		for (mcp_req *a = hs->active; a && rid; a = a->next)
			if (streq(a->sid, r->sid) && a->id && json_equal(a->id, rid))
				req_cancel_locked(a);
		pthread_mutex_unlock(&hs->lock);
	}
	/* notifications/initialized and the rest need nothing; we send no requests, so
	 * responses are dropped. */
	return http_respond(r->req, HTTP_STATUS_ACCEPTED, http_response_empty());
}

/* The 503 for an initialize the session table cannot seat (no: the
 * policy's refusal; NULL: no random id could be made). */
static http_result refuse_session(mcp_req *r, const session_decision *no)
{
	const session_limits *lim = &r->hs->sess_lim;
	http_response *resp;
	if (!no)
		resp = error_response(HTTP_ERR_TRANSPORT,
				      "Service Unavailable: cannot make a session id (getrandom failed)");
	else if (no->verdict == SESSION_REFUSE_PEER)
		resp = error_response(HTTP_ERR_TRANSPORT,
				      "Service Unavailable: this address holds %zu sessions, its limit, each "
				      "running a call or used in the last %lld s; end some with DELETE /mcp, "
				      "retry after %u s, or use protocol revision %s (no session)",
				      lim->max_per_peer, (long long)(lim->min_idle_us / 1000000),
				      no->retry_after_s, MCP_STATELESS_VERSION);
	else
		resp = error_response(HTTP_ERR_TRANSPORT,
				      "Service Unavailable: the server holds %zu sessions, its limit, each "
				      "running a call or used in the last %lld s; retry after %u s, or use "
				      "protocol revision %s (no session)",
				      lim->max, (long long)(lim->min_idle_us / 1000000), no->retry_after_s,
				      MCP_STATELESS_VERSION);
	if (resp) {
		char ra[16];
		snprintf(ra, sizeof(ra), "%u", no ? no->retry_after_s : SESSION_RETRY_BUSY_S);
		http_response_header(resp, "Retry-After", ra);
	}
	return http_respond(r->req, HTTP_STATUS_SERVICE_UNAVAILABLE, resp);
}

/* Runs request msg (borrowed) on a server of its own and answers it. */
static http_result run_request(http_mcp *hs, mcp_req *r, json_t *msg, const jsonrpc_msg *m)
{
	http_request *req = r->req;
	bool initialize = streq(m->method, "initialize");
	json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
	r->id = json_incref(m->id);
	r->sse = !initialize && (json_is_string(token) || json_is_integer(token)) &&
		 http_accepts(http_request_header(req, "Accept"), "text/event-stream");
	_cleanup_err_ sbx_err *e = NULL;
	if (mcp_server_new(hs->ctx, true, &r->srv, &e) < 0)
		return http_respond(req, HTTP_STATUS_INTERNAL_SERVER_ERROR,
				    json_response(jsonrpc_errorf(m->id, JSONRPC_INTERNAL_ERROR, NULL, "%s",
								 sbx_err_message(e))));
	/* The handshake is the transport's business here: the session check
	 * above stands in for it, so the server starts initialized. */
	mcp_sink none = {0};
	json_t *inited = jsonrpc_notification("notifications/initialized", NULL);
	if (inited)
		mcp_server_handle_json(r->srv, inited, &none);
	json_decref(inited);

	r->client_fd = http_request_fd(req);
	pthread_mutex_lock(&hs->lock);
	bool stopping = hs->stopping;
	if (!stopping) {
		r->next = hs->active;
		hs->active = r;
		r->registered = true;
	}
	pthread_mutex_unlock(&hs->lock);
	if (stopping)
		return http_respond(
		    req, HTTP_STATUS_SERVICE_UNAVAILABLE,
		    error_response(HTTP_ERR_TRANSPORT, "Service Unavailable: the server is stopping"));

	/* No idle timeout while the call runs (a silent command may take longer):
	 * libmicrohttpd would otherwise count the wait as inactivity. */
	http_request_busy(req, true);
	mcp_sink sink = {.send = req_send, .userdata = r};
	mcp_server_handle_json(r->srv, msg, &sink);

	if (r->sse) {
		http_response *resp = http_response_stream(req, HTTP_SSE_BLOCK, sse_read, r);
		if (!resp)
			return HTTP_CLOSE;
		http_response_header(resp, "Content-Type", "text/event-stream");
		http_response_header(resp, "Cache-Control", "no-cache");
		return http_respond(req, HTTP_STATUS_OK, resp);
	}

	req_wait(r, false);
	http_request_busy(req, false);
	pthread_mutex_lock(&r->lock);
	bool answered = r->answered, result = r->result;
	char *body = TAKE_PTR(r->response);
	pthread_mutex_unlock(&r->lock);
	if (!answered && r->hangup)
		return HTTP_CLOSE; /* nobody to answer: drop the connection */
	if (!answered)
		return http_respond(
		    req, HTTP_STATUS_OK,
		    json_response(jsonrpc_error(r->id, HTTP_ERR_REQUEST_CANCELLED,
						"request cancelled before it finished", NULL)));
	if (!body)
		return http_respond(
		    req, HTTP_STATUS_INTERNAL_SERVER_ERROR,
		    json_response(jsonrpc_error(r->id, JSONRPC_INTERNAL_ERROR,
						"out of memory building the response", NULL)));
	char sid[SESSION_ID_HEX + 1] = "";
	if (initialize && result) {
		session_peer peer;
		session_peer_of(http_request_peer(req), &peer);
		session_decision no = {0};
		pthread_mutex_lock(&hs->lock);
		int c = session_create_locked(hs, &peer, sid, &no);
		pthread_mutex_unlock(&hs->lock);
		if (c < 0) {
			free(body);
			return refuse_session(r, c == -1 ? &no : NULL);
		}
	}
	http_response *resp = http_response_buffer(body, strlen(body));
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", "application/json");
	if (sid[0])
		http_response_header(resp, "Mcp-Session-Id", sid);
	return http_respond(req, HTTP_STATUS_OK, resp);
}

/* The body is complete: parse, check the session, dispatch. */
static http_result post_body(http_request *req)
{
	http_mcp *hs = req->data;
	mcp_req *r = req_new(hs, req);
	if (!r)
		return HTTP_CLOSE;
	req->state = r;
	json_t *msg = NULL, *error = NULL;
	int p = jsonrpc_parse(req->body ? req->body : "", req->body_len, &msg, &error);
	free(TAKE_PTR(req->body));
	if (p < 0)
		return http_respond(req, HTTP_STATUS_BAD_REQUEST, json_response(error));
	if (p > 0)
		return http_respond(req, HTTP_STATUS_BAD_REQUEST,
				    error_response(JSONRPC_INVALID_REQUEST,
						   "Bad Request: empty body (POST one JSON-RPC message)"));
	jsonrpc_msg m;
	if (jsonrpc_classify(msg, &m, &error) < 0) {
		json_decref(msg);
		return http_respond(req, HTTP_STATUS_BAD_REQUEST,
				    error ? json_response(error)
					  : error_response(JSONRPC_INVALID_REQUEST, "Invalid Request"));
	}
	const char *pv = http_request_header(req, "MCP-Protocol-Version");
	bool stateless = (pv && streq(pv, MCP_STATELESS_VERSION)) || meta_stateless(m.params);
	bool initialize = m.kind == JSONRPC_REQUEST && streq(m.method, "initialize");
	const char *sid = http_request_header(req, "Mcp-Session-Id");
	http_result ret;
	if (sid && !initialize) {
		if (!session_take(hs, r, sid)) {
			ret = http_respond(
			    req, HTTP_STATUS_NOT_FOUND,
			    error_response(HTTP_ERR_SESSION_NOT_FOUND,
					   "Session not found: '%.64s' (it ended or expired; send "
					   "initialize again without Mcp-Session-Id)",
					   sid));
			goto out;
		}
	} else if (!initialize && !stateless &&
		   !(m.kind == JSONRPC_REQUEST && sessionless_method(m.method))) {
		ret = http_respond(
		    req, HTTP_STATUS_BAD_REQUEST,
		    error_response(JSONRPC_INVALID_REQUEST,
				   "Bad Request: missing Mcp-Session-Id header (send initialize first "
				   "and echo the Mcp-Session-Id it returns, or use protocol revision "
				   "%s with _meta {\"%s\": \"%s\"})",
				   MCP_STATELESS_VERSION, META_PROTOCOL_VERSION, MCP_STATELESS_VERSION));
		goto out;
	}
	if (m.kind != JSONRPC_REQUEST)
		ret = handle_client_notification(hs, r, &m);
	else
		ret = run_request(hs, r, msg, &m);
out:
	json_decref(msg);
	return ret;
}

static void mcp_done(http_request *req)
{
	req_free(req->state);
	req->state = NULL;
}

/* ---- the family ----------------------------------------------------------------------- */

static const http_route mcp_routes[] = {
    {.method = "POST",
     .path = HTTP_PATH,
     .max_body = HTTP_MAX_BODY,
     .headers = post_headers,
     .body = post_body},
    {.method = "DELETE", .path = HTTP_PATH, .headers = handle_delete},
    {.path = HTTP_PATH, .headers = method_not_allowed}, /* GET (no server-initiated stream) and the rest */
};
static const http_route mcp_not_found = {.open = true, .headers = not_found};

/* The server stops: no new call, and every call in flight cancelled; each
 * connection thread then waits for its call to end (undo included). */
static void mcp_stop(void *data)
{
	http_mcp *hs = data;
	pthread_mutex_lock(&hs->lock);
	hs->stopping = true;
	for (mcp_req *a = hs->active; a; a = a->next)
		req_cancel_locked(a);
	pthread_mutex_unlock(&hs->lock);
}

static void mcp_stopped(void *data)
{
	/* Destroys answered but still being torn down. */
	reaper_drain();
}

static void mcp_release(void *data)
{
	http_mcp *hs = data;
	free(hs->sess_meta);
	free(hs->sess_id);
	pthread_mutex_destroy(&hs->lock);
	free(hs->token);
	free(hs);
}

int http_mcp_add(http_server *server, sbx_ctx *ctx, const http_mcp_opts *opts, sbx_err **err)
{
	if (tools_init() < 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "built-in tool schemas: %s", tools_init_error());
	http_mcp *hs = calloc(1, sizeof(*hs));
	if (!hs)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	hs->ctx = ctx;
	hs->sess_lim = (session_limits){.max = opts->max_sessions ? opts->max_sessions : HTTP_MAX_SESSIONS,
					.ttl_us = HTTP_SESSION_IDLE_US};
	unsigned min_idle_s = opts->session_min_idle_s ? opts->session_min_idle_s : HTTP_SESSION_MIN_IDLE_S;
	hs->sess_lim.min_idle_us = MIN((int64_t)min_idle_s * 1000000, hs->sess_lim.ttl_us);
	hs->sess_lim.max_per_peer =
	    opts->max_sessions_per_peer ? opts->max_sessions_per_peer : (hs->sess_lim.max + 3) / 4;
	pthread_mutex_init(&hs->lock, NULL);
	if (opts->token_file && http_token_file_read(opts->token_file, &hs->token, &hs->token_len, err) < 0) {
		mcp_release(hs);
		return -1;
	}
	hs->sess_meta = calloc(hs->sess_lim.max, sizeof(*hs->sess_meta));
	hs->sess_id = calloc(hs->sess_lim.max, sizeof(*hs->sess_id));
	if (!hs->sess_meta || !hs->sess_id) {
		mcp_release(hs);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	http_family f = {
	    .name = "mcp",
	    .data = hs,
	    .routes = mcp_routes,
	    .n_routes = ARRAY_SIZE(mcp_routes),
	    .fallback = &mcp_not_found,
	    .local_origin = true,
	    .auth = mcp_auth,
	    .error = mcp_error,
	    .done = mcp_done,
	    .stop = mcp_stop,
	    .stopped = mcp_stopped,
	    .release = mcp_release,
	};
	if (http_server_add(server, &f, err) < 0) {
		mcp_release(hs);
		return -1;
	}
	return 0;
}
