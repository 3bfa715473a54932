/* The determinism engine's second thread: it answers the seccomp user
 * notifications (the clocks, getrandom, getcpu, nanosleep, the opens of
 * /dev/urandom, which get one end of a socket pair it keeps fed, and the
 * opens of the procfs files of time, randomness and load, which get a sealed
 * memfd of virtual content: determ_procfs.h). ptrace requests must come from
 * the tracer thread (ptrace_engine.c), but notifications need none. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/openat2.h>
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
	tracee_path(full, sizeof(full), tid, dirfd, path);
	struct stat st;
	int r = flags & O_NOFOLLOW ? lstat(full, &st) : stat(full, &st);
	return r == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
	       (minor(st.st_rdev) == 8 || minor(st.st_rdev) == 9);
}

/* ---- procfs: uptime, loadavg, stat, random/uuid, random/boot_id ---- */

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* The engine's own view of each kind's file, on the first candidate path:
 * an O_PATH fd kept open for the run and its identity. */
static void pfs_init(engine *e)
{
	if (e->pfs.init)
		return;
	e->pfs.init = true;
	for (int k = 0; k < DETERM_PROCFS_N; k++) {
		const char *p = determ_procfs_path(k);
		struct stat st;
		e->pfs.fd[k] = p ? open(p, O_PATH | O_CLOEXEC) : -1;
		if (e->pfs.fd[k] >= 0 && fstat(e->pfs.fd[k], &st) == 0 && S_ISREG(st.st_mode)) {
			e->pfs.dev[k] = st.st_dev;
			e->pfs.ino[k] = st.st_ino;
		} else
			e->pfs.fd[k] = safe_close(e->pfs.fd[k]);
	}
}

static void pfs_close(engine *e)
{
	if (!e->pfs.init)
		return;
	for (int k = 0; k < DETERM_PROCFS_N; k++)
		e->pfs.fd[k] = safe_close(e->pfs.fd[k]);
	e->pfs.init = false;
}

/* The kind of the procfs file `path` names as the tracee would open it, or
 * NONE. The path string decides first (determ_procfs_candidate: nothing is
 * resolved for the other opens); then the file it resolves to must be a
 * regular file on a procfs whose inode is the engine's own file's: a proc
 * entry's inode number is the same on every procfs mount of the boot, a
 * sysctl's is made with its inode, which the engine's O_PATH fd keeps (so
 * also the same device). */
/* path opened as tracee tid names it (relative to its dirfd, cwd, root),
 * with open_flags, if it is a regular file on a procfs: the fd, else -1. */
static int open_procfs_file(pid_t tid, int dirfd, const char *path, uint64_t flags, int open_flags,
			    struct stat *st)
{
	char full[4096 + 128];
	tracee_path(full, sizeof(full), tid, dirfd, path);
	_cleanup_close_ int fd = open(full, open_flags | O_CLOEXEC | (flags & O_NOFOLLOW ? O_NOFOLLOW : 0));
	struct statfs sf;
	if (fd < 0 || fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || fstatfs(fd, &sf) < 0 ||
	    sf.f_type != PROC_SUPER_MAGIC)
		return -1;
	return TAKE_FD(fd);
}

static int procfs_kind(engine *e, pid_t tid, int dirfd, const char *path, uint64_t flags)
{
	int k = determ_procfs_candidate(path);
	if (k == DETERM_PROCFS_NONE || k == DETERM_PROCFS_PID_STAT)
		return k; /* a process's stat: pid_stat_content looks further */
	pfs_init(e);
	if (e->pfs.fd[k] < 0)
		return DETERM_PROCFS_NONE;
	struct stat st;
	_cleanup_close_ int fd = open_procfs_file(tid, dirfd, path, flags, O_PATH, &st);
	if (fd < 0)
		return DETERM_PROCFS_NONE;
	if (k == DETERM_PROCFS_STAT && st.st_ino != e->pfs.ino[k])
		return DETERM_PROCFS_PID_STAT; /* "stat" relative to a process directory */
	if (st.st_ino != e->pfs.ino[k] || (determ_procfs_is_sysctl(k) && st.st_dev != e->pfs.dev[k]))
		return DETERM_PROCFS_NONE;
	return k;
}

/* The stat line of a process of the command, as the tracee `t` names it
 * (determ_procfs_pid_stat: what is virtual in it), or 0 to let the kernel
 * answer: a process the engine does not follow (init, sbx's helpers), a
 * "self" it cannot place, anything that is not a stat line. The process is
 * the one the kernel's line names (its first field), so any spelling that
 * resolves to it counts. Read by the engine, which traces the process: the
 * kernel shows it the fields it hides from readers without ptrace access
 * (startcode, endcode, startstack, wchan, kstkesp, kstkeip) too. */
static size_t pid_stat_content(engine *e, const task *t, int dirfd, const char *path, uint64_t flags,
			       char *buf, size_t cap)
{
	char sub[4096 + 64], real[DETERM_PROCFS_MAX];
	/* "self" and "thread-self" would name the engine, which opens the path */
	if (!t)
		return 0;
	if (strncmp(path, "/proc/self/", 11) == 0)
		snprintf(sub, sizeof(sub), "/proc/%d/%s", t->tgid, path + 11);
	else if (strncmp(path, "/proc/thread-self/", 18) == 0)
		snprintf(sub, sizeof(sub), "/proc/%d/task/%d/%s", t->tgid, t->tid, path + 18);
	else
		snprintf(sub, sizeof(sub), "%s", path);
	if (strstr(sub, "self"))
		return 0; /* "self" relative to a dirfd, after "..": the kernel answers */
	struct stat st;
	_cleanup_close_ int fd = open_procfs_file(t->tid, dirfd, sub, flags, O_RDONLY, &st);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, real, sizeof(real) - 1);
	if (n <= 0)
		return 0;
	real[n] = 0;
	const task *owner = ptrace_task_find(e, (pid_t)strtol(real, NULL, 10));
	if (!owner || !owner->p)
		return 0;
	const dproc *dp = owner->p;
	determ_pid_stat ps = {
	    .cpu_ns = dp->clk.vt, .child_ns = dp->cvt, .start_ns = dp->start_vt, .running = dp == t->p};
	return determ_procfs_pid_stat(real, (size_t)n, &ps, buf, cap);
}

/* A read-only fd of `content`: a sealed memfd (no write, grow or shrink), so
 * read, pread, lseek, mmap and fstat's size work as on a file, reopened
 * O_RDONLY through /proc/self/fd for a read-only description. Where that
 * reopen is refused, the sealed description itself (writes then fail with
 * EPERM). A negative errno on failure. */
static int procfs_fd(const char *content, size_t len, uint64_t flags)
{
	_cleanup_close_ int m = memfd_create("sbx-procfs", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (m < 0 && errno == EINVAL) /* before 6.3 */
		m = memfd_create("sbx-procfs", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return -errno;
	if (write(m, content, len) != (ssize_t)len)
		return -EIO;
	if (fcntl(m, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return -errno;
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", m);
	int ro = open(self, O_RDONLY | O_CLOEXEC | (int)(flags & O_NONBLOCK));
	if (ro >= 0)
		return ro;
	if (lseek(m, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(m);
}

static bool notif_continue(engine *e, uint64_t id, int error);

/* Answers an open of a procfs file of determ_procfs.h with its virtual
 * content, computed now from the opener's clock and streams: true when it
 * answered (or the caller is gone), false to let the kernel open it. Only
 * plain read-only opens: for writing, O_PATH, O_DIRECTORY, O_TRUNC,
 * O_CREAT|O_EXCL or openat2 with resolve flags, the kernel answers. */
static bool answer_procfs(engine *e, task *t, uint64_t id, pid_t tid, int nr, int dirfd, const char *path,
			  uint64_t flags, uint64_t resolve, uint64_t t_recv)
{
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_PATH | O_DIRECTORY | O_TRUNC)) ||
	    (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) || resolve)
		return false;
	int k = procfs_kind(e, tid, dirfd, path, flags);
	if (k == DETERM_PROCFS_NONE)
		return false;
	dproc *dp = determ_proc_of(e, t);
	determ_procfs_src src = {
	    .clk = &dp->clk, .rng = &e->rng, .proc_id = dp->id, .uuid_index = dp->n_uuid};
	/* the record's value: the path (a process's stat: as the program named it), a NUL, the content */
	char val[DETERM_PROCFS_MAX + 4096 + 64];
	const char *kp = k == DETERM_PROCFS_PID_STAT ? path : determ_procfs_path(k);
	size_t pl = strlen(kp) + 1;
	memcpy(val, kp, pl);
	size_t n = k == DETERM_PROCFS_PID_STAT
		       ? pid_stat_content(e, t, dirfd, path, flags, val + pl, sizeof(val) - pl)
		       : determ_procfs_content(k, &src, val + pl, sizeof(val) - pl);
	if (n == 0)
		return false;
	int fd = procfs_fd(val + pl, n, flags);
	if (fd < 0) {
		notif_continue(e, id, -fd);
		return true;
	}
	struct seccomp_notif_addfd add = {.id = id,
					  .flags = SECCOMP_ADDFD_FLAG_SEND,
					  .srcfd = (uint32_t)fd,
					  .newfd_flags = (uint32_t)(flags & O_CLOEXEC)};
	int r = ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
	int err = errno;
	safe_close(fd);
	if (r < 0) {
		/* Not received: nothing is counted, so a restarted open gets the
		 * same UUID. */
		if (err != ENOENT && err != EINPROGRESS)
			notif_continue(e, id, err);
		return true;
	}
	if (k == DETERM_PROCFS_UUID)
		dp->n_uuid++;
	if (t)
		t->emulated = true;
	e->res.emulated++;
	ptrace_rec_determ_at(e, t, TRACE_DETERM_PROCFS, nr, val, pl + n, t_recv);
	return true;
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
	uint64_t path_addr, flags, resolve = 0;
	if (nr == SYS_open)
		path_addr = a[0], flags = a[1];
	else if (nr == SYS_openat)
		dirfd = (int)a[0], path_addr = a[1], flags = a[2];
	else if (nr == SYS_openat2) {
		struct open_how how = {0};
		dirfd = (int)a[0], path_addr = a[1];
		if (a[3] < 8 ||
		    ptrace_mem_read(tid, a[2], &how, a[3] < sizeof(how) ? a[3] : sizeof(how)) < 8) {
			notif_continue(e, req.id, 0);
			return;
		}
		flags = how.flags;
		resolve = a[3] >= sizeof(how) ? how.resolve : 0;
	} else {
		notif_continue(e, req.id, 0);
		return;
	}
	char path[4096];
	bool trunc;
	if ((flags & O_ACCMODE) == O_WRONLY || (flags & O_PATH) ||
	    ptrace_mem_read_str(tid, path_addr, path, sizeof(path), &trunc) < 0 || trunc) {
		notif_continue(e, req.id, 0);
		return;
	}
	if (answer_procfs(e, t, req.id, tid, nr, dirfd, path, flags, resolve, t_recv))
		return;
	if (!strstr(path, "random") || !is_random_dev(tid, dirfd, path, flags)) {
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
	pfs_close(e);
	while (e->n_rs > 0)
		rs_close(e, e->n_rs - 1);
	free(e->rs);
	e->rs = NULL;
}
#endif
