/* The rest of E2B's control plane (docs/e2b.md), routed from http_e2b.c:
 *   POST /sandboxes/{id}/resume      ResumedSandbox {timeout?, autoPause?} -> 201 Sandbox;
 *                                    409 running, 404 unknown (deprecated by E2B for connect)
 *   POST /sandboxes/{id}/refreshes   {duration?} (0..3600 s) -> 204: the deadline
 *                                    extended, never shortened; 404 unknown or not running
 *   GET  /sandboxes/{id}/logs        start, limit -> SandboxLogs {logs, logEntries}
 *   GET  /v2/sandboxes/{id}/logs     cursor, limit, direction, level, search
 *                                    -> SandboxLogsV2Response {logs}
 *   GET  /sandboxes/metrics          sandbox_ids=a,b -> SandboxesWithMetrics
 *                                    {sandboxes: {id: SandboxMetric}}
 * A sandbox's logs are the server's own events for it (e2b_events.h), not
 * envd's as on E2B. The metrics are GET /sandboxes/{id}/metrics' figures
 * (e2b_snap.h), of this server's E2B sandboxes that run; the others named
 * are left out. The parameters' checks are e2b_events.h's. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "server/e2b_snap.h"
#include "server/http_server.h"

http_result e2b_ctl_resume(http_request *req, const e2b_plane *p, const char *id, const json_t *body);
http_result e2b_ctl_refresh(http_request *req, const e2b_plane *p, const char *id, const json_t *body);
http_result e2b_ctl_logs(http_request *req, const e2b_plane *p, const char *id, bool v2);
http_result e2b_ctl_metrics(http_request *req, const e2b_plane *p);
