/* Beneath-only lookups in a layer tree (moved from src/api/diff.c). */
#include "store/treewalk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/layer.h"
#include "util/fs.h"
#include "util/macro.h"

int store_beneath_open(int root, const char *rel, int flags)
{
	if (!*rel)
		return openat(root, ".", flags | O_CLOEXEC);
	int fd =
	    fs_open_beneath(root, rel, flags | O_NOFOLLOW, 0, FS_BENEATH); /* falls back without openat2 */
	return fd < 0 ? -errno : fd;
}

/* Opens the parent of rel and points *base at its last component. */
int store_beneath_open_parent(int root, const char *rel, const char **base)
{
	const char *s = strrchr(rel, '/');
	if (!s) {
		*base = rel;
		return store_beneath_open(root, "", O_PATH | O_DIRECTORY);
	}
	*base = s + 1;
	_cleanup_free_ char *p = strndup(rel, (size_t)(s - rel));
	return p ? store_beneath_open(root, p, O_PATH | O_DIRECTORY) : -ENOMEM;
}

int store_beneath_lstat(int root, const char *rel, struct stat *st)
{
	if (!*rel)
		return fstat(root, st) < 0 ? -errno : 0;
	const char *base;
	_cleanup_close_ int pfd = store_beneath_open_parent(root, rel, &base);
	if (pfd < 0)
		return pfd;
	return fstatat(pfd, base, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

bool store_beneath_opaque(int root, const char *rel)
{
	_cleanup_close_ int fd = store_beneath_open(root, rel, O_RDONLY | O_DIRECTORY);
	char v[4];
	if (fd < 0)
		return false;
	ssize_t n = fgetxattr(fd, STORE_OVL_OPAQUE_XATTR, v, sizeof(v));
	if (n < 0)
		n = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v));
	return n == 1 && v[0] == 'y';
}

/* ---- hard links ---------------------------------------------------------------- */

typedef struct link_ent {
	dev_t dev;
	ino_t ino;
	char *path;
} link_ent;

struct store_links {
	link_ent *v; /* sorted by (dev, ino, path) */
	size_t n, cap;
	size_t visited, max;
	char **paths; /* v[i].path in that order, for store_links_find */
};

static int links_add(store_links *l, const struct stat *st, const char *path)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		link_ent *nv = realloc(l->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	l->v[l->n++] = (link_ent){st->st_dev, st->st_ino, p};
	return 0;
}

static int links_walk(store_links *l, int dfd, const char *dpath, dev_t dev, int depth)
{
	if (depth > 256)
		return -ELOOP;
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	DIR *dir = fdopendir(dup);
	if (!dir) {
		safe_close(dup);
		return -errno;
	}
	struct dirent *de;
	int r = 0;
	while (r >= 0 && (de = readdir(dir))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (++l->visited > l->max) {
			r = -E2BIG;
			break;
		}
		struct stat st;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) /* gone meanwhile: the tree may be live */
				r = -errno;
			continue;
		}
		_cleanup_free_ char *p = NULL;
		if (asprintf(&p, "%s%s%s", dpath, *dpath ? "/" : "", de->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (st.st_dev != dev)
				continue;
			_cleanup_close_ int fd =
			    openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				r = links_walk(l, fd, p, dev, depth + 1);
			else if (errno != ENOENT && errno != EACCES)
				r = -errno;
		} else if (st.st_nlink > 1 && !(S_ISCHR(st.st_mode) && st.st_rdev == 0))
			r = links_add(l, &st, p);
	}
	closedir(dir);
	return r;
}

static int link_cmp(const void *a, const void *b)
{
	const link_ent *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return strcmp(x->path, y->path);
}

void store_links_free(store_links *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	free(l->paths);
	free(l);
}

int store_links_scan(int root, char *const *tops, size_t max_entries, store_links **ret)
{
	store_links *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->max = max_entries;
	int r = 0;
	char *const self[] = {"", NULL};
	for (char *const *t = tops ? tops : self; r >= 0 && *t; t++) {
		_cleanup_close_ int fd = store_beneath_open(root, *t, O_RDONLY | O_DIRECTORY);
		struct stat st;
		if (fd < 0) {
			if (fd != -ENOENT && fd != -ENOTDIR && fd != -ELOOP) /* a top that is a symlink */
				r = fd;
			continue;
		}
		r = fstat(fd, &st) < 0 ? -errno : links_walk(l, fd, *t, st.st_dev, 0);
	}
	if (r >= 0 && l->n) {
		qsort(l->v, l->n, sizeof(*l->v), link_cmp);
		if (!(l->paths = malloc(l->n * sizeof(*l->paths))))
			r = -ENOMEM;
		for (size_t i = 0; r >= 0 && i < l->n; i++)
			l->paths[i] = l->v[i].path;
	}
	if (r < 0) {
		store_links_free(l);
		return r;
	}
	*ret = l;
	return 0;
}

char *const *store_links_find(const store_links *l, dev_t dev, ino_t ino, size_t *ret_n)
{
	size_t lo = 0, hi = l->n;
	while (lo < hi) { /* the first entry not below (dev, ino) */
		size_t mid = lo + (hi - lo) / 2;
		const link_ent *m = &l->v[mid];
		if (m->dev < dev || (m->dev == dev && m->ino < ino))
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < l->n && l->v[end].dev == dev && l->v[end].ino == ino)
		end++;
	*ret_n = end - lo;
	return end > lo ? l->paths + lo : NULL;
}
