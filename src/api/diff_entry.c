/* One path's entry on two sides of `sbx diff` (diff_entry.h). */
#include "api/diff_entry.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "store/digest.h"
#include "store/treewalk.h"
#include "util/macro.h"

uint32_t diff_norm_id(uint32_t id, uint32_t base, uint32_t count)
{
	return count && id >= base && id - base < count ? id - base : id;
}

unsigned diff_stat_compare(const diff_entry *a, const diff_entry *b)
{
	const struct stat *x = &a->st, *y = &b->st;
	if ((x->st_mode & S_IFMT) != (y->st_mode & S_IFMT))
		return DIFF_TYPE;
	unsigned r = 0;
	if (!S_ISLNK(x->st_mode) && (x->st_mode & 07777) != (y->st_mode & 07777))
		r |= DIFF_MODE;
	if (diff_norm_id(x->st_uid, a->ids.uid_base, a->ids.count) !=
		diff_norm_id(y->st_uid, b->ids.uid_base, b->ids.count) ||
	    diff_norm_id(x->st_gid, a->ids.gid_base, a->ids.count) !=
		diff_norm_id(y->st_gid, b->ids.gid_base, b->ids.count))
		r |= DIFF_OWNER;
	if (S_ISREG(x->st_mode) && x->st_size != y->st_size)
		r |= DIFF_SIZE;
	if ((S_ISCHR(x->st_mode) || S_ISBLK(x->st_mode)) && x->st_rdev != y->st_rdev)
		r |= DIFF_RDEV;
	return r;
}

static bool same_content(const diff_entry *a, const diff_entry *b, const char *rel)
{
	_cleanup_close_ int fa = store_beneath_open(a->root, rel, O_RDONLY);
	_cleanup_close_ int fb = store_beneath_open(b->root, rel, O_RDONLY);
	if (fa < 0 || fb < 0)
		return false;
	/* On the stack: static thread-local buffers made every thread of every
	 * sbx process zero them (128 KiB of TLS) at its start. */
	char ba[16384], bb[16384];
	for (;;) {
		ssize_t na = RETRY_EINTR(read(fa, ba, sizeof(ba)));
		if (na < 0)
			return false;
		size_t got = 0;
		while (got < (size_t)na) {
			ssize_t nb = RETRY_EINTR(read(fb, bb + got, (size_t)na - got));
			if (nb <= 0)
				return false;
			got += (size_t)nb;
		}
		if (na == 0) {
			char c;
			return RETRY_EINTR(read(fb, &c, 1)) == 0;
		}
		if (memcmp(ba, bb, (size_t)na) != 0)
			return false;
	}
}

char *diff_entry_target(const diff_entry *e, const char *rel)
{
	if (e->root < 0)
		return e->target ? strdup(e->target) : NULL;
	const char *base;
	_cleanup_close_ int pfd = store_beneath_open_parent(e->root, rel, &base);
	if (pfd < 0)
		return NULL;
	char buf[4097];
	ssize_t n = readlinkat(pfd, base, buf, sizeof(buf) - 1);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return strdup(buf);
}

int diff_entry_xattrs(const diff_entry *e, const char *rel, store_xattrs *ret)
{
	if (e->root < 0 || !*rel) {
		*ret = (store_xattrs){0};
		return 0;
	}
	const char *base;
	_cleanup_close_ int pfd = store_beneath_open_parent(e->root, rel, &base);
	if (pfd < 0)
		return pfd;
	store_xattrs x _cleanup_(store_xattrs_clear) = {0};
	int r = store_xattrs_read(-1, pfd, base, &x);
	if (r < 0)
		return r;
	/* count 0 (a template's tree, the host): ids as they are */
	store_idmap ids = e->ids.count ? e->ids : (store_idmap){0, 0, UINT32_MAX};
	for (size_t i = 0; i < x.n; i++) {
		_cleanup_free_ char *raw = malloc(x.v[i].len + 1);
		if (!raw)
			return -ENOMEM;
		memcpy(raw, x.v[i].value, x.v[i].len + 1);
		size_t len = x.v[i].len;
		if (store_xattr_normalize(&x.v[i], &ids, NULL) < 0) {
			free(x.v[i].value);
			x.v[i].value = TAKE_PTR(raw);
			x.v[i].len = len;
		}
	}
	*ret = x;
	x = (store_xattrs){0};
	return 0;
}

static bool same_xattrs(const diff_entry *a, const diff_entry *b, const char *rel)
{
	store_xattrs xa _cleanup_(store_xattrs_clear) = {0};
	store_xattrs xb _cleanup_(store_xattrs_clear) = {0};
	if (diff_entry_xattrs(a, rel, &xa) < 0 || diff_entry_xattrs(b, rel, &xb) < 0)
		return false;
	return store_xattrs_equal(&xa, &xb);
}

unsigned diff_entry_compare(const diff_entry *a, const diff_entry *b, const char *rel)
{
	unsigned r = diff_stat_compare(a, b);
	if (r)
		return r & -r; /* the first */
	if (S_ISLNK(a->st.st_mode)) {
		_cleanup_free_ char *ta = diff_entry_target(a, rel), *tb = diff_entry_target(b, rel);
		if (!ta || !tb || !streq(ta, tb))
			return DIFF_TARGET;
	}
	if (!same_xattrs(a, b, rel))
		return DIFF_XATTRS;
	if (S_ISREG(a->st.st_mode) && !same_content(a, b, rel))
		return DIFF_CONTENT;
	return 0;
}

/* ---- what an entry is (api_env_diff_meta) ----------------------------------------- */

/* The user.* xattrs of fd (overlay's own aside) into h, sorted by name, as
 * "<name>=<len>:<value>". Only user.*: traces' meta_digest is made of this,
 * and a stored trace's replay must hash as its recording did. */
static int user_xattrs_hash(int fd, store_hasher *h)
{
	store_xattrs x _cleanup_(store_xattrs_clear) = {0};
	int r = store_xattrs_read(fd, -1, NULL, &x);
	if (r < 0)
		return r;
	for (size_t i = 0; i < x.n; i++) {
		if (!startswith(x.v[i].name, "user."))
			continue;
		char len[24];
		snprintf(len, sizeof(len), "=%zu:", x.v[i].len);
		if (store_hasher_update(h, x.v[i].name, strlen(x.v[i].name), NULL) < 0 ||
		    store_hasher_update(h, len, strlen(len), NULL) < 0 ||
		    store_hasher_update(h, x.v[i].value, x.v[i].len, NULL) < 0)
			return -ENOMEM;
	}
	return 0;
}

char *diff_entry_describe(const diff_entry *e, const char *rel)
{
	mode_t fmt = e->st.st_mode & S_IFMT;
	uint32_t uid = diff_norm_id(e->st.st_uid, e->ids.uid_base, e->ids.count),
		 gid = diff_norm_id(e->st.st_gid, e->ids.gid_base, e->ids.count);
	char extra[STORE_DIGEST_SIZE + 128] = "", xd[STORE_DIGEST_SIZE] = "-";
	_cleanup_free_ char *target = NULL;
	_cleanup_close_ int fd = -1;
	if (fmt == S_IFREG || fmt == S_IFDIR)
		fd = store_beneath_open(
		    e->root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY | (fmt == S_IFDIR ? O_DIRECTORY : 0));
	struct stat now;
	if ((fmt == S_IFREG || fmt == S_IFDIR) &&
	    (fd < 0 || fstat(fd, &now) < 0 || (now.st_mode & S_IFMT) != fmt))
		snprintf(extra, sizeof(extra), " unreadable");
	else if (fmt == S_IFREG) {
		char cd[STORE_DIGEST_SIZE];
		uint64_t size = 0;
		if (store_digest_fd(fd, cd, &size, NULL) < 0)
			snprintf(extra, sizeof(extra), " unreadable");
		else
			snprintf(extra, sizeof(extra), " %" PRIu64 " %s", size, cd);
	} else if (fmt == S_IFLNK)
		target = diff_entry_target(e, rel);
	else if (fmt == S_IFCHR || fmt == S_IFBLK)
		snprintf(extra, sizeof(extra), " %u:%u", major(e->st.st_rdev), minor(e->st.st_rdev));
	if (fd >= 0) {
		_cleanup_hasher_ store_hasher *h = store_hasher_new(NULL);
		if (!h || user_xattrs_hash(fd, h) < 0 || store_hasher_final(h, xd, NULL) < 0)
			snprintf(xd, sizeof(xd), "unreadable");
	}
	const char *type = fmt == S_IFREG   ? "file"
			   : fmt == S_IFDIR ? "dir"
			   : fmt == S_IFLNK ? "symlink"
			   : fmt == S_IFIFO ? "fifo"
			   : fmt == S_IFCHR ? "char"
			   : fmt == S_IFBLK ? "block"
					    : "socket";
	char *what = NULL;
	if (asprintf(&what, "%s %04o %u:%u%s%s%s xattrs %s", type,
		     fmt == S_IFLNK ? 0777 : (unsigned)(e->st.st_mode & 07777), uid, gid, extra,
		     target ? " -> " : "", target ?: "", xd) < 0)
		return NULL;
	return what;
}
