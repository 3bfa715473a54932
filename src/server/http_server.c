/* The HTTP server (see http_server.h), on libmicrohttpd.
 *
 * Threads: libmicrohttpd runs one thread per connection, and every handler
 * of a request runs on its connection's thread (it may block: a call
 * running, a stream waiting for its next bytes, a proxied socket). The main
 * thread (http_server_run) reaps the connections past their deadline every
 * 250 ms and waits for a stop signal.
 *
 * A request goes: headers in -> route (on_headers: the first route that
 * takes it, else the fallback) -> Origin -> the family's auth -> the
 * route's headers handler -> the body, read whole up to the route's
 * max_body -> the route's body handler. A connection's phase follows it
 * (waiting, reading, busy) for the limits below. */
#include "server/http_server.h"

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
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "server/http_parse.h"
#include "util/err.h"
#include "util/fd.h"
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
	__typeof__(&MHD_get_connection_values) get_connection_values;
	__typeof__(&MHD_get_connection_info) get_connection_info;
	__typeof__(&MHD_destroy_response) destroy_response;
	__typeof__(&MHD_create_response_for_upgrade) create_response_for_upgrade;
	__typeof__(&MHD_upgrade_action) upgrade_action;
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
	MHD_SYM(get_connection_values, MHD_get_connection_values)
	MHD_SYM(get_connection_info, MHD_get_connection_info)
	MHD_SYM(destroy_response, MHD_destroy_response)
	MHD_SYM(create_response_for_upgrade, MHD_create_response_for_upgrade)
	MHD_SYM(upgrade_action, MHD_upgrade_action)
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
#define MHD_get_connection_values mhd.get_connection_values
#define MHD_get_connection_info mhd.get_connection_info
#define MHD_destroy_response mhd.destroy_response
#define MHD_create_response_for_upgrade mhd.create_response_for_upgrade
#define MHD_upgrade_action mhd.upgrade_action

#define HTTP_DISCARD_MAX ((size_t)64 << 20) /* larger bodies get their 413 before they are read */
/* Defaults of the connection limits (http_server_opts; docs/server.md). */
#define HTTP_MAX_CONNECTIONS 256	 /* in total: each is a thread */
#define HTTP_MAX_CONNECTIONS_PER_PEER 64 /* from one address */
#define HTTP_IDLE_TIMEOUT_S 60		 /* an idle keep-alive connection is closed after this */
#define HTTP_REQUEST_TIMEOUT_S 30	 /* to send one request's headers and body */
#define HTTP_REAP_INTERVAL_MS 250
#define HTTP_LIMIT_SLACK 32 /* libmicrohttpd's own limit is ours plus this: evicted ones still closing */
#define HTTP_MAX_FAMILIES 8
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define TOKEN_MAX 4096

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
	bool authorized;     /* has sent a request that passed its family's auth */
	bool evicted;	     /* shut down by us: no longer counted */
	struct http_conn *next;
} http_conn;

struct http_server {
	char *listen;
	void (*on_ready)(const char *url, bool loopback, void *userdata);
	void *userdata;
	http_family families[HTTP_MAX_FAMILIES];
	size_t n_families;
	pthread_mutex_t lock; /* guards conns */
	http_conn *conns;     /* every open connection */
	unsigned max_conns, max_per_peer;
	int64_t idle_us, request_us;
	_Atomic bool loopback; /* it listens on a loopback address only */
	bool loopback_only;    /* refuse to listen beyond loopback (http_server_opts) */
};

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
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

/* ---- requests: headers, for handlers ---------------------------------------------------- */

const char *http_request_header(const http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

bool http_server_loopback(const http_server *hs)
{
	return hs->loopback;
}

const char *http_request_query(const http_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct each_cls {
	void (*fn)(void *ud, const char *name, const char *value);
	void *ud;
} each_cls;

static enum MHD_Result each_value(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	each_cls *e = cls;
	(void)kind;
	e->fn(e->ud, key, value);
	return MHD_YES;
}

void http_request_each(const http_request *req, bool query,
		       void (*fn)(void *ud, const char *name, const char *value), void *ud)
{
	each_cls e = {fn, ud};
	MHD_get_connection_values(req->conn, query ? MHD_GET_ARGUMENT_KIND : MHD_HEADER_KIND, each_value, &e);
}

const struct sockaddr *http_request_peer(const http_request *req)
{
	const union MHD_ConnectionInfo *ai =
	    MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	return ai ? ai->client_addr : NULL;
}

int http_request_fd(const http_request *req)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* Setting it from 0 also restarts the idle clock. */
void http_request_busy(http_request *req, bool busy)
{
	MHD_set_connection_option(req->conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  busy ? 0u : (unsigned)(req->server->idle_us / 1000000));
}

/* ---- responses ------------------------------------------------------------------------ */

/* An http_response is a struct MHD_Response, never dereferenced as ours. */
#define MHD_OF(resp) ((struct MHD_Response *)(resp))

http_response *http_response_buffer(char *body, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp)
		free(body);
	return (http_response *)resp;
}

http_response *http_response_empty(void)
{
	return (http_response *)MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	http_request *r = cls;
	return r->stream_read(r->handler_cls, buf, max);
}

static void stream_free(void *cls)
{
	/* cls is the request, freed when it ends (on_completed). */
}

http_response *http_response_stream(http_request *req, size_t block,
				    ssize_t (*read)(void *cls, char *buf, size_t max), void *cls)
{
	_Static_assert(HTTP_STREAM_END == (ssize_t)MHD_CONTENT_READER_END_OF_STREAM &&
			   HTTP_STREAM_ERROR == (ssize_t)MHD_CONTENT_READER_END_WITH_ERROR,
		       "the stream's ends are libmicrohttpd's");
	req->stream_read = read;
	req->handler_cls = cls;
	return (http_response *)MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, block, stream_read, req,
								  stream_free);
}

/* The connection is the handler's now (http_response_upgrade). */
static void on_upgraded(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
			size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	http_request *r = con_cls;
	conn_phase_set(r->server, conn, CONN_BUSY);
	(void)fd_set_nonblock(sock, 0); /* libmicrohttpd's sockets are non-blocking; the handler's is not */
	r->upgrade_fn(r->handler_cls, sock, extra_in, extra_in_size);
	MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

http_response *http_response_upgrade(http_request *req,
				     void (*fn)(void *cls, int fd, const char *extra, size_t extra_len),
				     void *cls)
{
	req->upgrade_fn = fn;
	req->handler_cls = cls;
	return (http_response *)MHD_create_response_for_upgrade(on_upgraded, NULL);
}

int http_response_header(http_response *resp, const char *name, const char *value)
{
	return MHD_add_response_header(MHD_OF(resp), name, value) == MHD_YES ? 0 : -1;
}

http_result http_respond(http_request *req, unsigned status, http_response *resp)
{
	if (!resp)
		return HTTP_CLOSE;
	if (req->close)
		(void)MHD_add_response_header(MHD_OF(resp), MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result ret = MHD_queue_response(req->conn, status, MHD_OF(resp));
	MHD_destroy_response(MHD_OF(resp));
	req->responded = true;
	return ret == MHD_YES ? HTTP_OK : HTTP_CLOSE;
}

/* The server's own refusal, in the family's format. */
static enum MHD_Result refuse(http_request *r, unsigned status, const char *fmt, ...) _printf_(3, 4);
static enum MHD_Result refuse(http_request *r, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!r->family->error)
		return http_respond(r, status, http_response_empty()) == HTTP_OK ? MHD_YES : MHD_NO;
	return r->family->error(r, status, msg) == HTTP_OK ? MHD_YES : MHD_NO;
}

/* ---- dispatch ------------------------------------------------------------------------- */

static bool route_takes(const http_route *rt, const http_request *r)
{
	if (rt->method && !streq(rt->method, r->method))
		return false;
	if (rt->path &&
	    !(rt->prefix ? strncmp(r->path, rt->path, strlen(rt->path)) == 0 : streq(r->path, rt->path)))
		return false;
	return !rt->match || rt->match(r);
}

/* Sets r's family and route: the first route that takes it, else the first
 * family's fallback. False if none. */
static bool route_find(const http_server *hs, http_request *r)
{
	for (size_t i = 0; i < hs->n_families; i++) {
		r->family = &hs->families[i]; /* a predicate may read its family's data */
		r->data = r->family->data;
		for (size_t k = 0; k < hs->families[i].n_routes; k++)
			if (route_takes(&hs->families[i].routes[k], r)) {
				r->route = &hs->families[i].routes[k];
				return true;
			}
	}
	r->family = NULL;
	r->data = NULL;
	for (size_t i = 0; i < hs->n_families; i++)
		if (hs->families[i].fallback) {
			r->family = &hs->families[i];
			r->route = hs->families[i].fallback;
			r->data = r->family->data;
			return true;
		}
	return false;
}

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	http_framing *f = cls;
	(void)kind;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0 && f->n_content_length++ == 0)
		f->content_length = value ?: "";
	else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0 && f->n_transfer_encoding++ == 0)
		f->transfer_encoding = value ?: "";
	return MHD_YES;
}

/* The checks that need only the headers. Returns MHD_YES to go on reading
 * the body (r->responded false), or the result of queueing a response. */
static enum MHD_Result on_headers(http_server *hs, http_request *r)
{
	if (!route_find(hs, r))
		return http_respond(r, MHD_HTTP_NOT_FOUND, http_response_empty()) == HTTP_OK ? MHD_YES
											     : MHD_NO;
	const http_family *f = r->family;
	const http_route *rt = r->route;
	http_framing fr = {0};
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_framing, &fr);
	const char *why = NULL;
	unsigned bad = http_framing_check(&fr, &why);
	if (bad) {
		r->close = true; /* where its body ends is unknown */
		return refuse(r, bad, "%s: %s", bad == 400 ? "Bad Request" : "Not Implemented", why);
	}
	if (!rt->open) {
		const char *origin = http_request_header(r, "Origin");
		if (f->local_origin && origin && !http_origin_local(origin))
			return refuse(r, MHD_HTTP_FORBIDDEN,
				      "Forbidden: Origin '%.128s' is not allowed (only http(s)://localhost, "
				      "127.0.0.1 and [::1])",
				      origin);
		if (f->auth) {
			http_result a = f->auth(r);
			if (a == HTTP_CLOSE || r->responded)
				return a == HTTP_OK ? MHD_YES : MHD_NO;
		}
		conn_authorized(hs, r->conn);
	}
	if (rt->headers) {
		http_result h = rt->headers(r);
		if (h == HTTP_CLOSE || r->responded)
			return h == HTTP_OK ? MHD_YES : MHD_NO;
	}
	if (!rt->body)
		return MHD_NO; /* a route whose headers handler did not answer */
	/* Too large: read on and answer 413 at the end (a client busy sending
	 * does not see an early answer), unless it is absurdly large. */
	const char *cl = http_request_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long clen = cl ? strtoull(cl, NULL, 10) : 0;
	r->too_large = clen > rt->max_body;
	if (r->too_large && clen > HTTP_DISCARD_MAX)
		return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, "Payload Too Large: the limit is %zu bytes",
			      rt->max_body);
	return MHD_YES;
}

/* The body is complete. */
static enum MHD_Result on_body(http_request *r)
{
	if (r->too_large)
		return refuse(r, MHD_HTTP_CONTENT_TOO_LARGE, "Payload Too Large: the limit is %zu bytes",
			      r->route->max_body);
	return r->route->body(r) == HTTP_OK ? MHD_YES : MHD_NO;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	http_server *hs = cls;
	http_request *r = *con_cls;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->server = hs;
		r->conn = conn;
		r->method = method;
		r->path = url;
		*con_cls = r;
		conn_phase_set(hs, conn, CONN_READING);
		return on_headers(hs, r);
	}
	if (r->responded) { /* answered at the headers: discard the body */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (r->too_large || r->body_len + n > r->route->max_body) {
			r->too_large = true; /* read on, keep nothing: 413 at the end */
			free(TAKE_PTR(r->body));
			r->body_len = r->body_cap = 0;
			return MHD_YES;
		}
		if (r->body_len + n > r->body_cap) {
			size_t cap = r->body_cap ? r->body_cap : 16384;
			while (cap < r->body_len + n)
				cap *= 2;
			char *b = realloc(r->body, cap);
			if (!b)
				return MHD_NO;
			r->body = b;
			r->body_cap = cap;
		}
		memcpy(r->body + r->body_len, upload_data, n);
		r->body_len += n;
		return MHD_YES;
	}
	conn_phase_set(hs, conn, CONN_BUSY);
	return on_body(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	http_request *r = *con_cls;
	if (r) {
		if (r->family && r->family->done)
			r->family->done(r);
		free(r->body);
		free(r);
	}
	*con_cls = NULL;
	conn_phase_set(cls, conn, CONN_WAITING);
}

/* ---- setup ----------------------------------------------------------------------------- */

int http_token_file_read(const char *path, char **ret, size_t *ret_len, sbx_err **err)
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

/* Binds and listens on "ADDR:PORT"; ret_url gets the base URL. */
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
	if (asprintf(&url, family == AF_INET6 ? "http://[%s]:%u" : "http://%s:%u", addr, port) < 0) {
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

int http_server_new(const http_server_opts *opts, http_server **ret, sbx_err **err)
{
	if (mhd_load(err) < 0)
		return -1;
	http_server *hs = calloc(1, sizeof(*hs));
	if (!hs || !(hs->listen = strdup(opts->listen))) {
		free(hs);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	hs->on_ready = opts->on_ready;
	hs->loopback_only = opts->loopback_only;
	hs->userdata = opts->userdata;
	hs->max_conns = opts->max_connections ? opts->max_connections : HTTP_MAX_CONNECTIONS;
	hs->max_per_peer =
	    opts->max_connections_per_peer ? opts->max_connections_per_peer : HTTP_MAX_CONNECTIONS_PER_PEER;
	hs->idle_us = (int64_t)(opts->idle_timeout_s ? opts->idle_timeout_s : HTTP_IDLE_TIMEOUT_S) * 1000000;
	hs->request_us =
	    (int64_t)(opts->request_timeout_s ? opts->request_timeout_s : HTTP_REQUEST_TIMEOUT_S) * 1000000;
	pthread_mutex_init(&hs->lock, NULL);
	/* A thread and a descriptor per connection: make room for them. */
	struct rlimit rl;
	rlim_t need = (rlim_t)hs->max_conns + HTTP_LIMIT_SLACK + 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EMFILE,
				"--max-connections %u needs %llu open files, and this process may open only "
				"%llu (ulimit -n)",
				hs->max_conns, (unsigned long long)need, (unsigned long long)rl.rlim_cur);
			http_server_free(hs);
			return -1;
		}
	}
	*ret = hs;
	return 0;
}

int http_server_add(http_server *hs, const http_family *f, sbx_err **err)
{
	if (hs->n_families == HTTP_MAX_FAMILIES)
		return err_set(err, SBX_E_INTERNAL, ENOSPC, "more than %d HTTP route families",
			       HTTP_MAX_FAMILIES);
	hs->families[hs->n_families++] = *f;
	return 0;
}

void http_server_free(http_server *hs)
{
	if (!hs)
		return;
	for (size_t i = 0; i < hs->n_families; i++)
		if (hs->families[i].release)
			hs->families[i].release(hs->families[i].data);
	while (hs->conns) { /* MHD_stop_daemon notified every close; nothing should be left */
		http_conn *c = hs->conns;
		hs->conns = c->next;
		free(c);
	}
	pthread_mutex_destroy(&hs->lock);
	free(hs->listen);
	free(hs);
}

int http_server_run(http_server *hs, sbx_err **err)
{
	int fd = -1, family = AF_INET;
	bool loopback = false;
	_cleanup_free_ char *url = NULL;
	if (listen_on(hs->listen, &fd, &family, &loopback, &url, err) < 0)
		return -1;
	hs->loopback = loopback;
	if (hs->loopback_only && !loopback) {
		safe_close(fd);
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EPERM,
		    "%s is beyond loopback and there is no --token-file: anyone who reaches it could run "
		    "commands. Give --token-file F, or --insecure-no-token to serve it open anyway",
		    url ? url : hs->listen);
	}
	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		safe_close(fd);
		return err_errno(err, "pipe");
	}
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_UPGRADE;
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	struct MHD_Daemon *d = MHD_start_daemon(
	    flags, 0, on_accept, hs, on_request, hs, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, hs, MHD_OPTION_NOTIFY_CONNECTION, on_connection, hs,
	    MHD_OPTION_CONNECTION_LIMIT, hs->max_conns + HTTP_LIMIT_SLACK, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)(hs->idle_us / 1000000), MHD_OPTION_END);
	if (!d) {
		safe_close(fd);
		return err_set(err, SBX_E_INTERNAL, EIO, "cannot start the HTTP server on %s", hs->listen);
	}

	struct sigaction sa = {.sa_handler = on_stop_signal}, old[ARRAY_SIZE(stop_signals)];
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &sa, &old[i]);
	if (hs->on_ready)
		hs->on_ready(url, loopback, hs->userdata);

	for (;;) {
		struct pollfd p = {.fd = stop_pipe[0], .events = POLLIN};
		int n = poll(&p, 1, HTTP_REAP_INTERVAL_MS);
		if (n > 0)
			break;
		if (n == 0) {
			conn_reap(hs);
			continue;
		}
		if (errno != EINTR)
			break;
	}
	char drain[16];
	while (read(stop_pipe[0], drain, sizeof(drain)) > 0)
		;
	/* Each family cancels what is in flight; each connection thread then
	 * waits for its handler to end, and MHD_stop_daemon for the threads. */
	for (size_t i = 0; i < hs->n_families; i++)
		if (hs->families[i].stop)
			hs->families[i].stop(hs->families[i].data);
	MHD_stop_daemon(d); /* closes the listening socket too */
	for (size_t i = 0; i < hs->n_families; i++)
		if (hs->families[i].stopped)
			hs->families[i].stopped(hs->families[i].data);

	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &old[i], NULL);
	return 0;
}
