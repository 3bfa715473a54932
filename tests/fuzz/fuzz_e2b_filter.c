/* libFuzzer target: Sandbox.list's filters (pure, src/server/e2b_filter.h).
 * The input's first line is a metadata filter, the second a state filter,
 * matched against fixed metadata; a filter of "k=v" for a pair that is
 * there must match (the decoding is the identity on plain text). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/e2b_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	char *state = strchr(s, '\n');
	if (state)
		*state++ = 0;
	json_t *md = json_pack("{s:s,s:s,s:s}", "user", "ann", "", "", "k", "a b&c=d");
	(void)e2b_metadata_matches(md, s);
	(void)e2b_metadata_matches(NULL, s);
	bool r = e2b_state_wanted(state, true), p = e2b_state_wanted(state, false);
	if (!state || !*state) {
		if (!r || !p) /* no filter passes everything */
			abort();
	}
	if (!e2b_metadata_matches(md, "user=ann") || e2b_metadata_matches(md, "user=bob"))
		abort();
	json_decref(md);
	free(s);
	return 0;
}
