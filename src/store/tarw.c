#include "store/tarw.h"
#include "store/acl.h"
#include "store/progress.h"
#include "store/storefs.h"
#include "store/xattr.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/strbuf.h"

#define OUT_BUF (64 * 1024)
#define MAX_DEPTH 1024

/* The first path of an inode with several links, and that inode as the
 * listing saw it there: a later path is written as a link to it only if its
 * own stat is the same inode in the same state (see hl_same). */
typedef struct hl_entry {
	dev_t dev;
	ino_t ino;
	char *path;
	struct stat st;
} hl_entry;

typedef struct writer {
	const store_idmap *ids;
	store_tar_write_fn fn;
	store_tar_zeros_fn zfn; /* NULL: zeros go through fn */
	void *ud;
	uint8_t *out;
	size_t out_len;
	uint8_t *io;
	uint64_t bytes, entries;
	hl_entry *hl; /* open addressing, power-of-two capacity */
	size_t hl_cap, hl_n;
	unsigned flags; /* STORE_TAR_W_* */
	int root;	/* the tree's top (hl_verify) */
} writer;

/* ---- output ---------------------------------------------------------------- */

static int out_flush(writer *w, sbx_err **err)
{
	if (w->out_len == 0)
		return 0;
	int r = w->fn(w->ud, w->out, w->out_len, err);
	if (r < 0)
		return r;
	w->bytes += w->out_len;
	store_progress_tar(w->out_len, 0);
	w->out_len = 0;
	return 0;
}

static int out_write(writer *w, const void *data, size_t len, sbx_err **err)
{
	const uint8_t *p = data;
	while (len) {
		size_t k = OUT_BUF - w->out_len;
		if (k > len)
			k = len;
		memcpy(w->out + w->out_len, p, k);
		w->out_len += k;
		p += k;
		len -= k;
		if (w->out_len == OUT_BUF) {
			int r = out_flush(w, err);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* len zero bytes of a file's data (a hole of the file): through zfn when
 * the sink has one (it hashes them without a copy and seeks over them),
 * else as bytes. */
static int out_zeros(writer *w, uint64_t len, sbx_err **err)
{
	static const uint8_t zero[OUT_BUF];
	if (w->zfn && len >= OUT_BUF) {
		int r = out_flush(w, err);
		if (r < 0)
			return r;
		r = w->zfn(w->ud, len, err);
		if (r < 0)
			return r;
		w->bytes += len;
		store_progress_tar(len, 0);
		return 0;
	}
	while (len) {
		size_t k = len > OUT_BUF ? OUT_BUF : (size_t)len;
		int r = out_write(w, zero, k, err);
		if (r < 0)
			return r;
		len -= k;
	}
	return 0;
}

static int out_pad(writer *w, uint64_t size, sbx_err **err)
{
	static const uint8_t zero[STORE_TAR_BLOCK];
	size_t rem = (size_t)(size % STORE_TAR_BLOCK);
	return rem ? out_write(w, zero, STORE_TAR_BLOCK - rem, err) : 0;
}

/* ---- headers --------------------------------------------------------------- */

/* Octal, zero-padded to w-1 digits plus NUL. False if it does not fit. */
static bool put_octal(uint8_t *field, size_t w, uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%0*" PRIo64, (int)(w - 1), v);
	if (n < 0 || (size_t)n > w - 1)
		return false;
	memcpy(field, tmp, (size_t)n + 1);
	return true;
}

/* One pax record "<len> <key>=<value>\n", len counting itself (value may
 * hold any bytes: an xattr's). -ENOMEM once b has run out. */
static int pax_add(strbuf *b, const char *key, const void *value, size_t vlen)
{
	size_t base = strlen(key) + vlen + 3, len = base;
	for (;;) {
		char d[24];
		size_t nd = (size_t)snprintf(d, sizeof(d), "%zu", len);
		if (base + nd == len)
			break;
		len = base + nd;
	}
	char head[32];
	int n = snprintf(head, sizeof(head), "%zu ", len);
	strbuf_add(b, head, (size_t)n);
	strbuf_add(b, key, strlen(key));
	strbuf_lit(b, "=");
	strbuf_add(b, value, vlen);
	strbuf_lit(b, "\n");
	return b->oom ? -ENOMEM : 0;
}

static void header_checksum(uint8_t *h)
{
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < STORE_TAR_BLOCK; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum & 0777777);
	h[155] = ' ';
}

static void header_init(uint8_t *h, char type)
{
	memset(h, 0, STORE_TAR_BLOCK);
	h[156] = (uint8_t)type;
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	put_octal(h + 329, 8, 0);
	put_octal(h + 337, 8, 0);
}

typedef struct entry {
	const char *path; /* tar name, without a trailing slash */
	char type;
	uint32_t mode, uid, gid, devmajor, devminor;
	int64_t mtime_sec;
	long mtime_nsec;
	uint64_t size;
	const char *link;
	const store_xattrs *xa;
	bool literal;	 /* a real name starting with ".wh.": pax SBX.literal=1 */
	bool wh_literal; /* a whiteout of such a name, or of a name over 251 bytes: pax SBX.whiteout=1 */
} entry;

static int emit_header(writer *w, const entry *e, sbx_err **err)
{
	_cleanup_free_ char *name = NULL;
	if (asprintf(&name, "%s%s", e->path, e->type == '5' ? "/" : "") < 0)
		return err_errnum(err, ENOMEM, "tar");
	uint8_t h[STORE_TAR_BLOCK];
	header_init(h, e->type);
	strbuf pax = {0};
	int r = 0;
	size_t nl = strlen(name);
	if (nl <= 100)
		memcpy(h, name, nl);
	else {
		memcpy(h, name, 100);
		r |= pax_add(&pax, "path", name, nl);
	}
	if (e->link) {
		size_t ll = strlen(e->link);
		if (ll <= 100)
			memcpy(h + 157, e->link, ll);
		else {
			memcpy(h + 157, e->link, 100);
			r |= pax_add(&pax, "linkpath", e->link, ll);
		}
	}
	char num[64];
	put_octal(h + 100, 8, e->mode & 07777);
	if (!put_octal(h + 108, 8, e->uid)) {
		put_octal(h + 108, 8, 0);
		snprintf(num, sizeof(num), "%" PRIu32, e->uid);
		r |= pax_add(&pax, "uid", num, strlen(num));
	}
	if (!put_octal(h + 116, 8, e->gid)) {
		put_octal(h + 116, 8, 0);
		snprintf(num, sizeof(num), "%" PRIu32, e->gid);
		r |= pax_add(&pax, "gid", num, strlen(num));
	}
	if (!put_octal(h + 124, 12, e->size)) {
		put_octal(h + 124, 12, 0);
		snprintf(num, sizeof(num), "%" PRIu64, e->size);
		r |= pax_add(&pax, "size", num, strlen(num));
	}
	bool mtime_fits = e->mtime_sec >= 0 && put_octal(h + 136, 12, (uint64_t)e->mtime_sec);
	if (!mtime_fits)
		put_octal(h + 136, 12, 0);
	if (!mtime_fits || e->mtime_nsec) {
		if (e->mtime_nsec)
			snprintf(num, sizeof(num), "%" PRId64 ".%09ld", e->mtime_sec, e->mtime_nsec);
		else
			snprintf(num, sizeof(num), "%" PRId64, e->mtime_sec);
		r |= pax_add(&pax, "mtime", num, strlen(num));
	}
	if (e->type == '3' || e->type == '4') {
		put_octal(h + 329, 8, e->devmajor);
		put_octal(h + 337, 8, e->devminor);
	}
	for (size_t i = 0; e->xa && i < e->xa->n; i++) {
		_cleanup_free_ char *key = NULL;
		if (asprintf(&key, "SCHILY.xattr.%s", e->xa->v[i].name) < 0) {
			r = -ENOMEM;
			break;
		}
		r |= pax_add(&pax, key, e->xa->v[i].value, e->xa->v[i].len);
	}
	if (e->literal)
		r |= pax_add(&pax, STORE_PAX_LITERAL, "1", 1);
	if (e->wh_literal)
		r |= pax_add(&pax, STORE_PAX_WHITEOUT, "1", 1);
	if (r < 0) {
		strbuf_free(&pax);
		return err_errnum(err, ENOMEM, "tar");
	}
	if (pax.len) {
		uint8_t ph[STORE_TAR_BLOCK];
		header_init(ph, 'x');
		memcpy(ph, "././@PaxHeader", 14);
		put_octal(ph + 100, 8, 0644);
		put_octal(ph + 108, 8, 0);
		put_octal(ph + 116, 8, 0);
		put_octal(ph + 124, 12, pax.len);
		put_octal(ph + 136, 12, 0);
		header_checksum(ph);
		r = out_write(w, ph, sizeof(ph), err);
		if (r >= 0)
			r = out_write(w, pax.p, pax.len, err);
		if (r >= 0)
			r = out_pad(w, pax.len, err);
		strbuf_free(&pax);
		if (r < 0)
			return r;
	}
	header_checksum(h);
	w->entries++;
	store_progress_tar(0, 1);
	return out_write(w, h, sizeof(h), err);
}

/* ---- hard links ------------------------------------------------------------ */

static size_t hl_hash(dev_t dev, ino_t ino)
{
	uint64_t x = (uint64_t)ino * 0x9E3779B97F4A7C15ull ^ (uint64_t)dev;
	return (size_t)(x ^ (x >> 29));
}

/* Whether a and b are one inode, as two paths of it listed in one walk of an
 * unchanging tree show it: same (dev, ino) and the same state. An inode
 * number alone is not an identity: if the file of the first path was deleted
 * and another one created while the tree was read (an environment that could
 * not be frozen; a crash that leaves a tree changing under a later read),
 * the new file can get the freed number, and writing it as a link would
 * make two unrelated files one inode in every tree extracted from the tar
 * (DESIGN.md "Never alias inodes"). A new inode has its own ctime (set at
 * creation; nanoseconds here), and a change to the old one moves its ctime
 * too: either way the tree changed while being read. */
static bool hl_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_uid == b->st_uid && a->st_gid == b->st_gid && a->st_nlink == b->st_nlink &&
	       a->st_size == b->st_size && a->st_rdev == b->st_rdev &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Whether st (a later path's listing) may be written as a hard link to
 * first (whose listing was fst): the same inode in the same state, and first
 * still that inode now (looked up beneath the top, no symlink followed). */
static bool hl_verify(const writer *w, const char *first, const struct stat *fst, const struct stat *st)
{
	if (!hl_same(fst, st))
		return false;
	_cleanup_close_ int fd = fs_open_beneath(w->root, first, O_PATH | O_NOFOLLOW, 0, FS_BENEATH);
	struct stat now;
	return fd >= 0 && fstat(fd, &now) == 0 && hl_same(fst, &now);
}

/* Returns the first path recorded for st's (dev, ino) (*ret_first, with
 * that path's stat in *ret_st), or records path and sets *ret_first to NULL. */
static int hl_lookup_or_add(writer *w, const struct stat *st, const char *path, const char **ret_first,
			    const struct stat **ret_st)
{
	if ((w->hl_n + 1) * 2 > w->hl_cap) {
		size_t cap = w->hl_cap ? w->hl_cap * 2 : 64;
		hl_entry *t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < w->hl_cap; i++) {
			if (!w->hl[i].path)
				continue;
			size_t j = hl_hash(w->hl[i].dev, w->hl[i].ino) & (cap - 1);
			while (t[j].path)
				j = (j + 1) & (cap - 1);
			t[j] = w->hl[i];
		}
		free(w->hl);
		w->hl = t;
		w->hl_cap = cap;
	}
	size_t j = hl_hash(st->st_dev, st->st_ino) & (w->hl_cap - 1);
	for (; w->hl[j].path; j = (j + 1) & (w->hl_cap - 1))
		if (w->hl[j].dev == st->st_dev && w->hl[j].ino == st->st_ino) {
			*ret_first = w->hl[j].path;
			*ret_st = &w->hl[j].st;
			return 0;
		}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	w->hl[j] = (hl_entry){st->st_dev, st->st_ino, p, *st};
	w->hl_n++;
	*ret_first = NULL;
	return 0;
}

/* ---- xattrs ---------------------------------------------------------------- */

/* Reads the kept xattrs (store/xattr.h: the same set the extractor restores,
 * so a stored layer re-tars to its digest) of fd (regular file or
 * directory), or of name in dir dfd when fd < 0, in the layer's form: a v3
 * capability of the environment's root as v2, ACLs' named ids shifted as
 * owners are (acl.h). path names the entry in errors. */
static int xattrs_read(int fd, int dfd, const char *name, const store_idmap *ids, const char *path,
		       store_xattrs *ret, sbx_err **err)
{
	store_xattrs x _cleanup_(store_xattrs_clear) = {0};
	int r = store_xattrs_read(fd, dfd, name, &x);
	if (r < 0)
		return err_errnum(err, -r, "xattrs of '%s'", path);
	for (size_t i = 0; i < x.n; i++) {
		store_xattr *kv = &x.v[i];
		if (strchr(kv->name, '=') || !*kv->name)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "'%s': xattr name not representable", path);
		store_acl_error ae;
		int q = store_xattr_normalize(kv, ids, &ae);
		if (q < 0 && !store_acl_xattr(kv->name))
			return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
				       "'%s': security.capability belongs to another user namespace", path);
		if (q == -ERANGE)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
				       "'%s': %s names %s %u, outside the mapped range [%u, %u+%u)", path,
				       kv->name, ae.group ? "gid" : "uid", ae.id,
				       ae.group ? ids->gid_base : ids->uid_base,
				       ae.group ? ids->gid_base : ids->uid_base, ids->count);
		if (q < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s': %s is malformed (%s)",
				       path, kv->name, ae.why);
	}
	*ret = x;
	x = (store_xattrs){0};
	return 0;
}

bool store_dir_is_opaque(int fd)
{
	char v[4];
	ssize_t n = fgetxattr(fd, STORE_OVL_OPAQUE_XATTR, v, sizeof(v));
	if (n == 1 && v[0] == 'y')
		return true;
	n = fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v));
	return n == 1 && v[0] == 'y';
}

/* ---- the walk -------------------------------------------------------------- */

typedef struct child {
	char *name; /* on disk */
	char *key;  /* in the tar (".wh.<name>" for a whiteout) */
	struct stat st;
	bool whiteout;
	bool literal; /* a name starting with ".wh." (a real one, or whiteout's victim) */
} child;

/* By tar name; a whiteout `.wh.x` (of x) and a real file named `.wh.x`
 * have the same tar name: the whiteout comes first. */
static int cmp_child(const void *a, const void *b)
{
	const child *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c || x->whiteout == y->whiteout)
		return c;
	return x->whiteout ? -1 : 1;
}

static void children_free(child *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(c[i].name);
		free(c[i].key);
	}
	free(c);
}

static int ids_map(writer *w, const char *path, const struct stat *st, uint32_t *uid, uint32_t *gid,
		   sbx_err **err)
{
	const store_idmap *m = w->ids;
	if (st->st_uid < m->uid_base || st->st_uid - m->uid_base >= m->count)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
			       "'%s': owner uid %u is outside the mapped range [%u, %u+%u)", path,
			       (unsigned)st->st_uid, m->uid_base, m->uid_base, m->count);
	if (st->st_gid < m->gid_base || st->st_gid - m->gid_base >= m->count)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
			       "'%s': group gid %u is outside the mapped range [%u, %u+%u)", path,
			       (unsigned)st->st_gid, m->gid_base, m->gid_base, m->count);
	*uid = st->st_uid - m->uid_base;
	*gid = st->st_gid - m->gid_base;
	return 0;
}

static void entry_from_stat(entry *e, const struct stat *st)
{
	e->mode = st->st_mode & 07777;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = st->st_mtim.tv_nsec;
}

/* The longest name whose whiteout `.wh.<name>` is itself a name Linux (and
 * so an OCI consumer) allows; a longer one's whiteout is marked
 * SBX.whiteout=1, the extractor's licence to read a tar name over NAME_MAX. */
#define WH_VICTIM_MAX (NAME_MAX - (sizeof(STORE_WH_PREFIX) - 1))

static bool wh_name_too_long(const char *name)
{
	return strlen(name) > WH_VICTIM_MAX;
}

static int emit_marker(writer *w, const char *path, bool wh_literal, sbx_err **err)
{
	entry e = {.path = path, .type = '0', .wh_literal = wh_literal};
	return emit_header(w, &e, err);
}

/* The file's bytes, its holes found with SEEK_DATA/SEEK_HOLE and given as
 * zeros without being read (`truncate -s 64G` costs the hash of its zeros,
 * not a read of them); the bytes are the same as a plain read gives.
 * Filesystems without hole reporting say "all data" (or EINVAL): then
 * everything is read. */
static int emit_file_data(writer *w, int fd, const char *path, uint64_t size, uint64_t alloc, sbx_err **err)
{
	uint64_t pos = 0, data_end = 0;
	/* Only a file with fewer blocks than bytes can have a hole worth a seek. */
	bool seek = size > OUT_BUF && alloc < size;
	while (pos < size) {
		if (pos >= data_end) {
			uint64_t d = pos;
			data_end = size;
			if (seek) {
				off_t q = lseek(fd, (off_t)pos, SEEK_DATA);
				if (q < 0 && errno == ENXIO)
					d = size; /* no data after pos (the final check tells a shrunk file)
						   */
				else if (q < 0)
					seek = false;
				else
					d = (uint64_t)q < size ? (uint64_t)q : size;
			}
			if (d > pos) {
				int r = out_zeros(w, d - pos, err);
				if (r < 0)
					return r;
				pos = d;
				data_end = 0;
				continue;
			}
			if (seek) {
				off_t h = lseek(fd, (off_t)pos, SEEK_HOLE);
				if (h > (off_t)pos && (uint64_t)h < size)
					data_end = (uint64_t)h;
			}
		}
		uint64_t want = data_end - pos;
		size_t k = want > OUT_BUF ? OUT_BUF : (size_t)want;
		ssize_t n = RETRY_EINTR(pread(fd, w->io, k, (off_t)pos));
		if (n < 0)
			return err_errno(err, "read '%s'", path);
		if (n == 0)
			return err_set(err, SBX_E_CONFLICT, EAGAIN, "'%s' shrank while being read", path);
		int r = out_write(w, w->io, (size_t)n, err);
		if (r < 0)
			return r;
		pos += (uint64_t)n;
	}
	ssize_t n = RETRY_EINTR(pread(fd, w->io, 1, (off_t)size));
	if (n > 0)
		return err_set(err, SBX_E_CONFLICT, EAGAIN, "'%s' grew while being read", path);
	struct stat st;
	if (alloc < size && fstat(fd, &st) < 0) /* a hole past a new end read as zeros: its size tells */
		return err_errno(err, "stat '%s'", path);
	if (alloc < size && (uint64_t)st.st_size != size)
		return err_set(err, SBX_E_CONFLICT, EAGAIN, "'%s' changed size while being read", path);
	return out_pad(w, size, err);
}

static int walk_dir(writer *w, int dfd, const char *dpath, int depth, sbx_err **err);

static int emit_child(writer *w, int dfd, const char *dpath, child *c, int depth, sbx_err **err)
{
	_cleanup_free_ char *path = NULL;
	if (asprintf(&path, "%s%s%s", dpath, *dpath ? "/" : "", c->key) < 0)
		return err_errnum(err, ENOMEM, "tar");
	if (c->whiteout)
		return emit_marker(w, path, c->literal || wh_name_too_long(c->name), err);

	entry e = {.path = path, .literal = c->literal};
	int r = ids_map(w, path, &c->st, &e.uid, &e.gid, err);
	if (r < 0)
		return r;
	entry_from_stat(&e, &c->st);
	mode_t fmt = c->st.st_mode & S_IFMT;

	if (fmt != S_IFDIR && c->st.st_nlink > 1) {
		const char *first = NULL;
		const struct stat *fst = NULL;
		if (hl_lookup_or_add(w, &c->st, path, &first, &fst) < 0)
			return err_errnum(err, ENOMEM, "tar");
		if (first && !hl_verify(w, first, fst, &c->st))
			return err_set(
			    err, SBX_E_CONFLICT, EAGAIN,
			    "'%s' changed while being read (its inode number was '%s''s, as another "
			    "file)",
			    path, first);
		if (first) {
			entry l = {.path = path,
				   .type = '1',
				   .link = first,
				   .uid = e.uid,
				   .gid = e.gid,
				   .literal = c->literal};
			entry_from_stat(&l, &c->st);
			return emit_header(w, &l, err);
		}
	}

	store_xattrs xa _cleanup_(store_xattrs_clear) = {0};
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *target = NULL;
	switch (fmt) {
	case S_IFREG:
	case S_IFDIR: {
		int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | (fmt == S_IFDIR ? O_DIRECTORY : 0);
		fd = openat(dfd, c->name, flags);
		if (fd < 0)
			return err_errno(err, "open '%s'", path);
		struct stat st;
		if (fstat(fd, &st) < 0)
			return err_errno(err, "stat '%s'", path);
		if (st.st_ino != c->st.st_ino || st.st_dev != c->st.st_dev || st.st_size != c->st.st_size)
			return err_set(err, SBX_E_CONFLICT, EAGAIN, "'%s' changed while being read", path);
		e.type = fmt == S_IFDIR ? '5' : '0';
		e.size = fmt == S_IFREG ? (uint64_t)st.st_size : 0;
		r = xattrs_read(fd, -1, NULL, w->ids, path, &xa, err);
		break;
	}
	case S_IFLNK: {
		if (c->st.st_size <= 0 || c->st.st_size > 65535)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s': bad symlink size", path);
		target = malloc((size_t)c->st.st_size + 1);
		if (!target)
			return err_errnum(err, ENOMEM, "tar");
		ssize_t n = readlinkat(dfd, c->name, target, (size_t)c->st.st_size + 1);
		if (n < 0)
			return err_errno(err, "readlink '%s'", path);
		if (n != c->st.st_size)
			return err_set(err, SBX_E_CONFLICT, EAGAIN, "'%s' changed while being read", path);
		target[n] = 0;
		e.type = '2';
		e.link = target;
		r = xattrs_read(-1, dfd, c->name, w->ids, path, &xa, err);
		break;
	}
	case S_IFIFO:
	case S_IFCHR:
	case S_IFBLK:
		e.type = fmt == S_IFIFO ? '6' : fmt == S_IFCHR ? '3' : '4';
		e.devmajor = major(c->st.st_rdev);
		e.devminor = minor(c->st.st_rdev);
		r = xattrs_read(-1, dfd, c->name, w->ids, path, &xa, err);
		break;
	default:
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "'%s': sockets cannot be stored in a layer", path);
	}
	if (r < 0)
		return r;
	e.xa = &xa;
	r = emit_header(w, &e, err);
	if (r < 0)
		return r;
	if (fmt == S_IFREG)
		return emit_file_data(w, fd, path, e.size, (uint64_t)c->st.st_blocks * 512, err);
	if (fmt == S_IFDIR)
		return walk_dir(w, fd, path, depth + 1, err);
	return 0;
}

/* Emits the contents of directory dfd (named dpath in the tar; "" for the root). */
static int walk_dir(writer *w, int dfd, const char *dpath, int depth, sbx_err **err)
{
	if (depth > MAX_DEPTH)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ELOOP, "'%s': tree deeper than %d", dpath,
			       MAX_DEPTH);
	int r;
	if (store_dir_is_opaque(dfd)) {
		_cleanup_free_ char *p = NULL;
		if (asprintf(&p, "%s%s%s", dpath, *dpath ? "/" : "", STORE_WH_OPAQUE) < 0)
			return err_errnum(err, ENOMEM, "tar");
		r = emit_marker(w, p, false, err);
		if (r < 0)
			return r;
	}
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return err_errno(err, "dup");
	DIR *d = fdopendir(dup);
	if (!d) {
		safe_close(dup);
		return err_errno(err, "opendir '%s'", *dpath ? dpath : ".");
	}
	rewinddir(d);
	child *c = NULL;
	size_t n = 0, cap = 0;
	r = 0;
	struct dirent *de;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			child *nc = realloc(c, cap * sizeof(*c));
			if (!nc) {
				r = err_errnum(err, ENOMEM, "tar");
				break;
			}
			c = nc;
		}
		child *x = &c[n];
		*x = (child){0};
		if (store_sys.fstatat(dfd, de->d_name, &x->st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = err_errno(err, "stat '%s/%s'", dpath, de->d_name);
			break;
		}
		x->whiteout = (S_ISCHR(x->st.st_mode) && x->st.st_rdev == 0) ||
			      ((w->flags & STORE_TAR_W_SOCKETS_DELETED) && S_ISSOCK(x->st.st_mode));
		x->literal = startswith(de->d_name, STORE_WH_PREFIX);
		if (x->literal && (w->flags & STORE_TAR_W_OCI)) {
			r = err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "%s'/%s%s%s': names starting with '.wh.' cannot be stored in an OCI layer "
			    "(OCI reserves them for whiteouts)",
			    x->whiteout ? "the deletion of " : "", dpath, *dpath ? "/" : "", de->d_name);
			break;
		}
		if (x->whiteout && wh_name_too_long(de->d_name) && (w->flags & STORE_TAR_W_OCI)) {
			r = err_set(
			    err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG,
			    "the deletion of '/%s%s%s': a name over %zu bytes cannot be deleted in an "
			    "OCI layer (its whiteout '.wh.<name>' would be over %d bytes)",
			    dpath, *dpath ? "/" : "", de->d_name, (size_t)WH_VICTIM_MAX, NAME_MAX);
			break;
		}
		x->name = strdup(de->d_name);
		if (x->whiteout) {
			if (asprintf(&x->key, STORE_WH_PREFIX "%s", de->d_name) < 0)
				x->key = NULL;
		} else
			x->key = strdup(de->d_name);
		n++;
		if (!x->name || !x->key) {
			r = err_errnum(err, ENOMEM, "tar");
			break;
		}
	}
	if (r == 0 && errno)
		r = err_errno(err, "readdir '%s'", dpath);
	closedir(d);
	if (r == 0) {
		if (n)
			qsort(c, n, sizeof(*c), cmp_child);
		for (size_t i = 0; i < n && r == 0; i++)
			r = emit_child(w, dfd, dpath, &c[i], depth, err);
	}
	children_free(c, n);
	return r;
}

int store_tar_write_dir(int dir_fd, const store_idmap *ids, store_tar_write_fn fn, void *userdata,
			store_tar_stats *ret_stats, sbx_err **err)
{
	return store_tar_write_dir_flags(dir_fd, ids, 0, fn, userdata, ret_stats, err);
}

int store_tar_write_dir_flags(int dir_fd, const store_idmap *ids, unsigned flags, store_tar_write_fn fn,
			      void *userdata, store_tar_stats *ret_stats, sbx_err **err)
{
	return store_tar_write_dir_sparse(dir_fd, ids, flags, fn, NULL, userdata, ret_stats, err);
}

int store_tar_write_dir_sparse(int dir_fd, const store_idmap *ids, unsigned flags, store_tar_write_fn fn,
			       store_tar_zeros_fn zfn, void *userdata, store_tar_stats *ret_stats,
			       sbx_err **err)
{
	writer w = {.ids = ids, .fn = fn, .zfn = zfn, .ud = userdata, .flags = flags};
	_cleanup_close_ int root = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return err_errno(err, "open tree");
	w.root = root;
	w.out = malloc(OUT_BUF);
	w.io = malloc(OUT_BUF);
	int r;
	if (!w.out || !w.io)
		r = err_errnum(err, ENOMEM, "tar");
	else
		r = walk_dir(&w, root, "", 0, err);
	if (r >= 0) {
		static const uint8_t zero[2 * STORE_TAR_BLOCK];
		r = out_write(&w, zero, sizeof(zero), err);
	}
	if (r >= 0)
		r = out_flush(&w, err);
	for (size_t i = 0; i < w.hl_cap; i++)
		free(w.hl[i].path);
	free(w.hl);
	free(w.out);
	free(w.io);
	if (r < 0)
		return r;
	if (ret_stats)
		*ret_stats = (store_tar_stats){.bytes = w.bytes, .entries = w.entries};
	return 0;
}
