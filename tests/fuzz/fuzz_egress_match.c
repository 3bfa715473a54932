/* libFuzzer target: egress patterns, target hosts, request heads and TLS SNI (pure). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/egress_match.h"
#include "policy/proxy_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	/* the input as a pattern and as a target host */
	egress_rule r;
	if (egress_rule_parse(s, &r, NULL) == 0) {
		egress_rule r2;
		/* the canonical text parses to the same rule */
		if (egress_rule_parse(r.text, &r2, NULL) != 0 || strcmp(r.text, r2.text) != 0 ||
		    !egress_rule_covers(&r, &r2))
			abort();
		const char *pats[] = {s, NULL};
		egress_allowlist *al = NULL;
		if (egress_allowlist_parse(pats, &al, NULL) != 0)
			abort();
		const char *rule;
		int c = egress_check(al, "example.com", 443, &rule);
		if (c < 0 || !rule)
			abort();
		egress_allowlist_free(al);
	}
	const char *pats[] = {"example.com", "*.example.org:*", "10.0.0.1:8080", "[::1]", NULL};
	egress_allowlist *al = NULL;
	if (egress_allowlist_parse(pats, &al, NULL) != 0)
		abort();
	const char *rule = NULL;
	int c = egress_check(al, s, 443, &rule);
	if (c > 1 || !rule)
		abort();
	egress_allowlist_free(al);
	/* the input as a request head */
	proxy_request req;
	int pr = proxy_request_parse(s, size, &req, NULL);
	if (pr == 1) {
		if (req.head_len > size || req.port < 1 || req.port > 65535)
			abort();
		if (req.kind == PROXY_REQ_HTTP && (!req.origin_head || req.origin_head[0] == ' '))
			abort();
		proxy_request_done(&req);
	}
	/* and as TLS records */
	char sni[300];
	int t = proxy_tls_sni(data, size, sni, sizeof(sni));
	if (t == 1 && strlen(sni) >= sizeof(sni))
		abort();
	free(s);
	return 0;
}
