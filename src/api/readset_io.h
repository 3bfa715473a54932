/* Internal: the read set's I/O (readset_io.c): which of the paths a run read
 * come from outside its snapshot (volumes, the live lower tree of the `host`
 * and `dir:` templates), their digests at the end of the recording, and the
 * check a replay makes of them. The derivation from events is pure
 * (src/trace/readset.h). */
#pragma once
#include <jansson.h>

#include "api/base.h"

/* The read set of a run that just ended in environment id (state st): a JSON
 * array of {path, kind ("file"|"dir"), source ("volume"|"host"), root, rel,
 * digest ("sha256:..", "absent" or "unreadable:ENAME"), index, pid,
 * identity {dev, ino, size, mtime_ns, ctime_ns}}, and the files the run
 * wrote to volumes, {path, root, rel, digest} (contents after the run).
 * events: the merged stream; snapshot: the one the run started from (its
 * layers say what is not an input); cwd: the command's starting directory or
 * NULL. */
int readset_record(sbx_ctx *ctx, const char *id, const char *snapshot, const env_record *st,
		   const char *events, size_t len, const char *cwd, json_t **ret_read_set,
		   json_t **ret_volume_writes, sbx_err **err);
/* The first entry of read_set whose content differs now: *ret_div =
 * {kind "input", path, expected, actual, pid, index}, or NULL when all hold.
 * Both sides skip re-reading a file whose identity (dev, ino, size, mtime,
 * ctime) matches a digest cached in $SBX_RUN/readset-digests.json. */
int readset_check(sbx_ctx *ctx, const json_t *read_set, json_t **ret_div, sbx_err **err);
/* The first file of volume_writes whose content after the replay differs:
 * {kind "filesystem", path, expected, actual, index 0, pid null}, or NULL. */
int readset_check_writes(const json_t *volume_writes, json_t **ret_div, sbx_err **err);
