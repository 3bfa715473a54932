/* Trace manifests: content-addressed JSON documents next to snapshots. */
#include "trace/trace_store.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/storefs.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"

#define TRACE_MANIFEST_MAX (4u << 20)

static char *manifest_dir(const char *root)
{
	return store_fs_path(root, STORE_DIR_TRACES);
}

static char *canonical(const json_t *m)
{
	return json_dumps(m, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENSURE_ASCII);
}

static bool digest_field_ok(const json_t *o, const char *key, bool required)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return !required;
	return json_is_string(v) && store_digest_valid(json_string_value(v));
}

int trace_manifest_validate(const json_t *m, sbx_err **err)
{
#define BAD(field, why) err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "trace manifest: '%s' %s", field, why)
	if (!json_is_object(m))
		return BAD("(root)", "must be an object");
	if (json_integer_value(json_object_get(m, "schema")) != TRACE_SCHEMA)
		return BAD("schema", "must be 1");
	if (!digest_field_ok(m, "snapshot_id", true))
		return BAD("snapshot_id", "must be a sha256 digest");
	json_t *cmd = json_object_get(m, "command");
	if (!json_is_object(cmd) || !json_is_array(json_object_get(cmd, "argv")) ||
	    json_array_size(json_object_get(cmd, "argv")) == 0)
		return BAD("command.argv", "must be a non-empty array");
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(cmd, "argv"), i,
			   v) if (!json_is_string(v)) return BAD("command.argv", "must hold strings");
	if (!json_is_array(json_object_get(cmd, "env")))
		return BAD("command.env", "must be an array");
	json_t *ev = json_object_get(m, "events");
	if (!json_is_object(ev) || !digest_field_ok(ev, "digest", true))
		return BAD("events.digest", "must be a sha256 digest");
	json_t *res = json_object_get(m, "result");
	if (!json_is_object(res))
		return BAD("result", "must be an object");
	const char *streams[] = {"stdout", "stderr"};
	for (size_t k = 0; k < 2; k++) {
		json_t *s = json_object_get(res, streams[k]);
		if (!json_is_object(s) || !digest_field_ok(s, "digest", true))
			return BAD(streams[k], "must carry a sha256 digest");
	}
	json_t *in = json_object_get(cmd, "stdin");
	if (in && !json_is_null(in) && (!json_is_object(in) || !digest_field_ok(in, "digest", true)))
		return BAD("command.stdin", "must carry a sha256 digest");
	return 0;
#undef BAD
}

static int strv_push_unique(char ***v, size_t *n, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (streq((*v)[i], s))
			return 0;
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

char **trace_manifest_blobs(const json_t *m)
{
	char **v = calloc(1, sizeof(char *));
	size_t n = 0;
	const json_t *objs[] = {
	    json_object_get(m, "events"),
	    json_object_get(json_object_get(m, "command"), "stdin"),
	    json_object_get(json_object_get(m, "result"), "stdout"),
	    json_object_get(json_object_get(m, "result"), "stderr"),
	};
	for (size_t i = 0; v && i < ARRAY_SIZE(objs); i++) {
		const char *d = json_str(objs[i], "digest");
		if (d && store_digest_valid(d) && strv_push_unique(&v, &n, d) < 0) {
			strv_free(v);
			return NULL;
		}
	}
	return v;
}

int trace_store_put(const char *store_root, const json_t *manifest, char ret_id[STORE_DIGEST_SIZE],
		    sbx_err **err)
{
	if (trace_manifest_validate(manifest, err) < 0)
		return -1;
	_cleanup_free_ char *js = canonical(manifest);
	if (!js)
		return err_errnum(err, ENOMEM, "encode trace manifest");
	if (strlen(js) > TRACE_MANIFEST_MAX) /* trace_store_get would refuse to read it */
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "trace manifest of %zu bytes: more than the %u a trace may have", strlen(js),
			       TRACE_MANIFEST_MAX);
	char id[STORE_DIGEST_SIZE];
	if (store_digest_buf(js, strlen(js), id, err) < 0)
		return -1;
	int r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *dir = manifest_dir(store_root);
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	if ((r = fs_mkdir_p(dir, 0700)) < 0)
		return err_errnum(err, r, "create '%s'", dir);
	char name[STORE_DIGEST_HEX_LEN + 8];
	snprintf(name, sizeof(name), "%s.json", store_digest_hex(id));
	if (store_fs_write_atomic(dir, name, js, strlen(js), 0600, err) < 0)
		return err_wrap(err, "write trace manifest");
	memcpy(ret_id, id, STORE_DIGEST_SIZE);
	return 0;
}

int trace_store_get(const char *store_root, const char *id, json_t **ret, sbx_err **err)
{
	if (!store_digest_valid(id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid trace id '%s'", id);
	_cleanup_free_ char *dir = manifest_dir(store_root);
	_cleanup_free_ char *path = NULL;
	if (!dir || asprintf(&path, "%s/%s.json", dir, store_digest_hex(id)) < 0)
		return err_errnum(err, ENOMEM, "store");
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such trace: '%s'", id)
				       : err_errno(err, "open '%s'", path);
	_cleanup_free_ char *buf = NULL;
	size_t n = 0;
	int r = fd_read_all(fd, TRACE_MANIFEST_MAX, &buf, &n);
	if (r < 0)
		return err_errnum(err, -r, "read '%s'", path);
	char got[STORE_DIGEST_SIZE];
	if (store_digest_buf(buf, n, got, err) < 0)
		return -1;
	if (!streq(got, id))
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "trace %s is corrupt: its manifest hashes to %s",
			       id, got);
	json_error_t je;
	_cleanup_json_ json_t *m = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
	if (!m)
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "trace %s: %s", id, je.text);
	if (trace_manifest_validate(m, err) < 0)
		return err_wrap(err, "trace %s", id);
	*ret = TAKE_PTR(m);
	return 0;
}

static char *keep_manifest(const char *name)
{
	size_t l = strlen(name);
	if (l != STORE_DIGEST_HEX_LEN + 5 || !streq(name + STORE_DIGEST_HEX_LEN, ".json"))
		return NULL;
	char hex[STORE_DIGEST_HEX_LEN + 1];
	memcpy(hex, name, STORE_DIGEST_HEX_LEN);
	hex[STORE_DIGEST_HEX_LEN] = 0;
	if (!store_digest_hex_valid(hex))
		return NULL;
	char *d = NULL;
	return asprintf(&d, "sha256:%s", hex) < 0 ? NULL : d;
}

int trace_store_list(const char *store_root, char ***ret, sbx_err **err)
{
	_cleanup_free_ char *dir = manifest_dir(store_root);
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	return store_fs_list_dir(dir, keep_manifest, ret, err);
}

int trace_store_resolve(const char *store_root, const char *ref, char **ret_id, sbx_err **err)
{
	if (!ref || !*ref)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "empty trace id");
	if (store_digest_prefix_valid(ref)) {
		_cleanup_strv_free_ char **all = NULL;
		if (trace_store_list(store_root, &all, err) < 0)
			return -1;
		const char *match = NULL;
		int n = store_digest_prefix_match(all, ref, &match);
		if (n == 1)
			return (*ret_id = strdup(match)) ? 0 : err_errnum(err, ENOMEM, "resolve trace");
		if (n > 1)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "trace prefix '%s' is ambiguous",
				       ref);
	}
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such trace: '%s'", ref);
}
