/* The HTTP server of `sbx serve`: one port, several route families.
 *
 * The server owns what every family shares: the listening socket, one
 * thread per connection (libmicrohttpd), the connection limits (in total
 * and per peer, eviction of waiting connections) and timeouts (request,
 * idle), the Origin check, the body size limit, and shutdown on SIGINT,
 * SIGTERM or SIGHUP. What is served is a family (http_family): a set of
 * routes with its own authentication and its own error format, registered
 * with http_server_add(). `sbx serve` registers MCP's (http_mcp.c: POST,
 * DELETE and GET /mcp); another API adds a family of its own the same way.
 *
 * A request is matched against the routes in registration order (families
 * in the order they were added, each family's routes in its order): a route
 * takes a request when its method (or any), its path (exact, a prefix, or
 * any) and its predicate (any test of the request's headers: a header that
 * names a sandbox, a Host of the form {port}-{id}.{domain}) all say so. A
 * request no route takes gets the fallback route of the first family that
 * has one (404).
 * Then, in this order: the Origin check (a family that serves only local
 * pages), the family's auth (its token: a bearer token, an API key; a route
 * may be open), the route's headers handler (which may answer at once), the
 * body (read whole, up to the route's max_body, else 413), the route's body
 * handler. A handler answers with a whole body (http_response_buffer), a
 * stream it produces as the client reads (http_response_stream: SSE,
 * chunked), or takes the connection over (http_response_upgrade: 101, then
 * the socket is the handler's, for a proxy or a WebSocket). A handler may
 * block: it runs on its connection's thread.
 *
 * A family of its own per auth, e.g. a sandbox data plane beside MCP
 * (tests/unit/test_http_server.c runs one):
 *     static const http_route data_routes[] = {
 *         {.match = names_sandbox, .headers = proxy_or_envd}, // by header or Host
 *     };
 *     http_family data = {.name = "e2b-data", .data = st, .routes = data_routes,
 *                         .n_routes = 1, .auth = sandbox_token, .done = free_state};
 *     http_server_add(hs, &data, err); // before http_mcp_add: its predicate goes first
 *
 * The pure checks (Origin, media types, the bearer token, the
 * constant-time compare) are in http_parse.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "sbx.h"

typedef struct http_server http_server;
typedef struct http_request http_request;
typedef struct http_response http_response;
typedef struct http_route http_route;
typedef struct http_family http_family;
struct MHD_Connection;

typedef struct http_server_opts {
	const char *listen; /* "ADDR:PORT": 127.0.0.1:7777, [::1]:7777, localhost:0 (any free port) */
	/* Called once the socket listens, with the server's base URL ("http://127.0.0.1:7777")
	 * and whether the address is loopback-only. May be NULL. */
	void (*on_ready)(const char *url, bool loopback, void *userdata);
	void *userdata;
	/* Connection limits (0: the default; docs/server.md). Past a limit a new
	 * connection evicts the oldest one only waiting for a request (the
	 * never-authorized first), or is refused if every one is busy. */
	unsigned max_connections;	   /* in total (default 256) */
	unsigned max_connections_per_peer; /* from one IP address (default 64) */
	unsigned idle_timeout_s;	   /* an authorized keep-alive connection may idle this long (60) */
	/* Refuse to serve on an address beyond loopback (EPERM, before accepting
	 * anything): `sbx serve` without a token, which would run code for
	 * whoever reaches the port. */
	bool loopback_only;
	unsigned request_timeout_s; /* to send a request's headers and body, from the connection's
				       opening or its last response (30); a connection that has not
				       been authorized yet gets the smaller of the two */
} http_server_opts;

/* What a handler returns: HTTP_OK once it has answered with http_respond()
 * (or, from a headers handler, to have the body read), HTTP_CLOSE to drop
 * the connection without an answer. */
typedef enum { HTTP_CLOSE = 0, HTTP_OK = 1 } http_result;

/* One request, from its headers to the end of its response; handlers run
 * on its connection's thread. */
struct http_request {
	http_server *server;
	const http_family *family;
	const http_route *route;
	void *data;	    /* the family's data */
	const char *method; /* "POST" */
	const char *path;   /* the URL's path, without the query */
	char *body;	    /* the body (body_len bytes; NULL if empty); a handler may take it */
	size_t body_len;
	bool too_large; /* the body was over route->max_body (the family's error renders the 413) */
	bool responded; /* a response was queued */
	bool close;	/* the response closes the connection (Connection: close) */
	void *state;	/* the handler's own (a call in flight): family->done frees it */
	/* The server's. */
	struct MHD_Connection *conn;
	size_t body_cap;
	ssize_t (*stream_read)(void *cls, char *buf, size_t max);
	void (*upgrade_fn)(void *cls, int fd, const char *extra, size_t extra_len);
	void *handler_cls; /* stream_read's or upgrade_fn's */
};

struct http_route {
	const char *method; /* NULL: any */
	const char *path;   /* NULL: any; else the path, or its prefix if prefix */
	bool prefix;
	/* NULL: method and path decide; else must also hold (reads headers
	 * only; req->data is already its family's). */
	bool (*match)(const http_request *req);
	bool open;	 /* served without the family's checks, Origin and auth (a not-found page) */
	size_t max_body; /* a larger body gets 413 (0: none accepted) */
	/* The headers are in. Answers (http_respond), or returns HTTP_OK without
	 * answering to have the body read. NULL: read the body. */
	http_result (*headers)(http_request *req);
	/* The body is in (req->body). NULL: the headers handler always answers. */
	http_result (*body)(http_request *req);
};

struct http_family {
	const char *name; /* "mcp" */
	void *data;	  /* req->data, and the hooks' argument */
	const http_route *routes;
	size_t n_routes;
	const http_route *fallback; /* for a request no route takes; NULL: none */
	bool local_origin;	    /* an Origin header must be local (http_origin_local), else 403 */
	/* The family's token check: answers (401), or returns HTTP_OK without
	 * answering to let the request on (its connection then counts as
	 * authorized). NULL: every request is let on. */
	http_result (*auth)(http_request *req);
	/* Answers with the server's own refusal (403 Origin, 413 body) in the
	 * family's format; msg says why. */
	http_result (*error)(http_request *req, unsigned status, const char *msg);
	void (*done)(
	    http_request *req);	     /* the request ended (answered or not): frees req->state; may be NULL */
	void (*stop)(void *data);    /* the server stops: cancel what runs (the connections still up) */
	void (*stopped)(void *data); /* every connection has closed */
	void (*release)(void *data); /* http_server_free: frees data */
};

/* HTTP status codes the families use. */
enum {
	HTTP_STATUS_SWITCHING_PROTOCOLS = 101,
	HTTP_STATUS_OK = 200,
	HTTP_STATUS_ACCEPTED = 202,
	HTTP_STATUS_BAD_REQUEST = 400,
	HTTP_STATUS_UNAUTHORIZED = 401,
	HTTP_STATUS_FORBIDDEN = 403,
	HTTP_STATUS_NOT_FOUND = 404,
	HTTP_STATUS_METHOD_NOT_ALLOWED = 405,
	HTTP_STATUS_CONTENT_TOO_LARGE = 413,
	HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE = 415,
	HTTP_STATUS_INTERNAL_SERVER_ERROR = 500,
	HTTP_STATUS_SERVICE_UNAVAILABLE = 503,
};

/* Loads libmicrohttpd and checks that the limits fit this process
 * (RLIMIT_NOFILE is raised for a thread and a descriptor per connection).
 * Listens only in http_server_run. */
int http_server_new(const http_server_opts *opts, http_server **ret, sbx_err **err);
/* Adds family f (copied; its routes and data must live as long as the
 * server). On failure the caller still owns f->data. */
int http_server_add(http_server *hs, const http_family *f, sbx_err **err);
/* Listens and serves until SIGINT, SIGTERM or SIGHUP, then calls each
 * family's stop, closes every connection (their threads end), calls each
 * family's stopped and returns 0 (the previous signal handlers are
 * restored). Fails only if the server cannot start: a bad address, a port
 * in use. */
int http_server_run(http_server *hs, sbx_err **err);
/* Releases the families (their release hooks) and the server; NULL is a no-op. */
void http_server_free(http_server *hs);

/* True once it listens, if on a loopback address only (127.0.0.0/8, ::1). */
bool http_server_loopback(const http_server *hs);

/* ---- for handlers -------------------------------------------------------------------- */

/* A request header (name case-insensitive), or NULL. */
const char *http_request_header(const http_request *req, const char *name);
/* A query argument of the URL (name case-sensitive), %-decoded once, or NULL. */
const char *http_request_query(const http_request *req, const char *name);
/* Calls fn with each request header (query false) or each query argument
 * (query true, %-decoded once; value NULL where it had no '='), in the
 * order the client sent them (a proxy forwards them). */
void http_request_each(const http_request *req, bool query,
		       void (*fn)(void *ud, const char *name, const char *value), void *ud);
/* The client's address; NULL if unknown. */
const struct sockaddr *http_request_peer(const http_request *req);
/* The connection's socket, to watch for a client that hangs up (POLLRDHUP); -1 if unknown. */
int http_request_fd(const http_request *req);
/* A handler that waits long (a call running) lifts the idle timeout while
 * it does (busy true) and sets it again after (busy false, which also
 * restarts the idle clock). */
void http_request_busy(http_request *req, bool busy);

/* Responses: made, given headers, then queued with http_respond, which takes
 * it (NULL: HTTP_CLOSE). */
/* A whole body, taken (freed on failure too). */
http_response *http_response_buffer(char *body, size_t len);
http_response *http_response_empty(void);
/* A body the client of req reads as read() produces it, in blocks of up to
 * `block` bytes, chunked: read returns the bytes written to buf (it may
 * block until it has some), HTTP_STREAM_END or HTTP_STREAM_ERROR (the
 * connection is cut: the client sees no proper end). cls must live until
 * the request ends (family->done). */
#define HTTP_STREAM_END ((ssize_t)-1)
#define HTTP_STREAM_ERROR ((ssize_t)-2)
http_response *http_response_stream(http_request *req, size_t block,
				    ssize_t (*read)(void *cls, char *buf, size_t max), void *cls);
/* Takes req's connection over: queue it with status 101 (and the Upgrade
 * header); once it is sent, fn runs on the connection's thread with the
 * socket (blocking) and the bytes the client sent after its request. The
 * socket is fn's until it returns (it may shut it down, not close it); the server
 * then closes it. The connection counts as busy meanwhile (no timeout cuts
 * it). */
http_response *http_response_upgrade(http_request *req,
				     void (*fn)(void *cls, int fd, const char *extra, size_t extra_len),
				     void *cls);
int http_response_header(http_response *resp, const char *name, const char *value);
http_result http_respond(http_request *req, unsigned status, http_response *resp);

/* Reads a token file for a family's auth: a regular file, not accessible to
 * other users, holding one token of printable characters (surrounding
 * whitespace dropped). */
int http_token_file_read(const char *path, char **ret, size_t *ret_len, sbx_err **err);
