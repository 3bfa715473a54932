/* Pure checks of request headers (see http_parse.h). */
#include "server/http_parse.h"

#include <string.h>
#include <strings.h>

#include "util/ct.h"
#include "util/macro.h"

bool http_origin_local(const char *origin)
{
	const char *p;
	if (strncasecmp(origin, "http://", 7) == 0)
		p = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		p = origin + 8;
	else
		return false;
	static const char *const hosts[] = {"localhost", "127.0.0.1", "[::1]"};
	for (size_t i = 0; i < ARRAY_SIZE(hosts); i++) {
		size_t n = strlen(hosts[i]);
		if (strncasecmp(p, hosts[i], n) != 0)
			continue;
		const char *q = p + n;
		if (*q == 0)
			return true;
		if (*q++ != ':')
			continue;
		size_t digits = strspn(q, "0123456789");
		return digits >= 1 && digits <= 5 && q[digits] == 0;
	}
	return false;
}

bool http_content_type_is(const char *ct, const char *type)
{
	size_t n = strlen(type);
	return strncasecmp(ct, type, n) == 0 && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ');
}

bool http_accepts(const char *accept, const char *type)
{
	return accept && strcasestr(accept, type);
}

bool http_token_equal(const char *given, size_t given_len, const char *want, size_t want_len)
{
	return ct_equal(given, given_len, want, want_len);
}

bool http_bearer_token(const char *header, const char **ret, size_t *ret_len)
{
	if (!header || strncasecmp(header, "Bearer ", 7) != 0)
		return false;
	const char *t = header + 7;
	t += strspn(t, " ");
	size_t n = strlen(t);
	while (n > 0 && t[n - 1] == ' ')
		n--;
	*ret = t;
	*ret_len = n;
	return true;
}

unsigned http_framing_check(const http_framing *f, const char **ret_why)
{
	if (f->n_content_length > 1) {
		*ret_why = "more than one Content-Length header";
		return 400;
	}
	if (f->n_content_length && f->n_transfer_encoding) {
		*ret_why = "both Content-Length and Transfer-Encoding";
		return 400;
	}
	if (f->n_content_length) {
		const char *v = f->content_length;
		v += strspn(v, " \t"); /* optional whitespace around a value */
		size_t d = strspn(v, "0123456789");
		if (d == 0 || d > 18 || v[d + strspn(v + d, " \t")] != 0) {
			*ret_why = "a Content-Length that is not a number";
			return 400;
		}
	}
	if (f->n_transfer_encoding) {
		const char *v = f->transfer_encoding;
		v += strspn(v, " \t");
		size_t n = strlen(v);
		while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			n--;
		if (f->n_transfer_encoding > 1 || n != 7 || strncasecmp(v, "chunked", 7) != 0) {
			*ret_why = "a Transfer-Encoding other than chunked";
			return 501;
		}
	}
	return 0;
}
