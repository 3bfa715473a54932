/* CPU time in C: clock(), CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID. */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
static long long ns(clockid_t c) { struct timespec ts; clock_gettime(c, &ts); return ts.tv_sec * 1000000000LL + ts.tv_nsec; }
int main(void)
{
	clock_t c0 = clock();
	long long p0 = ns(CLOCK_PROCESS_CPUTIME_ID), t0 = ns(CLOCK_THREAD_CPUTIME_ID);
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 30000000; i++) x += i;
	printf("clock()      %ld -> %ld\n", (long)c0, (long)clock());
	printf("PROCESS_CPU  %lld -> %lld\n", p0, ns(CLOCK_PROCESS_CPUTIME_ID));
	printf("THREAD_CPU   %lld -> %lld\n", t0, ns(CLOCK_THREAD_CPUTIME_ID));
	return 0;
}
