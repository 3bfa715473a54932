/* The `host` template's base as a layer: what an environment made from the
 * host template sees below its writable layer (the system directories under
 * the mask, src/runtime/mask.c), captured once into the store so that its
 * snapshots can be exported and pushed like any other (docs/store.md
 * "Registries"). */
#pragma once
#include "runtime/mask.h"
#include "store/digest.h"
#include "util/err.h"

/* Builds the merged view in a private mount namespace of a child process
 * (a tmpfs with the mask replayed, one read-only overlay per system
 * directory: mask/<dir> over /<dir>, as setup.c's mount_split_dirs) and
 * stores it as a layer; ret: its digest. Root only (overlay mounts and the
 * host's ownership). */
int hostbase_capture(const char *store_root, const mask_list *mask, char ret[STORE_DIGEST_SIZE],
		     sbx_err **err);
