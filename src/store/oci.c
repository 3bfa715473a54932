/* OCI image layouts on disk (oci.h): a layout opened or created, its
 * index.json, blobs read and written (a layer compressed on the way). */
#include "store/oci.h"
#include "store/progress.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"

/* ---- I/O: layouts and blobs -------------------------------------------- */

void oci_layout_close(oci_layout *l)
{
	l->dfd = safe_close(l->dfd);
	l->sha_fd = safe_close(l->sha_fd);
	free(l->path);
	l->path = NULL;
}

static int open_dir_at(int dfd, const char *name, bool create, const char *path, sbx_err **err)
{
	if (create && mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "create '%s/%s'", path, name);
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return err_set(err, SBX_E_INVALID_ARGUMENT, errno,
				       "'%s/%s' is not a directory (symlinks are not followed)", path, name);
		return err_errno(err, "open '%s/%s'", path, name);
	}
	return fd;
}

static int read_small_at(int dfd, const char *name, const char *path, size_t max, char **ret, size_t *ret_len,
			 sbx_err **err)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ELOOP,
				       "'%s/%s' is a symlink (not followed)", path, name);
		return err_errno(err, "open '%s/%s'", path, name);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat '%s/%s'", path, name);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s/%s' is not a regular file", path,
			       name);
	if ((uint64_t)st.st_size > max)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "'%s/%s' is %lld bytes (max %zu)", path,
			       name, (long long)st.st_size, max);
	{
		_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
		if (!buf)
			return err_errnum(err, ENOMEM, "read '%s/%s'", path, name);
		size_t got = 0;
		while (got < (size_t)st.st_size) {
			ssize_t k = RETRY_EINTR(read(fd, buf + got, (size_t)st.st_size - got));
			if (k < 0)
				return err_errno(err, "read '%s/%s'", path, name);
			if (k == 0)
				break;
			got += (size_t)k;
		}
		buf[got] = 0;
		*ret = TAKE_PTR(buf);
		if (ret_len)
			*ret_len = got;
		return 0;
	}
	return 0;
}

int oci_layout_open(const char *dir, bool create, oci_layout *ret, sbx_err **err)
{
	oci_layout l = {.dfd = -1, .sha_fd = -1};
	if (create) {
		int r = fs_mkdir_p(dir, 0755);
		if (r < 0)
			return err_errnum(err, r, "create '%s'", dir);
	}
	l.dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l.dfd < 0)
		return err_errno(err, "open image layout '%s'", dir);
	l.path = strdup(dir);
	if (!l.path) {
		oci_layout_close(&l);
		return err_errnum(err, ENOMEM, "open '%s'", dir);
	}
	if (create) {
		static const char lay[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
		_cleanup_free_ char *p = fs_path_join(dir, "oci-layout");
		int r = p ? fs_write_atomic(p, lay, strlen(lay), 0644) : -ENOMEM;
		if (r < 0) {
			oci_layout_close(&l);
			return err_errnum(err, r, "write '%s/oci-layout'", dir);
		}
	} else {
		_cleanup_free_ char *buf = NULL;
		size_t n = 0;
		if (read_small_at(l.dfd, "oci-layout", dir, 4096, &buf, &n, err) < 0) {
			oci_layout_close(&l);
			return err_wrap(err, "not an OCI image layout");
		}
		_cleanup_json_ json_t *j = json_loadb(buf, n, 0, NULL);
		const char *v = json_str(j, "imageLayoutVersion");
		if (!v || !startswith(v, "1.")) {
			oci_layout_close(&l);
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "'%s/oci-layout': imageLayoutVersion must be 1.x", dir);
		}
	}
	_cleanup_close_ int blobs = open_dir_at(l.dfd, "blobs", create, dir, err);
	if (blobs < 0) {
		oci_layout_close(&l);
		return -1;
	}
	_cleanup_free_ char *bp = fs_path_join(dir, "blobs");
	l.sha_fd = open_dir_at(blobs, "sha256", create, bp ? bp : dir, err);
	if (l.sha_fd < 0) {
		oci_layout_close(&l);
		return -1;
	}
	*ret = l;
	return 0;
}

int oci_layout_read_index(oci_layout *l, char **ret, size_t *ret_len, sbx_err **err)
{
	return read_small_at(l->dfd, "index.json", l->path, OCI_MAX_JSON, ret, ret_len, err);
}

int oci_blob_open(oci_layout *l, const oci_descriptor *d, int *ret_fd, sbx_err **err)
{
	const char *hex = store_digest_hex(d->digest);
	if (!hex)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest");
	_cleanup_close_ int fd = openat(l->sha_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "blob %s is missing from the layout",
				       d->digest);
		if (errno == ELOOP)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ELOOP,
				       "blob %s is a symlink (not followed)", d->digest);
		return err_errno(err, "open blob %s", d->digest);
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat blob %s", d->digest);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "blob %s is not a regular file",
			       d->digest);
	if (st.st_size != d->size)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is %lld bytes, its descriptor says %lld", d->digest,
			       (long long)st.st_size, (long long)d->size);
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int oci_blob_read(oci_layout *l, const oci_descriptor *d, char **ret, size_t *ret_len, sbx_err **err)
{
	if (d->size > (int64_t)OCI_MAX_JSON)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "blob %s: %lld bytes (max %u for JSON)",
			       d->digest, (long long)d->size, OCI_MAX_JSON);
	_cleanup_close_ int fd = -1;
	if (oci_blob_open(l, d, &fd, err) < 0)
		return -1;
	_cleanup_free_ char *buf = malloc((size_t)d->size + 1);
	if (!buf)
		return err_errnum(err, ENOMEM, "read blob %s", d->digest);
	size_t got = 0;
	while (got < (size_t)d->size) {
		ssize_t k = RETRY_EINTR(read(fd, buf + got, (size_t)d->size - got));
		if (k < 0)
			return err_errno(err, "read blob %s", d->digest);
		if (k == 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "blob %s is truncated",
				       d->digest);
		got += (size_t)k;
	}
	buf[got] = 0;
	char dg[STORE_DIGEST_SIZE];
	if (store_digest_buf(buf, got, dg, err) < 0)
		return -1;
	if (!streq(dg, d->digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is corrupt: its content hashes to %s", d->digest, dg);
	*ret = TAKE_PTR(buf);
	*ret_len = got;
	return 0;
}

static int tmp_name(char buf[64])
{
	unsigned long long rnd = 0;
	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	snprintf(buf, 64, ".tmp-sbx-%d-%llx", (int)getpid(), rnd);
	return 0;
}

/* Commits the temp blob under its digest. */
static int blob_commit(oci_layout *l, int fd, const char *tmp, const char *digest, sbx_err **err)
{
	if (fsync(fd) < 0) {
		unlinkat(l->sha_fd, tmp, 0);
		return err_errno(err, "fsync blob");
	}
	if (renameat(l->sha_fd, tmp, l->sha_fd, store_digest_hex(digest)) < 0) {
		int e = errno;
		unlinkat(l->sha_fd, tmp, 0);
		return err_errnum(err, e, "write blob %s", digest);
	}
	return 0;
}

int oci_blob_write(oci_layout *l, const void *data, size_t len, char ret_digest[STORE_DIGEST_SIZE],
		   sbx_err **err)
{
	char tmp[64];
	if (store_digest_buf(data, len, ret_digest, err) < 0 || tmp_name(tmp) < 0)
		return err_ret(err) ?: -EIO;
	_cleanup_close_ int fd =
	    openat(l->sha_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(err, "create blob in '%s'", l->path);
	if (store_fs_write_all(fd, data, len, err) < 0) {
		unlinkat(l->sha_fd, tmp, 0);
		return -1;
	}
	return blob_commit(l, fd, tmp, ret_digest, err);
}

int oci_blob_write_layer(oci_layout *l, const char *tar_path, bool gzip, oci_descriptor *ret, sbx_err **err)
{
	_cleanup_close_ int in = open(tar_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return err_errno(err, "open layer tar '%s'", tar_path);
	return oci_blob_write_layer_fd(l, in, tar_path, gzip, ret, err);
}

int oci_blob_write_layer_fd(oci_layout *l, int in, const char *tar_path, bool gzip, oci_descriptor *ret,
			    sbx_err **err)
{
	char tmp[64];
	if (tmp_name(tmp) < 0)
		return err_errno(err, "getrandom");
	_cleanup_close_ int fd =
	    openat(l->sha_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_errno(err, "create blob in '%s'", l->path);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h) {
		unlinkat(l->sha_fd, tmp, 0);
		return -1;
	}
	/* Per call, not static: exports run concurrently in the MCP server's threads. */
	enum { BUF = 1 << 16 };
	_cleanup_free_ uint8_t *ibuf = malloc(BUF), *obuf = malloc(BUF);
	if (!ibuf || !obuf) {
		unlinkat(l->sha_fd, tmp, 0);
		return err_oom(err);
	}
	z_stream z = {0};
	if (gzip && deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		unlinkat(l->sha_fd, tmp, 0);
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "zlib: deflateInit2 failed");
	}
	int r = 0;
	uint64_t total = 0;
	for (bool eof = false; !eof && r == 0;) {
		ssize_t k = RETRY_EINTR(read(in, ibuf, BUF));
		if (k > 0)
			store_progress_add((uint64_t)k, 0);
		if (k < 0) {
			r = err_errno(err, "read '%s'", tar_path);
			break;
		}
		eof = k == 0;
		if (!gzip) {
			if (k > 0 && ((r = store_hasher_update(h, ibuf, (size_t)k, err)) < 0 ||
				      (r = store_fs_write_all(fd, ibuf, (size_t)k, err)) < 0))
				break;
			total += (uint64_t)k;
			continue;
		}
		z.next_in = ibuf;
		z.avail_in = (uInt)k;
		int zr;
		do {
			z.next_out = obuf;
			z.avail_out = BUF;
			zr = deflate(&z, eof ? Z_FINISH : Z_NO_FLUSH);
			if (zr == Z_STREAM_ERROR) {
				r = err_set(err, SBX_E_INTERNAL, EIO, "zlib: deflate failed");
				break;
			}
			size_t out = BUF - z.avail_out;
			if (out && ((r = store_hasher_update(h, obuf, out, err)) < 0 ||
				    (r = store_fs_write_all(fd, obuf, out, err)) < 0))
				break;
			total += out;
		} while (z.avail_out == 0 || (eof && zr != Z_STREAM_END));
	}
	if (gzip)
		deflateEnd(&z);
	if (r == 0)
		r = store_hasher_final(h, ret->digest, err);
	if (r < 0) {
		unlinkat(l->sha_fd, tmp, 0);
		return r;
	}
	ret->size = (int64_t)total;
	return blob_commit(l, fd, tmp, ret->digest, err);
}

int oci_layout_write_index(oci_layout *l, const char *json, sbx_err **err)
{
	_cleanup_free_ char *p = fs_path_join(l->path, "index.json");
	struct stat st;
	if (!p)
		return err_errnum(err, ENOMEM, "index.json");
	if (fstatat(l->dfd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not a regular file", p);
	int r = fs_write_atomic(p, json, strlen(json), 0644);
	return r < 0 ? err_errnum(err, r, "write '%s'", p) : 0;
}
