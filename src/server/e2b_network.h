/* The E2B API's network (docs/e2b.md "Network"): what a create asks for,
 * PUT /sandboxes/{id}/network on a live sandbox, and envd's GET /envs.
 * The mapping itself is pure (e2b_net_map.h); this file holds the server's
 * cap and does the library calls.
 *
 * The cap is `sbx serve --policy P`'s network (default: none). A request
 * within it is honoured exactly; one beyond it is 403 naming the rule and
 * the cap; one that cannot be mapped is 400 naming the field. */
#pragma once
#include <jansson.h>

#include "sbx.h"
#include "server/e2b_net_map.h"
#include "server/http_server.h"

typedef struct e2b_netcap {
	e2b_net net; /* the ceiling */
	char *name;  /* "sbx serve --policy dev" or "sbx serve's default" (messages) */
} e2b_netcap;

/* Loads the cap from a policy spec (sbx_policy_show: a profile, file or
 * inline JSON; NULL: no network). */
int e2b_netcap_load(const char *policy, e2b_netcap *ret, sbx_err **err);
void e2b_netcap_clear(e2b_netcap *c);

/* A create's network: maps body's allow_internet_access and network, checks
 * the cap and sets o->network and o->network_allow (pointing into *keep,
 * cleared by the caller after the create). 0, or -1 with *ret the reply. */
int e2b_network_create_opts(http_request *req, const e2b_netcap *cap, const json_t *body, sbx_create_opts *o,
			    e2b_net *keep, http_result *ret);

/* PUT /sandboxes/{id}/network, body the request's JSON object (already
 * known to be an E2B sandbox of this server): 204, 400, 403, 409. */
http_result e2b_network_update(http_request *req, sbx_ctx *ctx, const e2b_netcap *cap, const char *id,
			       const json_t *body);

/* Sets getInfo's allowInternetAccess and network ({allowOut: the sbx rules,
 * denyOut: [ALL_TRAFFIC]} for a list; {} for all traffic) in detail. */
void e2b_network_describe(sbx_ctx *ctx, const char *id, json_t *detail);

/* The data plane's GET /envs: the sandbox's environment variables (its
 * create's envVars and the template's), {"NAME": "value"}. */
http_result e2b_envs(http_request *req);
