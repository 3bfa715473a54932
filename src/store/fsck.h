/* fsck and gc for the store.
 *
 * store_fsck verifies every digest the store holds (layer trees re-tarred,
 * blobs and manifests re-hashed) and every reference between them
 * (snapshot -> layers and parent, label -> snapshot), and names each
 * problem in one line: "layer sha256:.. is corrupt: its tree hashes to ..",
 * "snapshot sha256:..: layer sha256:.. is missing". The gc helpers compute
 * what is reachable; deciding what to delete is the caller's (live
 * environments hold layers no snapshot names). */
#pragma once
#include <stddef.h>

#include "util/err.h"

typedef struct store_fsck_report {
	char **problems; /* NULL-terminated, one line each */
	size_t n_problems;
	size_t layers, blobs, snapshots, refs, tmp_entries; /* what was checked / found */
} store_fsck_report;

void store_fsck_report_clear(store_fsck_report *r);
/* Returns 0 when it could check (problems are in the report, even many),
 * negative only when it could not run. */
int store_fsck(const char *store_root, store_fsck_report *ret, sbx_err **err);

/* Layer digests named by any stored snapshot (sorted, unique). */
int store_gc_referenced_layers(const char *store_root, char ***ret, sbx_err **err);
/* Stored layers not in referenced (NULL-terminated; may be NULL = none). */
int store_gc_unreferenced_layers(const char *store_root, const char *const *referenced, char ***ret,
				 sbx_err **err);
/* Removes what interrupted writes left: everything in tmp/ and ".tmp-" files in the
 * snapshot and label directories. Only run when no writer is active. */
int store_gc_clean_tmp(const char *store_root, size_t *ret_removed, sbx_err **err);
