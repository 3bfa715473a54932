/* Unit tests: the one-copy helpers of issue 15.5. util/fs.c's atomic write
 * (unique temp names under concurrent threads, nothing left behind, the
 * fault table's steps), its openat2-in-root helper with and without openat2
 * (forced by a seccomp filter answering ENOSYS, as crun tests its fallback,
 * and by the test switch), and store/digest.c's digest-prefix resolver. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <seccomp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/digest.h"
#include "unit.h"
#include "util/fd.h"
#include "util/fs.h"

static char *tmpdir(void)
{
	char *p = strdup("/tmp/sbx-test-fs-XXXXXX");
	if (p && !mkdtemp(p)) {
		free(p);
		return NULL;
	}
	return p;
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	if (d)
		closedir(d);
	return n;
}

/* ---- atomic write ------------------------------------------------------- */

typedef struct writer {
	const char *path;
	char data[64];
	int failures;
} writer;

static void *write_many(void *arg)
{
	writer *w = arg;
	for (int i = 0; i < 200; i++)
		if (fs_write_atomic_flags(w->path, w->data, strlen(w->data), 0644, false) < 0)
			w->failures++;
	return NULL;
}

/* Threads of one process writing one file: every write succeeds, the file is
 * always one writer's whole content, and no temp file remains. With a temp
 * name per process (the old one), renames failed with ENOENT here. */
TEST(atomic_write_threads_share_no_temp)
{
	char *dir = tmpdir();
	CHECK(dir);
	char path[256];
	snprintf(path, sizeof(path), "%s/state.json", dir);
	writer w[8];
	pthread_t t[8];
	for (int i = 0; i < 8; i++) {
		w[i] = (writer){.path = path};
		snprintf(w[i].data, sizeof(w[i].data), "{\"writer\": %d, \"pad\": \"%0*d\"}", i, 20 + i, 0);
		CHECK(pthread_create(&t[i], NULL, write_many, &w[i]) == 0);
	}
	int failures = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		failures += w[i].failures;
	}
	CHECK(failures == 0);
	char *got = NULL;
	CHECK(fs_read_file(path, 4096, &got, NULL) == 0);
	bool whole = false;
	for (int i = 0; i < 8; i++)
		whole |= strcmp(got, w[i].data) == 0;
	free(got);
	CHECK(whole);
	CHECK(count_entries(dir) == 1);
	CHECK(fs_rm_rf(dir) == 0);
	free(dir);
}

static int fail_rename(int a, const char *o, int b, const char *n)
{
	errno = EIO;
	return -1;
}

static int fsyncs;
static int count_fsync(int fd)
{
	fsyncs++;
	return fsync(fd);
}

TEST(atomic_write_ops_and_failure_cleanup)
{
	char *dir = tmpdir();
	CHECK(dir);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0);
	/* Durable: the file and the directory are fsynced. */
	fs_atomic_ops ops = {.write = write, .fsync = count_fsync, .renameat = renameat};
	CHECK(fs_write_atomicat(dfd, "a", "one", 3, 0600, FS_ATOMIC_DURABLE, &ops) == 0);
	CHECK(fsyncs == 2);
	fsyncs = 0;
	CHECK(fs_write_atomicat(dfd, "a", "two", 3, 0600, 0, &ops) == 0);
	CHECK(fsyncs == 0);
	/* A failed step leaves the old content and no temp file. */
	ops.renameat = fail_rename;
	CHECK(fs_write_atomicat(dfd, "a", "three", 5, 0600, FS_ATOMIC_DURABLE, &ops) == -EIO);
	char *got = NULL;
	CHECK(fs_read_fileat(dfd, "a", 64, &got, NULL) == 0);
	CHECK_STREQ(got, "two");
	free(got);
	CHECK(count_entries(dir) == 1);
	CHECK(fs_write_atomicat(dfd, "x/y", "z", 1, 0600, 0, NULL) == -EINVAL);
	close(dfd);
	CHECK(fs_rm_rf(dir) == 0);
	free(dir);
}

/* ---- openat2 in root, and its fallback ------------------------------------ */

/* A tree: a/b/file, a/up -> ../../.. (climbs out), a/abs -> /a/b (absolute,
 * in-root), a/rel -> b, loop -> loop, and outside/secret one level above. */
static int make_tree(const char *base, char *root, size_t n)
{
	char p[512];
	snprintf(root, n, "%s/root", base);
	snprintf(p, sizeof(p), "%s/outside-secret", base);
	if (mkdir(root, 0755) < 0 || fs_write_atomic(p, "s", 1, 0600) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/a/b", root);
	if (fs_mkdir_p(p, 0755) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/a/b/file", root);
	if (fs_write_atomic(p, "f", 1, 0644) < 0)
		return -1;
	const char *links[][2] = {{"../../..", "a/up"},
				  {"/a/b", "a/abs"},
				  {"b", "a/rel"},
				  {"loop", "loop"},
				  {"../outside-secret", "esc"}};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, links[i][1]);
		if (symlink(links[i][0], p) < 0)
			return -1;
	}
	return 0;
}

static bool same_file(int fd, const char *path)
{
	struct stat a, b;
	return fd >= 0 && fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* The checks, run with openat2 and without; returns a line number on failure. */
static int open_checks(const char *root)
{
	char p[512];
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), fd;
	if (rfd < 0)
		return __LINE__;
	snprintf(p, sizeof(p), "%s/a/b/file", root);
#define EXPECT(c)                                                                                            \
	do {                                                                                                 \
		if (!(c)) {                                                                                  \
			close(rfd);                                                                          \
			return __LINE__;                                                                     \
		}                                                                                            \
	} while (0)
	/* Plain paths, both modes. */
	fd = fs_open_beneath(rfd, "a/b/file", O_RDONLY, 0, FS_BENEATH);
	EXPECT(same_file(fd, p));
	close(fd);
	fd = fs_open_beneath(rfd, "/a/b/file", O_RDONLY, 0, FS_IN_ROOT);
	EXPECT(same_file(fd, p));
	close(fd);
	/* In root: ".." and symlinks resolve inside; climbing out stays at the root. */
	fd = fs_open_beneath(rfd, "a/up/a/b/file", O_RDONLY, 0, FS_IN_ROOT);
	EXPECT(same_file(fd, p));
	close(fd);
	fd = fs_open_beneath(rfd, "../../../a/b/file", O_RDONLY, 0, FS_IN_ROOT);
	EXPECT(same_file(fd, p));
	close(fd);
	fd = fs_open_beneath(rfd, "a/abs/file", O_RDONLY, 0, FS_IN_ROOT);
	EXPECT(same_file(fd, p));
	close(fd);
	fd = fs_open_beneath(rfd, "a/rel/./file", O_RDONLY, 0, FS_IN_ROOT);
	EXPECT(same_file(fd, p));
	close(fd);
	EXPECT(fs_open_beneath(rfd, "esc", O_RDONLY, 0, FS_IN_ROOT) < 0 && errno == ENOENT);
	EXPECT(fs_open_beneath(rfd, "loop", O_RDONLY, 0, FS_IN_ROOT) < 0 && errno == ELOOP);
	/* O_NOFOLLOW on the last component: the link itself (O_PATH) or ELOOP. */
	EXPECT(fs_open_beneath(rfd, "a/rel", O_RDONLY | O_NOFOLLOW, 0, FS_IN_ROOT) < 0 && errno == ELOOP);
	fd = fs_open_beneath(rfd, "a/rel", O_PATH | O_NOFOLLOW, 0, FS_IN_ROOT);
	struct stat st;
	EXPECT(fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode));
	close(fd);
	/* Beneath: no symlink at all, no escape. */
	EXPECT(fs_open_beneath(rfd, "a/rel/file", O_RDONLY, 0, FS_BENEATH) < 0 && errno == ELOOP);
	EXPECT(fs_open_beneath(rfd, "esc", O_RDONLY, 0, FS_BENEATH) < 0 && errno == ELOOP);
	EXPECT(fs_open_beneath(rfd, "../outside-secret", O_RDONLY, 0, FS_BENEATH) < 0 && errno == EXDEV);
	EXPECT(fs_open_beneath(rfd, "/a/b/file", O_RDONLY, 0, FS_BENEATH) < 0 && errno == EXDEV);
	fd = fs_open_beneath(rfd, "a/b/../b/file", O_RDONLY, 0, FS_BENEATH);
	EXPECT(same_file(fd, p));
	close(fd);
	EXPECT(fs_open_beneath(rfd, "a/b/file/x", O_RDONLY, 0, FS_BENEATH) < 0 && errno == ENOTDIR);
	/* Creation, and the descriptor is close-on-exec. */
	fd = fs_open_beneath(rfd, "/a/abs/new", O_WRONLY | O_CREAT | O_EXCL, 0640, FS_IN_ROOT);
	EXPECT(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC) && fstat(fd, &st) == 0 &&
	       (st.st_mode & 0777) == 0640);
	close(fd);
	fd = fs_open_beneath(rfd, "/", O_PATH | O_DIRECTORY, 0, FS_IN_ROOT);
	EXPECT(same_file(fd, root));
	close(fd);
	snprintf(p, sizeof(p), "%s/a/b/new", root);
	unlink(p);
#undef EXPECT
	close(rfd);
	return 0;
}

static void open_checks_in_child(bool seccomp_enosys, bool switch_off)
{
	char *base = tmpdir(), root[512];
	CHECK(base);
	CHECK(make_tree(base, root, sizeof(root)) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (seccomp_enosys) {
			scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
			if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) < 0 ||
			    seccomp_load(ctx) < 0)
				_exit(254);
			seccomp_release(ctx);
		}
		fs_openat2_disabled = switch_off;
		int line = open_checks(root);
		if (line)
			fprintf(stderr, "  open check at line %d failed: %s\n", line, strerror(errno));
		_exit(line ? 1 : 0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(fs_rm_rf(base) == 0);
	free(base);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(open_beneath_openat2)
{
	open_checks_in_child(false, false);
}
TEST(open_beneath_fallback_seccomp_enosys)
{
	open_checks_in_child(true, false);
}
TEST(open_beneath_fallback_switch)
{
	open_checks_in_child(false, true);
}

/* ---- digest prefixes ---------------------------------------------------- */

TEST(digest_prefix_resolver)
{
	char a[80], b[80], c[80];
	snprintf(a, sizeof(a), "sha256:%s",
		 "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
	snprintf(b, sizeof(b), "sha256:%s",
		 "abcdef9999999999999999999999999999999999999999999999999999999999");
	snprintf(c, sizeof(c), "sha256:%s",
		 "1234560000000000000000000000000000000000000000000000000000000000");
	char *all[] = {a, b, c, "not-a-digest", NULL};
	const char *m = NULL;
	CHECK(!store_digest_prefix_valid("abcde"));   /* too short */
	CHECK(!store_digest_prefix_valid("ABCDEF"));  /* upper case */
	CHECK(!store_digest_prefix_valid("abcdefg")); /* not hex */
	CHECK(!store_digest_prefix_valid("sha256:"));
	CHECK(store_digest_prefix_valid("sha256:abcdef"));
	CHECK(store_digest_prefix_valid(a + 7)); /* all 64 */
	CHECK(
	    !store_digest_prefix_valid("abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234567890"));
	CHECK(store_digest_prefix_match(all, "abcdef", &m) == 2);
	CHECK(store_digest_prefix_match(all, "abcdef0", &m) == 1 && m == a);
	CHECK(store_digest_prefix_match(all, "sha256:123456", &m) == 1 && m == c);
	CHECK(store_digest_prefix_match(all, a + 7, &m) == 1 && m == a); /* a full hex without sha256: */
	CHECK(store_digest_prefix_match(all, "ffffff", &m) == 0);
	CHECK(store_digest_prefix_match(all, "abc", &m) == 0);
	CHECK(store_digest_prefix_match(NULL, "abcdef", &m) == 0);
}

/* ---- messages on a closed connection ------------------------------------- */

/* A peer that answers and closes while a message of ours is still unread
 * (sbx run's forwarded signal crossing the command's exit): the kernel
 * reports ECONNRESET before the answer that is queued. fd_recv_msg returns
 * the answer, then end of file, never the reset. */
TEST(recv_reads_the_answer_of_a_peer_that_reset)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(fd_send_msg(sv[0], "signal", 6, NULL, 0) == 0); /* never read */
	CHECK(fd_send_msg(sv[1], "exit", 4, NULL, 0) == 0);
	close(sv[1]);
	char buf[64];
	CHECK(fd_recv_msg(sv[0], buf, sizeof(buf), NULL, NULL) == 4 && !strcmp(buf, "exit"));
	CHECK(fd_recv_msg(sv[0], buf, sizeof(buf), NULL, NULL) == 0);
	close(sv[0]);
	/* Nothing queued: a reset is end of file too. */
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(fd_send_msg(sv[0], "signal", 6, NULL, 0) == 0);
	close(sv[1]);
	CHECK(fd_recv_msg(sv[0], buf, sizeof(buf), NULL, NULL) == 0);
	close(sv[0]);
}
