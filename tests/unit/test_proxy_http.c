/* The E2B port proxy's pure head handling (src/server/proxy_http.h) and the
 * byte relay (src/util/relay.h) over socket pairs: which headers pass each
 * way, the rebuilt request head (no framing of the client's, the front
 * door's credentials dropped), the response head parser's refusals, and a
 * relay that carries both directions and half-closes. */
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/proxy_http.h"
#include "unit.h"
#include "util/relay.h"

TEST(token_lists)
{
	CHECK(proxy_token_in("keep-alive, Upgrade", "upgrade"));
	CHECK(proxy_token_in(" upgrade ", "Upgrade"));
	CHECK(!proxy_token_in("upgrades", "upgrade"));
	CHECK(!proxy_token_in(NULL, "upgrade"));
	CHECK(!proxy_token_in("", "upgrade"));
	CHECK(proxy_token_in("close,,X-Foo", "x-foo"));
}

TEST(which_headers_pass)
{
	/* end-to-end headers pass */
	CHECK(proxy_req_header_kept("Accept", NULL));
	CHECK(proxy_req_header_kept("Host", NULL));
	CHECK(proxy_req_header_kept("Authorization", NULL));
	/* framing and hop-by-hop never: the proxy frames the request itself */
	CHECK(!proxy_req_header_kept("Content-Length", NULL));
	CHECK(!proxy_req_header_kept("transfer-encoding", NULL));
	CHECK(!proxy_req_header_kept("Connection", NULL));
	CHECK(!proxy_req_header_kept("Upgrade", NULL));
	CHECK(!proxy_req_header_kept("TE", NULL));
	CHECK(!proxy_req_header_kept("Keep-Alive", NULL));
	/* the front door's own, and credentials of the sandbox */
	CHECK(!proxy_req_header_kept("X-Access-Token", NULL));
	CHECK(!proxy_req_header_kept("e2b-traffic-access-token", NULL));
	CHECK(!proxy_req_header_kept("E2B-SANDBOX-ID", NULL));
	CHECK(!proxy_req_header_kept("E2b-Sandbox-Port", NULL));
	/* a header the Connection header names is hop-by-hop */
	CHECK(!proxy_req_header_kept("X-Secret", "close, X-Secret"));
	CHECK(proxy_req_header_kept("X-Other", "close, X-Secret"));
	/* responses: Upgrade only on a 101 */
	CHECK(proxy_resp_header_kept("Upgrade", NULL, true));
	CHECK(!proxy_resp_header_kept("Upgrade", NULL, false));
	CHECK(!proxy_resp_header_kept("Transfer-Encoding", NULL, false));
	CHECK(!proxy_resp_header_kept("Content-Length", NULL, false));
	CHECK(proxy_resp_header_kept("Set-Cookie", NULL, false));
	CHECK(!proxy_resp_header_kept("X-Hop", "X-Hop", false));
}

TEST(request_head_rebuilt)
{
	strbuf b = {0};
	CHECK(proxy_req_start(&b, "POST", "/a/b") == 0);
	proxy_req_query(&b, true, "x", "1 2&3");
	proxy_req_query(&b, false, "flag", NULL);
	proxy_req_query(&b, false, "ü", "=");
	proxy_req_line_end(&b);
	CHECK(proxy_req_header(&b, "Host", "h") == 0);
	CHECK(proxy_req_header(&b, "X-Bad", "a\r\nX-Injected: 1") < 0);
	CHECK(proxy_req_header(&b, "Bad Name", "v") < 0);
	CHECK(proxy_req_header(&b, "Bad:Name", "v") < 0);
	proxy_req_end(&b, 5, true, NULL);
	CHECK_STREQ(strbuf_str(&b), "POST /a/b?x=1%202%263&flag&%C3%BC=%3D HTTP/1.1\r\nHost: h\r\n"
				    "Content-Length: 5\r\nConnection: close\r\n\r\n");
	strbuf_reset(&b);
	CHECK(proxy_req_start(&b, "GET", "/ws") == 0);
	proxy_req_line_end(&b);
	proxy_req_end(&b, 0, false, "websocket");
	CHECK_STREQ(strbuf_str(&b), "GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
	/* a request line cannot be split */
	strbuf_reset(&b);
	CHECK(proxy_req_start(&b, "GET", "/a b") < 0);
	CHECK(proxy_req_start(&b, "GET", "/a\r\nX: y") < 0);
	CHECK(proxy_req_start(&b, "GET", "a") < 0);
	CHECK(proxy_req_start(&b, "G T", "/") < 0);
	CHECK(proxy_req_start(&b, "", "/") < 0);
	strbuf_free(&b);
}

typedef struct hdrs {
	char buf[1024];
	int n;
} hdrs;

static void on_header(void *ud, const char *name, size_t nl, const char *value, size_t vl)
{
	hdrs *h = ud;
	size_t len = strlen(h->buf);
	snprintf(h->buf + len, sizeof(h->buf) - len, "[%.*s=%.*s]", (int)nl, name, (int)vl, value);
	h->n++;
}

TEST(response_head_parsed)
{
	int st = 0;
	hdrs h = {0};
	const char *m = "HTTP/1.1 200 OK\r\nContent-Type: text/plain \r\nX-A:b\r\n\r\nbody";
	CHECK(proxy_resp_head(m, strlen(m), &st, on_header, &h) == (ssize_t)(strlen(m) - 4));
	CHECK(st == 200);
	CHECK_STREQ(h.buf, "[Content-Type=text/plain][X-A=b]");
	/* bare LF, no reason, 101 */
	memset(&h, 0, sizeof(h));
	m = "HTTP/1.0 101\nUpgrade: echo\n\n";
	CHECK(proxy_resp_head(m, strlen(m), &st, on_header, &h) == (ssize_t)strlen(m));
	CHECK(st == 101 && h.n == 1);
	/* incomplete: more */
	m = "HTTP/1.1 200 OK\r\nX: y\r\n";
	CHECK(proxy_resp_head(m, strlen(m), &st, NULL, NULL) == 0);
	/* refused */
	const char *bad[] = {
	    "HTTP/2 200 OK\r\n\r\n",
	    "HTTP/1.1 20 OK\r\n\r\n",
	    "HTTP/1.1 2000 OK\r\n\r\n",
	    "HTTP/1.1 099 x\r\n\r\n",
	    "HTTP/1.1 600 x\r\n\r\n",
	    "ICY 200 OK\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
	    "HTTP/1.1 200 OK\r\n: v\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nA B: v\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nA: v\x01w\r\n\r\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(proxy_resp_head(bad[i], strlen(bad[i]), &st, NULL, NULL) == -1);
	/* a head over the bound, without an end */
	size_t n = PROXY_HEAD_MAX + 10;
	char *big = malloc(n);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(big + 20, 'a', n - 20);
	CHECK(proxy_resp_head(big, n, &st, NULL, NULL) == -1);
	CHECK(proxy_resp_head(big, 4096, &st, NULL, NULL) == 0);
	free(big);
}

/* The far end of a relay: sends what it is given, then reads to EOF. */
typedef struct peer {
	int fd;
	const char *send;
	size_t send_len;
	char got[1 << 20];
	size_t got_len;
} peer;

static void *peer_main(void *arg)
{
	peer *p = arg;
	size_t off = 0;
	while (off < p->send_len) {
		ssize_t n = write(p->fd, p->send + off, p->send_len - off);
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	shutdown(p->fd, SHUT_WR);
	for (;;) {
		ssize_t n = read(p->fd, p->got + p->got_len, sizeof(p->got) - p->got_len);
		if (n <= 0)
			break;
		p->got_len += (size_t)n;
	}
	return NULL;
}

TEST(relay_both_ways)
{
	int a[2], b[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	static char big[300000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	static peer pa, pb;
	pa = (peer){.fd = a[1], .send = big, .send_len = sizeof(big)};
	pb = (peer){.fd = b[1], .send = "pong", .send_len = 4};
	pthread_t ta, tb;
	pthread_create(&ta, NULL, peer_main, &pa);
	pthread_create(&tb, NULL, peer_main, &pb);
	/* a[0] is one end of the relay, b[0] the other; bytes read before it began go first */
	CHECK(relay_run(a[0], b[0], "A:", 2, "B:", 2) == 0);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	CHECK(pb.got_len == sizeof(big) + 2);
	CHECK(memcmp(pb.got, "A:", 2) == 0 && memcmp(pb.got + 2, big, sizeof(big)) == 0);
	CHECK(pa.got_len == 6 && memcmp(pa.got, "B:pong", 6) == 0);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}
