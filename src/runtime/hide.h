/* Hidden paths (policy filesystem.hidden; docs/secrets.md), applied in the
 * privilege sequence (setup.c) before pivot_root.
 *
 * A path in the environment's layers (the template, snapshot layers) becomes
 * a whiteout in a layer of its own stacked above every other lower layer: it
 * does not exist inside at all (open, stat and listings of its directory all
 * say so; a new file may be created there, which is the environment's own).
 * A path under a mount made later (a volume, /dev, /proc, /tmp, /run/secrets)
 * is covered by an empty read-only mount instead: an empty directory or an
 * empty file. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "runtime/runtime.h"

/* Called with the overlays mounted at `root` and nothing else yet. Sorts
 * c->hidden into paths to white out (canonical: symlinks in their
 * directories resolved inside the root) and paths to cover later
 * (*ret_deferred, strv). If there are whiteouts, builds their layer in `dir`
 * (created; the ancestors' owners, modes and times mirror what the overlay
 * shows, so nothing but the hidden entries changes) and sets *ret_remount:
 * the caller mounts the overlays again with `dir` as the topmost lower.
 * Warnings (a hidden file with other hard links, whose other names stay
 * visible) are appended to `warnings`. */
int hide_prepare(const env_config *c, const char *root, const char *dir, bool *ret_remount,
		 char ***ret_deferred, json_t *warnings, sbx_err **err);
/* Is `name` (a top-level directory of the split host template) whited out
 * in the layer `dir`? Then it has no overlay of its own. */
bool hide_is_whiteout(const char *dir, const char *name);
/* Called once everything is mounted: covers each deferred path that exists
 * (an empty read-only tmpfs over a directory, an empty read-only file over
 * anything else). `stage` holds the empty file's tmpfs. */
int hide_cover(const char *root, const char *stage, char *const *deferred, sbx_err **err);
