/* The code interpreter (docs/code.md): sbx_run_code and sbx_context_*.
 *
 * Requests go to the bridge inside the environment (code_conn.c); its
 * answers are the environment's and are taken as hostile: a run's events
 * are read by code_events.c (each line bounded, the whole run bounded by the
 * caller's output limit plus slack: past it the connection is closed, which
 * interrupts the cell, and the run is reported truncated; only the fields
 * API.md names, of the types it names, passed on); the other answers are
 * bounded here (1 MiB), and context ids checked before they go into a path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/code.h"
#include "api/code_events.h"
#include "util/clock.h"
#include "util/json.h"
#include "util/strbuf.h"

#define DEFAULT_OUTPUT_BYTES (10LL << 20)
/* What a run may send beyond the output limit: its envelope lines and a
 * traceback, which the bridge does not count. */
#define OUTPUT_SLACK (4LL << 20)
/* After a run's own timeout: the bridge's interrupt grace (5 s) and a kernel
 * restart (up to 60 s). */
#define RUN_TIMEOUT_SLACK_MS 90000
#define CONTEXT_CALL_TIMEOUT_MS 120000
#define SMALL_BODY_MAX (1 << 20)
#define ERROR_TEXT_MAX 1000
#define ID_MAX CODE_ID_MAX

/* Context ids go into request paths: the bridge's are UUIDs. */
static int check_context_id(const char *id, sbx_err **err)
{
	size_t n = id ? strlen(id) : 0;
	bool ok = n > 0 && n <= ID_MAX;
	for (size_t i = 0; ok && i < n; i++)
		ok = (id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'z') ||
		     (id[i] >= 'A' && id[i] <= 'Z') || id[i] == '-' || id[i] == '_';
	if (!ok)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "invalid context id '%.*s': letters, digits, '-' and '_' (sbx_context_list lists "
		    "them)",
		    ID_MAX, id ? id : "");
	return 0;
}

/* A string field of an event, bounded; NULL if absent or not a string. */
static const char *event_str(const json_t *ev, const char *key, size_t max)
{
	const json_t *v = json_object_get(ev, key);
	return json_is_string(v) && json_string_length(v) <= max ? json_string_value(v) : NULL;
}

/* ---- an answer that is one small body ------------------------------------ */

typedef struct small_body {
	strbuf b;
	bool over;
} small_body;

static int small_body_add(void *ud, const char *data, size_t len)
{
	small_body *s = ud;
	if (s->b.len + len > SMALL_BODY_MAX) {
		s->over = true;
		return -1;
	}
	strbuf_add(&s->b, data, len);
	return 0;
}

/* The error for an answer other than 2xx, with the bridge's text (bounded,
 * escaped). */
static int status_error(int status, const char *text, size_t len, sbx_err **err)
{
	sbx_code code = status == 404	? SBX_E_NOT_FOUND
			: status == 400 ? SBX_E_INVALID_ARGUMENT
			: status == 413 ? SBX_E_LIMIT_EXCEEDED
					: SBX_E_INTERNAL;
	_cleanup_strbuf_ strbuf m = {0};
	strbuf_add_escaped(&m, text, len > ERROR_TEXT_MAX ? ERROR_TEXT_MAX : len);
	return err_set(err, code, code == SBX_E_NOT_FOUND ? ENOENT : EINVAL,
		       "code interpreter: %s%s (HTTP %d)", strbuf_str(&m), len > ERROR_TEXT_MAX ? "..." : "",
		       status);
}

static void small_body_free(small_body *s)
{
	strbuf_free(&s->b);
}

/* One request whose answer is a small JSON body (or none): *ret the parsed
 * body (NULL for none), or c.not_running. */
static int small_call(sbx_ctx *ctx, const char *ref, code_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_(small_body_free) small_body s = {0};
	c->on_body = small_body_add;
	c->ud = &s;
	c->timeout_ms = CONTEXT_CALL_TIMEOUT_MS;
	if (code_call_run(ctx, ref, c, err) < 0)
		return -1;
	if (c->not_running)
		return 0;
	if (s.over)
		return err_set(err, SBX_E_INTERNAL, E2BIG, "code interpreter: an answer over %d bytes",
			       SMALL_BODY_MAX);
	if (s.b.oom)
		return err_oom(err);
	if (c->status < 200 || c->status > 299)
		return status_error(c->status, strbuf_str(&s.b), s.b.len, err);
	if (!ret || s.b.len == 0)
		return 0;
	json_t *j = json_loadb(s.b.p, s.b.len, 0, NULL);
	if (!j)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "code interpreter: an answer that is not JSON");
	*ret = j;
	return 0;
}

/* {context_id, language, cwd} from the bridge's {id, language, cwd}. */
static json_t *context_info(const json_t *c)
{
	const char *id = event_str(c, "id", ID_MAX), *lang = event_str(c, "language", ID_MAX),
		   *cwd = event_str(c, "cwd", 4096);
	if (!id || check_context_id(id, NULL) < 0 || !lang || !cwd)
		return NULL;
	return json_pack("{s:s,s:s,s:s}", "context_id", id, "language", lang, "cwd", cwd);
}

_public_ int sbx_context_create(sbx_ctx *ctx, const char *ref, const char *language, const char *cwd,
				json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *body = json_object(), *answer = NULL;
	if (!body || (language && json_object_set_new(body, "language", json_string(language)) < 0) ||
	    (cwd && json_object_set_new(body, "cwd", json_string(cwd)) < 0))
		return err_oom(err);
	code_call c = {.method = "POST", .path = "/contexts", .body = body, .start = true};
	if (small_call(ctx, ref, &c, &answer, err) < 0)
		return err_wrap(err, "create a context in '%s'", ref);
	json_t *info = context_info(answer);
	if (!info)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "create a context in '%s': a malformed answer",
			       ref);
	*ret = info;
	return 0;
}

_public_ int sbx_context_list(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *answer = NULL, *list = json_array();
	if (!list)
		return err_oom(err);
	code_call c = {.method = "GET", .path = "/contexts"};
	if (small_call(ctx, ref, &c, &answer, err) < 0)
		return err_wrap(err, "list the contexts of '%s'", ref);
	if (!c.not_running && !json_is_array(answer))
		return err_set(err, SBX_E_INTERNAL, EPROTO, "list the contexts of '%s': a malformed answer",
			       ref);
	size_t i;
	json_t *v;
	json_array_foreach(answer, i, v)
	{
		json_t *info = context_info(v);
		if (!info || json_array_append_new(list, info) < 0)
			return err_set(err, SBX_E_INTERNAL, EPROTO,
				       "list the contexts of '%s': a malformed answer", ref);
	}
	json_t *r = json_pack("{s:O}", "contexts", list);
	if (!r)
		return err_oom(err);
	*ret = r;
	return 0;
}

/* restart and remove: a context of a bridge that does not run is not there. */
static int context_op(sbx_ctx *ctx, const char *ref, const char *method, const char *id, const char *suffix,
		      sbx_err **err)
{
	if (check_context_id(id, err) < 0)
		return -1;
	char path[ID_MAX + 32];
	snprintf(path, sizeof(path), "/contexts/%s%s", id, suffix);
	code_call c = {.method = method, .path = path};
	if (small_call(ctx, ref, &c, NULL, err) < 0)
		return -1;
	if (c.not_running)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT,
			       "context %s not found (no code interpreter runs there)", id);
	return 0;
}

_public_ int sbx_context_restart(sbx_ctx *ctx, const char *ref, const char *context_id, sbx_err **err)
{
	if (context_op(ctx, ref, "POST", context_id, "/restart", err) < 0)
		return err_wrap(err, "restart a context in '%s'", ref);
	return 0;
}

_public_ int sbx_context_remove(sbx_ctx *ctx, const char *ref, const char *context_id, sbx_err **err)
{
	if (context_op(ctx, ref, "DELETE", context_id, "", err) < 0)
		return err_wrap(err, "remove a context in '%s'", ref);
	return 0;
}

/* ---- a run ------------------------------------------------------------- */

typedef struct run_state {
	code_call *call;
	code_events ev;	    /* the events of a 200 answer (code_events.h) */
	strbuf status_text; /* the body of any other answer, bounded */
} run_state;

static void run_state_free(run_state *s)
{
	code_events_free(&s->ev);
	strbuf_free(&s->status_text);
}

static int run_body(void *ud, const char *data, size_t len)
{
	run_state *s = ud;
	if (s->call->status != 200) {
		size_t room =
		    s->status_text.len < ERROR_TEXT_MAX * 4 ? ERROR_TEXT_MAX * 4 - s->status_text.len : 0;
		strbuf_add(&s->status_text, data, len < room ? len : room);
		return 0;
	}
	return code_events_feed(&s->ev, data, len);
}

static int env_vars(const char *const *env, json_t **ret, sbx_err **err)
{
	*ret = NULL;
	if (!env || !env[0])
		return 0;
	_cleanup_json_ json_t *o = json_object();
	if (!o)
		return err_oom(err);
	for (size_t i = 0; env[i]; i++) {
		const char *eq = strchr(env[i], '=');
		if (!eq || eq == env[i])
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid env '%s': expected K=V",
				       env[i]);
		_cleanup_free_ char *k = strndup(env[i], (size_t)(eq - env[i]));
		json_t *v = json_string(eq + 1);
		if (!k || !v || json_object_set_new(o, k, v) < 0)
			return v ? err_oom(err)
				 : err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "env '%s' is not UTF-8",
					   k ?: "");
	}
	*ret = TAKE_PTR(o);
	return 0;
}

_public_ int sbx_run_code(sbx_ctx *ctx, const char *ref, const sbx_code_opts *o, json_t **ret, sbx_err **err)
{
	if (!o || o->version < 1 || o->version > SBX_CODE_OPTS_VERSION)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "sbx_code_opts version %u is not supported", o ? o->version : 0);
	if (!o->code)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "run code: no code given");
	if (o->context_id && o->language)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "run code: give a context or a language, not both (a context has its language)");
	if (o->context_id && check_context_id(o->context_id, err) < 0)
		return -1;
	if (o->timeout_ms < 0 || o->output_bytes < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "run code: a negative timeout or output limit");
	int64_t limit = o->output_bytes ? o->output_bytes : DEFAULT_OUTPUT_BYTES;
	_cleanup_json_ json_t *vars = NULL;
	if (env_vars(o->env, &vars, err) < 0)
		return -1;
	_cleanup_json_ json_t *body =
	    json_pack("{s:s,s:I}", "code", o->code, "output_limit", (json_int_t)limit);
	if (!body)
		return json_string(o->code)
			   ? err_oom(err)
			   : err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "run code: the code is not UTF-8");
	if ((o->context_id && json_object_set_new(body, "context_id", json_string(o->context_id)) < 0) ||
	    (o->language && json_object_set_new(body, "language", json_string(o->language)) < 0) ||
	    (vars && json_object_set(body, "env_vars", vars) < 0) ||
	    (o->timeout_ms && json_object_set_new(body, "timeout_ms", json_integer(o->timeout_ms)) < 0))
		return err_oom(err);

	code_call c = {.method = "POST", .path = "/execute", .body = body, .start = true};
	_cleanup_(run_state_free) run_state s = {.call = &c};
	if (code_events_init(&s.ev, limit + OUTPUT_SLACK, o->timeout_ms, o->on_output, o->userdata) < 0)
		return err_oom(err);
	c.on_body = run_body;
	c.ud = &s;
	if (o->version >= 2 && o->cancel_fd >= 0) {
		c.cancellable = true;
		c.cancel_fd = o->cancel_fd;
	}
	c.timeout_ms = o->timeout_ms ? o->timeout_ms + RUN_TIMEOUT_SLACK_MS : 0;
	int64_t t0 = clock_ms(CLOCK_MONOTONIC);
	if (code_call_run(ctx, ref, &c, err) < 0)
		return err_wrap(err, "run code in '%s'", ref);
	if (c.cancelled && (c.status == 200 || c.status == 0)) {
		/* What came before the cancel; the bridge interrupts the cell as it
		 * sees the connection close. */
		json_t *r = code_events_result(&s.ev, clock_ms(CLOCK_MONOTONIC) - t0);
		if (!r || json_object_set_new(r, "cancelled", json_true()) < 0) {
			json_decref(r);
			return err_oom(err);
		}
		*ret = r;
		return 0;
	}
	if (c.status != 200) {
		status_error(c.status, strbuf_str(&s.status_text), s.status_text.len, err);
		return err_wrap(err, "run code in '%s'", ref);
	}
	if (s.ev.bad)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "run code in '%s': code interpreter: %s", ref,
			       s.ev.bad);
	if (!s.ev.ended && !s.ev.truncated)
		return err_set(
		    err, SBX_E_INTERNAL, EPROTO,
		    "run code in '%s': the code interpreter ended the run without its end (did the "
		    "bridge die?)",
		    ref);
	json_t *r = code_events_result(&s.ev, clock_ms(CLOCK_MONOTONIC) - t0);
	if (!r)
		return err_oom(err);
	*ret = r;
	return 0;
}
