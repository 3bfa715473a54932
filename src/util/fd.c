#include "util/fd.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/macro.h"

ssize_t fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t left = len;
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		left -= (size_t)n;
	}
	return (ssize_t)len;
}

int fd_read_all(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			if (cap >= max)
				return -EFBIG;
			cap = cap * 2 > max ? max : cap * 2;
			char *n = realloc(buf, cap + 1);
			if (!n)
				return -ENOMEM;
			buf = n;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	if (ret_len)
		*ret_len = len;
	*ret_buf = TAKE_PTR(buf);
	return 0;
}

int fd_send_msg(int sock, const void *buf, size_t len, const int *fds, size_t n_fds)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	union {
		char buf[CMSG_SPACE(sizeof(int) * FD_MSG_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	if (n_fds > FD_MSG_MAX_FDS)
		return -EINVAL;
	if (n_fds > 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
	}
	ssize_t n = RETRY_EINTR(sendmsg(sock, &msg, MSG_NOSIGNAL));
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EMSGSIZE;
	return 0;
}

ssize_t fd_recv_msg(int sock, char *buf, size_t cap, int *fds, size_t *n_fds)
{
	struct iovec iov = {.iov_base = buf, .iov_len = cap - 1};
	union {
		char buf[CMSG_SPACE(sizeof(int) * FD_MSG_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	size_t want = n_fds ? *n_fds : 0, got = 0;
	if (n_fds)
		*n_fds = 0;
	ssize_t n = RETRY_EINTR(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC));
	/* A unix socket's peer that closed with a message of ours unread makes
	 * the next receive fail with ECONNRESET, ahead of whatever it sent
	 * before closing (an exec's exit crossing a forwarded signal). The
	 * error is cleared by reporting it: what is queued reads now, and after
	 * it end of file. */
	if (n < 0 && errno == ECONNRESET) {
		msg.msg_controllen = sizeof(u.buf);
		n = RETRY_EINTR(recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT));
		if (n < 0 && errno == EAGAIN)
			errno = ECONNRESET;
	}
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < k; i++) {
			if (got < want && !(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
				fds[got++] = in[i];
			else
				safe_close(in[i]);
		}
	}
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		for (size_t i = 0; i < got; i++)
			safe_close(fds[i]);
		return -EMSGSIZE;
	}
	if (n_fds)
		*n_fds = got;
	buf[n] = 0;
	return n;
}

int fd_set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	fl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

int fd_set_cloexec(int fd, int on)
{
	int fl = fcntl(fd, F_GETFD);
	if (fl < 0)
		return -errno;
	fl = on ? (fl | FD_CLOEXEC) : (fl & ~FD_CLOEXEC);
	return fcntl(fd, F_SETFD, fl) < 0 ? -errno : 0;
}

int fd_move_above_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (n < 0)
		return -errno;
	close(fd);
	return n;
}

int fd_sock_opt(int fd, int opt)
{
	int v = -1;
	socklen_t n = sizeof(v);
	return getsockopt(fd, SOL_SOCKET, opt, &v, &n) < 0 ? -1 : v;
}

bool fd_is_fresh_tcp(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
		return false;
	if (fd_sock_opt(fd, SO_DOMAIN) != AF_INET || fd_sock_opt(fd, SO_TYPE) != SOCK_STREAM ||
	    fd_sock_opt(fd, SO_PROTOCOL) != IPPROTO_TCP)
		return false;
	struct sockaddr_in a;
	socklen_t n = sizeof(a);
	if (getpeername(fd, (struct sockaddr *)&a, &n) == 0 || errno != ENOTCONN)
		return false;
	n = sizeof(a);
	if (getsockname(fd, (struct sockaddr *)&a, &n) < 0 || a.sin_port != 0 ||
	    a.sin_addr.s_addr != htonl(INADDR_ANY))
		return false;
	return fd_sock_opt(fd, SO_ACCEPTCONN) == 0;
}
