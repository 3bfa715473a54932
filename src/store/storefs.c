#include <stdlib.h>
#include <dirent.h>
#include "store/storefs.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"

static int sys_syncfs(int fd)
{
	return syncfs(fd);
}

store_syscalls store_sys = {
    .write = write,
    .fsync = fsync,
    .syncfs = sys_syncfs,
    .renameat = renameat,
    .linkat = linkat,
    .fstatat = fstatat,
};

char *store_fs_path(const char *root, const char *rel)
{
	return fs_path_join(root, rel);
}

int store_fs_init(const char *root, sbx_err **err)
{
	static const char *const dirs[] = {STORE_DIR_TMP, STORE_DIR_LAYERS, STORE_DIR_OBJECTS,
					   STORE_DIR_SNAPSHOTS, STORE_DIR_LABELS};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		_cleanup_free_ char *p = store_fs_path(root, dirs[i]);
		if (!p)
			return err_errnum(err, ENOMEM, "store");
		int r = fs_mkdir_p(p, 0700);
		if (r < 0)
			return err_errnum(err, r, "create '%s'", p);
	}
	return 0;
}

int store_fs_fsync_dir(const char *path, sbx_err **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "open '%s'", path);
	if (store_sys.fsync(fd) < 0)
		return err_errno(err, "fsync '%s'", path);
	return 0;
}

int store_fs_write_all(int fd, const void *buf, size_t len, sbx_err **err)
{
	const char *p = buf;
	while (len) {
		ssize_t n = store_sys.write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? err_errno(err, "write") : err_errnum(err, EIO, "write");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

int store_fs_write_sparse(int fd, const void *buf, size_t len, uint64_t *off, sbx_err **err)
{
	const unsigned char *p = buf;
	while (len) {
		/* up to the next block boundary: a whole aligned block may be a hole */
		size_t k = STORE_FS_HOLE - (size_t)(*off % STORE_FS_HOLE);
		if (k > len)
			k = len;
		if (k == STORE_FS_HOLE && all_zero(p, k)) {
			if (lseek(fd, (off_t)k, SEEK_CUR) < 0)
				return err_errno(err, "seek over a hole");
		} else {
			/* data: this block and the following ones up to the next hole, in one write */
			while (k < len) {
				size_t n = len - k < STORE_FS_HOLE ? len - k : STORE_FS_HOLE;
				if (n == STORE_FS_HOLE && all_zero(p + k, n))
					break;
				k += n;
			}
			int r = store_fs_write_all(fd, p, k, err);
			if (r < 0)
				return r;
		}
		p += k;
		len -= k;
		*off += k;
	}
	return 0;
}

int store_fs_sparse_end(int fd, uint64_t size, sbx_err **err)
{
	if (ftruncate(fd, (off_t)size) < 0)
		return err_errno(err, "set the length after a hole");
	return 0;
}

int store_fs_write_atomic(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
			  sbx_err **err)
{
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_errno(err, "open '%s'", dir);
	/* util/fs.c's one atomic write, its steps through the fault table. */
	const fs_atomic_ops ops = {
	    .write = store_sys.write, .fsync = store_sys.fsync, .renameat = store_sys.renameat};
	int r = fs_write_atomicat(dfd, name, data, len, mode, FS_ATOMIC_DURABLE, &ops);
	if (r < 0)
		return err_errnum(err, r, "write '%s/%s' atomically", dir, name);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir accepted by keep (which may rewrite them into *out). */
int store_fs_list_dir(const char *dir, char *(*keep)(const char *name), char ***ret, sbx_err **err)
{
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	if (!v)
		return err_errnum(err, ENOMEM, "store");
	size_t n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			return err_errno(err, "open '%s'", dir);
		*ret = TAKE_PTR(v);
		return 0;
	}
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		char *k = keep(de->d_name);
		if (!k)
			continue;
		char **nv = realloc(v, (n + 2) * sizeof(char *));
		if (!nv) {
			free(k);
			r = err_errnum(err, ENOMEM, "store");
			break;
		}
		v = nv;
		v[n++] = k;
		v[n] = NULL;
	}
	closedir(d);
	if (r < 0)
		return r;
	qsort(v, n, sizeof(char *), cmp_str);
	*ret = TAKE_PTR(v);
	return 0;
}
