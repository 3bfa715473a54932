/* The egress proxy engine end to end on 127.0.0.1: proxy_serve in a thread,
 * a tiny HTTP origin in another, `openssl s_server` as a TLS origin. Names
 * resolve through the proxy_opts resolver hook (allowed.test, other.test and
 * evil.test all map to 127.0.0.1), never through DNS. Also prints (does not
 * assert) the latency the proxy adds and its throughput (docs/policy.md). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/proxy.h"
#include "util/macro.h"
#include "unit.h"

#define BIG_BYTES (100LL * 1024 * 1024)

/* ---- origin: a plain HTTP server ----------------------------------------- */

static int origin_port;
static char origin_last_head[4096];
static pthread_mutex_t origin_mu = PTHREAD_MUTEX_INITIALIZER;

static int listen_local(int *ret_port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 512) < 0) {
		close(fd);
		return -1;
	}
	socklen_t l = sizeof(a);
	getsockname(fd, (struct sockaddr *)&a, &l);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static void *origin_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	size_t n = 0;
	while (n < sizeof(buf) - 1) {
		ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		buf[n] = 0;
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[n] = 0;
	pthread_mutex_lock(&origin_mu);
	snprintf(origin_last_head, sizeof(origin_last_head), "%s", buf);
	pthread_mutex_unlock(&origin_mu);
	char path[256] = "/";
	sscanf(buf, "%*s %255s", path);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (streq(path, "/echo")) {
		/* Echoes what follows the head until the client's FIN, then closes. */
		char *end = strstr(buf, "\r\n\r\n") + 4;
		if (buf + n > end)
			(void)!write(fd, end, (size_t)(buf + n - end));
		static __thread char e[128 * 1024];
		ssize_t k;
		while ((k = read(fd, e, sizeof(e))) > 0)
			if (write(fd, e, (size_t)k) != k)
				break;
	} else if (streq(path, "/big")) {
		char hdr[128];
		int h = snprintf(hdr, sizeof(hdr),
				 "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
				 BIG_BYTES);
		(void)!write(fd, hdr, (size_t)h);
		static char chunk[256 * 1024];
		for (long long left = BIG_BYTES; left > 0;) {
			ssize_t k =
			    write(fd, chunk, left < (long long)sizeof(chunk) ? (size_t)left : sizeof(chunk));
			if (k <= 0)
				break;
			left -= k;
		}
	} else {
		char body[300], resp[512];
		int b = snprintf(body, sizeof(body), "hello %s\n", path);
		int r =
		    snprintf(resp, sizeof(resp),
			     "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", b, body);
		(void)!write(fd, resp, (size_t)r);
	}
	close(fd);
	return NULL;
}

static void *origin_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_t t;
		if (pthread_create(&t, NULL, origin_conn, (void *)(intptr_t)fd) == 0)
			pthread_detach(t);
		else
			close(fd);
	}
	return NULL;
}

static void origin_start(void)
{
	if (origin_port)
		return;
	int lfd = listen_local(&origin_port);
	pthread_t t;
	pthread_create(&t, NULL, origin_main, (void *)(intptr_t)lfd);
	pthread_detach(t);
}

/* ---- proxy under test ------------------------------------------------------ */

typedef struct proxy_run {
	pthread_t thread;
	int lfd, stop, port, rc;
	egress_allowlist *al;
	proxy_opts o;
	json_t *events;
	pthread_mutex_t mu;
} proxy_run;

static int test_resolve(void *ud, const char *host, struct sockaddr_storage *ret, size_t max, size_t *ret_n)
{
	if (!streq(host, "allowed.test") && !streq(host, "other.test") && !streq(host, "evil.test"))
		return -ENOENT;
	struct sockaddr_in *a = (struct sockaddr_in *)&ret[0];
	memset(&ret[0], 0, sizeof(ret[0]));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*ret_n = 1;
	return 0;
}

static void test_log(void *ud, json_t *ev)
{
	proxy_run *p = ud;
	pthread_mutex_lock(&p->mu);
	json_array_append(p->events, ev);
	pthread_mutex_unlock(&p->mu);
}

static void *proxy_main(void *arg)
{
	proxy_run *p = arg;
	sbx_err *e = NULL;
	p->rc = proxy_serve(p->lfd, p->al, &p->o, &e);
	if (p->rc < 0)
		fprintf(stderr, "  proxy_serve: %s\n", sbx_err_message(e));
	sbx_err_free(e);
	return NULL;
}

static proxy_run *proxy_start(const char *const *allow, bool require_sni, unsigned max_conns)
{
	proxy_run *p = calloc(1, sizeof(*p));
	sbx_err *e = NULL;
	if (egress_allowlist_parse(allow, &p->al, &e) < 0) {
		fprintf(stderr, "  allowlist: %s\n", sbx_err_message(e));
		sbx_err_free(e);
		free(p);
		return NULL;
	}
	pthread_mutex_init(&p->mu, NULL);
	p->events = json_array();
	p->lfd = listen_local(&p->port);
	p->stop = eventfd(0, EFD_CLOEXEC);
	p->o = (proxy_opts)PROXY_OPTS_INIT;
	p->o.stop_fd = p->stop;
	p->o.require_sni = require_sni;
	p->o.max_conns = max_conns;
	p->o.resolve = test_resolve;
	p->o.log = test_log;
	p->o.ud = p;
	pthread_create(&p->thread, NULL, proxy_main, p);
	return p;
}

static int proxy_stop(proxy_run *p)
{
	uint64_t one = 1;
	(void)!write(p->stop, &one, sizeof(one));
	pthread_join(p->thread, NULL);
	int rc = p->rc;
	close(p->lfd);
	close(p->stop);
	egress_allowlist_free(p->al);
	json_decref(p->events);
	free(p);
	return rc;
}

/* Waits for the n-th log event (0-based) and returns it (borrowed). */
static json_t *proxy_event(proxy_run *p, size_t n)
{
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&p->mu);
		json_t *ev = json_array_get(p->events, n);
		pthread_mutex_unlock(&p->mu);
		if (ev)
			return ev;
		usleep(10000);
	}
	return NULL;
}

/* ---- client helpers ---------------------------------------------------------- */

static int dial(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends req (optionally half-closing), reads to EOF; returns the response (malloc'd). */
static char *roundtrip(int port, const char *req, size_t req_len, bool half_close)
{
	int fd = dial(port);
	if (fd < 0)
		return NULL;
	if (write(fd, req, req_len) != (ssize_t)req_len) {
		close(fd);
		return NULL;
	}
	if (half_close)
		shutdown(fd, SHUT_WR);
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (n + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t k = read(fd, buf + n, cap - n - 1);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = 0;
	close(fd);
	return buf;
}

static char *rt(int port, const char *req)
{
	return roundtrip(port, req, strlen(req), false);
}

/* ---- tests -------------------------------------------------------------------- */

TEST(connect_allowed_end_to_end)
{
	origin_start();
	char r1[64], r2[64], req[512];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	snprintf(r2, sizeof(r2), "127.0.0.1:%d", origin_port); /* allowed.test resolves to loopback */
	const char *allow[] = {r1, r2, NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	snprintf(req, sizeof(req),
		 "CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n"
		 "GET /through HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		 origin_port, origin_port);
	/* the client half-closes right away: the FIN travels on, the answer still comes back */
	char *resp = roundtrip(p->port, req, strlen(req), true);
	CHECK(resp && strncmp(resp, "HTTP/1.1 200 Connection established\r\n\r\n", 39) == 0);
	CHECK(strstr(resp, "HTTP/1.1 200 OK") && strstr(resp, "hello /through"));
	json_t *ev = proxy_event(p, 0);
	CHECK(ev);
	CHECK_STREQ(json_string_value(json_object_get(ev, "verdict")), "allowed");
	CHECK_STREQ(json_string_value(json_object_get(ev, "kind")), "connect");
	CHECK_STREQ(json_string_value(json_object_get(ev, "host")), "allowed.test");
	CHECK_STREQ(json_string_value(json_object_get(ev, "rule")), r1);
	CHECK(json_integer_value(json_object_get(ev, "bytes_up")) > 30);
	CHECK(json_integer_value(json_object_get(ev, "bytes_down")) == (json_int_t)strlen(resp) - 39);
	free(resp);
	CHECK(proxy_stop(p) == 0);
}

/* Bulk bytes both ways through a tunnel (each direction moves on to
 * splice once it fills a buffer): every byte arrives, in order, the FIN
 * travels on, and the log counts exactly what went each way. */
#define ECHO_BYTES (8 << 20)
static uint8_t echo_byte(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 12));
}

static void *echo_writer(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static uint8_t chunk[100000];
	for (size_t off = 0; off < ECHO_BYTES;) {
		size_t n = ECHO_BYTES - off < sizeof(chunk) ? ECHO_BYTES - off : sizeof(chunk);
		for (size_t i = 0; i < n; i++)
			chunk[i] = echo_byte(off + i);
		ssize_t k = write(fd, chunk, n);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	shutdown(fd, SHUT_WR);
	return NULL;
}

TEST(bulk_both_ways_arrives_whole_and_counted)
{
	origin_start();
	char r1[64], r2[64], req[256];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	snprintf(r2, sizeof(r2), "127.0.0.1:%d", origin_port);
	const char *allow[] = {r1, r2, NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	int fd = dial(p->port);
	CHECK(fd >= 0);
	int k = snprintf(req, sizeof(req),
			 "CONNECT allowed.test:%d HTTP/1.1\r\n\r\nGET /echo HTTP/1.1\r\n\r\n", origin_port);
	size_t connect_len = (size_t)(strstr(req, "\r\n\r\n") + 4 - req);
	CHECK(write(fd, req, (size_t)k) == k);
	pthread_t w;
	CHECK(pthread_create(&w, NULL, echo_writer, (void *)(intptr_t)fd) == 0);
	static uint8_t buf[256 * 1024];
	size_t got = 0, bad = 0, skip = 39; /* "HTTP/1.1 200 Connection established\r\n\r\n" */
	ssize_t r;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < r; i++) {
			if (skip) {
				skip--;
				continue;
			}
			bad += buf[i] != echo_byte(got);
			got++;
		}
	}
	pthread_join(w, NULL);
	close(fd);
	if (got != ECHO_BYTES)
		fprintf(stderr, "  got %zu of %d bytes back (%zd, %s)\n", got, ECHO_BYTES, r,
			strerror(errno));
	CHECK(got == ECHO_BYTES);
	CHECK(bad == 0);
	json_t *ev = proxy_event(p, 0);
	CHECK(ev);
	CHECK(json_integer_value(json_object_get(ev, "bytes_up")) ==
	      (json_int_t)(k - connect_len + ECHO_BYTES));
	CHECK(json_integer_value(json_object_get(ev, "bytes_down")) == ECHO_BYTES);
	CHECK(proxy_stop(p) == 0);
}

TEST(denied_host_gets_403_with_rule)
{
	const char *allow[] = {"allowed.test", NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	char *resp = rt(p->port, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n");
	CHECK(resp && strncmp(resp, "HTTP/1.1 403 Forbidden\r\n", 24) == 0);
	CHECK(strstr(resp, "X-Sbx-Policy-Rule: no rule allows it\r\n"));
	CHECK(strstr(
	    resp, "sbx egress policy refused evil.test:443: no rule allows it. Connections only go through "
		  "this proxy; other routes are blocked, so retrying another way will not work."));
	free(resp);
	resp = rt(p->port, "CONNECT allowed.test:8443 HTTP/1.1\r\n\r\n");
	CHECK(resp && strstr(resp, "403") && strstr(resp, "no rule allows this port"));
	free(resp);
	json_t *ev = proxy_event(p, 0);
	CHECK(ev && streq(json_string_value(json_object_get(ev, "verdict")), "denied"));
	CHECK(proxy_stop(p) == 0);
}

TEST(connect_to_ip_needs_ip_rule)
{
	origin_start();
	char r1[64], req[128];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	const char *allow[] = {r1, NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", origin_port);
	char *resp = rt(p->port, req);
	CHECK(resp && strstr(resp, "403 Forbidden") && strstr(resp, "only allowed by an IP rule"));
	free(resp);
	CHECK(proxy_stop(p) == 0);
}

TEST(plain_http_forward)
{
	origin_start();
	char r1[64], r2[64], req[256];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	snprintf(r2, sizeof(r2), "127.0.0.1:%d", origin_port);
	const char *allow[] = {r1, r2, NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	snprintf(req, sizeof(req),
		 "GET http://allowed.test:%d/plain?x=1 HTTP/1.1\r\nHost: "
		 "allowed.test:%d\r\nProxy-Connection: keep-alive\r\n"
		 "User-Agent: t\r\n\r\n",
		 origin_port, origin_port);
	char *resp = rt(p->port, req);
	CHECK(resp && strncmp(resp, "HTTP/1.1 200 OK", 15) == 0 && strstr(resp, "hello /plain?x=1"));
	free(resp);
	pthread_mutex_lock(&origin_mu);
	bool origin_form = strncmp(origin_last_head, "GET /plain?x=1 HTTP/1.1\r\n", 25) == 0 &&
			   !strstr(origin_last_head, "Proxy-Connection") &&
			   strstr(origin_last_head, "Connection: close");
	pthread_mutex_unlock(&origin_mu);
	CHECK(origin_form);
	json_t *ev = proxy_event(p, 0);
	CHECK(ev && streq(json_string_value(json_object_get(ev, "kind")), "http"));
	CHECK(json_integer_value(json_object_get(ev, "bytes_down")) > 0);
	CHECK(proxy_stop(p) == 0);
}

TEST(absolute_uri_host_mismatch_refused)
{
	origin_start();
	char r1[64], r2[64], req[256];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	snprintf(r2, sizeof(r2), "127.0.0.1:%d", origin_port);
	const char *allow[] = {r1, r2, NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	snprintf(req, sizeof(req), "GET http://allowed.test:%d/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		 origin_port);
	char *resp = rt(p->port, req);
	CHECK(resp && strstr(resp, "403 Forbidden") && strstr(resp, "disagrees with the request URI"));
	free(resp);
	resp = rt(p->port, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
	CHECK(resp && strstr(resp, "400 Bad Request") && strstr(resp, "absolute URI"));
	free(resp);
	CHECK(proxy_stop(p) == 0);
}

TEST(ssrf_name_resolving_to_loopback_refused)
{
	origin_start();
	char r1[64], req[256];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	const char *allow[] = {r1, NULL}; /* no IP rule for 127.0.0.1 */
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	snprintf(req, sizeof(req), "GET http://allowed.test:%d/ HTTP/1.1\r\n\r\n", origin_port);
	char *resp = rt(p->port, req);
	CHECK(resp && strstr(resp, "403 Forbidden") && strstr(resp, "internal address"));
	free(resp);
	snprintf(req, sizeof(req), "CONNECT allowed.test:%d HTTP/1.1\r\n\r\n", origin_port);
	resp = rt(p->port, req);
	CHECK(resp && strstr(resp, "403 Forbidden") && strstr(resp, "internal address"));
	free(resp);
	resp =
	    rt(p->port, "CONNECT unknown.test:80 HTTP/1.1\r\n\r\n"); /* no rule: refused before resolving */
	CHECK(resp && strstr(resp, "403"));
	free(resp);
	CHECK(proxy_stop(p) == 0);
}

TEST(connection_cap)
{
	const char *allow[] = {"allowed.test", NULL};
	proxy_run *p = proxy_start(allow, false, 1);
	CHECK(p);
	int held = dial(p->port); /* sits in the request-head state */
	CHECK(held >= 0);
	usleep(50000);
	char *resp = rt(p->port, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n");
	CHECK(resp && strstr(resp, "503 Service Unavailable"));
	free(resp);
	close(held);
	CHECK(proxy_stop(p) == 0);
}

/* ---- TLS: openssl s_server / s_client ----------------------------------------- */

static int sh(const char *cmd, char *out, size_t cap)
{
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	size_t n = fread(out, 1, cap - 1, f);
	out[n] = 0;
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST(tls_sni_checked)
{
	if (system("command -v openssl >/dev/null 2>&1") != 0)
		SKIP("openssl CLI not installed");
	char dir[] = "/tmp/sbx-proxy-tls-XXXXXX", cmd[1024], out[65536];
	CHECK(mkdtemp(dir));
	snprintf(
	    cmd, sizeof(cmd),
	    "cd %s && timeout 30 openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=allowed.test -days 1 "
	    "-keyout key.pem -out cert.pem >/dev/null 2>&1",
	    dir);
	CHECK(system(cmd) == 0);
	int sport;
	int tmp = listen_local(&sport);
	close(tmp);
	pid_t srv = fork();
	if (srv == 0) {
		char acc[64], cert[256], key[256];
		snprintf(acc, sizeof(acc), "127.0.0.1:%d", sport);
		snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
		snprintf(key, sizeof(key), "%s/key.pem", dir);
		int dn = open("/dev/null", O_RDWR);
		dup2(dn, 0), dup2(dn, 1), dup2(dn, 2);
		execlp("openssl", "openssl", "s_server", "-accept", acc, "-cert", cert, "-key", key, "-www",
		       NULL);
		_exit(127);
	}
	int up = -1;
	for (int i = 0; i < 200 && up < 0; i++) {
		up = dial(sport);
		if (up < 0)
			usleep(20000);
	}
	CHECK(up >= 0);
	close(up);
	char r1[64], r2[64];
	snprintf(r1, sizeof(r1), "allowed.test:%d", sport);
	snprintf(r2, sizeof(r2), "127.0.0.1:%d", sport);
	const char *allow[] = {r1, r2, NULL};
	proxy_run *p = proxy_start(allow, true, 0); /* not port 443: ask for the SNI check */
	CHECK(p);
	snprintf(
	    cmd, sizeof(cmd),
	    "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 20 openssl s_client -proxy 127.0.0.1:%d -connect "
	    "allowed.test:%d -servername allowed.test -quiet 2>&1",
	    p->port, sport);
	sh(cmd, out, sizeof(out));
	bool ok = strstr(out, "s_server") != NULL || strstr(out, "Ciphers") != NULL;
	if (!ok)
		fprintf(stderr, "  s_client said: %.400s\n", out);
	/* SNI that differs from the CONNECT host: closed, and logged */
	snprintf(
	    cmd, sizeof(cmd),
	    "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | timeout 20 openssl s_client -proxy 127.0.0.1:%d -connect "
	    "allowed.test:%d -servername other.test -quiet 2>&1",
	    p->port, sport);
	sh(cmd, out, sizeof(out));
	bool refused = strstr(out, "Ciphers supported") == NULL;
	json_t *ev = proxy_event(p, 1);
	bool logged = ev && streq(json_string_value(json_object_get(ev, "verdict")), "denied") &&
		      strstr(json_string_value(json_object_get(ev, "reason")), "SNI 'other.test'");
	/* a tunnel that does not start with TLS at all */
	char req[128];
	snprintf(req, sizeof(req), "CONNECT allowed.test:%d HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\n\r\n", sport);
	char *resp = rt(p->port, req);
	bool not_tls = resp && !strstr(resp, "Ciphers supported");
	free(resp);
	proxy_stop(p);
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
	CHECK(ok);
	CHECK(refused);
	CHECK(logged);
	CHECK(not_tls);
}

/* ---- measurements (printed, not asserted) --------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_us(int port, const char *req, int n)
{
	double *t = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		double t0 = now_s();
		char *r = rt(port, req);
		t[i] = (now_s() - t0) * 1e6;
		if (!r || !strstr(r, "200 OK"))
			t[i] = 1e12;
		free(r);
	}
	qsort(t, (size_t)n, sizeof(double), cmp_d);
	double m = t[n / 2];
	free(t);
	return m;
}

/* Reads the whole /big response from fd; returns MB/s or -1. */
static double drain_big(int fd, double t0)
{
	static char buf[256 * 1024];
	long long total = 0;
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));
		if (k <= 0)
			break;
		total += k;
	}
	close(fd);
	double dt = now_s() - t0;
	return total >= BIG_BYTES ? (double)total / dt / 1e6 : -1;
}

TEST(measure_latency_and_throughput)
{
	origin_start();
	char r1[64], r2[64], req[256], dreq[256];
	snprintf(r1, sizeof(r1), "allowed.test:%d", origin_port);
	snprintf(r2, sizeof(r2), "127.0.0.1:%d", origin_port);
	const char *allow[] = {r1, r2, NULL};
	proxy_run *p = proxy_start(allow, false, 0);
	CHECK(p);
	snprintf(dreq, sizeof(dreq), "GET /lat HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
	snprintf(req, sizeof(req), "GET http://allowed.test:%d/lat HTTP/1.1\r\n\r\n", origin_port);
	int n = getenv("SBX_PROXY_BENCH_N") ? atoi(getenv("SBX_PROXY_BENCH_N")) : 1000;
	double direct = median_us(origin_port, dreq, n), via = median_us(p->port, req, n);
	printf("  latency (median of %d requests, new connection each): direct %.0f us, via proxy %.0f us, "
	       "added %.0f us\n",
	       n, direct, via, via - direct);
	double t0 = now_s();
	int fd = dial(origin_port);
	CHECK(fd >= 0);
	(void)!write(fd, "GET /big HTTP/1.1\r\n\r\n", 21);
	double d_mbs = drain_big(fd, t0);
	t0 = now_s();
	fd = dial(p->port);
	CHECK(fd >= 0);
	char creq[256];
	int k = snprintf(creq, sizeof(creq),
			 "CONNECT allowed.test:%d HTTP/1.1\r\n\r\nGET /big HTTP/1.1\r\n\r\n", origin_port);
	(void)!write(fd, creq, (size_t)k);
	double p_mbs = drain_big(fd, t0);
	printf("  throughput (100 MiB download): direct %.0f MB/s, via proxy CONNECT %.0f MB/s\n", d_mbs,
	       p_mbs);
	CHECK(d_mbs > 0 && p_mbs > 0);
	json_t *ev = NULL;
	for (size_t i = 0; (ev = proxy_event(p, i)); i++)
		if (json_integer_value(json_object_get(ev, "bytes_down")) >= BIG_BYTES)
			break;
	CHECK(ev); /* the big transfer is logged with its byte count */
	CHECK(proxy_stop(p) == 0);
}
