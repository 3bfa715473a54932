/* Store administration: sbx_fsck, the store half of sbx_gc
 * (store_admin_gc, called at the end of sbx_gc in env.c) and
 * sbx_snapshot_manifest (the MCP snapshot resources).
 *
 * gc roots: every snapshot manifest (snapshots are removed only by deleting
 * them) and every environment's state.json "layers", whether or not the
 * environment is live. A layer or blob no root reaches is removed. Writers
 * take no store lock, so a layer that a snapshot in progress has just put
 * (its manifest not yet written) would look unreferenced: unreferenced
 * layers and blobs younger than a grace period (SBX_GC_GRACE_SECONDS,
 * default 60) are kept, and tmp/ is cleaned only when nothing in it is
 * that young. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "store/attest_store.h"
#include "store/fsck.h"
#include "store/layer.h"
#include "store/progress.h"
#include "store/snapshot.h"
#include "store/storefs.h"
#include "util/fs.h"
#include "trace/trace_store.h"
#include "util/json.h"

/* The object a problem line is about: its first digest, else its label. */
static json_t *problem_json(const char *line)
{
	const char *p = strstr(line, "sha256:");
	char obj[256];
	if (p && strlen(p) >= STORE_DIGEST_LEN) {
		snprintf(obj, sizeof(obj), "%.*s", STORE_DIGEST_LEN, p);
		if (!store_digest_valid(obj))
			p = NULL;
	}
	if (!p) {
		const char *q = strchr(line, '\'');
		const char *e = q ? strchr(q + 1, '\'') : NULL;
		size_t n = strcspn(line, " :");
		if (q && e && startswith(line, "label "))
			snprintf(obj, sizeof(obj), "label:%.*s", (int)(e - q - 1), q + 1);
		else
			snprintf(obj, sizeof(obj), "%.*s", (int)(n < 200 ? n : 200), line);
	}
	return json_pack("{s:s,s:s}", "object", obj, "problem", line);
}

_public_ int sbx_fsck(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	store_fsck_report rep = {0};
	if (store_fsck(ctx->root, &rep, err) < 0)
		return err_wrap(err, "fsck '%s'", ctx->root);
	json_t *probs = json_array();
	for (size_t i = 0; probs && i < rep.n_problems; i++)
		json_array_append_new(probs, problem_json(rep.problems[i]));
	/* Traces: each manifest hashes to its id, and what it names exists
	 * (its snapshot, its blobs; the blobs' contents were checked above). */
	_cleanup_strv_free_ char **traces = NULL;
	size_t n_traces = 0;
	if (trace_store_list(ctx->root, &traces, NULL) == 0)
		for (char **t = traces; probs && t && *t; t++, n_traces++) {
			_cleanup_json_ json_t *m = NULL;
			_cleanup_err_ sbx_err *e = NULL;
			char line[600];
			if (trace_store_get(ctx->root, *t, &m, &e) < 0) {
				snprintf(line, sizeof(line), "%s", sbx_err_message(e));
				json_array_append_new(probs, problem_json(line));
				continue;
			}
			_cleanup_snapshot_ store_snapshot *snap = NULL;
			if (store_snapshot_read(ctx->root, json_str(m, "snapshot_id"), &snap, NULL) < 0) {
				snprintf(line, sizeof(line), "trace %s: snapshot %s is missing", *t,
					 json_str(m, "snapshot_id"));
				json_array_append_new(probs, problem_json(line));
			}
			_cleanup_strv_free_ char **blobs = trace_manifest_blobs(m);
			for (char **b = blobs; b && *b; b++) {
				_cleanup_free_ char *bp = store_blob_path(ctx->root, *b);
				if (bp && !fs_exists(bp)) {
					snprintf(line, sizeof(line), "trace %s: blob %s is missing", *t, *b);
					json_array_append_new(probs, problem_json(line));
				}
			}
		}
	*ret = json_pack("{s:b,s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "ok", json_array_size(probs) == 0, "problems",
			 probs, "layers", (json_int_t)rep.layers, "blobs", (json_int_t)rep.blobs, "snapshots",
			 (json_int_t)rep.snapshots, "refs", (json_int_t)rep.refs, "tmp_entries",
			 (json_int_t)rep.tmp_entries, "traces", (json_int_t)n_traces);
	store_fsck_report_clear(&rep);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

_public_ int sbx_snapshot_manifest(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *digest = NULL;
	if (sbx_snapshot_resolve(ctx, ref, &digest, err) < 0)
		return -1;
	_cleanup_snapshot_ store_snapshot *s = NULL;
	if (store_snapshot_read(ctx->root, digest, &s, err) < 0)
		return -1;
	_cleanup_free_ char *json = NULL;
	char id[STORE_DIGEST_SIZE];
	if (store_snapshot_encode(s, &json, id, err) < 0)
		return -1;
	json_error_t je;
	*ret = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, EBADMSG, "snapshot %s: %s", digest, je.text);
}

static long grace_seconds(void)
{
	const char *g = getenv("SBX_GC_GRACE_SECONDS");
	char *end;
	long v = g && *g ? strtol(g, &end, 10) : 60;
	return g && *g && (*end || v < 0) ? 60 : v;
}

static bool young(const char *path, time_t now, long grace)
{
	struct stat st;
	if (grace <= 0 || lstat(path, &st) < 0)
		return false;
	time_t t = st.st_ctime > st.st_mtime ? st.st_ctime : st.st_mtime;
	return now - t < grace;
}

static bool in_strv(char **v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	if (in_strv(*v, s))
		return 0;
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

int store_admin_gc(sbx_ctx *ctx, json_t *result, sbx_err **err)
{
	long grace = grace_seconds();
	time_t now = time(NULL);
	_cleanup_strv_free_ char **refd = NULL, **unref = NULL;
	if (store_gc_referenced_layers(ctx->root, &refd, err) < 0)
		return err_wrap(err, "gc: read snapshots");
	size_t n = 0;
	while (refd && refd[n])
		n++;
	/* Every environment's layers, live or not, and environments being
	 * created whose state is not written yet hold a snapshot (a root). */
	_cleanup_strv_free_ char **ids = env_list_ids(ctx);
	for (char **p = ids; p && *p; p++) {
		_cleanup_env_record_ env_record st = {.uid_slot = -1};
		if (env_record_read(ctx, *p, &st) < 0)
			continue;
		size_t i;
		json_t *l;
		json_array_foreach(st.layers, i, l)
		{
			if (json_is_string(l) && strv_add(&refd, &n, json_string_value(l)) < 0)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		}
	}
	/* Traces hold their blobs (events, stdio); their snapshots are never
	 * collected (snapshots are kept until removed explicitly). */
	_cleanup_strv_free_ char **traces = NULL;
	if (trace_store_list(ctx->root, &traces, NULL) == 0)
		for (char **t = traces; t && *t; t++) {
			_cleanup_json_ json_t *m = NULL;
			if (trace_store_get(ctx->root, *t, &m, NULL) < 0)
				continue;
			_cleanup_strv_free_ char **blobs = trace_manifest_blobs(m);
			for (char **b = blobs; b && *b; b++)
				if (strv_add(&refd, &n, *b) < 0)
					return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		}
	/* Attestations hold the blobs of the files they name (docs/attest.md). */
	_cleanup_strv_free_ char **attested = attest_store_blobs(ctx->root);
	if (!attested)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (char **b = attested; *b; b++)
		if (strv_add(&refd, &n, *b) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (store_gc_unreferenced_layers(ctx->root, (const char *const *)refd, &unref, err) < 0)
		return err_wrap(err, "gc: list layers");
	json_t *removed = json_array(), *kept = json_array();
	if (!removed || !kept) {
		json_decref(removed);
		json_decref(kept);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	json_object_set_new(result, "layers_removed", removed);
	json_object_set_new(result, "layers_kept_young", kept);
	size_t n_unref = 0;
	while (unref && unref[n_unref])
		n_unref++;
	store_progress_begin(ctx->progress, ctx->progress_ud, "gc", 0, n_unref);
	for (char **p = unref; p && *p; p++) {
		store_progress_add(0, 1);
		_cleanup_free_ char *lp = store_layer_path(ctx->root, *p);
		if (lp && young(lp, now, grace)) {
			json_array_append_new(kept, json_string(*p));
			continue;
		}
		if (store_layer_remove(ctx->root, *p, err) < 0) {
			store_progress_end();
			return err_wrap(err, "gc: remove layer %s", *p);
		}
		json_array_append_new(removed, json_string(*p));
	}

	store_progress_end();
	/* Blobs whose layer tree is gone (a crash between the two renames, or
	 * a tree removed by hand). */
	json_t *blobs = json_array();
	json_object_set_new(result, "blobs_removed", blobs);
	_cleanup_free_ char *od = store_fs_path(ctx->root, STORE_DIR_OBJECTS);
	DIR *d = od ? opendir(od) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strlen(de->d_name) != 2)
			continue;
		_cleanup_free_ char *sub = fs_path_join(od, de->d_name);
		DIR *sd = sub ? opendir(sub) : NULL;
		struct dirent *fe;
		while (sd && (fe = readdir(sd))) {
			if (!store_digest_hex_valid(fe->d_name) || strncmp(fe->d_name, de->d_name, 2) != 0)
				continue;
			char dg[STORE_DIGEST_SIZE];
			snprintf(dg, sizeof(dg), "sha256:%.64s", fe->d_name);
			_cleanup_free_ char *bp = fs_path_join(sub, fe->d_name);
			if (!bp || store_layer_exists(ctx->root, dg) || in_strv(refd, dg) ||
			    young(bp, now, grace))
				continue;
			if (unlink(bp) == 0)
				json_array_append_new(blobs, json_string(dg));
		}
		if (sd)
			closedir(sd);
	}
	if (d)
		closedir(d);

	/* tmp/: only when no writer seems active. */
	bool busy = false;
	_cleanup_free_ char *td = store_fs_path(ctx->root, STORE_DIR_TMP);
	d = td ? opendir(td) : NULL;
	while (d && !busy && (de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		_cleanup_free_ char *tp = fs_path_join(td, de->d_name);
		busy = tp && young(tp, now, grace);
	}
	if (d)
		closedir(d);
	size_t cleaned = 0;
	if (!busy && store_gc_clean_tmp(ctx->root, &cleaned, err) < 0)
		return err_wrap(err, "gc: clean tmp");
	json_object_set_new(result, "tmp_removed", json_integer((json_int_t)cleaned));
	return 0;
}
