/* Unit tests: src/store/tarw.c and tarr.c on the deletion of a long name.
 * The OCI spelling of a whiteout, `.wh.<name>`, is over NAME_MAX for names
 * of 252 to 255 bytes: the store's own tar marks such a whiteout with the
 * pax record SBX.whiteout=1, and only so marked may an entry's last tar name
 * component be longer than NAME_MAX (by the prefix). An OCI layer cannot
 * express the deletion: the writer for OCI consumers refuses it, naming the
 * file, and an OCI import refuses the tar name. Fuzz seeds are written to
 * tests/fuzz/corpus/store_tar when SBX_WRITE_CORPUS=1 (docs/store.md "Names"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/digest.h"
#include "store/tarr.h"
#include "store/tarw.h"
#include "unit.h"
#include "util/fs.h"

/* ---- helpers --------------------------------------------------------------- */

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

static char *tmpdir(void)
{
	char *p = strdup("/var/tmp/sbx-test-store-wh-XXXXXX");
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static store_idmap ids(void)
{
	return (store_idmap){(uint32_t)geteuid(), (uint32_t)getegid(), 1};
}

static int tar_tree(const char *dir, unsigned flags, buf *out, char digest[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	store_idmap m = ids();
	int r = store_tar_write_dir_flags(fd, &m, flags, buf_write, out, NULL, err);
	if (r < 0)
		return r;
	return store_digest_buf(out->p, out->len, digest, err);
}

static int extract_buf(const char *dir, const buf *b, bool literal_names, sbx_err **err)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	store_tar_extract_opts o = STORE_TAR_EXTRACT_OPTS_INIT;
	o.whiteouts = true;
	o.literal_names = literal_names;
	o.max_bytes = 1 << 20;
	o.max_entries = 30;
	store_tar_mem m = {b->p, b->len, 0};
	return store_tar_extract(fd, store_tar_mem_read, &m, &o, NULL, err);
}

/* c repeated n times, after prefix. */
static char *name_of(const char *prefix, char c, size_t n)
{
	size_t pl = strlen(prefix);
	char *s = malloc(pl + n + 1);
	if (!s)
		abort();
	memcpy(s, prefix, pl);
	memset(s + pl, c, n);
	s[pl + n] = 0;
	return s;
}

static void whiteout(const char *dir, const char *rel)
{
	_cleanup_free_ char *p = fs_path_join(dir, rel);
	if (!p || mknod(p, S_IFCHR, makedev(0, 0)) < 0)
		abort();
}

static void put_file(const char *dir, const char *rel, const char *data)
{
	_cleanup_free_ char *p = fs_path_join(dir, rel);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		abort();
}

static size_t count(const buf *b, const char *needle)
{
	size_t n = 0, nl = strlen(needle);
	for (const uint8_t *p = b->p, *end = b->p + b->len; (p = memmem(p, (size_t)(end - p), needle, nl));
	     p += nl)
		n++;
	return n;
}

/* A line per entry, depth first in name order: whiteout, file content, or
 * directory (opaque or not). */
static void list_dir(const char *abs, const char *rel, buf *out)
{
	struct dirent **names;
	int n = scandir(abs, &names, NULL, alphasort);
	if (n < 0)
		abort();
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		char a[8192], r[8192], v[64] = "";
		snprintf(a, sizeof(a), "%s/%s", abs, nm);
		snprintf(r, sizeof(r), "%s/%s", rel, nm);
		struct stat st;
		if (streq(nm, ".") || streq(nm, "..") || lstat(a, &st) < 0) {
			free(names[i]);
			continue;
		}
		buf_add(out, r, strlen(r));
		if (S_ISCHR(st.st_mode) && st.st_rdev == 0)
			buf_add(out, " whiteout\n", 10);
		else if (S_ISDIR(st.st_mode)) {
			ssize_t k = getxattr(a, "user.overlay.opaque", v, sizeof(v));
			const char *t = k == 1 && v[0] == 'y' ? " dir opaque\n" : " dir\n";
			buf_add(out, t, strlen(t));
			list_dir(a, r, out);
		} else {
			_cleanup_free_ char *c = NULL;
			size_t cl = 0;
			if (fs_read_file(a, 100, &c, &cl) < 0)
				abort();
			buf_add(out, " file ", 6);
			buf_add(out, c, cl);
			buf_add(out, "\n", 1);
		}
		free(names[i]);
	}
	free(names);
}

static char *list(const char *dir)
{
	buf b = {0};
	list_dir(dir, "", &b);
	buf_add(&b, "", 1);
	return (char *)b.p;
}

static void write_seed(const char *name, uint8_t flags, const buf *b)
{
	const char *w = getenv("SBX_WRITE_CORPUS");
	if (!w || !*w)
		return;
	char p[256];
	snprintf(p, sizeof(p), "tests/fuzz/corpus/store_tar/%s.tar", name);
	buf s = {0};
	buf_add(&s, &flags, 1);
	buf_add(&s, b->p, b->len);
	fs_write_atomic(p, s.p, s.len, 0644);
	free(s.p);
}

/* ---- the path rule ----------------------------------------------------------- */

/* A path of total bytes whose last component is `.wh.` + n's (last bytes),
 * the components before it at most 199 bytes. */
static char *path_of(size_t total, size_t last)
{
	char *s = name_of("", 'x', total);
	size_t pre = total - last;
	for (size_t i = 199; i < pre; i += 200)
		s[i] = '/';
	if (pre)
		s[pre - 1] = '/';
	memcpy(s + pre, ".wh.", 4);
	memset(s + pre + 4, 'n', last - 4);
	return s;
}

TEST(path_clean_long_whiteout)
{
	static const struct {
		size_t total, last, extra;
		int r;
	} cases[] = {
	    {259, 259, 4, 0},		  /* .wh. + 255 */
	    {263, 259, 4, 0},		  /* under a directory */
	    {260, 260, 4, -ENAMETOOLONG}, /* .wh. + 256 */
	    {256, 256, 0, -ENAMETOOLONG}, /* no extra: NAME_MAX as before */
	    {255, 255, 0, 0},
	    {4099, 259, 4, 0}, /* the path may be longer by the prefix too */
	    {4100, 259, 4, -ENAMETOOLONG},
	    {4096, 255, 0, -ENAMETOOLONG},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_free_ char *in = path_of(cases[i].total, cases[i].last);
		char *o = NULL;
		int r = store_tar_path_clean_wh(in, cases[i].extra, &o);
		if (r != cases[i].r)
			fprintf(stderr, "  case %zu: r=%d\n", i, r);
		CHECK(r == cases[i].r);
		if (r == 0)
			CHECK_STREQ(o, in);
		free(o);
	}
	/* Only the last component gets the extra bytes: not one in the middle,
	 * not one followed by a slash. */
	_cleanup_free_ char *mid = name_of(".wh.", 'n', 255), *o = NULL;
	char p[600];
	snprintf(p, sizeof(p), "%s/f", mid);
	CHECK(store_tar_path_clean_wh(p, 4, &o) == -ENAMETOOLONG);
	snprintf(p, sizeof(p), "%s/", mid);
	CHECK(store_tar_path_clean_wh(p, 4, &o) == -ENAMETOOLONG);
	snprintf(p, sizeof(p), "%s/.", mid);
	CHECK(store_tar_path_clean_wh(p, 4, &o) == -ENAMETOOLONG);
	CHECK(store_tar_path_clean(mid, &o) == -ENAMETOOLONG);
}

/* ---- round trip ------------------------------------------------------------ */

TEST(tar_long_whiteouts_round_trip)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char src[4096], dst[4096], oci[4096], one[4096];
	snprintf(src, sizeof(src), "%s/src", top);
	snprintf(dst, sizeof(dst), "%s/dst", top);
	snprintf(oci, sizeof(oci), "%s/oci", top);
	snprintf(one, sizeof(one), "%s/one", top);
	CHECK(mkdir(src, 0755) == 0 && mkdir(dst, 0755) == 0 && mkdir(oci, 0755) == 0 &&
	      mkdir(one, 0755) == 0);
	_cleanup_free_ char *n251 = name_of("", 'n', 251), *n252 = name_of("", 'n', 252),
			    *n255 = name_of("", 'n', 255), *d255 = name_of("", 'd', 255),
			    *x255 = name_of("", 'x', 255), *f255 = name_of("", 'f', 255),
			    *v252 = name_of(".wh.", 'v', 248), *w255 = name_of(".wh.", 'w', 251);
	char p[8192];

	/* The deletion of a 251-byte name is an ordinary OCI whiteout: no SBX.
	 * record, the bytes (and digest) the store always wrote. */
	put_file(src, "plain", "p");
	whiteout(src, n251);
	buf t0 = {0};
	char d0[STORE_DIGEST_SIZE];
	CHECK(tar_tree(src, 0, &t0, d0, NULL) == 0);
	CHECK(!memmem(t0.p, t0.len, "SBX.", 4));
	_cleanup_free_ char *wh251 = name_of(".wh.", 'n', 251);
	CHECK(memmem(t0.p, t0.len, wh251, strlen(wh251)));

	/* Longer ones, also inside an opaque directory with a long name, next to
	 * a real 255-byte `.wh.` name and the whiteout of a 252-byte one. */
	whiteout(src, n252);
	whiteout(src, n255);
	snprintf(p, sizeof(p), "%s/%s", src, d255);
	CHECK(mkdir(p, 0755) == 0 && setxattr(p, "user.overlay.opaque", "y", 1, 0) == 0);
	snprintf(p, sizeof(p), "%s/%s", d255, x255);
	whiteout(src, p);
	snprintf(p, sizeof(p), "%s/%s", d255, f255);
	put_file(src, p, "f");
	put_file(src, w255, "w");
	whiteout(src, v252);

	buf t1 = {0}, t2 = {0};
	char d1[STORE_DIGEST_SIZE], d2[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e = NULL;
	int r = tar_tree(src, 0, &t1, d1, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	CHECK(count(&t1, "SBX.whiteout=1") == 4); /* n252, n255, d255/x255, .wh.v248 */
	CHECK(count(&t1, "SBX.literal=1") == 1);
	write_seed("wh-long", 9, &t1); /* whiteouts and literal names on */

	_cleanup_err_ sbx_err *e2 = NULL;
	r = extract_buf(dst, &t1, true, &e2);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e2));
	CHECK(r == 0);
	_cleanup_free_ char *ls = list(src), *ld = list(dst);
	if (!streq(ls, ld))
		fprintf(stderr, "--- source\n%s--- extracted\n%s", ls, ld);
	CHECK(streq(ls, ld));
	snprintf(p, sizeof(p), "/%s whiteout\n", n255);
	CHECK(strstr(ld, p));
	snprintf(p, sizeof(p), "/%s dir opaque\n", d255);
	CHECK(strstr(ld, p));
	snprintf(p, sizeof(p), "/%s/%s whiteout\n", d255, x255);
	CHECK(strstr(ld, p));
	CHECK(tar_tree(dst, 0, &t2, d2, NULL) == 0);
	CHECK_STREQ(d1, d2);

	/* An OCI import (literal names off) cannot express it. */
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(extract_buf(oci, &t1, false, &e3) < 0);
	CHECK(strstr(sbx_err_message(e3), "name too long"));

	/* An OCI consumer's tar refuses it, naming the file. */
	whiteout(one, n252);
	buf t3 = {0};
	char d3[STORE_DIGEST_SIZE];
	_cleanup_err_ sbx_err *e4 = NULL;
	CHECK(tar_tree(one, STORE_TAR_W_OCI, &t3, d3, &e4) < 0);
	snprintf(p, sizeof(p),
		 "the deletion of '/%s': a name over 251 bytes cannot be deleted in an OCI layer", n252);
	CHECK(strstr(sbx_err_message(e4), p));
	free(t0.p);
	free(t1.p);
	free(t2.p);
	free(t3.p);
	fs_rm_rf(top);
}

/* ---- hostile forms ---------------------------------------------------------- */

static void oct(uint8_t *f, size_t w, uint64_t v)
{
	snprintf((char *)f, w, "%0*llo", (int)w - 1, (unsigned long long)v);
}

static void hdr(buf *b, const char *name, char type, uint64_t size, const char *link)
{
	uint8_t h[512] = {0};
	strncpy((char *)h, name, 100);
	oct(h + 100, 8, 0644);
	oct(h + 108, 8, 0);
	oct(h + 116, 8, 0);
	oct(h + 124, 12, size);
	oct(h + 136, 12, 0);
	h[156] = (uint8_t)type;
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

static void pad(buf *b, size_t n)
{
	static const uint8_t z[512];
	if (n % 512)
		buf_add(b, z, 512 - n % 512);
}

/* One pax record `<len> key=value\n`, its length counting itself. */
static void record(buf *r, const char *key, const char *value)
{
	size_t body = 1 + strlen(key) + 1 + strlen(value) + 1, len = body + 1;
	while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
		len = body + (size_t)snprintf(NULL, 0, "%zu", len);
	char line[8192];
	int n = snprintf(line, sizeof(line), "%zu %s=%s\n", len, key, value);
	buf_add(r, line, (size_t)n);
}

/* An entry named path (through pax), with the SBX. records given. */
static void entry(buf *b, const char *path, char type, bool wh, bool literal)
{
	buf r = {0};
	record(&r, "path", path);
	if (wh)
		record(&r, "SBX.whiteout", "1");
	if (literal)
		record(&r, "SBX.literal", "1");
	hdr(b, "././@PaxHeader", 'x', r.len, NULL);
	buf_add(b, r.p, r.len);
	pad(b, r.len);
	hdr(b, "x", type, 0, type == '1' ? "sentinel" : NULL);
	free(r.p);
}

static void end(buf *b)
{
	static const uint8_t z[1024];
	buf_add(b, z, sizeof(z));
}

typedef struct hostile {
	const char *name;
	const char *path; /* '@': `.wh.` + 255 n's */
	char type;
	bool wh, literal;
	const char *want;
} hostile;

static const hostile corpus[] = {
    {"victim_256", "@n", '0', true, false, "name too long"},
    {"unmarked", "@", '0', false, false, "name too long"},
    {"not_a_whiteout_name", "n@", '0', true, false, "name too long"}, /* 259 bytes, after the trim */
    {"middle_component", "@/f", '0', true, false, "name too long"},
    {"trailing_slash", "@/", '5', true, false, "name too long"},
    {"directory", "d/@", '5', true, false, "a whiteout must be a regular file"},
    {"hard_link", "@", '1', true, false, "a whiteout must be a regular file"},
    {"symlink", "@", '2', true, false, "a whiteout must be a regular file"},
    {"literal_too", "@", '0', true, true, "name too long"},
    {"victim_dotdot", ".wh...", '0', true, false, "reserved"},
};

TEST(tar_long_whiteouts_hostile)
{
	_cleanup_free_ char *wh = name_of(".wh.", 'n', 255);
	for (size_t i = 0; i < sizeof(corpus) / sizeof(corpus[0]); i++) {
		_cleanup_free_ char *top = tmpdir();
		CHECK(top);
		char target[4096], path[1024];
		put_file(top, "sentinel", "keep");
		snprintf(target, sizeof(target), "%s/target", top);
		CHECK(mkdir(target, 0755) == 0);
		const char *at = strchr(corpus[i].path, '@');
		if (at)
			snprintf(path, sizeof(path), "%.*s%s%s", (int)(at - corpus[i].path), corpus[i].path,
				 wh, at + 1);
		else
			snprintf(path, sizeof(path), "%s", corpus[i].path);
		if (streq(corpus[i].name, "not_a_whiteout_name"))
			path[259] = 0; /* "n.wh." + 254 n's: a 259-byte name that is no whiteout's */
		buf b = {0};
		entry(&b, path, corpus[i].type, corpus[i].wh, corpus[i].literal);
		end(&b);
		char seed[128];
		snprintf(seed, sizeof(seed), "hostile-long-wh-%s", corpus[i].name);
		write_seed(seed, 9, &b);
		_cleanup_err_ sbx_err *e = NULL;
		int r = extract_buf(target, &b, true, &e);
		free(b.p);
		if (r >= 0 || !e || !strstr(sbx_err_message(e), corpus[i].want)) {
			fprintf(stderr, "  case %s: r=%d err='%s' (want '%s')\n", corpus[i].name, r,
				e ? sbx_err_message(e) : "", corpus[i].want);
			CHECK(false);
		}
		/* nothing beside the target; the target holds no entry but a parent */
		_cleanup_free_ char *lt = list(top);
		char want[8192];
		snprintf(want, sizeof(want), "/sentinel file keep\n/target dir\n%s",
			 streq(corpus[i].name, "directory") ? "/target/d dir\n" : "");
		if (!streq(lt, want))
			fprintf(stderr, "  case %s: left\n%s", corpus[i].name, lt);
		CHECK(streq(lt, want));
		fs_rm_rf(top);
	}
}
