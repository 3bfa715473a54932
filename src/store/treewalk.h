/* Beneath-only lookups in a tree (a layer, the writable layer, a template
 * directory): every path is resolved from root with openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (or, without openat2, one component
 * at a time with O_NOFOLLOW), so a symlink swapped in meanwhile is never
 * followed. Paths are relative; "" is root itself. Errors are -errno. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* Opens rel beneath root with flags (O_CLOEXEC|O_NOFOLLOW added). */
int store_beneath_open(int root, const char *rel, int flags);
/* Opens the parent of rel (O_PATH) and points *base at its last component. */
int store_beneath_open_parent(int root, const char *rel, const char **base);
/* lstat of rel beneath root. */
int store_beneath_lstat(int root, const char *rel, struct stat *st);
/* Whether directory rel is an overlay opaque directory (user. or trusted.). */
bool store_beneath_opaque(int root, const char *rel);

/* The hard links of a tree: every non-directory with more than one link
 * (a whiteout, char 0:0, is none: overlayfs may share one inode among them),
 * by inode. The tree is read without following a symlink; a directory on
 * another filesystem than its parent is not entered (no link crosses one). */
typedef struct store_links store_links;
/* Scans the subtrees tops (NULL-terminated names beneath root; NULL: root
 * itself) visiting at most max_entries entries: 0, -E2BIG past that limit,
 * -ELOOP past 256 levels, or another negative errno. *ret is set only on
 * success (free it with store_links_free). */
int store_links_scan(int root, char *const *tops, size_t max_entries, store_links **ret);
/* The paths (relative to root, sorted) of inode (dev, ino); *ret_n of them, 0 if none. */
char *const *store_links_find(const store_links *l, dev_t dev, ino_t ino, size_t *ret_n);
void store_links_free(store_links *l);
