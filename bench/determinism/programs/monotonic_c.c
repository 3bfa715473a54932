/* Monotonic clocks (vDSO and raw), and the difference across some work. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static long long ns(clockid_t c) { struct timespec ts; clock_gettime(c, &ts); return ts.tv_sec * 1000000000LL + ts.tv_nsec; }
int main(void)
{
	struct timespec ts;
	long long a = ns(CLOCK_MONOTONIC);
	printf("MONOTONIC        %lld\n", a);
	printf("MONOTONIC_RAW    %lld\n", ns(CLOCK_MONOTONIC_RAW));
	printf("MONOTONIC_COARSE %lld\n", ns(CLOCK_MONOTONIC_COARSE));
	printf("BOOTTIME         %lld\n", ns(CLOCK_BOOTTIME));
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	printf("SYS MONOTONIC    %lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 20000000; i++) x += i;
	printf("elapsed over a loop: %lld ns\n", ns(CLOCK_MONOTONIC) - a);
	return 0;
}
