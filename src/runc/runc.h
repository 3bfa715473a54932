/* sbx-runc internals: the runc command line over sbx's runtime modules.
 * The design (who is the container's pid, how create/start split, which
 * walls sbx adds on top of the spec) is docs/runc.md. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>

#include "runc/oci_spec.h"
#include "runc/oci_state.h"
#include "util/err.h"
#include "util/macro.h"

/* Global options, as the engines pass them. */
typedef struct runc_globals {
	const char *root; /* state root; default /run/sbx-runc */
	const char *log;  /* --log FILE, NULL: none */
	bool log_json;
	bool systemd_cgroup;
	unsigned no_walls; /* RUNC_WALL_* turned off by --no-wall */
} runc_globals;

/* sbx's walls on top of the spec, each with an opt-out (annotation
 * "run.sbx.wall.<name>": "off", or the global --no-wall NAME). */
enum {
	RUNC_WALL_SECCOMP = 1u << 0,  /* sbx's deny list, loaded as a second filter */
	RUNC_WALL_LANDLOCK = 1u << 1, /* filesystem confined to the container's root */
	RUNC_WALL_CAPS = 1u << 2,     /* capabilities: the spec's sets intersected with sbx's safe set */
	RUNC_WALL_MASK = 1u << 3,     /* sbx's masked and read-only /proc and /sys paths */
};
int runc_wall_from_name(const char *name); /* 0 if unknown */
/* Walls that apply: all minus those turned off by the globals or annotations. */
unsigned runc_walls(const runc_globals *g, const json_t *annotations);

/* ---- cgroup.c: groups at the spec's cgroupsPath, in every hierarchy ---- */
int rcg_create(const char *path, const oci_resources *res, sbx_err **err);
int rcg_update(const char *path, const oci_resources *res, sbx_err **err);
int rcg_attach(const char *path, pid_t pid, sbx_err **err);
int rcg_freeze(const char *path, bool frozen, sbx_err **err);
bool rcg_frozen(const char *path);
/* Pids of the group (v2 if there, else v1 memory/pids/freezer). */
int rcg_pids(const char *path, pid_t **ret, size_t *ret_n);
int rcg_signal_all(const char *path, int sig);
int rcg_destroy(const char *path);
/* runc's Stats object (cpu usage and throttling, memory with raw memory.stat,
 * pids) from whichever hierarchies have the group; a new reference in *ret. */
int rcg_stats(const char *path, json_t **ret, sbx_err **err);
/* The group's OOM kill counter (v1 memory.oom_control, v2 memory.events). */
int rcg_oom_kills(const char *path, uint64_t *ret);

/* ---- hooks.c ---- */
/* Runs hooks in order, each with `state_json` on stdin, honouring timeouts.
 * The first failure is returned. */
int runc_hooks_run(const oci_hook *h, size_t n, const char *kind, const char *state_json, sbx_err **err);

/* ---- proc.c: the last steps before execve, shared by create and exec ---- */
typedef struct runc_proc_ctx {
	const oci_process *p;
	unsigned walls;
	const json_t *seccomp; /* the spec's linux.seccomp, or NULL */
	int console_sock;      /* connected --console-socket, -1 if none */
} runc_proc_ctx;
/* PATH lookup as runc does it, inside the container's root: a malloc'd path
 * or an error worded so that docker maps it to exit 127 ("executable file not
 * found in $PATH" / "no such file or directory"). */
char *runc_find_exe(const oci_process *p, sbx_err **err);
/* The environment to exec with: the process's, plus HOME from the
 * container's /etc/passwd when the spec sets none (as runc does). The array
 * borrows the process's strings; free() only the array. */
char **runc_exec_env(const oci_process *p);
/* Terminal (pty on the console socket), rlimits, oom_score_adj, Landlock,
 * seccomp (spec's, then sbx's), capabilities and user, no_new_privs, cwd. */
int runc_proc_finalize(const runc_proc_ctx *c, sbx_err **err);
/* The spec's seccomp profile as a libseccomp filter, loaded (seccomp_oci.c). */
int runc_seccomp_load_spec(const json_t *seccomp, sbx_err **err);
/* features' linux.seccomp object (enabled, actions, operators, archs): a new reference. */
json_t *runc_seccomp_features(void);

/* ---- rootfs.c: in the container's new mount namespace ---- */
typedef struct runc_rootfs_ctx {
	const oci_spec *spec;
	const char *rootfs; /* absolute host path */
	const char *cgroup; /* the container's cgroup path (for cgroup mounts) */
	unsigned walls;
	bool no_pivot;
	const char *state_json; /* for createContainer hooks */
} runc_rootfs_ctx;
/* Mounts, createContainer hooks, pivot_root, masks, read-only root, hostname, sysctl. */
int runc_rootfs_setup(const runc_rootfs_ctx *c, sbx_err **err);

/* ---- container.c, create.c, exec.c: the commands ---- */
int runc_create(const runc_globals *g, const char *id, const char *bundle, const char *pid_file,
		const char *console_socket, bool no_pivot, sbx_err **err);
int runc_start(const runc_globals *g, const char *id, sbx_err **err);
int runc_state(const runc_globals *g, const char *id, sbx_err **err);
int runc_kill(const runc_globals *g, const char *id, int sig, bool all, sbx_err **err);
int runc_delete(const runc_globals *g, const char *id, bool force, sbx_err **err);
int runc_pause(const runc_globals *g, const char *id, bool pause, sbx_err **err);
/* format "json": the pids as a JSON array; NULL or "table": ps's table (ps_args, or -ef) for them. */
int runc_ps(const runc_globals *g, const char *id, const char *format, char *const *ps_args, sbx_err **err);
/* The resources document from resources_file ("-": stdin), or the text doc when the file is NULL. */
int runc_update(const runc_globals *g, const char *id, const char *resources_file, const char *doc,
		sbx_err **err);
/* format: NULL or "table", or "json" (an array of state objects); quiet: ids only. */
int runc_list(const runc_globals *g, const char *format, bool quiet, sbx_err **err);
/* runc events: with stats_once one stats event; else a stats event every
 * interval_ms and an "oom" event when the OOM counter moves, until the
 * container stops. One JSON object a line on stdout. */
int runc_events(const runc_globals *g, const char *id, bool stats_once, uint64_t interval_ms, sbx_err **err);
/* Returns the exit status to use (detached: 0). The process is process_file's,
 * or without one built from the bundle's process and xa (runc exec ID CMD...). */
int runc_exec(const runc_globals *g, const char *id, const char *process_file, const oci_exec_args *xa,
	      bool detach, const char *pid_file, const char *console_socket, bool tty, sbx_err **err);

/* Loads <root>/<id>/state.json and observes the process. -ENOENT (with err
 * "container does not exist") if there is no such container. */
int runc_load(const runc_globals *g, const char *id, oci_state_rec *ret_rec, const char **ret_status,
	      sbx_err **err);

/* ---- container.c: what create.c and exec.c share with the commands ---- */
#define RUNC_START_SOCK "start.sock" /* in <root>/<id>: the created container waits on it */
#define RUNC_MSG_MAX 8192	     /* one message of the setup handshake */
/* <root>/<id> (malloc'ed; NULL without memory). */
char *runc_state_dir(const runc_globals *g, const char *id);
/* The state letter and start time of pid from /proc/<pid>/stat. */
int runc_read_proc(pid_t pid, char *ret_state, uint64_t *ret_start);
/* The setup handshake between runc and the processes it forks: one message. */
int runc_send_str(int sock, const char *s);
/* Child side: report an error to the parent and exit. */
_noreturn_ void runc_child_fail(int sock, sbx_err *e);
/* Receives a message into buf; "error:..." from the child, or one not
 * starting with want (NULL: any), is an error. */
int runc_expect(int sock, const char *want, char *buf, size_t cap, sbx_err **err);
/* The state JSON a hook gets on its stdin (malloc'ed). */
char *runc_hook_state(const oci_state_rec *r, const char *status);
int runc_write_pid_file(const char *path, pid_t pid, sbx_err **err);
/* A unix socket connected to name in directory dirfd. */
int runc_connect_rel(int dirfd, const char *name, sbx_err **err);
/* A connected --console-socket (absolute or relative to our cwd). */
int runc_connect_console(const char *path, sbx_err **err);
