/* The JSON replies of the E2B API (control plane, /files, the code
 * interpreter): a body of Content-Type application/json, and E2B's error
 * body {"code": status, "message": ...} that its SDKs read
 * (docs/e2b-protocol.md). Each returns http_respond's result, or HTTP_CLOSE
 * when the reply cannot be built (out of memory). */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "server/http_server.h"
#include "util/macro.h"

/* body (taken, even on failure; NULL: HTTP_CLOSE) as compact JSON. */
http_result e2b_reply_json(http_request *req, unsigned status, json_t *body);
/* The same with an X-Next-Token header (a listing's next page) when
 * next_token is not NULL. */
http_result e2b_reply_json_paged(http_request *req, unsigned status, json_t *body, const char *next_token);
/* E2B's error body with msg as its message; bytes of msg that are not
 * UTF-8 become U+FFFD (a message may quote a path). */
http_result e2b_reply_message(http_request *req, unsigned status, const char *msg);
/* The same, the message formatted (cut at 1023 bytes). */
http_result e2b_reply_error(http_request *req, unsigned status, const char *fmt, ...) _printf_(3, 4);
/* A browser, as E2B's proxy tells one from an SDK: its User-Agent names
 * one (mozilla, chrome, safari, firefox, edge, opera, msie; any case). */
bool e2b_req_browser(const http_request *req);
/* E2B's proxy error as a browser sees it: an HTML page titled title (its
 * <title>, which E2B's tests look for) saying text, both escaped here. */
http_result e2b_reply_page(http_request *req, unsigned status, const char *title, const char *text);
