/* Minimal unit-test harness. Each test_*.c defines TESTs; main runs them all
 * (or those named on the command line) and ends with the line
 * "N passed, N failed, N skipped" that tests/run sums up. */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_test {
	const char *name;
	void (*fn)(void);
} unit_test;

#define UNIT_MAX 512
static unit_test unit_tests[UNIT_MAX];
static int unit_n, unit_failed_now, unit_skipped_now;

#define TEST(nm)                                                                                             \
	static void test_##nm(void);                                                                         \
	__attribute__((constructor)) static void reg_##nm(void)                                              \
	{                                                                                                    \
		if (unit_n < UNIT_MAX)                                                                       \
			unit_tests[unit_n++] = (unit_test){#nm, test_##nm};                                  \
	}                                                                                                    \
	static void test_##nm(void)

#define CHECK(cond)                                                                                          \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
			unit_failed_now = 1;                                                                 \
			return;                                                                              \
		}                                                                                            \
	} while (0)
#define CHECK_STREQ(a, b)                                                                                    \
	do {                                                                                                 \
		const char *_a = (a), *_b = (b);                                                             \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                                                     \
			fprintf(stderr, "  %s:%d: '%s' != '%s'\n", __FILE__, __LINE__, _a ? _a : "(null)",   \
				_b ? _b : "(null)");                                                         \
			unit_failed_now = 1;                                                                 \
			return;                                                                              \
		}                                                                                            \
	} while (0)
/* SKIP: something this test needs is missing. Under SBX_TEST_STRICT=1 (CI)
 * that is a failure, as for integration skips: CI installs everything.
 * SKIP_OK: the machine itself cannot do it (another architecture, no root,
 * a kernel without the feature): a skip even in strict mode. */
static inline int unit_strict(void)
{
	const char *s = getenv("SBX_TEST_STRICT");
	return s && strcmp(s, "1") == 0;
}
#define SKIP(why)                                                                                            \
	do {                                                                                                 \
		if (unit_strict()) {                                                                         \
			fprintf(stderr, "  %s:%d: skipped in strict mode: %s\n", __FILE__, __LINE__, why);   \
			unit_failed_now = 1;                                                                 \
			return;                                                                              \
		}                                                                                            \
		fprintf(stderr, "  skipped: %s\n", why);                                                     \
		unit_skipped_now = 1;                                                                        \
		return;                                                                                      \
	} while (0)
#define SKIP_OK(why)                                                                                         \
	do {                                                                                                 \
		fprintf(stderr, "  skipped: %s\n", why);                                                     \
		unit_skipped_now = 1;                                                                        \
		return;                                                                                      \
	} while (0)

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	for (int i = 0; i < unit_n; i++) {
		if (argc > 1) {
			int want = 0;
			for (int j = 1; j < argc; j++)
				want |= strcmp(argv[j], unit_tests[i].name) == 0;
			if (!want)
				continue;
		}
		unit_failed_now = unit_skipped_now = 0;
		unit_tests[i].fn();
		const char *st = unit_failed_now ? "FAIL" : unit_skipped_now ? "SKIP" : "ok";
		printf("%-4s %s\n", st, unit_tests[i].name);
		fflush(stdout);
		if (unit_failed_now)
			failed++;
		else if (unit_skipped_now)
			skipped++;
		else
			passed++;
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
