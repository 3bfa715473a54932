/* The E2B API on `sbx serve` (see http_e2b.h): the control plane's routes,
 * the data plane's minimum, and the deadline thread.
 *
 * Each handler is a thin route over the library call the CLI and MCP make
 * (include/sbx.h): the sandbox id is the environment id, looked up exactly
 * (never as a prefix or a name). A record (e2b_store.h) whose environment
 * is gone (removed with `sbx rm`, say) is dropped on sight, and the sandbox
 * is then not found. */
#include "server/http_e2b.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_auth.h"
#include "server/e2b_base.h"
#include "server/e2b_ctl_extra.h"
#include "server/e2b_data.h"
#include "server/e2b_deadline.h"
#include "server/e2b_events.h"
#include "server/e2b_desktop.h"
#include "server/e2b_files.h"
#include "server/e2b_filter.h"
#include "server/e2b_network.h"
#include "server/e2b_ports.h"
#include "server/e2b_reply.h"
#include "server/e2b_rpc.h"
#include "server/e2b_snap.h"
#include "server/e2b_spare.h"
#include "server/e2b_store.h"
#include "server/e2b_user.h"
#include "server/http_parse.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"

#define E2B_MAX_BODY ((size_t)1 << 20)
#define E2B_ENVD_VERSION "0.6.4" /* what the SDK is told envd is; raise as the data plane grows */
#define E2B_CLIENT_ID "sbx"
#define E2B_TIMEOUT_DEFAULT_S 300
#define E2B_TIMEOUT_MAX_S ((int64_t)30 * 24 * 3600)
#define E2B_LIST_LIMIT 100
#define MIB (1024 * 1024)

enum {
	HTTP_STATUS_CREATED = 201,
	HTTP_STATUS_NO_CONTENT = 204,
	HTTP_STATUS_CONFLICT = 409,
	HTTP_STATUS_TOO_MANY_REQUESTS = 429,
	HTTP_STATUS_NOT_IMPLEMENTED = 501,
	HTTP_STATUS_BAD_GATEWAY = 502,
};

typedef struct http_e2b {
	sbx_ctx *ctx;
	char *key;    /* NULL: no --token-file */
	char *domain; /* --domain: Host routing and the sandboxes' "domain"; NULL: none */
	size_t key_len;
	e2b_store *store;
	e2b_deadline *deadline; /* the thread that ends sandboxes at their deadlines */
	e2b_events *events;	/* each sandbox's events: its logs (e2b_events.h) */
	e2b_netcap netcap;	/* --policy's network: what clients may ask (e2b_network.h) */
} http_e2b;

/* ---- responses ------------------------------------------------------------------------ */

static unsigned status_of(const sbx_err *e)
{
	switch (sbx_err_code(e)) {
	case SBX_E_NOT_FOUND:
		return HTTP_STATUS_NOT_FOUND;
	case SBX_E_INVALID_ARGUMENT:
		return HTTP_STATUS_BAD_REQUEST;
	case SBX_E_LIMIT_EXCEEDED:
		return HTTP_STATUS_TOO_MANY_REQUESTS;
	case SBX_E_CONFLICT:
		return HTTP_STATUS_CONFLICT;
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

static http_result reply_empty(http_request *req, unsigned status)
{
	return http_respond(req, status, http_response_empty());
}

/* The server's own refusals (403 Origin, 413 body) in E2B's format. */
static http_result e2b_error(http_request *req, unsigned status, const char *msg)
{
	return e2b_reply_error(req, status, "%s", msg);
}

/* ---- sandboxes -------------------------------------------------------------------------- */

/* E2B's two states: an environment is running, or not (paused, suspended,
 * stopped: a connect starts it again). */
static bool state_running(const char *state)
{
	return state && streq(state, "running");
}

/* The state of environment id, exactly that id. 0, -ENOENT when it is gone
 * (its record is then dropped), else -1 with *err. */
static int env_state(http_e2b *h, const char *id, char *ret, size_t size, sbx_err **err)
{
	_cleanup_json_ json_t *info = NULL;
	sbx_err *e = NULL;
	if (sbx_env_inspect(h->ctx, id, &info, &e) < 0) {
		bool gone = sbx_err_code(e) == SBX_E_NOT_FOUND;
		if (gone) {
			sbx_err_free(e);
			e2b_store_remove(h->store, id);
			return -ENOENT;
		}
		*err = e;
		return -1;
	}
	const char *eid = json_str(info, "environment_id"), *st = json_str(info, "state");
	if (!eid || !streq(eid, id)) /* a prefix or a name matched: not this id */
		return -ENOENT;
	snprintf(ret, size, "%s", st ? st : "unknown");
	return 0;
}

/* The record and state of sandbox id: 0; -ENOENT (404); -1 with *err. */
static int sandbox_find(http_e2b *h, const char *id, e2b_record *rec, char *state, size_t size, sbx_err **err)
{
	if (!e2b_id_valid(id) || !e2b_store_get(h->store, id, rec))
		return -ENOENT;
	int r = env_state(h, id, state, size, err);
	if (r < 0)
		e2b_record_clear(rec);
	return r;
}

/* The Sandbox body of create and connect. "domain": --domain's (the SDK's
 * getHost(port) is then {port}-{id}.{domain}), else null (the client's). */
static json_t *sandbox_json(const http_e2b *h, const e2b_record *r)
{
	char traffic[E2B_TRAFFIC_TOKEN_LEN + 1];
	e2b_traffic_token(r->token, traffic);
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s?}", "sandboxID", r->id, "templateID", r->template_id,
			 "clientID", E2B_CLIENT_ID, "envdVersion", E2B_ENVD_VERSION, "envdAccessToken",
			 r->token, "trafficAccessToken", traffic, "domain", h->domain);
}

/* SandboxDetail (with_token) or ListedSandbox. */
static json_t *detail_json(const http_e2b *h, const e2b_record *r, const char *state, bool with_token)
{
	char started[32], end[32];
	clock_iso_ms(r->started_ms, started);
	clock_iso_ms(r->end_ms, end);
	json_t *j =
	    json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:O,s:s,s:b}", "templateID", r->template_id,
		      "sandboxID", r->id, "clientID", E2B_CLIENT_ID, "startedAt", started, "endAt", end,
		      "envdVersion", E2B_ENVD_VERSION, "cpuCount", r->cpu_count, "memoryMB",
		      (json_int_t)r->memory_mb, "diskSizeMB", (json_int_t)r->disk_mb, "metadata", r->metadata,
		      "state", state_running(state) ? "running" : "paused", "allowInternetAccess", false);
	if (j && with_token) {
		e2b_network_describe(h->ctx, r->id, j);
		json_object_set_new(j, "envdAccessToken", json_string(r->token));
		json_object_set_new(j, "domain", h->domain ? json_string(h->domain) : json_null());
	}
	return j;
}

static void timer_poke(http_e2b *h)
{
	e2b_deadline_poke(h->deadline);
}

/* A JSON object body, or NULL with the 400 sent (*ret). An empty body is {}. */
static json_t *body_object(http_request *req, http_result *ret)
{
	if (!req->body || req->body_len == 0)
		return json_object();
	json_error_t je;
	json_t *b = json_loadb(req->body, req->body_len, 0, &je);
	if (!json_is_object(b)) {
		json_decref(b);
		*ret = e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "the body must be a JSON object%s%s",
				       b ? "" : ": ", b ? "" : je.text);
		return NULL;
	}
	return b;
}

/* A timeout in seconds from body key "timeout": 1 with it in *ret, 0 when
 * absent, -1 with the 400 sent. */
static int body_timeout(http_request *req, const json_t *b, int64_t *ret, http_result *res)
{
	json_t *t = json_object_get(b, "timeout");
	if (!t || json_is_null(t))
		return 0;
	if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > E2B_TIMEOUT_MAX_S) {
		*res = e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST,
				       "timeout: a whole number of seconds from 0 to %lld",
				       (long long)E2B_TIMEOUT_MAX_S);
		return -1;
	}
	*ret = json_integer_value(t);
	return 1;
}

/* An object of strings (or absent/null): true; else false. */
static bool string_object(const json_t *o)
{
	if (!o || json_is_null(o))
		return true;
	if (!json_is_object(o))
		return false;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v) if (!json_is_string(v)) return false;
	return true;
}

/* Where a template id leads: "base" (E2B's default) and "host" are the
 * host template; an sbx template name; else a snapshot digest or label.
 * Nothing that names a host path (dir:, oci:): a remote client may not. */
/* tpl's source in o: E2B's base (its snapshot, e2b_base.h, whose digest
 * *ret_base then owns; host rootless), an sbx template, or a snapshot. */
static int template_choose(http_e2b *h, const char *tpl, sbx_create_opts *o, char **ret_base,
			   http_request *req, http_result *ret)
{
	char missing[160];
	if (streq(tpl, "desktop") && e2b_desktop_missing(missing, sizeof(missing)) < 0) {
		*ret = e2b_reply_error(req, HTTP_STATUS_NOT_FOUND,
				       "template 'desktop' not found: the host lacks %s (docs/desktop.md)",
				       missing);
		return -1;
	}
	if (streq(tpl, "base") || streq(tpl, "host") || streq(tpl, "code-interpreter-v1") ||
	    streq(tpl, "desktop")) {
		_cleanup_err_ sbx_err *e = NULL;
		if (e2b_base_snapshot(h->ctx, ret_base, &e) < 0) {
			*ret = reply_sbx_error(req, "create", e);
			return -1;
		}
		if (*ret_base)
			o->snapshot = *ret_base;
		else
			o->template_spec = "host";
		if (streq(tpl, "code-interpreter-v1"))
			o->code = true; /* a kernel started ahead (docs/code.md "Warm kernels") */
		return 0;
	}
	if (strlen(tpl) > E2B_TEMPLATE_MAX || strchr(tpl, '/') ||
	    (strchr(tpl, ':') && strncmp(tpl, "sha256:", 7) != 0)) {
		*ret = e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST,
				       "templateID '%.300s': give base, an sbx template name, or a snapshot "
				       "digest or label",
				       tpl);
		return -1;
	}
	_cleanup_free_ char *digest = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_template_resolve(h->ctx, tpl, &digest, &e) == 0) {
		o->template_spec = tpl;
		return 0;
	}
	sbx_err_free(TAKE_PTR(e));
	if (sbx_snapshot_resolve(h->ctx, tpl, &digest, &e) == 0) {
		o->snapshot = tpl;
		return 0;
	}
	*ret =
	    e2b_reply_error(req, HTTP_STATUS_NOT_FOUND,
			    "template '%.300s' not found: give base, an sbx template name (sbx template ls), "
			    "or a snapshot digest or label (sbx snapshot ls)",
			    tpl);
	return -1;
}

static int random_bytes(uint8_t *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static http_result handle_create(http_e2b *h, http_request *req, const json_t *b)
{
	http_result ret = HTTP_CLOSE;
	const char *tpl = json_str(b, "templateID");
	if (!tpl)
		tpl = "base";
	int64_t timeout_s = E2B_TIMEOUT_DEFAULT_S;
	if (body_timeout(req, b, &timeout_s, &ret) < 0)
		return ret;
	json_t *md = json_object_get(b, "metadata"), *envs = json_object_get(b, "envVars");
	if (!string_object(md))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "metadata: an object of strings");
	if (!string_object(envs))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "envVars: an object of strings");
	if (json_array_size(json_object_get(b, "volumeMounts")) > 0)
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "volumeMounts: not supported by sbx");

	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	/* The network asked for, within --policy's cap (e2b_network.h). */
	_cleanup_(e2b_net_clear) e2b_net net = {0};
	if (e2b_network_create_opts(req, &h->netcap, b, &o, &net, &ret) < 0)
		return ret;
	_cleanup_free_ char *base = NULL;
	if (template_choose(h, tpl, &o, &base, req, &ret) < 0)
		return ret;
	size_t n_env = json_object_size(envs);
	_cleanup_strv_free_ char **env = calloc(n_env + 1, sizeof(char *));
	if (!env)
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
	size_t i = 0;
	const char *k;
	json_t *v;
	json_object_foreach(envs, k, v)
	{
		if (!*k || strchr(k, '='))
			return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "envVars: invalid name '%.64s'",
					       k);
		if (asprintf(&env[i], "%s=%s", k, json_string_value(v)) < 0) {
			env[i] = NULL;
			return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
		}
		i++;
	}
	/* Only when there are some: a create with variables is served from the
	 * server's warm set (the entry is given them as it is handed out), except
	 * a code-interpreter one, whose kernel has the entry's (docs/warm.md). */
	if (n_env > 0)
		o.env = (const char *const *)env;

	e2b_record rec = {.started_ms = clock_ms(CLOCK_REALTIME),
			  .auto_pause = json_is_true(json_object_get(b, "autoPause"))};
	uint8_t rnd[E2B_TOKEN_ENTROPY];
	if (random_bytes(rnd, sizeof(rnd)) < 0)
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR,
				       "cannot make a token (getrandom)");
	e2b_token_mint(rnd, rec.token);
	snprintf(rec.template_id, sizeof(rec.template_id), "%s", tpl);
	rec.end_ms = rec.started_ms + timeout_s * 1000;

	_cleanup_free_ char *id = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	http_request_busy(req, true);
	int c = sbx_env_create(h->ctx, &o, &id, NULL, &e);
	if (c < 0 && base && sbx_err_code(e) == SBX_E_NOT_FOUND) {
		/* the base snapshot was deleted since it was found: make it again, once */
		sbx_err_free(TAKE_PTR(e));
		e2b_base_forget();
		free(TAKE_PTR(base));
		o.snapshot = NULL;
		if (template_choose(h, "base", &o, &base, req, &ret) < 0) {
			http_request_busy(req, false);
			return ret;
		}
		c = sbx_env_create(h->ctx, &o, &id, NULL, &e);
	}
	http_request_busy(req, false);
	if (c < 0)
		return reply_sbx_error(req, "create", e);
	if (streq(o.template_spec ?: "", "host") && e2b_user_setup(h->ctx, id, &e) < 0) {
		_cleanup_err_ sbx_err *e2 = NULL;
		(void)sbx_env_remove(h->ctx, id, &e2);
		return reply_sbx_error(req, "create", e);
	}
	if (streq(tpl, "desktop"))
		e2b_desktop_setup(h->ctx, id);
	if (e2b_sandbox_marks(h->ctx, id, base != NULL, &e) <
	    0) { /* the sandbox works without them: told in its logs */
		e2b_events_add(h->events, id, E2B_LOG_WARN, "sandbox marks not written",
			       (const char *const[]){"error", sbx_err_message(e)}, 2);
		sbx_err_free(TAKE_PTR(e));
	}
	snprintf(rec.id, sizeof(rec.id), "%s", id);
	_cleanup_json_ json_t *info = NULL;
	if (sbx_env_inspect(h->ctx, id, &info, &e) == 0) {
		json_t *lim = json_object_get(info, "limits");
		double cpus = json_real_value(json_object_get(lim, "cpus"));
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		rec.cpu_count = cpus > 0 ? (int)(cpus + 0.999) : (int)(ncpu > 0 ? ncpu : 1);
		rec.memory_mb = json_int(lim, "memory_bytes", 0) / MIB;
		rec.disk_mb = json_int(lim, "disk_bytes", 0) / MIB;
	} else {
		sbx_err_free(TAKE_PTR(e));
		rec.cpu_count = 1;
	}
	rec.metadata = json_is_object(md) ? json_deep_copy(md) : json_object();
	if (!rec.metadata || e2b_store_put(h->store, &rec, &e) < 0) {
		e2b_record_clear(&rec);
		_cleanup_err_ sbx_err *e2 = NULL;
		(void)sbx_env_remove(h->ctx, id, &e2);
		return e ? reply_sbx_error(req, "create: keep the sandbox's record", e)
			 : e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
	}
	timer_poke(h);
	e2b_events_add(h->events, id, E2B_LOG_INFO, "sandbox created",
		       (const char *const[]){"templateID", tpl}, 2);
	http_result r = e2b_reply_json(req, HTTP_STATUS_CREATED, sandbox_json(h, &rec));
	e2b_record_clear(&rec);
	return r;
}

static int by_start_desc(const void *a, const void *b)
{
	const e2b_record *x = a, *y = b;
	if (x->started_ms != y->started_ms)
		return x->started_ms > y->started_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

/* GET /v2/sandboxes (and the old GET /sandboxes, running ones only by
 * default): one sbx_env_list for the states, the records for the rest. */
static http_result handle_list(http_e2b *h, http_request *req, bool v2)
{
	const char *state = http_request_query(req, "state"), *md = http_request_query(req, "metadata");
	const char *lim_s = http_request_query(req, "limit"), *next = http_request_query(req, "nextToken");
	if (!v2 && !state)
		state = "running";
	long limit = E2B_LIST_LIMIT, offset = 0;
	char *end = NULL;
	if (lim_s &&
	    (limit = strtol(lim_s, &end, 10), !*lim_s || *end || limit < 1 || limit > E2B_LIST_LIMIT))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "limit: a whole number from 1 to %d",
				       E2B_LIST_LIMIT);
	if (next && (offset = strtol(next, &end, 10), !*next || *end || offset < 0))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "nextToken: not one this server gave");
	_cleanup_json_ json_t *envs = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_list(h->ctx, &envs, &e) < 0)
		return reply_sbx_error(req, "list", e);
	e2b_record *v = NULL;
	size_t n = 0;
	if (e2b_store_list(h->store, &v, &n) < 0)
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
	qsort(v, n, sizeof(*v), by_start_desc);
	json_t *out = json_array();
	long seen = 0;
	bool more = false;
	for (size_t i = 0; i < n && out; i++) {
		const char *st = NULL;
		size_t k;
		json_t *env;
		json_array_foreach(json_object_get(envs, "environments"), k, env)
		{
			const char *eid = json_str(env, "environment_id");
			if (eid && streq(eid, v[i].id))
				st = json_str(env, "state");
		}
		if (!st) { /* its environment is gone */
			e2b_store_remove(h->store, v[i].id);
			continue;
		}
		if (!e2b_state_wanted(state, state_running(st)) || !e2b_metadata_matches(v[i].metadata, md))
			continue;
		if (seen++ < offset)
			continue;
		if ((long)json_array_size(out) == limit) {
			more = true;
			break;
		}
		json_array_append_new(out, detail_json(h, &v[i], st, false));
	}
	e2b_records_free(v, n);
	char tok[24];
	snprintf(tok, sizeof(tok), "%ld", offset + limit);
	return e2b_reply_json_paged(req, HTTP_STATUS_OK, out, more ? tok : NULL);
}

static http_result reply_not_found(http_request *req, const char *id)
{
	return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "sandbox '%.64s' not found", id);
}

/* sandbox_find, or else the answer that says why not (404, or the error
 * reading its state) in *ret: true when found. */
static bool find_or_reply(http_e2b *h, http_request *req, const char *id, e2b_record *rec, char *st,
			  size_t size, http_result *ret)
{
	_cleanup_err_ sbx_err *e = NULL;
	int r = sandbox_find(h, id, rec, st, size, &e);
	if (r == 0)
		return true;
	*ret = r == -ENOENT ? reply_not_found(req, id) : reply_sbx_error(req, "inspect", e);
	return false;
}

static http_result handle_info(http_e2b *h, http_request *req, const char *id)
{
	e2b_record rec;
	char st[32];
	http_result no;
	if (!find_or_reply(h, req, id, &rec, st, sizeof(st), &no))
		return no;
	http_result res = e2b_reply_json(req, HTTP_STATUS_OK, detail_json(h, &rec, st, true));
	e2b_record_clear(&rec);
	return res;
}

static http_result handle_kill(http_e2b *h, http_request *req, const char *id)
{
	e2b_record rec;
	if (!e2b_id_valid(id) || !e2b_store_get(h->store, id, &rec))
		return reply_not_found(req, id);
	e2b_record_clear(&rec);
	_cleanup_err_ sbx_err *e = NULL;
	http_request_busy(req, true);
	int r = sbx_env_remove(h->ctx, id, &e);
	http_request_busy(req, false);
	if (r < 0 && sbx_err_code(e) != SBX_E_NOT_FOUND)
		return reply_sbx_error(req, "kill", e);
	e2b_store_remove(h->store, id);
	e2b_events_drop(h->events, id);
	return r < 0 ? reply_not_found(req, id) : reply_empty(req, HTTP_STATUS_NO_CONTENT);
}

static http_result handle_timeout(http_e2b *h, http_request *req, const char *id, const json_t *b)
{
	http_result ret = HTTP_CLOSE;
	int64_t t = 0;
	int has = body_timeout(req, b, &t, &ret);
	if (has < 0)
		return ret;
	if (has == 0)
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "timeout: required (seconds from now)");
	e2b_record rec;
	char st[32];
	_cleanup_err_ sbx_err *e = NULL;
	http_result no;
	if (!find_or_reply(h, req, id, &rec, st, sizeof(st), &no))
		return no;
	rec.end_ms = clock_ms(CLOCK_REALTIME) + t * 1000; /* E2B: from now, shorter or longer */
	int r = e2b_store_put(h->store, &rec, &e);
	e2b_record_clear(&rec);
	if (r < 0)
		return reply_sbx_error(req, "timeout", e);
	timer_poke(h);
	return reply_empty(req, HTTP_STATUS_NO_CONTENT);
}

static http_result handle_pause(http_e2b *h, http_request *req, const char *id)
{
	e2b_record rec;
	char st[32];
	_cleanup_err_ sbx_err *e = NULL;
	http_result no;
	if (!find_or_reply(h, req, id, &rec, st, sizeof(st), &no))
		return no;
	http_result res;
	_cleanup_json_ json_t *out = NULL;
	if (!state_running(st))
		res = e2b_reply_error(req, HTTP_STATUS_CONFLICT, "sandbox '%s' is already paused", id);
	else if (sbx_env_pause(h->ctx, id, &out, &e) < 0)
		res = reply_sbx_error(req, "pause", e);
	else {
		rec.paused = true;
		e2b_events_add(h->events, id, E2B_LOG_INFO, "sandbox paused", NULL, 0);
		res = e2b_store_put(h->store, &rec, &e) < 0 ? reply_sbx_error(req, "pause", e)
							    : reply_empty(req, HTTP_STATUS_NO_CONTENT);
		timer_poke(h);
	}
	e2b_record_clear(&rec);
	return res;
}

/* connect: 200 if running (its deadline only ever extended), 201 once a
 * paused one is resumed (its deadline: now + timeout, default 300 s). */
static http_result handle_connect(http_e2b *h, http_request *req, const char *id, const json_t *b)
{
	http_result ret = HTTP_CLOSE;
	int64_t t = E2B_TIMEOUT_DEFAULT_S;
	int has = body_timeout(req, b, &t, &ret);
	if (has < 0)
		return ret;
	e2b_record rec;
	char st[32];
	_cleanup_err_ sbx_err *e = NULL;
	http_result no;
	if (!find_or_reply(h, req, id, &rec, st, sizeof(st), &no))
		return no;
	bool resumed = !state_running(st);
	int64_t end = clock_ms(CLOCK_REALTIME) + t * 1000;
	int r = 0;
	if (resumed) {
		_cleanup_json_ json_t *out = NULL;
		http_request_busy(req, true);
		r = sbx_env_resume(h->ctx, id, &out, &e);
		http_request_busy(req, false);
		if (r < 0) {
			e2b_record_clear(&rec);
			return reply_sbx_error(req, "resume", e);
		}
		rec.paused = false;
		rec.end_ms = end;
		e2b_events_add(h->events, id, E2B_LOG_INFO, "sandbox resumed",
			       (const char *const[]){"via", "connect"}, 2);
	} else if (has && end > rec.end_ms)
		rec.end_ms = end;
	r = e2b_store_put(h->store, &rec, &e);
	timer_poke(h);
	http_result res = r < 0 ? reply_sbx_error(req, "connect", e)
				: e2b_reply_json(req, resumed ? HTTP_STATUS_CREATED : HTTP_STATUS_OK,
						 sandbox_json(h, &rec));
	e2b_record_clear(&rec);
	return res;
}

/* metrics, snapshots and fork (e2b_snap.c); /snapshots and /templates/. */
static http_result snap_routes(http_request *req)
{
	http_e2b *h = req->data;
	return e2b_snap_route(req, &(e2b_plane){h->ctx, h->store, h->deadline, h->events});
}

json_t *e2b_sandbox_body(const http_request *req, const e2b_record *r)
{
	return sandbox_json(req->data, r);
}

/* PUT /sandboxes/{id}/network: an E2B sandbox of this server (e2b_network.c). */
static http_result handle_network(http_e2b *h, http_request *req, const char *id, const json_t *b)
{
	e2b_record rec;
	char st[32];
	_cleanup_err_ sbx_err *e = NULL;
	int r = sandbox_find(h, id, &rec, st, sizeof(st), &e);
	if (r == -ENOENT)
		return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "sandbox %.64s not found", id);
	if (r < 0)
		return reply_sbx_error(req, "inspect", e);
	e2b_record_clear(&rec);
	return e2b_network_update(req, h->ctx, &h->netcap, id, b);
}

/* Every control-plane route: /sandboxes[/{id}[/{op}]], with or without /v2. */
static http_result control(http_request *req)
{
	http_e2b *h = req->data;
	const char *p = req->path;
	bool v2 = startswith(p, "/v2/");
	if (v2)
		p += 3;
	if (!startswith(p, "/sandboxes") || (p[10] && p[10] != '/'))
		return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "no such E2B call: %.16s %.200s",
				       req->method, req->path);
	p += 10;
	char id[E2B_ID_MAX + 2] = "", op[32] = "";
	if (*p == '/') {
		p++;
		size_t n = strcspn(p, "/");
		if (n == 0 || n > E2B_ID_MAX)
			return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "no such sandbox id in '%.200s'",
					       req->path);
		memcpy(id, p, n);
		id[n] = 0;
		p += n;
		if (*p == '/') {
			p++;
			if (!*p || strchr(p, '/') || strlen(p) >= sizeof(op))
				return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND,
						       "no such E2B call: %.16s %.200s", req->method,
						       req->path);
			snprintf(op, sizeof(op), "%s", p);
		}
	}
	http_result ret = HTTP_CLOSE;
	_cleanup_json_ json_t *b = NULL;
	bool post = streq(req->method, "POST"), put = streq(req->method, "PUT");
	if ((post || put) && !(b = body_object(req, &ret)))
		return ret;
	e2b_plane pl = {h->ctx, h->store, h->deadline, h->events};
	if (!id[0]) {
		if (post)
			return handle_create(h, req, b);
		if (streq(req->method, "GET"))
			return handle_list(h, req, v2);
	} else if (!op[0]) {
		if (streq(req->method, "GET") && !v2 && streq(id, "metrics"))
			return e2b_ctl_metrics(req, &pl);
		if (streq(req->method, "GET") && !v2)
			return handle_info(h, req, id);
		if (streq(req->method, "DELETE") && !v2)
			return handle_kill(h, req, id);
	} else if (post && streq(op, "connect"))
		return handle_connect(h, req, id, b);
	else if (post && streq(op, "timeout") && !v2)
		return handle_timeout(h, req, id, b);
	else if (post && streq(op, "pause") && !v2)
		return handle_pause(h, req, id);
	else if (!v2 && (streq(op, "metrics") || streq(op, "snapshots") || streq(op, "fork")))
		return e2b_snap_op(req, &pl, id, op, b);
	else if (put && streq(op, "network") && !v2)
		return handle_network(h, req, id, b);
	else if (post && streq(op, "resume") && !v2)
		return e2b_ctl_resume(req, &pl, id, b);
	else if (post && streq(op, "refreshes") && !v2)
		return e2b_ctl_refresh(req, &pl, id, b);
	else if (streq(req->method, "GET") && streq(op, "logs"))
		return e2b_ctl_logs(req, &pl, id, v2);
	return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "no such E2B call: %.16s %.200s", req->method,
			       req->path);
}

static http_result control_auth(http_request *req)
{
	http_e2b *h = req->data;
	if (!h->key) {
		if (http_server_loopback(req->server))
			return HTTP_OK;
		return e2b_reply_error(
		    req, HTTP_STATUS_UNAUTHORIZED,
		    "this server has no --token-file: its E2B API serves only on a loopback "
		    "address without one");
	}
	const char *k = http_request_header(req, "X-API-Key"), *t;
	size_t n;
	if (k && http_token_equal(k, strlen(k), h->key, h->key_len))
		return HTTP_OK;
	if (http_bearer_token(http_request_header(req, "Authorization"), &t, &n) &&
	    http_token_equal(t, n, h->key, h->key_len))
		return HTTP_OK;
	return e2b_reply_error(req, HTTP_STATUS_UNAUTHORIZED,
			       "Invalid API key: send the token of sbx serve's --token-file as X-API-Key");
}

/* ---- the data plane ----------------------------------------------------------------------- */

static bool names_sandbox(const http_request *req)
{
	return e2b_req_names_sandbox(req);
}

static http_result reply_no_sandbox(http_request *req, const char *id)
{
	if (e2b_req_browser(req)) {
		char text[200];
		snprintf(text, sizeof(text), "The sandbox %.64s was not found.", id);
		return e2b_reply_page(req, HTTP_STATUS_BAD_GATEWAY, "Sandbox Not Found", text);
	}
	return e2b_reply_json(req, HTTP_STATUS_BAD_GATEWAY,
			      json_pack("{s:s,s:s,s:i}", "sandboxId", id, "message",
					"The sandbox was not found", "code", HTTP_STATUS_BAD_GATEWAY));
}

static bool is_health(const http_request *req)
{
	return streq(req->path, "/health") && streq(req->method, "GET") && !e2b_proxy_match(req);
}

/* As E2B's proxy and envd: a sandbox that is not running answers 502
 * (before any check: it is the proxy's answer); then every call but
 * /health needs the sandbox's own token. */
static http_result data_auth(http_request *req)
{
	http_e2b *h = req->data;
	const char *bad_host = e2b_req_host_error(req);
	if (bad_host)
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "Host: %s", bad_host);
	const char *id = e2b_req_sandbox(req);
	const char *port = e2b_req_by_host(req) ? NULL : http_request_header(req, "E2b-Sandbox-Port");
	uint16_t pn;
	if (port && e2b_port_parse(port, strlen(port), &pn) < 0)
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST,
				       "E2b-Sandbox-Port: a port from 1 to 65535");
	e2b_record rec;
	char st[32];
	_cleanup_err_ sbx_err *e = NULL;
	int r = sandbox_find(h, id, &rec, st, sizeof(st), &e);
	if (r == -ENOENT)
		return reply_no_sandbox(req, id);
	if (r < 0)
		return reply_sbx_error(req, "inspect", e);
	bool running = state_running(st);
	bool ok = is_health(req) || e2b_secret_equal(http_request_header(req, "X-Access-Token"), rec.token);
	if (!ok &&
	    e2b_req_port(req) != HTTP_E2B_ENVD_PORT) { /* other ports: the traffic token opens them too */
		char traffic[E2B_TRAFFIC_TOKEN_LEN + 1];
		e2b_traffic_token(rec.token, traffic);
		ok = traffic[0] &&
		     e2b_secret_equal(http_request_header(req, "E2b-Traffic-Access-Token"), traffic);
	}
	e2b_record_clear(&rec);
	if (!running)
		return reply_no_sandbox(req, id);
	if (!ok)
		return e2b_reply_error(req, HTTP_STATUS_UNAUTHORIZED,
				       "unauthorized: X-Access-Token must be this sandbox's envdAccessToken");
	if (e2b_spare_invalidated_by(e2b_req_port(req), req->method, req->path))
		e2b_proc_spare_drop(id);
	return HTTP_OK;
}

sbx_ctx *e2b_req_ctx(const http_request *req)
{
	return ((const http_e2b *)req->data)->ctx;
}

e2b_events *e2b_req_events(const http_request *req)
{
	return ((const http_e2b *)req->data)->events;
}

const char *e2b_req_domain(const http_request *req)
{
	return ((const http_e2b *)req->data)->domain;
}

static http_result data_health(http_request *req)
{
	return reply_empty(req, HTTP_STATUS_NO_CONTENT);
}

static http_result data_unbuilt(http_request *req)
{
	return e2b_reply_error(req, HTTP_STATUS_NOT_IMPLEMENTED, "not implemented yet in sbx: %.200s",
			       req->path);
}

/* ---- the families ------------------------------------------------------------------------- */

static const http_route data_routes[] = {
    /* First match wins: any port but envd's and the code interpreter's is
     * proxied into the sandbox; a signed /files URL names no sandbox. */
    {.match = e2b_proxy_match, .max_body = E2B_PROXY_MAX_BODY, .body = e2b_proxy_body},
    {.match = e2b_files_signed,
     .open = true,
     .path = "/files",
     .max_body = E2B_FILES_MAX_BODY,
     .headers = e2b_files_headers,
     .body = e2b_files_body},
    {.match = names_sandbox, .method = "GET", .path = "/health", .headers = data_health},
    {.match = names_sandbox, .method = "GET", .path = "/envs", .headers = e2b_envs},
    {.match = e2b_code_match,
     .method = "POST",
     .path = "/execute",
     .max_body = E2B_CODE_MAX_BODY,
     .body = e2b_code_execute},
    {.match = e2b_code_match,
     .path = "/contexts",
     .prefix = true,
     .max_body = E2B_MAX_BODY,
     .body = e2b_code_contexts},
    {.match = names_sandbox,
     .path = "/files",
     .max_body = E2B_FILES_MAX_BODY,
     .headers = e2b_files_headers,
     .body = e2b_files_body},
    {.match = names_sandbox,
     .method = "POST",
     .path = "/process.Process/",
     .prefix = true,
     .max_body = E2B_RPC_BODY_MAX,
     .headers = e2b_rpc_headers,
     .body = e2b_rpc_body},
    {.match = names_sandbox,
     .method = "POST",
     .path = "/filesystem.Filesystem/",
     .prefix = true,
     .max_body = E2B_RPC_BODY_MAX,
     .headers = e2b_rpc_headers,
     .body = e2b_rpc_body},
    {.match = names_sandbox, .headers = data_unbuilt},
};

static const http_route control_routes[] = {
    {.path = "/sandboxes", .prefix = true, .max_body = E2B_MAX_BODY, .body = control},
    {.path = "/v2/sandboxes", .prefix = true, .max_body = E2B_MAX_BODY, .body = control},
    {.path = "/snapshots", .max_body = E2B_MAX_BODY, .body = snap_routes},
    {.path = "/templates/", .prefix = true, .max_body = E2B_MAX_BODY, .body = snap_routes},
};

static void e2b_stop(void *data)
{
	http_e2b *h = data;
	e2b_deadline_stop(TAKE_PTR(h->deadline));
}

static void e2b_release(void *data)
{
	http_e2b *h = data;
	e2b_stop(h);
	e2b_store_free(h->store);
	e2b_events_unref(h->events);
	e2b_netcap_clear(&h->netcap);
	free(h->key);
	free(h->domain);
	free(h);
}

int http_e2b_add(http_server *hs, sbx_ctx *ctx, const http_e2b_opts *opts, sbx_err **err)
{
	http_e2b *h = calloc(1, sizeof(*h));
	if (!h)
		return err_oom(err);
	h->ctx = ctx;
	if (!(h->events = e2b_events_new())) {
		free(h);
		return err_oom(err);
	}
	_cleanup_free_ char *dir = fs_path_join(sbx_ctx_root(ctx), "e2b");
	if (!dir) {
		e2b_release(h);
		return err_oom(err);
	}
	if (opts->domain && e2b_domain_valid(opts->domain, err) < 0) {
		e2b_release(h);
		return -1;
	}
	if (opts->domain && !(h->domain = strdup(opts->domain))) {
		e2b_release(h);
		return err_oom(err);
	}
	if ((opts->token_file && http_token_file_read(opts->token_file, &h->key, &h->key_len, err) < 0) ||
	    e2b_netcap_load(opts->policy, &h->netcap, err) < 0 || e2b_store_open(dir, &h->store, err) < 0) {
		e2b_release(h);
		return -1;
	}
	http_family data = {
	    .name = "e2b-data",
	    .data = h,
	    .routes = data_routes,
	    .n_routes = ARRAY_SIZE(data_routes),
	    .auth = data_auth,
	    .error = e2b_error,
	    .done = e2b_req_state_done, /* every module's req->state is an e2b_req_state */
	};
	if (http_server_add(hs, &data, err) < 0) {
		e2b_release(h);
		return -1;
	}
	if (e2b_deadline_start(ctx, h->store, h->events, &h->deadline, err) < 0) {
		e2b_release(h);
		return -1;
	}
	http_family control_family = {
	    .name = "e2b",
	    .data = h,
	    .routes = control_routes,
	    .n_routes = ARRAY_SIZE(control_routes),
	    .auth = control_auth,
	    .error = e2b_error,
	    .stop = e2b_stop,
	    .release = e2b_release,
	};
	if (http_server_add(hs, &control_family, err) < 0) {
		e2b_release(h);
		return -1;
	}
	return 0;
}
