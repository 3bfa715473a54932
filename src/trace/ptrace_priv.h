/* The ptrace engine's private state, shared by its four files:
 *   ptrace_engine.c   the stop loop: fork, attach, follow tasks
 *   ptrace_rec.c      tracee memory, a call's arguments, the records
 *   determ_answer.c   determinism answers at ptrace stops (clocks, sleeps,
 *                     timeouts, stat times, uname, waits, rdtsc, exec)
 *   determ_notif.c    the seccomp-notification thread (clocks, getrandom,
 *                     getcpu, /dev/urandom opens, the procfs files of
 *                     determ_procfs.h)
 * How it all works: docs/trace.md, "The ptrace engine". x86_64 only. */
#pragma once
#if defined(__x86_64__)
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "trace/determ_inode.h"
#include "trace/determ_procfs.h"
#include "trace/ptrace_engine.h"

#define REC_BUF 65536
#define SCRATCH_BELOW_SP 512 /* past the 128-byte red zone, with room for what we write */
#define RS_MSG 65536	     /* one /dev/urandom read returns at most this much (one message) */

enum xact { X_NONE, X_RESTORE, X_STAT, X_STATX, X_UNAME, X_WAIT, X_DIRENTS, X_REMOVE };

/* One process of the command under determinism: what its virtual clock and
 * random streams are a function of. Invariant (docs/trace.md, "Virtual
 * time"): every field changes only at the process's own deterministic events
 * (its clock reads, sleeps, timeouts, forks, execs, the waits that reap its
 * children), never at events of other processes or at the engine's timing. */
typedef struct dproc {
	pid_t tgid;
	bool dead;	   /* its last task exited: clk is final (a waiting parent joins it) */
	determ_clock clk;  /* its virtual clock; a child starts from its parent's at the fork */
	uint64_t cvt;	   /* its reaped children's CPU time (each one's t + cvt at its end): cutime */
	uint64_t start_vt; /* t when it started (its parent's, after the fork's tick): starttime */
	uint64_t id;	   /* its place in the fork tree: a function of the parents' fork counts */
	uint64_t n_forks, n_exec, n_urandom, rand_pos;
	uint64_t n_uuid; /* opens of /proc/sys/kernel/random/uuid answered */
} dproc;

typedef struct task {
	pid_t tid, tgid;
	dproc *p;	     /* determinism: its process (NULL until the creating fork event is seen) */
	bool held;	     /* determinism: first stop seen before its parent's fork event; resumed there */
	bool in_sys;	     /* record: entry seen, exit not yet */
	bool emulated;	     /* the current call was answered by the engine */
	bool want_exit;	     /* stop at this call's exit (PTRACE_SYSCALL instead of PTRACE_CONT) */
	enum xact xact;	     /* what to do at that exit */
	uint64_t xaddr;	     /* the call's result buffer */
	uint64_t xrus;	     /* X_WAIT: the struct rusage wait4/waitid fills (0: none) */
	int xfd;	     /* X_DIRENTS: the directory read */
	uint64_t xdev, xino; /* X_REMOVE: the file whose last name goes, if the call succeeds */
	int xclk;	     /* X_RESTORE: on ETIMEDOUT advance this clock to xtarget */
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
	dproc **procs; /* determinism: live processes, and dead ones not yet reaped */
	size_t n_procs, cap_procs;
	dproc stray; /* a caller the engine does not know (should not happen): its own clock */
	determ_timemap tmap;
	dev_t pseudo_dev[2]; /* procfs and sysfs: their inode times are when the kernel made the inode */
	determ_inomap imap;  /* o->inodes: virtual inode and device numbers */
	determ_rng rng;
	int lfd;	   /* the seccomp listener (determinism) */
	int wake_efd;	   /* wakes the notification thread: the listener arrived, or stop */
	bool stopping;	   /* (atomic) the notification thread is to finish */
	pthread_t nthread; /* answers notifications and feeds /dev/urandom streams */
	bool nthread_on;
	pthread_mutex_t mu; /* the tracer thread holds it while handling a stop, the other while answering */
	rstream *rs;	    /* notification thread only */
	size_t n_rs, cap_rs;
	struct {
		bool init;		 /* notification thread only: opened on the first candidate path */
		int fd[DETERM_PROCFS_N]; /* O_PATH, kept open (pins a sysctl's inode): -1 = none */
		dev_t dev[DETERM_PROCFS_N];
		ino_t ino[DETERM_PROCFS_N];
	} pfs;		 /* the engine's own view of each determ_procfs.h kind's file */
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

static inline uint64_t engine_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ptrace_rec.c: tracee memory, a call's arguments, records. */
ssize_t ptrace_mem_read(pid_t tid, uint64_t addr, void *buf, size_t n);
int ptrace_mem_write(pid_t tid, uint64_t addr, const void *buf, size_t n);
int ptrace_mem_read_str(pid_t tid, uint64_t addr, char *buf, size_t cap, bool *trunc);
/* `path` as the tracee would open it, through its root, cwd or dirfd (a /proc path). */
void tracee_path(char *full, size_t cap, pid_t tid, int dirfd, const char *path);
/* Writes out the buffered records (an error is kept in e->rerr). */
void ptrace_rec_flush(engine *e);
void ptrace_rec_determ_at(engine *e, const task *t, uint32_t kind, int nr, const void *val, size_t len,
			  uint64_t ts);
void ptrace_rec_determ(engine *e, const task *t, uint32_t kind, int nr, const void *val, size_t len);
/* The call t is entering (its number, arguments, time, string arguments);
 * t->in_sys until ptrace_rec_syscall writes it. */
void ptrace_rec_capture(engine *e, task *t, int nr, const uint64_t *args);
void ptrace_rec_syscall(engine *e, task *t, bool has_ret, int64_t ret);
void ptrace_rec_fork(engine *e, const task *child, const task *parent, bool thread);
void ptrace_rec_exit(engine *e, pid_t tgid, pid_t tid, int status);
void ptrace_rec_exec(engine *e, const task *t);

/* ptrace_engine.c: tasks, register edits. */
task *ptrace_task_find(engine *e, pid_t tid);
void ptrace_skip_call(engine *e, task *t, int64_t ret);
void ptrace_set_arg(task *t, const uint64_t *args, int i, uint64_t v);

/* determ_answer.c: the process table and the answers given at ptrace stops. */
dproc *determ_proc_root(engine *e, pid_t pid);
/* A new process (fork/vfork/clone without CLONE_THREAD) of `parent`: ticks
 * the parent's clock (the fork is its event) and starts the child's there. */
dproc *determ_proc_fork(engine *e, dproc *parent, pid_t child);
dproc *determ_proc_find(engine *e, pid_t tgid);
/* The process of a task, or the stray one. */
dproc *determ_proc_of(engine *e, const task *t);
void determ_procs_free(engine *e);
void determ_on_seccomp(engine *e, task *t);
void determ_on_exit_action(engine *e, task *t, int nr, int64_t rval);
void determ_on_exec(engine *e, task *t);
bool determ_emulate_rdtsc(engine *e, task *t);
/* The calls answered from values alone (determ_notif.c answers them as
 * notifications; a seccomp stop works too): true with the result in *ret. */
bool determ_answer(engine *e, task *t, pid_t tid, int nr, const uint64_t *a, int64_t *ret);

/* determ_notif.c: the notification thread. */
void *determ_notif_thread(void *arg);
void determ_notif_wake(engine *e, bool stop);
/* After the thread ended: closes the /dev/urandom streams and the procfs references. */
void determ_rs_close_all(engine *e);
#endif
