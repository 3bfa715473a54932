/* The warm pool (docs/warm.md): environments built ahead of time, each a
 * whole environment created by the ordinary create path with the pool's
 * options (so its walls are a cold create's by construction), waiting
 * hidden until a create with the same options takes one.
 *
 *   $SBX_ROOT/pools/<key>.json     {source, kind: template|snapshot, size, policy}
 *   $SBX_ROOT/pools/<key>.d/<id>   one empty token per ready entry; taking an
 *                                  entry is winning the unlink of its token
 *   $SBX_ROOT/pools/<key>.lock     held by the one refiller of that pool
 * An entry's state.json carries "pool": key until it is taken; sbx ls and
 * gc leave such environments alone (gc removes those of a pool that no
 * longer exists). Refilling needs no daemon: the create that takes an entry
 * and sbx pool set start a detached refiller, which creates entries until
 * the pool is full, the host-wide maximum (SBX_POOL_MAX, default 64 ready
 * entries in this store) is reached or less memory than SBX_POOL_MIN_FREE
 * (default 1g) is available. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "policy/policy.h"
#include "store/digest.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/syscalls.h"

#define POOL_SIZE_MAX 256

/* A create matches a pool when it names the same source and policy and
 * nothing else that would change what is built (pure). */
bool pool_opts_plain(const sbx_create_opts *o)
{
	if (!o)
		return true;
	bool plain = !o->name && !o->env && o->n_volumes == 0 && (!o->network || streq(o->network, "none")) &&
		     o->memory_bytes == 0 && o->pids == 0 && o->cpus == 0 && o->timeout_ms == 0 &&
		     o->ttl_ms == 0 && o->output_bytes == 0;
	if (o->version >= 2)
		plain = plain && !o->keep_identity;
	if (o->version >= 3)
		plain = plain && o->disk_bytes == 0 && !o->hidden && !o->secrets && !o->agent_policy &&
			!o->hostname && !o->ttl_keep;
	if (o->version >= 4)
		plain = plain && !o->user && !o->cap_drop && !o->cap_add && !o->user_no_root;
	if (o->version >= 5)
		plain = plain && o->idle_suspend_ms == 0;
	return plain;
}

/* The pool key of (kind, source, policy): 16 hex digits of their digest. */
static void pool_key(const char *kind, const char *source, const char *pol, char ret[17])
{
	char buf[8192], d[STORE_DIGEST_SIZE];
	snprintf(buf, sizeof(buf), "%s\n%s\n%s", kind, source, pol ? pol : "");
	if (store_digest_buf(buf, strlen(buf), d, NULL) < 0)
		snprintf(d, sizeof(d), "sha256:%064d", 0);
	snprintf(ret, 17, "%.16s", d + strlen("sha256:"));
}

static char *pool_path(const sbx_ctx *ctx, const char *key, const char *suffix)
{
	char *p = NULL;
	return asprintf(&p, "%s/pools/%s%s", ctx->root, key, suffix) < 0 ? NULL : p;
}

/* (kind, source) of a create: a snapshot by digest, else the template. */
static int pool_source_of(sbx_ctx *ctx, const sbx_create_opts *o, const char **ret_kind, char **ret_source,
			  sbx_err **err)
{
	if (o && o->snapshot) {
		*ret_kind = "snapshot";
		return sbx_snapshot_resolve(ctx, o->snapshot, ret_source, err);
	}
	*ret_kind = "template";
	*ret_source = strdup(o && o->template_spec ? o->template_spec : "host");
	return *ret_source ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

static int64_t pool_env_int(const char *name, int64_t def)
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

static int64_t mem_available(void)
{
	_cleanup_free_ char *buf = NULL;
	if (fs_read_file("/proc/meminfo", 1 << 16, &buf, NULL) < 0)
		return -1;
	const char *p = strstr(buf, "MemAvailable:");
	return p ? strtoll(p + strlen("MemAvailable:"), NULL, 10) * 1024 : -1;
}

static bool endswith(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && streq(s + a - b, suffix);
}

static size_t count_tokens(const char *dir)
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

/* Ready entries of every pool of this store. */
static size_t pool_total(const sbx_ctx *ctx)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/pools", ctx->root);
	DIR *d = opendir(p);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (endswith(de->d_name, ".d")) {
			char q[4600];
			snprintf(q, sizeof(q), "%s/%s", p, de->d_name);
			n += count_tokens(q);
		}
	if (d)
		closedir(d);
	return n;
}

static int pool_read(const sbx_ctx *ctx, const char *key, json_t **ret)
{
	_cleanup_free_ char *p = pool_path(ctx, key, ".json"), *buf = NULL;
	int r = p ? fs_read_file(p, 1 << 16, &buf, NULL) : -ENOMEM;
	if (r < 0)
		return r;
	*ret = json_loads(buf, 0, NULL);
	return *ret ? 0 : -EBADMSG;
}

/* Whether the pool of key wants another entry and the caps allow one. */
static bool pool_wants_more(sbx_ctx *ctx, const char *key, const char *dir)
{
	_cleanup_json_ json_t *cfg = NULL;
	if (pool_read(ctx, key, &cfg) < 0)
		return false; /* removed meanwhile */
	if (count_tokens(dir) >= (size_t)json_int(cfg, "size", 0) ||
	    pool_total(ctx) >= (size_t)pool_env_int("SBX_POOL_MAX", 64))
		return false;
	int64_t avail = mem_available();
	return avail < 0 || avail >= pool_env_int("SBX_POOL_MIN_FREE", 1LL << 30);
}

/* Creates entries until the pool is full or a cap says stop, holding the
 * pool's lock. Returns false when building one failed. */
static bool pool_fill_locked(sbx_ctx *ctx, const char *key, const char *dir)
{
	for (int round = 0; round < POOL_SIZE_MAX && pool_wants_more(ctx, key, dir); round++) {
		_cleanup_json_ json_t *cfg = NULL;
		if (pool_read(ctx, key, &cfg) < 0)
			return true;
		sbx_create_opts o = SBX_CREATE_OPTS_INIT;
		bool snap = streq(json_str(cfg, "kind") ?: "", "snapshot");
		o.snapshot = snap ? json_str(cfg, "source") : NULL;
		o.template_spec = snap ? NULL : json_str(cfg, "source");
		o.policy = json_str(cfg, "policy");
		_cleanup_free_ char *id = NULL;
		_cleanup_json_ json_t *w = NULL;
		ctx->pool_key = key;
		int r = sbx_env_create(ctx, &o, &id, &w, NULL);
		ctx->pool_key = NULL;
		if (r < 0)
			return false;
		_cleanup_free_ char *tok = NULL;
		_cleanup_close_ int fd = -1;
		if (asprintf(&tok, "%s/%s", dir, id) < 0 ||
		    (fd = open(tok, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0 ||
		    pool_read(ctx, key, &w) < 0) {
			(void)sbx_env_remove(ctx, id, NULL); /* the pool went while it was built */
			if (tok)
				(void)unlink(tok);
			return true;
		}
	}
	return true;
}

/* The refiller (detached, or inline with SBX_POOL_SYNC=1). A create that
 * takes an entry while a refiller holds the lock starts none (see
 * pool_refill_async): so after unlocking, the refiller looks again. */
static void pool_fill(sbx_ctx *ctx, const char *key)
{
	_cleanup_free_ char *lp = pool_path(ctx, key, ".lock"), *dir = pool_path(ctx, key, ".d");
	for (int pass = 0; lp && dir && pass < 8; pass++) {
		_cleanup_close_ int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (lk < 0 || flock(lk, LOCK_EX | LOCK_NB) < 0)
			return; /* another refiller is at it */
		if (!pool_fill_locked(ctx, key, dir))
			return;
		safe_close(TAKE_FD(lk));
		if (!pool_wants_more(ctx, key, dir))
			return;
	}
}

/* Starts a detached refiller (not our child: it outlives the caller). */
static void pool_refill_async(sbx_ctx *ctx, const char *key)
{
	if (pool_env_int("SBX_POOL_SYNC", 0)) {
		pool_fill(ctx, key);
		return;
	}
	/* A refiller at work sees the taken entry gone (pool_fill looks again
	 * after unlocking): no fork needed. */
	_cleanup_free_ char *lp = pool_path(ctx, key, ".lock");
	int lk = lp ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
	bool busy = lk >= 0 && flock(lk, LOCK_EX | LOCK_NB) < 0;
	safe_close(lk);
	if (busy)
		return;
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		if (setsid() < 0 || fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int i = 0; i < 3 && null >= 0; i++)
			dup2(null, i);
		sys_close_range(3, ~0U, 0);
		signal(SIGPIPE, SIG_IGN);
		ctx->progress = NULL;
		pool_fill(ctx, key);
		_exit(0);
	}
	(void)RETRY_EINTR(waitpid(pid, NULL, 0));
}

/* Whether any pool is set (a <key>.d directory under pools/): without one, a
 * create skips the key's digest, whose first use in a process initializes
 * OpenSSL (about 0.5 ms of every cold `sbx run`). */
static bool pool_any(const sbx_ctx *ctx)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/pools", ctx->root);
	DIR *d = opendir(p);
	if (!d)
		return false;
	struct dirent *de;
	bool any = false;
	while (!any && (de = readdir(d)))
		any = de->d_name[0] != '.' && endswith(de->d_name, ".d");
	closedir(d);
	return any;
}

/* Takes a ready entry matching o, if there is one: returns 1 and its id,
 * 0 when none matches, negative on failure. The entry becomes an ordinary
 * environment: created now, from_pool, no longer hidden. */
int pool_take(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings)
{
	if (ctx->pool_key || !pool_opts_plain(o) || !pool_any(ctx))
		return 0;
	const char *kind;
	_cleanup_free_ char *source = NULL;
	if (pool_source_of(ctx, o, &kind, &source, NULL) < 0)
		return 0;
	char key[17];
	pool_key(kind, source, o ? o->policy : NULL, key);
	_cleanup_free_ char *dir = pool_path(ctx, key, ".d");
	DIR *d = dir ? opendir(dir) : NULL;
	if (!d)
		return 0;
	struct dirent *de;
	_cleanup_free_ char *got = NULL;
	while (!got && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char tok[4400];
		snprintf(tok, sizeof(tok), "%s/%s", dir, de->d_name);
		if (unlink(tok) < 0)
			continue; /* another create won it */
		if (!env_is_live(ctx, de->d_name)) {
			(void)sbx_env_remove(ctx, de->d_name, NULL); /* its supervisor died while it waited */
			continue;
		}
		got = strdup(de->d_name);
	}
	closedir(d);
	if (!got) {
		pool_refill_async(ctx, key);
		return 0;
	}
	_cleanup_json_ json_t *st = NULL;
	if (env_state_read(ctx, got, &st) < 0) {
		(void)sbx_env_remove(ctx, got, NULL);
		return 0;
	}
	char created[32];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_del(st, "pool");
	json_object_set_new(st, "created_at", json_string(created));
	json_object_set_new(st, "created_ms", json_integer(now_ms_real()));
	json_object_set_new(st, "from_pool", json_true());
	if (env_state_write(ctx, got, st) < 0) {
		(void)sbx_env_remove(ctx, got, NULL);
		return 0;
	}
	if (ret_warnings)
		*ret_warnings = json_incref(json_object_get(st, "warnings") ?: json_array());
	pool_refill_async(ctx, key);
	*ret_id = TAKE_PTR(got);
	return 1;
}

_public_ bool sbx_env_from_pool(sbx_ctx *ctx, const char *id)
{
	_cleanup_json_ json_t *st = NULL;
	return env_state_read(ctx, id, &st) == 0 && json_bool(st, "from_pool", false);
}

_public_ int sbx_pool_set(sbx_ctx *ctx, const char *source, int size, const char *pol_spec, json_t **ret,
			  sbx_err **err)
{
	if (!source || !*source)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "pool: no template or snapshot given");
	if (size < 0 || size > POOL_SIZE_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid pool size %d: 0 to %d", size,
			       POOL_SIZE_MAX);
	/* A snapshot (digest, prefix or label) if it resolves as one, else a template. */
	_cleanup_free_ char *digest = NULL;
	bool snap = sbx_snapshot_resolve(ctx, source, &digest, NULL) == 0;
	if (pol_spec) {
		_cleanup_policy_ struct policy *pol = NULL;
		if (policy_load_spec(pol_spec, &pol, err) < 0)
			return err_wrap(err, "pool policy");
	}
	const char *kind = snap ? "snapshot" : "template";
	const char *src = snap ? digest : source;
	char key[17];
	pool_key(kind, src, pol_spec, key);
	char d[4300];
	snprintf(d, sizeof(d), "%s/pools/%s.d", ctx->root, key);
	int r = fs_mkdir_p(d, 0700);
	if (r < 0)
		return err_errnum(err, r, "create '%s'", d);
	_cleanup_json_ json_t *cfg = json_pack("{s:s,s:s,s:s,s:i,s:s?}", "pool", key, "kind", kind, "source",
					       src, "size", size, "policy", pol_spec);
	_cleanup_free_ char *txt = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	_cleanup_free_ char *p = pool_path(ctx, key, ".json");
	if (!txt || !p)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if ((r = fs_write_atomic(p, txt, strlen(txt), 0600)) < 0)
		return err_errnum(err, r, "write '%s'", p);
	/* Shrinking: the entries beyond the new size go now. */
	for (size_t n = count_tokens(d); n > (size_t)size; n--) {
		DIR *dd = opendir(d);
		struct dirent *de;
		while (dd && (de = readdir(dd)))
			if (de->d_name[0] != '.') {
				char tok[4600];
				snprintf(tok, sizeof(tok), "%s/%s", d, de->d_name);
				if (unlink(tok) == 0) {
					(void)sbx_env_remove(ctx, de->d_name, NULL);
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

static json_t *pool_entry_json(const sbx_ctx *ctx, const char *name)
{
	char key[17];
	snprintf(key, sizeof(key), "%.16s", name);
	_cleanup_json_ json_t *cfg = NULL;
	if (pool_read(ctx, key, &cfg) < 0)
		return NULL;
	_cleanup_free_ char *dir = pool_path(ctx, key, ".d");
	json_object_set_new(cfg, "ready", json_integer(dir ? (json_int_t)count_tokens(dir) : 0));
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
		if (endswith(de->d_name, ".json") && strlen(de->d_name) == 16 + 5) {
			json_t *e = pool_entry_json(ctx, de->d_name);
			if (e)
				json_array_append_new(a, e);
		}
	if (d)
		closedir(d);
	*ret = json_pack("{s:o,s:I}", "pools", a, "max_ready", (json_int_t)pool_env_int("SBX_POOL_MAX", 64));
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

/* Every environment of pool key (or of pools that no longer exist, key
 * NULL) that has not been taken: removed. */
static json_t *pool_remove_entries(sbx_ctx *ctx, const char *key)
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
		if (sbx_env_remove(ctx, *i, NULL) == 0 && removed)
			json_array_append_new(removed, json_string(*i));
	}
	return removed;
}

_public_ int sbx_pool_remove(sbx_ctx *ctx, const char *source, const char *pol_spec, json_t **ret,
			     sbx_err **err)
{
	_cleanup_free_ char *digest = NULL;
	bool snap = source && sbx_snapshot_resolve(ctx, source, &digest, NULL) == 0;
	char key[17];
	pool_key(snap ? "snapshot" : "template", snap ? digest : source ? source : "", pol_spec, key);
	_cleanup_free_ char *p = pool_path(ctx, key, ".json"), *dir = pool_path(ctx, key, ".d"),
			    *lp = pool_path(ctx, key, ".lock");
	if (!p || !dir || !lp)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (unlink(p) < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "no pool for '%s'%s%s",
						 source ? source : "", pol_spec ? " with policy " : "",
						 pol_spec ? pol_spec : "")
				       : err_errno(err, "remove '%s'", p);
	/* A refiller sees the pool gone before its next entry; wait for it. */
	_cleanup_close_ int lk = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lk >= 0)
		(void)flock(lk, LOCK_EX);
	json_t *removed = pool_remove_entries(ctx, key);
	(void)fs_rm_rf(dir);
	(void)unlink(lp);
	*ret = json_pack("{s:s,s:o}", "pool", key, "removed", removed ?: json_array());
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

/* sbx gc: entries of pools that no longer exist (a pool rm that died). */
void pool_gc(sbx_ctx *ctx, json_t *removed)
{
	json_t *r = pool_remove_entries(ctx, NULL);
	json_array_extend(removed, r);
	json_decref(r);
}
