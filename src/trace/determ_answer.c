/* Determinism answers at ptrace stops: what the engine's tracer thread
 * substitutes at seccomp (RET_TRACE) stops, at the exit stops they ask for,
 * at rdtsc faults and at exec. Also the process table that holds each
 * process's virtual clock (docs/trace.md, "Virtual time"). The stop loop
 * calling these is ptrace_engine.c; the notification thread determ_notif.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "trace/ptrace_priv.h"
#include "trace/vdso.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/macro.h"

#if defined(__x86_64__)

/* ---- the processes ---- */

static dproc *proc_add(engine *e, pid_t tgid)
{
	if (e->n_procs == e->cap_procs) {
		size_t ncap = e->cap_procs ? e->cap_procs * 2 : 16;
		dproc **n = realloc(e->procs, ncap * sizeof(*n));
		if (!n)
			return NULL;
		e->procs = n;
		e->cap_procs = ncap;
	}
	/* A dead process never reaped (its parent ignored SIGCHLD, or died
	 * first) whose pid comes round again: the new one replaces it. */
	for (size_t i = 0; i < e->n_procs; i++)
		if (e->procs[i]->tgid == tgid) {
			free(e->procs[i]);
			e->procs[i] = e->procs[--e->n_procs];
			break;
		}
	dproc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->tgid = tgid;
	p->clk.epoch_ns = e->o->epoch_ns;
	e->procs[e->n_procs++] = p;
	return p;
}

dproc *determ_proc_root(engine *e, pid_t pid)
{
	return proc_add(e, pid); /* vt 0, id 0 */
}

dproc *determ_proc_fork(engine *e, dproc *parent, pid_t child)
{
	/* The fork is the parent's event: it takes a tick, so what the parent
	 * does after it (and what the next child does) is later than the
	 * start of this child. */
	parent->clk.vt += DETERM_TICK_NS;
	dproc *c = proc_add(e, child);
	if (!c)
		return NULL;
	c->clk.vt = c->start_vt = parent->clk.vt;
	c->id = determ_proc_child_id(parent->id, parent->n_forks++);
	return c;
}

dproc *determ_proc_find(engine *e, pid_t tgid)
{
	for (size_t i = 0; i < e->n_procs; i++)
		if (e->procs[i]->tgid == tgid)
			return e->procs[i];
	return NULL;
}

dproc *determ_proc_of(engine *e, const task *t)
{
	if (t && t->p)
		return t->p;
	if (!e->stray.clk.epoch_ns)
		e->stray.clk.epoch_ns = e->o->epoch_ns;
	return &e->stray;
}

void determ_procs_free(engine *e)
{
	for (size_t i = 0; i < e->n_procs; i++)
		free(e->procs[i]);
	free(e->procs);
	e->procs = NULL;
	e->n_procs = e->cap_procs = 0;
}

/* wait4/waitid reaped a child: its clock is final (the kernel lets the real
 * parent reap only after the tracer has seen the exit), and the parent's
 * clock moves up to it; its CPU time (t and its own children's) is added to
 * the parent's children's (cvt), in any order the same sum. So "a; b" in a shell runs b after a on the
 * virtual clock too, and the join of several children is their maximum whatever order they were reaped in. A
 * stopped or continued child (WUNTRACED, WCONTINUED) is not joined: where it stopped is timing. */
static void on_wait_exit(engine *e, task *t, int nr, int64_t rval)
{
	pid_t pid = 0;
	if (nr == SYS_wait4)
		pid = rval > 0 ? (pid_t)rval : 0;
	else if (rval == 0 && t->xaddr) {
		siginfo_t si;
		if (ptrace_mem_read(t->tid, t->xaddr, &si, sizeof(si)) == (ssize_t)sizeof(si))
			pid = si.si_pid;
	}
	dproc *c = pid > 0 ? determ_proc_find(e, pid) : NULL, *p = determ_proc_of(e, t);
	if (pid > 0 && t->xrus) {
		/* The child's own rusage and its reaped children's (RUSAGE_BOTH),
		 * as getrusage answers them; a stopped child's so far. */
		struct rusage ru;
		determ_rusage(&ru, c && c != p ? c->clk.vt + c->cvt : 0);
		(void)ptrace_mem_write(t->tid, t->xrus, &ru, sizeof(ru));
	}
	if (!c || !c->dead || c == p)
		return;
	if (c->clk.vt > p->clk.vt)
		p->clk.vt = c->clk.vt;
	p->cvt += c->clk.vt + c->cvt;
	for (size_t i = 0; i < e->n_procs; i++)
		if (e->procs[i] == c) {
			e->procs[i] = e->procs[--e->n_procs];
			break;
		}
	free(c);
}

/* ---- determinism: seccomp stops ---- */

static void put_ts(uint64_t ns, int64_t out[2], uint64_t div)
{
	out[0] = (int64_t)(ns / 1000000000ULL);
	out[1] = (int64_t)((ns % 1000000000ULL) / div);
}

static bool get_ts(pid_t tid, uint64_t addr, uint64_t *ns)
{
	int64_t ts[2];
	if (!addr || ptrace_mem_read(tid, addr, ts, sizeof(ts)) != (ssize_t)sizeof(ts))
		return false;
	/* Over 30 years ("sleep infinity"): the kernel sleeps, the clock stays. */
	if (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000 || ts[0] > 1000000000)
		return false;
	*ns = (uint64_t)ts[0] * 1000000000ULL + (uint64_t)ts[1];
	return true;
}

/* The real clock a virtual deadline on `kind` is compared against. */
static clockid_t real_clock(int kind)
{
	return kind == DETERM_CLK_REAL ? CLOCK_REALTIME : CLOCK_MONOTONIC;
}

/* A virtual absolute deadline as the same distance from the real clock now. */
static uint64_t to_real(const dproc *p, int kind, uint64_t target)
{
	uint64_t vnow = determ_clock_peek(&p->clk, kind), rnow = engine_now_ns(real_clock(kind));
	return rnow + (target > vnow ? target - vnow : 0);
}

static uint64_t scratch(uint64_t sp, size_t n)
{
	return (sp - SCRATCH_BELOW_SP - n) & ~15ULL;
}

/* The calls answered from values alone (the clocks, getrandom, getcpu, sysinfo):
 * true with the return value in *ret, false when the kernel should run the
 * call. tid is the caller; t (its task, for the records) may be NULL. They
 * come as seccomp user notifications, cheaper than a ptrace stop (no
 * registers to change, no SIGCHLD/waitpid round), but work from a seccomp
 * stop too. */
static bool answer_clock(engine *e, task *t, pid_t tid, int nr, const uint64_t *a, int64_t *ret)
{
	determ_clock *c = &determ_proc_of(e, t)->clk;
	int64_t v[4] = {0};
	size_t vlen = 16;
	*ret = 0;
	if (nr == SYS_clock_gettime) {
		int kind = determ_clock_kind((int64_t)a[0]);
		if (kind == DETERM_CLK_NONE)
			return false; /* the kernel answers (EINVAL, or an fd clock) */
		put_ts(determ_clock_read(c, kind), v, 1);
		*ret = ptrace_mem_write(tid, a[1], v, 16);
	} else if (nr == SYS_clock_getres) {
		if (determ_clock_kind((int64_t)a[0]) == DETERM_CLK_NONE)
			return false;
		put_ts(determ_clock_res((int64_t)a[0]), v, 1);
		*ret = a[1] ? ptrace_mem_write(tid, a[1], v, 16) : 0;
	} else if (nr == SYS_gettimeofday) {
		put_ts(determ_clock_read(c, DETERM_CLK_REAL), v, 1000);
		*ret = a[0] ? ptrace_mem_write(tid, a[0], v, 16) : 0;
		if (*ret == 0 && a[1])
			*ret = ptrace_mem_write(tid, a[1], v + 2, 8); /* struct timezone: all zero */
	} else if (nr == SYS_time) {
		v[0] = (int64_t)(determ_clock_read(c, DETERM_CLK_REAL) / 1000000000ULL);
		vlen = 8;
		*ret = a[0] ? ptrace_mem_write(tid, a[0], v, 8) : 0;
		if (*ret == 0)
			*ret = v[0];
	} else if (nr ==
		   SYS_times) { /* struct tms in clock ticks (USER_HZ 100), returns ticks since "boot" */
		uint64_t mono = determ_clock_read(c, DETERM_CLK_MONO);
		v[0] = (int64_t)(c->vt / 10000000ULL); /* tms_utime: all virtual time was user time */
		v[2] = (int64_t)(determ_proc_of(e, t)->cvt / 10000000ULL); /* tms_cutime; stimes 0 */
		vlen = 32;
		*ret = a[0] ? ptrace_mem_write(tid, a[0], v, 32) : 0;
		if (*ret == 0)
			*ret = (int64_t)(mono / 10000000ULL);
	} else { /* getrusage: a CPU clock read, as times (determ_rusage: what it holds) */
		int who = (int)a[0];
		if (who != RUSAGE_SELF && who != RUSAGE_CHILDREN && who != RUSAGE_THREAD)
			return false; /* the kernel says EINVAL */
		struct rusage ru;
		uint64_t self = determ_clock_read(c, DETERM_CLK_CPU); /* threads share the process's clock */
		determ_rusage(&ru, who == RUSAGE_CHILDREN ? determ_proc_of(e, t)->cvt : self);
		*ret = ptrace_mem_write(tid, a[1], &ru, sizeof(ru));
		v[0] = ru.ru_utime.tv_sec, v[1] = ru.ru_utime.tv_usec;
	}
	ptrace_rec_determ(e, t, TRACE_DETERM_CLOCK, nr, v, vlen);
	return true;
}

static bool answer_getrandom(engine *e, task *t, pid_t tid, const uint64_t *a, int64_t *ret)
{
	uint64_t buf = a[0], len = a[1];
	if (a[2] & ~7ULL) { /* GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE */
		*ret = -EINVAL;
		return true;
	}
	if (len > 33554431) /* the kernel's per-call cap */
		len = 33554431;
	dproc *p = determ_proc_of(e, t);
	uint8_t chunk[16384], first[TRACE_DETERM_MAX_VALUE];
	uint64_t done = 0, stream = determ_stream(p->id, DETERM_STREAM_GETRANDOM, 0);
	while (done < len) {
		size_t k = len - done < sizeof(chunk) ? (size_t)(len - done) : sizeof(chunk);
		determ_rng_read(&e->rng, stream, p->rand_pos, chunk, k);
		if (ptrace_mem_write(tid, buf + done, chunk, k) < 0)
			break;
		if (done == 0)
			memcpy(first, chunk, k < sizeof(first) ? k : sizeof(first));
		p->rand_pos += k;
		done += k;
	}
	*ret = done == 0 && len > 0 ? -EFAULT : (int64_t)done;
	if (done > 0 || len == 0) /* the record keeps the first 256 bytes, flagged when there were more */
		ptrace_rec_determ(e, t, TRACE_DETERM_RANDOM, SYS_getrandom, first, (size_t)done);
	return true;
}

bool determ_answer(engine *e, task *t, pid_t tid, int nr, const uint64_t *a, int64_t *ret)
{
	switch (nr) {
	case SYS_clock_gettime:
	case SYS_clock_getres:
	case SYS_gettimeofday:
	case SYS_time:
	case SYS_times:
	case SYS_getrusage:
		return answer_clock(e, t, tid, nr, a, ret);
	case SYS_getrandom:
		return answer_getrandom(e, t, tid, a, ret);
	case SYS_sysinfo: {
		/* The machine's memory figures, the virtual uptime and load. */
		struct sysinfo si;
		if (sysinfo(&si) < 0)
			return false;
		determ_sysinfo_virtual(&si, &determ_proc_of(e, t)->clk);
		*ret = ptrace_mem_write(tid, a[0], &si, sizeof(si));
		if (*ret == 0)
			ptrace_rec_determ(e, t, TRACE_DETERM_CLOCK, nr, &si.uptime, sizeof(si.uptime));
		return true;
	}
	case SYS_getcpu: {
		uint32_t zero = 0, v[2] = {0, 0};
		*ret = a[0] ? ptrace_mem_write(tid, a[0], &zero, 4) : 0;
		if (*ret == 0 && a[1])
			*ret = ptrace_mem_write(tid, a[1], &zero, 4);
		ptrace_rec_determ(e, t, TRACE_DETERM_GETCPU, nr, v, sizeof(v));
		return true;
	}
	case SYS_nanosleep: {
		uint64_t ns;
		/* The real sleep happens; the virtual clock moves by what was asked. */
		if (get_ts(tid, a[0], &ns))
			determ_proc_of(e, t)->clk.vt += ns;
		return false;
	}
	default:
		return false;
	}
}

static void on_sleep(engine *e, task *t, int nr, const uint64_t *a, uint64_t sp)
{
	int kind = DETERM_CLK_MONO;
	bool abs = false;
	uint64_t req_addr = a[0], ns;
	if (nr == SYS_clock_nanosleep) {
		kind = determ_clock_kind((int64_t)a[0]);
		abs = a[1] & TIMER_ABSTIME;
		req_addr = a[2];
		if (kind == DETERM_CLK_NONE)
			return;
	}
	if (!get_ts(t->tid, req_addr, &ns))
		return; /* the kernel reports EFAULT/EINVAL */
	determ_clock *c = &determ_proc_of(e, t)->clk;
	if (!abs) {
		c->vt += ns; /* the real sleep happens; the virtual clock moves by what was asked */
		return;
	}
	uint64_t now = determ_clock_peek(c, kind);
	if (ns <= now) {
		ptrace_skip_call(e, t, 0); /* the deadline has passed on the virtual clock */
		return;
	}
	int64_t rel[2];
	put_ts(ns - now, rel, 1);
	uint64_t at = scratch(sp, sizeof(rel));
	if (ptrace_mem_write(t->tid, at, rel, sizeof(rel)) < 0)
		return;
	determ_clock_advance_to(c, kind, ns);
	ptrace_set_arg(t, a, 0, CLOCK_MONOTONIC);
	ptrace_set_arg(t, a, 1, 0);
	ptrace_set_arg(t, a, 2, at);
	ptrace_set_arg(t, a, 3, 0); /* rem is not written for absolute sleeps */
}

static void on_timeout(engine *e, task *t, int nr, const uint64_t *a, uint64_t sp)
{
	int kind, arg;
	uint64_t ns;
	if (nr == SYS_futex) {
		int cmd = (int)(a[1] & 0x7f);
		bool rt = a[1] & 256 /* FUTEX_CLOCK_REALTIME */;
		kind =
		    cmd == 6 /* LOCK_PI: always CLOCK_REALTIME */ || rt ? DETERM_CLK_REAL : DETERM_CLK_MONO;
		arg = 3;
	} else { /* futex_waitv(waiters, n, flags, timeout, clockid) */
		kind = (int)a[4] == CLOCK_REALTIME ? DETERM_CLK_REAL : DETERM_CLK_MONO;
		arg = 3;
	}
	if (!get_ts(t->tid, a[arg], &ns))
		return;
	int64_t real[2];
	put_ts(to_real(determ_proc_of(e, t), kind, ns), real, 1);
	uint64_t at = scratch(sp, sizeof(real));
	if (ptrace_mem_write(t->tid, at, real, sizeof(real)) < 0)
		return;
	ptrace_set_arg(t, a, arg, at);
	t->xclk = kind;
	t->xtarget = ns;
}

static void on_timerfd(engine *e, task *t, const uint64_t *a, uint64_t sp)
{
	int64_t its[4]; /* it_interval, it_value */
	if (!a[2] || ptrace_mem_read(t->tid, a[2], its, sizeof(its)) != (ssize_t)sizeof(its))
		return;
	if (its[2] <= 0 && its[3] <= 0)
		return; /* disarming */
	if (its[2] < 0 || its[3] < 0 || its[3] >= 1000000000)
		return;
	/* The timer's clock is fixed at timerfd_create; fdinfo tells it. */
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", t->tid, (int)a[0]);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = 0;
	const char *c = strstr(buf, "clockid:");
	int kind = determ_clock_kind(c ? strtol(c + 8, NULL, 10) : 1);
	if (kind != DETERM_CLK_REAL && kind != DETERM_CLK_MONO)
		return;
	put_ts(to_real(determ_proc_of(e, t), kind, (uint64_t)its[2] * 1000000000ULL + (uint64_t)its[3]),
	       its + 2, 1);
	uint64_t at = scratch(sp, sizeof(its));
	if (ptrace_mem_write(t->tid, at, its, sizeof(its)) < 0)
		return;
	ptrace_set_arg(t, a, 2, at);
}

/* A call that removes a name (unlink, rmdir, the target of a rename): the
 * file's inode number may now be free for the file system to reuse, so the
 * file is forgotten once the call succeeds (determ_inode.h), whether or not
 * it keeps other names: its link count is no guide (an overlay keeps showing
 * a lower layer's count after one of its names goes, its upper layer not),
 * and a number must not depend on which layer holds a file. */
static void on_remove(engine *e, task *t, int dirfd, uint64_t path_addr)
{
	char path[4096], full[4096 + 64];
	bool trunc;
	struct stat st;
	if (!e->o->inodes || ptrace_mem_read_str(t->tid, path_addr, path, sizeof(path), &trunc) < 0 || trunc)
		return;
	tracee_path(full, sizeof(full), t->tid, dirfd, path);
	if (lstat(full, &st) < 0)
		return;
	t->xact = X_REMOVE, t->xdev = st.st_dev, t->xino = st.st_ino, t->want_exit = true;
}

void determ_on_seccomp(engine *e, task *t)
{
	struct __ptrace_syscall_info si;
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof(si), &si) <= 0 ||
	    si.op != PTRACE_SYSCALL_INFO_SECCOMP)
		return;
	int nr = (int)si.seccomp.nr;
	const uint64_t *a = si.seccomp.args;
	uint64_t sp = si.stack_pointer;
	t->nr = nr; /* the exit stop's action reports it */
	t->n_saved = 0;
	t->xact = X_NONE;
	t->xtarget = 0;
	switch (nr) {
	case SYS_clock_gettime:
	case SYS_clock_getres:
	case SYS_gettimeofday:
	case SYS_time:
	case SYS_times:
	case SYS_getrusage:
	case SYS_getrandom:
	case SYS_sysinfo:
	case SYS_getcpu: {
		int64_t r;
		if (determ_answer(e, t, t->tid, nr, a, &r))
			ptrace_skip_call(e, t, r);
		break;
	}
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
		on_sleep(e, t, nr, a, sp);
		break;
	case SYS_futex:
	case SYS_futex_waitv:
		on_timeout(e, t, nr, a, sp);
		break;
	case SYS_timerfd_settime:
		on_timerfd(e, t, a, sp);
		break;
	case SYS_stat:
	case SYS_fstat:
	case SYS_lstat:
		t->xact = X_STAT, t->xaddr = a[1], t->want_exit = true;
		break;
	case SYS_newfstatat:
		t->xact = X_STAT, t->xaddr = a[2], t->want_exit = true;
		break;
	case SYS_statx: {
		/* fix_statx needs mtime (and the type) to canonicalize the other
		 * times, also when the program asked only for atime (stat -c %x),
		 * and the size for their keys: ask the kernel for them too (statx
		 * may return more than asked). */
		const uint64_t need = STATX_TYPE | STATX_MTIME | STATX_SIZE;
		if ((a[3] & need) != need) {
			ptrace_set_arg(t, a, 3, a[3] | need);
		}
		t->xact = X_STATX, t->xaddr = a[4], t->want_exit = true;
		break;
	}
	case SYS_wait4:
	case SYS_waitid:
		/* At the exit: the reaped child's clock joins the parent's. */
		t->xact = X_WAIT, t->xaddr = nr == SYS_waitid ? a[2] : 0, t->want_exit = true;
		t->xrus = nr == SYS_waitid ? a[4] : a[3];
		break;
	case SYS_uname:
		if (e->o->hostname)
			t->xact = X_UNAME, t->xaddr = a[0], t->want_exit = true;
		break;
	case SYS_getdents64:
	case SYS_getdents:
		if (e->o->inodes)
			t->xact = X_DIRENTS, t->xaddr = a[1], t->xfd = (int)a[0], t->want_exit = true;
		break;
	case SYS_unlink:
	case SYS_rmdir:
		on_remove(e, t, AT_FDCWD, a[0]);
		break;
	case SYS_unlinkat:
		on_remove(e, t, (int)a[0], a[1]);
		break;
	case SYS_rename:
		on_remove(e, t, AT_FDCWD, a[1]);
		break;
	case SYS_renameat:
	case SYS_renameat2:
		if (nr == SYS_renameat2 && (a[4] & RENAME_EXCHANGE))
			break; /* both names stay */
		on_remove(e, t, (int)a[2], a[3]);
		break;
	default:
		break;
	}
}

/* ---- determinism: exit stops ---- */

/* Maps n timestamps of one stat result (ver: see determ_time_map_set); false
 * if none changed. */
static bool map_times(engine *e, const determ_clock *c, uint64_t dev, uint64_t ino, const uint64_t *ver,
		      int64_t *sec, int64_t *nsec, int n)
{
	int64_t t[4];
	uint64_t w[4] = {0};
	int idx[4], k = 0;
	for (int i = 0; i < n; i++) {
		if (sec[i] < -9000000000LL || sec[i] > 9000000000LL || nsec[i] < 0 || nsec[i] >= 1000000000)
			continue; /* not representable in int64 ns: left alone */
		t[k] = sec[i] * 1000000000LL + nsec[i];
		w[k] = ver[i];
		idx[k++] = i;
	}
	if (determ_time_map_set(&e->tmap, c, dev, ino, w, t, k) == 0)
		return false;
	for (int j = 0; j < k; j++) {
		int64_t v = t[j], s = v >= 0 ? v / 1000000000LL : -((-v + 999999999LL) / 1000000000LL);
		sec[idx[j]] = s;
		nsec[idx[j]] = v - s * 1000000000LL;
	}
	return true;
}

/* Times that are not reproducible are replaced by the one that is, before
 * mapping: a file from before the run keeps its mtime through a snapshot
 * (the tar records it), but its ctime, birth time and atime are those of the
 * copy that the replay's environment extracted, or bumped by the snapshot
 * itself reading it; and atime moves on reads by relatime rules that depend
 * on those. So atime always reads as mtime, and ctime and btime from before
 * the run read as mtime too. Changes made during the run (chmod, rename,
 * writes) still show as new virtual times. */
static void canon_time(engine *e, struct timespec *x, const struct timespec *mtime, bool always)
{
	int64_t v = (int64_t)x->tv_sec * 1000000000LL + x->tv_nsec;
	if (always || v < e->tmap.real_start)
		*x = *mtime;
}

/* Pipes, sockets, devices and anonymous inodes, and anything on /proc or
 * /sys: their times follow I/O timing (a pipe's mtime is its last write, in
 * kernel ticks) or when the kernel made the inode, not files the program
 * made; they read as the epoch and take no virtual time. */
static bool not_a_file(mode_t m)
{
	return !S_ISREG(m) && !S_ISDIR(m) && !S_ISLNK(m);
}

/* Virtual inode and device numbers (determ_inode.h) for a stat result's
 * real ones, recorded as {dev, ino}; the two callers below write them into
 * the tracee's struct stat or struct statx. */
static void fix_ident(engine *e, task *t, int nr, uint64_t *dev, uint64_t *ino)
{
	uint64_t v[2];
	v[1] = *ino = determ_ino_map(&e->imap, *dev, *ino);
	v[0] = *dev = determ_dev_map(&e->imap, *dev);
	ptrace_rec_determ(e, t, TRACE_DETERM_INODE, nr, v, sizeof(v));
}

static void fix_stat_ident(engine *e, task *t, int nr, const struct stat *st)
{
	if (!e->o->inodes)
		return;
	_Static_assert(offsetof(struct stat, st_dev) == 0 && offsetof(struct stat, st_ino) == 8 &&
			   sizeof(st->st_dev) == 8 && sizeof(st->st_ino) == 8,
		       "st_dev and st_ino lead struct stat");
	uint64_t id[2] = {st->st_dev, st->st_ino};
	fix_ident(e, t, nr, &id[0], &id[1]);
	(void)ptrace_mem_write(t->tid, t->xaddr, id, sizeof(id));
}

static void fix_statx_ident(engine *e, task *t, int nr, const struct statx *sx)
{
	if (!e->o->inodes)
		return;
	uint64_t dev = makedev(sx->stx_dev_major, sx->stx_dev_minor), ino = sx->stx_ino;
	fix_ident(e, t, nr, &dev, &ino);
	if (sx->stx_mask & STATX_INO)
		(void)ptrace_mem_write(t->tid, t->xaddr + offsetof(struct statx, stx_ino), &ino, sizeof(ino));
	_Static_assert(offsetof(struct statx, stx_dev_minor) == offsetof(struct statx, stx_dev_major) + 4,
		       "stx_dev_minor follows stx_dev_major");
	uint32_t mm[2] = {major(dev), minor(dev)};
	(void)ptrace_mem_write(t->tid, t->xaddr + offsetof(struct statx, stx_dev_major), mm, sizeof(mm));
}

#define DIR_LIST_MAX (64u << 20) /* a directory listed whole by the engine; past it, listing order */

/* Numbers the new entries of the directory at path (the tracee's fd, through
 * /proc) in name order: the engine lists it whole through a description of
 * its own, leaving the tracee's position alone (determ_dirents_number). */
static void number_dir(engine *e, const char *path, uint64_t dev)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t cap = 65536, len = 0;
	_cleanup_free_ uint8_t *all = fd >= 0 ? malloc(cap) : NULL;
	if (!all)
		return;
	for (;;) {
		if (cap - len < 32768) {
			uint8_t *g = cap * 2 <= DIR_LIST_MAX ? realloc(all, cap * 2) : NULL;
			if (!g)
				break;
			all = g, cap *= 2;
		}
		ssize_t n = getdents64(fd, all + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	(void)determ_dirents_number(&e->imap, dev, all, len);
}

/* A directory listing's d_ino, keyed by the directory's real device (the
 * engine's own stat of the tracee's fd, through /proc). Entries without a
 * number yet get theirs in name order first, so the numbers do not depend on
 * the order the file system lists them in. */
static void fix_dirents(engine *e, task *t, int nr, int64_t len)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->tid, t->xfd);
	if (len <= 0 || stat(path, &st) < 0)
		return;
	_cleanup_free_ uint8_t *buf = malloc((size_t)len);
	if (!buf || ptrace_mem_read(t->tid, t->xaddr, buf, (size_t)len) != (ssize_t)len)
		return;
	if (nr == SYS_getdents64 && determ_dirents_have_new(&e->imap, st.st_dev, buf, (size_t)len))
		number_dir(e, path, st.st_dev);
	uint64_t out[TRACE_DETERM_MAX_VALUE / sizeof(uint64_t) + 1];
	size_t n = determ_dirents_map(&e->imap, st.st_dev, buf, (size_t)len, out, ARRAY_SIZE(out));
	if (n && ptrace_mem_write(t->tid, t->xaddr, buf, (size_t)len) == 0)
		ptrace_rec_determ(e, t, TRACE_DETERM_INODE, nr, out,
				  (n < ARRAY_SIZE(out) ? n : ARRAY_SIZE(out)) * 8);
}

static void fix_stat(engine *e, task *t, int nr)
{
	struct stat st;
	if (ptrace_mem_read(t->tid, t->xaddr, &st, sizeof(st)) != (ssize_t)sizeof(st))
		return;
	fix_stat_ident(e, t, nr, &st); /* st keeps the real numbers: they key the times */
	if (not_a_file(st.st_mode) || st.st_dev == e->pseudo_dev[0] || st.st_dev == e->pseudo_dev[1]) {
		struct timespec ep = {(time_t)(e->o->epoch_ns / 1000000000u),
				      (long)(e->o->epoch_ns % 1000000000u)};
		st.st_atim = st.st_mtim = st.st_ctim = ep;
		size_t from = offsetof(struct stat, st_atim),
		       to = offsetof(struct stat, st_ctim) + sizeof(st.st_ctim);
		(void)ptrace_mem_write(t->tid, t->xaddr + from, (uint8_t *)&st + from, to - from);
		return;
	}
	canon_time(e, &st.st_atim, &st.st_mtim, true);
	canon_time(e, &st.st_ctim, &st.st_mtim, false);
	struct timespec *ts[3] = {&st.st_atim, &st.st_mtim, &st.st_ctim};
	int64_t sec[3], nsec[3], out[3];
	for (int i = 0; i < 3; i++)
		sec[i] = ts[i]->tv_sec, nsec[i] = ts[i]->tv_nsec;
	uint64_t sz = (uint64_t)st.st_size, ver[3] = {sz, sz, sz}; /* atime reads as mtime */
	if (!map_times(e, &determ_proc_of(e, t)->clk, st.st_dev, st.st_ino, ver, sec, nsec, 3))
		return;
	for (int i = 0; i < 3; i++) {
		ts[i]->tv_sec = sec[i];
		ts[i]->tv_nsec = nsec[i];
		out[i] = sec[i] * 1000000000LL + nsec[i];
	}
	size_t from = offsetof(struct stat, st_atim),
	       to = offsetof(struct stat, st_ctim) + sizeof(st.st_ctim);
	if (ptrace_mem_write(t->tid, t->xaddr + from, (uint8_t *)&st + from, to - from) == 0)
		ptrace_rec_determ(e, t, TRACE_DETERM_STAT, nr, out, sizeof(out));
}

static void fix_statx(engine *e, task *t, int nr)
{
	struct statx sx;
	if (ptrace_mem_read(t->tid, t->xaddr, &sx, sizeof(sx)) != (ssize_t)sizeof(sx))
		return;
	uint64_t dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	fix_statx_ident(e, t, nr, &sx); /* sx keeps the real numbers: they key the times */
	if (((sx.stx_mask & STATX_TYPE) && not_a_file(sx.stx_mode)) || dev == e->pseudo_dev[0] ||
	    dev == e->pseudo_dev[1]) {
		struct statx_timestamp ep = {.tv_sec = (int64_t)(e->o->epoch_ns / 1000000000u),
					     .tv_nsec = (uint32_t)(e->o->epoch_ns % 1000000000u)};
		sx.stx_atime = sx.stx_btime = sx.stx_ctime = sx.stx_mtime = ep;
		size_t from = offsetof(struct statx, stx_atime),
		       to = offsetof(struct statx, stx_mtime) + sizeof(sx.stx_mtime);
		(void)ptrace_mem_write(t->tid, t->xaddr + from, (uint8_t *)&sx + from, to - from);
		return;
	}
	if (sx.stx_mask & STATX_MTIME) {
		/* As canon_time: atime reads as mtime; ctime and btime from before
		 * the run too. */
		int64_t start = e->tmap.real_start;
		struct statx_timestamp *m = &sx.stx_mtime;
		if (sx.stx_mask & STATX_ATIME)
			sx.stx_atime = *m;
		if ((sx.stx_mask & STATX_CTIME) &&
		    (int64_t)sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec < start)
			sx.stx_ctime = *m;
		if ((sx.stx_mask & STATX_BTIME) &&
		    (int64_t)sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec < start)
			sx.stx_btime = *m;
	}
	struct statx_timestamp *ts[4] = {&sx.stx_atime, &sx.stx_btime, &sx.stx_ctime, &sx.stx_mtime};
	static const uint32_t bit[4] = {STATX_ATIME, STATX_BTIME, STATX_CTIME, STATX_MTIME};
	int64_t sec[4], nsec[4], out[4] = {0};
	uint64_t ver[4], sz = sx.stx_mask & STATX_SIZE ? sx.stx_size : 0;
	int which[4], n = 0;
	for (int i = 0; i < 4; i++)
		if (sx.stx_mask & bit[i]) {
			sec[n] = ts[i]->tv_sec, nsec[n] = ts[i]->tv_nsec;
			ver[n] =
			    bit[i] == STATX_BTIME ? 0 : sz; /* a birth time stays put as the file grows */
			which[n++] = i;
		}
	if (!map_times(e, &determ_proc_of(e, t)->clk, dev, sx.stx_ino, ver, sec, nsec, n))
		return;
	for (int j = 0; j < n; j++) {
		ts[which[j]]->tv_sec = sec[j];
		ts[which[j]]->tv_nsec = (uint32_t)nsec[j];
		out[which[j]] = sec[j] * 1000000000LL + nsec[j];
	}
	size_t from = offsetof(struct statx, stx_atime),
	       to = offsetof(struct statx, stx_mtime) + sizeof(sx.stx_mtime);
	if (ptrace_mem_write(t->tid, t->xaddr + from, (uint8_t *)&sx + from, to - from) == 0)
		ptrace_rec_determ(e, t, TRACE_DETERM_STAT, nr, out, sizeof(out));
}

void determ_on_exit_action(engine *e, task *t, int nr, int64_t rval)
{
	switch (t->xact) {
	case X_RESTORE:
		for (int i = 0; i < t->n_saved; i++)
			(void)ptrace(PTRACE_POKEUSER, t->tid, t->saved[i].off, (void *)t->saved[i].val);
		if (rval == -ETIMEDOUT && t->xtarget)
			determ_clock_advance_to(&determ_proc_of(e, t)->clk, t->xclk, t->xtarget);
		break;
	case X_WAIT:
		on_wait_exit(e, t, nr, rval);
		break;
	case X_STAT:
		if (rval == 0)
			fix_stat(e, t, nr);
		break;
	case X_STATX:
		for (int i = 0; i < t->n_saved; i++)
			(void)ptrace(PTRACE_POKEUSER, t->tid, t->saved[i].off, (void *)t->saved[i].val);
		if (rval == 0)
			fix_statx(e, t, nr);
		break;
	case X_DIRENTS:
		fix_dirents(e, t, nr, rval);
		break;
	case X_REMOVE:
		if (rval == 0)
			determ_ino_forget(&e->imap, t->xdev, t->xino);
		break;
	case X_UNAME:
		if (rval == 0) {
			char node[65] = {0};
			size_t hl = strlen(e->o->hostname);
			memcpy(node, e->o->hostname, hl < 64 ? hl : 64);
			if (ptrace_mem_write(t->tid, t->xaddr + offsetof(struct utsname, nodename), node,
					     sizeof(node)) == 0)
				ptrace_rec_determ(e, t, TRACE_DETERM_UNAME, nr, node, strlen(node));
		}
		break;
	case X_NONE:
		break;
	}
	t->xact = X_NONE;
	t->n_saved = 0;
	t->want_exit = false;
}

/* ---- exec: vDSO and AT_RANDOM ---- */

static const struct {
	const char *name;
	int nr;
} vdso_funcs[] = {
    {"__vdso_clock_gettime", SYS_clock_gettime},
    {"clock_gettime", SYS_clock_gettime},
    {"__vdso_gettimeofday", SYS_gettimeofday},
    {"gettimeofday", SYS_gettimeofday},
    {"__vdso_time", SYS_time},
    {"time", SYS_time},
    {"__vdso_clock_getres", SYS_clock_getres},
    {"clock_getres", SYS_clock_getres},
    {"__vdso_getcpu", SYS_getcpu},
    {"getcpu", SYS_getcpu},
};

static int vdso_parse_image(engine *e, pid_t tid, uint64_t base, const uint8_t ehdr[64])
{
	uint8_t head[4096];
	if (ptrace_mem_read(tid, base, head, sizeof(head)) != (ssize_t)sizeof(head))
		return -EFAULT;
	size_t size = vdso_image_size(head, sizeof(head));
	if (size == 0)
		return -EINVAL;
	_cleanup_free_ uint8_t *img = malloc(size > sizeof(head) ? size : sizeof(head));
	if (!img)
		return -ENOMEM;
	if (ptrace_mem_read(tid, base, img, size) != (ssize_t)size)
		return -EFAULT;
	e->vdso.n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(vdso_funcs); i++) {
		uint64_t off, sz;
		if (vdso_lookup(img, size, vdso_funcs[i].name, &off, &sz) < 0)
			continue;
		if (sz && sz < VDSO_STUB_LEN)
			continue; /* no room for the stub: leave it (the call stays real) */
		bool dup = false;
		for (int k = 0; k < e->vdso.n; k++)
			dup |= e->vdso.off[k] == off;
		if (!dup) {
			e->vdso.off[e->vdso.n] = off;
			e->vdso.nr[e->vdso.n++] = vdso_funcs[i].nr;
		}
	}
	memcpy(e->vdso.ehdr, ehdr, 64);
	e->vdso.valid = true;
	return 0;
}

void determ_on_exec(engine *e, task *t)
{
	char path[64];
	uint64_t auxv[2 * 64], base = 0, at_random = 0;
	dproc *p = determ_proc_of(e, t);
	uint64_t exec_i = p->n_exec++;
	snprintf(path, sizeof(path), "/proc/%d/auxv", t->tid);
	_cleanup_close_ int afd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = afd < 0 ? -1 : read(afd, auxv, sizeof(auxv));
	for (ssize_t i = 0; n > 0 && i + 1 < n / 8; i += 2) {
		if (auxv[i] == AT_SYSINFO_EHDR)
			base = auxv[i + 1];
		else if (auxv[i] == AT_RANDOM)
			at_random = auxv[i + 1];
		else if (auxv[i] == AT_NULL)
			break;
	}
	if (at_random) {
		uint8_t r[16];
		determ_rng_read(&e->rng, determ_stream(p->id, DETERM_STREAM_AT_RANDOM, exec_i), 0, r,
				sizeof(r));
		if (ptrace_mem_write(t->tid, at_random, r, sizeof(r)) == 0)
			ptrace_rec_determ(e, t, TRACE_DETERM_RANDOM, SYS_execve, r, sizeof(r));
	}
	uint8_t ehdr[64];
	if (!base || ptrace_mem_read(t->tid, base, ehdr, sizeof(ehdr)) != (ssize_t)sizeof(ehdr))
		return;
	if ((!e->vdso.valid || memcmp(ehdr, e->vdso.ehdr, sizeof(ehdr)) != 0) &&
	    vdso_parse_image(e, t->tid, base, ehdr) < 0) {
		log_debug("ptrace engine: pid %d: cannot parse the vDSO", t->tid);
		return;
	}
	/* PTRACE_POKEDATA writes through FOLL_FORCE like /proc/PID/mem, without
	 * opening a file Landlock may keep read-only (sbx grants /proc read
	 * only); the stub is exactly one word. */
	_Static_assert(VDSO_STUB_LEN == sizeof(long), "the stub is one PTRACE_POKEDATA word");
	for (int i = 0; i < e->vdso.n; i++) {
		uint8_t stub[VDSO_STUB_LEN];
		long word;
		vdso_stub(e->vdso.nr[i], stub);
		memcpy(&word, stub, sizeof(word));
		if (ptrace(PTRACE_POKEDATA, t->tid, (void *)(uintptr_t)(base + e->vdso.off[i]),
			   (void *)word) < 0)
			log_debug("ptrace engine: pid %d: patch vDSO: %m", t->tid);
	}
}

bool determ_emulate_rdtsc(engine *e, task *t)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0 || si.si_code != SI_KERNEL)
		return false;
	struct user_regs_struct r;
	uint8_t code[3];
	bool rdtscp;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0 ||
	    ptrace_mem_read(t->tid, r.rip, code, sizeof(code)) < 2)
		return false;
	int len = determ_tsc_insn(code, sizeof(code), &rdtscp);
	if (!len)
		return false;
	uint64_t tsc = determ_clock_tsc(&determ_proc_of(e, t)->clk);
	r.rax = (uint32_t)tsc;
	r.rdx = tsc >> 32;
	if (rdtscp)
		r.rcx = 0; /* IA32_TSC_AUX: CPU 0, node 0 */
	r.rip += (unsigned)len;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0)
		return false;
	e->res.emulated++;
	ptrace_rec_determ(e, t, TRACE_DETERM_RDTSC, -1, &tsc, sizeof(tsc));
	return true;
}

#endif
