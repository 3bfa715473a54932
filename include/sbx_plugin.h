/* sbx plugins: the C ABI (docs/plugins.md).
 *
 * A plugin is a shared object named by a policy ("plugins": ["/abs/x.so"] or
 * [{"path": "/abs/x.so", "config": {...}}]) and installed in a plugin
 * directory (SBX_PLUGIN_PATH; default /usr/lib/sbx/plugins and
 * /usr/local/lib/sbx/plugins). sbx loads it with dlopen in a separate
 * *plugin host* process (one per environment, never in the CLI, the MCP
 * server or the supervisor) and calls its hooks there:
 *
 *   on_create  before the environment starts: veto it, or lower its limits
 *   on_exec    before each command is spawned: veto it, or replace its argv
 *              and add environment variables
 *   on_egress  for each connection through the egress proxy (network allow),
 *              before the host is resolved: veto it
 *
 * A plugin exports one function, `sbx_plugin_entry`, returning a static
 * `struct sbx_plugin` (see SBX_PLUGIN_DEFINE below). Only plain C types cross
 * the boundary; the plugin never links against libsbx.
 *
 * Versioning. `abi_version` must equal SBX_PLUGIN_ABI_VERSION or the plugin
 * is refused at load (the create fails, naming the plugin). Within one ABI
 * version structures only grow at the end: each carries its `size` as filled
 * in by whoever allocated it, and a reader must check SBX_PLUGIN_HAS() before
 * touching a field added later than the version it was built against.
 *
 * Failure is closed: a hook that returns non-zero, crashes, or does not
 * answer within the timeout (5 s; SBX_PLUGIN_TIMEOUT_MS) refuses the
 * operation, and once the plugin host is gone every later hook of that
 * environment refuses too. Hooks of one environment are called one at a
 * time (never concurrently), in the order the policy lists the plugins; the
 * first veto wins, and each plugin sees the adjustments of those before it.
 *
 * What a plugin may do: it is host code the operator chose, like a policy.
 * Its constructors and init() run with the supervisor's credentials; before
 * the first hook the plugin host drops to uid/gid 65534 (when sbx runs as
 * root), sets no_new_privs, becomes non-dumpable and loads the environment's
 * seccomp deny list. Open files, sockets or connections a hook needs in
 * init(). */
#ifndef SBX_PLUGIN_H
#define SBX_PLUGIN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SBX_PLUGIN_ABI_VERSION 1
/* The symbol sbx looks up: const struct sbx_plugin *sbx_plugin_entry(void). */
#define SBX_PLUGIN_ENTRY_SYMBOL "sbx_plugin_entry"
/* Longest message (bytes, including the NUL) a verdict carries. */
#define SBX_PLUGIN_MESSAGE_MAX 512

/* True if the structure *s (with its `size` member) is large enough to hold
 * member f: check before reading or writing a member that a later minor
 * revision of this header appended. */
#define SBX_PLUGIN_HAS(s, f) (offsetof(__typeof__(*(s)), f) + sizeof((s)->f) <= (s)->size)

/* Limits of an environment. In info structures: -1 means unlimited (none).
 * In a verdict: 0 leaves the limit unchanged; a positive value lowers it
 * (raising a limit is refused: plugins only narrow). */
typedef struct sbx_plugin_limits {
	int64_t memory_bytes;
	int64_t pids;
	double cpus;
	int64_t timeout_ms;   /* default per-command wall-clock timeout */
	int64_t ttl_ms;	      /* idle lifetime of the environment */
	int64_t output_bytes; /* captured output per stream */
} sbx_plugin_limits;

typedef struct sbx_plugin_volume {
	const char *host; /* host directory */
	const char *path; /* where it appears inside */
	int readonly;
} sbx_plugin_volume;

/* on_create: an environment is about to start (also each time it starts
 * again, on `sbx restore`). */
typedef struct sbx_plugin_create {
	size_t size;
	const char *environment_id;	  /* 12 hex characters */
	const char *name;		  /* NULL if unnamed */
	const char *template_spec;	  /* "host", "dir:PATH", an image template */
	const char *network;		  /* "none", "allow", "internet" or "open" */
	const char *const *network_allow; /* NULL-terminated host[:port] patterns (allow) */
	sbx_plugin_limits limits;
	const sbx_plugin_volume *volumes;
	size_t n_volumes;
	int rootless;
} sbx_plugin_create;

/* on_exec: a command is about to be spawned in the environment. */
typedef struct sbx_plugin_exec {
	size_t size;
	const char *environment_id;
	const char *const *argv; /* NULL-terminated; argv[0] as given (looked up in PATH inside) */
	const char *const *env;	 /* NULL-terminated extra "K=V" of this command */
	const char *cwd;	 /* NULL: the default (/root) */
	int64_t timeout_ms;	 /* 0: the environment's default, -1: none */
	int tty;
} sbx_plugin_exec;

/* on_egress: a connection through the egress proxy, after the allowlist
 * allowed its target and before the name is resolved. */
typedef struct sbx_plugin_egress {
	size_t size;
	const char *environment_id;
	const char *kind; /* "connect" (HTTP CONNECT tunnel) or "http" (plain HTTP forward) */
	const char *host; /* lower case, as the client named it (a name or an IP literal) */
	int port;
} sbx_plugin_egress;

/* What a hook decides. Zeroed by sbx before each call (with `size` set);
 * a hook that leaves it alone allows the operation unchanged. */
typedef struct sbx_plugin_verdict {
	size_t size;
	int deny;			      /* non-zero: veto */
	char message[SBX_PLUGIN_MESSAGE_MAX]; /* why (shown to the caller); printable text */
	/* on_create: lower limits (0 = unchanged). */
	sbx_plugin_limits limits;
	/* on_exec: replace the command line (NULL: unchanged) and add environment
	 * variables ("K=V", NULL-terminated, a later value wins). The memory is
	 * the plugin's and must stay valid until its next hook call (static or
	 * per-plugin storage, not the hook's stack). At most 4096 arguments, 256
	 * variables and 256 KiB in all. */
	const char *const *argv;
	const char *const *env_add;
} sbx_plugin_verdict;

/* A plugin. Every hook is optional (NULL); hooks return 0, or non-zero when
 * the plugin itself failed (the operation is then refused). */
struct sbx_plugin {
	uint32_t abi_version; /* SBX_PLUGIN_ABI_VERSION */
	uint32_t size;	      /* sizeof(struct sbx_plugin) as compiled */
	const char *name;     /* short, printable: it names the plugin in messages */
	const char *description;
	/* Called once in the plugin host, before any hook, with the policy's
	 * "config" for this plugin as JSON text ("null" when none). Non-zero
	 * fails the create with `errbuf` as the reason. *ctx is passed to every
	 * hook. */
	int (*init)(const char *config_json, void **ctx, char *errbuf, size_t errlen);
	/* Called when the environment is removed (best effort: not after a crash). */
	void (*fini)(void *ctx);
	int (*on_create)(void *ctx, const sbx_plugin_create *info, sbx_plugin_verdict *out);
	int (*on_exec)(void *ctx, const sbx_plugin_exec *info, sbx_plugin_verdict *out);
	int (*on_egress)(void *ctx, const sbx_plugin_egress *info, sbx_plugin_verdict *out);
};

typedef const struct sbx_plugin *(*sbx_plugin_entry_fn)(void);

/* In a plugin: SBX_PLUGIN_DEFINE(my_plugin) where my_plugin is a
 * `static const struct sbx_plugin` defines the exported entry point. */
#define SBX_PLUGIN_DEFINE(var)                                                                               \
	__attribute__((visibility("default"))) const struct sbx_plugin *sbx_plugin_entry(void);              \
	__attribute__((visibility("default"))) const struct sbx_plugin *sbx_plugin_entry(void)               \
	{                                                                                                    \
		return &(var);                                                                               \
	}

/* Vetoes with a printf-style message. */
static inline __attribute__((format(printf, 2, 3))) void sbx_plugin_deny(sbx_plugin_verdict *v,
									 const char *fmt, ...)
{
	va_list ap;
	v->deny = 1;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
}

#ifdef __cplusplus
}
#endif
#endif
