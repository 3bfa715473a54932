/* The egress proxy engine (see proxy.h for the contract).
 *
 * One epoll loop, level-triggered, in the caller's thread. Each client
 * connection is a small state machine:
 *   HEAD      read the request head (deadline head_timeout_ms)
 *   RESOLVE   a detached thread asks opts.check (if any), resolves the name
 *             and pokes a socketpair
 *   CONNECT   non-blocking connect to each allowed address in turn
 *   HELLO     after "200", read the ClientHello and check its SNI
 *   RELAY     both directions through 64 KiB buffers; a direction that
 *             fills its buffer moves on to splice(2) through a pipe, so
 *             bulk bytes never enter user space (proxy_splice_start)
 *   REFUSE    flush an error response, then DRAIN: shut down, read the
 *             client's leftovers briefly so the response is not lost to a RST
 * Connections closed while handling a batch of events are freed only after
 * the batch (later events of the batch may still point at them). */
#include "policy/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include "policy/proxy_parse.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/log.h"
#include "util/thread.h"

#define BUF_SIZE (64 * 1024)
#define DRAIN_MS 2000

typedef enum conn_state {
	ST_HEAD,
	ST_RESOLVE,
	ST_CONNECT,
	ST_HELLO,
	ST_RELAY,
	ST_REFUSE,
	ST_DRAIN
} conn_state;

/* A resolution handed to a thread; shared by the thread and the loop. */
typedef struct rjob {
	atomic_int refs;
	proxy_resolve_fn fn;
	void *ud;
	int wfd; /* the thread's end of the socketpair */
	int rc;
	size_t n;
	struct sockaddr_storage addrs[PROXY_MAX_ADDRS];
	char host[EGRESS_HOST_MAX + 2];
	/* opts.check, asked first (it may block) */
	proxy_check_fn check;
	const char *kind;
	int port;
	struct sockaddr_storage lit; /* an IP literal (ss_family set): not resolved */
	bool denied;
	char why[400]; /* the check's reason; short enough for a header line */
} rjob;

static void rjob_unref(rjob *j)
{
	if (j && atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) == 1) {
		safe_close(j->wfd);
		free(j);
	}
}

typedef struct conn conn;
typedef struct tag {
	conn *c;
	int role; /* 0 client, 1 upstream, 2 resolver, 3 listener, 4 stop */
} tag;

typedef struct dir {
	uint8_t *buf;
	size_t off, len; /* pending bytes: buf[off..off+len) */
	int pr, pw;	 /* a pipe once the direction splices (-1 before) */
	size_t inpipe;	 /* pending bytes in the pipe */
	bool eof;	 /* the source sent FIN */
	bool shut;	 /* FIN passed on to the sink */
	uint64_t bytes;
} dir;

struct conn {
	conn *next, *prev;
	conn_state st;
	bool dead;
	int cfd, ufd, jfd;
	uint32_t cev, uev; /* registered epoll interest */
	tag tc, tu, tj;
	rjob *job;
	dir up, down; /* up: client -> upstream; down: upstream -> client */
	proxy_request req;
	bool have_req;
	int64_t start_ms, deadline_ms;
	struct sockaddr_storage addrs[PROXY_MAX_ADDRS];
	size_t n_addrs, next_addr;
	const char *verdict, *rule;
	char check_why[400]; /* opts.check's refusal (rule points here) */
	char reason[512];
	char address[INET6_ADDRSTRLEN + 8];
};

typedef struct server {
	int ep;
	const egress_allowlist *al;
	proxy_opts o;
	conn *conns, *dead;
	unsigned n_conns;
} server;

static int64_t ms_or(int v, int dflt)
{
	return v > 0 ? v : dflt;
}

void proxy_refusal_text(const char *host, int port, const char *why, char *buf, size_t cap)
{
	bool v6 = host && strchr(host, ':');
	snprintf(buf, cap,
		 "sbx egress policy refused %s%s%s:%d: %s. Connections only go through this proxy; other "
		 "routes are "
		 "blocked, so retrying another way will not work.\n",
		 v6 ? "[" : "", host ? host : "?", v6 ? "]" : "", port, why);
}

/* ---- epoll interest ---------------------------------------------------- */

static int watch(server *s, int fd, tag *t, uint32_t *cur, uint32_t ev)
{
	struct epoll_event e = {.events = ev, .data.ptr = t};
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &e) < 0)
		return -errno;
	if (cur)
		*cur = ev;
	return 0;
}

/* A socket out of the epoll set (park()): EPOLLHUP is reported whatever
 * the interest, so a hung-up socket whose bytes must wait stays out. */
#define PARKED UINT32_MAX

static void set_interest(server *s, int fd, uint32_t *cur, uint32_t want, tag *t)
{
	if (fd < 0 || *cur == want || (*cur == PARKED && !want))
		return;
	struct epoll_event ev = {.events = want, .data.ptr = t};
	if (epoll_ctl(s->ep, *cur == PARKED ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) == 0)
		*cur = want;
}

static void park(server *s, int fd, uint32_t *cur)
{
	if (*cur != PARKED && epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL) == 0)
		*cur = PARKED;
}

static size_t dir_pending(const dir *d)
{
	return d->len + d->inpipe;
}

static void update_interest(server *s, conn *c)
{
	uint32_t cw = 0, uw = 0;
	switch (c->st) {
	case ST_HEAD:
	case ST_HELLO:
		cw = EPOLLIN | (c->down.len ? EPOLLOUT : 0);
		break;
	case ST_CONNECT:
		uw = EPOLLOUT;
		break;
	case ST_RELAY:
		if (!dir_pending(&c->up) && !c->up.eof)
			cw |= EPOLLIN;
		if (dir_pending(&c->down))
			cw |= EPOLLOUT;
		if (!dir_pending(&c->down) && !c->down.eof)
			uw |= EPOLLIN;
		if (dir_pending(&c->up))
			uw |= EPOLLOUT;
		break;
	case ST_REFUSE:
		cw = EPOLLOUT;
		break;
	case ST_DRAIN:
		cw = EPOLLIN;
		break;
	default:
		break;
	}
	set_interest(s, c->cfd, &c->cev, cw, &c->tc);
	set_interest(s, c->ufd, &c->uev, uw, &c->tu);
}

/* ---- connection lifetime ----------------------------------------------- */

static void conn_log(server *s, conn *c)
{
	if (!s->o.log)
		return;
	_cleanup_json_ json_t *ev = json_object();
	if (!ev)
		return;
	json_object_set_new(ev, "event", json_string("egress"));
	json_object_set_new(ev, "kind",
			    !c->have_req		       ? json_null()
			    : c->req.kind == PROXY_REQ_CONNECT ? json_string("connect")
							       : json_string("http"));
	json_object_set_new(ev, "host", c->have_req ? json_string(c->req.host) : json_null());
	json_object_set_new(ev, "port", c->have_req ? json_integer(c->req.port) : json_null());
	json_object_set_new(ev, "verdict", json_string(c->verdict ? c->verdict : "failed"));
	json_object_set_new(ev, "rule", c->rule ? json_string(c->rule) : json_null());
	if (c->reason[0])
		json_object_set_new(ev, "reason", json_string(c->reason));
	if (c->address[0])
		json_object_set_new(ev, "address", json_string(c->address));
	json_object_set_new(ev, "bytes_up", json_integer((json_int_t)c->up.bytes));
	json_object_set_new(ev, "bytes_down", json_integer((json_int_t)c->down.bytes));
	json_object_set_new(ev, "duration_ms", json_integer(clock_ms(CLOCK_MONOTONIC) - c->start_ms));
	s->o.log(s->o.ud, ev);
}

static void conn_close(server *s, conn *c, const char *reason)
{
	if (c->dead)
		return;
	if (reason && !c->reason[0])
		snprintf(c->reason, sizeof(c->reason), "%s", reason);
	conn_log(s, c);
	c->dead = true;
	c->cfd = safe_close(c->cfd);
	c->ufd = safe_close(c->ufd);
	c->jfd = safe_close(c->jfd);
	c->up.pr = safe_close(c->up.pr);
	c->up.pw = safe_close(c->up.pw);
	c->down.pr = safe_close(c->down.pr);
	c->down.pw = safe_close(c->down.pw);
	rjob_unref(c->job);
	c->job = NULL;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = s->dead;
	c->prev = NULL;
	s->dead = c;
	s->n_conns--;
}

static void conn_free(conn *c)
{
	proxy_request_done(&c->req);
	free(c->up.buf);
	free(c->down.buf);
	free(c);
}

static void reap_dead(server *s)
{
	while (s->dead) {
		conn *c = s->dead;
		s->dead = c->next;
		conn_free(c);
	}
}

/* Queues an HTTP response to the client and switches to REFUSE. Any upstream
 * connection or resolution in progress is dropped. */
static void respond(server *s, conn *c, const char *status, const char *rule_hdr, const char *body)
{
	c->ufd = safe_close(c->ufd);
	c->jfd = safe_close(c->jfd);
	rjob_unref(c->job);
	c->job = NULL;
	char hdr[512] = "";
	if (rule_hdr)
		snprintf(hdr, sizeof(hdr), "X-Sbx-Policy-Rule: %s\r\n", rule_hdr);
	int n = snprintf((char *)c->down.buf, BUF_SIZE,
			 "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n%s",
			 status, strlen(body), hdr, body);
	c->down.off = 0;
	c->down.len = n < 0 ? 0 : (size_t)n >= BUF_SIZE ? BUF_SIZE - 1 : (size_t)n;
	c->st = ST_REFUSE;
	c->deadline_ms = clock_ms(CLOCK_MONOTONIC) + DRAIN_MS;
}

static void refuse(server *s, conn *c, const char *why)
{
	char body[1024];
	proxy_refusal_text(c->req.host, c->req.port, why, body, sizeof(body));
	c->verdict = "denied";
	c->rule = why;
	respond(s, c, "403 Forbidden", why, body);
}

/* Answers status with "sbx egress proxy: what[: detail]". */
static void fail(server *s, conn *c, const char *status, const char *what, const char *detail)
{
	char why[300], body[600];
	snprintf(why, sizeof(why), "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
	snprintf(body, sizeof(body), "sbx egress proxy: %s\n", why);
	if (!c->reason[0])
		snprintf(c->reason, sizeof(c->reason), "%s", why);
	if (!c->verdict || streq(c->verdict, "allowed"))
		c->verdict = "failed";
	respond(s, c, status, NULL, body);
}

/* ---- resolution ---------------------------------------------------------- */

static int resolve_default(const char *host, struct sockaddr_storage *ret, size_t max, size_t *ret_n)
{
	struct addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
	struct addrinfo *res = NULL;
	int r = getaddrinfo(host, NULL, &hints, &res);
	if (r != 0)
		return r == EAI_SYSTEM ? -errno : (r == EAI_NONAME || r == EAI_NODATA) ? -ENOENT : -EAGAIN;
	size_t n = 0;
	for (struct addrinfo *a = res; a && n < max; a = a->ai_next)
		if ((a->ai_family == AF_INET || a->ai_family == AF_INET6) && a->ai_addrlen <= sizeof(*ret)) {
			memset(&ret[n], 0, sizeof(ret[n]));
			memcpy(&ret[n++], a->ai_addr, a->ai_addrlen);
		}
	freeaddrinfo(res);
	if (!n)
		return -ENOENT;
	*ret_n = n;
	return 0;
}

static void *resolve_thread(void *arg)
{
	rjob *j = arg;
	size_t n = 0;
	int r;
	if (j->check && j->check(j->ud, j->kind, j->host, j->port, j->why, sizeof(j->why)) != 1) {
		j->denied = true;
		r = -EPERM;
	} else if (j->lit.ss_family) {
		j->addrs[0] = j->lit;
		n = 1;
		r = 0;
	} else
		r = j->fn ? j->fn(j->ud, j->host, j->addrs, PROXY_MAX_ADDRS, &n)
			  : resolve_default(j->host, j->addrs, PROXY_MAX_ADDRS, &n);
	j->rc = r < 0 ? r : (n == 0 || n > PROXY_MAX_ADDRS) ? -ENOENT : 0;
	j->n = j->rc == 0 ? n : 0;
	/* The loop may have given up on us: MSG_NOSIGNAL, errors ignored. */
	(void)!send(j->wfd, "r", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	rjob_unref(j);
	return NULL;
}

static void start_connect(server *s, conn *c);

/* Keeps the addresses that pass the SSRF gate; refuses if none does. */
static void addrs_ready(server *s, conn *c, const struct sockaddr_storage *addrs, size_t n)
{
	const char *why = NULL;
	c->n_addrs = 0;
	for (size_t i = 0; i < n; i++) {
		struct sockaddr_storage a = addrs[i];
		if (a.ss_family == AF_INET)
			((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)c->req.port);
		else if (a.ss_family == AF_INET6)
			((struct sockaddr_in6 *)&a)->sin6_port = htons((uint16_t)c->req.port);
		else
			continue;
		const char *rule;
		if (egress_check_addr(s->al, (struct sockaddr *)&a, &rule) == 1)
			c->addrs[c->n_addrs++] = a;
		else
			why = rule;
	}
	if (!c->n_addrs)
		return refuse(s, c, why ? why : "the name resolved to no usable address");
	c->next_addr = 0;
	start_connect(s, c);
}

static void start_resolve(server *s, conn *c)
{
	struct sockaddr_storage lit = {0};
	if (inet_pton(AF_INET, c->req.host, &((struct sockaddr_in *)&lit)->sin_addr) == 1)
		lit.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, c->req.host, &((struct sockaddr_in6 *)&lit)->sin6_addr) == 1)
		lit.ss_family = AF_INET6;
	/* An IP literal needs no resolution, but a check hook still runs in the thread. */
	if (lit.ss_family && !s->o.check)
		return addrs_ready(s, c, &lit, 1);
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
		return fail(s, c, "502 Bad Gateway", "cannot resolve", strerror(errno));
	rjob *j = calloc(1, sizeof(*j));
	if (!j) {
		safe_close(sp[0]);
		safe_close(sp[1]);
		return fail(s, c, "502 Bad Gateway", "cannot resolve", strerror(ENOMEM));
	}
	atomic_init(&j->refs, 2);
	j->fn = s->o.resolve;
	j->ud = s->o.ud;
	j->wfd = sp[1];
	snprintf(j->host, sizeof(j->host), "%s", c->req.host);
	j->check = s->o.check;
	j->kind = c->req.kind == PROXY_REQ_CONNECT ? "connect" : "http";
	j->port = c->req.port;
	j->lit = lit;
	c->jfd = sp[0];
	c->job = j;
	c->st = ST_RESOLVE;
	c->deadline_ms = clock_ms(CLOCK_MONOTONIC) + ms_or(s->o.connect_timeout_ms, 10000);
	if (watch(s, c->jfd, &c->tj, NULL, EPOLLIN) < 0) {
		atomic_fetch_sub(&j->refs, 1); /* the thread never starts */
		return fail(s, c, "502 Bad Gateway", "cannot resolve", strerror(errno));
	}
	int r = thread_start_detached(resolve_thread, j, 256 * 1024);
	if (r != 0) {
		atomic_fetch_sub(&j->refs, 1);
		return fail(s, c, "502 Bad Gateway", "cannot resolve", strerror(r));
	}
}

static void resolve_done(server *s, conn *c)
{
	rjob *j = c->job;
	c->job = NULL;
	c->jfd = safe_close(c->jfd);
	if (j->denied) {
		/* one line (it becomes a header), whatever the check wrote */
		j->why[sizeof(j->why) - 1] = '\0';
		for (char *p = j->why; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = ' ';
		snprintf(c->check_why, sizeof(c->check_why), "%s", j->why[0] ? j->why : "refused by a check");
		rjob_unref(j);
		return refuse(s, c, c->check_why);
	}
	if (j->rc < 0) {
		char why[128];
		snprintf(why, sizeof(why), "%s", j->rc == -ENOENT ? "no such host" : strerror(-j->rc));
		rjob_unref(j);
		return fail(s, c, "502 Bad Gateway", "cannot resolve the host", why);
	}
	struct sockaddr_storage addrs[PROXY_MAX_ADDRS];
	size_t n = j->n;
	memcpy(addrs, j->addrs, n * sizeof(addrs[0]));
	rjob_unref(j);
	addrs_ready(s, c, addrs, n);
}

/* ---- connecting ---------------------------------------------------------- */

static void connected(server *s, conn *c);

static void start_connect(server *s, conn *c)
{
	int last = ECONNREFUSED;
	c->st = ST_CONNECT;
	c->deadline_ms = clock_ms(CLOCK_MONOTONIC) + ms_or(s->o.connect_timeout_ms, 10000);
	while (c->next_addr < c->n_addrs) {
		const struct sockaddr_storage *a = &c->addrs[c->next_addr++];
		socklen_t len =
		    a->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		c->ufd = safe_close(c->ufd);
		c->uev = 0;
		int fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		char ip[INET6_ADDRSTRLEN];
		const void *src = a->ss_family == AF_INET
				      ? (const void *)&((const struct sockaddr_in *)a)->sin_addr
				      : (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr;
		inet_ntop(a->ss_family, src, ip, sizeof(ip));
		snprintf(c->address, sizeof(c->address), a->ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip,
			 c->req.port);
		c->ufd = fd;
		if (connect(fd, (const struct sockaddr *)a, len) == 0) {
			if (watch(s, fd, &c->tu, &c->uev, 0) < 0)
				return fail(s, c, "502 Bad Gateway", "connect", strerror(errno));
			return connected(s, c);
		}
		if (errno == EINPROGRESS) {
			if (watch(s, fd, &c->tu, &c->uev, EPOLLOUT) < 0)
				return fail(s, c, "502 Bad Gateway", "connect", strerror(errno));
			return;
		}
		last = errno;
	}
	c->ufd = safe_close(c->ufd);
	fail(s, c, "502 Bad Gateway", "cannot connect to the host", strerror(last));
}

static void connect_progress(server *s, conn *c)
{
	int e = 0;
	socklen_t l = sizeof(e);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
		e = errno;
	if (e == 0)
		return connected(s, c);
	c->ufd = safe_close(c->ufd); /* also leaves the epoll set */
	start_connect(s, c);
}

/* ---- relaying ------------------------------------------------------------ */

/* Moves d to splice(2) once it has filled its buffer (bulk data): a pipe
 * with room for 1 MiB where the system allows. Without one (out of fds,
 * or pipes refused) the direction goes on through its buffer. */
static void dir_splice_start(dir *d)
{
	int p[2];
	if (d->pw >= 0 || pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
		return;
	(void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20); /* the default 64 KiB where refused */
	d->pr = p[0];
	d->pw = p[1];
}

/* Writes pending bytes of d to fd (the buffer's, then the pipe's). Returns
 * 0, or -1 if the connection closed. */
static int dir_flush(server *s, conn *c, dir *d, int fd, bool count)
{
	while (d->len) {
		ssize_t n = send(fd, d->buf + d->off, d->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			conn_close(s, c, strerror(errno));
			return -1;
		}
		d->off += (size_t)n;
		d->len -= (size_t)n;
		if (count)
			d->bytes += (uint64_t)n;
	}
	d->off = 0;
	while (d->inpipe) {
		ssize_t n = splice(d->pr, NULL, fd, NULL, d->inpipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			conn_close(s, c, strerror(errno));
			return -1;
		}
		d->inpipe -= (size_t)n;
		if (count)
			d->bytes += (uint64_t)n;
	}
	return 0;
}

/* Reads into an empty d from fd. Returns 0, or -1 if the connection closed. */
static int dir_fill(server *s, conn *c, dir *d, int fd, bool count)
{
	if (dir_pending(d) || d->eof)
		return 0;
	if (d->pw >= 0) {
		ssize_t n =
		    RETRY_EINTR(splice(fd, NULL, d->pw, NULL, 1 << 20, SPLICE_F_MOVE | SPLICE_F_NONBLOCK));
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0 && errno == EINVAL) { /* a socket that cannot splice: the buffer */
			d->pr = safe_close(d->pr);
			d->pw = safe_close(d->pw);
			return dir_fill(s, c, d, fd, count);
		}
		if (n < 0) {
			conn_close(s, c, strerror(errno));
			return -1;
		}
		if (n == 0)
			d->eof = true;
		d->inpipe = (size_t)n;
		if (count)
			d->bytes += (uint64_t)n;
		return 0;
	}
	ssize_t n = RETRY_EINTR(recv(fd, d->buf, BUF_SIZE, MSG_DONTWAIT));
	if (n < 0) {
		if (errno == EAGAIN)
			return 0;
		conn_close(s, c, strerror(errno));
		return -1;
	}
	if (n == 0)
		d->eof = true;
	d->off = 0;
	d->len = (size_t)n;
	if (count)
		d->bytes += (uint64_t)n;
	if (d->len == BUF_SIZE && c->st == ST_RELAY)
		dir_splice_start(d);
	return 0;
}

static void relay_pump(server *s, conn *c)
{
	/* A few rounds, so a fast pair does not need an epoll trip per buffer. */
	for (int round = 0; round < 4 && !c->dead; round++) {
		uint64_t before = c->up.bytes + c->down.bytes;
		bool eofs = c->up.eof && c->down.eof;
		if (dir_fill(s, c, &c->up, c->cfd, false) < 0 || dir_flush(s, c, &c->up, c->ufd, true) < 0)
			return;
		if (dir_fill(s, c, &c->down, c->ufd, true) < 0 ||
		    dir_flush(s, c, &c->down, c->cfd, false) < 0)
			return;
		if (c->up.eof && !dir_pending(&c->up) && !c->up.shut) {
			shutdown(c->ufd, SHUT_WR); /* pass the client's FIN on */
			c->up.shut = true;
		}
		if (c->down.eof && !dir_pending(&c->down) && !c->down.shut) {
			shutdown(c->cfd, SHUT_WR);
			c->down.shut = true;
		}
		if (c->up.shut && c->down.shut)
			return conn_close(s, c, NULL);
		if (c->up.bytes + c->down.bytes == before && eofs == (c->up.eof && c->down.eof))
			break;
		c->deadline_ms = clock_ms(CLOCK_MONOTONIC) + ms_or(s->o.idle_timeout_ms, 300000);
	}
}

static void relay_start(server *s, conn *c)
{
	c->st = ST_RELAY;
	c->deadline_ms = clock_ms(CLOCK_MONOTONIC) + ms_or(s->o.idle_timeout_ms, 300000);
	relay_pump(s, c);
}

/* Checks the ClientHello in up.buf; 1: go on, 0: need more, -1: closed. */
static int hello_check(server *s, conn *c)
{
	char sni[EGRESS_HOST_MAX + 2];
	int r = proxy_tls_sni(c->up.buf, c->up.len, sni, sizeof(sni));
	if (r == -EAGAIN) {
		if (c->up.len < BUF_SIZE)
			return 0;
		r = -E2BIG;
	}
	uint8_t a[16];
	bool ip = inet_pton(AF_INET, c->req.host, a) == 1 || inet_pton(AF_INET6, c->req.host, a) == 1;
	char norm[EGRESS_HOST_MAX + 2];
	const char *why = NULL;
	if (r == -E2BIG)
		why = "the TLS ClientHello is too large";
	else if (r < 0)
		why = "the tunnel did not start with a TLS ClientHello";
	else if (r == 0 && !ip)
		why = "the TLS ClientHello carries no server name (SNI)";
	else if (r == 1 && (egress_host_normalize(sni, norm, sizeof(norm)) < 0 || !streq(norm, c->req.host)))
		why = "the TLS server name (SNI) differs from the CONNECT host";
	if (!why)
		return 1;
	c->verdict = "denied";
	c->rule = why;
	if (r == 1)
		snprintf(c->reason, sizeof(c->reason), "%s: SNI '%.200s'", why, sni);
	/* The client already has its "200": all we can do is close. */
	conn_close(s, c, why);
	return -1;
}

/* HELLO: flush the "200", then check the ClientHello once it is complete. */
static void hello_step(server *s, conn *c)
{
	if (dir_flush(s, c, &c->down, c->cfd, false) < 0)
		return;
	if (c->up.len && hello_check(s, c) == 1)
		relay_start(s, c);
}

static void connected(server *s, conn *c)
{
	c->verdict = "allowed";
	if (c->req.kind == PROXY_REQ_HTTP) {
		/* up.buf holds the client's head and any body bytes after it:
		 * replace the head by the rewritten origin-form head. */
		size_t rest = c->up.len - c->req.head_len;
		if (c->req.origin_head_len + rest > BUF_SIZE)
			return fail(s, c, "431 Request Header Fields Too Large", "request head too large",
				    NULL);
		memmove(c->up.buf + c->req.origin_head_len, c->up.buf + c->req.head_len, rest);
		memcpy(c->up.buf, c->req.origin_head, c->req.origin_head_len);
		c->up.off = 0;
		c->up.len = c->req.origin_head_len + rest;
		return relay_start(s, c);
	}
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	memcpy(c->down.buf, ok, sizeof(ok) - 1);
	c->down.off = 0;
	c->down.len = sizeof(ok) - 1;
	/* drop the CONNECT head; what follows it is the client's first bytes */
	memmove(c->up.buf, c->up.buf + c->req.head_len, c->up.len - c->req.head_len);
	c->up.len -= c->req.head_len;
	c->up.off = 0;
	if (c->req.port == 443 || s->o.require_sni) {
		c->st = ST_HELLO;
		c->deadline_ms = clock_ms(CLOCK_MONOTONIC) + ms_or(s->o.head_timeout_ms, 10000);
		return hello_step(s, c);
	}
	relay_start(s, c);
}

/* ---- request head --------------------------------------------------------- */

static void head_read(server *s, conn *c)
{
	ssize_t n =
	    RETRY_EINTR(recv(c->cfd, c->up.buf + c->up.len, PROXY_HEAD_MAX - c->up.len, MSG_DONTWAIT));
	if (n < 0) {
		if (errno != EAGAIN) {
			c->verdict = "bad_request";
			conn_close(s, c, strerror(errno));
		}
		return;
	}
	if (n == 0) {
		c->verdict = "bad_request";
		return conn_close(s, c, "client closed before sending a request");
	}
	c->up.len += (size_t)n;
	_cleanup_err_ sbx_err *e = NULL;
	int r = proxy_request_parse((const char *)c->up.buf, c->up.len, &c->req, &e);
	if (r == 0)
		return;
	if (r < 0) {
		const char *msg = sbx_err_message(e);
		c->verdict = "bad_request";
		if (r == -EPERM) {
			/* A request naming two hosts is a policy matter: 403 with the reason. */
			char body[900];
			snprintf(body, sizeof(body),
				 "sbx egress policy refused the request: %s. Connections only go through "
				 "this proxy; "
				 "other routes are blocked, so retrying another way will not work.\n",
				 msg);
			c->verdict = "denied";
			c->rule = "Host header disagrees with the request URI";
			snprintf(c->reason, sizeof(c->reason), "%s", msg);
			return respond(s, c, "403 Forbidden", c->rule, body);
		}
		return fail(s, c, r == -E2BIG ? "431 Request Header Fields Too Large" : "400 Bad Request",
			    msg, NULL);
	}
	c->have_req = true;
	const char *rule = NULL;
	r = egress_check(s->al, c->req.host, c->req.port, &rule);
	c->rule = rule;
	if (r != 1)
		return refuse(s, c, rule);
	start_resolve(s, c);
}

/* ---- event dispatch -------------------------------------------------------- */

static void on_event(server *s, tag *t, uint32_t ev)
{
	conn *c = t->c;
	if (c->dead)
		return;
	switch (c->st) {
	case ST_HEAD:
		if (t->role == 0)
			head_read(s, c);
		break;
	case ST_RESOLVE:
	case ST_CONNECT:
		if (t->role == 0 && (ev & (EPOLLERR | EPOLLHUP)))
			return conn_close(s, c, "client went away");
		if (c->st == ST_RESOLVE && t->role == 2)
			resolve_done(s, c);
		else if (c->st == ST_CONNECT && t->role == 1)
			connect_progress(s, c);
		break;
	case ST_HELLO:
		if (t->role == 0 && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
			ssize_t n = RETRY_EINTR(
			    recv(c->cfd, c->up.buf + c->up.len, BUF_SIZE - c->up.len, MSG_DONTWAIT));
			if (n == 0 || (n < 0 && errno != EAGAIN))
				return conn_close(s, c,
						  n == 0 ? "client closed before its TLS ClientHello"
							 : strerror(errno));
			if (n > 0)
				c->up.len += (size_t)n;
		}
		hello_step(s, c);
		break;
	case ST_RELAY:
		if (ev & EPOLLERR) {
			int e = 0;
			socklen_t l = sizeof(e);
			getsockopt(t->role == 0 ? c->cfd : c->ufd, SOL_SOCKET, SO_ERROR, &e, &l);
			return conn_close(s, c, strerror(e ? e : EIO));
		}
		relay_pump(s, c);
		if (!c->dead && (ev & EPOLLHUP)) {
			/* HUP: that socket's peer sent its FIN and its write side
			 * is shut. What it sent is still read to its EOF; while
			 * those bytes wait on the other side, the socket leaves the
			 * epoll set (HUP would fire on every wait), and comes back
			 * once they are through (update_interest). */
			dir *from = t->role == 0 ? &c->up : &c->down;
			if (dir_pending(from))
				park(s, t->role == 0 ? c->cfd : c->ufd, t->role == 0 ? &c->cev : &c->uev);
			else if (from->shut)
				return conn_close(s, c, "connection hung up");
		}
		break;
	case ST_DRAIN: {
		char junk[4096];
		ssize_t n = recv(c->cfd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return conn_close(s, c, NULL);
		break;
	}
	default:
		break;
	}
	if (!c->dead && c->st == ST_REFUSE) {
		/* flush right away: the socket is usually writable */
		if (dir_flush(s, c, &c->down, c->cfd, false) < 0)
			return;
		if (!c->down.len) {
			shutdown(c->cfd, SHUT_WR);
			c->st = ST_DRAIN;
		}
	}
	if (!c->dead)
		update_interest(s, c);
}

static void on_accept(server *s, int lfd)
{
	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				log_debug("proxy: accept: %m");
			return;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		unsigned cap = s->o.max_conns ? s->o.max_conns : 256;
		conn *c = NULL;
		if (s->n_conns < cap && (c = calloc(1, sizeof(*c)))) {
			c->up.buf = malloc(BUF_SIZE);
			c->down.buf = malloc(BUF_SIZE);
			c->up.pr = c->up.pw = c->down.pr = c->down.pw = -1;
		}
		if (!c || !c->up.buf || !c->down.buf) {
			static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
						   "text/plain\r\nConnection: close\r\n"
						   "Content-Length: 67\r\n\r\nsbx egress proxy: too many "
						   "connections at once; retry in a moment\n";
			(void)!send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			safe_close(fd);
			if (c)
				conn_free(c);
			if (s->o.log) {
				_cleanup_json_ json_t *ev =
				    json_pack("{s:s,s:s,s:s}", "event", "egress", "verdict", "busy", "reason",
					      "connection cap reached");
				if (ev)
					s->o.log(s->o.ud, ev);
			}
			continue;
		}
		c->cfd = fd;
		c->ufd = c->jfd = -1;
		c->tc = (tag){c, 0};
		c->tu = (tag){c, 1};
		c->tj = (tag){c, 2};
		c->st = ST_HEAD;
		c->start_ms = clock_ms(CLOCK_MONOTONIC);
		c->deadline_ms = c->start_ms + ms_or(s->o.head_timeout_ms, 10000);
		if (watch(s, fd, &c->tc, &c->cev, EPOLLIN) < 0) {
			safe_close(fd);
			conn_free(c);
			continue;
		}
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
	}
}

static void on_timeouts(server *s, int64_t now)
{
	for (conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (now < c->deadline_ms)
			continue;
		switch (c->st) {
		case ST_HEAD:
			c->verdict = "bad_request";
			conn_close(s, c, "timed out waiting for the request head");
			break;
		case ST_RESOLVE:
		case ST_CONNECT:
			fail(s, c, "504 Gateway Timeout", "timed out resolving or connecting to the host",
			     NULL);
			update_interest(s, c);
			break;
		case ST_HELLO:
			conn_close(s, c, "timed out waiting for the TLS ClientHello");
			break;
		case ST_RELAY:
			conn_close(s, c, "idle timeout");
			break;
		default:
			conn_close(s, c, NULL);
			break;
		}
	}
}

int proxy_serve(int listen_fd, const egress_allowlist *al, const proxy_opts *o, sbx_err **err)
{
	if (!o || o->version != PROXY_OPTS_VERSION)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "proxy: unsupported proxy_opts version");
	if (listen_fd < 0 || !al)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "proxy: missing listening socket or allowlist");
	server s = {.al = al, .o = *o};
	_cleanup_close_ int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return err_errno(err, "proxy: epoll_create1");
	s.ep = ep;
	int r = fd_set_nonblock(listen_fd, 1);
	if (r < 0)
		return err_errnum(err, r, "proxy: set listening socket non-blocking");
	tag listen_tag = {NULL, 3}, stop_tag = {NULL, 4};
	if (watch(&s, listen_fd, &listen_tag, NULL, EPOLLIN) < 0)
		return err_errno(err, "proxy: watch listening socket");
	if (o->stop_fd >= 0 && watch(&s, o->stop_fd, &stop_tag, NULL, EPOLLIN) < 0)
		return err_errno(err, "proxy: watch stop fd");
	int ret = 0;
	for (bool stop = false; !stop;) {
		int64_t now = clock_ms(CLOCK_MONOTONIC), next = now + 60000;
		for (conn *c = s.conns; c; c = c->next)
			if (c->deadline_ms < next)
				next = c->deadline_ms;
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, ARRAY_SIZE(evs), next <= now ? 0 : (int)(next - now));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = err_errno(err, "proxy: epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			tag *t = evs[i].data.ptr;
			if (t == &stop_tag)
				stop = true;
			else if (t == &listen_tag)
				on_accept(&s, listen_fd);
			else
				on_event(&s, t, evs[i].events);
		}
		on_timeouts(&s, clock_ms(CLOCK_MONOTONIC));
		reap_dead(&s);
	}
	while (s.conns)
		conn_close(&s, s.conns, "proxy stopped");
	reap_dead(&s);
	epoll_ctl(ep, EPOLL_CTL_DEL, listen_fd, NULL);
	return ret;
}
