/* Identities and credentials of the E2B front door (docs/e2b.md), pure: no
 * I/O, no clock, no randomness of its own (the caller passes random bytes and
 * the time), so every rule is unit-tested (tests/unit/test_e2b_auth.c) and
 * every parser fuzzed (tests/fuzz/fuzz_e2b_auth.c).
 *
 * Ids. A sandbox id matches ^[a-z0-9]+$ (E2B's infra validates ids so, and
 * the Host form {port}-{id}.{domain} splits on '-'): e2b_id_mint writes
 * E2B_ID_LEN characters of RFC 4648 base32 in lowercase (a-z, 2-7), 5 bits
 * of the caller's random bytes each, so no character is likelier than
 * another. An access token (a sandbox's envdAccessToken, sent back as
 * X-Access-Token) is E2B_TOKEN_LEN lowercase hex digits: no ':' (the
 * signature below joins fields with ':'), nothing a header or a query
 * string must escape.
 *
 * File URL signatures. E2B's SDK signs /files URLs (uploadUrl, downloadUrl;
 * e2b 2.51.0 src/sandbox/signature.ts, checked by envd's
 * internal/api/auth.go) as
 *     "v1_" + base64(sha256("path:op:user:token")), or with ":exp" appended
 * where op is "read" or "write", user "" when no username is given, exp the
 * signature_expiration query value (unix seconds) when there is one, and the
 * base64 standard with its '=' padding removed. The verifier answers BAD for
 * anything that is not exactly the signature of these fields (including an
 * exp that is not 1-19 ASCII digits without a leading zero, or an op other
 * than read/write), and EXPIRED only for a right signature whose exp is
 * below now: who cannot sign learns nothing about the expiry.
 *
 * Authorization: Basic base64("user:") names the user a call runs as (the
 * SDK sends it when a call names a user; envd ignores the password, and so
 * does this). Strict: the scheme "Basic" in any case, one space, canonical
 * standard base64 (padded), a user name as --user takes one
 * (user_spec_parse: 1-32 of [A-Za-z0-9_.-], not starting with '-').
 *
 * Host routing. With `sbx serve --domain D`, a Host of {port}-{id}.{D}
 * names a sandbox and one of its ports (E2B's own proxy rule): any case,
 * an optional :port suffix (the listener's) ignored, port 1-65535 without
 * a leading zero, id as above, the domain matched exactly after the first
 * '.'. A Host that is not under D (localhost, an IP literal, another name),
 * D itself and sandbox.D (E2B's shared host) are routed by the
 * E2b-Sandbox-Id and E2b-Sandbox-Port headers instead. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/user.h"
#include "util/err.h"

#define E2B_ID_LEN 20				  /* characters of a minted id: 100 bits */
#define E2B_ID_ENTROPY ((E2B_ID_LEN * 5 + 7) / 8) /* random bytes it takes: 13 */
#define E2B_ID_MAX 64				  /* longest id accepted from a client */
#define E2B_TOKEN_ENTROPY 32			  /* random bytes of an access token */
#define E2B_TOKEN_LEN (2 * E2B_TOKEN_ENTROPY)
#define E2B_SIGNATURE_LEN (3 + 43) /* "v1_" + 32 bytes in unpadded base64 */
#define E2B_AUTH_HEADER_MAX 256	   /* longest Authorization value parsed */
#define E2B_USER_MAX USER_NAME_MAX
#define E2B_HOST_MAX 253

/* Writes E2B_ID_LEN characters and a NUL to ret from rnd[0..E2B_ID_ENTROPY). */
void e2b_id_mint(const uint8_t rnd[E2B_ID_ENTROPY], char ret[E2B_ID_LEN + 1]);
/* True for 1 to E2B_ID_MAX characters of [a-z0-9]. */
bool e2b_id_valid(const char *id);
/* Writes E2B_TOKEN_LEN hex digits and a NUL to ret from rnd[0..E2B_TOKEN_ENTROPY). */
void e2b_token_mint(const uint8_t rnd[E2B_TOKEN_ENTROPY], char ret[E2B_TOKEN_LEN + 1]);
/* Compares a secret a client sent with the one expected in time that
 * depends on their lengths only, never on where they differ. NULL equals
 * nothing. */
bool e2b_secret_equal(const char *given, const char *expected);

/* The signature of a /files URL (see the top); user and exp may be NULL
 * (exp is hashed as given: pass what the URL will carry). -EINVAL with err
 * for an op other than "read"/"write" or a NULL path or token. */
int e2b_file_signature(const char *path, const char *op, const char *user, const char *token, const char *exp,
		       char ret[E2B_SIGNATURE_LEN + 1], sbx_err **err);

typedef enum e2b_sig_verdict {
	E2B_SIG_OK = 0,
	E2B_SIG_BAD,	 /* not the signature of these fields: 401 "invalid signature" */
	E2B_SIG_EXPIRED, /* right, but exp < now: 401 "signature is already expired" */
} e2b_sig_verdict;

/* Checks signature (the query value) against the fields and the sandbox's
 * token; exp is the signature_expiration query value or NULL, now unix
 * seconds. An empty token or signature is BAD. Fails closed (BAD) if the
 * digest cannot be computed. */
e2b_sig_verdict e2b_file_signature_verify(const char *path, const char *op, const char *user,
					  const char *token, const char *signature, const char *exp,
					  int64_t now);

/* The user an Authorization header value names (see the top). -EINVAL with
 * err (unauthenticated to the client) for anything else. */
int e2b_basic_auth_user(const char *value, char ret[E2B_USER_MAX + 1], sbx_err **err);

/* A port as E2B writes one (E2b-Sandbox-Port, the Host form): 1 to 5
 * ASCII digits without a leading zero, 1-65535; -EINVAL otherwise. */
int e2b_port_parse(const char *s, size_t len, uint16_t *ret);

/* Parses a Host header value against the configured domain: 1 with the
 * port and the id when it is {port}-{id}.{domain}; 0 when the headers route
 * instead (see the top; also when domain is NULL or empty); negative with
 * err (invalid_argument) when it is another name under the domain (no
 * sandbox can be meant: answer 400, do not fall back to the headers). */
int e2b_host_parse(const char *host, const char *domain, uint16_t *ret_port, char ret_id[E2B_ID_MAX + 1],
		   sbx_err **err);
/* A domain --domain may name: DNS labels of [a-z0-9-] (lowercase; not
 * starting or ending with '-', 1-63 each), dot-separated, at most 200 in
 * all, with at least one dot (a Host of {port}-{id}.{domain} must fit
 * E2B_HOST_MAX). 0, or -1 with err (invalid_argument). */
int e2b_domain_valid(const char *domain, sbx_err **err);

/* File metadata on upload (envd >= 0.6.2): a header X-Metadata-<key>:
 * <value> (the prefix in any case) stores value as the file's extended
 * attribute user.e2b.<key>, the key lowercased. Keys are HTTP token
 * characters (1 to E2B_METADATA_KEY_MAX), values printable US-ASCII (at
 * most E2B_METADATA_VALUE_MAX bytes), as the SDK checks them. 1 with the
 * lowercased key in ret_key when name is such a header, 0 when it is
 * another header, -1 with err (invalid_argument) when it is a metadata
 * header with a bad key or value. */
#define E2B_METADATA_KEY_MAX 200
#define E2B_METADATA_VALUE_MAX 4096
#define E2B_METADATA_MAX 64 /* headers of one upload */
int e2b_metadata_header(const char *name, const char *value, char ret_key[E2B_METADATA_KEY_MAX + 1],
			sbx_err **err);
