/* The host template's base captured as a layer (see hostbase.h). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/hostbase.h"
#include "store/layer.h"
#include "store/storefs.h"
#include "util/fd.h"
#include "util/fs.h"

/* In the child: the merged tree at <t>/root, then the layer. Writes
 * "sha256:..." or "!message" to wfd. */
static int capture_child(const char *store_root, const mask_list *mask, const char *t, sbx_err **err)
{
	char p[4300], q[4300], opts[9000];
	if (unshare(CLONE_NEWNS) < 0)
		return err_errno(err, "unshare mount namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_errno(err, "make mounts private");
	if (mount("tmpfs", t, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
		return err_errno(err, "mount tmpfs on '%s'", t);
	snprintf(p, sizeof(p), "%s/mask", t);
	snprintf(q, sizeof(q), "%s/empty", t);
	if (mkdir(p, 0755) < 0 || mkdir(q, 0755) < 0)
		return err_errno(err, "mkdir in '%s'", t);
	_cleanup_close_ int mfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = mfd < 0 ? -errno : mask_replay(mask, mfd, true);
	if (r < 0)
		return err_errnum(err, -r, "replay the mask into '%s'", p);
	/* The root: the mask over nothing (its links, empty and whited-out
	 * top-level entries), then each system directory's own overlay. */
	snprintf(p, sizeof(p), "%s/root", t);
	if (mkdir(p, 0755) < 0)
		return err_errno(err, "mkdir '%s'", p);
	snprintf(opts, sizeof(opts), "userxattr,lowerdir=%s/mask:%s/empty", t, t);
	if (mount("overlay", p, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
		return err_errno(err, "mount the mask on '%s'", p);
	_cleanup_strv_free_ char **dirs = mask_host_dirs(mask);
	for (char **d = dirs; d && *d; d++) {
		snprintf(q, sizeof(q), "%s/root/%s", t, *d);
		snprintf(opts, sizeof(opts), "userxattr,lowerdir=%s/mask/%s:/%s", t, *d, *d);
		if (mount("overlay", q, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, opts) < 0)
			return err_errno(err, "mount '/%s' under the mask on '%s'", *d, q);
	}
	_cleanup_close_ int rfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return err_errno(err, "open '%s'", p);
	store_idmap ids;
	store_layer_ids(&ids);
	store_layer_info li;
	if (store_layer_put_from_dir(store_root, rfd, &ids, &li, err) < 0)
		return err_wrap(err, "store the host base as a layer");
	return (int)fd_write_all(STDOUT_FILENO, li.digest, strlen(li.digest)) < 0 ? err_errno(err, "write")
										  : 0;
}

int hostbase_capture(const char *store_root, const mask_list *mask, char ret[STORE_DIGEST_SIZE],
		     sbx_err **err)
{
	if (geteuid() != 0)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "capturing the host template's base needs root (overlay mounts, the host's owners)");
	_cleanup_free_ char *tmp = store_fs_path(store_root, STORE_DIR_TMP), *t = NULL;
	if (!tmp || asprintf(&t, "%s/hostbase-XXXXXX", tmp) < 0)
		return err_oom(err);
	if (!mkdtemp(t))
		return err_errno(err, "scratch directory in '%s'", tmp);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		rmdir(t);
		return err_errno(err, "pipe");
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		rmdir(t);
		return err_errno(err, "fork");
	}
	if (pid == 0) {
		close(pfd[0]);
		if (dup2(pfd[1], STDOUT_FILENO) < 0)
			_exit(1);
		sbx_err *e = NULL;
		if (capture_child(store_root, mask, t, &e) < 0) {
			const char *m = sbx_err_message(e);
			(void)!write(STDOUT_FILENO, "!", 1);
			(void)!write(STDOUT_FILENO, m, strlen(m));
			_exit(1);
		}
		_exit(0);
	}
	close(pfd[1]);
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	int rr = fd_read_all(pfd[0], 65536, &out, &len);
	close(pfd[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	rmdir(t); /* the tmpfs went with the child's mount namespace */
	if (rr < 0)
		return err_errnum(err, -rr, "host base: read the child's answer");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || len == 0 || out[0] == '!')
		return err_set(err, SBX_E_INTERNAL, EIO, "host base: %s",
			       len > 1 && out[0] == '!' ? out + 1 : "the capture failed");
	if (len != STORE_DIGEST_LEN || (out[len] = 0, !store_digest_valid(out)))
		return err_set(err, SBX_E_INTERNAL, EIO, "host base: a malformed answer from the capture");
	memcpy(ret, out, STORE_DIGEST_SIZE);
	return 0;
}
