/* sbx_snapshot_push, sbx_snapshot_pull: snapshots through OCI registries
 * (docs/store.md "Registries"). The formats are export's and import's:
 * push exports the snapshot into a scratch OCI layout under the store's
 * tmp/ and sends its blobs and manifest; pull fetches blobs into the
 * store's partial-download layout (registry/partial, an OCI layout whose
 * blobs are only ever complete and verified) and imports from there. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "store/oci.h"
#include "store/progress.h"
#include "store/registry.h"
#include "store/snapshot.h"
#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"

#define REG_DIR "registry"
#define REG_PARTIAL "registry/partial"
#define REG_SOURCES "registry/sources"
#define REG_GZ "registry/gz"
#define REG_DEFAULT_CHUNK (64ull << 20)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* registry/sources/<hex>: "REGISTRY REPO" where the blob was last seen, for
 * a cross-repository mount on a later push to another repository. */
static void source_note(sbx_ctx *ctx, const char *digest, const reg_ref *ref)
{
	_cleanup_free_ char *dir = store_fs_path(ctx->root, REG_SOURCES);
	_cleanup_free_ char *line = NULL;
	if (!dir || fs_mkdir_p(dir, 0700) < 0 || asprintf(&line, "%s %s\n", ref->registry, ref->repo) < 0)
		return;
	_cleanup_free_ char *p = fs_path_join(dir, store_digest_hex(digest));
	if (p)
		(void)fs_write_atomic_flags(p, line, strlen(line), 0600, false);
}

/* The repository of ref's registry that holds digest, other than ref's own; NULL if none known. */
static char *source_find(sbx_ctx *ctx, const char *digest, const reg_ref *ref)
{
	_cleanup_free_ char *dir = store_fs_path(ctx->root, REG_SOURCES);
	_cleanup_free_ char *p = dir ? fs_path_join(dir, store_digest_hex(digest)) : NULL, *buf = NULL;
	size_t len = 0;
	if (!p || fs_read_file(p, 1024, &buf, &len) < 0)
		return NULL;
	char *sp = strchr(buf, ' '), *nl = strchr(buf, '\n');
	if (!sp || !nl)
		return NULL;
	*sp = *nl = 0;
	if (!streq(buf, ref->registry) || streq(sp + 1, ref->repo))
		return NULL;
	return strdup(sp + 1);
}

static uint64_t chunk_size(void)
{
	const char *e = getenv("SBX_REGISTRY_CHUNK");
	unsigned long long v = e && *e ? strtoull(e, NULL, 10) : 0;
	return v >= 1024 ? v : REG_DEFAULT_CHUNK;
}

/* registry/gz/<diff_id hex>: "sha256:<gzip blob> <size>", the gzip blob
 * export made of that layer (gzip is deterministic here: the same layer
 * always compresses to the same blob), so that a later push can ask the
 * registry for it without compressing the layer again (the host base:
 * gigabytes). */
static void gz_note(sbx_ctx *ctx, const char *diff_id, const char *digest, int64_t size)
{
	_cleanup_free_ char *dir = store_fs_path(ctx->root, REG_GZ), *line = NULL;
	if (!dir || fs_mkdir_p(dir, 0700) < 0 || !store_digest_valid(diff_id) ||
	    !store_digest_valid(digest) || asprintf(&line, "%s %lld\n", digest, (long long)size) < 0)
		return;
	_cleanup_free_ char *p = fs_path_join(dir, store_digest_hex(diff_id));
	if (p)
		(void)fs_write_atomic_flags(p, line, strlen(line), 0600, false);
}

typedef struct push_have {
	sbx_ctx *ctx;
	reg_client *c;
} push_have;

static bool push_have_blob(void *ud, const char *diff_id, oci_descriptor *d)
{
	push_have *h = ud;
	_cleanup_free_ char *dir = store_fs_path(h->ctx->root, REG_GZ);
	_cleanup_free_ char *p = dir && store_digest_valid(diff_id)
				     ? fs_path_join(dir, store_digest_hex(diff_id))
				     : NULL,
			    *buf = NULL;
	size_t len = 0;
	if (!p || fs_read_file(p, 256, &buf, &len) < 0)
		return false;
	char dg[STORE_DIGEST_SIZE];
	long long size = -1;
	if (sscanf(buf, "%71s %lld", dg, &size) != 2 || !store_digest_valid(dg) || size < 0)
		return false;
	if (reg_blob_exists(h->c, dg, size, NULL) != 1)
		return false;
	memcpy(d->digest, dg, STORE_DIGEST_SIZE);
	d->size = size;
	return true;
}

_public_ int sbx_snapshot_push(sbx_ctx *ctx, const char *snapshot, const char *refstr, bool insecure,
			       json_t **ret, sbx_err **err)
{
	double t0 = now_s();
	_cleanup_(reg_ref_clear) reg_ref ref = {0};
	if (reg_ref_parse(refstr, &ref, err) < 0)
		return -1;
	if (!ref.tag)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "push '%s': name a tag (REGISTRY/REPO:TAG), not a digest", refstr);
	/* The image as export writes it, into a scratch layout. */
	_cleanup_free_ char *tmp = store_fs_path(ctx->root, STORE_DIR_TMP), *dir = NULL;
	if (!tmp || asprintf(&dir, "%s/push-XXXXXX", tmp) < 0)
		return err_oom(err);
	if (fs_mkdir_p(tmp, 0700) < 0 || !mkdtemp(dir))
		return err_errno(err, "push: scratch directory in '%s'", tmp);
	_cleanup_reg_client_ reg_client *c = NULL;
	int r = reg_client_open(&ref, insecure, true, &c, err);
	_cleanup_json_ json_t *ej = NULL;
	push_have ph = {ctx, c};
	if (r == 0)
		r = api_oci_export(ctx, snapshot, dir, push_have_blob, &ph, &ej, err);
	size_t li;
	json_t *lv;
	json_array_foreach(json_object_get(ej, "layers"), li, lv)
	    gz_note(ctx, json_str(lv, "diff_id"), json_str(lv, "digest"), json_int(lv, "size", -1));
	oci_layout l = {.dfd = -1, .sha_fd = -1};
	_cleanup_(oci_manifest_freep) oci_manifest *m = NULL;
	_cleanup_free_ char *man = NULL;
	size_t mlen = 0;
	oci_descriptor md = {.media_type = OCI_MT_MANIFEST};
	if (r == 0)
		r = oci_layout_open(dir, false, &l, err);
	if (r == 0) {
		snprintf(md.digest, sizeof(md.digest), "%s", json_str(ej, "manifest_digest"));
		struct stat st;
		if (fstatat(l.sha_fd, store_digest_hex(md.digest), &st, AT_SYMLINK_NOFOLLOW) < 0)
			r = err_errno(err, "push: manifest %s", md.digest);
		else
			md.size = st.st_size;
	}
	if (r == 0 && (r = oci_blob_read(&l, &md, &man, &mlen, err)) == 0)
		r = oci_manifest_parse(man, mlen, &m, err);

	json_t *blobs = json_array();
	uint64_t up_bytes = 0, skip_bytes = 0, total = 0;
	int n_up = 0, n_skip = 0, n_mount = 0;
	size_t nb = m ? m->n_layers + 1 : 0;
	for (size_t i = 0; i < nb; i++)
		total += (uint64_t)(i < m->n_layers ? m->layers[i].size : m->config.size);
	store_progress_begin(ctx->progress, ctx->progress_ud, "push", total, nb);
	/* Layers first, the config last, then the manifest (a registry may check
	 * that a manifest's blobs exist). */
	for (size_t i = 0; r == 0 && i < nb; i++) {
		const oci_descriptor *d = i < m->n_layers ? &m->layers[i] : &m->config;
		const char *action = "uploaded";
		int k = reg_blob_exists(c, d->digest, d->size, err);
		_cleanup_free_ char *from = k == 0 ? source_find(ctx, d->digest, &ref) : NULL;
		if (k == 0 && from && (k = reg_blob_mount(c, d->digest, from, err)) == 1)
			action = "mounted", n_mount++;
		else if (k == 1)
			action = "skipped";
		if (k == 1) {
			skip_bytes += (uint64_t)d->size;
			n_skip += streq(action, "skipped");
			store_progress_add((uint64_t)d->size, 1);
		} else if (k == 0) {
			_cleanup_close_ int fd = -1;
			if ((k = oci_blob_open(&l, d, &fd, err)) == 0 &&
			    (k = reg_blob_upload(c, fd, d->size, d->digest, chunk_size(), err)) == 0) {
				up_bytes += (uint64_t)d->size;
				n_up++;
				store_progress_add(0, 1);
			}
		}
		if (k < 0) {
			r = err_wrap(err, "blob %s", d->digest);
			break;
		}
		source_note(ctx, d->digest, &ref);
		json_array_append_new(blobs, json_pack("{s:s,s:I,s:s}", "digest", d->digest, "size",
						       (json_int_t)d->size, "action", action));
	}
	store_progress_end();
	if (r == 0)
		r = reg_manifest_put(c, ref.tag, OCI_MT_MANIFEST, man, mlen, err);
	oci_layout_close(&l);
	(void)fs_rm_rf(dir);
	if (r < 0) {
		json_decref(blobs);
		return err_wrap(err, "push %s to %s", snapshot, refstr);
	}
	double secs = now_s() - t0;
	*ret = json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:I,s:i,s:i,s:i,s:f}", "snapshot_id",
			 json_str(ej, "snapshot_id"), "ref", refstr, "manifest_digest", md.digest,
			 "config_digest", m->config.digest, "blobs", blobs, "uploaded_bytes",
			 (json_int_t)up_bytes, "skipped_bytes", (json_int_t)skip_bytes, "uploaded_blobs",
			 n_up, "skipped_blobs", n_skip, "mounted_blobs", n_mount, "seconds", secs);
	return *ret ? 0 : err_oom(err);
}

/* Makes sure d's blob is in the partial layout, verified: kept from an
 * earlier pull, or fetched into an unlinked file that gets its name only
 * once its sha256 and size matched. 1 if it was already there. */
static int fetch_blob(reg_client *c, oci_layout *l, const oci_descriptor *d, uint64_t *dl_bytes,
		      sbx_err **err)
{
	if (d->size < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "blob %s: negative size", d->digest);
	const char *hex = store_digest_hex(d->digest);
	struct stat st;
	if (fstatat(l->sha_fd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == d->size) {
		store_progress_add((uint64_t)d->size, 0);
		return 1;
	}
	(void)unlinkat(l->sha_fd, hex, 0);
	_cleanup_close_ int fd = openat(l->sha_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, "blob %s: scratch file", d->digest);
	if (reg_blob_get(c, d->digest, d->size, fd, err) < 0)
		return -1;
	*dl_bytes += (uint64_t)d->size;
	if (fsync(fd) < 0)
		return err_errno(err, "blob %s: fsync", d->digest);
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, l->sha_fd, hex, AT_SYMLINK_FOLLOW) < 0 && errno != EEXIST)
		return err_errno(err, "blob %s: link", d->digest);
	return 0;
}

static int default_label(const reg_ref *ref, char **ret, sbx_err **err)
{
	const char *last = strrchr(ref->repo, '/');
	last = last ? last + 1 : ref->repo;
	return (*ret = strdup(last)) ? 0 : err_oom(err);
}

_public_ int sbx_snapshot_pull(sbx_ctx *ctx, const char *refstr, const char *name, bool insecure,
			       json_t **ret, sbx_err **err)
{
	double t0 = now_s();
	_cleanup_(reg_ref_clear) reg_ref ref = {0};
	if (reg_ref_parse(refstr, &ref, err) < 0)
		return -1;
	_cleanup_free_ char *label = NULL;
	if (name ? !(label = strdup(name)) : default_label(&ref, &label, err) < 0)
		return err_oom(err);
	if (!store_label_valid(label))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid name '%s': use letters, digits, '.', '_' or '-' (at most 128), "
			       "not 'host' (the host template's name); give one with --name",
			       label);
	_cleanup_reg_client_ reg_client *c = NULL;
	if (reg_client_open(&ref, insecure, false, &c, err) < 0)
		return err_wrap(err, "pull %s", refstr);

	/* The manifest, through an index (this host's platform) if need be. */
	_cleanup_free_ char *body = NULL;
	size_t blen = 0;
	bool is_index = false;
	char mdigest[STORE_DIGEST_SIZE];
	int r = reg_manifest_get(c, ref.digest[0] ? ref.digest : ref.tag, ref.digest, &body, &blen, &is_index,
				 mdigest, err);
	for (int depth = 0; r == 0 && is_index; depth++) {
		_cleanup_(oci_index_freep) oci_index *ix = NULL;
		const oci_descriptor *d = NULL;
		if (depth >= OCI_MAX_INDEX_DEPTH)
			r = err_set(err, SBX_E_LIMIT_EXCEEDED, ELOOP, "image indexes nested deeper than %d",
				    OCI_MAX_INDEX_DEPTH);
		else if ((r = oci_index_parse(body, blen, &ix, err)) == 0 &&
			 (r = oci_index_select(ix, NULL, oci_host_arch(), &d, err)) == 0) {
			char want[STORE_DIGEST_SIZE];
			snprintf(want, sizeof(want), "%s", d->digest);
			free(body);
			body = NULL;
			r = reg_manifest_get(c, want, want, &body, &blen, &is_index, mdigest, err);
		}
	}
	_cleanup_(oci_manifest_freep) oci_manifest *m = NULL;
	_cleanup_(oci_config_freep) oci_config *cfg = NULL;
	if (r == 0 && (r = oci_manifest_parse(body, blen, &m, err)) < 0)
		r = err_wrap(err, "manifest %s", mdigest);

	/* The partial-download area: an OCI layout that outlives a failed pull. */
	_cleanup_free_ char *pdir = store_fs_path(ctx->root, REG_PARTIAL);
	oci_layout l = {.dfd = -1, .sha_fd = -1};
	if (r == 0 && !pdir)
		r = err_oom(err);
	if (r == 0 && (fs_mkdir_p(pdir, 0700) < 0 && errno != EEXIST))
		r = err_errno(err, "'%s'", pdir);
	if (r == 0)
		r = oci_layout_open(pdir, true, &l, err);
	uint64_t dl = 0, total = 0;
	int reused = 0;
	_cleanup_free_ char *cbuf = NULL;
	size_t clen = 0;
	if (r == 0) {
		int k = fetch_blob(c, &l, &m->config, &dl, err);
		reused += k == 1;
		r = k < 0 ? err_wrap(err, "config") : 0;
	}
	if (r == 0 && (r = oci_blob_read(&l, &m->config, &cbuf, &clen, err)) == 0 &&
	    (r = oci_config_parse(cbuf, clen, &cfg, err)) < 0)
		r = err_wrap(err, "config %s", m->config.digest);
	if (r == 0 && cfg->n_diff_ids != m->n_layers)
		r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "the manifest lists %zu layers but the config %zu diff_ids", m->n_layers,
			    cfg->n_diff_ids);
	for (size_t i = 0; r == 0 && i < m->n_layers; i++)
		total += (uint64_t)(m->layers[i].size > 0 ? m->layers[i].size : 0);
	store_progress_begin(ctx->progress, ctx->progress_ud, "pull", total, m ? m->n_layers : 0);
	/* Every blob fetched and verified before anything is extracted. */
	for (size_t i = 0; r == 0 && i < m->n_layers; i++) {
		oci_compression comp;
		if ((r = oci_layer_compression(m->layers[i].media_type, &comp, err)) < 0)
			break;
		if (store_layer_exists(ctx->root, cfg->diff_ids[i])) {
			reused++;
			store_progress_add((uint64_t)m->layers[i].size, 1);
			continue;
		}
		int k = fetch_blob(c, &l, &m->layers[i], &dl, err);
		reused += k == 1;
		if (k < 0)
			r = err_wrap(err, "layer %zu", i);
		store_progress_add(0, 1);
	}
	store_progress_end();
	_cleanup_strv_free_ char **layers = NULL;
	uint64_t size = 0;
	char sid[STORE_DIGEST_SIZE];
	if (r == 0)
		r = api_oci_import_image(ctx, &l, m, cfg, label, true, sid, &layers, &size, err);
	if (r == 0) {
		/* Imported: the downloads are no longer needed. */
		for (size_t i = 0; i <= m->n_layers; i++) {
			const char *d = i < m->n_layers ? m->layers[i].digest : m->config.digest;
			(void)unlinkat(l.sha_fd, store_digest_hex(d), 0);
			source_note(ctx, d, &ref);
		}
	}
	oci_layout_close(&l);
	if (r < 0)
		return err_wrap(err, "pull %s", refstr);
	*ret = json_pack("{s:s,s:s,s:s,s:s,s:o,s:I,s:i,s:I,s:f}", "snapshot_id", sid, "label", label, "ref",
			 refstr, "manifest_digest", mdigest, "layers",
			 json_from_strv((const char *const *)layers), "downloaded_bytes", (json_int_t)dl,
			 "reused_blobs", reused, "size_bytes", (json_int_t)size, "seconds", now_s() - t0);
	return *ret ? 0 : err_oom(err);
}
