/* Where an incremental snapshot stages what changed (src/store/delta.c): hard
 * links to the writable layer's changed files, in a directory named after
 * the snapshotting process. The supervisor removes a dead snapshot's stage
 * by these names (src/runtime/supervisor.c), so both read them from here. */
#pragma once

#define SNAP_STAGE_TMP "delta-"	      /* $SBX_ROOT/tmp/delta-<env>-<pid>-<rand> */
#define SNAP_STAGE_DISK ".sbx-delta-" /* <env>/disk/.sbx-delta-<pid>-<rand> (disk quota) */
