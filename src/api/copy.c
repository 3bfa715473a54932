/* sbx cp and MCP upload/download: files and directory trees in and out of
 * a live environment. The environment's side (src/runtime/init_copy.c)
 * streams a tar through a pipe; the host side writes it with the store's
 * canonical tar writer and reads it with its hostile-input-safe extractor
 * (the environment is untrusted: nothing it sends can write outside the
 * destination, follow a symlink, plant a device or keep a setuid bit).
 *
 * Destinations follow `docker cp`: a destination that is an existing
 * directory receives SRC under its own name; otherwise the destination is
 * the new name (its parent must exist). A directory copied over an existing
 * directory merges into it. Symbolic links at the top are refused (give the
 * path they point to); inside a tree they are copied as links. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "store/tarr.h"
#include "store/tarw.h"
#include "util/fd.h"
#include "util/json.h"

#define COPY_MAX_BYTES (64ULL << 30)

static int write_to_fd(void *userdata, const void *buf, size_t len, sbx_err **err)
{
	ssize_t n = fd_write_all(*(int *)userdata, buf, len);
	return n < 0 ? err_errnum(err, (int)n, "write the tar stream") : 0;
}

static json_t *file_req(const char *action, const char *path)
{
	return json_pack("{s:s,s:s,s:s}", CTL_F_OP, CTL_OP_FILE, "action", action, "path", path);
}

/* lstat inside: ret_type "file", "dir", "symlink", "other", or NULL when
 * the path does not exist (no error then). */
static int env_stat(sbx_ctx *ctx, const char *ref, const char *path, char **ret_type, int *ret_mode,
		    sbx_err **err)
{
	_cleanup_json_ json_t *req = file_req("stat", path), *m = NULL;
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
	_cleanup_err_ sbx_err *e = NULL;
	if (api_file_call(ctx, ref, req, &m, NULL, 0, &e) < 0) {
		if (sbx_err_errno(e) == ENOENT && sbx_err_code(e) == SBX_E_NOT_FOUND &&
		    strstr(sbx_err_message(e), "stat '")) {
			*ret_type = NULL;
			return 0;
		}
		if (err)
			*err = TAKE_PTR(e);
		return -1;
	}
	char *t = strdup(json_str(m, "type") ?: "other");
	if (!t)
		return err_oom(err);
	*ret_type = t;
	if (ret_mode)
		*ret_mode = (int)json_int(m, "mode", 0644);
	return 0;
}

static int copy_fd(int from, int to, const char *what, sbx_err **err)
{
	char buf[1 << 16];
	for (;;) {
		ssize_t n = read(from, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(err, "read %s", what);
		if (n == 0)
			return 0;
		ssize_t w = fd_write_all(to, buf, (size_t)n);
		if (w < 0)
			return err_errnum(err, (int)w, "write %s", what);
	}
}

/* The last component of a path ("/a/b/" -> "b"); "" for "/". */
static char *base_of(const char *path)
{
	_cleanup_free_ char *c = strdup(path);
	if (!c)
		return NULL;
	size_t n = strlen(c);
	while (n > 1 && c[n - 1] == '/')
		c[--n] = 0;
	const char *b = strrchr(c, '/');
	return strdup(b ? (b[1] ? b + 1 : "") : c);
}

static char *join(const char *dir, const char *name)
{
	char *r = NULL;
	size_t n = strlen(dir);
	if (asprintf(&r, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) < 0)
		return NULL;
	return r;
}

_public_ int sbx_env_tar_out(sbx_ctx *ctx, const char *ref, const char *env_dir, int out_fd, sbx_err **err)
{
	_cleanup_json_ json_t *req = file_req("tar_out", env_dir), *m = NULL;
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
	_cleanup_close_ int fd = -1;
	if (api_file_call(ctx, ref, req, &m, &fd, 1, err) < 0)
		return -1;
	return copy_fd(fd, out_fd, "the tar stream", err);
}

_public_ int sbx_env_tar_in(sbx_ctx *ctx, const char *ref, const char *env_dir, int in_fd, bool create,
			    sbx_err **err)
{
	_cleanup_json_ json_t *req = file_req("tar_in", env_dir), *m = NULL;
	if (!req || json_object_set_new(req, "create", json_boolean(create)) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
	int fds[2] = {-1, -1};
	if (api_file_call(ctx, ref, req, &m, fds, 2, err) < 0)
		return -1;
	_cleanup_close_ int data = fds[0], st = fds[1];
	int r = copy_fd(in_fd, data, "the tar stream", err);
	data = safe_close(data);
	if (r < 0)
		return -1;
	/* The extractor's verdict: one JSON line on the status pipe. */
	char line[8192];
	size_t len = 0;
	for (;;) {
		ssize_t n = read(st, line + len, sizeof(line) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == sizeof(line) - 1)
			break;
	}
	line[len] = 0;
	_cleanup_json_ json_t *res = json_loads(line, 0, NULL);
	if (!res)
		return err_set(err, SBX_E_INTERNAL, EPROTO,
			       "copy into '%s': the environment's extractor ended without a result", env_dir);
	if (!json_bool(res, "ok", false)) {
		int e = (int)json_int(res, "errno", EIO);
		return err_set(
		    err, e == EXDEV || e == EINVAL ? SBX_E_INVALID_ARGUMENT : err_code_from_errno(e), e,
		    "copy into '%s': %s", env_dir, json_str(res, "message") ?: "extraction failed");
	}
	return 0;
}

/* Extracts a tar stream from the environment into host directory dfd. */
static int host_extract(int dfd, int in_fd, const char *shown, sbx_err **err)
{
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.max_bytes = COPY_MAX_BYTES;
	o.devices = STORE_TAR_DEV_SKIP;
	int fd = in_fd;
	if (store_tar_extract(dfd, store_tar_fd_read, &fd, &o, NULL, err) < 0)
		return err_wrap(err, "copy to '%s'", shown);
	return 0;
}

_public_ int sbx_env_copy_out(sbx_ctx *ctx, const char *ref, const char *env_path, const char *host_path,
			      sbx_err **err)
{
	if (!env_path || !*env_path || !host_path || !*host_path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "copy: a source and a destination are required");
	_cleanup_free_ char *type = NULL;
	int mode = 0644;
	if (env_stat(ctx, ref, env_path, &type, &mode, err) < 0)
		return -1;
	if (!type)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "copy from '%s': no such file or directory",
			       env_path);
	if (!streq(type, "file") && !streq(type, "dir"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "copy from '%s': it is a %s; give the file or directory itself", env_path,
			       streq(type, "symlink") ? "symbolic link" : "special file");
	_cleanup_free_ char *target = NULL, *base = base_of(env_path);
	if (!base)
		return err_oom(err);
	struct stat st;
	if (stat(host_path, &st) == 0 && S_ISDIR(st.st_mode) && *base)
		target = join(host_path, base);
	else
		target = strdup(host_path);
	if (!target)
		return err_oom(err);
	if (streq(type, "file")) {
		_cleanup_json_ json_t *req = file_req("read", env_path), *m = NULL;
		_cleanup_close_ int in = -1;
		if (!req)
			return err_oom(err);
		if (api_file_call(ctx, ref, req, &m, &in, 1, err) < 0)
			return -1;
		_cleanup_close_ int out =
		    open(target, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
		if (out < 0)
			return err_errno(err, "copy to '%s'", target);
		return copy_fd(in, out, target, err);
	}
	if (mkdir(target, (mode & 0777) | 0700) < 0 && errno != EEXIST)
		return err_errno(err, "copy to '%s'", target);
	_cleanup_close_ int dfd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return err_errno(err, "copy to '%s'", target);
	_cleanup_json_ json_t *req = file_req("tar_out", env_path), *m = NULL;
	_cleanup_close_ int in = -1;
	if (!req)
		return err_oom(err);
	if (api_file_call(ctx, ref, req, &m, &in, 1, err) < 0)
		return -1;
	return host_extract(dfd, in, target, err);
}

_public_ int sbx_env_copy_in(sbx_ctx *ctx, const char *ref, const char *host_path, const char *env_path,
			     sbx_err **err)
{
	if (!env_path || !*env_path || !host_path || !*host_path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "copy: a source and a destination are required");
	struct stat hs;
	if (lstat(host_path, &hs) < 0)
		return err_errno(err, "copy from '%s'", host_path);
	if (!S_ISREG(hs.st_mode) && !S_ISDIR(hs.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "copy from '%s': it is a %s; give the file or directory itself", host_path,
			       S_ISLNK(hs.st_mode) ? "symbolic link" : "special file");
	_cleanup_free_ char *type = NULL, *base = base_of(host_path), *target = NULL;
	if (!base)
		return err_oom(err);
	if (env_stat(ctx, ref, env_path, &type, NULL, err) < 0)
		return -1;
	if (type && streq(type, "dir") && *base)
		target = join(env_path, base);
	else
		target = strdup(env_path);
	if (!target)
		return err_oom(err);
	if (S_ISREG(hs.st_mode)) {
		_cleanup_close_ int in = open(host_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0)
			return err_errno(err, "copy from '%s'", host_path);
		_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:s,s:i}", CTL_F_OP, CTL_OP_FILE, "action",
						       "write", "path", target, "mode",
						       (int)(hs.st_mode & 0777)),
				      *m = NULL;
		_cleanup_close_ int out = -1;
		if (!req)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
		if (api_file_call(ctx, ref, req, &m, &out, 1, err) < 0)
			return -1;
		return copy_fd(in, out, target, err);
	}
	_cleanup_close_ int dfd = open(host_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return err_errno(err, "copy from '%s'", host_path);
	int p[2], ep[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	_cleanup_close_ int rd = p[0], wr = p[1];
	if (pipe2(ep, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	_cleanup_close_ int erd = ep[0], ewr = ep[1];
	/* Writer and reader in one thread would deadlock on a full pipe: the
	 * tar is produced by a child (its error, if any, on ewr), the parent
	 * streams it into the environment. */
	pid_t pid = fork();
	if (pid < 0)
		return err_errno(err, "fork");
	if (pid == 0) {
		safe_close(rd);
		safe_close(erd);
		store_idmap ids = {.uid_base = 0, .gid_base = 0, .count = UINT32_MAX};
		sbx_err *e = NULL;
		if (store_tar_write_dir(dfd, &ids, write_to_fd, &wr, NULL, &e) < 0) {
			const char *msg = sbx_err_message(e);
			(void)fd_write_all(ewr, msg, strlen(msg));
			_exit(1);
		}
		_exit(0);
	}
	_cleanup_pid_ pid_t child = pid;
	wr = safe_close(wr);
	ewr = safe_close(ewr);
	_cleanup_err_ sbx_err *in_err = NULL;
	int r = sbx_env_tar_in(ctx, ref, target, rd, true, &in_err);
	rd = safe_close(rd);
	int status = 0;
	pid_t waited = TAKE_PID(child);
	while (waitpid(waited, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char msg[2048];
		ssize_t n = read(erd, msg, sizeof(msg) - 1);
		msg[n > 0 ? n : 0] = 0;
		return err_set(err, SBX_E_INVALID_ARGUMENT, EIO, "copy from '%s': %s", host_path,
			       *msg ? msg : "the tree could not be read");
	}
	if (r < 0) {
		if (err)
			*err = TAKE_PTR(in_err);
		return -1;
	}
	return 0;
}
