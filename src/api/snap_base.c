/* The snapshot resolver and the template bases (snap_base.h). */
#include "api/snap_base.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/mask.h"
#include "store/snapshot.h"
#include "util/fs.h"
#include "util/json.h"

_public_ int sbx_snapshot_resolve(sbx_ctx *ctx, const char *ref, char **ret_digest, sbx_err **err)
{
	if (!ref || !*ref)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "empty snapshot id");
	char d[STORE_DIGEST_SIZE];
	if (store_digest_valid(ref)) {
		_cleanup_snapshot_ store_snapshot *s = NULL;
		if (store_snapshot_read(ctx->root, ref, &s, err) < 0)
			return -1;
		return (*ret_digest = strdup(ref)) ? 0 : -ENOMEM;
	}
	if (store_label_valid(ref) && store_ref_get(ctx->root, ref, d, NULL) == 0)
		return (*ret_digest = strdup(d)) ? 0 : -ENOMEM;
	/* A unique prefix of the hex (with or without "sha256:"). */
	if (store_digest_prefix_valid(ref)) {
		_cleanup_strv_free_ char **all = NULL;
		if (store_snapshot_list(ctx->root, &all, NULL) == 0) {
			const char *match = NULL;
			int n = store_digest_prefix_match(all, ref, &match);
			if (n == 1)
				return (*ret_digest = strdup(match)) ? 0 : -ENOMEM;
			if (n > 1)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "snapshot prefix '%s' is ambiguous", ref);
		}
	}
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such snapshot: '%s' (not a digest, prefix or label)",
		       ref);
}

char *snap_os_release(const char *env_dir)
{
	char p[4400];
	_cleanup_free_ char *buf = NULL;
	snprintf(p, sizeof(p), "%s/upper/etc/os-release", env_dir ? env_dir : "");
	if ((!env_dir || fs_read_file(p, 65536, &buf, NULL) < 0) &&
	    fs_read_file("/etc/os-release", 65536, &buf, NULL) < 0)
		return NULL;
	char *q = strstr(buf, "PRETTY_NAME=");
	if (!q)
		return NULL;
	q += strlen("PRETTY_NAME=");
	if (*q == '"')
		q++;
	size_t n = strcspn(q, "\"\n");
	return strndup(q, n);
}

/* ---- template bases (docs/store.md "Template bases") ---------------------- */

/* The mask as identity: each entry's type, mode, owner, path and link
 * target, in order (not mtimes: they do not change what is shown). */
static int mask_digest(const mask_list *m, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	for (size_t i = 0; i < m->n; i++) {
		const mask_entry *e = &m->e[i];
		char head[64];
		int n = snprintf(head, sizeof(head), "%c %o %u %u ", e->type, e->mode & 07777,
				 (unsigned)e->uid, (unsigned)e->gid);
		if (store_hasher_update(h, head, (size_t)n, err) < 0 ||
		    store_hasher_update(h, e->path, strlen(e->path) + 1, err) < 0 ||
		    store_hasher_update(h, e->target ? e->target : "",
					(e->target ? strlen(e->target) : 0) + 1, err) < 0)
			return err_ret(err);
	}
	return store_hasher_final(h, ret, err);
}

static char *kv(const char *k, const char *v)
{
	char *s = NULL;
	return asprintf(&s, "%s=%s", k, v) < 0 ? NULL : s;
}

/* A package database's digest, remembered by the file's identity (device,
 * inode, size, mtime, ctime): /var/lib/dpkg/status is ~0.8 MB here, 0.4 ms
 * of SHA-256 plus its read in every create of a persistent `host`
 * environment. Per process (sbx mcp, a pool's refiller), and across
 * processes in $SBX_ROOT/cache/pkgdb-<n> (a CLI create, wake, restore or
 * fork is a new process each time). Git's rule against racy entries: a file
 * changed in the last 2 s is hashed, and not remembered. The cache is the
 * store's own (same owner, same trust); an entry that does not parse or
 * does not match the file's identity is ignored and rewritten. */
#define PKGDB_SAME(a, b)                                                                                     \
	((a).st_dev == (b).st_dev && (a).st_ino == (b).st_ino && (a).st_size == (b).st_size &&               \
	 (a).st_mtim.tv_sec == (b).st_mtim.tv_sec && (a).st_mtim.tv_nsec == (b).st_mtim.tv_nsec &&           \
	 (a).st_ctim.tv_sec == (b).st_ctim.tv_sec && (a).st_ctim.tv_nsec == (b).st_ctim.tv_nsec)

/* A cache line: "<dev> <ino> <size> <mtime> <ctime> <digest> <path>\n". */
static int pkgdb_ident(const struct stat *st, char *buf, size_t size)
{
	return snprintf(buf, size, "%ju %ju %jd %jd.%09ld %jd.%09ld ", (uintmax_t)st->st_dev,
			(uintmax_t)st->st_ino, (intmax_t)st->st_size, (intmax_t)st->st_mtim.tv_sec,
			st->st_mtim.tv_nsec, (intmax_t)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
}

static bool pkgdb_disk_get(const char *file, const struct stat *st, const char *path,
			   char ret[STORE_DIGEST_SIZE])
{
	_cleanup_free_ char *text = NULL;
	if (fs_read_file(file, 8192, &text, NULL) < 0)
		return false;
	char id[160];
	int n = pkgdb_ident(st, id, sizeof(id));
	if (n <= 0 || (size_t)n >= sizeof(id) || strncmp(text, id, (size_t)n) != 0)
		return false;
	const char *d = text + n, *rest = d + STORE_DIGEST_SIZE - 1;
	if (strnlen(d, STORE_DIGEST_SIZE) < STORE_DIGEST_SIZE - 1 || rest[0] != ' ' ||
	    strncmp(rest + 1, path, strlen(path)) != 0 || !streq(rest + 1 + strlen(path), "\n"))
		return false;
	memcpy(ret, d, STORE_DIGEST_SIZE - 1);
	ret[STORE_DIGEST_SIZE - 1] = 0;
	return store_digest_valid(ret);
}

int snap_pkgdb_digest(const char *root, int fd, const char *path, size_t slot, char *ret, sbx_err **err)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		char path[64];
		struct stat st;
		char digest[STORE_DIGEST_SIZE];
	} cache[4];
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat '%s'", path);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ARRAY_SIZE(cache); i++)
		if (streq(cache[i].path, path) && PKGDB_SAME(cache[i].st, st)) {
			memcpy(ret, cache[i].digest, STORE_DIGEST_SIZE);
			pthread_mutex_unlock(&lock);
			return 0;
		}
	pthread_mutex_unlock(&lock);
	bool racy =
	    time(NULL) - st.st_ctim.tv_sec < 2 || time(NULL) - st.st_mtim.tv_sec < 2 || strlen(path) >= 64;
	char file[4200];
	snprintf(file, sizeof(file), "%s/cache/pkgdb-%zu", root, slot);
	bool hit = !racy && pkgdb_disk_get(file, &st, path, ret);
	if (!hit && store_digest_fd(fd, ret, NULL, err) < 0)
		return -1;
	if (racy)
		return 0;
	if (!hit) {
		char line[4400];
		int n = pkgdb_ident(&st, line, sizeof(line));
		if (n > 0 && (size_t)n < sizeof(line))
			n += snprintf(line + n, sizeof(line) - (size_t)n, "%s %s\n", ret, path);
		char dir[4200];
		snprintf(dir, sizeof(dir), "%s/cache", root);
		if (n > 0 && (size_t)n < sizeof(line) && (mkdir(dir, 0700) == 0 || errno == EEXIST))
			(void)fs_write_atomic_flags(file, line, (size_t)n, 0600,
						    false); /* a cache: best effort */
	}
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ARRAY_SIZE(cache); i++)
		if (!cache[i].path[0] || streq(cache[i].path, path)) {
			snprintf(cache[i].path, sizeof(cache[i].path), "%s", path);
			cache[i].st = st;
			memcpy(cache[i].digest, ret, STORE_DIGEST_SIZE);
			break;
		}
	pthread_mutex_unlock(&lock);
	return 0;
}
#undef PKGDB_SAME

int snap_template_base(sbx_ctx *ctx, const char *spec, const mask_list *mask, char *ret, sbx_err **err)
{
	/* What names the tree: the template, and for `host` the directories it
	 * shows, the mask over them and the host's package databases. */
	static const char *const pkgdbs[] = {"/var/lib/dpkg/status", "/var/lib/rpm/rpmdb.sqlite",
					     "/var/lib/rpm/Packages", "/lib/apk/db/installed", NULL};
	_cleanup_strv_free_ char **idv = NULL;
	size_t n = 0;
	int r = strv_push(&idv, &n, kv("template", spec));
	if (r == 0 && mask) {
		_cleanup_strv_free_ char **dirs = mask_host_dirs(mask);
		size_t jl = 1;
		for (char **d = dirs; d && *d; d++)
			jl += strlen(*d) + 1;
		_cleanup_free_ char *joined = calloc(1, jl);
		for (char **d = dirs; joined && d && *d; d++) {
			if (d != dirs)
				strcat(joined, ",");
			strcat(joined, *d);
		}
		char md[STORE_DIGEST_SIZE];
		if (mask_digest(mask, md, err) < 0)
			return err_wrap(err, "template base");
		r = strv_push(&idv, &n, kv("dirs", joined ? joined : ""));
		if (r == 0)
			r = strv_push(&idv, &n, kv("mask", md));
		for (size_t i = 0; r == 0 && pkgdbs[i]; i++) {
			_cleanup_close_ int fd = open(pkgdbs[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			char d[STORE_DIGEST_SIZE];
			if (fd < 0)
				continue;
			if (snap_pkgdb_digest(ctx->root, fd, pkgdbs[i], i, d, err) < 0)
				return err_wrap(err, "template base: '%s'", pkgdbs[i]);
			_cleanup_free_ char *k = NULL;
			r = asprintf(&k, "pkgdb:%s", pkgdbs[i]) < 0 ? -ENOMEM : strv_push(&idv, &n, kv(k, d));
		}
	}
	if (r < 0)
		return err_errnum(err, -r, "template base");
	_cleanup_free_ char *osr = mask ? snap_os_release(NULL) : NULL;
	static char *empty[] = {NULL};
	store_snapshot snap = {.layers = empty,
			       .base_template = (char *)spec,
			       .env = empty,
			       .cwd = "/root",
			       .user = "root",
			       .os_release = osr,
			       .labels = empty,
			       /* The id names the tree only: the same host state, the same base. */
			       .created_at = "1970-01-01T00:00:00Z",
			       .base_identity = idv};
	_cleanup_free_ char *json = NULL;
	if (store_snapshot_encode(&snap, &json, ret, err) < 0)
		return err_wrap(err, "template base");
	/* Built once: present means complete (written as a unique temp name,
	 * then renamed; concurrent creates write the same bytes). */
	_cleanup_snapshot_ store_snapshot *have = NULL;
	if (store_snapshot_read(ctx->root, ret, &have, NULL) == 0)
		return 0;
	char id2[STORE_DIGEST_SIZE];
	if (store_snapshot_write(ctx->root, &snap, id2, err) < 0)
		return err_wrap(err, "template base");
	return 0;
}
