/* The walk of an incremental snapshot (delta.c): phase 1, what changed in the
 * writable layer since the index (lstat only), and phase 2, whole hard-link
 * groups and ancestors. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/delta_internal.h"
#include "store/layer.h"
#include "store/tarw.h"
#include "util/json.h"

void sd_walk_clear(walk *w)
{
	free(w->path);
	free(w->act);
	free(w->gone);
	free(w->gone_names);
	for (size_t i = 0; i < w->n_base; i++)
		safe_close(w->base_fds[i]);
	if (w->mask)
		mask_free(w->mask);
	safe_close(w->host_fd);
	strv_free(w->host_dirs);
	sd_index_free(w->ni);
}

int sd_stop(walk *w, const char *fmt, ...)
{
	if (!w->reason[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->reason, sizeof(w->reason), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int stop_errno(walk *w, const char *what, const char *name)
{
	int e = errno;
	return sd_stop(w, "%s '%s%s%s': %s", what, w->path ? w->path : "",
		       w->path && w->plen && name ? "/" : "", name ? name : "", strerror(e));
}

/* Appends "/name" (or "name" at the root) to the walk's path; returns the old length. */
static ssize_t path_push(walk *w, const char *name)
{
	size_t old = w->plen, nl = strlen(name), need = old + 1 + nl + 1;
	if (need > w->pcap) {
		size_t cap = w->pcap ? w->pcap : 256;
		while (cap < need)
			cap *= 2;
		char *p = realloc(w->path, cap);
		if (!p)
			return -1;
		w->path = p;
		w->pcap = cap;
	}
	if (old)
		w->path[w->plen++] = '/';
	memcpy(w->path + w->plen, name, nl + 1);
	w->plen += nl;
	return (ssize_t)old;
}

static void path_pop(walk *w, size_t old)
{
	w->plen = old;
	w->path[old] = 0;
}

static int add_rec(walk *w, uint32_t parent, const char *name, const struct stat *st, uint32_t *ret)
{
	struct snapd_index *x = w->ni;
	if (x->n >= SD_MAX_ENTRIES)
		return sd_stop(w, "more than %u entries", SD_MAX_ENTRIES);
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 1024;
		sd_rec *r = realloc(x->r, cap * sizeof(*r));
		if (!r)
			return sd_stop(w, "out of memory");
		x->r = r;
		x->cap = cap;
	}
	if (x->n == w->act_cap) {
		size_t cap = w->act_cap ? w->act_cap * 2 : 1024;
		uint8_t *a = realloc(w->act, cap);
		if (!a)
			return sd_stop(w, "out of memory");
		w->act = a;
		w->act_cap = cap;
	}
	size_t nl = strlen(name);
	if (x->names_len + nl + 1 > x->names_cap) {
		size_t cap = x->names_cap ? x->names_cap * 2 : 16384;
		while (cap < x->names_len + nl + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return sd_stop(w, "names too long for the index");
		char *p = realloc(x->names, cap);
		if (!p)
			return sd_stop(w, "out of memory");
		x->names = p;
		x->names_cap = cap;
	}
	sd_rec *r = &x->r[x->n];
	*r = (sd_rec){.ino = st->st_ino,
		      .size = (uint64_t)st->st_size,
		      .nlink = st->st_nlink,
		      .rdev = st->st_rdev,
		      .mtime_sec = st->st_mtim.tv_sec,
		      .ctime_sec = st->st_ctim.tv_sec,
		      .mtime_nsec = (uint32_t)st->st_mtim.tv_nsec,
		      .ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
		      .mode = st->st_mode,
		      .uid = st->st_uid,
		      .gid = st->st_gid,
		      .parent = parent,
		      .name_off = (uint32_t)x->names_len,
		      .name_len = (uint32_t)nl};
	memcpy(x->names + x->names_len, name, nl + 1);
	x->names_len += nl + 1;
	w->act[x->n] = A_NONE;
	if (st->st_mtim.tv_nsec || st->st_ctim.tv_nsec)
		w->saw_nsec = true;
	*ret = (uint32_t)x->n++;
	return 0;
}

static bool same_times(const sd_rec *o, const struct stat *st)
{
	return o->ino == st->st_ino && o->mode == st->st_mode && o->uid == st->st_uid &&
	       o->gid == st->st_gid && o->mtime_sec == st->st_mtim.tv_sec &&
	       o->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec && o->ctime_sec == st->st_ctim.tv_sec &&
	       o->ctime_nsec == (uint32_t)st->st_ctim.tv_nsec;
}

static bool same_nondir(const sd_rec *o, const struct stat *st)
{
	return same_times(o, st) && o->size == (uint64_t)st->st_size && o->nlink == st->st_nlink &&
	       o->rdev == st->st_rdev;
}

static bool is_whiteout_mode(uint32_t mode, uint64_t rdev)
{
	return S_ISCHR(mode) && rdev == 0;
}

/* ---- the base lowers (what the environment's stack has below upper/) ---------- */

static void base_open(walk *w)
{
	w->base_ready = true;
	json_t *ls = json_object_get(w->st, "layers"), *l;
	size_t i;
	json_array_foreach(ls, i, l)
	{
		_cleanup_free_ char *p = store_layer_path(w->ctx->root, json_string_value(l));
		int fd =
		    p && w->n_base < ARRAY_SIZE(w->base_fds) ? open(p, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (fd < 0) {
			w->base_unknown = true;
			return;
		}
		w->base_fds[w->n_base++] = fd;
	}
	const char *t = json_str(w->st, "template") ?: "host";
	_cleanup_free_ char *dir = NULL;
	if (streq(t, "host")) {
		/* The mask, and the host's system directories (the rest of "/"
		 * is not part of the environment's tree). */
		if (mask_host_layer(w->ctx->root, w->ctx->run, w->ctx->rootless, &w->mask, NULL) < 0 ||
		    !(w->host_dirs = mask_host_dirs(w->mask)) ||
		    (w->host_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			w->base_unknown = true;
		return;
	} else if (startswith(t, "dir:")) {
		dir = realpath(t + 4, NULL);
		if (!dir) {
			w->base_unknown = true;
			return;
		}
	}
	if (dir) {
		int fd =
		    w->n_base < ARRAY_SIZE(w->base_fds) ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (fd < 0) {
			w->base_unknown = true;
			return;
		}
		w->base_fds[w->n_base++] = fd;
	}
}

/* Whether anything below upper/ may have rel (conservative: any entry of
 * any base lower at that path, whiteouts and hidden ones included). */
static bool base_may_have(walk *w, const char *rel)
{
	if (!w->base_ready)
		base_open(w);
	if (w->base_unknown)
		return true;
	struct stat st;
	for (size_t i = 0; i < w->n_base; i++)
		if (fstatat(w->base_fds[i], rel, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    (errno != ENOENT && errno != ENOTDIR))
			return true;
	size_t top = strcspn(rel, "/");
	for (char **d = w->host_dirs; w->host_fd >= 0 && d && *d; d++)
		if (strlen(*d) == top && strncmp(*d, rel, top) == 0 &&
		    (fstatat(w->host_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		     (errno != ENOENT && errno != ENOTDIR)))
			return true;
	for (size_t i = 0; w->mask && i < w->mask->n; i++) {
		const char *p = w->mask->e[i].path;
		size_t pl = strlen(p);
		if (streq(p, rel) ||
		    (w->mask->e[i].type == 'l' && strncmp(p, rel, pl) == 0 && rel[pl] == '/'))
			return true;
	}
	return false;
}

/* ---- phase 1: what changed (lstat only, nothing is modified) ------------------- */

typedef struct kid {
	char *name;
	struct stat st;
} kid;

static int cmp_kid(const void *a, const void *b)
{
	return strcmp(((const kid *)a)->name, ((const kid *)b)->name);
}

static void kids_free(kid *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].name);
	free(k);
}

/* The entries of directory dfd, lstat'ed, in name order. */
static int read_kids(walk *w, int dfd, kid **ret, size_t *ret_n)
{
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		safe_close(dup);
		return stop_errno(w, "open directory", NULL);
	}
	kid *k = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			kid *nk = realloc(k, cap * sizeof(*k));
			if (!nk) {
				r = sd_stop(w, "out of memory");
				break;
			}
			k = nk;
		}
		if (fstatat(dfd, de->d_name, &k[n].st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = stop_errno(w, "stat", de->d_name);
			break;
		}
		if (!(k[n].name = strdup(de->d_name))) {
			r = sd_stop(w, "out of memory");
			break;
		}
		n++;
	}
	if (r == 0 && errno)
		r = stop_errno(w, "read directory", NULL);
	closedir(d);
	if (r < 0) {
		kids_free(k, n);
		return r;
	}
	if (n > 1)
		qsort(k, n, sizeof(*k), cmp_kid);
	*ret = k;
	*ret_n = n;
	return 0;
}

/* An entry captured at the last snapshot and gone from upper/ now: a whiteout. */
static int visit_gone(walk *w, uint32_t self, const char *name, bool b_visible)
{
	ssize_t old = path_push(w, name);
	if (old < 0)
		return sd_stop(w, "out of memory");
	int r =
	    b_visible && base_may_have(w, w->path)
		? sd_stop(w,
			  "'%s' is gone from the writable layer without a whiteout while a base layer has it",
			  w->path)
		: 0;
	path_pop(w, (size_t)old);
	if (r < 0)
		return r;
	size_t nl = strlen(name);
	if (w->n_gone == w->cap_gone) {
		size_t cap = w->cap_gone ? w->cap_gone * 2 : 64;
		gone *g = realloc(w->gone, cap * sizeof(*g));
		if (!g)
			return sd_stop(w, "out of memory");
		w->gone = g;
		w->cap_gone = cap;
	}
	if (w->gone_len + nl + 1 > w->gone_cap) {
		size_t cap = w->gone_cap ? w->gone_cap * 2 : 4096;
		while (cap < w->gone_len + nl + 1)
			cap *= 2;
		char *p = realloc(w->gone_names, cap);
		if (!p)
			return sd_stop(w, "out of memory");
		w->gone_names = p;
		w->gone_cap = cap;
	}
	memcpy(w->gone_names + w->gone_len, name, nl + 1);
	w->gone[w->n_gone++] = (gone){self, (uint32_t)w->gone_len};
	w->gone_len += nl + 1;
	if (self && w->act[self] == A_NONE)
		w->act[self] = A_DIR;
	return 0;
}

static int visit(walk *w, int dfd, uint32_t self, const kid *k, uint32_t old, int mode, bool b_visible,
		 int depth)
{
	uint32_t rec;
	if (add_rec(w, self, k->name, &k->st, &rec) < 0)
		return -1;
	const sd_rec *o = old != SD_NONE ? &w->oi->r[old] : NULL;
	if (!S_ISDIR(k->st.st_mode)) {
		w->has_content = true;
		if (mode == M_NONE)
			return 0;
		bool wh = is_whiteout_mode(k->st.st_mode, k->st.st_rdev);
		bool inc;
		if (mode == M_ALL || !o)
			inc = true;
		else if (wh)
			inc = !is_whiteout_mode(o->mode, o->rdev);
		else
			inc = (o->flags & SD_RACY) || !same_nondir(o, &k->st);
		if (inc)
			w->act[rec] = wh ? A_WHITEOUT : A_LINK;
		return 0;
	}
	_cleanup_close_ int cfd =
	    openat(dfd, k->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat cst;
	if (cfd < 0 || fstat(cfd, &cst) < 0)
		return stop_errno(w, "open", k->name);
	if (cst.st_ino != k->st.st_ino || cst.st_dev != k->st.st_dev)
		return sd_stop(w, "'%s/%s' changed while being read", w->path, k->name);
	bool opq = store_dir_is_opaque(cfd);
	if (opq) {
		w->ni->r[rec].flags |= SD_OPAQUE;
		w->has_content = true;
	}
	ssize_t oldlen = path_push(w, k->name);
	if (oldlen < 0)
		return sd_stop(w, "out of memory");
	int cmode = M_NONE, r = 0, a = A_NONE;
	uint32_t cold = SD_NONE;
	if (mode == M_NONE)
		;
	else if (mode == M_ALL || !o) {
		/* New here: all of it, as a full layer has it. */
		cmode = M_ALL;
		a = opq ? A_DIR_OPAQUE : A_DIR;
	} else if (S_ISDIR(o->mode)) {
		bool oopq = o->flags & SD_OPAQUE;
		if (oopq == opq) {
			/* Same opacity: what it hides below is hidden in the stack already. */
			cmode = M_CMP;
			cold = old;
			if ((o->flags & SD_RACY) || !same_times(o, &k->st))
				a = A_DIR;
		} else if (!oopq) {
			cmode = M_ALL;
			a = A_DIR_OPAQUE;
		} else
			r = sd_stop(w, "directory '%s' is no longer opaque", w->path);
	} else {
		/* A directory where a non-directory (or a whiteout) was: the stack
		 * stops there, so it shows this directory alone, which is right
		 * unless a base layer would show through. */
		cmode = M_ALL;
		a = opq ? A_DIR_OPAQUE : A_DIR;
		if (!opq && b_visible && base_may_have(w, w->path))
			r = sd_stop(
			    w, "directory '%s' replaces a non-directory while a base layer has that path",
			    w->path);
	}
	w->act[rec] = (uint8_t)a;
	if (r == 0)
		r = sd_walk_dir(w, cfd, rec, cold, cmode, b_visible && !opq, depth + 1);
	path_pop(w, (size_t)oldlen);
	return r;
}

/* Walks directory dfd (record self). M_CMP: old_self is its record in the
 * old index, children are compared by name; M_ALL: everything is staged;
 * M_NONE: records only. b_visible: the base lowers show through here. */
int sd_walk_dir(walk *w, int dfd, uint32_t self, uint32_t old_self, int mode, bool b_visible, int depth)
{
	if (depth > SD_MAX_DEPTH)
		return sd_stop(w, "deeper than %d directories", SD_MAX_DEPTH);
	kid *k = NULL;
	size_t nk = 0;
	if (read_kids(w, dfd, &k, &nk) < 0)
		return -1;
	const uint32_t *ok = NULL;
	size_t nok = 0;
	if (mode == M_CMP) {
		ok = w->oi->kids + w->oi->kid_start[old_self];
		nok = w->oi->kid_start[old_self + 1] - w->oi->kid_start[old_self];
	}
	size_t i = 0, j = 0;
	int r = 0;
	while (r == 0 && (i < nk || j < nok)) {
		int c = i < nk && j < nok ? strcmp(k[i].name, sd_rec_name(w->oi, ok[j])) : i < nk ? -1 : 1;
		if (c > 0) {
			r = visit_gone(w, self, sd_rec_name(w->oi, ok[j]), b_visible);
			j++;
			continue;
		}
		r = visit(w, dfd, self, &k[i], c == 0 ? ok[j] : SD_NONE, mode, b_visible, depth);
		i++;
		if (c == 0)
			j++;
	}
	kids_free(k, nk);
	return r;
}

/* Starts the walk: the root record (upper/ itself). */
int sd_walk_root(walk *w, int ufd, bool *ret_opaque)
{
	if (!(w->ni = calloc(1, sizeof(*w->ni))) || path_push(w, "") < 0)
		return sd_stop(w, "out of memory");
	struct stat st;
	if (fstat(ufd, &st) < 0)
		return stop_errno(w, "stat", NULL);
	uint32_t rec;
	if (add_rec(w, 0, "", &st, &rec) < 0)
		return -1;
	*ret_opaque = store_dir_is_opaque(ufd);
	if (*ret_opaque) {
		w->ni->r[rec].flags |= SD_OPAQUE;
		w->has_content = true;
	}
	return 0;
}

/* ---- phase 2: whole hard-link groups, ancestors ------------------------------------ */

typedef struct hl_ref {
	uint64_t ino;
	uint32_t rec;
} hl_ref;

static int cmp_hl(const void *a, const void *b)
{
	const hl_ref *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino ? 1 : x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* A layer keeps the hard-link structure: an inode with several links is
 * staged with all of them (all found in upper/, or it is a full snapshot).
 * Then every staged entry's directories are staged too. */
int sd_close_delta(walk *w)
{
	struct snapd_index *x = w->ni;
	_cleanup_free_ hl_ref *hl = NULL;
	size_t n = 0;
	for (size_t i = 1; i < x->n; i++)
		if (x->r[i].nlink > 1 && !S_ISDIR(x->r[i].mode) &&
		    !is_whiteout_mode(x->r[i].mode, x->r[i].rdev))
			n++;
	if (n) {
		if (!(hl = malloc(n * sizeof(*hl))))
			return sd_stop(w, "out of memory");
		n = 0;
		for (size_t i = 1; i < x->n; i++)
			if (x->r[i].nlink > 1 && !S_ISDIR(x->r[i].mode) &&
			    !is_whiteout_mode(x->r[i].mode, x->r[i].rdev))
				hl[n++] = (hl_ref){x->r[i].ino, (uint32_t)i};
		qsort(hl, n, sizeof(*hl), cmp_hl);
	}
	for (size_t i = 0; i < n;) {
		size_t j = i;
		bool staged = false;
		while (j < n && hl[j].ino == hl[i].ino)
			staged |= w->act[hl[j++].rec] == A_LINK;
		if (staged) {
			for (size_t k = i; k < j; k++) {
				if (x->r[hl[k].rec].nlink != j - i)
					return sd_stop(w,
						       "hard-linked file (inode %" PRIu64
						       ") changed and has links outside the "
						       "writable layer's tree",
						       hl[i].ino);
				w->act[hl[k].rec] = A_LINK;
			}
		}
		i = j;
	}
	for (size_t i = x->n - 1; i >= 1; i--) {
		uint32_t p = x->r[i].parent;
		if (w->act[i] != A_NONE && p && w->act[p] == A_NONE)
			w->act[p] = A_DIR;
		if (w->act[i] != A_NONE)
			w->staged++;
	}
	w->staged += w->n_gone;
	return 0;
}
