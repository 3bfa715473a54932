/* E2B's resume, refreshes, logs and batch metrics (see e2b_ctl_extra.h). */
#include "server/e2b_ctl_extra.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_auth.h"
#include "server/e2b_events.h"
#include "server/e2b_reply.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

#define TIMEOUT_MAX_S ((int64_t)30 * 24 * 3600) /* as create's and connect's */

enum {
	STATUS_CREATED = 201,
	STATUS_NO_CONTENT = 204,
	STATUS_CONFLICT = 409,
	STATUS_TOO_MANY_REQUESTS = 429,
};

static unsigned status_of(const sbx_err *e)
{
	switch (sbx_err_code(e)) {
	case SBX_E_NOT_FOUND:
		return HTTP_STATUS_NOT_FOUND;
	case SBX_E_INVALID_ARGUMENT:
		return HTTP_STATUS_BAD_REQUEST;
	case SBX_E_LIMIT_EXCEEDED:
		return STATUS_TOO_MANY_REQUESTS;
	case SBX_E_CONFLICT:
		return STATUS_CONFLICT;
	case SBX_E_UNAVAILABLE:
		return HTTP_STATUS_SERVICE_UNAVAILABLE;
	default:
		return HTTP_STATUS_INTERNAL_SERVER_ERROR;
	}
}

static http_result reply_sbx_error(http_request *req, const char *what, const sbx_err *e)
{
	return e2b_reply_error(req, status_of(e), "%s: %s", what, sbx_err_message(e));
}

/* The sandbox's record and state (running or not): true, else the reply in
 * *ret (404, or the error reading it). */
static bool find(http_request *req, const e2b_plane *p, const char *id, e2b_record *rec, bool *running,
		 http_result *ret)
{
	_cleanup_json_ json_t *info = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	int r = e2b_plane_sandbox(p, id, rec, &info, &e);
	if (r == 0) {
		const char *st = json_str(info, "state");
		*running = st && streq(st, "running");
		return true;
	}
	*ret = r == -ENOENT ? e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "sandbox '%.64s' not found", id)
			    : reply_sbx_error(req, "inspect", e);
	return false;
}

/* Body key name, an integer from 0 to max: 1 with it, 0 absent or null,
 * -1 with the 400 sent. */
static int body_seconds(http_request *req, const json_t *b, const char *name, int64_t max, int64_t *v,
			http_result *ret)
{
	json_t *t = json_object_get(b, name);
	if (!t || json_is_null(t))
		return 0;
	if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > max) {
		*ret = e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST,
				       "%s: a whole number of seconds from 0 to %lld", name, (long long)max);
		return -1;
	}
	*v = json_integer_value(t);
	return 1;
}

/* ---- resume ------------------------------------------------------------------------------- */

/* connect's resume, with the deprecated call's own answers: 409 when it
 * runs; the deadline now + timeout (default 15 s, ResumedSandbox's);
 * autoPause, when given, what the new deadline does. */
http_result e2b_ctl_resume(http_request *req, const e2b_plane *p, const char *id, const json_t *b)
{
	http_result ret = HTTP_CLOSE;
	int64_t t = E2B_RESUME_DEFAULT_S;
	if (body_seconds(req, b, "timeout", TIMEOUT_MAX_S, &t, &ret) < 0)
		return ret;
	json_t *ap = json_object_get(b, "autoPause");
	if (ap && !json_is_null(ap) && !json_is_boolean(ap))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "autoPause: true or false");
	e2b_record rec;
	bool running;
	if (!find(req, p, id, &rec, &running, &ret))
		return ret;
	if (running) {
		e2b_record_clear(&rec);
		return e2b_reply_error(req, STATUS_CONFLICT, "sandbox '%s' is already running", id);
	}
	_cleanup_err_ sbx_err *e = NULL;
	_cleanup_json_ json_t *out = NULL;
	http_request_busy(req, true);
	int r = sbx_env_resume(p->ctx, id, &out, &e);
	http_request_busy(req, false);
	if (r < 0) {
		e2b_record_clear(&rec);
		return reply_sbx_error(req, "resume", e);
	}
	rec.paused = false;
	rec.end_ms = clock_ms(CLOCK_REALTIME) + t * 1000;
	if (json_is_boolean(ap))
		rec.auto_pause = json_is_true(ap);
	r = e2b_store_put(p->store, &rec, &e);
	e2b_deadline_poke(p->deadline);
	if (r == 0)
		e2b_events_add(p->events, id, E2B_LOG_INFO, "sandbox resumed",
			       (const char *const[]){"via", "resume"}, 2);
	http_result res = r < 0 ? reply_sbx_error(req, "resume", e)
				: e2b_reply_json(req, STATUS_CREATED, e2b_sandbox_body(req, &rec));
	e2b_record_clear(&rec);
	return res;
}

/* ---- refreshes ---------------------------------------------------------------------------- */

/* The deadline: now + duration (default 15 s) when that is later. A paused
 * sandbox has no deadline running: 404, as E2B answers for a sandbox not
 * running. */
http_result e2b_ctl_refresh(http_request *req, const e2b_plane *p, const char *id, const json_t *b)
{
	http_result ret = HTTP_CLOSE;
	int64_t d = E2B_RESUME_DEFAULT_S;
	if (body_seconds(req, b, "duration", E2B_REFRESH_MAX_S, &d, &ret) < 0)
		return ret;
	e2b_record rec;
	bool running;
	if (!find(req, p, id, &rec, &running, &ret))
		return ret;
	if (!running || rec.paused) {
		e2b_record_clear(&rec);
		return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "sandbox '%.64s' is not running", id);
	}
	int64_t end = e2b_refresh_end(rec.end_ms, clock_ms(CLOCK_REALTIME), d);
	int r = 0;
	_cleanup_err_ sbx_err *e = NULL;
	if (end != rec.end_ms) {
		rec.end_ms = end;
		r = e2b_store_put(p->store, &rec, &e);
		e2b_deadline_poke(p->deadline);
	}
	e2b_record_clear(&rec);
	return r < 0 ? reply_sbx_error(req, "refresh", e)
		     : http_respond(req, STATUS_NO_CONTENT, http_response_empty());
}

/* ---- logs --------------------------------------------------------------------------------- */

static json_t *fields_json(const e2b_event *ev)
{
	json_t *f = json_object();
	for (int i = 0; f && i < ev->n_fields; i++)
		json_object_set_new(f, ev->key[i], json_string(ev->val[i]));
	return f;
}

/* SandboxLogEntry (with its stable id in v2). */
static json_t *entry_json(const e2b_event *ev, const char *ts, bool with_id)
{
	json_t *j = json_pack("{s:s,s:s,s:s,s:o}", "timestamp", ts, "level", e2b_log_level_name(ev->level),
			      "message", ev->msg, "fields", fields_json(ev));
	if (j && with_id) {
		char id[24];
		snprintf(id, sizeof(id), "%llu", (unsigned long long)ev->seq);
		json_object_set_new(j, "id", json_string(id));
	}
	return j;
}

/* SandboxLog's line: the entry as one line of JSON, as E2B's are. */
static json_t *line_json(const e2b_event *ev, const char *ts)
{
	_cleanup_json_ json_t *o = fields_json(ev);
	if (!o)
		return NULL;
	json_object_set_new(o, "level", json_string(e2b_log_level_name(ev->level)));
	json_object_set_new(o, "message", json_string(ev->msg));
	_cleanup_free_ char *line = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	return line ? json_pack("{s:s,s:s}", "timestamp", ts, "line", line) : NULL;
}

http_result e2b_ctl_logs(http_request *req, const e2b_plane *p, const char *id, bool v2)
{
	e2b_log_query q;
	const char *why = NULL;
	int r = v2 ? e2b_log_query_v2(http_request_query(req, "cursor"), http_request_query(req, "limit"),
				      http_request_query(req, "direction"), http_request_query(req, "level"),
				      http_request_query(req, "search"), clock_ms(CLOCK_REALTIME), &q, &why)
		   : e2b_log_query_v1(http_request_query(req, "start"), http_request_query(req, "limit"), &q,
				      &why);
	if (r < 0)
		return e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, why);
	e2b_record rec;
	bool running;
	http_result ret;
	if (!find(req, p, id, &rec, &running, &ret))
		return ret;
	e2b_record_clear(&rec);
	e2b_event *v = NULL;
	size_t n = 0;
	if (e2b_events_query(p->events, id, &q, &v, &n) < 0)
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
	json_t *entries = json_array(), *lines = v2 ? NULL : json_array();
	for (size_t i = 0; i < n && entries; i++) {
		char ts[32];
		clock_iso_ms(v[i].ts_ms, ts);
		json_array_append_new(entries, entry_json(&v[i], ts, v2));
		if (lines)
			json_array_append_new(lines, line_json(&v[i], ts));
	}
	free(v);
	if (v2)
		return e2b_reply_json(req, HTTP_STATUS_OK,
				      entries ? json_pack("{s:o}", "logs", entries) : NULL);
	if (!entries || !lines) {
		json_decref(entries);
		json_decref(lines);
		return HTTP_CLOSE;
	}
	return e2b_reply_json(req, HTTP_STATUS_OK,
			      json_pack("{s:o,s:o}", "logs", lines, "logEntries", entries));
}

/* ---- metrics ------------------------------------------------------------------------------ */

typedef struct sample {
	char id[E2B_EVENT_ID_MAX + 1];
	int cpus;
	json_t *a;
} sample;

/* Each named sandbox of this server that runs: one sample over one CPU
 * window for them all. Unknown ids, other environments and sandboxes not
 * running are left out (E2B lists only its team's running ones). */
http_result e2b_ctl_metrics(http_request *req, const e2b_plane *p)
{
	char(*v)[E2B_EVENT_ID_MAX + 1] = calloc(E2B_METRICS_IDS_MAX, sizeof(*v));
	sample *s = calloc(E2B_METRICS_IDS_MAX, sizeof(*s));
	json_t *map = json_object();
	size_t n = 0, k = 0;
	const char *why = NULL;
	http_result res = HTTP_CLOSE;
	if (!v || !s || !map)
		goto out;
	if (e2b_ids_parse(http_request_query(req, "sandbox_ids"), v, &n, &why) < 0) {
		res = e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, why);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		e2b_record rec;
		json_t *info = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		int r = e2b_id_valid(v[i]) ? e2b_plane_sandbox(p, v[i], &rec, &info, &e) : -ENOENT;
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			res = reply_sbx_error(req, "inspect", e);
			goto out;
		}
		const char *st = json_str(info, "state");
		if (st && streq(st, "running") && json_object_get(info, "usage")) {
			snprintf(s[k].id, sizeof(s[k].id), "%s", v[i]);
			s[k].cpus = rec.cpu_count > 0 ? rec.cpu_count : 1;
			s[k++].a = info;
		} else
			json_decref(info);
		e2b_record_clear(&rec);
	}
	int64_t t0 = clock_ms(CLOCK_REALTIME);
	if (k > 0) {
		http_request_busy(req, true);
		usleep(E2B_CPU_WINDOW_MS * 1000);
		http_request_busy(req, false);
	}
	for (size_t i = 0; i < k; i++) {
		_cleanup_json_ json_t *b = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		if (sbx_env_inspect(p->ctx, s[i].id, &b, &e) < 0 || !json_object_get(b, "usage") ||
		    !streq(json_str(b, "state") ?: "", "running"))
			continue; /* gone, or stopped, since */
		json_object_set_new(map, s[i].id,
				    e2b_metric_json(p, s[i].a, b, s[i].cpus, t0, clock_ms(CLOCK_REALTIME)));
	}
	res = e2b_reply_json(req, HTTP_STATUS_OK, json_pack("{s:O}", "sandboxes", map));
out:
	for (size_t i = 0; s && i < k; i++)
		json_decref(s[i].a);
	free(s);
	free(v);
	json_decref(map);
	return res;
}
