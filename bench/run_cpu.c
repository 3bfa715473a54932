/* The CPU and wall time of one command line (a cold `sbx run -- /bin/true`,
 * or bubblewrap's equivalent), counted over every process it starts: this
 * process is a child subreaper, so the detached ones (sbx's supervisor, init
 * and its commands, the reclaimer) are reaped here after each run and their
 * CPU lands in RUSAGE_CHILDREN. Kernel threads (a network namespace's
 * cleanup) are not counted. Wall time is the command's own (until it
 * exits), as a user of it sees it.
 *   run_cpu N CMD [ARG...]     prints one JSON object
 * Built by bench/run_cpu.sh. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage_of(struct rusage *ru)
{
	getrusage(RUSAGE_CHILDREN, ru);
}

static double cpu_ms(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3;
}

/* Every descendant, including those that outlive the command (a lingering
 * supervisor): wait until none is left. */
static void reap_all(void)
{
	while (wait(NULL) > 0 || errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return fprintf(stderr, "usage: run_cpu N CMD [ARG...]\n"), 2;
	int n = atoi(argv[1]);
	if (n <= 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return perror("run_cpu"), 1;
	struct rusage r0, r1;
	usage_of(&r0);
	double wall = 0;
	int failed = 0;
	for (int i = 0; i < n; i++) {
		double t = now_ms();
		pid_t p = fork();
		if (p < 0)
			return perror("fork"), 1;
		if (p == 0) {
			int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
			if (null >= 0)
				dup2(null, 1);
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		int st = 0;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		wall += now_ms() - t;
		failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		reap_all();
	}
	usage_of(&r1);
	printf("{\"runs\":%d,\"failed\":%d,\"cpu_ms_per_run\":%.3f,\"wall_ms_per_run\":%.3f,"
	       "\"minor_faults_per_run\":%.1f}\n",
	       n, failed, (cpu_ms(&r1) - cpu_ms(&r0)) / n, wall / n,
	       (double)(r1.ru_minflt - r0.ru_minflt) / n);
	return failed ? 1 : 0;
}
