/* Beneath-only lookups in a tree (a layer, the writable layer, a template
 * directory): every path is resolved from root with openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (or, without openat2, one component
 * at a time with O_NOFOLLOW), so a symlink swapped in meanwhile is never
 * followed. Paths are relative; "" is root itself. Errors are -errno. */
#pragma once
#include <stdbool.h>
#include <sys/stat.h>

/* Opens rel beneath root with flags (O_CLOEXEC|O_NOFOLLOW added). */
int store_beneath_open(int root, const char *rel, int flags);
/* Opens the parent of rel (O_PATH) and points *base at its last component. */
int store_beneath_open_parent(int root, const char *rel, const char **base);
/* lstat of rel beneath root. */
int store_beneath_lstat(int root, const char *rel, struct stat *st);
/* Whether directory rel is an overlay opaque directory (user. or trusted.). */
bool store_beneath_opaque(int root, const char *rel);
