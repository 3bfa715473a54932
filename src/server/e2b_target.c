/* e2b_data.h: which sandbox and port a data-plane request is for. Two
 * forms (e2b_auth.h "Host routing"): the E2b-Sandbox-Id and
 * E2b-Sandbox-Port headers, or, with `sbx serve --domain D`, a Host of
 * {port}-{id}.{D}, which wins when it is one. */
#include <string.h>

#include "server/e2b_auth.h"
#include "server/e2b_data.h"
#include "server/http_e2b.h"
#include "util/err.h"

/* One request at a time per connection thread: the Host form's id lives
 * here while the request is served (e2b_req_sandbox's result). A stream
 * method running on a thread of its own copies it first (e2b_rpc.c). */
static __thread char host_id[E2B_ID_MAX + 1];

/* 1: the Host names the target (into host_id and *ret_port); 0: the
 * headers do; -1: a Host under the domain that names no sandbox (*ret_why). */
static int from_host(const http_request *req, uint16_t *ret_port, const char **ret_why)
{
	const char *domain = e2b_req_domain(req), *host = http_request_header(req, "Host");
	if (!domain || !host)
		return 0;
	_cleanup_err_ sbx_err *e = NULL;
	int r = e2b_host_parse(host, domain, ret_port, host_id, &e);
	if (r < 0) {
		static __thread char why[256];
		snprintf(why, sizeof(why), "%s", e ? sbx_err_message(e) : "not a sandbox's host name");
		*ret_why = why;
		return -1;
	}
	return r > 0;
}

bool e2b_req_names_sandbox(const http_request *req)
{
	uint16_t port;
	const char *why;
	return from_host(req, &port, &why) != 0 || http_request_header(req, "E2b-Sandbox-Id") != NULL;
}

const char *e2b_req_host_error(const http_request *req)
{
	uint16_t port;
	const char *why = NULL;
	return from_host(req, &port, &why) < 0 ? why : NULL;
}

const char *e2b_req_sandbox(const http_request *req)
{
	uint16_t port;
	const char *why;
	int r = from_host(req, &port, &why);
	if (r > 0)
		return host_id;
	return r < 0 ? NULL : http_request_header(req, "E2b-Sandbox-Id");
}

uint16_t e2b_req_port(const http_request *req)
{
	uint16_t pn;
	const char *why;
	if (from_host(req, &pn, &why) > 0)
		return pn;
	const char *port = http_request_header(req, "E2b-Sandbox-Port");
	if (!port || e2b_port_parse(port, strlen(port), &pn) < 0) /* data_auth refused a bad one */
		return HTTP_E2B_ENVD_PORT;
	return pn;
}

bool e2b_req_by_host(const http_request *req)
{
	uint16_t port;
	const char *why;
	return from_host(req, &port, &why) > 0;
}
