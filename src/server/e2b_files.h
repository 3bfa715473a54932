/* envd's GET/POST /files on the E2B data plane (see e2b_files.c; routes of
 * http_e2b.c's data_routes). */
#pragma once
#include <stdbool.h>

#include "server/http_server.h"

#define E2B_FILES_MAX_BODY (32 << 20)	/* an upload's body, and a gzip upload inflated */
#define E2B_FILES_READ_MAX (64 << 20)	/* a file read */
#define E2B_FILES_EARLY_CHECK (1 << 20) /* a signed upload larger is checked from its headers */

/* The route predicate of a /files URL that carries a signature (uploadUrl,
 * downloadUrl): served open, checked by the handler itself. */
bool e2b_files_signed(const http_request *req);
http_result e2b_files_headers(http_request *req);
http_result e2b_files_body(http_request *req);
