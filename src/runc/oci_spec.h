/* The OCI runtime spec as sbx-runc reads it: config.json, process.json (exec)
 * and the resources document of `update`. Pure: these functions parse text
 * that an engine wrote into plain structs; they touch no file and no kernel
 * object, so they are unit-tested and fuzzed (tests/fuzz/fuzz_oci_spec.c).
 *
 * Absent fields take the runtime spec's defaults. Unknown fields are ignored
 * (the spec lets runtimes ignore what they do not implement; docs/runc.md
 * lists exactly what is not honoured). A field of the wrong JSON type is an
 * error (SBX_E_INVALID_ARGUMENT) naming the field. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "util/err.h"

typedef struct oci_rlimit {
	int resource; /* RLIMIT_* */
	uint64_t soft, hard;
} oci_rlimit;

typedef struct oci_user {
	uint32_t uid, gid;
	gid_t *additional_gids;
	size_t n_additional_gids;
	bool has_umask;
	uint32_t umask;
} oci_user;

/* Capability sets as bit masks (bit n = capability n). */
typedef struct oci_caps {
	bool present; /* false: the spec had no "capabilities" (keep none but the defaults below) */
	uint64_t bounding, effective, inheritable, permitted, ambient;
} oci_caps;

typedef struct oci_process {
	char **args; /* NULL-terminated, at least one element */
	char **env;  /* NULL-terminated, may be empty */
	char *cwd;   /* absolute */
	oci_user user;
	bool terminal;
	oci_rlimit *rlimits;
	size_t n_rlimits;
	bool no_new_privileges;
	oci_caps caps;
	bool has_oom_score_adj;
	int oom_score_adj;
} oci_process;

typedef struct oci_mount {
	char *destination;	   /* absolute inside the container */
	char *type;		   /* "bind" when the spec has no type and a bind option (CDI) */
	char *source;		   /* may be NULL (proc, tmpfs, ...) */
	unsigned long flags;	   /* MS_* from the options, without propagation */
	unsigned long propagation; /* MS_PRIVATE|MS_REC etc., 0 if none */
	char *data;		   /* the options that are not flags, comma-joined; NULL if none */
	bool bind;		   /* a bind mount (type bind, or option bind/rbind) */
} oci_mount;

/* linux.devices: nodes to create in the container's /dev. */
typedef struct oci_device {
	char *path; /* absolute */
	char type;  /* 'c', 'b' (or 'u' = 'c'), 'p' */
	int64_t major, minor;
	bool has_mode, has_uid, has_gid;
	uint32_t mode, uid, gid;
} oci_device;

typedef struct oci_namespace {
	int type;   /* CLONE_NEW* */
	char *path; /* join this namespace, NULL: a new one */
} oci_namespace;

typedef struct oci_idmap {
	uint32_t container_id, host_id, size;
} oci_idmap;

typedef struct oci_hook {
	char *path;
	char **args; /* may be NULL */
	char **env;  /* may be NULL */
	int timeout; /* seconds, 0 none */
} oci_hook;

typedef enum oci_hook_kind {
	OCI_HOOK_PRESTART,
	OCI_HOOK_CREATE_RUNTIME,
	OCI_HOOK_CREATE_CONTAINER,
	OCI_HOOK_START_CONTAINER,
	OCI_HOOK_POSTSTART,
	OCI_HOOK_POSTSTOP,
	OCI_HOOK_MAX,
} oci_hook_kind;
extern const char *const oci_hook_names[OCI_HOOK_MAX];

/* linux.resources. A zero (or absent) field means "not set": for `update`
 * that is "leave as it is", which is what docker update expects. */
typedef enum oci_blkio_kind {
	OCI_BLKIO_WEIGHT, /* weightDevice: value is the weight, leaf the leafWeight */
	OCI_BLKIO_READ_BPS,
	OCI_BLKIO_WRITE_BPS,
	OCI_BLKIO_READ_IOPS,
	OCI_BLKIO_WRITE_IOPS,
} oci_blkio_kind;
typedef struct oci_blkio_dev {
	oci_blkio_kind kind;
	int64_t major, minor;
	uint64_t value; /* rate, or weight */
	uint64_t leaf;	/* leafWeight (weightDevice only; 0: not set) */
} oci_blkio_dev;

typedef struct oci_resources {
	int64_t memory_limit;	    /* bytes; -1 unlimited */
	int64_t memory_reservation; /* bytes */
	int64_t memory_swap;	    /* bytes (memory+swap); -1 unlimited */
	bool has_swappiness;	    /* swappiness is given (0 is a value) */
	uint64_t memory_swappiness; /* 0-100 */
	int disable_oom_killer;	    /* 1 disable, -1 enable, 0 not set */
	int64_t pids_limit;	    /* -1 unlimited */
	uint64_t cpu_shares;
	int64_t cpu_quota;   /* us per period; -1 unlimited */
	uint64_t cpu_period; /* us */
	char *cpuset_cpus, *cpuset_mems;
	uint64_t blkio_weight, blkio_leaf_weight; /* 10-1000 */
	oci_blkio_dev *blkio_devs;		  /* weightDevice and the throttles, in that order */
	size_t n_blkio_devs;
} oci_resources;

typedef struct oci_spec {
	char *oci_version;
	oci_process process;
	char *root_path; /* as written (relative to the bundle or absolute) */
	bool root_readonly;
	char *hostname; /* NULL if absent */
	oci_mount *mounts;
	size_t n_mounts;
	oci_namespace *namespaces;
	size_t n_namespaces;
	oci_device *devices;
	size_t n_devices;
	oci_idmap *uid_mappings, *gid_mappings;
	size_t n_uid_mappings, n_gid_mappings;
	oci_resources resources;
	char *cgroups_path;    /* NULL if absent */
	char **masked_paths;   /* NULL-terminated (never NULL) */
	char **readonly_paths; /* NULL-terminated (never NULL) */
	oci_hook *hooks[OCI_HOOK_MAX];
	size_t n_hooks[OCI_HOOK_MAX];
	json_t *hooks_json;  /* the "hooks" object as written (kept for poststop at delete), or NULL */
	json_t *annotations; /* object (never NULL) */
	json_t *seccomp;     /* linux.seccomp as written, or NULL */
	json_t *sysctl;	     /* linux.sysctl object, or NULL */
} oci_spec;

int oci_spec_parse(const char *text, size_t len, oci_spec **ret, sbx_err **err);
void oci_spec_free(oci_spec *s);
static inline void oci_spec_freep(oci_spec **s)
{
	oci_spec_free(*s);
}
#define _cleanup_oci_spec_ _cleanup_(oci_spec_freep)

/* A process object (config.json's "process", or exec's process.json). */
int oci_process_parse_json(const json_t *j, oci_process *ret, sbx_err **err);

/* `exec ID CMD...` without --process, as runc builds it: the bundle's
 * process with args replaced, env appended, and cwd, user ("uid[:gid]"),
 * additional gids, capabilities (added to bounding, effective, permitted and
 * ambient, as runc 1.1 does), terminal
 * and noNewPrivileges overridden where given. */
typedef struct oci_exec_args {
	char *const *argv;				    /* NULL-terminated, at least one element */
	const char *cwd;				    /* NULL: the spec's */
	const char *user;				    /* NULL: the spec's */
	const char *const *env, *const *gids, *const *caps; /* NULL-terminated or NULL */
	bool tty, no_new_privs;
} oci_exec_args;
/* A new process object in *ret. spec_process may be NULL (an empty one). */
int oci_exec_process(const json_t *spec_process, const oci_exec_args *a, json_t **ret, sbx_err **err);
int oci_process_parse(const char *text, size_t len, oci_process *ret, sbx_err **err);
void oci_process_done(oci_process *p);

/* A LinuxResources object (update --resources). */
int oci_resources_parse_json(const json_t *j, oci_resources *ret, sbx_err **err);
int oci_resources_parse(const char *text, size_t len, oci_resources *ret, sbx_err **err);
/* runc update's own flags (--memory 64m, --pids-limit, --cpu-quota, ...;
 * names without the dashes) as a resources document, malloc'd in *ret. */
int oci_resources_from_flags(const char *const *names, const char *const *values, size_t n, char **ret,
			     sbx_err **err);
void oci_resources_done(oci_resources *r);

/* Hooks of one kind from a "hooks" object (as kept in the state file). */
int oci_hooks_parse(const json_t *hooks, oci_hook_kind kind, oci_hook **ret, size_t *ret_n, sbx_err **err);
void oci_hooks_free(oci_hook *h, size_t n);

/* Mount options (runc's table): flags, propagation and the rest as data. */
/* Every mount option name oci_mount_options knows (features' mountOptions); a new reference. */
json_t *oci_features_mount_options(void);
int oci_mount_options(const char *const *opts, size_t n, unsigned long *ret_flags,
		      unsigned long *ret_propagation, char **ret_data, bool *ret_bind, sbx_err **err);
/* "CAP_SYS_ADMIN" -> 21; -1 if unknown. */
int oci_cap_from_name(const char *name);
/* "9", "KILL", "SIGKILL" -> 9; -1 if not a signal. */
int oci_signal_parse(const char *s);
/* "network" -> CLONE_NEWNET; 0 if unknown. */
int oci_namespace_type(const char *name);
/* "RLIMIT_NOFILE" -> RLIMIT_NOFILE; -1 if unknown. */
int oci_rlimit_from_name(const char *name);
/* Whether a "KEY=..." entry of env sets key; the value or NULL. */
const char *oci_env_get(char *const *env, const char *key);
