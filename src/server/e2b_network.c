/* The E2B API's network: a create's egress, PUT /sandboxes/{id}/network
 * and envd's GET /envs (e2b_network.h). Each is one library call behind
 * the pure mapping of e2b_net_map.c. */
#include "server/e2b_network.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b_data.h"
#include "server/e2b_reply.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

enum { STATUS_NO_CONTENT = 204, STATUS_FORBIDDEN = 403, STATUS_CONFLICT = 409 };

void e2b_netcap_clear(e2b_netcap *c)
{
	if (!c)
		return;
	e2b_net_clear(&c->net);
	free(c->name);
	c->name = NULL;
}

int e2b_netcap_load(const char *policy, e2b_netcap *ret, sbx_err **err)
{
	e2b_netcap c = {0};
	_cleanup_json_ json_t *p = NULL;
	if (policy && sbx_policy_show(policy, &p, err) < 0)
		return err_wrap(err, "--policy");
	char why[256];
	if (e2b_net_cap_parse(json_object_get(p, "network"), &c.net, why, sizeof(why)) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--policy: %s", why);
	if ((policy && asprintf(&c.name, "sbx serve --policy %.200s", policy) < 0) ||
	    (!policy && !(c.name = strdup("sbx serve without --policy")))) {
		c.name = NULL;
		e2b_netcap_clear(&c);
		return err_oom(err);
	}
	*ret = c;
	return 0;
}

/* The request mapped and checked: 0, or -1 with the reply in *ret. */
static int map_checked(http_request *req, const e2b_netcap *cap, const json_t *body, bool update, e2b_net *n,
		       http_result *ret)
{
	char why[1024];
	int r = e2b_net_map(body, update, n, why, sizeof(why));
	if (r == -ENOMEM) {
		*ret = e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
		return -1;
	}
	if (r < 0) {
		*ret = e2b_reply_message(req, HTTP_STATUS_BAD_REQUEST, why);
		return -1;
	}
	if (e2b_net_within(&cap->net, n, cap->name, why, sizeof(why)) < 0) {
		e2b_net_clear(n);
		*ret = e2b_reply_message(req, STATUS_FORBIDDEN, why);
		return -1;
	}
	return 0;
}

int e2b_network_create_opts(http_request *req, const e2b_netcap *cap, const json_t *body, sbx_create_opts *o,
			    e2b_net *keep, http_result *ret)
{
	e2b_net n;
	if (map_checked(req, cap, body, false, &n, ret) < 0)
		return -1;
	if (n.mode == E2B_NET_DEFAULT) { /* nothing asked: the cap's own network */
		e2b_net_clear(&n);
		n.mode = cap->net.mode;
		for (size_t i = 0; i < cap->net.n; i++)
			if (strv_push_copy(&n.allow, &n.n, cap->net.allow[i]) < 0) {
				e2b_net_clear(&n);
				*ret =
				    e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
				return -1;
			}
	}
	/* Under a cap that allows some egress, a sandbox that gets none has an
	 * empty allowlist: its proxy exists, so PUT /network can open it later. */
	if (n.mode == E2B_NET_NONE && cap->net.mode != E2B_NET_NONE)
		n.mode = E2B_NET_ALLOW;
	if (n.mode == E2B_NET_ALLOW && !n.allow && !(n.allow = calloc(1, sizeof(char *)))) {
		*ret = e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
		return -1;
	}
	if (n.mode == E2B_NET_ALLOW && n.n == 0 && cap->net.mode == E2B_NET_NONE) {
		e2b_net_clear(&n); /* no proxy: nothing could be allowed later anyway */
		n.mode = E2B_NET_NONE;
	}
	/* All traffic is every public host and port through the proxy (network
	 * internet): the host's own network, its loopback services and the
	 * cloud's metadata address stay out of reach. */
	o->network = n.mode == E2B_NET_OPEN ? "internet" : n.mode == E2B_NET_ALLOW ? "allow" : "none";
	o->network_allow = n.mode == E2B_NET_ALLOW ? (const char *const *)n.allow : NULL;
	*keep = n;
	return 0;
}

/* The environment's network mode ("none", "allow", "internet", "open"); NULL
 * if gone. */
static char *env_network(sbx_ctx *ctx, const char *id, sbx_err **err)
{
	_cleanup_json_ json_t *info = NULL;
	if (sbx_env_inspect(ctx, id, &info, err) < 0)
		return NULL;
	const char *net = json_string_value(json_object_get(info, "network"));
	char *s = strdup(net ? net : "none");
	if (!s)
		err_oom(err);
	return s;
}

void e2b_network_describe(sbx_ctx *ctx, const char *id, json_t *detail)
{
	_cleanup_json_ json_t *info = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_inspect(ctx, id, &info, &e) < 0)
		return;
	const char *net = json_string_value(json_object_get(info, "network")) ?: "none";
	json_t *d = json_object();
	bool all = streq(net, "open") || streq(net, "internet");
	if (d && !all)
		json_object_set_new(d, "denyOut", json_pack("[s]", "0.0.0.0/0"));
	if (d && streq(net, "allow"))
		json_object_set(d, "allowOut", json_object_get(info, "network_allow") ?: json_array());
	json_object_set_new(detail, "allowInternetAccess", json_boolean(all));
	if (d)
		json_object_set_new(detail, "network", d);
}

http_result e2b_network_update(http_request *req, sbx_ctx *ctx, const e2b_netcap *cap, const char *id,
			       const json_t *body)
{
	http_result ret = HTTP_CLOSE;
	e2b_net n;
	if (map_checked(req, cap, body, true, &n, &ret) < 0)
		return ret;
	_cleanup_err_ sbx_err *e = NULL;
	_cleanup_free_ char *cur = env_network(ctx, id, &e);
	if (!cur) {
		e2b_net_clear(&n);
		return e2b_reply_error(req,
				       sbx_err_code(e) == SBX_E_NOT_FOUND ? HTTP_STATUS_NOT_FOUND
									  : HTTP_STATUS_INTERNAL_SERVER_ERROR,
				       "update network: %s", sbx_err_message(e));
	}
	/* open is the host's network stack (a sandbox made outside the E2B API),
	 * all traffic and a list are the proxy in a namespace of its own: a live
	 * sandbox moves between the last two, never to or from the first. */
	if (streq(cur, "open")) {
		bool same = n.mode == E2B_NET_OPEN;
		e2b_net_clear(&n);
		if (same)
			return http_respond(req, STATUS_NO_CONTENT, http_response_empty());
		return e2b_reply_error(
		    req, STATUS_CONFLICT,
		    "update network: sandbox %s has the host's own network (sbx network open); sbx "
		    "cannot move a live sandbox from it to a list of hosts: create it with the "
		    "network it needs",
		    id);
	}
	if (streq(cur, "none")) {
		bool nothing = n.n == 0;
		e2b_net_clear(&n);
		if (nothing)
			return http_respond(req, STATUS_NO_CONTENT, http_response_empty());
		return e2b_reply_error(
		    req, STATUS_CONFLICT,
		    "update network: sandbox %s was created without network (the server's "
		    "cap allowed none then), so it has no egress proxy whose rules could change",
		    id);
	}
	static const char *const none[] = {NULL};
	http_request_busy(req, true);
	int r = sbx_env_network_set(ctx, id, n.mode == E2B_NET_OPEN ? "internet" : "allow",
				    n.mode == E2B_NET_OPEN ? none
				    : n.allow		   ? (const char *const *)n.allow
							   : none,
				    NULL, &e);
	http_request_busy(req, false);
	e2b_net_clear(&n);
	if (r < 0)
		return e2b_reply_error(req,
				       sbx_err_code(e) == SBX_E_CONFLICT	   ? STATUS_CONFLICT
				       : sbx_err_code(e) == SBX_E_INVALID_ARGUMENT ? HTTP_STATUS_BAD_REQUEST
				       : sbx_err_code(e) == SBX_E_NOT_FOUND
					   ? HTTP_STATUS_NOT_FOUND
					   : HTTP_STATUS_INTERNAL_SERVER_ERROR,
				       "update network: %s", sbx_err_message(e));
	return http_respond(req, STATUS_NO_CONTENT, http_response_empty());
}

http_result e2b_envs(http_request *req)
{
	_cleanup_json_ json_t *info = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	const char *id = e2b_req_sandbox(req);
	if (sbx_env_inspect(e2b_req_ctx(req), id, &info, &e) < 0)
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "envs: %s",
				       sbx_err_message(e));
	json_t *out = json_object();
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(info, "env"), i, v)
	{
		const char *kv = json_string_value(v), *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv)
			continue;
		_cleanup_free_ char *k = strndup(kv, (size_t)(eq - kv));
		json_t *sv = json_string(eq + 1); /* NULL for a value that is not UTF-8: left out */
		if (!out || !k || (sv && json_object_set_new(out, k, sv) < 0)) {
			json_decref(out);
			return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "out of memory");
		}
	}
	return e2b_reply_json(req, HTTP_STATUS_OK, out);
}
