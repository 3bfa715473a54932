/* rdrand/rdseed and CPUID faulting (contract: determ_cpuid.h). */
#include "trace/determ_cpuid.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <asm/prctl.h>
#include <cpuid.h>
#endif

#define CPUID1_ECX_RDRAND (1u << 30)
#define CPUID7_EBX_RDSEED (1u << 18)

static bool faults;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void probe(void)
{
#if defined(__x86_64__)
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) /* in a child: the setting stays with the task until its exec */
		_exit(syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) == 0 ? 0 : 1);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	faults = WIFEXITED(st) && WEXITSTATUS(st) == 0;
#endif
}

bool determ_cpuid_faults(void)
{
	(void)pthread_once(&once, probe);
	return faults;
}

bool determ_cpu_has_rdrand(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & CPUID1_ECX_RDRAND))
		return true;
	if (__get_cpuid_max(0, NULL) >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
	    (b & CPUID7_EBX_RDSEED))
		return true;
#endif
	return false;
}

void determ_cpuid_hide_rand(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
	if (leaf == 1)
		regs[2] &= ~CPUID1_ECX_RDRAND;
	else if (leaf == 7 && subleaf == 0)
		regs[1] &= ~CPUID7_EBX_RDSEED;
}
