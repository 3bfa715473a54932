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
#include <stdint.h>

#include "sbx.h"
#include "server/http_server.h"

/* The library context of the server (borrowed). */
sbx_ctx *e2b_req_ctx(const http_request *req);
/* The sandbox the request is for (its E2b-Sandbox-Id, or the {id} of a
 * {port}-{id}.{domain} Host), already checked to exist and to run. */
const char *e2b_req_sandbox(const http_request *req);
/* The port the request is for: E2b-Sandbox-Port, or the Host's {port};
 * HTTP_E2B_ENVD_PORT (49983) when it names none. */
uint16_t e2b_req_port(const http_request *req);
