/* The CPU one environment costs: N cycles of sbx_env_create (cold, host
 * template) -> sbx_env_exec (/bin/true) -> sbx_env_remove in this process,
 * which is a child subreaper, so that the detached supervisors (and through
 * them init and the commands) are reaped here and their CPU time is counted
 * in RUSAGE_CHILDREN. Kernel threads (the network namespace's cleanup) are
 * not counted. HEAP_MB of touched heap makes this process as large as a
 * long-lived server (the supervisor is forked from it).
 *   cycle_cpu N [HEAP_MB]      prints one JSON object
 * Built by bench/cycle_cpu.sh against build/lib/libsbx.a. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sbx.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double cpu_ms(int who)
{
	struct rusage ru;
	getrusage(who, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void reap(void)
{
	for (;;) {
		pid_t p = waitpid(-1, NULL, WNOHANG);
		if (p > 0)
			continue;
		if (p < 0 && errno == ECHILD)
			return;
		usleep(1000);
	}
}

static int cycle(sbx_ctx *ctx)
{
	sbx_err *e = NULL;
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	char *id = NULL;
	if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
		return fprintf(stderr, "create: %s\n", sbx_err_message(e)), -1;
	const char *argv[] = {"/bin/true", NULL};
	sbx_exec_opts x = SBX_EXEC_OPTS_INIT;
	x.argv = argv;
	sbx_exec_result r = {0};
	if (sbx_env_exec(ctx, id, &x, &r, &e) < 0)
		return fprintf(stderr, "exec: %s\n", sbx_err_message(e)), -1;
	sbx_exec_result_free(&r);
	if (sbx_env_remove(ctx, id, &e) < 0)
		return fprintf(stderr, "remove: %s\n", sbx_err_message(e)), -1;
	free(id);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	size_t heap = argc > 2 ? (size_t)atoi(argv[2]) << 20 : 0;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return perror("subreaper"), 1;
	char *ballast = heap ? malloc(heap) : NULL;
	if (ballast)
		memset(ballast, 1, heap);
	sbx_ctx *ctx = NULL;
	sbx_err *e = NULL;
	if (sbx_ctx_open(&ctx, &e) < 0)
		return fprintf(stderr, "ctx: %s\n", sbx_err_message(e)), 1;
	for (int i = 0; i < 3; i++) /* the mask list, caches */
		if (cycle(ctx) < 0)
			return 1;
	reap();
	double c0 = cpu_ms(RUSAGE_SELF) + cpu_ms(RUSAGE_CHILDREN), t0 = now_ms();
	for (int i = 0; i < n; i++)
		if (cycle(ctx) < 0)
			return 1;
	double t1 = now_ms();
	reap();
	double c1 = cpu_ms(RUSAGE_SELF) + cpu_ms(RUSAGE_CHILDREN);
	printf("{\"cycles\":%d,\"heap_mb\":%zu,\"wall_ms_per_cycle\":%.3f,\"cpu_ms_per_cycle\":%.3f}\n", n,
	       heap >> 20, (t1 - t0) / n, (c1 - c0) / n);
	sbx_ctx_free(ctx);
	free(ballast);
	return 0;
}
