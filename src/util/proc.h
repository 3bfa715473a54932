/* Facts about processes from /proc (pure parsing apart from the read). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of pid (clock ticks since boot, /proc/PID/stat field 22):
 * with the pid it names one process for good (pids are reused, start times
 * with them are not). -errno, -ESRCH when there is no such process. */
int proc_start_time(pid_t pid, uint64_t *ret);
/* True while the process (pid, start) is alive. */
bool proc_alive(pid_t pid, uint64_t start);
/* Parses the text of /proc/PID/stat (the comm field may hold spaces and
 * parentheses: the last ')' ends it). -EINVAL on malformed text. */
int proc_stat_start_time(const char *text, uint64_t *ret);

/* Fields `first`..`first+n-1` (1-based, as proc(5) numbers them) of the text
 * of /proc/PID/stat, as unsigned numbers. -EINVAL on malformed text or a
 * field that is missing or not a number. */
int proc_stat_fields(const char *text, int first, int n, uint64_t *ret);

/* Makes /proc/self/cmdline read `title` (PR_SET_MM_MAP: the kernel's argv
 * bounds now name a private copy of it; the creator's strings stay in
 * memory). For processes forked from a caller whose command line must not
 * show through: a supervisor forked from `sbx create --env K=V -v /host/dir:..`
 * and the init cloned from it, pid 1 of an environment, whose cmdline anyone
 * inside may read. environ is kept: only who may ptrace us reads it (never
 * the environment: init's memory belongs to the host's user namespace), and
 * the host's tools find a store's processes by SBX_ROOT= there. Call while
 * single-threaded: the brk it passes back must not move. -errno; nothing
 * changes on failure. */
int proc_set_title(const char *title);
