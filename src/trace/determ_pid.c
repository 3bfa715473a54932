/* Reproducing a recorded pid: the command (or, in sbx, the engine) must get
 * the pid it had when recording, and the pids of its descendants follow
 * (a pid namespace hands them out in order). Shared by the engine
 * (ptrace_opts.first_pid) and sbx's init (replay). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace/ptrace_engine.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/macro.h"

static long read_long(const char *path)
{
	char buf[32] = "";
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return -1;
	return strtol(buf, NULL, 10);
}

/* One pid used and given back. vfork: the caller's address space need not
 * be duplicated for a child that only exits. */
__attribute__((noinline)) static pid_t burn_one(void)
{
	pid_t p = vfork();
	if (p == 0)
		_exit(0);
	if (p > 0)
		(void)RETRY_EINTR(waitpid(p, NULL, 0));
	return p;
}

/* Sets the namespace's last handed-out pid (CAP_CHECKPOINT_RESTORE or
 * CAP_SYS_ADMIN over the namespace's user namespace). */
static int set_last_pid(long last)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld", last);
	_cleanup_close_ int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		return -errno;
	return 0;
}

int determ_pid_reach(pid_t want, sbx_err **err)
{
	long pid_max = read_long("/proc/sys/kernel/pid_max");
	if (want < 1 || (pid_max > 0 && want >= pid_max))
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
			       "cannot give the command pid %d: pids here go from 1 to %ld", (int)want,
			       pid_max - 1);
	char path[32];
	snprintf(path, sizeof(path), "/proc/%d", (int)want);
	struct stat st;
	if (stat(path, &st) == 0)
		return err_set(err, SBX_E_CONFLICT, EBUSY,
			       "cannot give the command pid %d: that pid is in use by another process here",
			       (int)want);
	long last = read_long("/proc/sys/kernel/ns_last_pid");
	if (last + 1 == want)
		return 0;
	/* Exact and cheap in either direction: move the counter (the next fork
	 * gets `want`, which is free). */
	int r = set_last_pid(want - 1);
	if (r == 0 && read_long("/proc/sys/kernel/ns_last_pid") + 1 == want)
		return 0;
	if (last >= want)
		return err_set(
		    err, SBX_E_CONFLICT, ERANGE,
		    "cannot give the command pid %d: this pid namespace has already handed out pids up "
		    "to %ld (more processes ran in it before the command than when recording), and "
		    "its pid counter cannot be moved back (ns_last_pid: %s)",
		    (int)want, last, r < 0 ? strerror(-r) : "not taken");
	/* No way to set it: use up pids until the next is ours. */
	for (;;) {
		last = read_long("/proc/sys/kernel/ns_last_pid");
		if (last + 1 == want)
			return 0;
		if (last >= want)
			return err_set(
			    err, SBX_E_CONFLICT, ERANGE,
			    "cannot give the command pid %d: another process here took pids up to %ld "
			    "meanwhile",
			    (int)want, last);
		pid_t p = burn_one();
		if (p < 0)
			return err_errno(err, "fork (to reach pid %d)", (int)want);
		if (last < 0) { /* no /proc: judge by what fork returned */
			if (p + 1 == want)
				return 0;
			if (p >= want)
				return err_set(
				    err, SBX_E_CONFLICT, ERANGE,
				    "cannot give the command pid %d: pid %d was already handed out "
				    "(and /proc/sys/kernel/ns_last_pid is not readable)",
				    (int)want, (int)p);
		}
	}
}
