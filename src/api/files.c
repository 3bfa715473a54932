/* sbx_env_read_file / write_file / list_files. Init resolves the path
 * inside the environment and hands back an fd of the opened regular file;
 * the data moves directly between that fd and the caller. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "util/fd.h"
#include "util/json.h"

#define DEFAULT_READ_MAX (10LL << 20)

/* Sends a file request; on success returns the reply and the n_fds fds
 * that come with it (ret_fds may be NULL for none; fewer is an error). */
int api_file_call(sbx_ctx *ctx, const char *ref, json_t *req, json_t **ret, int *ret_fds, size_t n_fds,
		  sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	int fds[FD_MSG_MAX_FDS];
	size_t n = FD_MSG_MAX_FDS;
	_cleanup_json_ json_t *m = NULL;
	if (env_request_resume(ctx, id, true, req, &m, fds, &n, err) < 0)
		return -1;
	if (streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_ERROR))
		return api_err_from_json(m, err);
	if (!json_bool(m, CTL_F_OK, false)) {
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		int e = (int)json_int(m, CTL_F_ERRNO, EIO);
		return err_set(err, err_code_from_errno(e), e, "%s",
			       json_str(m, CTL_F_MESSAGE) ?: "file operation failed");
	}
	if (n < n_fds) {
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		return err_set(err, SBX_E_INTERNAL, EPROTO, "no file descriptor from the environment");
	}
	for (size_t i = 0; i < n; i++) {
		if (i < n_fds && ret_fds)
			ret_fds[i] = fds[i];
		else
			safe_close(fds[i]);
	}
	*ret = TAKE_PTR(m);
	return 0;
}

static int file_call(sbx_ctx *ctx, const char *ref, json_t *req, json_t **ret, int *ret_fd, sbx_err **err)
{
	return api_file_call(ctx, ref, req, ret, ret_fd, ret_fd ? 1 : 0, err);
}

_public_ int sbx_env_read_file(sbx_ctx *ctx, const char *ref, const char *path, int64_t max_bytes,
			       char **ret_data, size_t *ret_len, int64_t *ret_size, bool *ret_truncated,
			       sbx_err **err)
{
	if (!path || !*path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "no path given");
	if (max_bytes <= 0)
		max_bytes = DEFAULT_READ_MAX;
	_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:s}", CTL_F_OP, CTL_OP_FILE, "action", "read",
					       "path", path),
			      *m = NULL;
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
	_cleanup_close_ int fd = -1;
	if (file_call(ctx, ref, req, &m, &fd, err) < 0)
		return -1;
	size_t cap = (size_t)max_bytes;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "cannot allocate %zu bytes", cap);
	size_t len = 0;
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(err, "read '%s'", path);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	char extra;
	bool truncated = len == cap && read(fd, &extra, 1) == 1;
	struct stat st;
	int64_t size = fstat(fd, &st) == 0 ? (int64_t)st.st_size : (int64_t)len;
	buf[len] = 0;
	*ret_data = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	if (ret_size)
		*ret_size = size;
	if (ret_truncated)
		*ret_truncated = truncated;
	return 0;
}

_public_ int sbx_env_write_file(sbx_ctx *ctx, const char *ref, const char *path, const void *data, size_t len,
				int mode, sbx_err **err)
{
	if (!path || !*path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "no path given");
	if (mode > 07777)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid mode %o", mode);
	_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:s,s:i}", CTL_F_OP, CTL_OP_FILE, "action", "write",
					       "path", path, "mode", mode),
			      *m = NULL;
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
	_cleanup_close_ int fd = -1;
	if (file_call(ctx, ref, req, &m, &fd, err) < 0)
		return -1;
	ssize_t n = fd_write_all(fd, data, len);
	if (n < 0)
		return err_errnum(err, (int)n, "write '%s'", path);
	return 0;
}

_public_ int sbx_env_list_files(sbx_ctx *ctx, const char *ref, const char *path, json_t **ret, sbx_err **err)
{
	if (!path || !*path)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "no path given");
	_cleanup_json_ json_t *req =
	    json_pack("{s:s,s:s,s:s}", CTL_F_OP, CTL_OP_FILE, "action", "list", "path", path);
	json_t *m = NULL;
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "path is not valid UTF-8");
	if (file_call(ctx, ref, req, &m, NULL, err) < 0)
		return -1;
	json_object_del(m, CTL_F_EV);
	json_object_del(m, "ok");
	*ret = m;
	return 0;
}
