/* A new environment from a create's options, without the warm pool
 * (env_create_cold): its --policy applied as the ceiling of the options,
 * then a template that is an image or a snapshot to fork resolved, and the
 * supervisor started (env_start.c). The pool (pool.c) builds its entries
 * with this; sbx_env_create (env.c) takes a pool's entry first. */

#include <errno.h>
#include <string.h>

#include "api/core.h"
#include "api/snap_base.h"
#include "build/image_config.h"
#include "policy/policy.h"
#include "runtime/runtime.h"
#include "runtime/user.h"
#include "store/snapshot.h"
#include "util/json.h"

static int env_create_opts(sbx_ctx *ctx, const sbx_create_opts *o, const json_t *plugins, char **ret_id,
			   json_t **ret_warnings, sbx_err **err);

int env_create_cold(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings,
		    sbx_err **err)
{
	if (!o || !o->policy)
		return env_create_opts(ctx, o, NULL, ret_id, ret_warnings, err);
	_cleanup_policy_ policy *p = NULL;
	if (policy_load_spec(o->policy, &p, err) < 0)
		return -1;
	sbx_create_opts co = *o;
	/* A whole current struct for policy_apply: fields newer than the
	 * caller's version are unset. */
	if (co.version < 2)
		co.keep_identity = false;
	if (co.version < 3) {
		co.disk_bytes = 0;
		co.hidden = co.secrets = NULL;
		co.agent_policy = NULL;
	}
	if (co.version < 4) {
		co.user = NULL;
		co.cap_drop = co.cap_add = NULL;
		co.user_no_root = false;
	}
	if (co.version < 5) {
		co.idle_suspend_ms = 0;
		co.devices = NULL;
	}
	if (co.version < 6)
		co.network_allow = NULL;
	if (co.version < 7)
		co.one_shot = false;
	co.version = SBX_CREATE_OPTS_VERSION;
	int64_t asked_disk = co.disk_bytes;
	const char *asked_user = co.user;
	policy_storage keep = {0};
	int r = policy_apply(p, &co, &keep, err);
	/* Rootless, a quota can only be a one-shot run's tmpfs: the policy's
	 * is not enforced otherwise (asking for one explicitly is refused). */
	if (r == 0 && ctx->rootless && !asked_disk && co.disk_bytes > 0 &&
	    (!co.ephemeral || !userns_available())) {
		co.disk_bytes = 0;
		keep.warning = "the policy's disk quota (limits.disk_bytes) is not enforced: rootless, the "
			       "writable layer "
			       "cannot go on the loop-mounted ext4 image a quota needs (run as root)";
	}
	/* Rootless, the environment maps one uid (root inside): a policy's
	 * unprivileged user becomes root with no capabilities at all (an
	 * explicit --user is refused at create, naming why). */
	static const char *const drop_all[] = {"ALL", NULL};
	const char *user_warning = NULL;
	user_spec pus;
	if (r == 0 && ctx->rootless && !asked_user && co.user && user_spec_parse(co.user, &pus, NULL) == 0 &&
	    !user_spec_is_root(&pus)) {
		co.user = NULL;
		co.user_no_root = false;
		co.cap_drop = drop_all;
		co.cap_add = NULL;
		user_warning =
		    "the policy's user is not used: rootless, the environment maps a single uid (root "
		    "inside); "
		    "commands run as root with no capabilities instead (run sbx as root for a separate user)";
	}
	json_t *w = NULL;
	if (r == 0)
		r = env_create_opts(ctx, &co, keep.plugins, ret_id, &w, err);
	if (r == 0 && keep.warning && w)
		json_array_append_new(w, json_string(keep.warning));
	if (r == 0 && user_warning && w)
		json_array_append_new(w, json_string(user_warning));
	if (ret_warnings)
		*ret_warnings = w;
	else
		json_decref(w);
	policy_storage_clear(&keep);
	return r;
}

/* A fork (or an image template) runs as its snapshot's user (the manifest's
 * "user": the environment's, or the image config's User) unless the create
 * names one; "root" or a form sbx cannot use leaves root. */
static void snapshot_default_user(sbx_create_opts *co, const store_snapshot *snap)
{
	if (co->version < 4) {
		co->user = NULL;
		co->cap_drop = co->cap_add = NULL;
		co->user_no_root = false;
		co->devices = NULL;
		co->network_allow = NULL;
		co->one_shot = false;
		co->version = SBX_CREATE_OPTS_VERSION;
	}
	user_spec us;
	if (!co->user && snap->user && user_spec_parse(snap->user, &us, NULL) == 0 && !user_spec_is_root(&us))
		co->user = snap->user;
}

/* A fork or an image template starts with its snapshot's variables (the
 * image's Env, or the environment's), the create's --env over them
 * (build/image_config.h). *ret_env holds the merged array (strings borrowed). */
static int snapshot_default_env(sbx_create_opts *co, const store_snapshot *snap, char ***ret_env,
				sbx_err **err)
{
	const image_layer img = {.env = (const char *const *)snap->env}, cre = {.env = co->env};
	image_merged m;
	if (image_merge((const image_layer *const[]){&img, &cre}, 2, &m, err) < 0)
		return -1;
	co->env = (const char *const *)m.env;
	*ret_env = m.env;
	return 0;
}

static int env_create_opts(sbx_ctx *ctx, const sbx_create_opts *o, const json_t *plugins, char **ret_id,
			   json_t **ret_warnings, sbx_err **err)
{
	/* OCI: a template that is neither host nor dir:PATH is an imported image
	 * (a template name, or oci:DIR[:TAG] imported first): create from its
	 * snapshot, as a fork, with the image's Env before the caller's. */
	if (o && !o->snapshot && o->template_spec && !streq(o->template_spec, "host") &&
	    !startswith(o->template_spec, "dir:")) {
		_cleanup_free_ char *tdigest = NULL;
		_cleanup_snapshot_ store_snapshot *tsnap = NULL;
		if (sbx_template_resolve(ctx, o->template_spec, &tdigest, err) < 0 ||
		    store_snapshot_read(ctx->root, tdigest, &tsnap, err) < 0)
			return -1;
		sbx_create_opts co = *o;
		co.template_spec = tsnap->base_template ? tsnap->base_template : o->template_spec;
		_cleanup_free_ char **tenv = NULL;
		if (snapshot_default_env(&co, tsnap, &tenv, err) < 0)
			return -1;
		snapshot_default_user(&co, tsnap);
		env_create_req q = {.o = &co, .snap = tsnap, .snap_id = tdigest, .plugins = plugins};
		return env_create_impl(ctx, &q, ret_id, ret_warnings, err);
	}
	if (!o || !o->snapshot)
		return env_create_impl(ctx, &(env_create_req){.o = o, .plugins = plugins}, ret_id,
				       ret_warnings, err);
	/* fork: a new environment from a snapshot (its template and layers). */
	_cleanup_free_ char *digest = NULL;
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	if (sbx_snapshot_resolve(ctx, o->snapshot, &digest, err) < 0 ||
	    store_snapshot_read(ctx->root, digest, &snap, err) < 0)
		return -1;
	sbx_create_opts co = *o;
	if (o->template_spec && snap->base_template && !streq(o->template_spec, snap->base_template))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "snapshot %s was taken from template '%s', not '%s'", digest,
			       snap->base_template, o->template_spec);
	co.template_spec = snap->base_template;
	_cleanup_free_ char **fenv = NULL;
	if (snapshot_default_env(&co, snap, &fenv, err) < 0)
		return -1;
	snapshot_default_user(&co, snap);
	env_create_req q = {.o = &co, .snap = snap, .snap_id = digest, .plugins = plugins};
	return env_create_impl(ctx, &q, ret_id, ret_warnings, err);
}
