/* CDI devices in a live environment (docs/devices.md): the resolved edits
 * (runtime/cdi.h) applied by the runtime. Each function is one step, called
 * from the place that owns that moment:
 *   cdi_mount_apply   setup child, before pivot_root: device nodes and mounts
 *   devcg_attach      supervisor, after the cgroup attach: the device cgroup
 *   cdi_hooks_create  supervisor, environment ready, before create returns
 *   devices_teardown  supervisor, init reaped: poststop hooks, device cgroup gone
 *   cdi_gids_add      init, at each spawn: additionalGids
 * All do nothing when the environment has no devices (c->cdi NULL). */
#pragma once
#include <jansson.h>
#include <sys/types.h>

#include "runtime/runtime.h"
#include "runtime/user.h"

/* Device nodes are bind mounts of the host's nodes (mknod is refused in a
 * user namespace, and a bind keeps the host inode's type, numbers, mode and
 * owner exactly); /dev is made writable for the moment it takes and then
 * read-only again. Mounts are binds (nosuid, nodev added; "ro" honoured),
 * their targets created with RESOLVE_IN_ROOT. */
int cdi_mount_apply(const env_config *c, const char *root, sbx_err **err);

/* The device cgroup: deny all but the default /dev nodes and the CDI nodes'
 * (with their permissions). cgroup v1: devices.deny/allow of
 * devices/sbx/<id>; cgroup v2: a BPF_CGROUP_DEVICE program on the v2 group
 * (cg2_fd) when one can be loaded. What this host cannot do goes to
 * `warnings` (a JSON array of strings). */
int devcg_attach(const env_config *c, pid_t pid, int cg2_fd, json_t *warnings, sbx_err **err);

/* createRuntime, createContainer, startContainer (a failure fails the
 * create), then poststart (a failure is a warning). Every hook runs from
 * the supervisor, in the host's (runtime's) namespaces, with the OCI state
 * on stdin. */
int cdi_hooks_create(const env_config *c, pid_t init_pid, json_t *warnings, sbx_err **err);

/* Removes environment id's v1 device group, if any (the v2 program goes
 * with the v2 group); also `sbx rm` after a supervisor died. */
void devcg_remove(const char *id);

void devices_teardown(const env_config *c, pid_t init_pid);

void cdi_gids_add(const env_config *c, user_ident *id);
