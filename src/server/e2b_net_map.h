/* E2B's network requests mapped onto sbx's egress, and checked against the
 * server's cap (docs/e2b.md "Network"). Pure: no I/O; unit-tested
 * (tests/unit/test_e2b_net_map.c) and fuzzed (tests/fuzz/fuzz_e2b_net.c).
 *
 * What E2B's SDK sends (e2b 2.51.0, src/sandbox/sandboxApi.ts):
 *   create: allow_internet_access? (bool) and network? {allowOut?, denyOut?,
 *           rules?, egressProxy?, allowPublicTraffic?, maskRequestHost?, httpsPorts?}
 *   PUT /sandboxes/{id}/network: {allow_internet_access?, allowOut?, denyOut?,
 *           rules?, egressProxy?}; a field left out is cleared.
 * E2B's meaning: everything is allowed unless denied; allowOut (CIDRs, IPs,
 * names, "*.name") wins over denyOut (CIDRs, IPs); allow_internet_access
 * false is denyOut ["0.0.0.0/0"] (the SDK's ALL_TRAFFIC).
 *
 * sbx's egress is an allowlist, so the request maps to one of:
 *   NONE    nothing asked, on create only: the server's default (its cap's
 *           own network), as `sbx create --policy P` without --network;
 *   ALLOW   all traffic denied (ALL_TRAFFIC or allow_internet_access false)
 *           and allowOut's entries allowed: each name "n" becomes the sbx
 *           rule "n:*" (E2B's rules cover every port), "*.n" stays a
 *           wildcard, an IP (or a /32, /128) becomes an IP rule, and an sbx
 *           pattern with a port ("pypi.org:443") is taken as it is; the list
 *           may be empty (no egress at all);
 *   OPEN    all traffic allowed: allow_internet_access true, allowOut
 *           ["0.0.0.0/0"], or allowOut without a deny of all traffic (E2B
 *           then lets everything out), or an update with no field at all.
 * Refused (-EINVAL, 400), naming the field and entry: an address range that
 * is not one address (the proxy allows names and single addresses), a denyOut
 * entry that is not a range or address, a partial deny (denyOut without
 * ALL_TRAFFIC: sbx cannot allow the internet but a range), rules with
 * transforms, egressProxy, httpsPorts, maskRequestHost, allowPublicTraffic
 * true (sbx's ports always need a token), wrong types. Nothing is silently
 * narrowed or widened. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum e2b_net_mode {
	E2B_NET_DEFAULT, /* create without any network field: the cap's own network */
	E2B_NET_NONE,	 /* no egress (only in a cap) */
	E2B_NET_ALLOW,	 /* the allowlist `allow` (possibly empty) */
	E2B_NET_OPEN,	 /* everything */
} e2b_net_mode;

typedef struct e2b_net {
	e2b_net_mode mode;
	char **allow; /* ALLOW: NULL-terminated sbx patterns (egress_match.h); owned */
	size_t n;
	bool internet; /* what to report as allowInternetAccess */
} e2b_net;

void e2b_net_clear(e2b_net *n);

/* Maps a create body (update false: its allow_internet_access and network
 * object) or a PUT /network body (update true: both from the body itself).
 * 0 and *ret (cleared with e2b_net_clear), or -EINVAL with why (a sentence
 * naming the field) in buf[cap]; -ENOMEM. */
int e2b_net_map(const json_t *body, bool update, e2b_net *ret, char *why, size_t cap);

/* Parses the server's cap: a policy's canonical network object
 * ({"mode": "none"|"allow"|"open", "allow": [...]}; NULL: none). */
int e2b_net_cap_parse(const json_t *network, e2b_net *ret, char *why, size_t cap);

/* Is req within cap? 0, or -EPERM with why naming the first rule beyond the
 * cap and the cap itself (described as cap_name, e.g. "sbx serve --policy dev"). */
int e2b_net_within(const e2b_net *cap, const e2b_net *req, const char *cap_name, char *why, size_t n);
