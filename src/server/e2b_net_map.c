/* E2B's network requests as sbx egress rules, and the server's cap
 * (e2b_net_map.h has the whole contract). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/egress_match.h"
#include "server/e2b_net_map.h"
#include "util/macro.h"

#define ALL_TRAFFIC4 "0.0.0.0/0"
#define ALL_TRAFFIC6 "::/0"

void e2b_net_clear(e2b_net *n)
{
	if (!n)
		return;
	strv_free(n->allow);
	*n = (e2b_net){0};
}

static int fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && cap)
		vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool all_traffic(const char *s)
{
	return streq(s, ALL_TRAFFIC4) || streq(s, ALL_TRAFFIC6);
}

/* An IP literal, or a CIDR of one: 1 with the address text in buf (IPv6 in
 * brackets) and *prefix the prefix length (32/128 when none); 0 if s is
 * not an address at all; -EINVAL for a malformed range. */
static int parse_addr(const char *s, char *buf, size_t cap, int *prefix, bool *v6)
{
	char a[64];
	const char *slash = strchr(s, '/');
	size_t len = slash ? (size_t)(slash - s) : strlen(s);
	if (len == 0 || len >= sizeof(a))
		return slash ? -EINVAL : 0;
	memcpy(a, s, len);
	a[len] = 0;
	unsigned char bin[16];
	if (inet_pton(AF_INET, a, bin) == 1)
		*v6 = false;
	else if (inet_pton(AF_INET6, a, bin) == 1)
		*v6 = true;
	else
		return slash ? -EINVAL : 0;
	int max = *v6 ? 128 : 32;
	*prefix = max;
	if (slash) {
		char *end = NULL;
		errno = 0;
		long p = slash[1] >= '0' && slash[1] <= '9' ? strtol(slash + 1, &end, 10) : -1;
		if (!end || *end || errno || p < 0 || p > max)
			return -EINVAL;
		*prefix = (int)p;
	}
	snprintf(buf, cap, *v6 ? "[%s]" : "%s", a);
	return 1;
}

static int push(e2b_net *n, const char *s)
{
	return strv_push_copy(&n->allow, &n->n, s) < 0 ? -ENOMEM : 0;
}

/* One allowOut entry onto ret's list; *open set by ALL_TRAFFIC. */
static int map_allow(const char *s, size_t i, e2b_net *ret, bool *open, char *why, size_t cap)
{
	if (all_traffic(s)) {
		*open = true;
		return 0;
	}
	char addr[80], pat[EGRESS_PATTERN_MAX + 8];
	int prefix;
	bool v6;
	int a = parse_addr(s, addr, sizeof(addr), &prefix, &v6);
	if (a < 0)
		return fail(why, cap,
			    "network.allowOut[%zu] '%.100s': not an address, a range or a host name", i, s);
	if (a > 0) {
		if (prefix != (v6 ? 128 : 32))
			return fail(why, cap,
				    "network.allowOut[%zu] '%.100s': an address range, which sbx's egress "
				    "proxy cannot enforce (it allows host names and single addresses: list "
				    "them, or allow all traffic with ALL_TRAFFIC)",
				    i, s);
		snprintf(pat, sizeof(pat), "%s:*", addr);
	} else if (strchr(s, ':') || strlen(s) > EGRESS_PATTERN_MAX)
		snprintf(pat, sizeof(pat), "%.*s", EGRESS_PATTERN_MAX + 1, s); /* sbx's host:port */
	else
		snprintf(pat, sizeof(pat), "%s:*", s); /* E2B's rules cover every port */
	egress_rule r;
	sbx_err *e = NULL;
	if (egress_rule_parse(pat, &r, &e) < 0) {
		fail(why, cap, "network.allowOut[%zu] '%.100s': %s", i, s, sbx_err_message(e));
		sbx_err_free(e);
		return -EINVAL;
	}
	return push(ret, r.text);
}

/* A JSON array of strings (or absent/null: *ret_arr NULL). */
static int strings(const json_t *v, const char *name, const json_t **ret_arr, char *why, size_t cap)
{
	*ret_arr = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return fail(why, cap, "%s: an array of strings", name);
	if (json_array_size(v) > EGRESS_RULES_MAX)
		return fail(why, cap, "%s: at most %d entries", name, EGRESS_RULES_MAX);
	size_t i;
	const json_t *x;
	json_array_foreach(v, i, x) if (!json_is_string(x)) return fail(why, cap, "%s[%zu]: a string", name,
									i);
	*ret_arr = v;
	return 0;
}

/* The fields sbx cannot honour: each is refused rather than ignored. */
static int unsupported(const json_t *net, bool update, char *why, size_t cap)
{
	const json_t *rules = json_object_get(net, "rules");
	if (rules && !json_is_null(rules) && !(json_is_object(rules) && json_object_size(rules) == 0))
		return fail(why, cap,
			    "network.rules: request transforms (headers added on the way out) are not "
			    "supported by sbx's egress proxy");
	const json_t *px = json_object_get(net, "egressProxy");
	if (px && !json_is_null(px))
		return fail(why, cap, "network.egressProxy: sbx cannot tunnel egress through a SOCKS5 proxy");
	if (update)
		return 0;
	const json_t *hp = json_object_get(net, "httpsPorts");
	if (hp && !json_is_null(hp) && !(json_is_array(hp) && json_array_size(hp) == 0))
		return fail(why, cap,
			    "network.httpsPorts: sbx's port proxy speaks plain HTTP to the sandbox");
	const json_t *mh = json_object_get(net, "maskRequestHost");
	if (mh && !json_is_null(mh))
		return fail(why, cap,
			    "network.maskRequestHost: sbx's port proxy passes the client's Host "
			    "unchanged and cannot mask it");
	const json_t *pub = json_object_get(net, "allowPublicTraffic");
	if (pub && !json_is_null(pub) && !json_is_boolean(pub))
		return fail(why, cap, "network.allowPublicTraffic: true or false");
	if (json_is_true(pub))
		return fail(why, cap,
			    "network.allowPublicTraffic: true: sbx's sandbox ports always need the "
			    "sandbox's token (its traffic token will do); create with false or leave it "
			    "out");
	return 0;
}

int e2b_net_map(const json_t *body, bool update, e2b_net *ret, char *why, size_t cap)
{
	if (body && !json_is_object(body))
		return fail(why, cap, "the body: a JSON object");
	const json_t *net = update ? body : json_object_get(body, "network");
	if (net && !json_is_null(net) && !json_is_object(net))
		return fail(why, cap, "network: an object");
	if (json_is_null(net))
		net = NULL;
	const json_t *inet = json_object_get(body, "allow_internet_access");
	if (inet && !json_is_null(inet) && !json_is_boolean(inet))
		return fail(why, cap, "allow_internet_access: true or false");
	int r = unsupported(net, update, why, cap);
	if (r < 0)
		return r;
	const json_t *allow, *deny;
	if ((r = strings(json_object_get(net, "allowOut"), "network.allowOut", &allow, why, cap)) < 0 ||
	    (r = strings(json_object_get(net, "denyOut"), "network.denyOut", &deny, why, cap)) < 0)
		return r;

	bool deny_all = json_is_false(inet), partial = false, open = false;
	const char *first_partial = NULL;
	size_t i;
	const json_t *x;
	json_array_foreach(deny, i, x)
	{
		const char *s = json_string_value(x);
		char addr[80];
		int prefix;
		bool v6;
		if (all_traffic(s)) {
			deny_all = true;
			continue;
		}
		if (parse_addr(s, addr, sizeof(addr), &prefix, &v6) <= 0)
			return fail(why, cap,
				    "network.denyOut[%zu] '%.100s': not an address or range (E2B denies "
				    "addresses only)",
				    i, s);
		if (!partial)
			first_partial = s;
		partial = true;
	}
	e2b_net n = {.mode = E2B_NET_ALLOW};
	json_array_foreach(allow, i, x)
	{
		if ((r = map_allow(json_string_value(x), i, &n, &open, why, cap)) < 0) {
			e2b_net_clear(&n);
			return r;
		}
	}
	if (!open && !deny_all && partial) {
		e2b_net_clear(&n);
		return fail(why, cap,
			    "network.denyOut '%.100s': sbx cannot deny part of the internet and allow the "
			    "rest (its egress is an allowlist): deny all traffic (ALL_TRAFFIC) and list "
			    "what is allowed in allowOut",
			    first_partial);
	}
	if (open || (!deny_all && (json_is_true(inet) || n.n > 0 || update))) {
		e2b_net_clear(&n);
		n.mode = E2B_NET_OPEN;
	} else if (!deny_all) {
		e2b_net_clear(&n); /* create without a word about the network */
		n.mode = E2B_NET_DEFAULT;
	}
	n.internet = n.mode == E2B_NET_OPEN;
	*ret = n;
	return 0;
}

int e2b_net_cap_parse(const json_t *network, e2b_net *ret, char *why, size_t cap)
{
	const char *mode = json_string_value(json_object_get(network, "mode"));
	e2b_net n = {.mode = E2B_NET_NONE};
	if (!network || !mode || streq(mode, "none")) {
		*ret = n;
		return 0;
	}
	if (streq(mode, "open")) {
		/* every public host; its list: the internal addresses it adds */
		n.mode = E2B_NET_OPEN;
		n.internet = true;
	} else if (streq(mode, "allow"))
		n.mode = E2B_NET_ALLOW;
	else
		return fail(why, cap, "network.mode '%.32s': none, allow or open", mode);
	size_t i;
	const json_t *x;
	json_array_foreach(json_object_get(network, "allow"), i, x)
	{
		egress_rule r;
		if (!json_is_string(x) || egress_rule_parse(json_string_value(x), &r, NULL) < 0 ||
		    push(&n, r.text) < 0) {
			e2b_net_clear(&n);
			return fail(why, cap, "network.allow[%zu]: not an egress pattern", i);
		}
	}
	*ret = n;
	return 0;
}

static void describe(const e2b_net *cap, char *buf, size_t n)
{
	if (cap->mode == E2B_NET_OPEN) {
		snprintf(buf, n, "every public host");
		return;
	}
	if (cap->mode != E2B_NET_ALLOW || cap->n == 0) {
		snprintf(buf, n, "no network");
		return;
	}
	size_t w = (size_t)snprintf(buf, n, "only ");
	for (size_t i = 0; i < cap->n && w < n; i++)
		w += (size_t)snprintf(buf + w, n - w, "%s%s", i ? ", " : "", cap->allow[i]);
	if (w >= n && n > 4)
		memcpy(buf + n - 4, "...", 4);
}

int e2b_net_within(const e2b_net *cap, const e2b_net *req, const char *cap_name, char *why, size_t n)
{
	char d[512];
	describe(cap, d, sizeof(d));
	if (req->mode == E2B_NET_DEFAULT || req->mode == E2B_NET_NONE ||
	    (cap->mode == E2B_NET_OPEN && req->mode == E2B_NET_OPEN))
		return 0;
	if (req->mode == E2B_NET_OPEN) {
		snprintf(why, n,
			 "network: the request allows all traffic (allow_internet_access true, ALL_TRAFFIC "
			 "in allowOut, or allowOut without denyOut ALL_TRAFFIC, or an update that clears "
			 "every rule), beyond this server's cap (%s: %s); ask for hosts with allowOut and "
			 "denyOut [ALL_TRAFFIC]",
			 cap_name, d);
		return -EPERM;
	}
	for (size_t i = 0; i < req->n; i++) {
		/* Under open, an internal address needs the cap's own IP rule. */
		egress_rule r;
		if (egress_rule_parse(req->allow[i], &r, NULL) < 0 ||
		    !egress_rule_within(&r, cap->mode == E2B_NET_OPEN, (const char *const *)cap->allow)) {
			snprintf(why, n, "network.allowOut: '%s' is beyond this server's cap (%s: %s)%s",
				 req->allow[i], cap_name, d,
				 strstr(req->allow[i], ":*") ? "; E2B's rules cover every port: ask for one "
							       "as host:port"
							     : "");
			return -EPERM;
		}
	}
	return 0;
}
