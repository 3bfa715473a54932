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
