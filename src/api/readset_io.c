/* The read set's I/O (readset_io.h).
 *
 * Where a path the run read came from is decided the way the environment's
 * overlay decided it, on the host side, without entering the environment:
 * volumes first (the longest mount path that holds it), then the layers of
 * the snapshot the run started from (top first), then the environment's
 * template: for `host` the mask (whiteouts, opaque and mirrored directories,
 * top-level links) over the host's system directories, for `dir:PATH` that
 * directory, for an imported image nothing more (its layers are the
 * snapshot's). A path a layer holds is the snapshot's: not an input. A path only the live tree (volume, host,
 * dir:) holds, or one nothing holds where the live tree could make it appear, is an input. Symlinks are
 * resolved component by component through that same view (an absolute target restarts at the environment's
 * root), at most 40. Opaque directories of the snapshot's layers are not consulted (a path under one is then
 * attributed to the lower tree: an input too many, never one too few).
 *
 * Every lookup and every open is openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS)
 * from the root of the tree that holds the path: a link swapped in between is
 * refused, never followed. Digests are SHA-256 of the content (files) or of
 * the sorted "name\0type\n" list (directories of volumes). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "api/readset_io.h"
#include "runtime/mask.h"
#include "store/digest.h"
#include "store/layer.h"
#include "store/snapshot.h"
#include "trace/readset.h"
#include "trace/trace_view.h"
#include "util/fs.h"
#include "util/hashmap.h"
#include "util/json.h"

#define RS_MAX_LAYERS 512
#define RS_MAX_LINKS 40
#define RS_PATH_MAX 4096

enum { SRC_NONE, SRC_VOLUME, SRC_LAYER, SRC_MASK, SRC_LIVE };

typedef struct rs_vol {
	const char *path; /* in the environment, absolute */
	const char *host; /* the directory rel is taken from */
	int fd;
	char *file; /* a volume that is one file: its name in host (the parent directory) */
	char *parent;
} rs_vol;

typedef struct rs_view {
	int layers[RS_MAX_LAYERS]; /* the run's snapshot's layers, top first */
	size_t n_layers;
	const mask_list *mask; /* host template */
	char **host_dirs;
	int live_fd; /* "/" (host) or PATH (dir:), -1 for images */
	const char *live_root;
	rs_vol *vols;
	size_t n_vols;
	strmap *memo; /* lookup's answers by path (rs_memo), volumes' excepted */
} rs_view;

/* One lookup's answer. */
typedef struct rs_ent {
	int src;
	size_t vol;	 /* SRC_VOLUME */
	const char *rel; /* relative to the source's root (points into the path) */
	struct stat st;
	char *target; /* a symlink's target (malloc'd) */
} rs_ent;

static int open_beneath(int root, const char *rel, int flags)
{
	if (!*rel)
		return openat(root, ".", flags | O_CLOEXEC);
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	long fd = syscall(SYS_openat2, root, rel, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

/* lstat of rel under root, and a symlink's target. */
static int lstat_beneath(int root, const char *rel, struct stat *st, char **ret_target)
{
	_cleanup_close_ int fd = open_beneath(root, rel, O_PATH);
	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		return -errno;
	if (S_ISLNK(st->st_mode) && ret_target) {
		char buf[RS_PATH_MAX];
		ssize_t n = readlinkat(fd, "", buf, sizeof(buf) - 1);
		if (n < 0)
			return -errno;
		buf[n] = 0;
		if (!(*ret_target = strdup(buf)))
			return -ENOMEM;
	}
	return 0;
}

static const mask_entry *mask_find(const mask_list *m, const char *rel)
{
	const char *key = *rel ? rel : ".";
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->e[i].path, key))
			return &m->e[i];
	return NULL;
}

static bool host_top(const rs_view *v, const char *rel)
{
	size_t n = strcspn(rel, "/");
	for (char **p = v->host_dirs; p && *p; p++)
		if (strlen(*p) == n && strncmp(*p, rel, n) == 0)
			return true;
	return false;
}

/* What the environment sees at rel (no leading '/', "" = the root), one
 * level: symlinks in the last component are reported, not followed.
 * 0 with e->src, or -ENOENT (e->src tells which tree would hold it). */
static int lookup(const rs_view *v, const char *rel, rs_ent *e)
{
	free(e->target);
	*e = (rs_ent){.src = SRC_NONE, .rel = rel};
	/* volumes: the longest mount path */
	size_t best = 0;
	bool in_vol = false;
	for (size_t i = 0; i < v->n_vols; i++) {
		const char *mp = v->vols[i].path + 1;
		size_t l = strlen(mp);
		if ((strncmp(rel, mp, l) == 0 && (rel[l] == '/' || rel[l] == 0)) && (!in_vol || l >= best)) {
			best = l;
			e->vol = i;
			in_vol = true;
		}
	}
	if (in_vol) {
		const rs_vol *vo = &v->vols[e->vol];
		e->src = SRC_VOLUME;
		e->rel = rel + best + (rel[best] == '/');
		if (vo->file) {
			if (*e->rel)
				return -ENOENT; /* under a file */
			e->rel = vo->file;
		}
		return vo->fd < 0 ? -ENOENT : lstat_beneath(vo->fd, e->rel, &e->st, &e->target);
	}
	for (size_t i = 0; i < v->n_layers; i++) {
		int r = lstat_beneath(v->layers[i], rel, &e->st, &e->target);
		if (r == 0) {
			e->src = SRC_LAYER;
			if (S_ISCHR(e->st.st_mode) && e->st.st_rdev == 0)
				return -ENOENT; /* a whiteout: gone, whatever lies below */
			return 0;
		}
		if (r != -ENOENT && r != -ENOTDIR)
			return r;
	}
	if (v->mask) {
		/* an ancestor whited out or made opaque by the mask hides the host */
		char buf[RS_PATH_MAX];
		snprintf(buf, sizeof(buf), "%s", rel);
		for (char *s = buf; *s; s++) {
			if (*s != '/')
				continue;
			*s = 0;
			const mask_entry *a = mask_find(v->mask, buf);
			*s = '/';
			if (a && (a->type == 'w' || a->type == 'o' || a->type == 'l')) {
				e->src = SRC_MASK;
				return -ENOENT;
			}
		}
		const mask_entry *m = mask_find(v->mask, rel);
		if (m) {
			e->src = SRC_MASK;
			if (m->type == 'w')
				return -ENOENT;
			if (m->type == 'l') {
				e->st.st_mode = S_IFLNK | 0777;
				return (e->target = strdup(m->target ? m->target : "")) ? 0 : -ENOMEM;
			}
			e->st.st_mode = S_IFDIR | 0755;
			return 0;
		}
		if (!*rel || !host_top(v, rel))
			return -ENOENT; /* not a directory the host template shows */
	}
	if (v->live_fd < 0)
		return -ENOENT;
	e->src = SRC_LIVE;
	int r = lstat_beneath(v->live_fd, rel, &e->st, &e->target);
	return r == -ENOTDIR ? -ENOENT : r;
}

/* One lookup's answer, kept: a run's paths share their directories
 * (/usr/share/...), and each lookup costs an openat2, fstat and close per
 * layer. The view does not change while the read set is made. */
typedef struct rs_memo {
	int r, src;
	struct stat st;
	char *target;
} rs_memo;

static void memo_free(void *p)
{
	rs_memo *m = p;
	if (m)
		free(m->target);
	free(m);
}

static int lookup_memo(const rs_view *v, const char *rel, rs_ent *e)
{
	void **slot = v->memo ? strmap_slot(v->memo, rel) : NULL;
	if (slot && *slot) {
		const rs_memo *m = *slot;
		free(e->target);
		*e = (rs_ent){.src = m->src, .rel = rel, .st = m->st};
		if (m->target && !(e->target = strdup(m->target)))
			return -ENOMEM;
		return m->r;
	}
	int r = lookup(v, rel, e);
	/* a volume's answer points into its own root: not kept */
	if (slot && e->src != SRC_VOLUME && (r == 0 || r == -ENOENT)) {
		rs_memo *m = calloc(1, sizeof(*m));
		if (m && (!e->target || (m->target = strdup(e->target)))) {
			m->r = r, m->src = e->src, m->st = e->st;
			*slot = m;
		} else
			memo_free(m);
	}
	return r;
}

/* Resolves path (absolute, in the environment) through the view, following
 * symlinks; *e describes what holds the result (or would: -ENOENT). */
static int resolve(const rs_view *v, const char *path, char canon[RS_PATH_MAX], rs_ent *e)
{
	char todo[RS_PATH_MAX];
	snprintf(todo, sizeof(todo), "%s", path);
	canon[0] = 0;
	int links = 0;
	char *p = todo;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		size_t n = strcspn(p, "/");
		char comp[256];
		if (n >= sizeof(comp))
			return -ENAMETOOLONG;
		memcpy(comp, p, n);
		comp[n] = 0;
		p += n;
		if (streq(comp, "."))
			continue;
		if (streq(comp, "..")) {
			char *s = strrchr(canon, '/');
			if (s)
				*s = 0;
			else
				canon[0] = 0;
			continue;
		}
		size_t cl = strlen(canon);
		if (cl + n + 2 >= RS_PATH_MAX)
			return -ENAMETOOLONG;
		if (cl)
			canon[cl++] = '/';
		memcpy(canon + cl, comp, n + 1);
		int r = lookup_memo(v, canon, e);
		if (r < 0) {
			/* the rest, as named, for the report */
			if (strlen(canon) + strlen(p) < RS_PATH_MAX)
				strcat(canon, p);
			return r;
		}
		if (!S_ISLNK(e->st.st_mode))
			continue;
		if (++links > RS_MAX_LINKS)
			return -ELOOP;
		char next[RS_PATH_MAX];
		if (snprintf(next, sizeof(next), "%s/%s", e->target, p) >= (int)sizeof(next))
			return -ENAMETOOLONG;
		if (e->target[0] == '/')
			canon[0] = 0;
		else {
			char *s = strrchr(canon, '/');
			if (s)
				*s = 0;
			else
				canon[0] = 0;
		}
		snprintf(todo, sizeof(todo), "%s", next);
		p = todo;
	}
	return lookup_memo(v, canon, e);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "sha256:..." of a directory's names and types. */
static int digest_dir(int fd, char out[STORE_DIGEST_SIZE], sbx_err **err)
{
	DIR *d = fdopendir(fd);
	if (!d)
		return err_errno(err, "list directory");
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nv = realloc(names, cap * sizeof(*nv));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			names = nv;
		}
		if (asprintf(&names[n], "%s%c%u\n", de->d_name, 0, (unsigned)de->d_type) < 0) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (r == 0) {
		qsort(names, n, sizeof(*names), cmp_str);
		_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
		if (!h)
			r = -1;
		for (size_t i = 0; h && i < n; i++)
			(void)store_hasher_update(
			    h, names[i], strlen(names[i]) + 1 + strlen(names[i] + strlen(names[i]) + 1),
			    NULL);
		if (h && store_hasher_final(h, out, err) < 0)
			r = -1;
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return r == -ENOMEM ? err_errnum(err, ENOMEM, "list directory") : r;
}

/* Digests already taken, by file identity, kept in $SBX_RUN/readset-digests.json
 * (per boot, per user): {"<root>/<rel>": [dev, ino, size, mtime_ns, ctime_ns,
 * "sha256:.."]}. A file is taken from the cache only when all five agree;
 * a write changes ctime, which no unprivileged process can set back. A file
 * changed less than RS_RACY_NS before it was digested is not cached: a second
 * write within the same timestamp tick would keep its identity (git's "racy
 * clean" rule). The cache is an optimization: unreadable or corrupt, it
 * starts empty. */
#define RS_RACY_NS 2000000000LL
#define RS_CACHE_MAX 50000
typedef struct rs_cache {
	json_t *map;
	char *path;
	bool dirty;
} rs_cache;

static void cache_open(sbx_ctx *ctx, rs_cache *c)
{
	*c = (rs_cache){0};
	if (asprintf(&c->path, "%s/readset-digests.json", ctx->run) < 0) {
		c->path = NULL;
		return;
	}
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	if (fs_read_file(c->path, 64u << 20, &data, &len) == 0)
		c->map = json_loadb(data, len, 0, NULL);
	if (!json_is_object(c->map)) {
		json_decref(c->map);
		c->map = json_object();
	}
}

static void cache_close(rs_cache *c)
{
	if (c->dirty && c->path && c->map) {
		if (json_object_size(c->map) > RS_CACHE_MAX)
			json_object_clear(c->map);
		_cleanup_free_ char *d = json_dumps(c->map, JSON_COMPACT);
		if (d)
			(void)fs_write_atomic_flags(c->path, d, strlen(d), 0600, false);
	}
	json_decref(c->map);
	free(c->path);
	*c = (rs_cache){0};
}

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static bool cache_get(const rs_cache *c, const char *key, const struct stat *s,
		      char out[STORE_DIGEST_SIZE + 32])
{
	json_t *e = c && c->map ? json_object_get(c->map, key) : NULL;
	if (!json_is_array(e) || json_array_size(e) != 6)
		return false;
	int64_t want[5] = {(int64_t)s->st_dev, (int64_t)s->st_ino, (int64_t)s->st_size, ts_ns(&s->st_mtim),
			   ts_ns(&s->st_ctim)};
	for (size_t i = 0; i < 5; i++)
		if (json_integer_value(json_array_get(e, i)) != want[i])
			return false;
	const char *d = json_string_value(json_array_get(e, 5));
	if (!d || strlen(d) >= STORE_DIGEST_SIZE + 32)
		return false;
	strcpy(out, d);
	return true;
}

static void cache_put(rs_cache *c, const char *key, const struct stat *s, const char *digest)
{
	if (!c || !c->map)
		return;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	int64_t young = ts_ns(&now) - RS_RACY_NS;
	if (ts_ns(&s->st_mtim) > young || ts_ns(&s->st_ctim) > young)
		return;
	json_t *e =
	    json_pack("[I,I,I,I,I,s]", (json_int_t)s->st_dev, (json_int_t)s->st_ino, (json_int_t)s->st_size,
		      (json_int_t)ts_ns(&s->st_mtim), (json_int_t)ts_ns(&s->st_ctim), digest);
	if (e && json_object_set_new(c->map, key, e) == 0)
		c->dirty = true;
}

/* The digest of rel under root: "sha256:..", "absent" or "unreadable:ENAME";
 * st (may be NULL) gets the identity at that time. With cache, a regular
 * file whose identity is cached under key is not read again. */
static void digest_at(int root, const char *rel, bool dir, char out[STORE_DIGEST_SIZE + 32], struct stat *st,
		      rs_cache *cache, const char *key)
{
	int fd = open_beneath(root, rel, O_RDONLY | (dir ? O_DIRECTORY : 0));
	if (fd < 0) {
		if (fd == -ENOENT || fd == -ENOTDIR)
			snprintf(out, STORE_DIGEST_SIZE + 32, "absent");
		else
			snprintf(out, STORE_DIGEST_SIZE + 32, "unreadable:%s",
				 trace_errno_name(-fd) ?: "error");
		return;
	}
	struct stat s;
	if (fstat(fd, &s) < 0) {
		safe_close(fd);
		snprintf(out, STORE_DIGEST_SIZE + 32, "unreadable:%s", trace_errno_name(errno) ?: "error");
		return;
	}
	if (st)
		*st = s;
	int r;
	if (S_ISDIR(s.st_mode) && dir)
		r = digest_dir(fd, out, NULL); /* takes fd */
	else if (S_ISDIR(s.st_mode)) {
		safe_close(fd);
		snprintf(out, STORE_DIGEST_SIZE + 32, "directory");
		return;
	} else if (cache && key && cache_get(cache, key, &s, out)) {
		safe_close(fd);
		return;
	} else {
		r = store_digest_fd(fd, out, NULL, NULL);
		safe_close(fd);
		if (r == 0 && cache && key)
			cache_put(cache, key, &s, out);
	}
	if (r < 0)
		snprintf(out, STORE_DIGEST_SIZE + 32, "unreadable:EIO");
}

static void view_close(rs_view *v)
{
	for (size_t i = 0; i < v->n_layers; i++)
		safe_close(v->layers[i]);
	for (size_t i = 0; i < v->n_vols; i++) {
		safe_close(v->vols[i].fd);
		free(v->vols[i].file);
		free(v->vols[i].parent);
	}
	free(v->vols);
	safe_close(v->live_fd);
	strv_free(v->host_dirs);
	if (v->memo)
		strmap_free(v->memo, memo_free);
	free(v->memo);
}

static int open_layer(sbx_ctx *ctx, rs_view *v, const char *digest, sbx_err **err)
{
	_cleanup_free_ char *lp = store_layer_path(ctx->root, digest ? digest : "");
	int fd = lp ? open(lp, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd < 0)
		return err_errno(err, "open layer %s", digest ? digest : "?");
	v->layers[v->n_layers++] = fd;
	return 0;
}

/* The layers are the snapshot the run started from (top first): what the
 * run itself wrote into the writable layer afterwards does not hide the
 * lower file it read first. Without a readable snapshot: the writable layer
 * as it is now and the environment's layers. */
static int view_open(sbx_ctx *ctx, const char *id, const char *snapshot, const env_record *st,
		     mask_list **mask, rs_view *v, sbx_err **err)
{
	*v = (rs_view){.live_fd = -1, .memo = calloc(1, sizeof(strmap))}; /* no memo: each lookup made */
	_cleanup_(store_snapshot_freep) store_snapshot *snap = NULL;
	if (snapshot && store_snapshot_read(ctx->root, snapshot, &snap, NULL) == 0) {
		size_t n = 0;
		while (snap->layers && snap->layers[n])
			n++;
		for (size_t i = n; i-- > 0 && v->n_layers < RS_MAX_LAYERS;)
			if (open_layer(ctx, v, snap->layers[i], err) < 0)
				return -1;
	} else {
		char p[RS_PATH_MAX];
		snprintf(p, sizeof(p), "%s/envs/%s/upper", ctx->root, id);
		int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			v->layers[v->n_layers++] = fd;
		json_t *jl = st->layers;
		for (size_t i = json_array_size(jl); i-- > 0 && v->n_layers < RS_MAX_LAYERS;)
			if (open_layer(ctx, v, json_string_value(json_array_get(jl, i)), err) < 0)
				return -1;
	}
	const char *t = st->template_spec ?: "host";
	if (streq(t, "host")) {
		if (mask_host_layer(ctx->root, ctx->run, ctx->rootless, mask, err) < 0)
			return err_wrap(err, "host template mask");
		v->mask = *mask;
		v->host_dirs = mask_host_dirs(*mask);
		v->live_root = "/";
	} else if (startswith(t, "dir:"))
		v->live_root = t + 4;
	if (v->live_root && (v->live_fd = open(v->live_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_errno(err, "open template '%s'", t);
	json_t *vols = st->volumes;
	v->vols = calloc(json_array_size(vols) + 1, sizeof(*v->vols));
	if (!v->vols)
		return err_errnum(err, ENOMEM, "read set");
	size_t i;
	json_t *vol;
	json_array_foreach(vols, i, vol)
	{
		rs_vol *rv = &v->vols[v->n_vols];
		rv->path = json_str(vol, "path");
		rv->host = json_str(vol, "host");
		if (!rv->path || rv->path[0] != '/' || !rv->host)
			continue;
		rv->fd = open(rv->host, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rv->fd < 0 && errno == ENOTDIR) {
			/* a volume that is one file: looked up in its directory */
			const char *slash = strrchr(rv->host, '/');
			if (slash && slash[1]) {
				rv->file = strdup(slash + 1);
				rv->parent = slash == rv->host
						 ? strdup("/")
						 : strndup(rv->host, (size_t)(slash - rv->host));
				if (!rv->file || !rv->parent)
					return err_errnum(err, ENOMEM, "read set");
				rv->host = rv->parent;
				rv->fd = open(rv->parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
			}
		}
		v->n_vols++; /* gone: its paths read as absent */
	}
	return 0;
}

static json_t *identity_json(const struct stat *s)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I}", "dev", (json_int_t)s->st_dev, "ino", (json_int_t)s->st_ino,
			 "size", (json_int_t)s->st_size, "mtime_ns",
			 (json_int_t)s->st_mtim.tv_sec * 1000000000 + s->st_mtim.tv_nsec, "ctime_ns",
			 (json_int_t)s->st_ctim.tv_sec * 1000000000 + s->st_ctim.tv_nsec);
}

int readset_record(sbx_ctx *ctx, const char *id, const char *snapshot, const env_record *st,
		   const char *events, size_t len, const char *cwd, json_t **ret_read_set,
		   json_t **ret_volume_writes, sbx_err **err)
{
	readset rs = {0};
	if (readset_derive(events, len, cwd, &rs, err) < 0)
		return -1;
	mask_list *mask = NULL;
	rs_view v;
	int r = view_open(ctx, id, snapshot, st, &mask, &v, err);
	json_t *out = json_array(), *writes = json_array();
	if (!out || !writes)
		r = err_errnum(err, ENOMEM, "read set");
	rs_ent e = {0};
	char canon[RS_PATH_MAX];
	rs_cache cache;
	cache_open(ctx, &cache);
	for (size_t i = 0; r == 0 && i < rs.n; i++) {
		const readset_item *it = &rs.v[i];
		int q = resolve(&v, it->path, canon, &e);
		if (q < 0 && q != -ENOENT)
			continue; /* a loop or an error of the view: not decidable, left out */
		if (e.src != SRC_VOLUME && e.src != SRC_LIVE)
			continue; /* the snapshot's (or the run's own), or hidden by the mask */
		if (it->kind == READSET_DIR && e.src != SRC_VOLUME)
			continue; /* merged listings of the lower tree are not tracked */
		int root = e.src == SRC_VOLUME ? v.vols[e.vol].fd : v.live_fd;
		const char *rootp = e.src == SRC_VOLUME ? v.vols[e.vol].host : v.live_root;
		char dg[STORE_DIGEST_SIZE + 32];
		struct stat s = {0};
		bool have_id = false;
		if (q == -ENOENT || root < 0)
			snprintf(dg, sizeof(dg), "absent");
		else {
			_cleanup_free_ char *key = NULL;
			if (asprintf(&key, "%s/%s", rootp, e.rel) < 0)
				key = NULL;
			digest_at(root, e.rel, it->kind == READSET_DIR, dg, &s, &cache, key);
			have_id = s.st_ino != 0;
		}
		if (streq(dg, "directory"))
			continue; /* a directory opened, not listed */
		json_t *j =
		    json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "path", it->path, "kind",
			      it->kind == READSET_DIR ? "dir" : "file", "source",
			      e.src == SRC_VOLUME ? "volume" : "host", "root", rootp, "rel", e.rel, "digest",
			      dg, "index", (json_int_t)it->index, "pid", (json_int_t)it->pid);
		if (j && have_id)
			json_object_set_new(j, "identity", identity_json(&s));
		if (!j || json_array_append_new(out, j) < 0)
			r = err_errnum(err, ENOMEM, "read set");
	}
	for (size_t i = 0; r == 0 && i < rs.n_written; i++) {
		int q = resolve(&v, rs.written[i], canon, &e);
		if ((q < 0 && q != -ENOENT) || e.src != SRC_VOLUME || v.vols[e.vol].fd < 0)
			continue;
		char dg[STORE_DIGEST_SIZE + 32];
		digest_at(v.vols[e.vol].fd, e.rel, false, dg, NULL, NULL, NULL);
		if (streq(dg, "directory"))
			continue;
		json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "path", rs.written[i], "root", v.vols[e.vol].host,
				      "rel", e.rel, "digest", dg);
		if (!j || json_array_append_new(writes, j) < 0)
			r = err_errnum(err, ENOMEM, "read set");
	}
	cache_close(&cache);
	free(e.target);
	view_close(&v);
	mask_free(mask);
	readset_free(&rs);
	if (r < 0) {
		json_decref(out);
		json_decref(writes);
		return -1;
	}
	*ret_read_set = out;
	*ret_volume_writes = writes;
	return 0;
}

/* The digest of a recorded entry's file as it is now. */
static void digest_now(const json_t *ent, bool dir, char out[STORE_DIGEST_SIZE + 32], rs_cache *cache)
{
	const char *root = json_str(ent, "root"), *rel = json_str(ent, "rel");
	int fd = root ? open(root, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd < 0) {
		snprintf(out, STORE_DIGEST_SIZE + 32, "absent");
		return;
	}
	_cleanup_free_ char *key = NULL;
	if (!cache || asprintf(&key, "%s/%s", root, rel ? rel : "") < 0)
		key = NULL;
	digest_at(fd, rel ? rel : "", dir, out, NULL, cache, key);
	safe_close(fd);
}

int readset_check(sbx_ctx *ctx, const json_t *read_set, json_t **ret_div, sbx_err **err)
{
	size_t i;
	json_t *ent;
	_cleanup_(cache_close) rs_cache cache;
	cache_open(ctx, &cache);
	json_array_foreach(read_set, i, ent)
	{
		const char *want = json_str(ent, "digest") ?: "";
		char got[STORE_DIGEST_SIZE + 32];
		digest_now(ent, streq(json_str(ent, "kind") ?: "", "dir"), got, &cache);
		if (streq(want, got))
			continue;
		json_t *d = json_pack(
		    "{s:s,s:s,s:s,s:s,s:I,s:I,s:s}", "kind", "input", "path", json_str(ent, "path") ?: "",
		    "expected", want, "actual", got, "index", (json_int_t)json_int(ent, "index", 0), "pid",
		    (json_int_t)json_int(ent, "pid", 0), "source", json_str(ent, "source") ?: "");
		if (!d)
			return err_errnum(err, ENOMEM, "replay");
		*ret_div = d;
		return 0;
	}
	*ret_div = NULL;
	return 0;
}

int readset_check_writes(const json_t *volume_writes, json_t **ret_div, sbx_err **err)
{
	size_t i;
	json_t *ent;
	json_array_foreach(volume_writes, i, ent)
	{
		const char *want = json_str(ent, "digest") ?: "";
		char got[STORE_DIGEST_SIZE + 32];
		digest_now(ent, false, got, NULL);
		if (streq(want, got))
			continue;
		json_t *d = json_pack("{s:s,s:s,s:s,s:s,s:I,s:n}", "kind", "filesystem", "path",
				      json_str(ent, "path") ?: "", "expected", want, "actual", got, "index",
				      (json_int_t)0, "pid");
		if (!d)
			return err_errnum(err, ENOMEM, "replay");
		*ret_div = d;
		return 0;
	}
	*ret_div = NULL;
	return 0;
}
