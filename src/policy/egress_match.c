/* Egress allowlist parsing and matching (pure: no I/O, no DNS). */
#include "policy/egress_match.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "util/err.h"

static const char *const WHY_NO_RULE = "no rule allows it";
static const char *const WHY_NO_IP_RULE =
    "no rule allows it (an IP address is only allowed by an IP rule; name rules never match addresses)";
static const char *const WHY_PORT =
    "no rule allows this port for the host (a rule without a port allows only 80 and 443)";
static const char *const WHY_INTERNAL =
    "it resolves to an internal address (loopback, private or link-local), which only an IP rule allows";
static const char *const RULE_OPEN = "network internet (every public host)";
static const char *const RULE_PUBLIC = "public address";

/* Lowercases s into buf, drops one trailing dot. Returns the length or -1. */
static int lower_copy(const char *s, size_t n, char *buf, size_t cap)
{
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n + 1 > cap)
		return -1;
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[n] = 0;
	return (int)n;
}

/* Validates a normalized (lowercase, no trailing dot) host name. Returns NULL
 * if valid, else the reason. */
static const char *name_invalid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0)
		return "empty host name";
	if (n > EGRESS_HOST_MAX)
		return "host name longer than 253 characters";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return "non-ASCII host name: write internationalized names in punycode (xn--...)";
	const char *label = s, *last = s;
	for (const char *p = s;; p++) {
		if (*p == '.' || *p == 0) {
			size_t len = (size_t)(p - label);
			if (len == 0)
				return "empty label in host name";
			if (len > 63)
				return "label longer than 63 characters in host name";
			if (label[0] == '-' || label[len - 1] == '-')
				return "label starts or ends with '-' in host name";
			last = label;
			if (*p == 0)
				break;
			label = p + 1;
			continue;
		}
		if (*p == '*')
			return "'*' is only allowed as a leading '*.' label";
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
			return "invalid character in host name (letters, digits, '-' and '.' only)";
	}
	/* A name whose last label is numeric ("127.1", "0x7f.0.0.1") is an IPv4
	 * address in some resolver's eyes; so is anything inet_aton accepts. */
	bool numeric = true;
	for (const char *p = last; *p; p++)
		numeric &= isdigit((unsigned char)*p) != 0;
	struct in_addr a4;
	if (numeric || inet_aton(s, &a4))
		return "numeric host name: write IPv4 addresses as four decimal octets";
	return NULL;
}

/* Parses an IP literal (IPv6 without brackets). v4-mapped IPv6 becomes IPv4.
 * Returns 4, 16 or 0 (not an IP literal). */
static int ip_parse(const char *s, uint8_t addr[16])
{
	if (inet_pton(AF_INET, s, addr) == 1)
		return 4;
	struct in6_addr a6;
	if (inet_pton(AF_INET6, s, &a6) == 1) {
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(a6.s6_addr, mapped, 12) == 0) {
			memcpy(addr, a6.s6_addr + 12, 4);
			return 4;
		}
		memcpy(addr, a6.s6_addr, 16);
		return 16;
	}
	return 0;
}

static int bad(sbx_err **err, const char *pattern, const char *why)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s': %s", pattern, why);
}

int egress_rule_parse(const char *pattern, egress_rule *ret, sbx_err **err)
{
	if (!pattern)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "missing pattern");
	size_t len = strlen(pattern);
	if (len == 0)
		return bad(err, pattern, "empty pattern");
	if (len > EGRESS_PATTERN_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "pattern longer than %d characters",
			       EGRESS_PATTERN_MAX);
	egress_rule r = {.port = EGRESS_PORT_WEB};
	const char *host = pattern, *port = NULL;
	size_t hlen = len;
	if (pattern[0] == '[') {
		const char *close = strchr(pattern, ']');
		if (!close)
			return bad(err, pattern, "missing ']' after IPv6 address");
		host = pattern + 1;
		hlen = (size_t)(close - host);
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != 0)
			return bad(err, pattern, "unexpected text after ']'");
	} else {
		const char *c1 = strchr(pattern, ':'), *c2 = strrchr(pattern, ':');
		if (c1 && c1 == c2) {
			hlen = (size_t)(c1 - pattern);
			port = c1 + 1;
		}
		/* two or more colons and no brackets: a bare IPv6 literal, no port */
	}
	if (port) {
		if (streq(port, "*"))
			r.port = EGRESS_PORT_ANY;
		else {
			long v = 0;
			if (!*port || strlen(port) > 5)
				return bad(err, pattern, "port must be a number from 1 to 65535 or '*'");
			for (const char *p = port; *p; p++) {
				if (!isdigit((unsigned char)*p))
					return bad(err, pattern,
						   "port must be a number from 1 to 65535 or '*'");
				v = v * 10 + (*p - '0');
			}
			if (v < 1 || v > 65535)
				return bad(err, pattern, "port must be a number from 1 to 65535 or '*'");
			r.port = (int)v;
		}
	}
	if (hlen == 0)
		return bad(err, pattern, "empty host");
	char h[EGRESS_PATTERN_MAX + 1];
	if (lower_copy(host, hlen, h, sizeof(h)) < 0 || !h[0])
		return bad(err, pattern, "empty host");
	if (streq(h, "*") || (h[0] == '*' && h[1] == 0))
		return bad(err, pattern, "'*' is too broad: name hosts or use network mode open");
	int fam = ip_parse(h, r.addr);
	if (fam) {
		r.kind = fam == 4 ? EGRESS_RULE_IP4 : EGRESS_RULE_IP6;
		inet_ntop(fam == 4 ? AF_INET : AF_INET6, r.addr, r.host, sizeof(r.host));
	} else {
		if (pattern[0] == '[')
			return bad(err, pattern, "not an IPv6 address inside '[...]'");
		const char *name = h;
		if (startswith(h, "*.")) {
			r.kind = EGRESS_RULE_WILDCARD;
			name = h + 2;
			if (!strchr(name, '.'))
				return bad(err, pattern,
					   "wildcard over a top-level domain is too broad: name hosts or use "
					   "network mode open");
		} else
			r.kind = EGRESS_RULE_NAME;
		const char *why = name_invalid(name);
		if (why)
			return bad(err, pattern, why);
		if (strlen(name) > EGRESS_HOST_MAX)
			return bad(err, pattern, "host name longer than 253 characters");
		strcpy(r.host, name);
	}
	char portbuf[16] = "";
	if (r.port == EGRESS_PORT_ANY)
		strcpy(portbuf, ":*");
	else if (r.port > 0)
		snprintf(portbuf, sizeof(portbuf), ":%d", r.port);
	snprintf(r.text, sizeof(r.text), "%s%s%s%s%s", r.kind == EGRESS_RULE_WILDCARD ? "*." : "",
		 r.kind == EGRESS_RULE_IP6 ? "[" : "", r.host, r.kind == EGRESS_RULE_IP6 ? "]" : "", portbuf);
	*ret = r;
	return 0;
}

static int allowlist_parse(bool open, const char *const *patterns, egress_allowlist **ret, sbx_err **err)
{
	size_t n = 0;
	for (const char *const *p = patterns; p && *p; p++)
		n++;
	if (n > EGRESS_RULES_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "more than %d allowlist rules",
			       EGRESS_RULES_MAX);
	_cleanup_free_ egress_allowlist *al = calloc(1, sizeof(*al) + n * sizeof(egress_rule));
	if (!al)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	al->open = open;
	for (size_t i = 0; i < n; i++) {
		int r = egress_rule_parse(patterns[i], &al->rules[i], err);
		if (r < 0)
			return err_wrap(err, "[%zu]", i);
	}
	al->n = n;
	*ret = TAKE_PTR(al);
	return 0;
}

int egress_allowlist_parse(const char *const *patterns, egress_allowlist **ret, sbx_err **err)
{
	return allowlist_parse(false, patterns, ret, err);
}

int egress_allowlist_parse_open(const char *const *patterns, egress_allowlist **ret, sbx_err **err)
{
	return allowlist_parse(true, patterns, ret, err);
}

void egress_allowlist_free(egress_allowlist *al)
{
	free(al);
}

static bool port_matches(int rule_port, int port)
{
	if (rule_port == EGRESS_PORT_ANY)
		return true;
	if (rule_port == EGRESS_PORT_WEB)
		return port == 80 || port == 443;
	return rule_port == port;
}

/* Is `name` a strict subdomain of `suffix`? */
static bool is_subdomain(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s + 1 && name[n - s - 1] == '.' && memcmp(name + n - s, suffix, s) == 0;
}

int egress_host_normalize(const char *host, char *buf, size_t cap)
{
	if (!host)
		return -EINVAL;
	size_t n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n == 0 || n > EGRESS_HOST_MAX + 1 || lower_copy(host, n, buf, cap) <= 0)
		return -EINVAL;
	uint8_t a[16];
	if (ip_parse(buf, a))
		return 0;
	return name_invalid(buf) ? -EINVAL : 0;
}

int egress_check(const egress_allowlist *al, const char *host, int port, const char **ret_rule)
{
	const char *dummy;
	if (!ret_rule)
		ret_rule = &dummy;
	if (port < 1 || port > 65535) {
		*ret_rule = "invalid port";
		return -EINVAL;
	}
	char h[EGRESS_HOST_MAX + 2];
	if (egress_host_normalize(host, h, sizeof(h)) < 0) {
		*ret_rule = "invalid host";
		return -EINVAL;
	}
	uint8_t addr[16];
	int fam = ip_parse(h, addr);
	if (al && al->open) {
		*ret_rule = RULE_OPEN;
		return 1;
	}
	bool host_seen = false;
	for (size_t i = 0; al && i < al->n; i++) {
		const egress_rule *r = &al->rules[i];
		bool hm;
		switch (r->kind) {
		case EGRESS_RULE_NAME:
			hm = !fam && streq(r->host, h);
			break;
		case EGRESS_RULE_WILDCARD:
			hm = !fam && is_subdomain(h, r->host);
			break;
		case EGRESS_RULE_IP4:
			hm = fam == 4 && memcmp(r->addr, addr, 4) == 0;
			break;
		default:
			hm = fam == 16 && memcmp(r->addr, addr, 16) == 0;
			break;
		}
		if (!hm)
			continue;
		host_seen = true;
		if (port_matches(r->port, port)) {
			*ret_rule = r->text;
			return 1;
		}
	}
	*ret_rule = host_seen ? WHY_PORT : fam ? WHY_NO_IP_RULE : WHY_NO_RULE;
	return 0;
}

/* Extracts the address as IPv4 (4 bytes, also from v4-mapped/NAT64/6to4
 * forms where `embedded`) or IPv6 (16 bytes). Returns 4, 16 or 0. */
static int sa_addr(const struct sockaddr *sa, uint8_t out[16], int *ret_port)
{
	/* Read through memcpy: the object is a sockaddr_in, _in6 or _storage,
	 * and reading it through another struct type lets the compiler drop the
	 * caller's stores (strict aliasing; gcc 12 did, for a sockaddr_in built
	 * on the stack beside the call). */
	sa_family_t fam;
	memcpy(&fam, (const char *)sa + offsetof(struct sockaddr, sa_family), sizeof(fam));
	if (fam == AF_INET) {
		struct sockaddr_in s4;
		memcpy(&s4, sa, sizeof(s4));
		memcpy(out, &s4.sin_addr, 4);
		*ret_port = ntohs(s4.sin_port);
		return 4;
	}
	if (fam == AF_INET6) {
		struct sockaddr_in6 s6;
		memcpy(&s6, sa, sizeof(s6));
		memcpy(out, s6.sin6_addr.s6_addr, 16);
		*ret_port = ntohs(s6.sin6_port);
		static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(out, mapped, 12) == 0) {
			memmove(out, out + 12, 4);
			return 4;
		}
		return 16;
	}
	return 0;
}

static bool v4_internal(const uint8_t *a)
{
	uint32_t v = (uint32_t)a[0] << 24 | (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
	static const struct {
		uint32_t net;
		int bits;
	} nets[] = {
	    {0x00000000, 8},  {0x0a000000, 8},	{0x64400000, 10}, {0x7f000000, 8},  {0xa9fe0000, 16},
	    {0xac100000, 12}, {0xc0000000, 24}, {0xc0000200, 24}, {0xc0586300, 24}, {0xc0a80000, 16},
	    {0xc6120000, 15}, {0xc6336400, 24}, {0xcb007100, 24}, {0xe0000000, 4},  {0xf0000000, 4},
	};
	for (size_t i = 0; i < ARRAY_SIZE(nets); i++)
		if ((v >> (32 - nets[i].bits)) == (nets[i].net >> (32 - nets[i].bits)))
			return true;
	return false;
}

bool egress_addr_is_internal(const struct sockaddr *sa)
{
	uint8_t a[16];
	int port;
	int fam = sa ? sa_addr(sa, a, &port) : 0;
	if (fam == 4)
		return v4_internal(a);
	if (fam != 16)
		return true; /* not an IP address at all: never "public" */
	static const uint8_t zero12[12] = {0};
	if (memcmp(a, zero12, 12) == 0) /* ::, ::1, IPv4-compatible ::a.b.c.d */
		return true;
	if (a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xff && a[3] == 0x9b) /* 64:ff9b::/32 (NAT64 + local) */
		return true;
	if (a[0] == 0x01 && a[1] == 0x00 && !a[2] && !a[3] && !a[4] && !a[5] && !a[6] && !a[7]) /* 100::/64 */
		return true;
	if (a[0] == 0x20 && a[1] == 0x01 && (a[2] == 0x0d && a[3] == 0xb8)) /* 2001:db8::/32 */
		return true;
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) /* Teredo 2001::/32 */
		return true;
	if (a[0] == 0x20 && a[1] == 0x02) /* 6to4 embeds an IPv4 address */
		return v4_internal(a + 2);
	if ((a[0] & 0xfe) == 0xfc) /* fc00::/7 ULA */
		return true;
	if (a[0] == 0xfe && (a[1] & 0x80) == 0x80) /* fe80::/10 link-local, fec0::/10 site-local */
		return true;
	if (a[0] == 0xff) /* multicast */
		return true;
	return false;
}

int egress_check_addr(const egress_allowlist *al, const struct sockaddr *sa, const char **ret_rule)
{
	const char *dummy;
	if (!ret_rule)
		ret_rule = &dummy;
	if (!egress_addr_is_internal(sa)) {
		*ret_rule = RULE_PUBLIC;
		return 1;
	}
	uint8_t a[16];
	int port = 0;
	int fam = sa ? sa_addr(sa, a, &port) : 0;
	for (size_t i = 0; fam && al && i < al->n; i++) {
		const egress_rule *r = &al->rules[i];
		if (((fam == 4 && r->kind == EGRESS_RULE_IP4 && memcmp(r->addr, a, 4) == 0) ||
		     (fam == 16 && r->kind == EGRESS_RULE_IP6 && memcmp(r->addr, a, 16) == 0)) &&
		    port_matches(r->port, port)) {
			*ret_rule = r->text;
			return 1;
		}
	}
	*ret_rule = WHY_INTERNAL;
	return 0;
}

static bool port_covers(int outer, int inner)
{
	if (outer == EGRESS_PORT_ANY)
		return true;
	if (inner == EGRESS_PORT_ANY)
		return false;
	if (outer == EGRESS_PORT_WEB)
		return inner == EGRESS_PORT_WEB || inner == 80 || inner == 443;
	if (inner == EGRESS_PORT_WEB)
		return false;
	return outer == inner;
}

bool egress_rule_public(const egress_rule *r)
{
	if (r->kind == EGRESS_RULE_IP4) {
		struct sockaddr_in s4 = {.sin_family = AF_INET};
		memcpy(&s4.sin_addr, r->addr, 4);
		return !egress_addr_is_internal((const struct sockaddr *)&s4);
	}
	if (r->kind == EGRESS_RULE_IP6) {
		struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
		memcpy(&s6.sin6_addr, r->addr, 16);
		return !egress_addr_is_internal((const struct sockaddr *)&s6);
	}
	return true;
}

bool egress_rule_within(const egress_rule *r, bool internet, const char *const *patterns)
{
	if (internet && egress_rule_public(r))
		return true;
	for (; patterns && *patterns; patterns++) {
		egress_rule o;
		if (egress_rule_parse(*patterns, &o, NULL) == 0 && egress_rule_covers(&o, r))
			return true;
	}
	return false;
}

bool egress_rule_covers(const egress_rule *outer, const egress_rule *inner)
{
	if (!port_covers(outer->port, inner->port))
		return false;
	switch (outer->kind) {
	case EGRESS_RULE_NAME:
		return inner->kind == EGRESS_RULE_NAME && streq(outer->host, inner->host);
	case EGRESS_RULE_WILDCARD:
		if (inner->kind == EGRESS_RULE_NAME)
			return is_subdomain(inner->host, outer->host);
		if (inner->kind == EGRESS_RULE_WILDCARD)
			return streq(inner->host, outer->host) || is_subdomain(inner->host, outer->host);
		return false;
	case EGRESS_RULE_IP4:
		return inner->kind == EGRESS_RULE_IP4 && memcmp(outer->addr, inner->addr, 4) == 0;
	default:
		return inner->kind == EGRESS_RULE_IP6 && memcmp(outer->addr, inner->addr, 16) == 0;
	}
}
