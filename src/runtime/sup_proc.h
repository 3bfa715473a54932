/* The supervisor's side of a background process (docs/processes.md): the
 * pipes it creates for the command's stdout and stderr, drained from its
 * epoll loop into capped files, and the process's record.
 *
 *   $SBX_RUN/<id>/procs/p<n>/stdout, stderr   what it printed, up to the cap
 *   $SBX_RUN/<id>/procs/p<n>/status.json      the record (written atomically)
 *
 * The record is rewritten when the process starts, when a stream reaches its
 * cap (truncated), and when it exits or the environment ends under it; a
 * client reads these files directly (src/api/process.c), so a later client
 * sees what an earlier one started. The pipes are always read: output past
 * the cap is read and dropped, so the command never blocks on a full pipe.
 * Records stay until the environment is removed (sbx rm deletes $SBX_RUN/<id>),
 * the last SUP_PROC_KEEP of them: a new process removes the oldest exited
 * record beyond that. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#define SUP_PROC_WAITERS 64 /* clients waiting for one process's exit */
#define SUP_PROC_KEEP 256   /* records kept per environment */
#define SUP_PROC_DEFAULT_CAP (10LL << 20)

typedef struct sup_proc {
	int64_t n;	/* the process id's number: "p<n>" */
	char id[16];	/* "p<n>" */
	char *dir;	/* $SBX_RUN/<id>/procs/p<n> */
	int ep;		/* the supervisor's epoll set (our pipes are in it) */
	int rd[2];	/* stdout, stderr read ends; -1 once closed */
	int file[2];	/* the output files */
	int64_t len[2]; /* bytes kept in each file */
	bool trunc[2];	/* a stream reached the cap */
	int64_t cap;	/* bytes kept per stream */
	int64_t pid;	/* inside, once started; 0 before */
	int64_t started_ms, timeout_ms;
	json_t *argv;
	int waiters[SUP_PROC_WAITERS]; /* proc_wait connections */
	size_t n_waiters;
} sup_proc;

/* The number after the highest process id recorded under run_dir/procs (1
 * when none): a restarted supervisor (restore, resume after suspend) goes
 * on from there, so an id never names two processes. */
int64_t sup_proc_next_id(const char *run_dir);

/* A new process record n under run_dir/procs, with its pipes: the read ends
 * join epoll set ep, the write ends go to *ret_wr (the caller sends them to
 * init and closes them). */
int sup_proc_new(const char *run_dir, int ep, int64_t n, const json_t *argv, int64_t cap, int64_t timeout_ms,
		 sup_proc **ret, int ret_wr[2], sbx_err **err);
/* Whether fd is one of p's pipes. */
bool sup_proc_owns(const sup_proc *p, int fd);
/* Moves what is readable on fd (one of p's pipes) into its file. */
void sup_proc_drain(sup_proc *p, int fd);
/* The command runs as pid (inside): the record says running. */
void sup_proc_started(sup_proc *p, int64_t pid);
/* The command ended with wait status `status` (ended NULL), or the
 * environment ended under it (ended: why, e.g. "environment_stopped"):
 * what is left in the pipes is taken, they close, the record says exited,
 * and each waiter gets proc_exit. */
void sup_proc_exited(sup_proc *p, int status, bool timed_out, bool oom, const char *ended);
/* Adds conn as a waiter (it gets proc_exit and is closed at exit); false
 * if there is no room. */
bool sup_proc_add_waiter(sup_proc *p, int conn);
/* Forgets conn (its client went away); true if it was a waiter. */
bool sup_proc_drop_waiter(sup_proc *p, int conn);
/* Removes the record (the command never started). */
void sup_proc_discard(sup_proc *p);
/* Closes everything p holds (waiters included) and frees it; NULL-safe. */
void sup_proc_free(sup_proc *p);
