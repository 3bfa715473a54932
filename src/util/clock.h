/* Milliseconds on a clock, once for every file that counts them. */
#pragma once
#include <stdint.h>
#include <time.h>

static inline int64_t clock_ms(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
