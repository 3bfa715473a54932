/* The ptrace engine: runs a command as a traced child and
 *  - applies determinism controls (virtual clocks and TSC, seeded getrandom,
 *    /dev/urandom and AT_RANDOM, a fixed nodename, virtual file times, the
 *    procfs files of uptime, load and the kernel's UUIDs (determ_procfs.h),
 *    no ASLR, one CPU, sequential pids), and/or
 *  - records every syscall into the trace stream (trace_format.h): the
 *    fallback recorder when eBPF is unavailable (rootless). It costs two
 *    ptrace stops per syscall (~15 us together on the development VM), so a
 *    syscall-heavy command runs many times slower than under eBPF.
 * It runs inside the environment without privileges: tracing one's own child
 * needs none (no CAP_SYS_PTRACE, no CAP_SYS_ADMIN), and the seccomp filter it
 * installs in the command only needs no_new_privs. x86_64 only (other
 * architectures get an `unavailable` error).
 *
 * How each control works and where it stops is written in docs/trace.md
 * ("The ptrace engine", "Virtual time"); the pure pieces (virtual clock, file-time mapping, PRNG,
 * vDSO parsing, seccomp program) live in determ_*.c and vdso.c and are
 * declared at the end of this header for the unit tests. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sbx.h"
#include "trace/trace_format.h"

typedef struct ptrace_opts {
	/* determinism controls */
	bool deterministic;
	/* record EVERY syscall as TR_SYSCALL (+ TR_FORK/TR_EXEC/TR_EXIT): two
	 * ptrace stops per syscall, ~15 us per call here (slow fallback) */
	bool record;
	/* where records go (a header first). In deterministic mode TR_DETERM
	 * records go here whenever >= 0, with TR_FORK/TR_EXEC/TR_EXIT (free:
	 * those stop anyway) but TR_SYSCALL only with `record` */
	int record_fd;
	uint64_t epoch_ns;    /* virtual CLOCK_REALTIME at start, ns since 1970 */
	uint64_t seed;	      /* seeds getrandom, /dev/urandom, /dev/random and AT_RANDOM */
	uint32_t first_pid;   /* nonzero: fork-and-reap dummies first until the command gets this pid */
	const char *hostname; /* deterministic nodename reported by uname(), NULL = leave */
	/* virtual inode and device numbers in stat results and directory
	 * listings (determ_inode.h); traces recorded before they existed replay
	 * without, as they were recorded */
	bool inodes;
} ptrace_opts;
/* clang-format off */
#define PTRACE_OPTS_INIT {.record_fd = -1}
/* clang-format on */

typedef struct ptrace_result {
	int status;	    /* the command's wait status (as from waitpid) */
	pid_t pid;	    /* the pid the command got (for the trace manifest) */
	int exec_errno;	    /* nonzero: exec failed with it (status is then exit 127 for ENOENT, else 126) */
	uint64_t stops;	    /* ptrace stops and seccomp notifications handled */
	uint64_t emulated;  /* syscalls (and rdtsc) the engine answered */
	uint64_t records;   /* records written to record_fd */
	uint32_t leftovers; /* processes still alive when the command exited (detached, or killed: see .c) */
	int record_errno;   /* nonzero: writing records failed with it (the stream is cut short) */
} ptrace_result;

/* Forks argv (execvp semantics, envp as the environment) as a traced child of
 * the caller, follows all its descendants (fork, vfork, clone, threads,
 * exec), applies the options and returns once the command (the first
 * process) exited, with its wait status in *ret_status. The caller has set up
 * stdio, cwd and rlimits. If exec fails, *ret_status is exit 127 (ENOENT) or
 * 126, as from a shell. Errors are the engine's own (ptrace refused, bad
 * options, first_pid already taken). The caller's signal mask and
 * dispositions are restored before returning. */
int ptrace_engine_run(const ptrace_opts *o, char **argv, char **envp, int *ret_status, sbx_err **err);
/* The same with everything the engine knows about the run (the command's pid). */
int ptrace_engine_run_ex(const ptrace_opts *o, char **argv, char **envp, ptrace_result *ret, sbx_err **err);

/* Makes the next pid this pid namespace hands out `want` (determ_pid.c): by
 * moving its counter (/proc/sys/kernel/ns_last_pid, which needs
 * CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN over the namespace), else by using
 * up pids until it comes. Errors say which way it failed: `want` in use, out
 * of range, or already passed with the counter not movable (more processes
 * ran before the command than when recording). Racy against other forks in
 * the namespace, as any pid reproduction is. */
int determ_pid_reach(pid_t want, sbx_err **err);

/* TR_DETERM kinds and values: trace_format.h. */

/* ---- Pure pieces, exposed for the unit tests ---- */

/* Virtual clock (determ_clock.c). Every read advances it by DETERM_TICK_NS,
 * so two reads never return the same value and time visibly "passes". */
#define DETERM_TICK_NS 1000ULL		     /* +1 us per clock read, rdtsc, new file time */
#define DETERM_MONO_BASE_NS 1000000000000ULL /* virtual CLOCK_MONOTONIC at start: 1000 s "uptime" */
#define DETERM_COARSE_RES_NS 4000000ULL	     /* clock_getres of *_COARSE (HZ=250) */
#define DETERM_SQUEEZE_NS 86400000000000LL   /* file times later than epoch-1d squeezed below the epoch */
#define DETERM_EPOCH_SLACK_NS                                                                                \
	60000000000LL /* an epoch less than this after the real start counts as before it */
enum { DETERM_CLK_NONE = 0, DETERM_CLK_REAL, DETERM_CLK_MONO, DETERM_CLK_CPU };
typedef struct determ_clock {
	uint64_t epoch_ns; /* virtual CLOCK_REALTIME at vt = 0 */
	uint64_t vt;	   /* virtual ns elapsed since start */
} determ_clock;
/* The kind of a clockid_t (as the syscall sees it, sign-extended from 32 bits); NONE = not emulated
 * (invalid ids and fd-based dynamic clocks go to the kernel). */
int determ_clock_kind(int64_t clockid);
/* The clock's current value without advancing it. */
uint64_t determ_clock_peek(const determ_clock *c, int kind);
/* Advances by one tick, then returns the clock's value. */
uint64_t determ_clock_read(determ_clock *c, int kind);
/* clock_getres: 1 ns, or DETERM_COARSE_RES_NS for the coarse clocks. */
uint64_t determ_clock_res(int64_t clockid);
/* A virtual TSC (1 GHz, from the monotonic clock), advancing by one tick. */
uint64_t determ_clock_tsc(determ_clock *c);
/* Moves the clock forward to `kind` reading `target` (no-op if already past). */
void determ_clock_advance_to(determ_clock *c, int kind, uint64_t target);
/* CPU accounting (determ_clock.c): a process's CPU time is its virtual time
 * t (all of it user time, as the CPU clocks read it); its children's is the
 * sum, over the children it reaped, of what each would have reported for
 * itself and its own reaped children at its end (the kernel's cutime). Fills
 * a struct rusage with utime = cpu_ns in microseconds and everything else 0
 * (stime, maxrss, faults, swaps, block I/O, messages, signals, context
 * switches): none of them is a function of the program's events alone. */
struct rusage;
void determ_rusage(struct rusage *ru, uint64_t cpu_ns);
/* rdtsc/rdtscp at these bytes: returns the instruction length (2 or 3) and sets *rdtscp; 0 if neither. */
int determ_tsc_insn(const uint8_t *code, size_t n, bool *rdtscp);

/* File times (determ_clock.c). A time at or after real_start (the run's real
 * start, CLOCK_REALTIME_COARSE since file systems stamp with the coarse clock)
 * is given, the first time its (dev, ino, time) is seen, the observing
 * process's virtual time (without advancing its clock), and keeps it for the
 * rest of the run. Earlier
 * times are reported unchanged, except when the epoch lies before real_start
 * (or less than DETERM_EPOCH_SLACK_NS after it: a recording's epoch is "now",
 * taken by another process a few ms from real_start and on another clock,
 * so which side it falls on is timing; its replays, later, always squeeze):
 * then those later than epoch - DETERM_SQUEEZE_NS would be in the virtual
 * future ("clock skew" in make), so they are squeezed, order-preserving and
 * independent of real_start, into (epoch - DETERM_SQUEEZE_NS, epoch). */
typedef struct determ_timemap {
	int64_t real_start;
	struct determ_time_ent *ents; /* open addressing */
	size_t n, cap;
} determ_timemap;
/* Maps the times of one stat result (ns since 1970) in place; all of them
 * seen for the first time get one virtual time (the clock's, unchanged), so
 * the count of distinct real times (atime and mtime a tick apart or not) does
 * not show. ver (NULL = all 0) is part of each time's key: the engine passes
 * the file size for mtime and ctime, so a file that changed size within one
 * kernel tick (the same real time, on kernels without fine-grained file
 * times) still reads as changed, whether or not the tick passed. Returns how
 * many changed. */
int determ_time_map_set(determ_timemap *m, const determ_clock *c, uint64_t dev, uint64_t ino,
			const uint64_t *ver, int64_t *t, int n);
/* The same for one time. *changed tells whether the result differs. */
int64_t determ_time_map(determ_timemap *m, const determ_clock *c, uint64_t dev, uint64_t ino, int64_t t,
			bool *changed);
/* The order-preserving squeeze of times after epoch - DETERM_SQUEEZE_NS. */
int64_t determ_time_squeeze(int64_t t, int64_t epoch);
void determ_timemap_free(determ_timemap *m);

/* Seeded byte streams (determ_rand.c): ChaCha20 keyed by the seed (expanded
 * with splitmix64), one stream per id, addressable by byte position, so what
 * a process gets depends only on the seed, the stream and the position.
 * Streams belong to a process, named by its place in the fork tree (root 0,
 * child = determ_proc_child_id(parent, parent's fork count)), never by the
 * order in which processes happen to call: */
#define DETERM_STREAM_GETRANDOM 0ULL /* getrandom() of the process, in its call order */
#define DETERM_STREAM_URANDOM 1ULL   /* index i: the process's i-th open of /dev/urandom or /dev/random */
#define DETERM_STREAM_AT_RANDOM 2ULL /* index i: AT_RANDOM of the process's i-th exec */
#define DETERM_STREAM_PROC_UUID 3ULL /* index i: the process's i-th open of /proc/sys/kernel/random/uuid */
#define DETERM_STREAM_BOOT_ID 4ULL   /* process 0, index 0: /proc/sys/kernel/random/boot_id of the run */
/* The stream of (process id, kind, index). The root's are 0, 1 + i and
 * (kind - 1) * 2^40 + i for kind >= 2; any other process's have the top bit
 * set, so none collide. */
uint64_t determ_stream(uint64_t proc_id, uint64_t kind, uint64_t index);
/* The id of the n-th child (n from 0) a process with id `parent` forks; never 0. */
uint64_t determ_proc_child_id(uint64_t parent, uint64_t n);
typedef struct determ_rng {
	uint32_t key[8];
} determ_rng;
void determ_rng_init(determ_rng *r, uint64_t seed);
void determ_rng_read(const determ_rng *r, uint64_t stream, uint64_t pos, void *buf, size_t n);
/* The raw ChaCha20 block function (RFC 8439 with a 64-bit counter in words 12-13, nonce in 14-15). */
void determ_chacha20_block(const uint32_t key[8], uint64_t counter, uint64_t nonce, uint8_t out[64]);

/* The seccomp program installed in the command (determ_filter.c): USER_NOTIF
 * for the calls answered from values alone (clocks, getrandom, getcpu,
 * sysinfo, nanosleep) and for open/openat/openat2 (so /dev/urandom and the
 * procfs files of determ_procfs.h can be answered with an fd, ADDFD); TRACE
 * for the calls fixed up at their exit (stat family, uname with
 * DETERM_FILTER_UNAME, getdents64/getdents, unlink/rmdir/rename with DETERM_FILTER_INODES) or whose
 * arguments change (clock_nanosleep, absolute futex/timerfd timeouts); ERRNO
 * ENOSYS for rseq (keeps the CPU number virtual); ALLOW for the rest and for
 * other ABIs (sbx's own filter kills those). Returns the length, or -1 if
 * `cap` is too small. */
struct sock_filter;
#define DETERM_FILTER_UNAME 0x1u  /* uname stops (o->hostname) */
#define DETERM_FILTER_INODES 0x2u /* directory reads and removals stop (o->inodes) */
int determ_filter_build(struct sock_filter *out, size_t cap, unsigned flags);
#define DETERM_FILTER_MAX 96
