/* Pure parsers for user-supplied sizes, durations and volume specs. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"

/* Parses a non-negative decimal number with an optional fraction; returns the
 * end pointer or NULL. Rejects signs, spaces and empty input. */
static const char *parse_number(const char *s, double *ret)
{
	if (!isdigit((unsigned char)s[0]))
		return NULL;
	const char *p = s;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (p - s > 30)
		return NULL;
	char tmp[32];
	memcpy(tmp, s, (size_t)(p - s));
	tmp[p - s] = 0;
	errno = 0;
	double v = strtod(tmp, NULL);
	if (errno || !isfinite(v))
		return NULL;
	*ret = v;
	return p;
}

_public_ int sbx_parse_size(const char *s, int64_t *ret, sbx_err **err)
{
	double v;
	const char *p = s ? parse_number(s, &v) : NULL;
	if (!p)
		goto bad;
	double mult = 1;
	switch (tolower((unsigned char)*p)) {
	case 0:
		break;
	case 'b':
		p++;
		break;
	case 'k':
		mult = 1024.0, p++;
		break;
	case 'm':
		mult = 1024.0 * 1024, p++;
		break;
	case 'g':
		mult = 1024.0 * 1024 * 1024, p++;
		break;
	case 't':
		mult = 1024.0 * 1024 * 1024 * 1024, p++;
		break;
	default:
		goto bad;
	}
	if (mult > 1 && (*p == 'i' || *p == 'I'))
		p++;
	if (mult > 1 && (*p == 'b' || *p == 'B'))
		p++;
	if (*p)
		goto bad;
	v *= mult;
	if (v >= (double)INT64_MAX)
		goto bad;
	*ret = (int64_t)v;
	return 0;
bad:
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "invalid size '%s': expected a number with an optional unit k, m, g or t (e.g. 512m)",
		       s ? s : "");
}

_public_ int sbx_parse_duration(const char *s, int64_t *ret, sbx_err **err)
{
	double v;
	const char *p = s ? parse_number(s, &v) : NULL;
	if (!p)
		goto bad;
	double mult;
	if (!*p || streq(p, "ms"))
		mult = 1;
	else if (streq(p, "s"))
		mult = 1000;
	else if (streq(p, "m") || streq(p, "min"))
		mult = 60000;
	else if (streq(p, "h"))
		mult = 3600000;
	else if (streq(p, "d"))
		mult = 86400000;
	else
		goto bad;
	v *= mult;
	if (v >= 1e15)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
			       "invalid duration '%s': too long (at most 10^15 ms, about 31000 years)", s);
	*ret = (int64_t)llround(v);
	return 0;
bad:
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "invalid duration '%s': expected a number of milliseconds, or a number with a unit "
		       "ms, s, m, h or d (e.g. 30s)",
		       s ? s : "");
}

static bool path_ok(const char *p)
{
	if (p[0] != '/')
		return false;
	/* No ".." components: a volume target must be a plain absolute path. */
	for (const char *c = p; (c = strstr(c, "..")); c += 2)
		if ((c == p || c[-1] == '/') && (c[2] == 0 || c[2] == '/'))
			return false;
	return strlen(p) < 4096;
}

_public_ int sbx_parse_volume(const char *s, char **ret_host, char **ret_path, bool *ret_ro, sbx_err **err)
{
	if (!s || !*s)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid volume '': expected HOST:PATH[:ro|rw]");
	_cleanup_free_ char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	char *host = copy, *path = strchr(copy, ':');
	if (!path)
		goto bad;
	*path++ = 0;
	char *mode = strchr(path, ':');
	bool ro = false;
	if (mode) {
		*mode++ = 0;
		if (streq(mode, "ro"))
			ro = true;
		else if (!streq(mode, "rw"))
			goto bad;
	}
	if (!*host || !path_ok(path) || host[0] != '/')
		goto bad;
	char *h = strdup(host), *p = strdup(path);
	if (!h || !p) {
		free(h);
		free(p);
		return -ENOMEM;
	}
	*ret_host = h;
	*ret_path = p;
	*ret_ro = ro;
	return 0;
bad:
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "invalid volume '%s': expected HOST:PATH[:ro|rw] with absolute paths and no '..'", s);
}

/* A decimal port in lo..65535, the whole of s (no sign, no spaces). */
static bool port_parse(const char *s, int lo, int *ret)
{
	if (!*s || strlen(s) > 5)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	long v = strtol(s, NULL, 10);
	if (v < lo || v > 65535)
		return false;
	*ret = (int)v;
	return true;
}

_public_ int sbx_parse_publish(const char *s, sbx_port_map *ret, sbx_err **err)
{
	if (!s || strlen(s) > 100)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid port mapping: expected [HOSTIP:]HOSTPORT:PORT");
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", s);
	sbx_port_map m = {.host_ip = "127.0.0.1"};
	char *ip = NULL, *rest = buf;
	if (buf[0] == '[') { /* [IPv6]:HOSTPORT:PORT */
		char *close = strchr(buf, ']');
		if (!close || close[1] != ':')
			goto bad;
		*close = 0;
		ip = buf + 1;
		rest = close + 2;
	}
	char *last = strrchr(rest, ':');
	if (!last)
		goto bad;
	*last = 0;
	const char *port = last + 1, *host_port = rest;
	char *mid = strrchr(rest, ':');
	if (mid) {
		if (ip) /* [IP]:A:B:C */
			goto bad;
		*mid = 0;
		ip = rest;
		host_port = mid + 1;
		if (strchr(ip, ':')) /* a bare IPv6 address: ambiguous without brackets */
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "invalid port mapping '%s': write an IPv6 address in brackets, "
				       "[::1]:HOSTPORT:PORT",
				       s);
	}
	if (ip && !*host_port) /* docker's IP::PORT: any free port */
		host_port = "0";
	if (!port_parse(port, 1, &m.port) || !port_parse(host_port, 0, &m.host_port))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid port mapping '%s': HOSTPORT must be 0-65535 (0: any free port) "
			       "and PORT 1-65535",
			       s);
	if (ip) {
		unsigned char a[16];
		bool v6 = buf[0] == '[';
		if (inet_pton(v6 ? AF_INET6 : AF_INET, ip, a) != 1)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "invalid port mapping '%s': '%s' is not a numeric IP%s address", s, ip,
				       v6 ? "v6" : "v4");
		/* The canonical form, so that duplicates compare equal. */
		if (!inet_ntop(v6 ? AF_INET6 : AF_INET, a, m.host_ip, sizeof(m.host_ip)))
			goto bad;
	}
	*ret = m;
	return 0;
bad:
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "invalid port mapping '%s': expected [HOSTIP:]HOSTPORT:PORT (e.g. 8080:80, "
		       "127.0.0.1:0:8000, [::1]:8080:80)",
		       s);
}
