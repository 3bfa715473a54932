/* The determinism engine's second thread: it answers the seccomp user
 * notifications (the clocks, getrandom, getcpu, nanosleep, and the opens of
 * /dev/urandom, which get one end of a socket pair it keeps fed). ptrace
 * requests must come from the tracer thread (ptrace_engine.c), but
 * notifications need none. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/seccomp.h>

#include "trace/ptrace_priv.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/macro.h"

#if defined(__x86_64__)

/* ---- /dev/urandom ---- */

static void rs_close(engine *e, size_t i)
{
	safe_close(e->rs[i].fd);
	e->rs[i] = e->rs[--e->n_rs];
}

/* Keeps the reader's queue full, one RS_MSG message at a time; false once
 * the reader is gone. */
static bool rs_feed(engine *e, rstream *r)
{
	static uint8_t buf[RS_MSG];
	for (;;) {
		determ_rng_read(&e->rng, r->stream, r->pos, buf, sizeof(buf));
		ssize_t w = send(r->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		r->pos += sizeof(buf);
	}
}

/* What the command writes into it goes nowhere, as into the device. */
static void rs_drain(rstream *r)
{
	uint8_t buf[4096];
	while (recv(r->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* True when `path` as the tracee would open it is /dev/random or /dev/urandom. */
static bool is_random_dev(pid_t tid, int dirfd, const char *path, uint64_t flags)
{
	char full[4096 + 64];
	if (path[0] == '/')
		snprintf(full, sizeof(full), "/proc/%d/root%s", tid, path);
	else if (dirfd == AT_FDCWD)
		snprintf(full, sizeof(full), "/proc/%d/cwd/%s", tid, path);
	else
		snprintf(full, sizeof(full), "/proc/%d/fd/%d/%s", tid, dirfd, path);
	struct stat st;
	int r = flags & O_NOFOLLOW ? lstat(full, &st) : stat(full, &st);
	return r == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
	       (minor(st.st_rdev) == 8 || minor(st.st_rdev) == 9);
}

/* False when the caller was no longer waiting (ENOENT: a signal interrupted
 * it, and the call fails with EINTR or is made again). */
static bool notif_continue(engine *e, uint64_t id, int error)
{
	struct seccomp_notif_resp resp = {.id = id};
	if (error)
		resp.error = -error;
	else
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0) {
		if (errno == ENOENT)
			return false;
		log_debug("ptrace engine: notification reply: %m");
	}
	return true;
}

static void on_notif(engine *e)
{
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	if (ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return; /* ENOENT: the task left (a signal) before we looked */
	uint64_t t_recv = engine_now_ns(CLOCK_MONOTONIC);
	e->res.stops++;
	int nr = req.data.nr;
	const uint64_t *a = (const uint64_t *)req.data.args;
	pid_t tid = (pid_t)req.pid;
	task *t = ptrace_task_find(e, tid);
	int64_t val;
	if (nr != SYS_open && nr != SYS_openat && nr != SYS_openat2) {
		/* An answer the caller never gets (a signal came first: the call
		 * fails with EINTR or is restarted) must leave no trace in its
		 * clock or random stream, or a restart would count twice. */
		dproc *p = determ_proc_of(e, t), before = *p;
		if (!determ_answer(e, t, tid, nr, a, &val)) {
			if (!notif_continue(e, req.id, 0))
				*p = before;
			return;
		}
		struct seccomp_notif_resp resp = {
		    .id = req.id, .val = val >= 0 ? val : 0, .error = val < 0 ? (int)val : 0};
		if (ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0) {
			if (errno == ENOENT) {
				*p = before;
				return;
			}
			log_debug("ptrace engine: notification reply: %m");
		}
		if (t)
			t->emulated = true;
		e->res.emulated++;
		return;
	}
	int dirfd = AT_FDCWD;
	uint64_t path_addr, flags;
	if (nr == SYS_open)
		path_addr = a[0], flags = a[1];
	else if (nr == SYS_openat)
		dirfd = (int)a[0], path_addr = a[1], flags = a[2];
	else if (nr == SYS_openat2) {
		dirfd = (int)a[0], path_addr = a[1];
		if (a[3] < 8 || ptrace_mem_read(tid, a[2], &flags, 8) != 8) {
			notif_continue(e, req.id, 0);
			return;
		}
	} else {
		notif_continue(e, req.id, 0);
		return;
	}
	char path[4096];
	bool trunc;
	if ((flags & O_ACCMODE) == O_WRONLY || (flags & O_PATH) ||
	    ptrace_mem_read_str(tid, path_addr, path, sizeof(path), &trunc) < 0 || trunc ||
	    !strstr(path, "random") || !is_random_dev(tid, dirfd, path, flags)) {
		notif_continue(e, req.id, 0);
		return;
	}
	int p[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) < 0) {
		notif_continue(e, req.id, errno);
		return;
	}
	if (flags & O_NONBLOCK)
		(void)fcntl(p[0], F_SETFL, O_NONBLOCK); /* the tracee's description: it asked for it */
	struct seccomp_notif_addfd add = {.id = req.id,
					  .flags = SECCOMP_ADDFD_FLAG_SEND,
					  .srcfd = (uint32_t)p[0],
					  .newfd_flags = (uint32_t)(flags & O_CLOEXEC)};
	int r = ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
	int err = errno;
	safe_close(p[0]);
	if (r < 0) {
		safe_close(p[1]);
		if (err != ENOENT && err != EINPROGRESS)
			notif_continue(e, req.id, err);
		return;
	}
	if (e->n_rs == e->cap_rs) {
		size_t ncap = e->cap_rs ? e->cap_rs * 2 : 8;
		rstream *nr_ = realloc(e->rs, ncap * sizeof(*nr_));
		if (!nr_) {
			safe_close(p[1]); /* the reader sees EOF: better than a stall */
			return;
		}
		e->rs = nr_;
		e->cap_rs = ncap;
	}
	dproc *dp = determ_proc_of(e, t);
	uint64_t idx = dp->n_urandom++;
	e->rs[e->n_rs++] =
	    (rstream){p[1], determ_stream(dp->id, DETERM_STREAM_URANDOM, idx), 0}; /* fed by the next poll */
	if (t)
		t->emulated = true;
	e->res.emulated++;
	ptrace_rec_determ_at(e, t, TRACE_DETERM_RANDOM, nr, &idx, sizeof(idx), t_recv);
}

/* The notification thread. ptrace requests must come from the tracer
 * thread, but notifications need none, and a second thread lets the tracer
 * block in waitpid: waking up through poll and a signalfd for SIGCHLD, as a
 * single thread would have to, made every ptrace stop about three times
 * dearer. */
void *determ_notif_thread(void *arg)
{
	engine *e = arg;
	for (;;) {
		size_t nrs = e->n_rs;
		struct pollfd *pf = calloc(2 + nrs, sizeof(*pf));
		if (!pf) {
			usleep(1000);
			continue;
		}
		pf[0] = (struct pollfd){.fd = e->wake_efd, .events = POLLIN};
		pf[1] = (struct pollfd){.fd = __atomic_load_n(&e->lfd, __ATOMIC_ACQUIRE), .events = POLLIN};
		for (size_t i = 0; i < nrs; i++)
			pf[2 + i] = (struct pollfd){.fd = e->rs[i].fd, .events = POLLOUT | POLLIN};
		int r = poll(pf, 2 + nrs, -1);
		if (r > 0 && (pf[0].revents & POLLIN)) {
			uint64_t n;
			(void)!read(e->wake_efd, &n, sizeof(n));
			if (__atomic_load_n(&e->stopping, __ATOMIC_ACQUIRE)) {
				free(pf);
				return NULL;
			}
		}
		if (r > 0 && pf[1].fd >= 0) {
			if (pf[1].revents & POLLIN) {
				pthread_mutex_lock(&e->mu);
				on_notif(e);
				pthread_mutex_unlock(&e->mu);
			} else if (pf[1].revents & (POLLHUP | POLLERR)) {
				/* every tracee (with the filter) is gone */
				pthread_mutex_lock(&e->mu);
				e->lfd = safe_close(e->lfd);
				pthread_mutex_unlock(&e->mu);
			}
		}
		/* Streams opened just now sit past nrs (fed on the next round);
		 * closing swaps the last one in, so walk backwards. */
		for (size_t i = nrs; r > 0 && i-- > 0;) {
			short rev = pf[2 + i].revents;
			if (rev & (POLLERR | POLLHUP | POLLNVAL))
				rs_close(e, i);
			else {
				if (rev & POLLIN)
					rs_drain(&e->rs[i]);
				if ((rev & POLLOUT) && !rs_feed(e, &e->rs[i]))
					rs_close(e, i);
			}
		}
		free(pf);
	}
}

void determ_notif_wake(engine *e, bool stop)
{
	uint64_t one = 1;
	if (stop)
		__atomic_store_n(&e->stopping, true, __ATOMIC_RELEASE);
	(void)!write(e->wake_efd, &one, sizeof(one));
}

void determ_rs_close_all(engine *e)
{
	while (e->n_rs > 0)
		rs_close(e, e->n_rs - 1);
	free(e->rs);
	e->rs = NULL;
}
#endif
