/* Filesystem helpers. Paths the sandbox controls are never followed with
 * these: they are for the host-side store and runtime directories only. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

/* mkdir -p with `mode` for created components. */
int fs_mkdir_p(const char *path, mode_t mode);
/* Writes data to path atomically: temp file in the same dir, fsync, rename. */
int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* Same; without fsync when !durable (still atomic through rename). */
int fs_write_atomic_flags(const char *path, const void *data, size_t len, mode_t mode, bool durable);
/* Writes a short string to an existing file (sysfs, procfs, cgroupfs). */
int fs_write_string(const char *path, const char *s);
int fs_write_stringat(int dfd, const char *path, const char *s);
/* Reads a whole (small) file; NUL-terminated. */
int fs_read_file(const char *path, size_t max, char **ret, size_t *ret_len);
int fs_read_fileat(int dfd, const char *path, size_t max, char **ret, size_t *ret_len);
/* Removes a tree without following symlinks, chmod-ing directories that deny
 * access (overlay work dirs are mode 000). Missing path is success. Does not
 * cross mount points. */
int fs_rm_rf(const char *path);
bool fs_exists(const char *path);
/* Joins and allocates; NULL on ENOMEM. */
char *fs_path_join(const char *a, const char *b);
