/* A disk quota on an environment's writable layer (root mode).
 *
 * The writable layer gets a filesystem of its own, of exactly the quota's
 * size: $env_dir/disk.img, a sparse file formatted ext4 (no journal, no
 * reserved blocks), attached to a loop device (LOOP_CONFIGURE, autoclear: the
 * device detaches when its filesystem is unmounted everywhere) and mounted
 * nosuid,nodev on $env_dir/disk. Its upper/ and work/ are bind-mounted onto
 * $env_dir/upper and $env_dir/work, so every host-side path (snapshot, diff,
 * machine-id) is unchanged and overlayfs finds upper and work on one
 * filesystem; writes beyond the quota fail inside with ENOSPC.
 *
 * All of it lives in the host's mount namespace and outlives the supervisor:
 * quota_teardown() (sbx rm, sbx gc, a failed create) takes it down. One-shot
 * environments (sbx run) need none of this: their writable layer is a tmpfs
 * inside the environment, whose size is the quota (setup.c). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/err.h"

/* Below this a quota is refused (ext4 metadata, the host template's dirs). */
#define QUOTA_MIN_BYTES (4LL << 20)

/* Where the overlay mounts take upper/ and work/ from: overlayfs wants both
 * under one mount, so with a quota, or a tmpfs layer (quota_setup_tmpfs),
 * that is the disk itself (env_dir/disk), not the two binds (which are for
 * the host-side readers). */
void quota_layer_base(const char *env_dir, int64_t disk_bytes, char *buf, size_t n);

/* Sets up (or, when parts exist already, completes) the quota'd writable
 * layer of env_dir: formats a new image if there is none, mounts it if it is
 * not mounted, creates upper/ and work/ on it (owned uid:gid, mode 0755) and
 * binds them. Undoes what it did itself on failure. */
int quota_setup(const char *env_dir, int64_t bytes, uid_t uid, gid_t gid, sbx_err **err);

/* The same layout without a size: a tmpfs (nosuid, nodev, no size limit:
 * its pages are charged to the memory cgroup of whoever writes them, the
 * environment's) mounted on env_dir/disk instead of an image. Removing it
 * is an unmount (quota_teardown), with no filesystem metadata to free. Used
 * for warm pool entries under SBX_POOL_LAYER=tmpfs (docs/warm.md). */
int quota_setup_tmpfs(const char *env_dir, uid_t uid, gid_t gid, sbx_err **err);

/* Unmounts the binds, then the disk (lazily: nothing may keep them), and
 * waits (at most ~2 s) for the loop device to let go of the image. Parts
 * that are not there are fine; 0 when nothing of it remains mounted. */
int quota_teardown(const char *env_dir);

/* For a restore: quota_teardown() and the image goes (quota_setup() then
 * formats a fresh one, so the restored layer starts empty). A no-op without
 * a quota. */
int quota_reset(const char *env_dir, sbx_err **err);

/* The filesystem under env_dir/upper when it is the quota's: its usable size,
 * used and available bytes. -ENOENT when env_dir has no mounted quota disk. */
int quota_usage(const char *env_dir, int64_t *ret_size, int64_t *ret_used, int64_t *ret_avail);
