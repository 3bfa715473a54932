#include "store/tarw.h"
#include "store/acl.h"
#include "store/progress.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "util/strbuf.h"

#define OUT_BUF (64 * 1024)
#define MAX_DEPTH 1024
#define XATTR_LIST_MAX_BYTES (64 * 1024)

typedef struct hl_entry {
	dev_t dev;
	ino_t ino;
	char *path;
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
} writer;

typedef struct xattr_kv {
	char *name;
	char *value;
	size_t len;
} xattr_kv;

typedef struct xattrs {
	xattr_kv *v;
	size_t n;
} xattrs;

static void xattrs_clear(xattrs *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->v[i].name);
		free(x->v[i].value);
	}
	free(x->v);
	x->v = NULL;
	x->n = 0;
}

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
	const xattrs *xa;
	bool literal;	 /* a real name starting with ".wh.": pax SBX.literal=1 */
	bool wh_literal; /* a whiteout of such a name: pax SBX.whiteout=1 */
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

/* Returns the first path recorded for (dev, ino), or records path and returns NULL. */
static int hl_lookup_or_add(writer *w, dev_t dev, ino_t ino, const char *path, const char **ret)
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
	size_t j = hl_hash(dev, ino) & (w->hl_cap - 1);
	for (; w->hl[j].path; j = (j + 1) & (w->hl_cap - 1))
		if (w->hl[j].dev == dev && w->hl[j].ino == ino) {
			*ret = w->hl[j].path;
			return 0;
		}
	char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	w->hl[j] = (hl_entry){dev, ino, p};
	w->hl_n++;
	*ret = NULL;
	return 0;
}

/* ---- xattrs ---------------------------------------------------------------- */

/* The same set the extractor restores (tarr.c xattr_kept), so a stored layer
 * re-tars to its digest: user.* except overlay's own, file capabilities, and
 * POSIX ACLs (their named ids shifted as owners are, acl.h). trusted.* and
 * security.selinux (host-specific) are not part of a layer. */
static bool xattr_skipped(const char *name)
{
	return !((startswith(name, "user.") && !startswith(name, "user.overlay.")) ||
		 streq(name, "security.capability") || store_acl_xattr(name));
}

static int cmp_xattr(const void *a, const void *b)
{
	return strcmp(((const xattr_kv *)a)->name, ((const xattr_kv *)b)->name);
}

/* security.capability as read from the initial namespace is v3 (with the
 * namespace root's host uid); a layer carries the namespace-independent v2. */
static int cap_normalize(xattr_kv *kv, const store_idmap *ids)
{
	if (!streq(kv->name, "security.capability") || kv->len != sizeof(struct vfs_ns_cap_data))
		return 0;
	struct vfs_ns_cap_data c;
	memcpy(&c, kv->value, sizeof(c));
	if ((le32toh(c.magic_etc) & VFS_CAP_REVISION_MASK) != VFS_CAP_REVISION_3)
		return 0;
	if (le32toh(c.rootid) != ids->uid_base)
		return -ERANGE;
	c.magic_etc = htole32(VFS_CAP_REVISION_2 | (le32toh(c.magic_etc) & VFS_CAP_FLAGS_EFFECTIVE));
	memcpy(kv->value, &c, sizeof(struct vfs_cap_data));
	kv->len = sizeof(struct vfs_cap_data);
	return 0;
}

/* Reads the kept xattrs of fd (regular file or directory), or of name in
 * dir dfd (through /proc/self/fd, not following a final symlink) when fd < 0;
 * path names the entry in errors. */
static int xattrs_read(int fd, int dfd, const char *name, const store_idmap *ids, const char *path,
		       xattrs *ret, sbx_err **err)
{
	char proc[64 + NAME_MAX];
	if (fd < 0)
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", dfd, name);
	char list[XATTR_LIST_MAX_BYTES];
	ssize_t n = fd >= 0 ? flistxattr(fd, list, sizeof(list)) : llistxattr(proc, list, sizeof(list));
	if (n < 0)
		return errno == ENOTSUP ? 0 : err_errno(err, "xattrs of '%s'", path);
	xattrs x _cleanup_(xattrs_clear) = {0};
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(list + off) + 1) {
		const char *k = list + off;
		if (xattr_skipped(k))
			continue;
		if (strchr(k, '=') || !*k)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "'%s': xattr name not representable", path);
		ssize_t vl = fd >= 0 ? fgetxattr(fd, k, NULL, 0) : lgetxattr(proc, k, NULL, 0);
		if (vl < 0) {
			if (errno == ENODATA)
				continue;
			return err_errno(err, "xattrs of '%s': get '%s'", path, k);
		}
		char *v = malloc((size_t)vl + 1);
		xattr_kv *nv = realloc(x.v, (x.n + 1) * sizeof(*x.v));
		if (nv)
			x.v = nv;
		if (!v || !nv) {
			free(v);
			return err_errnum(err, ENOMEM, "tar");
		}
		vl = fd >= 0 ? fgetxattr(fd, k, v, (size_t)vl) : lgetxattr(proc, k, v, (size_t)vl);
		if (vl < 0) {
			free(v);
			return err_errno(err, "xattrs of '%s': get '%s'", path, k);
		}
		x.v[x.n] = (xattr_kv){strdup(k), v, (size_t)vl};
		if (!x.v[x.n].name) {
			free(v);
			return err_errnum(err, ENOMEM, "tar");
		}
		xattr_kv *kv = &x.v[x.n++];
		if (cap_normalize(kv, ids) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
				       "'%s': security.capability belongs to another user namespace", path);
		if (store_acl_xattr(kv->name)) {
			store_acl_error ae;
			int q = store_acl_shift((uint8_t *)kv->value, kv->len, ids, STORE_ACL_FROM_DISK, &ae);
			if (q == -ERANGE)
				return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
					       "'%s': %s names %s %u, outside the mapped range [%u, %u+%u)",
					       path, kv->name, ae.group ? "gid" : "uid", ae.id,
					       ae.group ? ids->gid_base : ids->uid_base,
					       ae.group ? ids->gid_base : ids->uid_base, ids->count);
			if (q < 0)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "'%s': %s is malformed (%s)", path, kv->name, ae.why);
		}
	}
	if (x.n)
		qsort(x.v, x.n, sizeof(*x.v), cmp_xattr);
	*ret = x;
	x = (xattrs){0};
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
		return emit_marker(w, path, c->literal, err);

	entry e = {.path = path, .literal = c->literal};
	int r = ids_map(w, path, &c->st, &e.uid, &e.gid, err);
	if (r < 0)
		return r;
	entry_from_stat(&e, &c->st);
	mode_t fmt = c->st.st_mode & S_IFMT;

	if (fmt != S_IFDIR && c->st.st_nlink > 1) {
		const char *first = NULL;
		if (hl_lookup_or_add(w, c->st.st_dev, c->st.st_ino, path, &first) < 0)
			return err_errnum(err, ENOMEM, "tar");
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

	xattrs xa _cleanup_(xattrs_clear) = {0};
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
		if (fstatat(dfd, de->d_name, &x->st, AT_SYMLINK_NOFOLLOW) < 0) {
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
