/* What a create starts from in the store, apart from the snapshot and
 * lifecycle code that use it (env_start.c, env_create.c, snap.c, oci.c, ...): a snapshot named
 * by digest, unique prefix or label (sbx_snapshot_resolve, include/sbx.h),
 * and a template's content-addressed base (docs/store.md "Template
 * bases"). Depends on src/store and the mask only, not on the create or snap.c. */
#pragma once
#include "api/ctx.h"
#include "util/err.h"

/* The content-addressed base snapshot of template spec (host: with its mask;
 * dir:PATH: mask NULL), built once. */
struct mask_list;
int snap_template_base(sbx_ctx *ctx, const char *spec, const struct mask_list *mask,
		       char *ret /* STORE_DIGEST_SIZE */, sbx_err **err);
/* The digest of a host package database (open as fd, named path), cached
 * per process and in <root>/cache/pkgdb-<slot> by the file's identity;
 * exposed for its unit test (tests/unit/test_snap_base.c). */
int snap_pkgdb_digest(const char *root, int fd, const char *path, size_t slot,
		      char *ret /* STORE_DIGEST_SIZE */, sbx_err **err);
/* PRETTY_NAME of env_dir's upper/etc/os-release, else of the host's
 * /etc/os-release (env_dir NULL: the host's); NULL if neither says. */
char *snap_os_release(const char *env_dir);
