/* The events of one code run, as the bridge streams them (NDJSON lines:
 * docs/code.md), turned into sbx_run_code's result. Pure: fed the answer's
 * body bytes, it splits lines, bounds them, checks each event's fields and
 * types, passes a clean copy of each to the caller's callback, and builds
 * the result. The bytes are the environment's: hostile input. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"
#include "util/strbuf.h"

#define CODE_LINE_MAX (64LL << 20)
#define CODE_ID_MAX 128

typedef struct code_events {
	/* in */
	sbx_code_event_fn on_event; /* may be NULL */
	void *userdata;
	int64_t cap;	    /* body bytes taken; past it: truncated, stop */
	int64_t timeout_ms; /* reported in a timeout event */
	/* out */
	bool timed_out, truncated, ended;
	const char *bad; /* why the stream was refused (static), after a stop */
	/* private */
	strbuf line;		 /* the line being received */
	int64_t total;		 /* body bytes so far */
	strbuf out, errout;	 /* stdout, stderr */
	json_t *results;	 /* [result] */
	json_t *error;		 /* {name, value, traceback} or NULL */
	int64_t execution_count; /* -1: none */
	char context_id[CODE_ID_MAX + 1], language[CODE_ID_MAX + 1];
} code_events;

/* 0, or -ENOMEM. */
int code_events_init(code_events *s, int64_t cap, int64_t timeout_ms, sbx_code_event_fn on_event,
		     void *userdata);
void code_events_free(code_events *s);
/* Body bytes in order: 0 to go on; -1 to stop reading (truncated, or bad
 * set: a line that is not an event, or out of memory). Other event types
 * than the ones docs/code.md names are skipped (later additions). */
int code_events_feed(code_events *s, const char *data, size_t len);
/* The result: {results, stdout, stderr, error?, execution_count,
 * context_id, language, timed_out, truncated, duration_ms}; NULL on ENOMEM. */
json_t *code_events_result(const code_events *s, int64_t duration_ms);
