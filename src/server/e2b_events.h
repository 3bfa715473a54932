/* The E2B front door's record of what happened to each sandbox, served as
 * its logs (GET /sandboxes/{id}/logs, /v2/...; docs/e2b.md "Logs"): the
 * server's own events (created, paused, resumed, a command started and
 * exited, its deadline), not envd's logs as on E2B.
 *
 * Bounded: a ring of E2B_EVENTS_PER_SANDBOX events per sandbox (the oldest
 * goes first), rings for at most E2B_EVENTS_SANDBOXES sandboxes (the one
 * written longest ago goes first), every string cut to its fixed size. In
 * memory only: a restarted server starts every ring empty.
 *
 * Pure (no I/O; tests/unit/test_e2b_events.c, tests/fuzz/fuzz_e2b_events.c):
 * the ring, the table (thread-safe), the logs queries' parameters and the
 * other small decisions of e2b_ctl_extra.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define E2B_EVENTS_PER_SANDBOX 128
#define E2B_EVENTS_SANDBOXES 512
#define E2B_EVENT_MSG_MAX 160 /* bytes, with the NUL */
#define E2B_EVENT_FIELDS 4
#define E2B_EVENT_KEY_MAX 16
#define E2B_EVENT_VAL_MAX 128
#define E2B_EVENT_ID_MAX 64	/* as E2B_ID_MAX */
#define E2B_LOGS_LIMIT_MAX 1000 /* the spec's maximum (and default) limit */
#define E2B_LOGS_SEARCH_MAX 256 /* the spec's maxLength of search */
#define E2B_METRICS_IDS_MAX 100 /* sandbox_ids: the spec's maxItems */
#define E2B_REFRESH_MAX_S 3600	/* refreshes' duration: the spec's maximum */
#define E2B_RESUME_DEFAULT_S 15 /* ResumedSandbox's default timeout */

typedef enum e2b_log_level {
	E2B_LOG_DEBUG,
	E2B_LOG_INFO,
	E2B_LOG_WARN,
	E2B_LOG_ERROR,
} e2b_log_level;

typedef struct e2b_event {
	int64_t ts_ms; /* unix ms */
	uint64_t seq;  /* the table's, increasing: the entry's stable id */
	e2b_log_level level;
	char msg[E2B_EVENT_MSG_MAX];
	int n_fields;
	char key[E2B_EVENT_FIELDS][E2B_EVENT_KEY_MAX];
	char val[E2B_EVENT_FIELDS][E2B_EVENT_VAL_MAX];
} e2b_event;

/* "debug", "info", "warn", "error"; parse: 0, -1 for anything else. */
const char *e2b_log_level_name(e2b_log_level l);
int e2b_log_level_parse(const char *s, e2b_log_level *ret);

/* An event at ts_ms: msg and up to E2B_EVENT_FIELDS pairs (kv: key, value,
 * ...; n_kv strings, pairs past the limit dropped), every string cut to fit
 * (never inside a UTF-8 sequence). */
void e2b_event_make(e2b_event *ev, int64_t ts_ms, e2b_log_level level, const char *msg, const char *const *kv,
		    size_t n_kv);

/* ---- the ring ---------------------------------------------------------------------------- */

typedef struct e2b_ring {
	e2b_event *v; /* grows up to cap */
	size_t alloc, cap, head, n;
} e2b_ring;

/* A ring of at most cap events (cap >= 1). */
void e2b_ring_init(e2b_ring *r, size_t cap);
void e2b_ring_clear(e2b_ring *r);
/* Adds ev, dropping the oldest when full. 0, -ENOMEM (ev then lost). */
int e2b_ring_push(e2b_ring *r, const e2b_event *ev);
/* The i-th oldest event, i < r->n. */
const e2b_event *e2b_ring_at(const e2b_ring *r, size_t i);

/* ---- the queries -------------------------------------------------------------------------- */

typedef struct e2b_log_query {
	int64_t cursor_ms; /* forward: ts >= cursor; backward: ts <= cursor */
	size_t limit;
	bool backward; /* newest first */
	e2b_log_level min_level;
	char search[E2B_LOGS_SEARCH_MAX + 1]; /* "": none */
} e2b_log_query;

/* GET /sandboxes/{id}/logs: start (unix ms, >= 0), limit (0..1000, default
 * 1000; more is cut to 1000, as the v1 spec sets no maximum); NULL or ""
 * absent. 0, or -1 with *why (a static message for the 400). */
int e2b_log_query_v1(const char *start, const char *limit, e2b_log_query *q, const char **why);
/* GET /v2/sandboxes/{id}/logs: cursor (unix ms, >= 0; default 0 forward,
 * now_ms backward), limit (0..1000, default 1000), direction (forward,
 * backward), level (a minimum), search (<= 256 bytes, case-sensitive). */
int e2b_log_query_v2(const char *cursor, const char *limit, const char *direction, const char *level,
		     const char *search, int64_t now_ms, e2b_log_query *q, const char **why);
/* The events of r that q selects, in q's order: their indexes for
 * e2b_ring_at in idx (room for q->limit), their count returned. */
size_t e2b_log_select(const e2b_ring *r, const e2b_log_query *q, size_t *idx);

/* GET /sandboxes/metrics' sandbox_ids: comma-separated, 1 to 100 ids each
 * 1 to E2B_EVENT_ID_MAX bytes, repeats dropped. The ids into ids (room for
 * E2B_METRICS_IDS_MAX), their count in *n: 0, or -1 with *why. */
int e2b_ids_parse(const char *csv, char ids[][E2B_EVENT_ID_MAX + 1], size_t *n, const char **why);

/* POST /sandboxes/{id}/refreshes: the new deadline, end_ms or now + duration
 * seconds, whichever is later (a refresh never shortens). */
int64_t e2b_refresh_end(int64_t end_ms, int64_t now_ms, int64_t duration_s);

/* ---- the table ---------------------------------------------------------------------------- */

typedef struct e2b_events e2b_events;

e2b_events *e2b_events_new(void); /* NULL: out of memory */
e2b_events *e2b_events_ref(e2b_events *t);
void e2b_events_unref(e2b_events *t); /* NULL is a no-op */
/* Adds an event (e2b_event_make's arguments) to sandbox id's ring, now:
 * best effort (out of memory, it is lost). t NULL is a no-op. */
void e2b_events_add(e2b_events *t, const char *id, e2b_log_level level, const char *msg,
		    const char *const *kv, size_t n_kv);
void e2b_events_add_at(e2b_events *t, const char *id, int64_t ts_ms, e2b_log_level level, const char *msg,
		       const char *const *kv, size_t n_kv);
/* Forgets id's ring. */
void e2b_events_drop(e2b_events *t, const char *id);
/* Copies of the events of id's ring that q selects (free *ret): 0 (none: 0
 * events), -ENOMEM. */
int e2b_events_query(e2b_events *t, const char *id, const e2b_log_query *q, e2b_event **ret, size_t *n);
/* How many rings the table holds (tests). */
size_t e2b_events_count(e2b_events *t);
