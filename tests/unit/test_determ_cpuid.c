/* rdrand/rdseed under determinism (determ_cpuid.c): the bits an answered
 * cpuid would clear, and what this machine allows. Where it has no CPUID
 * faulting, the test says so: a program that asks cpuid and then uses
 * rdrand reads the hardware generator under `sbx exec --trace` too. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trace/determ_cpuid.h"
#include "unit.h"

#if defined(__x86_64__)
#include <asm/prctl.h>
#include <cpuid.h>
#endif

TEST(hide_clears_only_rdrand_and_rdseed)
{
	uint32_t r[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
	determ_cpuid_hide_rand(1, 0, r);
	CHECK(r[0] == 0xffffffffu && r[1] == 0xffffffffu && r[2] == 0xbfffffffu && r[3] == 0xffffffffu);
	uint32_t s[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
	determ_cpuid_hide_rand(7, 0, s);
	CHECK(s[0] == 0xffffffffu && s[1] == 0xfffbffffu && s[2] == 0xffffffffu && s[3] == 0xffffffffu);
	uint32_t u[4] = {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu};
	determ_cpuid_hide_rand(7, 1, u); /* another subleaf */
	determ_cpuid_hide_rand(0x80000001u, 0, u);
	CHECK(u[0] == 0xffffffffu && u[1] == 0xffffffffu && u[2] == 0xffffffffu && u[3] == 0xffffffffu);
}

TEST(probe_agrees_with_arch_prctl)
{
#if defined(__x86_64__)
	/* ARCH_GET_CPUID answers 1 (cpuid works) everywhere; only SET tells
	 * whether it can be made to fault. Asked in this process, then undone. */
	long r = syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
	bool can = r == 0;
	if (can)
		CHECK(syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1) == 0);
	else
		CHECK(errno == ENODEV);
	CHECK(determ_cpuid_faults() == can);
	unsigned a, b, c, d;
	bool rd = (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 30))) ||
		  (__get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 18)));
	CHECK(determ_cpu_has_rdrand() == rd);
	fprintf(stderr, "  (this machine: cpuid faulting %s; rdrand/rdseed %s)\n",
		can ? "available" : "absent",
		rd ? "advertised: not hidden from traced programs" : "not advertised");
#else
	SKIP("x86_64 only");
#endif
}
