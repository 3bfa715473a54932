/* Types shared by the canonical tar writer (tarw) and the safe extractor
 * (tarr). The format is POSIX pax over ustar, as OCI image layers use; see
 * docs/store.md for the canonical form and the hostile-input rules. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

#define STORE_TAR_BLOCK 512
/* OCI whiteout names. */
#define STORE_WH_PREFIX ".wh."
#define STORE_WH_OPAQUE ".wh..wh..opq"
/* sbx's pax record for a real name starting with ".wh." (not a whiteout),
 * value "1"; only in the store's own tars (docs/store.md). */
#define STORE_PAX_LITERAL "SBX.literal"
/* ... and for the whiteout of such a name (tar name ".wh..wh.<rest>"). */
#define STORE_PAX_WHITEOUT "SBX.whiteout"
/* The overlayfs (userxattr) opaque-directory marker. */
#define STORE_OVL_OPAQUE_XATTR "user.overlay.opaque"

/* An id range: on-disk id (base + k) <-> tar id k, for k < count. uids and
 * gids have separate bases (rootless: the caller's uid and gid, count 1). */
typedef struct store_idmap {
	uint32_t uid_base;
	uint32_t gid_base;
	uint32_t count;
} store_idmap;

/* Receives the tar bytes in order. Returns 0 or a negative errno (setting err). */
typedef int (*store_tar_write_fn)(void *userdata, const void *buf, size_t len, sbx_err **err);
/* Receives len zero bytes in order with the rest (a hole of a file: the
 * sink may hash them from a zero buffer and seek over them). */
typedef int (*store_tar_zeros_fn)(void *userdata, uint64_t len, sbx_err **err);
/* Fills buf with up to len bytes: returns the count, 0 at EOF, or a negative errno. */
typedef ssize_t (*store_tar_read_fn)(void *userdata, void *buf, size_t len);

typedef struct store_tar_stats {
	uint64_t bytes;	  /* tar bytes written or consumed */
	uint64_t entries; /* entries (pax/GNU long-name headers not counted) */
} store_tar_stats;
