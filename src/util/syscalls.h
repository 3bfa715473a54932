/* Every raw syscall that glibc 2.36 does not wrap goes through here, once.
 * Constants missing from Debian 12's UAPI headers are defined here too. */
#pragma once
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#ifndef MOUNT_ATTR_IDMAP
#define MOUNT_ATTR_IDMAP 0x00100000
#endif
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct sbx_clone_args {
	uint64_t flags;
	uint64_t pidfd;
	uint64_t child_tid;
	uint64_t parent_tid;
	uint64_t exit_signal;
	uint64_t stack;
	uint64_t stack_size;
	uint64_t tls;
	uint64_t set_tid;
	uint64_t set_tid_size;
	uint64_t cgroup;
};

/* clone3 without a new stack: returns twice like fork(). */
static inline pid_t sys_clone3(struct sbx_clone_args *args)
{
	return (pid_t)syscall(SYS_clone3, args, sizeof(*args));
}

/* clone(2) without a new stack (returns twice like fork). With CLONE_PIDFD
 * the pidfd lands in *pidfd (the parent_tid argument). x86_64/arm64 order. */
static inline pid_t sys_clone_fork(unsigned long flags, int *pidfd)
{
	return (pid_t)syscall(SYS_clone, flags, 0, pidfd, 0, 0);
}

struct sbx_mount_attr {
	uint64_t attr_set;
	uint64_t attr_clr;
	uint64_t propagation;
	uint64_t userns_fd;
};

static inline int sys_open_tree(int dfd, const char *path, unsigned flags)
{
	return (int)syscall(SYS_open_tree, dfd, path, flags);
}
static inline int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags)
{
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}
static inline int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct sbx_mount_attr *attr)
{
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof(*attr));
}
/* Use fs_open_beneath (util/fs.h), which falls back where this is missing. */
static inline int sys_openat2(int dfd, const char *path, struct open_how *how)
{
	return (int)syscall(SYS_openat2, dfd, path, how, sizeof(*how));
}

static inline int sys_pivot_root(const char *new_root, const char *put_old)
{
	return (int)syscall(SYS_pivot_root, new_root, put_old);
}
static inline int sys_pidfd_open(pid_t pid, unsigned flags)
{
	return (int)syscall(SYS_pidfd_open, pid, flags);
}
static inline int sys_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned flags)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}
/* rt_sigaction without glibc's filter: glibc's sigaction refuses its own
 * signals 32 and 33 (SIGCANCEL, SIGSETXID), which a caller may still have
 * left ignored for us, and so cannot see or reset them. The kernel's
 * struct; no restorer is needed for SIG_DFL and SIG_IGN. */
struct sbx_ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};
static inline int sys_rt_sigaction(int sig, const struct sbx_ksigaction *act, struct sbx_ksigaction *old)
{
	return (int)syscall(SYS_rt_sigaction, sig, act, old, sizeof(uint64_t));
}
static inline int sys_close_range(unsigned first, unsigned last, unsigned flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}

/* Landlock (ABI numbers newer than Debian 12's header are defined locally). */
#include <linux/landlock.h>
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define SBX_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SBX_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#define SBX_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define SBX_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)

/* The ruleset attr as of ABI 6; the kernel accepts a shorter size for older ABIs. */
struct sbx_landlock_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};
struct sbx_landlock_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

static inline int sys_landlock_create_ruleset(const struct sbx_landlock_ruleset_attr *attr, size_t size,
					      uint32_t flags)
{
	return (int)syscall(SYS_landlock_create_ruleset, attr, size, flags);
}
static inline int sys_landlock_add_rule(int ruleset_fd, int rule_type, const void *attr, uint32_t flags)
{
	return (int)syscall(SYS_landlock_add_rule, ruleset_fd, rule_type, attr, flags);
}
static inline int sys_landlock_restrict_self(int ruleset_fd, uint32_t flags)
{
	return (int)syscall(SYS_landlock_restrict_self, ruleset_fd, flags);
}

/* seccomp(2), for the one hand-written filter libseccomp cannot express
 * (see seccomp.c). Constants guarded for old headers. */
#include <linux/seccomp.h>
#ifndef SECCOMP_SET_MODE_FILTER
#define SECCOMP_SET_MODE_FILTER 1
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif
static inline int sys_seccomp(unsigned op, unsigned flags, const void *args)
{
	return (int)syscall(SYS_seccomp, op, flags, args);
}

/* seccomp user notifications (the determinism engine answers /dev/urandom
 * opens with an fd of its own: SECCOMP_IOCTL_NOTIF_ADDFD with ..._FLAG_SEND,
 * Linux 5.14). Guarded for older UAPI headers. */
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
