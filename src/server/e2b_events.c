/* The sandboxes' event rings and the logs queries (see e2b_events.h). */
#include "server/e2b_events.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/clock.h"
#include "util/macro.h"
#include "util/utf8.h"

static const char *const level_names[] = {"debug", "info", "warn", "error"};

const char *e2b_log_level_name(e2b_log_level l)
{
	return (unsigned)l < ARRAY_SIZE(level_names) ? level_names[l] : "info";
}

int e2b_log_level_parse(const char *s, e2b_log_level *ret)
{
	for (size_t i = 0; s && i < ARRAY_SIZE(level_names); i++)
		if (streq(s, level_names[i])) {
			*ret = (e2b_log_level)i;
			return 0;
		}
	return -1;
}

/* s into dst (size bytes): valid UTF-8 (bad bytes U+FFFD), cut whole. */
static void copy_cut(char *dst, size_t size, const char *s)
{
	size_t n = 0;
	char *clean = s ? utf8_sanitize(s, strnlen(s, size * 4), &n) : NULL;
	const char *src = clean ? clean : "";
	if (!clean)
		n = 0;
	if (n > size - 1)
		n = utf8_complete_prefix(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
	free(clean);
}

void e2b_event_make(e2b_event *ev, int64_t ts_ms, e2b_log_level level, const char *msg, const char *const *kv,
		    size_t n_kv)
{
	memset(ev, 0, sizeof(*ev));
	ev->ts_ms = ts_ms;
	ev->level = (unsigned)level <= E2B_LOG_ERROR ? level : E2B_LOG_INFO;
	copy_cut(ev->msg, sizeof(ev->msg), msg);
	for (size_t i = 0; i + 1 < n_kv && ev->n_fields < E2B_EVENT_FIELDS; i += 2) {
		if (!kv[i] || !kv[i + 1])
			continue;
		copy_cut(ev->key[ev->n_fields], E2B_EVENT_KEY_MAX, kv[i]);
		copy_cut(ev->val[ev->n_fields], E2B_EVENT_VAL_MAX, kv[i + 1]);
		ev->n_fields++;
	}
}

/* ---- the ring ---------------------------------------------------------------------------- */

void e2b_ring_init(e2b_ring *r, size_t cap)
{
	*r = (e2b_ring){.cap = cap ? cap : 1};
}

void e2b_ring_clear(e2b_ring *r)
{
	free(r->v);
	e2b_ring_init(r, r->cap);
}

int e2b_ring_push(e2b_ring *r, const e2b_event *ev)
{
	if (r->n < r->cap && r->n == r->alloc) { /* grow (never past cap) before it wraps */
		size_t a = r->alloc ? r->alloc * 2 : 8;
		if (a > r->cap)
			a = r->cap;
		e2b_event *v = realloc(r->v, a * sizeof(*v));
		if (!v)
			return -ENOMEM;
		r->v = v;
		r->alloc = a;
	}
	if (r->n < r->cap) {
		r->v[(r->head + r->n) % r->alloc] = *ev;
		r->n++;
	} else {
		r->v[r->head] = *ev; /* full: the oldest goes */
		r->head = (r->head + 1) % r->alloc;
	}
	return 0;
}

const e2b_event *e2b_ring_at(const e2b_ring *r, size_t i)
{
	return &r->v[(r->head + i) % r->alloc];
}

/* ---- the queries -------------------------------------------------------------------------- */

/* A whole number from 0 to max: 1 with it, 0 when absent (NULL or ""), -1. */
static int parse_num(const char *s, int64_t max, int64_t *ret)
{
	if (!s || !*s)
		return 0;
	int64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (v > max)
		return -1;
	*ret = v;
	return 1;
}

static void query_init(e2b_log_query *q)
{
	*q = (e2b_log_query){.limit = E2B_LOGS_LIMIT_MAX, .min_level = E2B_LOG_DEBUG};
}

int e2b_log_query_v1(const char *start, const char *limit, e2b_log_query *q, const char **why)
{
	query_init(q);
	int64_t v = 0;
	if (parse_num(start, INT64_MAX, &v) < 0) {
		*why = "start: a unix time in milliseconds (a whole number >= 0)";
		return -1;
	}
	q->cursor_ms = v;
	v = E2B_LOGS_LIMIT_MAX;
	if (parse_num(limit, INT64_MAX, &v) < 0) {
		*why = "limit: a whole number >= 0";
		return -1;
	}
	q->limit = v > E2B_LOGS_LIMIT_MAX ? E2B_LOGS_LIMIT_MAX : (size_t)v;
	return 0;
}

int e2b_log_query_v2(const char *cursor, const char *limit, const char *direction, const char *level,
		     const char *search, int64_t now_ms, e2b_log_query *q, const char **why)
{
	query_init(q);
	if (direction && *direction) {
		if (streq(direction, "backward"))
			q->backward = true;
		else if (!streq(direction, "forward")) {
			*why = "direction: forward or backward";
			return -1;
		}
	}
	int64_t v = q->backward ? now_ms : 0;
	if (parse_num(cursor, INT64_MAX, &v) < 0) {
		*why = "cursor: a unix time in milliseconds (a whole number >= 0)";
		return -1;
	}
	q->cursor_ms = v;
	v = E2B_LOGS_LIMIT_MAX;
	if (parse_num(limit, E2B_LOGS_LIMIT_MAX, &v) < 0) {
		*why = "limit: a whole number from 0 to 1000";
		return -1;
	}
	q->limit = (size_t)v;
	if (level && *level && e2b_log_level_parse(level, &q->min_level) < 0) {
		*why = "level: debug, info, warn or error";
		return -1;
	}
	if (search) {
		size_t n = strlen(search);
		if (n > E2B_LOGS_SEARCH_MAX) {
			*why = "search: at most 256 bytes";
			return -1;
		}
		memcpy(q->search, search, n + 1);
	}
	return 0;
}

static bool selected(const e2b_event *e, const e2b_log_query *q)
{
	if (q->backward ? e->ts_ms > q->cursor_ms : e->ts_ms < q->cursor_ms)
		return false;
	if (e->level < q->min_level)
		return false;
	return !q->search[0] || strstr(e->msg, q->search);
}

size_t e2b_log_select(const e2b_ring *r, const e2b_log_query *q, size_t *idx)
{
	size_t k = 0;
	for (size_t j = 0; j < r->n && k < q->limit; j++) {
		size_t i = q->backward ? r->n - 1 - j : j;
		if (selected(e2b_ring_at(r, i), q))
			idx[k++] = i;
	}
	return k;
}

int e2b_ids_parse(const char *csv, char ids[][E2B_EVENT_ID_MAX + 1], size_t *n, const char **why)
{
	*n = 0;
	if (!csv || !*csv) {
		*why = "sandbox_ids: required, a comma-separated list of sandbox ids";
		return -1;
	}
	for (const char *p = csv;;) {
		size_t len = strcspn(p, ",");
		if (len == 0 || len > E2B_EVENT_ID_MAX) {
			*why = "sandbox_ids: each id 1 to 64 characters, separated by commas";
			return -1;
		}
		bool seen = false;
		for (size_t i = 0; i < *n && !seen; i++)
			seen = strlen(ids[i]) == len && memcmp(ids[i], p, len) == 0;
		if (!seen) {
			if (*n == E2B_METRICS_IDS_MAX) {
				*why = "sandbox_ids: at most 100 ids";
				return -1;
			}
			memcpy(ids[*n], p, len);
			ids[(*n)++][len] = 0;
		}
		p += len;
		if (!*p)
			return 0;
		p++;
	}
}

int64_t e2b_refresh_end(int64_t end_ms, int64_t now_ms, int64_t duration_s)
{
	if (duration_s < 0)
		duration_s = 0;
	if (duration_s > E2B_REFRESH_MAX_S)
		duration_s = E2B_REFRESH_MAX_S;
	int64_t end = now_ms + duration_s * 1000;
	return end > end_ms ? end : end_ms;
}

/* ---- the table ---------------------------------------------------------------------------- */

typedef struct slot {
	char id[E2B_EVENT_ID_MAX + 1];
	uint64_t touched; /* seq of its last event */
	e2b_ring ring;
} slot;

struct e2b_events {
	pthread_mutex_t lock;
	int refs;
	uint64_t seq;
	size_t n;
	slot s[E2B_EVENTS_SANDBOXES];
};

e2b_events *e2b_events_new(void)
{
	e2b_events *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->refs = 1;
	return t;
}

e2b_events *e2b_events_ref(e2b_events *t)
{
	if (t)
		__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
	return t;
}

void e2b_events_unref(e2b_events *t)
{
	if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	for (size_t i = 0; i < t->n; i++)
		e2b_ring_clear(&t->s[i].ring);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static slot *slot_find(e2b_events *t, const char *id)
{
	for (size_t i = 0; i < t->n; i++)
		if (streq(t->s[i].id, id))
			return &t->s[i];
	return NULL;
}

static void slot_remove(e2b_events *t, slot *s)
{
	e2b_ring_clear(&s->ring);
	*s = t->s[--t->n];
}

void e2b_events_add_at(e2b_events *t, const char *id, int64_t ts_ms, e2b_log_level level, const char *msg,
		       const char *const *kv, size_t n_kv)
{
	if (!t || !id || !*id || strlen(id) > E2B_EVENT_ID_MAX)
		return;
	e2b_event ev;
	e2b_event_make(&ev, ts_ms, level, msg, kv, n_kv);
	pthread_mutex_lock(&t->lock);
	slot *s = slot_find(t, id);
	if (!s) {
		if (t->n == E2B_EVENTS_SANDBOXES) { /* the ring written longest ago goes */
			slot *old = &t->s[0];
			for (size_t i = 1; i < t->n; i++)
				if (t->s[i].touched < old->touched)
					old = &t->s[i];
			slot_remove(t, old);
		}
		s = &t->s[t->n++];
		memset(s, 0, sizeof(*s));
		strcpy(s->id, id);
		e2b_ring_init(&s->ring, E2B_EVENTS_PER_SANDBOX);
	}
	ev.seq = ++t->seq;
	if (e2b_ring_push(&s->ring, &ev) == 0)
		s->touched = ev.seq;
	else if (s->ring.n == 0)
		slot_remove(t, s);
	pthread_mutex_unlock(&t->lock);
}

void e2b_events_add(e2b_events *t, const char *id, e2b_log_level level, const char *msg,
		    const char *const *kv, size_t n_kv)
{
	e2b_events_add_at(t, id, clock_ms(CLOCK_REALTIME), level, msg, kv, n_kv);
}

void e2b_events_drop(e2b_events *t, const char *id)
{
	if (!t || !id)
		return;
	pthread_mutex_lock(&t->lock);
	slot *s = slot_find(t, id);
	if (s)
		slot_remove(t, s);
	pthread_mutex_unlock(&t->lock);
}

int e2b_events_query(e2b_events *t, const char *id, const e2b_log_query *q, e2b_event **ret, size_t *n)
{
	*ret = NULL;
	*n = 0;
	pthread_mutex_lock(&t->lock);
	slot *s = slot_find(t, id);
	size_t want = s ? (q->limit < s->ring.n ? q->limit : s->ring.n) : 0;
	if (want == 0) {
		pthread_mutex_unlock(&t->lock);
		return 0;
	}
	size_t *idx = malloc(want * sizeof(*idx));
	e2b_event *v = malloc(want * sizeof(*v));
	if (!idx || !v) {
		pthread_mutex_unlock(&t->lock);
		free(idx);
		free(v);
		return -ENOMEM;
	}
	e2b_log_query lim = *q;
	lim.limit = want;
	size_t k = e2b_log_select(&s->ring, &lim, idx);
	for (size_t i = 0; i < k; i++)
		v[i] = *e2b_ring_at(&s->ring, idx[i]);
	pthread_mutex_unlock(&t->lock);
	free(idx);
	*ret = v;
	*n = k;
	return 0;
}

size_t e2b_events_count(e2b_events *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->n;
	pthread_mutex_unlock(&t->lock);
	return n;
}
