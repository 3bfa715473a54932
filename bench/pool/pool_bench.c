/* Library-level warm pool benchmark (bench/pool/run builds it against
 * build/lib/libsbx.a): median time of sbx_env_create taking a pool entry,
 * of a cold create with the same options, and of sbx_env_resume waking an
 * idle-suspended environment. Prints one JSON object. */
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

static int wait_ready(sbx_ctx *ctx, int want)
{
	for (int i = 0; i < 2000; i++) {
		json_t *j = NULL;
		if (sbx_pool_list(ctx, &j, NULL) < 0)
			return -1;
		json_t *p = json_array_get(json_object_get(j, "pools"), 0);
		int ready = (int)json_integer_value(json_object_get(p, "ready"));
		json_decref(j);
		if (ready >= want)
			return 0;
		usleep(5000);
	}
	return -1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	sbx_ctx *ctx = NULL;
	sbx_err *e = NULL;
	if (sbx_ctx_open(&ctx, &e) < 0) {
		fprintf(stderr, "ctx: %s\n", sbx_err_message(e));
		return 1;
	}
	double *pool = calloc((size_t)n, sizeof(double)), *cold = calloc((size_t)n, sizeof(double)),
	       *wake = calloc((size_t)n, sizeof(double));
	json_t *j = NULL;
	if (sbx_pool_set(ctx, "host", 2, NULL, &j, &e) < 0) {
		fprintf(stderr, "pool set: %s\n", sbx_err_message(e));
		return 1;
	}
	json_decref(j);
	int from_pool = 0;
	for (int i = 0; i < n; i++) {
		if (wait_ready(ctx, 2) < 0)
			return fprintf(stderr, "the pool did not fill\n"), 1;
		sbx_create_opts o = SBX_CREATE_OPTS_INIT;
		char *id = NULL;
		double t0 = now_ms();
		if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
			return fprintf(stderr, "create: %s\n", sbx_err_message(e)), 1;
		pool[i] = now_ms() - t0;
		from_pool += sbx_env_from_pool(ctx, id);
		(void)sbx_env_remove(ctx, id, NULL);
		free(id);
	}
	(void)sbx_pool_remove(ctx, "host", NULL, &j, NULL);
	json_decref(j);
	for (int i = 0; i < n; i++) {
		sbx_create_opts o = SBX_CREATE_OPTS_INIT;
		char *id = NULL;
		double t0 = now_ms();
		if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
			return fprintf(stderr, "create: %s\n", sbx_err_message(e)), 1;
		cold[i] = now_ms() - t0;
		(void)sbx_env_remove(ctx, id, NULL);
		free(id);
	}
	/* Waking an idle-suspended environment (library, then the next exec). */
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.idle_suspend_ms = 50;
	char *id = NULL;
	if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
		return fprintf(stderr, "create: %s\n", sbx_err_message(e)), 1;
	for (int i = 0; i < n; i++) {
		/* Watched from the outside: any call (inspect too) is activity. */
		json_t *st = NULL;
		char mark[4096], sock[4096];
		snprintf(mark, sizeof(mark), "%s/envs/%s/suspended", getenv("SBX_ROOT"), id);
		snprintf(sock, sizeof(sock), "%s/%s/ctl.sock", getenv("SBX_RUN"), id);
		int k;
		for (k = 0; k < 400 && (access(mark, F_OK) != 0 || access(sock, F_OK) == 0); k++)
			usleep(5000);
		if (k == 400)
			return fprintf(stderr, "not suspended\n"), 1;
		double t0 = now_ms();
		if (sbx_env_resume(ctx, id, &st, &e) < 0)
			return fprintf(stderr, "resume: %s\n", sbx_err_message(e)), 1;
		wake[i] = now_ms() - t0;
		json_decref(st);
	}
	(void)sbx_env_remove(ctx, id, NULL);
	printf("{\"runs\":%d,\"from_pool\":%d,\"pool_create_ms\":%.3f,\"cold_create_ms\":%.3f,\"wake_ms\":%.3f}\n", n,
	       from_pool, median(pool, n), median(cold, n), median(wake, n));
	sbx_ctx_free(ctx);
	return 0;
}
