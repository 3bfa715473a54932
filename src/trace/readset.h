/* The read set of a traced run: which files the command read, derived from
 * its event stream. Pure (no I/O): the classification of each path (volume,
 * host-template lower, or provided by the snapshot) and its digest are the
 * caller's (src/api/readset_io.c).
 *
 * A path is read when a process of the stream
 *  - opened it successfully for reading: open, openat (flags not O_WRONLY,
 *    not O_PATH, not O_TRUNC), openat2 (its flags are in user memory, which
 *    the record does not hold: counted as a read), open_by_handle_at is not
 *    (no path);
 *  - executed it: execve, execveat (a successful call; the new image's
 *    libraries come through the loader's own opens; an mmap of a file needs a
 *    descriptor opened before, so it is counted there);
 *  - listed it: getdents/getdents64 on a descriptor whose path is known
 *    (kind READSET_DIR: the names and types are the input);
 *  - tried to open or execute it and got ENOENT: kind READSET_FILE with
 *    absent = true (creating it later changes what the run would do).
 * Paths are made absolute: dirfd-relative through the descriptor model
 * (trace_state, trace_view.h), AT_FDCWD-relative through each process's
 * working directory (the command's cwd, then chdir/fchdir, inherited at
 * fork); a relative path whose directory is unknown, a truncated path and
 * paths under /proc, /sys and /dev are left out. "." and empty components are
 * dropped; ".." is kept (only a lookup in the tree can resolve it past a
 * symlink).
 *
 * Writes: a path the run created or truncated (open with O_CREAT or O_TRUNC
 * and a writable mode, creat, the new name of rename/renameat/renameat2)
 * before any read of it is an output of the run, not an input: its later
 * reads are left out, and so is an earlier ENOENT read (the run made the
 * file itself). Every written path is also listed in `written`.
 *
 * Items are unique by (path, kind), in the order of their first read, each
 * with the index (trace_ev.seq) and pid of that read. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx.h"

enum { READSET_FILE = 1, READSET_DIR = 2 };

typedef struct readset_item {
	char *path;
	uint8_t kind;
	bool absent; /* the first read found nothing (ENOENT) */
	uint64_t index;
	uint32_t pid;
} readset_item;

typedef struct readset {
	readset_item *v;
	size_t n, cap;
	char **written; /* paths the run wrote (created, truncated, renamed to), NULL-terminated or NULL */
	size_t n_written, cap_written;
} readset;

/* Derives the read set of stream buf (trace_format.h), whose first process
 * started in directory cwd (absolute, or NULL: unknown). Fails on a
 * malformed stream or ENOMEM; *ret is filled only on success (free with
 * readset_free). */
int readset_derive(const void *buf, size_t len, const char *cwd, readset *ret, sbx_err **err);
void readset_free(readset *rs);
