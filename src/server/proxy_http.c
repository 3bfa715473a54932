/* The E2B port proxy's head handling (proxy_http.h). Pure. */
#include "server/proxy_http.h"

#include <string.h>
#include <strings.h>

#include "util/macro.h"

bool proxy_token_in(const char *list, const char *token)
{
	size_t tn = strlen(token);
	for (const char *p = list; p && *p;) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, ",");
		size_t m = n;
		while (m > 0 && (p[m - 1] == ' ' || p[m - 1] == '\t'))
			m--;
		if (m == tn && strncasecmp(p, token, tn) == 0)
			return true;
		p += n;
	}
	return false;
}

static bool hop_by_hop(const char *name)
{
	static const char *const hop[] = {"Connection",
					  "Keep-Alive",
					  "Proxy-Connection",
					  "TE",
					  "Trailer",
					  "Transfer-Encoding",
					  "Upgrade",
					  "Proxy-Authorization",
					  "Proxy-Authenticate",
					  "Content-Length"};
	for (size_t i = 0; i < ARRAY_SIZE(hop); i++)
		if (strcasecmp(name, hop[i]) == 0)
			return true;
	return false;
}

bool proxy_req_header_kept(const char *name, const char *connection)
{
	static const char *const ours[] = {"E2b-Sandbox-Id", "E2b-Sandbox-Port", "X-Access-Token",
					   "E2b-Traffic-Access-Token"};
	for (size_t i = 0; i < ARRAY_SIZE(ours); i++)
		if (strcasecmp(name, ours[i]) == 0)
			return false;
	return !hop_by_hop(name) && !proxy_token_in(connection, name);
}

bool proxy_resp_header_kept(const char *name, const char *connection, bool upgrade)
{
	if (upgrade && strcasecmp(name, "Upgrade") == 0)
		return true;
	return !hop_by_hop(name) && !proxy_token_in(connection, name);
}

static bool line_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

int proxy_req_start(strbuf *b, const char *method, const char *path)
{
	if (!*method || !line_safe(method) || path[0] != '/' || !line_safe(path))
		return -1;
	strbuf_addf(b, "%s %s", method, path);
	return 0;
}

static void pct_add(strbuf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '_' || c == '.' || c == '~') {
			char ch = (char)c;
			strbuf_add(b, &ch, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};
			strbuf_add(b, e, 3);
		}
	}
}

void proxy_req_query(strbuf *b, bool first, const char *name, const char *value)
{
	strbuf_add(b, first ? "?" : "&", 1);
	pct_add(b, name);
	if (value) {
		strbuf_lit(b, "=");
		pct_add(b, value);
	}
}

void proxy_req_line_end(strbuf *b)
{
	strbuf_lit(b, " HTTP/1.1\r\n");
}

int proxy_req_header(strbuf *b, const char *name, const char *value)
{
	if (!*name || strpbrk(name, " \t\r\n:") || strpbrk(value, "\r\n"))
		return -1;
	strbuf_addf(b, "%s: %s\r\n", name, value);
	return 0;
}

void proxy_req_end(strbuf *b, size_t body_len, bool with_length, const char *upgrade)
{
	if (with_length || body_len)
		strbuf_addf(b, "Content-Length: %zu\r\n", body_len);
	if (upgrade)
		strbuf_addf(b, "Connection: Upgrade\r\nUpgrade: %s\r\n\r\n", upgrade);
	else
		strbuf_lit(b, "Connection: close\r\n\r\n");
}

static bool tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

ssize_t proxy_resp_head(const char *buf, size_t len, int *ret_status, proxy_header_fn fn, void *ud)
{
	size_t lim = len < PROXY_HEAD_MAX ? len : PROXY_HEAD_MAX;
	/* The end of the head: an empty line (CRLF or bare LF ends). */
	size_t end = 0;
	for (size_t i = 0; i < lim && !end; i++)
		if (buf[i] == '\n' &&
		    ((i >= 1 && buf[i - 1] == '\n') || (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')))
			end = i + 1;
	if (!end)
		return len >= PROXY_HEAD_MAX ? -1 : 0;
	/* Status line: HTTP/1.x DDD[ reason] */
	if (end < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ')
		return -1;
	int st = 0;
	for (int i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		st = st * 10 + (buf[i] - '0');
	}
	if (st < 100 || st > 599 || (buf[12] != ' ' && buf[12] != '\r' && buf[12] != '\n'))
		return -1;
	const char *p = memchr(buf, '\n', end);
	for (p++; p < buf + end;) {
		const char *nl = memchr(p, '\n', (size_t)(buf + end - p));
		size_t n = (size_t)(nl - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (n == 0)
			break;
		size_t k = 0;
		while (k < n && tchar(p[k]))
			k++;
		if (k == 0 || k == n || p[k] != ':')
			return -1;
		const char *v = p + k + 1, *ve = p + n;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *c = v; c < ve; c++)
			if ((unsigned char)*c < ' ' && *c != '\t')
				return -1;
		if (fn)
			fn(ud, p, k, v, (size_t)(ve - v));
		p = nl + 1;
	}
	*ret_status = st;
	return (ssize_t)end;
}
