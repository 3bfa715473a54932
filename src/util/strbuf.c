/* A growable string (strbuf.h). */
#include "util/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void grow(strbuf *b, size_t more)
{
	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

void strbuf_add(strbuf *b, const char *s, size_t n)
{
	grow(b, n);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void strbuf_addf(strbuf *b, const char *fmt, ...)
{
	char small[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		strbuf_add(b, small, n);
		return;
	}
	grow(b, n);
	if (b->oom)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

void strbuf_add_escaped(strbuf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		switch (c) {
		case '\n':
			strbuf_lit(b, "\\n");
			break;
		case '\t':
			strbuf_lit(b, "\\t");
			break;
		case '\r':
			strbuf_lit(b, "\\r");
			break;
		case '"':
		case '\\':
			strbuf_lit(b, "\\");
			strbuf_add(b, (const char *)&c, 1);
			break;
		default:
			if (c < 0x20 || c >= 0x7f)
				strbuf_addf(b, "\\x%02x", c);
			else
				strbuf_add(b, (const char *)&c, 1);
		}
	}
}

void strbuf_reset(strbuf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
}

void strbuf_free(strbuf *b)
{
	free(b->p);
	*b = (strbuf){0};
}

const char *strbuf_str(const strbuf *b)
{
	return b->p && !b->oom ? b->p : "";
}

char *strbuf_take(strbuf *b)
{
	if (!b->p && !b->oom)
		strbuf_add(b, "", 0);
	if (b->oom) {
		strbuf_free(b);
		return NULL;
	}
	char *s = b->p;
	*b = (strbuf){0};
	return s;
}
