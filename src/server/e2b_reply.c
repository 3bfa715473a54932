/* The E2B API's JSON replies (see e2b_reply.h). */
#include "server/e2b_reply.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

http_result e2b_reply_json_paged(http_request *req, unsigned status, json_t *body, const char *next_token)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (!s)
		return HTTP_CLOSE;
	http_response *resp = http_response_buffer(s, strlen(s));
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", "application/json");
	if (next_token)
		http_response_header(resp, "X-Next-Token", next_token);
	return http_respond(req, status, resp);
}

http_result e2b_reply_json(http_request *req, unsigned status, json_t *body)
{
	return e2b_reply_json_paged(req, status, body, NULL);
}

http_result e2b_reply_message(http_request *req, unsigned status, const char *msg)
{
	size_t clen;
	_cleanup_free_ char *clean = utf8_sanitize(msg, strlen(msg), &clen);
	return e2b_reply_json(req, status,
			      json_pack("{s:i,s:s}", "code", (int)status, "message", clean ?: "?"));
}

http_result e2b_reply_error(http_request *req, unsigned status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return e2b_reply_message(req, status, msg);
}
