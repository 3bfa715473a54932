#include "store/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"

void store_snapshot_free(store_snapshot *s)
{
	if (!s)
		return;
	free(s->parent);
	strv_free(s->layers);
	free(s->base_template);
	strv_free(s->env);
	free(s->cwd);
	free(s->user);
	free(s->os_release);
	strv_free(s->packages);
	strv_free(s->base_identity);
	strv_free(s->labels);
	free(s->created_at);
	free(s->config);
	free(s);
}

bool store_label_valid(const char *l)
{
	/* "host" names the host template wherever a snapshot or a template is
	 * accepted (sbx pool set host, sbx fork): a label of that name would
	 * take its place in some of them and not in others. */
	if (!l || streq(l, "host") ||
	    !((l[0] >= 'a' && l[0] <= 'z') || (l[0] >= 'A' && l[0] <= 'Z') || (l[0] >= '0' && l[0] <= '9')))
		return false;
	size_t n = 0;
	for (const char *p = l; *p; p++, n++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-'))
			return false;
	return n <= 128;
}

static bool rfc3339_utc(const char *s)
{
	/* YYYY-MM-DDTHH:MM:SS[.fraction]Z */
	static const char pat[] = "dddd-dd-ddTdd:dd:dd";
	size_t n = strlen(s);
	if (n < 20 || s[n - 1] != 'Z')
		return false;
	for (size_t i = 0; i < sizeof(pat) - 1; i++)
		if (pat[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != pat[i])
			return false;
	if (n == 20)
		return true;
	if (s[19] != '.' || n < 22)
		return false;
	for (size_t i = 20; i < n - 1; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

#define BAD(...) err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "snapshot manifest: " __VA_ARGS__)

/* The image config object: only its known keys, each of its type. */
static int config_check(const char *text, sbx_err **err)
{
	_cleanup_json_ json_t *c = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(c))
		return BAD("config must be an object");
	const char *k;
	json_t *v;
	json_object_foreach(c, k, v)
	{
		if (streq(k, "Cmd") || streq(k, "Entrypoint")) {
			if (!json_is_strv(v))
				return BAD("config.%s must be an array of strings", k);
		} else if (streq(k, "WorkingDir")) {
			if (!json_is_string(v) || json_string_value(v)[0] != '/')
				return BAD("config.WorkingDir must be an absolute path");
		} else if (streq(k, "ExposedPorts") || streq(k, "Labels")) {
			const char *k2;
			json_t *v2;
			if (!json_is_object(v))
				return BAD("config.%s must be an object", k);
			json_object_foreach(v, k2, v2)
			{
				if (streq(k, "Labels") ? !json_is_string(v2) : !json_is_object(v2))
					return BAD("config.%s['%.100s'] has the wrong type", k, k2);
			}
		} else
			return BAD("config: unknown key '%.100s'", k);
	}
	return 0;
}

int store_snapshot_validate(const store_snapshot *s, sbx_err **err)
{
	if (s->parent && !store_digest_valid(s->parent))
		return BAD("parent '%s' is not a sha256 digest", s->parent);
	size_t n = 0;
	for (char **l = s->layers; l && *l; l++, n++)
		if (!store_digest_valid(*l))
			return BAD("layer '%s' is not a sha256 digest", *l);
	if (n > STORE_SNAPSHOT_MAX_LAYERS)
		return BAD("%zu layers (max %d)", n, STORE_SNAPSHOT_MAX_LAYERS);
	for (char **e = s->env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			return BAD("env entry '%s' is not KEY=value", *e);
	if (!s->cwd || s->cwd[0] != '/')
		return BAD("cwd must be an absolute path");
	if (!s->user || !*s->user)
		return BAD("user is missing");
	for (char **l = s->labels; l && *l; l++) {
		if (!store_label_valid(*l))
			return BAD("label '%s' is not a valid name", *l);
		for (char **m = s->labels; m < l; m++)
			if (streq(*m, *l))
				return BAD("label '%s' appears twice", *l);
	}
	for (char **b = s->base_identity; b && *b; b++)
		if (!strchr(*b, '=') || **b == '=')
			return BAD("base_identity entry '%s' is not key=value", *b);
	if (!s->created_at || !rfc3339_utc(s->created_at))
		return BAD("created_at must be an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)");
	if (s->size_bytes > INT64_MAX)
		return BAD("size_bytes out of range");
	if (s->config && config_check(s->config, err) < 0)
		return -EINVAL;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *strv_json(char **v, bool sorted)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	_cleanup_free_ char **copy = calloc(n + 1, sizeof(char *));
	if (!copy)
		return NULL;
	memcpy(copy, v ? v : copy, n * sizeof(char *));
	if (sorted)
		qsort(copy, n, sizeof(char *), cmp_str);
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *x = json_string(copy[i]);
		if (!x || json_array_append_new(a, x) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* The manifest as JSON, without snapshot_id. */
static json_t *to_json(const store_snapshot *s)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int r = 0;
	r |= json_object_set_new(o, "schema", json_integer(STORE_SNAPSHOT_SCHEMA));
	r |= json_object_set_new(o, "parent", str_or_null(s->parent));
	r |= json_object_set_new(o, "layers", strv_json(s->layers, false));
	r |= json_object_set_new(o, "base_template", str_or_null(s->base_template));
	r |= json_object_set_new(o, "env", strv_json(s->env, false));
	r |= json_object_set_new(o, "cwd", json_string(s->cwd));
	r |= json_object_set_new(o, "user", json_string(s->user));
	r |= json_object_set_new(o, "os_release", str_or_null(s->os_release));
	if (s->packages)
		r |= json_object_set_new(o, "packages", strv_json(s->packages, false));
	if (s->base_identity)
		r |= json_object_set_new(o, "base_identity", strv_json(s->base_identity, false));
	r |= json_object_set_new(o, "labels", strv_json(s->labels, true));
	r |= json_object_set_new(o, "created_at", json_string(s->created_at));
	r |= json_object_set_new(o, "size_bytes", json_integer((json_int_t)s->size_bytes));
	if (s->config) {
		json_t *c = json_loads(s->config, 0, NULL);
		r |= c ? json_object_set_new(o, "config", c) : -1;
	}
	if (r) {
		json_decref(o);
		return NULL;
	}
	return o;
}

#define CANONICAL (JSON_COMPACT | JSON_SORT_KEYS)

static int id_of(json_t *o, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_free_ char *c = json_dumps(o, CANONICAL);
	if (!c)
		return err_errnum(err, ENOMEM, "snapshot manifest");
	return store_digest_buf(c, strlen(c), ret, err);
}

int store_snapshot_encode(const store_snapshot *s, char **ret_json, char ret_id[STORE_DIGEST_SIZE],
			  sbx_err **err)
{
	int r = store_snapshot_validate(s, err);
	if (r < 0)
		return r;
	_cleanup_json_ json_t *o = to_json(s);
	if (!o)
		return BAD("a string is not valid UTF-8 (or out of memory)");
	char id[STORE_DIGEST_SIZE];
	r = id_of(o, id, err);
	if (r < 0)
		return r;
	if (json_object_set_new(o, "snapshot_id", json_string(id)) < 0)
		return err_errnum(err, ENOMEM, "snapshot manifest");
	char *c = json_dumps(o, CANONICAL);
	if (!c)
		return err_errnum(err, ENOMEM, "snapshot manifest");
	*ret_json = c;
	if (ret_id)
		memcpy(ret_id, id, STORE_DIGEST_SIZE);
	return 0;
}

/* Strings of a JSON array into a strv; -1 if not an array of strings. */
static int get_strv(json_t *o, const char *key, bool optional, char ***ret)
{
	json_t *a = json_object_get(o, key);
	if (!a && optional) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_array(a))
		return -1;
	char **v = json_to_strv(a);
	if (!v)
		return -1;
	*ret = v;
	return 0;
}

static int get_str(json_t *o, const char *key, bool nullable, char **ret)
{
	json_t *x = json_object_get(o, key);
	if (nullable && json_is_null(x)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(x))
		return -1;
	*ret = strdup(json_string_value(x));
	return *ret ? 0 : -1;
}

int store_snapshot_decode(const char *json, size_t len, store_snapshot **ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return BAD("not JSON: %s (line %d)", je.text, je.line);
	if (!json_is_object(o))
		return BAD("not a JSON object");
	static const char *const known[] = {"schema",	     "snapshot_id",   "parent", "layers",
					    "base_template", "env",	      "cwd",	"user",
					    "os_release",    "packages",      "labels", "created_at",
					    "size_bytes",    "base_identity", "config"};
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool ok = false;
		for (size_t i = 0; i < ARRAY_SIZE(known) && !ok; i++)
			ok = streq(k, known[i]);
		if (!ok)
			return BAD("unknown key '%s'", k);
	}
	json_t *schema = json_object_get(o, "schema");
	if (!json_is_integer(schema) || json_integer_value(schema) != STORE_SNAPSHOT_SCHEMA)
		return BAD("schema must be %d", STORE_SNAPSHOT_SCHEMA);
	const char *idv = json_str(o, "snapshot_id");
	if (!store_digest_valid(idv))
		return BAD("snapshot_id is missing or not a sha256 digest");
	char id[STORE_DIGEST_SIZE];
	memcpy(id, idv, STORE_DIGEST_SIZE); /* idv dies with the key below */
	_cleanup_snapshot_ store_snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return err_errnum(err, ENOMEM, "snapshot manifest");
	if (get_str(o, "parent", true, &s->parent) < 0)
		return BAD("parent must be a string or null");
	if (get_strv(o, "layers", false, &s->layers) < 0)
		return BAD("layers must be an array of strings");
	if (get_str(o, "base_template", true, &s->base_template) < 0)
		return BAD("base_template must be a string or null");
	if (get_strv(o, "env", false, &s->env) < 0)
		return BAD("env must be an array of strings");
	if (get_str(o, "cwd", false, &s->cwd) < 0)
		return BAD("cwd must be a string");
	if (get_str(o, "user", false, &s->user) < 0)
		return BAD("user must be a string");
	if (get_str(o, "os_release", true, &s->os_release) < 0)
		return BAD("os_release must be a string or null");
	if (get_strv(o, "packages", true, &s->packages) < 0)
		return BAD("packages must be an array of strings");
	if (get_strv(o, "base_identity", true, &s->base_identity) < 0)
		return BAD("base_identity must be an array of strings");
	if (get_strv(o, "labels", false, &s->labels) < 0)
		return BAD("labels must be an array of strings");
	if (get_str(o, "created_at", false, &s->created_at) < 0)
		return BAD("created_at must be a string");
	json_t *size = json_object_get(o, "size_bytes");
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return BAD("size_bytes must be a non-negative integer");
	s->size_bytes = (uint64_t)json_integer_value(size);
	json_t *cfg = json_object_get(o, "config");
	if (cfg && !(s->config = json_dumps(cfg, CANONICAL)))
		return err_errnum(err, ENOMEM, "snapshot manifest");
	int r = store_snapshot_validate(s, err);
	if (r < 0)
		return r;
	json_object_del(o, "snapshot_id");
	char got[STORE_DIGEST_SIZE];
	r = id_of(o, got, err);
	if (r < 0)
		return r;
	if (!streq(got, id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "snapshot manifest: snapshot_id %s does not match its content (%s)", id, got);
	memcpy(s->snapshot_id, id, STORE_DIGEST_SIZE);
	*ret = TAKE_PTR(s);
	return 0;
}

static char *snapshot_path(const char *store_root, const char *digest)
{
	const char *hex = store_digest_hex(digest);
	char *p = NULL;
	if (!hex || asprintf(&p, "%s/" STORE_DIR_SNAPSHOTS "/%s.json", store_root, hex) < 0)
		return NULL;
	return p;
}

int store_snapshot_write(const char *store_root, const store_snapshot *s, char ret_id[STORE_DIGEST_SIZE],
			 sbx_err **err)
{
	_cleanup_free_ char *json = NULL;
	char id[STORE_DIGEST_SIZE];
	int r = store_snapshot_encode(s, &json, id, err);
	if (r < 0)
		return r;
	r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_SNAPSHOTS);
	_cleanup_free_ char *name = NULL;
	if (!dir || asprintf(&name, "%s.json", store_digest_hex(id)) < 0)
		return err_errnum(err, ENOMEM, "snapshot");
	size_t n = strlen(json);
	_cleanup_free_ char *data = malloc(n + 2);
	if (!data)
		return err_errnum(err, ENOMEM, "snapshot");
	memcpy(data, json, n);
	data[n] = '\n';
	r = store_fs_write_atomic(dir, name, data, n + 1, 0644, err);
	if (r < 0)
		return err_wrap(err, "write snapshot %s", id);
	if (ret_id)
		memcpy(ret_id, id, STORE_DIGEST_SIZE);
	return 0;
}

int store_snapshot_read(const char *store_root, const char *digest, store_snapshot **ret, sbx_err **err)
{
	_cleanup_free_ char *p = snapshot_path(store_root, digest);
	if (!p)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid snapshot digest '%s'",
			       digest ? digest : "");
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r = fs_read_file(p, STORE_SNAPSHOT_MAX_BYTES, &data, &len);
	if (r == -ENOENT)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "snapshot %s is missing", digest);
	if (r < 0)
		return err_errnum(err, r, "snapshot %s: read '%s'", digest, p);
	store_snapshot *s = NULL;
	r = store_snapshot_decode(data, len, &s, err);
	if (r < 0) {
		if (err && *err)
			(*err)->errnum = EBADMSG;
		return err_wrap(err, "snapshot %s is corrupt", digest);
	}
	if (!streq(s->snapshot_id, digest)) {
		r = err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "snapshot %s is corrupt: the file holds %s",
			    digest, s->snapshot_id);
		store_snapshot_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

static char *keep_snapshot(const char *name)
{
	size_t n = strlen(name);
	char hex[STORE_DIGEST_HEX_LEN + 1];
	if (n != STORE_DIGEST_HEX_LEN + 5 || !streq(name + STORE_DIGEST_HEX_LEN, ".json"))
		return NULL;
	memcpy(hex, name, STORE_DIGEST_HEX_LEN);
	hex[STORE_DIGEST_HEX_LEN] = 0;
	char *r = NULL;
	if (!store_digest_hex_valid(hex) || asprintf(&r, STORE_DIGEST_PREFIX "%s", hex) < 0)
		return NULL;
	return r;
}

int store_snapshot_list(const char *store_root, char ***ret, sbx_err **err)
{
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_SNAPSHOTS);
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	return store_fs_list_dir(dir, keep_snapshot, ret, err);
}

int store_snapshot_delete(const char *store_root, const char *digest, sbx_err **err)
{
	if (!store_digest_valid(digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid snapshot digest '%s'",
			       digest ? digest : "");
	_cleanup_free_ char *p = snapshot_path(store_root, digest);
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_SNAPSHOTS);
	if (!p || !dir)
		return err_errnum(err, ENOMEM, "store");
	if (unlink(p) < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "no snapshot %s", digest)
				       : err_errno(err, "remove snapshot %s", digest);
	return store_fs_fsync_dir(dir, err);
}

static char *keep_label(const char *name)
{
	return store_label_valid(name) ? strdup(name) : NULL;
}

int store_ref_list(const char *store_root, char ***ret, sbx_err **err)
{
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_LABELS);
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	return store_fs_list_dir(dir, keep_label, ret, err);
}

int store_ref_set(const char *store_root, const char *label, const char *digest, sbx_err **err)
{
	if (!store_label_valid(label))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid label '%s' (letters, digits, '.', '_', '-'; 128 at most)",
			       label ? label : "");
	if (!store_digest_valid(digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest '%s'",
			       digest ? digest : "");
	int r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_LABELS);
	char line[STORE_DIGEST_SIZE + 1];
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	snprintf(line, sizeof(line), "%s\n", digest);
	r = store_fs_write_atomic(dir, label, line, STORE_DIGEST_LEN + 1, 0644, err);
	return r < 0 ? err_wrap(err, "set label '%s'", label) : 0;
}

int store_ref_get(const char *store_root, const char *label, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	if (!store_label_valid(label))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid label '%s'", label ? label : "");
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_LABELS);
	_cleanup_free_ char *p = dir ? fs_path_join(dir, label) : NULL;
	if (!p)
		return err_errnum(err, ENOMEM, "store");
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int r = fs_read_file(p, 256, &data, &len);
	if (r == -ENOENT)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no label '%s'", label);
	if (r < 0)
		return err_errnum(err, r, "label '%s'", label);
	if (len && data[len - 1] == '\n')
		data[--len] = 0;
	if (!store_digest_valid(data))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "label '%s' is corrupt", label);
	memcpy(ret, data, STORE_DIGEST_SIZE);
	return 0;
}

int store_ref_delete(const char *store_root, const char *label, sbx_err **err)
{
	if (!store_label_valid(label))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid label '%s'", label ? label : "");
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_LABELS);
	_cleanup_free_ char *p = dir ? fs_path_join(dir, label) : NULL;
	if (!p)
		return err_errnum(err, ENOMEM, "store");
	if (unlink(p) < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "no label '%s'", label)
				       : err_errno(err, "remove label '%s'", label);
	return store_fs_fsync_dir(dir, err);
}
