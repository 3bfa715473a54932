/* The events of one code run (code_events.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/code_events.h"
#include "util/json.h"
#include "util/macro.h"

static const char *const result_fields[] = {"text", "html", "markdown", "svg",	"png",
					    "jpeg", "pdf",  "latex",	"json", "javascript"};

/* A string field of an event, at most max bytes; NULL if absent, not a
 * string or longer. */
static const char *event_str(const json_t *ev, const char *key, size_t max)
{
	const json_t *v = json_object_get(ev, key);
	return json_is_string(v) && json_string_length(v) <= max ? json_string_value(v) : NULL;
}

int code_events_init(code_events *s, int64_t cap, int64_t timeout_ms, sbx_code_event_fn on_event,
		     void *userdata)
{
	*s = (code_events){.on_event = on_event,
			   .userdata = userdata,
			   .cap = cap,
			   .timeout_ms = timeout_ms,
			   .execution_count = -1,
			   .results = json_array()};
	return s->results ? 0 : -ENOMEM;
}

void code_events_free(code_events *s)
{
	strbuf_free(&s->line);
	strbuf_free(&s->out);
	strbuf_free(&s->errout);
	json_decref(s->results);
	json_decref(s->error);
	s->results = s->error = NULL;
}

/* Hands ev (owned) to the callback. */
static void emit(code_events *s, json_t *ev)
{
	if (ev && s->on_event)
		s->on_event(ev, s->userdata);
	json_decref(ev);
}

static void mark_truncated(code_events *s)
{
	if (!s->truncated)
		emit(s, json_pack("{s:s}", "type", "truncated"));
	s->truncated = true;
}

/* A result with only the fields docs/code.md names, of their types (json:
 * any JSON value). */
static json_t *clean_result(const json_t *ev)
{
	json_t *r = json_pack("{s:b}", "is_main_result", json_is_true(json_object_get(ev, "is_main_result")));
	for (size_t i = 0; r && i < ARRAY_SIZE(result_fields); i++) {
		json_t *v = json_object_get(ev, result_fields[i]);
		if (v && (json_is_string(v) || streq(result_fields[i], "json")))
			json_object_set(r, result_fields[i], v);
	}
	return r;
}

/* One line; -1 (bad set) when it is not an event. */
static int event_line(code_events *s, const char *p, size_t n)
{
	_cleanup_json_ json_t *ev = json_loadb(p, n, JSON_REJECT_DUPLICATES, NULL);
	const char *type = event_str(ev, "type", 64);
	if (!json_is_object(ev) || !type) {
		s->bad = "a line that is not an event";
		return -1;
	}
	if (streq(type, "context")) {
		const char *id = event_str(ev, "context_id", CODE_ID_MAX),
			   *lang = event_str(ev, "language", CODE_ID_MAX);
		snprintf(s->context_id, sizeof(s->context_id), "%s", id ?: "");
		snprintf(s->language, sizeof(s->language), "%s", lang ?: "");
	} else if (streq(type, "number_of_executions")) {
		json_t *v = json_object_get(ev, "execution_count");
		s->execution_count =
		    json_is_integer(v) && json_integer_value(v) >= 0 ? json_integer_value(v) : -1;
	} else if (streq(type, "stdout") || streq(type, "stderr")) {
		json_t *t = json_object_get(ev, "text");
		if (!json_is_string(t))
			return 0;
		strbuf_add(streq(type, "stdout") ? &s->out : &s->errout, json_string_value(t),
			   json_string_length(t));
		emit(s, json_pack("{s:s,s:O}", "type", type, "text", t));
	} else if (streq(type, "result")) {
		_cleanup_json_ json_t *r = clean_result(ev);
		if (!r || json_array_append(s->results, r) < 0)
			return 0;
		json_t *copy = json_copy(r);
		if (copy)
			json_object_set_new(copy, "type", json_string("result"));
		emit(s, copy);
	} else if (streq(type, "error")) {
		const char *name = event_str(ev, "name", 1024), *value = event_str(ev, "value", 1 << 20),
			   *tb = event_str(ev, "traceback", 16 << 20);
		json_decref(s->error);
		s->error = json_pack("{s:s,s:s,s:s}", "name", name ?: "", "value", value ?: "", "traceback",
				     tb ?: "");
		json_t *copy = s->error ? json_copy(s->error) : NULL;
		if (copy)
			json_object_set_new(copy, "type", json_string("error"));
		emit(s, copy);
	} else if (streq(type, "timeout")) {
		s->timed_out = true;
		emit(s, json_pack("{s:s,s:I}", "type", "timeout", "timeout_ms", (json_int_t)s->timeout_ms));
	} else if (streq(type, "truncated"))
		mark_truncated(s);
	else if (streq(type, "end_of_execution"))
		s->ended = true;
	return 0;
}

int code_events_feed(code_events *s, const char *data, size_t len)
{
	if (s->bad)
		return -1;
	s->total += (int64_t)len;
	if (s->total > s->cap) {
		mark_truncated(s); /* the caller closes the connection: that interrupts the cell */
		return -1;
	}
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		if ((int64_t)(s->line.len + n) > CODE_LINE_MAX) {
			mark_truncated(s);
			return -1;
		}
		strbuf_add(&s->line, data, n);
		if (s->line.oom) {
			s->bad = "out of memory";
			return -1;
		}
		if (!nl)
			break;
		if (s->line.len && event_line(s, s->line.p, s->line.len) < 0)
			return -1;
		strbuf_reset(&s->line);
		data += n + 1;
		len -= n + 1;
	}
	if (s->out.oom || s->errout.oom) {
		s->bad = "out of memory";
		return -1;
	}
	return 0;
}

json_t *code_events_result(const code_events *s, int64_t duration_ms)
{
	json_t *r = json_pack("{s:O,s:s%,s:s%}", "results", s->results, "stdout", strbuf_str(&s->out),
			      s->out.len, "stderr", strbuf_str(&s->errout), s->errout.len);
	if (!r)
		return NULL;
	if (s->error)
		json_object_set(r, "error", s->error);
	json_object_set_new(r, "execution_count",
			    s->execution_count >= 0 ? json_integer(s->execution_count) : json_null());
	json_object_set_new(r, "context_id", json_string(s->context_id));
	json_object_set_new(r, "language", json_string(s->language));
	json_object_set_new(r, "timed_out", json_boolean(s->timed_out));
	json_object_set_new(r, "truncated", json_boolean(s->truncated));
	json_object_set_new(r, "duration_ms", json_integer(duration_ms));
	return r;
}
