/* libFuzzer target: the CLI's size, duration and volume parsers (pure). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sbx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	int64_t v;
	sbx_err *e = NULL;
	if (sbx_parse_size(s, &v, &e) == 0 && v < 0)
		abort();
	sbx_err_free(e);
	e = NULL;
	if (sbx_parse_duration(s, &v, &e) == 0 && v < 0)
		abort();
	sbx_err_free(e);
	e = NULL;
	char *h = NULL, *p = NULL;
	bool ro;
	if (sbx_parse_volume(s, &h, &p, &ro, &e) == 0) {
		/* Accepted volumes are absolute and never contain a ".." component. */
		if (h[0] != '/' || p[0] != '/' || strstr(p, "/../") ||
		    (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")))
			abort();
		free(h);
		free(p);
	}
	sbx_err_free(e);
	free(s);
	return 0;
}
