/* rdrand and rdseed where cpuid advertises them: the CPU's hardware
 * generator, which the engine cannot see or answer. It could only hide them
 * (cpuid answered with the bits cleared) where the machine has CPUID
 * faulting, and does not hide them (docs/trace.md "Determinism"): reported. */
#include <cpuid.h>
#include <stdio.h>
int main(void)
{
	unsigned a, b, c, d;
	int rdrand = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 30));
	int rdseed = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 18));
	printf("rdrand %d rdseed %d\n", rdrand, rdseed);
	unsigned long v;
	unsigned char ok;
	if (rdrand) {
		__asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok));
		printf("rdrand %d %016lx\n", ok, v);
	}
	if (rdseed) {
		__asm__ volatile("rdseed %0; setc %1" : "=r"(v), "=qm"(ok));
		printf("rdseed %d %016lx\n", ok, v);
	}
	return 0;
}
