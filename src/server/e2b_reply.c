/* The E2B API's JSON replies (see e2b_reply.h). */
#include "server/e2b_reply.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"
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

bool e2b_req_browser(const http_request *req)
{
	static const char *const names[] = {"mozilla", "chrome", "safari", "firefox",
					    "edge",    "opera",	 "msie"};
	const char *ua = http_request_header(req, "User-Agent");
	for (size_t i = 0; ua && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasestr(ua, names[i]))
			return true;
	return false;
}

static void add_escaped(strbuf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			strbuf_lit(b, "&amp;");
			break;
		case '<':
			strbuf_lit(b, "&lt;");
			break;
		case '>':
			strbuf_lit(b, "&gt;");
			break;
		case '"':
			strbuf_lit(b, "&quot;");
			break;
		default:
			strbuf_add(b, s, 1);
		}
	}
}

http_result e2b_reply_page(http_request *req, unsigned status, const char *title, const char *text)
{
	size_t clen;
	_cleanup_free_ char *clean = utf8_sanitize(text, strlen(text), &clen);
	strbuf b = {0};
	strbuf_lit(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
	add_escaped(&b, title);
	strbuf_lit(&b, "</title></head>\n<body><h1>");
	add_escaped(&b, title);
	strbuf_lit(&b, "</h1>\n<p>");
	add_escaped(&b, clean ?: "?");
	strbuf_lit(&b, "</p></body></html>\n");
	if (b.oom) {
		free(b.p);
		return HTTP_CLOSE;
	}
	http_response *resp = http_response_buffer(b.p, b.len);
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", "text/html; charset=utf-8");
	return http_respond(req, status, resp);
}
