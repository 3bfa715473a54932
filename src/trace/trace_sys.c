/* The one syscall table: names and numbers come from libseccomp's resolver
 * (one table per architecture, kept current by libseccomp); everything else
 * a syscall means to the tracer (string and descriptor arguments, timing,
 * its signature for `sbx trace show`, what it does to the descriptor model)
 * is ours, one line per call keyed by name, resolved to numbers once. */
#include "trace/trace_sys.h"

#include <pthread.h>
#include <seccomp.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>

#include "util/macro.h"

/* One line per syscall: name, argument letters (trace_sys.h), the string and
 * descriptor argument bits (what the recorders capture and the model
 * resolves), then what a call does. Sorted by x86_64 number; the numbers
 * themselves come from libseccomp. Calls whose count or result follows the
 * scheduler rather than the program (T) are skipped by a replay
 * comparison; A: the result is an address. Signal delivery and child
 * reaping are T too: a SIGCHLD handler runs (rt_sigreturn) wherever the
 * child's exit lands, and a wait4 may find the child gone or not yet. */
#define G(n, sig, s, f)                                                                                      \
	{                                                                                                    \
		n, sig, s, f, 0, OP_NONE, -1, 0, NULL                                                        \
	}
#define O(n, sig, s, f, op)                                                                                  \
	{                                                                                                    \
		n, sig, s, f, 0, op, -1, 0, NULL                                                             \
	}
#define T(n, sig)                                                                                            \
	{                                                                                                    \
		n, sig, 0, 0, SYS_TIMING, OP_NONE, -1, 0, NULL                                               \
	}
#define A(n, sig, f)                                                                                         \
	{                                                                                                    \
		n, sig, 0, f, SYS_ADDR, OP_NONE, -1, 0, NULL                                                 \
	}
#define AN(n, sig, s, f, label, arg, mask)                                                                   \
	{                                                                                                    \
		n, sig, s, f, 0, OP_ANON, arg, mask, label                                                   \
	}
static const trace_sysent table[] = {
    G("read", "fxu", 0, 0x1),
    G("write", "fxu", 0, 0x1),
    O("open", "som", 0x1, 0, OP_OPEN),
    O("close", "f", 0, 0x1, OP_CLOSE),
    G("stat", "sx", 0x1, 0),
    G("fstat", "fx", 0, 0x1),
    G("lstat", "sx", 0x1, 0),
    T("poll", "xud"),
    G("lseek", "flw", 0, 0x1),
    A("mmap", "xuPMfX", 0x10),
    G("mprotect", "xuP", 0, 0),
    G("munmap", "xu", 0, 0),
    A("brk", "x", 0),
    G("rt_sigaction", "Sxxu", 0, 0),
    G("rt_sigprocmask", "hxxu", 0, 0),
    T("rt_sigreturn", ""),
    O("ioctl", "fxx", 0, 0x1, OP_IOCTL),
    G("pread64", "fxul", 0, 0x1),
    G("pwrite64", "fxul", 0, 0x1),
    G("readv", "fxd", 0, 0x1),
    G("writev", "fxd", 0, 0x1),
    G("access", "sa", 0x1, 0),
    G("pipe", "x", 0, 0),
    T("select", "dxxxx"),
    T("sched_yield", ""),
    A("mremap", "xuuxx", 0),
    G("msync", "xux", 0, 0),
    G("mincore", "xux", 0, 0),
    G("madvise", "xud", 0, 0),
    O("dup", "f", 0, 0x1, OP_DUP),
    O("dup2", "ff", 0, 0x3, OP_DUP2),
    T("pause", ""),
    T("nanosleep", "xx"),
    G("getitimer", "dx", 0, 0),
    G("alarm", "u", 0, 0),
    G("setitimer", "dxx", 0, 0),
    G("getpid", "", 0, 0),
    G("sendfile", "ffxu", 0, 0x3),
    O("socket", "ktd", 0, 0, OP_SOCKET),
    G("connect", "fxd", 0, 0x1),
    O("accept", "fxx", 0, 0x1, OP_ACCEPT),
    G("sendto", "fxuxxd", 0, 0x1),
    G("recvfrom", "fxuxxx", 0, 0x1),
    G("sendmsg", "fxx", 0, 0x1),
    G("recvmsg", "fxx", 0, 0x1),
    G("shutdown", "fd", 0, 0x1),
    G("bind", "fxd", 0, 0x1),
    G("listen", "fd", 0, 0x1),
    G("getsockname", "fxx", 0, 0x1),
    G("getpeername", "fxx", 0, 0x1),
    G("socketpair", "ktdx", 0, 0),
    G("setsockopt", "fddxd", 0, 0x1),
    G("getsockopt", "fddxx", 0, 0x1),
    G("clone", "cxxxx", 0, 0),
    G("fork", "", 0, 0),
    G("vfork", "", 0, 0),
    G("execve", "sxx", 0x1, 0),
    G("exit", "d", 0, 0),
    T("wait4", "dxdx"),
    G("kill", "dS", 0, 0),
    G("uname", "x", 0, 0),
    O("fcntl", "fCx", 0, 0x1, OP_FCNTL),
    G("flock", "fd", 0, 0x1),
    G("fsync", "f", 0, 0x1),
    G("fdatasync", "f", 0, 0x1),
    G("truncate", "sl", 0x1, 0),
    G("ftruncate", "fl", 0, 0x1),
    G("getdents", "fxu", 0, 0x1),
    G("getcwd", "xu", 0, 0),
    G("chdir", "s", 0x1, 0),
    G("fchdir", "f", 0, 0x1),
    G("rename", "ss", 0x3, 0),
    G("mkdir", "sm", 0x1, 0),
    G("rmdir", "s", 0x1, 0),
    O("creat", "sm", 0x1, 0, OP_CREAT),
    G("link", "ss", 0x3, 0),
    G("unlink", "s", 0x1, 0),
    G("symlink", "ss", 0x3, 0),
    G("readlink", "sxu", 0x1, 0),
    G("chmod", "sm", 0x1, 0),
    G("fchmod", "fm", 0, 0x1),
    G("chown", "sdd", 0x1, 0),
    G("fchown", "fdd", 0, 0x1),
    G("lchown", "sdd", 0x1, 0),
    G("umask", "m", 0, 0),
    G("gettimeofday", "xx", 0, 0),
    G("getrlimit", "dx", 0, 0),
    T("getrusage", "dx"),
    G("sysinfo", "x", 0, 0),
    T("times", "x"),
    G("ptrace", "ddxx", 0, 0),
    G("getuid", "", 0, 0),
    G("getgid", "", 0, 0),
    G("setuid", "d", 0, 0),
    G("setgid", "d", 0, 0),
    G("geteuid", "", 0, 0),
    G("getegid", "", 0, 0),
    G("setpgid", "dd", 0, 0),
    G("getppid", "", 0, 0),
    G("getpgrp", "", 0, 0),
    G("setsid", "", 0, 0),
    G("setreuid", "dd", 0, 0),
    G("setregid", "dd", 0, 0),
    G("getgroups", "dx", 0, 0),
    G("setgroups", "dx", 0, 0),
    G("setresuid", "ddd", 0, 0),
    G("getresuid", "xxx", 0, 0),
    G("setresgid", "ddd", 0, 0),
    G("getresgid", "xxx", 0, 0),
    G("getpgid", "d", 0, 0),
    G("getsid", "d", 0, 0),
    G("setfsuid", "d", 0, 0),
    G("setfsgid", "d", 0, 0),
    G("capget", "xx", 0, 0),
    G("capset", "xx", 0, 0),
    G("rt_sigpending", "xu", 0, 0),
    T("rt_sigtimedwait", "xxxu"),
    G("rt_sigqueueinfo", "dSx", 0, 0),
    T("rt_sigsuspend", "xu"),
    G("sigaltstack", "xx", 0, 0),
    G("utime", "sx", 0x1, 0),
    G("mknod", "smu", 0x1, 0),
    G("personality", "x", 0, 0),
    G("statfs", "sx", 0x1, 0),
    G("fstatfs", "fx", 0, 0x1),
    G("getpriority", "dd", 0, 0),
    G("setpriority", "ddd", 0, 0),
    G("sched_setparam", "dx", 0, 0),
    G("sched_getparam", "dx", 0, 0),
    G("sched_setscheduler", "ddx", 0, 0),
    G("sched_getscheduler", "d", 0, 0),
    G("mlock", "xu", 0, 0),
    G("munlock", "xu", 0, 0),
    G("mlockall", "x", 0, 0),
    G("munlockall", "", 0, 0),
    G("prctl", "dxxxx", 0, 0),
    G("arch_prctl", "dx", 0, 0),
    G("setrlimit", "dx", 0, 0),
    G("chroot", "s", 0x1, 0),
    G("sync", "", 0, 0),
    G("acct", "s", 0x1, 0),
    G("settimeofday", "xx", 0, 0),
    G("mount", "ssxxx", 0x3, 0),
    G("umount2", "sd", 0x1, 0),
    G("swapon", "sd", 0x1, 0),
    G("swapoff", "s", 0, 0),
    G("reboot", "xxxx", 0, 0),
    G("sethostname", "su", 0x1, 0),
    G("setdomainname", "su", 0x1, 0),
    G("gettid", "", 0, 0),
    G("readahead", "flu", 0, 0x1),
    G("setxattr", "ssxud", 0x3, 0),
    G("lsetxattr", "ssxud", 0x3, 0),
    G("fsetxattr", "fsxud", 0x2, 0x1),
    G("getxattr", "ssxu", 0x3, 0),
    G("lgetxattr", "ssxu", 0x3, 0),
    G("fgetxattr", "fsxu", 0x2, 0x1),
    G("listxattr", "sxu", 0x1, 0),
    G("llistxattr", "sxu", 0x1, 0),
    G("flistxattr", "fxu", 0, 0),
    G("removexattr", "ss", 0x3, 0),
    G("lremovexattr", "ss", 0x3, 0),
    G("fremovexattr", "fs", 0x2, 0x1),
    G("tkill", "dS", 0, 0),
    G("time", "x", 0, 0),
    T("futex", "xduxxu"),
    G("sched_setaffinity", "dux", 0, 0),
    T("sched_getaffinity", "dux"),
    AN("epoll_create", "d", 0, 0, "anon_inode:[eventpoll]", -1, 0),
    G("getdents64", "fxu", 0, 0x1),
    G("set_tid_address", "x", 0, 0),
    T("restart_syscall", ""),
    G("fadvise64", "flld", 0, 0x1),
    G("timer_create", "dxx", 0, 0),
    G("timer_settime", "ddxx", 0, 0),
    G("timer_gettime", "dx", 0, 0),
    G("timer_getoverrun", "d", 0, 0),
    G("timer_delete", "d", 0, 0),
    G("clock_settime", "dx", 0, 0),
    G("clock_gettime", "dx", 0, 0),
    G("clock_getres", "dx", 0, 0),
    T("clock_nanosleep", "ddxx"),
    G("exit_group", "d", 0, 0),
    T("epoll_wait", "fxdd"),
    G("epoll_ctl", "fdfx", 0, 0x5),
    G("tgkill", "ddS", 0, 0),
    G("utimes", "sx", 0x1, 0),
    T("waitid", "ddxdx"),
    AN("inotify_init", "", 0, 0, "anon_inode:inotify", -1, 0),
    G("inotify_add_watch", "fsx", 0x2, 0x1),
    G("inotify_rm_watch", "fd", 0, 0),
    O("openat", "fsom", 0x2, 0x1, OP_OPENAT),
    G("mkdirat", "fsm", 0x2, 0x1),
    G("mknodat", "fsmu", 0x2, 0x1),
    G("fchownat", "fsddA", 0x2, 0x1),
    G("futimesat", "fsx", 0x2, 0x1),
    G("newfstatat", "fsxA", 0x2, 0x1),
    G("unlinkat", "fsR", 0x2, 0x1),
    G("renameat", "fsfs", 0xa, 0x5),
    G("linkat", "fsfsA", 0xa, 0x5),
    G("symlinkat", "sfs", 0x5, 0x2),
    G("readlinkat", "fsxu", 0x2, 0x1),
    G("fchmodat", "fsm", 0x2, 0x1),
    G("faccessat", "fsa", 0x2, 0x1),
    T("pselect6", "dxxxxx"),
    T("ppoll", "xuxxu"),
    G("unshare", "U", 0, 0),
    G("set_robust_list", "xu", 0, 0),
    G("get_robust_list", "dxx", 0, 0),
    G("splice", "fxfxux", 0, 0x5),
    G("tee", "ffux", 0, 0x3),
    G("sync_file_range", "fllx", 0, 0x1),
    G("vmsplice", "fxux", 0, 0),
    G("utimensat", "fsxA", 0x2, 0x1),
    T("epoll_pwait", "fxddxu"),
    AN("signalfd", "fxu", 0, 0, "anon_inode:[signalfd]", -1, 0),
    AN("timerfd_create", "dF", 0, 0, "anon_inode:[timerfd]", 1, O_CLOEXEC),
    AN("eventfd", "u", 0, 0, "anon_inode:[eventfd]", -1, 0),
    G("fallocate", "fdll", 0, 0x1),
    G("timerfd_settime", "fdxx", 0, 0),
    G("timerfd_gettime", "fx", 0, 0),
    O("accept4", "fxxT", 0, 0x1, OP_ACCEPT),
    AN("signalfd4", "fxuF", 0, 0, "anon_inode:[signalfd]", 3, O_CLOEXEC),
    AN("eventfd2", "uF", 0, 0, "anon_inode:[eventfd]", 1, O_CLOEXEC),
    AN("epoll_create1", "F", 0, 0, "anon_inode:[eventpoll]", 0, O_CLOEXEC),
    O("dup3", "ffF", 0, 0x3, OP_DUP3),
    G("pipe2", "xF", 0, 0),
    AN("inotify_init1", "F", 0, 0, "anon_inode:inotify", 0, O_CLOEXEC),
    G("preadv", "fxduu", 0, 0x1),
    G("pwritev", "fxduu", 0, 0x1),
    G("rt_tgsigqueueinfo", "ddSx", 0, 0),
    AN("perf_event_open", "xddfx", 0, 0, "anon_inode:[perf_event]", 4, 8 /* PERF_FLAG_FD_CLOEXEC */),
    G("recvmmsg", "fxuxx", 0, 0),
    AN("fanotify_init", "xx", 0, 0, "anon_inode:[fanotify]", 0, 1 /* FAN_CLOEXEC */),
    G("fanotify_mark", "fxxfx", 0, 0),
    G("prlimit64", "ddxx", 0, 0),
    G("name_to_handle_at", "fsxxA", 0, 0),
    O("open_by_handle_at", "fxo", 0, 0, OP_OPEN_BY_HANDLE),
    G("syncfs", "f", 0, 0),
    G("sendmmsg", "fxuu", 0, 0),
    G("setns", "fU", 0, 0),
    G("getcpu", "xxx", 0, 0),
    G("process_vm_readv", "dxuxux", 0, 0),
    G("process_vm_writev", "dxuxux", 0, 0),
    G("kcmp", "dddxx", 0, 0),
    G("finit_module", "fsd", 0, 0),
    G("sched_setattr", "dxu", 0, 0),
    G("sched_getattr", "dxuu", 0, 0),
    G("renameat2", "fsfsx", 0xa, 0x5),
    G("seccomp", "dxx", 0, 0),
    G("getrandom", "xux", 0, 0),
    {"memfd_create", "sx", 0x1, 0, 0, OP_MEMFD, 1, 1 /* MFD_CLOEXEC */, NULL},
    G("bpf", "dxu", 0, 0),
    G("execveat", "fsxxA", 0x2, 0x1),
    AN("userfaultfd", "F", 0, 0, "anon_inode:[userfaultfd]", 0, O_CLOEXEC),
    T("membarrier", "dxd"),
    G("mlock2", "xux", 0, 0),
    G("copy_file_range", "fxfxux", 0, 0x5),
    G("preadv2", "fxduux", 0, 0x1),
    G("pwritev2", "fxduux", 0, 0x1),
    G("pkey_mprotect", "xuPd", 0, 0),
    G("pkey_alloc", "xx", 0, 0),
    G("pkey_free", "d", 0, 0),
    G("statx", "fsAxx", 0x2, 0x1),
    T("rseq", "xuxx"),
    G("pidfd_send_signal", "fSxx", 0, 0),
    AN("io_uring_setup", "ux", 0, 0, "anon_inode:[io_uring]", CL_ALWAYS, 0),
    G("io_uring_enter", "fuuxxu", 0, 0),
    G("io_uring_register", "fuxu", 0, 0),
    {"open_tree", "fsx", 0, 0, 0, OP_OPEN_TREE, -1, 0, NULL},
    G("move_mount", "fsfsx", 0, 0),
    AN("fsopen", "sx", 0, 0, "anon_inode:[fscontext]", 1, 1 /* FSOPEN_CLOEXEC */),
    G("fsconfig", "fdxxd", 0, 0),
    AN("fsmount", "fxx", 0, 0, "anon_inode:[fsmount]", 1, 1 /* FSMOUNT_CLOEXEC */),
    AN("fspick", "fsx", 0, 0, "anon_inode:[fscontext]", 2, 1 /* FSPICK_CLOEXEC */),
    AN("pidfd_open", "dx", 0, 0, "anon_inode:[pidfd]", CL_ALWAYS, 0),
    G("clone3", "xu", 0, 0),
    O("close_range", "uuX", 0, 0, OP_CLOSE_RANGE),
    O("openat2", "fsxu", 0x2, 0x1, OP_OPENAT2),
    G("pidfd_getfd", "fdx", 0, 0),
    G("faccessat2", "fsaE", 0x2, 0x1),
    G("process_madvise", "fxuxx", 0, 0),
    T("epoll_pwait2", "fxdxxu"),
    G("mount_setattr", "fsxxu", 0, 0),
    AN("landlock_create_ruleset", "xux", 0, 0, "anon_inode:landlock-ruleset", CL_ALWAYS, 0),
    G("landlock_add_rule", "fdxx", 0, 0),
    G("landlock_restrict_self", "fx", 0, 0),
    AN("memfd_secret", "F", 0, 0, "anon_inode:[secretmem]", 0, O_CLOEXEC),
    G("process_mrelease", "fx", 0, 0),
    T("futex_waitv", "xuxxd"),
    G("cachestat", "fxxx", 0, 0),
    G("fchmodat2", "fsmA", 0x2, 0x1),
    G("pivot_root", NULL, 0x3, 0),
    A("shmat", NULL, 0),
};

static struct {
	pthread_once_t once;
	const char *name[TRACE_NR_MAX];
	const trace_sysent *ent[TRACE_NR_MAX];
} tab = {.once = PTHREAD_ONCE_INIT};

static void tab_init(void)
{
	for (int nr = 0; nr < TRACE_NR_MAX; nr++)
		tab.name[nr] =
		    seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr); /* leaked once: static table */
	for (size_t i = 0; i < ARRAY_SIZE(table); i++) {
		int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, table[i].name);
		if (nr >= 0 && nr < TRACE_NR_MAX)
			tab.ent[nr] = &table[i];
	}
}

static bool in_range(int nr)
{
	if (nr < 0 || nr >= TRACE_NR_MAX)
		return false;
	pthread_once(&tab.once, tab_init);
	return true;
}

const char *trace_sys_name(int nr)
{
	return in_range(nr) ? tab.name[nr] : NULL;
}

int trace_sys_nr(const char *name)
{
	int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name);
	return nr >= 0 && nr < TRACE_NR_MAX ? nr : -1;
}

uint8_t trace_sys_str_args(int nr)
{
	return in_range(nr) && tab.ent[nr] ? tab.ent[nr]->str : 0;
}

uint8_t trace_sys_fd_args(int nr)
{
	return in_range(nr) && tab.ent[nr] ? tab.ent[nr]->fd : 0;
}

bool trace_sys_timing_dependent(int nr)
{
	return in_range(nr) && tab.ent[nr] && (tab.ent[nr]->flags & SYS_TIMING);
}

bool trace_sys_returns_addr(int nr)
{
	return in_range(nr) && tab.ent[nr] && (tab.ent[nr]->flags & SYS_ADDR);
}

const trace_sysent *trace_sys_entry(int nr)
{
	return in_range(nr) && tab.ent[nr] && tab.ent[nr]->sig ? tab.ent[nr] : NULL;
}
