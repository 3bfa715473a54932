/* Comparing secrets (tokens, signatures) in constant time: every byte of
 * `want` is read and the result depends only on the lengths and on whether
 * all bytes matched, never on where the first difference is. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

static inline bool ct_equal(const char *given, size_t given_len, const char *want, size_t want_len)
{
	volatile unsigned char acc = given_len != want_len;
	for (size_t i = 0; i < want_len; i++)
		acc |= (unsigned char)(i < given_len ? given[i] : 0) ^ (unsigned char)want[i];
	return acc == 0;
}
