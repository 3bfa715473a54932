/* Pure parsers of the egress proxy: HTTP request head and TLS SNI. */
#include "policy/proxy_parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/err.h"
#include "util/macro.h"

void proxy_request_done(proxy_request *req)
{
	if (req) {
		free(req->origin_head);
		req->origin_head = NULL;
	}
}

static int bad(sbx_err **err, const char *msg)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s", msg);
}

/* Splits "host[:port]" or "[v6][:port]" (n bytes) into a normalized host and a
 * port (dflt if absent; -1 required but absent). Returns 0 or -EINVAL. */
static int authority_split(const char *s, size_t n, int dflt, char *host, size_t cap, int *ret_port)
{
	const char *h = s, *colon = NULL;
	size_t hn;
	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close)
			return -EINVAL;
		hn = (size_t)(close - s) + 1;
		if (hn < n) {
			if (s[hn] != ':')
				return -EINVAL;
			colon = s + hn;
		}
	} else {
		colon = memchr(s, ':', n);
		hn = colon ? (size_t)(colon - s) : n;
	}
	int port = dflt;
	if (colon) {
		const char *p = colon + 1, *end = s + n;
		if (p == end || end - p > 5)
			return -EINVAL;
		port = 0;
		for (; p < end; p++) {
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			port = port * 10 + (*p - '0');
		}
	}
	if (port < 1 || port > 65535 || hn == 0 || hn > EGRESS_HOST_MAX + 3)
		return -EINVAL;
	char tmp[EGRESS_HOST_MAX + 4];
	memcpy(tmp, h, hn);
	tmp[hn] = 0;
	if (egress_host_normalize(tmp, host, cap) < 0)
		return -EINVAL;
	*ret_port = port;
	return 0;
}

static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c);
}

static bool hop_by_hop(const char *name, size_t n)
{
	static const char *const drop[] = {
	    "proxy-connection", "proxy-authorization", "connection", "keep-alive", "upgrade", "te",
	    "trailer",		"proxy-authenticate"};
	for (size_t i = 0; i < ARRAY_SIZE(drop); i++)
		if (strlen(drop[i]) == n && strncasecmp(name, drop[i], n) == 0)
			return true;
	return false;
}

int proxy_request_parse(const char *buf, size_t len, proxy_request *ret, sbx_err **err)
{
	const char *end = NULL;
	for (size_t i = 0; i + 3 < len && i + 3 < PROXY_HEAD_MAX; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') {
			end = buf + i + 2; /* end of the last header line's CRLF */
			break;
		}
	if (!end) {
		if (len >= PROXY_HEAD_MAX)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "request head larger than %d bytes",
				       PROXY_HEAD_MAX);
		if (memchr(buf, 0, len))
			return bad(err, "NUL byte in request head");
		return 0;
	}
	size_t head_len = (size_t)(end - buf) + 2;
	for (const char *p = buf; p < end; p++)
		if (*p == 0 || (*p == '\n' && (p == buf || p[-1] != '\r')) || (*p == '\r' && p[1] != '\n'))
			return bad(err, "malformed request head (bare CR, LF or NUL)");
	/* request line */
	const char *line_end = strstr(buf, "\r\n");
	const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
	if (!sp1)
		return bad(err, "malformed request line");
	const char *target = sp1 + 1;
	const char *sp2 = memchr(target, ' ', (size_t)(line_end - target));
	if (!sp2 || sp2 == target)
		return bad(err, "malformed request line");
	size_t mlen = (size_t)(sp1 - buf), tlen = (size_t)(sp2 - target);
	const char *version = sp2 + 1;
	size_t vlen = (size_t)(line_end - version);
	if (mlen == 0 || mlen > 15)
		return bad(err, "malformed request method");
	for (size_t i = 0; i < mlen; i++)
		if (!isupper((unsigned char)buf[i]))
			return bad(err, "malformed request method");
	if (!(vlen == 8 && (memcmp(version, "HTTP/1.1", 8) == 0 || memcmp(version, "HTTP/1.0", 8) == 0)))
		return bad(err, "unsupported HTTP version (HTTP/1.0 or HTTP/1.1 only)");

	proxy_request r = {0};
	r.head_len = head_len;
	const char *path = NULL;
	size_t plen = 0;
	if (mlen == 7 && memcmp(buf, "CONNECT", 7) == 0) {
		r.kind = PROXY_REQ_CONNECT;
		if (authority_split(target, tlen, -1, r.host, sizeof(r.host), &r.port) < 0)
			return bad(err,
				   "CONNECT needs host:port with a valid host and a port from 1 to 65535");
	} else {
		r.kind = PROXY_REQ_HTTP;
		if (tlen >= 8 && strncasecmp(target, "https://", 8) == 0)
			return bad(err, "https:// URLs go through CONNECT (set HTTPS_PROXY)");
		if (!(tlen >= 7 && strncasecmp(target, "http://", 7) == 0))
			return bad(err, "this is a proxy: send CONNECT host:port or an absolute URI "
					"(GET http://host/path)");
		const char *auth = target + 7, *tend = target + tlen, *a = auth;
		while (a < tend && *a != '/' && *a != '?' && *a != '#')
			a++;
		if (memchr(auth, '@', (size_t)(a - auth)))
			return bad(err, "credentials in the URI are not supported");
		if (memchr(target, '#', tlen))
			return bad(err, "fragment in the request URI");
		if (authority_split(auth, (size_t)(a - auth), 80, r.host, sizeof(r.host), &r.port) < 0)
			return bad(err, "invalid host or port in the request URI");
		path = a;
		plen = (size_t)(tend - a);
	}

	/* headers */
	size_t cap = head_len + 512 + EGRESS_HOST_MAX;
	_cleanup_free_ char *out = r.kind == PROXY_REQ_HTTP ? malloc(cap) : NULL;
	size_t o = 0;
	if (r.kind == PROXY_REQ_HTTP) {
		if (!out)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
		o += (size_t)snprintf(out, cap, "%.*s %s%.*s %.*s\r\n", (int)mlen, buf, plen ? "" : "/",
				      (int)plen, path ? path : "", (int)vlen, version);
	}
	int n_host = 0, n_headers = 0;
	for (const char *l = line_end + 2; l < end; l = strstr(l, "\r\n") + 2) {
		const char *le = strstr(l, "\r\n");
		if (++n_headers > 100)
			return bad(err, "more than 100 header fields");
		if (*l == ' ' || *l == '\t')
			return bad(err, "obsolete header line folding");
		const char *colon = memchr(l, ':', (size_t)(le - l));
		if (!colon || colon == l)
			return bad(err, "malformed header field");
		for (const char *c = l; c < colon; c++)
			if (!is_tchar(*c))
				return bad(err, "malformed header field name");
		size_t nlen = (size_t)(colon - l);
		const char *v = colon + 1, *ve = le;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		if (nlen == 4 && strncasecmp(l, "host", 4) == 0) {
			if (++n_host > 1)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
					       "more than one Host header");
			char hh[EGRESS_HOST_MAX + 2];
			int hp;
			if (r.kind == PROXY_REQ_HTTP &&
			    (authority_split(v, (size_t)(ve - v), 80, hh, sizeof(hh), &hp) < 0 ||
			     !streq(hh, r.host) || hp != r.port))
				return err_set(
				    err, SBX_E_INVALID_ARGUMENT, EPERM,
				    "Host header '%.*s' disagrees with the request URI host '%s:%d'",
				    (int)((ve - v) > 300 ? 300 : (ve - v)), v, r.host, r.port);
		}
		if (r.kind == PROXY_REQ_HTTP && !hop_by_hop(l, nlen)) {
			memcpy(out + o, l, (size_t)(le - l) + 2);
			o += (size_t)(le - l) + 2;
		}
	}
	if (r.kind == PROXY_REQ_HTTP) {
		if (!n_host) {
			bool v6 = strchr(r.host, ':') != NULL;
			o += (size_t)snprintf(out + o, cap - o, "Host: %s%s%s", v6 ? "[" : "", r.host,
					      v6 ? "]" : "");
			if (r.port != 80)
				o += (size_t)snprintf(out + o, cap - o, ":%d", r.port);
			o += (size_t)snprintf(out + o, cap - o, "\r\n");
		}
		o += (size_t)snprintf(out + o, cap - o, "Connection: close\r\n\r\n");
		r.origin_head_len = o;
		r.origin_head = TAKE_PTR(out);
	}
	*ret = r;
	return 1;
}

static uint32_t be16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}
static uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

int proxy_tls_sni(const uint8_t *buf, size_t len, char *ret, size_t cap)
{
	/* Reassemble the handshake payload of consecutive handshake records
	 * (On the heap: a static thread-local buffer of this size made every
	 * thread of every sbx process, the CLI's included, zero 64 KiB of TLS
	 * at its start.) */
	_cleanup_free_ uint8_t *hs = malloc(PROXY_HELLO_MAX);
	if (!hs)
		return -ENOMEM;
	size_t hn = 0, off = 0;
	size_t need = 0; /* handshake bytes needed, once known */
	for (;;) {
		if (need && hn >= need)
			break;
		if (len - off < 5) {
			if (off + 5 > PROXY_HELLO_MAX)
				return -E2BIG;
			/* check what we have of the header */
			if (len > off && buf[off] != 0x16)
				return -EINVAL;
			return -EAGAIN;
		}
		const uint8_t *rec = buf + off;
		if (rec[0] != 0x16 || rec[1] != 0x03)
			return -EINVAL;
		uint32_t rlen = be16(rec + 3);
		if (rlen == 0 || rlen > 16384 + 2048)
			return -EINVAL;
		if (off + 5 + rlen > PROXY_HELLO_MAX || hn + rlen > PROXY_HELLO_MAX)
			return -E2BIG;
		if (len - off - 5 < rlen) {
			/* a partial first record still tells us it is a ClientHello */
			if (hn == 0 && len - off - 5 >= 1 && rec[5] != 0x01)
				return -EINVAL;
			return -EAGAIN;
		}
		memcpy(hs + hn, rec + 5, rlen);
		hn += rlen;
		off += 5 + rlen;
		if (!need && hn >= 4) {
			if (hs[0] != 0x01)
				return -EINVAL;
			need = 4 + be24(hs + 1);
			if (need > PROXY_HELLO_MAX)
				return -E2BIG;
		}
	}
	const uint8_t *p = hs + 4, *e = hs + need;
	/* legacy_version(2) random(32) */
	if (e - p < 34)
		return -EINVAL;
	p += 34;
	/* session id */
	if (e - p < 1 || e - p - 1 < p[0] || p[0] > 32)
		return -EINVAL;
	p += 1 + p[0];
	/* cipher suites */
	if (e - p < 2)
		return -EINVAL;
	uint32_t n = be16(p);
	if (n < 2 || (n & 1) || (uint32_t)(e - p - 2) < n)
		return -EINVAL;
	p += 2 + n;
	/* compression methods */
	if (e - p < 1 || (uint32_t)(e - p - 1) < p[0] || p[0] < 1)
		return -EINVAL;
	p += 1 + p[0];
	if (p == e)
		return 0; /* no extensions */
	if (e - p < 2)
		return -EINVAL;
	n = be16(p);
	p += 2;
	if ((uint32_t)(e - p) < n)
		return -EINVAL;
	e = p + n;
	while (p < e) {
		if (e - p < 4)
			return -EINVAL;
		uint32_t type = be16(p), elen = be16(p + 2);
		p += 4;
		if ((uint32_t)(e - p) < elen)
			return -EINVAL;
		if (type == 0) { /* server_name */
			const uint8_t *q = p, *qe = p + elen;
			if (qe - q < 2 || be16(q) != (uint32_t)(qe - q - 2))
				return -EINVAL;
			q += 2;
			while (q < qe) {
				if (qe - q < 3)
					return -EINVAL;
				uint32_t nt = q[0], nl = be16(q + 1);
				q += 3;
				if ((uint32_t)(qe - q) < nl)
					return -EINVAL;
				if (nt == 0) {
					if (nl == 0 || nl >= cap || memchr(q, 0, nl))
						return -EINVAL;
					memcpy(ret, q, nl);
					ret[nl] = 0;
					return 1;
				}
				q += nl;
			}
			return -EINVAL;
		}
		p += elen;
	}
	return 0;
}
