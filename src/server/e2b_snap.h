/* The E2B control plane's snapshot, fork and metrics calls (docs/e2b.md),
 * routed from http_e2b.c:
 *   GET    /sandboxes/{id}/metrics     one current SandboxMetric (200), 404
 *   POST   /sandboxes/{id}/snapshots   {name?} -> 201 SnapshotInfo
 *   POST   /sandboxes/{id}/fork        {timeout?, count?} -> 201 [{sandbox}|{error}]
 *   GET    /snapshots                  sandboxID, name, limit, nextToken (X-Next-Token)
 *   DELETE /templates/{snapshot}       204, 404
 *
 * A snapshot made here is a real sbx snapshot (sbx_env_snapshot: the
 * content-addressed store), its name an sbx label; its id ("sha256:<hex>")
 * or name is a templateID for Sandbox.create. Only snapshots made through
 * this API are E2B snapshots: each has a record in $SBX_ROOT/e2b/snapshots
 * (<hex>.json, mode 0600: the sandbox it came from, its names, its time),
 * and only those are listed or deleted here; a user's other snapshots and
 * templates stay sbx's own. */
#pragma once
#include <jansson.h>

#include "sbx.h"
#include "server/e2b_deadline.h"
#include "server/e2b_events.h"
#include "server/e2b_store.h"
#include "server/http_server.h"

#define E2B_FORK_MAX 10 /* most sandboxes one fork call makes (count 1..10) */
#define E2B_SNAP_LIST_LIMIT 100
#define E2B_CPU_WINDOW_MS 200 /* the CPU figure: the usage over this window, measured now */

/* What the calls need of the E2B server (http_e2b.c's own state). */
typedef struct e2b_plane {
	sbx_ctx *ctx;
	e2b_store *store;
	e2b_deadline *deadline;
	e2b_events *events; /* the sandboxes' logs (e2b_events.h) */
} e2b_plane;

/* Sandbox id's record (*rec, e2b_record_clear it) and sbx_env_inspect of
 * exactly that environment (*info): 0; -ENOENT (not an E2B sandbox, or
 * gone); -1 with *err. */
int e2b_plane_sandbox(const e2b_plane *p, const char *id, e2b_record *rec, json_t **info, sbx_err **err);
/* One SandboxMetric of a running sandbox of cpus CPUs from two
 * sbx_env_inspect answers, a at t0 and b at t1 (unix ms); NULL: ENOMEM. */
json_t *e2b_metric_json(const e2b_plane *p, const json_t *a, const json_t *b, int cpus, int64_t t0,
			int64_t t1);

/* The Sandbox body of create and connect (http_e2b.c), as req's server
 * writes it (its --domain). */
json_t *e2b_sandbox_body(const http_request *req, const e2b_record *r);

/* /sandboxes/{id}/{op} for op metrics (GET), snapshots and fork (POST, body
 * the request's JSON object); another method is 404. */
http_result e2b_snap_op(http_request *req, const e2b_plane *p, const char *id, const char *op,
			const json_t *body);
/* GET /snapshots and DELETE /templates/{id}; anything else there is 404. */
http_result e2b_snap_route(http_request *req, const e2b_plane *p);
