/* envd's Connect RPC dispatch on the E2B data plane (e2b_rpc.h): classify a
 * call, find its method, decode its message, run it, and answer in
 * Connect's JSON codec (connect_rpc.h has the wire format).
 *
 * A server stream is a producer and a consumer around one buffer: the
 * method runs on a thread of its own and appends envelopes
 * (e2b_stream_send); the connection's thread takes them out as
 * libmicrohttpd asks for the body (stream_read). stream_read is also where
 * the call's clock lives, because it is the one place that runs while the
 * client waits: it sends keepalive messages after Keepalive-Ping-Interval
 * seconds without one, notices a client that hung up (POLLRDHUP on the
 * socket), and ends a stream whose method overstays its deadline. The
 * stream is freed by whichever of the two lets go last (the method's thread
 * at its end, the request at its end: e2b_rpc_done). */
#include "server/e2b_rpc.h"

#include "server/e2b_ports.h"
#include "server/e2b_user.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/connect_rpc.h"
#include "server/e2b_auth.h"
#include "server/e2b_data.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/thread.h"

#define E2B_RPC_MESSAGE_MAX E2B_RPC_BODY_MAX /* a request message */
#define E2B_STREAM_BUF_MAX ((size_t)1 << 20) /* unsent bytes before e2b_stream_send blocks */
#define E2B_STREAM_BLOCK 65536		     /* libmicrohttpd's read size */
#define E2B_KEEPALIVE_DEFAULT_S 90	     /* envd's default without Keepalive-Ping-Interval */
#define E2B_KEEPALIVE_MIN_S 1
#define E2B_DEADLINE_GRACE_MS 2000 /* a method past its deadline this long is cut off */
#define E2B_WAIT_TICK_MS 100	   /* how often a waiting reader looks at the socket */

/* A process stream's (its message holds an event, which holds the oneof). */
static const char KEEPALIVE_JSON[] = "{\"event\":{\"keepalive\":{}}}";

struct e2b_stream {
	e2b_req_state base; /* req->state: e2b_req_state_done lets go of it (stream_release) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	bool closed; /* the client went, the request ended, or the deadline cut it */
	bool ended;  /* the end-stream envelope is in buf: nothing follows */
	bool sent;   /* a message was sent (keepalives only after the first) */
	bool cut;    /* e2b_stream_cut: no end-stream; the connection is dropped */
	uint8_t *buf;
	size_t off, len, cap;
	int64_t last_send_ms, keepalive_ms, deadline_ms;
	http_request *req; /* until e2b_rpc_done */
	const e2b_method *m;
	json_t *in;
	char *sandbox, *user;
	e2b_call call;
};

static int64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static void stream_unref(e2b_stream *s)
{
	pthread_mutex_lock(&s->lock);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (!last)
		return;
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	json_decref(s->in);
	free(s->buf);
	free(s->sandbox);
	free(s->user);
	e2b_events_unref(s->call.events);
	free(s);
}

/* Appends one envelope; the caller holds the lock. */
static int stream_append(e2b_stream *s, uint8_t flags, const char *json, size_t n)
{
	uint8_t prefix[CONNECT_ENVELOPE_PREFIX];
	if (connect_envelope_prefix(flags, n, prefix) < 0)
		return -EMSGSIZE;
	if (s->off > 0 && s->off == s->len)
		s->off = s->len = 0;
	size_t need = s->len + sizeof(prefix) + n;
	if (need > s->cap) {
		if (s->off > 0) {
			memmove(s->buf, s->buf + s->off, s->len - s->off);
			s->len -= s->off;
			s->off = 0;
			need = s->len + sizeof(prefix) + n;
		}
		if (need > s->cap) {
			size_t nc = s->cap ? s->cap : 4096;
			while (nc < need)
				nc *= 2;
			uint8_t *b = realloc(s->buf, nc);
			if (!b)
				return -ENOMEM;
			s->buf = b;
			s->cap = nc;
		}
	}
	memcpy(s->buf + s->len, prefix, sizeof(prefix));
	memcpy(s->buf + s->len + sizeof(prefix), json, n);
	s->len += sizeof(prefix) + n;
	pthread_cond_broadcast(&s->cond);
	return 0;
}

int e2b_stream_send(e2b_stream *s, const json_t *msg)
{
	_cleanup_free_ char *js = json_dumps(msg, JSON_COMPACT);
	if (!js)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	while (!s->closed && !s->ended && s->len - s->off > E2B_STREAM_BUF_MAX)
		pthread_cond_wait(&s->cond, &s->lock);
	int r = -EPIPE;
	if (!s->closed && !s->ended) {
		r = stream_append(s, 0, js, strlen(js));
		if (r == 0) {
			s->sent = true;
			s->last_send_ms = mono_ms();
		}
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

bool e2b_stream_closed(const e2b_stream *s)
{
	e2b_stream *m = (e2b_stream *)s;
	pthread_mutex_lock(&m->lock);
	bool c = m->closed;
	pthread_mutex_unlock(&m->lock);
	return c;
}

void e2b_stream_cut(e2b_stream *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->ended) {
		s->cut = true;
		s->closed = true; /* stream_read drops the connection once buf is out */
	}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* The end-stream envelope, once; the caller holds the lock. */
static void stream_end(e2b_stream *s, connect_code code, const char *msg)
{
	if (s->ended || s->cut)
		return;
	_cleanup_err_ sbx_err *e = NULL;
	_cleanup_free_ char *js = connect_end_stream_json(code, msg, NULL, &e);
	if (!js || stream_append(s, CONNECT_FLAG_END_STREAM, js, strlen(js)) < 0)
		s->closed = true; /* cut the connection: the client sees a broken stream */
	s->ended = true;
	pthread_cond_broadcast(&s->cond);
}

/* sbx's codes have no deadline or cancellation: a method says those with
 * errno ETIMEDOUT (deadline_exceeded) and ECANCELED (canceled). */
static connect_code code_of(const sbx_err *e)
{
	if (!e)
		return CONNECT_INTERNAL;
	if (sbx_err_errno(e) == ETIMEDOUT)
		return CONNECT_DEADLINE_EXCEEDED;
	if (sbx_err_errno(e) == ECANCELED)
		return CONNECT_CANCELED;
	return connect_code_from_sbx(sbx_err_code(e), sbx_err_errno(e));
}

static void *stream_main(void *arg)
{
	e2b_stream *s = arg;
	_cleanup_err_ sbx_err *e = NULL;
	int r = s->m->stream(&s->call, s->in, s, &e);
	pthread_mutex_lock(&s->lock);
	if (r >= 0)
		stream_end(s, CONNECT_OK, NULL);
	else
		stream_end(s, code_of(e), e ? sbx_err_message(e) : "failed");
	pthread_mutex_unlock(&s->lock);
	stream_unref(s);
	return NULL;
}

static bool client_gone(http_request *req)
{
	int fd = http_request_fd(req);
	if (fd < 0)
		return false;
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static ssize_t stream_read(void *cls, char *buf, size_t max)
{
	e2b_stream *s = cls;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (s->len > s->off) {
			size_t n = s->len - s->off < max ? s->len - s->off : max;
			memcpy(buf, s->buf + s->off, n);
			s->off += n;
			pthread_cond_broadcast(&s->cond);
			pthread_mutex_unlock(&s->lock);
			return (ssize_t)n;
		}
		if (s->ended) {
			pthread_mutex_unlock(&s->lock);
			return HTTP_STREAM_END;
		}
		if (s->closed) {
			pthread_mutex_unlock(&s->lock);
			return HTTP_STREAM_ERROR;
		}
		int64_t now = mono_ms();
		if (s->deadline_ms >= 0 && now >= s->deadline_ms + E2B_DEADLINE_GRACE_MS) {
			/* The method did not end at its deadline: end for it. */
			stream_end(s, CONNECT_DEADLINE_EXCEEDED, "the call's deadline passed");
			s->closed = true;
			continue;
		}
		if (s->sent && now - s->last_send_ms >= s->keepalive_ms) {
			const char *ka = s->m->keepalive ?: KEEPALIVE_JSON;
			if (stream_append(s, 0, ka, strlen(ka)) == 0)
				s->last_send_ms = now;
			continue;
		}
		if (client_gone(s->req)) {
			s->closed = true;
			pthread_cond_broadcast(&s->cond);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += E2B_WAIT_TICK_MS / 1000;
		ts.tv_nsec += (long)(E2B_WAIT_TICK_MS % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	}
}

/* The request ended: the stream's method sees it closed. */
static void stream_release(e2b_req_state *b)
{
	e2b_stream *s = (e2b_stream *)b;
	pthread_mutex_lock(&s->lock);
	s->closed = true;
	s->req = NULL;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	stream_unref(s);
}

/* ---- answering ------------------------------------------------------------------------------ */

static http_result reply_body(http_request *req, unsigned status, const char *type, char *body, size_t len)
{
	http_response *resp = http_response_buffer(body, len);
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", type);
	return http_respond(req, status, resp);
}

static http_result reply_unary_error(http_request *req, connect_code code, const char *msg)
{
	_cleanup_err_ sbx_err *e = NULL;
	char *js = connect_error_json(code, msg, &e);
	if (!js)
		return HTTP_CLOSE;
	return reply_body(req, (unsigned)connect_code_http_status(code), "application/json", js, strlen(js));
}

/* A stream refused before it started: 200 and only an end-stream (a
 * client reads a non-200 stream through its status, not the code). */
static http_result reply_stream_error(http_request *req, connect_code code, const char *msg)
{
	_cleanup_err_ sbx_err *e = NULL;
	size_t n;
	uint8_t *env = connect_end_stream_encode(code, msg, NULL, &n, &e);
	if (!env)
		return HTTP_CLOSE;
	return reply_body(req, HTTP_STATUS_OK, "application/connect+json", (char *)env, n);
}

static http_result reply_error(http_request *req, bool stream, connect_code code, const char *msg)
{
	return stream ? reply_stream_error(req, code, msg) : reply_unary_error(req, code, msg);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static const e2b_method *method_find(const char *service, const char *method)
{
	const e2b_method *tables[] = {e2b_process_methods, e2b_fs_methods, e2b_watch_methods};
	for (size_t t = 0; t < ARRAY_SIZE(tables); t++)
		for (const e2b_method *m = tables[t]; m->service; m++)
			if (streq(m->service, service) && streq(m->method, method))
				return m;
	return NULL;
}

static bool wants_stream(const http_request *req)
{
	connect_kind k;
	const char *ct = http_request_header(req, "Content-Type");
	return ct && connect_content_type_kind(ct, &k) == 0 && k == CONNECT_STREAM;
}

/* Classifies req and finds its method: NULL once it has answered (*ret_r). */
static const e2b_method *classify(http_request *req, connect_request *cr, http_result *ret_r)
{
	_cleanup_err_ sbx_err *e = NULL;
	int r = connect_request_classify(req->method, req->path, http_request_header(req, "Content-Type"),
					 http_request_header(req, "Connect-Protocol-Version"),
					 http_request_header(req, "Connect-Timeout-Ms"), cr, &e);
	const char *why = e ? sbx_err_message(e) : "refused";
	if (r == -400) {
		*ret_r = reply_error(req, wants_stream(req), CONNECT_INVALID_ARGUMENT, why);
		return NULL;
	}
	if (r == -405) {
		_cleanup_err_ sbx_err *e2 = NULL;
		char *js = connect_error_json(CONNECT_UNIMPLEMENTED, why, &e2);
		http_response *resp = js ? http_response_buffer(js, strlen(js)) : NULL;
		if (!resp) {
			*ret_r = HTTP_CLOSE;
			return NULL;
		}
		http_response_header(resp, "Content-Type", "application/json");
		http_response_header(resp, "Allow", "POST");
		*ret_r = http_respond(req, HTTP_STATUS_METHOD_NOT_ALLOWED, resp);
		return NULL;
	}
	if (r < 0) { /* -404 (no such path), -415 (a content type Connect's JSON codec is not) */
		connect_code code = r == -404 ? CONNECT_UNIMPLEMENTED : CONNECT_INTERNAL;
		_cleanup_err_ sbx_err *e2 = NULL;
		char *js = connect_error_json(code, why, &e2);
		*ret_r = js ? reply_body(req, (unsigned)-r, "application/json", js, strlen(js)) : HTTP_CLOSE;
		return NULL;
	}
	const e2b_method *m = method_find(cr->service, cr->method);
	bool stream = cr->kind == CONNECT_STREAM;
	if (!m) {
		*ret_r = reply_error(req, stream, CONNECT_UNIMPLEMENTED, "no such method in sbx's envd");
		return NULL;
	}
	if ((stream && !m->stream) || (!stream && !m->unary)) {
		_cleanup_err_ sbx_err *e2 = NULL;
		char *js = connect_error_json(CONNECT_INTERNAL,
					      stream ? "a unary method asked as a stream"
						     : "a streaming method asked with application/json",
					      &e2);
		*ret_r = js ? reply_body(req, HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE, "application/json", js,
					 strlen(js))
			    : HTTP_CLOSE;
		return NULL;
	}
	return m;
}

http_result e2b_rpc_headers(http_request *req)
{
	connect_request cr;
	http_result r;
	if (!classify(req, &cr, &r))
		return r;
	return HTTP_OK; /* read the body */
}

/* The request message: a unary body, or a stream's one envelope. */
static json_t *decode(http_request *req, bool stream, sbx_err **err)
{
	const char *p = req->body ? req->body : "";
	size_t n = req->body_len;
	connect_decoder d;
	if (stream) {
		connect_decoder_init(&d, E2B_RPC_MESSAGE_MAX);
		if (connect_decoder_feed(&d, p, n, err) < 0 || connect_decoder_finish(&d, err) < 0) {
			connect_decoder_clear(&d);
			return NULL;
		}
		p = (const char *)d.payload;
		n = d.want;
	}
	json_error_t je;
	json_t *j = n == 0 && !stream ? json_object() : json_loadb(p, n, 0, &je);
	if (stream)
		connect_decoder_clear(&d);
	if (!j) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "the request message is not JSON");
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "the request message is not a JSON object");
		return NULL;
	}
	return j;
}

static int64_t keepalive_ms(const http_request *req)
{
	const char *v = http_request_header(req, "Keepalive-Ping-Interval");
	int64_t s = E2B_KEEPALIVE_DEFAULT_S;
	if (v && *v && strlen(v) <= 6 && strspn(v, "0123456789") == strlen(v))
		s = strtoll(v, NULL, 10);
	return (s < E2B_KEEPALIVE_MIN_S ? E2B_KEEPALIVE_MIN_S : s) * 1000;
}

static http_result start_stream(http_request *req, const e2b_method *m, e2b_call *call, json_t *in)
{
	e2b_stream *s = calloc(1, sizeof(*s));
	if (!s) {
		json_decref(in);
		return reply_stream_error(req, CONNECT_RESOURCE_EXHAUSTED, "out of memory");
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	s->refs = 1;
	s->base.free = stream_release;
	s->m = m;
	s->in = in;
	s->req = req;
	s->deadline_ms = call->deadline_ms;
	s->keepalive_ms = keepalive_ms(req);
	s->sandbox = strdup(call->sandbox_id);
	s->user = call->user ? strdup(call->user) : NULL;
	s->call = *call;
	s->call.sandbox_id = s->sandbox;
	s->call.user = s->user;
	s->call.req = NULL; /* the method outlives the handler */
	s->call.events = e2b_events_ref(call->events);
	if (!s->sandbox || (call->user && !s->user)) {
		stream_unref(s);
		return reply_stream_error(req, CONNECT_RESOURCE_EXHAUSTED, "out of memory");
	}
	http_response *resp = http_response_stream(req, E2B_STREAM_BLOCK, stream_read, s);
	if (!resp) {
		stream_unref(s);
		return HTTP_CLOSE;
	}
	http_response_header(resp, "Content-Type", "application/connect+json");
	req->state = s; /* e2b_req_state_done lets go of it (stream_release) */
	s->refs++;	/* the method's thread */
	int r = thread_start_detached(stream_main, s, 0);
	if (r != 0) {
		s->refs--;
		pthread_mutex_lock(&s->lock);
		stream_end(s, CONNECT_RESOURCE_EXHAUSTED, "cannot start a thread for the call");
		pthread_mutex_unlock(&s->lock);
	}
	http_request_busy(req, true);
	return http_respond(req, HTTP_STATUS_OK, resp);
}

http_result e2b_rpc_body(http_request *req)
{
	connect_request cr;
	http_result hr;
	const e2b_method *m = classify(req, &cr, &hr);
	if (!m)
		return hr;
	bool stream = cr.kind == CONNECT_STREAM;
	_cleanup_err_ sbx_err *e = NULL;
	json_t *in = decode(req, stream, &e);
	if (!in)
		return reply_error(req, stream, code_of(e), sbx_err_message(e));
	char user[E2B_USER_MAX + 1];
	const char *auth = http_request_header(req, "Authorization");
	if (auth && e2b_basic_auth_user(auth, user, &e) < 0) {
		json_decref(in);
		return reply_error(req, stream, CONNECT_UNAUTHENTICATED, sbx_err_message(e));
	}
	e2b_call call = {
	    .ctx = e2b_req_ctx(req),
	    .sandbox_id = e2b_req_sandbox(req),
	    .user = e2b_user_for(e2b_req_ctx(req), e2b_req_sandbox(req), auth ? user : NULL),
	    .deadline_ms = cr.timeout_ms >= 0 ? mono_ms() + cr.timeout_ms : -1,
	    .req = req,
	    .events = e2b_req_events(req),
	};
	if (stream)
		return start_stream(req, m, &call, in);
	_cleanup_json_ json_t *own_in = in;
	json_t *out = NULL;
	http_request_busy(req, true);
	int r = m->unary(&call, in, &out, &e);
	http_request_busy(req, false);
	if (r < 0) {
		json_decref(out);
		return reply_unary_error(req, code_of(e), e ? sbx_err_message(e) : "failed");
	}
	char *js = out ? json_dumps(out, JSON_COMPACT) : strdup("{}");
	json_decref(out);
	if (!js)
		return reply_unary_error(req, CONNECT_RESOURCE_EXHAUSTED, "out of memory");
	return reply_body(req, HTTP_STATUS_OK, "application/json", js, strlen(js));
}
