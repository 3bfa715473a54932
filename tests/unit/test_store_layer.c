/* Unit tests: src/store/layer.c, fsck.c (+ gc helpers), storefs.c.
 * Layer put is idempotent and stores once; the stored tree is an overlay
 * lower layer with 0-based ownership; fsck names a flipped byte and a
 * missing layer; a crash (the process exits) after any write/fsync/rename
 * step leaves only temp entries, which gc removes. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/fsck.h"
#include "store/layer.h"
#include "store/snapshot.h"
#include "store/storefs.h"
#include "unit.h"
#include "util/fs.h"

static char *tmpdir(void)
{
	char *p = strdup("/var/tmp/sbx-test-layer-XXXXXX");
	if (!mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static void put_file(const char *dir, const char *rel, const char *data)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		abort();
}

/* An "upper dir": files, a whiteout, an opaque dir, owned by base + k. */
static void make_upper(const char *up, uint32_t base)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/etc", up);
	mkdir(p, 0755);
	put_file(up, "etc/hostname", "box\n");
	put_file(up, "hello", "hello world\n");
	snprintf(p, sizeof(p), "%s/gone", up);
	if (mknod(p, S_IFCHR | 0, makedev(0, 0)) < 0)
		abort();
	snprintf(p, sizeof(p), "%s/opq", up);
	mkdir(p, 0755);
	setxattr(p, "user.overlay.opaque", "y", 1, 0);
	put_file(up, "opq/x", "x");
	static const char *const own[] = {"etc", "etc/hostname", "hello", "opq", "opq/x"};
	for (size_t i = 0; i < ARRAY_SIZE(own); i++) {
		snprintf(p, sizeof(p), "%s/%s", up, own[i]);
		uint32_t k = geteuid() == 0 ? (uint32_t)i * 1000 : 0;
		if (lchown(p, base + k, base + k) < 0 && geteuid() == 0)
			abort();
	}
	/* Fixed times: two uppers made a clock tick apart must still be the
	 * same layer (timestamps are part of the tar). Deepest first, then the
	 * root, since creating entries moves their directory's mtime. */
	static const char *const all[] = {"opq/x", "opq", "etc/hostname", "etc", "hello", "gone", "."};
	struct timespec ts[2] = {{1700000000, 0}, {1700000000, 0}};
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		snprintf(p, sizeof(p), "%s/%s", up, all[i]);
		if (utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) < 0)
			abort();
	}
}

static store_idmap upper_ids(uint32_t base)
{
	if (geteuid() == 0)
		return (store_idmap){base, base, 65536};
	return (store_idmap){(uint32_t)geteuid(), (uint32_t)getegid(), 1};
}

static int put_upper(const char *store, const char *up, uint32_t base, store_layer_info *info, sbx_err **err)
{
	_cleanup_close_ int fd = open(up, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	store_idmap ids = upper_ids(base);
	return store_layer_put_from_dir(store, fd, &ids, info, err);
}

static size_t count_dir(const char *dir)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d)))
		n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
	closedir(d);
	return n;
}

TEST(layer_put_twice_stored_once)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char store[4096], up[4096], up2[4096], p[4096];
	snprintf(store, sizeof(store), "%s/store", top);
	snprintf(up, sizeof(up), "%s/upper", top);
	snprintf(up2, sizeof(up2), "%s/upper2", top);
	mkdir(up, 0755);
	mkdir(up2, 0755);
	uint32_t base = geteuid() == 0 ? 0x70000000u : (uint32_t)geteuid();
	make_upper(up, base);
	make_upper(up2, geteuid() == 0 ? 0x70010000u : base); /* another env slot: same layer */
	store_layer_info a, b, c;
	_cleanup_err_ sbx_err *e = NULL;
	int r = put_upper(store, up, base, &a, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	CHECK(!a.existed && a.files == 7 && a.size > 0);
	CHECK(put_upper(store, up, base, &b, NULL) == 0);
	CHECK(b.existed);
	CHECK_STREQ(a.digest, b.digest);
	CHECK(put_upper(store, up2, geteuid() == 0 ? 0x70010000u : base, &c, NULL) == 0);
	CHECK(c.existed);
	CHECK_STREQ(a.digest, c.digest);
	snprintf(p, sizeof(p), "%s/layers/sha256", store);
	CHECK(count_dir(p) == 1);
	snprintf(p, sizeof(p), "%s/tmp", store);
	CHECK(count_dir(p) == 0);
	/* no tar copy is kept: the tree re-tars to exactly the layer's bytes */
	_cleanup_free_ char *blob = store_blob_path(store, a.digest);
	struct stat st;
	CHECK(!fs_exists(blob));
	{
		char tp[] = "/tmp/sbx-layer-tar-XXXXXX";
		_cleanup_close_ int tf = mkstemp(tp);
		CHECK(tf >= 0);
		unlink(tp);
		CHECK(store_layer_tar(store, a.digest, tf, NULL) == 0);
		CHECK(fstat(tf, &st) == 0 && (uint64_t)st.st_size == a.size);
		char d2[STORE_DIGEST_SIZE];
		CHECK(lseek(tf, 0, SEEK_SET) == 0 && store_digest_fd(tf, d2, NULL, NULL) == 0);
		CHECK_STREQ(d2, a.digest);
	}
	/* overlay lower format, 0-based ownership */
	_cleanup_free_ char *lp = store_layer_path(store, a.digest);
	snprintf(p, sizeof(p), "%s/gone", lp);
	CHECK(lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0);
	char v[4];
	snprintf(p, sizeof(p), "%s/opq", lp);
	CHECK(getxattr(p, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
	snprintf(p, sizeof(p), "%s/hello", lp);
	CHECK(lstat(p, &st) == 0);
	if (geteuid() == 0)
		CHECK(st.st_uid == 2000 && st.st_gid == 2000);
	else
		CHECK(st.st_uid == geteuid());
	CHECK(store_layer_verify(store, a.digest, NULL) == 0);
	_cleanup_strv_free_ char **list = NULL;
	CHECK(store_layer_list(store, &list, NULL) == 0 && list[0] && streq(list[0], a.digest) && !list[1]);
	fs_rm_rf(top);
}

static store_snapshot *mk_snapshot(const char *layer)
{
	store_snapshot *s = calloc(1, sizeof(*s));
	s->layers = calloc(2, sizeof(char *));
	s->layers[0] = strdup(layer);
	s->env = calloc(1, sizeof(char *));
	s->labels = calloc(1, sizeof(char *));
	s->cwd = strdup("/root");
	s->user = strdup("root");
	s->created_at = strdup("2024-05-01T12:00:00Z");
	return s;
}

TEST(fsck_detects_corruption_and_missing)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char store[4096], up[4096], p[4096];
	snprintf(store, sizeof(store), "%s/store", top);
	snprintf(up, sizeof(up), "%s/upper", top);
	mkdir(up, 0755);
	uint32_t base = geteuid() == 0 ? 0x70000000u : (uint32_t)geteuid();
	make_upper(up, base);
	store_layer_info a;
	CHECK(put_upper(store, up, base, &a, NULL) == 0);
	_cleanup_snapshot_ store_snapshot *s = mk_snapshot(a.digest);
	char sid[STORE_DIGEST_SIZE];
	CHECK(store_snapshot_write(store, s, sid, NULL) == 0);
	CHECK(store_ref_set(store, "base", sid, NULL) == 0);

	store_fsck_report rep;
	CHECK(store_fsck(store, &rep, NULL) == 0);
	CHECK(rep.n_problems == 0 && rep.layers == 1 && rep.blobs == 0 && rep.snapshots == 1 &&
	      rep.refs == 1);
	store_fsck_report_clear(&rep);

	/* flip one byte of a file in the layer tree */
	_cleanup_free_ char *lp = store_layer_path(store, a.digest);
	snprintf(p, sizeof(p), "%s/hello", lp);
	{
		_cleanup_close_ int fd = open(p, O_RDWR | O_CLOEXEC);
		char c;
		CHECK(fd >= 0 && pread(fd, &c, 1, 3) == 1);
		c ^= 0x20;
		CHECK(pwrite(fd, &c, 1, 3) == 1);
	}
	CHECK(store_fsck(store, &rep, NULL) == 0);
	CHECK(rep.n_problems == 1);
	CHECK(strstr(rep.problems[0], a.digest) && strstr(rep.problems[0], "corrupt"));
	store_fsck_report_clear(&rep);
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(store_layer_verify(store, a.digest, &e) < 0 && sbx_err_errno(e) == EBADMSG);

	/* a flipped byte in a blob (traces keep their events and output as blobs) */
	char bd[STORE_DIGEST_SIZE];
	CHECK(store_blob_put(store, "some trace bytes, long enough", 29, bd, NULL) == 0);
	_cleanup_free_ char *blob = store_blob_path(store, bd);
	{
		_cleanup_close_ int fd = open(blob, O_RDWR | O_CLOEXEC);
		char c;
		CHECK(fd >= 0 && pread(fd, &c, 1, 6) == 1);
		c ^= 1;
		CHECK(pwrite(fd, &c, 1, 6) == 1);
	}
	_cleanup_err_ sbx_err *e2 = NULL;
	CHECK(store_blob_verify(store, bd, &e2) < 0 && strstr(sbx_err_message(e2), "blob"));

	/* the layer disappears: the snapshot names it */
	CHECK(fs_rm_rf(lp) == 0);
	CHECK(store_fsck(store, &rep, NULL) == 0);
	bool missing = false;
	for (size_t i = 0; i < rep.n_problems; i++)
		missing |= strstr(rep.problems[i], "is missing") && strstr(rep.problems[i], a.digest) &&
			   strstr(rep.problems[i], sid);
	CHECK(missing);
	store_fsck_report_clear(&rep);
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(store_layer_verify(store, a.digest, &e3) < 0 && sbx_err_code(e3) == SBX_E_NOT_FOUND);

	/* a corrupt manifest and a dangling label */
	_cleanup_free_ char *sp = NULL;
	CHECK(asprintf(&sp, "%s/snapshots/sha256/%s.json", store, store_digest_hex(sid)) > 0);
	{
		_cleanup_free_ char *data = NULL;
		size_t n;
		CHECK(fs_read_file(sp, 1 << 20, &data, &n) == 0);
		char *u = strstr(data, "/root");
		CHECK(u);
		u[1] = 'R';
		CHECK(fs_write_atomic(sp, data, n, 0644) == 0);
	}
	CHECK(store_fsck(store, &rep, NULL) == 0);
	bool corrupt = false;
	for (size_t i = 0; i < rep.n_problems; i++)
		corrupt |= strstr(rep.problems[i], "snapshot") && strstr(rep.problems[i], "corrupt");
	CHECK(corrupt);
	store_fsck_report_clear(&rep);
	fs_rm_rf(top);
}

TEST(gc_lists_unreferenced)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char store[4096], up[4096], up2[4096];
	snprintf(store, sizeof(store), "%s/store", top);
	snprintf(up, sizeof(up), "%s/u1", top);
	snprintf(up2, sizeof(up2), "%s/u2", top);
	mkdir(up, 0755);
	mkdir(up2, 0755);
	uint32_t base = geteuid() == 0 ? 0x70000000u : (uint32_t)geteuid();
	make_upper(up, base);
	make_upper(up2, base);
	put_file(up2, "extra", "more");
	char p[4096];
	snprintf(p, sizeof(p), "%s/extra", up2);
	CHECK(lchown(p, base, base) == 0 || geteuid() != 0);
	store_layer_info a, b;
	CHECK(put_upper(store, up, base, &a, NULL) == 0);
	CHECK(put_upper(store, up2, base, &b, NULL) == 0);
	CHECK(!streq(a.digest, b.digest));
	_cleanup_snapshot_ store_snapshot *s = mk_snapshot(a.digest);
	CHECK(store_snapshot_write(store, s, NULL, NULL) == 0);
	_cleanup_strv_free_ char **ref = NULL, **unref = NULL;
	CHECK(store_gc_referenced_layers(store, &ref, NULL) == 0);
	CHECK(ref[0] && streq(ref[0], a.digest) && !ref[1]);
	CHECK(store_gc_unreferenced_layers(store, (const char *const *)ref, &unref, NULL) == 0);
	CHECK(unref[0] && streq(unref[0], b.digest) && !unref[1]);
	CHECK(store_layer_remove(store, b.digest, NULL) == 0);
	CHECK(!store_layer_exists(store, b.digest));
	_cleanup_free_ char *blob = store_blob_path(store, b.digest);
	CHECK(!fs_exists(blob));
	fs_rm_rf(top);
}

/* ---- crash consistency ----------------------------------------------------- */

static int crash_at, crash_count;
static void step(void)
{
	if (++crash_count == crash_at)
		_exit(42); /* the process dies here: no cleanup runs */
}
static ssize_t c_write(int fd, const void *b, size_t n)
{
	step();
	return write(fd, b, n);
}
static int c_fsync(int fd)
{
	step();
	return fsync(fd);
}
static int c_syncfs(int fd)
{
	step();
	return syncfs(fd);
}
static int c_renameat(int a, const char *b, int c, const char *d)
{
	step();
	return renameat(a, b, c, d);
}

TEST(layer_crash_at_every_step)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char store[4096], up[4096], p[4096];
	snprintf(store, sizeof(store), "%s/store", top);
	snprintf(up, sizeof(up), "%s/upper", top);
	mkdir(up, 0755);
	uint32_t base = geteuid() == 0 ? 0x70000000u : (uint32_t)geteuid();
	make_upper(up, base);
	int steps_done = 0;
	for (int n = 1; n < 200; n++) {
		fs_rm_rf(store);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			crash_at = n;
			store_sys.write = c_write;
			store_sys.fsync = c_fsync;
			store_sys.syncfs = c_syncfs;
			store_sys.renameat = c_renameat;
			store_layer_info info;
			int r = put_upper(store, up, base, &info, NULL);
			if (r < 0)
				_exit(1);
			store_snapshot *s = mk_snapshot(info.digest);
			r = store_snapshot_write(store, s, NULL, NULL);
			_exit(r < 0 ? 1 : 0);
		}
		int status;
		CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
		int rc = WEXITSTATUS(status);
		CHECK(rc == 0 || rc == 42);
		/* After a crash: whatever is in the store verifies, fsck finds no
		 * problem, and gc leaves no temp entries. */
		store_fsck_report rep;
		CHECK(store_fsck(store, &rep, NULL) == 0);
		if (rep.n_problems)
			fprintf(stderr, "  crash at step %d: %s\n", n, rep.problems[0]);
		CHECK(rep.n_problems == 0);
		CHECK(rep.snapshots <= rep.layers);
		store_fsck_report_clear(&rep);
		CHECK(store_gc_clean_tmp(store, NULL, NULL) == 0);
		snprintf(p, sizeof(p), "%s/tmp", store);
		CHECK(count_dir(p) == 0);
		snprintf(p, sizeof(p), "%s/snapshots/sha256", store);
		CHECK(count_dir(p) <= 1);
		/* and the operation then succeeds */
		store_layer_info info;
		CHECK(put_upper(store, up, base, &info, NULL) == 0);
		CHECK(store_layer_verify(store, info.digest, NULL) == 0);
		if (rc == 0) {
			steps_done = n;
			break;
		}
	}
	CHECK(steps_done > 5); /* every step before completion was crashed once */
	fs_rm_rf(top);
}

/* Bytes this process read (read, pread: holes included) so far. */
static uint64_t rchar(void)
{
	_cleanup_free_ char *s = NULL;
	size_t n = 0;
	if (fs_read_file("/proc/self/io", 4096, &s, &n) < 0)
		return 0;
	const char *p = strstr(s, "rchar: ");
	return p ? strtoull(p + 7, NULL, 10) : 0;
}

/* One file: `len` bytes, data at the offsets of `at` (each "data@off"),
 * zeros elsewhere: holes if sparse, else written out. Fixed mtime. */
static void make_file(const char *up, bool sparse, uint64_t len)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/big", up);
	_cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
		abort();
	if (!sparse) {
		static uint8_t z[1 << 16];
		for (uint64_t o = 0; o < len; o += sizeof(z))
			if (pwrite(fd, z, len - o < sizeof(z) ? len - o : sizeof(z), (off_t)o) < 0)
				abort();
	}
	const uint64_t offs[] = {0, 3 << 20, len / 2 + 123, len - 5};
	for (size_t i = 0; i < ARRAY_SIZE(offs); i++) {
		char d[32];
		int n = snprintf(d, sizeof(d), "data@%llu", (unsigned long long)offs[i]);
		if (pwrite(fd, d, offs[i] + (uint64_t)n > len ? len - offs[i] : (size_t)n, (off_t)offs[i]) <
		    0)
			abort();
	}
	struct timespec ts[2] = {{1700000000, 0}, {1700000000, 0}};
	if (futimens(fd, ts) < 0 || (geteuid() == 0 && fchown(fd, 100000, 100000) < 0))
		abort();
	if (utimensat(AT_FDCWD, up, ts, 0) < 0 || (geteuid() == 0 && chown(up, 100000, 100000) < 0))
		abort();
}

/* A sparse file is stored by its holes: its zeros are hashed, never read
 * (before: 2 x its size read back, the file and the temporary tar); the
 * digest is the one of the same bytes written out; the layer's file and an
 * exported tar are sparse. */
TEST(layer_put_skips_holes)
{
	_cleanup_free_ char *top = tmpdir();
	CHECK(top);
	char store[4096], sp[4096], dense[4096], p[4096];
	snprintf(store, sizeof(store), "%s/store", top);
	snprintf(sp, sizeof(sp), "%s/sparse", top);
	snprintf(dense, sizeof(dense), "%s/dense", top);
	mkdir(sp, 0755);
	mkdir(dense, 0755);
	/* the same 8 MiB, with holes and written out: one tar */
	make_file(sp, true, 8 << 20);
	make_file(dense, false, 8 << 20);
	snprintf(p, sizeof(p), "%s/big", sp);
	struct stat st;
	CHECK(stat(p, &st) == 0);
	if (st.st_blocks * 512 > (1 << 20))
		SKIP_OK("/var/tmp does not keep holes");
	store_layer_info a, b;
	_cleanup_err_ sbx_err *e = NULL;
	int r = put_upper(store, sp, 100000, &a, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	CHECK(put_upper(store, dense, 100000, &b, NULL) == 0);
	CHECK_STREQ(a.digest, b.digest);
	CHECK(b.existed);

	/* 2 GiB of holes: not read */
	const uint64_t big = 2ull << 30;
	make_file(sp, true, big);
	uint64_t before = rchar();
	CHECK(before > 0);
	CHECK(put_upper(store, sp, 100000, &a, NULL) == 0);
	uint64_t read = rchar() - before;
	if (read > (64u << 20))
		fprintf(stderr, "  read %llu bytes to store a %llu-byte sparse file\n",
			(unsigned long long)read, (unsigned long long)big);
	CHECK(read <= (64u << 20));
	_cleanup_free_ char *lp = store_layer_path(store, a.digest);
	snprintf(p, sizeof(p), "%s/big", lp);
	CHECK(stat(p, &st) == 0 && (uint64_t)st.st_size == big && st.st_blocks * 512 < (1 << 20));
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	char got[32] = {0};
	CHECK(fd >= 0 && pread(fd, got, 16, (off_t)(big / 2 + 123)) == 16);
	CHECK(memcmp(got, "data@1073741947", 15) == 0);
	CHECK(pread(fd, got, 4, (off_t)(big / 4)) == 4 && memcmp(got, "\0\0\0\0", 4) == 0);

	/* the exported tar (a scratch file) has the holes too, and its digest checked */
	_cleanup_close_ int tf = open(top, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	CHECK(tf >= 0);
	before = rchar();
	CHECK(store_layer_tar(store, a.digest, tf, NULL) == 0);
	CHECK(rchar() - before <= (64u << 20));
	CHECK(fstat(tf, &st) == 0 && (uint64_t)st.st_size == a.size && st.st_blocks * 512 < (1 << 20));
	fs_rm_rf(top);
}
