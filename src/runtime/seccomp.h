/* seccomp-bpf deny list (libseccomp). The table of denied syscalls is data
 * (seccomp_table.c) so that it can be reviewed and unit-tested on its own. */
#pragma once
#include <stddef.h>
#include "util/err.h"

typedef struct seccomp_rule {
	const char *name; /* syscall name as libseccomp knows it */
	int errnum;	  /* errno returned; 0 = kill the process */
	const char *why;  /* one line, for docs and `sbx inspect` */
} seccomp_rule;

/* The denied syscalls (unconditional). Conditional rules (clone/unshare with
 * CLONE_NEWUSER, ioctl TIOCSTI/TIOCLINUX, personality) are in seccomp.c. */
extern const seccomp_rule seccomp_deny_table[];
extern const size_t seccomp_deny_table_len;

/* Loads the filter into the calling process (all threads: TSYNC). Requires
 * no_new_privs or CAP_SYS_ADMIN. Foreign ABIs (i386, x32) kill the process.
 * Must be the last restriction applied: it denies mount, etc. */
int seccomp_apply(sbx_err **err);
/* Same, plus: SECCOMP_NO_INET denies IP and packet sockets (for environments
 * without a network namespace). */
#define SECCOMP_NO_INET 1u
int seccomp_apply_flags(unsigned flags, sbx_err **err);
/* The same in two steps, so that building the program (libseccomp's rule
 * table and BPF generation, ~0.3 ms) can run before a wait and only the
 * load after it (setup.c builds it while the supervisor moves it into its
 * cgroup). seccomp_apply_flags() is seccomp_prepare() + seccomp_load_prog(). */
typedef struct seccomp_prog seccomp_prog;
int seccomp_prepare(unsigned flags, seccomp_prog **ret, sbx_err **err);
int seccomp_load_prog(const seccomp_prog *p, sbx_err **err);
void seccomp_prog_free(seccomp_prog *p);
/* Builds the program for flags once and keeps it for the life of this
 * process: seccomp_prepare() here, and in every process forked or cloned
 * from here afterwards, then copies it instead of building it again (the
 * program depends on flags and the tables only). For processes that start
 * many environments (supervisor_start calls it from their second on). */
void seccomp_keep(unsigned flags);
/* The BPF program itself (for tests). */
struct sock_fprog;
const struct sock_fprog *seccomp_prog_fprog(const seccomp_prog *p);
static inline void seccomp_prog_freep(seccomp_prog **p)
{
	seccomp_prog_free(*p);
}
