/* Syscall facts the tracer needs: names (from libseccomp's table, so every
 * architecture libseccomp knows is covered) and which arguments are paths or
 * other strings worth capturing. Pure; no I/O. */
#ifndef SBX_TRACE_SYS_H
#define SBX_TRACE_SYS_H

#include <stdbool.h>
#include <stdint.h>

#define TRACE_NR_MAX 512 /* native syscall numbers below this are tracked */

/* The syscall's name, or NULL when unknown. The string is static. */
const char *trace_sys_name(int nr);
/* The number of a syscall by name, or -1. */
int trace_sys_nr(const char *name);
/* Bit i set: argument i is a NUL-terminated string (a path, mostly). At most
 * two bits are set; the recorder captures the first two string arguments. */
uint8_t trace_sys_str_args(int nr);
/* Bit i set: argument i is a file descriptor (decoded as fd -> path). */
uint8_t trace_sys_fd_args(int nr);
/* True for calls whose count or result depends on timing rather than on
 * the program (futex, poll, sched_yield, nanosleep, ...): a replay
 * comparison skips them. */
bool trace_sys_timing_dependent(int nr);
/* True for calls whose return value is an address (mmap, brk, ...). */
bool trace_sys_returns_addr(int nr);

#endif
