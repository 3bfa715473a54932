/* The canonical tar writer: serializes a directory tree (an overlayfs upper
 * directory or a store layer tree) into the one byte sequence that tree
 * defines, so its SHA-256 is a stable layer id (the OCI diff_id).
 *
 * Canonical form (docs/store.md): depth-first, children in byte order of
 * their tar names; ustar headers with empty uname/gname, ids shifted by
 * -base; a pax header ("././@PaxHeader") only when needed (nanosecond mtime,
 * xattrs, long names, large values); two zero blocks at the end, no record
 * padding. Overlay whiteouts (char 0:0) become `.wh.<name>`, opaque
 * directories (user.overlay.opaque=y) get a `.wh..wh..opq` entry first;
 * a real name starting with `.wh.` keeps its name and gets the pax record
 * `SBX.literal=1` (STORE_PAX_LITERAL), sorted after a whiteout of the same
 * tar name, so layers without such names are plain OCI layers.
 * Files sharing an inode inside the tree become hard-link entries to the
 * first path. The root directory itself is not an entry. */
#pragma once
#include "store/tar.h"

/* Writes the tree under dir_fd (not consumed, not followed if it is a
 * symlink's target: only its contents are read, with O_NOFOLLOW at every
 * step) through fn. Fails, naming the path, on: an owner outside ids, a
 * socket, a file that changes size while read. ret_stats may be NULL. */
int store_tar_write_dir(int dir_fd, const store_idmap *ids, store_tar_write_fn fn, void *userdata,
			store_tar_stats *ret_stats, sbx_err **err);
/* For an OCI consumer (export): also fails, naming the path, on a real name
 * starting with ".wh." (OCI reserves the prefix for whiteouts). */
#define STORE_TAR_W_OCI 1u
/* For a layer (store_layer_put_from_dir): a socket is written as the
 * deletion of its path (`.wh.<name>`), as if it were an overlay whiteout:
 * tar has no type for it, and a bound socket is nothing without its
 * listener; its path must not show a lower layer's file again either. */
#define STORE_TAR_W_SOCKETS_DELETED 2u
int store_tar_write_dir_flags(int dir_fd, const store_idmap *ids, unsigned flags, store_tar_write_fn fn,
			      void *userdata, store_tar_stats *ret_stats, sbx_err **err);
/* The same, with the holes of files (SEEK_DATA/SEEK_HOLE; at least 64 KiB
 * each) given to zfn instead of fn (NULL: to fn as zero bytes): the byte
 * stream, and so the digest, is the same either way. */
int store_tar_write_dir_sparse(int dir_fd, const store_idmap *ids, unsigned flags, store_tar_write_fn fn,
			       store_tar_zeros_fn zfn, void *userdata, store_tar_stats *ret_stats,
			       sbx_err **err);

/* True for an overlay opaque directory (user.overlay.opaque=y, or trusted.overlay.opaque=y). */
bool store_dir_is_opaque(int fd);
