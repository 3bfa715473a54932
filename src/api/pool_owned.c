/* Pools a server keeps for itself (docs/warm.md "A server that keeps itself
 * warm"): the create observer a server installs to see what its clients
 * create, and pools owned by a process. An owned pool is an ordinary pool
 * (pool.c) whose configuration names its owner, {pid, start} (the start
 * time tells a reused pid apart); it is the owner's to resize and remove,
 * and sbx gc removes it once the owner is gone (a server killed with
 * SIGKILL leaves no warm entries behind for long). A user's explicit pool
 * is never taken over. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "store/digest.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/proc.h"

/* The pool source a create names (pool.c pool_source_of, without its
 * presence check): a snapshot's digest, else the template spec. */
static char *create_source(sbx_ctx *ctx, const sbx_create_opts *o, const char **ret_kind)
{
	*ret_kind = o && o->snapshot ? "snapshot" : "template";
	if (!o || !o->snapshot)
		return strdup(o && o->template_spec ? o->template_spec : "host");
	if (store_digest_valid(o->snapshot))
		return strdup(o->snapshot);
	char *digest = NULL;
	return sbx_snapshot_resolve(ctx, o->snapshot, &digest, NULL) == 0 ? digest : NULL;
}

void pool_observe(sbx_ctx *ctx, const sbx_create_opts *o, bool from_pool)
{
	if ((!ctx->create_observer && !ctx->create_observer_opts) || ctx->pool_key || !pool_opts_plain(o))
		return;
	const char *kind;
	_cleanup_free_ char *source = create_source(ctx, o, &kind);
	if (!source)
		return;
	sbx_pool_opts po = SBX_POOL_OPTS_INIT;
	po.policy = o ? o->policy : NULL;
	po.code = pool_opts_code(o);
	if (ctx->create_observer_opts)
		ctx->create_observer_opts(ctx->create_observer_ud, source, &po, from_pool);
	else if (!po.code) /* an observer that cannot tell code pools apart sees plain creates only */
		ctx->create_observer(ctx->create_observer_ud, source, po.policy, from_pool);
}

static json_t *owner_self(void)
{
	uint64_t start = 0;
	if (proc_start_time(getpid(), &start) < 0)
		return NULL;
	return json_pack("{s:I,s:I}", "pid", (json_int_t)getpid(), "start", (json_int_t)start);
}

static bool owner_is(const json_t *owner, const json_t *me)
{
	return json_is_object(owner) &&
	       json_equal(json_object_get(owner, "pid"), json_object_get(me, "pid")) &&
	       json_equal(json_object_get(owner, "start"), json_object_get(me, "start"));
}

_public_ int sbx_pool_set_owned_opts(sbx_ctx *ctx, const char *source, int size, const sbx_pool_opts *o,
				     json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *me = owner_self();
	if (!me)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "cannot read this process's start time");
	const char *pol_spec = o ? o->policy : NULL;
	bool code = o && o->code;
	/* The pool's key as sbx_pool_set computes it. */
	_cleanup_free_ char *digest = NULL;
	bool snap = !streq(source, "host") && !startswith(source, "dir:") &&
		    sbx_snapshot_resolve(ctx, source, &digest, NULL) == 0;
	const char *kind = snap ? "snapshot" : "template";
	const char *src = snap ? digest : source;
	char key[17];
	_cleanup_json_ json_t *cfg = NULL;
	bool exists = pool_config_read(ctx, kind, src, pol_spec, code, key, &cfg) == 0;
	const json_t *owner = exists ? json_object_get(cfg, "owner") : NULL;
	if (exists && !owner_is(owner, me) && (!owner || pool_owner_alive(owner))) {
		*ret =
		    json_pack("{s:s,s:b}", "pool", key, "owned", false); /* a user's, or another server's */
		return *ret ? 0 : err_oom(err);
	}
	if (size == 0) {
		if (exists)
			return sbx_pool_remove_opts(ctx, src, o, ret, err);
		*ret = json_pack("{s:s,s:b}", "pool", key, "owned", true);
		return *ret ? 0 : err_oom(err);
	}
	json_t *j = NULL;
	if (pool_set(ctx, src, size, pol_spec, code, me, &j, err) < 0)
		return -1;
	json_object_set_new(j, "owned", json_true());
	*ret = j;
	return 0;
}

_public_ int sbx_pool_set_owned(sbx_ctx *ctx, const char *source, int size, const char *pol_spec,
				json_t **ret, sbx_err **err)
{
	sbx_pool_opts o = SBX_POOL_OPTS_INIT;
	o.policy = pol_spec;
	return sbx_pool_set_owned_opts(ctx, source, size, &o, ret, err);
}

void pool_gc_owned(sbx_ctx *ctx, json_t *removed)
{
	_cleanup_json_ json_t *list = NULL;
	if (sbx_pool_list(ctx, &list, NULL) < 0)
		return;
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(list, "pools"), i, p)
	{
		const json_t *owner = json_object_get(p, "owner");
		if (!json_is_object(owner) || pool_owner_alive(owner))
			continue;
		_cleanup_json_ json_t *out = NULL;
		sbx_pool_opts po = SBX_POOL_OPTS_INIT;
		po.policy = json_str(p, "policy");
		po.code = json_bool(p, "code", false);
		if (sbx_pool_remove_opts(ctx, json_str(p, "source"), &po, &out, NULL) == 0)
			json_array_extend(removed, json_object_get(out, "removed"));
	}
}
