/* SBX_TRACE_STARTUP: per-step times of a create on stderr (startup_trace.h). */
#include "runtime/startup_trace.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int enabled = -1;
static struct timespec base;
static int pinned_fd = -1;

bool startup_trace_enabled(void)
{
	if (enabled < 0) {
		const char *v = getenv("SBX_TRACE_STARTUP");
		enabled = v && *v && strcmp(v, "0") != 0;
	}
	return enabled;
}

void startup_mark_impl(const char *what)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (base.tv_sec == 0 && base.tv_nsec == 0) {
		/* SBX_TRACE_STARTUP_ABS=1: CLOCK_MONOTONIC itself, so that the
		 * lines of processes of different trees (a pooled supervisor and
		 * the sbx run that takes it) share one clock. */
		const char *a = getenv("SBX_TRACE_STARTUP_ABS");
		base = a && a[0] == '1' ? (struct timespec){0, 1} : now;
	}
	double ms = (double)(now.tv_sec - base.tv_sec) * 1e3 + (double)(now.tv_nsec - base.tv_nsec) / 1e6;
	char name[17] = "";
	(void)prctl(PR_GET_NAME, name, 0, 0, 0);
	char line[256];
	int n = snprintf(line, sizeof(line), "sbx-startup: %9.3f ms  [%d %s] %s\n", ms, (int)getpid(), name,
			 what);
	if (n <= 0)
		return;
	size_t len = (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1;
	/* SBX_TRACE_STARTUP=/path: appended there (every process of the tree,
	 * for as long as it lives); otherwise stderr. */
	const char *v = getenv("SBX_TRACE_STARTUP");
	int fd = pinned_fd >= 0	    ? pinned_fd
		 : v && v[0] == '/' ? open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)
				    : 2;
	if (fd < 0)
		return;
	(void)!write(fd, line, len);
	if (fd != 2 && fd != pinned_fd)
		close(fd);
}

void startup_trace_pin(void)
{
	const char *v = getenv("SBX_TRACE_STARTUP");
	if (startup_trace_enabled() && v[0] == '/' && pinned_fd < 0)
		pinned_fd = open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}
