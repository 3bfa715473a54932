/* The bottom layer of src/api (docs/layout.md, checked by
 * `make check-layers`): the context (ctx.h), the environment record and its
 * control socket (env_state.h), and the pieces a create is made of that
 * call nothing above them: a create's network (limits.c), --policy specs
 * and their application (policy_spec.c, policy_apply.c), OCI images and
 * templates (oci.c). The other files of this layer have headers of their
 * own: reclaim.h, snap_base.h, devices.h, secrets.h (with phase_plan.c),
 * readset_io.h. A file that includes only these calls only this layer. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/ctx.h"
#include "api/env_state.h"
#include "util/err.h"

/* A create's network (src/api/limits.c): o->network with o->network_allow,
 * or the string form "allow=P,P" split at commas (here only). *ret_mode is
 * "none", "open" or "allow" (static); *ret_allow the patterns, each checked
 * by egress_match (a strv, NULL but for allow). Pure. */
int api_network_opts(const sbx_create_opts *o, const char **ret_mode, char ***ret_allow, sbx_err **err);

/* --policy: a spec loaded (src/api/policy_spec.c), and applied as the
 * ceiling of a create's options (src/api/policy_apply.c). */
struct policy;
typedef struct policy_storage {
	char **network_allow;  /* what o->network_allow may point to */
	sbx_volume *volumes;   /* what o->volumes may point to */
	char **env;	       /* what o->env may point to (strings borrowed) */
	const char *warning;   /* a part of the policy that is not enforced, or NULL */
	json_t *plugins;       /* the policy's plugins: [{"path", "config"?}], or NULL */
	char **hidden;	       /* what o->hidden may point to */
	char **secrets;	       /* what o->secrets may point to */
	const char **cap_drop; /* what o->cap_drop may point to (names are static) */
} policy_storage;
int policy_load_spec(const char *spec, struct policy **ret, sbx_err **err);
/* Whether a --policy spec names a built-in profile (strict, dev, open). */
bool policy_spec_is_profile(const char *spec);
int policy_apply(const struct policy *p, sbx_create_opts *o, policy_storage *keep, sbx_err **err);
void policy_storage_clear(policy_storage *k);

/* sbx_snapshot_export with a hook (oci.c; used by push): have() returning
 * true with d's digest and size filled means the destination has the
 * layer's gzip blob already, so export neither makes nor writes it. */
struct oci_descriptor;
typedef bool (*api_export_have_fn)(void *ud, const char *diff_id, struct oci_descriptor *d);
int api_oci_export(sbx_ctx *ctx, const char *snapshot, const char *oci_dir, api_export_have_fn have,
		   void *have_ud, json_t **ret, sbx_err **err);
/* An image's layers into the store (verified as sbx import does), then its
 * snapshot and the label ref (oci.c; used by import and pull). reuse_present:
 * a layer the store holds under its diff_id is not extracted again. */
struct oci_layout;
struct oci_manifest;
struct oci_config;
int api_oci_import_image(sbx_ctx *ctx, struct oci_layout *l, const struct oci_manifest *m,
			 const struct oci_config *cfg, const char *label, bool reuse_present,
			 char *ret_sid /* STORE_DIGEST_SIZE */, char ***ret_layers, uint64_t *ret_size,
			 sbx_err **err);
