/* Attestation records in the store: $SBX_ROOT/attestations/sha256/<hex>.json,
 * the signed statement (the envelope's payload bytes) named by its SHA-256.
 * They are gc roots: the files a run wrote are stored as blobs that no
 * snapshot or trace manifest names, and an attestation must stay checkable
 * (sbx verify) after its environment is gone and `sbx gc` has run. */
#pragma once
#include <stddef.h>

#include "util/err.h"

#define STORE_DIR_ATTESTATIONS "attestations/sha256"

/* Writes the record (atomically; once: the same statement twice is one file). */
int attest_store_put(const char *store_root, const void *statement, size_t len, sbx_err **err);
/* Every subject digest ("sha256:<hex>") of every readable record,
 * NULL-terminated (caller frees with strv_free); NULL only on ENOMEM. A
 * record that does not parse is skipped (fsck's business, not gc's). */
char **attest_store_blobs(const char *store_root);
