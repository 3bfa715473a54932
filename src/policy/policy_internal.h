/* Module-private interface of policy documents: the calls between the
 * files they are split into:
 *
 *   policy.c        parse and validate, the profiles, the canonical form
 *   policy_merge.c  composition (policy_merge: a later policy narrows a base)
 *
 * Calls go one way: policy_merge.c -> policy.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"
#include "util/err.h"
#include "util/macro.h"

/* An invalid field: SBX_E_INVALID_ARGUMENT "field: message" (err_set). */
int policy_bad(sbx_err **err, const char *field, const char *fmt, ...) _printf_(3, 4);
int policy_oom(sbx_err **err);
/* An empty policy: network and limits unset. */
policy *policy_new(void);
/* "open", "allow" or "none". */
const char *policy_mode_name(policy_net_mode m);

/* NULL-terminated string vectors (v may be NULL). */
size_t policy_strv_len(char *const *v);
bool policy_strv_has(char *const *v, const char *s);
/* Appends a copy of s. Returns 0 or -ENOMEM. */
int policy_strv_push_copy_n(char ***v, const char *s);
int policy_strv_copy(char *const *src, char ***ret);
/* strcmp of two char *, for qsort. */
int policy_cmp_str(const void *a, const void *b);

/* The integer limits (cpus is a double, apart): one table for parsing and
 * for composition, so that a new limit cannot reach one and not the other. */
typedef struct policy_limit_int {
	const char *key;
	size_t off; /* in policy_limits */
} policy_limit_int;
extern const policy_limit_int policy_limit_ints[];
extern const size_t policy_n_limit_ints;
