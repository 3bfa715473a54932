/* OCI image documents, pure (oci.h): index, manifest and config parsed and
 * built, media types, tags, layout references, architectures. */
#include "store/oci.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "runtime/user.h"
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
