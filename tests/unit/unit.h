/* Minimal unit-test harness. Each test_*.c defines TESTs; main runs them all
 * (or those named on the command line) and ends with the line
 * "N passed, N failed, N skipped" that tests/run sums up. */
#pragma once
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* A watchdog per test: one that does not end within SBX_UNIT_TEST_TIMEOUT
 * seconds (300 by default) fails, named, and the binary ends with its summary
 * line, instead of holding the whole run until CI's limit. It is a POSIX
 * timer on SIGRTMAX, not alarm(): tests use SIGALRM themselves, and a timer
 * is neither inherited by the processes they fork nor a thread beside them. */
static const char *unit_current;
static int unit_passed, unit_failed, unit_skipped;

static void unit_timeout(int sig)
{
	(void)sig;
	char buf[512];
	int n =
	    snprintf(buf, sizeof(buf),
		     "  timed out: %s still running after %s s\nFAIL %s\n%d passed, %d failed, %d skipped\n",
		     unit_current, getenv("SBX_UNIT_TEST_TIMEOUT") ? getenv("SBX_UNIT_TEST_TIMEOUT") : "300",
		     unit_current, unit_passed, unit_failed + 1, unit_skipped);
	if (n > 0)
		(void)!write(STDOUT_FILENO, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	_exit(1);
}

static timer_t unit_watchdog(void)
{
	struct sigaction sa = {.sa_handler = unit_timeout};
	sigaction(SIGRTMAX, &sa, NULL);
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMAX};
	timer_t t = 0;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) < 0) {
		perror("unit: timer_create");
		exit(2);
	}
	return t;
}

int main(int argc, char **argv)
{
	timer_t watchdog = unit_watchdog();
	const char *limit = getenv("SBX_UNIT_TEST_TIMEOUT");
	long secs = limit && atol(limit) > 0 ? atol(limit) : 300;
	for (int i = 0; i < unit_n; i++) {
		if (argc > 1) {
			int want = 0;
			for (int j = 1; j < argc; j++)
				want |= strcmp(argv[j], unit_tests[i].name) == 0;
			if (!want)
				continue;
		}
		unit_failed_now = unit_skipped_now = 0;
		unit_current = unit_tests[i].name;
		timer_settime(watchdog, 0, &(struct itimerspec){.it_value = {.tv_sec = secs}}, NULL);
		unit_tests[i].fn();
		timer_settime(watchdog, 0, &(struct itimerspec){0}, NULL);
		const char *st = unit_failed_now ? "FAIL" : unit_skipped_now ? "SKIP" : "ok";
		printf("%-4s %s\n", st, unit_tests[i].name);
		fflush(stdout);
		if (unit_failed_now)
			unit_failed++;
		else if (unit_skipped_now)
			unit_skipped++;
		else
			unit_passed++;
	}
	printf("%d passed, %d failed, %d skipped\n", unit_passed, unit_failed, unit_skipped);
	return unit_failed ? 1 : 0;
}
