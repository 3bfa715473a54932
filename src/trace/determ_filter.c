/* The seccomp program the determinism engine installs in the command. Only
 * the calls it must see stop (TRACE), so everything else runs at full speed:
 *  - answered by the engine as user notifications (no ptrace stop, no
 *    registers to change): clock_gettime, clock_getres, gettimeofday, time,
 *    times, getrusage, getrandom, getcpu, sysinfo; nanosleep (the virtual clock advances, then
 *    the kernel sleeps);
 *  - let through, then fixed up at their exit stop: stat family (file times),
 *    uname (nodename); getdents64 and getdents (inode numbers, when the
 *    engine virtualizes them: determ_inode.h), and the calls that remove a
 *    name (unlink, rmdir, rename over: a removed file's number may be
 *    reused); clock_nanosleep (absolute deadlines become relative);
 *  - absolute timeouts the kernel would compare against its real clocks:
 *    futex waits with a timeout (WAIT_BITSET, LOCK_PI, LOCK_PI2,
 *    WAIT_REQUEUE_PI; plain FUTEX_WAIT is relative and passes), futex_waitv
 *    with a timeout, timerfd_settime with TFD_TIMER_ABSTIME;
 *  - open, openat, openat2 are user notifications too: the only way to hand
 *    back an engine-made fd (ADDFD) for /dev/urandom;
 *  - rseq fails with ENOSYS (as on old kernels: glibc carries on) so the CPU
 *    number is only ever learned through getcpu, which the engine answers.
 * Other ABIs (i386, x32) pass: sbx's own filter kills them. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#include "trace/ptrace_engine.h"

#if defined(__x86_64__)

enum { L_ALLOW, L_TRACE, L_NOTIF, L_NOSYS, L_FUTEX, L_TIMEOUT3, L_TIMERFD, L_N };

typedef struct bld {
	struct sock_filter *f;
	size_t n, cap;
	struct {
		size_t at;
		int label, side; /* side 0: jt, 1: jf, 2: ja's k */
	} fix[64];
	size_t n_fix;
	long label[L_N];
	bool bad;
} bld;

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define ARG_HI(i) (ARG_LO(i) + 4)

static void emit(bld *b, struct sock_filter insn)
{
	if (b->n >= b->cap) {
		b->bad = true;
		return;
	}
	b->f[b->n++] = insn;
}

static void fixup(bld *b, int label, int side)
{
	if (b->n_fix >= sizeof(b->fix) / sizeof(b->fix[0]) || b->n == 0) {
		b->bad = true;
		return;
	}
	b->fix[b->n_fix].at = b->n - 1;
	b->fix[b->n_fix].label = label;
	b->fix[b->n_fix++].side = side;
}

/* if (A == k) goto label */
static void jeq(bld *b, uint32_t k, int label)
{
	emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0));
	fixup(b, label, 0);
}
/* if (A != k) goto label */
static void jne(bld *b, uint32_t k, int label)
{
	emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, 0, 0));
	fixup(b, label, 1);
}
static void jmp(bld *b, int label)
{
	emit(b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0));
	fixup(b, label, 2);
}
static void ld(bld *b, uint32_t off)
{
	emit(b, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, off));
}
static void ret(bld *b, uint32_t v)
{
	emit(b, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, v));
}
static void label(bld *b, int l)
{
	b->label[l] = (long)b->n;
}

int determ_filter_build(struct sock_filter *out, size_t cap, unsigned flags)
{
	bld b = {.f = out, .cap = cap};
	/* wait4/waitid: the reaped child's clock joins the parent's at the exit
	 * (and its rusage, if asked for, is rewritten) */
	static const int trace[] = {SYS_clock_nanosleep, SYS_stat,  SYS_fstat, SYS_lstat,
				    SYS_newfstatat,	 SYS_statx, SYS_wait4, SYS_waitid};
	static const int notif[] = {SYS_clock_gettime, SYS_gettimeofday, SYS_time,    SYS_clock_getres,
				    SYS_times,	       SYS_getrandom,	 SYS_getcpu,  SYS_nanosleep,
				    SYS_open,	       SYS_openat,	 SYS_openat2, SYS_sysinfo,
				    SYS_getrusage};

	ld(&b, offsetof(struct seccomp_data, arch));
	jne(&b, AUDIT_ARCH_X86_64, L_ALLOW);
	ld(&b, offsetof(struct seccomp_data, nr));
	emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u /* x32 */, 0, 0));
	fixup(&b, L_ALLOW, 0);
	for (size_t i = 0; i < sizeof(trace) / sizeof(trace[0]); i++)
		jeq(&b, (uint32_t)trace[i], L_TRACE);
	if (flags & DETERM_FILTER_UNAME)
		jeq(&b, SYS_uname, L_TRACE);
	if (flags & DETERM_FILTER_INODES) {
		static const int ino[] = {SYS_getdents64, SYS_getdents, SYS_unlink,   SYS_unlinkat,
					  SYS_rmdir,	  SYS_rename,	SYS_renameat, SYS_renameat2};
		for (size_t i = 0; i < sizeof(ino) / sizeof(ino[0]); i++)
			jeq(&b, (uint32_t)ino[i], L_TRACE);
	}
	for (size_t i = 0; i < sizeof(notif) / sizeof(notif[0]); i++)
		jeq(&b, (uint32_t)notif[i], L_NOTIF);
	jeq(&b, SYS_rseq, L_NOSYS);
	jeq(&b, SYS_futex, L_FUTEX);
	jeq(&b, SYS_futex_waitv, L_TIMEOUT3);
	jeq(&b, SYS_timerfd_settime, L_TIMERFD);
	ret(&b, SECCOMP_RET_ALLOW);
	/* classic BPF jumps forward only: the argument checks come before the verdicts they jump to */
	/* futex: op & FUTEX_CMD_MASK (drops PRIVATE 128 and CLOCK_REALTIME 256) */
	label(&b, L_FUTEX);
	ld(&b, ARG_LO(1));
	emit(&b, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x7f));
	jeq(&b, 9 /* WAIT_BITSET */, L_TIMEOUT3);
	jeq(&b, 6 /* LOCK_PI */, L_TIMEOUT3);
	jeq(&b, 13 /* LOCK_PI2 */, L_TIMEOUT3);
	jeq(&b, 11 /* WAIT_REQUEUE_PI */, L_TIMEOUT3);
	jmp(&b, L_ALLOW);
	/* a timeout pointer in args[3] (futex, futex_waitv): NULL waits forever */
	label(&b, L_TIMEOUT3);
	ld(&b, ARG_LO(3));
	jne(&b, 0, L_TRACE);
	ld(&b, ARG_HI(3));
	jne(&b, 0, L_TRACE);
	jmp(&b, L_ALLOW);
	label(&b, L_TIMERFD);
	ld(&b, ARG_LO(1));
	emit(&b, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1 /* TFD_TIMER_ABSTIME */, 0, 0));
	fixup(&b, L_TRACE, 0);
	label(&b, L_ALLOW);
	ret(&b, SECCOMP_RET_ALLOW);
	label(&b, L_TRACE);
	ret(&b, SECCOMP_RET_TRACE);
	label(&b, L_NOTIF);
	ret(&b, SECCOMP_RET_USER_NOTIF);
	label(&b, L_NOSYS);
	ret(&b, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));

	if (b.bad)
		return -1;
	for (size_t i = 0; i < b.n_fix; i++) {
		long off = b.label[b.fix[i].label] - (long)b.fix[i].at - 1;
		if (off < 0 || (b.fix[i].side < 2 && off > 255))
			return -1;
		struct sock_filter *f = &out[b.fix[i].at];
		if (b.fix[i].side == 0)
			f->jt = (uint8_t)off;
		else if (b.fix[i].side == 1)
			f->jf = (uint8_t)off;
		else
			f->k = (uint32_t)off;
	}
	return (int)b.n;
}

#else

int determ_filter_build(struct sock_filter *out, size_t cap, unsigned flags)
{
	return -1; /* the engine's determinism mode is x86_64 only */
}

#endif
