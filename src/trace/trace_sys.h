/* Syscall facts the tracer needs: names (from libseccomp's table, so every
 * architecture libseccomp knows is covered) and which arguments are paths or
 * other strings worth capturing. Pure; no I/O. */
#ifndef SBX_TRACE_SYS_H
#define SBX_TRACE_SYS_H

#include <stdbool.h>
#include <stdint.h>

#define TRACE_NR_MAX 512 /* native syscall numbers below this are tracked */

/* The syscall's name, or NULL when unknown. The string is static. */
const char *trace_sys_name(int nr);
/* The number of a syscall by name, or -1. */
int trace_sys_nr(const char *name);
/* Bit i set: argument i is a NUL-terminated string (a path, mostly). At most
 * two bits are set; the recorder captures the first two string arguments. */
uint8_t trace_sys_str_args(int nr);
/* Bit i set: argument i is a file descriptor (decoded as fd -> path). */
uint8_t trace_sys_fd_args(int nr);
/* True for calls whose count or result depends on timing rather than on
 * the program (futex, poll, sched_yield, nanosleep, ...): a replay
 * comparison skips them. */
bool trace_sys_timing_dependent(int nr);
/* True for calls whose return value is an address (mmap, brk, ...). */
bool trace_sys_returns_addr(int nr);

enum { SYS_TIMING = 1, SYS_ADDR = 2 }; /* trace_sys_timing_dependent, trace_sys_returns_addr */
#define CL_ALWAYS (-2)		       /* anonymous-descriptor makers that always set close-on-exec */

/* What a call does to the descriptor table. */
enum {
	OP_NONE,
	OP_OPEN,	   /* path (string 0) relative to cwd, flags arg 1 */
	OP_OPENAT,	   /* dirfd arg 0, path (string 0), flags arg 2 */
	OP_OPENAT2,	   /* flags inside struct open_how (not captured) */
	OP_CREAT,	   /* O_CREAT|O_WRONLY|O_TRUNC */
	OP_OPEN_TREE,	   /* like openat, OPEN_TREE_CLOEXEC = O_CLOEXEC in arg 2 */
	OP_OPEN_BY_HANDLE, /* the file behind a handle: path unknown */
	OP_DUP,
	OP_DUP2,
	OP_DUP3,
	OP_FCNTL,
	OP_CLOSE,
	OP_CLOSE_RANGE,
	OP_SOCKET,
	OP_ACCEPT,
	OP_ANON,  /* label; close-on-exec from cl_arg & cl_mask */
	OP_MEMFD, /* "memfd:" + name */
	OP_IOCTL, /* FIOCLEX / FIONCLEX */
};

/* Argument letters: d int, l long, u unsigned, x pointer/hex, s string, f fd,
 * X plain hex (0 is "0", not NULL), o open flags, F flags without access mode, m mode, a access mode, P prot,
 * M mmap flags, c clone flags, U unshare flags, C fcntl cmd (decodes the
 * next argument), A AT_* flags, R AT_REMOVEDIR, E faccessat2 flags, w
 * whence, S signal, h sigprocmask how, k address family, t socket type, T
 * socket flags. Which arguments are strings and descriptors is taken from
 * the str and fd bits; the letters add the rest. Unlisted calls print six X args. */
typedef struct trace_sysent {
	const char *name, *sig; /* sig NULL: no signature (six X arguments) */
	uint8_t str, fd;	/* trace_sys_str_args, trace_sys_fd_args */
	uint8_t flags;		/* SYS_TIMING, SYS_ADDR */
	uint8_t op;
	int8_t cl_arg;
	uint32_t cl_mask;
	const char *label;
} trace_sysent;

/* How `sbx trace show` decodes syscall nr and what it does to the
 * descriptor model, or NULL for an unlisted call (six X arguments). */
const trace_sysent *trace_sys_entry(int nr);

#endif
