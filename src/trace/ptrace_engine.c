/* The ptrace engine's stop loop: forks the command, PTRACE_SEIZEs it before
 * exec, follows its descendants, hands each stop to the recorder (records:
 * ptrace_rec.c) or to the determinism answers (determ_answer.c;
 * notifications in determ_notif.c). How each control works, where it stops,
 * and the virtual time invariant: docs/trace.md ("Virtual time", "The ptrace
 * engine"). */
#include "trace/ptrace_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <sys/user.h>
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

/* ---- tasks ---- */

task *ptrace_task_find(engine *e, pid_t tid)
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
void ptrace_skip_call(engine *e, task *t, int64_t ret)
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
void ptrace_set_arg(task *t, const uint64_t *args, int i, uint64_t v)
{
	if (t->n_saved < (int)ARRAY_SIZE(t->saved)) {
		t->saved[t->n_saved].off = arg_reg[i];
		t->saved[t->n_saved++].val = args[i];
	}
	(void)ptrace(PTRACE_POKEUSER, t->tid, arg_reg[i], (void *)v);
	t->xact = X_RESTORE;
	t->want_exit = true;
}

/* ---- syscall stops (record mode, and exit stops asked for above) ---- */

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
			ptrace_rec_syscall(e, t, false, 0);
		ptrace_rec_capture(e, t, (int)si.entry.nr, si.entry.args);
	} else if (si.op == PTRACE_SYSCALL_INFO_EXIT) {
		if (t->want_exit)
			determ_on_exit_action(e, t, t->nr, si.exit.rval);
		if (t->in_sys)
			ptrace_rec_syscall(e, t, true, si.exit.rval);
		t->emulated = false;
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
		task *old = ptrace_task_find(e, (pid_t)former);
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
		determ_on_exec(e, t);
	ptrace_rec_exec(e, t);
}

/* ---- new tasks ---- */

static void on_new_task(engine *e, task *parent, int ev)
{
	unsigned long msg = 0;
	if (ptrace(PTRACE_GETEVENTMSG, parent->tid, 0, &msg) < 0)
		return;
	pid_t tid = (pid_t)msg;
	bool thread = false;
	task *c = ptrace_task_find(e, tid);
	if (!c) {
		pid_t tgid = ev == PTRACE_EVENT_CLONE ? read_tgid(tid) : tid;
		c = task_add(e, tid, tgid);
		if (!c)
			return;
	}
	thread = c->tgid != c->tid;
	ptrace_rec_fork(e, c, parent, thread);
	if (e->det && !c->p) {
		/* Its clock starts from its parent's here, where the parent is
		 * stopped at the fork: a function of the parent's own events. */
		c->p = thread ? parent->p : determ_proc_fork(e, determ_proc_of(e, parent), c->tgid);
		if (c->held) {
			c->held = false;
			resume(e, c, 0);
		}
	}
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
			ptrace_rec_determ(e, parent, TRACE_DETERM_CONCURRENCY, (int)nr, v, sizeof(v));
		}
	}
	if (e->draining && e->det)
		(void)kill(c->tid, SIGKILL);
}

/* ---- signals ---- */

static void detach(engine *e, task *t, int sig)
{
	if (t->in_sys)
		ptrace_rec_syscall(e, t, false, 0);
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
		} else if (e->det && !t->p)
			t->held = true; /* a new process before its parent's fork event: see on_new_task */
		else
			resume(e, t, 0); /* the first stop of a new task, or our PTRACE_INTERRUPT */
		return;
	}
	if (ev) {
		switch (ev) {
		case PTRACE_EVENT_SECCOMP:
			if (e->det)
				determ_on_seccomp(e, t);
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
	if (sig == SIGSEGV && e->det && determ_emulate_rdtsc(e, t)) {
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
	task *t = ptrace_task_find(e, pid);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (t) {
			if (t->in_sys)
				ptrace_rec_syscall(e, t, false, 0);
			ptrace_rec_exit(e, t->tgid, t->tid, status);
			if (t->tid == t->tgid) {
				threaded_forget(e, t->tgid);
				if (t->p)
					t->p->dead =
					    true; /* the leader is reported last: the clock is final */
			}
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
		/* A new task can report before its parent's fork event. A new
		 * thread joins its process's clock now; a new process waits for
		 * that event to learn its parent's (on_stop holds it). */
		t = task_add(e, pid, read_tgid(pid));
		if (!t) {
			(void)ptrace(PTRACE_DETACH, pid, 0, 0);
			return;
		}
		if (e->det && t->tgid != t->tid)
			t->p = determ_proc_find(e, t->tgid);
		if (e->draining && e->det)
			(void)kill(pid, SIGKILL);
	}
	on_stop(e, t, status);
}

/* ---- the loop ---- */

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
		int n = determ_filter_build(insns, ARRAY_SIZE(insns),
					    (o->hostname ? DETERM_FILTER_UNAME : 0) |
						(o->inodes ? DETERM_FILTER_INODES : 0));
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
	determ_rs_close_all(e);
	determ_procs_free(e);
	free(e->threaded);
	free(e->rbuf);
	determ_timemap_free(&e->tmap);
	determ_inomap_free(&e->imap);
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
	for (int i = 0; i < 100 && engine_now_ns(CLOCK_REALTIME_COARSE) == tick0; i++)
		nanosleep(&nap, NULL);
	return (int64_t)engine_now_ns(CLOCK_REALTIME_COARSE);
}

/* The command's child killed before its exec by a signal that was not ours
 * (one sent to its process group: sbx run forwards its SIGINT/SIGTERM,
 * docs/runtime.md): that is how the command ended, not a failure. */
static bool died_of_signal(engine *e, int st)
{
	if (!WIFSIGNALED(st) || WTERMSIG(st) == SIGKILL)
		return false;
	e->main_status = st;
	return true;
}

/* 0: started; 1: the command ended before its exec (died_of_signal). */
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
		if (died_of_signal(e, st))
			return 1;
		return err_set(err, SBX_E_INTERNAL, 0, "the traced command died before exec (status %#x)",
			       st);
	}
	long opts = PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
		    PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL |
		    (o->deterministic ? PTRACE_O_TRACESECCOMP : 0);
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)opts) < 0) {
		int r =
		    err_errno(err, "ptrace the command (PTRACE_SEIZE; is ptrace denied by seccomp or Yama?)");
		int st = 0;
		(void)kill(pid, SIGKILL);
		(void)RETRY_EINTR(waitpid(pid, &st, 0));
		if (died_of_signal(e, st)) {
			sbx_err_free(TAKE_PTR(*err));
			return 1;
		}
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
			if (died_of_signal(e, st))
				return 1;
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
		determ_notif_wake(e, false);
		if (r < 0) {
			(void)kill(pid, SIGKILL);
			(void)RETRY_EINTR(waitpid(pid, NULL, __WALL));
			return err_errnum(err, r, "receive the seccomp listener from the command");
		}
	}
	task *t = task_add(e, pid, pid);
	if (t && e->det && !(t->p = determ_proc_root(e, pid))) {
		task_remove(e, t);
		t = NULL;
	}
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
	uint64_t tick0 = engine_now_ns(CLOCK_REALTIME_COARSE);
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
		int k = pthread_create(&e.nthread, NULL, determ_notif_thread, &e);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (k != 0)
			r = err_errnum(err, k, "start the notification thread");
		e.nthread_on = k == 0;
	}
	if (r >= 0 && o->first_pid > 0)
		r = determ_pid_reach((pid_t)o->first_pid, err);
	if (r >= 0 && e.rfd >= 0) {
		struct trace_file_header h = {.magic = TRACE_MAGIC,
					      .version = TRACE_VERSION,
					      .arch = AUDIT_ARCH_X86_64,
					      .start_ns = engine_now_ns(CLOCK_MONOTONIC),
					      .recorder = TRACE_REC_PTRACE};
		memcpy(e.rbuf, &h, sizeof(h));
		e.rlen = sizeof(h);
	}
	if (r >= 0)
		r = engine_start(&e, argv, envp, &ss, tick0, &sock, err);
	if (r == 0)
		r = engine_loop(&e, err);
	else if (r > 0)
		r = 0;
	if (e.nthread_on) {
		determ_notif_wake(&e, true);
		pthread_join(e.nthread, NULL);
	}
	if (r < 0) {
		/* Tracees die with us (PTRACE_O_EXITKILL only fires when we exit). */
		for (size_t i = 0; i < e.n_tasks; i++)
			(void)kill(e.tasks[i]->tid, SIGKILL);
		while (e.n_tasks > 0 && waitpid(-1, NULL, __WALL) > 0)
			;
	}
	ptrace_rec_flush(&e);
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
