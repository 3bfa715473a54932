/* In-place restore with and without the standby init (docs/warm.md
 * "Restore"), through the library, against a cold create, in one run
 * (bench/restore_standby builds it against build/lib/libsbx.a and runs it):
 *   restore_standby SIZE_MB ROUNDS
 * Two environments of SIZE_MB (the snapshot bench's workload: half 4 KiB
 * files, half four big files), each snapshotted and restored once; then per
 * round, the RL pattern on both: an episode (one exec that changes a file),
 * then sbx_env_restore to the snapshot, timed alone: A with the standby
 * (SBX_RESTORE_STANDBY unset), B without (=0); and a cold sbx_env_create
 * (removed after, untimed). Then an exec right after each restore, timed
 * (does building the next standby delay it?), and the one after that
 * (exec_second_*: the same command once the restore's aftermath is past;
 * exec_after_over_second is the median of their per-round ratios). Prints one JSON object:
 * medians (ms) and the medians of the per-round ratios (a shared machine's
 * load swings cancel within a round); standby_used counts A's restores
 * that the standby served. */
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

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n ? v[n / 2] : 0;
}

static void die(const char *what, sbx_err *e)
{
	fprintf(stderr, "restore_standby: %s: %s\n", what, e ? sbx_err_message(e) : "failed");
	exit(1);
}

static double run(sbx_ctx *ctx, const char *id, const char *script)
{
	const char *argv[] = {"sh", "-c", script, NULL};
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = argv;
	o.capture = true;
	sbx_exec_result r = {0};
	sbx_err *e = NULL;
	double t0 = now_ms();
	if (sbx_env_exec(ctx, id, &o, &r, &e) < 0 || r.exit_code != 0)
		die("exec", e);
	double t = now_ms() - t0;
	sbx_exec_result_free(&r);
	return t;
}

/* One restore, timed; *used: whether the standby served it. */
static double restore(sbx_ctx *ctx, const char *id, const char *snap, bool standby, int *used)
{
	if (standby)
		unsetenv("SBX_RESTORE_STANDBY");
	else
		setenv("SBX_RESTORE_STANDBY", "0", 1);
	json_t *j = NULL;
	sbx_err *e = NULL;
	double t0 = now_ms();
	if (sbx_env_restore(ctx, id, snap, &j, &e) < 0)
		die("restore", e);
	double t = now_ms() - t0;
	*used += json_is_true(json_object_get(j, "standby"));
	json_decref(j);
	unsetenv("SBX_RESTORE_STANDBY");
	return t;
}

static char *setup(sbx_ctx *ctx, int mb, char **ret_snap)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.memory_bytes = 4LL << 30;
	char *id = NULL;
	sbx_err *e = NULL;
	if (sbx_env_create(ctx, &o, &id, NULL, &e) < 0)
		die("create", e);
	char script[1024];
	snprintf(
	    script, sizeof(script),
	    "python3 -c \"\nimport os\nn = %d * 1024 * 1024\nos.makedirs('/root/w/small', exist_ok=True)\n"
	    "for i in range(n // 2 // 4096):\n    d = '/root/w/small/%%03d' %% (i %% 256)\n"
	    "    os.makedirs(d, exist_ok=True)\n    open('%%s/f%%d' %% (d, i), "
	    "'wb').write(os.urandom(4096))\n"
	    "for i in range(4):\n    open('/root/w/big%%d' %% i, 'wb').write(os.urandom(n // 8))\n\"",
	    mb);
	run(ctx, id, script);
	json_t *j = NULL;
	if (sbx_env_snapshot(ctx, id, NULL, &j, &e) < 0)
		die("snapshot", e);
	*ret_snap = strdup(json_string_value(json_object_get(j, "snapshot_id")));
	json_decref(j);
	return id;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return fprintf(stderr, "usage: restore_standby SIZE_MB ROUNDS\n"), 2;
	int mb = atoi(argv[1]), n = atoi(argv[2]);
	sbx_ctx *ctx = NULL;
	sbx_err *e = NULL;
	if (sbx_ctx_open(&ctx, &e) < 0)
		die("context", e);
	char *sa = NULL, *sb = NULL;
	char *a = setup(ctx, mb, &sa), *b = setup(ctx, mb, &sb);
	int used = 0, ignored = 0;
	(void)restore(ctx, a, sa, true, &ignored);
	(void)restore(ctx, b, sb, false, &ignored);
	double *ra = calloc((size_t)n, sizeof(double)), *rb = calloc((size_t)n, sizeof(double)),
	       *cold = calloc((size_t)n, sizeof(double)), *xa = calloc((size_t)n, sizeof(double)),
	       *xb = calloc((size_t)n, sizeof(double)), *ya = calloc((size_t)n, sizeof(double)),
	       *yb = calloc((size_t)n, sizeof(double)), *q_x = calloc((size_t)n, sizeof(double)), *q_ac = calloc((size_t)n, sizeof(double)),
	       *q_ab = calloc((size_t)n, sizeof(double)), *q_bc = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		run(ctx, a, "echo x > /root/w/change");
		run(ctx, b, "echo x > /root/w/change");
		ra[i] = restore(ctx, a, sa, true, &used);
		xa[i] = run(ctx, a, "true");
		ya[i] = run(ctx, a, "true");
		q_x[i] = xa[i] / ya[i];
		rb[i] = restore(ctx, b, sb, false, &ignored);
		xb[i] = run(ctx, b, "true");
		yb[i] = run(ctx, b, "true");
		sbx_create_opts o = SBX_CREATE_OPTS_INIT;
		char *c = NULL;
		double t0 = now_ms();
		if (sbx_env_create(ctx, &o, &c, NULL, &e) < 0)
			die("cold create", e);
		cold[i] = now_ms() - t0;
		(void)sbx_env_remove(ctx, c, NULL);
		free(c);
		q_ac[i] = ra[i] / cold[i];
		q_ab[i] = ra[i] / rb[i];
		q_bc[i] = rb[i] / cold[i];
	}
	(void)sbx_env_remove(ctx, a, NULL);
	(void)sbx_env_remove(ctx, b, NULL);
	printf(
	    "{\"size_mb\": %d, \"rounds\": %d, \"standby_used\": %d, \"restore_standby_ms\": %.2f, "
	    "\"restore_no_standby_ms\": %.2f, \"cold_create_ms\": %.2f, \"exec_after_standby_ms\": %.2f, "
	    "\"exec_after_no_standby_ms\": %.2f, \"exec_second_standby_ms\": %.2f, \"exec_second_no_standby_ms\": "
	    "%.2f, \"exec_after_over_second\": %.3f, \"standby_over_cold\": %.3f, \"standby_over_no_standby\": "
	    "%.3f, \"no_standby_over_cold\": %.3f}\n",
	    mb, n, used, median(ra, n), median(rb, n), median(cold, n), median(xa, n), median(xb, n),
	    median(ya, n), median(yb, n), median(q_x, n),
	    median(q_ac, n), median(q_ab, n), median(q_bc, n));
	sbx_ctx_free(ctx);
	return 0;
}
