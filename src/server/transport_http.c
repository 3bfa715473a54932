/* MCP over Streamable HTTP (see transport_http.h), on libmicrohttpd.
 *
 * Threads: libmicrohttpd runs one thread per connection; each POST of a
 * request gets its own mcp_server (cheap: a mutex and a list), whose tool
 * calls run on worker threads and answer through a sink into this request's
 * http_req. The connection thread waits for the answer while watching the
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
#include "server/transport_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "server/jsonrpc.h"
#include "server/mcp.h"
#include "server/reaper.h"
#include "server/session_policy.h"
#include "server/tools.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

#include <dlfcn.h>

/* libmicrohttpd, and GnuTLS with a dozen libraries behind it, are loaded by
 * `sbx serve` only: linked, every sbx command would pay for loading them. */
static struct {
	__typeof__(&MHD_add_response_header) add_response_header;
	__typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
	__typeof__(&MHD_create_response_from_callback) create_response_from_callback;
	__typeof__(&MHD_set_connection_option) set_connection_option;
	__typeof__(&MHD_start_daemon) start_daemon;
	__typeof__(&MHD_stop_daemon) stop_daemon;
	__typeof__(&MHD_queue_response) queue_response;
	__typeof__(&MHD_lookup_connection_value) lookup_connection_value;
	__typeof__(&MHD_get_connection_info) get_connection_info;
	__typeof__(&MHD_destroy_response) destroy_response;
} mhd;

static int mhd_load(sbx_err **err)
{
	static const char *const names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so"};
	void *h = NULL;
	for (size_t i = 0; !h && i < ARRAY_SIZE(names); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return err_set(err, SBX_E_UNAVAILABLE, ENOENT,
			       "sbx serve needs libmicrohttpd (Debian: apt-get install libmicrohttpd12): %s",
			       dlerror());
#define MHD_SYM(field, sym)                                                                                  \
	if (!(*(void **)&mhd.field = dlsym(h, #sym)))                                                        \
		return err_set(err, SBX_E_UNAVAILABLE, ENOENT, "libmicrohttpd lacks %s", #sym);
	MHD_SYM(add_response_header, MHD_add_response_header)
	MHD_SYM(create_response_from_buffer, MHD_create_response_from_buffer)
	MHD_SYM(create_response_from_callback, MHD_create_response_from_callback)
	MHD_SYM(set_connection_option, MHD_set_connection_option)
	MHD_SYM(start_daemon, MHD_start_daemon)
	MHD_SYM(stop_daemon, MHD_stop_daemon)
	MHD_SYM(queue_response, MHD_queue_response)
	MHD_SYM(lookup_connection_value, MHD_lookup_connection_value)
	MHD_SYM(get_connection_info, MHD_get_connection_info)
	MHD_SYM(destroy_response, MHD_destroy_response)
#undef MHD_SYM
	return 0;
}
#define MHD_add_response_header mhd.add_response_header
#define MHD_create_response_from_buffer mhd.create_response_from_buffer
#define MHD_create_response_from_callback mhd.create_response_from_callback
#define MHD_set_connection_option mhd.set_connection_option
#define MHD_start_daemon mhd.start_daemon
#define MHD_stop_daemon mhd.stop_daemon
#define MHD_queue_response mhd.queue_response
#define MHD_lookup_connection_value mhd.lookup_connection_value
#define MHD_get_connection_info mhd.get_connection_info
#define MHD_destroy_response mhd.destroy_response

#define HTTP_PATH "/mcp"
#define HTTP_MAX_BODY JSONRPC_MAX_MESSAGE   /* larger bodies: 413 */
#define HTTP_DISCARD_MAX ((size_t)64 << 20) /* larger ones get their 413 before the body is read */
/* Defaults of the connection limits (mcp_http_opts; docs/server.md). */
#define HTTP_MAX_CONNECTIONS 256	 /* in total: each is a thread */
#define HTTP_MAX_CONNECTIONS_PER_PEER 64 /* from one address */
#define HTTP_IDLE_TIMEOUT_S 60		 /* an idle keep-alive connection is closed after this */
#define HTTP_REQUEST_TIMEOUT_S 30	 /* to send one request's headers and body */
#define HTTP_REAP_INTERVAL_MS 250
#define HTTP_LIMIT_SLACK 32 /* libmicrohttpd's own limit is ours plus this: evicted ones still closing */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
/* Session table (session_policy.h; docs/server.md "Sessions"); one peer may
 * hold a quarter of it unless told otherwise. */
#define HTTP_MAX_SESSIONS 1024
#define HTTP_SESSION_IDLE_US ((int64_t)3600 * 1000000) /* a session unused this long expires */
/* An established session idle this long may give way to a newcomer: as
 * long as an idle keep-alive connection is kept (HTTP_IDLE_TIMEOUT_S). */
#define HTTP_SESSION_MIN_IDLE_S 60
#define HTTP_SSE_BLOCK (32 * 1024)
/* Progress events a stream may hold unsent (a client that does not read):
 * past this they are dropped (the result has the whole output). */
#define HTTP_SSE_QUEUE_MAX ((size_t)1 << 20)
#define SESSION_ID_HEX 32 /* 128 random bits */
#define TOKEN_MAX 4096
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

typedef struct http_req http_req;

/* What a connection is doing, for the limits: waiting for a request's
 * headers (a fresh connection, or keep-alive after a response), reading a
 * body, or running a call (never cut: a silent command may take long). */
typedef enum { CONN_WAITING, CONN_READING, CONN_BUSY } conn_phase;

/* One TCP connection, from accept to close (hs->conns, under hs->lock). */
typedef struct http_conn {
	int fd;
	struct sockaddr_storage peer; /* the port is ignored */
	conn_phase phase;
	int64_t deadline_us; /* WAITING/READING: cut off at this time */
	bool authorized;     /* has sent a request that passed the token check */
	bool evicted;	     /* shut down by us: no longer counted */
	struct http_conn *next;
} http_conn;

typedef struct http_server {
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
	http_req *active; /* POSTs whose call is in flight */
	bool stopping;
	http_conn *conns; /* every open connection */
	unsigned max_conns, max_per_peer;
	int64_t idle_us, request_us;
} http_server;

/* One HTTP request, from its headers to the end of its response. Owned by
 * the connection thread; other threads reach it only through hs->active
 * (under hs->lock, to flag it cancelled) and through the sink (under lock). */
struct http_req {
	http_server *hs;
	struct MHD_Connection *conn;
	bool responded; /* a response was queued at the headers stage */
	char *body;
	size_t len, cap;
	bool too_large;
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
	http_req *next;
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

/* Origin is http(s)://localhost, 127.0.0.1 or [::1], with any port or none:
 * a browser page from anywhere else must not reach a local server (DNS
 * rebinding). */
static bool origin_allowed(const char *origin)
{
	const char *p;
	if (strncasecmp(origin, "http://", 7) == 0)
		p = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		p = origin + 8;
	else
		return false;
	static const char *const hosts[] = {"localhost", "127.0.0.1", "[::1]"};
	for (size_t i = 0; i < ARRAY_SIZE(hosts); i++) {
		size_t n = strlen(hosts[i]);
		if (strncasecmp(p, hosts[i], n) != 0)
			continue;
		const char *q = p + n;
		if (*q == 0)
			return true;
		if (*q++ != ':')
			continue;
		size_t digits = strspn(q, "0123456789");
		return digits >= 1 && digits <= 5 && q[digits] == 0;
	}
	return false;
}

static bool version_supported(const char *v)
{
	for (size_t i = 0; i < ARRAY_SIZE(http_versions); i++)
		if (streq(v, http_versions[i]))
			return true;
	return false;
}

/* Content-Type application/json, parameters (charset) allowed. */
static bool content_type_json(const char *ct)
{
	size_t n = strlen("application/json");
	return strncasecmp(ct, "application/json", n) == 0 && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

static bool accepts_sse(const char *accept)
{
	return accept && strcasestr(accept, "text/event-stream");
}

/* Compares in time that depends only on the expected token's length. */
static bool token_equal(const char *given, size_t given_len, const char *want, size_t want_len)
{
	volatile unsigned char d = given_len != want_len;
	for (size_t i = 0; i < want_len; i++)
		d |= (unsigned char)(given[given_len ? i % given_len : 0] ^ want[i]);
	return d == 0;
}

static bool authorized(const http_server *hs, const char *header)
{
	if (!hs->token)
		return true;
	if (!header || strncasecmp(header, "Bearer ", 7) != 0)
		return false;
	const char *t = header + 7;
	t += strspn(t, " ");
	size_t n = strlen(t);
	while (n > 0 && t[n - 1] == ' ')
		n--;
	return token_equal(t, n, hs->token, hs->token_len);
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

static void session_drop_locked(http_server *hs, size_t i)
{
	size_t last = --hs->n_sessions;
	if (i != last) {
		hs->sess_meta[i] = hs->sess_meta[last];
		memcpy(hs->sess_id[i], hs->sess_id[last], sizeof(hs->sess_id[i]));
	}
}

/* Drops the expired sessions, then returns the index of session id, or -1.
 * An index is valid until the lock is released. */
static ssize_t session_find_locked(http_server *hs, const char *id)
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
static int session_create_locked(http_server *hs, const session_peer *peer, char ret_id[SESSION_ID_HEX + 1],
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

static void req_poke(http_req *r)
{
	(void)!eventfd_write(r->wake_fd, 1);
}

static void req_cancel_locked(http_req *r)
{
	atomic_store(&r->cancelled, true);
	req_poke(r);
}

/* The sink of r's mcp_server: keeps the response (and, on a stream, the
 * progress notifications before it). Runs on worker threads. */
static void req_send(void *userdata, const json_t *msg)
{
	http_req *r = userdata;
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

static http_req *req_new(http_server *hs, struct MHD_Connection *conn)
{
	http_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->wake_fd < 0) {
		free(r);
		return NULL;
	}
	r->hs = hs;
	r->conn = conn;
	r->client_fd = -1;
	r->tail = &r->head;
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

static void req_free(http_req *r)
{
	if (!r)
		return;
	http_server *hs = r->hs;
	pthread_mutex_lock(&hs->lock);
	if (r->registered)
		for (http_req **p = &hs->active; *p; p = &(*p)->next)
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
	free(r->body);
	json_decref(r->id);
	safe_close(r->wake_fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Blocks until the sink has something (sse: an event or the response; else
 * the response), or the client hangs up, or the request is cancelled; in
 * the last two cases cancels the call and waits until it has ended
 * (r->ended). */
static void req_wait(http_req *r, bool sse)
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

static enum MHD_Result queue(http_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp)
		return MHD_NO;
	enum MHD_Result ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	r->responded = true;
	return ret;
}

/* A response whose body is the JSON message msg (stolen). */
static struct MHD_Response *json_response(json_t *msg)
{
	char *s = msg ? jsonrpc_dump(msg) : NULL;
	json_decref(msg);
	if (!s)
		return NULL;
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(s), s, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(s);
		return NULL;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	return resp;
}

static struct MHD_Response *error_response(int code, const char *fmt, ...) _printf_(2, 3);
static struct MHD_Response *error_response(int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_response(jsonrpc_error(NULL, code, msg, NULL));
}

static struct MHD_Response *empty_response(void)
{
	return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* Setting it from 0 also restarts the idle clock. */
static void restore_timeout(http_req *r)
{
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)(r->hs->idle_us / 1000000));
}

/* ---- connection limits -------------------------------------------------------------------
 * libmicrohttpd resets every connection past its limit, so 128 sockets
 * opened and left silent used to lock everyone out for the ten minutes of
 * its idle timeout. Here the limits are ours: a connection past the total
 * or its peer's share evicts the oldest one that is only waiting or
 * still reading its request (the never-authorized first), and the reaper
 * (the main loop) cuts a connection that takes longer than request_us to
 * send a request (from its opening or its last response: slow headers, a
 * body that never ends), or, once authorized, idles longer than idle_us
 * between requests. A connection running a call is never cut. */

static bool same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
	return true;
}

/* c->fd is still the connection's: libmicrohttpd notifies the close (which
 * unlinks c under hs->lock) before it closes the socket. */
static void conn_evict_locked(http_conn *c)
{
	c->evicted = true;
	if (c->fd >= 0)
		shutdown(c->fd, SHUT_RDWR); /* its thread sees EOF and closes it */
}

/* The connection to give up for a newcomer (of `peer` only, if given): one
 * waiting for a request or still reading one, never one running a call;
 * never-authorized before authorized, then the nearest deadline (a body
 * being read has the request timeout, shorter than the idle one: a slow
 * upload goes before an idle keep-alive connection as old). Reading ones
 * count: connections sending a body a byte at a time, from enough
 * addresses to stay under each one's share, used to lock every other
 * client out for as long as they were kept up. */
static http_conn *conn_victim_locked(http_server *hs, const struct sockaddr_storage *peer)
{
	http_conn *best = NULL;
	for (http_conn *c = hs->conns; c; c = c->next) {
		if (c->evicted || c->phase == CONN_BUSY || (peer && !same_peer(&c->peer, peer)))
			continue;
		if (!best || (best->authorized && !c->authorized) ||
		    (best->authorized == c->authorized && c->deadline_us < best->deadline_us))
			best = c;
	}
	return best;
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	http_server *hs = cls;
	struct sockaddr_storage peer = {0};
	memcpy(&peer, addr, MIN((size_t)addrlen, sizeof(peer)));
	pthread_mutex_lock(&hs->lock);
	unsigned total = 0, mine = 0;
	for (http_conn *c = hs->conns; c; c = c->next)
		if (!c->evicted) {
			total++;
			mine += same_peer(&c->peer, &peer);
		}
	bool ok = true;
	if (mine >= hs->max_per_peer) {
		http_conn *v = conn_victim_locked(hs, &peer);
		if (v)
			conn_evict_locked(v);
		ok = v != NULL;
		total -= ok;
	}
	if (ok && total >= hs->max_conns) {
		http_conn *v = conn_victim_locked(hs, NULL);
		if (v)
			conn_evict_locked(v);
		ok = v != NULL;
	}
	pthread_mutex_unlock(&hs->lock);
	return ok ? MHD_YES : MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	http_server *hs = cls;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		http_conn *c = calloc(1, sizeof(*c));
		if (!c)
			return; /* untracked: only MHD's own limits apply to it */
		const union MHD_ConnectionInfo *fi =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
		    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		c->fd = fi ? fi->connect_fd : -1;
		if (ai && ai->client_addr)
			memcpy(&c->peer, ai->client_addr,
			       ai->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								      : sizeof(struct sockaddr_in));
		c->phase = CONN_WAITING;
		c->deadline_us = now_us() + MIN(hs->request_us, hs->idle_us);
		pthread_mutex_lock(&hs->lock);
		c->next = hs->conns;
		hs->conns = c;
		pthread_mutex_unlock(&hs->lock);
		*socket_context = c;
		return;
	}
	http_conn *c = *socket_context;
	if (!c)
		return;
	pthread_mutex_lock(&hs->lock);
	for (http_conn **p = &hs->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&hs->lock);
	free(c);
	*socket_context = NULL;
}

static http_conn *conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* Moves r's connection to phase p (its deadline from now). */
static void conn_phase_set(http_server *hs, struct MHD_Connection *conn, conn_phase p)
{
	http_conn *c = conn_of(conn);
	if (!c)
		return;
	pthread_mutex_lock(&hs->lock);
	c->phase = p;
	c->deadline_us = now_us() + (p == CONN_READING || !c->authorized ? hs->request_us : hs->idle_us);
	if (p == CONN_WAITING && !c->authorized)
		c->deadline_us = now_us() + MIN(hs->request_us, hs->idle_us);
	pthread_mutex_unlock(&hs->lock);
}

static void conn_authorized(http_server *hs, struct MHD_Connection *conn)
{
	http_conn *c = conn_of(conn);
	if (!c)
		return;
	pthread_mutex_lock(&hs->lock);
	c->authorized = true;
	pthread_mutex_unlock(&hs->lock);
}

/* Cuts the connections past their deadline; returns how many. */
static unsigned conn_reap(http_server *hs)
{
	unsigned n = 0;
	int64_t now = now_us();
	pthread_mutex_lock(&hs->lock);
	for (http_conn *c = hs->conns; c; c = c->next)
		if (!c->evicted && c->phase != CONN_BUSY && now >= c->deadline_us) {
			conn_evict_locked(c);
			n++;
		}
	pthread_mutex_unlock(&hs->lock);
	return n;
}

/* ---- SSE ------------------------------------------------------------------------------ */

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	http_req *r = cls;
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
			restore_timeout(r);
		if (answered)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (r->ended) /* cancelled: the stream ends without a response */
			return r->hangup ? MHD_CONTENT_READER_END_WITH_ERROR
					 : MHD_CONTENT_READER_END_OF_STREAM;
		req_wait(r, true);
	}
}

static void sse_free(void *cls)
{
	/* r is freed by on_completed, after the last read. */
}

/* ---- the endpoint ------------------------------------------------------------------- */

static enum MHD_Result handle_delete(http_server *hs, http_req *r)
{
	const char *sid = header(r->conn, "Mcp-Session-Id");
	if (!sid)
		return queue(r, MHD_HTTP_BAD_REQUEST,
			     error_response(JSONRPC_INVALID_REQUEST,
					    "Bad Request: DELETE /mcp needs the Mcp-Session-Id header"));
	pthread_mutex_lock(&hs->lock);
	ssize_t i = session_find_locked(hs, sid);
	bool found = i >= 0;
	if (found) {
		session_drop_locked(hs, (size_t)i);
		for (http_req *a = hs->active; a; a = a->next)
			if (streq(a->sid, sid))
				req_cancel_locked(a);
	}
	pthread_mutex_unlock(&hs->lock);
	if (!found)
		return queue(r, MHD_HTTP_NOT_FOUND,
			     error_response(HTTP_ERR_SESSION_NOT_FOUND, "Session not found: '%.64s'", sid));
	return queue(r, MHD_HTTP_OK, empty_response());
}

/* The checks that need only the headers. Returns MHD_YES to go on reading
 * the body (r->responded false), or the result of queueing a response. */
static enum MHD_Result on_headers(http_server *hs, http_req *r, const char *url, const char *method)
{
	if (!streq(url, HTTP_PATH))
		return queue(r, MHD_HTTP_NOT_FOUND,
			     error_response(HTTP_ERR_TRANSPORT, "Not Found: the MCP endpoint is " HTTP_PATH));
	const char *origin = header(r->conn, "Origin");
	if (origin && !origin_allowed(origin))
		return queue(
		    r, MHD_HTTP_FORBIDDEN,
		    error_response(HTTP_ERR_TRANSPORT,
				   "Forbidden: Origin '%.128s' is not allowed (only http(s)://localhost, "
				   "127.0.0.1 and [::1])",
				   origin));
	const char *auth = header(r->conn, MHD_HTTP_HEADER_AUTHORIZATION);
	if (authorized(hs, auth))
		conn_authorized(hs, r->conn);
	else {
		struct MHD_Response *resp = error_response(
		    HTTP_ERR_TRANSPORT, "Unauthorized: send 'Authorization: Bearer <token>' with the token "
					"from the server's --token-file");
		if (resp)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
						auth ? "Bearer realm=\"sbx\", error=\"invalid_token\""
						     : "Bearer realm=\"sbx\"");
		return queue(r, MHD_HTTP_UNAUTHORIZED, resp);
	}
	bool post = streq(method, MHD_HTTP_METHOD_POST), del = streq(method, MHD_HTTP_METHOD_DELETE);
	if (!post && !del) {
		struct MHD_Response *resp =
		    error_response(HTTP_ERR_TRANSPORT,
				   "Method Not Allowed: %.16s /mcp (this server has no server-initiated "
				   "stream; use POST, and DELETE to end a session)",
				   method);
		if (resp)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
		return queue(r, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
	}
	const char *pv = header(r->conn, "MCP-Protocol-Version");
	if (pv && !version_supported(pv))
		return queue(
		    r, MHD_HTTP_BAD_REQUEST,
		    error_response(JSONRPC_INVALID_REQUEST,
				   "Bad Request: unsupported MCP-Protocol-Version '%.64s' (supported: "
				   "2025-03-26, 2025-06-18, 2025-11-25, " MCP_STATELESS_VERSION ")",
				   pv));
	if (del)
		return handle_delete(hs, r);
	const char *ct = header(r->conn, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct && !content_type_json(ct))
		return queue(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE,
			     error_response(HTTP_ERR_TRANSPORT,
					    "Unsupported Media Type: '%.64s' (POST one JSON-RPC message as "
					    "application/json)",
					    ct));
	/* Too large: read on and answer 413 at the end (a client busy sending
	 * does not see an early answer), unless it is absurdly large. */
	const char *cl = header(r->conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long clen = cl ? strtoull(cl, NULL, 10) : 0;
	r->too_large = clen > HTTP_MAX_BODY;
	if (clen > HTTP_DISCARD_MAX)
		return queue(r, MHD_HTTP_CONTENT_TOO_LARGE,
			     error_response(HTTP_ERR_TRANSPORT, "Payload Too Large: the limit is %zu bytes",
					    (size_t)HTTP_MAX_BODY));
	return MHD_YES;
}

/* Takes a reference on session sid for r. Returns false if there is no such session. */
static bool session_take(http_server *hs, http_req *r, const char *sid)
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

static enum MHD_Result handle_client_notification(http_server *hs, http_req *r, const jsonrpc_msg *m)
{
	if (m->kind == JSONRPC_NOTIFICATION && streq(m->method, "notifications/cancelled") && r->sid[0]) {
		json_t *rid = json_object_get(m->params, "requestId");
		pthread_mutex_lock(&hs->lock);
		for (http_req *a = hs->active; a && rid; a = a->next)
			if (streq(a->sid, r->sid) && a->id && json_equal(a->id, rid))
				req_cancel_locked(a);
		pthread_mutex_unlock(&hs->lock);
	}
	/* notifications/initialized and the rest need nothing; we send no requests, so
	 * responses are dropped. */
	return queue(r, MHD_HTTP_ACCEPTED, empty_response());
}

/* The 503 for an initialize the session table cannot seat (no: the
 * policy's refusal; NULL: no random id could be made). */
static enum MHD_Result refuse_session(http_req *r, const session_decision *no)
{
	const session_limits *lim = &r->hs->sess_lim;
	struct MHD_Response *resp;
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
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	return queue(r, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
}

/* Runs request msg (borrowed) on a server of its own and answers it. */
static enum MHD_Result run_request(http_server *hs, http_req *r, json_t *msg, const jsonrpc_msg *m)
{
	bool initialize = streq(m->method, "initialize");
	json_t *token = json_object_get(json_object_get(m->params, "_meta"), "progressToken");
	r->id = json_incref(m->id);
	r->sse = !initialize && (json_is_string(token) || json_is_integer(token)) &&
		 accepts_sse(header(r->conn, MHD_HTTP_HEADER_ACCEPT));
	_cleanup_err_ sbx_err *e = NULL;
	if (mcp_server_new(hs->ctx, true, &r->srv, &e) < 0)
		return queue(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     json_response(jsonrpc_errorf(m->id, JSONRPC_INTERNAL_ERROR, NULL, "%s",
							  sbx_err_message(e))));
	/* The handshake is the transport's business here: the session check
	 * above stands in for it, so the server starts initialized. */
	mcp_sink none = {0};
	json_t *inited = jsonrpc_notification("notifications/initialized", NULL);
	if (inited)
		mcp_server_handle_json(r->srv, inited, &none);
	json_decref(inited);

	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->client_fd = ci ? ci->connect_fd : -1;
	pthread_mutex_lock(&hs->lock);
	bool stopping = hs->stopping;
	if (!stopping) {
		r->next = hs->active;
		hs->active = r;
		r->registered = true;
	}
	pthread_mutex_unlock(&hs->lock);
	if (stopping)
		return queue(
		    r, MHD_HTTP_SERVICE_UNAVAILABLE,
		    error_response(HTTP_ERR_TRANSPORT, "Service Unavailable: the server is stopping"));

	/* No idle timeout while the call runs (a silent command may take longer):
	 * libmicrohttpd would otherwise count the wait as inactivity. */
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
	mcp_sink sink = {.send = req_send, .userdata = r};
	mcp_server_handle_json(r->srv, msg, &sink);

	if (r->sse) {
		struct MHD_Response *resp = MHD_create_response_from_callback(
		    MHD_SIZE_UNKNOWN, HTTP_SSE_BLOCK, sse_read, r, sse_free);
		if (!resp)
			return MHD_NO;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		return queue(r, MHD_HTTP_OK, resp);
	}

	req_wait(r, false);
	restore_timeout(r);
	pthread_mutex_lock(&r->lock);
	bool answered = r->answered, result = r->result;
	char *body = TAKE_PTR(r->response);
	pthread_mutex_unlock(&r->lock);
	if (!answered && r->hangup)
		return MHD_NO; /* nobody to answer: drop the connection */
	if (!answered)
		return queue(r, MHD_HTTP_OK,
			     json_response(jsonrpc_error(r->id, HTTP_ERR_REQUEST_CANCELLED,
							 "request cancelled before it finished", NULL)));
	if (!body)
		return queue(r, MHD_HTTP_INTERNAL_SERVER_ERROR,
			     json_response(jsonrpc_error(r->id, JSONRPC_INTERNAL_ERROR,
							 "out of memory building the response", NULL)));
	char sid[SESSION_ID_HEX + 1] = "";
	if (initialize && result) {
		const union MHD_ConnectionInfo *ai =
		    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		session_peer peer;
		session_peer_of(ai ? ai->client_addr : NULL, &peer);
		session_decision no = {0};
		pthread_mutex_lock(&hs->lock);
		int c = session_create_locked(hs, &peer, sid, &no);
		pthread_mutex_unlock(&hs->lock);
		if (c < 0) {
			free(body);
			return refuse_session(r, c == -1 ? &no : NULL);
		}
	}
	struct MHD_Response *resp =
	    MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (sid[0])
		MHD_add_response_header(resp, "Mcp-Session-Id", sid);
	return queue(r, MHD_HTTP_OK, resp);
}

/* The body is complete: parse, check the session, dispatch. */
static enum MHD_Result on_body(http_server *hs, http_req *r)
{
	if (r->too_large)
		return queue(r, MHD_HTTP_CONTENT_TOO_LARGE,
			     error_response(HTTP_ERR_TRANSPORT, "Payload Too Large: the limit is %zu bytes",
					    (size_t)HTTP_MAX_BODY));
	json_t *msg = NULL, *error = NULL;
	int p = jsonrpc_parse(r->body ? r->body : "", r->len, &msg, &error);
	free(TAKE_PTR(r->body));
	if (p < 0)
		return queue(r, MHD_HTTP_BAD_REQUEST, json_response(error));
	if (p > 0)
		return queue(r, MHD_HTTP_BAD_REQUEST,
			     error_response(JSONRPC_INVALID_REQUEST,
					    "Bad Request: empty body (POST one JSON-RPC message)"));
	jsonrpc_msg m;
	if (jsonrpc_classify(msg, &m, &error) < 0) {
		json_decref(msg);
		return queue(r, MHD_HTTP_BAD_REQUEST,
			     error ? json_response(error)
				   : error_response(JSONRPC_INVALID_REQUEST, "Invalid Request"));
	}
	const char *pv = header(r->conn, "MCP-Protocol-Version");
	bool stateless = (pv && streq(pv, MCP_STATELESS_VERSION)) || meta_stateless(m.params);
	bool initialize = m.kind == JSONRPC_REQUEST && streq(m.method, "initialize");
	const char *sid = header(r->conn, "Mcp-Session-Id");
	enum MHD_Result ret;
	if (sid && !initialize) {
		if (!session_take(hs, r, sid)) {
			ret = queue(r, MHD_HTTP_NOT_FOUND,
				    error_response(HTTP_ERR_SESSION_NOT_FOUND,
						   "Session not found: '%.64s' (it ended or expired; send "
						   "initialize again without Mcp-Session-Id)",
						   sid));
			goto out;
		}
	} else if (!initialize && !stateless &&
		   !(m.kind == JSONRPC_REQUEST && sessionless_method(m.method))) {
		ret = queue(
		    r, MHD_HTTP_BAD_REQUEST,
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	http_server *hs = cls;
	http_req *r = *con_cls;
	if (!r) {
		r = req_new(hs, conn);
		if (!r)
			return MHD_NO;
		*con_cls = r;
		conn_phase_set(hs, conn, CONN_READING);
		return on_headers(hs, r, url, method);
	}
	if (r->responded) { /* rejected at the headers: discard the body */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (r->too_large || r->len + n > HTTP_MAX_BODY) {
			r->too_large = true; /* read on, keep nothing: 413 at the end */
			free(TAKE_PTR(r->body));
			r->len = r->cap = 0;
			return MHD_YES;
		}
		if (r->len + n > r->cap) {
			size_t cap = r->cap ? r->cap : 16384;
			while (cap < r->len + n)
				cap *= 2;
			char *b = realloc(r->body, cap);
			if (!b)
				return MHD_NO;
			r->body = b;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload_data, n);
		r->len += n;
		return MHD_YES;
	}
	conn_phase_set(hs, conn, CONN_BUSY);
	return on_body(hs, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	req_free(*con_cls);
	*con_cls = NULL;
	conn_phase_set(cls, conn, CONN_WAITING);
}

/* ---- setup ----------------------------------------------------------------------------- */

static int read_token(const char *path, char **ret, size_t *ret_len, sbx_err **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return err_errno(err, "token file '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "token file '%s'", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "token file '%s' is not a regular file",
			       path);
	if (st.st_mode & (S_IROTH | S_IWOTH))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
			       "token file '%s' is accessible to every user (mode %04o): run 'chmod 600 %s'",
			       path, (unsigned)(st.st_mode & 07777), path);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = fd_read_all(fd, TOKEN_MAX, &buf, &len);
	if (r == -EFBIG)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EFBIG, "token file '%s' is larger than %d bytes",
			       path, TOKEN_MAX);
	if (r < 0)
		return err_errnum(err, r, "token file '%s'", path);
	while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
		len--;
	size_t start = strspn(buf, " \t\r\n");
	if (start >= len)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "token file '%s' is empty", path);
	for (size_t i = start; i < len; i++)
		if ((unsigned char)buf[i] <= ' ' || (unsigned char)buf[i] == 0x7f)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "token file '%s' must hold one token: printable characters, no spaces",
				       path);
	char *t = strndup(buf + start, len - start);
	if (!t)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	*ret = t;
	*ret_len = len - start;
	return 0;
}

/* Binds and listens on "ADDR:PORT"; ret_url gets the endpoint URL. */
static int listen_on(const char *spec, int *ret_fd, int *ret_family, bool *ret_loopback, char **ret_url,
		     sbx_err **err)
{
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strlen(colon + 1) > 5 || atoi(colon + 1) > 65535)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "--listen '%s': expected ADDR:PORT (e.g. 127.0.0.1:7777 or [::1]:7777)", spec);
	_cleanup_free_ char *host = strndup(spec, (size_t)(colon - spec));
	if (!host)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	size_t hl = strlen(host);
	if (host[0] == '[') {
		if (hl < 3 || host[hl - 1] != ']')
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "--listen '%s': unbalanced brackets around the IPv6 address", spec);
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *ai = NULL;
	int g = getaddrinfo(host, colon + 1, &hints, &ai);
	if (g != 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--listen '%s': %s", spec,
			       gai_strerror(g));
	int fd = -1, saved = 0;
	struct addrinfo *a;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0)
			break;
		saved = errno;
		fd = safe_close(fd);
	}
	if (fd < 0) {
		freeaddrinfo(ai);
		return err_errnum(err, saved ? saved : EADDRNOTAVAIL, "listen on %s", spec);
	}
	int family = a->ai_family;
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;
	bool loopback = false;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
			port = ntohs(in->sin_port);
			loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
			port = ntohs(in6->sin6_port);
			loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		}
	}
	char *url = NULL;
	if (asprintf(&url, family == AF_INET6 ? "http://[%s]:%u" HTTP_PATH : "http://%s:%u" HTTP_PATH, addr,
		     port) < 0) {
		safe_close(fd);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	*ret_fd = fd;
	*ret_family = family;
	*ret_loopback = loopback;
	*ret_url = url;
	return 0;
}

static int stop_pipe[2] = {-1, -1};
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop_signal(int sig)
{
	int saved = errno;
	(void)!write(stop_pipe[1], "x", 1);
	errno = saved;
}

int mcp_serve_http(sbx_ctx *ctx, const mcp_http_opts *opts, sbx_err **err)
{
	if (mhd_load(err) < 0)
		return -1;
	if (tools_init() < 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "built-in tool schemas: %s", tools_init_error());
	http_server hs = {
	    .ctx = ctx,
	    .max_conns = opts->max_connections ? opts->max_connections : HTTP_MAX_CONNECTIONS,
	    .max_per_peer = opts->max_connections_per_peer ? opts->max_connections_per_peer
							   : HTTP_MAX_CONNECTIONS_PER_PEER,
	    .idle_us = (int64_t)(opts->idle_timeout_s ? opts->idle_timeout_s : HTTP_IDLE_TIMEOUT_S) * 1000000,
	    .request_us =
		(int64_t)(opts->request_timeout_s ? opts->request_timeout_s : HTTP_REQUEST_TIMEOUT_S) *
		1000000,
	    .sess_lim = {.max = opts->max_sessions ? opts->max_sessions : HTTP_MAX_SESSIONS,
			 .ttl_us = HTTP_SESSION_IDLE_US},
	};
	unsigned min_idle_s = opts->session_min_idle_s ? opts->session_min_idle_s : HTTP_SESSION_MIN_IDLE_S;
	hs.sess_lim.min_idle_us = MIN((int64_t)min_idle_s * 1000000, hs.sess_lim.ttl_us);
	hs.sess_lim.max_per_peer =
	    opts->max_sessions_per_peer ? opts->max_sessions_per_peer : (hs.sess_lim.max + 3) / 4;
	/* A thread and a descriptor per connection: make room for them. */
	struct rlimit rl;
	rlim_t need = (rlim_t)hs.max_conns + HTTP_LIMIT_SLACK + 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need)
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EMFILE,
			    "--max-connections %u needs %llu open files, and this process may open only "
			    "%llu (ulimit -n)",
			    hs.max_conns, (unsigned long long)need, (unsigned long long)rl.rlim_cur);
	}
	if (opts->token_file && read_token(opts->token_file, &hs.token, &hs.token_len, err) < 0)
		return -1;
	int fd = -1, family = AF_INET;
	bool loopback = false;
	_cleanup_free_ char *url = NULL;
	if (listen_on(opts->listen, &fd, &family, &loopback, &url, err) < 0) {
		free(hs.token);
		return -1;
	}
	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		safe_close(fd);
		free(hs.token);
		return err_errno(err, "pipe");
	}
	hs.sess_meta = calloc(hs.sess_lim.max, sizeof(*hs.sess_meta));
	hs.sess_id = calloc(hs.sess_lim.max, sizeof(*hs.sess_id));
	if (!hs.sess_meta || !hs.sess_id) {
		free(hs.sess_meta);
		free(hs.sess_id);
		safe_close(fd);
		free(hs.token);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	pthread_mutex_init(&hs.lock, NULL);
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD;
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	struct MHD_Daemon *d =
	    MHD_start_daemon(flags, 0, on_accept, &hs, on_request, &hs, MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, &hs, MHD_OPTION_NOTIFY_CONNECTION,
			     on_connection, &hs, MHD_OPTION_CONNECTION_LIMIT, hs.max_conns + HTTP_LIMIT_SLACK,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(hs.idle_us / 1000000), MHD_OPTION_END);
	if (!d) {
		safe_close(fd);
		pthread_mutex_destroy(&hs.lock);
		free(hs.sess_meta);
		free(hs.sess_id);
		free(hs.token);
		return err_set(err, SBX_E_INTERNAL, EIO, "cannot start the HTTP server on %s", opts->listen);
	}

	struct sigaction sa = {.sa_handler = on_stop_signal}, old[ARRAY_SIZE(stop_signals)];
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &sa, &old[i]);
	if (opts->on_ready)
		opts->on_ready(url, loopback, opts->userdata);

	for (;;) {
		struct pollfd p = {.fd = stop_pipe[0], .events = POLLIN};
		int n = poll(&p, 1, HTTP_REAP_INTERVAL_MS);
		if (n > 0)
			break;
		if (n == 0) {
			conn_reap(&hs);
			continue;
		}
		if (errno != EINTR)
			break;
	}
	char drain[16];
	while (read(stop_pipe[0], drain, sizeof(drain)) > 0)
		;
	/* Cancel what is in flight; each connection thread then waits for its
	 * call to end (undo included), and MHD_stop_daemon for the threads. */
	pthread_mutex_lock(&hs.lock);
	hs.stopping = true;
	for (http_req *a = hs.active; a; a = a->next)
		req_cancel_locked(a);
	pthread_mutex_unlock(&hs.lock);
	MHD_stop_daemon(d); /* closes the listening socket too */
	/* Destroys answered but still being torn down. */
	reaper_drain();

	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &old[i], NULL);
	while (hs.conns) { /* MHD_stop_daemon notified every close; nothing should be left */
		http_conn *c = hs.conns;
		hs.conns = c->next;
		free(c);
	}
	free(hs.sess_meta);
	free(hs.sess_id);
	pthread_mutex_destroy(&hs.lock);
	free(hs.token);
	return 0;
}
