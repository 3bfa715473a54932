/* libFuzzer target: CDI specs (runtime/cdi.h), which a device vendor's tool
 * writes and sbx reads: JSON and YAML (libyaml, aliases bounded), then the
 * resolver over the parsed spec. The first byte picks the format. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cdi.h"
#include "util/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *file = data[0] & 1 ? "fuzz.yaml" : "fuzz.json";
	cdi_spec *s = NULL;
	if (cdi_spec_parse((const char *)data + 1, size - 1, file, &s, NULL) == 0) {
		char q[600];
		snprintf(q, sizeof(q), "%s=%s", s->kind, s->devices[0].name);
		const char *names[] = {q, NULL};
		cdi_edits e;
		char **res = NULL;
		if (cdi_resolve(&s, 1, names, &e, &res, NULL) == 0) {
			cdi_edits_done(&e);
			strv_free(res);
		}
		(void)cdi_allowed(names, q);
		cdi_spec_free(s);
	}
	return 0;
}
