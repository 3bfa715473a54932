/* Egress allowlist: host[:port] patterns and the pure decision whether a
 * connection target is allowed (no I/O, no DNS; unit-tested and fuzzed).
 *
 * Pattern forms (case-insensitive; a trailing dot is dropped):
 *   example.com          exactly that name
 *   *.example.com        any subdomain of example.com, NOT example.com itself
 *   1.2.3.4, [2001:db8::1]   an IP literal (IPv6 in brackets when a port follows;
 *                        a bare IPv6 literal without port is accepted too)
 *   ...:443              one port; ...:* any port
 * Without a port a rule allows the web ports 80 and 443 only.
 * Rejected: "*", "*:443", "*.com"-style single-label wildcards (too broad: name
 * hosts or use network mode "open"), non-ASCII names (write IDNs in punycode,
 * xn--...), numeric-looking names ("127.1"), ports outside 1-65535, names over
 * 253 characters or labels over 63.
 *
 * A name rule never allows an IP literal target and an IP rule never allows a
 * name: CONNECT 93.184.216.34:443 needs an IP rule even if example.com resolves
 * there. Resolved addresses of names pass egress_check_addr(): addresses that
 * are loopback, private, link-local, multicast or otherwise internal are only
 * reachable when an IP rule allows them explicitly (SSRF protection). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "sbx.h"

/* Network modes whose only route out is the egress proxy: "allow" (to an
 * allowlist) and "internet" (every public host and port:
 * egress_allowlist_parse_open). "none" has no route, "open" is the host's. */
static inline bool net_proxied(const char *mode)
{
	return mode && (strcmp(mode, "allow") == 0 || strcmp(mode, "internet") == 0);
}

#define EGRESS_HOST_MAX 253
#define EGRESS_PATTERN_MAX 300
#define EGRESS_RULES_MAX 1024

typedef enum egress_rule_kind {
	EGRESS_RULE_NAME,     /* exact host name */
	EGRESS_RULE_WILDCARD, /* "*.suffix": strict subdomains of suffix */
	EGRESS_RULE_IP4,
	EGRESS_RULE_IP6,
} egress_rule_kind;

#define EGRESS_PORT_ANY (-1) /* "host:*" */
#define EGRESS_PORT_WEB 0    /* no port given: 80 and 443 */

typedef struct egress_rule {
	egress_rule_kind kind;
	int port;			   /* 1-65535, EGRESS_PORT_WEB or EGRESS_PORT_ANY */
	char host[EGRESS_HOST_MAX + 1];	   /* normalized name / suffix (without "*.") / IP text */
	uint8_t addr[16];		   /* IP rules: 4 or 16 bytes, network order */
	char text[EGRESS_PATTERN_MAX + 8]; /* canonical pattern, used in messages */
} egress_rule;

typedef struct egress_allowlist {
	bool open; /* network mode "open": every public host and port */
	size_t n;
	egress_rule rules[];
} egress_allowlist;

/* Parses one pattern. On error the message names the pattern and the reason. */
int egress_rule_parse(const char *pattern, egress_rule *ret, sbx_err **err);
/* Parses a NULL-terminated list (NULL: empty list); errors are prefixed with
 * "[i]: ". *ret is freed with egress_allowlist_free(). */
int egress_allowlist_parse(const char *const *patterns, egress_allowlist **ret, sbx_err **err);
/* Like egress_allowlist_parse but the list allows every public host:port
 * (network mode "open"); the patterns only add internal IPs (SSRF exceptions). */
int egress_allowlist_parse_open(const char *const *patterns, egress_allowlist **ret, sbx_err **err);
void egress_allowlist_free(egress_allowlist *al);
static inline void egress_allowlist_freep(egress_allowlist **al)
{
	egress_allowlist_free(*al);
}
#define _cleanup_egress_allowlist_ _cleanup_(egress_allowlist_freep)

/* Is the connection target host:port allowed? host is a name or an IP literal
 * (IPv6 with or without brackets), any case, optional trailing dot.
 * Returns 1 (allowed; *ret_rule = the matching rule's text, owned by al),
 * 0 (denied; *ret_rule = a static sentence saying why, e.g. "no rule allows it"),
 * or -EINVAL for a malformed host or port (*ret_rule says why). ret_rule may be NULL. */
int egress_check(const egress_allowlist *al, const char *host, int port, const char **ret_rule);

/* The second gate, after resolution: may we connect to this address on behalf
 * of a target already allowed by egress_check()? Public addresses: yes.
 * Internal addresses (egress_addr_is_internal): only if an IP rule allows
 * addr:port. Returns 1 or 0 with *ret_rule as for egress_check. */
int egress_check_addr(const egress_allowlist *al, const struct sockaddr *sa, const char **ret_rule);
/* Loopback, unspecified, RFC 1918/6598 private, link-local, ULA, multicast,
 * reserved, benchmarking, and IPv4 embedded in v4-mapped/NAT64 IPv6 forms. */
bool egress_addr_is_internal(const struct sockaddr *sa);

/* Does every target `inner` allows also pass `outer`? (policy merge: a later
 * allowlist may only narrow) */
bool egress_rule_covers(const egress_rule *outer, const egress_rule *inner);
/* Does network mode "internet" (every public host and port) allow every
 * target `r` allows? Names and public addresses: yes; internal addresses:
 * only through an IP rule of their own. */
bool egress_rule_public(const egress_rule *r);
/* Is every target `r` allows within one of `patterns` (NULL-terminated;
 * those that do not parse are skipped), or, where `internet`, within
 * network mode internet (egress_rule_public)? The one test of "a request
 * within a ceiling": policies, agent phases, the E2B cap. */
bool egress_rule_within(const egress_rule *r, bool internet, const char *const *patterns);

/* Normalizes a target host for egress_check: lowercase, no trailing dot, no
 * IPv6 brackets. Returns 0, or -EINVAL if it is not a valid name or IP literal. */
int egress_host_normalize(const char *host, char *buf, size_t cap);
