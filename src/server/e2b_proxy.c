/* The E2B port proxy (e2b_ports.h, docs/e2b.md): a request for any port of
 * a sandbox but envd's (49983) and the code interpreter's (49999) goes to
 * that TCP port on the sandbox's own loopback, reached with
 * sbx_env_port_connect (a socket made inside the sandbox's network
 * namespace: nothing of the host is reachable this way).
 *
 * One upstream connection per request: the request head is rebuilt
 * (proxy_http.h: no framing of the client's passes, so nothing is smuggled)
 * and sent with the body (read whole by the server first, up to
 * E2B_PROXY_MAX_BODY); the answer's head is read (bounded), its end-to-end
 * headers copied, and its body streamed to the client as it comes
 * (util/http1.h de-frames it; libmicrohttpd frames it again). The client's
 * connection keeps alive as libmicrohttpd decides. A 101 answer to an
 * Upgrade request (a WebSocket) hands both sockets to util/relay.h until
 * either side ends. 502 when nothing listens there (E2B's body), or when
 * the server's answer is malformed. While waiting for the sandbox's server
 * the client's socket is watched: a client that leaves ends the wait. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/e2b_data.h"
#include "server/e2b_ports.h"
#include "server/e2b_reply.h"
#include "server/http_e2b.h"
#include "server/proxy_http.h"
#include "store/digest.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/http1.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/relay.h"
#include "util/strbuf.h"

#define PROXY_CONNECT_TIMEOUT_MS 5000
#define PROXY_READ 65536
#define HTTP_STATUS_BAD_GATEWAY 502

void e2b_traffic_token(const char *token, char ret[E2B_TRAFFIC_TOKEN_LEN + 1])
{
	char d[STORE_DIGEST_SIZE];
	_cleanup_free_ char *s = NULL;
	ret[0] = 0;
	if (!token || !*token || asprintf(&s, "sbx-e2b-traffic:%s", token) < 0)
		return;
	if (store_digest_buf(s, strlen(s), d, NULL) == 0)
		memcpy(ret, d + strlen(STORE_DIGEST_PREFIX), E2B_TRAFFIC_TOKEN_LEN + 1);
}

bool e2b_proxy_match(const http_request *req)
{
	if (!e2b_req_sandbox(req))
		return false;
	uint16_t p = e2b_req_port(req);
	return p != HTTP_E2B_ENVD_PORT && p != E2B_CODE_PORT;
}

static http_result reply_status(http_request *req, unsigned status, const char *msg, uint16_t port)
{
	json_t *j = json_pack("{s:s,s:s,s:i,s:i}", "sandboxId", e2b_req_sandbox(req), "message", msg, "port",
			      (int)port, "code", (int)status);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	http_response *resp = s ? http_response_buffer(s, strlen(s)) : NULL;
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", "application/json");
	return http_respond(req, status, resp);
}

static http_result reply_502(http_request *req, const char *msg, uint16_t port)
{
	return reply_status(req, HTTP_STATUS_BAD_GATEWAY, msg, port);
}

/* ---- the request ------------------------------------------------------------------------- */

typedef struct head_cls {
	strbuf *b;
	const char *connection;
	bool first, bad;
} head_cls;

static void add_query(void *ud, const char *name, const char *value)
{
	head_cls *h = ud;
	proxy_req_query(h->b, h->first, name, value);
	h->first = false;
}

static void add_header(void *ud, const char *name, const char *value)
{
	head_cls *h = ud;
	if (value && proxy_req_header_kept(name, h->connection))
		(void)proxy_req_header(h->b, name, value);
}

/* ---- the answer --------------------------------------------------------------------------- */

typedef struct proxy_conn {
	e2b_req_state base;
	int up;	    /* the sandbox's server */
	int client; /* the client's socket, watched for a hang-up; -1 unknown */
	strbuf in;  /* bytes from up not fed to the parser yet (from in_off) */
	size_t in_off;
	http1_parser p;
	bool eof, done;
	char *out; /* the read callback's buffer while it feeds */
	size_t out_len, out_max;
	/* a 101: what follows the head */
	char *rest;
	size_t rest_len;
} proxy_conn;

static void conn_free(e2b_req_state *s)
{
	proxy_conn *c = (proxy_conn *)s;
	if (c->up >= 0)
		close(c->up);
	strbuf_free(&c->in);
	free(c->rest);
	free(c);
}

/* Waits for up to be readable, or the client to leave: 1 readable, 0 the
 * client left, -1 error. */
static int wait_up(proxy_conn *c)
{
	for (;;) {
		struct pollfd p[2] = {{.fd = c->up, .events = POLLIN},
				      {.fd = c->client, .events = POLLRDHUP}};
		int n = poll(p, c->client >= 0 ? 2 : 1, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (p[0].revents)
			return 1;
		if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
			return 0;
	}
}

/* Reads more from up into c->in: >0 bytes, 0 EOF, -1 error or client gone. */
static ssize_t read_up(proxy_conn *c, size_t max)
{
	int w = wait_up(c);
	if (w <= 0)
		return -1;
	if (c->in_off == c->in.len) {
		strbuf_reset(&c->in);
		c->in_off = 0;
	}
	char buf[PROXY_READ];
	ssize_t n = recv(c->up, buf, max < sizeof(buf) ? max : sizeof(buf), 0);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? read_up(c, max) : -1;
	strbuf_add(&c->in, buf, (size_t)n);
	return c->in.oom ? -1 : n;
}

static int body_out(void *ud, const char *data, size_t len)
{
	proxy_conn *c = ud;
	if (c->out_len + len > c->out_max)
		return -1; /* cannot happen: a body is never longer than what was fed */
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

/* The stream's read callback: the body, de-framed, as it comes. */
static ssize_t body_read(void *cls, char *buf, size_t max)
{
	proxy_conn *c = cls;
	for (;;) {
		if (c->done)
			return HTTP_STREAM_END;
		if (c->in_off == c->in.len) {
			if (c->eof)
				return http1_eof(&c->p) == HTTP1_DONE ? HTTP_STREAM_END : HTTP_STREAM_ERROR;
			ssize_t n = read_up(c, max);
			if (n < 0)
				return HTTP_STREAM_ERROR;
			if (n == 0) {
				c->eof = true;
				continue;
			}
		}
		size_t feed = c->in.len - c->in_off < max ? c->in.len - c->in_off : max, used = 0;
		c->out = buf;
		c->out_len = 0;
		c->out_max = max;
		int r = http1_feed(&c->p, c->in.p + c->in_off, feed, body_out, c, &used);
		c->in_off += used;
		if (r == HTTP1_ERROR)
			return HTTP_STREAM_ERROR;
		if (r == HTTP1_DONE)
			c->done = true;
		if (c->out_len)
			return (ssize_t)c->out_len;
	}
}

typedef struct resp_cls {
	http_response *resp;
	const char *connection;
	bool upgrade;
} resp_cls;

static void copy_resp_header(void *ud, const char *name, size_t nl, const char *value, size_t vl)
{
	resp_cls *r = ud;
	_cleanup_free_ char *n = strndup(name, nl), *v = strndup(value, vl);
	if (n && v && proxy_resp_header_kept(n, r->connection, r->upgrade))
		(void)http_response_header(r->resp, n, v);
}

static void find_connection(void *ud, const char *name, size_t nl, const char *value, size_t vl)
{
	char **c = ud;
	if (nl == 10 && strncasecmp(name, "Connection", 10) == 0 && !*c)
		*c = strndup(value, vl);
}

static void upgraded(void *cls, int fd, const char *extra, size_t extra_len)
{
	proxy_conn *c = cls;
	(void)relay_run(fd, c->up, extra, extra_len, c->rest, c->rest_len);
}

http_result e2b_proxy_body(http_request *req)
{
	uint16_t port = e2b_req_port(req);
	if (req->too_large)
		return reply_status(req, HTTP_STATUS_CONTENT_TOO_LARGE,
				    "the request body is too large for the port proxy", port);
	/* The request head, rebuilt. */
	_cleanup_strbuf_ strbuf head = {0};
	const char *conn_h = http_request_header(req, "Connection"),
		   *up_h = http_request_header(req, "Upgrade");
	const char *upgrade = up_h && proxy_token_in(conn_h, "upgrade") ? up_h : NULL;
	if (proxy_req_start(&head, req->method, req->path) < 0)
		return reply_502(req, "a request line the port proxy cannot pass on", port);
	head_cls hc = {.b = &head, .connection = conn_h, .first = true};
	http_request_each(req, true, add_query, &hc);
	proxy_req_line_end(&head);
	http_request_each(req, false, add_header, &hc);
	bool with_len = req->body_len || streq(req->method, "POST") || streq(req->method, "PUT") ||
			streq(req->method, "PATCH");
	if (upgrade && strpbrk(upgrade, "\r\n"))
		upgrade = NULL;
	proxy_req_end(&head, req->body_len, with_len, upgrade);
	if (head.oom)
		return HTTP_CLOSE;

	proxy_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return HTTP_CLOSE;
	c->base.free = conn_free;
	c->up = -1;
	c->client = http_request_fd(req);
	http1_init(&c->p);
	req->state = c; /* freed by e2b_req_state_done when the request ends */

	_cleanup_err_ sbx_err *e = NULL;
	http_request_busy(req, true);
	if (sbx_env_port_connect(e2b_req_ctx(req), e2b_req_sandbox(req), port, PROXY_CONNECT_TIMEOUT_MS,
				 &c->up, &e) < 0) {
		/* E2B's proxy: this exact message (its SDK tests compare it),
		 * the reason beside it; a browser gets a page. */
		if (e2b_req_browser(req)) {
			char text[640];
			snprintf(text, sizeof(text),
				 "The sandbox %s is running but nothing listens on port %u (%s).",
				 e2b_req_sandbox(req), (unsigned)port, sbx_err_message(e));
			return e2b_reply_page(req, HTTP_STATUS_BAD_GATEWAY, "Closed Port Error", text);
		}
		json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:s}", "sandboxId", e2b_req_sandbox(req), "message",
				      "The sandbox is running but port is not open", "port", (int)port,
				      "code", HTTP_STATUS_BAD_GATEWAY, "detail", sbx_err_message(e));
		return e2b_reply_json(req, HTTP_STATUS_BAD_GATEWAY, j);
	}
	if (fd_write_all(c->up, head.p, head.len) < 0 ||
	    (req->body_len && fd_write_all(c->up, req->body, req->body_len) < 0))
		return reply_502(req, "the sandbox's server closed the connection", port);

	/* The answer's head (1xx but 101 skipped). */
	ssize_t hl;
	int status = 0;
	for (;;) {
		hl = proxy_resp_head(c->in.p + c->in_off, c->in.len - c->in_off, &status, NULL, NULL);
		if (hl < 0)
			return reply_502(req, "the sandbox's server sent a malformed answer", port);
		if (hl > 0 && status >= 200)
			break;
		if (hl > 0 && status == 101 && upgrade)
			break;
		if (hl > 0) { /* 100 Continue and the like */
			c->in_off += (size_t)hl;
			continue;
		}
		ssize_t n = read_up(c, PROXY_READ);
		if (n <= 0)
			return n == 0
				   ? reply_502(req,
					       "the sandbox's server closed the connection without an answer",
					       port)
				   : HTTP_CLOSE;
	}
	const char *h = c->in.p + c->in_off;
	_cleanup_free_ char *up_conn = NULL;
	int st2;
	(void)proxy_resp_head(h, (size_t)hl, &st2, find_connection, &up_conn);
	http_response *resp;
	if (status == 101) {
		c->rest_len = c->in.len - c->in_off - (size_t)hl;
		c->rest = malloc(c->rest_len + 1);
		if (!c->rest)
			return HTTP_CLOSE;
		memcpy(c->rest, h + hl, c->rest_len);
		resp = http_response_upgrade(req, upgraded, c);
	} else {
		/* The parser reads the head again, then the body; an answer
		 * that has none is not streamed (libmicrohttpd would frame one). */
		bool bodyless = streq(req->method, "HEAD") || status == 204 || status == 304;
		resp = bodyless ? http_response_empty() : http_response_stream(req, PROXY_READ, body_read, c);
	}
	if (!resp)
		return HTTP_CLOSE;
	resp_cls rc = {.resp = resp, .connection = up_conn, .upgrade = status == 101};
	(void)proxy_resp_head(h, (size_t)hl, &st2, copy_resp_header, &rc);
	return http_respond(req, (unsigned)status, resp);
}
