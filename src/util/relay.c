/* The byte relay (relay.h): poll both ends; a direction moves its buffer to
 * its destination before it reads its source again. */
#include "util/relay.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/fd.h"
#include "util/macro.h"

typedef struct dir {
	int src, dst;
	char *buf;
	size_t off, len;
	bool eof; /* the source ended: shut the destination's write side once buf is empty */
	bool done;
} dir;

/* Moves what it can; 0, or -errno. */
static int dir_step(dir *d, short src_ev, short dst_ev)
{
	if (d->done)
		return 0;
	if (d->len > d->off && (dst_ev & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t n = send(d->dst, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n > 0)
			d->off += (size_t)n;
		if (d->off == d->len)
			d->off = d->len = 0;
	}
	if (d->len == 0 && !d->eof && (src_ev & (POLLIN | POLLERR | POLLHUP | POLLRDHUP))) {
		ssize_t n = recv(d->src, d->buf, RELAY_BUF, 0);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n == 0)
			d->eof = true;
		if (n > 0)
			d->len = (size_t)n;
	}
	if (d->eof && d->len == 0) {
		(void)shutdown(d->dst, SHUT_WR);
		d->done = true;
	}
	return 0;
}

static int dir_init(dir *d, int src, int dst, const char *first, size_t len)
{
	*d = (dir){.src = src, .dst = dst, .buf = malloc(len > RELAY_BUF ? len : RELAY_BUF)};
	if (!d->buf)
		return -ENOMEM;
	if (len)
		memcpy(d->buf, first, len);
	d->len = len;
	return 0;
}

int relay_run(int a, int b, const char *a_first, size_t a_len, const char *b_first, size_t b_len)
{
	dir ab, ba;
	if (dir_init(&ab, a, b, a_first, a_len) < 0)
		return -ENOMEM;
	if (dir_init(&ba, b, a, b_first, b_len) < 0) {
		free(ab.buf);
		return -ENOMEM;
	}
	int r = 0;
	if ((r = fd_set_nonblock(a, 1)) == 0)
		r = fd_set_nonblock(b, 1);
	while (r == 0 && !(ab.done && ba.done)) {
		/* fds[0] is a, fds[1] b: each end is a source of one direction and
		 * the destination of the other. */
		struct pollfd p[2] = {{.fd = a}, {.fd = b}};
		if (!ab.done && ab.len == 0 && !ab.eof)
			p[0].events |= POLLIN | POLLRDHUP;
		if (!ab.done && ab.len > ab.off)
			p[1].events |= POLLOUT;
		if (!ba.done && ba.len == 0 && !ba.eof)
			p[1].events |= POLLIN | POLLRDHUP;
		if (!ba.done && ba.len > ba.off)
			p[0].events |= POLLOUT;
		if (ab.eof && ab.len == 0)
			p[1].events |= POLLOUT; /* only to run the step that shuts it */
		if (ba.eof && ba.len == 0)
			p[0].events |= POLLOUT;
		int n = poll(p, 2, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if ((r = dir_step(&ab, p[0].revents, p[1].revents)) < 0)
			break;
		r = dir_step(&ba, p[1].revents, p[0].revents);
		/* An end that hung up both ways (POLLHUP, after its EOF) takes
		 * nothing more: the direction towards it is over (else poll would
		 * report the hang-up again at once, forever). */
		if ((p[0].revents & (POLLHUP | POLLERR)) && ab.eof)
			ba.done = true;
		if ((p[1].revents & (POLLHUP | POLLERR)) && ba.eof)
			ab.done = true;
	}
	free(ab.buf);
	free(ba.buf);
	return r;
}
