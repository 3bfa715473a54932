/* The xattrs a layer keeps, one definition for everything that writes,
 * stages or compares layers (the canonical tar writer, incremental
 * snapshots' staging tree, `sbx diff`):
 *   - user.* except user.overlay.* (overlayfs's own in a userxattr mount:
 *     opaque, origin, impure, redirect; never part of an entry),
 *   - security.capability (file capabilities),
 *   - the POSIX ACLs system.posix_acl_access / system.posix_acl_default.
 * trusted.* (trusted.overlay.* in a root mount) and security.selinux
 * (host-specific) are not part of a layer.
 *
 * A kept xattr read from disk is in the disk's ids: an ACL's named entries
 * are base + k and a capability read from the initial namespace may be v3
 * with the namespace root's host uid. store_xattr_normalize gives the form a
 * layer's tar holds (ids k, capability v2), so that two trees with different
 * bases compare (and hash) alike. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "store/acl.h"
#include "store/tar.h"

/* Longest xattr name list read from one entry (the kernel's XATTR_LIST_MAX). */
#define STORE_XATTR_LIST_MAX (64 * 1024)

typedef struct store_xattr {
	char *name;
	char *value; /* len bytes (and a NUL past them) */
	size_t len;
} store_xattr;

typedef struct store_xattrs {
	store_xattr *v; /* sorted by name (strcmp) */
	size_t n;
} store_xattrs;

/* Whether a layer keeps the xattr name (above). Pure. */
bool store_xattr_kept(const char *name);

/* Reads the kept xattrs of fd (any fd that getxattr takes: a regular file
 * or a directory opened for reading), or, when fd < 0, of name in directory
 * dfd (through /proc/self/fd, not following name if it is a symlink: any
 * type). Values as on disk (not normalized), sorted by name. A filesystem
 * without xattrs (ENOTSUP) gives none. Returns 0 or a negative errno; *ret
 * is set only on success (free it with store_xattrs_clear). */
int store_xattrs_read(int fd, int dfd, const char *name, store_xattrs *ret);

/* Rewrites one kept xattr from the disk's ids (ids: on-disk id base + k is
 * k) to the layer's form: security.capability v3 whose rootid is
 * ids->uid_base becomes v2 (-ERANGE for a v3 of another namespace's root:
 * nothing of this environment); an ACL is checked and shifted
 * (store_acl_shift STORE_ACL_FROM_DISK: -EINVAL or -ERANGE, details in *ae,
 * which may be NULL). Other names are left as they are. On an error the
 * value may be partly rewritten. Pure. */
int store_xattr_normalize(store_xattr *x, const store_idmap *ids, store_acl_error *ae);

/* Whether two sorted lists hold the same names with the same values. Pure. */
bool store_xattrs_equal(const store_xattrs *a, const store_xattrs *b);

void store_xattrs_clear(store_xattrs *x);
