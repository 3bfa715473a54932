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
