/* sbx-runc's per-container state file, and the decisions made from it. Pure:
 * formatting and parsing of state.json, the status of a container from what
 * was observed of its process, /proc/<pid>/stat parsing and cgroupsPath
 * resolution. The I/O around them is in container.c. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "util/err.h"

#define OCI_SPEC_VERSION "1.0.2"

/* What `create` records in <root>/<id>/state.json. */
typedef struct oci_state_rec {
	char *id;
	pid_t pid;	     /* the container's process, in the caller's pid namespace */
	uint64_t start_time; /* its /proc/<pid>/stat field 22: a reused pid is not ours */
	char *bundle;	     /* absolute */
	char *rootfs;	     /* absolute */
	char *created;	     /* RFC 3339, UTC */
	char *cgroup;	     /* hierarchy path, e.g. "/default/ID" (oci_cgroup_path) */
	uint32_t owner;	     /* uid that created it */
	json_t *annotations; /* object */
	json_t *hooks;	     /* the spec's hooks object (poststop runs at delete), or NULL */
} oci_state_rec;

void oci_state_rec_done(oci_state_rec *r);
/* The state file's text (malloc'd, NUL-terminated). */
char *oci_state_format(const oci_state_rec *r);
int oci_state_parse(const char *text, size_t len, oci_state_rec *ret, sbx_err **err);

/* What was observed of a container's process. */
typedef struct oci_observed {
	bool alive;	    /* /proc/<pid> exists with the recorded start time and is not a zombie */
	bool start_pending; /* the start socket is still there: `start` has not run */
	bool frozen;	    /* its freezer says FROZEN */
} oci_observed;
/* "created", "running", "paused" or "stopped". */
const char *oci_status_decide(const oci_observed *o);

/* The JSON `sbx-runc state` prints (runc's shape): ociVersion, id, pid (0
 * once stopped, as runc reports), status, bundle, rootfs, created, owner,
 * annotations. malloc'd. */
char *oci_state_report(const oci_state_rec *r, const char *status);
/* The same object (a new reference), for `list --format json`. */
json_t *oci_state_json(const oci_state_rec *r, const char *status);

/* Parses /proc/<pid>/stat text: the state letter and field 22 (starttime).
 * The command name may hold spaces and ')' : the last ')' ends it. */
int oci_proc_stat_parse(const char *text, char *ret_state, uint64_t *ret_start_time);

/* The cgroup hierarchy path for a spec's cgroupsPath: NULL or "" gives
 * "/sbx-runc/<id>"; an absolute path is used as is; a relative one is put
 * under "/"; with systemd, "slice:prefix:name" gives
 * "/<slice path>/<prefix>-<name>.scope" (a-b.slice -> /a.slice/a-b.slice).
 * Refuses ".." components. malloc'd in *ret. */
int oci_cgroup_path(const char *cgroups_path, const char *id, bool systemd, char **ret, sbx_err **err);

/* Container ids: [A-Za-z0-9][A-Za-z0-9_.+-]{0,1023} (no '/', no "..":
 * the id names a directory under the state root). */
bool oci_id_valid(const char *id);

/* `ps ID [ps-args]` (runc's table format): keeps the header of ps's output
 * and the lines whose PID column names one of pids. -EINVAL if the header
 * has no PID column. A malloc'd text in *ret. */
int oci_ps_filter(const char *ps_out, const pid_t *pids, size_t n, char **ret);

/* cgroup files for `events --stats`: the value of "key N" lines (memory.stat,
 * cpu.stat, cpuacct.stat, memory.events); -ENOENT if the key is missing. */
int oci_kv_get(const char *text, const char *key, uint64_t *ret);
/* Every "key N" line as an object of numbers (runc's memory "raw"); a new reference. */
json_t *oci_kv_object(const char *text);
/* Whitespace-separated numbers (cpuacct.usage_percpu) as an array; a new reference. */
json_t *oci_u64_array(const char *text);
/* A Go duration ("5s", "100ms", "1m30s", "2h") in milliseconds; -EINVAL if malformed. */
int oci_duration_ms(const char *s, uint64_t *ret);
