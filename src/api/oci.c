/* OCI interop and templates: sbx_snapshot_export, sbx_image_import,
 * sbx_template_add, sbx_template_list, sbx_template_resolve.
 *
 * A template is a label ref "template.<name>" (refs/labels/template.<name>)
 * naming a snapshot: an imported image's snapshot (base_template NULL, the
 * image's layers) or, for `template add NAME dir:PATH|host`, a snapshot
 * without layers whose base_template is that spec. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/base.h"
#include "api/snap_base.h"
#include "build/image_config.h"
#include "runtime/mask.h"
#include "store/hostbase.h"
#include "store/layer.h"
#include "store/oci.h"
#include "store/progress.h"
#include "store/snapshot.h"
#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"

#define TEMPLATE_PREFIX "template."
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static void now_rfc3339(char buf[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int template_label(const char *name, char ret[160], sbx_err **err)
{
	if (!name || !store_label_valid(name) ||
	    strlen(name) > 128 - strlen(TEMPLATE_PREFIX)) /* not host either */
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid template name '%s': use letters, digits, '.', '_' or '-' (at most "
			       "%zu), not 'host'",
			       name ? name : "", 128 - strlen(TEMPLATE_PREFIX));
	snprintf(ret, 160, TEMPLATE_PREFIX "%s", name);
	return 0;
}

/* ---- export -------------------------------------------------------------- */

#define HOSTBASE_PREFIX "hostbase."

/* The host template's base of snapshot s as a layer, captured once per
 * base (refs/labels/hostbase.<hex of the base snapshot>: a snapshot whose
 * one layer it is, which keeps it from gc). The base is the root of s's
 * parent chain (an environment's base snapshot, whose base_identity names
 * the host directories, the mask and the package databases); it must be
 * this host's current one, or the files it named are gone. */
static int host_base_layer(sbx_ctx *ctx, const store_snapshot *s, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	char root[STORE_DIGEST_SIZE];
	snprintf(root, sizeof(root), "%s", s->snapshot_id);
	const char *parent = s->parent;
	_cleanup_snapshot_ store_snapshot *cur = NULL;
	for (int depth = 0; parent; depth++) {
		if (depth > 100000)
			return err_set(err, SBX_E_INTERNAL, ELOOP, "snapshot %s: parent chain too long",
				       s->snapshot_id);
		store_snapshot *nx = NULL;
		if (store_snapshot_read(ctx->root, parent, &nx, err) < 0)
			return err_wrap(err, "snapshot %s: its parent", s->snapshot_id);
		store_snapshot_free(cur);
		cur = nx;
		snprintf(root, sizeof(root), "%s", cur->snapshot_id);
		parent = cur->parent;
	}
	if (!cur || !cur->base_identity)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "snapshot %s: no base snapshot naming the host's files (made before sbx recorded one); "
		    "create the environment again",
		    s->snapshot_id);
	/* Captured before (while the host was that base): reused whatever the host is now. */
	char label[160], sid[STORE_DIGEST_SIZE];
	snprintf(label, sizeof(label), HOSTBASE_PREFIX "%s", store_digest_hex(root));
	_cleanup_snapshot_ store_snapshot *have = NULL;
	if (store_ref_get(ctx->root, label, sid, NULL) == 0 &&
	    store_snapshot_read(ctx->root, sid, &have, NULL) == 0 && have->layers && have->layers[0] &&
	    store_layer_exists(ctx->root, have->layers[0])) {
		snprintf(ret, STORE_DIGEST_SIZE, "%s", have->layers[0]);
		return 0;
	}
	mask_list *mask = NULL;
	if (mask_host_layer(ctx->root, ctx->run, ctx->rootless, &mask, err) < 0)
		return err_wrap(err, "host template");
	char now[STORE_DIGEST_SIZE];
	int r = snap_template_base(ctx, "host", mask, now, err);
	if (r == 0 && !streq(now, root))
		r = err_set(err, SBX_E_CONFLICT, ESTALE,
			    "snapshot %s: its base is the host as it was (%s); the host has changed since "
			    "(its package "
			    "databases, directories or mask: now %s) and that base was not captured then, so "
			    "it can no "
			    "longer be",
			    s->snapshot_id, root, now);
	char layer[STORE_DIGEST_SIZE];
	if (r == 0 && (r = hostbase_capture(ctx->root, mask, layer, err)) < 0)
		r = err_wrap(err, "snapshot %s: capture the host base", s->snapshot_id);
	mask_free(mask);
	if (r < 0)
		return -1;
	char *layers[2] = {layer, NULL};
	static char *empty[] = {NULL};
	char *labels[2] = {label, NULL};
	store_snapshot hb = {.layers = layers,
			     .env = empty,
			     .cwd = "/root",
			     .user = "root",
			     .labels = labels,
			     .created_at = "1970-01-01T00:00:00Z",
			     .parent = NULL};
	if (store_snapshot_write(ctx->root, &hb, sid, err) < 0 ||
	    store_ref_set(ctx->root, label, sid, err) < 0)
		return err_wrap(err, "record the host base");
	memcpy(ret, layer, STORE_DIGEST_SIZE);
	return 0;
}

_public_ int sbx_snapshot_export(sbx_ctx *ctx, const char *snapshot, const char *oci_dir, json_t **ret,
				 sbx_err **err)
{
	return api_oci_export(ctx, snapshot, oci_dir, NULL, NULL, ret, err);
}

int api_oci_export(sbx_ctx *ctx, const char *snapshot, const char *oci_dir, api_export_have_fn have_fn,
		   void *have_ud, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *digest = NULL, *dir = NULL, *tag = NULL;
	if (!oci_dir || !*oci_dir)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "missing destination oci:DIR[:TAG]");
	if (startswith(oci_dir, "oci:")) {
		if (oci_ref_parse(oci_dir, &dir, &tag, err) < 0)
			return -1;
	} else if (!(dir = strdup(oci_dir)))
		return err_errnum(err, ENOMEM, "export");
	if (sbx_snapshot_resolve(ctx, snapshot, &digest, err) < 0)
		return -1;
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	if (store_snapshot_read(ctx->root, digest, &snap, err) < 0)
		return -1;
	const char *base = snap->base_template;
	size_t nl = 0;
	while (snap->layers && snap->layers[nl])
		nl++;
	/* The layers to export, bottom first: a dir: template's tree becomes the bottom layer. */
	_cleanup_strv_free_ char **layers = calloc(nl + 2, sizeof(char *));
	if (!layers)
		return err_errnum(err, ENOMEM, "export");
	size_t n = 0;
	if (!base || !*base) {
		/* An imported image: its layers are the whole tree. */
	} else if (streq(base, "host")) {
		/* The host's OS tree as the environment sees it, captured once. */
		char hl[STORE_DIGEST_SIZE];
		if (host_base_layer(ctx, snap, hl, err) < 0)
			return -1;
		if (!(layers[n++] = strdup(hl)))
			return err_errnum(err, ENOMEM, "export");
	} else if (startswith(base, "dir:")) {
		_cleanup_close_ int dfd = open(base + 4, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return err_errno(err, "snapshot %s: template '%s'", digest, base);
		store_idmap ids;
		store_layer_ids(&ids);
		store_layer_info li;
		if (store_layer_put_from_dir(ctx->root, dfd, &ids, &li, err) < 0)
			return err_wrap(err, "snapshot %s: store template '%s' as a layer", digest, base);
		if (!(layers[n++] = strdup(li.digest)))
			return err_errnum(err, ENOMEM, "export");
	} else {
		/* A template name (or oci:...): an imported image whose layers the snapshot lists. */
		char d[STORE_DIGEST_SIZE], label[160];
		bool known = startswith(base, "oci:") || (template_label(base, label, NULL) == 0 &&
							  store_ref_get(ctx->root, label, d, NULL) == 0);
		if (!known && nl == 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "snapshot %s: unknown base template '%s'", digest, base);
	}
	for (size_t i = 0; i < nl; i++)
		if (!(layers[n++] = strdup(snap->layers[i])))
			return err_errnum(err, ENOMEM, "export");

	oci_layout l = {.dfd = -1, .sha_fd = -1};
	if (oci_layout_open(dir, true, &l, err) < 0)
		return err_wrap(err, "export to '%s'", dir);
	_cleanup_free_ oci_descriptor *descs = calloc(n + 1, sizeof(oci_descriptor));
	int r = descs ? 0 : err_errnum(err, ENOMEM, "export");
	uint64_t total = 0;
	/* Progress counts tar bytes compressed; each layer's size is known once
	 * its tar is regenerated. */
	store_progress_begin(ctx->progress, ctx->progress_ud, "export", 0, n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		/* A blob the caller's destination already holds (push: the registry) is not made again. */
		if (have_fn && have_fn(have_ud, layers[i], &descs[i])) {
			descs[i].media_type = OCI_MT_LAYER_GZIP;
			total += (uint64_t)descs[i].size;
			store_progress_add(0, 1);
			continue;
		}
		/* The layer's tar, regenerated from its tree (the store keeps only
		 * the tree) into an unlinked scratch file, checked against its digest. */
		_cleanup_free_ char *tmpdir = store_fs_path(ctx->root, STORE_DIR_TMP);
		_cleanup_close_ int tf = tmpdir ? open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
		if (tf < 0) {
			r = err_errno(err, "export: scratch file in '%s'", tmpdir ? tmpdir : "tmp");
			break;
		}
		if ((r = store_layer_tar_oci(ctx->root, layers[i], tf, err)) < 0)
			break;
		off_t tsz = lseek(tf, 0, SEEK_CUR);
		store_progress_total(tsz > 0 ? (uint64_t)tsz : 0, 0);
		if (lseek(tf, 0, SEEK_SET) < 0) {
			r = err_errno(err, "export: rewind");
			break;
		}
		descs[i].media_type = OCI_MT_LAYER_GZIP;
		r = oci_blob_write_layer_fd(&l, tf, layers[i], true, &descs[i], err);
		total += (uint64_t)descs[i].size;
		store_progress_add(0, 1);
	}
	store_progress_end();
	/* Config: the environment's variables (with a PATH), its working directory. */
	size_t ne = 0;
	bool has_path = false;
	for (char **e = snap->env; e && *e; e++, ne++)
		has_path |= startswith(*e, "PATH=");
	_cleanup_free_ const char **env = calloc(ne + 2, sizeof(char *));
	if (r == 0 && !env)
		r = err_errnum(err, ENOMEM, "export");
	size_t k = 0;
	if (env && !has_path)
		env[k++] = DEFAULT_PATH;
	for (size_t i = 0; env && i < ne; i++)
		env[k++] = snap->env[i];
	_cleanup_free_ char *cfg = NULL, *man = NULL, *old = NULL, *idx = NULL;
	oci_descriptor cd = {.media_type = OCI_MT_CONFIG}, md = {.media_type = OCI_MT_MANIFEST};
	/* ...its user, and the image config (CMD, ENTRYPOINT, WORKDIR, EXPOSE, LABEL) it carries. */
	if (r == 0 &&
	    !(cfg = oci_config_build_image(oci_host_arch(), env, snap->cwd, snap->user, snap->config,
					   (const char *const *)layers, snap->created_at)))
		r = err_errnum(err, ENOMEM, "export");
	if (r == 0 && (r = oci_blob_write(&l, cfg, strlen(cfg), cd.digest, err)) == 0) {
		cd.size = (int64_t)strlen(cfg);
		if (!(man = oci_manifest_build(&cd, descs, n, snap->created_at)))
			r = err_errnum(err, ENOMEM, "export");
	}
	if (r == 0 && (r = oci_blob_write(&l, man, strlen(man), md.digest, err)) == 0) {
		md.size = (int64_t)strlen(man);
		size_t ol = 0;
		struct stat st;
		bool have = fstatat(l.dfd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (have && (r = oci_layout_read_index(&l, &old, &ol, err)) < 0)
			r = err_wrap(err, "existing index.json");
		if (r == 0)
			r = oci_index_add(old, ol, &md, tag ? tag : "latest", &idx, err);
		if (r == 0)
			r = oci_layout_write_index(&l, idx, err);
	}
	oci_layout_close(&l);
	if (r < 0)
		return err_wrap(err, "export %s to '%s'", digest, dir);
	json_t *ls = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(ls, json_pack("{s:s,s:s,s:I,s:s}", "diff_id", layers[i], "digest",
						    descs[i].digest, "size", (json_int_t)descs[i].size,
						    "mediaType", descs[i].media_type));
	*ret = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:I}", "snapshot_id", digest, "oci_dir", dir, "tag",
			 tag ? tag : "latest", "manifest_digest", md.digest, "config_digest", cd.digest,
			 "layers", ls, "size_bytes", (json_int_t)(total + cd.size + md.size));
	return *ret ? 0 : err_errnum(err, ENOMEM, "export");
}

/* ---- import -------------------------------------------------------------- */

/* index.json -> (nested indexes) -> the image manifest. */
static int find_manifest(oci_layout *l, const char *tag, oci_manifest **ret,
			 char ret_digest[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (oci_layout_read_index(l, &buf, &len, err) < 0)
		return -1;
	const char *arch = oci_host_arch();
	_cleanup_(oci_index_freep) oci_index *ix = NULL;
	if (oci_index_parse(buf, len, &ix, err) < 0)
		return err_wrap(err, "index.json");
	const oci_descriptor *d = NULL;
	if (oci_index_select(ix, tag, arch, &d, err) < 0)
		return err_wrap(err, "index.json");
	for (int depth = 0;; depth++) {
		oci_descriptor cur = *d; /* shallow: strings stay owned by ix */
		free(buf);
		buf = NULL;
		if (oci_blob_read(l, &cur, &buf, &len, err) < 0)
			return -1;
		bool is_index = oci_media_is_index(cur.media_type);
		if (!cur.media_type) {
			_cleanup_json_ json_t *j = json_loadb(buf, len, 0, NULL);
			is_index =
			    oci_media_is_index(json_str(j, "mediaType")) || json_object_get(j, "manifests");
		}
		if (!is_index) {
			if (cur.media_type && !oci_media_is_manifest(cur.media_type))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "%s: media type '%.100s' is not an image manifest", cur.digest,
					       cur.media_type);
			if (oci_manifest_parse(buf, len, ret, err) < 0)
				return err_wrap(err, "manifest %s", cur.digest);
			memcpy(ret_digest, cur.digest, STORE_DIGEST_SIZE);
			return 0;
		}
		if (depth >= OCI_MAX_INDEX_DEPTH)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ELOOP,
				       "image indexes nested deeper than %d", OCI_MAX_INDEX_DEPTH);
		_cleanup_(oci_index_freep) oci_index *sub = NULL;
		if (oci_index_parse(buf, len, &sub, err) < 0)
			return err_wrap(err, "image index %s", cur.digest);
		const oci_descriptor *sd = NULL;
		if (oci_index_select(sub, NULL, arch, &sd, err) < 0)
			return err_wrap(err, "image index %s", cur.digest);
		/* Keep sub alive: swap it into ix. */
		oci_index_free(ix);
		ix = TAKE_PTR(sub);
		d = sd;
	}
}

_public_ int sbx_image_import(sbx_ctx *ctx, const char *oci_ref, const char *name, json_t **ret,
			      sbx_err **err)
{
	_cleanup_free_ char *dir = NULL, *tag = NULL, *bn = NULL;
	if (oci_ref && !startswith(oci_ref, "oci:"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not oci:DIR[:TAG]", oci_ref);
	if (oci_ref_parse(oci_ref, &dir, &tag, err) < 0)
		return -1;
	if (!name) {
		if (tag)
			name = tag;
		else {
			_cleanup_free_ char *tmp = strdup(dir);
			if (!tmp || !(bn = strdup(basename(tmp))))
				return err_errnum(err, ENOMEM, "import");
			name = bn;
		}
	}
	char label[160];
	if (template_label(name, label, err) < 0)
		return -1;

	oci_layout l = {.dfd = -1, .sha_fd = -1};
	if (oci_layout_open(dir, false, &l, err) < 0)
		return err_wrap(err, "import '%s'", oci_ref);
	_cleanup_(oci_manifest_freep) oci_manifest *m = NULL;
	_cleanup_(oci_config_freep) oci_config *cfg = NULL;
	_cleanup_free_ char *cbuf = NULL;
	_cleanup_strv_free_ char **layers = NULL;
	char mdigest[STORE_DIGEST_SIZE] = "", sid[STORE_DIGEST_SIZE];
	size_t clen = 0;
	uint64_t size = 0;
	int r = find_manifest(&l, tag, &m, mdigest, err);
	if (r == 0 && (r = oci_blob_read(&l, &m->config, &cbuf, &clen, err)) == 0 &&
	    (r = oci_config_parse(cbuf, clen, &cfg, err)) < 0)
		r = err_wrap(err, "config %s", m->config.digest);
	if (r == 0)
		r = api_oci_import_image(ctx, &l, m, cfg, label, false, sid, &layers, &size, err);
	oci_layout_close(&l);
	if (r < 0)
		return err_wrap(err, "import '%s'", oci_ref);
	*ret = json_pack("{s:s,s:s,s:s,s:o,s:o,s:s,s:I}", "snapshot_id", sid, "name", name, "ref", label,
			 "layers", json_from_strv((const char *const *)layers), "diff_ids",
			 json_from_strv((const char *const *)cfg->diff_ids), "manifest_digest", mdigest,
			 "size_bytes", (json_int_t)size);
	return *ret ? 0 : err_errnum(err, ENOMEM, "import");
}

int api_oci_import_image(sbx_ctx *ctx, oci_layout *l, const oci_manifest *m, const oci_config *cfg,
			 const char *label, bool reuse_present, char *ret_sid, char ***ret_layers,
			 uint64_t *ret_size, sbx_err **err)
{
	if (cfg->n_diff_ids != m->n_layers)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "the manifest lists %zu layers but the config %zu diff_ids", m->n_layers,
			       cfg->n_diff_ids);
	if (cfg->arch && !streq(cfg->arch, oci_host_arch()))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "the image is for linux/%.40s; this host is linux/%s", cfg->arch,
			       oci_host_arch());
	/* The image's Cmd, Entrypoint, WorkingDir, ExposedPorts, Labels: its
	 * manifest's config, applied by exec and run (build/image_config.h). */
	_cleanup_free_ char *icfg = NULL;
	_cleanup_json_ json_t *ij = cfg->image ? json_loads(cfg->image, 0, NULL) : NULL;
	if (image_config_text(ij, &icfg, err) < 0)
		return -1;
	_cleanup_strv_free_ char **layers = calloc(m->n_layers + 1, sizeof(char *));
	_cleanup_free_ bool *existed = calloc(m->n_layers + 1, sizeof(bool));
	if (!layers || !existed)
		return err_errnum(err, ENOMEM, "import");
	int r = 0;
	oci_import_budget budget = {OCI_DEFAULT_MAX_BYTES, OCI_DEFAULT_MAX_ENTRIES};
	uint64_t size = 0, blobs = 0;
	for (size_t i = 0; i < m->n_layers; i++)
		blobs += m->layers[i].size > 0 ? (uint64_t)m->layers[i].size : 0;
	store_progress_begin(ctx->progress, ctx->progress_ud, "import", blobs, 0);
	for (size_t i = 0; r == 0 && i < m->n_layers; i++) {
		store_layer_info li = {0};
		/* A layer the store has under its diff_id holds that very tar's tree
		 * (a layer's digest is its canonical tar's): nothing to extract. */
		if (reuse_present && store_layer_exists(ctx->root, cfg->diff_ids[i])) {
			snprintf(li.digest, sizeof(li.digest), "%s", cfg->diff_ids[i]);
			li.existed = true;
			store_progress_add((uint64_t)m->layers[i].size, 1);
		} else {
			r = store_layer_put_from_oci_blob(ctx->root, l, &m->layers[i], m->comp[i],
							  cfg->diff_ids[i], &budget, &li, err);
			store_progress_add(0, 1);
		}
		if (r == 0 && !(layers[i] = strdup(li.digest)))
			r = err_errnum(err, ENOMEM, "import");
		existed[i] = li.existed;
		size += li.size;
	}
	store_progress_end();
	/* A failed image leaves no layer behind that it added (a later layer's
	 * diff_id or blob did not check out): nothing of it is stored. */
	for (size_t i = 0; r < 0 && i < m->n_layers; i++)
		if (layers[i] && !existed[i])
			(void)store_layer_remove(ctx->root, layers[i], NULL);
	if (r < 0)
		return -1;

	/* The snapshot, then the ref: a template appears whole or not at all. */
	char created[32];
	now_rfc3339(created);
	static char *empty[] = {NULL};
	store_snapshot s = {.layers = layers,
			    .env = cfg->env,
			    .cwd = cfg->cwd && cfg->cwd[0] ? cfg->cwd : "/",
			    .user = cfg->user && cfg->user[0] ? cfg->user : "root",
			    .labels = empty,
			    .created_at = created,
			    .size_bytes = size,
			    .config = icfg};
	if (store_snapshot_write(ctx->root, &s, ret_sid, err) < 0 ||
	    store_ref_set(ctx->root, label, ret_sid, err) < 0)
		return -1;
	*ret_layers = TAKE_PTR(layers);
	*ret_size = size;
	return 0;
}

/* ---- templates ------------------------------------------------------------ */

_public_ int sbx_template_resolve(sbx_ctx *ctx, const char *spec, char **ret_digest, sbx_err **err)
{
	if (!spec || !*spec)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "empty template");
	if (startswith(spec, "oci:")) {
		_cleanup_json_ json_t *j = NULL;
		if (sbx_image_import(ctx, spec, NULL, &j, err) < 0)
			return -1;
		return (*ret_digest = strdup(json_str(j, "snapshot_id")))
			   ? 0
			   : err_errnum(err, ENOMEM, "template");
	}
	char label[160], d[STORE_DIGEST_SIZE];
	if (template_label(spec, label, NULL) < 0 || store_ref_get(ctx->root, label, d, NULL) < 0)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT,
			       "unknown template '%s': expected host, dir:PATH, oci:DIR[:TAG] or a template "
			       "name (sbx template ls)",
			       spec);
	return (*ret_digest = strdup(d)) ? 0 : err_errnum(err, ENOMEM, "template");
}

_public_ int sbx_template_add(sbx_ctx *ctx, const char *name, const char *source, json_t **ret, sbx_err **err)
{
	char label[160];
	if (template_label(name, label, err) < 0)
		return -1;
	if (!source || !*source)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "missing template source");
	if (startswith(source, "oci:"))
		return sbx_image_import(ctx, source, name, ret, err);
	_cleanup_free_ char *spec = NULL, *digest = NULL;
	if (streq(source, "host")) {
		spec = strdup("host");
	} else if (startswith(source, "dir:")) {
		_cleanup_free_ char *real = realpath(source + 4, NULL);
		struct stat st;
		if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_set(err, SBX_E_NOT_FOUND, real ? ENOTDIR : errno,
				       "template source '%s' is not a directory", source);
		if (streq(real, "/"))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "template 'dir:/' would expose the whole host");
		if (asprintf(&spec, "dir:%s", real) < 0)
			spec = NULL;
	} else {
		/* A snapshot (digest, prefix or label) becomes a template as is. */
		if (sbx_snapshot_resolve(ctx, source, &digest, NULL) < 0)
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "template source '%s': expected oci:DIR[:TAG], dir:PATH, host or a snapshot",
			    source);
	}
	if (!digest) {
		if (!spec)
			return err_errnum(err, ENOMEM, "template");
		char created[32], sid[STORE_DIGEST_SIZE];
		now_rfc3339(created);
		static char *empty[] = {NULL};
		store_snapshot s = {.layers = empty,
				    .base_template = spec,
				    .env = empty,
				    .cwd = "/root",
				    .user = "root",
				    .labels = empty,
				    .created_at = created};
		if (store_snapshot_write(ctx->root, &s, sid, err) < 0)
			return err_wrap(err, "template '%s'", name);
		if (!(digest = strdup(sid)))
			return err_errnum(err, ENOMEM, "template");
	}
	if (store_ref_set(ctx->root, label, digest, err) < 0)
		return err_wrap(err, "template '%s'", name);
	*ret = json_pack("{s:s,s:s,s:s,s:s}", "name", name, "snapshot_id", digest, "ref", label, "source",
			 source);
	return *ret ? 0 : err_errnum(err, ENOMEM, "template");
}

_public_ int sbx_template_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	_cleanup_strv_free_ char **refs = NULL;
	if (store_ref_list(ctx->root, &refs, err) < 0)
		return -1;
	json_t *a = json_array();
	for (char **p = refs; p && *p; p++) {
		if (!startswith(*p, TEMPLATE_PREFIX))
			continue;
		char d[STORE_DIGEST_SIZE];
		_cleanup_snapshot_ store_snapshot *s = NULL;
		if (store_ref_get(ctx->root, *p, d, NULL) < 0)
			continue;
		(void)store_snapshot_read(ctx->root, d, &s, NULL);
		json_t *e =
		    json_pack("{s:s,s:s,s:s?,s:o,s:s?,s:I}", "name", *p + strlen(TEMPLATE_PREFIX),
			      "snapshot_id", d, "base_template", s ? s->base_template : NULL, "layers",
			      s ? json_from_strv((const char *const *)s->layers) : json_array(), "created_at",
			      s ? s->created_at : NULL, "size_bytes", (json_int_t)(s ? s->size_bytes : 0));
		if (e)
			json_array_append_new(a, e);
	}
	*ret = json_pack("{s:o}", "templates", a);
	return *ret ? 0 : err_errnum(err, ENOMEM, "template list");
}

_public_ int sbx_env_image_command(sbx_ctx *ctx, const char *ref, const char *const *argv, char ***ret_argv,
				   sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	_cleanup_json_ json_t *st = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	if (env_state_read(ctx, id, &st) < 0)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "environment '%s' has no state", id);
	return image_command(json_object_get(st, "image"), argv, ret_argv, err);
}
