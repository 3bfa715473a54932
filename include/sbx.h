/* sbx: sandboxed environments for AI agents. The one public API.
 *
 * Every front end (the sbx CLI, the MCP server, C programs) calls these
 * functions; none reimplements a feature.
 *
 * Conventions (docs/conventions.md):
 *  - Fallible functions return a negative int (or NULL) on failure and fill
 *    *err (if err is non-NULL) with an sbx_err that the caller frees with
 *    sbx_err_free(). Out-parameters (ret_*) are set only on success.
 *  - Option structs are versioned: initialise them with their *_INIT macro
 *    so that fields added later get their defaults.
 *  - Structured results are jansson objects (json_t *), shaped exactly like the
 *    MCP tools' structuredContent in API.md; the caller owns the reference.
 */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------ */

typedef enum sbx_code {
	SBX_OK = 0,
	SBX_E_NOT_FOUND,
	SBX_E_INVALID_ARGUMENT,
	SBX_E_LIMIT_EXCEEDED,
	SBX_E_CONFLICT,
	SBX_E_UNAVAILABLE,
	SBX_E_INTERNAL,
} sbx_code;

typedef struct sbx_err sbx_err;

const char *sbx_err_message(const sbx_err *e); /* "what: why: why" */
sbx_code sbx_err_code(const sbx_err *e);
int sbx_err_errno(const sbx_err *e); /* 0 if none */
/* sbx_env_exec's failure to start the command itself (the exec call failed):
 * its errno, ENOENT (not found), EACCES or ENOEXEC (not executable), ...;
 * 0 for every other error (a bad cwd or user, a stopped environment). Shells
 * exit 127 for ENOENT and 126 for the others; so does `sbx exec`. */
int sbx_err_spawn_errno(const sbx_err *e);
const char *sbx_code_name(sbx_code c); /* "not_found", ... as in API.md */
void sbx_err_free(sbx_err *e);	       /* accepts NULL */

/* ---- context ----------------------------------------------------------- */

/* A context names the store (SBX_ROOT) and runtime directory (SBX_RUN) and
 * knows whether we run privileged (real root in the initial user namespace)
 * or rootless. Defaults: root: /srv/sbx and /run/sbx; otherwise
 * $XDG_DATA_HOME/sbx (~/.local/share/sbx) and $XDG_RUNTIME_DIR/sbx
 * (or /tmp/sbx-<uid>). The environment variables override both. */
typedef struct sbx_ctx sbx_ctx;

int sbx_ctx_open(sbx_ctx **ret, sbx_err **err);
void sbx_ctx_free(sbx_ctx *ctx);
const char *sbx_ctx_root(const sbx_ctx *ctx);
const char *sbx_ctx_run(const sbx_ctx *ctx);
bool sbx_ctx_rootless(const sbx_ctx *ctx);

/* ---- environments ------------------------------------------------------ */

typedef struct sbx_volume {
	const char *host; /* absolute host path */
	const char *path; /* absolute path inside */
	bool readonly;
} sbx_volume;

#define SBX_CREATE_OPTS_VERSION 9
typedef struct sbx_create_opts {
	unsigned version;
	const char *template_spec; /* "host" (default), "dir:PATH" */
	const char *name;	   /* optional unique name */
	const char *const *env;	   /* NULL-terminated "K=V" list, may be NULL */
	const sbx_volume *volumes;
	size_t n_volumes;
	int64_t memory_bytes; /* 0: default; -1: unlimited */
	int64_t pids;	      /* 0: default; -1: unlimited */
	double cpus;	      /* 0: unlimited */
	int64_t timeout_ms;   /* default per-command timeout; 0: none */
	int64_t ttl_ms;	      /* idle lifetime; 0: none */
	int64_t output_bytes; /* default captured output cap per stream; 0: default */
	const char *network;  /* "none" (default), "open" (the host's network), "allow" (the hosts in
			       * network_allow), "allow=HOST[:PORT],..." (the CLI's form of the same,
			       * split at commas), or "internet" (every public host and port through
			       * the egress proxy; network_allow, if given, adds internal addresses) */
	bool ephemeral;	      /* writable layer on tmpfs, removed with the env */
	const char *snapshot; /* fork: start from this snapshot (digest, prefix or label) */
	const char *policy;   /* "strict", "dev", "open", a policy file, or inline JSON; the options
			       * above may narrow it, never widen it */
	/* version 2 */
	bool keep_identity; /* with snapshot: keep the snapshot's /etc/machine-id (a replica, as replay
			     * makes) instead of giving the new environment its own */
	/* version 3 */
	int64_t disk_bytes; /* quota on the writable layer: writes beyond it fail with ENOSPC inside
			     * (0: none; at least 4 MiB; root only, or a one-shot environment) */
	/* version 3: secrets, hidden paths, phases (docs/secrets.md) */
	const char *const *hidden;  /* NULL-terminated absolute paths that do not exist inside */
	const char *const *secrets; /* NULL-terminated: "NAME" (the host variable NAME, given to every
				     * command as the variable NAME) or "NAME=/host/file" (its content,
				     * given as the file /run/secrets/NAME). Read on the host at create
				     * and kept only in memory: never in state, snapshots, exports or
				     * traces. A policy's are added here. */
	const char *agent_policy;   /* the agent phase's policy (as `policy`; it may only narrow): the
				     * environment starts in the setup phase and sbx_env_phase() switches.
				     * NULL: the agent phase keeps everything but the secrets */
	const char *hostname;	    /* the environment's host name (default: its name, else "sbx") */
	bool ttl_keep;		    /* when the idle TTL ends it, keep its state (writable layer, metadata)
				     * instead of leaving it to gc: `sbx snapshot ID` still captures it,
				     * `sbx rm ID` removes it */
	/* version 4: users and capabilities (docs/policy.md) */
	const char *user;	     /* every command's default user: "UID[:GID]" or "NAME[:GROUP]", resolved
				      * in the environment's /etc/passwd and /etc/group (NULL: root, or the
				      * policy's). A non-root user has no capabilities and no_new_privs. */
	const char *const *cap_drop; /* NULL-terminated capability names ("CHOWN", "CAP_CHOWN", "ALL") that
				      * commands run as root do not get */
	const char *const *cap_add;  /* ...and names they get back: only within the safe set and the
				      * policy's "capabilities" (a ceiling); anything else is refused */
	bool user_no_root;	     /* an exec may not ask for root (a policy whose user is not root sets
				      * it) */
	/* version 5: warm environments (docs/warm.md) */
	int64_t idle_suspend_ms; /* idle this long (no command running, no call): suspend it (no
				  * processes, no memory, the writable layer kept); the next exec or
				  * file call starts it again with the same id. 0: never */
	/* version 5 too: CDI devices (docs/devices.md) */
	const char *const *devices; /* NULL-terminated "vendor/class=name" (nvidia.com/gpu=0, =0:1, =all),
				     * resolved against the CDI specs in $SBX_CDI_SPEC_DIRS (default
				     * /etc/cdi:/var/run/cdi); a policy's "devices" allowlist bounds them */
	/* version 6 */
	const char *const *network_allow; /* with network "allow": NULL-terminated host[:port] patterns
					   * (src/policy/egress_match.h), each taken whole: a pattern
					   * with a comma is refused, never split; an empty list is a
					   * proxy that lets nothing out (sbx_env_egress_set) */
	/* version 7 */
	bool one_shot; /* the environment lives no longer than the calling process (sbx run): when
			* it ends, however it ends (kill -9 included), the environment's supervisor
			* ends it and removes it (state, files, cgroup, uid slot); and whatever ends
			* the environment, it removes itself (sbx_env_remove then finds nothing).
			* A warm pool's entry taken by such a create becomes bound the same way.
			* docs/runtime.md "One-shot runs" */
	/* version 8: published ports (docs/ports.md) */
	const char *const *publish; /* NULL-terminated "[HOSTIP:]HOSTPORT:PORT" (sbx_parse_publish): a TCP
				     * listener on the host, bound by the supervisor at create (a bind
				     * failure fails the create), relaying each connection to PORT on the
				     * environment's own loopback. HOSTIP defaults to 127.0.0.1; any
				     * other address (0.0.0.0, a LAN address) exposes PORT to whoever
				     * reaches it. HOSTPORT 0: a free port, chosen at bind. Refused with
				     * network open (the environment's ports are the host's) and in
				     * degraded mode */
	/* version 9: the code interpreter (docs/code.md "Warm kernels") */
	bool code; /* the caller means to run code in it (sbx_run_code): take an entry of a pool set
		    * with code (its bridge and default Python kernel already started) rather than a
		    * plain one. Built cold, it is an ordinary environment (the first sbx_run_code
		    * starts the kernel). Counted apart by a server's warm set. Never with one_shot */
} sbx_create_opts;
#define SBX_CREATE_OPTS_INIT                                                                                 \
	{                                                                                                    \
		.version = SBX_CREATE_OPTS_VERSION                                                           \
	}

/* Bounds on sbx_create_opts' limits, enforced by sbx_env_limits_check() at
 * the start of every create (CLI, MCP and C callers alike; docs/conventions.md):
 *   memory_bytes  0 (default 1 GiB), -1 (none), or SBX_MEMORY_MIN..SBX_MEMORY_MAX
 *   pids          0 (default 1024), -1 (none), or 1..SBX_PIDS_MAX (the kernel's PID_MAX_LIMIT)
 *   cpus          0 (none) or SBX_CPUS_MIN..SBX_CPUS_MAX cores (finite)
 *   timeout_ms    0 (none) or up to SBX_TIMEOUT_MAX_MS; ttl_ms 0 (none) or up to SBX_TTL_MAX_MS
 *   output_bytes  0 (default 10 MiB), -1 (none), or 1..SBX_OUTPUT_MAX
 *   disk_bytes    0 (none) or SBX_DISK_MIN..SBX_DISK_MAX
 * -1 ("none") is for trusted C callers (replay uses it); the CLI cannot
 * express it and MCP refuses it. Every other negative value is refused. */
#define SBX_MEMORY_MIN (4LL << 20)
#define SBX_MEMORY_MAX (64LL << 40)
#define SBX_PIDS_MAX 4194304
#define SBX_CPUS_MIN 0.01
#define SBX_CPUS_MAX 1024.0
#define SBX_TIMEOUT_MAX_MS (30LL * 24 * 3600 * 1000)
#define SBX_TTL_MAX_MS (365LL * 24 * 3600 * 1000)
#define SBX_OUTPUT_MAX (1LL << 30)
#define SBX_DISK_MIN (4LL << 20)
#define SBX_DISK_MAX (64LL << 40)

/* Checks o's limits against the bounds above. Returns 0, or -1 with an
 * invalid_argument error naming the limit and its bounds. Pure. */
int sbx_env_limits_check(const sbx_create_opts *o, sbx_err **err);

/* Creates a live environment (supervisor + init) and returns its id (12 hex
 * characters) in *ret_id (caller frees). The environment outlives the
 * calling process; remove it with sbx_env_remove(). If ret_warnings is
 * non-NULL it receives a JSON array of strings naming isolation walls that
 * this host could not provide (caller decrefs). */
int sbx_env_create(sbx_ctx *ctx, const sbx_create_opts *opts, char **ret_id, json_t **ret_warnings,
		   sbx_err **err);

/* Resolves an id, unique id prefix or name to the full id. */
int sbx_env_resolve(sbx_ctx *ctx, const char *ref, char **ret_id, sbx_err **err);

/* Stops and removes an environment: every process in it is killed, its
 * cgroups and files removed. */
int sbx_env_remove(sbx_ctx *ctx, const char *ref, sbx_err **err);

/* {"environments":[{environment_id,name,state,created_at,snapshot_id,...}]} */
int sbx_env_list(sbx_ctx *ctx, json_t **ret, sbx_err **err);

/* Full description: ids, state, template, limits, isolation walls in force
 * and missing, usage counters. */
int sbx_env_inspect(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);

/* Warm environments (docs/warm.md). Pause freezes every process of a live
 * environment (memory kept, timeouts stopped); resume thaws it, or starts a
 * suspended or stopped one again on its writable layer with the same id
 * (its processes are gone). ret: {environment_id, state, pause_ms |
 * resume_ms, restarted}. */
int sbx_env_pause(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
int sbx_env_resume(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);

/* The warm pool (docs/warm.md): size environments of source (a template
 * spec or a snapshot digest/label) under policy (NULL: none) kept built;
 * sbx_env_create with the same source and policy and no other option takes
 * one (sbx_env_from_pool() then says so). Refilled in the background;
 * capped by SBX_POOL_MAX ready entries per store and SBX_POOL_MIN_FREE
 * available memory. ret: the pool {pool, kind, source, size, policy};
 * list: {pools: [... ready], max_ready}; remove: {pool, removed: [ids]}. */
int sbx_pool_set(sbx_ctx *ctx, const char *source, int size, const char *policy, json_t **ret, sbx_err **err);
int sbx_pool_list(sbx_ctx *ctx, json_t **ret, sbx_err **err);
int sbx_pool_remove(sbx_ctx *ctx, const char *source, const char *policy, json_t **ret, sbx_err **err);
/* What names a pool besides its source (the calls above are these with
 * only a policy). code: each entry, once built, starts the code
 * interpreter's bridge and its default Python kernel (as the environment's
 * user) and is ready only once the bridge answers; creates with
 * sbx_create_opts.code take these entries, and only these (docs/code.md
 * "Warm kernels"). A code pool is another pool than the plain one of the
 * same source and policy. */
#define SBX_POOL_OPTS_VERSION 1
typedef struct sbx_pool_opts {
	unsigned version;
	const char *policy; /* NULL: none */
	bool code;
} sbx_pool_opts;
#define SBX_POOL_OPTS_INIT                                                                                   \
	{                                                                                                    \
		.version = SBX_POOL_OPTS_VERSION                                                             \
	}
int sbx_pool_set_opts(sbx_ctx *ctx, const char *source, int size, const sbx_pool_opts *o, json_t **ret,
		      sbx_err **err);
int sbx_pool_remove_opts(sbx_ctx *ctx, const char *source, const sbx_pool_opts *o, json_t **ret,
			 sbx_err **err);
/* A server's warm set (docs/warm.md "A server that keeps itself warm"):
 * the pool of sbx_pool_set, marked as owned by the calling process (its pid
 * and start time): sbx gc removes it once that process is gone, `sbx pool
 * ls` shows its owner, and a sbx_pool_set of the same key makes it an
 * explicit pool, no longer owned. A pool of the key that is explicit, or
 * owned by another live process, is left as it is: ret then says
 * {"pool", "owned": false}. size 0 removes the caller's own pool. */
int sbx_pool_set_owned(sbx_ctx *ctx, const char *source, int size, const char *policy, json_t **ret,
		       sbx_err **err);
int sbx_pool_set_owned_opts(sbx_ctx *ctx, const char *source, int size, const sbx_pool_opts *o, json_t **ret,
			    sbx_err **err);
/* Called after each create through ctx that a pool could serve (the
 * source and policy only: pool_opts_plain), with the pool source it would
 * name (a template spec, or a snapshot's digest), its policy (NULL: none)
 * and whether a pool's entry served it. Runs on the creating thread; must
 * not call back into ctx. NULL turns it off (the default). */
typedef void (*sbx_create_observer_fn)(void *userdata, const char *source, const char *policy,
				       bool from_pool);
void sbx_ctx_set_create_observer(sbx_ctx *ctx, sbx_create_observer_fn fn, void *userdata);
/* The same with what else names the pool (o->policy, o->code), for callers
 * that keep code pools apart; replaces the observer above (and it this). */
typedef void (*sbx_create_observer_opts_fn)(void *userdata, const char *source, const sbx_pool_opts *o,
					    bool from_pool);
void sbx_ctx_set_create_observer_opts(sbx_ctx *ctx, sbx_create_observer_opts_fn fn, void *userdata);
bool sbx_env_from_pool(sbx_ctx *ctx, const char *id);
/* What environment id was made from, as its create recorded it (no live
 * information, so much cheaper than sbx_env_inspect): the snapshot it
 * started from (*ret_snapshot_id, malloc'd; NULL if none) and whether it
 * came from a warm pool (*ret_from_pool). Either may be NULL. */
int sbx_env_origin(sbx_ctx *ctx, const char *id, char **ret_snapshot_id, bool *ret_from_pool, sbx_err **err);

/* {"processes":[{pid,ppid,state,argv}]} with pids as seen inside. */
int sbx_env_ps(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);

/* Removes what no live environment reaches: environments whose supervisor
 * died, their processes, cgroups and files; then store objects that no
 * snapshot or environment reaches. {"removed":[ids...],"layers_removed":[digests],...} */
int sbx_gc(sbx_ctx *ctx, json_t **ret, sbx_err **err);

/* {"environment_id","events":[...]}: the egress proxy's log, one event per
 * connection (host, port, verdict, rule, bytes); network allow only. */
int sbx_env_net_log(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
/* Replaces the egress allowlist of an environment created with network
 * "allow" (an empty list included): allow is NULL-terminated host[:port]
 * patterns (NULL or empty: nothing gets out). A running environment's proxy
 * takes it at once (connections already open end); the record keeps it for
 * every later start. The caller is the ceiling: the library refuses
 * (conflict) environments with network none or open, and those created
 * under a policy (or an agent phase's policy), whose allowlist is the
 * policy's; without one, the agent phase's plan gets the same list.
 * ret (may be NULL): {"environment_id","network","network_allow","live"}. */
int sbx_env_egress_set(sbx_ctx *ctx, const char *ref, const char *const *allow, json_t **ret, sbx_err **err);
/* The same with the mode too: network "allow" (allow is the allowlist) or
 * "internet" (every public host and port; allow lists the internal
 * addresses it may still reach). An environment whose only route out is the
 * egress proxy (created with network allow or internet) moves between the
 * two live; the rules of sbx_env_egress_set apply. */
int sbx_env_network_set(sbx_ctx *ctx, const char *ref, const char *network, const char *const *allow,
			json_t **ret, sbx_err **err);

/* Phases (docs/secrets.md): an environment starts in the "setup" phase;
 * switching to "agent" is once and for good: every process of the setup
 * phase ends, the secrets are removed (variables and files), and the agent
 * phase's narrower network allowlist and limits apply to what runs next.
 * {"environment_id","phase","previous_phase","processes_ended","secrets_removed":[names],
 *  "network","network_allow","limits","phase_ms"}. phase NULL: only reports the current one. */
int sbx_env_phase(sbx_ctx *ctx, const char *ref, const char *phase, json_t **ret, sbx_err **err);

/* ---- execution --------------------------------------------------------- */

enum { SBX_STDOUT = 1, SBX_STDERR = 2 };

typedef void (*sbx_output_fn)(void *userdata, int stream, const char *buf, size_t len);

#define SBX_EXEC_OPTS_VERSION 6
typedef struct sbx_exec_opts {
	unsigned version;
	const char *const *argv; /* NULL-terminated; argv[0] looked up in PATH */
	const char *const *env;	 /* extra "K=V" on top of the environment's */
	const char *cwd;	 /* default "/root" (or "/" if missing) */
	int64_t timeout_ms;	 /* 0: environment default; -1: none */
	bool tty;		 /* run on a pty allocated inside */
	/* Streaming: host fds to relay (-1 for none). With tty, stdin_fd and
	 * stdout_fd are the terminal; the caller sets raw mode. */
	int stdin_fd, stdout_fd, stderr_fd;
	/* Or feed stdin from memory (when stdin_fd < 0). */
	const char *stdin_data;
	size_t stdin_len;
	/* Capture output into the result (in addition to any fds). */
	bool capture;
	int64_t output_bytes;	 /* cap per stream: 0 = environment default, -1 = none */
	sbx_output_fn on_output; /* called with each chunk, may be NULL */
	void *userdata;
	int cancel_fd; /* -1, or an fd that becomes readable to cancel */
	/* version 2 */
	bool trace;	   /* record a syscall trace of the environment while the command runs; the
			    * result's trace_id names it (sbx_trace_*) */
	int deterministic; /* determinism controls: -1 default (on when tracing), 0 off, 1 on */
	int winch_fd;	   /* with tty: -1, or an fd that becomes readable when the caller's terminal
			    * (stdout_fd) was resized; the new size is passed on to the pty inside */
	/* version 3 */
	const char *user; /* this command's user (as sbx_create_opts.user); NULL: the environment's */
	/* version 4 */
	bool no_auto_resume; /* a paused or suspended environment is refused (SBX_E_CONFLICT) instead of
			      * resumed first */
	/* version 5 */
	int signal_fd; /* -1, or an fd (a pipe a signal handler writes to) from which every byte read
			* is a signal number sent to the command's process group, as a terminal's
			* ^C would be: `sbx run` and `sbx exec` forward their SIGINT, SIGTERM,
			* SIGHUP and SIGQUIT so (docs/runtime.md). Bytes that come before the
			* command started are sent as it starts. */
	/* version 6 */
	void (*on_start)(void *userdata, int64_t pid); /* may be NULL: called once, as the command
							* runs, with its pid inside the environment
							* (userdata is on_output's); not called when
							* it could not be started */
} sbx_exec_opts;
#define SBX_EXEC_OPTS_INIT                                                                                   \
	{                                                                                                    \
		.version = SBX_EXEC_OPTS_VERSION, .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1,          \
		.cancel_fd = -1, .deterministic = -1, .winch_fd = -1, .signal_fd = -1                        \
	}

typedef struct sbx_exec_result {
	int exit_code;	 /* -1 if killed by a signal */
	int signal;	 /* 0 or the signal number */
	bool timed_out;	 /* killed by the timeout */
	bool oom_killed; /* the memory limit was hit during the command */
	bool cancelled;
	char *stdout_buf, *stderr_buf; /* with capture; NUL-terminated */
	size_t stdout_len, stderr_len;
	bool stdout_truncated, stderr_truncated;
	int64_t duration_ms;
	double duration_us;
	char *trace_id;	     /* with opts.trace: "sha256:..." of the stored trace */
	uint64_t trace_lost; /* events the recorder lost (reported in the trace too) */
	int64_t timeout_ms;  /* the timeout that applied: the command's, else the environment's; 0: none */
} sbx_exec_result;

/* Runs a command in a live environment and waits for it. Returns 0 when the
 * command ran (whatever its exit status); failure means it could not be run.
 * A command that is not found gives SBX_E_NOT_FOUND with errno ENOENT, one
 * that cannot be executed SBX_E_INVALID_ARGUMENT with errno EACCES/ENOEXEC;
 * both carry sbx_err_spawn_errno(). */
int sbx_env_exec(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *opts, sbx_exec_result *ret,
		 sbx_err **err);
void sbx_exec_result_free(sbx_exec_result *r); /* frees buffers only */
/* sbx run's end: sbx_env_exec, then sbx_env_remove, in one request. The
 * environment ends as the command does (its processes killed, its cgroup
 * and files gone when this returns, as after sbx_env_remove), also when the
 * command could not be started, or when the caller dies while it runs. The
 * exec's outcome is the return value, *ret and err, as sbx_env_exec's; a
 * failed removal is *ret_remove_err (NULL when removed), whatever the exec
 * did. */
int sbx_env_exec_remove(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *opts, sbx_exec_result *ret,
			sbx_err **ret_remove_err, sbx_err **err);

/* The result as API.md's environment_execute structuredContent. */
json_t *sbx_exec_result_json(const sbx_exec_result *r);

/* ---- progress of long operations ---------------------------------------- */

/* What a long operation (snapshot, export, import, gc) has done so far.
 * Totals are 0 when not known in advance (a snapshot does not pre-scan). */
typedef struct sbx_progress {
	const char *op; /* "snapshot", "export", "import", "gc" */
	uint64_t bytes_done, bytes_total;
	uint64_t files_done, files_total;
	uint64_t elapsed_ms;
	bool done; /* the last report of the operation */
} sbx_progress;
typedef void (*sbx_progress_fn)(void *userdata, const sbx_progress *p);
/* Reports go to fn (about ten a second, and once at the end) from the thread
 * that runs the operation. NULL turns them off (the default). */
void sbx_ctx_set_progress(sbx_ctx *ctx, sbx_progress_fn fn, void *userdata);

/* ---- snapshots ---------------------------------------------------------- */

/* Captures the environment's filesystem (its processes frozen meanwhile)
 * into a content-addressed layer and a snapshot manifest. `label` may be
 * NULL. {"snapshot_id","size_bytes","new_bytes","files","snapshot_ms","layers"} */
int sbx_env_snapshot(sbx_ctx *ctx, const char *ref, const char *label, json_t **ret, sbx_err **err);
/* Rolls the environment back in place: its processes are ended and its
 * filesystem becomes exactly the snapshot's. {"environment_id","snapshot_id","restore_ms"},
 * and "standby": true when the supervisor's standby init served it (docs/warm.md;
 * SBX_RESTORE_STANDBY=0 in the caller's environment disables it). */
int sbx_env_restore(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err);
/* {"snapshots":[{"snapshot_id","label","labels","parent","created_at","size_bytes","layers"}]} */
int sbx_snapshot_list(sbx_ctx *ctx, json_t **ret, sbx_err **err);
/* A digest ("sha256:<hex>"), a unique hex prefix or a label -> the digest. */
int sbx_snapshot_resolve(sbx_ctx *ctx, const char *ref, char **ret_digest, sbx_err **err);
/* Deletes a snapshot (digest, prefix or label) and every label naming it;
 * its layers and blobs go at the next sbx_gc that finds nothing else
 * reaching them. Refused (conflict) while an environment started from it
 * exists: it needs the manifest to start again. A trace recorded on it can
 * no longer be replayed. */
int sbx_snapshot_delete(sbx_ctx *ctx, const char *ref, sbx_err **err);
/* What changed in an environment since `snapshot` (digest, prefix or label;
 * NULL: the environment's base, i.e. the layers it started from):
 * {"added":[paths],"modified":[paths],"deleted":[paths]} (absolute paths
 * inside, sorted). A point-in-time read: a live environment is not frozen. */
int sbx_env_diff(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err);
/* The manifest of a snapshot (digest, prefix or label) as stored (schema 1). */
int sbx_snapshot_manifest(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
/* Verifies every digest and reference in the store:
 * {"ok","problems":[{"object","problem"}],"layers","blobs","snapshots","refs","tmp_entries"}.
 * Fails only when it cannot check; problems found are a successful result. */
int sbx_fsck(sbx_ctx *ctx, json_t **ret, sbx_err **err);

/* ---- traces and replay --------------------------------------------------- */

/* Traces are recorded by sbx_env_exec with opts.trace. A trace id is a
 * "sha256:<hex>" digest (or a unique hex prefix, with or without "sha256:"). */

/* {"traces":[{"trace_id","environment_id","snapshot_id","argv","created_at","exit_code","syscalls","lost",
 * "recorder","deterministic","replay_of"}]} */
int sbx_trace_list(sbx_ctx *ctx, json_t **ret, sbx_err **err);
/* The stored manifest (schema 1) with "trace_id" added. */
int sbx_trace_manifest(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);

typedef struct sbx_trace_filter {
	const char *const *pids;     /* NULL-terminated pid numbers (tgid or tid), NULL: all */
	const char *const *syscalls; /* NULL-terminated syscall names, NULL: all */
} sbx_trace_filter;
/* strace-like text, one line per event, to out. */
int sbx_trace_show(sbx_ctx *ctx, const char *ref, const sbx_trace_filter *f, FILE *out, sbx_err **err);
/* The same events as JSON: {"trace_id","events":[...]} */
int sbx_trace_events_json(sbx_ctx *ctx, const char *ref, const sbx_trace_filter *f, json_t **ret,
			  sbx_err **err);
/* Syscall histogram, files read and written, execs, processes, network:
 * {"trace_id","syscalls":[{name,count,errors,time_us}],"files":{...},"execs":[...],...} */
int sbx_trace_stats(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
/* The same as text. */
int sbx_trace_stats_text(sbx_ctx *ctx, const char *ref, FILE *out, sbx_err **err);
/* Chrome trace-event JSON (opens in Perfetto / chrome://tracing). */
int sbx_trace_export_chrome(sbx_ctx *ctx, const char *ref, FILE *out, sbx_err **err);
/* Re-runs the trace's command from its snapshot in a fresh environment
 * under determinism controls and compares exit status, stdout, stderr,
 * filesystem changes and the normalized syscall sequence:
 * {"trace_id","verdict":"match"|"diverged","divergence":{kind,index,pid,expected,actual},"replay_ms",
 *  "replay_trace_id"}. A divergence is a successful result. */
int sbx_trace_replay(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
/* The same, choosing which inputs are checked before the re-run: "read_set"
 * (NULL: the default) checks exactly the files the recording read from
 * volumes and the template's live lower tree (a trace recorded without a
 * read set falls back to volumes); "volumes" compares a digest of every
 * whole volume. A changed input is divergence {kind "input", path, expected,
 * actual ("sha256:.." or "absent"), pid, index}; result gains "inputs". */
int sbx_trace_replay_inputs(sbx_ctx *ctx, const char *ref, const char *inputs, json_t **ret, sbx_err **err);
/* The trace as one self-contained HTML page (no network, inline script and
 * style): process tree, per-process timelines of the system calls by kind,
 * files read and written, the read set; with `replay` (a result of
 * sbx_trace_replay*, NULL for none) its verdict, the first divergence
 * highlighted and the replay's own timeline (replay_trace_id) beside. */
int sbx_trace_html(sbx_ctx *ctx, const char *ref, const json_t *replay, FILE *out, sbx_err **err);

/* ---- OCI images and templates -------------------------------------------- */

/* Writes the snapshot as an OCI image into the layout DIR ("oci:DIR[:TAG]"
 * or "DIR"; tag default "latest"): gzip layers, config, manifest, index.json.
 * {"snapshot_id","oci_dir","tag","manifest_digest","config_digest","layers":[{diff_id,digest,size,mediaType}],"size_bytes"}
 */
int sbx_snapshot_export(sbx_ctx *ctx, const char *snapshot, const char *oci_dir, json_t **ret, sbx_err **err);
/* Imports "oci:DIR[:TAG]" into the store as a template named `name` (default
 * the tag, else DIR's basename).
 * {"snapshot_id","name","ref","layers","diff_ids","manifest_digest","size_bytes"} */
int sbx_image_import(sbx_ctx *ctx, const char *oci_ref, const char *name, json_t **ret, sbx_err **err);
/* source: oci:DIR[:TAG], dir:PATH, host, or a snapshot. {"name","snapshot_id","ref","source"} */
int sbx_template_add(sbx_ctx *ctx, const char *name, const char *source, json_t **ret, sbx_err **err);
/* {"templates":[{"name","snapshot_id","base_template","layers","created_at","size_bytes"}]} */
int sbx_template_list(sbx_ctx *ctx, json_t **ret, sbx_err **err);
/* A template name (or oci:DIR[:TAG], imported first) -> its snapshot digest. */
int sbx_template_resolve(sbx_ctx *ctx, const char *spec, char **ret_digest, sbx_err **err);
/* The command a one-shot run executes in environment `ref`: argv (NULL or
 * empty: none given) with the image's ENTRYPOINT and CMD, as `docker run`
 * does (docs/build.md "Image config"): ENTRYPOINT + (argv, else CMD).
 * invalid_argument if that leaves nothing to run. *ret_argv: NULL-terminated,
 * free each string and the array. */
int sbx_env_image_command(sbx_ctx *ctx, const char *ref, const char *const *argv, char ***ret_argv,
			  sbx_err **err);

/* ---- policies ----------------------------------------------------------- */

/* {"policies":[...]} the built-in profiles (strict, dev, open), the default
 * first: each its canonical form (as sbx_policy_show) plus "description",
 * one line. (sbx has no directory of policy files; a file is named by path.) */
int sbx_policy_list(json_t **ret, sbx_err **err);
/* Parses and validates a profile name, policy file or inline JSON; returns
 * its canonical form. Errors name the field and the reason. */
int sbx_policy_show(const char *spec, json_t **ret, sbx_err **err);

/* ---- files inside a live environment ----------------------------------- */

/* Paths are resolved by init, inside the environment, with every wall in
 * force: a path (or a symlink in it) can never reach outside. Relative paths
 * are taken from /root. */

/* Reads at most max_bytes (<= 0: 10 MiB) of a regular file. *ret_data is
 * NUL-terminated (caller frees); *ret_size is the file's full size. */
int sbx_env_read_file(sbx_ctx *ctx, const char *ref, const char *path, int64_t max_bytes, char **ret_data,
		      size_t *ret_len, int64_t *ret_size, bool *ret_truncated, sbx_err **err);
/* Creates or replaces a regular file (parents must exist); mode < 0: 0644. */
int sbx_env_write_file(sbx_ctx *ctx, const char *ref, const char *path, const void *data, size_t len,
		       int mode, sbx_err **err);
/* {"entries":[{"name","type":"file|dir|symlink|other","size","mode"}]} */
int sbx_env_list_files(sbx_ctx *ctx, const char *ref, const char *path, json_t **ret, sbx_err **err);

/* File operations as a named user (the E2B data plane's, docs/e2b.md):
 * resolved inside the environment exactly as above, with the filesystem
 * identity of user (what it cannot read it cannot read here; what is made
 * belongs to it), a relative path taken from that user's home. A symlink in
 * the last component is never followed by stat, list, move or remove. */
typedef struct sbx_fs_opts {
	unsigned version; /* SBX_FS_OPTS_VERSION */
	const char *user; /* NAME or UID[:GID] as --user takes it; NULL: the environment's user
			   * (and relative paths from /root) */
	int mode;	  /* file_open (write), make_dir: < 0 the default (0644, 0755) */
	bool parents;	  /* file_open (write), make_dir: make missing parent directories */
	bool write;	  /* file_open: create or truncate for writing, else read */
	int depth;	  /* list_dir: levels listed, 1 (the directory's own entries) to 64 */
} sbx_fs_opts;
#define SBX_FS_OPTS_VERSION 1
#define SBX_FS_OPTS_INIT                                                                                     \
	{                                                                                                    \
		.version = SBX_FS_OPTS_VERSION, .mode = -1, .depth = 1                                       \
	}

/* An entry, as stat, make_dir, move and list_dir return them: {"name",
 * "path", "type":"file|dir|symlink|other", "size", "mode" (permission bits),
 * "uid", "gid", "owner", "group" (names in the environment, else numbers),
 * "mtime_ns", "symlink_target"?, "user_xattrs"? ({name: value} of a file's or
 * directory's user.* extended attributes, "user." left out: at most 64, each
 * value at most 4 KiB and UTF-8)}. not_found when nothing is there. */
int sbx_env_stat(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, json_t **ret,
		 sbx_err **err);
/* A regular file opened inside the environment, as a descriptor (read-only,
 * or write-only and truncated with o->write); *ret_size its size. The data
 * then moves between the caller and that fd directly. */
int sbx_env_file_open(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, int *ret_fd,
		      int64_t *ret_size, sbx_err **err);
/* A directory opened inside the environment as the user (read permission
 * needed; a symlink to one is followed), as a read-only descriptor: to
 * watch it (inotify through /proc/self/fd) or read it outside. Its mounts
 * stay those of the environment's tree when the descriptor was made. */
int sbx_env_dir_open(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, int *ret_fd,
		     sbx_err **err);
/* conflict (EEXIST) when anything is at path already. *ret (may be NULL): its entry. */
int sbx_env_make_dir(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, json_t **ret,
		     sbx_err **err);
/* rename(2) inside the environment (the destination's parents made); *ret
 * (may be NULL): the destination's entry. */
int sbx_env_move(sbx_ctx *ctx, const char *ref, const char *from, const char *to, const sbx_fs_opts *o,
		 json_t **ret, sbx_err **err);
/* Removes a file, a symlink or a directory with everything under it (not
 * across mount points; never "/"). */
int sbx_env_remove_path(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, sbx_err **err);
/* {"entries":[entry...], "truncated"}: pre-order, each directory's entries
 * in byte order, o->depth levels; a directory that cannot be read is listed,
 * not entered; truncated when the reply would pass 256 KiB. */
int sbx_env_list_dir(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, json_t **ret,
		     sbx_err **err);

/* ---- ports of a live environment ----------------------------------------- */

/* A TCP connection to 127.0.0.1:port inside the environment: its own
 * loopback, which nothing outside it reaches otherwise. Init makes the socket
 * in the environment's network namespace and the caller connects it (within
 * timeout_ms; <= 0: 5 s), so nothing of the host is reachable this way.
 * unavailable when nothing listens there (or the connect times out);
 * invalid_argument for a port outside 1-65535; refused (permission) when the
 * environment has no network namespace of its own (network open, degraded
 * mode). *ret_fd is a blocking, close-on-exec stream socket (caller closes). */
int sbx_env_port_connect(sbx_ctx *ctx, const char *ref, int port, int timeout_ms, int *ret_fd, sbx_err **err);

/* Published ports (sbx create -p; docs/ports.md). One mapping: host_ip
 * (numeric IPv4 or IPv6) and host_port (0: a free one, chosen at bind) on
 * the host, to port on the environment's loopback. */
#define SBX_PUBLISH_MAX 64
typedef struct sbx_port_map {
	char host_ip[46];
	int host_port;
	int port;
} sbx_port_map;
/* "[HOSTIP:]HOSTPORT:PORT" -> *ret (HOSTIP 127.0.0.1 when absent; an IPv6
 * address in brackets, "[::1]:8080:80"). invalid_argument for a port out of
 * range (HOSTPORT 0-65535, PORT 1-65535), a HOSTIP that is not a numeric
 * IP address, or any other shape. Pure. */
int sbx_parse_publish(const char *s, sbx_port_map *ret, sbx_err **err);
/* {"ports":[{"port","protocol":"tcp","host_ip","host_port"}]}: an
 * environment's published ports as its record has them (the host ports
 * chosen at bind), in the order given at create. */
int sbx_env_ports(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);

/* Copies (sbx cp), with `docker cp` destinations: into an existing
 * directory under the source's own name, else as the new name (its parent
 * must exist); directories merge into existing ones. Regular files and
 * directory trees (files, directories, symlinks inside, modes, times);
 * ownership becomes the receiving side's user (the environment's root, or
 * the caller), setuid/setgid bits and device nodes are dropped. What comes
 * out of an environment is extracted as hostile input: nothing is written
 * outside host_path and no link is followed. */
int sbx_env_copy_in(sbx_ctx *ctx, const char *ref, const char *host_path, const char *env_path,
		    sbx_err **err);
int sbx_env_copy_out(sbx_ctx *ctx, const char *ref, const char *env_path, const char *host_path,
		     sbx_err **err);
/* The same as tar streams (MCP upload/download): the contents of env_dir
 * as a tar written to out_fd; a tar read from in_fd (to its end) extracted
 * into env_dir (made first if create; its parent must exist). */
int sbx_env_tar_out(sbx_ctx *ctx, const char *ref, const char *env_dir, int out_fd, sbx_err **err);
int sbx_env_tar_in(sbx_ctx *ctx, const char *ref, const char *env_dir, int in_fd, bool create, sbx_err **err);

/* ---- templates from Dockerfiles (docs/build.md) -------------------------- */

/* Called before each step ({"step","steps","line","instruction","state":"running"})
 * and after it ({..., "state":"done","cached","snapshot_id","duration_ms"}). */
typedef void (*sbx_build_step_fn)(void *userdata, const json_t *step);

#define SBX_BUILD_OPTS_VERSION 1
typedef struct sbx_build_opts {
	unsigned version;
	const char *dockerfile; /* the Dockerfile's text */
	size_t dockerfile_len;
	const char *dockerfile_name; /* in error messages ("Dockerfile") */
	const char *context;	     /* the host directory COPY/ADD read from (.dockerignore honoured) */
	const char *tag;	     /* the template name to create or replace */
	const char *network; /* RUN's network: "none" (default), "internet", "open", "allow=HOST,..." */
	const char *const *build_args; /* NULL-terminated "K=V" for ARG */
	const char *const *secrets;    /* as sbx_create_opts.secrets: given to RUN, never stored */
	bool no_cache;
	sbx_build_step_fn on_step;
	sbx_output_fn on_output; /* RUN's output as it comes */
	void *userdata;
} sbx_build_opts;
#define SBX_BUILD_OPTS_INIT                                                                                  \
	{                                                                                                    \
		.version = SBX_BUILD_OPTS_VERSION                                                            \
	}

/* Builds a template from a Dockerfile: each step a snapshot, cached by
 * (parent, instruction, input digests). On success the template `tag` names
 * the result: {"template","snapshot_id","steps":[...],"cache_hits",
 * "cache_misses","config":{env,workdir,user,cmd,entrypoint,expose,labels,shell},
 * "build_ms"}. A failing RUN is an error naming its line and exit status; the
 * template is then left as it was. */
int sbx_build(sbx_ctx *ctx, const sbx_build_opts *opts, json_t **ret, sbx_err **err);

/* ---- parsing helpers shared by front ends ------------------------------ */

/* "512m", "2G", "1048576" -> bytes. */
int sbx_parse_size(const char *s, int64_t *ret, sbx_err **err);
/* "500ms", "30s", "5m", "1h", "250" (ms) -> milliseconds. */
int sbx_parse_duration(const char *s, int64_t *ret, sbx_err **err);
/* "HOST:PATH[:ro|rw]" */
int sbx_parse_volume(const char *s, char **ret_host, char **ret_path, bool *ret_ro, sbx_err **err);

const char *sbx_version(void);

/* ---- attestations (docs/attest.md) ------------------------------------- */

/* Writes a new Ed25519 key pair: path (PKCS#8 PEM, mode 0600) and path.pub
 * (SubjectPublicKeyInfo PEM, 0644); refuses to overwrite either (conflict).
 * {"private_key","public_key","keyid"}; keyid is "sha256:" + hex SHA-256 of
 * the public key's DER SubjectPublicKeyInfo. */
int sbx_keygen(const char *path, json_t **ret, sbx_err **err);

#define SBX_ATTEST_OPTS_VERSION 1
typedef struct sbx_attest_opts {
	unsigned version;
	const char *key_path; /* private key; NULL: the context's (sbx_ctx_set_attest_key) */
	bool replay;	      /* replay the trace first and record its verdict in the predicate */
} sbx_attest_opts;
#define SBX_ATTEST_OPTS_INIT                                                                                 \
	{                                                                                                    \
		.version = SBX_ATTEST_OPTS_VERSION                                                           \
	}
/* Signs a DSSE envelope (payloadType application/vnd.in-toto+json) over an
 * in-toto Statement v1 about the traced run `trace`: subjects stdout, stderr
 * and every regular file the run wrote (their contents enter the store as
 * blobs, so that sbx_verify can check them later), predicate
 * https://sbx.dev/attestation/run/v1. Files are read from the trace's
 * environment, which must still hold exactly what the run left (checked
 * against the trace's filesystem digest). {"envelope","keyid","subjects",
 * "trace_id"}; subjects: [{"name","digest"}]. */
int sbx_attest(sbx_ctx *ctx, const char *trace, const sbx_attest_opts *opts, json_t **ret, sbx_err **err);
/* Loads (and checks) the private key that sbx_attest uses when
 * opts.key_path is NULL: `sbx mcp --attest-key FILE`. */
int sbx_ctx_set_attest_key(sbx_ctx *ctx, const char *path, sbx_err **err);
/* Host directories a server's clients may name (sbx mcp/serve --allow-host-dir DIR): a
 * directory that exists; its real path is kept. sbx_ctx_host_dir_allowed() resolves path
 * (realpath) and returns it (caller frees) if it is one of them or beneath one, else NULL
 * with errno EPERM (ENOENT if it does not exist). */
int sbx_ctx_allow_host_dir(sbx_ctx *ctx, const char *dir, sbx_err **err);
char *sbx_ctx_host_dir_allowed(const sbx_ctx *ctx, const char *path);
/* The same for a destination that may not exist yet (MCP snapshot_export's
 * path): an existing path as above; a new one must be a plain name (not
 * "." or "..") in a directory that resolves beneath an allowed one, and is
 * returned as that directory's real path + the name. */
char *sbx_ctx_host_dest_allowed(const sbx_ctx *ctx, const char *path);

#define SBX_VERIFY_OPTS_VERSION 1
typedef struct sbx_verify_opts {
	unsigned version;
	const char *key_path; /* public key (PEM) */
	bool replay;	      /* also replay the trace and require MATCH */
} sbx_verify_opts;
#define SBX_VERIFY_OPTS_INIT                                                                                 \
	{                                                                                                    \
		.version = SBX_VERIFY_OPTS_VERSION                                                           \
	}
/* Checks an envelope (JSON text, hostile input): a signature by the key
 * over PAE(payloadType, payload), the statement's shape, every subject's
 * digest against the store (the trace's stdout/stderr, the files' blobs),
 * the predicate's trace and snapshot against the store, and with
 * opts.replay a MATCHing replay. {"verified": true|false, "reason" (when
 * false: one line), "keyid","trace_id","snapshot_id","subjects","replay"?}.
 * An envelope that does not verify is a successful result; the call fails
 * only when it cannot check (no key, a store it cannot read). */
int sbx_verify(sbx_ctx *ctx, const char *envelope, size_t len, const sbx_verify_opts *opts, json_t **ret,
	       sbx_err **err);
/* ---- snapshots through OCI registries (docs/store.md "Registries") -------- */

/* Pushes a snapshot to REGISTRY/REPO:TAG over the OCI distribution API, as
 * `sbx export` writes it (gzip layers, the same config and manifest): blobs
 * the registry has (HEAD) are not sent, a blob the store knows in another
 * repository of that registry is mounted (?mount=&from=), the rest uploaded
 * (POST, then PUT; PATCH chunks above $SBX_REGISTRY_CHUNK bytes, default 64
 * MiB). Credentials: $REGISTRY_AUTH_FILE, $DOCKER_CONFIG/config.json or
 * ~/.docker/config.json (Basic, or a Bearer token from the challenge's
 * realm). insecure: plain HTTP. ret: manifest_digest, blobs [{digest, size,
 * action: uploaded|skipped|mounted}], uploaded_bytes, skipped_bytes,
 * uploaded_blobs, skipped_blobs, mounted_blobs, seconds. */
int sbx_snapshot_push(sbx_ctx *ctx, const char *snapshot, const char *ref, bool insecure, json_t **ret,
		      sbx_err **err);
/* Pulls REGISTRY/REPO[:TAG|@DIGEST] into a snapshot labelled name (default:
 * the repository's last component). Every blob is hashed as it arrives and
 * kept only if it matches; the layers are then checked and extracted as
 * `sbx import` does (diff_ids against the config, hostile-input safe), and
 * the snapshot and label are written last. A blob verified by an
 * interrupted pull (kept in the store's registry/partial area) or a layer the
 * store holds is not fetched again. ret: snapshot_id, label,
 * manifest_digest, layers, downloaded_bytes, reused_blobs, seconds. */
int sbx_snapshot_pull(sbx_ctx *ctx, const char *ref, const char *name, bool insecure, json_t **ret,
		      sbx_err **err);

/* ---- the code interpreter (docs/code.md) ----------------------------------- */

/* Code runs in a context: a Jupyter kernel inside the environment, behind
 * all its walls, whose state (variables, imports) lasts from one run to the
 * next. The kernels are served by a bridge program (python3 with
 * jupyter_client and ipykernel) on the environment's own 127.0.0.1:49999;
 * the first call that needs it writes it into the environment and starts it
 * as a background process of the environment's user, and fails with
 * unavailable, saying what is missing, where python3 or those modules are
 * not there. Refused (permission) where the environment's network is the
 * host's (network open). What the bridge answers is bounded and checked: it
 * is the environment's. */
typedef void (*sbx_code_event_fn)(const json_t *event, void *userdata);

#define SBX_CODE_OPTS_VERSION 2
typedef struct sbx_code_opts {
	unsigned version;
	const char *code;	     /* required */
	const char *language;	     /* NULL: python; the language's default context runs it */
	const char *context_id;	     /* a context made by sbx_context_create (not with language) */
	const char *const *env;	     /* "K=V" set for this run only (python contexts) */
	int64_t timeout_ms;	     /* > 0: the cell is interrupted after it (timed_out), its context kept;
				      * 0: no bound */
	int64_t output_bytes;	     /* output (stdout, stderr, results) kept; past it, dropped and the
				      * run marked truncated. 0: 10 MiB */
	sbx_code_event_fn on_output; /* called with each event as it arrives, may be NULL:
				      * {"type":"stdout"|"stderr","text"}, {"type":"result",...as in
				      * results}, {"type":"error","name","value","traceback"},
				      * {"type":"timeout"}, {"type":"truncated"}; borrowed for the call */
	void *userdata;
	/* version 2 */
	int cancel_fd; /* -1, or an fd that, once readable or hung up, cancels the run: the cell is
			* interrupted (its context and state kept) and ret has cancelled true with
			* what came before */
} sbx_code_opts;
#define SBX_CODE_OPTS_INIT                                                                                   \
	{                                                                                                    \
		.version = SBX_CODE_OPTS_VERSION, .cancel_fd = -1                                            \
	}

/* Runs o->code and waits for it. 0 when the code ran, whatever it raised:
 * ret {results: [{is_main_result, text?, html?, markdown?, svg?, png?,
 * jpeg?, pdf?, latex?, json?, javascript?}] (images base64), stdout, stderr,
 * error?: {name, value, traceback}, execution_count, context_id, language,
 * timed_out, truncated, duration_ms, cancelled?}. A kernel that died is error
 * KernelDied, on this run and every later one in its context until
 * sbx_context_restart. not_found: no such context; invalid_argument: a bad
 * option, or no kernel for the language. */
int sbx_run_code(sbx_ctx *ctx, const char *ref, const sbx_code_opts *o, json_t **ret, sbx_err **err);
/* A new context (language NULL: python; cwd NULL: the user's home).
 * ret: {context_id, language, cwd}. */
int sbx_context_create(sbx_ctx *ctx, const char *ref, const char *language, const char *cwd, json_t **ret,
		       sbx_err **err);
/* ret: {contexts: [{context_id, language, cwd}]}; empty while no bridge runs
 * (nothing is started for it). */
int sbx_context_list(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
/* A fresh kernel for the context (its state gone; a dead kernel too). */
int sbx_context_restart(sbx_ctx *ctx, const char *ref, const char *context_id, sbx_err **err);
/* Shuts the context's kernel down. */
int sbx_context_remove(sbx_ctx *ctx, const char *ref, const char *context_id, sbx_err **err);

/* ---- background processes (docs/processes.md) ----------------------------- */

/* Starts opts->argv in the background and returns at once; the process
 * outlives the caller (it belongs to the environment, not the connection).
 * Its stdout and stderr are kept by the supervisor in files, each up to
 * opts->output_bytes (0: the environment's output_bytes limit, default 10
 * MiB; -1: SBX_OUTPUT_MAX) and flagged truncated beyond; stdin is
 * /dev/null. The environment's default timeout does not apply: only
 * opts->timeout_ms > 0 does. tty and trace are refused (invalid_argument).
 * Uses argv, env, cwd, user, timeout_ms, output_bytes, no_auto_resume.
 * ret: {environment_id, process_id ("p1", unique within the environment),
 * pid (inside), started_at, started_ms}. */
int sbx_process_start(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *opts, json_t **ret, sbx_err **err);
/* {environment_id, processes: [{process_id, pid, argv, command, state
 * ("running"|"exited"), exit_code, signal, timed_out, oom_killed,
 * end_reason, started_at, started_ms, duration_ms, stdout_bytes,
 * stderr_bytes, stdout_truncated, stderr_truncated, output_limit}]}, oldest
 * first. Works on a stopped or suspended environment too (its processes
 * have exited: end_reason "environment_stopped"). */
int sbx_process_list(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err);
/* One process's record, as an element of sbx_process_list. */
int sbx_process_get(sbx_ctx *ctx, const char *ref, const char *process_id, json_t **ret, sbx_err **err);
/* What the process printed from stdout_offset and stderr_offset on, at most
 * max_bytes of each (<= 0: 64 KiB; at most SBX_PROCESS_OUTPUT_MAX), as text
 * (invalid UTF-8 replaced; a character cut by the bound is left for the
 * next call). ret: the record plus stdout, stderr, stdout_offset and
 * stderr_offset (where the next call starts), stdout_more/stderr_more
 * (more is kept already), and exited. */
#define SBX_PROCESS_OUTPUT_MAX (1LL << 20)
int sbx_process_output(sbx_ctx *ctx, const char *ref, const char *process_id, int64_t stdout_offset,
		       int64_t stderr_offset, int64_t max_bytes, json_t **ret, sbx_err **err);
/* Sends sig (0: SIGTERM) to the process's group. ret: {process_id,
 * signal, delivered (false: it had exited already), state}. */
int sbx_process_kill(sbx_ctx *ctx, const char *ref, const char *process_id, int sig, json_t **ret,
		     sbx_err **err);
/* Waits up to timeout_ms (0: do not wait; -1: no bound) for the process to
 * exit. ret: its record ("state" says whether it is still running) plus
 * waited_ms. */
int sbx_process_wait(sbx_ctx *ctx, const char *ref, const char *process_id, int64_t timeout_ms, json_t **ret,
		     sbx_err **err);
/* A signal: a number from 1 to 64 or a name with or without SIG, any case
 * (TERM, SIGKILL, int). Pure. */
int sbx_parse_signal(const char *s, int *ret, sbx_err **err);

#ifdef __cplusplus
}
#endif
