/* The trace event stream: the one binary format that both recorders (eBPF,
 * src/trace/bpf_rec.c; ptrace, src/trace/ptrace_engine.c) write and every
 * reader (show, stats, chrome export, replay comparison) reads.
 *
 * A stream is a header followed by records, all little-endian (x86_64 and
 * arm64 only), every record 8-byte aligned and self-sized, so a reader can
 * skip types it does not know. The stream is stored zstd-compressed in the
 * store (objects/sha256/..), referenced from the trace manifest (trace.h).
 *
 * This header is also included by the BPF program (clang -target bpf): it
 * uses only fixed-width types and no libc. */
#ifndef SBX_TRACE_FORMAT_H
#define SBX_TRACE_FORMAT_H

#ifndef __bpf__
#include <stdint.h>
#endif

#define TRACE_MAGIC "SBXTRC1\n" /* 8 bytes */
#define TRACE_VERSION 1

/* Stream header. */
struct trace_file_header {
	char magic[8];	   /* TRACE_MAGIC */
	uint32_t version;  /* TRACE_VERSION */
	uint32_t arch;	   /* AUDIT_ARCH_X86_64 (0xc000003e) or AUDIT_ARCH_AARCH64 */
	uint64_t start_ns; /* CLOCK_MONOTONIC at the start of recording */
	uint32_t recorder; /* TRACE_REC_BPF or TRACE_REC_PTRACE */
	uint32_t reserved;
};

enum { TRACE_REC_BPF = 1, TRACE_REC_PTRACE = 2 };

enum trace_rec_type {
	TR_SYSCALL = 1, /* one merged record per completed (or entered-only) syscall */
	TR_FORK = 2,	/* a new task (process or thread) */
	TR_EXEC = 3,	/* a successful execve: filename and argv */
	TR_EXIT = 4,	/* a task exited */
	TR_LOST = 5,	/* the recorder dropped `count` records here */
	TR_DETERM = 6,	/* determinism engine: a value it substituted (clock, random, ...) */
};

/* Common header of every record. */
struct trace_rec {
	uint16_t type;	/* enum trace_rec_type */
	uint16_t len;	/* total bytes of this record including this header, multiple of 8 */
	uint32_t pid;	/* tgid in the environment's pid namespace */
	uint32_t tid;	/* tid in the environment's pid namespace */
	uint32_t flags; /* type-specific */
	uint64_t ts_ns; /* CLOCK_MONOTONIC */
};

#define TRACE_MAX_STR 256 /* bytes captured per string argument, including NUL */

/* TR_SYSCALL flags */
#define TRS_HAS_RET 0x1	    /* ret is valid (the exit was seen) */
#define TRS_STR0_TRUNC 0x2  /* str0 was longer than TRACE_MAX_STR-1 */
#define TRS_STR1_TRUNC 0x4  /* str1 was longer than TRACE_MAX_STR-1 */
#define TRS_STR0_FAULT 0x8  /* str0 could not be read (bad pointer) */
#define TRS_STR1_FAULT 0x10 /* str1 could not be read */
#define TRS_EMULATED 0x20   /* the determinism engine answered this call instead of the kernel */
#define TRS_NO_ENTER                                                                                         \
	0x40 /* only the exit was seen: seccomp refused the call before sys_enter fires                      \
	      * (args and strings were read at the exit; enter_ns is the exit time) */

/* TR_SYSCALL: followed by str0 then str1 (each NUL-terminated, lengths in
 * str0_len/str1_len including the NUL, 0 when absent), padded to 8. Which
 * arguments are strings is given by trace_syscall_str_args() (trace_sys.h):
 * str0 is the first string argument, str1 the second. */
struct trace_syscall {
	struct trace_rec h;
	int32_t nr;	   /* native syscall number */
	uint16_t str0_len; /* bytes of str0 including NUL, 0 if none */
	uint16_t str1_len;
	int64_t ret; /* raw return value (-errno on failure), valid with TRS_HAS_RET */
	uint64_t args[6];
	uint64_t enter_ns; /* CLOCK_MONOTONIC at entry; h.ts_ns is the exit time */
};

/* TR_FORK: h.pid/h.tid = the new task; parent ids here. flags: 1 = thread */
struct trace_fork {
	struct trace_rec h;
	uint32_t parent_pid;
	uint32_t parent_tid;
};

/* TR_EXEC: followed by filename (NUL-terminated, filename_len bytes incl.
 * NUL) then argv as NUL-separated strings (argv_len bytes), padded to 8.
 * flags: 1 = argv truncated. */
struct trace_exec {
	struct trace_rec h;
	uint16_t filename_len;
	uint16_t argv_len;
	uint32_t argc; /* number of strings captured in argv */
};
#define TRACE_MAX_ARGV 1024 /* bytes of argv captured */

/* TR_EXIT: flags 1 = whole process (group leader's last thread). */
struct trace_exit {
	struct trace_rec h;
	int32_t status; /* wait status (exit code << 8 | signal) when known, else exit code */
	uint32_t reserved;
};

/* TR_LOST */
struct trace_lost {
	struct trace_rec h;
	uint64_t count;
};

/* TR_DETERM: what the engine substituted. kind: 1 clock, 2 random, 3 rdtsc,
 * 4 uname, 5 stat time, 6 getcpu, 7 concurrency (a process started a second
 * thread: interleavings are not controlled), 8 procfs (virtual content).
 * Followed by value_len bytes of the value given to the process (padded to 8). */
struct trace_determ {
	struct trace_rec h;
	uint32_t kind;
	uint32_t value_len;
	int32_t nr; /* syscall number it answered, -1 for rdtsc */
	uint32_t reserved;
};

/* TR_DETERM kinds and what the engine (ptrace_engine.c) puts in the value (nr is the syscall answered):
 *   1 clock   the struct it wrote: timespec (clock_gettime, clock_getres),
 *             timeval (gettimeofday), int64 seconds (time), struct tms (times),
 *             int64 uptime seconds (sysinfo)
 *   2 random  getrandom: the bytes (the first 256, TRACE_DETERM_TRUNC if more);
 *             open of /dev/[u]random: u64 index i (the process's i-th open;
 *             determ_stream(.., DETERM_STREAM_URANDOM, i)); AT_RANDOM: the 16 bytes, nr execve
 *   3 rdtsc   u64 TSC value, nr -1
 *   4 uname   the nodename
 *   5 stat    int64 ns times as written: atime, mtime, ctime (stat family) or
 *             atime, btime, ctime, mtime (statx; 0 when not in the mask)
 *   6 getcpu  u32 cpu, u32 node (both 0)
 *   7 concurrency: a process got its second thread, so its
 * interleavings (and everything that follows from them) are not
 * reproducible: replay can point at it. Value {u32 tgid, u32 new tid}, nr the
 * clone/clone3 that made it.
 *   8 procfs  an open of a procfs file of time, randomness or load answered
 *             with virtual content (determ_procfs.h): the path as the engine
 *             knows it ("/proc/uptime"), a NUL, then the content given; nr
 *             the open/openat/openat2 */
enum {
	TRACE_DETERM_CLOCK = 1,
	TRACE_DETERM_RANDOM = 2,
	TRACE_DETERM_RDTSC = 3,
	TRACE_DETERM_UNAME = 4,
	TRACE_DETERM_STAT = 5,
	TRACE_DETERM_GETCPU = 6,
};
#define TRACE_DETERM_CONCURRENCY 7
#define TRACE_DETERM_PROCFS 8
/*   9 inode   virtual inode and device numbers (determ_inode.h): u64 dev,
 *             u64 ino as written into a stat result; u64 d_ino of each record
 *             of a directory listing (getdents64, getdents), cut after 32 */
#define TRACE_DETERM_INODE 9
/* TR_DETERM h.flags: the value was longer than TRACE_DETERM_MAX_VALUE and is cut. */
#define TRACE_DETERM_TRUNC 0x1
#define TRACE_DETERM_MAX_VALUE 256

#if defined(__x86_64__) || defined(__TARGET_ARCH_x86)
#define TRACE_ARCH_NATIVE 0xc000003eu /* AUDIT_ARCH_X86_64 */
#elif defined(__aarch64__) || defined(__TARGET_ARCH_arm64)
#define TRACE_ARCH_NATIVE 0xc00000b7u /* AUDIT_ARCH_AARCH64 */
#endif

#define TRACE_ALIGN(n) (((n) + 7u) & ~7u)

#endif
