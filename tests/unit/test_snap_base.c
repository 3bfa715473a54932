/* Unit tests: src/api/snap_base.c — the package database digest and its
 * cache in $SBX_ROOT/cache (a CLI create of a persistent host environment
 * reads it instead of hashing /var/lib/dpkg/status). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/snap_base.h"
#include "store/digest.h"
#include "unit.h"
#include "util/fs.h"

static char root[] = "/tmp/sbx-test-snapbase.XXXXXX";

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static void digest_of(const char *path, char d[STORE_DIGEST_SIZE])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (store_digest_fd(fd, d, NULL, NULL) < 0)
		d[0] = 0;
	close(fd);
}

static int pkgdb(const char *path, size_t slot, char d[STORE_DIGEST_SIZE])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r = snap_pkgdb_digest(root, fd, path, slot, d, NULL);
	close(fd);
	return r;
}

/* Replaces the digest in a cache line (keeps the file's identity). */
static void forge(const char *cache, const char *digest)
{
	_cleanup_free_ char *t = NULL;
	if (fs_read_file(cache, 8192, &t, NULL) < 0)
		return;
	char *d = strstr(t, "sha256:");
	if (d)
		memcpy(d, digest, strlen(digest));
	put(cache, t);
}

/* pkgdb() in a child process, as a fresh CLI process would run it (its
 * process cache starts as ours: the parent never hashes the file). */
static int pkgdb_in_child(const char *path, size_t slot, char d[STORE_DIGEST_SIZE])
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char x[STORE_DIGEST_SIZE] = "";
		int r = pkgdb(path, slot, x);
		_exit(r == 0 && write(p[1], x, sizeof(x)) == (ssize_t)sizeof(x) ? 0 : 1);
	}
	close(p[1]);
	ssize_t n = read(p[0], d, STORE_DIGEST_SIZE);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	return n == STORE_DIGEST_SIZE && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

TEST(pkgdb_digest_cached_across_processes_by_identity)
{
	CHECK(mkdtemp(root) != NULL);
	char db[4200], other[4200], cache[4200];
	snprintf(db, sizeof(db), "%s/status", root);
	snprintf(other, sizeof(other), "%s/other", root);
	snprintf(cache, sizeof(cache), "%s/cache/pkgdb-0", root);
	put(db, "Package: a\nVersion: 1\n");
	put(other, "Package: b\n");
	char want[STORE_DIGEST_SIZE], got[STORE_DIGEST_SIZE];
	digest_of(db, want);
	/* Changed in the last 2 s: hashed, never remembered (git's racy rule). */
	CHECK(pkgdb_in_child(db, 0, got) == 0);
	CHECK_STREQ(got, want);
	CHECK(access(cache, F_OK) < 0);
	sleep(3);
	/* Now remembered on disk, with the file's identity and its path. */
	CHECK(pkgdb_in_child(db, 0, got) == 0);
	CHECK_STREQ(got, want);
	CHECK(access(cache, F_OK) == 0);
	/* A new process takes the digest from a line whose identity and path
	 * match, without hashing (shown with a forged digest). */
	const char *fake = "sha256:00000000000000000000000000000000000000000000000000000000000000aa";
	forge(cache, fake);
	CHECK(pkgdb_in_child(db, 0, got) == 0);
	CHECK_STREQ(got, fake);
	/* The line names its file: another file in that slot is a miss, hashed
	 * and written over it. */
	sleep(3);
	char want_other[STORE_DIGEST_SIZE];
	digest_of(other, want_other);
	CHECK(pkgdb_in_child(other, 0, got) == 0);
	CHECK_STREQ(got, want_other);
	_cleanup_free_ char *line = NULL;
	CHECK(fs_read_file(cache, 8192, &line, NULL) == 0);
	CHECK(strstr(line, other) != NULL);
	/* A changed file (new size, mtime, ctime) is a miss. */
	CHECK(pkgdb_in_child(db, 0, got) == 0); /* back to db's line */
	forge(cache, fake);
	put(db, "Package: a\nVersion: 2\n");
	digest_of(db, want);
	sleep(3); /* not racy any more: only the identity tells */
	CHECK(pkgdb_in_child(db, 0, got) == 0);
	CHECK_STREQ(got, want);
	/* A corrupt line is ignored. */
	put(cache, "garbage\n");
	CHECK(pkgdb_in_child(db, 0, got) == 0);
	CHECK_STREQ(got, want);
	(void)fs_rm_rf(root);
}
