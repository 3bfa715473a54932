#include "api/ctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/startup_trace.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/log.h"

/* Real root means uid 0 in the initial user namespace: inside someone else's
 * user namespace we are as unprivileged as any rootless caller. */
static bool in_initial_userns(void)
{
	_cleanup_free_ char *map = NULL;
	if (fs_read_file("/proc/self/uid_map", 4096, &map, NULL) < 0)
		return false;
	unsigned a, b, c;
	return sscanf(map, "%u %u %u", &a, &b, &c) == 3 && a == 0 && b == 0 && c == 4294967295u;
}

static char *default_dir(bool rootless, bool run)
{
	char *r = NULL;
	/* Not /var/lib/sbx: the host template overlays /usr, /etc, /var and
	 * /opt, and overlayfs refuses a layer (a snapshot's, stored here) that
	 * lies inside another layer. /srv is hidden from environments anyway. */
	if (!rootless)
		return strdup(run ? "/run/sbx" : "/srv/sbx");
	if (run) {
		const char *x = getenv("XDG_RUNTIME_DIR");
		if (x && *x && access(x, W_OK) == 0)
			return fs_path_join(x, "sbx");
		if (asprintf(&r, "/tmp/sbx-%u", (unsigned)getuid()) < 0)
			return NULL;
		return r;
	}
	const char *x = getenv("XDG_DATA_HOME");
	if (x && *x)
		return fs_path_join(x, "sbx");
	const char *h = getenv("HOME");
	if (!h || !*h)
		return NULL;
	if (asprintf(&r, "%s/.local/share/sbx", h) < 0)
		return NULL;
	return r;
}

/* Resolves to an absolute, normalized path (the directory is created). */
static int prepare_dir(const char *what, char **path, sbx_err **err)
{
	int r = fs_mkdir_p(*path, 0711);
	if (r < 0)
		return err_errnum(err, r, "create %s directory '%s'", what, *path);
	char *real = realpath(*path, NULL);
	if (!real)
		return err_errno(err, "resolve %s directory '%s'", what, *path);
	free(*path);
	*path = real;
	/* The environment's root (an unprivileged host uid) must be able to
	 * traverse to its own staging directory. */
	struct stat st;
	if (stat(real, &st) == 0 && st.st_uid == getuid() && (st.st_mode & 0111) != 0111)
		(void)!chmod(real, (st.st_mode & 07777) | 0111);
	return 0;
}

_public_ int sbx_ctx_open(sbx_ctx **ret, sbx_err **err)
{
	startup_mark("context: open");
	log_init();
	sbx_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	c->taken_sock = -1;
	c->uid = getuid();
	c->gid = getgid();
	c->rootless = !(geteuid() == 0 && in_initial_userns());
	const char *r = getenv("SBX_ROOT"), *u = getenv("SBX_RUN");
	c->root = r && *r ? strdup(r) : default_dir(c->rootless, false);
	c->run = u && *u ? strdup(u) : default_dir(c->rootless, true);
	if (!c->root || !c->run) {
		sbx_ctx_free(c);
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "cannot choose a state directory: set SBX_ROOT and SBX_RUN (or HOME)");
	}
	if (prepare_dir("state", &c->root, err) < 0 || prepare_dir("runtime", &c->run, err) < 0) {
		sbx_ctx_free(c);
		return -1;
	}
	if (strlen(c->run) > 80) {
		int q = err_set(err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG,
				"runtime directory '%s' is too long for unix sockets (at most 80 characters)",
				c->run);
		sbx_ctx_free(c);
		return q;
	}
	*ret = c;
	return 0;
}

_public_ void sbx_ctx_free(sbx_ctx *ctx)
{
	if (!ctx)
		return;
	safe_close(ctx->taken_sock);
	free(ctx->root);
	free(ctx->run);
	free(ctx->attest_key_path);
	strv_free(ctx->host_dirs);
	free(ctx);
}

_public_ void sbx_ctx_set_create_observer(sbx_ctx *ctx, sbx_create_observer_fn fn, void *userdata)
{
	ctx->create_observer = fn;
	ctx->create_observer_opts = NULL;
	ctx->create_observer_ud = userdata;
}

_public_ void sbx_ctx_set_create_observer_opts(sbx_ctx *ctx, sbx_create_observer_opts_fn fn, void *userdata)
{
	ctx->create_observer_opts = fn;
	ctx->create_observer = NULL;
	ctx->create_observer_ud = userdata;
}

_public_ void sbx_ctx_set_progress(sbx_ctx *ctx, sbx_progress_fn fn, void *userdata)
{
	ctx->progress = fn;
	ctx->progress_ud = userdata;
}

_public_ const char *sbx_ctx_root(const sbx_ctx *ctx)
{
	return ctx->root;
}
_public_ const char *sbx_ctx_run(const sbx_ctx *ctx)
{
	return ctx->run;
}
_public_ bool sbx_ctx_rootless(const sbx_ctx *ctx)
{
	return ctx->rootless;
}
_public_ const char *sbx_version(void)
{
	return "0.1.0";
}

void ctx_short_lived(sbx_ctx *ctx)
{
	ctx->short_lived = getpid();
}

char *ctx_env_dir(const sbx_ctx *ctx, const char *id)
{
	char *r = NULL;
	return asprintf(&r, "%s/envs/%s", ctx->root, id) < 0 ? NULL : r;
}

char *ctx_run_dir(const sbx_ctx *ctx, const char *id)
{
	char *r = NULL;
	return asprintf(&r, "%s/%s", ctx->run, id) < 0 ? NULL : r;
}

int ctx_taken_sock(sbx_ctx *ctx, const char *id)
{
	if (ctx->taken_sock < 0 || !streq(ctx->taken_id, id))
		return -1;
	ctx->taken_id[0] = 0;
	return TAKE_FD(ctx->taken_sock);
}

bool ctx_pool_layer_tmpfs(const sbx_ctx *ctx)
{
	return ctx->pool_key && ctx->pool_tmpfs && !ctx->rootless;
}
