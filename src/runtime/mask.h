/* The mask layer of the `host` template (see mask.c). */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>
#include "util/err.h"

typedef struct mask_entry {
	char type; /* 'd' mirrored directory, 'o' opaque (empty) directory, 'w' whiteout,
		    * 'l' symlink (a top-level link such as bin -> usr/bin) */
	unsigned mode;
	uid_t uid;
	gid_t gid;
	struct timespec mtime;
	char *path;   /* relative to the root, "." for the root itself */
	char *target; /* 'l' only */
} mask_entry;

typedef struct mask_list {
	mask_entry *e;
	size_t n, cap;
	/* mask_host_layer: the list replayed once into a directory of the store
	 * ($SBX_ROOT/masks/host-<version>-<key>.d, never changed once there),
	 * which environments use as their mask layer, read-only; NULL where it
	 * could not be built (each environment then replays the list). */
	char *tree;
} mask_list;

/* Loads (or computes and caches) the mask for this host, and its tree (see
 * mask_list.tree). Rootless, it also mirrors the directories under etc, var
 * and opt (see mask.c). */
int mask_host_layer(const char *sbx_root, const char *sbx_run, bool rootless, mask_list **ret, sbx_err **err);
/* How many directories a rootless mask mirrors at most. */
#define MASK_ROOTLESS_DIRS 8192
/* The top-level system directories that the host template shows (real
 * directories, not links), NULL-terminated; for rootless mode, which must
 * overlay each of them separately. */
char **mask_host_dirs(const mask_list *m);
/* Creates the mask's entries under directory dfd (a fresh tmpfs, or the
 * store's tree). */
int mask_replay(const mask_list *m, int dfd, bool chown_ok);
void mask_free(mask_list *m);
/* Appends an entry (type 'd', 'f', 'w', ...; st gives mode, owner, mtime; NULL for a whiteout). -ENOMEM. */
struct stat;
int mask_list_add(mask_list *m, char type, const char *path, const struct stat *st);
