#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

bool log_debug_enabled;

void log_init(void)
{
	const char *e = getenv("SBX_DEBUG");
	log_debug_enabled = e && *e && *e != '0';
}

void log_debug_impl(const char *fmt, ...)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "sbx[%d] %ld.%06ld: ", (int)getpid(), (long)ts.tv_sec,
			 ts.tv_nsec / 1000);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	size_t len =
	    (size_t)n + ((size_t)m < sizeof(buf) - (size_t)n - 1 ? (size_t)m : sizeof(buf) - (size_t)n - 2);
	buf[len++] = '\n';
	(void)!write(2, buf, len);
}
