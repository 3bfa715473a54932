/* Assembling an environment's root filesystem, inside its mount namespace. */
#pragma once
#include <stdbool.h>
#include "runtime/runtime.h"
#include "util/fd.h"

/* What the supervisor hands the cloned child with "go" (setup.c): the
 * prepared trees as descriptors, -1 where there is none. */
typedef struct setup_fds {
	int upper, work;
	int lowers[FD_MSG_MAX_FDS];
	size_t n_lowers;
	int volumes[FD_MSG_MAX_FDS];
	size_t n_volumes;
	int layers[FD_MSG_MAX_FDS];
	size_t n_layers;
	int run_dir, env_dir; /* O_PATH descriptors of c->run_dir and c->env_dir, or -1 */
	int mask; /* the mask's tree (mask.h) from the supervisor, or -1; closed by mount_assemble_root */
} setup_fds;

/* Step 5 of the privilege sequence (setup.c): the environment's root at
 * `stage`/root (written into root), built on a private staging tmpfs at
 * `stage`: the lower layers (trees from the supervisor, idmapped, or opened
 * here when rootless), the overlay root (per system directory for the host
 * template), hidden paths, /dev, /proc, /tmp, the volumes, file secrets.
 * Descriptors opened here are stored in *f for the caller to close; notes
 * for the user are appended to warnings. */
int mount_assemble_root(env_config *c, setup_fds *f, const char *stage, char *root, size_t root_size,
			json_t *warnings, sbx_err **err);

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
int mount_rootfs(const char *stage, const char *lowerdir, int upper_fd, int work_fd, bool ephemeral,
		 sbx_err **err);
/* One overlay at root/dir (the host template's per-directory overlays). */
int mount_overlay_dir(const char *root, const char *dir, const char *lowerdir, const char *upper,
		      const char *work, sbx_err **err);
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
