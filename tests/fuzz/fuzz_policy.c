/* libFuzzer target: policy documents (parse, canonical form, merge). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	policy *p = NULL;
	sbx_err *e = NULL;
	if (policy_parse((const char *)data, size, &p, &e) == 0) {
		/* the canonical form parses again to the same canonical form */
		json_t *j = policy_to_json(p);
		policy *q = NULL;
		if (!j || policy_from_json(j, &q, NULL) != 0)
			abort();
		json_t *j2 = policy_to_json(q);
		if (!json_equal(j, j2))
			abort();
		json_decref(j);
		json_decref(j2);
		/* merging onto a profile either fails or yields a policy no wider than... itself */
		policy *base = NULL, *m = NULL;
		if (policy_profile("dev", &base, NULL) != 0)
			abort();
		if (policy_merge(base, p, &m, NULL) == 0 && !p->override) {
			if (m->limits.memory_bytes > base->limits.memory_bytes ||
			    m->net_mode > base->net_mode)
				abort();
		}
		egress_allowlist *al = NULL;
		if (policy_egress_allowlist(q, &al, NULL) != 0)
			abort();
		egress_allowlist_free(al);
		policy_free(m);
		policy_free(base);
		policy_free(q);
		policy_free(p);
	}
	sbx_err_free(e);
	return 0;
}
