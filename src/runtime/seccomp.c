/* seccomp-bpf deny list, built with libseccomp.
 *
 * The filter allows by default and denies the table in seccomp_table.c plus
 * the conditional rules below. Only the native architecture is in the filter:
 * any other ABI (i386 via int 0x80, x32 via the 0x40000000 syscall bit) hits
 * SCMP_FLTATR_ACT_BADARCH = KILL_PROCESS. libseccomp (checked with 2.5.4)
 * emits an explicit "nr >= 0x40000000 -> bad arch" test in x86_64 filters that
 * do not include x32, so x32 needs no rule of ours; the unit test checks it.
 *
 * personality() is restricted by a second, hand-written BPF filter: allowing
 * a set of values needs "arg != a && arg != b ...", and libseccomp 2.5 accepts
 * only one comparison per argument in a rule (and no ALLOW rules when the
 * default is ALLOW). Stacked filters combine to the strictest verdict. */
#include "runtime/seccomp.h"

#include <errno.h>
#include <linux/filter.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "util/syscalls.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

/* Syscalls newer than the libseccomp we build against, by number. Since
 * Linux 5.1 new syscalls share one number on x86_64, aarch64 and riscv64. */
static const struct {
	const char *name;
	int nr;
} seccomp_new_syscalls[] = {
    {"open_tree_attr", 467},
};

static int seccomp_resolve(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	/* __NR_SCMP_ERROR: unknown name; other negatives: pseudo numbers for
	 * syscalls that do not exist on this arch (vm86 on x86_64). */
	if (nr >= 0)
		return nr;
	if (nr != __NR_SCMP_ERROR)
		return -1;
	uint32_t arch = seccomp_arch_native();
	if (arch != SCMP_ARCH_X86_64 && arch != SCMP_ARCH_AARCH64 && arch != SCMP_ARCH_RISCV64)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(seccomp_new_syscalls); i++)
		if (streq(seccomp_new_syscalls[i].name, name))
			return seccomp_new_syscalls[i].nr;
	return -1;
}

/* Rules that look at one argument: deny when (arg & mask) == datum. */
typedef struct seccomp_cond_rule {
	const char *name;
	int errnum;
	unsigned arg;
	uint64_t mask, datum;
	const char *why;
} seccomp_cond_rule;

#define NS_RULE(sc, flag)                                                                                    \
	{                                                                                                    \
		sc, EPERM, 0, flag, flag,                                                                    \
		    "new " #flag " namespaces: user namespaces regain capabilities, the rest "               \
		    "need CAP_SYS_ADMIN (Docker denies them too)"                                            \
	}

static const seccomp_cond_rule seccomp_cond_table[] = {
    /* One rule per flag: rules are OR'ed, comparisons in a rule AND'ed. */
    NS_RULE("clone", CLONE_NEWUSER),
    NS_RULE("clone", CLONE_NEWNS),
    NS_RULE("clone", CLONE_NEWUTS),
    NS_RULE("clone", CLONE_NEWIPC),
    NS_RULE("clone", CLONE_NEWPID),
    NS_RULE("clone", CLONE_NEWNET),
    NS_RULE("clone", CLONE_NEWCGROUP),
    NS_RULE("unshare", CLONE_NEWUSER),
    NS_RULE("unshare", CLONE_NEWNS),
    NS_RULE("unshare", CLONE_NEWUTS),
    NS_RULE("unshare", CLONE_NEWIPC),
    NS_RULE("unshare", CLONE_NEWPID),
    NS_RULE("unshare", CLONE_NEWNET),
    NS_RULE("unshare", CLONE_NEWCGROUP),
    NS_RULE("unshare", CLONE_NEWTIME),
    /* The kernel takes the ioctl request as unsigned int: compare the low
     * 32 bits so that high garbage bits do not slip past the rule. */
    {"ioctl", EPERM, 1, 0xffffffffu, TIOCSTI, "TIOCSTI injects input into the terminal of whoever owns it"},
    {"ioctl", EPERM, 1, 0xffffffffu, TIOCLINUX, "TIOCLINUX can inject input and read the virtual console"},
    {"socket", EAFNOSUPPORT, 0, 0xffffffffu, AF_VSOCK,
     "vsock is not network-namespaced and reaches the hypervisor host (Docker denies it)"},
};

/* clone3 takes its flags in memory, out of a filter's reach. ENOSYS makes
 * glibc fall back to clone(), whose flags the rules above check. */
static const seccomp_rule seccomp_clone3_rule = {
    "clone3", ENOSYS, "flags are in memory where seccomp cannot see them; ENOSYS makes glibc use clone"};

static void seccomp_ctx_freep(scmp_filter_ctx *ctx)
{
	if (*ctx)
		seccomp_release(*ctx);
}

static uint32_t seccomp_action(int errnum)
{
	return errnum ? SCMP_ACT_ERRNO(errnum) : SCMP_ACT_KILL_PROCESS;
}

static int seccomp_add(scmp_filter_ctx ctx, const seccomp_rule *rule, sbx_err **err)
{
	int nr = seccomp_resolve(rule->name);
	if (nr < 0)
		return 0; /* unknown to this libseccomp or not on this arch */
	int r = seccomp_rule_add(ctx, seccomp_action(rule->errnum), nr, 0);
	if (r < 0)
		return err_errnum(err, r, "seccomp: deny %s", rule->name);
	return 0;
}

/* Only allow personality(0), PER_LINUX32 (8), UNAME26 (0x20000), both, and the
 * query 0xffffffff, as Docker does, plus ADDR_NO_RANDOMIZE (0x40000) alone:
 * determinism mode (src/trace/ptrace_engine.c) turns ASLR off for the traced
 * command. That only weakens exploit mitigation inside the command itself:
 * the kernel clears it on a setuid exec and no_new_privs is set anyway.
 * Anything else (READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ...) fails with EPERM. */
static int seccomp_load_personality(sbx_err **err)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	enum { ARG0_LO = offsetof(struct seccomp_data, args[0]), ARG0_HI = ARG0_LO + 4 };
#else
	enum { ARG0_HI = offsetof(struct seccomp_data, args[0]), ARG0_LO = ARG0_HI + 4 };
#endif
	/* Jump offsets count instructions after the jump: [n] is the index. */
	struct sock_filter insns[] = {
	    /* [0] */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    /* [1] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, 12), /* main filter kills
											  */
	    /* [2] */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    /* [3] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)SCMP_SYS(personality), 0, 10),
	    /* [4] */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_HI),
	    /* [5] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 7), /* high bits set: deny */
	    /* [6] */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
	    /* [7] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0, 6, 0),
	    /* [8] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8, 5, 0),
	    /* [9] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20000, 4, 0),
	    /* [10] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20008, 3, 0),
	    /* [11] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x40000, 2, 0),
	    /* [12] */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 1, 0),
	    /* [13] */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	    /* [14] */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = ARRAY_SIZE(insns), .filter = insns};
	if (sys_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
		return err_errno(err, "seccomp: load personality filter");
	return 0;
}

int seccomp_apply(sbx_err **err)
{
	return seccomp_apply_flags(0, err);
}

struct seccomp_prog {
	struct sock_fprog fprog;
};

void seccomp_prog_free(seccomp_prog *p)
{
	if (!p)
		return;
	free(p->fprog.filter);
	free(p);
}

int seccomp_apply_flags(unsigned flags, sbx_err **err)
{
	_cleanup_(seccomp_prog_freep) seccomp_prog *p = NULL;
	if (seccomp_prepare(flags, &p, err) < 0)
		return -1;
	return seccomp_load_prog(p, err);
}

int seccomp_load_prog(const seccomp_prog *p, sbx_err **err)
{
	/* Every thread gets the filter, or none does (a non-zero return is
	 * the id of a thread that could not take it). */
	long r = sys_seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &p->fprog);
	if (r != 0) {
		if (r > 0)
			errno = ESRCH;
		return err_errno(err, "seccomp: load filter");
	}
	return seccomp_load_personality(err);
}

/* The filter as libseccomp builds it, exported as BPF (the program
 * seccomp_load() would hand the kernel) instead of loaded. */
static int prog_build(unsigned flags, seccomp_prog **ret, sbx_err **err)
{
	_cleanup_(seccomp_ctx_freep) scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "seccomp: create filter");

	/* seccomp_init() puts only the native arch in the filter; every other ABI
	 * takes the bad-arch action. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (r < 0)
		return err_errnum(err, r, "seccomp: set bad-arch action");
	/* The caller sets no_new_privs itself, as one step of the privilege sequence. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (r < 0)
		return err_errnum(err, r, "seccomp: clear NNP attribute");
	/* Every thread gets the filter, or the load fails. */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
	if (r < 0)
		return err_errnum(err, r, "seccomp: set TSYNC");
	/* Report the kernel's errno from seccomp_load, not -ECANCELED. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1);
	/* Binary search over syscall numbers instead of a linear chain. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	for (size_t i = 0; i < seccomp_deny_table_len; i++) {
		r = seccomp_add(ctx, &seccomp_deny_table[i], err);
		if (r < 0)
			return r;
	}
	r = seccomp_add(ctx, &seccomp_clone3_rule, err);
	if (r < 0)
		return r;

	for (size_t i = 0; i < ARRAY_SIZE(seccomp_cond_table); i++) {
		const seccomp_cond_rule *c = &seccomp_cond_table[i];
		int nr = seccomp_resolve(c->name);
		unsigned arg = c->arg;
		if (nr < 0)
			continue;
		/* s390 passes clone's flags in the second argument. */
		if (streq(c->name, "clone") &&
		    (seccomp_arch_native() == SCMP_ARCH_S390X || seccomp_arch_native() == SCMP_ARCH_S390))
			arg = 1;
		struct scmp_arg_cmp cmp = {
		    .arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = c->mask, .datum_b = c->datum};
		r = seccomp_rule_add_array(ctx, seccomp_action(c->errnum), nr, 1, &cmp);
		if (r < 0)
			return err_errnum(err, r, "seccomp: conditional rule on %s", c->name);
	}

	if (flags & SECCOMP_NO_INET) {
		/* Without a network namespace this is the network wall: no IP or
		 * packet sockets at all (unix and netlink sockets stay). */
		static const int families[] = {2 /* AF_INET */, 10 /* AF_INET6 */, 17 /* AF_PACKET */};
		int nr = seccomp_resolve("socket");
		for (size_t i = 0; nr >= 0 && i < ARRAY_SIZE(families); i++) {
			struct scmp_arg_cmp cmp = {.arg = 0,
						   .op = SCMP_CMP_MASKED_EQ,
						   .datum_a = 0xffffffffu,
						   .datum_b = (scmp_datum_t)families[i]};
			r = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EACCES), nr, 1, &cmp);
			if (r < 0)
				return err_errnum(err, r, "seccomp: socket family rule");
		}
	}

	_cleanup_close_ int mfd = memfd_create("sbx-seccomp", MFD_CLOEXEC);
	if (mfd < 0)
		return err_errno(err, "seccomp: memfd for the filter");
	r = seccomp_export_bpf(ctx, mfd);
	if (r < 0)
		return err_errnum(err, r, "seccomp: build filter");
	off_t size = lseek(mfd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0 ||
	    size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
		return err_set(err, SBX_E_INTERNAL, EINVAL, "seccomp: filter of %lld bytes", (long long)size);
	_cleanup_(seccomp_prog_freep) seccomp_prog *p = calloc(1, sizeof(*p));
	if (!p || !(p->fprog.filter = malloc((size_t)size)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	p->fprog.len = (unsigned short)((size_t)size / sizeof(struct sock_filter));
	if (pread(mfd, p->fprog.filter, (size_t)size, 0) != (ssize_t)size)
		return err_errno(err, "seccomp: read the filter back");
	*ret = TAKE_PTR(p);
	return 0;
}

/* The programs seccomp_keep() built in this process, by flags: set once,
 * never changed or freed (lock-free, so a fork while another thread is
 * here leaves nothing locked in the child). */
static seccomp_prog *kept[2];

static int prog_copy(const seccomp_prog *k, seccomp_prog **ret, sbx_err **err)
{
	size_t size = k->fprog.len * sizeof(struct sock_filter);
	_cleanup_(seccomp_prog_freep) seccomp_prog *p = calloc(1, sizeof(*p));
	if (!p || !(p->fprog.filter = malloc(size)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	memcpy(p->fprog.filter, k->fprog.filter, size);
	p->fprog.len = k->fprog.len;
	*ret = TAKE_PTR(p);
	return 0;
}

int seccomp_prepare(unsigned flags, seccomp_prog **ret, sbx_err **err)
{
	const seccomp_prog *k =
	    flags & ~SECCOMP_NO_INET ? NULL : __atomic_load_n(&kept[flags], __ATOMIC_ACQUIRE);
	return k ? prog_copy(k, ret, err) : prog_build(flags, ret, err);
}

const struct sock_fprog *seccomp_prog_fprog(const seccomp_prog *p)
{
	return &p->fprog;
}

void seccomp_keep(unsigned flags)
{
	seccomp_prog *p = NULL, *none = NULL;
	if (flags & ~SECCOMP_NO_INET || __atomic_load_n(&kept[flags], __ATOMIC_ACQUIRE) ||
	    prog_build(flags, &p, NULL) < 0)
		return;
	if (!__atomic_compare_exchange_n(&kept[flags], &none, p, false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		seccomp_prog_free(p); /* another thread kept its own, the same program */
}
