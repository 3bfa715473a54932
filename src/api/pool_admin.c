/* The warm pool's administration (docs/warm.md): sbx pool set (a pool's
 * configuration written, shrunk to its size, its refiller started), sbx
 * pool ls, and the pool part of sbx gc. sbx pool rm is in pool_files.c
 * (the refiller removes a pool too), taking and refilling in pool.c. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/pool_internal.h"
#include "policy/policy.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

int pool_set(sbx_ctx *ctx, const char *source, int size, const char *pol_spec, bool code, const json_t *owner,
	     json_t **ret, sbx_err **err)
{
	if (!source || !*source)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "no template or snapshot given for the pool");
	if (size < 0 || size > POOL_SIZE_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid pool size %d: 0 to %d", size,
			       POOL_SIZE_MAX);
	/* host and dir:PATH are templates; else a snapshot (digest, prefix or
	 * label) if it resolves as one, else a template name. */
	_cleanup_free_ char *digest = NULL, *tdigest = NULL;
	bool builtin = pool_source_builtin(source);
	bool snap = !builtin && sbx_snapshot_resolve(ctx, source, &digest, NULL) == 0;
	struct stat dst;
	if (startswith(source, "dir:") && (stat(source + 4, &dst) < 0 || !S_ISDIR(dst.st_mode)))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT,
			       "template '%s': '%s' is not a directory (dir:PATH names a root "
			       "filesystem tree)",
			       source, source + 4);
	/* Else a template: host, dir:PATH or one that resolves (a name that is
	 * neither, e.g. a mistyped label, would make a pool that never fills). */
	if (!snap && !builtin && sbx_template_resolve(ctx, source, &tdigest, NULL) < 0)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT,
			       "no snapshot or template '%s' (a snapshot's digest, prefix or label; host, "
			       "dir:PATH or a template name)",
			       source);
	if (pol_spec) {
		_cleanup_policy_ struct policy *pol = NULL;
		if (policy_load_spec(pol_spec, &pol, err) < 0)
			return -1; /* "policy '...': ..." says what */
	}
	const char *kind = snap ? "snapshot" : "template";
	const char *src = snap ? digest : source;
	char key[17];
	pool_key(kind, src, pol_spec, code, key);
	char d[4300];
	snprintf(d, sizeof(d), "%s/pools/%s.taken", ctx->root, key);
	int r = fs_mkdir_p(d, 0700);
	if (r < 0)
		return err_errnum(err, r, "create '%s'", d);
	snprintf(d, sizeof(d), "%s/pools/%s.d", ctx->root, key);
	r = fs_mkdir_p(d, 0700);
	if (r < 0)
		return err_errnum(err, r, "create '%s'", d);
	/* The entries' writable layer: the disk (as a cold create's), or with
	 * SBX_POOL_LAYER=tmpfs (root) a tmpfs of each entry's own (docs/warm.md). */
	const char *layer =
	    !ctx->rootless && streq(getenv("SBX_POOL_LAYER") ?: "", "tmpfs") ? "tmpfs" : "disk";
	_cleanup_json_ json_t *cfg =
	    json_pack("{s:s,s:s,s:s,s:i,s:s?,s:s,s:b,s:O*}", "pool", key, "kind", kind, "source", src, "size",
		      size, "policy", pol_spec, "layer", layer, "code", code, "owner", owner);
	_cleanup_free_ char *txt = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	_cleanup_free_ char *p = pool_path(ctx, key, ".json");
	if (!txt || !p)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if ((r = fs_write_atomic(p, txt, strlen(txt), 0600)) < 0)
		return err_errnum(err, r, "write '%s'", p);
	/* Shrinking: the entries beyond the new size go now. */
	for (size_t n = pool_count_tokens(d); n > (size_t)size; n--) {
		DIR *dd = opendir(d);
		struct dirent *de;
		while (dd && (de = readdir(dd)))
			if (de->d_name[0] != '.') {
				char tok[4600];
				snprintf(tok, sizeof(tok), "%s/%s", d, de->d_name);
				if (unlink(tok) == 0) {
					pool_remove_entry(ctx, de->d_name, NULL);
					break;
				}
			}
		if (dd)
			closedir(dd);
	}
	pool_refill_async(ctx, key);
	*ret = json_incref(cfg);
	return 0;
}

_public_ int sbx_pool_set(sbx_ctx *ctx, const char *source, int size, const char *pol_spec, json_t **ret,
			  sbx_err **err)
{
	return pool_set(ctx, source, size, pol_spec, false, NULL, ret, err);
}

_public_ int sbx_pool_set_opts(sbx_ctx *ctx, const char *source, int size, const sbx_pool_opts *o,
			       json_t **ret, sbx_err **err)
{
	return pool_set(ctx, source, size, o ? o->policy : NULL, o && o->code, NULL, ret, err);
}

int pool_config_read(const sbx_ctx *ctx, const char *kind, const char *source, const char *pol_spec,
		     bool code, char ret_key[17], json_t **ret)
{
	pool_key(kind, source, pol_spec, code, ret_key);
	return pool_read(ctx, ret_key, ret);
}

static json_t *pool_entry_json(const sbx_ctx *ctx, const char *name)
{
	char key[17];
	snprintf(key, sizeof(key), "%.16s", name);
	_cleanup_json_ json_t *cfg = NULL;
	if (pool_read(ctx, key, &cfg) < 0)
		return NULL;
	_cleanup_free_ char *dir = pool_path(ctx, key, ".d");
	json_object_set_new(cfg, "ready", json_integer(dir ? (json_int_t)pool_count_tokens(dir) : 0));
	if (!json_object_get(cfg, "code")) /* set before code pools */
		json_object_set_new(cfg, "code", json_false());
	return json_incref(cfg);
}

_public_ int sbx_pool_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/pools", ctx->root);
	json_t *a = json_array();
	DIR *d = opendir(p);
	struct dirent *de;
	while (a && d && (de = readdir(d)))
		if (pool_endswith(de->d_name, ".json") && strlen(de->d_name) == 16 + 5) {
			json_t *e = pool_entry_json(ctx, de->d_name);
			if (e)
				json_array_append_new(a, e);
		}
	if (d)
		closedir(d);
	*ret = json_pack("{s:o,s:I}", "pools", a, "max_ready", (json_int_t)pool_env_int("SBX_POOL_MAX", 64));
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

/* Claims in pools/<key>.taken/ older than SBX_POOL_CLAIM_STALE_S
 * (default POOL_CLAIM_STALE_S; tests set 0) seconds (a take
 * lasts well under a millisecond; rename sets the token's ctime, so its
 * age is the claim's): the taker died. An entry still hidden ("pool" in
 * its state) was never handed out and is removed; else the claim is only
 * dropped. */
#define POOL_CLAIM_STALE_S 10
static void pool_gc_claims(sbx_ctx *ctx, json_t *removed)
{
	int64_t stale = pool_env_int("SBX_POOL_CLAIM_STALE_S", POOL_CLAIM_STALE_S);
	char p[4300];
	snprintf(p, sizeof(p), "%s/pools", ctx->root);
	DIR *d = opendir(p);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!pool_endswith(de->d_name, ".taken"))
			continue;
		char td[4600];
		snprintf(td, sizeof(td), "%s/%s", p, de->d_name);
		DIR *t = opendir(td);
		struct dirent *ce;
		while (t && (ce = readdir(t))) {
			char c[4900];
			struct stat sb;
			snprintf(c, sizeof(c), "%s/%s", td, ce->d_name);
			if (ce->d_name[0] == '.' || lstat(c, &sb) < 0 || time(NULL) - sb.st_ctime < stale)
				continue;
			_cleanup_json_ json_t *st = NULL;
			if (env_valid_id(ce->d_name) && env_state_read(ctx, ce->d_name, &st) == 0 &&
			    json_str(st, "pool") && pool_remove_entry(ctx, ce->d_name, NULL) == 0 && removed)
				json_array_append_new(removed, json_string(ce->d_name));
			(void)unlink(c);
		}
		if (t)
			closedir(t);
	}
	if (d)
		closedir(d);
}

/* sbx gc: entries of pools that no longer exist (a pool rm that died) and
 * entries whose taker died (pool_gc_claims). */
void pool_gc(sbx_ctx *ctx, json_t *removed)
{
	pool_gc_claims(ctx, removed);
	json_t *r = pool_remove_entries(ctx, NULL);
	json_array_extend(removed, r);
	json_decref(r);
}
