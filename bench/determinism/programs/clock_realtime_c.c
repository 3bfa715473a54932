/* CLOCK_REALTIME through the vDSO (libc) and through raw syscalls, time(). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static void pr(const char *what, struct timespec ts) { printf("%-28s %lld.%09ld\n", what, (long long)ts.tv_sec, ts.tv_nsec); }
int main(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts); pr("clock_gettime(REALTIME)", ts);
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts); pr("SYS_clock_gettime(REALTIME)", ts);
	clock_gettime(CLOCK_REALTIME_COARSE, &ts); pr("clock_gettime(COARSE)", ts);
	clock_gettime(CLOCK_TAI, &ts); pr("clock_gettime(TAI)", ts);
	printf("%-28s %lld\n", "time(NULL)", (long long)time(NULL));
	printf("%-28s %ld\n", "SYS_time", syscall(SYS_time, NULL));
	return 0;
}
