/* Unit tests: src/store/digest.c, tarw.c, tarr.c.
 * Round trip of a tree holding every kind of entry the store keeps, byte
 * determinism, and a hostile-archive corpus built here (written to
 * tests/fuzz/corpus/store_tar when SBX_WRITE_CORPUS=1). Root-only parts
 * (chown to shifted ids) skip with a reason. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/digest.h"
#include "store/storefs.h"
#include "store/tarr.h"
#include "store/tarw.h"
#include "unit.h"
#include "util/fs.h"

/* ---- helpers --------------------------------------------------------------- */

static char *tmpdir(void)
{
	char *p = strdup("/var/tmp/sbx-test-store-XXXXXX");
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

typedef struct buf {
	uint8_t *p;
	size_t len, cap;
} buf;

static void buf_add(buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 4096;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

static int buf_write(void *ud, const void *d, size_t n, sbx_err **err)
{
	buf_add(ud, d, n);
	return 0;
}

static int tar_tree(const char *dir, const store_idmap *ids, buf *out, char digest[STORE_DIGEST_SIZE],
		    sbx_err **err)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = store_tar_write_dir(fd, ids, buf_write, out, NULL, err);
	if (r < 0)
		return r;
	return store_digest_buf(out->p, out->len, digest, err);
}

static int extract_buf(const char *dir, const buf *b, const store_tar_extract_opts *o, sbx_err **err)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	store_tar_mem m = {b->p, b->len, 0};
	return store_tar_extract(fd, store_tar_mem_read, &m, o, NULL, err);
}

static void put_file(const char *root, const char *rel, const char *data, size_t n, mode_t mode)
{
	_cleanup_free_ char *p = fs_path_join(root, rel);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, data, n) != (ssize_t)n)
		abort();
	fchmod(fd, mode);
}

static void at(const char *root, const char *rel, char out[4096])
{
	snprintf(out, 4096, "%s/%s", root, rel);
}

/* A line per entry (sorted walk): type, mode, ids - base, size, mtime, content
 * digest / target / device, hard-link group, user.* xattrs. Whiteouts print
 * as such only (their metadata is canonical, not preserved). */
typedef struct seen {
	ino_t ino;
	char path[512];
} seen;

static int cmp_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static void describe_dir(const char *abs, const char *rel, uint32_t base, buf *out, seen *s, size_t *ns)
{
	struct dirent **names;
	int n = scandir(abs, &names, NULL, cmp_name);
	if (n < 0)
		abort();
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		if (streq(nm, ".") || streq(nm, "..")) {
			free(names[i]);
			continue;
		}
		char a[4096], r[4096], line[8192];
		snprintf(a, sizeof(a), "%s/%s", abs, nm);
		snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", nm);
		struct stat st;
		if (lstat(a, &st) < 0)
			abort();
		if (S_ISCHR(st.st_mode) && st.st_rdev == 0) {
			snprintf(line, sizeof(line), "%s whiteout\n", r);
			buf_add(out, line, strlen(line));
			free(names[i]);
			continue;
		}
		char extra[1024] = "";
		if (S_ISREG(st.st_mode)) {
			_cleanup_close_ int fd = open(a, O_RDONLY | O_CLOEXEC);
			char d[STORE_DIGEST_SIZE];
			if (fd < 0 || store_digest_fd(fd, d, NULL, NULL) < 0)
				abort();
			snprintf(extra, sizeof(extra), "%s", d);
		} else if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlink(a, extra, sizeof(extra) - 1);
			extra[k < 0 ? 0 : k] = 0;
		} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
			snprintf(extra, sizeof(extra), "dev %u:%u", major(st.st_rdev), minor(st.st_rdev));
		const char *group = "";
		if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
			for (size_t j = 0; j < *ns && !*group; j++)
				if (s[j].ino == st.st_ino)
					group = s[j].path;
			if (!*group && *ns < 64) {
				s[*ns].ino = st.st_ino;
				snprintf(s[*ns].path, sizeof(s[*ns].path), "%s", r);
				group = s[(*ns)++].path;
			}
		}
		char xa[2048] = "", list[1024];
		ssize_t ln = S_ISLNK(st.st_mode) ? 0 : llistxattr(a, list, sizeof(list));
		for (ssize_t off = 0; off < ln; off += (ssize_t)strlen(list + off) + 1) {
			if (!startswith(list + off, "user."))
				continue;
			char v[256];
			ssize_t vl = lgetxattr(a, list + off, v, sizeof(v) - 1);
			v[vl < 0 ? 0 : vl] = 0;
			if (streq(list + off, "user.overlay.opaque") && !streq(v, "y"))
				continue; /* only "y" means opaque; others are not kept */
			size_t l = strlen(xa);
			snprintf(xa + l, sizeof(xa) - l, " %s=%s", list + off, v);
		}
		snprintf(line, sizeof(line),
			 "%s mode=%o uid=%ld gid=%ld size=%lld mtime=%lld.%09ld %s link=%s%s\n", r,
			 st.st_mode, (long)st.st_uid - (long)base, (long)st.st_gid - (long)base,
			 S_ISDIR(st.st_mode) ? 0LL : (long long)st.st_size, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, extra, group, xa);
		buf_add(out, line, strlen(line));
		if (S_ISDIR(st.st_mode))
			describe_dir(a, r, base, out, s, ns);
		free(names[i]);
	}
	free(names);
}

static char *describe(const char *dir, uint32_t base)
{
	buf b = {0};
	seen s[64];
	size_t ns = 0;
	describe_dir(dir, "", base, &b, s, &ns);
	buf_add(&b, "", 1);
	return (char *)b.p;
}

static bool as_root(void)
{
	return geteuid() == 0;
}

static uint32_t tree_base;
static bool tree_vary; /* varied ids (root only) */

static int own_and_time(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	if (ftw->level == 0 || (S_ISCHR(st->st_mode) && st->st_rdev == 0))
		return 0;
	uint32_t h = 0;
	for (const char *c = path + ftw->base; *c; c++)
		h = h * 31 + (uint8_t)*c;
	uint32_t k = tree_vary ? h % 1000 : 0;
	if (lchown(path, tree_base + k, tree_base + k / 2) < 0 && as_root())
		abort();
	struct timespec ts[2] = {{1700000000, 0},
				 {1600000000 + (time_t)(h % 100000), (long)(h % 1000000000)}};
	utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

/* Builds the test tree under root. ids: owner base (root: varied ids). `order`
 * flips creation order, which must not change the tar. */
static void build_tree(const char *root, uint32_t base, bool order)
{
	char p[4096], q[4096];
	static const char *const dirs[] = {"d", "d/sub", "d/sub/deeper", "opq", "xdir", "ro"};
	for (size_t k = 0; k < ARRAY_SIZE(dirs); k++) {
		size_t i = order ? ARRAY_SIZE(dirs) - 1 - k : k;
		/* parents first either way */
		(void)i;
		at(root, dirs[k], p);
		mkdir(p, 0755);
	}
	uint8_t data[70000];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(data); i++) {
		x = x * 1103515245 + 12345;
		data[i] = (uint8_t)(x >> 16);
	}
	static const char *const files[] = {"a.txt", "d/b.bin", "d/sub/deeper/c", "opq/in", "xdir/f", "ro/r"};
	for (size_t k = 0; k < ARRAY_SIZE(files); k++) {
		size_t i = order ? ARRAY_SIZE(files) - 1 - k : k;
		put_file(root, files[i], (const char *)data + i * 100,
			 i == 1 ? sizeof(data) - 100 : 10 + i * 37, 0644);
	}
	put_file(root, "empty", "", 0, 0600);
	put_file(root, "suid", "#!/bin/sh\n", 10, 04755);
	at(root, "suid", p);
	chmod(p, 04755);
	char longname[300];
	memset(longname, 'n', 150);
	longname[150] = 0;
	snprintf(q, sizeof(q), "d/sub/deeper/%s", longname);
	put_file(root, q, "long", 4, 0640);
	/* hard links: three names, one inode; order of creation varies */
	at(root, order ? "d/hl2" : "hl1", p);
	put_file(root, order ? "d/hl2" : "hl1", "linked", 6, 0644);
	at(root, order ? "hl1" : "d/hl2", q);
	if (link(p, q) < 0)
		abort();
	at(root, "d/sub/hl3", q);
	if (link(p, q) < 0)
		abort();
	at(root, "sym", p);
	if (symlink("d/b.bin", p) < 0)
		abort();
	at(root, "d/dangling", p);
	if (symlink("../../../../etc/passwd", p) < 0)
		abort();
	char longtarget[200];
	memset(longtarget, 't', 180);
	longtarget[180] = 0;
	at(root, "d/longlink", p);
	if (symlink(longtarget, p) < 0)
		abort();
	at(root, "fifo", p);
	if (mkfifo(p, 0620) < 0)
		abort();
	at(root, "gone", p);
	if (mknod(p, S_IFCHR | 0, makedev(0, 0)) < 0)
		abort();
	at(root, "d/sub/gone2", p);
	if (mknod(p, S_IFCHR | 0, makedev(0, 0)) < 0)
		abort();
	at(root, "a.txt", p);
	if (setxattr(p, "user.foo", "bar", 3, 0) < 0)
		abort();
	at(root, "d", p);
	setxattr(p, "user.dirattr", "v", 1, 0);
	at(root, "opq", p);
	setxattr(p, "user.overlay.opaque", "y", 1, 0);
	at(root, "xdir", p);
	setxattr(p, "user.overlay.opaque", "x", 1, 0); /* not opaque: a "has whiteouts" marker */
	/* ownership (varied ids as root) and times, on every entry but whiteouts */
	tree_base = base;
	if (nftw(root, own_and_time, 16, FTW_PHYS) < 0)
		abort();
	at(root, "suid", p);
	chmod(p, 04755); /* chown cleared it */
	at(root, "ro", p);
	chmod(p, 0555);
}

static store_idmap tree_ids(uint32_t base)
{
	if (tree_vary)
		return (store_idmap){base, base, 65536};
	return (store_idmap){(uint32_t)geteuid(), (uint32_t)getegid(), 1};
}

/* ---- digest ---------------------------------------------------------------- */

TEST(digest_vectors)
{
	char d[STORE_DIGEST_SIZE];
	CHECK(store_digest_buf("abc", 3, d, NULL) == 0);
	CHECK_STREQ(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK(store_digest_buf("", 0, d, NULL) == 0);
	CHECK_STREQ(d, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* streaming in pieces equals one shot */
	store_hasher *h = store_hasher_new(NULL);
	CHECK(h);
	store_hasher_update(h, "a", 1, NULL);
	store_hasher_update(h, "bc", 2, NULL);
	char d2[STORE_DIGEST_SIZE];
	store_hasher_final(h, d2, NULL);
	CHECK(store_hasher_bytes(h) == 3);
	store_hasher_free(h);
	store_digest_buf("abc", 3, d, NULL);
	CHECK_STREQ(d, d2);
}

TEST(digest_parse_validate)
{
	const char *ok = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	CHECK(store_digest_valid(ok));
	CHECK(store_digest_hex(ok) == ok + 7);
	uint8_t raw[32];
	CHECK(store_digest_parse(ok, raw) == 0);
	CHECK(raw[0] == 0xba && raw[31] == 0xad);
	char back[STORE_DIGEST_SIZE];
	store_digest_format(raw, back);
	CHECK_STREQ(back, ok);
	static const char *const bad[] = {
	    "",
	    "sha256:",
	    "sha512:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD",
	    "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",
	    "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad0",
	    "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ag",
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    "sha256:../../../../../../../../../../../../../../../../../../../../etc",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		CHECK(!store_digest_valid(bad[i]));
		CHECK(store_digest_parse(bad[i], raw) == -EINVAL);
	}
	CHECK(!store_digest_valid(NULL));
	CHECK(store_digest_hex_valid(ok + 7));
}

TEST(path_clean)
{
	static const struct {
		const char *in, *out;
		int r;
	} cases[] = {
	    {"a/b", "a/b", 0},
	    {"./a//b/", "a/b", 0},
	    {".", "", 0},
	    {"./", "", 0},
	    {"a/./b", "a/b", 0},
	    {"../a", NULL, -EXDEV},
	    {"a/../b", NULL, -EXDEV},
	    {"/etc", NULL, -EXDEV},
	    {"a/..", NULL, -EXDEV},
	    {"", NULL, -EINVAL},
	    {"...", "...", 0},
	    {"a/.../b", "a/.../b", 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *o = NULL;
		int r = store_tar_path_clean(cases[i].in, &o);
		CHECK(r == cases[i].r);
		if (r == 0)
			CHECK_STREQ(o, cases[i].out);
		free(o);
	}
	char longc[300];
	memset(longc, 'x', 299);
	longc[299] = 0;
	char *o = NULL;
	CHECK(store_tar_path_clean(longc, &o) == -ENAMETOOLONG);
}

/* ---- round trip ------------------------------------------------------------ */

static void round_trip(bool do_chown)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char src[4096], src2[4096], dst[4096];
	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(src2, sizeof(src2), "%s/src2", top);
	snprintf(dst, sizeof(dst), "%s/dst", top);
	mkdir(src, 0755);
	mkdir(src2, 0755);
	mkdir(dst, 0755);
	uint32_t base = do_chown ? 100000 : (uint32_t)geteuid();
	tree_vary = do_chown;
	build_tree(src, base, false);
	build_tree(src2, base, true);
	store_idmap ids = tree_ids(base);

	buf t1 = {0}, t2 = {0}, t3 = {0}, t4 = {0};
	char d1[STORE_DIGEST_SIZE], d2[STORE_DIGEST_SIZE], d3[STORE_DIGEST_SIZE], d4[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e = NULL;
	int r = tar_tree(src, &ids, &t1, d1, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	/* deterministic: same tree twice, and the same tree built in another order */
	CHECK(tar_tree(src, &ids, &t2, d2, NULL) == 0);
	CHECK(t1.len == t2.len && memcmp(t1.p, t2.p, t1.len) == 0);
	CHECK(tar_tree(src2, &ids, &t3, d3, NULL) == 0);
	CHECK_STREQ(d1, d3);
	/* whiteouts and the opaque marker are OCI entries; "x" is not opaque */
	CHECK(memmem(t1.p, t1.len, ".wh.gone", 8));
	CHECK(memmem(t1.p, t1.len, "opq/.wh..wh..opq", 16));
	CHECK(!memmem(t1.p, t1.len, "xdir/.wh..wh..opq", 17));
	CHECK(!memmem(t1.p, t1.len, "user.overlay", 12));

	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.whiteouts = true;
	o.keep_setid = true;
	uint32_t base2 = base;
	if (do_chown) {
		base2 = 300000;
		o.chown = true;
		o.ids = (store_idmap){base2, base2, 65536};
	}
	_cleanup_err_ sbx_err *e2 = NULL;
	r = extract_buf(dst, &t1, &o, &e2);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e2));
	CHECK(r == 0);
	/* the extracted tree equals the source, and re-tars to the same bytes */
	_cleanup_free_ char *ds = describe(src, base), *dd = describe(dst, base2);
	if (!streq(ds, dd))
		fprintf(stderr, "--- source\n%s--- extracted\n%s", ds, dd);
	CHECK(streq(ds, dd));
	store_idmap ids2 = do_chown ? (store_idmap){base2, base2, 65536} : ids;
	CHECK(tar_tree(dst, &ids2, &t4, d4, NULL) == 0);
	CHECK_STREQ(d1, d4);
	/* overlay lower format */
	char p[4096], v[8];
	struct stat st;
	at(dst, "gone", p);
	CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0);
	at(dst, "opq", p);
	CHECK(getxattr(p, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
	at(dst, "xdir", p);
	CHECK(getxattr(p, "user.overlay.opaque", v, sizeof(v)) < 0);
	at(dst, "suid", p);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 04755);
	free(t1.p);
	free(t2.p);
	free(t3.p);
	free(t4.p);
	fs_rm_rf(top);
}

TEST(tar_round_trip)
{
	round_trip(false);
}

TEST(tar_round_trip_chown)
{
	if (!as_root())
		SKIP_OK("chown to shifted ids needs root");
	round_trip(true);
}

/* A hard-link entry only between two paths of one inode. The writer lists a
 * directory's entries (lstat) before writing them; if a file listed earlier
 * is deleted and another created before a later directory is listed (a tree
 * that changes under the read: an environment that could not be frozen, or
 * a crash leaving one), the new file can get the freed inode number. Before,
 * the writer took (dev, ino) alone as the identity and wrote the new file as
 * a link to the old path: every tree extracted from that tar had two
 * unrelated files as one inode (DESIGN.md "Never alias inodes"). The reuse is
 * shown through store_sys.fstatat (the kernel's choice of a free number is
 * not deterministic): b/y is listed with a/x's number. Both have a link
 * outside the tree, as every file of a delta's staging tree has. */
static dev_t reuse_dev;
static ino_t reuse_ino;
static int reuse_fstatat(int dfd, const char *name, struct stat *st, int flags)
{
	int r = fstatat(dfd, name, st, flags);
	if (r == 0 && streq(name, "y")) {
		st->st_dev = reuse_dev;
		st->st_ino = reuse_ino;
	}
	return r;
}

static ino_t ino_at(const char *root, const char *rel, nlink_t *ret_nlink)
{
	char p[4096];
	struct stat st;
	at(root, rel, p);
	if (lstat(p, &st) < 0)
		return 0;
	*ret_nlink = st.st_nlink;
	return st.st_ino;
}

TEST(tar_hard_link_needs_one_inode)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char src[4096], dst[4096], dst2[4096], a[4096], b[4096];
	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(dst, sizeof(dst), "%s/dst", top);
	snprintf(dst2, sizeof(dst2), "%s/dst2", top);
	mkdir(src, 0755);
	mkdir(dst, 0755);
	mkdir(dst2, 0755);
	at(src, "a", a);
	at(src, "b", b);
	mkdir(a, 0755);
	mkdir(b, 0755);
	put_file(src, "a/x", "one\n", 4, 0644);
	put_file(src, "b/y", "other\n", 6, 0644);
	put_file(src, "a/p", "pair\n", 5, 0644);
	char x[4096], y[4096], p[4096], q[4096], out[4096];
	at(src, "a/x", x);
	at(src, "b/y", y);
	at(src, "a/p", p);
	at(src, "b/q", q);
	snprintf(out, sizeof(out), "%s/x-outside", top);
	CHECK(link(x, out) == 0);
	snprintf(out, sizeof(out), "%s/y-outside", top);
	CHECK(link(y, out) == 0);
	CHECK(link(p, q) == 0); /* a real pair: a/p and b/q */
	struct stat xs;
	CHECK(lstat(x, &xs) == 0);
	reuse_dev = xs.st_dev;
	reuse_ino = xs.st_ino;
	store_idmap ids = {(uint32_t)geteuid(), (uint32_t)getegid(), 1};

	buf t = {0};
	char d[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e = NULL;
	store_sys.fstatat = reuse_fstatat;
	int r = tar_tree(src, &ids, &t, d, &e);
	store_sys.fstatat = fstatat;
	if (r == 0) {
		/* What the old writer made of it: b/y a link to a/x. */
		store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
		nlink_t nx = 0, ny = 0;
		CHECK(extract_buf(dst, &t, &o, NULL) == 0);
		ino_t ix = ino_at(dst, "a/x", &nx), iy = ino_at(dst, "b/y", &ny);
		fprintf(stderr,
			"  b/y was written as %s (a/x: inode %ju, %ju links; b/y: inode %ju, %ju links)\n",
			ix == iy ? "a hard link to a/x" : "a file", (uintmax_t)ix, (uintmax_t)nx,
			(uintmax_t)iy, (uintmax_t)ny);
	}
	CHECK(r < 0);
	CHECK(e && strstr(sbx_err_message(e), "'b/y' changed while being read"));
	free(t.p);

	/* Read as it is: the real pair is one inode again, a/x and b/y are two. */
	buf t2 = {0};
	CHECK(tar_tree(src, &ids, &t2, d, NULL) == 0);
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	CHECK(extract_buf(dst2, &t2, &o, NULL) == 0);
	nlink_t n1 = 0, n2 = 0;
	CHECK(ino_at(dst2, "a/p", &n1) == ino_at(dst2, "b/q", &n2) && n1 == 2 && n2 == 2);
	CHECK(ino_at(dst2, "a/x", &n1) != ino_at(dst2, "b/y", &n2) && n1 == 1 && n2 == 1);
	free(t2.p);
	fs_rm_rf(top);
}

TEST(tar_refuses_unmapped_owner_and_wh_names)
{
	if (!as_root())
		SKIP_OK("creating files owned by other uids needs root");
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	put_file(top, "f", "x", 1, 0644);
	char p[4096];
	at(top, "f", p);
	CHECK(chown(p, 5, 5) == 0);
	store_idmap ids = {100000, 100000, 65536};
	buf b = {0};
	char d[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(tar_tree(top, &ids, &b, d, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "outside the mapped range"));
	CHECK(chown(p, 100001, 100001) == 0);
	put_file(top, ".wh.real", "x", 1, 0644);
	at(top, ".wh.real", p);
	CHECK(chown(p, 100000, 100000) == 0);
	/* a real ".wh." name is stored; only an OCI consumer refuses it, naming it */
	b.len = 0;
	CHECK(tar_tree(top, &ids, &b, d, NULL) == 0);
	_cleanup_err_ sbx_err *e2 = NULL;
	_cleanup_close_ int fd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	b.len = 0;
	CHECK(store_tar_write_dir_flags(fd, &ids, STORE_TAR_W_OCI, buf_write, &b, NULL, &e2) < 0);
	CHECK(strstr(sbx_err_message(e2), "'/.wh.real'"));
	free(b.p);
	fs_rm_rf(top);
}

/* Real names that look like OCI whiteouts (issue 13.7): a file ".wh.x" next
 * to a whiteout of x (the same tar name), ".wh..wh..opq" files and
 * directories inside an opaque directory, whiteouts of ".wh." names
 * (including ".wh..opq", whose tar name is the opaque marker's). The store's
 * own tar keeps them apart (pax SBX.literal / SBX.whiteout), extracts them
 * exactly and re-tars to the same bytes; a tree without such names has no
 * SBX record (an ordinary OCI layer). */
TEST(tar_wh_names_round_trip)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char src[4096], dst[4096], oci[4096], p[4096];
	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(dst, sizeof(dst), "%s/dst", top);
	snprintf(oci, sizeof(oci), "%s/oci", top);
	CHECK(mkdir(src, 0755) == 0 && mkdir(dst, 0755) == 0 && mkdir(oci, 0755) == 0);
	uint32_t base = (uint32_t)geteuid();
	store_idmap ids = tree_ids(base);
	/* without such names: no SBX. record */
	put_file(src, "plain", "p", 1, 0644);
	buf t0 = {0};
	char d0[STORE_DIGEST_SIZE];
	CHECK(tar_tree(src, &ids, &t0, d0, NULL) == 0);
	CHECK(!memmem(t0.p, t0.len, "SBX.", 4));
	put_file(src, ".wh.x", "real", 4, 0644);
	at(src, "x", p);
	CHECK(mknod(p, S_IFCHR, makedev(0, 0)) == 0);
	at(src, ".wh.y", p);
	CHECK(mknod(p, S_IFCHR, makedev(0, 0)) == 0); /* the whiteout of a ".wh.y" below */
	at(src, "o", p);
	CHECK(mkdir(p, 0755) == 0 && setxattr(p, "user.overlay.opaque", "y", 1, 0) == 0);
	put_file(src, "o/.wh..wh..opq", "file", 4, 0600);
	at(src, "o/.wh..opq", p);
	CHECK(mknod(p, S_IFCHR, makedev(0, 0)) == 0);
	at(src, ".wh.dir", p);
	CHECK(mkdir(p, 0755) == 0);
	put_file(src, ".wh.dir/.wh.", "e", 1, 0644);
	at(src, ".wh.dir/.wh.link", p);
	char q[4096];
	at(src, ".wh.x", q);
	CHECK(link(q, p) == 0);
	at(src, ".wh.sym", p);
	CHECK(symlink(".wh.x", p) == 0);

	buf t1 = {0}, t2 = {0};
	char d1[STORE_DIGEST_SIZE], d2[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e = NULL;
	int r = tar_tree(src, &ids, &t1, d1, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	CHECK(memmem(t1.p, t1.len, "SBX.literal=1", 13));
	CHECK(memmem(t1.p, t1.len, "SBX.whiteout=1", 14));
	const char *w = getenv("SBX_WRITE_CORPUS");
	if (w && *w) { /* a fuzz seed: whiteouts and literal names on (first byte 9) */
		buf seed = {0};
		buf_add(&seed, "\x09", 1);
		buf_add(&seed, t1.p, t1.len);
		fs_write_atomic("tests/fuzz/corpus/store_tar/wh-names.tar", seed.p, seed.len, 0644);
		free(seed.p);
	}

	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.whiteouts = true;
	o.literal_names = true;
	_cleanup_err_ sbx_err *e2 = NULL;
	r = extract_buf(dst, &t1, &o, &e2);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e2));
	CHECK(r == 0);
	_cleanup_free_ char *ds = describe(src, base), *dd = describe(dst, base);
	if (!streq(ds, dd))
		fprintf(stderr, "--- source\n%s--- extracted\n%s", ds, dd);
	CHECK(streq(ds, dd));
	char v[8];
	at(dst, "o", p);
	CHECK(getxattr(p, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
	CHECK(tar_tree(dst, &ids, &t2, d2, NULL) == 0);
	CHECK_STREQ(d1, d2);

	/* As an OCI layer (literal names off) the same bytes mean whiteouts:
	 * ".wh.x" hides x, and ".wh..wh.y" is a reserved name. */
	o.literal_names = false;
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(extract_buf(oci, &t1, &o, &e3) < 0);
	CHECK(strstr(sbx_err_message(e3), "reserved"));
	free(t0.p);
	free(t1.p);
	free(t2.p);
	fs_rm_rf(top);
}

/* ---- hostile archives ------------------------------------------------------ */

static void oct(uint8_t *f, size_t w, uint64_t v)
{
	snprintf((char *)f, w, "%0*llo", (int)w - 1, (unsigned long long)v);
}

static void hdr(buf *b, const char *name, char type, uint64_t size, const char *link, unsigned mode)
{
	uint8_t h[512] = {0};
	strncpy((char *)h, name, 100);
	oct(h + 100, 8, mode);
	oct(h + 108, 8, 0);
	oct(h + 116, 8, 0);
	oct(h + 124, 12, size);
	oct(h + 136, 12, 1600000000);
	h[156] = (uint8_t)type;
	if ((type == '3' || type == '4') && !streq(name, "wh")) {
		oct(h + 329, 8, 1);
		oct(h + 337, 8, 3);
	}
	if (link)
		strncpy((char *)h + 157, link, 100);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	buf_add(b, h, 512);
}

static void data(buf *b, const void *d, size_t n)
{
	static const uint8_t z[512];
	buf_add(b, d, n);
	if (n % 512)
		buf_add(b, z, 512 - n % 512);
}

static void end(buf *b)
{
	static const uint8_t z[1024];
	buf_add(b, z, sizeof(z));
}

static void pax(buf *b, const char *records)
{
	hdr(b, "././@PaxHeader", 'x', strlen(records), NULL, 0644);
	data(b, records, strlen(records));
}

static void file(buf *b, const char *name, const char *content)
{
	hdr(b, name, '0', strlen(content), NULL, 0644);
	data(b, content, strlen(content));
}

typedef struct hostile {
	const char *name;
	void (*build)(buf *b);
	const char *want; /* substring of the error */
} hostile;

static void h_dotdot(buf *b)
{
	file(b, "../evil", "x");
}
static void h_dotdot_mid(buf *b)
{
	file(b, "a/../../evil", "x");
}
static void h_abs(buf *b)
{
	file(b, "/var/tmp/sbx-test-store-evil", "x");
}
static void h_symlink_parent(buf *b)
{
	hdr(b, "link", '2', 0, "..", 0777);
	file(b, "link/evil", "x");
}
static void h_symlink_abs_parent(buf *b)
{
	hdr(b, "d", '5', 0, NULL, 0755);
	hdr(b, "d/l", '2', 0, "/var/tmp", 0777);
	file(b, "d/l/sbx-test-store-evil", "x");
}
static void h_hardlink_out(buf *b)
{
	hdr(b, "h", '1', 0, "../sentinel", 0644);
}
static void h_hardlink_abs(buf *b)
{
	hdr(b, "h", '1', 0, "/etc/passwd", 0644);
}
static void h_hardlink_later(buf *b)
{
	hdr(b, "h", '1', 0, "later", 0644);
	file(b, "later", "x");
}
static void h_hardlink_via_symlink(buf *b)
{
	hdr(b, "l", '2', 0, "..", 0777);
	hdr(b, "h", '1', 0, "l/sentinel", 0644);
}
static void h_chardev(buf *b)
{
	hdr(b, "null", '3', 0, NULL, 0666);
}
static void h_blockdev(buf *b)
{
	hdr(b, "sda", '4', 0, NULL, 0660);
}
static void h_huge(buf *b)
{
	hdr(b, "big", '0', 1ull << 40, NULL, 0644);
	data(b, "x", 1);
}
static void h_many(buf *b)
{
	for (int i = 0; i < 40; i++) {
		char n[16];
		snprintf(n, sizeof(n), "f%d", i);
		file(b, n, "");
	}
	end(b);
}
static void h_truncated(buf *b)
{
	hdr(b, "t", '0', 4096, NULL, 0644);
	buf_add(b, "abc", 3);
}
static void h_checksum(buf *b)
{
	file(b, "ok", "x");
	b->p[0] ^= 1; /* name changes, checksum does not */
}
static void h_pax_len_big(buf *b)
{
	pax(b, "99 path=x\n");
	file(b, "f", "");
}
static void h_pax_len_zero(buf *b)
{
	pax(b, "0 path=x\n");
	file(b, "f", "");
}
static void h_pax_no_nl(buf *b)
{
	pax(b, "10 path=xy");
	file(b, "f", "");
}
static void h_pax_nondigit(buf *b)
{
	pax(b, "1x path=x\n");
	file(b, "f", "");
}
static void h_pax_path_escape(buf *b)
{
	pax(b, "19 path=../../evil\n");
	file(b, "f", "x");
}
static void h_gnu_longname(buf *b)
{
	hdr(b, "././@LongLink", 'L', 8, NULL, 0644);
	data(b, "../evil", 8);
	file(b, "f", "x");
}
static void h_overlay_xattr(buf *b)
{
	pax(b, "43 SCHILY.xattr.user.overlay.redirect=/etc\n");
	hdr(b, "d", '5', 0, NULL, 0755);
}
static void h_type(buf *b)
{
	hdr(b, "sparse", 'S', 0, NULL, 0644);
}
static void h_replace_dir(buf *b)
{
	hdr(b, "d", '5', 0, NULL, 0755);
	file(b, "d", "x");
}
static void h_wh_reserved(buf *b)
{
	file(b, ".wh..wh..plnk", "");
}
static void h_pax_literal_bad(buf *b)
{
	pax(b, "17 SBX.literal=2\n");
	file(b, ".wh.x", "");
}
static void h_wh_dotdot(buf *b)
{
	file(b, ".wh...", "");
}
static void h_file_parent(buf *b)
{
	file(b, "f", "x");
	file(b, "f/g", "x");
}
static void h_pax_eof(buf *b)
{
	pax(b, "16 path=abcdefg\n");
}

static const hostile corpus[] = {
    {"dotdot", h_dotdot, "escapes"},
    {"dotdot_mid", h_dotdot_mid, "escapes"},
    {"absolute", h_abs, "escapes"},
    {"symlink_parent", h_symlink_parent, "not a directory"},
    {"symlink_abs_parent", h_symlink_abs_parent, "not a directory"},
    {"hardlink_outside", h_hardlink_out, "hard link target"},
    {"hardlink_absolute", h_hardlink_abs, "hard link target"},
    {"hardlink_later", h_hardlink_later, "earlier entry"},
    {"hardlink_via_symlink", h_hardlink_via_symlink, "not a directory"},
    {"chardev", h_chardev, "device nodes"},
    {"blockdev", h_blockdev, "device nodes"},
    {"huge_size", h_huge, "over the limit"},
    {"many_entries", h_many, "more than"},
    {"truncated", h_truncated, "truncated"},
    {"bad_checksum", h_checksum, "checksum"},
    {"pax_len_big", h_pax_len_big, "out of bounds"},
    {"pax_len_zero", h_pax_len_zero, "out of bounds"},
    {"pax_no_newline", h_pax_no_nl, "newline"},
    {"pax_nondigit", h_pax_nondigit, "malformed pax"},
    {"pax_path_escape", h_pax_path_escape, "escapes"},
    {"gnu_longname_escape", h_gnu_longname, "escapes"},
    {"overlay_xattr", h_overlay_xattr, "overlay xattr"},
    {"unknown_type", h_type, "unsupported entry type"},
    {"replace_dir", h_replace_dir, "replace a directory"},
    {"whiteout_reserved", h_wh_reserved, "reserved"},
    {"whiteout_dotdot", h_wh_dotdot, "reserved"},
    {"pax_literal_not_1", h_pax_literal_bad, "SBX.literal must be 1"},
    {"file_as_parent", h_file_parent, "not a directory"},
    {"pax_then_eof", h_pax_eof, "extended header"},
};

static bool only_expected(const char *parent)
{
	DIR *d = opendir(parent);
	if (!d)
		return false;
	struct dirent *de;
	bool ok = true;
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && !streq(de->d_name, "sentinel") &&
		    !streq(de->d_name, "target"))
			ok = false;
	closedir(d);
	return ok;
}

TEST(tar_hostile_corpus)
{
	const char *w = getenv("SBX_WRITE_CORPUS");
	for (size_t i = 0; i < ARRAY_SIZE(corpus); i++) {
		_cleanup_free_ char *top = tmpdir();
		CHECK(top);
		char target[4096];
		put_file(top, "sentinel", "keep", 4, 0644);
		snprintf(target, sizeof(target), "%s/target", top);
		mkdir(target, 0755);
		buf b = {0};
		corpus[i].build(&b);
		if (w && *w) {
			char p[256];
			/* fuzz_store_tar reads its options from a first byte: 1 = whiteouts */
			snprintf(p, sizeof(p), "tests/fuzz/corpus/store_tar/hostile-%s.tar", corpus[i].name);
			buf s = {0};
			buf_add(&s, "\x01", 1);
			buf_add(&s, b.p, b.len);
			fs_write_atomic(p, s.p, s.len, 0644);
			free(s.p);
		}
		store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
		o.whiteouts = true;
		o.max_bytes = 1 << 20;
		o.max_entries = 30;
		_cleanup_err_ sbx_err *e = NULL;
		int r = extract_buf(target, &b, &o, &e);
		free(b.p);
		if (r >= 0 || !e || !strstr(sbx_err_message(e), corpus[i].want)) {
			fprintf(stderr, "  case %s: r=%d err='%s' (want '%s')\n", corpus[i].name, r,
				e ? sbx_err_message(e) : "", corpus[i].want);
			CHECK(false);
		}
		CHECK(only_expected(top));
		char s[4096];
		_cleanup_free_ char *sv = NULL;
		size_t sl = 0;
		snprintf(s, sizeof(s), "%s/sentinel", top);
		CHECK(fs_read_file(s, 100, &sv, &sl) == 0 && sl == 4 && memcmp(sv, "keep", 4) == 0);
		struct stat st;
		CHECK(stat(s, &st) == 0 && st.st_nlink == 1);
		CHECK(access("/var/tmp/sbx-test-store-evil", F_OK) < 0);
		fs_rm_rf(top);
	}
}

TEST(tar_setid_devices_options)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	buf b = {0};
	hdr(&b, "s", '0', 1, NULL, 06755);
	data(&b, "x", 1);
	hdr(&b, "null", '3', 0, NULL, 0666);
	hdr(&b, "wh", '3', 0, NULL, 0);
	file(&b, ".wh.raw", "");
	end(&b);
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.devices = STORE_TAR_DEV_SKIP;
	CHECK(extract_buf(top, &b, &o, NULL) == 0);
	char p[4096];
	struct stat st;
	at(top, "s", p);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0755); /* setid stripped */
	at(top, "null", p);
	CHECK(lstat(p, &st) < 0); /* skipped */
	at(top, "wh", p);
	CHECK(lstat(p, &st) < 0); /* a char 0:0 is a device unless whiteouts are converted */
	at(top, ".wh.raw", p);
	CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode)); /* no conversion asked */
	free(b.p);
	fs_rm_rf(top);
}

TEST(tar_pax_gnu_accepted)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	buf b = {0};
	char longp[300], rec[400];
	memset(longp, 'p', 120);
	strcpy(longp + 120, "/file");
	snprintf(rec, sizeof(rec), "%zu path=%s\n", strlen(longp) + 10, longp);
	pax(&b, rec);
	file(&b, "ignored", "pax-named");
	hdr(&b, "././@LongLink", 'L', 12, NULL, 0644);
	data(&b, "gnu/longname", 12);
	file(&b, "ignored2", "gnu-named");
	pax(&b, "30 mtime=1600000000.123456789\n");
	file(&b, "t", "");
	end(&b);
	_cleanup_err_ sbx_err *e = NULL;
	int r = extract_buf(top, &b, NULL, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	char p[4096];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", top, longp);
	CHECK(stat(p, &st) == 0 && st.st_size == 9);
	at(top, "gnu/longname", p);
	CHECK(stat(p, &st) == 0 && st.st_size == 9);
	at(top, "t", p);
	CHECK(stat(p, &st) == 0 && st.st_mtim.tv_sec == 1600000000 && st.st_mtim.tv_nsec == 123456789);
	free(b.p);
	fs_rm_rf(top);
}

TEST(tar_write_corpus_seed)
{
	/* A valid canonical tar as a fuzz seed (only with SBX_WRITE_CORPUS=1). */
	const char *w = getenv("SBX_WRITE_CORPUS");
	if (!w || !*w)
		return; /* seeds are committed; nothing to do */
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	tree_vary = as_root();
	build_tree(top, as_root() ? 100000 : (uint32_t)geteuid(), false);
	store_idmap ids = tree_ids(as_root() ? 100000 : (uint32_t)geteuid());
	buf b = {0};
	char d[STORE_DIGEST_SIZE];
	CHECK(tar_tree(top, &ids, &b, d, NULL) == 0);
	buf s = {0};
	buf_add(&s, "\x01", 1);
	buf_add(&s, b.p, b.len);
	CHECK(fs_write_atomic("tests/fuzz/corpus/store_tar/valid-tree.tar", s.p, s.len, 0644) == 0);
	free(s.p);
	free(b.p);
	fs_rm_rf(top);
}

/* ---- POSIX ACLs ------------------------------------------------------------ */

/* user::rw- user:U:rwx group::r-- group:G:r-- mask::rwx other::r-- (kernel format) */
static size_t acl_bytes(uint8_t *out, uint32_t u, uint32_t g)
{
	const struct {
		uint16_t tag, perm;
		uint32_t id;
	} e[] = {{1, 6, UINT32_MAX},   {2, 7, u}, {4, 4, UINT32_MAX}, {8, 4, g}, {0x10, 7, UINT32_MAX},
		 {0x20, 4, UINT32_MAX}};
	uint32_t v = 2;
	memcpy(out, &v, 4);
	for (size_t i = 0; i < ARRAY_SIZE(e); i++) {
		memcpy(out + 4 + 8 * i, &e[i].tag, 2);
		memcpy(out + 6 + 8 * i, &e[i].perm, 2);
		memcpy(out + 8 + 8 * i, &e[i].id, 4);
	}
	return 4 + 8 * ARRAY_SIZE(e);
}

/* A pax header with one binary xattr record. */
static void pax_xattr(buf *b, const char *name, const uint8_t *v, size_t vl)
{
	char key[128];
	snprintf(key, sizeof(key), "SCHILY.xattr.%s", name);
	size_t base = strlen(key) + vl + 3, len = base + 1;
	while (len != base + (size_t)snprintf(NULL, 0, "%zu", len))
		len = base + (size_t)snprintf(NULL, 0, "%zu", len);
	buf r = {0};
	char head[32];
	buf_add(&r, head, (size_t)snprintf(head, sizeof(head), "%zu ", len));
	buf_add(&r, key, strlen(key));
	buf_add(&r, "=", 1);
	buf_add(&r, v, vl);
	buf_add(&r, "\n", 1);
	hdr(b, "././@PaxHeader", 'x', r.len, NULL, 0644);
	data(b, r.p, r.len);
	free(r.p);
}

static int acl_named_id(const char *path, const char *name, uint32_t *ret_u, uint32_t *ret_g)
{
	uint8_t v[256];
	ssize_t n = getxattr(path, name, v, sizeof(v));
	if (n < 0)
		return -errno;
	*ret_u = *ret_g = UINT32_MAX;
	for (ssize_t off = 4; off + 8 <= n; off += 8) {
		uint16_t tag;
		uint32_t id;
		memcpy(&tag, v + off, 2);
		memcpy(&id, v + off + 4, 4);
		if (tag == 2)
			*ret_u = id;
		if (tag == 8)
			*ret_g = id;
	}
	return 0;
}

/* ACLs round trip with their named ids shifted like owners; a directory's
 * default ACL is not inherited by what is extracted into it; the writer
 * refuses an id outside the range; with acls off they are ignored. */
TEST(tar_acl_round_trip)
{
	if (geteuid() != 0)
		SKIP_OK("not root: files owned by shifted ids need chown");
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char src[4096], dst[4096], dst2[4096], p[4096];
	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(dst, sizeof(dst), "%s/dst", top);
	snprintf(dst2, sizeof(dst2), "%s/dst2", top);
	mkdir(src, 0755);
	mkdir(dst, 0755);
	mkdir(dst2, 0755);
	const uint32_t base = 100000, base2 = 300000;
	uint8_t v[256];
	size_t vl;
	put_file(src, "f", "data", 4, 0644);
	at(src, "d", p);
	CHECK(mkdir(p, 0755) == 0);
	put_file(src, "d/old", "o", 1, 0644); /* made before the default ACL: it has none */
	at(src, "d/sub", p);
	CHECK(mkdir(p, 0755) == 0);
	at(src, "f", p);
	vl = acl_bytes(v, base + 5, base + 7);
	if (setxattr(p, "system.posix_acl_access", v, vl, 0) < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
		SKIP_OK("/var/tmp has no POSIX ACLs");
	CHECK(getxattr(p, "system.posix_acl_access", v, sizeof(v)) > 0);
	at(src, "d", p);
	vl = acl_bytes(v, base + 6, base + 8);
	CHECK(setxattr(p, "system.posix_acl_default", v, vl, 0) == 0);
	CHECK(setxattr(p, "system.posix_acl_access", v, vl, 0) == 0);
	const char *own[] = {"", "f", "d", "d/old", "d/sub"};
	for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
		snprintf(p, sizeof(p), "%s/%s", src, own[i]);
		CHECK(lchown(p, base, base) == 0);
	}
	store_idmap ids = {base, base, 65536};
	buf t1 = {0}, t2 = {0};
	char d1[STORE_DIGEST_SIZE], d2[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e = NULL;
	int r = tar_tree(src, &ids, &t1, d1, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	/* the tar holds the environment's ids (5 and 7), in the kernel's format */
	vl = acl_bytes(v, 5, 7);
	CHECK(memmem(t1.p, t1.len, "SCHILY.xattr.system.posix_acl_access=", 37));
	CHECK(memmem(t1.p, t1.len, "SCHILY.xattr.system.posix_acl_default=", 38));
	CHECK(memmem(t1.p, t1.len, v, vl));

	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.whiteouts = true;
	o.chown = true;
	o.acls = true;
	o.ids = (store_idmap){base2, base2, 65536};
	_cleanup_err_ sbx_err *e2 = NULL;
	r = extract_buf(dst, &t1, &o, &e2);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e2));
	CHECK(r == 0);
	uint32_t u, g;
	at(dst, "f", p);
	CHECK(acl_named_id(p, "system.posix_acl_access", &u, &g) == 0 && u == base2 + 5 && g == base2 + 7);
	at(dst, "d", p);
	CHECK(acl_named_id(p, "system.posix_acl_default", &u, &g) == 0 && u == base2 + 6 && g == base2 + 8);
	at(dst, "d/old", p);
	CHECK(acl_named_id(p, "system.posix_acl_access", &u, &g) == -ENODATA); /* not inherited */
	at(dst, "d/sub", p);
	CHECK(acl_named_id(p, "system.posix_acl_default", &u, &g) == -ENODATA);
	store_idmap ids2 = {base2, base2, 65536};
	CHECK(tar_tree(dst, &ids2, &t2, d2, NULL) == 0);
	CHECK_STREQ(d1, d2);

	/* acls off (sbx cp): ignored */
	store_tar_extract_opts off = STORE_TAR_EXTRACT_OPTS_INIT;
	CHECK(extract_buf(dst2, &t1, &off, NULL) == 0);
	at(dst2, "f", p);
	CHECK(acl_named_id(p, "system.posix_acl_access", &u, &g) == -ENODATA);

	/* the writer refuses an ACL naming an id the environment does not map */
	at(src, "f", p);
	vl = acl_bytes(v, 5, base);
	CHECK(setxattr(p, "system.posix_acl_access", v, vl, 0) == 0);
	buf t3 = {0};
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(tar_tree(src, &ids, &t3, d2, &e3) < 0);
	CHECK(e3 && strstr(sbx_err_message(e3), "names uid 5, outside the mapped range"));
	free(t1.p);
	free(t2.p);
	free(t3.p);
	fs_rm_rf(top);
}

/* Hostile ACLs in an archive: malformed, a default ACL on a file, an id
 * outside the range (refused with chown, dropped without). */
TEST(tar_acl_hostile)
{
	uint8_t v[256];
	size_t vl = acl_bytes(v, 5, 7);
	struct {
		const char *name;
		int mutate; /* 0 as is, 1 bad version, 2 partial entry, 3 unknown tag */
		const char *xname;
		uint32_t uid;
		bool chown;
		const char *want; /* NULL: accepted, the ACL dropped */
	} cases[] = {
	    {"bad-version", 1, "system.posix_acl_access", 5, false, "malformed system.posix_acl_access"},
	    {"partial", 2, "system.posix_acl_access", 5, false, "not a whole number of entries"},
	    {"tag", 3, "system.posix_acl_access", 5, false, "unknown tag"},
	    {"default-on-file", 0, "system.posix_acl_default", 5, false, "a default ACL on a non-directory"},
	    {"range-chown", 0, "system.posix_acl_access", 70000, true,
	     "names uid 70000, outside the id range"},
	    {"range-dropped", 0, "system.posix_acl_access", 70000, false, NULL},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (cases[i].chown && geteuid() != 0)
			continue;
		_cleanup_free_ char *top = tmpdir();
		CHECK(top);
		vl = acl_bytes(v, cases[i].uid, 7);
		size_t len = vl;
		if (cases[i].mutate == 1)
			v[0] = 3;
		if (cases[i].mutate == 2)
			len = vl - 2;
		if (cases[i].mutate == 3)
			v[4 + 8] = 0x80;
		buf b = {0};
		pax_xattr(&b, cases[i].xname, v, len);
		file(&b, "f", "x");
		end(&b);
		store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
		o.acls = true;
		o.chown = cases[i].chown;
		o.ids = cases[i].chown ? (store_idmap){0, 0, 65536}
				       : (store_idmap){(uint32_t)geteuid(), (uint32_t)getegid(), 1};
		_cleanup_err_ sbx_err *e = NULL;
		int r = extract_buf(top, &b, &o, &e);
		free(b.p);
		if (cases[i].want ? (r >= 0 || !e || !strstr(sbx_err_message(e), cases[i].want)) : r < 0) {
			fprintf(stderr, "  case %s: r=%d err='%s' (want '%s')\n", cases[i].name, r,
				e ? sbx_err_message(e) : "", cases[i].want ? cases[i].want : "success");
			CHECK(false);
		}
		if (!cases[i].want) {
			char p[4096];
			uint32_t u, g;
			at(top, "f", p);
			CHECK(acl_named_id(p, "system.posix_acl_access", &u, &g) == -ENODATA);
		}
		if (getenv("SBX_WRITE_CORPUS") && cases[i].want) {
			/* fuzz_store_tar: first byte 0x11 = whiteouts and ACLs */
			char path[256];
			buf s = {0};
			snprintf(path, sizeof(path), "tests/fuzz/corpus/store_tar/hostile-acl-%s.tar",
				 cases[i].name);
			b = (buf){0};
			pax_xattr(&b, cases[i].xname, v, len);
			file(&b, "f", "x");
			end(&b);
			buf_add(&s, "\x11", 1);
			buf_add(&s, b.p, b.len);
			fs_write_atomic(path, s.p, s.len, 0644);
			free(s.p);
			free(b.p);
		}
		fs_rm_rf(top);
	}
}
