/* The ptrace engine: determinism mode and the ptrace syscall recorder.
 *
 * The engine forks the command, PTRACE_SEIZEs it before exec and follows all
 * its descendants (fork/vfork/clone events auto-attach them). It runs in the
 * process init forked for the command, inside the environment, with no
 * privilege: ptrace of a child of one's own uid needs none (the child makes
 * itself dumpable again first: init, and so its fork, is not), and the
 * seccomp filter below needs only no_new_privs. A command that uses ptrace
 * itself (gdb, strace) or installs a seccomp listener of its own cannot run
 * under the engine: a task has one tracer, and one listener per filter chain.
 *
 * Recording (o->record): every task runs under PTRACE_SYSCALL; the entry stop
 * captures number, arguments and string arguments, the exit stop the return
 * value, and one TR_SYSCALL record is written per call (entered-only when a
 * call never returns: exit, a killed task). That is two stops per syscall,
 * ~15 us together on this machine: the slow fallback when eBPF is not
 * available. Recording starts at the command's first execve (the engine's
 * own pre-exec setup in the child is not recorded).
 *
 * Determinism (o->deterministic). Before exec the child turns ASLR off
 * (personality ADDR_NO_RANDOMIZE), pins itself to its lowest allowed CPU (the
 * engine moves there too: every stop hands over between the two), sets umask
 * 022, makes rdtsc/rdtscp fault (PR_SET_TSC) and installs the seccomp program
 * of determ_filter.c, whose user notifications a second engine thread answers
 * (the tracer thread blocks in waitpid). From then on:
 *  - clocks: clock_gettime (every clock id; fd clocks excepted), gettimeofday,
 *    time, clock_getres, times are answered from the virtual clock
 *    (determ_clock.c: REALTIME = epoch + t, MONOTONIC/BOOTTIME = 1000 s + t,
 *    CPU clocks = t, t += 1 us per read). The vDSO versions are overwritten at
 *    every exec with `mov eax, NR; syscall; ret` by PTRACE_POKEDATA (a
 *    FOLL_FORCE write, as through /proc/PID/mem, which works as well but may
 *    be read-only under Landlock: the kernel copies the vDSO page privately,
 *    as for rr), so libc, static binaries and raw syscalls all end up in the
 *    filter. rdtsc/rdtscp raise SIGSEGV; the engine decodes the instruction,
 *    sets rax/rdx (rcx = 0 for rdtscp: CPU 0) from the virtual clock (1 GHz)
 *    and steps over it. Cost: with the TSC flag every context switch into or
 *    out of the command rewrites CR4, which traps to the hypervisor on this
 *    VM: it about doubles the cost of every stop (measured 2x on clock and
 *    stat loops); on bare metal it is cheap.
 *  - sleeping: nanosleep and clock_nanosleep really sleep (so a command that
 *    waits for another process still waits) and advance the virtual clock by
 *    the amount asked; an absolute clock_nanosleep deadline (virtual) becomes
 *    a relative sleep of the virtual difference. Absolute timeouts of futex
 *    waits, futex_waitv and timerfd_settime are moved from the virtual clock
 *    to the real one (replacement structs are written below the red zone of
 *    the thread's stack and the argument registers restored at the exit
 *    stop); a wait that times out advances the virtual clock to its deadline,
 *    so "loop until the deadline" terminates. Not translated: POSIX timers
 *    (timer_settime) and mq_timed* with absolute times, select/poll/epoll
 *    remaining-time results (real).
 *  - randomness: getrandom is answered from ChaCha20 keyed by the seed, one
 *    stream for all processes in call order. An open/openat/openat2 of a path
 *    containing "random" that turns out to be the character device 1:8 or 1:9
 *    (resolved in the tracee's root, cwd or dirfd; a symlink to it under a
 *    name without "random" is not caught) is answered, through a seccomp user
 *    notification and SECCOMP_IOCTL_NOTIF_ADDFD, with one end of a
 *    SOCK_SEQPACKET socket pair whose other end the engine keeps fed with
 *    64 KiB messages from a stream of its own (one stream per open):
 *    unlimited bytes, any number of opens. A message, not a pipe: a read
 *    returns exactly min(size, 64 KiB) whenever it happens (one message, the
 *    rest of it dropped), where a pipe would return what the engine had
 *    written so far, and `dd bs=1M` would copy a timing-dependent amount.
 *    Differences from the device: fstat says socket, lseek fails with ESPIPE,
 *    a read returns at most 64 KiB, writes are accepted and dropped (opens for
 *    writing only go to the real device). AT_RANDOM (glibc's stack protector
 *    and pointer guard) is overwritten at every exec from its own stream.
 *  - uname: nodename is replaced at the syscall's exit stop when o->hostname.
 *  - file times: stat, fstat, lstat, newfstatat, statx results go through
 *    determ_time_map_set (see ptrace_engine.h): times from this run get
 *    virtual times in the order they are first seen, earlier ones stay (or
 *    are squeezed below the epoch when the epoch is earlier than the real
 *    start, so make sees no file from the future). Limits: the mapping lives
 *    for one run (a file made in run 1 shows its real time, squeezed, in run
 *    2, consistently ordered); it follows first observation, not creation
 *    order; two changes of a file within one kernel tick (4 ms) show as one
 *    time, as on the real system, and whether they fall into one tick is
 *    timing; directory listings carry no times; /proc times and sysinfo
 *    uptime are real; utimensat with explicit times stores what was asked.
 *  - CPU: rseq fails with ENOSYS and getcpu (vDSO too) answers CPU 0, node 0;
 *    RDPID is not intercepted (it reads the pinned CPU's real number);
 *    cpuid, /proc/cpuinfo and sysconf(_SC_NPROCESSORS_*) are the machine's.
 *  - pids: o->first_pid is reached by burning pids (they are handed out in
 *    order in a pid namespace); descendants then get the same pids as long
 *    as the fork order is the same and nothing else in the environment forks
 *    meanwhile.
 *  - threads are not serialized: interleavings, and whatever depends on them
 *    (which thread reads the clock first), are not reproducible; nor are
 *    several processes running at once. A process getting its second thread
 *    is written as a TR_DETERM "concurrency" record so replay can point at it.
 * Every substituted value goes to record_fd as TR_DETERM when record_fd >= 0.
 * Not covered: the kernel version fields of uname, /proc and /sys contents,
 * environment-dependent inputs (network, files), 32-bit programs.
 *
 * Signals are re-injected at signal-delivery stops; group stops are handled
 * with PTRACE_LISTEN (the tracees are SEIZEd). The engine ignores SIGINT,
 * SIGQUIT, SIGTERM, SIGHUP: init signals the whole process group, so the
 * command gets them itself, and the engine must outlive it to report its
 * status (if the engine died, PTRACE_O_EXITKILL would kill the command).
 *
 * When the command (the first process) exits, its status is returned. Its
 * descendants still alive then are, when only recording, detached cleanly
 * (interrupted, then PTRACE_DETACH at that stop, which also hands back a
 * pending signal) and go on untraced, as background processes do in sbx.
 * Under determinism they are killed instead: their seccomp filter would make
 * every trapped call fail with ENOSYS once no tracer answers (clock_gettime,
 * open, stat), and rdtsc would kill them with SIGSEGV: there is no safe way
 * to let them go on untraced.
 *
 * No fd of the engine reaches the command: all are O_CLOEXEC, record_fd is
 * closed in the child before exec, and a /dev/urandom socket reaches the
 * command only as the one end ADDFD installs. */
#include "trace/ptrace_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/auxv.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace_sys.h"
#include "trace/vdso.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/log.h"
#include "util/syscalls.h"

#if defined(__x86_64__)

#include <linux/seccomp.h>

#define REC_BUF 65536
#define SCRATCH_BELOW_SP 512 /* past the 128-byte red zone, with room for what we write */
#define RS_MSG 65536	     /* one /dev/urandom read returns at most this much (one message) */

enum xact { X_NONE, X_RESTORE, X_STAT, X_STATX, X_UNAME };

typedef struct task {
	pid_t tid, tgid;
	bool in_sys;	/* record: entry seen, exit not yet */
	bool emulated;	/* the current call was answered by the engine */
	bool want_exit; /* stop at this call's exit (PTRACE_SYSCALL instead of PTRACE_CONT) */
	enum xact xact; /* what to do at that exit */
	uint64_t xaddr; /* the call's result buffer */
	int xclk;	/* X_RESTORE: on ETIMEDOUT advance this clock to xtarget */
	uint64_t xtarget;
	int n_saved; /* argument registers changed at entry, restored at exit */
	struct {
		size_t off;
		uint64_t val;
	} saved[4];
	/* record: the call between its entry and exit stops */
	int32_t nr;
	uint32_t sflags;
	uint16_t slen[2];
	uint64_t args[6];
	uint64_t enter_ns;
	char str[2][TRACE_MAX_STR];
} task;

/* One open of /dev/urandom: the engine's end of the socket pair. */
typedef struct rstream {
	int fd;
	uint64_t stream, pos;
} rstream;

typedef struct engine {
	const ptrace_opts *o;
	bool det, rec;
	task **tasks;
	size_t n_tasks, cap_tasks;
	pid_t main_pid;
	int main_status;
	bool main_done, draining, started;
	determ_clock clk;
	determ_timemap tmap;
	dev_t pseudo_dev[2]; /* procfs and sysfs: their inode times are when the kernel made the inode */
	determ_rng rng;
	uint64_t rand_pos, n_urandom, n_exec;
	int lfd;	   /* the seccomp listener (determinism) */
	int wake_efd;	   /* wakes the notification thread: the listener arrived, or stop */
	bool stopping;	   /* (atomic) the notification thread is to finish */
	pthread_t nthread; /* answers notifications and feeds /dev/urandom streams */
	bool nthread_on;
	pthread_mutex_t mu; /* the tracer thread holds it while handling a stop, the other while answering */
	rstream *rs;	    /* notification thread only */
	size_t n_rs, cap_rs;
	pid_t *threaded; /* tgids already reported as multi-threaded */
	size_t n_threaded, cap_threaded;
	struct {
		bool valid;
		uint8_t ehdr[64];
		uint64_t off[10];
		int nr[10];
		int n;
	} vdso;
	uint8_t *rbuf;
	size_t rlen;
	int rfd, rerr;
	ptrace_result res;
} engine;

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- tracee memory ---- */

static ssize_t mem_read(pid_t tid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = {buf, n}, r = {(void *)(uintptr_t)addr, n};
	return process_vm_readv(tid, &l, 1, &r, 1, 0);
}

static int mem_write(pid_t tid, uint64_t addr, const void *buf, size_t n)
{
	struct iovec l = {(void *)buf, n}, r = {(void *)(uintptr_t)addr, n};
	ssize_t w = process_vm_writev(tid, &l, 1, &r, 1, 0);
	return w == (ssize_t)n ? 0 : -EFAULT;
}

/* A NUL-terminated string of at most cap-1 bytes, read page by page (the
 * string may end just before an unmapped page). Returns its length incl. the
 * NUL, or -EFAULT; *trunc when it was longer (or unreadable past a point). */
static int mem_read_str(pid_t tid, uint64_t addr, char *buf, size_t cap, bool *trunc)
{
	size_t got = 0;
	*trunc = false;
	if (!addr)
		return -EFAULT;
	while (got < cap) { /* cap bytes: a NUL in the last one is an exact fit */
		size_t page = 4096 - ((addr + got) & 4095), want = cap - got < page ? cap - got : page;
		ssize_t r = mem_read(tid, addr + got, buf + got, want);
		if (r <= 0)
			break;
		void *z = memchr(buf + got, 0, (size_t)r);
		if (z)
			return (int)((char *)z - buf) + 1;
		got += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	if (got == 0)
		return -EFAULT;
	got = got < cap ? got : cap - 1;
	buf[got] = 0;
	*trunc = true;
	return (int)got + 1;
}

/* ---- records ---- */

static void rec_flush(engine *e)
{
	if (e->rfd >= 0 && e->rlen > 0 && !e->rerr) {
		if (fd_write_all(e->rfd, e->rbuf, e->rlen) < 0)
			e->rerr = errno ? errno : EIO;
	}
	e->rlen = 0;
}

static void rec_put(engine *e, const void *rec, size_t len)
{
	if (e->rfd < 0 || !e->rbuf || e->rerr)
		return;
	if (e->rlen + len > REC_BUF)
		rec_flush(e);
	memcpy(e->rbuf + e->rlen, rec, len);
	e->rlen += len;
	e->res.records++;
}

static struct trace_rec rec_hdr(uint16_t type, size_t len, pid_t pid, pid_t tid, uint32_t flags)
{
	return (struct trace_rec){.type = type,
				  .len = (uint16_t)len,
				  .pid = (uint32_t)pid,
				  .tid = (uint32_t)tid,
				  .flags = flags,
				  .ts_ns = now_ns(CLOCK_MONOTONIC)};
}

/* ts: when the substitution happened, 0 = now. A record written after the
 * reply (the tracee may have run on) carries the time of the request, so
 * that merged with the eBPF stream it lands before the call's exit, always. */
static void rec_determ_at(engine *e, const task *t, uint32_t kind, int nr, const void *val, size_t len, uint64_t ts)
{
	if (e->rfd < 0)
		return;
	uint8_t buf[sizeof(struct trace_determ) + TRACE_DETERM_MAX_VALUE] = {0};
	uint32_t flags = 0;
	if (len > TRACE_DETERM_MAX_VALUE) {
		len = TRACE_DETERM_MAX_VALUE;
		flags |= TRACE_DETERM_TRUNC;
	}
	size_t total = TRACE_ALIGN(sizeof(struct trace_determ) + len);
	struct trace_determ d = {.h = rec_hdr(TR_DETERM, total, t ? t->tgid : 0, t ? t->tid : 0, flags),
				 .kind = kind,
				 .value_len = (uint32_t)len,
				 .nr = nr};
	if (ts)
		d.h.ts_ns = ts;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), val, len);
	rec_put(e, buf, total);
}

static void rec_determ(engine *e, const task *t, uint32_t kind, int nr, const void *val, size_t len)
{
	rec_determ_at(e, t, kind, nr, val, len, 0);
}

static void rec_syscall(engine *e, task *t, bool has_ret, int64_t ret)
{
	uint8_t buf[sizeof(struct trace_syscall) + 2 * TRACE_MAX_STR + 8] = {0};
	size_t total = TRACE_ALIGN(sizeof(struct trace_syscall) + t->slen[0] + t->slen[1]);
	uint32_t flags = t->sflags | (has_ret ? TRS_HAS_RET : 0) | (t->emulated ? TRS_EMULATED : 0);
	struct trace_syscall s = {.h = rec_hdr(TR_SYSCALL, total, t->tgid, t->tid, flags),
				  .nr = t->nr,
				  .str0_len = t->slen[0],
				  .str1_len = t->slen[1],
				  .ret = has_ret ? ret : 0,
				  .enter_ns = t->enter_ns};
	memcpy(s.args, t->args, sizeof(s.args));
	memcpy(buf, &s, sizeof(s));
	memcpy(buf + sizeof(s), t->str[0], t->slen[0]);
	memcpy(buf + sizeof(s) + t->slen[0], t->str[1], t->slen[1]);
	rec_put(e, buf, total);
	t->in_sys = false;
}

static void rec_fork(engine *e, const task *child, const task *parent, bool thread)
{
	struct trace_fork f = {.h = rec_hdr(TR_FORK, sizeof(f), child->tgid, child->tid, thread ? 1 : 0),
			       .parent_pid = (uint32_t)(parent ? parent->tgid : 0),
			       .parent_tid = (uint32_t)(parent ? parent->tid : 0)};
	rec_put(e, &f, sizeof(f));
}

static void rec_exit(engine *e, pid_t tgid, pid_t tid, int status)
{
	struct trace_exit x = {.h = rec_hdr(TR_EXIT, sizeof(x), tgid, tid, tid == tgid ? 1 : 0),
			       .status = status};
	rec_put(e, &x, sizeof(x));
}

static void rec_exec(engine *e, const task *t)
{
	if (e->rfd < 0)
		return;
	char path[64], file[TRACE_MAX_STR], argv[TRACE_MAX_ARGV];
	ssize_t fl;
	if (t->in_sys && (t->nr == SYS_execve || t->nr == SYS_execveat) && t->slen[0] > 0) {
		/* recording: the name as given to execve (a script's, not its interpreter's) */
		fl = t->slen[0] - 1;
		memcpy(file, t->str[0], (size_t)fl + 1);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/exe", t->tid);
		fl = readlink(path, file, sizeof(file) - 1);
		fl = fl < 0 ? 0 : fl;
		file[fl] = 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", t->tid);
	ssize_t al = 0;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		al = read(fd, argv, sizeof(argv));
		al = al < 0 ? 0 : al;
	}
	uint32_t flags = 0, argc = 0;
	char more;
	if (al == (ssize_t)sizeof(argv) && read(fd, &more, 1) == 1)
		flags |= 1;
	while (al > 0 && argv[al - 1] != 0)
		al--; /* whole strings only */
	for (ssize_t i = 0; i < al; i++)
		argc += argv[i] == 0;
	uint8_t buf[sizeof(struct trace_exec) + sizeof(file) + sizeof(argv) + 8] = {0};
	size_t total = TRACE_ALIGN(sizeof(struct trace_exec) + (size_t)fl + 1 + (size_t)al);
	struct trace_exec x = {.h = rec_hdr(TR_EXEC, total, t->tgid, t->tid, flags),
			       .filename_len = (uint16_t)(fl + 1),
			       .argv_len = (uint16_t)al,
			       .argc = argc};
	memcpy(buf, &x, sizeof(x));
	memcpy(buf + sizeof(x), file, (size_t)fl + 1);
	memcpy(buf + sizeof(x) + fl + 1, argv, (size_t)al);
	rec_put(e, buf, total);
}

/* ---- tasks ---- */

static task *task_find(engine *e, pid_t tid)
{
	for (size_t i = 0; i < e->n_tasks; i++)
		if (e->tasks[i]->tid == tid)
			return e->tasks[i];
	return NULL;
}

static pid_t read_tgid(pid_t tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return tid;
	buf[n] = 0;
	const char *p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : tid;
}

static task *task_add(engine *e, pid_t tid, pid_t tgid)
{
	if (e->n_tasks == e->cap_tasks) {
		size_t ncap = e->cap_tasks ? e->cap_tasks * 2 : 16;
		task **n = realloc(e->tasks, ncap * sizeof(*n));
		if (!n)
			return NULL;
		e->tasks = n;
		e->cap_tasks = ncap;
	}
	task *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	t->tgid = tgid;
	e->tasks[e->n_tasks++] = t;
	return t;
}

static void task_remove(engine *e, task *t)
{
	for (size_t i = 0; i < e->n_tasks; i++)
		if (e->tasks[i] == t) {
			e->tasks[i] = e->tasks[--e->n_tasks];
			break;
		}
	free(t);
}

static void threaded_forget(engine *e, pid_t tgid)
{
	for (size_t i = 0; i < e->n_threaded; i++)
		if (e->threaded[i] == tgid) {
			e->threaded[i] = e->threaded[--e->n_threaded];
			return;
		}
}

/* ---- resuming ---- */

static void resume(engine *e, task *t, int sig)
{
	int req = e->rec || t->want_exit ? PTRACE_SYSCALL : PTRACE_CONT;
	if (ptrace(req, t->tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		log_debug("ptrace engine: resume %d: %m", t->tid);
}

/* Answers the call at a seccomp stop: the kernel skips it (orig_rax = -1)
 * and the task sees `ret` in rax. */
static void skip_call(engine *e, task *t, int64_t ret)
{
	(void)ptrace(PTRACE_POKEUSER, t->tid, offsetof(struct user_regs_struct, orig_rax), (void *)-1L);
	(void)ptrace(PTRACE_POKEUSER, t->tid, offsetof(struct user_regs_struct, rax), (void *)ret);
	t->emulated = true;
	e->res.emulated++;
}

static const size_t arg_reg[6] = {
    offsetof(struct user_regs_struct, rdi), offsetof(struct user_regs_struct, rsi),
    offsetof(struct user_regs_struct, rdx), offsetof(struct user_regs_struct, r10),
    offsetof(struct user_regs_struct, r8),  offsetof(struct user_regs_struct, r9),
};

/* Changes argument i for the kernel; the original goes back at the exit
 * stop, since compiled code may keep using the register after the syscall. */
static void set_arg(task *t, const uint64_t *args, int i, uint64_t v)
{
	if (t->n_saved < (int)ARRAY_SIZE(t->saved)) {
		t->saved[t->n_saved].off = arg_reg[i];
		t->saved[t->n_saved++].val = args[i];
	}
	(void)ptrace(PTRACE_POKEUSER, t->tid, arg_reg[i], (void *)v);
	t->xact = X_RESTORE;
	t->want_exit = true;
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
	if (!addr || mem_read(tid, addr, ts, sizeof(ts)) != (ssize_t)sizeof(ts))
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
static uint64_t to_real(engine *e, int kind, uint64_t target)
{
	uint64_t vnow = determ_clock_peek(&e->clk, kind), rnow = now_ns(real_clock(kind));
	return rnow + (target > vnow ? target - vnow : 0);
}

static uint64_t scratch(uint64_t sp, size_t n)
{
	return (sp - SCRATCH_BELOW_SP - n) & ~15ULL;
}

/* The calls answered from values alone (the clocks, getrandom, getcpu):
 * true with the return value in *ret, false when the kernel should run the
 * call. tid is the caller; t (its task, for the records) may be NULL. They
 * come as seccomp user notifications, cheaper than a ptrace stop (no
 * registers to change, no SIGCHLD/waitpid round), but work from a seccomp
 * stop too. */
static bool answer_clock(engine *e, task *t, pid_t tid, int nr, const uint64_t *a, int64_t *ret)
{
	int64_t v[4] = {0};
	size_t vlen = 16;
	*ret = 0;
	if (nr == SYS_clock_gettime) {
		int kind = determ_clock_kind((int64_t)a[0]);
		if (kind == DETERM_CLK_NONE)
			return false; /* the kernel answers (EINVAL, or an fd clock) */
		put_ts(determ_clock_read(&e->clk, kind), v, 1);
		*ret = mem_write(tid, a[1], v, 16);
	} else if (nr == SYS_clock_getres) {
		if (determ_clock_kind((int64_t)a[0]) == DETERM_CLK_NONE)
			return false;
		put_ts(determ_clock_res((int64_t)a[0]), v, 1);
		*ret = a[1] ? mem_write(tid, a[1], v, 16) : 0;
	} else if (nr == SYS_gettimeofday) {
		put_ts(determ_clock_read(&e->clk, DETERM_CLK_REAL), v, 1000);
		*ret = a[0] ? mem_write(tid, a[0], v, 16) : 0;
		if (*ret == 0 && a[1])
			*ret = mem_write(tid, a[1], v + 2, 8); /* struct timezone: all zero */
	} else if (nr == SYS_time) {
		v[0] = (int64_t)(determ_clock_read(&e->clk, DETERM_CLK_REAL) / 1000000000ULL);
		vlen = 8;
		*ret = a[0] ? mem_write(tid, a[0], v, 8) : 0;
		if (*ret == 0)
			*ret = v[0];
	} else { /* times: struct tms in clock ticks (USER_HZ 100), returns ticks since "boot" */
		uint64_t mono = determ_clock_read(&e->clk, DETERM_CLK_MONO);
		v[0] = (int64_t)(e->clk.vt / 10000000ULL); /* tms_utime: all virtual time was user time */
		vlen = 32;
		*ret = a[0] ? mem_write(tid, a[0], v, 32) : 0;
		if (*ret == 0)
			*ret = (int64_t)(mono / 10000000ULL);
	}
	rec_determ(e, t, TRACE_DETERM_CLOCK, nr, v, vlen);
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
	uint8_t chunk[16384], first[TRACE_DETERM_MAX_VALUE];
	uint64_t done = 0;
	while (done < len) {
		size_t k = len - done < sizeof(chunk) ? (size_t)(len - done) : sizeof(chunk);
		determ_rng_read(&e->rng, DETERM_STREAM_GETRANDOM, e->rand_pos, chunk, k);
		if (mem_write(tid, buf + done, chunk, k) < 0)
			break;
		if (done == 0)
			memcpy(first, chunk, k < sizeof(first) ? k : sizeof(first));
		e->rand_pos += k;
		done += k;
	}
	*ret = done == 0 && len > 0 ? -EFAULT : (int64_t)done;
	if (done > 0 || len == 0) /* the record keeps the first 256 bytes, flagged when there were more */
		rec_determ(e, t, TRACE_DETERM_RANDOM, SYS_getrandom, first, (size_t)done);
	return true;
}

static bool answer(engine *e, task *t, pid_t tid, int nr, const uint64_t *a, int64_t *ret)
{
	switch (nr) {
	case SYS_clock_gettime:
	case SYS_clock_getres:
	case SYS_gettimeofday:
	case SYS_time:
	case SYS_times:
		return answer_clock(e, t, tid, nr, a, ret);
	case SYS_getrandom:
		return answer_getrandom(e, t, tid, a, ret);
	case SYS_getcpu: {
		uint32_t zero = 0, v[2] = {0, 0};
		*ret = a[0] ? mem_write(tid, a[0], &zero, 4) : 0;
		if (*ret == 0 && a[1])
			*ret = mem_write(tid, a[1], &zero, 4);
		rec_determ(e, t, TRACE_DETERM_GETCPU, nr, v, sizeof(v));
		return true;
	}
	case SYS_nanosleep: {
		uint64_t ns;
		/* The real sleep happens; the virtual clock moves by what was asked. */
		if (get_ts(tid, a[0], &ns))
			e->clk.vt += ns;
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
	if (!abs) {
		e->clk.vt += ns; /* the real sleep happens; the virtual clock moves by what was asked */
		return;
	}
	uint64_t now = determ_clock_peek(&e->clk, kind);
	if (ns <= now) {
		skip_call(e, t, 0); /* the deadline has passed on the virtual clock */
		return;
	}
	int64_t rel[2];
	put_ts(ns - now, rel, 1);
	uint64_t at = scratch(sp, sizeof(rel));
	if (mem_write(t->tid, at, rel, sizeof(rel)) < 0)
		return;
	determ_clock_advance_to(&e->clk, kind, ns);
	set_arg(t, a, 0, CLOCK_MONOTONIC);
	set_arg(t, a, 1, 0);
	set_arg(t, a, 2, at);
	set_arg(t, a, 3, 0); /* rem is not written for absolute sleeps */
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
	put_ts(to_real(e, kind, ns), real, 1);
	uint64_t at = scratch(sp, sizeof(real));
	if (mem_write(t->tid, at, real, sizeof(real)) < 0)
		return;
	set_arg(t, a, arg, at);
	t->xclk = kind;
	t->xtarget = ns;
}

static void on_timerfd(engine *e, task *t, const uint64_t *a, uint64_t sp)
{
	int64_t its[4]; /* it_interval, it_value */
	if (!a[2] || mem_read(t->tid, a[2], its, sizeof(its)) != (ssize_t)sizeof(its))
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
	put_ts(to_real(e, kind, (uint64_t)its[2] * 1000000000ULL + (uint64_t)its[3]), its + 2, 1);
	uint64_t at = scratch(sp, sizeof(its));
	if (mem_write(t->tid, at, its, sizeof(its)) < 0)
		return;
	set_arg(t, a, 2, at);
}

static void on_seccomp(engine *e, task *t)
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
	case SYS_getrandom:
	case SYS_getcpu: {
		int64_t r;
		if (answer(e, t, t->tid, nr, a, &r))
			skip_call(e, t, r);
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
		 * times, also when the program asked only for atime (stat -c %x):
		 * ask the kernel for them too (statx may return more than asked). */
		const uint64_t need = STATX_TYPE | STATX_MTIME;
		if ((a[3] & need) != need) {
			set_arg(t, a, 3, a[3] | need);
		}
		t->xact = X_STATX, t->xaddr = a[4], t->want_exit = true;
		break;
	}
	case SYS_uname:
		if (e->o->hostname)
			t->xact = X_UNAME, t->xaddr = a[0], t->want_exit = true;
		break;
	default:
		break;
	}
}

/* ---- determinism: exit stops ---- */

/* Maps n timestamps of one stat result; false if none changed. */
static bool map_times(engine *e, uint64_t dev, uint64_t ino, int64_t *sec, int64_t *nsec, int n)
{
	int64_t t[4];
	int idx[4], k = 0;
	for (int i = 0; i < n; i++) {
		if (sec[i] < -9000000000LL || sec[i] > 9000000000LL || nsec[i] < 0 || nsec[i] >= 1000000000)
			continue; /* not representable in int64 ns: left alone */
		t[k] = sec[i] * 1000000000LL + nsec[i];
		idx[k++] = i;
	}
	if (determ_time_map_set(&e->tmap, &e->clk, dev, ino, t, k) == 0)
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

static void fix_stat(engine *e, task *t, int nr)
{
	struct stat st;
	if (mem_read(t->tid, t->xaddr, &st, sizeof(st)) != (ssize_t)sizeof(st))
		return;
	if (not_a_file(st.st_mode) || st.st_dev == e->pseudo_dev[0] || st.st_dev == e->pseudo_dev[1]) {
		struct timespec ep = {(time_t)(e->clk.epoch_ns / 1000000000u), (long)(e->clk.epoch_ns % 1000000000u)};
		st.st_atim = st.st_mtim = st.st_ctim = ep;
		size_t from = offsetof(struct stat, st_atim), to = offsetof(struct stat, st_ctim) + sizeof(st.st_ctim);
		(void)mem_write(t->tid, t->xaddr + from, (uint8_t *)&st + from, to - from);
		return;
	}
	canon_time(e, &st.st_atim, &st.st_mtim, true);
	canon_time(e, &st.st_ctim, &st.st_mtim, false);
	struct timespec *ts[3] = {&st.st_atim, &st.st_mtim, &st.st_ctim};
	int64_t sec[3], nsec[3], out[3];
	for (int i = 0; i < 3; i++)
		sec[i] = ts[i]->tv_sec, nsec[i] = ts[i]->tv_nsec;
	if (!map_times(e, st.st_dev, st.st_ino, sec, nsec, 3))
		return;
	for (int i = 0; i < 3; i++) {
		ts[i]->tv_sec = sec[i];
		ts[i]->tv_nsec = nsec[i];
		out[i] = sec[i] * 1000000000LL + nsec[i];
	}
	size_t from = offsetof(struct stat, st_atim),
	       to = offsetof(struct stat, st_ctim) + sizeof(st.st_ctim);
	if (mem_write(t->tid, t->xaddr + from, (uint8_t *)&st + from, to - from) == 0)
		rec_determ(e, t, TRACE_DETERM_STAT, nr, out, sizeof(out));
}

static void fix_statx(engine *e, task *t, int nr)
{
	struct statx sx;
	if (mem_read(t->tid, t->xaddr, &sx, sizeof(sx)) != (ssize_t)sizeof(sx))
		return;
	uint64_t dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	if (((sx.stx_mask & STATX_TYPE) && not_a_file(sx.stx_mode)) || dev == e->pseudo_dev[0] ||
	    dev == e->pseudo_dev[1]) {
		struct statx_timestamp ep = {.tv_sec = (int64_t)(e->clk.epoch_ns / 1000000000u),
					     .tv_nsec = (uint32_t)(e->clk.epoch_ns % 1000000000u)};
		sx.stx_atime = sx.stx_btime = sx.stx_ctime = sx.stx_mtime = ep;
		size_t from = offsetof(struct statx, stx_atime), to = offsetof(struct statx, stx_mtime) + sizeof(sx.stx_mtime);
		(void)mem_write(t->tid, t->xaddr + from, (uint8_t *)&sx + from, to - from);
		return;
	}
	if (sx.stx_mask & STATX_MTIME) {
		/* As canon_time: atime reads as mtime; ctime and btime from before
		 * the run too. */
		int64_t start = e->tmap.real_start;
		struct statx_timestamp *m = &sx.stx_mtime;
		if (sx.stx_mask & STATX_ATIME)
			sx.stx_atime = *m;
		if ((sx.stx_mask & STATX_CTIME) && (int64_t)sx.stx_ctime.tv_sec * 1000000000LL + sx.stx_ctime.tv_nsec < start)
			sx.stx_ctime = *m;
		if ((sx.stx_mask & STATX_BTIME) && (int64_t)sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec < start)
			sx.stx_btime = *m;
	}
	struct statx_timestamp *ts[4] = {&sx.stx_atime, &sx.stx_btime, &sx.stx_ctime, &sx.stx_mtime};
	static const uint32_t bit[4] = {STATX_ATIME, STATX_BTIME, STATX_CTIME, STATX_MTIME};
	int64_t sec[4], nsec[4], out[4] = {0};
	int which[4], n = 0;
	for (int i = 0; i < 4; i++)
		if (sx.stx_mask & bit[i]) {
			sec[n] = ts[i]->tv_sec, nsec[n] = ts[i]->tv_nsec;
			which[n++] = i;
		}
	if (!map_times(e, dev, sx.stx_ino, sec, nsec, n))
		return;
	for (int j = 0; j < n; j++) {
		ts[which[j]]->tv_sec = sec[j];
		ts[which[j]]->tv_nsec = (uint32_t)nsec[j];
		out[which[j]] = sec[j] * 1000000000LL + nsec[j];
	}
	size_t from = offsetof(struct statx, stx_atime),
	       to = offsetof(struct statx, stx_mtime) + sizeof(sx.stx_mtime);
	if (mem_write(t->tid, t->xaddr + from, (uint8_t *)&sx + from, to - from) == 0)
		rec_determ(e, t, TRACE_DETERM_STAT, nr, out, sizeof(out));
}

static void on_exit_action(engine *e, task *t, int nr, int64_t rval)
{
	switch (t->xact) {
	case X_RESTORE:
		for (int i = 0; i < t->n_saved; i++)
			(void)ptrace(PTRACE_POKEUSER, t->tid, t->saved[i].off, (void *)t->saved[i].val);
		if (rval == -ETIMEDOUT && t->xtarget)
			determ_clock_advance_to(&e->clk, t->xclk, t->xtarget);
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
	case X_UNAME:
		if (rval == 0) {
			char node[65] = {0};
			size_t hl = strlen(e->o->hostname);
			memcpy(node, e->o->hostname, hl < 64 ? hl : 64);
			if (mem_write(t->tid, t->xaddr + offsetof(struct utsname, nodename), node,
				      sizeof(node)) == 0)
				rec_determ(e, t, TRACE_DETERM_UNAME, nr, node, strlen(node));
		}
		break;
	case X_NONE:
		break;
	}
	t->xact = X_NONE;
	t->n_saved = 0;
	t->want_exit = false;
}

/* ---- syscall stops (record mode, and exit stops asked for above) ---- */

static void capture_entry(engine *e, task *t, int nr, const uint64_t *args)
{
	t->nr = nr;
	memcpy(t->args, args, sizeof(t->args));
	t->enter_ns = now_ns(CLOCK_MONOTONIC);
	t->sflags = 0;
	t->slen[0] = t->slen[1] = 0;
	t->emulated = false;
	uint8_t bits = trace_sys_str_args(nr);
	for (int i = 0, k = 0; i < 6 && k < 2; i++) {
		if (!(bits & (1u << i)))
			continue;
		bool trunc;
		int n = mem_read_str(t->tid, args[i], t->str[k], TRACE_MAX_STR, &trunc);
		if (n < 0)
			t->sflags |= k ? TRS_STR1_FAULT : TRS_STR0_FAULT;
		else {
			t->slen[k] = (uint16_t)n;
			if (trunc)
				t->sflags |= k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC;
		}
		k++;
	}
	t->in_sys = true;
}

static void on_syscall_stop(engine *e, task *t)
{
	struct __ptrace_syscall_info si;
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof(si), &si) <= 0)
		return;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		if (!e->rec)
			return;
		if (!e->started) {
			/* The engine's own pre-exec code in the child is not the command's. */
			if (t->tid != e->main_pid || si.entry.nr != SYS_execve)
				return;
			e->started = true;
		}
		if (t->in_sys)
			rec_syscall(e, t, false, 0);
		capture_entry(e, t, (int)si.entry.nr, si.entry.args);
	} else if (si.op == PTRACE_SYSCALL_INFO_EXIT) {
		if (t->want_exit)
			on_exit_action(e, t, t->nr, si.exit.rval);
		if (t->in_sys)
			rec_syscall(e, t, true, si.exit.rval);
		t->emulated = false;
	}
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
	if (mem_read(tid, base, head, sizeof(head)) != (ssize_t)sizeof(head))
		return -EFAULT;
	size_t size = vdso_image_size(head, sizeof(head));
	if (size == 0)
		return -EINVAL;
	_cleanup_free_ uint8_t *img = malloc(size > sizeof(head) ? size : sizeof(head));
	if (!img)
		return -ENOMEM;
	if (mem_read(tid, base, img, size) != (ssize_t)size)
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

static void on_exec_determ(engine *e, task *t)
{
	char path[64];
	uint64_t auxv[2 * 64], base = 0, at_random = 0;
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
		determ_rng_read(&e->rng, DETERM_STREAM_AT_RANDOM(e->n_exec), 0, r, sizeof(r));
		if (mem_write(t->tid, at_random, r, sizeof(r)) == 0)
			rec_determ(e, t, TRACE_DETERM_RANDOM, SYS_execve, r, sizeof(r));
	}
	uint8_t ehdr[64];
	if (!base || mem_read(t->tid, base, ehdr, sizeof(ehdr)) != (ssize_t)sizeof(ehdr))
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

static void on_exec(engine *e, task *t)
{
	unsigned long former = 0;
	(void)ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former);
	if ((pid_t)former != t->tid) {
		/* A thread other than the leader exec'd: it takes over the leader's
		 * tid. The leader's own end is not reported; the thread's state
		 * (its execve in flight) moves over. */
		task *old = task_find(e, (pid_t)former);
		if (old) {
			pid_t tid = t->tid;
			memcpy(t, old, sizeof(*t));
			t->tid = tid;
			task_remove(e, old);
		}
	}
	t->tgid = t->tid;
	threaded_forget(e, t->tgid);
	if (e->det)
		on_exec_determ(e, t);
	rec_exec(e, t);
	e->n_exec++;
}

/* ---- new tasks ---- */

static void on_new_task(engine *e, task *parent, int ev)
{
	unsigned long msg = 0;
	if (ptrace(PTRACE_GETEVENTMSG, parent->tid, 0, &msg) < 0)
		return;
	pid_t tid = (pid_t)msg;
	bool thread = false;
	task *c = task_find(e, tid);
	if (!c) {
		pid_t tgid = ev == PTRACE_EVENT_CLONE ? read_tgid(tid) : tid;
		c = task_add(e, tid, tgid);
		if (!c)
			return;
	}
	thread = c->tgid != c->tid;
	rec_fork(e, c, parent, thread);
	if (thread && e->det) {
		bool known = false;
		for (size_t i = 0; i < e->n_threaded; i++)
			known |= e->threaded[i] == c->tgid;
		if (!known) {
			if (e->n_threaded == e->cap_threaded) {
				size_t ncap = e->cap_threaded ? e->cap_threaded * 2 : 8;
				pid_t *n = realloc(e->threaded, ncap * sizeof(*n));
				if (n)
					e->threaded = n, e->cap_threaded = ncap;
			}
			if (e->n_threaded < e->cap_threaded)
				e->threaded[e->n_threaded++] = c->tgid;
			uint32_t v[2] = {(uint32_t)c->tgid, (uint32_t)c->tid};
			long nr = ptrace(PTRACE_PEEKUSER, parent->tid,
					 offsetof(struct user_regs_struct, orig_rax), 0);
			rec_determ(e, parent, TRACE_DETERM_CONCURRENCY, (int)nr, v, sizeof(v));
		}
	}
	if (e->draining && e->det)
		(void)kill(c->tid, SIGKILL);
}

/* ---- signals ---- */

static bool emulate_rdtsc(engine *e, task *t)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0 || si.si_code != SI_KERNEL)
		return false;
	struct user_regs_struct r;
	uint8_t code[3];
	bool rdtscp;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0 || mem_read(t->tid, r.rip, code, sizeof(code)) < 2)
		return false;
	int len = determ_tsc_insn(code, sizeof(code), &rdtscp);
	if (!len)
		return false;
	uint64_t tsc = determ_clock_tsc(&e->clk);
	r.rax = (uint32_t)tsc;
	r.rdx = tsc >> 32;
	if (rdtscp)
		r.rcx = 0; /* IA32_TSC_AUX: CPU 0, node 0 */
	r.rip += (unsigned)len;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0)
		return false;
	e->res.emulated++;
	rec_determ(e, t, TRACE_DETERM_RDTSC, -1, &tsc, sizeof(tsc));
	return true;
}

static void detach(engine *e, task *t, int sig)
{
	if (t->in_sys)
		rec_syscall(e, t, false, 0);
	(void)ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)sig);
	task_remove(e, t);
}

static void on_stop(engine *e, task *t, int status)
{
	int sig = WSTOPSIG(status), ev = (unsigned)status >> 16;
	bool delivery = sig != (SIGTRAP | 0x80) && ev == 0;
	e->res.stops++;
	if (e->draining && !e->det) {
		detach(e, t, delivery ? sig : 0);
		return;
	}
	if (sig == (SIGTRAP | 0x80)) {
		on_syscall_stop(e, t);
		resume(e, t, 0);
		return;
	}
	if (ev == PTRACE_EVENT_STOP) {
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			/* Group stop: stay stopped, but keep reporting (SIGCONT, events). */
			if (ptrace(PTRACE_LISTEN, t->tid, 0, 0) < 0 && errno != ESRCH)
				log_debug("ptrace engine: listen %d: %m", t->tid);
		} else
			resume(e, t, 0); /* the first stop of a new task, or our PTRACE_INTERRUPT */
		return;
	}
	if (ev) {
		switch (ev) {
		case PTRACE_EVENT_SECCOMP:
			if (e->det)
				on_seccomp(e, t);
			break;
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
		case PTRACE_EVENT_CLONE:
			on_new_task(e, t, ev);
			break;
		case PTRACE_EVENT_EXEC:
			on_exec(e, t);
			break;
		default:
			break;
		}
		resume(e, t, 0);
		return;
	}
	if (sig == SIGSEGV && e->det && emulate_rdtsc(e, t)) {
		resume(e, t, 0);
		return;
	}
	resume(e, t, sig);
}

static void begin_drain(engine *e)
{
	e->draining = true;
	for (size_t i = 0; i < e->n_tasks; i++) {
		task *t = e->tasks[i];
		bool first = true;
		for (size_t k = 0; k < i; k++)
			first &= e->tasks[k]->tgid != t->tgid;
		e->res.leftovers += first;
		if (e->det) {
			if (first)
				(void)kill(t->tgid, SIGKILL);
		} else
			(void)ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
	}
}

static void on_wait(engine *e, pid_t pid, int status)
{
	task *t = task_find(e, pid);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (t) {
			if (t->in_sys)
				rec_syscall(e, t, false, 0);
			rec_exit(e, t->tgid, t->tid, status);
			if (t->tid == t->tgid)
				threaded_forget(e, t->tgid);
			task_remove(e, t);
		}
		if (pid == e->main_pid && !e->main_done) {
			e->main_done = true;
			e->main_status = status;
			begin_drain(e);
		}
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (!t) {
		/* A new task can report before its parent's fork event. */
		t = task_add(e, pid, read_tgid(pid));
		if (!t) {
			(void)ptrace(PTRACE_DETACH, pid, 0, 0);
			return;
		}
		if (e->draining && e->det)
			(void)kill(pid, SIGKILL);
	}
	on_stop(e, t, status);
}

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

static void notif_continue(engine *e, uint64_t id, int error)
{
	struct seccomp_notif_resp resp = {.id = id};
	if (error)
		resp.error = -error;
	else
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		log_debug("ptrace engine: notification reply: %m");
}

static void on_notif(engine *e)
{
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	if (ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return; /* ENOENT: the task left (a signal) before we looked */
	uint64_t t_recv = now_ns(CLOCK_MONOTONIC);
	e->res.stops++;
	int nr = req.data.nr;
	const uint64_t *a = (const uint64_t *)req.data.args;
	pid_t tid = (pid_t)req.pid;
	task *t = task_find(e, tid);
	int64_t val;
	if (nr != SYS_open && nr != SYS_openat && nr != SYS_openat2) {
		if (!answer(e, t, tid, nr, a, &val)) {
			notif_continue(e, req.id, 0);
			return;
		}
		struct seccomp_notif_resp resp = {
		    .id = req.id, .val = val >= 0 ? val : 0, .error = val < 0 ? (int)val : 0};
		if (ioctl(e->lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
			log_debug("ptrace engine: notification reply: %m");
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
		if (a[3] < 8 || mem_read(tid, a[2], &flags, 8) != 8) {
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
	    mem_read_str(tid, path_addr, path, sizeof(path), &trunc) < 0 || trunc ||
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
	uint64_t idx = e->n_urandom++;
	e->rs[e->n_rs++] = (rstream){p[1], DETERM_STREAM_URANDOM(idx), 0}; /* fed by the thread's next poll */
	if (t)
		t->emulated = true;
	e->res.emulated++;
	rec_determ_at(e, t, TRACE_DETERM_RANDOM, nr, &idx, sizeof(idx), t_recv);
}

/* ---- the loop ---- */

/* The notification thread. ptrace requests must come from the tracer
 * thread, but notifications need none, and a second thread lets the tracer
 * block in waitpid: waking up through poll and a signalfd for SIGCHLD, as a
 * single thread would have to, made every ptrace stop about three times
 * dearer. */
static void *notif_thread(void *arg)
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

static void notif_thread_wake(engine *e, bool stop)
{
	uint64_t one = 1;
	if (stop)
		__atomic_store_n(&e->stopping, true, __ATOMIC_RELEASE);
	(void)!write(e->wake_efd, &one, sizeof(one));
}

static int engine_loop(engine *e, sbx_err **err)
{
	while (!(e->main_done && e->n_tasks == 0)) {
		int status;
		pid_t pid = waitpid(-1, &status, __WALL);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				return 0;
			return err_errno(err, "waitpid");
		}
		pthread_mutex_lock(&e->mu);
		on_wait(e, pid, status);
		pthread_mutex_unlock(&e->mu);
	}
	return 0;
}

/* ---- the child ---- */

typedef struct child_msg {
	int kind; /* 1 setup failed, 2 exec failed, 3 here is the listener (SCM_RIGHTS), 4 ready to be traced
		   */
	int stage;
	int errnum;
} child_msg;

static const char *const child_stage[] = {"personality(ADDR_NO_RANDOMIZE)",
					  "sched_setaffinity",
					  "prctl(PR_SET_TSC)",
					  "prctl(PR_SET_DUMPABLE)",
					  "synchronize with the engine",
					  "prctl(PR_SET_NO_NEW_PRIVS)",
					  "build the seccomp program",
					  "seccomp(SET_MODE_FILTER, NEW_LISTENER)",
					  "send the listener"};

static int send_fd(int sock, const child_msg *m, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {(void *)m, sizeof(*m)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

_noreturn_ static void child_fail(int sock, int stage)
{
	child_msg m = {1, stage, errno};
	(void)!send(sock, &m, sizeof(m), MSG_NOSIGNAL);
	_exit(125);
}

typedef struct saved_sig {
	sigset_t mask;
	struct sigaction act[6];
} saved_sig;
static const int engine_sigs[6] = {SIGCHLD, SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP};

static void restore_signals(const saved_sig *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(engine_sigs); i++)
		(void)sigaction(engine_sigs[i], &s->act[i], NULL);
	(void)sigprocmask(SIG_SETMASK, &s->mask, NULL);
}

_noreturn_ static void child_main(const ptrace_opts *o, char **argv, char **envp, int sock,
				  const saved_sig *ss)
{
	int stage = 0;
	restore_signals(ss);
	if (o->deterministic) {
		int cur = personality(0xffffffff);
		if (cur < 0 || personality((unsigned long)cur | ADDR_NO_RANDOMIZE) < 0)
			child_fail(sock, stage);
		stage = 1;
		cpu_set_t set;
		if (sched_getaffinity(0, sizeof(set), &set) < 0)
			child_fail(sock, stage);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set)) {
				CPU_ZERO(&set);
				CPU_SET(c, &set);
				break;
			}
		if (sched_setaffinity(0, sizeof(set), &set) < 0)
			child_fail(sock, stage);
		umask(022);
		stage = 2;
		if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) < 0)
			child_fail(sock, stage);
	}
	/* Init is not dumpable, and neither is its fork until exec: the engine
	 * (no CAP_SYS_PTRACE) could not attach. This is the child's own mm. */
	stage = 3;
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		child_fail(sock, stage);
	stage = 4;
	child_msg ready = {4, 0, 0};
	char go;
	if (send(sock, &ready, sizeof(ready), MSG_NOSIGNAL) != (ssize_t)sizeof(ready) ||
	    RETRY_EINTR(read(sock, &go, 1)) != 1)
		child_fail(sock, stage);
	if (o->deterministic) {
		stage = 5;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			child_fail(sock, stage);
		stage = 6;
		struct sock_filter insns[DETERM_FILTER_MAX];
		int n = determ_filter_build(insns, ARRAY_SIZE(insns), o->hostname != NULL);
		if (n < 0) {
			errno = EINVAL;
			child_fail(sock, stage);
		}
		stage = 7;
		struct sock_fprog prog = {.len = (unsigned short)n, .filter = insns};
		int lfd = sys_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		if (lfd < 0)
			child_fail(sock, stage);
		stage = 8;
		child_msg m = {3, 0, 0};
		if (send_fd(sock, &m, lfd) < 0)
			child_fail(sock, stage);
		safe_close(lfd);
	}
	if (o->record_fd > 2)
		safe_close(o->record_fd);
	/* The engine resumes us from this stop with PTRACE_SYSCALL or PTRACE_CONT. */
	(void)kill(getpid(), SIGSTOP);
	extern char **environ;
	environ = envp;
	execvp(argv[0], argv);
	child_msg m = {2, 0, errno};
	(void)!send(sock, &m, sizeof(m), MSG_NOSIGNAL);
	_exit(m.errnum == ENOENT ? 127 : 126);
}

/* ---- setup ---- */

/* One pid used and given back. vfork: the engine's copy of init's address
 * space need not be duplicated for a child that only exits. */
__attribute__((noinline)) static pid_t burn_one(void)
{
	pid_t p = vfork();
	if (p == 0)
		_exit(0);
	if (p > 0)
		(void)RETRY_EINTR(waitpid(p, NULL, 0));
	return p;
}

static int burn_pids(pid_t want, sbx_err **err)
{
	for (;;) {
		char buf[32] = "";
		long last = -1;
		_cleanup_close_ int fd = open("/proc/sys/kernel/ns_last_pid", O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0)
			last = strtol(buf, NULL, 10);
		if (last >= 0) {
			if (last + 1 == want)
				return 0;
			if (last >= want)
				return err_set(
				    err, SBX_E_CONFLICT, ERANGE,
				    "cannot give the command pid %d: pid %ld was already handed out",
				    (int)want, last);
		}
		pid_t p = burn_one();
		if (p < 0)
			return err_errno(err, "fork (to reach pid %d)", (int)want);
		if (last < 0) { /* no /proc: judge by what fork returned */
			if (p + 1 == want)
				return 0;
			if (p >= want)
				return err_set(
				    err, SBX_E_CONFLICT, ERANGE,
				    "cannot give the command pid %d: pid %d was already handed out",
				    (int)want, (int)p);
		}
	}
}

static int recv_listener(int sock, int *ret_fd)
{
	child_msg m;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&m, sizeof(m)};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	ssize_t n = RETRY_EINTR(recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC));
	if (n != (ssize_t)sizeof(m) || m.kind != 3)
		return -EPROTO;
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -EPROTO;
	memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	return 0;
}

static void engine_free(engine *e)
{
	for (size_t i = 0; i < e->n_tasks; i++)
		free(e->tasks[i]);
	free(e->tasks);
	while (e->n_rs > 0)
		rs_close(e, e->n_rs - 1);
	free(e->rs);
	free(e->threaded);
	free(e->rbuf);
	determ_timemap_free(&e->tmap);
	safe_close(e->lfd);
	safe_close(e->wake_efd);
}

/* The real start for the file-time mapping: the first tick of the coarse
 * clock (the one file systems stamp with) after tick0, taken before the
 * command was forked. Waiting for it (at most 4 ms with HZ=250, mostly
 * spent setting up the child anyway) separates the files stamped before
 * the run (<= tick0) from those of the run (>= this tick); "now" instead
 * would leave files made in the same tick just before the run on either
 * side, by chance. */
static int64_t start_tick(uint64_t tick0)
{
	struct timespec nap = {0, 200000};
	for (int i = 0; i < 100 && now_ns(CLOCK_REALTIME_COARSE) == tick0; i++)
		nanosleep(&nap, NULL);
	return (int64_t)now_ns(CLOCK_REALTIME_COARSE);
}

static int engine_start(engine *e, char **argv, char **envp, const saved_sig *ss, uint64_t tick0, int *sock,
			sbx_err **err)
{
	const ptrace_opts *o = e->o;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return err_errno(err, "socketpair");
	pid_t pid = fork();
	if (pid < 0) {
		int r = err_errno(err, "fork");
		safe_close(sp[0]);
		safe_close(sp[1]);
		return r;
	}
	if (pid == 0) {
		safe_close(sp[0]);
		child_main(o, argv, envp, sp[1], ss);
	}
	safe_close(sp[1]);
	*sock = sp[0];
	e->main_pid = e->res.pid = pid;
	/* Attach once the child is dumpable again (until then only CAP_SYS_PTRACE could). */
	child_msg m = {0};
	if (RETRY_EINTR(recv(sp[0], &m, sizeof(m), 0)) != (ssize_t)sizeof(m) || m.kind != 4) {
		int st = 0;
		(void)kill(pid, SIGKILL);
		(void)RETRY_EINTR(waitpid(pid, &st, 0));
		if (m.kind == 1 && m.stage >= 0 && m.stage < (int)ARRAY_SIZE(child_stage))
			return err_errnum(err, m.errnum, "set up the traced command: %s",
					  child_stage[m.stage]);
		return err_set(err, SBX_E_INTERNAL, 0, "the traced command died before exec (status %#x)",
			       st);
	}
	long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
		    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL |
		    (o->deterministic ? PTRACE_O_TRACESECCOMP : 0);
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)opts) < 0) {
		int r =
		    err_errno(err, "ptrace the command (PTRACE_SEIZE; is ptrace denied by seccomp or Yama?)");
		(void)kill(pid, SIGKILL);
		(void)RETRY_EINTR(waitpid(pid, NULL, 0));
		return r;
	}
	if (write(sp[0], "g", 1) != 1) {
		int r = err_errno(err, "start the command");
		(void)kill(pid, SIGKILL);
		(void)RETRY_EINTR(waitpid(pid, NULL, __WALL));
		return r;
	}
	for (;;) {
		int st;
		if (RETRY_EINTR(waitpid(pid, &st, __WALL)) < 0)
			return err_errno(err, "waitpid");
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			m = (child_msg){0};
			if (recv(sp[0], &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m) && m.kind == 1 &&
			    m.stage >= 0 && m.stage < (int)ARRAY_SIZE(child_stage))
				return err_errnum(err, m.errnum, "set up the traced command: %s",
						  child_stage[m.stage]);
			return err_set(err, SBX_E_INTERNAL, 0,
				       "the traced command died before exec (status %#x)", st);
		}
		if (WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP && ((unsigned)st >> 16) == 0)
			break; /* its kill(SIGSTOP): set up and about to exec */
		(void)ptrace(PTRACE_CONT, pid, 0, 0);
	}
	if (o->deterministic) {
		int lfd = -1, r = recv_listener(sp[0], &lfd);
		__atomic_store_n(&e->lfd, lfd, __ATOMIC_RELEASE);
		notif_thread_wake(e, false);
		if (r < 0) {
			(void)kill(pid, SIGKILL);
			(void)RETRY_EINTR(waitpid(pid, NULL, __WALL));
			return err_errnum(err, r, "receive the seccomp listener from the command");
		}
	}
	task *t = task_add(e, pid, pid);
	if (!t) {
		(void)kill(pid, SIGKILL);
		(void)RETRY_EINTR(waitpid(pid, NULL, __WALL));
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	if (e->det) {
		e->tmap.real_start = start_tick(tick0);
		struct stat pst;
		e->pseudo_dev[0] = stat("/proc/self", &pst) == 0 ? pst.st_dev : (dev_t)-1;
		e->pseudo_dev[1] = stat("/sys/kernel", &pst) == 0 ? pst.st_dev : (dev_t)-1;
	}
	resume(e, t, 0);
	return 0;
}

int ptrace_engine_run_ex(const ptrace_opts *o, char **argv, char **envp, ptrace_result *ret, sbx_err **err)
{
	if (!o || !argv || !argv[0] || !envp)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "ptrace engine: no command");
	if (o->record && o->record_fd < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "ptrace engine: recording needs a record fd");
	if (o->first_pid > 0 && o->first_pid > INT32_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "ptrace engine: invalid first pid %u",
			       o->first_pid);

	engine e = {.o = o,
		    .det = o->deterministic,
		    .rec = o->record,
		    .lfd = -1,
		    .wake_efd = -1,
		    .rfd = o->record_fd};
	e.clk.epoch_ns = o->epoch_ns;
	uint64_t tick0 = now_ns(CLOCK_REALTIME_COARSE);
	determ_rng_init(&e.rng, o->seed);
	if (e.rfd >= 0 && !(e.rbuf = malloc(REC_BUF)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");

	saved_sig ss;
	(void)sigprocmask(SIG_SETMASK, NULL, &ss.mask);
	for (size_t i = 0; i < ARRAY_SIZE(engine_sigs); i++) {
		/* SIGCHLD must not be SIG_IGN: the command would be reaped
		 * automatically and its status lost. */
		struct sigaction sa = {.sa_handler = engine_sigs[i] == SIGCHLD ? SIG_DFL : SIG_IGN};
		(void)sigaction(engine_sigs[i], &sa, &ss.act[i]);
	}
	pthread_mutex_init(&e.mu, NULL);
	_cleanup_close_ int sock = -1;
	int r = 0;
	/* Determinism runs the command on one CPU; the engine goes there too:
	 * every stop is a hand-over between the two, and a hand-over on one
	 * CPU costs less and varies less than one across CPUs (measured). */
	cpu_set_t aff_old;
	bool aff_set = false;
	if (e.det && sched_getaffinity(0, sizeof(aff_old), &aff_old) == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &aff_old)) {
				CPU_SET(c, &one);
				break;
			}
		aff_set = sched_setaffinity(0, sizeof(one), &one) == 0;
	}
	if (e.det && (e.wake_efd = eventfd(0, EFD_CLOEXEC)) < 0)
		r = err_errno(err, "eventfd");
	if (r >= 0 && e.det) {
		/* Started before the command is forked: the thread takes a pid
		 * (tid) too, and must not shift the command's or its children's. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay with the tracer thread */
		int k = pthread_create(&e.nthread, NULL, notif_thread, &e);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (k != 0)
			r = err_errnum(err, k, "start the notification thread");
		e.nthread_on = k == 0;
	}
	if (r >= 0 && o->first_pid > 0)
		r = burn_pids((pid_t)o->first_pid, err);
	if (r >= 0 && e.rfd >= 0) {
		struct trace_file_header h = {.magic = TRACE_MAGIC,
					      .version = TRACE_VERSION,
					      .arch = AUDIT_ARCH_X86_64,
					      .start_ns = now_ns(CLOCK_MONOTONIC),
					      .recorder = TRACE_REC_PTRACE};
		memcpy(e.rbuf, &h, sizeof(h));
		e.rlen = sizeof(h);
	}
	if (r >= 0)
		r = engine_start(&e, argv, envp, &ss, tick0, &sock, err);
	if (r >= 0)
		r = engine_loop(&e, err);
	if (e.nthread_on) {
		notif_thread_wake(&e, true);
		pthread_join(e.nthread, NULL);
	}
	if (r < 0) {
		/* Tracees die with us (PTRACE_O_EXITKILL only fires when we exit). */
		for (size_t i = 0; i < e.n_tasks; i++)
			(void)kill(e.tasks[i]->tid, SIGKILL);
		while (e.n_tasks > 0 && waitpid(-1, NULL, __WALL) > 0)
			;
	}
	rec_flush(&e);
	if (r >= 0 && sock >= 0) {
		child_msg m = {0};
		if (recv(sock, &m, sizeof(m), MSG_DONTWAIT) == (ssize_t)sizeof(m) && m.kind == 2)
			e.res.exec_errno = m.errnum;
	}
	e.res.status = e.main_status;
	e.res.record_errno = e.rerr;
	engine_free(&e);
	restore_signals(&ss);
	if (aff_set)
		(void)sched_setaffinity(0, sizeof(aff_old), &aff_old);
	pthread_mutex_destroy(&e.mu);
	if (r < 0)
		return r;
	if (ret)
		*ret = e.res;
	return 0;
}

#else /* !__x86_64__ */

int ptrace_engine_run_ex(const ptrace_opts *o, char **argv, char **envp, ptrace_result *ret, sbx_err **err)
{
	return err_set(err, SBX_E_UNAVAILABLE, ENOSYS, "the ptrace engine supports x86_64 only");
}

#endif

int ptrace_engine_run(const ptrace_opts *o, char **argv, char **envp, int *ret_status, sbx_err **err)
{
	ptrace_result res;
	int r = ptrace_engine_run_ex(o, argv, envp, &res, err);
	if (r < 0)
		return r;
	if (ret_status)
		*ret_status = res.status;
	return 0;
}
