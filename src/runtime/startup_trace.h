/* Startup tracing: SBX_TRACE_STARTUP=1 prints one line per step of a create
 * (and of a wake, fork, restore and teardown) to stderr, with the time since
 * the first mark of the process tree:
 *
 *   sbx-startup:    3.412 ms  [12345 supervisor] cgroup created
 *
 * The base is taken at the first mark and inherited across fork and clone
 * (the supervisor and init are forks of the creating process, never an
 * exec), so every line of one create shares one clock. Off by default: one
 * cached getenv, then a branch. Diagnostics only: nothing depends on it,
 * and timings never go into tests. */
#ifndef SBX_RUNTIME_STARTUP_TRACE_H
#define SBX_RUNTIME_STARTUP_TRACE_H

#include <stdbool.h>

bool startup_trace_enabled(void);
void startup_mark_impl(const char *what);
#define startup_mark(what)                                                                                   \
	do {                                                                                                 \
		if (startup_trace_enabled())                                                                 \
			startup_mark_impl(what);                                                             \
	} while (0)

#endif
