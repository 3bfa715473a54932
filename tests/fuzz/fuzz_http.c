/* libFuzzer target: HTTP requests through the real transport
 * (src/server/http_server.c on libmicrohttpd with the routes of http_mcp.c,
 * then jsonrpc.c, mcp.c and tools.c), with the sbx_* calls stubbed (mcp_stubs.h). The server runs once,
 * in a thread, on 127.0.0.1 (an ephemeral port, no token); each input is
 * written as is to a fresh TCP connection and the answer read until the
 * server closes it or falls silent. Checked: no crash, no leak (ASan); an
 * answer, if any, starts with "HTTP/1."; and every 64 inputs the server
 * still answers a well-formed request with 200 (no input locks it out).
 * Built and run by tests/fuzz/run; tests/fuzz/corpus/http holds the seeds. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http_mcp.h"
#include "server/http_server.h"

#include "mcp_stubs.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int port = -1; /* 0: the server failed to start */

static void on_ready(const char *url, bool loopback, void *userdata)
{
	const char *colon = strrchr(url, ':');
	pthread_mutex_lock(&ready_lock);
	port = colon ? atoi(colon + 1) : 0;
	pthread_cond_signal(&ready_cond);
	pthread_mutex_unlock(&ready_lock);
}

static void *serve(void *arg)
{
	/* Short timeouts: an input that stops mid-request is cut quickly. */
	http_server_opts o = {
	    .listen = "127.0.0.1:0", .on_ready = on_ready, .request_timeout_s = 2, .idle_timeout_s = 2};
	http_mcp_opts mo = {0};
	http_server *hs = NULL;
	sbx_err *e = NULL;
	if (http_server_new(&o, &hs, &e) < 0 || http_mcp_add(hs, NULL, &mo, &e) < 0 ||
	    http_server_run(hs, &e) < 0) {
		fprintf(stderr, "fuzz_http: cannot serve: %s\n", sbx_err_message(e));
		pthread_mutex_lock(&ready_lock);
		port = 0;
		pthread_cond_signal(&ready_cond);
		pthread_mutex_unlock(&ready_lock);
	}
	http_server_free(hs);
	sbx_err_free(e);
	return NULL;
}

static void start(void)
{
	signal(SIGPIPE, SIG_IGN);
	pthread_t t;
	if (pthread_create(&t, NULL, serve, NULL) != 0)
		abort();
	pthread_detach(t);
	pthread_mutex_lock(&ready_lock);
	while (port < 0)
		pthread_cond_wait(&ready_cond, &ready_lock);
	pthread_mutex_unlock(&ready_lock);
	if (port == 0)
		abort();
}

/* Sends data on a new connection; reads the answer into buf (up to cap).
 * Returns the bytes read. libFuzzer's timeout timer (SIGALRM every
 * -timeout/2+1 seconds, its handler installed without SA_RESTART)
 * interrupts these calls: EINTR is retried (unretried, a run on a loaded
 * machine now and then aborted in connect, or with "the server no longer
 * answers: ''"). */
static size_t roundtrip(const uint8_t *data, size_t size, char *buf, size_t cap)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Interrupted, the connection goes on in the background: EALREADY
	 * until it is made (EISCONN), or its error. */
	while (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EISCONN) {
		if (errno != EINTR && errno != EALREADY)
			abort(); /* the server stopped accepting */
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		(void)poll(&p, 1, 100);
	}
	size_t off = 0;
	while (off < size) {
		ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the server answered early and closed */
		off += (size_t)n;
	}
	/* End of input: a request cut short is one the server can only drop,
	 * so it need not wait out its request timeout. */
	shutdown(fd, SHUT_WR);
	size_t len = 0;
	int wait_ms = 3000; /* for the first byte; then until the answer stops */
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int r = poll(&p, 1, wait_ms);
		if (r < 0 && errno == EINTR)
			continue; /* the wait starts over: at worst a little longer */
		if (r <= 0)
			break;
		char tmp[4096];
		ssize_t n = recv(fd, tmp, sizeof(tmp), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		size_t take = (size_t)n < cap - len ? (size_t)n : cap - len;
		memcpy(buf + len, tmp, take);
		len += take;
		wait_ms = 100;
	}
	close(fd);
	return len;
}

static void health_check(void)
{
	static const char req[] =
	    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
	    "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
	    "Content-Length: 51\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\"}";
	char buf[256];
	size_t n = roundtrip((const uint8_t *)req, sizeof(req) - 1, buf, sizeof(buf) - 1);
	buf[n] = 0;
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0) {
		fprintf(stderr, "fuzz_http: the server no longer answers: '%s'\n", buf);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned runs;
	pthread_once(&once, start);
	if (runs++ % 64 == 0)
		health_check();
	char buf[8192];
	size_t n = roundtrip(data, size, buf, sizeof(buf));
	if (getenv("FUZZ_HTTP_SHOW")) /* see what the seeds reach */
		fprintf(stderr, "-> %.*s\n", (int)(n < 300 ? n : 300), buf);
	if (n > 0 && (n < 7 || memcmp(buf, "HTTP/1.", 7) != 0))
		abort(); /* something other than HTTP came back */
	return 0;
}
