/* CPU time and memory through getrusage() and times(): syscalls that report
 * the kernel's accounting, not a clock. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/times.h>
int main(void)
{
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 30000000; i++) x += i;
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("ru_utime %ld.%06ld ru_stime %ld.%06ld\n", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
	       (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	printf("ru_maxrss %ld ru_minflt %ld ru_nvcsw %ld ru_nivcsw %ld\n", ru.ru_maxrss, ru.ru_minflt, ru.ru_nvcsw, ru.ru_nivcsw);
	struct tms t;
	clock_t r = times(&t);
	printf("times() %ld utime %ld stime %ld\n", (long)r, (long)t.tms_utime, (long)t.tms_stime);
	return 0;
}
