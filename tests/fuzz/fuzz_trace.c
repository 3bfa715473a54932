/* libFuzzer target: the trace readers (src/trace/trace_read.c, trace_decode.c, trace_model.c, trace_render.c,
 * trace_stats.c, trace_chrome.c, trace_norm.c) on arbitrary bytes taken as
 * a trace stream. Checked besides no crash, no out-of-bounds read and no
 * leak (ASan): every failure says why; a stream's normalized view matches
 * itself; a stream that validates merges with itself into one that
 * validates, with both copies' records. Seeds (tests/fuzz/corpus/trace) are
 * written by tests/unit/test_trace_view.c with SBX_WRITE_CORPUS=1. Built
 * and run by tests/fuzz/run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_read.h"
#include "trace/trace_view.h"
#include "util/err.h"

static FILE *null_out;

/* A failure must carry a message. */
static void failed(int r, sbx_err *e)
{
	if (r < 0 && (!e || !sbx_err_message(e)[0]))
		abort();
	sbx_err_free(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!null_out && !(null_out = fopen("/dev/null", "w")))
		abort();
	sbx_err *e = NULL;
	uint64_t n = 0;
	int r, valid = trace_check(data, size, &n, &e);
	failed(valid, e);

	/* Filters derived from the input so they are exercised too. */
	uint32_t pids[2] = {size > 40 ? data[40] : 2, size > 44 ? data[44] : 3};
	static const char *const calls[] = {"openat", "read", "close", "clock_gettime", NULL};
	trace_filter f = {.pids = pids, .n_pids = size & 1 ? 2 : 0, .syscalls = size & 2 ? calls : NULL};

	e = NULL;
	r = trace_show(data, size, &f, null_out, &e);
	failed(r, e);
	json_t *j = NULL;
	e = NULL;
	r = trace_show_json(data, size, NULL, &j, &e);
	failed(r, e);
	json_decref(j);

	j = NULL;
	e = NULL;
	r = trace_stats(data, size, &j, &e);
	failed(r, e);
	if (r == 0) {
		e = NULL;
		int q = trace_stats_print(j, null_out, &e);
		failed(q, e);
		json_decref(j);
	}

	e = NULL;
	r = trace_chrome(data, size, &f, null_out, &e);
	failed(r, e);

	trace_norm *nm = NULL;
	e = NULL;
	r = trace_norm_build(data, size, &nm, &e);
	failed(r, e);
	if (r == 0) {
		trace_norm_diff d;
		if (trace_norm_compare(nm, nm, &d, NULL) != 0)
			abort(); /* a view differs from itself */
		json_decref(trace_norm_diff_json(&d));
		trace_norm_diff_clear(&d);
		trace_norm_print(nm, null_out, NULL);
		trace_norm_free(nm);
	}

	if (valid == 0) {
		void *m = NULL;
		size_t mlen = 0;
		uint64_t n2 = 0;
		if (trace_merge(data, size, data, size, &m, &mlen, NULL) < 0)
			abort();
		if (mlen != 2 * size - sizeof(struct trace_file_header) ||
		    trace_check(m, mlen, &n2, NULL) < 0 || n2 != 2 * n)
			abort();
		free(m);
	}
	return 0;
}
