/* Presenting a trace stream (trace_format.h): strace-like text and its JSON
 * form (trace_render.c), statistics (trace_stats.c), the Chrome trace-event
 * export (trace_chrome.c) and the normalized view a replay is compared
 * with (trace_norm.c). Pure code over a stream in memory; output goes to a
 * FILE* or a json_t. The stream is untrusted: it is validated record by
 * record (trace_read.h) and a malformed one stops the walk with an error
 * naming the offset (text and Chrome output keep what was written before).
 *
 * Syscall numbers are decoded with the host's tables (names, flag values),
 * so a stream recorded on another architecture is refused rather than
 * mislabelled.
 *
 * File descriptors are resolved to what they refer to by following each
 * process's descriptor table through the stream (trace_state below):
 * successful open, openat, openat2, creat, open_by_handle_at, dup, dup2,
 * dup3, fcntl(F_DUPFD, F_DUPFD_CLOEXEC), socket, accept, accept4 and the
 * anonymous-inode makers (eventfd, epoll_create, timerfd_create, signalfd,
 * inotify_init, memfd_create, pidfd_open, ...) add entries; close and
 * close_range remove them; fcntl(F_SETFD), ioctl(FIOCLEX/FIONCLEX) and
 * close_range(CLOSE_RANGE_CLOEXEC) track close-on-exec; an exec drops the
 * close-on-exec entries. Threads share their process's table (it is keyed
 * by tgid); a new process gets a copy of its parent's (a TR_FORK record
 * does not carry clone flags, so a process sharing its table through
 * CLONE_FILES without CLONE_THREAD is treated as a copy). Not resolvable:
 * pipe, pipe2 and socketpair, whose descriptors are written to user memory
 * the record does not capture, and anything inherited from before the
 * trace began; such descriptors show as bare numbers. Relative paths are
 * joined to a known directory descriptor; relative to the working
 * directory they stay relative (the working directory is not tracked). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sbx.h"
#include "trace/trace_read.h"
#include "util/macro.h"
#include "util/hashmap.h"
#include "util/strbuf.h"

/* ---- filters (show, JSON, Chrome) ----------------------------------------- */

/* A record is kept when it passes both parts. pids: the record's tgid or tid
 * (for TR_FORK also the parent's) is listed; none listed = all. syscalls:
 * TR_SYSCALL and TR_DETERM records whose syscall is named (names as
 * trace_sys_name gives them, or "syscall_N"); NULL = all. Process events
 * (fork, exec, exit) and lost-event notes pass a syscall filter, as in
 * strace: they give the calls their context. */
typedef struct trace_filter {
	const uint32_t *pids;
	size_t n_pids;
	const char *const *syscalls; /* NULL-terminated */
} trace_filter;

/* invalid_argument naming an unknown syscall name. */
int trace_filter_check(const trace_filter *f, sbx_err **err);

/* ---- show: one line per record -------------------------------------------- */

/* Writes the stream as text, e.g.
 *     0.000123 [2] openat(AT_FDCWD, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 3 </etc/passwd>
 *     0.000200 [2] read(3</etc/passwd>, 0x7ffd5000, 4096) = 1234
 *     0.000300 [2] exit_group(0) = ?
 *     0.000010 [2] +++ fork child 3 +++
 *     0.000400 [3] +++ exec /bin/true ["true"] +++
 *     0.000500 [3] +++ exited 0 +++
 *     0.000600 [3] ~~~ clock_gettime answered by determinism engine ~~~
 *     0.000700 !!! 12 events lost !!!
 * Times are seconds since the header's start_ns (a syscall at its entry);
 * [pid] is the tgid, [pid:tid] for a thread other than the leader. Failed
 * calls end "= -1 ENOENT (No such file or directory)", calls whose exit was
 * not seen "= ?", calls the determinism engine answered " (emulated)". */
int trace_show(const void *buf, size_t len, const trace_filter *f, FILE *out, sbx_err **err);
/* The same records as a JSON array of objects (for --json). Each has seq
 * (index in the stream), t_ns (since start_ns; a syscall's entry), pid, tid
 * and type ("syscall", "fork", "exec", "exit", "lost", "determ"), and by type:
 *   syscall: syscall, nr, args (each as shown), ret (null when the exit was
 *            not seen), errno (name, on failure), dur_ns, paths (the string
 *            arguments), fd_paths ({"3": "/etc/passwd"}: descriptor arguments
 *            before the call, a returned descriptor after it), emulated
 *   fork:    parent_pid, parent_tid, thread
 *   exec:    filename, argv, argv_truncated
 *   exit:    status, process, exit_code | signal + core_dumped
 *   lost:    count
 *   determ:  kind, syscall, nr */
int trace_show_json(const void *buf, size_t len, const trace_filter *f, json_t **ret, sbx_err **err);

/* ---- stats ---------------------------------------------------------------- */

/* Summary of a stream:
 *   {records, lost, unknown_records, start_ns, duration_ns,
 *    syscalls: [{name, count, errors, time_us}] (by count, descending),
 *    files: {read, written, created, unlinked: [paths], renamed: [{from, to}]},
 *    execs: [{pid, filename, argv, argv_truncated}],
 *    processes: {count, threads, exits: [{pid, status, exit_code | signal, core_dumped}]},
 *    network: {syscalls: {name: count}, sockets, domains: {AF_INET: n}},
 *    determ: {kind: count}}
 * Files: read = descriptors read or mapped; written = descriptors written or
 * truncated, files opened for writing (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC,
 * O_APPEND) and truncate(); created = mkdir, mknod, link and symlink
 * targets, creat and O_CREAT opens (the file may have existed); unlinked =
 * unlink, unlinkat, rmdir. Successful calls only. Network: sockaddrs are
 * not captured, so network calls are counted, with the sockets made. */
int trace_stats(const void *buf, size_t len, json_t **ret, sbx_err **err);
/* The summary above as text for the CLI. */
int trace_stats_print(const json_t *stats, FILE *out, sbx_err **err);

/* ---- Chrome trace-event export -------------------------------------------- */

/* Writes {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
 * (opens in Perfetto and chrome://tracing), streaming, one event per line:
 * "X" per syscall (ts, dur in µs since start_ns; name = syscall; args = the
 * decoded arguments and ret), "i" for fork, exec, exit, lost and determ, and
 * "M" process_name / thread_name from exec argv[0] (inherited at fork). A
 * malformed record ends the array early (the output still parses) and the
 * call fails. */
int trace_chrome(const void *buf, size_t len, const trace_filter *f, FILE *out, sbx_err **err);

/* ---- normalized view for replay comparison --------------------------------- */

/* Per process (numbered in order of appearance, the first is 0; keyed by
 * tgid, a fork of a tgid that exited starts a new one), per thread (by tid in
 * order of appearance, the first is 0), a sequence of items:
 *   syscall:  name + its captured strings + "ok" | errno name | "?" (exit not
 *             seen), e.g. openat("/tmp/x") = ENOENT. Values are left out on
 *             purpose: counts and addresses vary between faithful runs.
 *             Calls that trace_sys_timing_dependent() names are skipped.
 *   fork:     fork(process 3) / thread(2)
 *   exec:     exec("/bin/true", ["true"])
 *   determ:   determ(clock, clock_gettime) (kind and call, not the value)
 * with consecutive repeats of an item collapsed into one. Besides items,
 * each process has its parent's index, its execs and its exit status, and
 * the whole has the count of lost events (a comparison that lost events
 * cannot be conclusive; the counts are reported with it). */
typedef struct trace_norm trace_norm;

int trace_norm_build(const void *buf, size_t len, trace_norm **ret, sbx_err **err);
void trace_norm_free(trace_norm *n);
static inline void trace_norm_freep(trace_norm **n)
{
	trace_norm_free(*n);
}
#define _cleanup_trace_norm_ _cleanup_(trace_norm_freep)
/* The view as text (one item per line), for debugging and `sbx trace norm`. */
int trace_norm_print(const trace_norm *n, FILE *out, sbx_err **err);

typedef enum trace_norm_kind {
	TRACE_NORM_MATCH = 0,
	TRACE_NORM_PROCESSES, /* number of processes */
	TRACE_NORM_PARENT,    /* a process's parent */
	TRACE_NORM_EXEC,      /* a process's execs (filename, argv) */
	TRACE_NORM_EXIT,      /* a process's exit status */
	TRACE_NORM_THREADS,   /* number of threads of a process */
	TRACE_NORM_ITEM,      /* an item of a thread's sequence */
} trace_norm_kind;

typedef struct trace_norm_diff {
	trace_norm_kind kind;
	int64_t process, thread, item; /* -1 when not about one */
	char *expected, *actual;       /* a's and b's side, short (NULL on a match) */
	uint64_t lost_a, lost_b;       /* events lost in each stream */
} trace_norm_diff;

/* The first divergence of b from a: the process tree first (count, then per
 * process parent, execs, exit), then items process by process, thread by
 * thread; an item missing at the end of a sequence reads "(end)". Returns
 * 0 when they match, 1 when they differ (ret filled either way), negative
 * on error. Clear ret with trace_norm_diff_clear. */
int trace_norm_compare(const trace_norm *a, const trace_norm *b, trace_norm_diff *ret, sbx_err **err);
void trace_norm_diff_clear(trace_norm_diff *d);
/* True when the two process trees are the same up to the order of siblings:
 * as many processes, and each subtree the same execs (filename, argv), exit
 * status and children. What concurrency may change is which sibling came
 * first (the numbering), never what a process ran or how it ended. False
 * on ENOMEM and on trees deeper than 4096. */
bool trace_norm_same_tree(const trace_norm *a, const trace_norm *b);
const char *trace_norm_kind_name(trace_norm_kind k); /* "match", "processes", ..., "item" */
/* {match, kind, process, thread, item, expected, actual, lost_a, lost_b}; NULL on ENOMEM. */
json_t *trace_norm_diff_json(const trace_norm_diff *d);

/* ==== shared by the view modules (trace_decode.c, trace_model.c, trace_render.c) ============ */

/* Names. */
const char *trace_determ_kind_name(uint32_t kind); /* "clock", ...; NULL if unknown */
const char *trace_errno_name(int e);		   /* "ENOENT"; NULL if unknown */
bool trace_ret_is_err(int64_t ret);		   /* -4095 <= ret <= -1 */

/* The string buffer and hash maps are util/strbuf.h and util/hashmap.h;
 * the trace_* names stay for the trace files. A failed allocation sets oom
 * and drops further text, so callers check once at the end. */
typedef strbuf trace_sbuf;
#define trace_sb_addf strbuf_addf
#define trace_sb_add strbuf_add
#define trace_sb_lit strbuf_lit
/* s[0..n) with non-printable bytes, '"' and '\\' escaped (\n, \t, \xNN):
 * what the text forms print for strings from the trace. */
#define trace_sb_esc strbuf_add_escaped
#define trace_sb_reset strbuf_reset
#define trace_sb_free strbuf_free
#define trace_sb_str strbuf_str /* "" when empty */
/* "exited 0", "killed by SIGKILL (core dumped)": a TR_EXIT status as a wait status. */
void trace_sb_status(trace_sbuf *b, int32_t status);
/* argv of a TR_EXEC as ["a", "b"] (escaped), "..." after it when truncated. */
void trace_sb_argv(trace_sbuf *b, const trace_ev *ev);
/* A JSON string of arbitrary bytes: as is when valid UTF-8, else escaped as
 * trace_sb_esc does. */
json_t *trace_json_str(const char *s);
/* A TR_EXEC's argv as a JSON array; a TR_EXIT as {status, process,
 * exit_code | signal + core_dumped}. NULL on ENOMEM. */
json_t *trace_json_argv(const trace_ev *ev);
json_t *trace_json_exit(const trace_ev *ev);

typedef hashmap trace_map; /* uint64 key -> value slot */
#define trace_map_slot hashmap_slot
#define trace_map_get hashmap_get
#define trace_map_free hashmap_free
typedef strmap trace_smap; /* the same keyed by string (copied) */
#define trace_smap_slot strmap_slot
#define trace_smap_intern strmap_intern
#define trace_smap_free strmap_free
#define trace_smap_sorted strmap_sorted

/* A compiled filter. */
typedef struct trace_fmatch {
	const trace_filter *f;
	int32_t *nrs; /* sorted; NULL with all_sys */
	size_t n_nrs;
	bool all_sys;
} trace_fmatch;
int trace_fmatch_init(trace_fmatch *m, const trace_filter *f, sbx_err **err);
bool trace_fmatch_keep(const trace_fmatch *m, const trace_ev *ev);
void trace_fmatch_free(trace_fmatch *m);

/* The process and descriptor model described at the top. */
enum { TRACE_FD_FILE = 1, TRACE_FD_SOCKET = 2, TRACE_FD_OTHER = 3 };
typedef struct trace_fd {
	int32_t fd;
	uint8_t kind;
	bool cloexec;
	char *path; /* "/etc/passwd", "socket:[AF_INET,SOCK_STREAM]", "anon_inode:[eventfd]" */
} trace_fd;
typedef struct trace_proc {
	uint32_t pid;
	trace_fd *fds; /* sorted by fd */
	size_t n_fds, cap_fds;
	char *name; /* argv[0] of its last exec, inherited at fork; NULL if unknown */
	bool forked, exited;
} trace_proc;
typedef struct trace_state {
	struct trace_file_header hdr;
	trace_map procs; /* tgid -> trace_proc* */
	uint64_t n_procs, n_threads;
} trace_state;

/* invalid_argument unless the stream was recorded on the host's architecture. */
int trace_check_arch(const struct trace_file_header *h, sbx_err **err);
/* Starts an empty model; checks the architecture. */
int trace_state_init(trace_state *st, const struct trace_file_header *h, sbx_err **err);
void trace_state_free(trace_state *st);
trace_proc *trace_state_proc(const trace_state *st, uint32_t pid); /* NULL if unseen */
const trace_fd *trace_state_fd(const trace_state *st, uint32_t pid, int64_t fd);
/* The k-th string argument (0 or 1) of a TR_SYSCALL, joined to its
 * directory descriptor's path when relative and the descriptor (the argument
 * just before it) is known. False when there is no such string. */
bool trace_state_arg_path(const trace_state *st, const trace_ev *ev, int k, trace_sbuf *out);
/* Applies a record's effect on processes and descriptors. -ENOMEM. */
int trace_state_apply(trace_state *st, const trace_ev *ev);

/* A TR_SYSCALL decoded for display. Use: trace_dec_args (against the state
 * before the call), trace_state_apply, trace_dec_ret (after: a returned
 * descriptor's path). Buffers are reused from record to record. */
typedef struct trace_dec {
	const char *name; /* syscall name or "syscall_N" */
	int nargs;
	trace_sbuf arg[6];
	trace_sbuf ret;	      /* "3 </etc/passwd>", "-1 ENOENT (No such file or directory)", "?", "0x7f..." */
	trace_sbuf fdpath[6]; /* raw path of descriptor argument i before the call ... */
	bool fdknown[6];      /* ... when it was known */
	int64_t ret_fd;	      /* a descriptor the call returned, else -1 */
	bool err;	      /* the call failed */
	char namebuf[24];
} trace_dec;
void trace_dec_args(trace_dec *d, const trace_state *st, const trace_ev *ev);
void trace_dec_ret(trace_dec *d, const trace_state *st, const trace_ev *ev);
bool trace_dec_oom(const trace_dec *d);
void trace_dec_free(trace_dec *d);
/* "openat" or "syscall_N" into buf (24 bytes). */
const char *trace_sys_label(int32_t nr, char buf[24]);
/* Seconds since start as "0.000123" ("-0.000123" before it). */
void trace_fmt_time(char out[32], uint64_t ts, uint64_t start);
/* A syscall's entry time (enter_ns, or ts_ns when that is 0). */
uint64_t trace_ev_start(const trace_ev *ev);
