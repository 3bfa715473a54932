/* The HTTP server's route table (src/server/http_server.h) with two route
 * families shaped like the E2B API's: a control plane on path prefixes
 * behind an API key, and a data plane chosen by a header or by the Host
 * ({port}-{id}.{domain}) behind a token of its own, which answers with a
 * stream or takes the connection over (101). The server runs in a thread
 * on 127.0.0.1 (an ephemeral port); each test writes raw requests to it. */
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http_parse.h"
#include "server/http_server.h"
#include "unit.h"
#include "util/macro.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int port = -1; /* 0: the server did not start */
static int run_ret = 1, stops, stoppeds, releases, dones;
static bool run_ended;
static char start_error[512];
static pthread_t server_thread;

/* ---- the families ---------------------------------------------------------------------- */

static http_result answer(http_request *req, unsigned status, const char *type, const char *text)
{
	http_response *resp = http_response_buffer(strdup(text), strlen(text));
	if (resp && type)
		http_response_header(resp, "Content-Type", type);
	return http_respond(req, status, resp);
}

/* The control plane's error format: {"code":N,"message":"..."}. */
static http_result api_error(http_request *req, unsigned status, const char *msg)
{
	char body[600];
	snprintf(body, sizeof(body), "{\"code\":%u,\"message\":\"%s\"}", status, msg);
	return answer(req, status, "application/json", body);
}

static http_result api_auth(http_request *req)
{
	const char *key = http_request_header(req, "X-API-Key");
	if (key && http_token_equal(key, strlen(key), "k3y", 3))
		return HTTP_OK;
	return api_error(req, HTTP_STATUS_UNAUTHORIZED, "Invalid API key");
}

static http_result api_health(http_request *req)
{
	return answer(req, HTTP_STATUS_OK, "text/plain", "ok");
}

static http_result api_not_found(http_request *req)
{
	return api_error(req, HTTP_STATUS_NOT_FOUND, "no such route");
}

static http_result api_sandboxes(http_request *req)
{
	char body[256];
	snprintf(body, sizeof(body), "api %s %s %zu", req->method, req->path, req->body_len);
	return answer(req, HTTP_STATUS_OK, "text/plain", body);
}

static const http_route api_routes[] = {
    {.method = "GET", .path = "/health", .open = true, .headers = api_health},
    {.path = "/sandboxes", .prefix = true, .max_body = 1024, .body = api_sandboxes},
};
static const http_route api_fallback = {.open = true, .headers = api_not_found};

/* The data plane: a request that names a sandbox by header or by Host. */
static bool names_sandbox(const http_request *req)
{
	if (http_request_header(req, "E2b-Sandbox-Id"))
		return true;
	const char *host = http_request_header(req, "Host");
	unsigned p;
	int n = 0;
	return host && sscanf(host, "%5u-%*[a-z0-9].sbx.test%n", &p, &n) == 1 && n > 0 && host[n] == 0;
}

static http_result data_auth(http_request *req)
{
	const char *t = http_request_header(req, "X-Access-Token");
	if (t && http_token_equal(t, strlen(t), "t0k", 3))
		return HTTP_OK;
	return answer(req, HTTP_STATUS_UNAUTHORIZED, "text/plain", "data plane: bad token");
}

typedef struct counter {
	int next;
} counter;

static ssize_t count_read(void *cls, char *buf, size_t max)
{
	counter *c = cls;
	if (c->next == 3)
		return HTTP_STREAM_END;
	return snprintf(buf, max, "part %d\n", ++c->next);
}

static int dones_at_upgrade = -1;

static void echo_upper(void *cls, int fd, const char *extra, size_t extra_len)
{
	/* The request's state is still there: it ends when the connection does. */
	dones_at_upgrade = __atomic_load_n(&dones, __ATOMIC_SEQ_CST);
	((counter *)cls)->next = -1;
	char buf[256];
	size_t n = extra_len < sizeof(buf) ? extra_len : sizeof(buf);
	memcpy(buf, extra, n);
	for (;;) {
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)toupper((unsigned char)buf[i]);
		if (n > 0 && send(fd, buf, n, MSG_NOSIGNAL) < 0)
			return;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r < 0 && errno == EINTR) {
			n = 0;
			continue;
		}
		if (r <= 0)
			return;
		n = (size_t)r;
	}
}

static http_result data_headers(http_request *req)
{
	const char *up = http_request_header(req, "Upgrade");
	counter *c = calloc(1, sizeof(*c));
	if (!c)
		return HTTP_CLOSE;
	req->state = c;
	if (up && strcasecmp(up, "echo") == 0) {
		http_response *resp = http_response_upgrade(req, echo_upper, c);
		if (resp)
			http_response_header(resp, "Upgrade", "echo");
		return http_respond(req, HTTP_STATUS_SWITCHING_PROTOCOLS, resp);
	}
	http_response *resp = http_response_stream(req, 1024, count_read, c);
	if (resp)
		http_response_header(resp, "Content-Type", "text/plain");
	return http_respond(req, HTTP_STATUS_OK, resp);
}

static const http_route data_routes[] = {
    {.match = names_sandbox, .headers = data_headers},
};

static void data_done(http_request *req)
{
	free(req->state);
	__atomic_add_fetch(&dones, 1, __ATOMIC_SEQ_CST);
}

static void count_stop(void *data)
{
	stops++;
}

static void count_stopped(void *data)
{
	stoppeds++;
}

static void count_release(void *data)
{
	releases++;
}

/* ---- the server ------------------------------------------------------------------------ */

static void on_ready(const char *url, bool loopback, void *userdata)
{
	const char *colon = strrchr(url, ':');
	pthread_mutex_lock(&lock);
	port = colon && loopback ? atoi(colon + 1) : 0;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
}

static void *serve(void *arg)
{
	http_server_opts o = {.listen = "127.0.0.1:0", .on_ready = on_ready};
	/* The data plane first: its routes take any path that names a sandbox. */
	http_family data = {.name = "data",
			    .routes = data_routes,
			    .n_routes = ARRAY_SIZE(data_routes),
			    .auth = data_auth,
			    .done = data_done,
			    .stop = count_stop,
			    .stopped = count_stopped,
			    .release = count_release};
	http_family api = {.name = "api",
			   .routes = api_routes,
			   .n_routes = ARRAY_SIZE(api_routes),
			   .fallback = &api_fallback,
			   .local_origin = true,
			   .auth = api_auth,
			   .error = api_error,
			   .stop = count_stop,
			   .stopped = count_stopped,
			   .release = count_release};
	http_server *hs = NULL;
	sbx_err *e = NULL;
	int r = -1;
	if (http_server_new(&o, &hs, &e) == 0 && http_server_add(hs, &data, &e) == 0 &&
	    http_server_add(hs, &api, &e) == 0)
		r = http_server_run(hs, &e);
	http_server_free(hs);
	pthread_mutex_lock(&lock);
	if (r < 0)
		snprintf(start_error, sizeof(start_error), "%s", sbx_err_message(e));
	run_ret = r;
	run_ended = true;
	if (port < 0)
		port = 0;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	sbx_err_free(e);
	return NULL;
}

/* Starts the server once; false (and why in start_error) if it cannot. */
static bool server_up(void)
{
	static bool started;
	if (!started) {
		started = true;
		signal(SIGPIPE, SIG_IGN);
		if (pthread_create(&server_thread, NULL, serve, NULL) != 0)
			return false;
	}
	pthread_mutex_lock(&lock);
	while (port < 0)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return port > 0 && !run_ended;
}

static int connect_server(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads into buf (NUL-terminated) until the server closes or 5 s pass. */
static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	while (len + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	return len;
}

/* Sends raw (one request, Connection: close) and returns the answer. */
static char *roundtrip(const char *raw)
{
	static char buf[16384];
	buf[0] = 0;
	int fd = connect_server();
	if (fd < 0)
		return buf;
	(void)!send(fd, raw, strlen(raw), MSG_NOSIGNAL);
	read_all(fd, buf, sizeof(buf));
	close(fd);
	return buf;
}

#define UP()                                                                                                 \
	do {                                                                                                 \
		if (!server_up()) {                                                                          \
			if (strstr(start_error, "libmicrohttpd"))                                            \
				SKIP(start_error);                                                           \
			CHECK(!"the server started");                                                        \
		}                                                                                            \
	} while (0)

/* ---- the tests ------------------------------------------------------------------------- */

TEST(prefix_route_behind_its_familys_key)
{
	UP();
	char *r = roundtrip("GET /sandboxes/abc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 401", 12) == 0);
	CHECK(strstr(r, "{\"code\":401,\"message\":\"Invalid API key\"}"));
	r = roundtrip(
	    "GET /sandboxes/abc HTTP/1.1\r\nHost: x\r\nX-API-Key: k3y4\r\nConnection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 401", 12) == 0);
	r = roundtrip(
	    "POST /sandboxes/abc/pause HTTP/1.1\r\nHost: x\r\nX-API-Key: k3y\r\nContent-Length: 5\r\n"
	    "Connection: close\r\n\r\nhello");
	CHECK(strncmp(r, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(r, "\r\n\r\napi POST /sandboxes/abc/pause 5"));
}

TEST(open_route_and_fallback_skip_auth)
{
	UP();
	char *r = roundtrip("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(r, "\r\n\r\nok"));
	/* The method is part of the route: POST /health is no route. */
	r = roundtrip("POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 404", 12) == 0);
	CHECK(strstr(r, "{\"code\":404,\"message\":\"no such route\"}"));
}

TEST(origin_checked_before_auth)
{
	UP();
	char *r =
	    roundtrip("GET /sandboxes HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.test\r\nX-API-Key: k3y\r\n"
		      "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 403", 12) == 0);
	CHECK(strstr(r, "{\"code\":403,\"message\":\"Forbidden: Origin 'http://evil.test' is not allowed"));
	r = roundtrip(
	    "GET /sandboxes HTTP/1.1\r\nHost: x\r\nOrigin: http://localhost:5173\r\nX-API-Key: k3y\r\n"
	    "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 200", 12) == 0);
}

TEST(body_over_the_routes_limit_gets_the_familys_413)
{
	UP();
	char req[4096];
	int n = snprintf(req, sizeof(req),
			 "POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: k3y\r\nContent-Length: 2000\r\n"
			 "Connection: close\r\n\r\n");
	memset(req + n, 'a', 2000);
	req[n + 2000] = 0;
	char *r = roundtrip(req);
	CHECK(strncmp(r, "HTTP/1.1 413", 12) == 0);
	CHECK(strstr(r, "{\"code\":413,\"message\":\"Payload Too Large: the limit is 1024 bytes\"}"));
	/* Announced past 64 MiB: refused before the body is read. */
	r = roundtrip("POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: k3y\r\nContent-Length: 100000000\r\n"
		      "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 413", 12) == 0);
}

TEST(header_predicate_routes_to_the_data_plane_with_its_own_token)
{
	UP();
	/* A path the control plane has, but the header names a sandbox. */
	char *r = roundtrip("GET /sandboxes HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: abc\r\nX-API-Key: k3y\r\n"
			    "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 401", 12) == 0);
	CHECK(strstr(r, "data plane: bad token"));
	int before = __atomic_load_n(&dones, __ATOMIC_SEQ_CST);
	r = roundtrip("GET /files HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: abc\r\nX-Access-Token: t0k\r\n"
		      "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 200", 12) == 0);
	CHECK(strcasestr(r, "Transfer-Encoding: chunked"));
	CHECK(strstr(r, "part 1\n"));
	CHECK(strstr(r, "part 3\n"));
	CHECK(!strstr(r, "part 4"));
	CHECK(__atomic_load_n(&dones, __ATOMIC_SEQ_CST) > before); /* the stream's state was freed */
}

TEST(host_predicate_routes_to_the_data_plane)
{
	UP();
	char *r =
	    roundtrip("GET /sandboxes HTTP/1.1\r\nHost: 49983-abc123.sbx.test\r\nX-Access-Token: t0k\r\n"
		      "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(r, "part 1\n"));
	/* Another domain: the control plane's. */
	r = roundtrip("GET /sandboxes HTTP/1.1\r\nHost: 49983-abc123.other.test\r\nX-API-Key: k3y\r\n"
		      "Connection: close\r\n\r\n");
	CHECK(strncmp(r, "HTTP/1.1 200", 12) == 0);
	CHECK(strstr(r, "api GET /sandboxes 0"));
}

TEST(upgrade_takes_the_connection_over)
{
	UP();
	int before = __atomic_load_n(&dones, __ATOMIC_SEQ_CST);
	int fd = connect_server();
	CHECK(fd >= 0);
	const char *req = "GET /ws HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: abc\r\nX-Access-Token: t0k\r\n"
			  "Connection: Upgrade\r\nUpgrade: echo\r\n\r\nhello ";
	(void)!send(fd, req, strlen(req), MSG_NOSIGNAL);
	char buf[2048] = "";
	size_t len = 0;
	/* The 101, then the bytes sent with the request, echoed. */
	while (len + 1 < sizeof(buf) && !strstr(buf, "HELLO ")) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = 0;
	}
	buf[len] = 0;
	bool switched = strncmp(buf, "HTTP/1.1 101", 12) == 0 && strstr(buf, "HELLO ");
	/* Both ways, for as long as the client likes. */
	(void)!send(fd, "world", 5, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	char rest[256];
	read_all(fd, rest, sizeof(rest));
	close(fd);
	CHECK(switched);
	CHECK(strcmp(rest, "WORLD") == 0);
	CHECK(dones_at_upgrade == before);
	for (int i = 0; i < 100 && __atomic_load_n(&dones, __ATOMIC_SEQ_CST) == before; i++)
		usleep(10000);
	CHECK(__atomic_load_n(&dones, __ATOMIC_SEQ_CST) == before + 1);
}

/* Last: a stop signal ends the run, each family's hooks called once. */
TEST(stop_signal_ends_the_run)
{
	UP();
	CHECK(kill(getpid(), SIGTERM) == 0);
	pthread_join(server_thread, NULL);
	CHECK(run_ret == 0);
	CHECK(stops == 2 && stoppeds == 2 && releases == 2);
}
