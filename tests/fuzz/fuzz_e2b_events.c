/* libFuzzer target: the E2B logs, metrics and refresh parameters and the
 * event rings (pure, src/server/e2b_events.h). The input's lines are the
 * query values as a client sends them: start/cursor, limit, direction,
 * level, search, then sandbox_ids; the rest goes into a ring as events.
 * Nothing may read past a string, a selection must stay in its limit, in
 * order, and the table must stay bounded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b_events.h"

static char *next_line(char **p)
{
	if (!*p)
		return NULL;
	char *s = *p, *nl = strchr(s, '\n');
	if (nl) {
		*nl = 0;
		*p = nl + 1;
	} else
		*p = NULL;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = 0;
	char *p = buf;
	char *cur = next_line(&p), *lim = next_line(&p), *dir = next_line(&p), *lvl = next_line(&p);
	char *search = next_line(&p), *ids = next_line(&p);
	e2b_log_query q;
	const char *why = NULL;
	if (e2b_log_query_v1(cur, lim, &q, &why) == 0 && q.limit > E2B_LOGS_LIMIT_MAX)
		abort();
	int v2 = e2b_log_query_v2(cur, lim, dir, lvl, search, 1000, &q, &why);
	if (v2 < 0 && !why)
		abort();
	char(*v)[E2B_EVENT_ID_MAX + 1] = calloc(E2B_METRICS_IDS_MAX, sizeof(*v));
	size_t n = 0;
	if (v && e2b_ids_parse(ids, v, &n, &why) == 0) {
		if (n == 0 || n > E2B_METRICS_IDS_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if (!v[i][0] || strchr(v[i], ','))
				abort();
	}
	free(v);
	if (e2b_refresh_end(5, 0, (int64_t)size - 100) < 5)
		abort();
	/* the rest: one event per line, its ts the line's length */
	e2b_ring r;
	e2b_ring_init(&r, 8);
	char *line;
	int64_t ts = 0;
	while ((line = next_line(&p))) {
		const char *kv[] = {"k", line, line, "v", "odd"};
		e2b_event ev;
		e2b_event_make(&ev, ts += (int64_t)strlen(line) % 3, (e2b_log_level)(strlen(line) % 5), line,
			       kv, 5);
		if (strlen(ev.msg) >= E2B_EVENT_MSG_MAX || ev.n_fields > E2B_EVENT_FIELDS)
			abort();
		e2b_ring_push(&r, &ev);
	}
	if (r.n > 8)
		abort();
	if (v2 == 0) {
		size_t idx[8];
		if (q.limit > 8)
			q.limit = 8;
		size_t k = e2b_log_select(&r, &q, idx);
		for (size_t i = 0; i < k; i++) {
			if (idx[i] >= r.n)
				abort();
			if (i && (q.backward ? idx[i] >= idx[i - 1] : idx[i] <= idx[i - 1]))
				abort();
		}
	}
	e2b_ring_clear(&r);
	free(buf);
	return 0;
}
