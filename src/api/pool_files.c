/* The warm pool's files (docs/warm.md; their layout is at the top of
 * pool.c): a pool's key and the inputs its entries were built from, the
 * paths under $SBX_ROOT/pools, its configuration, its entries counted and
 * removed, and sbx pool rm. Below both the refiller (pool.c), which
 * removes an owned pool whose owner ended, and sbx pool set (pool_admin.c),
 * which starts the refiller. */
/* The key's SHA-256 through the low-level interface: EVP_sha256's first
 * use fetches a provider and loads the OpenSSL configuration and error
 * strings (about 1 ms of a CLI create that takes an entry, measured). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "api/api.h"
#include "api/pool_internal.h"
#include "policy/policy.h"
#include "store/digest.h"
#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

/* The first 16 hex digits of h's SHA-256, into ret. */
static void pool_hex16(SHA256_CTX *h, char ret[17])
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	SHA256_Final(md, h);
	for (int i = 0; i < 8; i++)
		snprintf(ret + 2 * i, 3, "%02x", md[i]);
}

/* The pool key of (kind, source, policy, code): the first 16 hex digits of
 * the SHA-256 of "kind\nsource\npolicy", followed by "\ncode" for a code
 * pool (so a plain pool's key is what it was before code pools). */
void pool_key(const char *kind, const char *source, const char *pol, bool code, char ret[17])
{
	char buf[8192];
	int n =
	    snprintf(buf, sizeof(buf), "%s\n%s\n%s%s", kind, source, pol ? pol : "", code ? "\ncode" : "");
	SHA256_CTX h;
	SHA256_Init(&h);
	SHA256_Update(&h, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	pool_hex16(&h, ret);
}

/* host and dir:PATH name templates, never a snapshot. */
bool pool_source_builtin(const char *source)
{
	return streq(source, "host") || startswith(source, "dir:");
}

/* What may change under a pool's name (docs/warm.md "What a pool is keyed
 * by"): the snapshot a template name points to, and a policy file's content.
 * An entry records their digest (16 hex digits) when it is built, and a take
 * skips (and removes) an entry whose digest is not the one of now. "" when
 * the pool names neither: host, dir:PATH, a snapshot digest, a built-in
 * profile or an inline policy are the key itself. */
void pool_inputs(sbx_ctx *ctx, const char *tmpl, const char *pol, char ret[17])
{
	ret[0] = 0;
	bool named = tmpl && !pool_source_builtin(tmpl) && !startswith(tmpl, "oci:");
	bool file = pol && !policy_spec_is_profile(pol) && pol[0] != '{';
	if (!named && !file)
		return;
	_cleanup_free_ char *target = NULL, *buf = NULL;
	size_t len = 0;
	if (named && sbx_template_resolve(ctx, tmpl, &target, NULL) < 0)
		target = NULL;
	if (file && fs_read_file(pol, 1 << 20, &buf, &len) < 0)
		buf = mfree(buf), len = 0;
	SHA256_CTX h;
	SHA256_Init(&h);
	SHA256_Update(&h, target ?: "-", strlen(target ?: "-"));
	SHA256_Update(&h, "\n", 1);
	SHA256_Update(&h, buf ?: "-", buf ? len : 1);
	pool_hex16(&h, ret);
}

/* Whether entry id was built from the inputs want (pool_inputs). */
bool pool_entry_current(const sbx_ctx *ctx, const char *id, const char *want)
{
	_cleanup_json_ json_t *st = NULL;
	return env_state_read(ctx, id, &st) == 0 && streq(json_str(st, "pool_inputs") ?: "", want);
}

char *pool_path(const sbx_ctx *ctx, const char *key, const char *suffix)
{
	char *p = NULL;
	return asprintf(&p, "%s/pools/%s%s", ctx->root, key, suffix) < 0 ? NULL : p;
}

/* Whether the manifest of snapshot digest is in the store: a label names a
 * digest without it (sbx_snapshot_resolve reads only the label), and a
 * snapshot gone from the store must not be forked from its pool when a
 * cold fork of it fails. */
static bool pool_snapshot_present(const sbx_ctx *ctx, const char *digest)
{
	const char *hex = store_digest_hex(digest);
	char p[4400];
	if (!hex ||
	    snprintf(p, sizeof(p), "%s/" STORE_DIR_SNAPSHOTS "/%s.json", ctx->root, hex) >= (int)sizeof(p))
		return false;
	return access(p, F_OK) == 0;
}

/* (kind, source) of a create: a snapshot by digest (present in the store),
 * else the template. */
int pool_source_of(sbx_ctx *ctx, const sbx_create_opts *o, const char **ret_kind, char **ret_source,
		   sbx_err **err)
{
	if (o && o->snapshot) {
		*ret_kind = "snapshot";
		/* A digest is its own source: only its manifest's presence is
		 * checked, not its hash (which sbx_snapshot_resolve re-derives:
		 * OpenSSL's initialisation, about 1 ms of a CLI fork; sbx fsck
		 * checks hashes). A label or prefix is resolved. */
		if (store_digest_valid(o->snapshot)) {
			if (!(*ret_source = strdup(o->snapshot)))
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		} else if (sbx_snapshot_resolve(ctx, o->snapshot, ret_source, err) < 0)
			return -1;
		if (pool_snapshot_present(ctx, *ret_source))
			return 0;
		*ret_source = mfree(*ret_source);
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "snapshot '%s' is missing", o->snapshot);
	}
	*ret_kind = "template";
	*ret_source = strdup(o && o->template_spec ? o->template_spec : "host");
	return *ret_source ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

int64_t pool_env_int(const char *name, int64_t def)
{
	const char *v = getenv(name);
	int64_t n;
	if (!v || !*v)
		return def;
	if (streq(name, "SBX_POOL_MIN_FREE"))
		return sbx_parse_size(v, &n, NULL) == 0 ? n : def;
	char *end;
	n = strtoll(v, &end, 10);
	return *end || n < 0 ? def : n;
}

bool pool_endswith(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && streq(s + a - b, suffix);
}

size_t pool_count_tokens(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

int pool_read(const sbx_ctx *ctx, const char *key, json_t **ret)
{
	_cleanup_free_ char *p = pool_path(ctx, key, ".json"), *buf = NULL;
	int r = p ? fs_read_file(p, 1 << 16, &buf, NULL) : -ENOMEM;
	if (r < 0)
		return r;
	*ret = json_loads(buf, 0, NULL);
	return *ret ? 0 : -EBADMSG;
}

/* Removes an entry (hidden from other lookups: env_state.h ENV_POOL_MARK). */
int pool_remove_entry(sbx_ctx *ctx, const char *id, sbx_err **err)
{
	env_see_pool_entries(true);
	int r = sbx_env_remove(ctx, id, err);
	env_see_pool_entries(false);
	return r;
}

/* Every environment of pool key (or of pools that no longer exist, key
 * NULL) that has not been taken: removed. */
json_t *pool_remove_entries(sbx_ctx *ctx, const char *key)
{
	json_t *removed = json_array();
	_cleanup_strv_free_ char **ids = env_list_ids(ctx);
	for (char **i = ids; i && *i; i++) {
		_cleanup_json_ json_t *st = NULL;
		const char *k;
		if (env_state_read(ctx, *i, &st) < 0 || !(k = json_str(st, "pool")))
			continue;
		_cleanup_json_ json_t *cfg = NULL;
		if (key ? !streq(k, key) : pool_read(ctx, k, &cfg) == 0)
			continue;
		char tok[4400];
		snprintf(tok, sizeof(tok), "%s/pools/%s.d/%s", ctx->root, k, *i);
		(void)unlink(tok);
		if (pool_remove_entry(ctx, *i, NULL) == 0 && removed)
			json_array_append_new(removed, json_string(*i));
	}
	return removed;
}

_public_ int sbx_pool_remove(sbx_ctx *ctx, const char *source, const char *pol_spec, json_t **ret,
			     sbx_err **err)
{
	sbx_pool_opts o = SBX_POOL_OPTS_INIT;
	o.policy = pol_spec;
	return sbx_pool_remove_opts(ctx, source, &o, ret, err);
}

_public_ int sbx_pool_remove_opts(sbx_ctx *ctx, const char *source, const sbx_pool_opts *o, json_t **ret,
				  sbx_err **err)
{
	const char *pol_spec = o ? o->policy : NULL;
	bool code = o && o->code;
	_cleanup_free_ char *digest = NULL;
	bool snap =
	    source && !pool_source_builtin(source) && sbx_snapshot_resolve(ctx, source, &digest, NULL) == 0;
	char key[17];
	pool_key(snap ? "snapshot" : "template", snap ? digest : source ? source : "", pol_spec, code, key);
	_cleanup_free_ char *p = pool_path(ctx, key, ".json"), *dir = pool_path(ctx, key, ".d"),
			    *lp = pool_path(ctx, key, ".lock");
	if (!p || !dir || !lp)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (unlink(p) < 0)
		return errno == ENOENT
			   ? err_set(err, SBX_E_NOT_FOUND, ENOENT,
				     "no pool for '%s'%s%s%s (sbx pool ls lists the pools; one set "
				     "with --policy or --code is removed with the same options)",
				     source ? source : "", pol_spec ? " with policy " : "",
				     pol_spec ? pol_spec : "", code ? " with code" : "")
			   : err_errno(err, "remove '%s'", p);
	/* A refiller sees the pool gone before its next entry; wait for it. */
	_cleanup_close_ int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk >= 0)
		(void)flock(lk, LOCK_EX);
	json_t *removed = pool_remove_entries(ctx, key);
	(void)fs_rm_rf(dir);
	_cleanup_free_ char *taken = pool_path(ctx, key, ".taken");
	if (taken)
		(void)fs_rm_rf(taken);
	(void)unlink(lp);
	*ret = json_pack("{s:s,s:o}", "pool", key, "removed", removed ?: json_array());
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
