/* libFuzzer target: E2B's network requests onto sbx's egress (pure,
 * src/server/e2b_net_map.h), the input as a JSON document taken as a create
 * body, an update body and a cap. Whatever is accepted must hold together:
 * an allowlist's every rule parses as an sbx egress pattern, and a request
 * within a cap of no network asks for no egress. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "policy/egress_match.h"
#include "server/e2b_net_map.h"

static void check(const e2b_net *n)
{
	if (n->mode == E2B_NET_ALLOW)
		for (size_t i = 0; i < n->n; i++) {
			egress_rule r;
			if (!n->allow[i] || egress_rule_parse(n->allow[i], &r, NULL) < 0)
				abort();
		}
	if (n->mode != E2B_NET_ALLOW && n->allow)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!j)
		return 0;
	char why[512];
	e2b_net none = {.mode = E2B_NET_NONE}, cap;
	for (int update = 0; update < 2; update++) {
		e2b_net n;
		if (e2b_net_map(j, update, &n, why, sizeof(why)) == 0) {
			check(&n);
			if (e2b_net_within(&none, &n, "C", why, sizeof(why)) == 0 &&
			    (n.mode == E2B_NET_OPEN || n.n > 0))
				abort();
			if (e2b_net_cap_parse(json_object_get(j, "cap"), &cap, why, sizeof(why)) == 0) {
				check(&cap);
				(void)e2b_net_within(&cap, &n, "C", why, sizeof(why));
				e2b_net_clear(&cap);
			}
			e2b_net_clear(&n);
		}
	}
	json_decref(j);
	return 0;
}
