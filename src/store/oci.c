#include "store/oci.h"
#include "store/progress.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "store/storefs.h"
#include "store/tarr.h"
#include "runtime/user.h"
#include "util/fs.h"
#include "util/json.h"

#define BAD(what, ...) err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, what ": " __VA_ARGS__)

/* ---- pure: parsing ------------------------------------------------------ */

static void desc_clear(oci_descriptor *d)
{
	free(d->media_type);
	free(d->ref_name);
	free(d->arch);
	free(d->os);
	free(d->variant);
	memset(d, 0, sizeof(*d));
}

void oci_index_free(oci_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n; i++)
		desc_clear(&ix->manifests[i]);
	free(ix->manifests);
	free(ix);
}

void oci_manifest_free(oci_manifest *m)
{
	if (!m)
		return;
	desc_clear(&m->config);
	for (size_t i = 0; i < m->n_layers; i++)
		desc_clear(&m->layers[i]);
	free(m->layers);
	free(m->comp);
	free(m);
}

void oci_config_free(oci_config *c)
{
	if (!c)
		return;
	free(c->arch);
	free(c->os);
	strv_free(c->env);
	free(c->cwd);
	free(c->image);
	free(c->user);
	strv_free(c->diff_ids);
	free(c);
}

static json_t *load(const char *json, size_t len, const char *what, sbx_err **err)
{
	if (len > OCI_MAX_JSON) {
		err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "%s: %zu bytes (max %u)", what, len, OCI_MAX_JSON);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "%s: invalid JSON: %s (line %d)", what, je.text,
			je.line);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "%s: not a JSON object", what);
		return NULL;
	}
	return j;
}

static bool opt_str(const json_t *o, const char *k, char **ret)
{
	json_t *v = json_object_get(o, k);
	*ret = NULL;
	if (!v || json_is_null(v))
		return true;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return false;
	*ret = strdup(json_string_value(v));
	return *ret != NULL;
}

static int desc_parse(const json_t *j, oci_descriptor *d, const char *what, sbx_err **err)
{
	memset(d, 0, sizeof(*d));
	if (!json_is_object(j))
		return BAD("%s", "descriptor is not an object", what);
	const char *dg = json_str(j, "digest");
	if (!dg)
		return BAD("%s", "descriptor without a digest", what);
	if (!store_digest_valid(dg)) {
		/* Never build a path from anything but 64 lowercase hex digits. */
		char shown[80];
		snprintf(shown, sizeof(shown), "%.72s", dg);
		for (char *p = shown; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
				*p = '?';
		return BAD("%s", "digest '%s' is not sha256:<64 lowercase hex> (only sha256 is supported)",
			   what, shown);
	}
	memcpy(d->digest, dg, STORE_DIGEST_SIZE);
	json_t *sz = json_object_get(j, "size");
	if (!json_is_integer(sz) || json_integer_value(sz) < 0)
		return BAD("%s", "descriptor %s: size must be a non-negative integer", what, dg);
	d->size = json_integer_value(sz);
	if (!opt_str(j, "mediaType", &d->media_type))
		return BAD("%s", "descriptor %s: mediaType must be a string", what, dg);
	json_t *ann = json_object_get(j, "annotations");
	if (ann && !json_is_null(ann)) {
		if (!json_is_object(ann))
			return BAD("%s", "descriptor %s: annotations must be an object", what, dg);
		if (!opt_str(ann, OCI_REF_NAME, &d->ref_name))
			return BAD("%s", "descriptor %s: ref.name annotation must be a string", what, dg);
	}
	json_t *pl = json_object_get(j, "platform");
	if (pl && !json_is_null(pl)) {
		if (!json_is_object(pl) || !opt_str(pl, "architecture", &d->arch) ||
		    !opt_str(pl, "os", &d->os) || !opt_str(pl, "variant", &d->variant))
			return BAD("%s", "descriptor %s: invalid platform", what, dg);
	}
	return 0;
}

static int check_schema(const json_t *j, const char *what, sbx_err **err)
{
	json_t *sv = json_object_get(j, "schemaVersion");
	if (!json_is_integer(sv) || json_integer_value(sv) != 2)
		return BAD("%s", "schemaVersion must be 2", what);
	return 0;
}

bool oci_media_is_index(const char *mt)
{
	return mt && (streq(mt, OCI_MT_INDEX) || streq(mt, DOCKER_MT_LIST));
}

bool oci_media_is_manifest(const char *mt)
{
	return mt && (streq(mt, OCI_MT_MANIFEST) || streq(mt, DOCKER_MT_MANIFEST));
}

int oci_layer_compression(const char *mt, oci_compression *ret, sbx_err **err)
{
	static const struct {
		const char *mt;
		oci_compression c;
	} known[] = {
	    {OCI_MT_LAYER, OCI_COMP_NONE},
	    {OCI_MT_LAYER_GZIP, OCI_COMP_GZIP},
	    {OCI_MT_LAYER_ZSTD, OCI_COMP_ZSTD},
	    {"application/vnd.oci.image.layer.nondistributable.v1.tar", OCI_COMP_NONE},
	    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", OCI_COMP_GZIP},
	    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", OCI_COMP_ZSTD},
	    {"application/vnd.docker.image.rootfs.diff.tar", OCI_COMP_NONE},
	    {"application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_COMP_GZIP},
	    {"application/vnd.docker.image.rootfs.diff.tar.zstd", OCI_COMP_ZSTD},
	    {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", OCI_COMP_GZIP},
	};
	for (size_t i = 0; mt && i < ARRAY_SIZE(known); i++)
		if (streq(mt, known[i].mt)) {
			*ret = known[i].c;
			return 0;
		}
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unsupported layer media type '%.100s'",
		       mt ? mt : "(none)");
}

int oci_index_parse(const char *json, size_t len, oci_index **ret, sbx_err **err)
{
	_cleanup_json_ json_t *j = load(json, len, "image index", err);
	if (!j)
		return -EINVAL;
	int r = check_schema(j, "image index", err);
	if (r < 0)
		return r;
	const char *mt = json_str(j, "mediaType");
	if (mt && !oci_media_is_index(mt))
		return BAD("image index", "mediaType '%.100s' is not an image index", mt);
	json_t *ms = json_object_get(j, "manifests");
	if (!json_is_array(ms))
		return BAD("image index", "manifests must be an array");
	size_t n = json_array_size(ms);
	if (n > OCI_MAX_INDEX_ENTRIES)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "image index: %zu manifests (max %d)", n,
			       OCI_MAX_INDEX_ENTRIES);
	_cleanup_(oci_index_freep) oci_index *ix = calloc(1, sizeof(*ix));
	if (!ix || !(ix->manifests = calloc(n + 1, sizeof(oci_descriptor))))
		return err_errnum(err, ENOMEM, "image index");
	for (size_t i = 0; i < n; i++) {
		ix->n = i + 1;
		r = desc_parse(json_array_get(ms, i), &ix->manifests[i], "image index", err);
		if (r < 0)
			return r;
	}
	ix->n = n;
	*ret = TAKE_PTR(ix);
	return 0;
}

static bool platform_ok(const oci_descriptor *d, const char *arch)
{
	return d->os && streq(d->os, "linux") && d->arch && streq(d->arch, arch);
}

int oci_index_select(const oci_index *ix, const char *tag, const char *arch, const oci_descriptor **ret,
		     sbx_err **err)
{
	const oci_descriptor *first = NULL, *plat = NULL, *latest = NULL;
	size_t n = 0;
	for (size_t i = 0; i < ix->n; i++) {
		const oci_descriptor *d = &ix->manifests[i];
		if (tag && !(d->ref_name && streq(d->ref_name, tag)))
			continue;
		n++;
		if (!first)
			first = d;
		if (!plat && arch && platform_ok(d, arch))
			plat = d;
		if (!latest && d->ref_name && streq(d->ref_name, "latest"))
			latest = d;
	}
	if (n == 0) {
		if (tag)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "image index has no image tagged '%s'",
				       tag);
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "image index lists no image");
	}
	if (n == 1) {
		*ret = first;
		return 0;
	}
	if (plat) {
		*ret = plat;
		return 0;
	}
	if (!tag && latest) {
		*ret = latest;
		return 0;
	}
	bool any_platform = false;
	for (size_t i = 0; i < ix->n; i++)
		any_platform |= ix->manifests[i].arch != NULL;
	if (any_platform)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "image index has no image for linux/%s",
			       arch ? arch : "?");
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "image index lists %zu images: name one with oci:DIR:TAG", n);
}

int oci_manifest_parse(const char *json, size_t len, oci_manifest **ret, sbx_err **err)
{
	_cleanup_json_ json_t *j = load(json, len, "image manifest", err);
	if (!j)
		return -EINVAL;
	int r = check_schema(j, "image manifest", err);
	if (r < 0)
		return r;
	const char *mt = json_str(j, "mediaType");
	if (mt && !oci_media_is_manifest(mt))
		return BAD("image manifest", "mediaType '%.100s' is not an image manifest", mt);
	_cleanup_(oci_manifest_freep) oci_manifest *m = calloc(1, sizeof(*m));
	if (!m)
		return err_errnum(err, ENOMEM, "image manifest");
	r = desc_parse(json_object_get(j, "config"), &m->config, "image manifest: config", err);
	if (r < 0)
		return r;
	if (m->config.media_type && !streq(m->config.media_type, OCI_MT_CONFIG) &&
	    !streq(m->config.media_type, DOCKER_MT_CONFIG))
		return BAD("image manifest", "config media type '%.100s' is not an image config",
			   m->config.media_type);
	json_t *ls = json_object_get(j, "layers");
	if (!json_is_array(ls))
		return BAD("image manifest", "layers must be an array");
	size_t n = json_array_size(ls);
	if (n > OCI_MAX_LAYERS)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "image manifest: %zu layers (max %d)", n,
			       OCI_MAX_LAYERS);
	if (!(m->layers = calloc(n + 1, sizeof(oci_descriptor))) ||
	    !(m->comp = calloc(n + 1, sizeof(oci_compression))))
		return err_errnum(err, ENOMEM, "image manifest");
	for (size_t i = 0; i < n; i++) {
		m->n_layers = i + 1;
		r = desc_parse(json_array_get(ls, i), &m->layers[i], "image manifest: layer", err);
		if (r < 0)
			return r;
		r = oci_layer_compression(m->layers[i].media_type, &m->comp[i], err);
		if (r < 0)
			return err_wrap(err, "image manifest: layer %s", m->layers[i].digest);
	}
	m->n_layers = n;
	*ret = TAKE_PTR(m);
	return 0;
}

static int strv_from(const json_t *a, char ***ret)
{
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_array_get(a, i);
		if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s) ||
		    !(v[i] = strdup(json_string_value(s)))) {
			strv_free(v);
			return -EINVAL;
		}
	}
	*ret = v;
	return 0;
}

int oci_config_parse(const char *json, size_t len, oci_config **ret, sbx_err **err)
{
	_cleanup_json_ json_t *j = load(json, len, "image config", err);
	if (!j)
		return -EINVAL;
	_cleanup_(oci_config_freep) oci_config *c = calloc(1, sizeof(*c));
	if (!c)
		return err_errnum(err, ENOMEM, "image config");
	if (!opt_str(j, "architecture", &c->arch) || !opt_str(j, "os", &c->os))
		return BAD("image config", "architecture and os must be strings");
	if (c->os && !streq(c->os, "linux"))
		return BAD("image config", "os '%.50s' is not linux", c->os);
	json_t *rootfs = json_object_get(j, "rootfs");
	if (!json_is_object(rootfs) || !json_str(rootfs, "type") ||
	    !streq(json_str(rootfs, "type"), "layers"))
		return BAD("image config", "rootfs.type must be \"layers\"");
	json_t *ids = json_object_get(rootfs, "diff_ids");
	if (!json_is_array(ids) || strv_from(ids, &c->diff_ids) < 0)
		return BAD("image config", "rootfs.diff_ids must be an array of strings");
	c->n_diff_ids = json_array_size(ids);
	if (c->n_diff_ids > OCI_MAX_LAYERS)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "image config: %zu diff_ids (max %d)",
			       c->n_diff_ids, OCI_MAX_LAYERS);
	for (size_t i = 0; i < c->n_diff_ids; i++)
		if (!store_digest_valid(c->diff_ids[i]))
			return BAD("image config", "diff_id '%.80s' is not a sha256 digest", c->diff_ids[i]);
	json_t *cfg = json_object_get(j, "config");
	json_t *env = NULL;
	if (cfg && !json_is_null(cfg)) {
		if (!json_is_object(cfg))
			return BAD("image config", "config must be an object");
		env = json_object_get(cfg, "Env");
		if (!opt_str(cfg, "WorkingDir", &c->cwd) || !opt_str(cfg, "User", &c->user))
			return BAD("image config", "WorkingDir and User must be strings");
		if (c->cwd && c->cwd[0] && c->cwd[0] != '/')
			return BAD("image config", "WorkingDir '%.100s' is not absolute", c->cwd);
		/* A User no create can honour is refused here: ignored later, it
		 * would run the image as root (uid 4294967295 is "no change"). */
		user_spec us;
		if (c->user && c->user[0] && user_spec_parse(c->user, &us, err) < 0)
			return err_wrap(err, "image config: User");
		/* What a run applies beyond Env and User (build/image_config.h). */
		static const char *const keep[] = {"Cmd", "Entrypoint", "WorkingDir", "ExposedPorts",
						   "Labels"};
		_cleanup_json_ json_t *img = json_object();
		for (size_t i = 0; img && i < ARRAY_SIZE(keep); i++) {
			json_t *v = json_object_get(cfg, keep[i]);
			if (v && !json_is_null(v))
				json_object_set(img, keep[i], v);
		}
		if (!img ||
		    (json_object_size(img) && !(c->image = json_dumps(img, JSON_COMPACT | JSON_SORT_KEYS))))
			return err_errnum(err, ENOMEM, "image config");
	}
	if (env && !json_is_null(env)) {
		if (!json_is_array(env) || strv_from(env, &c->env) < 0)
			return BAD("image config", "Env must be an array of strings");
		for (char **e = c->env; *e; e++)
			if (!strchr(*e, '=') || **e == '=')
				return BAD("image config", "Env entry '%.100s' is not KEY=value", *e);
	} else if (!(c->env = calloc(1, sizeof(char *))))
		return err_errnum(err, ENOMEM, "image config");
	*ret = TAKE_PTR(c);
	return 0;
}

bool oci_tag_valid(const char *tag)
{
	size_t n = tag ? strlen(tag) : 0;
	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = tag[i];
		bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			  ch == '_' || (i > 0 && (ch == '.' || ch == '-'));
		if (!ok)
			return false;
	}
	return true;
}

int oci_ref_parse(const char *ref, char **ret_dir, char **ret_tag, sbx_err **err)
{
	if (!ref || !startswith(ref, "oci:") || !ref[4])
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not oci:DIR[:TAG]",
			       ref ? ref : "");
	const char *s = ref + 4;
	const char *slash = strrchr(s, '/');
	const char *colon = strrchr(slash ? slash : s, ':');
	_cleanup_free_ char *dir = colon ? strndup(s, (size_t)(colon - s)) : strdup(s);
	_cleanup_free_ char *tag = colon ? strdup(colon + 1) : NULL;
	if (!dir || (colon && !tag))
		return err_errnum(err, ENOMEM, "parse '%s'", ref);
	if (!*dir)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s': empty directory", ref);
	if (tag && !oci_tag_valid(tag))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "'%s': invalid tag '%s' (letters, digits, '_', '.', '-'; at most 128)", ref,
			       tag);
	*ret_dir = TAKE_PTR(dir);
	*ret_tag = TAKE_PTR(tag);
	return 0;
}

const char *oci_arch_from_machine(const char *m)
{
	static const char *const map[][2] = {
	    {"x86_64", "amd64"},    {"aarch64", "arm64"}, {"armv7l", "arm"},
	    {"armv6l", "arm"},	    {"i686", "386"},	  {"i386", "386"},
	    {"ppc64le", "ppc64le"}, {"s390x", "s390x"},	  {"riscv64", "riscv64"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(map); i++)
		if (streq(m, map[i][0]))
			return map[i][1];
	return m;
}

const char *oci_host_arch(void)
{
	static _Thread_local char buf[65];
	struct utsname u;
	if (uname(&u) < 0)
		return "amd64";
	snprintf(buf, sizeof(buf), "%s", oci_arch_from_machine(u.machine));
	return buf;
}

/* ---- pure: building ----------------------------------------------------- */

static char *dump(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	return s;
}

char *oci_config_build(const char *arch, const char *const *env, const char *cwd, const char *const *diff_ids,
		       const char *created)
{
	return oci_config_build_image(arch, env, cwd, NULL, NULL, diff_ids, created);
}

char *oci_config_build_image(const char *arch, const char *const *env, const char *cwd, const char *user,
			     const char *image_config, const char *const *diff_ids, const char *created)
{
	json_t *hist = json_array();
	for (size_t i = 0; diff_ids && diff_ids[i]; i++)
		json_array_append_new(
		    hist, json_pack("{s:s,s:s}", "created", created, "created_by", "sbx snapshot"));
	json_t *cfg = json_pack("{s:o}", "Env", json_from_strv(env));
	if (cfg && cwd && *cwd)
		json_object_set_new(cfg, "WorkingDir", json_string(cwd));
	if (cfg && user && *user && !streq(user, "root"))
		json_object_set_new(cfg, "User", json_string(user));
	_cleanup_json_ json_t *img = image_config ? json_loads(image_config, 0, NULL) : NULL;
	if (cfg && json_is_object(img))
		json_object_update(cfg, img);
	return dump(json_pack("{s:s,s:s,s:s,s:o,s:{s:s,s:o},s:o}", "architecture", arch, "os", "linux",
			      "created", created, "config", cfg, "rootfs", "type", "layers", "diff_ids",
			      json_from_strv(diff_ids), "history", hist));
}

static json_t *desc_json(const oci_descriptor *d)
{
	json_t *j = json_pack("{s:s,s:s,s:I}", "mediaType", d->media_type, "digest", d->digest, "size",
			      (json_int_t)d->size);
	if (j && d->ref_name)
		json_object_set_new(j, "annotations", json_pack("{s:s}", OCI_REF_NAME, d->ref_name));
	return j;
}

char *oci_manifest_build(const oci_descriptor *config, const oci_descriptor *layers, size_t n,
			 const char *created)
{
	json_t *ls = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(ls, desc_json(&layers[i]));
	return dump(json_pack("{s:i,s:s,s:o,s:o,s:{s:s}}", "schemaVersion", 2, "mediaType", OCI_MT_MANIFEST,
			      "config", desc_json(config), "layers", ls, "annotations",
			      "org.opencontainers.image.created", created));
}

int oci_index_add(const char *existing, size_t len, const oci_descriptor *manifest, const char *tag,
		  char **ret, sbx_err **err)
{
	_cleanup_json_ json_t *j = NULL;
	if (existing) {
		_cleanup_(oci_index_freep) oci_index *ix = NULL;
		if (oci_index_parse(existing, len, &ix, err) < 0)
			return err_wrap(err, "existing index.json");
		j = json_loadb(existing, len, 0, NULL);
	} else
		j = json_pack("{s:i,s:s,s:[]}", "schemaVersion", 2, "mediaType", OCI_MT_INDEX, "manifests");
	if (!j)
		return err_errnum(err, ENOMEM, "index.json");
	json_t *ms = json_object_get(j, "manifests");
	for (size_t i = 0; i < json_array_size(ms);) {
		json_t *ann = json_object_get(json_array_get(ms, i), "annotations");
		const char *rn = json_str(ann, OCI_REF_NAME);
		if (rn && streq(rn, tag))
			json_array_remove(ms, i);
		else
			i++;
	}
	oci_descriptor d = *manifest;
	d.ref_name = (char *)tag;
	json_array_append_new(ms, desc_json(&d));
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (!s)
		return err_errnum(err, ENOMEM, "index.json");
	*ret = s;
	return 0;
}

/* ---- I/O: layouts and blobs -------------------------------------------- */

void oci_layout_close(oci_layout *l)
{
	l->dfd = safe_close(l->dfd);
	l->sha_fd = safe_close(l->sha_fd);
	free(l->path);
	l->path = NULL;
}

static int open_dir_at(int dfd, const char *name, bool create, const char *path, sbx_err **err)
{
	if (create && mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "create '%s/%s'", path, name);
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return err_set(err, SBX_E_INVALID_ARGUMENT, errno,
				       "'%s/%s' is not a directory (symlinks are not followed)", path, name);
		return err_errno(err, "open '%s/%s'", path, name);
	}
	return fd;
}

static int read_small_at(int dfd, const char *name, const char *path, size_t max, char **ret, size_t *ret_len,
			 sbx_err **err)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ELOOP,
				       "'%s/%s' is a symlink (not followed)", path, name);
		return err_errno(err, "open '%s/%s'", path, name);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat '%s/%s'", path, name);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s/%s' is not a regular file", path,
			       name);
	if ((uint64_t)st.st_size > max)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "'%s/%s' is %lld bytes (max %zu)", path,
			       name, (long long)st.st_size, max);
	{
		_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
		if (!buf)
			return err_errnum(err, ENOMEM, "read '%s/%s'", path, name);
		size_t got = 0;
		while (got < (size_t)st.st_size) {
			ssize_t k = RETRY_EINTR(read(fd, buf + got, (size_t)st.st_size - got));
			if (k < 0)
				return err_errno(err, "read '%s/%s'", path, name);
			if (k == 0)
				break;
			got += (size_t)k;
		}
		buf[got] = 0;
		*ret = TAKE_PTR(buf);
		if (ret_len)
			*ret_len = got;
		return 0;
	}
	return 0;
}

int oci_layout_open(const char *dir, bool create, oci_layout *ret, sbx_err **err)
{
	oci_layout l = {.dfd = -1, .sha_fd = -1};
	if (create) {
		int r = fs_mkdir_p(dir, 0755);
		if (r < 0)
			return err_errnum(err, r, "create '%s'", dir);
	}
	l.dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l.dfd < 0)
		return err_errno(err, "open image layout '%s'", dir);
	l.path = strdup(dir);
	if (!l.path) {
		oci_layout_close(&l);
		return err_errnum(err, ENOMEM, "open '%s'", dir);
	}
	if (create) {
		static const char lay[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
		_cleanup_free_ char *p = fs_path_join(dir, "oci-layout");
		int r = p ? fs_write_atomic(p, lay, strlen(lay), 0644) : -ENOMEM;
		if (r < 0) {
			oci_layout_close(&l);
			return err_errnum(err, r, "write '%s/oci-layout'", dir);
		}
	} else {
		_cleanup_free_ char *buf = NULL;
		size_t n = 0;
		if (read_small_at(l.dfd, "oci-layout", dir, 4096, &buf, &n, err) < 0) {
			oci_layout_close(&l);
			return err_wrap(err, "not an OCI image layout");
		}
		_cleanup_json_ json_t *j = json_loadb(buf, n, 0, NULL);
		const char *v = json_str(j, "imageLayoutVersion");
		if (!v || !startswith(v, "1.")) {
			oci_layout_close(&l);
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "'%s/oci-layout': imageLayoutVersion must be 1.x", dir);
		}
	}
	_cleanup_close_ int blobs = open_dir_at(l.dfd, "blobs", create, dir, err);
	if (blobs < 0) {
		oci_layout_close(&l);
		return -1;
	}
	_cleanup_free_ char *bp = fs_path_join(dir, "blobs");
	l.sha_fd = open_dir_at(blobs, "sha256", create, bp ? bp : dir, err);
	if (l.sha_fd < 0) {
		oci_layout_close(&l);
		return -1;
	}
	*ret = l;
	return 0;
}

int oci_layout_read_index(oci_layout *l, char **ret, size_t *ret_len, sbx_err **err)
{
	return read_small_at(l->dfd, "index.json", l->path, OCI_MAX_JSON, ret, ret_len, err);
}

int oci_blob_open(oci_layout *l, const oci_descriptor *d, int *ret_fd, sbx_err **err)
{
	const char *hex = store_digest_hex(d->digest);
	if (!hex)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest");
	_cleanup_close_ int fd = openat(l->sha_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "blob %s is missing from the layout",
				       d->digest);
		if (errno == ELOOP)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ELOOP,
				       "blob %s is a symlink (not followed)", d->digest);
		return err_errno(err, "open blob %s", d->digest);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat blob %s", d->digest);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "blob %s is not a regular file",
			       d->digest);
	if (st.st_size != d->size)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is %lld bytes, its descriptor says %lld", d->digest,
			       (long long)st.st_size, (long long)d->size);
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int oci_blob_read(oci_layout *l, const oci_descriptor *d, char **ret, size_t *ret_len, sbx_err **err)
{
	if (d->size > (int64_t)OCI_MAX_JSON)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "blob %s: %lld bytes (max %u for JSON)",
			       d->digest, (long long)d->size, OCI_MAX_JSON);
	_cleanup_close_ int fd = -1;
	if (oci_blob_open(l, d, &fd, err) < 0)
		return -1;
	_cleanup_free_ char *buf = malloc((size_t)d->size + 1);
	if (!buf)
		return err_errnum(err, ENOMEM, "read blob %s", d->digest);
	size_t got = 0;
	while (got < (size_t)d->size) {
		ssize_t k = RETRY_EINTR(read(fd, buf + got, (size_t)d->size - got));
		if (k < 0)
			return err_errno(err, "read blob %s", d->digest);
		if (k == 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "blob %s is truncated",
				       d->digest);
		got += (size_t)k;
	}
	buf[got] = 0;
	char dg[STORE_DIGEST_SIZE];
	if (store_digest_buf(buf, got, dg, err) < 0)
		return -1;
	if (!streq(dg, d->digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is corrupt: its content hashes to %s", d->digest, dg);
	*ret = TAKE_PTR(buf);
	*ret_len = got;
	return 0;
}

static int tmp_name(char buf[64])
{
	unsigned long long rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	snprintf(buf, 64, ".tmp-sbx-%d-%llx", (int)getpid(), rnd);
	return 0;
}

/* Commits the temp blob under its digest. */
static int blob_commit(oci_layout *l, int fd, const char *tmp, const char *digest, sbx_err **err)
{
	if (fsync(fd) < 0) {
		unlinkat(l->sha_fd, tmp, 0);
		return err_errno(err, "fsync blob");
	}
	if (renameat(l->sha_fd, tmp, l->sha_fd, store_digest_hex(digest)) < 0) {
		int e = errno;
		unlinkat(l->sha_fd, tmp, 0);
		return err_errnum(err, e, "write blob %s", digest);
	}
	return 0;
}

int oci_blob_write(oci_layout *l, const void *data, size_t len, char ret_digest[STORE_DIGEST_SIZE],
		   sbx_err **err)
{
	char tmp[64];
	if (store_digest_buf(data, len, ret_digest, err) < 0 || tmp_name(tmp) < 0)
		return err_ret(err) ?: -EIO;
	_cleanup_close_ int fd =
	    openat(l->sha_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(err, "create blob in '%s'", l->path);
	if (store_fs_write_all(fd, data, len, err) < 0) {
		unlinkat(l->sha_fd, tmp, 0);
		return -1;
	}
	return blob_commit(l, fd, tmp, ret_digest, err);
}

int oci_blob_write_layer(oci_layout *l, const char *tar_path, bool gzip, oci_descriptor *ret, sbx_err **err)
{
	_cleanup_close_ int in = open(tar_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return err_errno(err, "open layer tar '%s'", tar_path);
	return oci_blob_write_layer_fd(l, in, tar_path, gzip, ret, err);
}

int oci_blob_write_layer_fd(oci_layout *l, int in, const char *tar_path, bool gzip, oci_descriptor *ret,
			    sbx_err **err)
{
	char tmp[64];
	if (tmp_name(tmp) < 0)
		return err_errno(err, "getrandom");
	_cleanup_close_ int fd =
	    openat(l->sha_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(err, "create blob in '%s'", l->path);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h) {
		unlinkat(l->sha_fd, tmp, 0);
		return -1;
	}
	/* Per call, not static: exports run concurrently in the MCP server's threads. */
	enum { BUF = 1 << 16 };
	_cleanup_free_ uint8_t *ibuf = malloc(BUF), *obuf = malloc(BUF);
	if (!ibuf || !obuf) {
		unlinkat(l->sha_fd, tmp, 0);
		return err_oom(err);
	}
	z_stream z = {0};
	if (gzip && deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		unlinkat(l->sha_fd, tmp, 0);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "zlib: deflateInit2 failed");
	}
	int r = 0;
	uint64_t total = 0;
	for (bool eof = false; !eof && r == 0;) {
		ssize_t k = RETRY_EINTR(read(in, ibuf, BUF));
		if (k > 0)
			store_progress_add((uint64_t)k, 0);
		if (k < 0) {
			r = err_errno(err, "read '%s'", tar_path);
			break;
		}
		eof = k == 0;
		if (!gzip) {
			if (k > 0 && ((r = store_hasher_update(h, ibuf, (size_t)k, err)) < 0 ||
				      (r = store_fs_write_all(fd, ibuf, (size_t)k, err)) < 0))
				break;
			total += (uint64_t)k;
			continue;
		}
		z.next_in = ibuf;
		z.avail_in = (uInt)k;
		int zr;
		do {
			z.next_out = obuf;
			z.avail_out = BUF;
			zr = deflate(&z, eof ? Z_FINISH : Z_NO_FLUSH);
			if (zr == Z_STREAM_ERROR) {
				r = err_set(err, SBX_E_INTERNAL, EIO, "zlib: deflate failed");
				break;
			}
			size_t out = BUF - z.avail_out;
			if (out && ((r = store_hasher_update(h, obuf, out, err)) < 0 ||
				    (r = store_fs_write_all(fd, obuf, out, err)) < 0))
				break;
			total += out;
		} while (z.avail_out == 0 || (eof && zr != Z_STREAM_END));
	}
	if (gzip)
		deflateEnd(&z);
	if (r == 0)
		r = store_hasher_final(h, ret->digest, err);
	if (r < 0) {
		unlinkat(l->sha_fd, tmp, 0);
		return r;
	}
	ret->size = (int64_t)total;
	return blob_commit(l, fd, tmp, ret->digest, err);
}

int oci_layout_write_index(oci_layout *l, const char *json, sbx_err **err)
{
	_cleanup_free_ char *p = fs_path_join(l->path, "index.json");
	struct stat st;
	if (!p)
		return err_errnum(err, ENOMEM, "index.json");
	if (fstatat(l->dfd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not a regular file", p);
	int r = fs_write_atomic(p, json, strlen(json), 0644);
	return r < 0 ? err_errnum(err, r, "write '%s'", p) : 0;
}

/* ---- import of one layer ------------------------------------------------- */

typedef struct layer_reader {
	int fd;
	oci_compression comp;
	store_hasher *hc, *hu; /* compressed (blob) and uncompressed (diff_id) digests */
	uint64_t in_total, out_total, max_out;
	z_stream z;
	bool z_init, z_end;
	ZSTD_DStream *zs;
	size_t zs_last; /* last ZSTD_decompressStream result (0: at a frame end) */
	uint8_t in[1 << 16];
	size_t in_len, in_off;
	bool in_eof;
	char why[160]; /* a decompression error */
} layer_reader;

static int fill(layer_reader *lr)
{
	if (lr->in_off < lr->in_len || lr->in_eof)
		return 0;
	ssize_t k = RETRY_EINTR(read(lr->fd, lr->in, sizeof(lr->in)));
	if (k > 0)
		store_progress_add((uint64_t)k, 0);
	if (k < 0)
		return -errno;
	lr->in_off = 0;
	lr->in_len = (size_t)k;
	lr->in_eof = k == 0;
	lr->in_total += (uint64_t)k;
	if (k > 0 && store_hasher_update(lr->hc, lr->in, (size_t)k, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static ssize_t decompress(layer_reader *lr, uint8_t *buf, size_t len)
{
	for (;;) {
		int r = fill(lr);
		if (r < 0)
			return r;
		size_t avail = lr->in_len - lr->in_off;
		if (lr->comp == OCI_COMP_NONE) {
			size_t n = avail < len ? avail : len;
			memcpy(buf, lr->in + lr->in_off, n);
			lr->in_off += n;
			return (ssize_t)n;
		}
		if (lr->comp == OCI_COMP_GZIP) {
			if (lr->z_end) {
				if (avail == 0)
					return 0; /* clean end of the last member */
				if (inflateReset(&lr->z) != Z_OK)
					return -EIO;
				lr->z_end = false;
			}
			if (avail == 0) {
				snprintf(lr->why, sizeof(lr->why), "gzip stream is truncated");
				return -EBADMSG;
			}
			lr->z.next_in = lr->in + lr->in_off;
			lr->z.avail_in = (uInt)avail;
			lr->z.next_out = buf;
			lr->z.avail_out = (uInt)(len > (1u << 30) ? (1u << 30) : len);
			uInt before_out = lr->z.avail_out;
			int zr = inflate(&lr->z, Z_NO_FLUSH);
			lr->in_off = lr->in_len - lr->z.avail_in;
			if (zr == Z_STREAM_END)
				lr->z_end = true;
			else if (zr != Z_OK && zr != Z_BUF_ERROR) {
				snprintf(lr->why, sizeof(lr->why), "gzip data is corrupt: %s",
					 lr->z.msg ? lr->z.msg : "error");
				return -EBADMSG;
			}
			size_t out = before_out - lr->z.avail_out;
			if (out)
				return (ssize_t)out;
			continue;
		}
		/* zstd */
		if (avail == 0) {
			if (lr->zs_last != 0) {
				snprintf(lr->why, sizeof(lr->why), "zstd stream is truncated");
				return -EBADMSG;
			}
			return 0;
		}
		ZSTD_inBuffer ib = {lr->in + lr->in_off, avail, 0};
		ZSTD_outBuffer ob = {buf, len, 0};
		size_t zr = ZSTD_decompressStream(lr->zs, &ob, &ib);
		lr->in_off += ib.pos;
		if (ZSTD_isError(zr)) {
			snprintf(lr->why, sizeof(lr->why), "zstd data is corrupt: %s", ZSTD_getErrorName(zr));
			return -EBADMSG;
		}
		lr->zs_last = zr;
		if (ob.pos)
			return (ssize_t)ob.pos;
	}
}

static ssize_t layer_read(void *ud, void *buf, size_t len)
{
	layer_reader *lr = ud;
	ssize_t n = decompress(lr, buf, len);
	if (n <= 0)
		return n;
	lr->out_total += (uint64_t)n;
	if (lr->out_total > lr->max_out) {
		snprintf(lr->why, sizeof(lr->why),
			 "the uncompressed layer exceeds the import size limit (%llu bytes)",
			 (unsigned long long)lr->max_out);
		return -EFBIG;
	}
	if (store_hasher_update(lr->hu, buf, (size_t)n, NULL) < 0)
		return -ENOMEM;
	return n;
}

static int import_one(const char *store_root, oci_layout *l, const oci_descriptor *d, oci_compression comp,
		      const char *diff_id, oci_import_budget *budget, layer_reader *lr, const char *tree_path,
		      store_layer_info *ret, sbx_err **err)
{
	_cleanup_close_ int fd = -1;
	if (oci_blob_open(l, d, &fd, err) < 0)
		return -1;
	/* The digest first: nothing unverified is decompressed or extracted. */
	char dg[STORE_DIGEST_SIZE];
	uint64_t sz = 0;
	if (store_digest_fd(fd, dg, &sz, err) < 0)
		return err_wrap(err, "blob %s", d->digest);
	if (!streq(dg, d->digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is corrupt: its content hashes to %s", d->digest, dg);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return err_errno(err, "seek blob %s", d->digest);

	lr->fd = fd;
	lr->comp = comp;
	lr->max_out = budget->max_bytes;
	if (!(lr->hc = store_hasher_new(err)) || !(lr->hu = store_hasher_new(err)))
		return -1;
	if (comp == OCI_COMP_GZIP) {
		if (inflateInit2(&lr->z, 16 + MAX_WBITS) != Z_OK)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "zlib: inflateInit2 failed");
		lr->z_init = true;
	} else if (comp == OCI_COMP_ZSTD) {
		if (!(lr->zs = ZSTD_createDStream()))
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "zstd: out of memory");
		ZSTD_initDStream(lr->zs);
	}

	if (mkdir(tree_path, 0755) < 0)
		return err_errno(err, "create '%s'", tree_path);
	_cleanup_close_ int tree = open(tree_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0)
		return err_errno(err, "open '%s'", tree_path);
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.max_bytes = budget->max_bytes ? budget->max_bytes : 1;
	o.max_entries = budget->max_entries ? budget->max_entries : 1;
	o.whiteouts = true;
	o.keep_setid = true; /* every mode bit; safe: nosuid, idmapped mounts (docs/store.md) */
	o.devices = STORE_TAR_DEV_REFUSE;
	o.acls = true; /* ids shifted as owners are; malformed ones refused (acl.h) */
	store_layer_ids(&o.ids);
	o.chown = geteuid() == 0;
	store_tar_stats st = {0};
	int r = store_tar_extract(tree, layer_read, lr, &o, &st, err);
	if (r < 0) {
		if (lr->why[0]) {
			sbx_err_free(err ? *err : NULL);
			if (err)
				*err = NULL;
			return err_set(err, r == -EFBIG ? SBX_E_LIMIT_EXCEEDED : SBX_E_INVALID_ARGUMENT, -r,
				       "layer %s: %s", d->digest, lr->why);
		}
		return err_wrap(err, "layer %s", d->digest);
	}
	/* The rest of the stream (tar padding) counts in the diff_id. */
	uint8_t sink[4096];
	ssize_t k;
	while ((k = layer_read(lr, sink, sizeof(sink))) > 0)
		;
	if (k < 0)
		return err_set(err, k == -EFBIG ? SBX_E_LIMIT_EXCEEDED : SBX_E_INVALID_ARGUMENT, (int)-k,
			       "layer %s: %s", d->digest, lr->why[0] ? lr->why : strerror((int)-k));
	char blob_dg[STORE_DIGEST_SIZE], tar_dg[STORE_DIGEST_SIZE];
	if (store_hasher_final(lr->hc, blob_dg, err) < 0 || store_hasher_final(lr->hu, tar_dg, err) < 0)
		return -1;
	if (!streq(blob_dg, d->digest) || lr->in_total != (uint64_t)d->size)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "blob %s changed while it was read",
			       d->digest);
	if (!streq(tar_dg, diff_id))
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EBADMSG,
		    "layer %s: its uncompressed content hashes to %s, but the config's diff_id is %s",
		    d->digest, tar_dg, diff_id);
	budget->max_bytes -= lr->out_total <= budget->max_bytes ? lr->out_total : budget->max_bytes;
	budget->max_entries -= st.entries <= budget->max_entries ? st.entries : budget->max_entries;

	/* Verified: the tree becomes a layer under its canonical digest. */
	store_idmap ids;
	store_layer_ids(&ids);
	if (store_layer_put_from_dir(store_root, tree, &ids, ret, err) < 0)
		return err_wrap(err, "layer %s", d->digest);
	return 0;
}

int store_layer_put_from_oci_blob(const char *store_root, oci_layout *l, const oci_descriptor *d,
				  oci_compression comp, const char *diff_id, oci_import_budget *budget,
				  store_layer_info *ret, sbx_err **err)
{
	if (!store_digest_valid(diff_id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid diff_id");
	int r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	unsigned long long rnd = 0;
	(void)!getrandom(&rnd, sizeof(rnd), 0);
	_cleanup_free_ char *tree = NULL;
	if (asprintf(&tree, "%s/" STORE_DIR_TMP "/oci-%d-%llx", store_root, (int)getpid(), rnd) < 0)
		return err_errnum(err, ENOMEM, "import");
	layer_reader *lr = calloc(1, sizeof(*lr));
	if (!lr)
		return err_errnum(err, ENOMEM, "import");
	lr->fd = -1;
	r = import_one(store_root, l, d, comp, diff_id, budget, lr, tree, ret, err);
	if (lr->z_init)
		inflateEnd(&lr->z);
	if (lr->zs)
		ZSTD_freeDStream(lr->zs);
	store_hasher_free(lr->hc);
	store_hasher_free(lr->hu);
	free(lr);
	(void)fs_rm_rf(tree);
	return r;
}
