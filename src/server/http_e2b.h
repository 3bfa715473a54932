/* The E2B API on `sbx serve` (docs/e2b.md): two route families of
 * http_server.h.
 *
 * The control plane (E2B's REST API, auth X-API-Key or Authorization:
 * Bearer, the token of --token-file; errors {"code","message"}):
 *   POST   /sandboxes, /v2/sandboxes                 create (201)
 *   GET    /sandboxes, /v2/sandboxes                 list (X-Next-Token paging)
 *   GET    /sandboxes/{id}                           info
 *   DELETE /sandboxes/{id}                           kill (204, 404)
 *   POST   /sandboxes/{id}/timeout                   a new deadline (204)
 *   POST   /sandboxes/{id}/connect, /v2/.../connect  200 running, 201 resumed
 *   POST   /sandboxes/{id}/pause                     204, 409 if paused
 *   PUT    /sandboxes/{id}/network                   egress within --policy (e2b_network.h)
 *   GET    /sandboxes/{id}/metrics, POST .../snapshots, .../fork,
 *   GET    /snapshots, DELETE /templates/{id}        e2b_snap.h
 *   POST   /sandboxes/{id}/resume, .../refreshes,
 *   GET    /sandboxes/{id}/logs, /v2/.../logs,
 *   GET    /sandboxes/metrics                        e2b_ctl_extra.h
 * A sandbox is the sbx environment of the same id; what E2B adds (its
 * access token, metadata, deadline) is kept in $SBX_ROOT/e2b (e2b_store.h).
 * A thread ends (or pauses, with autoPause) each sandbox at its deadline
 * while the server runs; one found overdue at start is ended then. What
 * happens to each sandbox (created, commands, paused, resumed) is kept in
 * a bounded ring in memory, served as its logs (e2b_events.h).
 *
 * The data plane (envd's protocol): any request with an E2b-Sandbox-Id
 * header, or with --domain D a Host of {port}-{id}.D. GET /health -> 204
 * for a running sandbox; an unknown, killed or paused one -> 502.
 * Everything else needs X-Access-Token = that sandbox's token (on ports
 * other than envd's, E2b-Traffic-Access-Token = its traffic token will
 * do): port 49999 is the code interpreter (e2b_code.c), any other port but
 * envd's the port proxy (e2b_proxy.c), envd's own the modules of
 * e2b_data.h. */
#pragma once

#include "sbx.h"
#include "server/http_server.h"

#define HTTP_E2B_ENVD_PORT 49983 /* E2B's envd port (E2b-Sandbox-Port) */

typedef struct http_e2b_opts {
	const char *token_file; /* the API key; NULL: none, and then only a server on loopback serves */
	/* --domain D: a Host {port}-{id}.D names a sandbox and its port (as E2B's
	 * proxy does; wildcard DNS for *.D is the user's), and sandboxes report D
	 * as their "domain". NULL: only the E2b-Sandbox-* headers route. */
	const char *domain;
	/* --policy P: its network is the cap on what E2B clients may ask
	 * (e2b_network.h); NULL: no network. */
	const char *policy;
} http_e2b_opts;

/* Adds the data plane's and the control plane's families to hs (before
 * MCP's: the data plane's predicate must go first). Loads the records in
 * $SBX_ROOT/e2b and starts the deadline thread. */
int http_e2b_add(http_server *hs, sbx_ctx *ctx, const http_e2b_opts *opts, sbx_err **err);
