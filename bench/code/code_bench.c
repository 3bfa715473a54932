/* Later cells of the code interpreter through the library, against a
 * python3 started by exec in the same environment (bench/code/run builds it
 * against build/lib/libsbx.a and runs it):
 *   code_bench ID ROUNDS
 * ID: a live environment whose default python context already ran a first
 * cell (`x = 1`). Per round, interleaved so that a shared machine's load
 * swings hit both alike: sbx_run_code of `x+1` in that context (checked: its
 * main result is "2"), then sbx_env_exec of `python3 -c 'x=1; print(x+1)'`
 * (checked: "2"). Prints one JSON object: median and p99 (ms) of each, and
 * the median of the per-round ratios code/exec.
 *   code_bench --first pool|cold ROUNDS
 * A create that wants code (sbx_create_opts.code) and its first sbx_run_code
 * of `1+1` (checked: "2"), timed together, then the environment removed
 * (untimed). pool: a code pool of host (sbx pool set host --size N --code)
 * is full before each round (so no refill competes with the round), and the
 * round counts as pooled only if its create took an entry; cold: no pool, the
 * first run starts the bridge and its kernel. Prints one JSON object: median,
 * p90 and max (ms), and how many rounds came from the pool.
 *   code_bench --stdin ID
 * One sbx_run_code of `x+1` in ID per line read on stdin (the line: the
 * context to run it in, empty: the default one), its time (ms) printed as
 * one line: bench/code/later.mjs interleaves it with the same cell through
 * MCP and E2B's SDK, round by round. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The q-quantile (0.5: median, 0.99: p99) of v[0..n), which it sorts. */
static double quantile(double *v, int n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp);
	int i = (int)(q * (n - 1) + 0.5);
	return v[i];
}

static void die(const char *what, sbx_err *e)
{
	fprintf(stderr, "code_bench: %s: %s\n", what, e ? sbx_err_message(e) : "failed");
	exit(1);
}

static double run_cell(sbx_ctx *ctx, const char *id, const char *context_id)
{
	sbx_code_opts o = SBX_CODE_OPTS_INIT;
	o.code = "x+1";
	o.context_id = context_id;
	json_t *r = NULL;
	sbx_err *e = NULL;
	double t0 = now_ms();
	if (sbx_run_code(ctx, id, &o, &r, &e) < 0)
		die("run code", e);
	double t = now_ms() - t0;
	json_t *first = json_array_get(json_object_get(r, "results"), 0);
	const char *text = json_string_value(json_object_get(first, "text"));
	if (!text || strcmp(text, "2") != 0)
		die("x+1 did not answer 2 (was the first cell `x = 1` run?)", NULL);
	json_decref(r);
	return t;
}

static double run_exec(sbx_ctx *ctx, const char *id)
{
	static const char *const argv[] = {"python3", "-c", "x=1; print(x+1)", NULL};
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = argv;
	o.capture = true;
	sbx_exec_result r = {0};
	sbx_err *e = NULL;
	double t0 = now_ms();
	if (sbx_env_exec(ctx, id, &o, &r, &e) < 0)
		die("exec", e);
	double t = now_ms() - t0;
	if (r.exit_code != 0 || !r.stdout_buf || strcmp(r.stdout_buf, "2\n") != 0)
		die("python3 -c did not print 2", NULL);
	sbx_exec_result_free(&r);
	return t;
}

/* Ready entries of the code pools of this store. */
static int code_ready(sbx_ctx *ctx)
{
	json_t *l = NULL;
	if (sbx_pool_list(ctx, &l, NULL) < 0)
		return -1;
	int n = 0;
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(l, "pools"), i, p)
	{
		if (json_is_true(json_object_get(p, "code")))
			n += (int)json_integer_value(json_object_get(p, "ready"));
	}
	json_decref(l);
	return n;
}

static int first_cells(sbx_ctx *ctx, bool pool, int n)
{
	double *t = calloc((size_t)n, sizeof(double));
	int from_pool = 0, full = pool ? code_ready(ctx) : 0;
	if (!t || (pool && full < 1))
		die(pool ? "no ready code pool entry (sbx pool set host --size N --code)" : "calloc", NULL);
	for (int i = 0; i < n; i++) {
		for (int w = 0; pool && code_ready(ctx) < full && w < 1200; w++) {
			struct timespec ts = {0, 50 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		sbx_create_opts co = SBX_CREATE_OPTS_INIT;
		co.code = true;
		sbx_code_opts o = SBX_CODE_OPTS_INIT;
		o.code = "1+1";
		char *id = NULL;
		json_t *r = NULL;
		sbx_err *e = NULL;
		double t0 = now_ms();
		if (sbx_env_create(ctx, &co, &id, NULL, &e) < 0)
			die("create", e);
		if (sbx_run_code(ctx, id, &o, &r, &e) < 0)
			die("run code", e);
		t[i] = now_ms() - t0;
		json_t *first = json_array_get(json_object_get(r, "results"), 0);
		const char *text = json_string_value(json_object_get(first, "text"));
		if (!text || strcmp(text, "2") != 0)
			die("1+1 did not answer 2", NULL);
		from_pool += sbx_env_from_pool(ctx, id);
		json_decref(r);
		if (sbx_env_remove(ctx, id, &e) < 0)
			die("remove", e);
		free(id);
	}
	printf("{\"rounds\":%d,\"from_pool\":%d,\"median_ms\":%.3f,\"p90_ms\":%.3f,\"max_ms\":%.3f}\n", n,
	       from_pool, quantile(t, n, 0.5), quantile(t, n, 0.9), quantile(t, n, 1.0));
	free(t);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--first") == 0) {
		sbx_ctx *ctx = NULL;
		sbx_err *e = NULL;
		if (sbx_ctx_open(&ctx, &e) < 0)
			die("open", e);
		int r = first_cells(ctx, strcmp(argv[2], "pool") == 0, atoi(argv[3]) > 0 ? atoi(argv[3]) : 1);
		sbx_ctx_free(ctx);
		return r;
	}
	if (argc == 3 && strcmp(argv[1], "--stdin") == 0) {
		sbx_ctx *ctx = NULL;
		sbx_err *e = NULL;
		if (sbx_ctx_open(&ctx, &e) < 0)
			die("open", e);
		char line[256];
		while (fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\n")] = 0;
			printf("%.3f\n", run_cell(ctx, argv[2], line[0] ? line : NULL));
			fflush(stdout);
		}
		sbx_ctx_free(ctx);
		return 0;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: code_bench ID ROUNDS | code_bench --first pool|cold ROUNDS | code_bench --stdin ID\n");
		return 2;
	}
	const char *id = argv[1];
	int n = atoi(argv[2]);
	if (n < 1)
		n = 1;
	sbx_ctx *ctx = NULL;
	sbx_err *e = NULL;
	if (sbx_ctx_open(&ctx, &e) < 0)
		die("open", e);
	double *code = calloc((size_t)n, sizeof(double)), *exec = calloc((size_t)n, sizeof(double)),
	       *ratio = calloc((size_t)n, sizeof(double));
	if (!code || !exec || !ratio)
		die("calloc", NULL);
	/* Warm-up, untimed: the first of each pays for page faults and caches. */
	for (int i = 0; i < 3; i++) {
		run_cell(ctx, id, NULL);
		run_exec(ctx, id);
	}
	for (int i = 0; i < n; i++) {
		code[i] = run_cell(ctx, id, NULL);
		exec[i] = run_exec(ctx, id);
		ratio[i] = code[i] / exec[i];
	}
	printf("{\"rounds\":%d,\"code_ms\":%.3f,\"code_p99_ms\":%.3f,\"exec_ms\":%.3f,\"exec_p99_ms\":%.3f,"
	       "\"ratio\":%.4f}\n",
	       n, quantile(code, n, 0.5), quantile(code, n, 0.99), quantile(exec, n, 0.5),
	       quantile(exec, n, 0.99), quantile(ratio, n, 0.5));
	free(code);
	free(exec);
	free(ratio);
	sbx_ctx_free(ctx);
	return 0;
}
