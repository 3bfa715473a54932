/* Unit tests: src/util/utf8.c (pure). */
#include <string.h>

#include "unit.h"
#include "util/macro.h"
#include "util/utf8.h"

TEST(complete_prefix)
{
	CHECK(utf8_complete_prefix("", 0) == 0);
	CHECK(utf8_complete_prefix("abc", 3) == 3);
	const char *e = "a\xc3\xa9"; /* a, é */
	CHECK(utf8_complete_prefix(e, 3) == 3);
	CHECK(utf8_complete_prefix(e, 2) == 1); /* é cut after its lead byte */
	const char *euro = "\xe2\x82\xac";
	CHECK(utf8_complete_prefix(euro, 3) == 3);
	CHECK(utf8_complete_prefix(euro, 2) == 0);
	CHECK(utf8_complete_prefix(euro, 1) == 0);
	const char *emoji = "x\xf0\x9f\x98\x80";
	CHECK(utf8_complete_prefix(emoji, 5) == 5);
	CHECK(utf8_complete_prefix(emoji, 4) == 1);
	/* invalid bytes are not held back (they never complete) */
	CHECK(utf8_complete_prefix("a\xff", 2) == 2);
	CHECK(utf8_complete_prefix("\x80\x80\x80\x80", 4) == 4);
}

TEST(sanitize)
{
	size_t n;
	_cleanup_free_ char *a = utf8_sanitize("h\xc3\xa9llo", 6, &n);
	CHECK(a && n == 6 && memcmp(a, "h\xc3\xa9llo", 6) == 0);
	_cleanup_free_ char *b = utf8_sanitize("a\xff"
					       "b",
					       3, &n);
	CHECK(b && n == 5 &&
	      strcmp(b, "a\xef\xbf\xbd"
			"b") == 0);
	_cleanup_free_ char *c = utf8_sanitize("a\0b", 3, &n);
	CHECK(c && n == 5 &&
	      memcmp(c,
		     "a\xef\xbf\xbd"
		     "b",
		     5) == 0);
	_cleanup_free_ char *d = utf8_sanitize("\xe2\x82", 2, &n); /* cut short: two replacements */
	CHECK(d && n == 6);
	_cleanup_free_ char *e = utf8_sanitize("", 0, &n);
	CHECK(e && n == 0 && e[0] == 0);
}
