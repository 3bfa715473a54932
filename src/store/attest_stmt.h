/* The in-toto Statement v1 of an sbx attestation: what is claimed about one
 * traced run. Pure (JSON in, JSON out): unit-tested and fuzzed.
 *
 *   {"_type": "https://in-toto.io/Statement/v1",
 *    "subject": [{"name": "stdout", "digest": {"sha256": HEX}},
 *                {"name": "stderr", "digest": {"sha256": HEX}},
 *                {"name": "/root/f", "digest": {"sha256": HEX}}, ...],
 *    "predicateType": "https://sbx.dev/attestation/run/v1",
 *    "predicate": {...}}
 *
 * The predicate's fields are in docs/attest.md. Subjects are stdout and
 * stderr (always, even empty) and then every regular file the run added or
 * modified, named by its absolute path inside the environment, sorted. */
#pragma once
#include <jansson.h>
#include <stddef.h>

#include "util/err.h"

#define ATTEST_STATEMENT_TYPE "https://in-toto.io/Statement/v1"
#define ATTEST_PREDICATE_TYPE "https://sbx.dev/attestation/run/v1"
#define ATTEST_SUBJECTS_MAX 8192
#define ATTEST_NAME_MAX 4096

/* The statement of the trace `manifest` (as trace_store_get returns it)
 * stored as trace_id. files: [{"name": path, "digest": "sha256:..."}] of the
 * files the run wrote (may be empty); replay: the sbx_trace_replay result
 * or NULL; version: sbx_version(). */
int attest_statement_build(const json_t *manifest, const char *trace_id, const json_t *files,
			   const json_t *replay, const char *version, json_t **ret, sbx_err **err);
/* Parses and checks the shape of a signed payload: _type, predicateType,
 * 1..ATTEST_SUBJECTS_MAX subjects each with a name (1..ATTEST_NAME_MAX
 * bytes, unique) and a sha256 digest of 64 lowercase hex digits, and the
 * predicate's trace_id and snapshot_id digests. Errors name the field. */
int attest_statement_parse(const void *payload, size_t len, json_t **ret, sbx_err **err);
/* Pure: "2026-12-01T16:00:05Z" minus ms, formatted the same way (ret: 32 bytes).
 * -1 if when is not in that form. */
int attest_time_minus(const char *when, int64_t ms, char ret[32]);
