/* Layers: immutable, content-addressed directory trees.
 *
 * A layer is identified by the SHA-256 of its canonical tar (tarw.h), the
 * OCI diff_id. It is stored once as
 *   <root>/layers/sha256/<hex>/        the tree, directly usable as an
 *                                      overlayfs lower layer (whiteouts are
 *                                      char 0:0, opaque dirs carry
 *                                      user.overlay.opaque=y), owned by
 *                                      0-based ids (uid k on disk = env uid k;
 *                                      rootless: the store owner = env root),
 *                                      idmapped at mount time
 *   <root>/objects/sha256/<ab>/<hex>   the plain tar, for export (blob)
 * Both appear by rename from <root>/tmp/, so a crash leaves only temp entries. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "store/digest.h"
#include "store/tar.h"

#define STORE_LAYER_ID_COUNT 65536

typedef struct store_layer_info {
	char digest[STORE_DIGEST_SIZE]; /* "sha256:<hex>" of the tar */
	uint64_t size;			/* tar bytes */
	uint64_t files;			/* tar entries */
	bool existed;			/* the store already held it */
} store_layer_info;

/* The ids layer trees are owned by on this host: {0, 0, 65536} as root,
 * {euid, egid, 1} otherwise. */
void store_layer_ids(store_idmap *ret);

/* Turns the tree under dir_fd (an environment's frozen upper directory,
 * owned by ids: env uid k = ids->uid_base + k) into a layer. If the layer
 * exists it is reused, not rewritten. */
int store_layer_put_from_dir(const char *store_root, int dir_fd, const store_idmap *ids,
			     store_layer_info *ret, sbx_err **err);

/* Writes the layer's canonical tar (its OCI diff_id bytes) to out_fd,
 * regenerated from the tree, and checks that it hashes to the digest. */
int store_layer_tar(const char *store_root, const char *digest, int out_fd, sbx_err **err);
/* The same for an OCI consumer: fails, naming the file, if the layer holds a
 * real name starting with ".wh." (OCI reserves the prefix for whiteouts). */
int store_layer_tar_oci(const char *store_root, const char *digest, int out_fd, sbx_err **err);
/* Re-tars the layer tree and compares digests; checks the blob too if it is
 * there. not_found if the layer is missing; invalid_argument (EBADMSG) naming
 * the digest found if it is corrupt. */
int store_layer_verify(const char *store_root, const char *digest, sbx_err **err);
/* Stores a buffer as the blob objects/sha256/<ab>/<hex> (atomically, once)
 * and returns its digest. */
int store_blob_put(const char *store_root, const void *data, size_t len, char ret_digest[STORE_DIGEST_SIZE],
		   sbx_err **err);
/* Reads a blob of at most max bytes and checks its digest. *ret is
 * NUL-terminated (caller frees). */
int store_blob_get(const char *store_root, const char *digest, size_t max, char **ret, size_t *ret_len,
		   sbx_err **err);
/* Hashes the blob objects/sha256/<ab>/<hex>. */
int store_blob_verify(const char *store_root, const char *digest, sbx_err **err);

/* "<root>/layers/sha256/<hex>" and "<root>/objects/sha256/<ab>/<hex>"; NULL for an invalid digest or ENOMEM.
 */
char *store_layer_path(const char *store_root, const char *digest);
char *store_blob_path(const char *store_root, const char *digest);
bool store_layer_exists(const char *store_root, const char *digest);
/* Digests of all layers (sorted); entries that are not 64-hex names are skipped. */
int store_layer_list(const char *store_root, char ***ret, sbx_err **err);
/* Removes a layer (and its blob): renamed into tmp/ first, so it vanishes atomically. */
int store_layer_remove(const char *store_root, const char *digest, sbx_err **err);
