/* sbx_env_diff: what changed in an environment, as added / modified /
 * deleted paths, against its base (the layers it started from) or against
 * any snapshot taken from the same template.
 *
 * Both sides are merged views resolved the way overlayfs resolves them: a
 * stack of layers, top first (the environment's writable layer, its
 * snapshot layers, then the template), where a char 0:0 device is a
 * whiteout, a directory with user.overlay.opaque=y hides everything below
 * it, and a non-directory hides everything below. The `host` template is
 * two pseudo-layers: the mask (the environment's skeleton: mirrored system
 * directories, empty top-level directories, whiteouts over hidden files,
 * top-level links) over the host's system directories (usr, etc, var, opt,
 * bin, sbin, lib*: only those the mask mirrors). A `dir:PATH` template is
 * PATH itself. An image's environment (created from an imported or pulled
 * template) has no template tree: its layers are the image's.
 *
 * The walk visits only what can differ: the "touched" layers are those the
 * two stacks do not share (the writable layer and the layers above the
 * common prefix of both layer lists); a path no touched layer names
 * resolves to the same entry on both sides. Where a touched layer holds an
 * opaque directory both merged listings are compared. Two entries are the
 * same when they are the same inode, or when every field a snapshot keeps
 * is the same (diff_entry.h: type, permission bits, owner and the kept
 * xattrs, ACLs and file capabilities among them, normalized to the
 * environment's ids as the layer stores them; a regular file's bytes, a
 * symlink's target, a device's number) and so is the hard-link structure:
 * the set of paths that are the entry's inode in each view (link_set). A
 * link made or broken reports every path of both sets that is on both
 * sides. mtimes are not compared, so a file rewritten with identical bytes
 * is not "modified". A new directory is reported with everything in it; a
 * deleted directory is reported alone (not its contents); a directory is
 * "modified" when its own type, mode, owner or xattrs changed.
 *
 * The environment is not frozen: the result is a point-in-time read of a
 * possibly changing tree. Every lookup goes through openat2 with
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS from the layer's root, so a symlink
 * swapped in meanwhile is never followed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "api/diff_entry.h"
#include "api/trace_api.h"
#include "runtime/mask.h"
#include "store/digest.h"
#include "store/layer.h"
#include "store/snapshot.h"
#include "store/treewalk.h"
#include "util/json.h"

#define DIFF_MAX_LAYERS (STORE_SNAPSHOT_MAX_LAYERS + 4)
/* Entries read to index one layer's hard links (link_set): past that (or a
 * layer that cannot be read whole), a link's change is seen by the link
 * counts alone. */
#define DIFF_LINKS_SCAN_MAX (1u << 20)

enum { L_DIR, L_MASK, L_HOST };

typedef struct layer {
	int kind;
	int fd;			      /* L_DIR, L_HOST: the layer's root */
	uint32_t ubase, gbase, count; /* on-disk owner k+base is id k; count 0: as is */
	store_links *links;	      /* its hard links, read when first needed */
	bool links_failed;	      /* could not be indexed */
} layer;

typedef struct view {
	layer *l[DIFF_MAX_LAYERS]; /* top first */
	size_t n;
} view;

typedef struct ent {
	bool exists;
	struct stat st;
	layer *from;
	const mask_entry *me; /* from the mask */
} ent;

/* Layers of a view that contribute to one directory (indices into v->l). */
typedef struct vdir {
	unsigned char idx[DIFF_MAX_LAYERS];
	size_t n;
} vdir;

typedef struct strv_b {
	char **v;
	size_t n, cap;
} strv_b;

typedef struct diff {
	const mask_list *mask;
	const mask_entry **msorted; /* mask entries sorted by path */
	size_t n_mask;
	char **host_dirs;
	view old, new_;
	/* Touched layers: pointers into old/new stacks. */
	layer *touched[2 * DIFF_MAX_LAYERS];
	size_t n_touched;
	strv_b added, modified, deleted;
	bool want_meta; /* api_env_diff_meta: also one line per change, below */
	strv_b meta;
	int error;
} diff;

static int push(strv_b *b, const char *rel)
{
	if (b->n + 1 >= b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char **nv = realloc(b->v, cap * sizeof(char *));
		if (!nv)
			return -ENOMEM;
		b->v = nv;
		b->cap = cap;
	}
	if (asprintf(&b->v[b->n], "/%s", rel) < 0)
		return -ENOMEM;
	b->v[++b->n] = NULL;
	return 0;
}

/* ---- pseudo layers: the mask and the host ----------------------------------- */

static int mask_cmp(const void *a, const void *b)
{
	return strcmp((*(const mask_entry *const *)a)->path, (*(const mask_entry *const *)b)->path);
}

static const mask_entry *mask_find(const diff *d, const char *rel)
{
	if (!d->msorted)
		return NULL;
	mask_entry key = {.path = (char *)(*rel ? rel : ".")};
	const mask_entry *kp = &key;
	const mask_entry **r = bsearch(&kp, d->msorted, d->n_mask, sizeof(*d->msorted), mask_cmp);
	return r ? *r : NULL;
}

static bool host_top(const diff *d, const char *rel)
{
	size_t n = strcspn(rel, "/");
	for (char **p = d->host_dirs; p && *p; p++)
		if (strlen(*p) == n && strncmp(*p, rel, n) == 0)
			return true;
	return false;
}

/* One layer's entry at rel: 0 (with whiteout/opaque flags), or -ENOENT. */
static int lk_stat(const diff *d, layer *l, const char *rel, ent *e, bool *wh, bool *opq)
{
	*wh = *opq = false;
	*e = (ent){.from = l};
	if (l->kind == L_MASK) {
		const mask_entry *m = mask_find(d, rel);
		if (!m)
			return -ENOENT;
		e->me = m;
		e->st.st_uid = m->uid;
		e->st.st_gid = m->gid;
		e->st.st_ino = (ino_t)(m - d->mask->e) + 1;
		e->st.st_dev = 0;
		switch (m->type) {
		case 'w':
			*wh = true;
			e->st.st_mode = S_IFCHR;
			return 0;
		case 'l':
			e->st.st_mode = S_IFLNK | 0777;
			e->st.st_size = m->target ? (off_t)strlen(m->target) : 0;
			return 0;
		case 'o':
			*opq = true;
			/* fallthrough */
		default:
			e->st.st_mode = S_IFDIR | (m->mode & 07777);
			return 0;
		}
	}
	if (l->kind == L_HOST) {
		if (!*rel) { /* the host's root is not a layer: only its system dirs */
			e->st.st_mode = S_IFDIR | 0755;
			return 0;
		}
		if (!host_top(d, rel))
			return -ENOENT;
	}
	int r = store_beneath_lstat(l->fd, rel, &e->st);
	if (r < 0)
		return r;
	if (S_ISCHR(e->st.st_mode) && e->st.st_rdev == 0)
		*wh = true;
	else if (S_ISDIR(e->st.st_mode) && l->kind == L_DIR)
		*opq = store_beneath_opaque(l->fd, rel);
	return 0;
}

typedef int (*name_fn)(void *userdata, const char *name);

/* The names one layer holds in directory rel (whiteouts included). */
static int lk_list(const diff *d, const layer *l, const char *rel, name_fn fn, void *ud)
{
	if (l->kind == L_MASK) {
		size_t rl = strlen(rel);
		for (size_t i = 0; i < d->n_mask; i++) {
			const char *p = d->msorted[i]->path;
			if (streq(p, "."))
				continue;
			const char *name = p;
			if (rl) {
				if (strncmp(p, rel, rl) != 0 || p[rl] != '/')
					continue;
				name = p + rl + 1;
			}
			if (!strchr(name, '/')) {
				int r = fn(ud, name);
				if (r < 0)
					return r;
			}
		}
		return 0;
	}
	if (l->kind == L_HOST && (!*rel || !host_top(d, rel)))
		return 0;
	int fd = store_beneath_open(l->fd, rel, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR ? 0 : fd;
	DIR *dir = fdopendir(fd);
	if (!dir) {
		safe_close(fd);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while (r >= 0 && (de = readdir(dir)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			r = fn(ud, de->d_name);
	closedir(dir);
	return r;
}

/* ---- merged lookups ------------------------------------------------------------ */

/* Resolves child rel of a directory whose contributing layers are parent:
 * fills *e (exists or not) and, for a directory, its contributing layers. */
static void lookup(const diff *d, const view *v, const vdir *parent, const char *rel, ent *e, vdir *ret)
{
	*e = (ent){0};
	if (ret)
		ret->n = 0;
	for (size_t k = 0; k < parent->n; k++) {
		layer *l = v->l[parent->idx[k]];
		ent x;
		bool wh, opq;
		if (lk_stat(d, l, rel, &x, &wh, &opq) < 0)
			continue;
		if (wh)
			break;
		if (!e->exists) {
			*e = x;
			e->exists = true;
			if (!S_ISDIR(x.st.st_mode))
				break;
		} else if (!S_ISDIR(x.st.st_mode))
			break;
		if (ret)
			ret->idx[ret->n++] = parent->idx[k];
		if (opq)
			break;
	}
}

static void root_dir(const diff *d, const view *v, vdir *ret)
{
	vdir all = {.n = v->n};
	for (size_t i = 0; i < v->n; i++)
		all.idx[i] = (unsigned char)i;
	ent e;
	lookup(d, v, &all, "", &e, ret);
}

typedef struct names {
	char **v;
	size_t n, cap;
} names;

static int names_add(void *ud, const char *name)
{
	names *ns = ud;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 32;
		char **nv = realloc(ns->v, cap * sizeof(char *));
		if (!nv)
			return -ENOMEM;
		ns->v = nv;
		ns->cap = cap;
	}
	if (!(ns->v[ns->n] = strdup(name)))
		return -ENOMEM;
	ns->n++;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort_uniq(names *ns)
{
	if (!ns->n)
		return;
	qsort(ns->v, ns->n, sizeof(char *), str_cmp);
	size_t w = 1;
	for (size_t i = 1; i < ns->n; i++) {
		if (streq(ns->v[i], ns->v[w - 1]))
			free(ns->v[i]);
		else
			ns->v[w++] = ns->v[i];
	}
	ns->n = w;
}

static void names_free(names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

static int list_merged(const diff *d, const view *v, const vdir *dir, const char *rel, names *ns)
{
	for (size_t k = 0; k < dir->n; k++) {
		int r = lk_list(d, v->l[dir->idx[k]], rel, names_add, ns);
		if (r < 0)
			return r;
	}
	return 0;
}

static char *child_path(const char *rel, const char *name)
{
	char *p = NULL;
	if (asprintf(&p, "%s%s%s", rel, *rel ? "/" : "", name) < 0)
		return NULL;
	return p;
}

/* ---- comparing two entries --------------------------------------------------- */

static diff_entry dentry(const ent *e)
{
	return (diff_entry){.st = e->st,
			    .root = e->me ? -1 : e->from->fd,
			    .target = e->me ? e->me->target : NULL,
			    .ids = {e->from->ubase, e->from->gbase, e->from->count}};
}

/* ---- what a change left (api_env_diff_meta) ------------------------------------ */

/* One line for a change: "<K> /<rel>" NUL, then what the entry is now
 * (diff_entry_describe; a mask entry's own form). */
static int push_meta(diff *d, char kind, const char *rel, const ent *e)
{
	if (!d->want_meta)
		return 0;
	_cleanup_free_ char *what = NULL;
	if (kind == 'D')
		what = strdup("gone");
	else if (e->me) {
		if (asprintf(&what, "mask %c %04o %u:%u -> %s", e->me->type, e->me->mode & 07777, e->me->uid,
			     e->me->gid, e->me->target ?: "") < 0)
			what = NULL;
	} else {
		diff_entry de = dentry(e);
		what = diff_entry_describe(&de, rel);
	}
	if (!what)
		return -ENOMEM;
	_cleanup_free_ char *line = NULL;
	size_t pl = strlen(rel), wl = strlen(what);
	line = malloc(pl + wl + 5);
	if (!line)
		return -ENOMEM;
	line[0] = kind, line[1] = ' ', line[2] = '/';
	memcpy(line + 3, rel, pl);
	line[3 + pl] = 0;
	memcpy(line + 4 + pl, what, wl + 1);
	if (d->meta.n + 1 >= d->meta.cap) {
		size_t cap = d->meta.cap ? d->meta.cap * 2 : 64;
		char **nv = realloc(d->meta.v, cap * sizeof(char *));
		if (!nv)
			return -ENOMEM;
		d->meta.v = nv;
		d->meta.cap = cap;
	}
	d->meta.v[d->meta.n++] = TAKE_PTR(line);
	d->meta.v[d->meta.n] = NULL;
	return 0;
}

/* ---- hard-link structure, and whether an entry changed ----------------------- */

/* The entry rel of view v (exists false when nothing is there). */
static int resolve(const diff *d, const view *v, const char *rel, ent *e)
{
	_cleanup_free_ char *p = strdup(rel);
	if (!p)
		return -ENOMEM;
	vdir dir, sub;
	root_dir(d, v, &dir);
	for (char *s = p;;) {
		char *slash = strchr(s, '/');
		if (slash)
			*slash = 0;
		lookup(d, v, &dir, p, e, &sub);
		if (!slash)
			return 0;
		*slash = '/';
		if (!e->exists || !S_ISDIR(e->st.st_mode)) {
			*e = (ent){0};
			return 0;
		}
		dir = sub;
		s = slash + 1;
	}
}

/* The paths of view v that are e's inode, e being rel (sorted, rel among
 * them): the other names its layer gives the inode that v shows as that
 * entry. 1 when its layer cannot be indexed (larger than
 * DIFF_LINKS_SCAN_MAX entries, deeper than a walk goes, unreadable). */
static int link_set(diff *d, const view *v, const ent *e, const char *rel, names *ret)
{
	int r = names_add(ret, rel);
	if (r < 0 || e->me || S_ISDIR(e->st.st_mode) || e->st.st_nlink < 2)
		return r;
	layer *l = e->from;
	if (!l->links && !l->links_failed) {
		r = store_links_scan(l->fd, l->kind == L_HOST ? d->host_dirs : NULL, DIFF_LINKS_SCAN_MAX,
				     &l->links);
		if (r == -ENOMEM)
			return r;
		l->links_failed = r < 0; /* too large (-E2BIG), too deep, unreadable */
	}
	if (!l->links)
		return 1;
	size_t n;
	char *const *paths = store_links_find(l->links, e->st.st_dev, e->st.st_ino, &n);
	for (size_t i = 0; i < n; i++) {
		if (streq(paths[i], rel))
			continue;
		ent x;
		if ((r = resolve(d, v, paths[i], &x)) < 0)
			return r;
		if (x.exists && x.from == l && !x.me && x.st.st_dev == e->st.st_dev &&
		    x.st.st_ino == e->st.st_ino && (r = names_add(ret, paths[i])) < 0)
			return r;
	}
	names_sort_uniq(ret);
	return 0;
}

static bool names_equal(const names *a, const names *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!streq(a->v[i], b->v[i]))
			return false;
	return true;
}

/* A change of rel's hard-link structure: every other path of its old and
 * its new link set is on one side in rel's set and on the other not, so its
 * own set changed too; those on both sides are modified (and counted once:
 * sort_uniq). */
static int links_changed(diff *d, const names *o, const names *n, const char *rel)
{
	for (int side = 0; side < 2; side++) {
		const names *s = side ? n : o;
		for (size_t i = 0; i < s->n; i++) {
			if (streq(s->v[i], rel))
				continue;
			ent eo, en;
			int r = resolve(d, &d->old, s->v[i], &eo);
			if (r >= 0)
				r = resolve(d, &d->new_, s->v[i], &en);
			if (r >= 0 && eo.exists && en.exists && (r = push(&d->modified, s->v[i])) >= 0)
				r = push_meta(d, 'M', s->v[i], &en);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Whether rel, on both sides, changed (1) or not (0): a field a snapshot
 * keeps (diff_entry.h), or its hard-link structure (the set of paths that
 * are its inode: a link made or broken, even with the same bytes). When
 * the structure changed, the other paths whose own set it changed are
 * reported as well (links_changed). */
static int entry_changed(diff *d, const ent *a, const ent *b, const char *rel)
{
	if (!a->me && !b->me && a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino)
		return 0; /* the same inode (a shared lower layer) */
	if (a->me && b->me && a->me == b->me)
		return 0;
	diff_entry da = dentry(a), db = dentry(b);
	if (diff_entry_compare(&da, &db, rel))
		return 1;
	if (S_ISDIR(a->st.st_mode) || (a->st.st_nlink < 2 && b->st.st_nlink < 2))
		return 0;
	names so = {0}, sn = {0};
	int r = link_set(d, &d->old, a, rel, &so);
	int q = r < 0 ? r : link_set(d, &d->new_, b, rel, &sn);
	if (r >= 0 && q >= 0) {
		if (r == 1 || q == 1) /* a layer not indexed: by the link counts alone */
			r = (a->st.st_nlink > 1) != (b->st.st_nlink > 1);
		else if (names_equal(&so, &sn))
			r = 0;
		else
			r = (q = links_changed(d, &so, &sn, rel)) < 0 ? q : 1;
	} else
		r = r < 0 ? r : q;
	names_free(&so);
	names_free(&sn);
	return r;
}

/* ---- the walk -------------------------------------------------------------- */

/* Everything under a new directory is new too. */
static int add_subtree(diff *d, const vdir *dir, const char *rel, int depth)
{
	if (depth > 256)
		return -ELOOP;
	names ns = {0};
	int r = list_merged(d, &d->new_, dir, rel, &ns);
	names_sort_uniq(&ns);
	for (size_t i = 0; r >= 0 && i < ns.n; i++) {
		_cleanup_free_ char *c = child_path(rel, ns.v[i]);
		if (!c) {
			r = -ENOMEM;
			break;
		}
		ent e;
		vdir sub;
		lookup(d, &d->new_, dir, c, &e, &sub);
		if (!e.exists)
			continue;
		r = push(&d->added, c);
		if (r >= 0)
			r = push_meta(d, 'A', c, &e);
		if (r >= 0 && S_ISDIR(e.st.st_mode))
			r = add_subtree(d, &sub, c, depth + 1);
	}
	names_free(&ns);
	return r;
}

static bool touched_dir(const diff *d, const char *rel, bool *opaque)
{
	bool any = false;
	*opaque = false;
	for (size_t i = 0; i < d->n_touched; i++) {
		ent x;
		bool wh, opq;
		if (lk_stat(d, d->touched[i], rel, &x, &wh, &opq) == 0 && S_ISDIR(x.st.st_mode)) {
			any = true;
			*opaque = *opaque || opq;
		}
	}
	return any;
}

/* rel is a directory on both sides and some touched layer holds it. */
static int walk(diff *d, const vdir *od, const vdir *nd, const char *rel, bool full, int depth)
{
	if (depth > 256)
		return -ELOOP;
	names ns = {0};
	int r = 0;
	if (full) {
		r = list_merged(d, &d->old, od, rel, &ns);
		if (r >= 0)
			r = list_merged(d, &d->new_, nd, rel, &ns);
	} else {
		for (size_t i = 0; r >= 0 && i < d->n_touched; i++) {
			ent x;
			bool wh, opq;
			if (lk_stat(d, d->touched[i], rel, &x, &wh, &opq) == 0 && S_ISDIR(x.st.st_mode))
				r = lk_list(d, d->touched[i], rel, names_add, &ns);
		}
	}
	names_sort_uniq(&ns);
	for (size_t i = 0; r >= 0 && i < ns.n; i++) {
		_cleanup_free_ char *c = child_path(rel, ns.v[i]);
		if (!c) {
			r = -ENOMEM;
			break;
		}
		ent eo, en;
		vdir so, sn;
		lookup(d, &d->old, od, c, &eo, &so);
		lookup(d, &d->new_, nd, c, &en, &sn);
		if (!eo.exists && !en.exists)
			continue;
		if (!eo.exists) {
			r = push(&d->added, c);
			if (r >= 0)
				r = push_meta(d, 'A', c, &en);
			if (r >= 0 && S_ISDIR(en.st.st_mode))
				r = add_subtree(d, &sn, c, depth + 1);
			continue;
		}
		if (!en.exists) {
			r = push(&d->deleted, c);
			if (r >= 0)
				r = push_meta(d, 'D', c, &en);
			continue;
		}
		bool od_dir = S_ISDIR(eo.st.st_mode), nd_dir = S_ISDIR(en.st.st_mode);
		r = entry_changed(d, &eo, &en, c);
		if (r > 0) {
			r = push(&d->modified, c);
			if (r >= 0)
				r = push_meta(d, 'M', c, &en);
		}
		if (r < 0)
			break;
		if (nd_dir && !od_dir)
			r = add_subtree(d, &sn, c, depth + 1);
		else if (nd_dir && od_dir) {
			bool opq;
			if (touched_dir(d, c, &opq))
				r = walk(d, &so, &sn, c, opq, depth + 1);
		}
	}
	names_free(&ns);
	return r;
}

/* ---- setting up the two views ------------------------------------------------ */

typedef struct layers_set {
	layer l[2 * DIFF_MAX_LAYERS + 4];
	size_t n;
} layers_set;

static void layers_close(layers_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		safe_close(s->l[i].fd);
		store_links_free(s->l[i].links);
	}
}

static layer *layer_open(layers_set *s, int kind, const char *path, sbx_err **err)
{
	layer *l = &s->l[s->n];
	*l = (layer){.kind = kind, .fd = -1};
	if (path) {
		l->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (l->fd < 0) {
			err_errno(err, "open layer '%s'", path);
			return NULL;
		}
	}
	s->n++;
	return l;
}

static int view_push(view *v, layer *l, sbx_err **err)
{
	if (v->n >= DIFF_MAX_LAYERS)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "too many layers");
	v->l[v->n++] = l;
	return 0;
}

/* Pushes the store layers (bottom first in the list) top first, then the template. */
static int view_build(sbx_ctx *ctx, diff *d, view *v, layers_set *ls, char *const *lay, size_t n_lay,
		      layer *tmpl[2], layer **opened, sbx_err **err)
{
	for (size_t i = n_lay; i > 0; i--) {
		layer *l = opened[i - 1];
		if (view_push(v, l, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < 2 && tmpl[i]; i++)
		if (view_push(v, tmpl[i], err) < 0)
			return -1;
	return 0;
}

/* Sorts b and drops repeats (a path reported modified by its own
 * comparison and by a hard link's, links_changed). */
static int sort_strv(strv_b *b)
{
	if (!b->n)
		return 0;
	qsort(b->v, b->n, sizeof(char *), str_cmp);
	size_t w = 1;
	for (size_t i = 1; i < b->n; i++) {
		if (streq(b->v[i], b->v[w - 1]))
			free(b->v[i]);
		else
			b->v[w++] = b->v[i];
	}
	b->n = w;
	b->v[w] = NULL;
	return 0;
}

/* A path as a JSON string, exactly: a backslash as "\\\\", each byte that is
 * not part of valid UTF-8 as "\\xNN" (a name may be any bytes but NUL and
 * '/'; a JSON string only UTF-8). */
static json_t *path_json(const char *p)
{
	if (!strchr(p, '\\')) {
		json_t *j = json_string(p);
		if (j)
			return j;
	}
	size_t n = strlen(p), len = 0;
	_cleanup_free_ char *o = malloc(4 * n + 1);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)p[i];
		size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		json_t *t = k > 1 && i + k <= n ? json_stringn(p + i, k) : NULL; /* jansson's UTF-8 check */
		if (c == '\\') {
			o[len++] = '\\';
			o[len++] = '\\';
			i++;
		} else if (k == 1 || t) {
			memcpy(o + len, p + i, k);
			len += k;
			i += k;
		} else {
			len += (size_t)sprintf(o + len, "\\x%02x", c);
			i++;
		}
		json_decref(t);
	}
	return json_stringn(o, len);
}

static json_t *strv_json(strv_b *b)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < b->n; i++)
		if (json_array_append_new(a, path_json(b->v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* meta: one line per change in api_env_diff_meta's form (below). */
static int meta_json(strv_b *b, json_t *out, sbx_err **err)
{
	sort_strv(b);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return -1;
	json_t *first = json_array();
	if (!first || json_object_set_new(out, "meta", first) < 0)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (size_t i = 0; i < b->n; i++) {
		size_t pl = strlen(b->v[i]);
		const char *what = b->v[i] + pl + 1;
		if (store_hasher_update(h, b->v[i], pl + 1, err) < 0 ||
		    store_hasher_update(h, what, strlen(what) + 1, err) < 0)
			return -1;
		if (i < API_DIFF_META_LIST) {
			_cleanup_free_ char *l = NULL;
			json_t *pj = path_json(b->v[i] + 2);
			if (pj && asprintf(&l, "%c %s %s", b->v[i][0], json_string_value(pj), what) < 0)
				l = NULL;
			json_decref(pj);
			if (!l || json_array_append_new(first, json_string(l)) < 0)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		}
	}
	char dg[STORE_DIGEST_SIZE];
	if (store_hasher_final(h, dg, err) < 0)
		return -1;
	return json_object_set_new(out, "meta_digest", json_string(dg)) < 0
		   ? err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory")
		   : 0;
}

static int env_diff(sbx_ctx *ctx, const char *ref, const char *snapshot, bool want_meta, json_t **ret,
		    sbx_err **err);

_public_ int sbx_env_diff(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err)
{
	return env_diff(ctx, ref, snapshot, false, ret, err);
}

int api_env_diff_meta(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err)
{
	return env_diff(ctx, ref, snapshot, true, ret, err);
}

static int env_diff(sbx_ctx *ctx, const char *ref, const char *snapshot, bool want_meta, json_t **ret,
		    sbx_err **err)
{
	_cleanup_free_ char *id = NULL, *digest = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	int r = env_record_read(ctx, id, &st);
	if (r < 0)
		return err_errnum(err, r, "read state of '%s'", id);
	if (st.ephemeral || st.degraded)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "environment '%s' has no persistent writable layer to compare (one-shot runs and "
		    "environments without user namespaces)",
		    id);
	const char *tspec = st.template_spec ?: "host";
	bool image = !streq(tspec, "host") && !startswith(tspec, "dir:");
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	if (snapshot) {
		if (sbx_snapshot_resolve(ctx, snapshot, &digest, err) < 0 ||
		    store_snapshot_read(ctx->root, digest, &snap, err) < 0)
			return -1;
		/* an image's environment (a template that is neither host nor
		 * dir:) has no template tree: its snapshots name none, or it */
		const char *stpl = snap->base_template ?: (image ? tspec : "host");
		if (!streq(stpl, tspec))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "snapshot %s was taken from template '%s', environment '%s' runs on '%s': "
			    "only snapshots of the same template can be compared",
			    digest, stpl, id, tspec);
	}

	diff d = {.want_meta = want_meta};
	layers_set *ls = calloc(1, sizeof(*ls));
	mask_list *mask = NULL;
	if (!ls)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	r = -1;
	layer *tmpl[2] = {NULL, NULL};
	if (streq(tspec, "host")) {
		if (mask_host_layer(ctx->root, ctx->run, ctx->rootless, &mask, err) < 0)
			goto out;
		d.mask = mask;
		d.n_mask = mask->n;
		d.msorted = calloc(mask->n + 1, sizeof(*d.msorted));
		if (!d.msorted) {
			err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < mask->n; i++)
			d.msorted[i] = &mask->e[i];
		qsort(d.msorted, d.n_mask, sizeof(*d.msorted), mask_cmp);
		d.host_dirs = mask_host_dirs(mask);
		if (!(tmpl[0] = layer_open(ls, L_MASK, NULL, err)) ||
		    !(tmpl[1] = layer_open(ls, L_HOST, "/", err)))
			goto out;
	} else if (startswith(tspec, "dir:")) {
		if (!(tmpl[0] = layer_open(ls, L_DIR, tspec + 4, err)))
			goto out;
	} /* else an image (a template name, oci:): its layers are all the environment's */

	store_idmap sids;
	store_layer_ids(&sids);
	/* The environment's layers and the snapshot's, each opened once. */
	json_t *jl = st.layers;
	size_t n_env = json_array_size(jl), n_snap = 0;
	if (n_env > STORE_SNAPSHOT_MAX_LAYERS) {
		err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "too many layers");
		goto out;
	}
	char *env_l[STORE_SNAPSHOT_MAX_LAYERS + 1];
	layer *env_o[STORE_SNAPSHOT_MAX_LAYERS + 1], *snap_o[STORE_SNAPSHOT_MAX_LAYERS + 1];
	for (size_t i = 0; i < n_env; i++) {
		env_l[i] = (char *)json_string_value(json_array_get(jl, i));
		_cleanup_free_ char *p = env_l[i] ? store_layer_path(ctx->root, env_l[i]) : NULL;
		if (!p) {
			err_set(err, SBX_E_INTERNAL, EINVAL, "environment '%s' names an invalid layer", id);
			goto out;
		}
		if (!(env_o[i] = layer_open(ls, L_DIR, p, err)))
			goto out;
		env_o[i]->ubase = sids.uid_base, env_o[i]->gbase = sids.gid_base,
		env_o[i]->count = sids.count;
	}
	/* The writable layer. */
	char up[4300];
	snprintf(up, sizeof(up), "%s/envs/%s/upper", ctx->root, id);
	layer *upper = layer_open(ls, L_DIR, up, err);
	if (!upper)
		goto out;
	if (st.rootless) {
		upper->ubase = ctx->uid, upper->gbase = ctx->gid, upper->count = 1;
	} else {
		upper->ubase = upper->gbase = (uint32_t)st.host_uid;
		upper->count = (uint32_t)(st.id_count ?: 1); /* absent: one id */
	}

	size_t common = n_env;
	char *const *snap_l = env_l;
	if (snap) {
		snap_l = snap->layers;
		while (snap_l[n_snap])
			n_snap++;
		common = 0;
		while (common < n_env && common < n_snap && streq(env_l[common], snap_l[common]))
			common++;
		for (size_t i = 0; i < n_snap; i++) {
			if (i < common) {
				snap_o[i] = env_o[i];
				continue;
			}
			_cleanup_free_ char *p = store_layer_path(ctx->root, snap_l[i]);
			if (!p || !store_layer_exists(ctx->root, snap_l[i])) {
				err_set(err, SBX_E_NOT_FOUND, ENOENT,
					"layer %s of snapshot %s is missing from the store (run sbx fsck)",
					snap_l[i], digest);
				goto out;
			}
			if (!(snap_o[i] = layer_open(ls, L_DIR, p, err)))
				goto out;
			snap_o[i]->ubase = sids.uid_base, snap_o[i]->gbase = sids.gid_base,
			snap_o[i]->count = sids.count;
		}
	} else {
		n_snap = n_env;
		for (size_t i = 0; i < n_env; i++)
			snap_o[i] = env_o[i];
	}

	/* new = upper + env layers + template; old = snapshot (or base) layers + template. */
	if (view_push(&d.new_, upper, err) < 0 ||
	    view_build(ctx, &d, &d.new_, ls, env_l, n_env, tmpl, env_o, err) < 0 ||
	    view_build(ctx, &d, &d.old, ls, (char *const *)snap_l, n_snap, tmpl, snap_o, err) < 0)
		goto out;
	d.touched[d.n_touched++] = upper;
	for (size_t i = common; i < n_env; i++)
		d.touched[d.n_touched++] = env_o[i];
	for (size_t i = common; i < n_snap; i++)
		d.touched[d.n_touched++] = snap_o[i];

	vdir od, nd;
	root_dir(&d, &d.old, &od);
	root_dir(&d, &d.new_, &nd);
	bool opq;
	touched_dir(&d, "", &opq);
	int q = walk(&d, &od, &nd, "", opq, 0);
	if (q < 0) {
		err_errnum(err, q, "diff '%s'", id);
		goto out;
	}
	sort_strv(&d.added);
	sort_strv(&d.modified);
	sort_strv(&d.deleted);
	*ret = json_pack(
	    "{s:o,s:o,s:o,s:s,s:o}", "added", strv_json(&d.added), "modified", strv_json(&d.modified),
	    "deleted", strv_json(&d.deleted), "environment_id", id, "snapshot_id",
	    digest ? json_string(digest) : (st.snapshot_id ? json_string(st.snapshot_id) : json_null()));
	if (!*ret) {
		err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		goto out;
	}
	if (want_meta && meta_json(&d.meta, *ret, err) < 0) {
		json_decref(TAKE_PTR(*ret));
		goto out;
	}
	r = 0;
out:
	layers_close(ls);
	free(ls);
	free(d.msorted);
	strv_free(d.host_dirs);
	strv_free(d.added.v);
	strv_free(d.modified.v);
	strv_free(d.deleted.v);
	strv_free(d.meta.v);
	if (mask)
		mask_free(mask);
	return r;
}
