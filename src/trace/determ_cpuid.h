/* rdrand and rdseed under determinism. They read the CPU's hardware
 * generator, never the kernel, so the engine can neither see nor answer
 * them; the one lever is to make programs not use them: answer `cpuid` with
 * their feature bits cleared, so glibc, OpenSSL and the like fall back to
 * getrandom (which the engine answers). That needs CPUID faulting
 * (arch_prctl(ARCH_SET_CPUID, 0): Intel's CPUID faulting, exposed by few
 * hypervisors), and the kernel turns it off again at every execve, so the
 * engine would have to set it in the tracee after each exec. The engine does
 * not hide them; this reports whether it could (docs/trace.md "Determinism"). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* Whether this machine makes `cpuid` fault for a process that asks
 * (ARCH_SET_CPUID succeeds; ENODEV where the CPU or hypervisor lacks it).
 * Probed once per process, in a child. */
bool determ_cpuid_faults(void);

/* Whether the CPU advertises rdrand (CPUID.1:ECX[30]) or rdseed
 * (CPUID.(7,0):EBX[18]): a program that checks can read the hardware
 * generator, which a replay cannot reproduce. */
bool determ_cpu_has_rdrand(void);

/* A `cpuid` answer (eax, ebx, ecx, edx of leaf/subleaf) with rdrand and
 * rdseed hidden: what the engine would write back at a faulting cpuid. */
void determ_cpuid_hide_rand(uint32_t leaf, uint32_t subleaf, uint32_t regs[4]);
