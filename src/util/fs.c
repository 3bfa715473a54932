#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fd.h"
#include "util/syscalls.h"

int fs_mkdir_mode(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0)
		return -errno;
	/* The mode asked for, whatever the caller's umask (027 or 077 would
	 * take the x bit the environment's uids pass through by). */
	if (chmod(path, mode) < 0) {
		int e = errno;
		(void)rmdir(path);
		return -e;
	}
	return 0;
}

int fs_mkdir_p(const char *path, mode_t mode)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		int r = fs_mkdir_mode(p, mode);
		if (r < 0 && r != -EEXIST)
			return r;
		*s = '/';
	}
	int r = fs_mkdir_mode(p, mode);
	return r == -EEXIST ? 0 : r;
}

int fs_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	return fs_write_atomic_flags(path, data, len, mode, true);
}

int fs_write_atomic_flags(const char *path, const void *data, size_t len, mode_t mode, bool durable)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir =
	    slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	return fs_write_atomicat(dfd, slash ? slash + 1 : path, data, len, mode,
				 durable ? FS_ATOMIC_DURABLE : 0, NULL);
}

static ssize_t sys_write(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len);
}

static const fs_atomic_ops real_ops = {.write = sys_write, .fsync = fsync, .renameat = renameat};

int fs_write_atomicat(int dfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
		      const fs_atomic_ops *ops)
{
	if (!ops)
		ops = &real_ops;
	if (!*name || strchr(name, '/'))
		return -EINVAL;
	/* A random name, created O_EXCL: unique across processes and across
	 * the threads of one (`sbx serve` writes from many threads), so two
	 * writers never share, truncate or rename away each other's temp file.
	 * (O_TMPFILE + linkat cannot replace an existing name atomically.) */
	char tmp[NAME_MAX + 1];
	_cleanup_close_ int fd = -1;
	for (int i = 0; i < 100 && fd < 0; i++) {
		uint64_t rnd;
		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = ((uint64_t)getpid() << 32) ^ (uint64_t)random() ^ ((uint64_t)i << 56);
		snprintf(tmp, sizeof(tmp), ".tmp-%.200s-%016llx", name, (unsigned long long)rnd);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	/* Exactly mode, whatever the umask (these are sbx's own files, read by
	 * the environment's uids or by sbx later: a 077 umask must not hide them). */
	int r = fchmod(fd, mode) < 0 ? -errno : 0;
	for (const char *p = data; len && r == 0;) {
		ssize_t n = ops->write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			r = n < 0 ? -errno : -EIO;
		else {
			p += n;
			len -= (size_t)n;
		}
	}
	if (r == 0 && (flags & FS_ATOMIC_DURABLE) && ops->fsync(fd) < 0)
		r = -errno;
	if (r == 0 && ops->renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	/* The rename is durable once the directory is. */
	if ((flags & FS_ATOMIC_DURABLE) && ops->fsync(dfd) < 0)
		return -errno;
	return 0;
}

int fs_write_stringat(int dfd, const char *path, const char *s)
{
	_cleanup_close_ int fd = openat(dfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	ssize_t n = fd_write_all(fd, s, strlen(s));
	return n < 0 ? (int)n : 0;
}

int fs_write_string(const char *path, const char *s)
{
	return fs_write_stringat(AT_FDCWD, path, s);
}

int fs_read_fileat(int dfd, const char *path, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	return fd_read_all(fd, max, ret, ret_len);
}

int fs_read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	return fs_read_fileat(AT_FDCWD, path, max, ret, ret_len);
}

bool fs_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

char *fs_path_join(const char *a, const char *b)
{
	char *r = NULL;
	size_t la = strlen(a);
	while (*b == '/')
		b++;
	if (asprintf(&r, "%s%s%s", a, (la && a[la - 1] == '/') ? "" : "/", b) < 0)
		return NULL;
	return r;
}

/* Below this depth a directory is not descended into but renamed to the top
 * of the removal (top_fd) and removed from there: a tree of any depth (a
 * sandbox makes a million nested directories for free) is removed with a
 * bounded stack and at most 2 * RM_FLATTEN_DEPTH descriptors. */
#define RM_FLATTEN_DEPTH 128

static int rm_at(int dfd, const char *name, dev_t dev, int depth, int top_fd, unsigned *moved)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM && errno != EACCES)
		return -errno;
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return -EPERM;
	if (st.st_dev != dev)
		return -EBUSY; /* a mount point: never descend */
	if (depth >= RM_FLATTEN_DEPTH && top_fd >= 0) {
		for (;;) {
			char up[64];
			snprintf(up, sizeof(up), ".sbx-rm-%d-%u", (int)getpid(), ++*moved);
			if (renameat2(dfd, name, top_fd, up, RENAME_NOREPLACE) == 0)
				return 0; /* the top's loop removes it */
			/* moving a directory writes its "..": mode 000 (rootless) first gets 0700 */
			if ((errno == EACCES || errno == EPERM) && (st.st_mode & 0700) != 0700) {
				if (fchmodat(dfd, name, 0700, 0) < 0)
					return -errno;
				st.st_mode |= 0700;
				continue;
			}
			if (errno != EEXIST)
				return -errno;
		}
	}
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		if (fchmodat(dfd, name, 0700, 0) < 0)
			return -errno;
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if ((st.st_mode & 0700) != 0700)
		(void)!fchmod(fd, 0700);
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	DIR *d = fdopendir(dup);
	if (!d) {
		safe_close(dup);
		return -errno;
	}
	int r = 0;
	unsigned before;
	do { /* the top again while deeper directories were moved up into it */
		before = *moved;
		struct dirent *de;
		while ((de = readdir(d))) {
			if (streq(de->d_name, ".") || streq(de->d_name, ".."))
				continue;
			int q = rm_at(fd, de->d_name, dev, depth + 1, depth == 0 ? fd : top_fd, moved);
			if (q < 0 && r == 0)
				r = q;
		}
		rewinddir(d);
	} while (depth == 0 && r == 0 && *moved != before);
	closedir(d);
	if (r < 0)
		return r;
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int fs_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	unsigned moved = 0;
	return rm_at(AT_FDCWD, path, st.st_dev, 0, -1, &moved);
}

void fs_rm_rf_prefixed(const char *dir, const char *prefix)
{
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
			_cleanup_free_ char *p = fs_path_join(dir, de->d_name);
			if (p)
				(void)fs_rm_rf(p);
		}
	if (d)
		closedir(d);
}

bool fs_openat2_disabled;

/* The by-hand walk (see fs.h). todo: what is left to resolve; done: the
 * components resolved so far, from the root (for ".." and relative links). */
static int open_walk(int root_fd, const char *path, int flags, mode_t mode, int how)
{
	enum { CAP = 2 * PATH_MAX };
	_cleanup_free_ char *todo = malloc(CAP), *done = malloc(CAP), *next = malloc(CAP);
	if (!todo || !done || !next) {
		errno = ENOMEM;
		return -1;
	}
	if (how == FS_BENEATH && path[0] == '/') {
		errno = EXDEV;
		return -1;
	}
	if (strlen(path) >= CAP) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(todo, path);
	int links = 0;
restart:
	done[0] = 0;
	_cleanup_close_ int dir = openat(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	for (char *c = todo; *c;) {
		char *end = strchrnul(c, '/');
		bool last = true;
		for (const char *q = end; *q; q++)
			if (*q != '/') {
				last = false;
				break;
			}
		size_t cl = (size_t)(end - c);
		const char *rest = *end ? end + 1 : end;
		if (cl == 0 || (cl == 1 && c[0] == '.')) {
			if (last) /* "a/." or "a/": the directory itself */
				return openat(dir, ".", flags | O_CLOEXEC, mode);
			c = (char *)rest;
			continue;
		}
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			char *slash = strrchr(done, '/');
			if (!*done && how == FS_BENEATH) {
				errno = EXDEV;
				return -1;
			}
			/* Clamped at the root (IN_ROOT); walk again from it. */
			if (slash)
				*slash = 0;
			else
				done[0] = 0;
			if ((size_t)snprintf(next, CAP, "%s/%s", done, rest) >= CAP) {
				errno = ENAMETOOLONG;
				return -1;
			}
			strcpy(todo, next);
			goto restart;
		}
		char name[NAME_MAX + 1];
		if (cl > NAME_MAX) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(name, c, cl);
		name[cl] = 0;
		struct stat st;
		bool exists = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (!exists && (errno != ENOENT || !last))
			return -1;
		if (exists && S_ISLNK(st.st_mode) && !(last && (flags & O_NOFOLLOW))) {
			if (how == FS_BENEATH || ++links > 40) {
				errno = ELOOP;
				return -1;
			}
			char target[PATH_MAX];
			ssize_t k = readlinkat(dir, name, target, sizeof(target) - 1);
			if (k < 0)
				return -1;
			target[k] = 0;
			int n = target[0] == '/' ? snprintf(next, CAP, "%s/%s", target, rest)
						 : snprintf(next, CAP, "%s/%s/%s", done, target, rest);
			if (n < 0 || n >= CAP) {
				errno = ENAMETOOLONG;
				return -1;
			}
			strcpy(todo, next);
			goto restart;
		}
		if (last)
			return openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
		int f = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (f < 0)
			return -1;
		safe_close(dir);
		dir = f;
		size_t dl = strlen(done);
		if (dl + 1 + cl + 1 > CAP) {
			errno = ENAMETOOLONG;
			return -1;
		}
		done[dl] = '/';
		memcpy(done + dl + 1, name, cl + 1);
		c = (char *)rest;
	}
	/* Only slashes and dots: the root itself. */
	return openat(dir, ".", flags | O_CLOEXEC, mode);
}

int fs_open_beneath(int root_fd, const char *path, int flags, mode_t mode, int how)
{
	if (!path || !*path) {
		errno = ENOENT;
		return -1;
	}
	if (!fs_openat2_disabled) {
		struct open_how oh = {
		    .flags = (uint64_t)(flags | O_CLOEXEC),
		    .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		    .resolve = RESOLVE_NO_MAGICLINKS |
			       (how == FS_IN_ROOT ? RESOLVE_IN_ROOT : RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)};
		int fd = sys_openat2(root_fd, path, &oh);
		if (fd >= 0 || errno != ENOSYS)
			return fd;
	}
	return open_walk(root_fd, path, flags, mode, how);
}
