#include "store/layer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/storefs.h"
#include "store/tarr.h"
#include "store/tarw.h"
#include "util/fs.h"

void store_layer_ids(store_idmap *ret)
{
	if (geteuid() == 0)
		*ret = (store_idmap){0, 0, STORE_LAYER_ID_COUNT};
	else
		*ret = (store_idmap){(uint32_t)geteuid(), (uint32_t)getegid(), 1};
}

char *store_layer_path(const char *store_root, const char *digest)
{
	const char *hex = store_digest_hex(digest);
	char *p = NULL;
	if (!hex || asprintf(&p, "%s/" STORE_DIR_LAYERS "/%s", store_root, hex) < 0)
		return NULL;
	return p;
}

char *store_blob_path(const char *store_root, const char *digest)
{
	const char *hex = store_digest_hex(digest);
	char *p = NULL;
	if (!hex || asprintf(&p, "%s/" STORE_DIR_OBJECTS "/%.2s/%s", store_root, hex, hex) < 0)
		return NULL;
	return p;
}

bool store_layer_exists(const char *store_root, const char *digest)
{
	_cleanup_free_ char *p = store_layer_path(store_root, digest);
	struct stat st;
	return p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

typedef struct sink {
	int fd; /* -1: hash only */
	store_hasher *h;
	bool sparse;  /* fd is a new file: zero blocks become holes */
	uint64_t off; /* bytes written, when sparse */
} sink;

/* A temporary name in the store's tmp/: "<prefix>-<pid>-<64 random bits>".
 * The bits come from getrandom, never from an unseeded random(), whose
 * sequence is the same in every process: after pids wrap, a killed writer's
 * leftover and a new writer's name were the same, and the new one failed
 * with EEXIST (or, removing the leftover, could take a live writer's). */
static void tmp_name_make(char *buf, size_t n, const char *prefix)
{
	uint64_t rnd;
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		rnd = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)(uintptr_t)buf << 17);
	}
	snprintf(buf, n, "%s-%d-%016llx", prefix, (int)getpid(), (unsigned long long)rnd);
}

static int sink_write(void *ud, const void *buf, size_t len, sbx_err **err)
{
	sink *s = ud;
	int r = store_hasher_update(s->h, buf, len, err);
	if (r < 0)
		return r;
	if (s->fd < 0)
		return 0;
	return s->sparse ? store_fs_write_sparse(s->fd, buf, len, &s->off, err)
			 : store_fs_write_all(s->fd, buf, len, err);
}

/* A hole of a file in the tree: hashed from a zero buffer; in a sparse
 * file, skipped (the file is new and written front to back, so what is not
 * written reads as zeros), else written. */
static int sink_zeros(void *ud, uint64_t len, sbx_err **err)
{
	static uint8_t zero[64 * 1024]; /* never written: pages of the shared zero page */
	sink *s = ud;
	for (uint64_t left = len; left;) {
		size_t k = left > sizeof(zero) ? sizeof(zero) : (size_t)left;
		int r = store_hasher_update(s->h, zero, k, err);
		if (r < 0)
			return r;
		if (s->fd >= 0 && !s->sparse && (r = store_fs_write_all(s->fd, zero, k, err)) < 0)
			return r;
		left -= k;
	}
	if (s->fd >= 0 && s->sparse) {
		if (lseek(s->fd, (off_t)len, SEEK_CUR) < 0)
			return err_errno(err, "seek over a hole");
		s->off += len;
	}
	return 0;
}

/* Puts the blob (the open temp file tmp_name in tmp/) at its address. */
static int blob_commit(const char *store_root, const char *digest, int tmp_dfd, const char *tmp_name,
		       sbx_err **err)
{
	_cleanup_free_ char *blob = store_blob_path(store_root, digest);
	if (!blob)
		return err_errnum(err, ENOMEM, "store");
	_cleanup_free_ char *dir = strndup(blob, (size_t)(strrchr(blob, '/') - blob));
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	int r = fs_mkdir_p(dir, 0700);
	if (r < 0)
		return err_errnum(err, r, "create '%s'", dir);
	if (store_sys.renameat(tmp_dfd, tmp_name, AT_FDCWD, blob) < 0)
		return err_errno(err, "rename blob into '%s'", blob);
	return store_fs_fsync_dir(dir, err);
}

int store_blob_put(const char *store_root, const void *data, size_t len, char ret_digest[STORE_DIGEST_SIZE],
		   sbx_err **err)
{
	char digest[STORE_DIGEST_SIZE];
	if (store_digest_buf(data, len, digest, err) < 0)
		return -1;
	_cleanup_free_ char *blob = store_blob_path(store_root, digest);
	if (!blob)
		return err_errnum(err, ENOMEM, "store");
	if (!fs_exists(blob)) {
		int r = store_fs_init(store_root, err);
		if (r < 0)
			return r;
		_cleanup_free_ char *tmpdir = store_fs_path(store_root, STORE_DIR_TMP);
		if (!tmpdir)
			return err_errnum(err, ENOMEM, "store");
		_cleanup_close_ int tdfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (tdfd < 0)
			return err_errno(err, "open '%s'", tmpdir);
		char tmp_name[64];
		tmp_name_make(tmp_name, sizeof(tmp_name), "blob");
		_cleanup_close_ int fd =
		    openat(tdfd, tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0)
			return err_errno(err, "create '%s/%s'", tmpdir, tmp_name);
		if (store_fs_write_all(fd, data, len, err) < 0 || store_sys.fsync(fd) < 0 ||
		    blob_commit(store_root, digest, tdfd, tmp_name, err) < 0) {
			(void)unlinkat(tdfd, tmp_name, 0);
			return err && *err ? -1 : err_errno(err, "write blob");
		}
	}
	memcpy(ret_digest, digest, STORE_DIGEST_SIZE);
	return 0;
}

int store_blob_get(const char *store_root, const char *digest, size_t max, char **ret, size_t *ret_len,
		   sbx_err **err)
{
	_cleanup_free_ char *p = store_blob_path(store_root, digest);
	if (!p)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest '%s'", digest);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "blob %s is missing", digest)
				       : err_errno(err, "open blob %s", digest);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat blob %s", digest);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "blob %s is larger than %zu bytes", digest,
			       max);
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return err_errnum(err, ENOMEM, "read blob %s", digest);
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? err_errno(err, "read blob %s", digest)
				     : err_set(err, SBX_E_INTERNAL, EIO, "blob %s: short read", digest);
		got += (size_t)n;
	}
	buf[got] = 0;
	char check[STORE_DIGEST_SIZE];
	if (store_digest_buf(buf, got, check, err) < 0)
		return -1;
	if (!streq(check, digest))
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "blob %s is corrupt: its content hashes to %s",
			       digest, check);
	*ret = TAKE_PTR(buf);
	*ret_len = got;
	return 0;
}

static int put(const char *store_root, int dir_fd, const store_idmap *ids, store_layer_info *ret,
	       char *tmp_file, char *tmp_tree, sbx_err **err)
{
	int r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *tmpdir = store_fs_path(store_root, STORE_DIR_TMP);
	if (!tmpdir)
		return err_errnum(err, ENOMEM, "store");
	_cleanup_close_ int tdfd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tdfd < 0)
		return err_errno(err, "open '%s'", tmpdir);

	/* 1. The canonical tar, hashed as it is written. */
	tmp_name_make(tmp_file, 64, "blob");
	_cleanup_close_ int fd =
	    openat(tdfd, tmp_file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, "create '%s/%s'", tmpdir, tmp_file);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	sink s = {fd, h, .sparse = true};
	store_tar_stats st;
	r = store_tar_write_dir_sparse(dir_fd, ids, STORE_TAR_W_SOCKETS_DELETED, sink_write, sink_zeros, &s,
				       &st, err);
	if (r < 0)
		return err_wrap(err, "tar");
	r = store_fs_sparse_end(fd, s.off, err);
	if (r < 0)
		return err_wrap(err, "tar");
	if (store_sys.fsync(fd) < 0)
		return err_errno(err, "fsync tar");
	store_layer_info info = {.size = st.bytes, .files = st.entries};
	r = store_hasher_final(h, info.digest, err);
	if (r < 0)
		return r;

	/* 2. A layer is stored once. */
	if (store_layer_exists(store_root, info.digest)) {
		info.existed = true;
		*ret = info;
		return 0;
	}

	/* 3. The tree, extracted from the tar into tmp/ and renamed into place. */
	tmp_name_make(tmp_tree, 64, "layer");
	if (mkdirat(tdfd, tmp_tree, 0755) < 0)
		return err_errno(err, "create '%s/%s'", tmpdir, tmp_tree);
	_cleanup_close_ int tree = openat(tdfd, tmp_tree, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0)
		return err_errno(err, "open '%s/%s'", tmpdir, tmp_tree);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return err_errno(err, "seek tar");
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.max_bytes = st.bytes;
	o.max_entries = st.entries;
	o.whiteouts = true;
	o.literal_names = true;
	o.keep_setid = true;
	o.acls = true;
	store_layer_ids(&o.ids);
	o.chown = geteuid() == 0;
	r = store_tar_extract(tree, store_tar_fd_read, &fd, &o, NULL, err);
	if (r < 0)
		return err_wrap(err, "extract layer");
	if (store_sys.syncfs(tree) < 0)
		return err_errno(err, "syncfs");

	/* The tar itself is not kept: the tree re-tars to the same bytes
	 * (store_layer_tar), so keeping both would store every change twice. */
	_cleanup_free_ char *dst = store_layer_path(store_root, info.digest);
	if (!dst)
		return err_errnum(err, ENOMEM, "store");
	if (store_sys.renameat(tdfd, tmp_tree, AT_FDCWD, dst) < 0) {
		if (errno != EEXIST && errno != ENOTEMPTY)
			return err_errno(err, "rename layer into '%s'", dst);
		info.existed = true; /* another writer won the race: same content */
	} else
		tmp_tree[0] = 0;
	_cleanup_free_ char *ldir = store_fs_path(store_root, STORE_DIR_LAYERS);
	if (!ldir)
		return err_errnum(err, ENOMEM, "store");
	r = store_fs_fsync_dir(ldir, err);
	if (r < 0)
		return r;
	*ret = info;
	return 0;
}

int store_layer_put_from_dir(const char *store_root, int dir_fd, const store_idmap *ids,
			     store_layer_info *ret, sbx_err **err)
{
	char tmp_file[64] = "", tmp_tree[64] = "";
	int r = put(store_root, dir_fd, ids, ret, tmp_file, tmp_tree, err);
	/* Temp entries go now; after a crash, store_gc_clean_tmp() removes them. */
	_cleanup_free_ char *tmpdir = store_fs_path(store_root, STORE_DIR_TMP);
	if (tmpdir && tmp_file[0]) {
		_cleanup_free_ char *p = fs_path_join(tmpdir, tmp_file);
		if (p)
			unlink(p);
	}
	if (tmpdir && tmp_tree[0]) {
		_cleanup_free_ char *p = fs_path_join(tmpdir, tmp_tree);
		if (p)
			fs_rm_rf(p);
	}
	if (r < 0)
		return err_wrap(err, "store layer");
	return 0;
}

int store_blob_verify(const char *store_root, const char *digest, sbx_err **err)
{
	_cleanup_free_ char *p = store_blob_path(store_root, digest);
	if (!p)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest '%s'", digest);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "blob %s is missing", digest);
		return err_errno(err, "blob %s: open", digest);
	}
	char got[STORE_DIGEST_SIZE];
	int r = store_digest_fd(fd, got, NULL, err);
	if (r < 0)
		return err_wrap(err, "blob %s", digest);
	if (!streq(got, digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is corrupt: its content hashes to %s", digest, got);
	return 0;
}

static int layer_tar(const char *store_root, const char *digest, unsigned flags, int out_fd, sbx_err **err)
{
	_cleanup_free_ char *p = store_layer_path(store_root, digest);
	if (!p)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest '%s'",
			       digest ? digest : "");
	_cleanup_close_ int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "layer %s is missing", digest)
				       : err_errno(err, "layer %s: open", digest);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	store_idmap ids;
	store_layer_ids(&ids);
	/* An empty regular file (export's scratch file) gets the tree's holes. */
	struct stat ost;
	bool sparse = fstat(out_fd, &ost) == 0 && S_ISREG(ost.st_mode) && ost.st_size == 0 &&
		      lseek(out_fd, 0, SEEK_CUR) == 0;
	sink s = {out_fd, h, .sparse = sparse};
	if (store_tar_write_dir_sparse(fd, &ids, flags, sink_write, sink_zeros, &s, NULL, err) < 0)
		return err_wrap(err, "layer %s", digest);
	if (sparse && store_fs_sparse_end(out_fd, s.off, err) < 0)
		return err_wrap(err, "layer %s", digest);
	char got[STORE_DIGEST_SIZE];
	if (store_hasher_final(h, got, err) < 0)
		return -1;
	if (!streq(got, digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "layer %s is corrupt: its tree hashes to %s", digest, got);
	return 0;
}

int store_layer_tar(const char *store_root, const char *digest, int out_fd, sbx_err **err)
{
	return layer_tar(store_root, digest, 0, out_fd, err);
}

int store_layer_tar_oci(const char *store_root, const char *digest, int out_fd, sbx_err **err)
{
	return layer_tar(store_root, digest, STORE_TAR_W_OCI, out_fd, err);
}

int store_layer_verify(const char *store_root, const char *digest, sbx_err **err)
{
	_cleanup_free_ char *p = store_layer_path(store_root, digest);
	if (!p)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest '%s'",
			       digest ? digest : "");
	_cleanup_close_ int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "layer %s is missing", digest);
		return err_errno(err, "layer %s: open", digest);
	}
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	store_idmap ids;
	store_layer_ids(&ids);
	sink s = {-1, h, .sparse = false};
	int r = store_tar_write_dir_sparse(fd, &ids, 0, sink_write, sink_zeros, &s, NULL, err);
	if (r < 0)
		return err_wrap(err, "layer %s is corrupt", digest);
	char got[STORE_DIGEST_SIZE];
	r = store_hasher_final(h, got, err);
	if (r < 0)
		return r;
	if (!streq(got, digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "layer %s is corrupt: its tree hashes to %s", digest, got);
	_cleanup_free_ char *blob = store_blob_path(store_root, digest);
	if (blob && fs_exists(blob))
		return store_blob_verify(store_root, digest, err);
	return 0;
}

static char *keep_layer(const char *name)
{
	char *d = NULL;
	if (!store_digest_hex_valid(name) || asprintf(&d, STORE_DIGEST_PREFIX "%s", name) < 0)
		return NULL;
	return d;
}

int store_layer_list(const char *store_root, char ***ret, sbx_err **err)
{
	_cleanup_free_ char *dir = store_fs_path(store_root, STORE_DIR_LAYERS);
	if (!dir)
		return err_errnum(err, ENOMEM, "store");
	return store_fs_list_dir(dir, keep_layer, ret, err);
}

int store_layer_remove(const char *store_root, const char *digest, sbx_err **err)
{
	_cleanup_free_ char *p = store_layer_path(store_root, digest);
	_cleanup_free_ char *blob = store_blob_path(store_root, digest);
	_cleanup_free_ char *tmp = NULL;
	if (!p || !blob)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid digest '%s'",
			       digest ? digest : "");
	int r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	if (asprintf(&tmp, "%s/" STORE_DIR_TMP "/rm-%s-%d", store_root, store_digest_hex(digest),
		     (int)getpid()) < 0)
		return err_errnum(err, ENOMEM, "store");
	if (store_sys.renameat(AT_FDCWD, p, AT_FDCWD, tmp) < 0 && errno != ENOENT)
		return err_errno(err, "remove layer %s", digest);
	if (unlink(blob) < 0 && errno != ENOENT)
		return err_errno(err, "remove blob %s", digest);
	r = fs_rm_rf(tmp);
	if (r < 0)
		return err_errnum(err, r, "remove '%s'", tmp);
	return 0;
}
