/* The MCP tools that move snapshots as OCI images: through a registry
 * (push, pull) or an image layout in an allowed host directory (export,
 * import). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

/* ---- snapshots through OCI registries (snapshot_push, snapshot_pull) ---------- */

int tool_snapshot_push(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_snapshot_push(c->ctx, json_str(c->args, "snapshot_id"), json_str(c->args, "ref"),
				 json_bool(c->args, "insecure", false), ret, err);
}

int tool_snapshot_pull(tool_call *c, json_t **ret, sbx_err **err)
{
	return sbx_snapshot_pull(c->ctx, json_str(c->args, "ref"), json_str(c->args, "name"),
				 json_bool(c->args, "insecure", false), ret, err);
}

#define REGISTRY_REF_PROP(what)                                                                              \
	"'ref':{'type':'string','minLength':1,'maxLength':1024,'description':'REGISTRY/REPO:TAG" what        \
	" (e.g. registry.example.com/team/app:v1; a first component without a dot or colon means "           \
	"docker.io).'}"
#define REGISTRY_INSECURE_PROP                                                                               \
	"'insecure':{'type':'boolean','description':'Plain HTTP instead of HTTPS (a registry on "            \
	"loopback).'}"
const char tool_snapshot_push_in[] =
    "{'type':'object','additionalProperties':false,'required':['snapshot_id','ref'],'properties':{"
    "'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to push: a snapshot_id (or "
    "unique prefix) or a label.'}," REGISTRY_REF_PROP("") "," REGISTRY_INSECURE_PROP "}}";

const char tool_snapshot_push_out[] = OUTPUT(
    "'snapshot_id':{'type':'string'},'ref':{'type':'string'},'manifest_digest':{'type':'string'},"
    "'config_digest':{'type':'string'},'blobs':{'type':'array','items':{'type':'object','properties':{"
    "'digest':{'type':'string'},'size':{'type':'integer'},'action':{'type':'string','enum':['uploaded',"
    "'skipped','mounted']}}}},'uploaded_bytes':{'type':'integer'},'skipped_bytes':{'type':'integer'},"
    "'uploaded_blobs':{'type':'integer'},'skipped_blobs':{'type':'integer'},'mounted_blobs':{'type':'integer'"
    "},"
    "'seconds':{'type':'number'}",
    "'manifest_digest','uploaded_bytes','skipped_bytes'");

const char tool_snapshot_pull_in[] =
    "{'type':'object','additionalProperties':false,'required':['ref'],'properties':{" REGISTRY_REF_PROP(
	"[@sha256:DIGEST]") ",'name':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$',"
			    "'description':'The label of the pulled snapshot (default: the last component of "
			    "the repository); moves if reused.'}," REGISTRY_INSECURE_PROP "}}";

const char tool_snapshot_pull_out[] = OUTPUT(
    "'snapshot_id':{'type':'string'},'label':{'type':'string'},'ref':{'type':'string'},"
    "'manifest_digest':{'type':'string'},'layers':{'type':'array','items':{'type':'string'}},"
    "'downloaded_bytes':{'type':'integer'},'reused_blobs':{'type':'integer'},'size_bytes':{'type':'integer'},"
    "'seconds':{'type':'number'}",
    "'snapshot_id','label','manifest_digest'");

/* ---- snapshot_export, snapshot_import: OCI layouts in allowed host directories ---- */

int tool_snapshot_export(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path"), *tag = json_str(c->args, "tag");
	_cleanup_free_ char *real = sbx_ctx_host_dest_allowed(c->ctx, path), *ref = NULL;
	if (!real)
		return tools_host_path_refused("export path", path, err);
	if (tag && strchr(real, ':'))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "export path '%s': a path with ':' cannot take a tag", real);
	if (tag && asprintf(&ref, "oci:%s:%s", real, tag) < 0)
		return err_oom(err);
	return sbx_snapshot_export(c->ctx, json_str(c->args, "snapshot_id"), ref ? ref : real, ret, err);
}

int tool_snapshot_import(tool_call *c, json_t **ret, sbx_err **err)
{
	const char *path = json_str(c->args, "path"), *tag = json_str(c->args, "tag");
	_cleanup_free_ char *real = sbx_ctx_host_dir_allowed(c->ctx, path), *ref = NULL;
	if (!real)
		return tools_host_path_refused("import path", path, err);
	if (strchr(real, ':'))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "import path '%s': a path with ':' cannot be named as oci:DIR[:TAG]", real);
	if (asprintf(&ref, "oci:%s%s%s", real, tag ? ":" : "", tag ? tag : "") < 0)
		return err_oom(err);
	return sbx_image_import(c->ctx, ref, json_str(c->args, "name"), ret, err);
}

#define OCI_TAG_PROP(what)                                                                                   \
	"'tag':{'type':'string','pattern':'^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$','description':'" what "'}"
const char tool_snapshot_export_in[] =
    "{'type':'object','additionalProperties':false,'required':['snapshot_id','path'],'properties':{"
    "'snapshot_id':{'type':'string','minLength':1,'description':'The snapshot to export: a snapshot_id (or "
    "unique prefix), a label, or template.NAME for a template.'},"
    "'path':{'type':'string','minLength':1,'description':'The OCI image layout directory to write (made if "
    "absent; an existing layout gains the tag): in or beneath a host directory the operator allowed (sbx "
    "mcp/serve --allow-host-dir DIR).'}," OCI_TAG_PROP("The image tag in the layout (default latest).") "}}";

const char tool_snapshot_export_out[] = OUTPUT(
    "'snapshot_id':{'type':'string'},'oci_dir':{'type':'string'},'tag':{'type':'string'},'manifest_digest':{"
    "'type':'string'},'config_digest':{'type':'string'},'layers':{'type':'array','items':{'type':'object'}},"
    "'size_bytes':{'type':'integer'}",
    "'snapshot_id','oci_dir','tag','manifest_digest'");

const char tool_snapshot_import_in[] =
    "{'type':'object','additionalProperties':false,'required':['path'],'properties':{"
    "'path':{'type':'string','minLength':1,'description':'An OCI image layout directory (docker, podman, "
    "skopeo, umoci or sbx export write them) in or beneath a host directory the operator allowed (sbx "
    "mcp/serve --allow-host-dir DIR).'},"
    "'name':{'type':'string','pattern':'^[A-Za-z0-9][A-Za-z0-9._-]{0,118}$','description':'The template name "
    "(environment_create template: NAME; default the tag, else the directory name); replaced if it "
    "exists.'}," OCI_TAG_PROP("The image to take from the layout (default its only one, or latest).") "}}";

const char tool_snapshot_import_out[] =
    OUTPUT("'snapshot_id':{'type':'string'},'name':{'type':'string'},'ref':{'type':'string'},'layers':{"
	   "'type':'array','items':{'type':'string'}},'diff_ids':{'type':'array','items':{'type':'string'}},"
	   "'manifest_digest':{'type':'string'},'size_bytes':{'type':'integer'}",
	   "'snapshot_id','name','manifest_digest'");
