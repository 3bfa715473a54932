/* Module-private interface of the supervisor (one per live environment; see
 * supervisor.c): its state, shared by the files it is split into, and the
 * functions they call across files. In reading order:
 *
 *   supervisor.c   the event loop (supervisor_main) and its dispatch (client
 *                  requests, init's events, timers, signals), the helpers
 *                  every concern uses (replies, the epoll set, the idle
 *                  timers, warnings, the exec table, init's end)
 *   sup_start.c    supervisor_start: the fork that detaches the supervisor,
 *                  and its report to the creator
 *   sup_init.c     init's start: clone, maps, host trees, "go", cgroup, ready
 *   sup_exec.c     a command's request (trace, background), proc_kill and
 *                  proc_wait, a command's timeout (sup_proc.c: a background
 *                  process's pipes and record)
 *   sup_warm.c     pause, resume, idle suspend (docs/warm.md)
 *   sup_egress.c   the egress proxy's thread (network allow)
 *   sup_ports.c    published ports: the host listeners, their threads
 *   sup_oneshot.c  one-shot environments: ownership, hand-out, removal
 *   sup_phase.c    the switch to the agent phase (docs/secrets.md)
 *   sup_teardown.c the environment's end: init killed, processes reaped,
 *                  cgroup and devices removed
 *   sup_restore.c  restore in place: the two-step restart, the standby init
 *
 * The loop calls into the concerns, and the concerns call the helpers
 * declared under supervisor.c. The few calls from one concern into another
 * go one way (no cycle): init's ready report starts the egress proxy
 * (sup_init -> sup_egress); what replaces or ends init undoes what others
 * run (sup_restore, sup_teardown -> sup_warm_resume, sup_egress_stop,
 * sup_restore_standby_drop; sup_teardown -> sup_ports_stop; sup_phase ->
 * sup_egress_swap, sup_restore_standby_drop), a restore starts init again
 * (sup_restore -> sup_init), and the standby's helper drops its copies of
 * the published ports (sup_restore -> sup_ports_close_copies). Everything
 * runs on the loop's one thread, but the egress proxy's (it reads s->allow,
 * s->plugins and s->egress_log, swapped only while it is stopped) and the
 * published ports' (they read s->c and their own state only, and reach
 * init through the control socket, as a client would). */
#pragma once
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "plugin/plugin.h"
#include "policy/egress_match.h"
#include "runtime/runtime.h"
#include "runtime/sup_proc.h"
#include "trace/bpf_rec.h"
#include "util/err.h"
#include "util/macro.h"

#define MAX_CONNS 1024
#define MAX_SUP_EXECS 1024

typedef struct sup_exec {
	int64_t id;
	int conn;  /* client connection fd, -1 once the client is gone */
	int timer; /* timerfd for the timeout, -1 if none */
	bool started, timed_out;
	int64_t timeout_ms;   /* the timeout that applies (the command's or the environment's), 0: none */
	bool traced;	      /* holds the environment's one recorder slot */
	const char *recorder; /* "bpf" or "ptrace" when traced */
	bool engine;	      /* traced: init runs it under the ptrace engine (sup_exec.c start_trace) */
	struct timespec start;
	struct itimerspec paused_left; /* the timeout's remaining time while paused */
	sup_proc *bg; /* a background process (docs/processes.md): no client, output to files */
	/* sbx run: the environment stops when this command ends (CTL_F_STOP_AFTER),
	 * and its remover lets the unmount follow the reply (CTL_F_LINGER). */
	bool stop_after, linger;
} sup_exec;

/* One standby init (docs/warm.md "Restore"): pid, pidfd and sock once its
 * helper has reported (-1 before); ready: its "ready" report, NULL while
 * it builds; warnings: what preparing its trees warned of (send_go); dir:
 * its writable layer is envs/<id>/standby/<dir>/{upper,work}. */
typedef struct sup_standby {
	pid_t pid;
	int pidfd, sock, proxy;
	json_t *ready, *warnings;
	int dir;
} sup_standby;
/* How many standby inits an environment keeps (docs/warm.md "Restore"):
 * two, so that restores back to back each find one ready while the next
 * builds. */
#define SUP_STANDBYS 2

typedef struct supervisor {
	env_config *c;
	int ep, listen_fd, init_sock, sig_fd, ttl_fd;
	pid_t init_pid;
	int init_pidfd;
	sbx_cgroup *cg;
	sup_exec execs[MAX_SUP_EXECS];
	bpf_rec *rec;	 /* the eBPF recorder of the one traced command, if it runs */
	int rec_fd;	 /* where it writes (our copy of the client's file) */
	char *rec_error; /* why eBPF was not used, for the trace */
	size_t n_execs;
	int64_t next_id;
	/* Clients waiting for init's in-order replies (ps, file operations). */
	int waiters[256];
	size_t n_waiters;
	int landlock_abi;
	json_t *warnings;
	int64_t oom_seen; /* OOM kills already attributed to a command */
	int freeze_conn;  /* the snapshot client holding the freeze, or -1 */
	bool stopped;	  /* frozen by SIGSTOP through init (no cgroup freezer) */
	int proxy_listen; /* network allow: listening socket inside the environment */
	int proxy_stop;	  /* eventfd that ends the proxy thread */
	pthread_t proxy_thread;
	bool proxy_running;
	egress_allowlist *allow;
	int egress_log;
	struct sup_ports *ports; /* published ports' threads (sup_ports.c), NULL if none run */
	plugin_host *plugins;	 /* the policy's plugins (a separate process), or NULL */
	json_t *plugin_limits;	 /* limits a plugin lowered at create, for the creator */
	bool frozen;
	bool stopping;
	int stop_conn;	      /* replied to once everything is cleaned up */
	bool linger_ok;	      /* the stop's asker removes the environment (CTL_F_LINGER) */
	int linger_ns;	      /* the dead init's mount namespace, held past the reply; -1 */
	bool phase_pending;   /* the agent phase: init is ending the setup phase's processes */
	json_t *phase_limits; /* cgroup limits to lower to once it has */
	/* Warm environments (docs/warm.md): sbx pause, idle suspend. */
	bool paused;	   /* frozen by sbx pause (cgroup freezer, or init's SIGSTOP) */
	int idle_fd;	   /* idle suspend timer, -1 if none */
	int64_t next_proc; /* the next background process id's number; 0: not read yet */
	/* An in-place restart (restore): the client between "ended" and
	 * "start", or -1; the warnings a start gives start after the first
	 * n_base_warnings; loop_reset: descriptors changed, poll again. */
	int restart_conn;
	size_t n_base_warnings;
	bool loop_reset;
	/* Standby inits (docs/warm.md "Restore"): built in the background
	 * after an in-place restart, for the same layers (sb_snapshot), one at
	 * a time, up to SUP_STANDBYS; the next restore to sb_snapshot makes
	 * sb[0] the active init (sb[1] is then the next). n_sb exist, the last
	 * of them building while sb_helper_fd >= 0 or its ready is NULL.
	 * old_init_pid: the init it replaced, killed and not reaped yet (SIGCHLD
	 * reaps it). old_mnt_ns: the replaced init's mount namespace, held so
	 * that its overlays' unmount (which syncs the upper's filesystem) is not
	 * the dying init's, on the next command's way: the next standby's helper,
	 * or a releaser forked for it, lets it go at SCHED_IDLE (ns_helpers:
	 * those, not reaped yet; 0: a free place). */
	sup_standby sb[SUP_STANDBYS];
	size_t n_sb;
	pid_t old_init_pid, ns_helpers[4];
	int old_mnt_ns;
	/* The next standby, not started yet (standby_defer): its snapshot, and
	 * the timer that starts it if no command comes first (-1 if none);
	 * sb_quick: a restore came before the deferred build started (restores
	 * back to back: the next one is built at once, not deferred). */
	char *sb_deferred;
	int sb_defer_fd;
	bool sb_quick;
	char *sb_snapshot;
	pid_t sb_helper;     /* the helper process that spawns the last one (standby_build), or -1 */
	int sb_helper_fd;    /* its report, or -1 */
	int sb_waiter;	     /* a restore_standby that came while sb[0] builds, or -1 */
	json_t *sb_waiter_m; /* its request */
	/* A pool entry owned by a one-shot taker (CTL_OP_OWN) whose hand-out
	 * (env_config.handout) is still to come: when it was owned (realtime
	 * ms; 0: none pending), and its deadline (monotonic ms). */
	int64_t handout_taken_ms, handout_due_ms;
} supervisor;

/* ---- supervisor.c: the loop's helpers ------------------------------------ */

/* The epoll set: fd in (EPOLLIN), fd out. */
void sup_ep_add(supervisor *s, int fd);
void sup_ep_del(supervisor *s, int fd);
/* Sends m (with fds) on fd if fd >= 0, and releases m (NULL-safe). */
void sup_send_json(int fd, json_t *m, const int *fds, size_t n);
/* The control protocol's error event for e. */
json_t *sup_err_json(const sbx_err *e);
/* Arms the idle TTL and idle suspend timers: they run while no command
 * does and the environment is not paused. */
void sup_arm_ttl(supervisor *s);
/* A client connection leaves the epoll set and is closed. */
void sup_close_conn(supervisor *s, int fd);
/* Stops the eBPF recorder of the traced command, if one runs; fills info
 * (records, lost, error) when not NULL. */
void sup_stop_recorder(supervisor *s, json_t *info);
/* Forgets exec x (its timer, its client, its background process): the idle
 * timers are armed again, and a deferred standby starts once none runs. */
void sup_drop_exec(supervisor *s, sup_exec *x);
/* Asks init to send sig to exec id. */
void sup_signal_exec(supervisor *s, int64_t id, int sig);
/* The environment ends once this batch of events is handled; conn (or -1)
 * gets "stopped" after the teardown. */
void sup_begin_stop(supervisor *s, int conn);
/* Ends a snapshot's freeze (cgroup freezer or init's SIGSTOP). */
void sup_thaw(supervisor *s);
/* Answers every client still waiting for a command: the environment was
 * `what` ("stopped", "restored") under it. */
void sup_fail_execs(supervisor *s, const char *what);
/* SIGKILL to init (its pid namespace goes with it); sup_kill_init also
 * waits until it is reaped. */
void sup_signal_init(supervisor *s);
void sup_kill_init(supervisor *s);
/* Appends a warning for the creator (and sbx inspect). */
void sup_add_warning(supervisor *s, const char *fmt, ...) _printf_(2, 3);
/* The supervisor, in the process supervisor_start forked: the environment
 * started, reported on ready_fd, served until it ends; never returns. */
_noreturn_ void supervisor_main(env_config *c, int ready_fd);

/* ---- sup_start.c: the supervisor's own start ------------------------------- */

/* Tells the creator how the start went (m, released; fd, closed); false if
 * it could not be told (the creator is gone). */
bool sup_start_report(int fd, json_t *m);

/* ---- sup_init.c: init's start ---------------------------------------------- */

/* A new init: clone, maps, trees, cgroup. *ret_pid, *ret_pidfd and
 * *ret_sock are set as soon as it exists (the caller kills it on failure);
 * on success it builds its root (its writable layer under layer_dir) while
 * the caller goes on, and reports on *ret_sock (sup_init_ready_read).
 * sibling: called in a helper child of the supervisor, the new init is the
 * supervisor's child all the same (CLONE_PARENT). */
int sup_init_spawn(supervisor *s, const char *layer_dir, bool sibling, pid_t *ret_pid, int *ret_pidfd,
		   int *ret_sock, sbx_err **err);
/* Waits for the child's verdict on sock: ready (*ret_m; with network allow
 * the proxy's listening socket, *ret_proxy), or the step that failed. */
int sup_init_ready_read(int sock, json_t **ret_m, int *ret_proxy, sbx_err **err);
/* A ready init's report applied: its Landlock ABI, warnings, the egress
 * proxy (network allow). */
int sup_init_ready_apply(supervisor *s, const json_t *m, sbx_err **err);
/* The environment's init (s->init_*), spawned, ready and applied; listen:
 * the first start also makes the control socket (s->listen_fd). */
int sup_init_start(supervisor *s, bool listen, sbx_err **err);

/* ---- sup_exec.c: commands --------------------------------------------- */

/* CTL_OP_EXEC on conn: a new exec forwarded to init with the client's fds
 * (m and fds are the request's: m is rewritten, fds are the caller's to
 * close), or conn answered with the refusal and closed. */
void sup_exec_request(supervisor *s, int conn, json_t *m, int *fds, size_t n_fds);
/* CTL_OP_PROC_KILL, CTL_OP_PROC_WAIT; returns whether conn is kept (a
 * waiter for the process's exit). */
bool sup_exec_proc(supervisor *s, int conn, const char *op, const json_t *m);
/* The timeout timer fd fired: its command is killed (timed_out). */
void sup_exec_timeout(supervisor *s, int fd);

/* ---- sup_warm.c: pause, resume, idle suspend ------------------------------ */

/* CTL_OP_PAUSE: every process frozen, the timeouts stopped; returns whether
 * conn is kept (no cgroup: init's stop_all reply answers it). */
bool sup_warm_pause(supervisor *s, int conn);
/* Thaws what sup_warm_pause froze (the timeouts run again); nothing when
 * not paused. */
void sup_warm_resume(supervisor *s);
/* A request that needs the processes (exec, ps, file, phase) while paused:
 * resumed first, unless it said no_auto_resume; false (conn answered) when
 * refused. */
bool sup_warm_gate(supervisor *s, int conn, const json_t *m);
/* The idle suspend timer fired: the environment ends, marked suspended. */
void sup_warm_idle(supervisor *s);

/* ---- sup_egress.c: the egress proxy (network allow) ---------------------- */

/* Starts the proxy thread on s->proxy_listen (init's socket) with the
 * environment's allowlist, logging to $SBX_RUN/<id>/egress.log. */
int sup_egress_start(supervisor *s, sbx_err **err);
/* The agent phase's allowlist: the thread is stopped (the setup phase's
 * connections end), the allowlist replaced, the thread started again on
 * the same socket. */
int sup_egress_swap(supervisor *s, const json_t *allow, bool open, sbx_err **err);
/* CTL_OP_EGRESS (sbx_env_egress_set): the running proxy's allowlist
 * replaced as sup_egress_swap does, and kept for a later start of init;
 * answers conn with egress {ok} or an error. */
void sup_egress_set(supervisor *s, int conn, const json_t *m);
/* Ends the thread and closes what the proxy holds; safe when none runs. */
void sup_egress_stop(supervisor *s);

/* ---- sup_ports.c: published ports (docs/ports.md) ------------------------ */

/* Binds and listens on every c->ports (before anything else of the
 * environment exists): a failure fails the start, but for a restart
 * (c->ports_lenient), where it is a warning and that port is not served. */
int sup_ports_bind(supervisor *s, sbx_err **err);
/* [{port, protocol, host_ip, host_port, bound}]: the mappings as bound, for
 * the creator's record. */
json_t *sup_ports_json(const supervisor *s);
/* The thread that accepts on the bound listeners (none when nothing is
 * bound); each connection gets a thread that relays it into the
 * environment's loopback. Needs the control socket (s->listen_fd). */
int sup_ports_start(supervisor *s, sbx_err **err);
/* Closes the listeners and ends every thread and connection; safe when
 * none runs. */
void sup_ports_stop(supervisor *s);
/* In a child forked from the supervisor (the standby's helper, which may
 * outlive it): closes its copies of the listeners, which would otherwise
 * keep the host ports bound after the environment ended. */
void sup_ports_close_copies(supervisor *s);

/* ---- sup_oneshot.c: one-shot environments ---------------------------------- */

/* A one-shot environment removed (the API's dispose) with its pool claim;
 * nothing for any other. */
void sup_oneshot_dispose(supervisor *s);
/* CTL_OP_OWN with the taker's pidfd: the pool entry claimed and owned in
 * one step; returns whether conn is kept (its first command comes on it). */
bool sup_oneshot_own(supervisor *s, int conn, int *fds, size_t n_fds);
/* The pending hand-out, if any (s->handout_due_ms has passed). */
void sup_oneshot_handout(supervisor *s);

/* ---- sup_phase.c: the agent phase ------------------------------------------ */

/* CTL_OP_PHASE: what later commands get is narrowed and init is asked to
 * end the setup phase; returns whether conn is kept (init's reply answers
 * it, after sup_phase_end). */
bool sup_phase_begin(supervisor *s, int conn, json_t *m);
/* Init's reply to the switch: the cgroup limits lowered (an error goes
 * into reply as limits_error). */
void sup_phase_end(supervisor *s, json_t *reply);
/* CTL_OP_ENV: the environment's variables replaced, here and in init;
 * answers conn. */
void sup_env_set(supervisor *s, int conn, const json_t *m);

/* ---- sup_teardown.c: the environment's end ---------------------------------- */

/* The teardown in three steps (sup_teardown runs them in a row): init gets
 * its SIGKILL (what runs beside it stopped first); every process of the
 * environment is gone and reaped; the cgroup, the devices and the control
 * socket are removed. */
void sup_teardown_signal(supervisor *s);
void sup_teardown_reap(supervisor *s);
void sup_teardown_cgroup(supervisor *s);
void sup_teardown(supervisor *s);

/* ---- sup_restore.c: restore in place ------------------------------------- */

/* CTL_OP_RESTART: every process ends, the supervisor stays; refused (conn
 * answered) where a new supervisor is the safe way. Returns whether conn
 * is kept (it sends CTL_OP_START next). */
bool sup_restore_end(supervisor *s, int conn);
/* CTL_OP_START after sup_restore_end: a new init on m's layers; on failure
 * the environment is over. conn is answered; the caller closes it. */
void sup_restore_start(supervisor *s, int conn, const json_t *m);
/* CTL_OP_RESTORE_STANDBY: the first standby init becomes the environment's;
 * returns whether conn is kept (a standby still building answers it once
 * ready). */
bool sup_restore_standby(supervisor *s, int conn, const json_t *m);
/* The standby's helper reported (s->sb_helper_fd readable). */
void sup_restore_standby_spawned(supervisor *s);
/* Whether fd is a standby's socket; its report (ready, or failed). */
bool sup_restore_standby_owns(const supervisor *s, int fd);
void sup_restore_standby_event(supervisor *s, int fd);
/* A child reaped by the loop: whether it was the standbys' (a standby,
 * then all are dropped, or a helper that let a replaced init's mounts go). */
bool sup_restore_reaped(supervisor *s, pid_t dead);
/* Waits for the helpers that still unmount a replaced init's overlays. */
void sup_restore_wait_helpers(supervisor *s);
/* inspect's "standby": the next one's pid, snapshot, ready, and how many
 * exist and are ready; NULL if none. */
json_t *sup_restore_standby_info(const supervisor *s);
/* Ends every standby, if any, and forgets them (a waiting restore is refused). */
void sup_restore_standby_drop(supervisor *s);
/* Builds the deferred standby now, if one waits (s->sb_deferred). */
void sup_restore_standby_deferred(supervisor *s);
