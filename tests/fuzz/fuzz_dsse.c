/* libFuzzer target: the DSSE envelope parser, strict base64, PAE and the
 * in-toto statement parser (src/util/dsse.c, src/store/attest_stmt.c): the
 * bytes `sbx verify` reads from anyone. Invariants: an accepted envelope
 * re-encodes to base64 that decodes to the same payload; PAE's length is
 * exactly its parts'; a decoded base64 string re-encodes (standard
 * alphabet) to a string that decodes to the same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/attest_stmt.h"
#include "util/dsse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsse_envelope env;
	if (dsse_envelope_parse((const char *)data, size, NULL, &env, NULL) == 0) {
		if (env.n_sigs == 0 || env.n_sigs > DSSE_SIGNATURES_MAX)
			abort();
		char *b = dsse_b64_encode(env.payload, env.payload_len);
		unsigned char *back = NULL;
		size_t blen = 0;
		if (!b || dsse_b64_decode(b, strlen(b), DSSE_PAYLOAD_MAX, &back, &blen, NULL) < 0 ||
		    blen != env.payload_len || memcmp(back, env.payload, blen) != 0)
			abort();
		size_t plen = 0;
		char *pae =
		    dsse_pae(env.payload_type, strlen(env.payload_type), env.payload, env.payload_len, &plen);
		char head[64];
		int h = snprintf(head, sizeof(head), "DSSEv1 %zu ", strlen(env.payload_type));
		if (!pae || memcmp(pae, head, (size_t)h) != 0 ||
		    plen < (size_t)h + strlen(env.payload_type) + env.payload_len + 3)
			abort();
		json_t *st = NULL;
		if (attest_statement_parse(env.payload, env.payload_len, &st, NULL) == 0 &&
		    !json_is_object(st))
			abort();
		json_decref(st);
		free(pae);
		free(back);
		free(b);
		dsse_envelope_clear(&env);
	}
	/* The raw input as base64, and as a statement. */
	unsigned char *d = NULL;
	size_t dl = 0;
	if (dsse_b64_decode((const char *)data, size, 1 << 20, &d, &dl, NULL) == 0) {
		char *e = dsse_b64_encode(d, dl);
		unsigned char *d2 = NULL;
		size_t dl2 = 0;
		if (!e || dsse_b64_decode(e, strlen(e), 1 << 20, &d2, &dl2, NULL) < 0 || dl2 != dl ||
		    memcmp(d, d2, dl) != 0)
			abort();
		free(d2);
		free(e);
		free(d);
	}
	json_t *st = NULL;
	if (attest_statement_parse(data, size, &st, NULL) == 0)
		json_decref(st);
	return 0;
}
