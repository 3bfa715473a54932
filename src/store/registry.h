/* The OCI distribution client: snapshots pushed to and pulled from a
 * registry (docker-registry/distribution, any OCI distribution API).
 *
 * Pure parts (no I/O; unit-tested and fuzzed in tests/fuzz/fuzz_registry.c):
 *   reg_ref_parse         REGISTRY/REPO[:TAG][@sha256:HEX]
 *   reg_challenge_parse   a WWW-Authenticate header (Basic, Bearer realm/service/scope)
 *   reg_auth_lookup       credentials for a registry in a docker config.json
 *   reg_token_parse       a token endpoint's answer ("token" or "access_token")
 *   reg_manifest_check    a fetched manifest: size, media type, digest against the
 *                         reference and the Docker-Content-Digest header
 *   reg_url_with_query    an upload Location (absolute or relative) plus a query parameter
 * I/O (libcurl): reg_client_* below. Every answer body is bounded (JSON at most
 * OCI_MAX_JSON, blobs at most their descriptor's size) and every blob is
 * hashed as it arrives; nothing is trusted before its digest matched. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/digest.h"
#include "util/err.h"

#define REG_MAX_REPO 255
#define REG_DOCKER_HUB "registry-1.docker.io"

typedef struct reg_ref {
	char *registry; /* host[:port] as written ("docker.io" becomes registry-1.docker.io) */
	char *repo;	/* path components, lowercase ([a-z0-9]+ separated by ., _, __ or -+) */
	char *tag;	/* "latest" when neither tag nor digest is given; NULL with a digest only */
	char digest[STORE_DIGEST_SIZE]; /* "" if none */
} reg_ref;
void reg_ref_clear(reg_ref *r);

/* Pure. REGISTRY/REPO[:TAG][@sha256:HEX]. The first component is the
 * registry when it has a '.' or ':' or is "localhost"; otherwise docker.io
 * (and a single component gets "library/"), as docker does. */
int reg_ref_parse(const char *s, reg_ref *ret, sbx_err **err);

typedef enum reg_scheme { REG_AUTH_NONE = 0, REG_AUTH_BASIC, REG_AUTH_BEARER } reg_scheme;
typedef struct reg_challenge {
	reg_scheme scheme;
	char *realm, *service, *scope; /* NULL when absent */
} reg_challenge;
void reg_challenge_clear(reg_challenge *c);
/* Pure. `Basic realm="x"` or `Bearer realm="https://a/token",service="s",scope="repository:r:pull"`:
 * auth-params are token=token or token="quoted\"string"; unknown params are
 * ignored, an unknown scheme is -EINVAL. A Bearer challenge needs a realm. */
int reg_challenge_parse(const char *hdr, reg_challenge *ret, sbx_err **err);

/* Pure. Looks up registry in config.json's "auths" (keys "host", "host:port",
 * "https://host/...", and for docker.io "https://index.docker.io/v1/"):
 * "auth" (base64 of user:password) or "username"/"password". Returns 1 with
 * ret_user/ret_pass set, 0 when there is no entry, negative on a malformed
 * document or entry. */
int reg_auth_lookup(const char *json, size_t len, const char *registry, char **ret_user, char **ret_pass,
		    sbx_err **err);

/* Pure. {"token": T} or {"access_token": T}; T printable ASCII without spaces. */
int reg_token_parse(const char *json, size_t len, char **ret, sbx_err **err);

/* Pure. A manifest answer: len <= OCI_MAX_JSON; media type (Content-Type,
 * or the body's mediaType when the header is absent or generic) an OCI or
 * docker manifest or index (ret_is_index); its sha256 (ret_digest) equal to
 * want_digest (the reference's, may be "" or NULL) and to header_digest
 * (Docker-Content-Digest, may be NULL) when given. */
int reg_manifest_check(const char *body, size_t len, const char *content_type, const char *want_digest,
		       const char *header_digest, bool *ret_is_index, char ret_digest[STORE_DIGEST_SIZE],
		       sbx_err **err);

/* Pure. base is "http[s]://host[:port]"; loc an absolute URL (same scheme
 * and host only) or an absolute path; appends "?k=v" or "&k=v" (v escaped). */
int reg_url_with_query(const char *base, const char *loc, const char *k, const char *v, char **ret,
		       sbx_err **err);
/* Pure. url plus "?k=v" or "&k=v" (v percent-escaped): the token request. */
int reg_url_add_query(const char *url, const char *k, const char *v, char **ret, sbx_err **err);

/* ---- I/O ------------------------------------------------------------------ */

typedef struct reg_client reg_client;
/* Opens a client for ref's registry and repository: plain HTTP when
 * insecure, else HTTPS. Credentials: $REGISTRY_AUTH_FILE, else
 * $DOCKER_CONFIG/config.json, else ~/.docker/config.json. push asks for
 * push and pull scope. Probes /v2/ and answers its challenge. */
int reg_client_open(const reg_ref *ref, bool insecure, bool push, reg_client **ret, sbx_err **err);
void reg_client_free(reg_client *c);
static inline void reg_client_freep(reg_client **c)
{
	reg_client_free(*c);
}
#define _cleanup_reg_client_ _cleanup_(reg_client_freep)

/* HEAD /v2/<repo>/blobs/<digest>: 1 present (size matches), 0 absent. */
int reg_blob_exists(reg_client *c, const char *digest, int64_t size, sbx_err **err);
/* Cross-repository mount from repo `from`: 1 mounted, 0 not (the registry
 * opened an upload instead, which is cancelled). */
int reg_blob_mount(reg_client *c, const char *digest, const char *from, sbx_err **err);
/* Uploads size bytes of fd (from offset 0) as digest: POST, then one PUT
 * when size <= chunk, else PATCH chunks of `chunk` bytes then PUT. */
int reg_blob_upload(reg_client *c, int fd, int64_t size, const char *digest, uint64_t chunk, sbx_err **err);
/* PUT /v2/<repo>/manifests/<ref> with the media type. */
int reg_manifest_put(reg_client *c, const char *ref, const char *media_type, const char *body, size_t len,
		     sbx_err **err);
/* GET /v2/<repo>/manifests/<ref> (Accept: OCI and docker manifests and
 * indexes), checked by reg_manifest_check against want_digest. */
int reg_manifest_get(reg_client *c, const char *ref, const char *want_digest, char **ret, size_t *ret_len,
		     bool *ret_is_index, char ret_digest[STORE_DIGEST_SIZE], sbx_err **err);
/* GET a blob into out_fd (from its current offset): at most size bytes,
 * exactly size expected, sha256 checked: -EBADMSG (nothing trusted) on a
 * mismatch. Progress is reported as bytes arrive. */
int reg_blob_get(reg_client *c, const char *digest, int64_t size, int out_fd, sbx_err **err);
/* Bytes sent and received in bodies so far. */
uint64_t reg_client_bytes_sent(const reg_client *c);
