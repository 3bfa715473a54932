/* Unit tests: src/util/strbuf.c (pure), the one string buffer. */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "util/macro.h"
#include "util/strbuf.h"

TEST(add_and_format)
{
	_cleanup_strbuf_ strbuf b = {0};
	CHECK(streq(strbuf_str(&b), ""));
	strbuf_lit(&b, "ab");
	strbuf_add(&b, "cdef", 2);
	strbuf_addf(&b, "-%d-", 42);
	CHECK(streq(strbuf_str(&b), "abcd-42-") && b.len == 8);
	/* Longer than addf's stack buffer: the second vsnprintf path. */
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	strbuf_addf(&b, "%s", big);
	CHECK(b.len == 8 + 299 && b.p[b.len] == 0 && b.p[b.len - 1] == 'x');
	strbuf_reset(&b);
	CHECK(b.len == 0 && streq(strbuf_str(&b), ""));
}

TEST(escaped)
{
	_cleanup_strbuf_ strbuf b = {0};
	strbuf_add_escaped(&b, "a\n\"\\\x01", 5);
	CHECK(streq(strbuf_str(&b), "a\\n\\\"\\\\\\x01"));
}

TEST(take)
{
	strbuf b = {0};
	_cleanup_free_ char *empty = strbuf_take(&b); /* nothing added: "", owned */
	CHECK(empty && streq(empty, "") && !b.p && !b.len && !b.cap);
	strbuf_lit(&b, "text");
	_cleanup_free_ char *s = strbuf_take(&b);
	CHECK(s && streq(s, "text") && !b.p && !b.len);
	strbuf_lit(&b, "again"); /* b starts over after a take */
	_cleanup_free_ char *t = strbuf_take(&b);
	CHECK(t && streq(t, "again"));
	/* After a failed allocation: NULL, and b freed (nothing leaks). */
	strbuf_lit(&b, "lost");
	b.oom = true;
	CHECK(strbuf_take(&b) == NULL && !b.p && !b.oom);
}
