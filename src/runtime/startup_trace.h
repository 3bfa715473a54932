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
 * and timings never go into tests.
 *
 * SBX_TRACE_STARTUP=/path appends the lines to that file instead, which is
 * how to see a supervisor's later steps (its teardown): on stderr, the
 * supervisor keeps the creator's stderr only until it reports ready.
 *
 * SBX_TRACE_STARTUP_ABS=1 prints CLOCK_MONOTONIC itself instead of the time
 * since the first mark, so that processes of different trees (a pooled
 * entry's supervisor and init, and the `sbx run` or `sbx exec` that uses
 * it) can be read on one clock: the exec path's marks (client, supervisor,
 * init) line up that way. */
#ifndef SBX_RUNTIME_STARTUP_TRACE_H
#define SBX_RUNTIME_STARTUP_TRACE_H

#include <stdbool.h>

bool startup_trace_enabled(void);
/* In path mode, opens the file now and writes every later mark there: for
 * init, which is about to lose the host's paths (pivot_root). Init then
 * holds a host fd (CLOEXEC; commands never get it): diagnostics only. In
 * stderr mode init gives the creator's stderr back before it reports ready. */
void startup_trace_pin(void);
void startup_mark_impl(const char *what);
#define startup_mark(what)                                                                                   \
	do {                                                                                                 \
		if (startup_trace_enabled())                                                                 \
			startup_mark_impl(what);                                                             \
	} while (0)

#endif
