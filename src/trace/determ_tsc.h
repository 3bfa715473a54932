/* Whether this machine traps rdtsc/rdtscp for a process that asked with
 * prctl(PR_SET_TSC, PR_TSC_SIGSEGV). The kernel sets CR4.TSD and reports
 * success either way, but some hypervisors (PVM guests among them) do not
 * honour the bit: rdtsc then reads the real counter and the determinism
 * engine cannot answer it (docs/trace.md "Determinism"). Probed once per
 * process, in a child that executes rdtsc after the prctl. */
#pragma once
#include <stdbool.h>

bool determ_tsc_traps(void);
