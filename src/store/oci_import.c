/* One OCI layer blob imported into the store (oci.h): decompressed (gzip,
 * zstd) and digested as it is read, extracted by the safe tar reader. */
#include "store/oci.h"
#include "store/progress.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "store/storefs.h"
#include "store/tarr.h"
#include "util/fs.h"

/* ---- import of one layer ------------------------------------------------- */

typedef struct layer_reader {
	int fd;
	oci_compression comp;
	store_hasher *hc, *hu; /* compressed (blob) and uncompressed (diff_id) digests */
	uint64_t in_total, out_total, max_out;
	z_stream z;
	bool z_init, z_end;
	ZSTD_DStream *zs;
	size_t zs_last; /* last ZSTD_decompressStream result (0: at a frame end) */
	uint8_t in[1 << 16];
	size_t in_len, in_off;
	bool in_eof;
	char why[160]; /* a decompression error */
} layer_reader;

static int fill(layer_reader *lr)
{
	if (lr->in_off < lr->in_len || lr->in_eof)
		return 0;
	ssize_t k = RETRY_EINTR(read(lr->fd, lr->in, sizeof(lr->in)));
	if (k > 0)
		store_progress_add((uint64_t)k, 0);
	if (k < 0)
		return -errno;
	lr->in_off = 0;
	lr->in_len = (size_t)k;
	lr->in_eof = k == 0;
	lr->in_total += (uint64_t)k;
	if (k > 0 && store_hasher_update(lr->hc, lr->in, (size_t)k, NULL) < 0)
		return -ENOMEM;
	return 0;
}

static ssize_t decompress(layer_reader *lr, uint8_t *buf, size_t len)
{
	for (;;) {
		int r = fill(lr);
		if (r < 0)
			return r;
		size_t avail = lr->in_len - lr->in_off;
		if (lr->comp == OCI_COMP_NONE) {
			size_t n = avail < len ? avail : len;
			memcpy(buf, lr->in + lr->in_off, n);
			lr->in_off += n;
			return (ssize_t)n;
		}
		if (lr->comp == OCI_COMP_GZIP) {
			if (lr->z_end) {
				if (avail == 0)
					return 0; /* clean end of the last member */
				if (inflateReset(&lr->z) != Z_OK)
					return -EIO;
				lr->z_end = false;
			}
			if (avail == 0) {
				snprintf(lr->why, sizeof(lr->why), "gzip stream is truncated");
				return -EBADMSG;
			}
			lr->z.next_in = lr->in + lr->in_off;
			lr->z.avail_in = (uInt)avail;
			lr->z.next_out = buf;
			lr->z.avail_out = (uInt)(len > (1u << 30) ? (1u << 30) : len);
			uInt before_out = lr->z.avail_out;
			int zr = inflate(&lr->z, Z_NO_FLUSH);
			lr->in_off = lr->in_len - lr->z.avail_in;
			if (zr == Z_STREAM_END)
				lr->z_end = true;
			else if (zr != Z_OK && zr != Z_BUF_ERROR) {
				snprintf(lr->why, sizeof(lr->why), "gzip data is corrupt: %s",
					 lr->z.msg ? lr->z.msg : "error");
				return -EBADMSG;
			}
			size_t out = before_out - lr->z.avail_out;
			if (out)
				return (ssize_t)out;
			continue;
		}
		/* zstd */
		if (avail == 0) {
			if (lr->zs_last != 0) {
				snprintf(lr->why, sizeof(lr->why), "zstd stream is truncated");
				return -EBADMSG;
			}
			return 0;
		}
		ZSTD_inBuffer ib = {lr->in + lr->in_off, avail, 0};
		ZSTD_outBuffer ob = {buf, len, 0};
		size_t zr = ZSTD_decompressStream(lr->zs, &ob, &ib);
		lr->in_off += ib.pos;
		if (ZSTD_isError(zr)) {
			snprintf(lr->why, sizeof(lr->why), "zstd data is corrupt: %s", ZSTD_getErrorName(zr));
			return -EBADMSG;
		}
		lr->zs_last = zr;
		if (ob.pos)
			return (ssize_t)ob.pos;
	}
}

static ssize_t layer_read(void *ud, void *buf, size_t len)
{
	layer_reader *lr = ud;
	ssize_t n = decompress(lr, buf, len);
	if (n <= 0)
		return n;
	lr->out_total += (uint64_t)n;
	if (lr->out_total > lr->max_out) {
		snprintf(lr->why, sizeof(lr->why),
			 "the uncompressed layer exceeds the import size limit (%llu bytes)",
			 (unsigned long long)lr->max_out);
		return -EFBIG;
	}
	if (store_hasher_update(lr->hu, buf, (size_t)n, NULL) < 0)
		return -ENOMEM;
	return n;
}

static int import_one(const char *store_root, oci_layout *l, const oci_descriptor *d, oci_compression comp,
		      const char *diff_id, oci_import_budget *budget, layer_reader *lr, const char *tree_path,
		      store_layer_info *ret, sbx_err **err)
{
	_cleanup_close_ int fd = -1;
	if (oci_blob_open(l, d, &fd, err) < 0)
		return -1;
	/* The digest first: nothing unverified is decompressed or extracted. */
	char dg[STORE_DIGEST_SIZE];
	uint64_t sz = 0;
	if (store_digest_fd(fd, dg, &sz, err) < 0)
		return err_wrap(err, "blob %s", d->digest);
	if (!streq(dg, d->digest))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "blob %s is corrupt: its content hashes to %s", d->digest, dg);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return err_errno(err, "seek blob %s", d->digest);

	lr->fd = fd;
	lr->comp = comp;
	lr->max_out = budget->max_bytes;
	if (!(lr->hc = store_hasher_new(err)) || !(lr->hu = store_hasher_new(err)))
		return -1;
	if (comp == OCI_COMP_GZIP) {
		if (inflateInit2(&lr->z, 16 + MAX_WBITS) != Z_OK)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "zlib: inflateInit2 failed");
		lr->z_init = true;
	} else if (comp == OCI_COMP_ZSTD) {
		if (!(lr->zs = ZSTD_createDStream()))
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "zstd: out of memory");
		ZSTD_initDStream(lr->zs);
	}

	if (mkdir(tree_path, 0755) < 0)
		return err_errno(err, "create '%s'", tree_path);
	_cleanup_close_ int tree = open(tree_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tree < 0)
		return err_errno(err, "open '%s'", tree_path);
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.max_bytes = budget->max_bytes ? budget->max_bytes : 1;
	o.max_entries = budget->max_entries ? budget->max_entries : 1;
	o.whiteouts = true;
	o.keep_setid = true; /* every mode bit; safe: nosuid, idmapped mounts (docs/store.md) */
	o.devices = STORE_TAR_DEV_REFUSE;
	o.acls = true; /* ids shifted as owners are; malformed ones refused (acl.h) */
	store_layer_ids(&o.ids);
	o.chown = geteuid() == 0;
	store_tar_stats st = {0};
	int r = store_tar_extract(tree, layer_read, lr, &o, &st, err);
	if (r < 0) {
		if (lr->why[0]) {
			sbx_err_free(err ? *err : NULL);
			if (err)
				*err = NULL;
			return err_set(err, r == -EFBIG ? SBX_E_LIMIT_EXCEEDED : SBX_E_INVALID_ARGUMENT, -r,
				       "layer %s: %s", d->digest, lr->why);
		}
		return err_wrap(err, "layer %s", d->digest);
	}
	/* The rest of the stream (tar padding) counts in the diff_id. */
	uint8_t sink[4096];
	ssize_t k;
	while ((k = layer_read(lr, sink, sizeof(sink))) > 0)
		;
	if (k < 0)
		return err_set(err, k == -EFBIG ? SBX_E_LIMIT_EXCEEDED : SBX_E_INVALID_ARGUMENT, (int)-k,
			       "layer %s: %s", d->digest, lr->why[0] ? lr->why : strerror((int)-k));
	char blob_dg[STORE_DIGEST_SIZE], tar_dg[STORE_DIGEST_SIZE];
	if (store_hasher_final(lr->hc, blob_dg, err) < 0 || store_hasher_final(lr->hu, tar_dg, err) < 0)
		return -1;
	if (!streq(blob_dg, d->digest) || lr->in_total != (uint64_t)d->size)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "blob %s changed while it was read",
			       d->digest);
	if (!streq(tar_dg, diff_id))
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EBADMSG,
		    "layer %s: its uncompressed content hashes to %s, but the config's diff_id is %s",
		    d->digest, tar_dg, diff_id);
	budget->max_bytes -= lr->out_total <= budget->max_bytes ? lr->out_total : budget->max_bytes;
	budget->max_entries -= st.entries <= budget->max_entries ? st.entries : budget->max_entries;

	/* Verified: the tree becomes a layer under its canonical digest. */
	store_idmap ids;
	store_layer_ids(&ids);
	if (store_layer_put_from_dir(store_root, tree, &ids, ret, err) < 0)
		return err_wrap(err, "layer %s", d->digest);
	return 0;
}

int store_layer_put_from_oci_blob(const char *store_root, oci_layout *l, const oci_descriptor *d,
				  oci_compression comp, const char *diff_id, oci_import_budget *budget,
				  store_layer_info *ret, sbx_err **err)
{
	if (!store_digest_valid(diff_id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid diff_id");
	int r = store_fs_init(store_root, err);
	if (r < 0)
		return r;
	unsigned long long rnd = 0;
	(void)!getrandom(&rnd, sizeof(rnd), 0);
	_cleanup_free_ char *tree = NULL;
	if (asprintf(&tree, "%s/" STORE_DIR_TMP "/oci-%d-%llx", store_root, (int)getpid(), rnd) < 0)
		return err_errnum(err, ENOMEM, "import");
	layer_reader *lr = calloc(1, sizeof(*lr));
	if (!lr)
		return err_errnum(err, ENOMEM, "import");
	lr->fd = -1;
	r = import_one(store_root, l, d, comp, diff_id, budget, lr, tree, ret, err);
	if (lr->z_init)
		inflateEnd(&lr->z);
	if (lr->zs)
		ZSTD_freeDStream(lr->zs);
	store_hasher_free(lr->hc);
	store_hasher_free(lr->hu);
	free(lr);
	(void)fs_rm_rf(tree);
	return r;
}
