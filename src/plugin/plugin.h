/* Plugins (docs/plugins.md): shared objects with the C ABI of
 * include/sbx_plugin.h, run in a separate plugin host process per
 * environment.
 *
 *   supervisor                               plugin host ("sbx-plugins")
 *   plugin_host_start(spec) --clone--------> dlopen + ABI check + init(config)
 *                           <---- ready ----  (then: drop privileges, seccomp)
 *   plugin_host_call("exec", info) -------->  on_exec of each plugin in order
 *                           <---- verdict --  allow (+ adjustments) | deny | error
 *   plugin_host_stop()      ---- fini ----->  fini; exit
 *
 * Messages are JSON on a SOCK_SEQPACKET socketpair (json_send/json_recv).
 * The host is a "clone child" (no exit signal), so the supervisor's
 * waitpid(-1) loop never reaps it and its exit status stays ours to read.
 * A host that crashes, or does not answer within the timeout (killed then),
 * makes the call and every later one fail: fail closed. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sbx_plugin.h"
#include "util/err.h"

struct env_config;

/* Hooks, as bits of plugin_host_hooks() and names on the wire. */
enum { PLUGIN_HOOK_CREATE = 1u << 0, PLUGIN_HOOK_EXEC = 1u << 1, PLUGIN_HOOK_EGRESS = 1u << 2 };
/* "create", "exec", "egress" -> bit; 0 if unknown. */
unsigned plugin_hook_bit(const char *hook);
/* "on_create", ... for messages. */
const char *plugin_hook_fn(const char *hook);

#define PLUGIN_TIMEOUT_MS_DEFAULT 5000
#define PLUGIN_MAX 16
#define PLUGIN_MAX_ARGV 4096
#define PLUGIN_MAX_ENV 256
#define PLUGIN_MAX_ADJUST_BYTES (256 * 1024)

typedef struct plugin_host plugin_host;

/* The plugin directories: SBX_PLUGIN_PATH (colon-separated absolute
 * directories) from the environment, else /usr/lib/sbx/plugins and
 * /usr/local/lib/sbx/plugins. */
const char *plugin_path(void);
/* May `path` be loaded? It must exist, be a regular file owned by root or
 * the caller and not writable by every user, and resolve (symlinks
 * followed) into a plugin directory that is not writable by every user.
 * *ret_real gets the resolved path (what to dlopen). */
int plugin_path_check(const char *path, char **ret_real, sbx_err **err);

/* Starts a plugin host for `spec`, a JSON array of {"path": "/abs/x.so",
 * "config": ANY (optional)}, and waits until every plugin is loaded and
 * initialised (or one failed: not found, not a plugin, wrong ABI version,
 * init failed, crashed; the error names the plugin). timeout_ms <= 0: the
 * default (SBX_PLUGIN_TIMEOUT_MS from the environment, else 5000). */
int plugin_host_start(const json_t *spec, int timeout_ms, plugin_host **ret, sbx_err **err);
/* The same with plugins already in memory (tests: no dlopen). configs[i] is
 * JSON text or NULL. */
int plugin_host_start_static(const struct sbx_plugin *const *plugins, const char *const *configs, size_t n,
			     int timeout_ms, plugin_host **ret, sbx_err **err);

/* Which hooks any loaded plugin implements (PLUGIN_HOOK_* bits): a hook
 * nobody implements costs no round trip. */
unsigned plugin_host_hooks(const plugin_host *h);
/* The plugins' names, in order (borrowed, NULL-terminated). */
char *const *plugin_host_names(const plugin_host *h);

/* Calls `hook` ("create", "exec", "egress") with `info` (the wire form, see
 * plugin_proto.c). Thread-safe (calls are serialised). Returns 0 when every
 * plugin allowed it; *ret_adjust (if non-NULL) then gets the adjusted fields
 * ({"limits": {...}} for create, {"argv": [...], "env": [...]} for exec) or
 * NULL when nothing changed. Fails with
 *   SBX_E_INVALID_ARGUMENT (EPERM)  a plugin vetoed: "plugin 'x' refused: why"
 *   SBX_E_UNAVAILABLE               a plugin failed, or the host crashed or
 *                                   timed out: "plugin host crashed: ...;
 *                                   refusing" (then every later call too). */
int plugin_host_call(plugin_host *h, const char *hook, const json_t *info, json_t **ret_adjust,
		     sbx_err **err);

/* Calls every plugin's fini (waiting at most a second), then ends the host.
 * Later calls fail. Safe while other threads call (they wait, then fail). */
void plugin_host_stop(plugin_host *h);
/* stop, then free. Only when no other thread can still call. */
void plugin_host_free(plugin_host *h);
/* Is the host gone (crashed, timed out or stopped)? */
bool plugin_host_dead(plugin_host *h);

/* ---- the wire form (plugin_proto.c, pure) ---------------------------------- */

/* An info document decoded into the C structure a hook gets. Strings point
 * into `doc` (owned). */
typedef struct plugin_info {
	unsigned hook;
	json_t *doc;
	sbx_plugin_create create;
	sbx_plugin_exec exec;
	sbx_plugin_egress egress;
	const char **v1, **v2; /* network_allow / argv, env */
	sbx_plugin_volume *vols;
} plugin_info;
/* Decodes (and validates) info for hook; takes a reference on info. */
int plugin_info_decode(const char *hook, json_t *info, plugin_info *ret, sbx_err **err);
void plugin_info_done(plugin_info *pi);

/* Applies what plugin `name` decided (v, after hook returned rc) to the info
 * document in *pi (re-decoded, so the next plugin sees the change) and to
 * the accumulated adjustments `adjust` (an object). Returns 1 to go on to
 * the next plugin, or 0 when the chain ends, with *ret_reply the reply to
 * send ({"result": "deny"|"error", "plugin", "message"}). */
int plugin_verdict_apply(plugin_info *pi, const char *name, int rc, const sbx_plugin_verdict *v,
			 json_t *adjust, json_t **ret_reply);

/* The supervisor's side: a reply ({"result": "allow", "adjust"?} or a deny or
 * error) into 0 + *ret_adjust, or an error as plugin_host_call describes. */
int plugin_reply_decode(const json_t *reply, const char *hook, json_t **ret_adjust, sbx_err **err);

/* Printable one-line text: control characters become spaces, invalid UTF-8
 * becomes '?', in place. */
void plugin_sanitize(char *s);

/* ---- the environment's hooks (plugin_env.c) --------------------------------- */

/* Starts c->plugins' host and calls on_create; applies lowered limits to c.
 * *ret_limits gets the final limits as {"memory_bytes", "pids", "cpus",
 * "timeout_ms", "ttl_ms", "output_bytes"} when a plugin changed them (for
 * the environment's recorded state), else NULL. */
int plugin_env_create(struct env_config *c, plugin_host **ret, json_t **ret_limits, sbx_err **err);
/* on_exec for an exec request `m` of the control protocol ({argv, env, cwd,
 * tty, timeout_ms}); adjustments are written into m. */
int plugin_env_exec(plugin_host *h, const char *env_id, json_t *m, sbx_err **err);
/* on_egress. */
int plugin_env_egress(plugin_host *h, const char *env_id, const char *kind, const char *host, int port,
		      sbx_err **err);
