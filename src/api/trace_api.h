/* Internal: traced runs (trace.c) and replays (replay.c), the layer above
 * the features (docs/layout.md): what trace.c gives the entry points on top
 * (env.c, replay.c, traces.c, attest.c) and what they share. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "store/digest.h"

typedef struct trace_params {
	bool deterministic;
	bool replay; /* epoch/seed/hostname/first_pid below are given, not chosen */
	int64_t epoch_ns;
	uint64_t seed;
	const char *hostname;
	uint32_t first_pid; /* the engine's pid in the recording (replay burns pids up to it) */
	bool inodes;	    /* replay: the recording virtualized inode numbers (a recording always does) */
	const char *snapshot_id; /* the run starts from this (replay: the fresh environment's base) */
	const char *replay_of;	 /* trace id this run replays */
	const char *recorder;	 /* force "bpf" or "ptrace"; NULL: the best available */
} trace_params;

typedef struct trace_outcome {
	json_t *manifest;
	char trace_id[STORE_DIGEST_SIZE];
	char *events; /* the uncompressed merged stream */
	size_t events_len;
} trace_outcome;

static inline void trace_outcome_clear(trace_outcome *o)
{
	json_decref(o->manifest);
	free(o->events);
	*o = (trace_outcome){0};
}

typedef struct trace_counts {
	uint64_t records, syscalls, processes, lost;
} trace_counts;
int trace_stream_count(const char *buf, size_t len, trace_counts *ret, sbx_err **err);

/* A traced (or deterministic) sbx_env_exec of id (env.c). */
int trace_exec(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, sbx_exec_result *ret, sbx_err **err);
int trace_run(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, const trace_params *tp,
	      trace_outcome *out, sbx_exec_result *ret, sbx_err **err);
int trace_compress(const char *buf, size_t len, char **ret, size_t *ret_len, sbx_err **err);
int trace_decompress(const char *buf, size_t len, char **ret, size_t *ret_len, sbx_err **err);
/* sbx_env_diff plus, for every change, what the entry is now (diff.c:
 * type, mode, owner, size and digest of all of a file's bytes, link target,
 * device, user xattrs; no times): "meta_digest" over all of them and "meta",
 * the first API_DIFF_META_LIST as "A /path file 0644 0:0 ...". */
#define API_DIFF_META_LIST 256
int api_env_diff_meta(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err);
int trace_fs_digest(sbx_ctx *ctx, const char *id, const char *snapshot, json_t **ret, sbx_err **err);
/* The uncompressed event stream of a stored trace. */
int trace_load_events(sbx_ctx *ctx, const json_t *manifest, char **ret, size_t *ret_len, sbx_err **err);
