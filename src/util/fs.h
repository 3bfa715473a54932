/* Filesystem helpers. Paths the sandbox controls are never followed with
 * these: they are for the host-side store and runtime directories only. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/err.h"

/* mkdir with exactly `mode`, whatever the umask: 0 or a negative errno
 * (-EEXIST when something is there; it is left as it is). */
int fs_mkdir_mode(const char *path, mode_t mode);
/* mkdir -p with exactly `mode` for created components (fs_mkdir_mode). */
int fs_mkdir_p(const char *path, mode_t mode);
/* The one atomic write. Writes data to dfd/name through a temp file
 * dfd/.tmp-<name>-<random hex> (created O_EXCL, so unique across processes
 * and threads; a name no reader lists), then renames it over name: a reader
 * sees the old file or the new one, never a part. With FS_ATOMIC_DURABLE the
 * file is fsynced before the rename and the directory after it. ops replaces
 * the write/fsync/rename steps (the store's fault table); NULL for the real
 * calls. The file gets exactly mode, whatever the umask. On failure the temp
 * file is removed. Returns 0 or -errno. */
#define FS_ATOMIC_DURABLE 1u
typedef struct fs_atomic_ops {
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*fsync)(int fd);
	int (*renameat)(int olddfd, const char *old, int newdfd, const char *new_);
} fs_atomic_ops;
int fs_write_atomicat(int dfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
		      const fs_atomic_ops *ops);
/* fs_write_atomicat on a path, durable. */
int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* Same; without the fsyncs when !durable (still atomic through rename). */
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
/* fs_rm_rf of every entry of dir whose name starts with prefix (a missing
 * dir is nothing to remove). */
void fs_rm_rf_prefixed(const char *dir, const char *prefix);
bool fs_exists(const char *path);
/* The one openat2-in-root helper: opens path under root_fd without ever
 * leaving it, O_CLOEXEC added, magic links (/proc/<pid>/fd/...) refused.
 *  FS_IN_ROOT  (RESOLVE_IN_ROOT): symlinks and ".." resolve as if root_fd
 *              were "/" (a tree the sandbox controls, seen as it sees it);
 *  FS_BENEATH  (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): no symlink anywhere
 *              (ELOOP), no escape (EXDEV), relative paths only.
 * Where openat2 is missing (kernels before 5.6, valgrind, a seccomp filter
 * that answers ENOSYS) the same walk is done by hand, one component at a
 * time with O_NOFOLLOW, ".." and symlink targets resolved as text against
 * the root, never by the kernel; the final component is opened with
 * O_NOFOLLOW after its type is checked, so a swap to a symlink fails (ELOOP)
 * rather than escapes. The one difference: IN_ROOT does not create through a
 * dangling symlink there (ELOOP). Returns the fd, or -1 with errno set. */
#define FS_IN_ROOT 1
#define FS_BENEATH 2
int fs_open_beneath(int root_fd, const char *path, int flags, mode_t mode, int how);
/* Forces the fallback (tests). */
extern bool fs_openat2_disabled;
/* Joins and allocates; NULL on ENOMEM. */
char *fs_path_join(const char *a, const char *b);
