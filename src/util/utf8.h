/* UTF-8 for output carried as JSON strings (pure). */
#pragma once
#include <stddef.h>

/* The length of p[0..n) without a multi-byte sequence cut short at its end
 * (so that the rest is read whole next time): n when p ends on a character
 * boundary or with bytes that are invalid anyway. */
size_t utf8_complete_prefix(const char *p, size_t n);
/* A NUL-terminated copy of p[0..n) in which every byte that is not part of
 * valid UTF-8, and NUL, is U+FFFD; its length in *ret_len. NULL on ENOMEM. */
char *utf8_sanitize(const char *p, size_t n, size_t *ret_len);
