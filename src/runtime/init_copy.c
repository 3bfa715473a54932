/* Directory copies in and out of an environment (sbx cp, MCP upload and
 * download), init's side. Init is inside the environment with every wall
 * up, so the paths resolve exactly as a command's would and never leave it.
 *
 * A copy streams a tar (the store's canonical writer out, its
 * hostile-input-safe extractor in) through a pipe that init makes and hands
 * to the client; the work runs in a child of init (every wall inherited,
 * counted in the environment's pids and memory), so a large copy never
 * stalls init's loop. Replies (one JSON message, the fds with it):
 *   stat:    {ok, type: "file"|"dir"|"symlink"|"other", size}     (lstat)
 *   tar_out: {ok, type} + [read end]: the tar of the directory's contents
 *            (the directory itself is not an entry); the stream ends early
 *            if the tree cannot be read (the client's extraction fails).
 *   tar_in:  {ok} + [write end, status read end]: the client writes a tar
 *            and closes; the child extracts it into the directory (made if
 *            "create" is set: its parent must exist) and writes one line on
 *            the status pipe: {"ok":true,"files":N,"bytes":N} or
 *            {"ok":false,"errno":E,"message":"..."}.
 * Ownership inside: everything extracted belongs to the environment's root
 * (the extracting user); setuid/setgid bits and device nodes are dropped. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
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

static void reply(int sock, json_t *m, int *fds, size_t n)
{
	if (m)
		(void)json_send(sock, m, fds, n);
	json_decref(m);
}

static void reply_error(int sock, int errnum, const char *what, const char *path)
{
	char msg[4400];
	snprintf(msg, sizeof(msg), "%s '%s': %s", what, path,
		 errnum == ENOENT    ? "no such file or directory"
		 : errnum == ENOTDIR ? "not a directory"
				     : strerror(errnum));
	reply(sock,
	      json_pack("{s:s,s:b,s:i,s:s}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 0, CTL_F_ERRNO, errnum,
			CTL_F_MESSAGE, msg),
	      NULL, 0);
}

static const char *type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

/* The tar of dir's contents into wfd, in a child. */
static void tar_out(int sock, const char *path, const char *shown)
{
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		reply_error(sock, errno, "copy from", shown);
		return;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		reply_error(sock, errno, "copy from", shown);
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		safe_close(p[0]);
		safe_close(p[1]);
		reply_error(sock, errno, "copy from", shown);
		return;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		safe_close(p[0]);
		store_idmap ids = {.uid_base = 0, .gid_base = 0, .count = UINT32_MAX};
		int r = store_tar_write_dir(dfd, &ids, write_to_fd, &p[1], NULL, NULL);
		_exit(r < 0 ? 1 : 0);
	}
	safe_close(p[1]);
	reply(sock, json_pack("{s:s,s:b,s:s}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1, "type", "dir"), &p[0], 1);
	safe_close(p[0]);
}

static void status_line(int fd, json_t *m)
{
	_cleanup_free_ char *s = m ? json_dumps(m, JSON_COMPACT) : NULL;
	if (s) {
		(void)fd_write_all(fd, s, strlen(s));
		(void)fd_write_all(fd, "\n", 1);
	}
	json_decref(m);
}

/* Extracts what the client writes into dir, in a child. */
static void tar_in(int sock, const char *path, const char *shown, bool create)
{
	if (create && mkdir(path, 0755) < 0 && errno != EEXIST) {
		reply_error(sock, errno, "copy to", shown);
		return;
	}
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		reply_error(sock, errno, "copy to", shown);
		return;
	}
	int data[2], st[2];
	if (pipe2(data, O_CLOEXEC) < 0) {
		reply_error(sock, errno, "copy to", shown);
		return;
	}
	if (pipe2(st, O_CLOEXEC) < 0) {
		safe_close(data[0]);
		safe_close(data[1]);
		reply_error(sock, errno, "copy to", shown);
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		safe_close(data[0]);
		safe_close(data[1]);
		safe_close(st[0]);
		safe_close(st[1]);
		reply_error(sock, e, "copy to", shown);
		return;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		safe_close(data[1]);
		safe_close(st[0]);
		store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
		o.max_bytes = COPY_MAX_BYTES;
		o.devices = STORE_TAR_DEV_SKIP;
		store_tar_stats stats = {0};
		sbx_err *e = NULL;
		int in = data[0];
		if (store_tar_extract(dfd, store_tar_fd_read, &in, &o, &stats, &e) < 0) {
			status_line(st[1], json_pack("{s:b,s:i,s:s}", "ok", 0, "errno", sbx_err_errno(e),
						     "message", sbx_err_message(e)));
			_exit(1);
		}
		status_line(st[1], json_pack("{s:b,s:I,s:I}", "ok", 1, "files", (json_int_t)stats.entries,
					     "bytes", (json_int_t)stats.bytes));
		_exit(0);
	}
	safe_close(data[0]);
	safe_close(st[1]);
	int fds[2] = {data[1], st[0]};
	reply(sock, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1), fds, 2);
	safe_close(data[1]);
	safe_close(st[0]);
}

bool init_copy_handle(int sock, const json_t *m, const char *action, const char *path, const char *shown)
{
	if (streq(action, "stat")) {
		struct stat st;
		if (lstat(path, &st) < 0)
			reply_error(sock, errno, "stat", shown);
		else
			reply(sock,
			      json_pack("{s:s,s:b,s:s,s:I,s:i}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1, "type",
					type_of(st.st_mode), "size", (json_int_t)st.st_size, "mode",
					(int)(st.st_mode & 07777)),
			      NULL, 0);
		return true;
	}
	if (streq(action, "tar_out")) {
		tar_out(sock, path, shown);
		return true;
	}
	if (streq(action, "tar_in")) {
		tar_in(sock, path, shown, json_bool(m, "create", false));
		return true;
	}
	return false;
}
