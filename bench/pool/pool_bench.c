/* Library-level warm pool benchmark (bench/pool/run builds it against
 * build/lib/libsbx.a). Each mode prints one JSON object of medians (ms):
 *   pool_bench create N        sbx_env_create taking an entry of a pool of
 *                              the host template, then N cold creates
 *   pool_bench fork N SNAP     the same for a fork (sbx_env_create with
 *                              opts.snapshot = SNAP): from a pool of SNAP,
 *                              then cold
 *   pool_bench wake N          sbx_env_resume waking an idle-suspended
 *                              environment, N times
 * Every create is timed alone (CLOCK_MONOTONIC around the call, and this
 * process's CPU time, CLOCK_PROCESS_CPUTIME_ID: less noisy on a shared
 * machine than wall time); the pool
 * is refilled (2 ready) before each take and each environment removed
 * after, untimed. from_pool counts the takes that really came from it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sbx.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n ? v[n / 2] : 0;
}

/* Waits until the pool whose source is source has want ready entries. */
static int wait_ready(sbx_ctx *ctx, const char *source, int want)
{
	for (int i = 0; i < 4000; i++) {
		json_t *j = NULL;
		if (sbx_pool_list(ctx, &j, NULL) < 0)
			return -1;
		int ready = 0;
		size_t k;
		json_t *p;
		json_array_foreach(json_object_get(j, "pools"), k, p)
		{
			const char *s = json_string_value(json_object_get(p, "source"));
			if (s && strcmp(s, source) == 0)
				ready = (int)json_integer_value(json_object_get(p, "ready"));
		}
		json_decref(j);
		if (ready >= want)
			return 0;
		usleep(5000);
	}
	return -1;
}

static int die(const char *what, sbx_err *e)
{
	fprintf(stderr, "pool_bench: %s: %s\n", what, e ? sbx_err_message(e) : "failed");
	exit(1);
}

/* One timed create with o; the environment is removed (untimed). *cpu:
 * this process's CPU time in the call (not the supervisor's or a
 * refiller's: other processes). */
static double timed_create(sbx_ctx *ctx, const sbx_create_opts *o, int *from_pool, double *cpu)
{
	char *id = NULL;
	sbx_err *e = NULL;
	double c0 = cpu_ms(), t0 = now_ms();
	if (sbx_env_create(ctx, o, &id, NULL, &e) < 0)
		die("create", e);
	double t = now_ms() - t0;
	*cpu = cpu_ms() - c0;
	*from_pool += sbx_env_from_pool(ctx, id);
	(void)sbx_env_remove(ctx, id, NULL);
	free(id);
	return t;
}

/* source: the pool's source as sbx_pool_list reports it (the digest for a
 * snapshot); snap: the create's opts.snapshot (NULL: the host template). */
static void bench_create(sbx_ctx *ctx, int n, const char *snap)
{
	const char *source = snap ? snap : "host";
	double *pool = calloc((size_t)n, sizeof(double)), *cold = calloc((size_t)n, sizeof(double));
	double *pcpu = calloc((size_t)n, sizeof(double)), *ccpu = calloc((size_t)n, sizeof(double));
	sbx_err *e = NULL;
	json_t *j = NULL;
	if (!pool || !cold || !pcpu || !ccpu)
		die("calloc", NULL);
	if (sbx_pool_set(ctx, source, 2, NULL, &j, &e) < 0)
		die("pool set", e);
	json_decref(j);
	int from_pool = 0, cold_from_pool = 0;
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.snapshot = snap;
	for (int i = 0; i < n; i++) {
		if (wait_ready(ctx, source, 2) < 0)
			die("the pool did not fill", NULL);
		pool[i] = timed_create(ctx, &o, &from_pool, &pcpu[i]);
	}
	if (sbx_pool_remove(ctx, source, NULL, &j, &e) < 0)
		die("pool rm", e);
	json_decref(j);
	for (int i = 0; i < n; i++)
		cold[i] = timed_create(ctx, &o, &cold_from_pool, &ccpu[i]);
	printf("{\"runs\":%d,\"from_pool\":%d,\"cold_from_pool\":%d,\"pool_ms\":%.3f,\"cold_ms\":%.3f,"
	       "\"pool_cpu_ms\":%.3f,\"cold_cpu_ms\":%.3f}\n",
	       n, from_pool, cold_from_pool, median(pool, n), median(cold, n), median(pcpu, n),
	       median(ccpu, n));
	free(pool);
	free(cold);
	free(pcpu);
	free(ccpu);
}

/* Waking an idle-suspended environment: sbx_env_resume, timed alone. */
static void bench_wake(sbx_ctx *ctx, int n)
{
	double *wake = calloc((size_t)n, sizeof(double));
	sbx_err *e = NULL;
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.idle_suspend_ms = 50;
	char *id = NULL;
	if (!wake)
		die("calloc", NULL);
	if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
		die("create", e);
	char mark[4096], sock[4096];
	snprintf(mark, sizeof(mark), "%s/envs/%s/suspended", getenv("SBX_ROOT"), id);
	snprintf(sock, sizeof(sock), "%s/%s/ctl.sock", getenv("SBX_RUN"), id);
	for (int i = 0; i < n; i++) {
		/* Watched from the outside: any call (inspect too) is activity. */
		int k;
		for (k = 0; k < 1000 && (access(mark, F_OK) != 0 || access(sock, F_OK) == 0); k++)
			usleep(5000);
		if (k == 1000)
			die("not suspended", NULL);
		json_t *st = NULL;
		double t0 = now_ms();
		if (sbx_env_resume(ctx, id, &st, &e) < 0)
			die("resume", e);
		wake[i] = now_ms() - t0;
		json_decref(st);
	}
	(void)sbx_env_remove(ctx, id, NULL);
	free(id);
	printf("{\"runs\":%d,\"wake_ms\":%.3f}\n", n, median(wake, n));
	free(wake);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	if (n < 1 || (strcmp(mode, "fork") == 0) != (argc == 4) ||
	    (strcmp(mode, "create") && strcmp(mode, "fork") && strcmp(mode, "wake"))) {
		fprintf(stderr, "usage: pool_bench create N | fork N SNAPSHOT-DIGEST | wake N\n");
		return 2;
	}
	sbx_ctx *ctx = NULL;
	sbx_err *e = NULL;
	if (sbx_ctx_open(&ctx, &e) < 0)
		die("ctx", e);
	if (strcmp(mode, "wake") == 0)
		bench_wake(ctx, n);
	else
		bench_create(ctx, n, argc == 4 ? argv[3] : NULL);
	sbx_ctx_free(ctx);
	return 0;
}
