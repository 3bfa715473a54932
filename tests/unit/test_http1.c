/* The HTTP/1.1 response parser (src/util/http1.h): framing by length,
 * chunks and end of connection, fed whole and a byte at a time, and the
 * refusals of hostile heads. */
#include "unit.h"
#include "util/http1.h"

typedef struct sink {
	char buf[4096];
	size_t len;
	int calls;
	int stop_after; /* 0: never */
} sink;

static int on_body(void *ud, const char *data, size_t len)
{
	sink *s = ud;
	s->calls++;
	if (s->len + len > sizeof(s->buf))
		return -1;
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	s->buf[s->len] = 0;
	return s->stop_after && s->calls >= s->stop_after ? -1 : 0;
}

/* Feeds msg whole (step 0) or step bytes at a time; the last return. */
static int feed(http1_parser *p, sink *s, const char *msg, size_t step, size_t *ret_used)
{
	size_t len = strlen(msg), off = 0, used = 0;
	int r = HTTP1_MORE;
	http1_init(p);
	memset(s, 0, sizeof(*s));
	while (off < len) {
		size_t n = step && step < len - off ? step : len - off, u = 0;
		r = http1_feed(p, msg + off, n, on_body, s, &u);
		used += u;
		if (r != HTTP1_MORE)
			break;
		off += n;
	}
	if (ret_used)
		*ret_used = used;
	return r;
}

TEST(content_length)
{
	const char *m =
	    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhelloEXTRA";
	for (size_t step = 0; step < 4; step++) {
		http1_parser p;
		sink s;
		size_t used;
		CHECK(feed(&p, &s, m, step, &used) == HTTP1_DONE);
		CHECK(p.status == 200 && p.content_length == 5 && !p.chunked);
		CHECK_STREQ(p.content_type, "application/json");
		CHECK_STREQ(s.buf, "hello");
		CHECK(used == strlen(m) - 5); /* "EXTRA" is not the response's */
	}
}

TEST(chunked_with_extensions_and_trailer)
{
	const char *m = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			"5\r\nhello\r\n6;name=v\r\n world\r\nA  \r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
	for (size_t step = 0; step < 3; step++) {
		http1_parser p;
		sink s;
		CHECK(feed(&p, &s, m, step, NULL) == HTTP1_DONE);
		CHECK(p.chunked);
		CHECK_STREQ(s.buf, "hello world0123456789");
	}
}

TEST(bare_lf_and_eof_framing)
{
	http1_parser p;
	sink s;
	CHECK(feed(&p, &s, "HTTP/1.0 404 Not Found\nX: y\n\nno such context", 0, NULL) == HTTP1_MORE);
	CHECK(p.status == 404);
	CHECK(http1_eof(&p) == HTTP1_DONE);
	CHECK_STREQ(s.buf, "no such context");
}

TEST(no_body_statuses_and_interim)
{
	http1_parser p;
	sink s;
	CHECK(feed(&p, &s, "HTTP/1.1 204 No Content\r\n\r\n", 0, NULL) == HTTP1_DONE);
	CHECK(s.len == 0);
	CHECK(feed(&p, &s, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1,
		   NULL) == HTTP1_DONE);
	CHECK(p.status == 200);
	CHECK_STREQ(s.buf, "ok");
	CHECK(feed(&p, &s, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, NULL) == HTTP1_DONE);
}

TEST(truncated_responses)
{
	http1_parser p;
	sink s;
	CHECK(feed(&p, &s, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", 0, NULL) == HTTP1_MORE);
	CHECK(http1_eof(&p) == HTTP1_ERROR);
	CHECK(strstr(p.error, "closed before"));
	CHECK(feed(&p, &s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 0, NULL) ==
	      HTTP1_MORE);
	CHECK(http1_eof(&p) == HTTP1_ERROR);
	CHECK(feed(&p, &s, "HTTP/1.1 200 OK\r\nContent-Le", 0, NULL) == HTTP1_MORE);
	CHECK(http1_eof(&p) == HTTP1_ERROR);
}

TEST(refusals)
{
	static const struct {
		const char *msg, *why;
	} bad[] = {
	    {"HTTP/2 200 OK\r\n\r\n", "not an HTTP"},
	    {"SSH-2.0-OpenSSH\r\n", "not an HTTP"},
	    {"HTTP/1.1 20 OK\r\n\r\n", "status code"},
	    {"HTTP/1.1 2000 OK\r\n\r\n", "status code"},
	    {"HTTP/1.1 099 OK\r\n\r\n", "out of range"},
	    {"HTTP/1.1 101 Switching\r\n\r\n", "101"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", "Content-Length"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387905\r\n\r\n", "too large"},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "two different"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "Transfer-Encoding"},
	    {"HTTP/1.1 200 OK\r\n folded\r\n\r\n", "folded"},
	    {"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "malformed header"},
	    {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "header name"},
	    {"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "bare CR"},
	    {"HTTP/1.1 200 OK\r\nX: a\x01"
	     "b\r\n\r\n",
	     "control"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", "chunk size"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 2\r\n", "chunk size"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", "too large"},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", "missing CRLF"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		http1_parser p;
		sink s;
		int r = feed(&p, &s, bad[i].msg, 0, NULL);
		if (r != HTTP1_ERROR || !strstr(p.error, bad[i].why))
			fprintf(stderr, "  case %zu: r=%d error=%s\n", i, r, p.error ? p.error : "(none)");
		CHECK(r == HTTP1_ERROR);
		CHECK(strstr(p.error, bad[i].why));
		/* an error sticks */
		CHECK(http1_feed(&p, "x", 1, on_body, &s, NULL) == HTTP1_ERROR);
	}
}

TEST(bounded_head_and_trailer)
{
	static char big[HTTP1_HEAD_MAX + 200];
	http1_parser p;
	sink s;
	/* one header line longer than the whole bound */
	strcpy(big, "HTTP/1.1 200 OK\r\nX-Long: ");
	size_t n = strlen(big);
	memset(big + n, 'a', sizeof(big) - n - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(feed(&p, &s, big, 0, NULL) == HTTP1_ERROR);
	CHECK(strstr(p.error, "head too large"));
	/* many short lines */
	strcpy(big, "HTTP/1.1 200 OK\r\n");
	for (n = strlen(big); n + 8 < sizeof(big) - 1; n += 6)
		memcpy(big + n, "X: y\r\n", 6);
	big[n] = 0;
	CHECK(feed(&p, &s, big, 0, NULL) == HTTP1_ERROR);
	/* an endless trailer */
	strcpy(big, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
	for (n = strlen(big); n + 8 < sizeof(big) - 1; n += 6)
		memcpy(big + n, "T: y\r\n", 6);
	big[n] = 0;
	CHECK(feed(&p, &s, big, 0, NULL) == HTTP1_ERROR);
	CHECK(strstr(p.error, "trailer too large"));
	/* a long Content-Type is cut, not refused */
	strcpy(big, "HTTP/1.1 200 OK\r\nContent-Type: ");
	n = strlen(big);
	memset(big + n, 't', 2000);
	strcpy(big + n + 2000, "\r\nContent-Length: 1\r\n\r\nz");
	CHECK(feed(&p, &s, big, 0, NULL) == HTTP1_DONE);
	CHECK(strlen(p.content_type) == HTTP1_CTYPE_MAX - 1);
	CHECK_STREQ(s.buf, "z");
}

TEST(body_callback_stops)
{
	http1_parser p;
	sink s;
	http1_init(&p);
	memset(&s, 0, sizeof(s));
	s.stop_after = 1;
	const char *m = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n1\r\nb\r\n0\r\n\r\n";
	CHECK(http1_feed(&p, m, strlen(m), on_body, &s, NULL) == HTTP1_ERROR);
	CHECK_STREQ(p.error, "stopped");
	CHECK_STREQ(s.buf, "a");
}
