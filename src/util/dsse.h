/* DSSE (Dead Simple Signing Envelope, secure-systems-lab/dsse v1.0.0):
 * base64, the pre-authentication encoding that is signed, and the JSON
 * envelope. Pure: no I/O, no crypto (signing lives in store/attest_key.c),
 * so every byte a hostile envelope can reach is unit-tested and fuzzed.
 *
 *   PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body
 *   LEN(s)          = ASCII decimal byte length of s, no leading zeros
 *
 *   {"payloadType": TYPE, "payload": base64(BODY),
 *    "signatures": [{"keyid": KEYID, "sig": base64(SIG)}, ...]}
 *
 * Parsing refuses, with one line naming the field: input over
 * DSSE_ENVELOPE_MAX, anything but a JSON object, a missing or non-string
 * payloadType/payload, a payloadType other than the one asked for, base64
 * that is not canonical (below), no signatures or more than
 * DSSE_SIGNATURES_MAX, a signature over DSSE_SIG_MAX bytes, a keyid over
 * DSSE_KEYID_MAX characters. Unknown fields are ignored (the spec allows
 * extensions). */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

#define DSSE_ENVELOPE_MAX (16u << 20) /* bytes of envelope JSON */
#define DSSE_PAYLOAD_MAX (12u << 20)  /* decoded payload */
#define DSSE_SIGNATURES_MAX 16
#define DSSE_SIG_MAX 512
#define DSSE_KEYID_MAX 256
#define DSSE_TYPE_MAX 256
#define DSSE_INTOTO_TYPE "application/vnd.in-toto+json"

/* Standard alphabet with '=' padding; NUL-terminated, caller frees. NULL on ENOMEM. */
char *dsse_b64_encode(const void *data, size_t len);
/* Strict decoding of s[0..len): the standard or the URL-safe alphabet (the
 * spec: verifiers MUST accept either), one alphabet per string; padding
 * optional but, if present, exactly right; no whitespace; the unused low
 * bits of the last character zero (one encoding per byte string). Decoded
 * sizes over max are refused. *ret is NUL-terminated (caller frees). */
int dsse_b64_decode(const char *s, size_t len, size_t max, unsigned char **ret, size_t *ret_len,
		    sbx_err **err);

/* The bytes to sign: PAE(type, body). Caller frees. NULL on ENOMEM. */
char *dsse_pae(const char *type, size_t type_len, const void *body, size_t body_len, size_t *ret_len);

typedef struct dsse_sig {
	char *keyid; /* NULL if absent (optional in the spec, an unauthenticated hint) */
	unsigned char *sig;
	size_t sig_len;
} dsse_sig;

typedef struct dsse_envelope {
	char *payload_type;
	unsigned char *payload; /* decoded; NUL-terminated */
	size_t payload_len;
	dsse_sig sigs[DSSE_SIGNATURES_MAX];
	size_t n_sigs;
} dsse_envelope;

/* Parses buf[0..len) (not NUL-terminated necessarily). want_type: the one
 * payloadType accepted (NULL: any). On failure *ret is untouched. */
int dsse_envelope_parse(const char *buf, size_t len, const char *want_type, dsse_envelope *ret,
			sbx_err **err);
void dsse_envelope_clear(dsse_envelope *e);
/* The envelope JSON object with one signature (keyid may be NULL). NULL on ENOMEM. */
json_t *dsse_envelope_build(const char *type, const void *payload, size_t payload_len, const char *keyid,
			    const void *sig, size_t sig_len);
