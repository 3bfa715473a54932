/* Attestations: sbx keygen, sbx attest, sbx verify (docs/attest.md).
 *
 * attest: trace manifest -> the files the run wrote (read from its
 * environment, stored as blobs, checked against the trace's filesystem
 * digest) -> the in-toto statement (store/attest_stmt.c) -> PAE -> an
 * Ed25519 signature (store/attest_key.c) -> the DSSE envelope (util/dsse.c).
 * verify: the envelope (hostile) -> the signature over PAE, before anything
 * else of the payload is looked at -> the statement's shape -> each claim
 * against the store -> optionally a replay. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/trace_api.h"
#include "store/attest_key.h"
#include "store/attest_stmt.h"
#include "store/attest_store.h"
#include "store/layer.h"
#include "trace/trace_store.h"
#include "util/dsse.h"
#include "util/json.h"

#define ATTEST_FILE_MAX (256 << 20) /* as trace_fs_digest reads them */

_public_ int sbx_keygen(const char *path, json_t **ret, sbx_err **err)
{
	if (!path || !*path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "keygen: no file name");
	char kid[STORE_DIGEST_SIZE];
	if (attest_keygen(path, kid, err) < 0)
		return -1;
	json_t *j =
	    json_pack("{s:s,s:s+,s:s}", "private_key", path, "public_key", path, ".pub", "keyid", kid);
	if (!j)
		return err_oom(err);
	*ret = j;
	return 0;
}

_public_ int sbx_ctx_set_attest_key(sbx_ctx *ctx, const char *path, sbx_err **err)
{
	_cleanup_attest_key_ attest_key *k = NULL;
	if (attest_key_load_private(path, &k, err) < 0)
		return -1;
	char *p = strdup(path);
	if (!p)
		return err_oom(err);
	free(ctx->attest_key_path);
	ctx->attest_key_path = p;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(json_str(*(json_t *const *)a, "name"), json_str(*(json_t *const *)b, "name"));
}

static void sort_by_name(json_t *a)
{
	size_t n = json_array_size(a);
	if (n < 2)
		return;
	_cleanup_free_ json_t **v = malloc(n * sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(a, i));
	qsort(v, n, sizeof(*v), cmp_name);
	json_array_clear(a);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, v[i]);
}

/* The regular files the run added or modified, each stored as a blob:
 * [{"name": path, "digest"}], sorted by path. The environment must still
 * hold exactly what the run left: its filesystem digest, computed again
 * after the files were read, equals the trace's. */
static int run_files(sbx_ctx *ctx, const json_t *m, json_t **ret, sbx_err **err)
{
	const json_t *fs = json_object_get(json_object_get(m, "result"), "fs");
	const char *env = json_str(json_object_get(m, "environment"), "environment_id"),
		   *snap = json_str(m, "snapshot_id"), *want = json_str(fs, "digest");
	_cleanup_json_ json_t *files = json_array();
	if (!files)
		return err_oom(err);
	if (json_int(fs, "changes", 0) == 0) {
		*ret = TAKE_PTR(files);
		return 0;
	}
	_cleanup_env_record_ env_record st = {.uid_slot = -1}; /* it still exists */
	if (!env || !want || env_record_read(ctx, env, &st) < 0)
		return err_set(
		    err, SBX_E_UNAVAILABLE, ENOENT,
		    "the run changed %lld paths, and its environment '%s' is gone: the files it wrote "
		    "cannot be read (attest before removing the environment)",
		    (long long)json_int(fs, "changes", 0), env ? env : "?");
	_cleanup_json_ json_t *d = NULL;
	if (sbx_env_diff(ctx, env, snap, &d, err) < 0)
		return err_wrap(err, "files the run wrote");
	static const char *const kinds[] = {"added", "modified"};
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(d, kinds[k]), i, p)
		{
			const char *path = json_string_value(p);
			if (!path)
				continue;
			_cleanup_free_ char *data = NULL;
			size_t len = 0;
			int64_t size = 0;
			bool trunc = false;
			_cleanup_err_ sbx_err *e = NULL;
			if (sbx_env_read_file(ctx, env, path, ATTEST_FILE_MAX, &data, &len, &size, &trunc,
					      &e) < 0) {
				/* A directory, a device, a socket: no content to attest (the
				 * filesystem digest covers them). Anything else is a failure:
				 * a file silently left out would be a false statement. */
				int en = sbx_err_errno(e);
				if (en == EISDIR || en == EINVAL || en == ENXIO || en == ENOTDIR)
					continue;
				return err_set(err, sbx_err_code(e), en, "read '%s': %s", path,
					       sbx_err_message(e));
			}
			if (trunc)
				return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG,
					       "'%s': %lld bytes, at most %d attested", path, (long long)size,
					       ATTEST_FILE_MAX);
			char bd[STORE_DIGEST_SIZE];
			if (store_blob_put(ctx->root, data, len, bd, err) < 0)
				return err_wrap(err, "store '%s'", path);
			if (json_array_append_new(files, json_pack("{s:s,s:s}", "name", path, "digest", bd)) <
			    0)
				return err_oom(err);
		}
	}
	sort_by_name(files);
	_cleanup_json_ json_t *now = NULL;
	if (trace_fs_digest(ctx, env, snap, &now, err) < 0)
		return err_wrap(err, "environment '%s'", env);
	if (!streq(json_str(now, "digest") ?: "", want))
		return err_set(
		    err, SBX_E_CONFLICT, ESTALE,
		    "environment '%s' has changed since the run (its filesystem differs from the trace's): "
		    "the files it wrote can no longer be attested",
		    env);
	*ret = TAKE_PTR(files);
	return 0;
}

static int load_signing_key(sbx_ctx *ctx, const sbx_attest_opts *o, attest_key **ret, sbx_err **err)
{
	const char *path = o && o->key_path ? o->key_path : ctx->attest_key_path;
	if (!path)
		return err_set(
		    err, SBX_E_UNAVAILABLE, ENOKEY,
		    "no signing key: sbx attest takes --key FILE, sbx mcp and sbx serve --attest-key FILE "
		    "(sbx keygen makes one)");
	return attest_key_load_private(path, ret, err);
}

_public_ int sbx_attest(sbx_ctx *ctx, const char *trace, const sbx_attest_opts *o, json_t **ret,
			sbx_err **err)
{
	_cleanup_attest_key_ attest_key *key = NULL;
	if (load_signing_key(ctx, o, &key, err) < 0)
		return -1;
	_cleanup_free_ char *tid = NULL;
	_cleanup_json_ json_t *m = NULL, *rep = NULL, *files = NULL, *st = NULL;
	if (trace_store_resolve(ctx->root, trace, &tid, err) < 0 ||
	    trace_store_get(ctx->root, tid, &m, err) < 0)
		return -1;
	if (o && o->replay && sbx_trace_replay(ctx, tid, &rep, err) < 0)
		return err_wrap(err, "replay");
	if (run_files(ctx, m, &files, err) < 0)
		return err_wrap(err, "trace %s", tid);
	if (attest_statement_build(m, tid, files, rep, sbx_version(), &st, err) < 0)
		return err_wrap(err, "trace %s", tid);
	/* The payload is these exact bytes; a verifier never re-serializes. */
	_cleanup_free_ char *payload = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS);
	size_t pae_len = 0;
	_cleanup_free_ char *pae =
	    payload ? dsse_pae(DSSE_INTOTO_TYPE, strlen(DSSE_INTOTO_TYPE), payload, strlen(payload), &pae_len)
		    : NULL;
	if (!pae)
		return err_oom(err);
	/* The record keeps the files' blobs from gc (store/attest_store.h). */
	if (attest_store_put(ctx->root, payload, strlen(payload), err) < 0)
		return err_wrap(err, "store the attestation");
	unsigned char sig[ATTEST_SIG_LEN];
	char kid[STORE_DIGEST_SIZE];
	if (attest_sign(key, pae, pae_len, sig, err) < 0 || attest_key_id(key, kid, err) < 0)
		return -1;
	json_t *envj = dsse_envelope_build(DSSE_INTOTO_TYPE, payload, strlen(payload), kid, sig, sizeof(sig));
	json_t *subjects = json_array();
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(st, "subject"), i, s) json_array_append_new(
	    subjects, json_pack("{s:s,s:s+}", "name", json_str(s, "name"), "digest",
				"sha256:", json_str(json_object_get(s, "digest"), "sha256")));
	json_t *r = json_pack("{s:o,s:s,s:o,s:s}", "envelope", envj, "keyid", kid, "subjects", subjects,
			      "trace_id", tid);
	if (!r)
		return err_oom(err);
	if (rep)
		json_object_set_new(r, "replay", json_incref(rep));
	*ret = r;
	return 0;
}

/* The result of a check that did not hold: verified false and one line. */
static int refuse(json_t *res, json_t **ret, const char *fmt, ...) _printf_(3, 4);
static int refuse(json_t *res, json_t **ret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *msg = NULL;
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	json_object_set_new(res, "verified", json_false());
	json_object_set_new(res, "reason", json_string(n >= 0 ? msg : "out of memory"));
	*ret = json_incref(res);
	return 0;
}

/* Does the blob exist in the store with that content? */
static bool blob_holds(sbx_ctx *ctx, const char *digest)
{
	_cleanup_err_ sbx_err *e = NULL;
	return store_blob_verify(ctx->root, digest, &e) == 0;
}

_public_ int sbx_verify(sbx_ctx *ctx, const char *buf, size_t len, const sbx_verify_opts *o, json_t **ret,
			sbx_err **err)
{
	if (!o || !o->key_path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "verify: no public key (--key FILE.pub)");
	_cleanup_attest_key_ attest_key *key = NULL;
	char kid[STORE_DIGEST_SIZE];
	if (attest_key_load_public(o->key_path, &key, err) < 0 || attest_key_id(key, kid, err) < 0)
		return -1;
	_cleanup_json_ json_t *res = json_pack("{s:b,s:s}", "verified", 0, "keyid", kid);
	if (!res)
		return err_oom(err);

	/* 1. The envelope and its signature: nothing in the payload is read
	 *    before the signature holds. */
	_cleanup_(dsse_envelope_clear) dsse_envelope env = {0};
	_cleanup_err_ sbx_err *pe = NULL;
	if (dsse_envelope_parse(buf, len, DSSE_INTOTO_TYPE, &env, &pe) < 0)
		return refuse(res, ret, "%s", sbx_err_message(pe));
	size_t pae_len = 0;
	_cleanup_free_ char *pae =
	    dsse_pae(env.payload_type, strlen(env.payload_type), env.payload, env.payload_len, &pae_len);
	if (!pae)
		return err_oom(err);
	bool signed_ok = false;
	for (size_t i = 0; i < env.n_sigs && !signed_ok; i++) {
		int r = attest_verify_sig(key, pae, pae_len, env.sigs[i].sig, env.sigs[i].sig_len, err);
		if (r < 0)
			return -1;
		signed_ok = r == 1;
	}
	if (!signed_ok)
		return refuse(res, ret, "signature does not match key %s", kid);

	/* 2. The statement. */
	_cleanup_json_ json_t *st = NULL;
	if (attest_statement_parse(env.payload, env.payload_len, &st, &pe) < 0)
		return refuse(res, ret, "%s", sbx_err_message(pe));
	json_t *pred = json_object_get(st, "predicate"), *subs = json_object_get(st, "subject");
	const char *tid = json_str(pred, "trace_id"), *snap = json_str(pred, "snapshot_id");
	json_object_set_new(res, "trace_id", json_string(tid));
	json_object_set_new(res, "snapshot_id", json_string(snap));

	/* 3. Its claims against the store. */
	_cleanup_json_ json_t *m = NULL;
	if (trace_store_get(ctx->root, tid, &m, &pe) < 0)
		return refuse(res, ret, "trace %s: %s", tid, sbx_err_message(pe));
	if (!streq(json_str(m, "snapshot_id") ?: "", snap))
		return refuse(res, ret, "predicate.snapshot_id %s is not the trace's snapshot", snap);
	_cleanup_json_ json_t *sm = NULL;
	if (sbx_snapshot_manifest(ctx, snap, &sm, &pe) < 0)
		return refuse(res, ret, "snapshot %s: %s", snap, sbx_err_message(pe));
	const json_t *mres = json_object_get(m, "result");
	if (!json_equal(json_object_get(pred, "exit_code"), json_object_get(mres, "exit_code")) ||
	    !json_equal(json_object_get(pred, "command"),
			json_object_get(json_object_get(m, "command"), "argv")))
		return refuse(res, ret, "predicate: the command or exit code differs from trace %s", tid);
	if (!json_equal(json_object_get(json_object_get(pred, "filesystem"), "digest"),
			json_object_get(json_object_get(mres, "fs"), "digest")))
		return refuse(res, ret, "predicate: the filesystem digest differs from trace %s", tid);
	bool have_out = false, have_err = false;
	_cleanup_json_ json_t *names = json_array();
	size_t i;
	json_t *s;
	json_array_foreach(subs, i, s)
	{
		const char *name = json_str(s, "name");
		char d[STORE_DIGEST_SIZE];
		snprintf(d, sizeof(d), "sha256:%s", json_str(json_object_get(s, "digest"), "sha256"));
		bool std_out = streq(name, "stdout"), std_err = streq(name, "stderr");
		if (std_out || std_err) {
			const char *want = json_str(json_object_get(mres, name), "digest");
			if (!want || !streq(want, d))
				return refuse(res, ret, "subject '%s' digest differs from the store", name);
			have_out |= std_out;
			have_err |= std_err;
		} else if (name[0] != '/')
			return refuse(res, ret,
				      "subject '%.128s': neither stdout, stderr nor an absolute path", name);
		if (!blob_holds(ctx, d))
			return refuse(res, ret, "subject '%.256s' digest differs from the store (no blob %s)",
				      name, d);
		json_array_append_new(names, json_string(name));
	}
	if (!have_out || !have_err)
		return refuse(res, ret, "statement: no stdout or stderr subject");
	json_object_set_new(res, "subjects", TAKE_PTR(names));

	/* 4. The replay. */
	if (o->replay) {
		_cleanup_json_ json_t *rep = NULL;
		if (sbx_trace_replay(ctx, tid, &rep, err) < 0)
			return err_wrap(err, "replay");
		json_object_set_new(res, "replay", json_incref(rep));
		if (!streq(json_str(rep, "verdict") ?: "", "match")) {
			json_t *dv = json_object_get(rep, "divergence");
			return refuse(res, ret,
				      "replay diverged: %s at event %lld: expected %.200s, got %.200s",
				      json_str(dv, "kind") ?: "?", (long long)json_int(dv, "index", -1),
				      json_str(dv, "expected") ?: "", json_str(dv, "actual") ?: "");
		}
	}
	json_object_set_new(res, "verified", json_true());
	*ret = TAKE_PTR(res);
	return 0;
}
