/* Snapshot manifests and label refs.
 *
 * A manifest is a JSON object (schema 1, docs/store.md) whose snapshot_id is
 * the SHA-256 of its canonical form without snapshot_id: keys sorted, no
 * whitespace, UTF-8, only strings, integers, null, arrays and objects (so
 * RFC 8785 gives the same bytes). It is stored as
 * <root>/snapshots/sha256/<hex>.json; labels are files
 * <root>/refs/labels/<label> holding a snapshot digest. Encode/decode and
 * validation are pure; write/read/list do the I/O, atomically. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "store/digest.h"

#define STORE_SNAPSHOT_SCHEMA 1
#define STORE_SNAPSHOT_MAX_LAYERS 500
#define STORE_SNAPSHOT_MAX_BYTES (16u << 20)

typedef struct store_snapshot {
	char snapshot_id[STORE_DIGEST_SIZE]; /* set by encode, decode and read */
	char *parent;			     /* snapshot digest, or NULL */
	char **layers;			     /* layer digests, bottom first (NULL-terminated) */
	char *base_template;		     /* or NULL */
	char **env;			     /* "KEY=value" */
	char *cwd;			     /* absolute */
	char *user;
	char *os_release; /* or NULL */
	char **packages;  /* "name=version", or NULL (absent) */
	/* A template's base: what names the tree it shows ("key=value": the
	 * host's directories, package databases, mask), or NULL (absent). */
	char **base_identity;
	char **labels;	  /* label names; encoded sorted */
	char *created_at; /* RFC 3339 UTC, "2024-05-01T12:00:00Z" */
	uint64_t size_bytes;
	/* An image's configuration beyond env/cwd/user (a built template's, an
	 * imported image's, or inherited by an environment made from one), as
	 * the canonical JSON of an object with the OCI config's names: "Cmd",
	 * "Entrypoint" (arrays of strings), "WorkingDir" (absolute; the exec
	 * default cwd), "ExposedPorts" ({"80/tcp": {}}), "Labels" ({K: "V"});
	 * or NULL (absent: no image config). See src/api/image_config.h. */
	char *config;
} store_snapshot;

void store_snapshot_free(store_snapshot *s);
static inline void store_snapshot_freep(store_snapshot **s)
{
	store_snapshot_free(*s);
}
#define _cleanup_snapshot_ _cleanup_(store_snapshot_freep)

/* Pure. Checks every field; names the first bad one. */
int store_snapshot_validate(const store_snapshot *s, sbx_err **err);
/* Pure. The canonical JSON (with snapshot_id) and the id. */
int store_snapshot_encode(const store_snapshot *s, char **ret_json, char ret_id[STORE_DIGEST_SIZE],
			  sbx_err **err);
/* Pure. Parses, validates (unknown keys are refused) and checks snapshot_id. */
int store_snapshot_decode(const char *json, size_t len, store_snapshot **ret, sbx_err **err);

int store_snapshot_write(const char *store_root, const store_snapshot *s, char ret_id[STORE_DIGEST_SIZE],
			 sbx_err **err);
/* Reads and verifies; not_found if absent, invalid_argument (EBADMSG) if corrupt. */
int store_snapshot_read(const char *store_root, const char *digest, store_snapshot **ret, sbx_err **err);
/* Digests of the stored manifests, sorted. */
int store_snapshot_list(const char *store_root, char ***ret, sbx_err **err);
/* Removes digest's manifest (its layers and blobs stay until a gc finds
 * nothing that reaches them); not_found if absent. Labels are the caller's. */
int store_snapshot_delete(const char *store_root, const char *digest, sbx_err **err);

/* Pure. [A-Za-z0-9][A-Za-z0-9._-]{0,127}. */
bool store_label_valid(const char *label);
int store_ref_set(const char *store_root, const char *label, const char *digest, sbx_err **err);
int store_ref_get(const char *store_root, const char *label, char ret[STORE_DIGEST_SIZE], sbx_err **err);
int store_ref_delete(const char *store_root, const char *label, sbx_err **err);
/* Valid label names present, sorted. */
int store_ref_list(const char *store_root, char ***ret, sbx_err **err);
