/* Incremental snapshots (docs/store.md "Incremental snapshots").
 *
 * sbx_env_snapshot (snap.c) calls snap_delta_capture while the environment
 * is frozen: it walks the writable layer (stat only) and, when the
 * environment's index of its last snapshot is valid, stores only what
 * changed since then as a delta layer on top of that snapshot's layers;
 * otherwise it stores the whole writable layer as today (a "full"
 * snapshot). Either way it keeps what it saw, and snap_delta_commit writes
 * that as the new index once the manifest is stored. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "api/ctx.h"
#include "store/layer.h"
#include "util/err.h"

/* At most this many layers in a snapshot made by a delta (the environment's
 * base layers + the first full layer + deltas); past it a full snapshot
 * starts a new chain. Every layer is a lower of the overlay mount (one fd
 * each through the supervisor, FD_MSG_MAX_FDS in all with the host
 * template's directories and the volumes). */
#define SNAP_DELTA_MAX_LAYERS 32

struct snapd_index;

typedef struct snap_capture {
	bool delta;		   /* layers = the last snapshot's + a delta (or nothing new) */
	bool new_layer;		   /* li describes a layer on top of the stack */
	store_layer_info li;	   /* the layer stored (full: the whole writable layer) */
	char **layers;		   /* the manifest's layers, bottom first (owned) */
	char *parent;		   /* delta: the last snapshot; NULL: the environment's base */
	char *full_reason;	   /* why a full snapshot; NULL for a delta */
	struct snapd_index *index; /* the writable layer as captured, for snap_delta_commit */
	int lock_fd;
} snap_capture;
#define SNAP_CAPTURE_INIT                                                                                    \
	{                                                                                                    \
		.lock_fd = -1                                                                                \
	}

/* Captures the writable layer upper_fd of environment id (state st) into
 * the store. quiesced: nothing in the environment runs or is frozen (a
 * delta, and an index for the next one, need it). */
int snap_delta_capture(sbx_ctx *ctx, const char *id, const json_t *st, int upper_fd, const store_idmap *ids,
		       bool quiesced, snap_capture *cap, sbx_err **err);
/* Records the capture as the index of snapshot snapshot_id (best effort:
 * without an index the next snapshot is a full one). */
void snap_delta_commit(sbx_ctx *ctx, const char *id, const json_t *st, snap_capture *cap,
		       const char *snapshot_id);
void snap_capture_clear(snap_capture *cap);
/* 1 when upper_fd (environment id, state st) is, by lstat alone, exactly
 * the writable layer that the snapshot of the environment's index captured
 * (snapshot_id, or any when NULL; its id in ret_snapshot_id when given):
 * the index is valid (snap_delta_capture's checks: this environment, this
 * boot, not restored since, the same writable layer) and every entry
 * matches its record (none racy, none new, none gone, the root's own
 * metadata too): then the environment's files are that snapshot's and a
 * diff against it is empty. 0 otherwise (changed, no valid index of that
 * snapshot, an error). Stat only, nothing is written; not frozen: what
 * runs meanwhile may change the layer right after. */
int snap_delta_unchanged(sbx_ctx *ctx, const char *id, const json_t *st, int upper_fd,
			 const char *snapshot_id, char ret_snapshot_id[STORE_DIGEST_SIZE]);
/* Drops the environment's index (restore: the writable layer starts again). */
void snap_delta_forget(sbx_ctx *ctx, const char *id);
