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
