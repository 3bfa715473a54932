/* CPU time and memory through getrusage() and times(): the kernel's
 * accounting, answered under determinism from the virtual clock (a busy loop
 * costs no virtual time; a child's sleep counts as its CPU time). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/resource.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
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
	pid_t pid = fork();
	if (pid == 0) {
		struct timespec nap = {0, 200000000};
		nanosleep(&nap, NULL);
		for (unsigned long i = 0; i < 10000000; i++) x += i;
		_exit(0);
	}
	int st;
	struct rusage w, c;
	wait4(pid, &st, 0, &w);
	getrusage(RUSAGE_CHILDREN, &c);
	r = times(&t);
	printf("wait4 utime %ld.%06ld minflt %ld; children utime %ld.%06ld maxrss %ld; cutime %ld cstime %ld\n",
	       (long)w.ru_utime.tv_sec, (long)w.ru_utime.tv_usec, w.ru_minflt, (long)c.ru_utime.tv_sec,
	       (long)c.ru_utime.tv_usec, c.ru_maxrss, (long)t.tms_cutime, (long)t.tms_cstime);
	return 0;
}
