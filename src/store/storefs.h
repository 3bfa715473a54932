/* The store's filesystem layer: its directory layout and every write that
 * must survive a crash (temp + fsync + rename + fsync of the directory).
 *
 * The write, fsync, rename and link steps go through store_sys, which
 * tests replace to fail at the N-th step (SQLite's aSyscall[] idea): after
 * any such failure the store holds only what it held before plus entries
 * under tmp/, which store_gc_clean_tmp() removes. The tar writer's lstat of
 * each entry goes through it too, so that a test can show it a tree that
 * changes under the read (an inode number reused). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/err.h"

#define STORE_DIR_TMP "tmp"
#define STORE_DIR_LAYERS "layers/sha256"
#define STORE_DIR_OBJECTS "objects/sha256"
#define STORE_DIR_SNAPSHOTS "snapshots/sha256"
#define STORE_DIR_LABELS "refs/labels"

typedef struct store_syscalls {
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*fsync)(int fd);
	int (*syncfs)(int fd);
	int (*renameat)(int olddfd, const char *old, int newdfd, const char *new_);
	int (*linkat)(int olddfd, const char *old, int newdfd, const char *new_, int flags);
	/* The tar writer's lstat of each entry it lists: a test replaces it to
	 * show an inode number reused between two listings (tarw.c hl_same). */
	int (*fstatat)(int dfd, const char *name, struct stat *st, int flags);
} store_syscalls;
extern store_syscalls store_sys;

/* Creates the store's directories under root (mode 0700 for new ones). */
int store_fs_init(const char *root, sbx_err **err);
/* fsyncs a directory by path. */
int store_fs_fsync_dir(const char *path, sbx_err **err);
/* Writes data to dir/name atomically and durably; the temp file is
 * dir/.tmp-<name>-<random> (a name no reader lists). */
int store_fs_write_atomic(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
			  sbx_err **err);
/* Writes all of buf through store_sys.write. */
int store_fs_write_all(int fd, const void *buf, size_t len, sbx_err **err);
/* Writes buf as store_fs_write_all does, but seeks over every all-zero
 * STORE_FS_HOLE-byte block aligned on the file offset *off (which advances by
 * len), leaving a hole: a file the environment made sparse (`truncate -s 1T`)
 * must not become allocated zeros in the store. fd is a new regular file
 * written front to back; store_fs_sparse_end(fd, size) then sets the length
 * that a trailing hole leaves short. */
#define STORE_FS_HOLE 4096
int store_fs_write_sparse(int fd, const void *buf, size_t len, uint64_t *off, sbx_err **err);
int store_fs_sparse_end(int fd, uint64_t size, sbx_err **err);
/* "<root>/<a>/<b>..." joined; NULL on ENOMEM. */
char *store_fs_path(const char *root, const char *rel);

/* Sorted names of the entries of dir that keep() accepts; keep returns a
 * malloc'd (possibly rewritten) name, or NULL to skip. A missing dir is an
 * empty list. */
int store_fs_list_dir(const char *dir, char *(*keep)(const char *name), char ***ret, sbx_err **err);
