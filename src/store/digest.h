/* SHA-256 digests in OCI form: "sha256:<64 lowercase hex>".
 *
 * The streaming hasher wraps libcrypto's EVP interface; formatting, parsing
 * and validation are pure. A digest string is always STORE_DIGEST_LEN
 * characters; buffers are STORE_DIGEST_SIZE bytes (with the NUL). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define STORE_DIGEST_PREFIX "sha256:"
#define STORE_DIGEST_HEX_LEN 64
#define STORE_DIGEST_LEN (7 + STORE_DIGEST_HEX_LEN)
#define STORE_DIGEST_SIZE (STORE_DIGEST_LEN + 1)
#define STORE_DIGEST_RAW_LEN 32

typedef struct store_hasher store_hasher;

/* A fresh SHA-256 context. NULL on failure (ENOMEM, or libcrypto without SHA-256). */
store_hasher *store_hasher_new(sbx_err **err);
void store_hasher_free(store_hasher *h);
static inline void store_hasher_freep(store_hasher **h)
{
	store_hasher_free(*h);
}
#define _cleanup_hasher_ _cleanup_(store_hasher_freep)
int store_hasher_update(store_hasher *h, const void *data, size_t len, sbx_err **err);
/* Finishes and writes "sha256:<hex>" to ret (STORE_DIGEST_SIZE bytes). The
 * hasher can not be updated afterwards (free it). */
int store_hasher_final(store_hasher *h, char ret[STORE_DIGEST_SIZE], sbx_err **err);
/* Bytes hashed so far. */
uint64_t store_hasher_bytes(const store_hasher *h);

/* One-shot digest of a buffer, and of everything readable from fd (from its
 * current offset to EOF). */
int store_digest_buf(const void *data, size_t len, char ret[STORE_DIGEST_SIZE], sbx_err **err);
int store_digest_fd(int fd, char ret[STORE_DIGEST_SIZE], uint64_t *ret_size, sbx_err **err);

/* Pure. True for exactly "sha256:" followed by 64 lowercase hex digits. */
bool store_digest_valid(const char *s);
/* Pure. The hex part of a valid digest, or NULL. */
const char *store_digest_hex(const char *s);
/* Pure. True for exactly 64 lowercase hex digits (a store file name). */
bool store_digest_hex_valid(const char *hex);
/* Pure. The one digest-prefix resolver (snapshots, traces). A prefix is 6
 * to 64 lowercase hex digits, with or without "sha256:". _valid says whether
 * ref is one (so a caller lists candidates only then); _match counts the
 * digests of the NULL-terminated list `all` whose hex starts with it (0, 1,
 * or 2 meaning "more than one": ambiguous), pointing *ret_match at the one
 * found when the count is 1. Not a prefix: 0. */
#define STORE_DIGEST_PREFIX_MIN 6
bool store_digest_prefix_valid(const char *ref);
int store_digest_prefix_match(char *const *all, const char *ref, const char **ret_match);
/* Pure. Raw 32 bytes <-> string. Parse fails with -EINVAL on anything invalid. */
void store_digest_format(const uint8_t raw[STORE_DIGEST_RAW_LEN], char ret[STORE_DIGEST_SIZE]);
int store_digest_parse(const char *s, uint8_t ret[STORE_DIGEST_RAW_LEN]);
