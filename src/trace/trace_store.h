/* Trace manifests in the store: $SBX_ROOT/traces/sha256/<hex>.json, where
 * <hex> is the SHA-256 of the manifest's canonical JSON (sorted keys,
 * compact), so a trace id is a content address like a snapshot id. The
 * manifest names the snapshot the run started from and the blobs it owns
 * (the event stream, stdin/stdout/stderr), all in objects/sha256/. */
#pragma once
#include <jansson.h>

#include "store/digest.h"
#include "util/err.h"

#define STORE_DIR_TRACES "traces/sha256"
#define TRACE_SCHEMA 1

/* Writes the manifest (atomically) and returns its id. */
int trace_store_put(const char *store_root, const json_t *manifest, char ret_id[STORE_DIGEST_SIZE],
		    sbx_err **err);
/* Reads and verifies (hash, schema, shape) a manifest. not_found if absent. */
int trace_store_get(const char *store_root, const char *id, json_t **ret, sbx_err **err);
/* A digest, "sha256:"+prefix or a hex prefix (>= 6) -> the full id. */
int trace_store_resolve(const char *store_root, const char *ref, char **ret_id, sbx_err **err);
/* Ids of all stored traces, sorted. */
int trace_store_list(const char *store_root, char ***ret, sbx_err **err);
/* Pure: checks a manifest's shape; errors name the field. */
int trace_manifest_validate(const json_t *m, sbx_err **err);
/* Pure: every blob digest the manifest references (NULL-terminated, caller frees). */
char **trace_manifest_blobs(const json_t *m);
