/* sbx_env_stat, file_open, dir_open, make_dir, move, remove_path, list_dir: file
 * operations as a named user (include/sbx.h). Each is one request to init
 * (src/runtime/init_fs.c), which resolves the path inside the environment
 * with the user's filesystem identity; files.c's api_file_call carries it. */
#include <errno.h>
#include <string.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "runtime/user.h"
#include "util/json.h"

static const sbx_fs_opts fs_defaults = SBX_FS_OPTS_INIT;

/* The request for action on path, with o's user; NULL with err. */
static json_t *fs_request(const char *action, const char *path, const sbx_fs_opts *o, sbx_err **err)
{
	if (!path || !*path) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "no path given");
		return NULL;
	}
	if (o->version != SBX_FS_OPTS_VERSION) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "sbx_fs_opts: version %u, expected %u",
			o->version, SBX_FS_OPTS_VERSION);
		return NULL;
	}
	user_spec us;
	if (o->user && user_spec_parse(o->user, &us, err) < 0)
		return NULL;
	json_t *req = json_pack("{s:s,s:s,s:s}", CTL_F_OP, CTL_OP_FILE, "action", action, "path", path);
	if (!req) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path '%.200s' is not valid UTF-8", path);
		return NULL;
	}
	if (o->user)
		json_object_set_new(req, "user", json_string(o->user));
	return req;
}

/* Sends req (taken); *ret (may be NULL) gets the reply's field key. */
static int fs_call(sbx_ctx *ctx, const char *ref, json_t *req, const char *key, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *r = req, *m = NULL;
	if (!r)
		return -1;
	if (api_file_call(ctx, ref, r, &m, NULL, 0, err) < 0)
		return -1;
	if (!ret)
		return 0;
	json_t *v = key ? json_object_get(m, key) : m;
	if (!v)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "no %s in the environment's reply", key);
	*ret = json_incref(v);
	return 0;
}

_public_ int sbx_env_stat(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, json_t **ret,
			  sbx_err **err)
{
	o = o ?: &fs_defaults;
	return fs_call(ctx, ref, fs_request("fs_stat", path, o, err), "entry", ret, err);
}

_public_ int sbx_env_file_open(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o,
			       int *ret_fd, int64_t *ret_size, sbx_err **err)
{
	o = o ?: &fs_defaults;
	if (o->mode > 07777)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid mode %o", o->mode);
	_cleanup_json_ json_t *req = fs_request(o->write ? "write" : "read", path, o, err), *m = NULL;
	if (!req)
		return -1;
	if (o->write) {
		json_object_set_new(req, "mode", json_integer(o->mode < 0 ? 0644 : o->mode));
		json_object_set_new(req, "parents", json_boolean(o->parents));
	}
	int fd = -1;
	if (api_file_call(ctx, ref, req, &m, &fd, 1, err) < 0)
		return -1;
	if (ret_size)
		*ret_size = json_int(m, "size", 0);
	*ret_fd = fd;
	return 0;
}

_public_ int sbx_env_dir_open(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o,
			      int *ret_fd, sbx_err **err)
{
	o = o ?: &fs_defaults;
	_cleanup_json_ json_t *req = fs_request("fs_opendir", path, o, err), *m = NULL;
	if (!req)
		return -1;
	int fd = -1;
	if (api_file_call(ctx, ref, req, &m, &fd, 1, err) < 0)
		return -1;
	if (fd < 0)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "the environment sent no descriptor for '%.200s'",
			       path);
	*ret_fd = fd;
	return 0;
}

_public_ int sbx_env_make_dir(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o,
			      json_t **ret, sbx_err **err)
{
	o = o ?: &fs_defaults;
	if (o->mode > 07777)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid mode %o", o->mode);
	json_t *req = fs_request("fs_mkdir", path, o, err);
	if (req) {
		json_object_set_new(req, "mode", json_integer(o->mode < 0 ? 0755 : o->mode));
		json_object_set_new(req, "parents", json_boolean(o->parents));
	}
	return fs_call(ctx, ref, req, "entry", ret, err);
}

_public_ int sbx_env_move(sbx_ctx *ctx, const char *ref, const char *from, const char *to,
			  const sbx_fs_opts *o, json_t **ret, sbx_err **err)
{
	o = o ?: &fs_defaults;
	if (!to || !*to)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "no destination given");
	json_t *req = fs_request("fs_move", from, o, err), *t = NULL;
	if (req && !(t = json_string(to))) {
		json_decref(req);
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path '%.200s' is not valid UTF-8", to);
	}
	if (req)
		json_object_set_new(req, "to", t);
	return fs_call(ctx, ref, req, "entry", ret, err);
}

_public_ int sbx_env_remove_path(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o,
				 sbx_err **err)
{
	o = o ?: &fs_defaults;
	return fs_call(ctx, ref, fs_request("fs_remove", path, o, err), NULL, NULL, err);
}

_public_ int sbx_env_list_dir(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o,
			      json_t **ret, sbx_err **err)
{
	o = o ?: &fs_defaults;
	if (o->depth < 1 || o->depth > 64)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "depth %d: from 1 to 64", o->depth);
	json_t *req = fs_request("fs_list", path, o, err);
	if (req)
		json_object_set_new(req, "depth", json_integer(o->depth));
	_cleanup_json_ json_t *m = NULL;
	if (fs_call(ctx, ref, req, NULL, &m, err) < 0)
		return -1;
	*ret = json_pack("{s:O,s:b}", "entries", json_object_get(m, "entries"), "truncated",
			 json_bool(m, "truncated", false));
	return *ret ? 0 : err_oom(err);
}
