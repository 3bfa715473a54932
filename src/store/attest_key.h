/* Ed25519 keys for attestations, through libcrypto: generation, PEM files,
 * key ids, signing and verification.
 *
 * Files: the private key is PKCS#8 PEM ("BEGIN PRIVATE KEY", unencrypted),
 * created with O_EXCL and mode 0600; the public key is SubjectPublicKeyInfo
 * PEM ("BEGIN PUBLIC KEY") in FILE.pub, mode 0644. A private key file that
 * its group or others may read (any of mode 077) is refused, as ssh does.
 *
 * Key id: "sha256:" + the hex SHA-256 of the public key's DER
 * SubjectPublicKeyInfo (44 bytes for Ed25519), the same for the private key
 * and its .pub; `openssl pkey -pubin -in FILE.pub -outform DER | sha256sum`
 * computes it.
 *
 * Every error is one line naming the file and what is wrong with it:
 * missing, not a PEM key, not Ed25519, a public key where a private key is
 * needed (or the reverse), permissions too open, encrypted. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "store/digest.h"
#include "util/err.h"

#define ATTEST_KEY_FILE_MAX (64u << 10)
#define ATTEST_SIG_LEN 64

typedef struct evp_pkey_st attest_key; /* an EVP_PKEY */
void attest_key_free(attest_key *k);
static inline void attest_key_freep(attest_key **k)
{
	attest_key_free(*k);
}
#define _cleanup_attest_key_ _cleanup_(attest_key_freep)

/* Writes a new pair: path (private) and path.pub. Refuses to overwrite
 * either (conflict); nothing is left behind on failure. */
int attest_keygen(const char *path, char ret_keyid[STORE_DIGEST_SIZE], sbx_err **err);
int attest_key_load_private(const char *path, attest_key **ret, sbx_err **err);
int attest_key_load_public(const char *path, attest_key **ret, sbx_err **err);
/* Raw 32-byte keys (RFC 8032), for test vectors. */
attest_key *attest_key_from_raw(const unsigned char raw[32], bool is_private);
int attest_key_id(const attest_key *k, char ret[STORE_DIGEST_SIZE], sbx_err **err);
/* A PEM text of the public key (caller frees). */
char *attest_key_public_pem(const attest_key *k);
int attest_sign(attest_key *k, const void *msg, size_t len, unsigned char ret_sig[ATTEST_SIG_LEN],
		sbx_err **err);
/* 1: the signature holds; 0: it does not; negative: could not check. */
int attest_verify_sig(attest_key *k, const void *msg, size_t len, const void *sig, size_t sig_len,
		      sbx_err **err);
