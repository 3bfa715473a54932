/* Reading stored traces: list, manifest, show, stats, Chrome export. The
 * presentation is src/trace/trace_{show,stats,chrome}.c over the stream. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/trace_api.h"
#include "trace/trace_store.h"
#include "trace/trace_view.h"
#include "util/json.h"

#define FILTER_MAX_PIDS 256

static int load(sbx_ctx *ctx, const char *ref, char **ret_id, json_t **ret_m, char **ret_ev, size_t *ret_len,
		sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	_cleanup_json_ json_t *m = NULL;
	if (trace_store_resolve(ctx->root, ref, &id, err) < 0 || trace_store_get(ctx->root, id, &m, err) < 0)
		return -1;
	if (ret_ev && trace_load_events(ctx, m, ret_ev, ret_len, err) < 0)
		return err_wrap(err, "trace %s", id);
	if (ret_id)
		*ret_id = TAKE_PTR(id);
	if (ret_m)
		*ret_m = TAKE_PTR(m);
	return 0;
}

static int filter_from(const sbx_trace_filter *in, trace_filter *f, uint32_t *pids, sbx_err **err)
{
	*f = (trace_filter){.pids = pids};
	if (!in)
		return 0;
	for (const char *const *p = in->pids; p && *p; p++) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(*p, &end, 10);
		if (errno || *end || !**p || v == 0 || v > UINT32_MAX)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid pid '%s'", *p);
		if (f->n_pids >= FILTER_MAX_PIDS)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many pids (at most %d)",
				       FILTER_MAX_PIDS);
		pids[f->n_pids++] = (uint32_t)v;
	}
	f->syscalls = in->syscalls;
	return trace_filter_check(f, err);
}

_public_ int sbx_trace_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	_cleanup_strv_free_ char **ids = NULL;
	if (trace_store_list(ctx->root, &ids, err) < 0)
		return -1;
	json_t *a = json_array();
	for (char **p = ids; a && p && *p; p++) {
		_cleanup_json_ json_t *m = NULL;
		if (trace_store_get(ctx->root, *p, &m, NULL) < 0)
			continue; /* sbx fsck names it */
		json_t *ev = json_object_get(m, "events"), *res = json_object_get(m, "result");
		json_t *t = json_pack(
		    "{s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:O}", "trace_id", *p, "environment_id",
		    json_object_get(json_object_get(m, "environment"), "environment_id") ?: json_null(),
		    "snapshot_id", json_object_get(m, "snapshot_id"), "argv",
		    json_object_get(json_object_get(m, "command"), "argv"), "created_at",
		    json_object_get(m, "created_at") ?: json_null(), "exit_code",
		    json_object_get(res, "exit_code") ?: json_null(), "syscalls",
		    json_object_get(ev, "syscalls") ?: json_null(), "lost",
		    json_object_get(ev, "lost") ?: json_null(), "recorder",
		    json_object_get(ev, "recorder") ?: json_null(), "deterministic",
		    json_object_get(json_object_get(m, "determinism"), "enabled") ?: json_null(), "replay_of",
		    json_object_get(m, "replay_of") ?: json_null());
		if (t)
			json_array_append_new(a, t);
	}
	if (!a)
		return err_errnum(err, ENOMEM, "list traces");
	*ret = json_pack("{s:o}", "traces", a);
	return *ret ? 0 : err_errnum(err, ENOMEM, "list traces");
}

_public_ int sbx_trace_manifest(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	json_t *m = NULL;
	if (load(ctx, ref, &id, &m, NULL, NULL, err) < 0)
		return -1;
	json_object_set_new(m, "trace_id", json_string(id));
	*ret = m;
	return 0;
}

_public_ int sbx_trace_show(sbx_ctx *ctx, const char *ref, const sbx_trace_filter *f, FILE *out,
			    sbx_err **err)
{
	uint32_t pids[FILTER_MAX_PIDS];
	trace_filter tf;
	if (filter_from(f, &tf, pids, err) < 0)
		return -1;
	_cleanup_free_ char *ev = NULL;
	size_t len = 0;
	if (load(ctx, ref, NULL, NULL, &ev, &len, err) < 0)
		return -1;
	return trace_show(ev, len, &tf, out, err);
}

_public_ int sbx_trace_events_json(sbx_ctx *ctx, const char *ref, const sbx_trace_filter *f, json_t **ret,
				   sbx_err **err)
{
	uint32_t pids[FILTER_MAX_PIDS];
	trace_filter tf;
	if (filter_from(f, &tf, pids, err) < 0)
		return -1;
	_cleanup_free_ char *ev = NULL, *id = NULL;
	size_t len = 0;
	if (load(ctx, ref, &id, NULL, &ev, &len, err) < 0)
		return -1;
	json_t *a = NULL;
	if (trace_show_json(ev, len, &tf, &a, err) < 0)
		return -1;
	*ret = json_pack("{s:s,s:o}", "trace_id", id, "events", a);
	return *ret ? 0 : err_errnum(err, ENOMEM, "trace");
}

_public_ int sbx_trace_stats(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *ev = NULL, *id = NULL;
	_cleanup_json_ json_t *m = NULL;
	size_t len = 0;
	if (load(ctx, ref, &id, &m, &ev, &len, err) < 0)
		return -1;
	json_t *s = NULL;
	if (trace_stats(ev, len, &s, err) < 0)
		return -1;
	json_object_set_new(s, "trace_id", json_string(id));
	json_object_set(s, "recorder",
			json_object_get(json_object_get(m, "events"), "recorder") ?: json_null());
	*ret = s;
	return 0;
}

_public_ int sbx_trace_stats_text(sbx_ctx *ctx, const char *ref, FILE *out, sbx_err **err)
{
	_cleanup_json_ json_t *s = NULL;
	if (sbx_trace_stats(ctx, ref, &s, err) < 0)
		return -1;
	fprintf(out, "trace %s (recorder: %s)\n", json_string_value(json_object_get(s, "trace_id")),
		json_string_value(json_object_get(s, "recorder")) ?: "?");
	return trace_stats_print(s, out, err);
}

_public_ int sbx_trace_export_chrome(sbx_ctx *ctx, const char *ref, FILE *out, sbx_err **err)
{
	_cleanup_free_ char *ev = NULL;
	size_t len = 0;
	if (load(ctx, ref, NULL, NULL, &ev, &len, err) < 0)
		return -1;
	trace_filter all = {0};
	return trace_chrome(ev, len, &all, out, err);
}
