/* The list filters of GET /v2/sandboxes (e2b_filter.h). */
#include "server/e2b_filter.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"

/* "k=v&k2=v2" as the SDK sends the metadata filter: each part is
 * percent-decoded twice (the query's form encoding, then the SDK's
 * encodeURIComponent of each key and value). */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void pct_decode(char *s, bool plus)
{
	char *w = s;
	for (char *p = s; *p; p++) {
		int hi, lo;
		if (*p == '%' && (hi = hexval(p[1])) >= 0 && (lo = hexval(p[2])) >= 0) {
			*w++ = (char)(hi * 16 + lo);
			p += 2;
		} else
			*w++ = plus && *p == '+' ? ' ' : *p;
	}
	*w = 0;
}

bool e2b_metadata_matches(const json_t *metadata, const char *filter)
{
	if (!filter || !*filter)
		return true;
	_cleanup_free_ char *f = strdup(filter);
	if (!f)
		return false;
	char *save = NULL;
	for (char *part = strtok_r(f, "&", &save); part; part = strtok_r(NULL, "&", &save)) {
		/* A part without '=' asks for an empty value: val is then the
		 * part's own NUL, writable like the rest of the copy (it was a
		 * string literal, which the decoding wrote to: a crash). */
		char *eq = strchr(part, '=');
		char *val = part + strlen(part);
		if (eq) {
			*eq = 0;
			val = eq + 1;
		}
		pct_decode(part, true);
		pct_decode(part, false);
		pct_decode(val, true);
		pct_decode(val, false);
		const char *have = json_str(metadata, part);
		if (!have || !streq(have, val))
			return false;
	}
	return true;
}

bool e2b_state_wanted(const char *filter, bool running)
{
	if (!filter || !*filter)
		return true;
	const char *want = running ? "running" : "paused";
	size_t n = strlen(want);
	for (const char *p = filter; p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == n && strncmp(p, want, n) == 0)
			return true;
		p = comma ? comma + 1 : NULL;
	}
	return false;
}
