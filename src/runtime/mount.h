/* Assembling an environment's root filesystem, inside its mount namespace. */
#pragma once
#include <stdbool.h>
#include "runtime/runtime.h"

/* Makes every mount in our namespace private (nothing propagates to the host). */
int mount_make_private(sbx_err **err);
/* A detached clone of host directory `path` (in our mount namespace). */
int mount_clone_tree(const char *path, sbx_err **err);
/* Attaches detached tree `tree_fd` at `dir` (relative to cwd or absolute). */
int mount_attach(int tree_fd, const char *dir, sbx_err **err);
/* Mounts the overlay root at `stage`/root with the given lowerdir option
 * (colon-separated, topmost first). upper_fd/work_fd (O_PATH, opened in our
 * mount namespace) are used when not ephemeral; otherwise upper and work
 * live on stage's tmpfs (work/_root). */
int mount_rootfs(const char *stage, const char *lowerdir, int upper_fd, int work_fd, bool ephemeral, sbx_err **err);
/* One overlay at root/dir (the host template's per-directory overlays). */
int mount_overlay_dir(const char *root, const char *dir, const char *lowerdir, const char *upper, const char *work,
		      sbx_err **err);
/* /proc (with masked and read-only parts), /dev, /tmp under `root`. */
int mount_dev(const char *root, bool rootless, sbx_err **err);
int mount_proc(const char *root, sbx_err **err);
int mount_tmp(const char *root, sbx_err **err);
/* Attaches volume tree `tree_fd` at `path` inside `root`, created if missing
 * (resolved with RESOLVE_IN_ROOT so a symlink in the rootfs cannot redirect
 * it outside). */
int mount_volume(const char *root, int tree_fd, const char *path, bool readonly, bool is_dir, sbx_err **err);
/* pivot_root into `root` and detach the old root. */
int mount_pivot(const char *root, sbx_err **err);
/* Creates every missing component of `path` inside root_fd (RESOLVE_IN_ROOT:
 * never leaving it), the last a directory or an empty file, and returns an
 * O_PATH fd of it (a mount target). */
int mount_mkdir_in_root(int root_fd, const char *path, bool last_is_dir, sbx_err **err);
