/* Syscall names and argument kinds. Names come from libseccomp's resolver
 * (one table per architecture, kept current by libseccomp); the argument
 * kinds are ours, keyed by name and resolved to numbers once. */
#include "trace/trace_sys.h"

#include <pthread.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"

typedef struct sys_kind {
	const char *name;
	uint8_t str, fd;
	bool timing, addr;
} sys_kind;

#define S(n, s, f) {n, s, f, false, false}
#define T(n) {n, 0, 0, true, false}
#define A(n, f) {n, 0, f, false, true}
static const sys_kind kinds[] = {
    /* paths */
    S("open", 0x1, 0), S("openat", 0x2, 0x1), S("openat2", 0x2, 0x1), S("creat", 0x1, 0),
    S("stat", 0x1, 0), S("lstat", 0x1, 0), S("newfstatat", 0x2, 0x1), S("statx", 0x2, 0x1),
    S("access", 0x1, 0), S("faccessat", 0x2, 0x1), S("faccessat2", 0x2, 0x1),
    S("execve", 0x1, 0), S("execveat", 0x2, 0x1), S("chdir", 0x1, 0), S("chroot", 0x1, 0),
    S("mkdir", 0x1, 0), S("mkdirat", 0x2, 0x1), S("rmdir", 0x1, 0), S("unlink", 0x1, 0),
    S("unlinkat", 0x2, 0x1), S("rename", 0x3, 0), S("renameat", 0xa, 0x5), S("renameat2", 0xa, 0x5),
    S("link", 0x3, 0), S("linkat", 0xa, 0x5), S("symlink", 0x3, 0), S("symlinkat", 0x5, 0x2),
    S("readlink", 0x1, 0), S("readlinkat", 0x2, 0x1), S("chmod", 0x1, 0), S("fchmodat", 0x2, 0x1),
    S("fchmodat2", 0x2, 0x1), S("chown", 0x1, 0), S("lchown", 0x1, 0), S("fchownat", 0x2, 0x1),
    S("truncate", 0x1, 0), S("utime", 0x1, 0), S("utimes", 0x1, 0), S("utimensat", 0x2, 0x1),
    S("futimesat", 0x2, 0x1), S("mknod", 0x1, 0), S("mknodat", 0x2, 0x1), S("statfs", 0x1, 0),
    S("getxattr", 0x3, 0), S("lgetxattr", 0x3, 0), S("setxattr", 0x3, 0), S("lsetxattr", 0x3, 0),
    S("listxattr", 0x1, 0), S("llistxattr", 0x1, 0), S("removexattr", 0x3, 0), S("lremovexattr", 0x3, 0),
    S("fgetxattr", 0x2, 0x1), S("fsetxattr", 0x2, 0x1), S("fremovexattr", 0x2, 0x1),
    S("inotify_add_watch", 0x2, 0x1), S("mount", 0x3, 0), S("umount2", 0x1, 0), S("swapon", 0x1, 0),
    S("acct", 0x1, 0), S("pivot_root", 0x3, 0), S("memfd_create", 0x1, 0),
    S("sethostname", 0x1, 0), S("setdomainname", 0x1, 0),
    /* descriptors */
    S("read", 0, 0x1), S("write", 0, 0x1), S("pread64", 0, 0x1), S("pwrite64", 0, 0x1),
    S("readv", 0, 0x1), S("writev", 0, 0x1), S("preadv", 0, 0x1), S("pwritev", 0, 0x1),
    S("preadv2", 0, 0x1), S("pwritev2", 0, 0x1), S("close", 0, 0x1), S("fstat", 0, 0x1),
    S("lseek", 0, 0x1), S("ioctl", 0, 0x1), S("fcntl", 0, 0x1), S("dup", 0, 0x1), S("dup2", 0, 0x3),
    S("dup3", 0, 0x3), S("getdents", 0, 0x1), S("getdents64", 0, 0x1), S("fchdir", 0, 0x1),
    S("fchmod", 0, 0x1), S("fchown", 0, 0x1), S("ftruncate", 0, 0x1), S("fsync", 0, 0x1),
    S("fdatasync", 0, 0x1), S("flock", 0, 0x1), S("fstatfs", 0, 0x1), S("sendfile", 0, 0x3),
    S("splice", 0, 0x5), S("tee", 0, 0x3), S("copy_file_range", 0, 0x5), S("connect", 0, 0x1),
    S("accept", 0, 0x1), S("accept4", 0, 0x1), S("bind", 0, 0x1), S("listen", 0, 0x1),
    S("sendto", 0, 0x1), S("recvfrom", 0, 0x1), S("sendmsg", 0, 0x1), S("recvmsg", 0, 0x1),
    S("shutdown", 0, 0x1), S("getsockopt", 0, 0x1), S("setsockopt", 0, 0x1),
    S("getsockname", 0, 0x1), S("getpeername", 0, 0x1), S("fadvise64", 0, 0x1),
    S("fallocate", 0, 0x1), S("sync_file_range", 0, 0x1), S("readahead", 0, 0x1),
    S("epoll_ctl", 0, 0x5),
    /* results that are addresses */
    A("mmap", 0x10), A("brk", 0), A("mremap", 0), A("shmat", 0),
    /* timing-dependent: counts and results follow the scheduler, not the program */
    T("futex"), T("futex_waitv"), T("sched_yield"), T("nanosleep"), T("clock_nanosleep"),
    T("poll"), T("ppoll"), T("select"), T("pselect6"), T("epoll_wait"), T("epoll_pwait"),
    T("epoll_pwait2"), T("rt_sigtimedwait"), T("rt_sigsuspend"), T("pause"), T("restart_syscall"),
    T("membarrier"), T("rseq"), T("sched_getaffinity"), T("getrusage"), T("times"),
    /* signal delivery and child reaping follow the scheduler: a SIGCHLD
     * handler runs (rt_sigreturn) wherever the child's exit lands, and a
     * wait4 may find the child gone or not yet */
    T("rt_sigreturn"), T("wait4"), T("waitid"),
};

static struct {
	pthread_once_t once;
	uint8_t str[TRACE_NR_MAX], fd[TRACE_NR_MAX];
	bool timing[TRACE_NR_MAX], addr[TRACE_NR_MAX];
	const char *name[TRACE_NR_MAX];
} tab = {.once = PTHREAD_ONCE_INIT};

static void tab_init(void)
{
	for (int nr = 0; nr < TRACE_NR_MAX; nr++)
		tab.name[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr); /* leaked once: static table */
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, kinds[i].name);
		if (nr < 0 || nr >= TRACE_NR_MAX)
			continue;
		tab.str[nr] = kinds[i].str;
		tab.fd[nr] = kinds[i].fd;
		tab.timing[nr] = kinds[i].timing;
		tab.addr[nr] = kinds[i].addr;
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
	return in_range(nr) ? tab.str[nr] : 0;
}

uint8_t trace_sys_fd_args(int nr)
{
	return in_range(nr) ? tab.fd[nr] : 0;
}

bool trace_sys_timing_dependent(int nr)
{
	return in_range(nr) && tab.timing[nr];
}

bool trace_sys_returns_addr(int nr)
{
	return in_range(nr) && tab.addr[nr];
}
