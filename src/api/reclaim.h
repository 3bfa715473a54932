/* Reclaim: removing a directory of the store off the caller's path
 * (docs/runtime.md "Removal").
 *
 * reclaim_dir() moves a directory into the store's trash, a rename to
 * $SBX_ROOT/envs/.trash-<tag>-<8 hex> (atomic: the caller's view of it ends
 * there), and a detached reclaimer removes the trash later. The trash on
 * disk is the queue: nothing is lost when a process dies; the next
 * reclaimer, or sbx gc (reclaim_drain), finishes what one left.
 *
 * One reclaimer per store at most: it holds flock(LOCK_EX) on the
 * $SBX_ROOT/envs directory while it works (no lock file: nothing is left to
 * clean up). It removes every .trash-* entry, and exits only after a last
 * look under a second lock, the gate (flock on the $SBX_ROOT directory):
 *   reclaimer: trash empty -> gate EX -> look again -> empty: drop the work
 *              lock, then the gate, exit; else drop the gate, go on.
 *   caller:    rename -> work lock free? start one : gate SH -> work lock
 *              free now? start one : (the holder's last look sees ours).
 * So an entry added while a reclaimer ends is never left behind.
 *
 * Bounded (back-pressure): the caller removes its own entry inline when the
 * trash holds more than SBX_RECLAIM_MAX entries (default 64, ours counted),
 * or the filesystem has less free space than SBX_RECLAIM_MIN_FREE (a size;
 * default the smaller of 1 GiB and 5% of the filesystem): a flood of
 * removals slows to the pace of removal instead of keeping bytes without
 * bound. SBX_RECLAIM_SYNC=1 removes inline always (debugging, tests).
 *
 * The reclaimer is one fork of the caller in a session of its own (stdio on
 * /dev/null, no other fd), named sbx-reclaim, at nice +10. With the trash
 * empty it lingers, still holding the work lock, for SBX_RECLAIM_LINGER_MS
 * (default 500; 0: none) watching envs/ with inotify, so that a stream of
 * removals (an agent's create -> execute -> destroy loop) forks one
 * reclaimer rather than one per removal; then the last look above. sbx gc
 * ends a lingering one at once: it touches envs/ (an IN_ATTRIB on the
 * directory itself). A reclaimer lingers within RECLAIM_LIFETIME_MS of its
 * start only (a fork keeps its caller's memory image). The caller does
 * not wait for it (waiting for a double fork's intermediate to be scheduled
 * cost more than the removal on a loaded machine): a short-lived caller
 * exits and init reaps it; a long-lived one (sbx mcp's reaper threads call
 * this too) reaps those that ended when it starts the next.
 *
 * Test hook: SBX_RECLAIM_HOLD=FIFO makes the reclaimer read one byte from
 * FIFO (opened read-write, so it never sees end of file) before removing
 * each part (top-level child) of an entry, waiting at most 30 s each time
 * (one wait that times out ends the holding). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx.h"

#define RECLAIM_PREFIX ".trash-"
#define RECLAIM_MAX_DEFAULT 64
#define RECLAIM_MIN_FREE_CAP (1LL << 30)
/* How long sbx gc waits for a reclaimer at work before removing alongside. */
#define RECLAIM_GC_WAIT_MS 10000
#define RECLAIM_LINGER_DEFAULT_MS 500
#define RECLAIM_LIFETIME_MS 30000

/* The limits, read from the environment (reclaim_limits_from_env). */
typedef struct reclaim_limits {
	bool sync;	     /* SBX_RECLAIM_SYNC=1 */
	int64_t max_entries; /* SBX_RECLAIM_MAX, >= 0 */
	int64_t min_free;    /* SBX_RECLAIM_MIN_FREE in bytes; -1: the default */
	int64_t linger_ms;   /* SBX_RECLAIM_LINGER_MS, 0..RECLAIM_LIFETIME_MS */
} reclaim_limits;

void reclaim_limits_from_env(reclaim_limits *l);

/* Pure: what a lingering reclaimer does with one inotify event (mask, and
 * the name: "" for the directory itself) on the envs directory. */
typedef enum reclaim_event {
	RECLAIM_EV_IGNORE, /* not trash: keep waiting */
	RECLAIM_EV_WORK,   /* trash may have arrived: look */
	RECLAIM_EV_STOP,   /* sbx gc's nudge, or the directory went: stop lingering */
} reclaim_event;
reclaim_event reclaim_linger_event(uint32_t mask, const char *name);

/* Pure: whether a caller removes its entry inline, with `entries` trash
 * entries now (its own counted) and a filesystem of total_bytes with
 * avail_bytes free (0, 0 when unknown: free space then decides nothing). */
bool reclaim_inline(const reclaim_limits *l, size_t entries, uint64_t avail_bytes, uint64_t total_bytes);

/* Pure: the trash name for tag (an environment id, or "<id>-upper"): buf
 * gets ".trash-<tag>-<rnd as 8 hex>". -EINVAL when tag is empty, has a '/'
 * or does not fit. */
int reclaim_trash_name(const char *tag, uint32_t rnd, char *buf, size_t n);

/* Moves path (a directory on the filesystem of $SBX_ROOT/envs) to the
 * trash and arranges its removal (above). When it returns 0, path no
 * longer exists. A path that cannot be renamed there (a mount point,
 * another filesystem) is removed inline, as is one over the limits. 0 when
 * path is absent; negative errno when it is still there. */
int reclaim_dir(const sbx_ctx *ctx, const char *path, const char *tag);
/* The same for n (at most 8) paths at once, tags[i] for paths[i], one
 * reclaimer for all: negative errno when one of them is still there. */
int reclaim_dirs(const sbx_ctx *ctx, const char *const *paths, const char *const *tags, size_t n);
/* Entries someone else (a supervisor switching to its standby init,
 * docs/warm.md) renamed into the trash already, by their names under
 * $SBX_ROOT/envs (at most 8): their removal is arranged as above. */
int reclaim_moved(const sbx_ctx *ctx, const char *const *names, size_t n);

/* The first half of reclaim_dir: path renamed into the trash, *ret_name
 * its name there, for a later reclaim_moved (nothing removes it before:
 * until then it waits for the next reclaimer or sbx gc; *ret_name NULL:
 * arranged at once, out of memory). 0, or negative errno with path where
 * it was (EXDEV, a mount point: reclaim_dir then). */
int reclaim_hide(const sbx_ctx *ctx, const char *path, const char *tag, char **ret_name);

/* For the rest of this process's life, an inline removal does not wait
 * for a lingering supervisor's lock: this process is that supervisor (a
 * one-shot environment removing itself, runtime.h dispose). A reclaimer
 * it starts still waits. */
void reclaim_self_lingering(void);

/* While on, the calling thread's removals leave their trash for its own
 * reclaim_drain, which must follow (sbx gc: a reclaimer it started would
 * find the trash gone and outlive gc by its start-up). */
void reclaim_defer(bool on);

/* sbx gc: removes every trash entry now, in this process, after waiting up
 * to wait_ms for a running reclaimer to finish (then regardless). before,
 * if set, is called on each entry's path first (a quota's mounts). When it
 * returns, no reclaimer of this store holds the work lock. */
void reclaim_drain(const sbx_ctx *ctx, int64_t wait_ms, void (*before)(const char *path));
