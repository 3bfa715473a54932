/* Secrets inside a live environment: the /run/secrets tmpfs, wiping and
 * removal on the phase switch (see secrets.h, docs/secrets.md). */
#include "runtime/secrets.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "util/fd.h"
#include "util/fs.h"

static void wipe_str(char *s, size_t len)
{
	if (s) {
		explicit_bzero(s, len);
		free(s);
	}
}

static void wipe_one(env_secret *s)
{
	wipe_str(s->value, s->len);
	free(s->name);
	*s = (env_secret){0};
}

void secrets_wipe(env_config *c)
{
	for (char **p = c->secret_env; p && *p; p++)
		wipe_str(*p, strlen(*p));
	free(c->secret_env);
	c->secret_env = NULL;
	for (size_t i = 0; i < c->n_secret_files; i++)
		wipe_one(&c->secret_files[i]);
	free(c->secret_files);
	c->secret_files = NULL;
	c->n_secret_files = 0;
}

static int open_in_root(int root_fd, const char *path, int flags)
{
	return fs_open_beneath(root_fd, path, flags, 0, FS_IN_ROOT);
}

int secrets_mount(env_config *c, const char *root, sbx_err **err)
{
	if (c->n_secret_files == 0)
		return 0;
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return err_errno(err, "open '%s'", root);
	/* /run (created when the template has none), then /run/secrets: only
	 * an empty mount point lands in the writable layer, never a value. */
	_cleanup_close_ int run = open_in_root(root_fd, "/run", O_PATH | O_DIRECTORY);
	if (run < 0 && errno == ENOENT && mkdirat(root_fd, "run", 0755) == 0)
		run = open_in_root(root_fd, "/run", O_PATH | O_DIRECTORY);
	if (run < 0)
		return err_errno(err, "secrets: open /run in the environment");
	if (mkdirat(run, "secrets", 0700) < 0 && errno != EEXIST)
		return err_errno(err, "secrets: create " SECRETS_DIR);
	_cleanup_close_ int mp = openat(run, "secrets", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mp < 0)
		return err_errno(err, "secrets: open " SECRETS_DIR);
	size_t bytes = 64 * 1024;
	for (size_t i = 0; i < c->n_secret_files; i++)
		bytes += c->secret_files[i].len + 4096;
	char target[64], opts[128];
	snprintf(target, sizeof(target), "/proc/self/fd/%d", mp);
	snprintf(opts, sizeof(opts), "mode=0700,size=%zu,nr_inodes=%zu", bytes, c->n_secret_files + 64);
	if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
		return err_errno(err, "secrets: mount a tmpfs on " SECRETS_DIR);
	/* The mount's root (the O_PATH fd above still names what is under it). */
	_cleanup_close_ int dfd = open_in_root(root_fd, SECRETS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (dfd < 0)
		return err_errno(err, "secrets: open the tmpfs at " SECRETS_DIR);
	for (size_t i = 0; i < c->n_secret_files; i++) {
		const env_secret *s = &c->secret_files[i];
		_cleanup_close_ int fd =
		    openat(dfd, s->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
		if (fd < 0)
			return err_errno(err, "secrets: create " SECRETS_DIR "/%s", s->name);
		int r = fd_write_all(fd, s->value, s->len);
		if (r < 0)
			return err_errnum(err, r, "secrets: write " SECRETS_DIR "/%s", s->name);
	}
	c->secrets_dirfd = TAKE_FD(dfd);
	return 0;
}

void secrets_drop(env_config *c, char *const *keep, json_t *removed)
{
	/* Variables: later commands' environments are built from secret_env. */
	size_t k = 0;
	for (size_t i = 0; c->secret_env && c->secret_env[i]; i++) {
		char *kv = c->secret_env[i];
		size_t nl = strcspn(kv, "=");
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)(nl < 255 ? nl : 255), kv);
		if (strv_contains(keep, name)) {
			c->secret_env[k++] = kv;
			continue;
		}
		json_array_append_new(removed, json_string(name));
		wipe_str(kv, strlen(kv));
	}
	if (c->secret_env)
		c->secret_env[k] = NULL;
	/* Files: the tmpfs is emptied of everything but kept secrets, through
	 * the descriptor opened when it was mounted (a setup command that moved
	 * /run around cannot redirect this). */
	k = 0;
	for (size_t i = 0; i < c->n_secret_files; i++) {
		env_secret *s = &c->secret_files[i];
		if (strv_contains(keep, s->name)) {
			c->secret_files[k++] = *s;
			continue;
		}
		json_array_append_new(removed, json_string(s->name));
		wipe_one(s);
	}
	c->n_secret_files = k;
	if (c->secrets_dirfd < 0)
		return;
	int dup = fcntl(c->secrets_dirfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		safe_close(dup);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		bool kept = false;
		for (size_t i = 0; i < c->n_secret_files && !kept; i++)
			kept = streq(c->secret_files[i].name, de->d_name);
		if (kept)
			continue;
		if (unlinkat(c->secrets_dirfd, de->d_name, 0) < 0 && (errno == EISDIR || errno == EPERM)) {
			char p[512];
			snprintf(p, sizeof(p), "/proc/self/fd/%d/%s", c->secrets_dirfd, de->d_name);
			(void)fs_rm_rf(p);
		}
	}
	closedir(d);
	if (c->n_secret_files == 0)
		c->secrets_dirfd = safe_close(c->secrets_dirfd);
}
