/* sbx trace html: the page (trace_html.h). */
#include "trace/trace_html.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_html_page.h"
#include "util/json.h"
#include "util/macro.h"

#define TEXT_MAX 240

static json_t *text_of(const json_t *e, const char *type)
{
	char buf[TEXT_MAX + 8];
	size_t n = 0;
#define ADD(...)                                                                                             \
	do {                                                                                                 \
		if (n < TEXT_MAX)                                                                            \
			n += (size_t)snprintf(buf + n, sizeof buf - n, __VA_ARGS__);                         \
		if (n > TEXT_MAX)                                                                            \
			n = TEXT_MAX;                                                                        \
	} while (0)
	buf[0] = 0;
	if (streq(type, "syscall")) {
		ADD("%s(", json_str(e, "syscall") ? json_str(e, "syscall") : "?");
		json_t *a = json_object_get(e, "args"), *v;
		size_t i;
		json_array_foreach(a, i, v)
		    ADD("%s%s", i ? ", " : "", json_is_string(v) ? json_string_value(v) : "?");
		json_t *ret = json_object_get(e, "ret");
		if (json_is_integer(ret))
			ADD(") = %lld", (long long)json_integer_value(ret));
		else
			ADD(") = ?");
		if (json_str(e, "errno"))
			ADD(" %s", json_str(e, "errno"));
		if (json_is_true(json_object_get(e, "emulated")))
			ADD(" (emulated)");
	} else if (streq(type, "fork")) {
		ADD("%s", json_is_true(json_object_get(e, "thread")) ? "thread" : "process");
	} else if (streq(type, "exec")) {
		json_t *a = json_object_get(e, "argv"), *v;
		size_t i;
		json_array_foreach(a, i, v)
		    ADD("%s%s", i ? " " : "", json_is_string(v) ? json_string_value(v) : "?");
	} else if (streq(type, "exit")) {
		json_t *sig = json_object_get(e, "signal");
		if (json_is_integer(sig))
			ADD("killed by signal %lld", (long long)json_integer_value(sig));
		else
			ADD("exited %lld", (long long)json_int(e, "exit_code", -1));
		if (!json_is_true(json_object_get(e, "process")))
			ADD(" (thread)");
	} else if (streq(type, "determ")) {
		ADD("%s answered by the determinism engine",
		    json_str(e, "syscall") ? json_str(e, "syscall") : "?");
	} else if (streq(type, "lost")) {
		ADD("%lld events lost", (long long)json_int(e, "count", 0));
	}
#undef ADD
	buf[n] = 0;
	/* Cut inside a UTF-8 sequence: back off to a character boundary. */
	while (n && ((unsigned char)buf[n - 1] & 0xc0) == 0x80)
		buf[--n] = 0;
	if (n && (unsigned char)buf[n - 1] >= 0xc0)
		buf[--n] = 0;
	json_t *s = json_string(buf);
	return s ? s : json_string("(undecodable)");
}

json_t *trace_html_events(const json_t *events)
{
	_cleanup_json_ json_t *out = json_array();
	if (!out)
		return NULL;
	size_t i;
	json_t *e;
	json_array_foreach(events, i, e)
	{
		const char *type = json_str(e, "type");
		if (!type)
			continue;
		const char *name = "";
		char pbuf[24];
		if (streq(type, "syscall"))
			name = json_str(e, "syscall");
		else if (streq(type, "fork")) {
			snprintf(pbuf, sizeof pbuf, "%lld", (long long)json_int(e, "parent_pid", 0));
			name = pbuf;
		} else if (streq(type, "exec"))
			name = json_str(e, "filename");
		else if (streq(type, "determ"))
			name = json_str(e, "kind");
		else
			name = type;
		json_t *row = json_pack("[I,I,I,I,s,s,I,o]", (json_int_t)json_int(e, "seq", 0),
					(json_int_t)json_int(e, "t_ns", 0), (json_int_t)json_int(e, "pid", 0),
					(json_int_t)json_int(e, "tid", 0), type, name ? name : "",
					(json_int_t)json_int(e, "dur_ns", 0), text_of(e, type));
		if (!row || json_array_append_new(out, row) < 0)
			return NULL;
	}
	return TAKE_PTR(out);
}

/* JSON inside <script>: every '<' escaped, so no "</script>" or "<!--" can end it. */
static int put_json(const json_t *j, FILE *out)
{
	_cleanup_free_ char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (!s)
		return -ENOMEM;
	for (const char *p = s; *p; p++) {
		if (*p == '<')
			fputs("\\u003c", out);
		else
			fputc(*p, out);
	}
	return 0;
}

int trace_html_write(const json_t *trace, const json_t *replay, FILE *out, sbx_err **err)
{
	_cleanup_json_ json_t *ev = trace_html_events(json_object_get(trace, "events"));
	_cleanup_json_ json_t *rev = NULL;
	const json_t *re = replay ? json_object_get(replay, "events") : NULL;
	if (re && json_is_array(re) && !(rev = trace_html_events(re)))
		return err_oom(err);
	_cleanup_json_ json_t *data =
	    json_pack("{s:{s:O?,s:O?,s:O?,s:O},s:O?}", "trace", "trace_id",
		      json_object_get(trace, "trace_id"), "manifest", json_object_get(trace, "manifest"),
		      "stats", json_object_get(trace, "stats"), "events", ev, "replay", NULL);
	if (!ev || !data)
		return err_oom(err);
	if (replay) {
		json_t *r =
		    json_pack("{s:O?,s:O?}", "result", json_object_get(replay, "result"), "events", rev);
		if (!r || json_object_set_new(data, "replay", r) < 0)
			return err_oom(err);
	}
	fputs(trace_html_head, out);
	if (put_json(data, out) < 0)
		return err_oom(err);
	fputs("\n", out);
	fputs(trace_html_tail, out);
	if (fflush(out) != 0 || ferror(out))
		return err_errno(err, "write the page");
	return 0;
}
