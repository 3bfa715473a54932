/* Unit tests: what `sbx diff` compares of an entry. src/store/xattr.c (the
 * xattrs a layer keeps, their layer form, equality), src/api/diff_entry.c
 * (an entry's kept fields on two sides, on real trees under /var/tmp) and
 * src/store/treewalk.c's hard-link index. Setting a file capability needs
 * CAP_SETFCAP: that part skips without it. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "api/diff_entry.h"
#include "store/treewalk.h"
#include "store/xattr.h"
#include "unit.h"

static char *tmpdir(void)
{
	char *p = strdup("/var/tmp/sbx-test-diff-XXXXXX");
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static int rm_one(const char *p, const struct stat *st, int type, struct FTW *f)
{
	return remove(p);
}

static void rm_tree(char *p)
{
	if (p)
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(p);
}

static void put(const char *dir, const char *name, const char *content)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content) || fchmod(fd, 0644) < 0)
		abort();
	close(fd);
}

static int setx(const char *dir, const char *name, const char *key, const void *v, size_t len)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lsetxattr(p, key, v, len, 0);
}

/* An ACL: user::rw- user:U:r-- group::r-- mask::r-- other::r-- */
static size_t acl_named(uint8_t *b, uint32_t u)
{
	const uint16_t tags[] = {0x01, 0x02, 0x04, 0x10, 0x20}, perms[] = {6, 4, 4, 4, 4};
	uint32_t v = htole32(2);
	memcpy(b, &v, 4);
	for (size_t i = 0; i < 5; i++) {
		uint16_t t = htole16(tags[i]), p = htole16(perms[i]);
		uint32_t id = htole32(tags[i] == 0x02 ? u : 0xffffffffu);
		memcpy(b + 4 + 8 * i, &t, 2);
		memcpy(b + 6 + 8 * i, &p, 2);
		memcpy(b + 8 + 8 * i, &id, 4);
	}
	return 4 + 8 * 5;
}

/* ---- store/xattr ---------------------------------------------------------------- */

TEST(xattr_kept_names)
{
	CHECK(store_xattr_kept("user.k"));
	CHECK(store_xattr_kept("user.overlayx"));
	CHECK(!store_xattr_kept("user.overlay.opaque"));
	CHECK(!store_xattr_kept("user.overlay.origin"));
	CHECK(!store_xattr_kept("trusted.overlay.opaque"));
	CHECK(!store_xattr_kept("trusted.k"));
	CHECK(!store_xattr_kept("security.selinux"));
	CHECK(store_xattr_kept("security.capability"));
	CHECK(store_xattr_kept("system.posix_acl_access"));
	CHECK(store_xattr_kept("system.posix_acl_default"));
	CHECK(!store_xattr_kept("system.nfs4_acl"));
}

TEST(xattr_normalize_capability_and_acl)
{
	store_idmap ids = {100000, 200000, 65536};
	/* v3 of the environment's root: v2, the rest kept */
	struct vfs_ns_cap_data c3 = {.magic_etc = htole32(VFS_CAP_REVISION_3 | VFS_CAP_FLAGS_EFFECTIVE),
				     .rootid = htole32(100000)};
	c3.data[0].permitted = htole32(1u << 13);
	struct vfs_cap_data c2 = {.magic_etc = htole32(VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE)};
	c2.data[0].permitted = htole32(1u << 13);
	char v[64];
	memcpy(v, &c3, sizeof(c3));
	store_xattr x = {"security.capability", v, sizeof(c3)};
	CHECK(store_xattr_normalize(&x, &ids, NULL) == 0);
	CHECK(x.len == sizeof(c2) && memcmp(v, &c2, sizeof(c2)) == 0);
	/* v2 is as it is; a v3 of another namespace's root is refused */
	CHECK(store_xattr_normalize(&x, &ids, NULL) == 0 && x.len == sizeof(c2));
	c3.rootid = htole32(5);
	memcpy(v, &c3, sizeof(c3));
	x.len = sizeof(c3);
	CHECK(store_xattr_normalize(&x, &ids, NULL) == -ERANGE);
	/* an ACL's named id from the disk's base */
	uint8_t a[64], b[64];
	size_t n = acl_named(a, 101234);
	acl_named(b, 1234);
	store_xattr xa = {"system.posix_acl_access", (char *)a, n};
	CHECK(store_xattr_normalize(&xa, &ids, NULL) == 0 && memcmp(a, b, n) == 0);
	acl_named(a, 5);
	store_acl_error ae;
	CHECK(store_xattr_normalize(&xa, &ids, &ae) == -ERANGE && ae.id == 5 && !ae.group);
	/* anything else is left alone */
	char u[] = "\x01\x02";
	store_xattr xu = {"user.k", u, 2};
	CHECK(store_xattr_normalize(&xu, &ids, NULL) == 0 && xu.len == 2 && u[0] == 1);
}

TEST(xattrs_equal)
{
	store_xattr a[] = {{"user.a", "1", 1}, {"user.b", "22", 2}};
	store_xattr b[] = {{"user.a", "1", 1}, {"user.b", "23", 2}};
	store_xattr c[] = {{"user.a", "1", 1}, {"user.c", "22", 2}};
	store_xattr d[] = {{"user.a", "1", 1}, {"user.b", "2", 1}};
	store_xattrs xa = {a, 2}, xb = {b, 2}, xc = {c, 2}, xd = {d, 2}, x1 = {a, 1}, none = {0};
	CHECK(store_xattrs_equal(&xa, &xa));
	CHECK(store_xattrs_equal(&none, &none));
	CHECK(!store_xattrs_equal(&xa, &xb));
	CHECK(!store_xattrs_equal(&xa, &xc));
	CHECK(!store_xattrs_equal(&xa, &xd));
	CHECK(!store_xattrs_equal(&xa, &x1));
	CHECK(!store_xattrs_equal(&x1, &none));
}

TEST(xattrs_read_kept_sorted)
{
	char *t = tmpdir();
	CHECK(t);
	put(t, "f", "x");
	if (setx(t, "f", "user.z", "1", 1) < 0) {
		rm_tree(t);
		SKIP_OK("no user xattrs on /var/tmp");
	}
	CHECK(setx(t, "f", "user.a", "22", 2) == 0);
	CHECK(setx(t, "f", "user.overlay.origin", "o", 1) == 0);
	int dfd = open(t, O_PATH | O_DIRECTORY | O_CLOEXEC);
	store_xattrs x = {0};
	int r = store_xattrs_read(-1, dfd, "f", &x);
	close(dfd);
	bool ok = r == 0 && x.n == 2 && streq(x.v[0].name, "user.a") && x.v[0].len == 2 &&
		  memcmp(x.v[0].value, "22", 2) == 0 && streq(x.v[1].name, "user.z");
	store_xattrs_clear(&x);
	rm_tree(t);
	CHECK(ok);
}

/* ---- diff_entry ----------------------------------------------------------------- */

static diff_entry stat_ent(mode_t mode, uid_t uid, gid_t gid, off_t size, dev_t rdev, store_idmap ids)
{
	diff_entry e = {.root = -1, .ids = ids};
	e.st.st_mode = mode;
	e.st.st_uid = uid;
	e.st.st_gid = gid;
	e.st.st_size = size;
	e.st.st_rdev = rdev;
	return e;
}

TEST(stat_compare)
{
	store_idmap host = {100000, 100000, 65536}, layer = {0, 0, 65536}, as_is = {0};
	diff_entry a = stat_ent(S_IFREG | 0644, 1000, 1000, 5, 0, layer);
	diff_entry b = stat_ent(S_IFREG | 0644, 101000, 101000, 5, 0, host);
	CHECK(diff_stat_compare(&a, &b) == 0); /* the same owner, each on its own base */
	b.st.st_uid = 101001;
	CHECK(diff_stat_compare(&a, &b) == DIFF_OWNER);
	b.st.st_uid = 101000;
	b.st.st_mode = S_IFREG | 04644;
	CHECK(diff_stat_compare(&a, &b) == DIFF_MODE);
	b.st.st_mode = S_IFREG | 0644;
	b.st.st_size = 6;
	CHECK(diff_stat_compare(&a, &b) == DIFF_SIZE);
	b.st.st_mode = S_IFDIR | 0644;
	CHECK(diff_stat_compare(&a, &b) == DIFF_TYPE);
	/* a symlink's mode bits are not its own; a device's number is */
	diff_entry l1 = stat_ent(S_IFLNK | 0777, 0, 0, 3, 0, as_is),
		   l2 = stat_ent(S_IFLNK | 0755, 0, 0, 9, 0, as_is);
	CHECK(diff_stat_compare(&l1, &l2) == 0);
	diff_entry c1 = stat_ent(S_IFCHR | 0600, 0, 0, 0, makedev(1, 3), as_is),
		   c2 = stat_ent(S_IFCHR | 0600, 0, 0, 0, makedev(1, 5), as_is);
	CHECK(diff_stat_compare(&c1, &c2) == DIFF_RDEV);
	c2.st.st_mode = S_IFBLK | 0600;
	CHECK(diff_stat_compare(&c1, &c2) == DIFF_TYPE);
	/* count 0: ids as they are */
	diff_entry h = stat_ent(S_IFREG | 0644, 1000, 1000, 5, 0, as_is);
	CHECK(diff_stat_compare(&a, &h) == 0);
	CHECK(diff_norm_id(100005, 100000, 65536) == 5 && diff_norm_id(5, 100000, 65536) == 5 &&
	      diff_norm_id(100005, 100000, 0) == 100005);
}

typedef struct two {
	char *a, *b;
	int fa, fb;
} two;

static bool two_open(two *t)
{
	*t = (two){tmpdir(), tmpdir(), -1, -1};
	if (!t->a || !t->b)
		return false;
	t->fa = open(t->a, O_PATH | O_DIRECTORY | O_CLOEXEC);
	t->fb = open(t->b, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return t->fa >= 0 && t->fb >= 0;
}

static void two_close(two *t)
{
	close(t->fa);
	close(t->fb);
	rm_tree(t->a);
	rm_tree(t->b);
}

/* Compares rel in both trees; ids as they are (both sides the same base). */
static unsigned cmp(const two *t, const char *rel, store_idmap ia, store_idmap ib)
{
	diff_entry a = {.root = t->fa, .ids = ia}, b = {.root = t->fb, .ids = ib};
	if (store_beneath_lstat(t->fa, rel, &a.st) < 0 || store_beneath_lstat(t->fb, rel, &b.st) < 0)
		return ~0u;
	return diff_entry_compare(&a, &b, rel);
}

TEST(entry_compare_files_dirs_links)
{
	two t;
	store_idmap z = {0};
	CHECK(two_open(&t));
	put(t.a, "f", "abc");
	put(t.b, "f", "abc");
	char p[4096];
	snprintf(p, sizeof(p), "%s/f", t.a);
	if (setx(t.a, "f", "user.probe", "1", 1) < 0) {
		two_close(&t);
		SKIP_OK("no user xattrs on /var/tmp");
	}
	CHECK(removexattr(p, "user.probe") == 0);
	CHECK(cmp(&t, "f", z, z) == 0);
	/* an xattr set, then the same on both, then removed from one */
	CHECK(setx(t.b, "f", "user.k", "v", 1) == 0);
	CHECK(cmp(&t, "f", z, z) == DIFF_XATTRS);
	CHECK(setx(t.a, "f", "user.k", "v", 1) == 0);
	CHECK(cmp(&t, "f", z, z) == 0);
	CHECK(setx(t.a, "f", "user.k", "w", 1) == 0);
	CHECK(cmp(&t, "f", z, z) == DIFF_XATTRS);
	snprintf(p, sizeof(p), "%s/f", t.a);
	CHECK(removexattr(p, "user.k") == 0);
	CHECK(cmp(&t, "f", z, z) == DIFF_XATTRS);
	/* overlay's own xattrs are no field */
	snprintf(p, sizeof(p), "%s/f", t.b);
	CHECK(removexattr(p, "user.k") == 0);
	CHECK(setx(t.b, "f", "user.overlay.origin", "x", 1) == 0);
	CHECK(cmp(&t, "f", z, z) == 0);
	/* the same size, other bytes */
	put(t.b, "f", "abd");
	CHECK(cmp(&t, "f", z, z) == DIFF_CONTENT);
	/* a directory's xattr */
	snprintf(p, sizeof(p), "%s/d", t.a);
	CHECK(mkdir(p, 0755) == 0 && chmod(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/d", t.b);
	CHECK(mkdir(p, 0755) == 0 && chmod(p, 0755) == 0);
	CHECK(cmp(&t, "d", z, z) == 0);
	CHECK(setx(t.b, "d", "user.k", "v", 1) == 0);
	CHECK(cmp(&t, "d", z, z) == DIFF_XATTRS);
	/* an ACL: the same named user on two bases is the same, as the layer
	 * stores it; another is not (the files' owners are the caller's: outside
	 * both ranges or in the first, they compare as they are) */
	put(t.a, "acl", "x");
	put(t.b, "acl", "x");
	uint8_t acl[64];
	size_t n = acl_named(acl, 1234);
	CHECK(setx(t.a, "acl", "system.posix_acl_access", acl, n) == 0);
	CHECK(cmp(&t, "acl", z, z) == DIFF_XATTRS);
	acl_named(acl, 101234);
	CHECK(setx(t.b, "acl", "system.posix_acl_access", acl, n) == 0);
	store_idmap layer = {0, 0, 65536}, host = {100000, 100000, 65536};
	CHECK(cmp(&t, "acl", z, z) == DIFF_XATTRS); /* ids as they are: 1234 and 101234 */
	CHECK(cmp(&t, "acl", layer, host) == 0);
	acl_named(acl, 101235);
	CHECK(setx(t.b, "acl", "system.posix_acl_access", acl, n) == 0);
	CHECK(cmp(&t, "acl", layer, host) == DIFF_XATTRS);
	/* a symlink's target */
	snprintf(p, sizeof(p), "%s/l", t.a);
	CHECK(symlink("t1", p) == 0);
	snprintf(p, sizeof(p), "%s/l", t.b);
	CHECK(symlink("t2", p) == 0);
	CHECK(cmp(&t, "l", z, z) == DIFF_TARGET);
	two_close(&t);
}

TEST(entry_compare_capability)
{
	two t;
	store_idmap z = {0};
	CHECK(two_open(&t));
	put(t.a, "c", "x");
	put(t.b, "c", "x");
	struct vfs_cap_data c2 = {.magic_etc = htole32(VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE)};
	c2.data[0].permitted = htole32(1u << 13);
	if (setx(t.b, "c", "security.capability", &c2, sizeof(c2)) < 0) {
		int e = errno;
		two_close(&t);
		if (e == EPERM)
			SKIP_OK("setting a file capability needs CAP_SETFCAP");
		CHECK(!"set security.capability");
	}
	CHECK(cmp(&t, "c", z, z) == DIFF_XATTRS);
	CHECK(setx(t.a, "c", "security.capability", &c2, sizeof(c2)) == 0);
	CHECK(cmp(&t, "c", z, z) == 0);
	c2.data[0].permitted = htole32(1u << 12);
	CHECK(setx(t.a, "c", "security.capability", &c2, sizeof(c2)) == 0);
	CHECK(cmp(&t, "c", z, z) == DIFF_XATTRS);
	two_close(&t);
}

/* ---- the hard-link index ---------------------------------------------------------- */

TEST(links_scan)
{
	char *t = tmpdir(), p[4096], q[4096];
	CHECK(t);
	put(t, "a", "1");
	put(t, "c", "2");
	snprintf(p, sizeof(p), "%s/sub", t);
	CHECK(mkdir(p, 0755) == 0);
	snprintf(p, sizeof(p), "%s/a", t);
	snprintf(q, sizeof(q), "%s/b", t);
	CHECK(link(p, q) == 0);
	snprintf(q, sizeof(q), "%s/sub/d", t);
	CHECK(link(p, q) == 0);
	/* whiteouts sharing an inode are no hard link */
	snprintf(p, sizeof(p), "%s/wh1", t);
	snprintf(q, sizeof(q), "%s/sub/wh2", t);
	bool wh = mknod(p, S_IFCHR | 0, makedev(0, 0)) == 0 && link(p, q) == 0;
	int root = open(t, O_PATH | O_DIRECTORY | O_CLOEXEC);
	CHECK(root >= 0);
	struct stat sa, sc;
	CHECK(store_beneath_lstat(root, "a", &sa) == 0 && store_beneath_lstat(root, "c", &sc) == 0);
	store_links *l = NULL;
	CHECK(store_links_scan(root, NULL, 1000, &l) == 0);
	size_t n;
	char *const *v = store_links_find(l, sa.st_dev, sa.st_ino, &n);
	bool ok = v && n == 3 && streq(v[0], "a") && streq(v[1], "b") && streq(v[2], "sub/d");
	ok = ok && !store_links_find(l, sc.st_dev, sc.st_ino, &n) && n == 0;
	if (wh) {
		struct stat sw;
		ok = ok && store_beneath_lstat(root, "wh1", &sw) == 0 &&
		     !store_links_find(l, sw.st_dev, sw.st_ino, &n);
	}
	store_links_free(l);
	/* only the tops named; past the limit, -E2BIG */
	char *tops[] = {"sub", NULL};
	l = NULL;
	ok = ok && store_links_scan(root, tops, 1000, &l) == 0;
	v = l ? store_links_find(l, sa.st_dev, sa.st_ino, &n) : NULL;
	ok = ok && v && n == 1 && streq(v[0], "sub/d");
	store_links_free(l);
	l = NULL;
	ok = ok && store_links_scan(root, NULL, 2, &l) == -E2BIG && !l;
	close(root);
	rm_tree(t);
	CHECK(ok);
}
