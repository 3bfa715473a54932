/* Host directories an operator allowed a server's clients to name
 * (sbx mcp/serve --allow-host-dir DIR): MCP template_build's context,
 * snapshot_import's source and snapshot_export's destination. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/ctx.h"
#include "util/err.h"
#include "util/macro.h"

_public_ int sbx_ctx_allow_host_dir(sbx_ctx *ctx, const char *dir, sbx_err **err)
{
	_cleanup_free_ char *real = dir ? realpath(dir, NULL) : NULL;
	struct stat st;
	if (!real || stat(real, &st) < 0)
		return err_errno(err, "allowed host directory '%s'", dir ? dir : "");
	if (!S_ISDIR(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, ENOTDIR,
			       "allowed host directory '%s' is not a directory", dir);
	size_t n = 0;
	while (ctx->host_dirs && ctx->host_dirs[n])
		n++;
	char **v = realloc(ctx->host_dirs, (n + 2) * sizeof(char *));
	if (!v)
		return err_oom(err);
	ctx->host_dirs = v;
	v[n] = TAKE_PTR(real);
	v[n + 1] = NULL;
	return 0;
}

_public_ char *sbx_ctx_host_dir_allowed(const sbx_ctx *ctx, const char *path)
{
	_cleanup_free_ char *real = path ? realpath(path, NULL) : NULL;
	if (!real)
		return NULL;
	for (size_t i = 0; ctx->host_dirs && ctx->host_dirs[i]; i++) {
		const char *d = ctx->host_dirs[i];
		size_t l = strlen(d);
		if (!strncmp(real, d, l) && (real[l] == 0 || real[l] == '/' || streq(d, "/")))
			return TAKE_PTR(real);
	}
	errno = EPERM;
	return NULL;
}

_public_ char *sbx_ctx_host_dest_allowed(const sbx_ctx *ctx, const char *path)
{
	struct stat st;
	if (!path || !*path) {
		errno = EINVAL;
		return NULL;
	}
	/* An existing path (a symlink too): where it really is. */
	if (lstat(path, &st) == 0)
		return sbx_ctx_host_dir_allowed(ctx, path);
	if (errno != ENOENT)
		return NULL;
	/* A new one: a plain last name in an allowed (real) parent. */
	_cleanup_free_ char *d = strdup(path), *b = strdup(path);
	if (!d || !b)
		return NULL;
	const char *name = basename(b);
	if (!*name || streq(name, ".") || streq(name, "..") || streq(name, "/")) {
		errno = EPERM;
		return NULL;
	}
	_cleanup_free_ char *parent = sbx_ctx_host_dir_allowed(ctx, dirname(d));
	if (!parent)
		return NULL;
	char *full = NULL;
	if (asprintf(&full, "%s%s%s", parent, streq(parent, "/") ? "" : "/", name) < 0)
		return NULL;
	return full;
}
