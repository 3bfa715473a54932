/* The control protocol: the narrow interface between the three parties of a
 * live environment (docs/runtime.md), like bubblewrap's PRIV_SEP_OP_*.
 *
 *   client (src/api) --ctl.sock--> supervisor --init socket--> init
 *                                  supervisor <--------------- setup child
 *
 * One JSON object per SOCK_SEQPACKET message (util/fd.h: json_send and
 * json_recv), at most CTL_MSG_MAX bytes and CTL_MAX_FDS descriptors
 * (SCM_RIGHTS). A request names its operation in "op"; a reply or event
 * names itself in "ev". An error is {"ev":"error", "code" (API.md's codes),
 * "errno", "message"} in every direction.
 *
 * Which party sends what:
 *   client -> supervisor: exec, signal, ps, file, freeze, thaw, phase, info, stop,
 *                         proc_kill, proc_wait (background processes, docs/processes.md),
 *                         restart, start, restore_standby (an in-place restore)
 *   supervisor -> client: started, exit, error, frozen, thawed, stopped, info, ended, restarted,
 *                         and init's ps/file/phase replies passed on as they are
 *   supervisor -> init:   spawn, signal, ps, file, stop_all, phase
 *   init -> supervisor:   spawned, spawn_failed, exited, ps, file, stop_all, phase
 *   supervisor -> setup:  go (with the prepared trees), attached
 *   setup -> supervisor:  ready (with the proxy socket for network allow), error
 * What the supervisor takes from init is decoded by ctl_init_event_decode
 * (pure, fuzzed by tests/fuzz/fuzz_ctl.c). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"
#include "util/fd.h"

#define CTL_MSG_MAX FD_MSG_MAX	   /* bytes in one message */
#define CTL_MAX_FDS FD_MSG_MAX_FDS /* descriptors with one message */

/* ---- the two keys that name a message ---- */
#define CTL_F_OP "op"
#define CTL_F_EV "ev"

/* ---- operations ---- */
#define CTL_OP_EXEC "exec"
#define CTL_OP_SIGNAL "signal"
#define CTL_OP_PS "ps"
#define CTL_OP_FILE "file"
#define CTL_OP_FREEZE "freeze"
#define CTL_OP_THAW "thaw"
#define CTL_OP_PHASE "phase"
#define CTL_OP_EGRESS "egress" /* {network_allow: [...]}: the live proxy's new allowlist -> egress {ok} */
#define CTL_OP_INFO "info"
#define CTL_OP_STOP "stop"
#define CTL_OP_STOP_ALL "stop_all"
#define CTL_OP_SPAWN "spawn"
#define CTL_OP_GO "go"
#define CTL_OP_ATTACHED "attached"
#define CTL_OP_PAUSE "pause"   /* client -> supervisor: freeze every process (docs/warm.md) */
#define CTL_OP_RESUME "resume" /* client -> supervisor: thaw */
/* Background processes (docs/processes.md): an exec with "background": true
 * is answered at once with "started" carrying its "process_id"; these two
 * name one by that id. */
#define CTL_OP_PROC_KILL "proc_kill" /* {process_id, sig} -> proc_killed {delivered} */
#define CTL_OP_PROC_WAIT "proc_wait" /* {process_id} -> proc_exit once it has exited */
/* An in-place restart (sbx restore, docs/runtime.md "Restore in place"), two
 * steps on one connection: "restart" ends every process and reaps init,
 * then answers "ended" (the writable layer is no longer mounted anywhere);
 * the client empties it and sends "start" with the new layers, answered
 * "restarted" once a new init is ready behind the same walls. A refusal of
 * "restart" ("error") changes nothing; a client gone before "start", or a
 * failed start, stops the environment. */
#define CTL_OP_RESTART "restart"
#define CTL_OP_START "start" /* {layers: host paths of the snapshot's layer trees, topmost first} */
/* "start" may also carry {snapshot_id, standby: true}: once the new init is
 * ready the supervisor builds, in the background, a standby init for the
 * same layers (docs/warm.md "Restore"). "restore_standby" {snapshot_id,
 * trash: [name for upper/, name for work/]} then restores to that snapshot
 * in one step: the active init is killed (reaped later), upper/ and work/
 * are renamed to $SBX_ROOT/envs/<trash names> (the client's reclaimer
 * removes them), the standby's empty ones take their place, the standby
 * becomes init, and the answer is "restarted" (with standby: true). A
 * refusal ("error": no standby ready for that snapshot, or what "restart"
 * refuses) changes nothing: the client then takes the two steps above. */
#define CTL_OP_RESTORE_STANDBY "restore_standby"
/* client -> supervisor, with one fd, a pidfd of the client's process: a
 * one-shot create that took a warm pool's entry makes it its own (runtime.h
 * one_shot). The supervisor claims the entry (renames its token to the
 * claim, docs/warm.md) and owns it in one step: "owned" {warnings}, or an
 * error (conflict: another create took it). After "owned" the connection
 * stays open for the client's first request (its exec); the supervisor
 * rewrites the entry's state as handed out a moment later (runtime.h
 * handout). */
#define CTL_OP_OWN "own"
#define CTL_EV_OWNED "owned"
/* client -> supervisor: {env: ["K=V", ...]}, the environment's own variables
 * from now on (replacing the ones it was started with): a warm pool's entry
 * handed out to a create that names some (docs/warm.md). The supervisor
 * keeps them for every init it starts later, drops a standby init built with
 * the old ones, and passes them on to init ahead of any later request ->
 * "env" {ok}. */
#define CTL_OP_ENV "env"
#define CTL_EV_ENV "env"

/* ---- events and replies ---- */
#define CTL_EV_ERROR "error"
#define CTL_EV_READY "ready"
#define CTL_EV_SPAWNED "spawned"
#define CTL_EV_SPAWN_FAILED "spawn_failed"
#define CTL_EV_EXITED "exited"
#define CTL_EV_PS "ps"
#define CTL_EV_FILE "file"
#define CTL_EV_PAUSED "paused"
#define CTL_EV_RESUMED "resumed"
#define CTL_EV_STOP_ALL "stop_all"
#define CTL_EV_PHASE "phase"
#define CTL_EV_EGRESS "egress"
#define CTL_EV_STARTED "started"
#define CTL_EV_EXIT "exit"
#define CTL_EV_FROZEN "frozen"
#define CTL_EV_THAWED "thawed"
#define CTL_EV_STOPPED "stopped"
#define CTL_EV_INFO "info"
#define CTL_EV_PROC_KILLED "proc_killed"
#define CTL_EV_PROC_EXIT "proc_exit" /* {process_id, running: false} */
#define CTL_EV_ENDED "ended"	     /* restart: every process ended, init reaped */
#define CTL_EV_RESTARTED "restarted" /* start: {init_pid, landlock_abi, warnings} */

/* ---- fields (named where more than one party reads them) ---- */
#define CTL_F_ID "id"			  /* exec id (spawn, spawned, spawn_failed, exited) */
#define CTL_F_PID "pid"			  /* spawned: the command's pid (inside) */
#define CTL_F_STATUS "status"		  /* exited: a wait status */
#define CTL_F_ERRNO "errno"		  /* error, spawn_failed */
#define CTL_F_STAGE "stage"		  /* spawn_failed: 0 exec, 1 cwd, 3 user, else setup */
#define CTL_F_CODE "code"		  /* error, spawn_failed (stage 3): API.md's code name */
#define CTL_F_MESSAGE "message"		  /* error, spawn_failed */
#define CTL_F_OK "ok"			  /* ps, file, stop_all, phase replies */
#define CTL_F_LANDLOCK_ABI "landlock_abi" /* ready */
#define CTL_F_WARNINGS "warnings"	  /* ready: strings */
#define CTL_F_CG_TASKS "cg_tasks"	  /* go: fd indexes, cgroup files to move in by */
#define CTL_F_BACKGROUND "background"	  /* exec: run detached from the client */
#define CTL_F_STOP_AFTER "stop_after"	  /* exec: the environment stops when it ends (sbx run) */
/* stop, exec with stop_after: the caller removes the environment, so "stopped"
 * may come before its mounts are gone ("lingering": the supervisor then holds
 * its mount namespace, unmounts it and exits after the reply; its lock says
 * when: api/reclaim.c waits for it before removing the trees). */
#define CTL_F_LINGER "linger"
#define CTL_F_LINGERING "lingering"
/* stopped: a one-shot environment removed itself (files, state, uid slot)
 * before the reply: the caller has nothing left to remove. */
#define CTL_F_REMOVED "removed"
#define CTL_F_PROCESS_ID "process_id"	  /* started (background), proc_*: "p<n>" */
#define CTL_F_SIG "sig"			  /* signal, proc_kill */
#define CTL_F_OUTPUT_BYTES "output_bytes" /* exec (background): cap per stream */
#define CTL_F_STOP "stop"		  /* stop_all: true stops every process, false continues them */
#define CTL_F_FROZEN "frozen"		  /* frozen: whether the freeze took */

typedef enum ctl_ev_kind {
	CTL_EVK_UNKNOWN,
	CTL_EVK_ERROR,
	CTL_EVK_READY,
	CTL_EVK_SPAWNED,
	CTL_EVK_SPAWN_FAILED,
	CTL_EVK_EXITED,
	CTL_EVK_PS,
	CTL_EVK_FILE,
	CTL_EVK_STOP_ALL,
	CTL_EVK_PHASE,
} ctl_ev_kind;

/* A message from init or the setup child, as the supervisor reads it.
 * Strings and json members are borrowed from the message. Absent or
 * mistyped fields take the defaults the supervisor has always used. */
typedef struct ctl_init_event {
	ctl_ev_kind kind;
	int64_t id;	     /* -1 when absent */
	int64_t pid;	     /* 0 when absent */
	int status;	     /* 0 */
	int err;	     /* spawn_failed: EIO when absent; error: 0 */
	int stage;	     /* 0 */
	int landlock_abi;    /* 0 */
	bool ok;	     /* false */
	const char *code;    /* NULL */
	const char *message; /* NULL */
	json_t *warnings;    /* NULL */
} ctl_init_event;

/* The kind of event name ev (NULL: CTL_EVK_UNKNOWN). Pure. */
ctl_ev_kind ctl_ev_kind_of(const char *ev);
/* Decodes m. -EBADMSG when m is not an object; an unknown "ev" is
 * CTL_EVK_UNKNOWN (ignored by the supervisor). Pure. */
int ctl_init_event_decode(const json_t *m, ctl_init_event *ret);
/* A spawn_failed event as the error its exec reports (API.md): a missing
 * program is not_found, a non-executable one or a bad cwd invalid_argument,
 * EAGAIN limit_exceeded, a user that cannot be resolved what init said,
 * the rest internal. Pure. */
sbx_code ctl_spawn_failed_code(const ctl_init_event *e);

/* ---- background processes (docs/processes.md) ---- */

/* A process id is "p" and a decimal number from 1 to CTL_PROC_MAX, without
 * leading zeros: it names a directory under $SBX_RUN/<id>/procs, so nothing
 * else may pass. Returns the number, or -EINVAL. Pure. */
#define CTL_PROC_MAX 999999999
int64_t ctl_proc_id_parse(const char *s);

/* A client's proc_kill or proc_wait as the supervisor reads it. */
typedef struct ctl_proc_request {
	int64_t n; /* the process id's number */
	int sig;   /* proc_kill: 1..64, SIGTERM when absent */
} ctl_proc_request;
/* Decodes m (its op already known). -EBADMSG when m is not an object,
 * -EINVAL for a missing or malformed process_id or a signal out of range;
 * *ret is written only on success. Pure. */
int ctl_proc_request_decode(const json_t *m, ctl_proc_request *ret);
