/* The event rings and the logs queries of the E2B front door
 * (src/server/e2b_events.h). */
#include <stdint.h>

#include "server/e2b_events.h"
#include "unit.h"

static void push(e2b_ring *r, int64_t ts, e2b_log_level l, const char *msg)
{
	e2b_event ev;
	e2b_event_make(&ev, ts, l, msg, NULL, 0);
	e2b_ring_push(r, &ev);
}

TEST(ring_keeps_the_newest)
{
	e2b_ring r;
	e2b_ring_init(&r, 5);
	for (int i = 0; i < 12; i++) {
		char m[16];
		snprintf(m, sizeof(m), "m%d", i);
		push(&r, i, E2B_LOG_INFO, m);
	}
	CHECK(r.n == 5);
	CHECK(r.alloc == 5);
	CHECK_STREQ(e2b_ring_at(&r, 0)->msg, "m7");
	CHECK_STREQ(e2b_ring_at(&r, 4)->msg, "m11");
	e2b_ring_clear(&r);
	CHECK(r.n == 0);
}

TEST(event_strings_cut_and_clean)
{
	char big[1000];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	big[E2B_EVENT_MSG_MAX - 2] = (char)0xc3; /* a 2-byte sequence across the cut */
	big[E2B_EVENT_MSG_MAX - 1] = (char)0xa9;
	const char *kv[] = {"cmd", big, "k2", "v2", "k3", NULL, "k4", "v4", "k5", "v5", "k6", "v6", "odd"};
	e2b_event ev;
	e2b_event_make(&ev, 1, E2B_LOG_WARN, big, kv, 13);
	CHECK(strlen(ev.msg) == E2B_EVENT_MSG_MAX - 2); /* the cut sequence dropped whole */
	CHECK(ev.n_fields == 4);			/* the NULL value skipped, the rest past 4 dropped */
	CHECK_STREQ(ev.key[0], "cmd");
	CHECK(strlen(ev.val[0]) == E2B_EVENT_VAL_MAX - 1);
	CHECK_STREQ(ev.key[2], "k4");
	CHECK_STREQ(ev.key[3], "k5");
	const char bad[] = {'x', (char)0xff, 'y', 0};
	e2b_event_make(&ev, 1, (e2b_log_level)99, bad, NULL, 0);
	CHECK_STREQ(ev.msg, "x\xef\xbf\xbdy");
	CHECK(ev.level == E2B_LOG_INFO);
}

TEST(query_v1_params)
{
	e2b_log_query q;
	const char *why = NULL;
	CHECK(e2b_log_query_v1(NULL, NULL, &q, &why) == 0);
	CHECK(q.limit == 1000 && q.cursor_ms == 0 && !q.backward);
	CHECK(e2b_log_query_v1("1700000000000", "5", &q, &why) == 0);
	CHECK(q.limit == 5 && q.cursor_ms == 1700000000000LL);
	CHECK(e2b_log_query_v1(NULL, "999999999", &q, &why) == 0);
	CHECK(q.limit == 1000);
	CHECK(e2b_log_query_v1("-1", NULL, &q, &why) < 0);
	CHECK(e2b_log_query_v1(NULL, "-5", &q, &why) < 0);
	CHECK(e2b_log_query_v1(NULL, "1x", &q, &why) < 0);
	CHECK(e2b_log_query_v1("99999999999999999999999", NULL, &q, &why) < 0);
}

TEST(query_v2_params)
{
	e2b_log_query q;
	const char *why = NULL;
	CHECK(e2b_log_query_v2(NULL, NULL, NULL, NULL, NULL, 5000, &q, &why) == 0);
	CHECK(!q.backward && q.cursor_ms == 0 && q.limit == 1000 && q.min_level == E2B_LOG_DEBUG);
	CHECK(e2b_log_query_v2(NULL, "0", "backward", "warn", "ab", 5000, &q, &why) == 0);
	CHECK(q.backward && q.cursor_ms == 5000 && q.limit == 0 && q.min_level == E2B_LOG_WARN);
	CHECK_STREQ(q.search, "ab");
	CHECK(e2b_log_query_v2(NULL, "1001", NULL, NULL, NULL, 0, &q, &why) < 0);
	CHECK(e2b_log_query_v2(NULL, NULL, "sideways", NULL, NULL, 0, &q, &why) < 0);
	CHECK(e2b_log_query_v2(NULL, NULL, NULL, "fatal", NULL, 0, &q, &why) < 0);
	CHECK(e2b_log_query_v2("-3", NULL, NULL, NULL, NULL, 0, &q, &why) < 0);
	char s[300];
	memset(s, 'x', 257);
	s[257] = 0;
	CHECK(e2b_log_query_v2(NULL, NULL, NULL, NULL, s, 0, &q, &why) < 0);
	s[256] = 0;
	CHECK(e2b_log_query_v2(NULL, NULL, NULL, NULL, s, 0, &q, &why) == 0);
}

TEST(select_orders_and_filters)
{
	e2b_ring r;
	e2b_ring_init(&r, 16);
	push(&r, 10, E2B_LOG_INFO, "created");
	push(&r, 20, E2B_LOG_DEBUG, "noise");
	push(&r, 30, E2B_LOG_WARN, "timeout");
	push(&r, 40, E2B_LOG_ERROR, "failed");
	size_t idx[16];
	e2b_log_query q;
	const char *why;
	CHECK(e2b_log_query_v2("20", NULL, NULL, NULL, NULL, 0, &q, &why) == 0);
	CHECK(e2b_log_select(&r, &q, idx) == 3);
	CHECK(idx[0] == 1 && idx[2] == 3);
	CHECK(e2b_log_query_v2("30", "1", "backward", NULL, NULL, 0, &q, &why) == 0);
	CHECK(e2b_log_select(&r, &q, idx) == 1);
	CHECK(idx[0] == 2);
	CHECK(e2b_log_query_v2(NULL, NULL, NULL, "warn", NULL, 0, &q, &why) == 0);
	CHECK(e2b_log_select(&r, &q, idx) == 2);
	CHECK(e2b_log_query_v2(NULL, NULL, NULL, NULL, "eat", 0, &q, &why) == 0);
	CHECK(e2b_log_select(&r, &q, idx) == 1 && idx[0] == 0);
	e2b_ring_clear(&r);
}

TEST(ids_parse)
{
	char ids[E2B_METRICS_IDS_MAX][E2B_EVENT_ID_MAX + 1];
	size_t n;
	const char *why;
	CHECK(e2b_ids_parse("a,b,a", ids, &n, &why) == 0);
	CHECK(n == 2);
	CHECK_STREQ(ids[1], "b");
	CHECK(e2b_ids_parse("", ids, &n, &why) < 0);
	CHECK(e2b_ids_parse(NULL, ids, &n, &why) < 0);
	CHECK(e2b_ids_parse("a,", ids, &n, &why) < 0);
	CHECK(e2b_ids_parse(",a", ids, &n, &why) < 0);
	char many[101 * 4 + 1] = "";
	for (int i = 0; i < 101; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d", i ? "," : "", i);
	CHECK(e2b_ids_parse(many, ids, &n, &why) < 0);
	*strrchr(many, ',') = 0; /* 100 */
	CHECK(e2b_ids_parse(many, ids, &n, &why) == 0 && n == 100);
	char longid[80];
	memset(longid, 'a', 65);
	longid[65] = 0;
	CHECK(e2b_ids_parse(longid, ids, &n, &why) < 0);
}

TEST(refresh_never_shortens)
{
	CHECK(e2b_refresh_end(100000, 0, 10) == 100000);
	CHECK(e2b_refresh_end(0, 1000, 10) == 11000);
	CHECK(e2b_refresh_end(0, 0, 999999) == 3600000);
	CHECK(e2b_refresh_end(500, 0, -5) == 500);
}

TEST(table_bounded)
{
	e2b_events *t = e2b_events_new();
	CHECK(t);
	char id[32];
	for (int i = 0; i < E2B_EVENTS_SANDBOXES + 20; i++) {
		snprintf(id, sizeof(id), "s%d", i);
		e2b_events_add_at(t, id, i, E2B_LOG_INFO, "created", NULL, 0);
	}
	CHECK(e2b_events_count(t) == E2B_EVENTS_SANDBOXES);
	for (int i = 0; i < 1000; i++)
		e2b_events_add_at(t, "s600", i, E2B_LOG_INFO, "flood", NULL, 0);
	e2b_log_query q;
	const char *why;
	e2b_log_query_v1(NULL, NULL, &q, &why);
	e2b_event *v;
	size_t n;
	CHECK(e2b_events_query(t, "s600", &q, &v, &n) == 0);
	CHECK(n == E2B_EVENTS_PER_SANDBOX);
	CHECK(v[0].seq < v[1].seq);
	free(v);
	CHECK(e2b_events_query(t, "s0", &q, &v, &n) == 0 && n == 0 && !v); /* evicted, oldest */
	e2b_events_drop(t, "s600");
	CHECK(e2b_events_query(t, "s600", &q, &v, &n) == 0 && n == 0);
	CHECK(e2b_events_count(t) == E2B_EVENTS_SANDBOXES - 1);
	e2b_events_add(t, "", E2B_LOG_INFO, "x", NULL, 0); /* no id: ignored */
	CHECK(e2b_events_count(t) == E2B_EVENTS_SANDBOXES - 1);
	e2b_events_unref(e2b_events_ref(t));
	e2b_events_unref(t);
}
