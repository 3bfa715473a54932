/* Milliseconds on a clock, once for every file that counts them, and a
 * realtime millisecond written as RFC 3339 (UTC). */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline int64_t clock_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ms (CLOCK_REALTIME milliseconds) as "2026-12-07T01:02:03.456Z". */
static inline void clock_iso_ms(int64_t ms, char buf[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 32 - n, ".%03dZ", (int)(ms % 1000));
}
