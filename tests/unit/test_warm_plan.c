/* The warm set's decisions (src/server/warm_plan.h). */
#include "server/warm_plan.h"
#include "unit.h"

/* n creates of source, one every gap_ms from t; returns the last time. */
static int64_t creates(warm_plan *p, const char *source, int n, int64_t t, int64_t gap_ms)
{
	for (int i = 0; i < n; i++, t += gap_ms)
		(void)warm_plan_observe(p, source, NULL, false, t);
	return t - gap_ms;
}

TEST(a_few_creates_get_no_pool)
{
	warm_plan p;
	warm_plan_init(&p, 64);
	int64_t t = creates(&p, "host", 4, 1000, 10);
	warm_plan_decide(&p, t);
	CHECK((p.keys[0].want) == (0));
	CHECK(!warm_plan_should_apply(&p.keys[0]));
}

TEST(a_burst_gets_a_pool_sized_by_its_rate)
{
	warm_plan p;
	warm_plan_init(&p, 64);
	int64_t t = creates(&p, "host", 5, 1000, 10);
	warm_plan_decide(&p, t);
	CHECK((p.keys[0].want) == (WARM_SIZE_MIN)); /* ~0.5/s: the minimum */
	CHECK(warm_plan_should_apply(&p.keys[0]));
	/* 20 a second for 30 s: the rate settles near 20, the size follows */
	t = creates(&p, "host", 600, t + 50, 50);
	warm_plan_decide(&p, t);
	CHECK(p.keys[0].want >= 18 && p.keys[0].want <= 22);
}

TEST(the_pool_goes_when_creates_stop_and_shrinks_with_hysteresis)
{
	warm_plan p;
	warm_plan_init(&p, 64);
	int64_t t = creates(&p, "host", 300, 0, 50); /* ~20/s */
	warm_plan_decide(&p, t);
	p.keys[0].size = p.keys[0].want;
	int set = p.keys[0].size;
	/* 5 s later the rate is ~0.6 of it: the want falls, but not to half */
	warm_plan_decide(&p, t + 5000);
	CHECK(p.keys[0].want < set && p.keys[0].want * 2 > set);
	CHECK(!warm_plan_should_apply(&p.keys[0]));
	/* 10 s later (~0.37): applied */
	warm_plan_decide(&p, t + 10000);
	CHECK(warm_plan_should_apply(&p.keys[0]));
	p.keys[0].size = p.keys[0].want;
	/* a minute without creates: none */
	warm_plan_decide(&p, t + 60000);
	CHECK((p.keys[0].want) == (0));
	CHECK(warm_plan_should_apply(&p.keys[0]));
}

TEST(keys_are_source_and_policy)
{
	warm_plan p;
	warm_plan_init(&p, 64);
	CHECK((warm_plan_observe(&p, "host", NULL, false, 0)) == (0));
	CHECK((warm_plan_observe(&p, "host", "strict", false, 0)) == (1));
	CHECK((warm_plan_observe(&p, "host", "", false, 0)) == (2)); /* an empty policy is not none */
	CHECK((warm_plan_observe(&p, "sha256:ab", "strict", false, 0)) == (3));
	CHECK((warm_plan_observe(&p, "host", "strict", false, 0)) == (1));
	CHECK(((int)p.n) == (4));
	/* a create that wants a kernel started is another key */
	CHECK((warm_plan_observe(&p, "host", NULL, true, 0)) == (4));
	CHECK(p.keys[4].code && p.keys[4].cost == WARM_CODE_COST && p.keys[0].cost == 1);
}

TEST(a_code_entry_costs_its_memory)
{
	warm_plan p;
	warm_plan_init(&p, 64); /* 256 MiB at 4 MiB a unit */
	int64_t t = 0;
	for (int i = 0; i < 400; i++, t += 25) { /* code and plain: 40/s each, for 10 s */
		warm_plan_observe(&p, "host", NULL, true, t);
		warm_plan_observe(&p, "host", NULL, false, t);
	}
	warm_plan_decide(&p, t);
	int code = p.keys[0].want, plain = p.keys[1].want;
	CHECK(code >= 1 && plain >= 1);
	CHECK((code * WARM_CODE_COST + plain) <= 64);
	/* a budget below one code entry: the plain key only */
	p.max_entries = WARM_CODE_COST - 1;
	warm_plan_decide(&p, t);
	CHECK((p.keys[0].want) == (0));
	CHECK(p.keys[1].want >= 1 && p.keys[1].want <= WARM_CODE_COST - 1);
	/* within the budget: as asked */
	p.max_entries = 1000;
	warm_plan_decide(&p, t);
	CHECK(p.keys[0].want >= 20 && p.keys[0].want == p.keys[1].want);
}

TEST(the_budget_is_shared_by_rate)
{
	warm_plan p;
	warm_plan_init(&p, 10);
	int64_t t = 0;
	for (int i = 0; i < 400; i++, t += 25) { /* a: 40/s, b: 10/s */
		warm_plan_observe(&p, "a", NULL, false, t);
		if (i % 4 == 0)
			warm_plan_observe(&p, "b", NULL, false, t);
	}
	warm_plan_decide(&p, t);
	int a = p.keys[0].want, b = p.keys[1].want;
	CHECK((a + b) == (10));
	CHECK(a > b && b >= 1);
	/* a budget of one: the hottest only */
	p.max_entries = 1;
	warm_plan_decide(&p, t);
	CHECK((p.keys[0].want) == (1));
	CHECK((p.keys[1].want) == (0));
	/* none: nothing */
	p.max_entries = 0;
	warm_plan_decide(&p, t);
	CHECK((p.keys[0].want + p.keys[1].want) == (0));
}

TEST(a_foreign_pool_is_left_alone)
{
	warm_plan p;
	warm_plan_init(&p, 64);
	int64_t t = creates(&p, "host", 50, 0, 10);
	p.keys[0].foreign = true;
	p.keys[0].foreign_until_ms = t + WARM_FOREIGN_RECHECK_MS;
	warm_plan_decide(&p, t);
	CHECK((p.keys[0].want) == (0));
	CHECK(!warm_plan_should_apply(&p.keys[0]));
	/* Looked at again later (the user may have removed it), if still hot. */
	int64_t later = creates(&p, "host", 50, t + WARM_FOREIGN_RECHECK_MS, 10);
	warm_plan_decide(&p, later);
	CHECK(!p.keys[0].foreign);
	CHECK(p.keys[0].want > 0);
	CHECK(warm_plan_should_apply(&p.keys[0]));
}

TEST(a_full_table_evicts_the_coldest_without_a_pool)
{
	warm_plan p;
	warm_plan_init(&p, 64);
	char name[16];
	for (int i = 0; i < WARM_KEYS_MAX; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		for (int j = 0; j <= i; j++)
			warm_plan_observe(&p, name, NULL, false, 0);
		p.keys[i].size = i == 0 ? 0 : 1; /* all but the coldest have pools */
	}
	CHECK((warm_plan_observe(&p, "new", NULL, false, 0)) == (0));
	CHECK_STREQ(p.keys[0].source, "new");
	p.keys[0].size = 1;
	CHECK((warm_plan_observe(&p, "newer", NULL, false, 0)) == (-1)); /* every key has a pool */
	/* too long a source is not counted */
	char big[WARM_SOURCE_MAX + 8];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK((warm_plan_observe(&p, big, NULL, false, 0)) == (-1));
}
