/* OCI image layouts: import into the store and export from it.
 *
 * Parsing and validation of index.json, image manifests and image configs
 * are pure (oci_*_parse); the I/O opens a layout without following symlinks
 * below the layout directory (blobs/, blobs/sha256/, index.json and every
 * blob are opened with O_NOFOLLOW and must be regular files or directories),
 * builds blob paths only from validated digests, and checks every blob's
 * sha256 and size against its descriptor. See docs/store.md "OCI". */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/digest.h"
#include "store/layer.h"

#define OCI_MAX_JSON (16u << 20)   /* index.json, manifests, configs */
#define OCI_MAX_LAYERS 500	   /* = STORE_SNAPSHOT_MAX_LAYERS */
#define OCI_MAX_INDEX_ENTRIES 4096 /* descriptors in one index */
#define OCI_MAX_INDEX_DEPTH 4	   /* nested image indexes */
#define OCI_DEFAULT_MAX_BYTES (16ull << 30)
#define OCI_DEFAULT_MAX_ENTRIES (4u << 20)
#define OCI_REF_NAME "org.opencontainers.image.ref.name"

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define OCI_MT_LAYER "application/vnd.oci.image.layer.v1.tar"
#define OCI_MT_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define OCI_MT_LAYER_ZSTD "application/vnd.oci.image.layer.v1.tar+zstd"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MT_CONFIG "application/vnd.docker.container.image.v1+json"

typedef enum oci_compression {
	OCI_COMP_NONE = 0,
	OCI_COMP_GZIP,
	OCI_COMP_ZSTD,
} oci_compression;

typedef struct oci_descriptor {
	char *media_type; /* NULL if absent (allowed in old index/manifests) */
	char digest[STORE_DIGEST_SIZE];
	int64_t size;
	char *ref_name;		   /* annotation org.opencontainers.image.ref.name, or NULL */
	char *arch, *os, *variant; /* platform, or NULL */
} oci_descriptor;

typedef struct oci_index {
	oci_descriptor *manifests;
	size_t n;
} oci_index;

typedef struct oci_manifest {
	oci_descriptor config;
	oci_descriptor *layers;
	size_t n_layers;
	oci_compression *comp; /* per layer */
} oci_manifest;

typedef struct oci_config {
	char *arch, *os;
	char **env; /* "K=V", NULL-terminated (never NULL) */
	char *cwd;  /* WorkingDir or NULL */
	char *user; /* User or NULL */
	/* "Cmd", "Entrypoint", "WorkingDir", "ExposedPorts", "Labels" of the
	 * config (those present) as compact JSON with sorted keys, or NULL if
	 * none; their types are checked where it is recorded (build/image_config.h). */
	char *image;
	char **diff_ids; /* NULL-terminated */
	size_t n_diff_ids;
} oci_config;

void oci_index_free(oci_index *ix);
void oci_manifest_free(oci_manifest *m);
void oci_config_free(oci_config *c);
static inline void oci_index_freep(oci_index **p)
{
	oci_index_free(*p);
}
static inline void oci_manifest_freep(oci_manifest **p)
{
	oci_manifest_free(*p);
}
static inline void oci_config_freep(oci_config **p)
{
	oci_config_free(*p);
}

/* Pure. index.json or a nested image index (OCI or docker manifest list). */
int oci_index_parse(const char *json, size_t len, oci_index **ret, sbx_err **err);
/* Pure. Picks the descriptor named tag (annotation ref.name), or with no tag
 * the only one (or the one tagged "latest"); among several candidates the
 * one for linux/arch. */
int oci_index_select(const oci_index *ix, const char *tag, const char *arch, const oci_descriptor **ret,
		     sbx_err **err);
/* Pure. An image manifest: config and layers (at most OCI_MAX_LAYERS), each
 * layer's compression from its media type (OCI or docker). */
int oci_manifest_parse(const char *json, size_t len, oci_manifest **ret, sbx_err **err);
/* Pure. An image config: rootfs.type "layers", valid diff_ids, Env entries K=V. */
int oci_config_parse(const char *json, size_t len, oci_config **ret, sbx_err **err);

bool oci_media_is_index(const char *mt);
bool oci_media_is_manifest(const char *mt);
/* -EINVAL (with err) for a media type that is not a known layer type. */
int oci_layer_compression(const char *mt, oci_compression *ret, sbx_err **err);
/* Pure. "oci:DIR[:TAG]" -> DIR and TAG (NULL if none). The tag is what
 * follows the last ':' after the last '/'. */
int oci_ref_parse(const char *ref, char **ret_dir, char **ret_tag, sbx_err **err);
/* Pure. [A-Za-z0-9_][A-Za-z0-9._-]{0,127} (the OCI tag grammar). */
bool oci_tag_valid(const char *tag);
/* uname machine -> GOARCH ("x86_64" -> "amd64"). */
const char *oci_arch_from_machine(const char *machine);
const char *oci_host_arch(void);

/* Pure. JSON documents for export (compact, keys sorted). */
char *oci_config_build(const char *arch, const char *const *env, const char *cwd, const char *const *diff_ids,
		       const char *created);
/* The same with the image's User (NULL or "root": none written) and its
 * config object (image_config, the manifest's; NULL: none): its keys become
 * the config's Cmd, Entrypoint, WorkingDir (over cwd), ExposedPorts, Labels. */
char *oci_config_build_image(const char *arch, const char *const *env, const char *cwd, const char *user,
			     const char *image_config, const char *const *diff_ids, const char *created);
char *oci_manifest_build(const oci_descriptor *config, const oci_descriptor *layers, size_t n,
			 const char *created);
/* Adds (or replaces, by ref name) the manifest descriptor in an index.json
 * (existing may be NULL). */
int oci_index_add(const char *existing, size_t len, const oci_descriptor *manifest, const char *tag,
		  char **ret, sbx_err **err);

/* ---- I/O ---------------------------------------------------------------- */

typedef struct oci_layout {
	int dfd;    /* the layout directory */
	int sha_fd; /* blobs/sha256 */
	char *path;
} oci_layout;
void oci_layout_close(oci_layout *l);

/* Opens a layout (create: makes it, with oci-layout and blobs/sha256). */
int oci_layout_open(const char *dir, bool create, oci_layout *ret, sbx_err **err);
/* Reads index.json (O_NOFOLLOW, at most OCI_MAX_JSON). */
int oci_layout_read_index(oci_layout *l, char **ret, size_t *ret_len, sbx_err **err);
/* Opens blobs/sha256/<hex> (O_NOFOLLOW, regular file, size == d->size). */
int oci_blob_open(oci_layout *l, const oci_descriptor *d, int *ret_fd, sbx_err **err);
/* Reads a JSON blob (size <= OCI_MAX_JSON) and checks its digest. */
int oci_blob_read(oci_layout *l, const oci_descriptor *d, char **ret, size_t *ret_len, sbx_err **err);
/* Writes data as a blob; fills digest and size. */
int oci_blob_write(oci_layout *l, const void *data, size_t len, char ret_digest[STORE_DIGEST_SIZE],
		   sbx_err **err);
/* Copies the plain tar at tar_path into the layout (gzip-compressed if
 * gzip); fills the descriptor's digest and size. */
int oci_blob_write_layer(oci_layout *l, const char *tar_path, bool gzip, oci_descriptor *ret, sbx_err **err);
/* The same from an open tar (read from its current offset); tar_path names it in errors. */
int oci_blob_write_layer_fd(oci_layout *l, int in_fd, const char *tar_path, bool gzip, oci_descriptor *ret,
			    sbx_err **err);
/* Writes index.json atomically. */
int oci_layout_write_index(oci_layout *l, const char *json, sbx_err **err);

/* Budget shared by all layers of one import. */
typedef struct oci_import_budget {
	uint64_t max_bytes;   /* uncompressed tar bytes left */
	uint64_t max_entries; /* tar entries left */
} oci_import_budget;

/* Imports one layer blob into the store: verifies the blob's digest and
 * size, decompresses it, extracts it with the safe extractor (OCI whiteouts
 * -> overlay whiteouts, setuid/setgid dropped, devices refused), checks the
 * uncompressed digest against diff_id, and stores the tree as a layer (its
 * canonical tar digest; equal to diff_id when the blob was canonical, as
 * sbx exports are). Nothing is committed unless every check passed. */
int store_layer_put_from_oci_blob(const char *store_root, oci_layout *l, const oci_descriptor *d,
				  oci_compression comp, const char *diff_id, oci_import_budget *budget,
				  store_layer_info *ret, sbx_err **err);
