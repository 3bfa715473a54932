/* The runtime: what a live environment is made of and the entry points that
 * the API layer (src/api) calls. The supervisor is forked from the creating
 * process and inherits `env_config` in memory; init is cloned from the
 * supervisor and inherits it too, so no configuration crosses a socket. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "runtime/cgroup.h"
#include "runtime/mask.h"
#include "runtime/secrets.h"
#include "util/err.h"

#define ENV_ID_LEN 12
#define ENV_UID_COUNT 65536u

typedef struct env_volume {
	char *host;
	char *path;
	bool readonly;
} env_volume;

/* A published port (docs/ports.md): the supervisor's listener on host_ip:
 * host_port relays to port on the environment's loopback. host_port 0 until
 * bound (a free one); fd: the listener, -1 until bound or when a restart
 * could not bind it again. */
typedef struct env_port {
	char host_ip[46];
	int host_port;
	int port;
	int fd;
} env_port;

typedef struct env_config {
	char id[ENV_ID_LEN + 1];
	char *name; /* may be NULL */
	char *hostname;
	char *env_dir; /* $SBX_ROOT/envs/<id>: upper/, work/, state.json */
	char *run_dir; /* $SBX_RUN/<id>: ctl.sock, lock, mnt/ */
	char *template_spec;
	bool rootless;
	bool ephemeral;	       /* writable layer on a tmpfs inside the environment */
	bool supervisor_child; /* the supervisor stays the caller's child (ctx_short_lived) */
	/* No user namespaces on this host (e.g. AppArmor's restriction on Ubuntu
	 * 24.04): no namespaces at all; Landlock confines every process to the
	 * system directories (read-only) and the environment's own directory
	 * (env_dir/home, env_dir/tmp); seccomp denies IP sockets. */
	bool degraded;
	uid_t host_uid; /* rootless: the caller; root: the base of the range */
	gid_t host_gid;
	uint32_t id_count; /* 65536 with root, 1 rootless */
	char **layers;	   /* snapshot layer trees ($SBX_ROOT/layers/...), topmost first */
	size_t n_layers;
	mask_list *mask; /* host template: replayed into a tmpfs as the top lower layer */
	char **lowers;	 /* host directories, topmost first (below the mask) */
	size_t n_lowers;
	env_volume *volumes;
	size_t n_volumes;
	char **env; /* base environment "K=V" for every command */
	cgroup_limits limits;
	int64_t timeout_ms;
	int64_t output_bytes;
	int64_t ttl_ms;
	int64_t idle_suspend_ms; /* suspend after this long idle (docs/warm.md); 0: never */
	int64_t disk_bytes; /* quota on the writable layer (0: none): quota.h; ephemeral: the tmpfs's size */
	/* "none"; "allow" (through the egress proxy, to the allowlist); "internet"
	 * (through the egress proxy, to every public host and port); "open" (the
	 * host's network). */
	char *network;
	char **network_allow; /* allow: host[:port] patterns (policy/egress_match.h);
			       * internet: internal addresses it may still reach */
	json_t *plugins; /* [{"path", "config"?}] loaded in a plugin host (plugin/plugin.h); NULL: none */
	/* Secrets, hidden paths, phases (docs/secrets.md; secrets.h, hide.h). Secret
	 * values live only here, in memory: never in state.json. */
	char **secret_env;	  /* "NAME=value" added to every command's environment */
	env_secret *secret_files; /* written to the tmpfs at /run/secrets */
	size_t n_secret_files;
	int secrets_dirfd; /* init: that tmpfs's root, -1 without file secrets */
	char **hidden;	   /* absolute paths that do not exist inside, may be NULL */
	bool agent_phase;  /* in the agent phase (no way back to setup) */
	int lock_fd;	   /* flock'd $SBX_RUN/<id>/lock, inherited by the supervisor */
	/* Users and capabilities (user.h, caps.h): commands run as `user` (NULL:
	 * root) unless an exec names another; a root command holds `caps` (a
	 * subset of the safe set), any other user none. no_root: the policy runs
	 * commands as a non-root user, so an exec may not ask for root. */
	char *user;
	uint64_t caps;
	bool no_root;
	/* CDI devices (docs/devices.md; runtime/devices.h): resolved on the host
	 * at create, applied by setup, the supervisor and init. NULL: none. */
	struct cdi_edits *cdi;
	char **devices; /* the resolved names, "vendor/class=name" */
	/* One-shot (sbx run; docs/runtime.md "One-shot runs"): the environment
	 * lives no longer than its owner, a process. owner_fd is a pidfd of it
	 * (the creator's, inherited; or one a pool's taker sent, CTL_OP_OWN),
	 * -1 when none. The supervisor of a one-shot environment ends it when
	 * the owner exits (kill -9 included), and whatever ended it, removes it
	 * (dispose) before it answers "stopped". */
	bool one_shot;
	int owner_fd;
	/* The API layer's removal of an environment's files, state, uid slot
	 * and name (called by the supervisor, in its process: a fork of the
	 * creator's, so arg, the creator's context, is valid there). */
	void (*dispose)(void *arg, const char *id);
	void *dispose_arg;
	/* The same removal in two halves, for the supervisor's stop (NULL: the
	 * API gave none; then dispose is used): hide takes the environment out
	 * of every view (its name, state and run directory renamed into the
	 * trash) while init is dying, before "stopped"; finish (always called
	 * after a hide, with what it returned) frees the uid range and starts
	 * the trash's removal, after the reply, once every process and the
	 * cgroup are gone. */
	void *(*dispose_hide)(void *arg, const char *id);
	void (*dispose_finish)(void *arg, void *hidden);
	/* A warm pool's entry (docs/warm.md): its token and where a taker's
	 * claim moves it (CTL_OP_OWN renames one to the other); NULL otherwise. */
	char *pool_token, *pool_claim;
	/* Its hand-out to a one-shot taker (CTL_OP_OWN): the API's rewrite of
	 * its state (no longer a pool entry; created at taken_ms, realtime, from
	 * the pool), called by the supervisor with dispose_arg once the taker's
	 * first command is on its way (or a moment after the take without one);
	 * 0 or negative errno. NULL: never called. */
	int (*handout)(void *arg, const char *id, int64_t taken_ms);
	/* One-shot creates: the API's on-disk steps, run by the supervisor
	 * process before it starts (so that no moment leaves them behind
	 * without a process that removes them); 0 or negative errno with *err. */
	int (*prepare)(void *arg, struct env_config *c, sbx_err **err);
	void *prepare_arg;
	/* Published ports (docs/ports.md), bound by the supervisor before
	 * anything else: a create fails when one cannot be bound; a restart
	 * (ports_lenient: wake, restore with a new supervisor) warns and goes
	 * on without it. */
	env_port *ports;
	size_t n_ports;
	bool ports_lenient;
	/* Filled in while starting: */
	char **warnings; /* isolation walls this host could not provide */
} env_config;

void env_config_free(env_config *c);

/* Starts the supervisor for `c` (fork + setsid + fork). Returns once the
 * environment is ready (init running, all walls up) or failed; on success
 * *ret_warnings gets what could not be provided (strv, may be NULL). The
 * supervisor process never returns from this call. */
int supervisor_start(env_config *c, char ***ret_warnings, json_t **ret_info, sbx_err **err);

/* init_copy.c: the file actions "stat", "tar_out" and "tar_in" of init's
 * file operation (sbx cp); true if action was one of them (answered). */
bool init_copy_handle(int sock, const json_t *m, const char *action, const char *path, const char *shown);
/* init_fs.c: init's answer to a CTL_OP_FILE request m (every file action,
 * and "socket"), as the user the request or, else, the environment c names;
 * it always replies on sock. */
void init_fs_request(const env_config *c, int sock, const json_t *m);

/* Inside the cloned child: the ordered privilege sequence, then init's loop.
 * Never returns. `sock` talks to the supervisor; `tree_fds` are the lower
 * layers and volumes prepared by the supervisor (-1 where the child must
 * open them itself). */
_noreturn_ void setup_child(env_config *c, int sock);

/* Init's loop (pid 1 inside). Never returns. */
_noreturn_ void init_main(env_config *c, int sock);

/* Can this process create a user namespace? (probed once, by forking) */
bool userns_available(void);

/* Degraded mode helpers (setup.c, init.c). */
char *degraded_home(const env_config *c); /* malloc'd env_dir/home */

/* The unprivileged host uid range of slot n (root mode). */
uid_t userns_slot_base(unsigned slot);
/* Host uid ranges are a host-wide resource, whatever SBX_ROOT a caller
 * uses: a slot is a file in this directory (on tmpfs: ranges are free
 * again after a reboot), holding its owner's environment directory. */
#define USERNS_SLOT_DIR "/run/sbx-uidslots"
/* An empty slot file this old is a claim whose creator died (sbx gc frees it). */
#define SLOT_EMPTY_STALE_S 60
int userns_slot_alloc(const char *owner_env_dir, unsigned *ret_slot, sbx_err **err);
/* Claims slot for owner (a restart after a reboot emptied /run): an error
 * (errno EEXIST) when it is taken. */
int userns_slot_take(unsigned slot, const char *owner_env_dir, sbx_err **err);
int userns_slot_free(unsigned slot);
/* The same, only while the slot is still owner's (a removal that two
 * processes finish, a one-shot environment's supervisor and its caller,
 * never frees a slot that another environment took meanwhile). */
int userns_slot_free_owned(unsigned slot, const char *owner);
/* Writes uid_map/gid_map (and setgroups for rootless) of pid. */
int userns_write_maps(pid_t pid, const env_config *c, sbx_err **err);
/* An fd of a fresh user namespace mapping host uid/gid `inner` to the
 * environment's root (for idmapping a volume so that the environment's root
 * writes as the volume's owner). */
int userns_make_idmap_ns(uid_t inner_uid, gid_t inner_gid, uid_t outer_uid, gid_t outer_gid, sbx_err **err);
