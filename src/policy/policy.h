/* Policy documents: parse, validate, compose (pure; no I/O except
 * policy_secret_value, which reads the host environment or a host file).
 *
 * A document (JSON object; every field optional, unknown fields rejected):
 *   {"name": "ci",
 *    "override": false,          // true: this document may widen its base
 *    "network": {"mode": "none"|"allow"|"open", "allow": ["host[:port]", ...]},
 *    "filesystem": {"volumes": [{"host": "/abs", "path": "/abs", "readonly": true}],
 *                   "hidden": ["/abs", ...]},
 *    "limits": {"memory_bytes", "pids", "cpus", "timeout_ms", "ttl_ms",
 *               "output_bytes", "disk_bytes"},   // positive numbers
 *    "env": {"K": "V"},
 *    "secrets": {"K": {"env": true} | {"file": "/abs/path"}},
 *    "plugins": ["/abs/plugin.so", {"path": "/abs/other.so", "config": ANY}],
 *    "user": "UID[:GID]" | "NAME[:GROUP]" | UID,   // commands' default user
 *    "capabilities": ["CHOWN", ...]}               // what a root command keeps (safe set only)
 * "allow" implies mode "allow" when mode is absent. Secret values are never
 * stored in a policy: only where to read them on the host.
 *
 * Composition: policy_merge(base, later) applies `later` on top of `base`.
 * Unless later sets "override": true it may only narrow: network none < allow
 * < open and an allowlist whose every rule is covered by a base rule; limits
 * no larger than the base's; no new volumes, read-write where the base is
 * read-only, secrets or plugins, and a plugin's config cannot change (see
 * docs/plugins.md); capabilities a subset of the base's; root as the user
 * where the base's user is not root. Hidden paths only accumulate; env entries are
 * merged (later wins; they only shape the sandbox's own view). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/egress_match.h"
#include "sbx.h"

typedef enum policy_net_mode {
	POLICY_NET_UNSET = -1,
	POLICY_NET_NONE = 0,
	POLICY_NET_ALLOW = 1,
	POLICY_NET_OPEN = 2,
} policy_net_mode;

typedef struct policy_volume {
	char *host, *path;
	bool readonly;
} policy_volume;

typedef struct policy_secret {
	char *name;
	bool from_env; /* the host environment variable of the same name */
	char *file;    /* or this host file */
} policy_secret;

/* -1: unset (inherit; unlimited when nothing sets it). cpus: -1 or > 0. */
typedef struct policy_limits {
	int64_t memory_bytes, pids, timeout_ms, ttl_ms, output_bytes, disk_bytes;
	int64_t idle_suspend_ms; /* suspend when idle this long (docs/warm.md); 0: never */
	double cpus;
} policy_limits;

typedef struct policy {
	char *name;
	bool override;
	policy_net_mode net_mode;
	char **allow; /* NULL-terminated; NULL when unset */
	policy_volume *volumes;
	size_t n_volumes;
	bool volumes_set;
	char **hidden; /* NULL-terminated, may be NULL */
	policy_limits limits;
	char **env; /* NULL-terminated "K=V", sorted by key; may be NULL */
	policy_secret *secrets;
	size_t n_secrets;
	bool secrets_set;
	char **plugins;	       /* NULL-terminated; NULL when unset */
	json_t *plugin_config; /* path -> the "config" of plugins that have one; NULL when none */
	char *user;	       /* "user": NULL when unset (root) */
	bool caps_set;	       /* "capabilities": the kept set (runtime/caps.h), a ceiling */
	uint64_t caps;
	char **devices; /* "devices": CDI names allowed ("vendor/class=name", "vendor/class=*",
			 * "*"; runtime/cdi.h); NULL when unset: none */
} policy;

/* Parses a document. Errors name the field: "network.allow[2]: '*' is too
 * broad: name hosts or use network mode open". */
int policy_parse(const char *json, size_t len, policy **ret, sbx_err **err);
int policy_from_json(const json_t *doc, policy **ret, sbx_err **err);
/* Built-in profiles "strict" (the default), "dev", "open"; complete policies. */
int policy_profile(const char *name, policy **ret, sbx_err **err);
typedef struct policy_profile_info {
	const char *name;
	const char *description; /* one line */
	const char *doc;	 /* the policy document (JSON) */
} policy_profile_info;
/* The built-in profiles, the default ("strict") first; *ret_n of them. */
const policy_profile_info *policy_profiles(size_t *ret_n);
/* base + later -> *ret (a new policy); neither input is changed. A widening
 * without "override" fails naming the field ("limits.memory_bytes: 1073741824
 * is larger than the base's 536870912; set \"override\": true to widen"). */
int policy_merge(const policy *base, const policy *later, policy **ret, sbx_err **err);
/* The canonical JSON form (set fields only); policy_from_json accepts it. */
json_t *policy_to_json(const policy *p);
/* The allowlist the egress proxy serves, or NULL with *ret NULL when the
 * network mode is none (no proxy at all). */
int policy_egress_allowlist(const policy *p, egress_allowlist **ret, sbx_err **err);
/* Reads a secret's value from the host (environment or file, max 1 MiB). */
int policy_secret_value(const policy_secret *s, char **ret, sbx_err **err);
policy *policy_free(policy *p);
static inline void policy_freep(policy **p)
{
	policy_free(*p);
}
#define _cleanup_policy_ _cleanup_(policy_freep)
