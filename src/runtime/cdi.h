/* Container Device Interface (CDI) specs: parse, resolve, match (pure), and
 * load from the spec directories (the only I/O here, cdi_load_dirs).
 *
 * A spec (JSON, or YAML through libyaml) names a kind "vendor/class", its
 * devices and containerEdits at two levels: the spec's, applied once when
 * any of its devices is requested, and each device's. cdiVersion 0.3.0 up
 * to CDI_VERSION_MAX is accepted, and a field newer than the spec's
 * cdiVersion is refused (as the reference implementation does): hostPath
 * of a device node 0.5.0, annotations 0.6.0, additionalGids and intelRdt
 * 0.7.0, netDevices 1.1.0, a mount's type 0.4.0. Unknown fields are refused.
 * intelRdt and netDevices parse but a device that uses them is refused at
 * resolve: sbx cannot apply them (docs/devices.md).
 *
 * Names: "vendor/class=name"; vendor a DNS subdomain, class and name
 * alphanumerics with '-', '_', '.' (and ':' in names, MIG slices "0:1").
 * "=all" is the spec's device named "all" if it has one, else every device
 * of the kind. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

#define CDI_VERSION_MAX "1.1.0"
#define CDI_DEFAULT_DIRS "/etc/cdi:/var/run/cdi"
#define CDI_SPEC_MAX_BYTES (4 << 20)

typedef struct cdi_node {
	char *path;	      /* inside */
	char *host_path;      /* on the host (defaults to path) */
	char type;	      /* 'c', 'b', 'p' or 0 (unset: the host node's) */
	int64_t major, minor; /* -1: unset (the host node's) */
	int64_t file_mode;    /* -1: unset */
	int64_t uid, gid;     /* -1: unset */
	char perms[4];	      /* cgroup access, "rwm" by default, "" for "none" */
} cdi_node;

typedef struct cdi_mount {
	char *host_path, *container_path, *type; /* type may be NULL (a bind) */
	char **options;				 /* strv, may be NULL */
} cdi_mount;

typedef struct cdi_hook {
	char *name; /* hookName: createRuntime, createContainer, startContainer, poststart, poststop */
	char *path; /* absolute */
	char **args, **env; /* strv, may be NULL */
	int64_t timeout_s;  /* 0: none */
} cdi_hook;

typedef struct cdi_edits {
	char **env; /* "K=V", strv, may be NULL */
	cdi_node *nodes;
	size_t n_nodes;
	cdi_mount *mounts;
	size_t n_mounts;
	cdi_hook *hooks;
	size_t n_hooks;
	uint32_t *gids; /* 0s dropped */
	size_t n_gids;
	bool unsupported; /* intelRdt or netDevices: refused at resolve */
} cdi_edits;

typedef struct cdi_device {
	char *name;
	cdi_edits edits;
} cdi_device;

typedef struct cdi_spec {
	char *file;    /* where it came from (messages) */
	char *version; /* cdiVersion */
	char *kind;    /* vendor/class */
	cdi_edits edits;
	cdi_device *devices;
	size_t n_devices;
	int priority; /* index of its directory: a later directory wins */
} cdi_spec;

/* Parses one spec. YAML when `file` ends in .yaml or .yml, else JSON (a
 * YAML parser is used for JSON too when the text is not JSON: YAML is a
 * superset). Errors name the file and the field ("spec 'x.json': devices[0].
 * containerEdits.deviceNodes[1].path: must be an absolute path"). */
int cdi_spec_parse(const char *text, size_t len, const char *file, cdi_spec **ret, sbx_err **err);
cdi_spec *cdi_spec_free(cdi_spec *s);
void cdi_specs_free(cdi_spec **v, size_t n);

/* Splits "vendor/class=name" (checked) into *ret_kind and *ret_name (malloc'd). */
int cdi_name_parse(const char *qualified, char **ret_kind, char **ret_name, sbx_err **err);

/* Resolves the requested names against specs: edits of each spec used
 * once (spec level, in the order first requested), then each device's, in
 * request order; a device requested twice counts once. A kind or name that
 * no spec defines, a device defined twice at the same priority, and a
 * device using intelRdt/netDevices are errors. *ret is filled (free with
 * cdi_edits_done); *ret_names gets the resolved device names (strv; "=all"
 * expanded). */
int cdi_resolve(cdi_spec *const *specs, size_t n_specs, const char *const *names, cdi_edits *ret,
		char ***ret_names, sbx_err **err);
void cdi_edits_done(cdi_edits *e);

/* The policy's allowlist: entries "vendor/class=name", "vendor/class=*"
 * (any device of the kind) or "*" (any). A NULL list allows nothing. */
bool cdi_allowed(const char *const *allow, const char *qualified);

/* Reads every *.json, *.yaml and *.yml of the colon-separated directories
 * (missing ones skipped). Root (want_uid 0) accepts only files owned by
 * root and not writable by group or others (their hooks run with the
 * caller's privilege); rootless, files owned by root or the caller. A
 * malformed spec is an error naming it. */
int cdi_load_dirs(const char *dirs, uid_t want_uid, cdi_spec ***ret, size_t *ret_n, sbx_err **err);
