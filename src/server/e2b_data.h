/* What the E2B data plane's modules share (docs/e2b.md): http_e2b.c owns
 * the routing and the per-sandbox auth; each module serves one part of
 * envd's protocol behind it and is registered as a route of data_routes:
 *   e2b_rpc.c      Connect RPC dispatch (unary and server streams)
 *   e2b_process.c  process.Process  (commands)
 *   e2b_fs.c       filesystem.Filesystem (files, watchers)
 *   e2b_files.c    GET/POST /files (upload, download)
 *   e2b_proxy.c    any other port: a reverse proxy into the sandbox
 * By the time a module's handler runs, http_e2b.c's auth has checked that
 * the sandbox exists, runs, and that the request carries its own
 * X-Access-Token (or, for /files, a valid signature). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"
#include "server/e2b_events.h"
#include "server/http_server.h"

/* Whether sandbox id runs (e2b_alive.c): 1 running (exactly that id), 0
 * not running or gone (killed, timed out, paused), -1 unknown (inspect
 * failed otherwise). */
int e2b_sandbox_state(sbx_ctx *ctx, const char *id);
/* Whether it is not running within max_ms, looked at every 50 ms: a kill
 * breaks a command's or a cell's connection a moment before the sandbox
 * stops being running, and the SDK asks /health (502 once not running)
 * right after a stream is cut. */
bool e2b_sandbox_gone_within(sbx_ctx *ctx, const char *id, int max_ms);

/* The library context of the server (borrowed). */
sbx_ctx *e2b_req_ctx(const http_request *req);
/* The sandboxes' events, their logs (borrowed; e2b_events_ref to keep). */
e2b_events *e2b_req_events(const http_request *req);
/* The --domain of `sbx serve` (NULL: none; Host routing is off). */
const char *e2b_req_domain(const http_request *req);

/* Which sandbox and port a request is for (e2b_target.c): the {port} and
 * {id} of a Host {port}-{id}.{domain} when --domain is given and the Host
 * is of that form, else the E2b-Sandbox-Id and E2b-Sandbox-Port headers.
 * Whether the request names a sandbox at all (either form, or a Host under
 * the domain that names none: data_auth answers that 400). */
bool e2b_req_names_sandbox(const http_request *req);
/* Why a Host under the domain names no sandbox; NULL when it is fine. */
const char *e2b_req_host_error(const http_request *req);
/* Whether the Host form names the target (not the headers). */
bool e2b_req_by_host(const http_request *req);
/* The sandbox the request is for, NULL if none; once http_e2b.c's auth
 * passed, checked to exist and to run. The Host form's id is valid until
 * the next call on this thread. */
const char *e2b_req_sandbox(const http_request *req);
/* The port the request is for: the Host's {port}, or E2b-Sandbox-Port;
 * HTTP_E2B_ENVD_PORT (49983) when it names none. */
uint16_t e2b_req_port(const http_request *req);

/* Ends the sandbox's spare login shell, if it has one (e2b_process.c,
 * e2b_spare.h): called for every request that may change the sandbox's
 * files (e2b_spare_invalidated_by), before it is served. */
void e2b_proc_spare_drop(const char *sandbox_id);
