/* Beneath-only lookups in a layer tree (moved from src/api/diff.c). */
#include "store/treewalk.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/layer.h"
#include "util/fs.h"
#include "util/macro.h"

int store_beneath_open(int root, const char *rel, int flags)
{
	if (!*rel)
		return openat(root, ".", flags | O_CLOEXEC);
	int fd =
	    fs_open_beneath(root, rel, flags | O_NOFOLLOW, 0, FS_BENEATH); /* falls back without openat2 */
	return fd < 0 ? -errno : fd;
}

/* Opens the parent of rel and points *base at its last component. */
int store_beneath_open_parent(int root, const char *rel, const char **base)
{
	const char *s = strrchr(rel, '/');
	if (!s) {
		*base = rel;
		return store_beneath_open(root, "", O_PATH | O_DIRECTORY);
	}
	*base = s + 1;
	_cleanup_free_ char *p = strndup(rel, (size_t)(s - rel));
	return p ? store_beneath_open(root, p, O_PATH | O_DIRECTORY) : -ENOMEM;
}

int store_beneath_lstat(int root, const char *rel, struct stat *st)
{
	if (!*rel)
		return fstat(root, st) < 0 ? -errno : 0;
	const char *base;
	_cleanup_close_ int pfd = store_beneath_open_parent(root, rel, &base);
	if (pfd < 0)
		return pfd;
	return fstatat(pfd, base, st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

bool store_beneath_opaque(int root, const char *rel)
{
	_cleanup_close_ int fd = store_beneath_open(root, rel, O_RDONLY | O_DIRECTORY);
	char v[4];
	if (fd < 0)
		return false;
	ssize_t n = fgetxattr(fd, STORE_OVL_OPAQUE_XATTR, v, sizeof(v));
	if (n < 0)
		n = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v));
	return n == 1 && v[0] == 'y';
}
