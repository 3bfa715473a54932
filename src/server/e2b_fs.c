/* envd's filesystem.Filesystem service on the E2B data plane (e2b_rpc.h):
 * Stat, MakeDir, Move, ListDir and Remove, each a thin route over the
 * library call (sbx_env_stat, make_dir, move, list_dir, remove_path) as the
 * call's user, its entries in envd's EntryInfo form (proto3 JSON):
 *   {name, type: FILE_TYPE_FILE|FILE_TYPE_DIRECTORY|FILE_TYPE_SYMLINK, path,
 *    size (int64 as a string), mode (Go's os.FileMode bits: 1<<31 a
 *    directory, 1<<27 a symlink, then the permissions), permissions
 *    ("drwxr-xr-x", as Go prints a FileMode), owner, group, modifiedTime
 *    (RFC 3339), symlinkTarget?, metadata? (the user.e2b.* attributes)}
 * Errors come back with the library's code (not_found, already_exists for
 * MakeDir's EEXIST, ...), which the SDK turns into false for exists() and
 * makeDir(). WatchDir and the watcher calls are e2b_watch.c's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "server/e2b_rpc.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

#define GO_MODE_DIR (1u << 31)
#define GO_MODE_SYMLINK (1u << 27)

/* Go's FileMode.String() for the type and permission bits sbx reports. */
static void permissions(const char *type, unsigned mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	out[0] = streq(type, "dir") ? 'd' : streq(type, "symlink") ? 'L' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	out[10] = 0;
}

/* e2b_rpc.h */
json_t *e2b_entry_info(const json_t *e)
{
	const char *type = json_str(e, "type") ?: "other";
	unsigned mode = (unsigned)json_int(e, "mode", 0) & 0777;
	char perms[11], size[32], mtime[64];
	permissions(type, mode, perms);
	snprintf(size, sizeof(size), "%lld", (long long)json_int(e, "size", 0));
	int64_t ns = json_int(e, "mtime_ns", 0);
	time_t secs = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	size_t n = strftime(mtime, sizeof(mtime), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(mtime + n, sizeof(mtime) - n, ".%09lldZ", (long long)(ns % 1000000000));
	unsigned go_mode =
	    mode | (streq(type, "dir") ? GO_MODE_DIR : 0) | (streq(type, "symlink") ? GO_MODE_SYMLINK : 0);
	json_t *o = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:s,s:s}", "name", json_str(e, "name") ?: "", "path",
			      json_str(e, "path") ?: "", "size", size, "mode", (json_int_t)go_mode,
			      "permissions", perms, "owner", json_str(e, "owner") ?: "", "group",
			      json_str(e, "group") ?: "", "modifiedTime", mtime);
	if (!o)
		return NULL;
	const char *t = streq(type, "file")	 ? "FILE_TYPE_FILE"
			: streq(type, "dir")	 ? "FILE_TYPE_DIRECTORY"
			: streq(type, "symlink") ? "FILE_TYPE_SYMLINK"
						 : NULL;
	if (t)
		json_object_set_new(o, "type", json_string(t));
	const char *target = json_str(e, "symlink_target");
	if (target)
		json_object_set_new(o, "symlinkTarget", json_string(target));
	/* metadata: the user.e2b.* attributes (e2b_files.c writes them) */
	const char *k;
	json_t *v, *md = NULL;
	json_object_foreach(json_object_get(e, "user_xattrs"), k, v)
	{
		if (strncmp(k, "e2b.", 4) != 0 || !k[4] || !json_is_string(v))
			continue;
		if (!md && !(md = json_object()))
			break;
		json_object_set(md, k + 4, v);
	}
	if (md)
		json_object_set_new(o, "metadata", md);
	return o;
}

static int path_of(const json_t *in, const char *key, const char **ret, sbx_err **err)
{
	const char *p = json_str(in, key);
	if (!p || !*p)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "%s: a path is required", key);
	*ret = p;
	return 0;
}

/* {entry: EntryInfo} of a library entry (taken). */
static int reply_entry(json_t *e, json_t **out, sbx_err **err)
{
	_cleanup_json_ json_t *own = e;
	json_t *info = e2b_entry_info(own);
	if (!info || !(*out = json_pack("{s:o}", "entry", info)))
		return err_oom(err);
	return 0;
}

static sbx_fs_opts opts_of(const e2b_call *c)
{
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = c->user;
	return o;
}

static int fs_stat(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *p = NULL;
	json_t *e = NULL;
	sbx_fs_opts o = opts_of(c);
	if (path_of(in, "path", &p, err) < 0 || sbx_env_stat(c->ctx, c->sandbox_id, p, &o, &e, err) < 0)
		return -1;
	return reply_entry(e, out, err);
}

static int fs_make_dir(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *p = NULL;
	json_t *e = NULL;
	sbx_fs_opts o = opts_of(c);
	o.parents = true;
	if (path_of(in, "path", &p, err) < 0 || sbx_env_make_dir(c->ctx, c->sandbox_id, p, &o, &e, err) < 0)
		return -1;
	return reply_entry(e, out, err);
}

static int fs_move(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *from = NULL, *to = NULL;
	json_t *e = NULL;
	sbx_fs_opts o = opts_of(c);
	if (path_of(in, "source", &from, err) < 0 || path_of(in, "destination", &to, err) < 0 ||
	    sbx_env_move(c->ctx, c->sandbox_id, from, to, &o, &e, err) < 0)
		return -1;
	return reply_entry(e, out, err);
}

/* envd's Remove is Go's os.RemoveAll: a path that is not there is removed
 * already (success, as the SDK's own tests expect), not not_found. */
static int fs_remove(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *p = NULL;
	sbx_fs_opts o = opts_of(c);
	if (path_of(in, "path", &p, err) < 0)
		return -1;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_remove_path(c->ctx, c->sandbox_id, p, &o, &e) < 0) {
		if (sbx_err_code(e) != SBX_E_NOT_FOUND || sbx_err_errno(e) != ENOENT) {
			*err = TAKE_PTR(e);
			return -1;
		}
	}
	*out = json_object();
	return *out ? 0 : err_oom(err);
}

static int fs_list_dir(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	const char *p = NULL;
	sbx_fs_opts o = opts_of(c);
	json_t *d = json_object_get(in, "depth");
	o.depth = json_is_integer(d) ? (int)json_integer_value(d) : 1;
	if (o.depth == 0)
		o.depth = 1; /* proto3's default: absent */
	_cleanup_json_ json_t *r = NULL;
	if (path_of(in, "path", &p, err) < 0 || sbx_env_list_dir(c->ctx, c->sandbox_id, p, &o, &r, err) < 0)
		return -1;
	if (json_is_true(json_object_get(r, "truncated")))
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "list '%.200s': more entries than one reply holds (256 KiB); list less deep",
			       p);
	json_t *entries = json_array(), *e;
	size_t i;
	json_array_foreach(json_object_get(r, "entries"), i, e)
	{
		json_t *info = e2b_entry_info(e);
		if (!info || json_array_append_new(entries, info) < 0) {
			json_decref(entries);
			return err_oom(err);
		}
	}
	if (!entries || !(*out = json_pack("{s:o}", "entries", entries)))
		return err_oom(err);
	return 0;
}

const e2b_method e2b_fs_methods[] = {
    {"filesystem.Filesystem", "Stat", .unary = fs_stat},
    {"filesystem.Filesystem", "MakeDir", .unary = fs_make_dir},
    {"filesystem.Filesystem", "Move", .unary = fs_move},
    {"filesystem.Filesystem", "ListDir", .unary = fs_list_dir},
    {"filesystem.Filesystem", "Remove", .unary = fs_remove},
    {0},
};
