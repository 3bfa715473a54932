/* The decisions of a server's warm set (docs/warm.md "A server that keeps
 * itself warm"), pure: which pools to keep, and how large, from the creates
 * the server's clients made. warm.c feeds it and applies what it decides.
 *
 * Each pool source (a template or a snapshot digest, with its policy) has
 * a create rate: an exponentially weighted average with a time constant of
 * WARM_TAU_MS, raised by 1/tau at each create and decaying between them, so
 * that it reads in creates per second. A key gets a pool once its rate
 * reaches WARM_START_RATE (five creates in quick succession: a test or a
 * person creating one sandbox now and then gets none) and keeps it while
 * the rate stays above half of that; its size is the creates expected in
 * WARM_LEAD_MS (the time a refiller needs to catch up), at least
 * WARM_SIZE_MIN. When the sizes together exceed the budget (max_entries
 * units, an entry costing its key's cost: 1 for a plain one,
 * WARM_CODE_COST for one with a kernel started), the budget is shared in
 * proportion to the rates, each pool keeping at least one entry while
 * there is room, the hottest first. A size that
 * falls is applied once it is at most half of what is set (so a rate that
 * wobbles does not churn entries); one that rises, at once. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WARM_KEYS_MAX 16
#define WARM_TAU_MS 10000
#define WARM_START_RATE 0.45 /* creates per second: five in a few seconds */
#define WARM_LEAD_MS 1000
#define WARM_SIZE_MIN 2
#define WARM_SOURCE_MAX 512
#define WARM_FOREIGN_RECHECK_MS 5000 /* a pool found a user's is looked at again after this */
/* What an entry of a code pool (its bridge and Python kernel started:
 * docs/code.md "Warm kernels") costs in units of a plain entry (warm.h
 * WARM_ENTRY_BYTES, 4 MiB): measured, its memory cgroup held 107 MiB (the
 * bridge's and the kernel's Python, 55 MB PSS each) besides the plain
 * entry's supervisor and init: 28 units, 112 MiB. */
#define WARM_CODE_COST 28

typedef struct warm_key {
	char source[WARM_SOURCE_MAX];
	char policy[WARM_SOURCE_MAX];
	bool has_policy;
	bool code;		  /* entries with their kernel started */
	int cost;		  /* units of the budget per entry: 1, or WARM_CODE_COST */
	double rate;		  /* creates per second as of last_ms */
	int64_t last_ms;	  /* the last create seen */
	int size;		  /* the size set (0: no pool of ours) */
	int want;		  /* what warm_plan_decide says it should be */
	bool foreign;		  /* the key's pool is a user's (or another server's): left alone */
	int64_t foreign_until_ms; /* until then (the user may remove it; warm_plan_decide clears it) */
} warm_key;

typedef struct warm_plan {
	warm_key keys[WARM_KEYS_MAX];
	size_t n;
	int max_entries; /* the budget, in units (an entry costs its key's cost) */
} warm_plan;

void warm_plan_init(warm_plan *p, int max_entries);
/* A create of (source, policy, code) at now_ms. A new key takes a free
 * slot, or that of a key with no pool and the lowest rate; with none, the
 * create is not counted. Returns the key's index, or -1. */
int warm_plan_observe(warm_plan *p, const char *source, const char *policy, bool code, int64_t now_ms);
/* The rate of key k as of now_ms (decayed since its last create). */
double warm_plan_rate(const warm_key *k, int64_t now_ms);
/* Sets every key's want as of now_ms. */
void warm_plan_decide(warm_plan *p, int64_t now_ms);
/* Whether key k's pool should be set to its want now (see the top). */
bool warm_plan_should_apply(const warm_key *k);
