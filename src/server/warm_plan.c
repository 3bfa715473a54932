/* The warm set's decisions (see warm_plan.h). */
#include "server/warm_plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void warm_plan_init(warm_plan *p, int max_entries)
{
	memset(p, 0, sizeof(*p));
	p->max_entries = max_entries < 0 ? 0 : max_entries;
}

double warm_plan_rate(const warm_key *k, int64_t now_ms)
{
	int64_t dt = now_ms - k->last_ms;
	return dt <= 0 ? k->rate : k->rate * exp(-(double)dt / WARM_TAU_MS);
}

static bool key_is(const warm_key *k, const char *source, const char *policy, bool code)
{
	return strcmp(k->source, source) == 0 && k->has_policy == (policy != NULL) && k->code == code &&
	       (!policy || strcmp(k->policy, policy) == 0);
}

int warm_plan_observe(warm_plan *p, const char *source, const char *policy, bool code, int64_t now_ms)
{
	if (!source || strlen(source) >= WARM_SOURCE_MAX || (policy && strlen(policy) >= WARM_SOURCE_MAX))
		return -1;
	size_t i;
	for (i = 0; i < p->n && !key_is(&p->keys[i], source, policy, code); i++)
		;
	if (i == p->n) {
		if (p->n < WARM_KEYS_MAX)
			p->n++;
		else {
			/* The coldest key that has no pool gives its slot up. */
			int victim = -1;
			for (size_t j = 0; j < p->n; j++)
				if (p->keys[j].size == 0 &&
				    (victim < 0 || warm_plan_rate(&p->keys[j], now_ms) <
						       warm_plan_rate(&p->keys[victim], now_ms)))
					victim = (int)j;
			if (victim < 0)
				return -1;
			i = (size_t)victim;
		}
		warm_key *k = &p->keys[i];
		memset(k, 0, sizeof(*k));
		snprintf(k->source, sizeof(k->source), "%s", source);
		k->has_policy = policy != NULL;
		snprintf(k->policy, sizeof(k->policy), "%s", policy ? policy : "");
		k->code = code;
		k->cost = code ? WARM_CODE_COST : 1;
		k->last_ms = now_ms;
	}
	warm_key *k = &p->keys[i];
	k->rate = warm_plan_rate(k, now_ms) + 1000.0 / WARM_TAU_MS;
	if (now_ms > k->last_ms)
		k->last_ms = now_ms;
	return (int)i;
}

/* A key's cost per entry (a plan built before costs: 1). */
static int cost_of(const warm_key *k)
{
	return k->cost > 0 ? k->cost : 1;
}

void warm_plan_decide(warm_plan *p, int64_t now_ms)
{
	double rate[WARM_KEYS_MAX], total = 0;
	int raw[WARM_KEYS_MAX], sum = 0;
	size_t order[WARM_KEYS_MAX];
	for (size_t i = 0; i < p->n; i++) {
		warm_key *k = &p->keys[i];
		if (k->foreign && now_ms >= k->foreign_until_ms)
			k->foreign = false; /* look again: the user's pool may be gone */
		double r = rate[i] = warm_plan_rate(k, now_ms);
		bool on = !k->foreign && (r >= WARM_START_RATE || (k->size > 0 && r >= WARM_START_RATE / 2));
		raw[i] = on ? (int)ceil(r * WARM_LEAD_MS / 1000.0) : 0;
		if (on && raw[i] < WARM_SIZE_MIN)
			raw[i] = WARM_SIZE_MIN;
		k->want = raw[i];
		total += on ? r : 0;
		sum += raw[i] * cost_of(k);
		/* Insertion sort by rate, hottest first. */
		size_t j = i;
		for (; j > 0 && rate[order[j - 1]] < r; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	if (sum <= p->max_entries)
		return;
	/* Over the budget: one each while there is room (hottest first), the
	 * rest shared in proportion to the rates, and what rounding left to
	 * the hottest, never beyond what a key asked; all in units. */
	int left = p->max_entries;
	for (size_t o = 0; o < p->n; o++) {
		size_t i = order[o];
		if (raw[i] == 0)
			continue;
		p->keys[i].want = left >= cost_of(&p->keys[i]) ? 1 : 0;
		left -= p->keys[i].want * cost_of(&p->keys[i]);
	}
	int rest = left;
	for (size_t o = 0; o < p->n && rest > 0; o++) {
		size_t i = order[o];
		int c = cost_of(&p->keys[i]);
		if (p->keys[i].want == 0)
			continue;
		int share = (int)floor(rest * rate[i] / total) / c;
		if (share > raw[i] - 1)
			share = raw[i] - 1;
		if (share * c > left)
			share = left / c;
		p->keys[i].want += share;
		left -= share * c;
	}
	for (size_t o = 0; o < p->n && left > 0; o++) {
		size_t i = order[o];
		int c = cost_of(&p->keys[i]);
		if (p->keys[i].want == 0)
			continue;
		int more = raw[i] - p->keys[i].want;
		if (more * c > left)
			more = left / c;
		p->keys[i].want += more;
		left -= more * c;
	}
}

bool warm_plan_should_apply(const warm_key *k)
{
	if (k->foreign || k->want == k->size)
		return false;
	return k->want > k->size || k->want == 0 || k->want * 2 <= k->size;
}
