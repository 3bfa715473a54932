/* The E2B data plane beyond envd's port (docs/e2b.md), as routes of
 * http_e2b.c's data_routes:
 *   e2b_code.c   port 49999: the code interpreter's HTTP API, as
 *                @e2b/code-interpreter speaks it (POST /execute answering
 *                NDJSON, /contexts), over sbx_run_code and sbx_context_*
 *   e2b_proxy.c  any other port: a reverse proxy into the sandbox's own
 *                loopback port (HTTP/1.1, and Upgrade relayed both ways)
 * By the time these run, http_e2b.c's data_auth has checked that the sandbox
 * runs and that the request carries its X-Access-Token or, on these ports,
 * its traffic token (E2b-Traffic-Access-Token, e2b_traffic_token). */
#pragma once
#include <stdbool.h>

#include "server/http_server.h"

#define E2B_CODE_PORT 49999 /* @e2b/code-interpreter's JUPYTER_PORT */
#define E2B_TRAFFIC_TOKEN_LEN 64
#define E2B_CODE_MAX_BODY ((size_t)8 << 20)   /* the code of one cell */
#define E2B_PROXY_MAX_BODY ((size_t)64 << 20) /* a proxied request's body, read whole first */

/* A sandbox's trafficAccessToken: hex(sha256("sbx-e2b-traffic:" token)),
 * derived from its envd access token (so nothing more is stored; it opens
 * the sandbox's ports but cannot be turned back into the envd token, which
 * opens commands and files). Pure. */
void e2b_traffic_token(const char *token, char ret[E2B_TRAFFIC_TOKEN_LEN + 1]);

/* The requests of the code port, and of any port but envd's and the code's. */
bool e2b_code_match(const http_request *req);
bool e2b_proxy_match(const http_request *req);

/* Route handlers (body handlers: the body is read whole first). */
http_result e2b_code_execute(http_request *req);
http_result e2b_code_contexts(http_request *req);
http_result e2b_proxy_body(http_request *req);

/* family->done of the data plane: frees what a handler left in req->state
 * (an e2b_req_state). */
typedef struct e2b_req_state {
	void (*free)(struct e2b_req_state *s);
} e2b_req_state;
void e2b_req_state_done(http_request *req);
