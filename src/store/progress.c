/* Progress of long store operations: a per-thread sink, reports throttled
 * to about ten a second (and the final one always). */
#include "store/progress.h"

#include <string.h>
#include <time.h>

#include "util/macro.h"

typedef struct sink {
	sbx_progress_fn fn;
	void *ud;
	sbx_progress p;
	uint64_t start_ns, last_ns;
	bool count_tar;
} sink;

static _Thread_local sink cur;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void emit(bool force)
{
	uint64_t now = mono_ns();
	if (!force && now - cur.last_ns < 100000000u)
		return;
	cur.last_ns = now;
	cur.p.elapsed_ms = (now - cur.start_ns) / 1000000u;
	cur.fn(cur.ud, &cur.p);
}

void store_progress_begin(sbx_progress_fn fn, void *ud, const char *op, uint64_t bytes_total,
			  uint64_t files_total)
{
	cur = (sink){.fn = fn, .ud = ud};
	if (!fn)
		return;
	cur.p.op = op;
	cur.p.bytes_total = bytes_total;
	cur.p.files_total = files_total;
	cur.start_ns = cur.last_ns = mono_ns();
	cur.count_tar = !streq(op, "import") && !streq(op, "export");
	/* A first line at once, then at most every 100 ms: an operation
	 * shorter than that still says what it did (a fast local pull used to
	 * print nothing but the import's lines). */
	emit(true);
}

void store_progress_tar(uint64_t bytes, uint64_t files)
{
	if (cur.fn && cur.count_tar)
		store_progress_add(bytes, files);
}

void store_progress_add(uint64_t bytes, uint64_t files)
{
	if (!cur.fn)
		return;
	cur.p.bytes_done += bytes;
	cur.p.files_done += files;
	emit(false);
}

void store_progress_total(uint64_t bytes, uint64_t files)
{
	if (!cur.fn)
		return;
	cur.p.bytes_total += bytes;
	cur.p.files_total += files;
}

void store_progress_end(void)
{
	if (!cur.fn)
		return;
	cur.p.done = true;
	emit(true);
	cur = (sink){0};
}
