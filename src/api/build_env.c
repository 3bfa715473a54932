/* The live environment a build's missed steps run in (build.c): created
 * lazily from the current snapshot, trees put into it, RUN's commands. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/api.h"
#include "api/build_internal.h"
#include "build/dockerfile.h"
#include "store/tarw.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

/* Substitution variables: ARGs, then ENV (ENV wins, as in Docker). */
char **build_vars(const build *b)
{
	size_t n = 0;
	char **v = calloc(b->n_args + b->n_env + 1, sizeof(char *));
	if (!v)
		return NULL;
	for (size_t i = 0; i < b->n_args; i++)
		v[n++] = b->args[i];
	for (size_t i = 0; i < b->n_env; i++)
		v[n++] = b->env[i];
	return v; /* strings borrowed: free only the array */
}

/* ---- the live environment ---------------------------------------------- */

int build_env_ensure(build *b, sbx_err **err)
{
	if (b->env_id)
		return 0;
	sbx_create_opts co = SBX_CREATE_OPTS_INIT;
	if (*b->cur)
		co.snapshot = b->cur;
	else
		co.template_spec = b->base_spec;
	co.network = b->o->network;
	co.secrets = b->o->secrets;
	if (sbx_env_create(b->ctx, &co, &b->env_id, NULL, err) < 0)
		return err_wrap(err, "build environment");
	return 0;
}

void build_env_drop(build *b)
{
	if (b->env_id)
		(void)sbx_env_remove(b->ctx, b->env_id, NULL);
	b->env_id = mfree(b->env_id);
}

static int empty_tar_fd(sbx_err **err)
{
	int fd = memfd_create("sbx-build-tar", MFD_CLOEXEC);
	static const char zero[1024];
	if (fd < 0 || fd_write_all(fd, zero, sizeof zero) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		safe_close(fd);
		return err_errno(err, "tar");
	}
	return fd;
}

/* mkdir -p inside the environment, through the tar extractor (no mkdir binary needed). */
int build_env_mkdir_p(build *b, const char *path, sbx_err **err)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return err_oom(err);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || !*s) {
			char c = *s;
			*s = 0;
			_cleanup_(json_decrefp) json_t *ls = NULL;
			sbx_err *e = NULL;
			if (sbx_env_list_files(b->ctx, b->env_id, p, &ls, &e) < 0) {
				sbx_err_free(e);
				_cleanup_close_ int fd = empty_tar_fd(err);
				if (fd < 0 || sbx_env_tar_in(b->ctx, b->env_id, p, fd, true, err) < 0)
					return err_wrap(err, "mkdir '%s'", p);
			}
			*s = c;
			if (!c)
				break;
		}
	}
	return 0;
}

static int tar_to_fd(void *userdata, const void *buf, size_t len, sbx_err **err)
{
	if (fd_write_all(*(int *)userdata, buf, len) < 0)
		return err_errno(err, "tar");
	return 0;
}

/* Extracts the staging directory's contents into dir inside the environment. */
int build_env_put_tree(build *b, const char *staging, const char *dir, sbx_err **err)
{
	if (build_env_mkdir_p(b, dir, err) < 0)
		return -1;
	_cleanup_close_ int sfd = open(staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int tfd = memfd_create("sbx-build-tar", MFD_CLOEXEC);
	if (sfd < 0 || tfd < 0)
		return err_errno(err, "stage");
	store_idmap ids = {.uid_base = 0, .gid_base = 0, .count = UINT32_MAX};
	if (store_tar_write_dir(sfd, &ids, tar_to_fd, &tfd, NULL, err) < 0 || lseek(tfd, 0, SEEK_SET) < 0)
		return err_wrap(err, "stage");
	return sbx_env_tar_in(b->ctx, b->env_id, dir, tfd, false, err);
}

int build_run_argv(build *b, const char *const *argv, const char *user, sbx_exec_result *res, sbx_err **err)
{
	_cleanup_free_ char **vars = build_vars(b);
	if (!vars)
		return err_oom(err);
	sbx_exec_opts eo = SBX_EXEC_OPTS_INIT;
	eo.argv = argv;
	eo.env = (const char *const *)vars;
	eo.cwd = b->workdir ? b->workdir : "/";
	eo.user = user;
	eo.timeout_ms = -1;
	eo.capture = true;
	eo.output_bytes = 1 << 20;
	eo.on_output = b->o->on_output;
	eo.userdata = b->o->userdata;
	eo.deterministic = 0;
	return sbx_env_exec(b->ctx, b->env_id, &eo, res, err);
}
