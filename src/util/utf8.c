/* UTF-8 helpers (utf8.h). */
#include "util/utf8.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The length a sequence starting with lead byte b has (0: not a lead). */
static size_t seq_len(unsigned char b)
{
	return b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
}

static bool cont(unsigned char b)
{
	return (b >> 6) == 2;
}

size_t utf8_complete_prefix(const char *p, size_t n)
{
	/* A cut sequence is a lead byte in the last three, followed only by
	 * continuation bytes, fewer than it needs. */
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		unsigned char b = (unsigned char)p[n - back];
		if (cont(b))
			continue;
		size_t want = seq_len(b);
		return want > back ? n - back : n;
	}
	return n;
}

char *utf8_sanitize(const char *p, size_t n, size_t *ret_len)
{
	char *o = malloc(n * 3 + 1); /* each byte at most one U+FFFD */
	if (!o)
		return NULL;
	size_t i = 0, k = 0;
	while (i < n) {
		unsigned char b = (unsigned char)p[i];
		size_t len = seq_len(b);
		bool ok = len > 0 && i + len <= n && b != 0;
		for (size_t j = 1; ok && j < len; j++)
			ok = cont((unsigned char)p[i + j]);
		if (ok) {
			memcpy(o + k, p + i, len);
			k += len;
			i += len;
		} else {
			memcpy(o + k, "\xef\xbf\xbd", 3);
			k += 3;
			i++;
		}
	}
	o[k] = 0;
	if (ret_len)
		*ret_len = k;
	return o;
}
