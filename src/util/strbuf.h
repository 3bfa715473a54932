/* A growable string. A failed allocation sets oom and drops further text,
 * so callers check once at the end (strbuf_str is "" then). Pure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "util/macro.h"

typedef struct strbuf {
	char *p;
	size_t len, cap;
	bool oom;
} strbuf;

void strbuf_add(strbuf *b, const char *s, size_t n);
void strbuf_addf(strbuf *b, const char *fmt, ...) _printf_(2, 3);
#define strbuf_lit(b, s) strbuf_add((b), "" s, sizeof(s) - 1)
/* s[0..n) with non-printable bytes, '"' and '\\' escaped (\n, \t, \r, \xNN). */
void strbuf_add_escaped(strbuf *b, const char *s, size_t n);
void strbuf_reset(strbuf *b);
void strbuf_free(strbuf *b);		 /* back to {0}; NULL-safe contents */
const char *strbuf_str(const strbuf *b); /* "" when empty or after oom */
/* The text, owned by the caller ("" when empty), and b back to {0}; NULL
 * after oom (b is freed then too). */
char *strbuf_take(strbuf *b);
#define _cleanup_strbuf_ _cleanup_(strbuf_free)
