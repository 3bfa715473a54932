/* The safe tar reader (tarr.h): the archive read block by block, each entry
 * extracted below the root (files, directories, links, whiteouts), directory
 * metadata set last. Header fields: tarr_hdr.c; directories and metadata:
 * tarr_meta.c. */
#include "store/tarr.h"

#include <ctype.h>
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

#include "store/acl.h"
#include "store/storefs.h"
#include "store/tarr_internal.h"
#include "util/fd.h"

#define DEFAULT_MAX_BYTES (64ull << 30)
#define DEFAULT_MAX_ENTRIES (16ull << 20)
#define PAX_MAX (1u << 20)
#define LONGNAME_MAX 8192
#define PATH_MAX_LEN 4095

#define CHUNK (64 * 1024)

/* ---- pure helpers ---------------------------------------------------------- */

int store_tar_path_clean(const char *in, char **ret)
{
	return store_tar_path_clean_wh(in, 0, ret);
}

int store_tar_path_clean_wh(const char *in, size_t last_extra, char **ret)
{
	if (!in || !*in)
		return -EINVAL;
	if (in[0] == '/')
		return -EXDEV;
	size_t n = strlen(in);
	if (n > PATH_MAX_LEN + last_extra)
		return -ENAMETOOLONG;
	char *out = malloc(n + 1);
	if (!out)
		return -ENOMEM;
	size_t o = 0;
	const char *p = in;
	while (*p) {
		const char *s = strchr(p, '/');
		size_t len = s ? (size_t)(s - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			free(out);
			return -EXDEV;
		}
		if (len > NAME_MAX + (s ? 0 : last_extra)) {
			free(out);
			return -ENAMETOOLONG;
		}
		if (len && !(len == 1 && p[0] == '.')) {
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len;
		if (*p == '/')
			p++;
	}
	out[o] = 0;
	*ret = out;
	return 0;
}

/* A printable, bounded copy of an archive name for error messages. */
static char *printable(const char *s)
{
	size_t n = strnlen(s, 200);
	char *o = malloc(n + 1);
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		o[i] = isprint((unsigned char)s[i]) ? s[i] : '?';
	o[n] = 0;
	return o;
}

/* ---- state ----------------------------------------------------------------- */

static void pending_clear(pending *p)
{
	free(p->path);
	free(p->linkpath);
	for (size_t i = 0; i < p->n_xa; i++) {
		free(p->xa[i].name);
		free(p->xa[i].value);
	}
	free(p->xa);
	*p = (pending){0};
}

static int rd_exact(reader *r, void *buf, size_t n, bool *ret_eof)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = r->fn(r->ud, (uint8_t *)buf + got, n - got);
		if (k < 0)
			return (int)k;
		if (k == 0)
			break;
		got += (size_t)k;
	}
	r->consumed += got;
	if (ret_eof)
		*ret_eof = got == 0;
	if (got < n && !(ret_eof && got == 0))
		return -EPIPE; /* truncated */
	return 0;
}

static int rd_skip(reader *r, uint64_t n)
{
	while (n) {
		size_t k = n > CHUNK ? CHUNK : (size_t)n;
		int q = rd_exact(r, r->buf, k, NULL);
		if (q < 0)
			return q;
		n -= k;
	}
	return 0;
}

/* With hole_fd: how many of the next (at most max) bytes lie in a hole of
 * the input (skipped: read as zeros, they count as consumed); 0 when the
 * next byte is data (and in_data_end is set to the end of that data, so
 * that a read stops there). Any error: holes are no longer looked for. */
static uint64_t in_hole(reader *r, uint64_t max)
{
	if (r->hole_fd < 0)
		return 0;
	uint64_t pos = r->consumed;
	if (pos < r->in_data_end)
		return 0;
	off_t d = lseek(r->hole_fd, (off_t)pos, SEEK_DATA);
	uint64_t data = d >= 0 ? (uint64_t)d : r->in_size;
	if (d < 0 && errno != ENXIO) {
		r->hole_fd = -1;
		return 0;
	}
	if (data > r->in_size)
		data = r->in_size;
	if (data > pos) {
		/* a hole up to EOF of a truncated archive: the read after it says so */
		uint64_t k = data - pos < max ? data - pos : max;
		if (lseek(r->hole_fd, (off_t)(pos + k), SEEK_SET) < 0) {
			r->hole_fd = -1;
			return 0;
		}
		r->consumed += k;
		return k;
	}
	off_t h = lseek(r->hole_fd, (off_t)pos, SEEK_HOLE);
	if (h <= (off_t)pos || lseek(r->hole_fd, (off_t)pos, SEEK_SET) < 0) {
		r->in_data_end = UINT64_MAX;
		return 0;
	}
	r->in_data_end = (uint64_t)h;
	return 0;
}

static uint64_t padded(uint64_t n)
{
	return (n + STORE_TAR_BLOCK - 1) / STORE_TAR_BLOCK * STORE_TAR_BLOCK;
}

static int truncated(reader *r, int q, sbx_err **err)
{
	if (q == -EPIPE)
		return BAD("tar: truncated archive at byte %" PRIu64, r->consumed);
	return err_errnum(err, q, "tar: read");
}

/* ---- entries --------------------------------------------------------------- */

static int extract_file(reader *r, int pfd, const char *name, uint64_t size, const meta *m, sbx_err **err)
{
	int q = tarr_make_room(r, pfd, name, false, err);
	if (q < 0)
		return q;
	_cleanup_close_ int fd =
	    openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, "tar entry '%s': create", r->disp);
	/* Zero blocks become holes: a sparse file stays sparse, and a layer of
	 * zeros (a "zip bomb") costs no disk. */
	uint64_t left = size, off = 0;
	while (left) {
		uint64_t hole = in_hole(r, left);
		if (hole) {
			if (lseek(fd, (off_t)hole, SEEK_CUR) < 0)
				return err_errno(err, "tar entry '%s': seek over a hole", r->disp);
			off += hole;
			left -= hole;
			continue;
		}
		size_t k = left > CHUNK ? CHUNK : (size_t)left;
		if (r->hole_fd >= 0 && k > r->in_data_end - r->consumed)
			k = (size_t)(r->in_data_end - r->consumed);
		q = rd_exact(r, r->buf, k, NULL);
		if (q < 0)
			return truncated(r, q, err);
		q = store_fs_write_sparse(fd, r->buf, k, &off, err);
		if (q < 0)
			return err_wrap(err, "tar entry '%s'", r->disp);
		left -= k;
	}
	q = store_fs_sparse_end(fd, size, err);
	if (q < 0)
		return err_wrap(err, "tar entry '%s'", r->disp);
	q = rd_skip(r, padded(size) - size);
	if (q < 0)
		return truncated(r, q, err);
	q = tarr_apply_meta_fd(r, fd, m, true, err);
	if (q < 0)
		return q;
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, m->mtime};
	if (futimens(fd, ts) < 0)
		return err_errno(err, "tar entry '%s': set mtime", r->disp);
	return 0;
}

static void dirmeta_clear(dirmeta *d)
{
	for (size_t i = 0; i < d->n_acl; i++) {
		free(d->acl[i].name);
		free(d->acl[i].value);
	}
	free(d->acl);
	free(d->path);
	*d = (dirmeta){0};
}

static int extract_dir(reader *r, const char *path, int pfd, const char *name, const meta *m, sbx_err **err)
{
	int q = tarr_make_room(r, pfd, name, true, err);
	if (q < 0)
		return q;
	if (q == 0 && mkdirat(pfd, name, 0700) < 0)
		return err_errno(err, "tar entry '%s': mkdir", r->disp);
	_cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_errno(err, "tar entry '%s': open", r->disp);
	/* Mode and mtime last (finish()): writing children changes the mtime,
	 * and a read-only mode would stop them being written. */
	q = tarr_apply_meta_fd(r, fd, m, false, err);
	if (q < 0)
		return q;
	if (r->n_dirs == r->cap_dirs) {
		size_t cap = r->cap_dirs ? r->cap_dirs * 2 : 64;
		dirmeta *nd = realloc(r->dirs, cap * sizeof(*nd));
		if (!nd)
			return err_errnum(err, ENOMEM, "tar");
		r->dirs = nd;
		r->cap_dirs = cap;
	}
	dirmeta d = {strdup(path), tarr_final_mode(r, m->mode), m->mtime, NULL, 0};
	if (!d.path)
		return err_errnum(err, ENOMEM, "tar");
	for (size_t i = 0; i < r->pd.n_xa; i++) {
		xattr_kv *kv = &r->pd.xa[i];
		if (!store_acl_xattr(kv->name) || !tarr_xattr_kept(r, kv))
			continue;
		/* a name given twice: the later value, as for other xattrs */
		size_t k = 0;
		while (k < d.n_acl && !streq(d.acl[k].name, kv->name))
			k++;
		char *v = malloc(kv->len ? kv->len : 1), *nm = k == d.n_acl ? strdup(kv->name) : NULL;
		xattr_kv *na = k == d.n_acl ? realloc(d.acl, (d.n_acl + 1) * sizeof(*na)) : d.acl;
		if (na)
			d.acl = na;
		if (!v || !na || (k == d.n_acl && !nm)) {
			free(v);
			free(nm);
			dirmeta_clear(&d);
			return err_errnum(err, ENOMEM, "tar");
		}
		memcpy(v, kv->value, kv->len);
		if (k == d.n_acl)
			d.acl[d.n_acl++] = (xattr_kv){nm, v, kv->len, false};
		else {
			free(d.acl[k].value);
			d.acl[k].value = v;
			d.acl[k].len = kv->len;
		}
	}
	r->dirs[r->n_dirs++] = d;
	return 0;
}

static int make_whiteout(reader *r, int pfd, const char *name, const meta *m, sbx_err **err)
{
	int q = tarr_make_room(r, pfd, name, false, err);
	if (q < 0)
		return q;
	if (mknodat(pfd, name, S_IFCHR | 0, makedev(0, 0)) < 0)
		return err_errno(err, "tar entry '%s': create whiteout", r->disp);
	meta wm = {.mode = 0, .mtime = {0, 0}};
	return tarr_apply_meta_at(r, pfd, name, m ? m : &wm, false, err);
}

static int extract_entry(reader *r, char type, uint64_t size, const meta *m, const char *linkname,
			 uint32_t devmajor, uint32_t devminor, sbx_err **err)
{
	_cleanup_free_ char *path = NULL;
	/* A whiteout marked SBX.whiteout=1 may name a victim of up to NAME_MAX
	 * bytes: its own tar name `.wh.<victim>` may be longer (checked below). */
	bool long_wh = r->o.whiteouts && r->o.literal_names && r->pd.wh_literal && !r->pd.literal;
	int q = store_tar_path_clean_wh(r->pd.path, long_wh ? strlen(STORE_WH_PREFIX) : 0, &path);
	if (q == -EXDEV)
		return BAD("tar entry '%s': path escapes the target directory (absolute or '..')", r->disp);
	if (q == -ENAMETOOLONG)
		return BAD("tar entry '%s': name too long", r->disp);
	if (q < 0)
		return q == -ENOMEM ? err_errnum(err, q, "tar") : BAD("tar: entry with an empty name");
	q = tarr_check_xattrs(r, type, err);
	if (q < 0)
		return q;
	bool has_data = type == '0' || type == 0 || type == '7';
	if (!*path) {
		if (type != '5')
			return BAD("tar entry '%s': the target directory itself can only be a directory",
				   r->disp);
		return rd_skip(r, padded(size)) < 0 ? truncated(r, -EPIPE, err)
						    : 0; /* root metadata is ignored */
	}
	_cleanup_free_ char *parent = NULL;
	const char *name;
	if (tarr_split(path, &parent, &name) < 0)
		return err_errnum(err, ENOMEM, "tar");
	if (strlen(name) > NAME_MAX && !startswith(name, STORE_WH_PREFIX))
		return BAD("tar entry '%s': name too long", r->disp);
	int pfd;
	q = tarr_open_dir(r, parent, true, &pfd, err);
	if (q < 0)
		return q;

	if (r->o.whiteouts && startswith(name, STORE_WH_PREFIX) && !(r->o.literal_names && r->pd.literal)) {
		if (!has_data)
			return BAD("tar entry '%s': a whiteout must be a regular file", r->disp);
		if (rd_skip(r, padded(size)) < 0)
			return truncated(r, -EPIPE, err);
		if (streq(name, STORE_WH_OPAQUE) && !(r->o.literal_names && r->pd.wh_literal)) {
			_cleanup_close_ int dfd = fcntl(pfd, F_DUPFD_CLOEXEC, 3);
			if (dfd < 0 || fsetxattr(dfd, STORE_OVL_OPAQUE_XATTR, "y", 1, 0) < 0)
				return err_errno(err, "tar entry '%s': mark directory opaque", r->disp);
			return 0;
		}
		const char *victim = name + strlen(STORE_WH_PREFIX);
		bool wh_literal = r->o.literal_names && r->pd.wh_literal;
		if (wh_literal && startswith(victim, STORE_WH_PREFIX))
			return make_whiteout(r, pfd, victim, NULL,
					     err); /* the whiteout of a real ".wh." name */
		if (startswith(victim, STORE_WH_PREFIX) || !*victim || streq(victim, ".") ||
		    streq(victim, ".."))
			return BAD("tar entry '%s': reserved or invalid whiteout name", r->disp);
		return make_whiteout(r, pfd, victim, NULL, err);
	}

	switch (type) {
	case 0:
	case '0':
	case '7':
		return extract_file(r, pfd, name, size, m, err);
	case '5':
		q = extract_dir(r, path, pfd, name, m, err);
		break;
	case '2': {
		if (!linkname || !*linkname)
			return BAD("tar entry '%s': symlink without a target", r->disp);
		q = tarr_make_room(r, pfd, name, false, err);
		if (q < 0)
			return q;
		/* The target is stored, never resolved: no later step follows it. */
		if (symlinkat(linkname, pfd, name) < 0)
			return err_errno(err, "tar entry '%s': symlink", r->disp);
		q = tarr_apply_meta_at(r, pfd, name, m, false, err);
		break;
	}
	case '1': {
		_cleanup_free_ char *target = NULL, *tparent = NULL;
		const char *tname;
		q = linkname ? store_tar_path_clean(linkname, &target) : -EINVAL;
		if (q == -ENOMEM)
			return err_errnum(err, q, "tar");
		if (q < 0 || !*target)
			return BAD(
			    "tar entry '%s': hard link target escapes the target directory or is empty",
			    r->disp);
		if (tarr_split(target, &tparent, &tname) < 0)
			return err_errnum(err, ENOMEM, "tar");
		_cleanup_close_ int tpfd = -1;
		int tmp;
		q = tarr_open_dir(r, tparent, false, &tmp, err);
		if (q < 0)
			return err_wrap(err, "hard link target");
		tpfd = fcntl(tmp, F_DUPFD_CLOEXEC, 3);
		if (tpfd < 0)
			return err_errno(err, "tar: dup");
		struct stat st;
		if (fstatat(tpfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return FAIL(SBX_E_INVALID_ARGUMENT, errno,
				    "tar entry '%s': hard link target is not an earlier entry", r->disp);
		if (S_ISDIR(st.st_mode))
			return BAD("tar entry '%s': hard link to a directory", r->disp);
		q = tarr_open_dir(r, parent, true, &pfd, err);
		if (q < 0)
			return q;
		if (streq(parent, tparent) && streq(name, tname))
			return BAD("tar entry '%s': hard link to itself", r->disp);
		q = tarr_make_room(r, pfd, name, false, err);
		if (q < 0)
			return q;
		if (linkat(tpfd, tname, pfd, name, 0) < 0)
			return err_errno(err, "tar entry '%s': link", r->disp);
		break;
	}
	case '6':
		q = tarr_make_room(r, pfd, name, false, err);
		if (q < 0)
			return q;
		if (mknodat(pfd, name, S_IFIFO | 0600, 0) < 0)
			return err_errno(err, "tar entry '%s': mkfifo", r->disp);
		q = tarr_apply_meta_at(r, pfd, name, m, true, err);
		break;
	case '3':
	case '4':
		if (r->o.whiteouts && type == '3' && devmajor == 0 && devminor == 0) {
			q = make_whiteout(r, pfd, name, NULL, err);
			break;
		}
		if (r->o.devices == STORE_TAR_DEV_SKIP)
			break;
		if (r->o.devices != STORE_TAR_DEV_CREATE)
			return FAIL(SBX_E_INVALID_ARGUMENT, EPERM,
				    "tar entry '%s': device nodes are not accepted (%s %u:%u)", r->disp,
				    type == '3' ? "char" : "block", devmajor, devminor);
		q = tarr_make_room(r, pfd, name, false, err);
		if (q < 0)
			return q;
		if (mknodat(pfd, name, (type == '3' ? S_IFCHR : S_IFBLK) | 0600,
			    makedev(devmajor, devminor)) < 0)
			return err_errno(err, "tar entry '%s': mknod", r->disp);
		q = tarr_apply_meta_at(r, pfd, name, m, true, err);
		break;
	default:
		return BAD("tar entry '%s': unsupported entry type '%c' (0x%02x)", r->disp,
			   isprint((unsigned char)type) ? type : '?', (unsigned char)type);
	}
	if (q < 0)
		return q;
	/* Non-file entries carry no data in a well-formed archive; skip any. */
	if (rd_skip(r, padded(size)) < 0)
		return truncated(r, -EPIPE, err);
	return 0;
}

/* Directory modes and mtimes, deepest (latest created) first. */
static int finish(reader *r, sbx_err **err)
{
	for (size_t i = r->n_dirs; i-- > 0;) {
		dirmeta *d = &r->dirs[i];
		_cleanup_free_ char *parent = NULL;
		const char *name;
		if (tarr_split(d->path, &parent, &name) < 0)
			return err_errnum(err, ENOMEM, "tar");
		free(r->disp);
		r->disp = printable(d->path);
		int pfd;
		int q = tarr_open_dir(r, parent, false, &pfd, err);
		if (q < 0)
			return q;
		_cleanup_close_ int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_errno(err, "tar entry '%s': open", r->disp);
		for (size_t k = 0; k < d->n_acl; k++)
			if (fsetxattr(fd, d->acl[k].name, d->acl[k].value, d->acl[k].len, 0) < 0)
				return err_errno(err, "tar entry '%s': set xattr '%s'", r->disp,
						 d->acl[k].name);
		struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, d->mtime};
		if (fchmod(fd, d->mode) < 0 || futimens(fd, ts) < 0)
			return err_errno(err, "tar entry '%s': set mode and mtime", r->disp);
	}
	return 0;
}

static int read_all_entries(reader *r, sbx_err **err)
{
	uint8_t h[STORE_TAR_BLOCK];
	for (;;) {
		bool eof = false;
		int q = rd_exact(r, h, sizeof(h), &eof);
		if (q < 0)
			return truncated(r, q, err);
		if (eof) {
			if (r->pd.path || r->pd.has_size || r->pd.n_xa)
				return BAD("tar: archive ends after an extended header");
			return 0;
		}
		bool zero = true;
		for (size_t i = 0; i < sizeof(h) && zero; i++)
			zero = h[i] == 0;
		if (zero)
			return 0; /* end of archive; whatever follows is ignored */
		uint64_t off = r->consumed - STORE_TAR_BLOCK;
		if (!tarr_header_checksum_ok(h))
			return BAD("tar: header checksum mismatch at byte %" PRIu64, off);
		if (!(memcmp(h + 257, "ustar\0", 6) == 0 || memcmp(h + 257, "ustar  \0", 8) == 0))
			return BAD("tar: not a ustar/pax header at byte %" PRIu64, off);
		bool posix = h[262] == 0;
		char type = (char)h[156];
		uint64_t size, mode, uid, gid, mtime, dmaj, dmin;
		if (tarr_parse_num(h + 124, 12, &size) < 0 || tarr_parse_num(h + 100, 8, &mode) < 0 ||
		    tarr_parse_num(h + 108, 8, &uid) < 0 || tarr_parse_num(h + 116, 8, &gid) < 0 ||
		    tarr_parse_num(h + 136, 12, &mtime) < 0 || tarr_parse_num(h + 329, 8, &dmaj) < 0 ||
		    tarr_parse_num(h + 337, 8, &dmin) < 0)
			return BAD("tar: malformed numeric field in header at byte %" PRIu64, off);
		bool meta_hdr = type == 'x' || type == 'g' || type == 'L' || type == 'K';
		if (!meta_hdr && r->pd.has_size)
			size = r->pd.size;
		if (size > r->o.max_bytes || padded(size) > r->o.max_bytes - r->consumed)
			return FAIL(SBX_E_LIMIT_EXCEEDED, EFBIG,
				    "tar: entry at byte %" PRIu64 " declares %" PRIu64
				    " bytes, over the limit of %" PRIu64 " for the archive",
				    off, size, r->o.max_bytes);
		if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
			uint32_t max = (type == 'L' || type == 'K') ? LONGNAME_MAX : PAX_MAX;
			if (size > max)
				return BAD("tar: extended header of %" PRIu64 " bytes at byte %" PRIu64
					   " (max %u)",
					   size, off, max);
			_cleanup_free_ char *b = malloc(padded(size) + 1);
			if (!b)
				return err_errnum(err, ENOMEM, "tar");
			q = rd_exact(r, b, padded(size), NULL);
			if (q < 0)
				return truncated(r, q, err);
			b[size] = 0;
			if (type == 'x')
				q = tarr_pax_parse(r, b, size, err);
			else if (type == 'L' || type == 'K') {
				if (strlen(b) == 0)
					return BAD("tar: empty GNU long name at byte %" PRIu64, off);
				char **slot = type == 'L' ? &r->pd.path : &r->pd.linkpath;
				free(*slot);
				*slot = strdup(b);
				q = *slot ? 0 : err_errnum(err, ENOMEM, "tar");
			} /* 'g' (global) headers are read and ignored */
			if (q < 0)
				return q;
			continue;
		}
		if (++r->entries > r->o.max_entries)
			return FAIL(SBX_E_LIMIT_EXCEEDED, E2BIG, "tar: more than %" PRIu64 " entries",
				    r->o.max_entries);
		if (!r->pd.path) {
			char name[101] = {0}, prefix[156] = {0};
			memcpy(name, h, 100);
			if (posix)
				memcpy(prefix, h + 345, 155);
			if (asprintf(&r->pd.path, "%s%s%s", prefix, *prefix ? "/" : "", name) < 0) {
				r->pd.path = NULL;
				return err_errnum(err, ENOMEM, "tar");
			}
		}
		if (!r->pd.linkpath && (type == '1' || type == '2')) {
			char link[101] = {0};
			memcpy(link, h + 157, 100);
			r->pd.linkpath = strdup(link);
			if (!r->pd.linkpath)
				return err_errnum(err, ENOMEM, "tar");
		}
		free(r->disp);
		r->disp = printable(r->pd.path);
		if (!r->disp)
			return err_errnum(err, ENOMEM, "tar");
		if (dmaj > UINT32_MAX || dmin > UINT32_MAX)
			return BAD("tar entry '%s': device number out of range", r->disp);
		meta m = {
		    .mode = (uint32_t)(mode & 07777),
		    .uid = r->pd.has_uid ? r->pd.uid : uid,
		    .gid = r->pd.has_gid ? r->pd.gid : gid,
		};
		if (r->pd.has_mtime)
			m.mtime = (struct timespec){(time_t)r->pd.mtime_sec, r->pd.mtime_nsec};
		else
			m.mtime = (struct timespec){(time_t)mtime, 0};
		q = extract_entry(r, type, size, &m, r->pd.linkpath, (uint32_t)dmaj, (uint32_t)dmin, err);
		if (q < 0)
			return q;
		pending_clear(&r->pd);
	}
}

int store_tar_extract(int dir_fd, store_tar_read_fn fn, void *userdata, const store_tar_extract_opts *opts,
		      store_tar_stats *ret_stats, sbx_err **err)
{
	store_tar_extract_opts o = opts ? *opts : (store_tar_extract_opts)STORE_TAR_EXTRACT_OPTS_INIT;
	if (!o.max_bytes)
		o.max_bytes = DEFAULT_MAX_BYTES;
	if (!o.max_entries)
		o.max_entries = DEFAULT_MAX_ENTRIES;
	reader r = {.fn = fn, .ud = userdata, .o = o, .cache_fd = -1, .hole_fd = -1};
	/* A regular file read from its start (layer.c's temporary tar): its holes
	 * are skipped, not read (a 64 GiB sparse file is not 64 GiB of reads). */
	struct stat ist;
	if (fn == store_tar_fd_read && fstat(*(int *)userdata, &ist) == 0 && S_ISREG(ist.st_mode) &&
	    lseek(*(int *)userdata, 0, SEEK_CUR) == 0) {
		r.hole_fd = *(int *)userdata;
		r.in_size = (uint64_t)ist.st_size;
	}
	r.root = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	if (r.root < 0)
		return err_errno(err, "tar: target directory");
	r.buf = malloc(CHUNK);
	int q = r.buf ? read_all_entries(&r, err) : err_errnum(err, ENOMEM, "tar");
	if (q >= 0)
		q = finish(&r, err);
	pending_clear(&r.pd);
	for (size_t i = 0; i < r.n_dirs; i++)
		dirmeta_clear(&r.dirs[i]);
	free(r.dirs);
	free(r.cache_path);
	free(r.disp);
	free(r.buf);
	safe_close(r.cache_fd);
	safe_close(r.root);
	if (q < 0)
		return q;
	if (ret_stats)
		*ret_stats = (store_tar_stats){.bytes = r.consumed, .entries = r.entries};
	return 0;
}

ssize_t store_tar_fd_read(void *userdata, void *buf, size_t len)
{
	ssize_t n = RETRY_EINTR(read(*(int *)userdata, buf, len));
	return n < 0 ? -errno : n;
}

ssize_t store_tar_mem_read(void *userdata, void *buf, size_t len)
{
	store_tar_mem *m = userdata;
	size_t k = m->len - m->off < len ? m->len - m->off : len;
	memcpy(buf, m->data + m->off, k);
	m->off += k;
	return (ssize_t)k;
}
