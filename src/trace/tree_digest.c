/* A digest of a directory tree's contents, for inputs that come from
 * outside a snapshot (volumes): names, types, permission bits, sizes, file
 * contents and link targets, in byte order of names; not times or owners.
 * A replay recomputes it and reports a changed input as such. */
#include "trace/tree_digest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/macro.h"

#define TREE_MAX_FILES 100000
#define TREE_MAX_DEPTH 64

typedef struct walk {
	store_hasher *h;
	uint64_t files;
} walk;

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int hash_str(walk *w, const char *s, sbx_err **err)
{
	return store_hasher_update(w->h, s, strlen(s) + 1, err);
}

static int walk_dir(walk *w, int dfd, const char *rel, int depth, sbx_err **err)
{
	if (depth > TREE_MAX_DEPTH)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ELOOP, "'%s': deeper than %d levels", rel,
			       TREE_MAX_DEPTH);
	struct dirent **ents = NULL;
	/* scandirat on the open directory keeps every lookup beneath it. */
	int n = scandirat(dfd, ".", &ents, NULL, by_name);
	if (n < 0)
		return err_errno(err, "list '%s'", rel);
	int r = 0;
	for (int i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;
		if (r < 0 || streq(name, ".") || streq(name, ".."))
			continue;
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s/%s", rel, name) < 0) {
			r = err_errnum(err, ENOMEM, "tree digest");
			continue;
		}
		struct stat st;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = err_errno(err, "stat '%s'", path);
			continue;
		}
		if (++w->files > TREE_MAX_FILES) {
			r = err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "more than %d entries", TREE_MAX_FILES);
			continue;
		}
		char meta[64];
		snprintf(meta, sizeof(meta), "%o %lld", (unsigned)st.st_mode & 0177777,
			 S_ISREG(st.st_mode) ? (long long)st.st_size : 0LL);
		if ((r = hash_str(w, path, err)) < 0 || (r = hash_str(w, meta, err)) < 0)
			continue;
		if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			char d2[STORE_DIGEST_SIZE];
			if (fd < 0 || store_digest_fd(fd, d2, NULL, err) < 0) {
				r = fd < 0 ? err_errno(err, "open '%s'", path) : -1;
				continue;
			}
			r = hash_str(w, d2, err);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t l = readlinkat(dfd, name, target, sizeof(target) - 1);
			if (l < 0) {
				r = err_errno(err, "readlink '%s'", path);
				continue;
			}
			target[l] = 0;
			r = hash_str(w, target, err);
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub =
			    openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			r = sub < 0 ? err_errno(err, "open '%s'", path)
				    : walk_dir(w, sub, path, depth + 1, err);
		}
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return r;
}

int trace_tree_digest(const char *path, char ret[STORE_DIGEST_SIZE], uint64_t *ret_entries, sbx_err **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "open '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat '%s'", path);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return -1;
	walk w = {.h = h};
	if (S_ISDIR(st.st_mode)) {
		if (walk_dir(&w, fd, "", 0, err) < 0)
			return err_wrap(err, "digest of '%s'", path);
	} else {
		char d[STORE_DIGEST_SIZE];
		if (store_digest_fd(fd, d, NULL, err) < 0 || hash_str(&w, d, err) < 0)
			return -1;
		w.files = 1;
	}
	if (store_hasher_final(h, ret, err) < 0)
		return -1;
	if (ret_entries)
		*ret_entries = w.files;
	return 0;
}
