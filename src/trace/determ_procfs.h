/* The procfs files whose content is time, randomness or host load, as the
 * determinism engine serves them: determ_notif.c answers a read-only open of
 * one with a sealed memfd holding what determ_procfs_content() computes from
 * the opening process's virtual clock and random streams at the open.
 * Pure (determ_procfs.c): which path strings may name one, and the bytes,
 * in the kernel's formats:
 *   /proc/uptime                  "%lu.%02lu %lu.%02lu\n" (fs/proc/uptime.c):
 *                                 up = virtual CLOCK_BOOTTIME (DETERM_MONO_BASE_NS + t);
 *                                 idle = DETERM_MONO_BASE_NS: one CPU (the command is pinned
 *                                 to one), idle for the 1000 s of "uptime" before the command,
 *                                 busy since (the CPU clocks count all virtual time as the
 *                                 command's: determ_clock_peek)
 *   /proc/loadavg                 fixed: "0.00 0.00 0.00 1/1 1\n" (no load; one task,
 *                                 running, the reader; last pid 1, init)
 *   /proc/stat                    one CPU: "cpu  " and "cpu0 " lines with user = t and
 *                                 idle = DETERM_MONO_BASE_NS in USER_HZ (100) ticks, the
 *                                 rest 0; intr 0, ctxt 0; btime = virtual realtime - uptime
 *                                 = (epoch - DETERM_MONO_BASE_NS) in seconds; processes 1,
 *                                 procs_running 1, procs_blocked 0, softirq all 0
 *   /proc/sys/kernel/random/uuid  a fresh version 4 UUID per open ("%pU\n"), from
 *                                 determ_stream(process id, DETERM_STREAM_PROC_UUID, i)
 *                                 for the process's i-th open
 *   /proc/sys/kernel/random/boot_id  one version 4 UUID per run, from
 *                                 determ_stream(0, DETERM_STREAM_BOOT_ID, 0)
 *   /proc/PID/stat, /proc/PID/task/TID/stat (and through self, thread-self):
 *                                 the kernel's line for a process of the command
 *                                 (fs/proc/array.c) with its accounting fields from
 *                                 its virtual clock: determ_procfs_pid_stat
 * And sysinfo(2), the same report as a system call (determ_sysinfo_virtual).
 * x86_64 or not, these need nothing from the engine. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/sysinfo.h>

#include "trace/ptrace_engine.h"

enum {
	DETERM_PROCFS_NONE = 0,
	DETERM_PROCFS_UPTIME,
	DETERM_PROCFS_LOADAVG,
	DETERM_PROCFS_STAT,
	DETERM_PROCFS_UUID,
	DETERM_PROCFS_BOOT_ID,
	DETERM_PROCFS_PID_STAT, /* no fixed file: determ_procfs_path is NULL */
	DETERM_PROCFS_N
};

/* Room for any content (/proc/stat is under 300 bytes, a process's stat
 * line under 400 with the longest comm and values of 52 fields at most 20
 * digits each: 1100). */
#define DETERM_PROCFS_MAX 1536

/* The kind a path string may name, from the string alone: the cheap test run
 * on every open before anything is resolved. It looks at the last component
 * only ("uptime", "loadavg", "stat", "uuid", "boot_id"), so "/proc/uptime",
 * "uptime" relative to a dirfd, "/proc/self/../uptime" and a symlink of that
 * name all pass and are then resolved (a symlink under another name is not
 * caught). "stat" under a process directory ("/proc/self/stat",
 * "/proc/12/task/12/stat") is NONE: those are the far more common opens of
 * that name, and never /proc/stat: they are PID_STAT, which the engine then
 * identifies by the content (a process of the command or not). A trailing
 * slash is NONE (the kernel says ENOTDIR). */
int determ_procfs_candidate(const char *path);

/* The file of a kind as the engine opens it itself to learn its identity. */
const char *determ_procfs_path(int kind);

/* Whether the kind is a sysctl (/proc/sys: its inode number is made when the
 * inode is, so it is recognised by the device and inode of a reference the
 * engine keeps open) rather than a proc entry (whose inode number is the same
 * on every procfs mount of the boot). */
bool determ_procfs_is_sysctl(int kind);

/* What the content is a function of. */
typedef struct determ_procfs_src {
	const determ_clock *clk; /* the opening process's clock (not advanced: an open is no clock read) */
	const determ_rng *rng;	 /* the run's seeded streams */
	uint64_t proc_id;	 /* the opener's place in the fork tree (dproc.id) */
	uint64_t uuid_index;	 /* UUID: which of the opener's opens of it this is (from 0) */
} determ_procfs_src;

/* Writes the content of `kind` into buf (cap >= DETERM_PROCFS_MAX) and
 * returns its length; 0 for an unknown kind or a buffer too small. */
size_t determ_procfs_content(int kind, const determ_procfs_src *s, char *buf, size_t cap);

/* A version 4 UUID from 16 random bytes, as the kernel prints it (lowercase,
 * 8-4-4-4-12, then "\n"): out gets 37 bytes and a NUL. */
void determ_procfs_uuid(const uint8_t r[16], char out[38]);

/* A process's stat line as the engine serves it: the kernel's line `real`
 * (len bytes: "pid (comm) state ppid ...", comm may hold spaces and
 * parentheses) with, counting fields from 1 as proc(5) does,
 *   utime (14)     = cpu_ns, in USER_HZ ticks (as times() reports it)
 *   cutime (16)    = child_ns, in ticks (the reaped children's)
 *   starttime (22) = the virtual CLOCK_BOOTTIME when the process started
 *                    (DETERM_MONO_BASE_NS + start_ns), in ticks: so ps's
 *                    ELAPSED (uptime - starttime) is its virtual age
 *   state (3)      = R when `running` (below)
 *   0 for stime (15), cstime (17), minflt, cminflt, majflt, cmajflt
 *   (10-13), rss (24), processor (39: getcpu answers 0),
 *   delayacct_blkio_ticks (42), guest_time and cguest_time (43, 44)
 * and every other field as the kernel wrote it (identity, state, priority,
 * threads, vsize, rlimit, the addresses, which ASLR-off makes repeatable;
 * signal masks, exit code). Writes it into buf and returns its length; 0
 * when `real` does not parse as a stat line or buf is too small. */
typedef struct determ_pid_stat {
	uint64_t cpu_ns;   /* the process's virtual t */
	uint64_t child_ns; /* its reaped children's CPU time (dproc.cvt) */
	uint64_t start_ns; /* its t when it started (its parent's at the fork) */
	bool running;	   /* the reader's own process: state (3) reads R, as the kernel shows a
			    * reader itself (the engine reads while it waits: S) */
} determ_pid_stat;
size_t determ_procfs_pid_stat(const char *real, size_t len, const determ_pid_stat *s, char *buf, size_t cap);

/* sysinfo(2) as the kernel would fill it on the virtual clock: uptime = the
 * virtual CLOCK_BOOTTIME in seconds, a partial second rounded up (as
 * kernel/sys.c does), loads 0 and procs 1 (as /proc/loadavg). The memory
 * fields are left as they are (the machine's). */
void determ_sysinfo_virtual(struct sysinfo *si, const determ_clock *c);
