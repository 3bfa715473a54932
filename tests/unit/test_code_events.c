/* A code run's events (src/api/code_events.h): what the bridge streams
 * becomes the result and clean events, whatever the line breaks fall on,
 * and the bounds and refusals hold. */
#include "unit.h"
#include "api/code_events.h"

typedef struct seen {
	char types[512];
	int n;
} seen;

static void on_event(const json_t *ev, void *ud)
{
	seen *s = ud;
	const char *t = json_string_value(json_object_get(ev, "type"));
	size_t len = strlen(s->types);
	snprintf(s->types + len, sizeof(s->types) - len, "%s%s", s->n++ ? "," : "", t ? t : "?");
}

static const char *const run =
    "{\"type\":\"context\",\"context_id\":\"c-1\",\"language\":\"python\"}\n"
    "{\"type\":\"number_of_executions\",\"execution_count\":3}\n"
    "{\"type\":\"stdout\",\"text\":\"a\\n\",\"timestamp\":\"t\"}\n"
    "{\"type\":\"stderr\",\"text\":\"warn\\n\"}\n"
    "{\"type\":\"stdout\",\"text\":\"b\\n\"}\n"
    "{\"type\":\"result\",\"is_main_result\":true,\"text\":\"42\",\"png\":\"iVBORw0KGgo=\","
    "\"html\":7,\"json\":{\"k\":[1]},\"extra\":{\"x\":1},\"chart\":{}}\n"
    "{\"type\":\"some_later_addition\",\"x\":1}\n"
    "{\"type\":\"error\",\"name\":\"ZeroDivisionError\",\"value\":\"division by "
    "zero\",\"traceback\":\"TB\"}\n"
    "{\"type\":\"end_of_execution\"}\n";

/* Feeds text in pieces of step bytes (0: whole). */
static int feed(code_events *s, const char *text, size_t step)
{
	size_t len = strlen(text);
	for (size_t off = 0; off < len;) {
		size_t n = step && step < len - off ? step : len - off;
		if (code_events_feed(s, text + off, n) < 0)
			return -1;
		off += n;
	}
	return 0;
}

TEST(a_run_in_any_pieces)
{
	for (size_t step = 0; step < 5; step++) {
		code_events s;
		seen w = {0};
		CHECK(code_events_init(&s, 1 << 20, 0, on_event, &w) == 0);
		CHECK(feed(&s, run, step == 4 ? 1 : step * 7) == 0);
		CHECK(s.ended && !s.truncated && !s.timed_out && !s.bad);
		CHECK_STREQ(w.types, "stdout,stderr,stdout,result,error");
		json_t *r = code_events_result(&s, 12);
		CHECK(r);
		CHECK_STREQ(json_string_value(json_object_get(r, "stdout")), "a\nb\n");
		CHECK_STREQ(json_string_value(json_object_get(r, "stderr")), "warn\n");
		CHECK_STREQ(json_string_value(json_object_get(r, "context_id")), "c-1");
		CHECK_STREQ(json_string_value(json_object_get(r, "language")), "python");
		CHECK(json_integer_value(json_object_get(r, "execution_count")) == 3);
		CHECK(json_integer_value(json_object_get(r, "duration_ms")) == 12);
		json_t *res = json_array_get(json_object_get(r, "results"), 0);
		CHECK(json_is_true(json_object_get(res, "is_main_result")));
		CHECK_STREQ(json_string_value(json_object_get(res, "text")), "42");
		CHECK_STREQ(json_string_value(json_object_get(res, "png")), "iVBORw0KGgo=");
		/* only the named fields, of their types */
		CHECK(!json_object_get(res, "html") && !json_object_get(res, "extra") &&
		      !json_object_get(res, "chart") && !json_object_get(res, "type"));
		CHECK(json_is_object(json_object_get(res, "json")));
		json_t *e = json_object_get(r, "error");
		CHECK_STREQ(json_string_value(json_object_get(e, "name")), "ZeroDivisionError");
		CHECK_STREQ(json_string_value(json_object_get(e, "traceback")), "TB");
		json_decref(r);
		code_events_free(&s);
	}
}

TEST(timeout_and_truncated_events)
{
	code_events s;
	seen w = {0};
	CHECK(code_events_init(&s, 1 << 20, 1500, on_event, &w) == 0);
	CHECK(feed(&s,
		   "{\"type\":\"timeout\",\"timeout_ms\":1}\n{\"type\":\"truncated\",\"limit\":5}\n"
		   "{\"type\":\"truncated\"}\n{\"type\":\"end_of_execution\"}\n",
		   0) == 0);
	CHECK(s.timed_out && s.truncated && s.ended);
	CHECK_STREQ(w.types, "timeout,truncated"); /* truncated once */
	json_t *r = code_events_result(&s, 0);
	CHECK(json_is_null(json_object_get(r, "execution_count")));
	CHECK(!json_object_get(r, "error"));
	json_decref(r);
	code_events_free(&s);
}

TEST(bounds_stop_the_stream)
{
	code_events s;
	seen w = {0};
	/* the whole run: past the cap it stops, truncated */
	CHECK(code_events_init(&s, 100, 0, on_event, &w) == 0);
	CHECK(feed(&s, run, 0) == -1);
	CHECK(s.truncated && !s.bad && !s.ended);
	CHECK_STREQ(w.types, "truncated");
	code_events_free(&s);
	/* a line with no end is bounded by the cap too, however it is fed */
	static char big[4096];
	memset(big, 'x', sizeof(big) - 1);
	CHECK(code_events_init(&s, 3000, 0, NULL, NULL) == 0);
	CHECK(feed(&s, big, 100) == -1);
	CHECK(s.truncated);
	code_events_free(&s);
}

TEST(refusals)
{
	static const char *const bad[] = {
	    "not json\n",
	    "[1,2]\n",
	    "{\"no_type\":1}\n",
	    "{\"type\":5}\n",
	    "{\"type\":\"stdout\",\"type\":\"stderr\"}\n", /* duplicate keys */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		code_events s;
		CHECK(code_events_init(&s, 1 << 20, 0, NULL, NULL) == 0);
		CHECK(feed(&s, bad[i], 0) == -1);
		CHECK(s.bad && strstr(s.bad, "not an event"));
		CHECK(code_events_feed(&s, "\n", 1) == -1); /* it sticks */
		code_events_free(&s);
	}
	/* wrong types inside an event are dropped, not passed on */
	code_events s;
	CHECK(code_events_init(&s, 1 << 20, 0, NULL, NULL) == 0);
	CHECK(feed(&s,
		   "{\"type\":\"stdout\",\"text\":[1]}\n{\"type\":\"context\",\"context_id\":7}\n"
		   "{\"type\":\"error\",\"name\":{},\"value\":\"v\"}\n\n{\"type\":\"end_of_execution\"}\n",
		   0) == 0);
	json_t *r = code_events_result(&s, 0);
	CHECK_STREQ(json_string_value(json_object_get(r, "stdout")), "");
	CHECK_STREQ(json_string_value(json_object_get(r, "context_id")), "");
	CHECK_STREQ(json_string_value(json_object_get(json_object_get(r, "error"), "name")), "");
	CHECK_STREQ(json_string_value(json_object_get(json_object_get(r, "error"), "value")), "v");
	json_decref(r);
	code_events_free(&s);
}
