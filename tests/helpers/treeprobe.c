/* treeprobe: builds a seeded random tree of every kind of entry a layer can
 * hold, or prints a manifest of a tree, for snapshot and registry round
 * trips in environments without python (a static binary).
 *   treeprobe make DIR SEED N    N entries under DIR (created)
 *   treeprobe manifest DIR       one line per entry, sorted; then the hard-link groups
 * Entries: directories (odd modes, setgid, sticky; some empty), regular files
 * (random bytes, setuid/setgid modes, sparse with data past a hole), hard
 * links, symlinks (dangling, absolute, long), fifos, user.* xattrs and
 * security.capability, names with newlines, invalid UTF-8 and 255 bytes.
 * The manifest has type, mode, owner, size, a content hash, allocated-vs-size
 * sparseness, the link target and the xattrs; no times or inode numbers. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

static uint64_t rng;
static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static char *dirs[4096], *files[4096];
static int ndirs, nfiles;

static void name_of(char *out, size_t cap, const char *dir, int i)
{
	switch (rnd(8)) {
	case 0:
		snprintf(out, cap, "%s/nl\n%d", dir, i);
		break;
	case 1:
		snprintf(out, cap, "%s/\xff\xfe-%d", dir, i);
		break;
	case 2: {
		char n[256];
		int l = snprintf(n, sizeof(n), "%d-", i);
		memset(n + l, 'L', 255 - (size_t)l);
		n[255] = 0;
		snprintf(out, cap, "%s/%s", dir, n);
		break;
	}
	case 3:
		snprintf(out, cap, "%s/sp ace \xc3\xa9%d", dir, i);
		break;
	default:
		snprintf(out, cap, "%s/n%d", dir, i);
	}
}

static void fill(int fd, size_t n)
{
	char b[4096];
	while (n) {
		size_t k = n < sizeof(b) ? n : sizeof(b);
		for (size_t j = 0; j < k; j++)
			b[j] = (char)rnd(256);
		if (write(fd, b, k) != (ssize_t)k)
			exit(2);
		n -= k;
	}
}

static int make(const char *root, int n)
{
	static const mode_t dmodes[] = {0755, 02775, 01777, 03770, 0700, 0511};
	static const mode_t fmodes[] = {0644, 0600, 0755, 0444, 04755, 02755, 06711, 0000, 01644};
	static const char caps[] = "\x01\x00\x00\x02\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
				   "\x00\x00\x00\x00";
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		return perror("mkdir"), 1;
	dirs[ndirs++] = strdup(root);
	for (int i = 0; i < n; i++) {
		char p[4096];
		const char *d = dirs[rnd((uint32_t)ndirs)];
		name_of(p, sizeof(p), d, i);
		uint32_t k = rnd(100);
		if (k < 12 && ndirs < 4096) {
			if (mkdir(p, 0700) < 0)
				return perror(p), 1;
			dirs[ndirs++] = strdup(p);
			if (rnd(3) == 0)
				setxattr(p, "user.dir", "d", 1, 0);
			chmod(p, dmodes[rnd(6)] | 0700); /* the owner keeps access: later entries go in */
		} else if (k < 50 && nfiles < 4096) {
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
			if (fd < 0)
				return perror(p), 1;
			fill(fd, rnd(3) ? rnd(5000) : rnd(70000));
			if (rnd(6) == 0) { /* sparse: a hole, then data */
				if (lseek(fd, 1 << 20, SEEK_CUR) < 0)
					return 1;
				fill(fd, 1 + rnd(100));
			}
			if (rnd(4) == 0)
				fsetxattr(fd, "user.k", p, strlen(p) % 200, 0);
			if (rnd(8) == 0)
				fsetxattr(fd, "security.capability", caps, 20, 0);
			close(fd);
			chmod(p, fmodes[rnd(9)]);
			files[nfiles++] = strdup(p);
		} else if (k < 60 && nfiles) {
			if (link(files[rnd((uint32_t)nfiles)], p) < 0)
				return perror(p), 1;
		} else if (k < 72) {
			static const char *t[] = {"../x", "/etc/passwd", "n1", "dangling/target", "."};
			char lt[600];
			if (rnd(5) == 0) {
				memset(lt, 'T', 300);
				lt[300] = 0;
			} else
				snprintf(lt, sizeof(lt), "%s", t[rnd(5)]);
			if (symlink(lt, p) < 0)
				return perror(p), 1;
		} else if (k < 80) {
			if (mkfifo(p, rnd(2) ? 0644 : 0600) < 0)
				return perror(p), 1;
		} else if (k < 90) {
			if (mkdir(p, rnd(2) ? 0755 : 0700) < 0) /* stays empty */
				return perror(p), 1;
		} else {
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0640);
			if (fd < 0 || write(fd, "", 0) < 0)
				return perror(p), 1;
			close(fd);
		}
	}
	return 0;
}

static void esc(FILE *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 33 || c > 126 || c == '\\')
			fprintf(o, "\\x%02x", c);
		else
			fputc(c, o);
	}
}

static char *lines[1 << 16], *links[1 << 16];
static int nlines, nlinks;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk(const char *path, const char *rel)
{
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[8192], r[8192];
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		snprintf(r, sizeof(r), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		char *buf = NULL;
		size_t len = 0;
		FILE *o = open_memstream(&buf, &len);
		esc(o, r);
		fprintf(o, " %07o %u:%u", (unsigned)st.st_mode, st.st_uid, st.st_gid);
		if (S_ISREG(st.st_mode)) {
			int fd = open(p, O_RDONLY);
			uint64_t h = 0xcbf29ce484222325ull;
			char b[65536];
			ssize_t k;
			while (fd >= 0 && (k = read(fd, b, sizeof(b))) > 0)
				h = fnv(b, (size_t)k, h);
			if (fd >= 0)
				close(fd);
			fprintf(o, " size %lld %016llx %s", (long long)st.st_size, (unsigned long long)h,
				st.st_blocks * 512 < st.st_size ? "sparse" : "dense");
			if (st.st_nlink > 1) {
				char *l = NULL;
				if (asprintf(&l, "%llu %s", (unsigned long long)st.st_ino, r) > 0)
					links[nlinks++] = l;
			}
		} else if (S_ISLNK(st.st_mode)) {
			char t[4096];
			ssize_t k = readlink(p, t, sizeof(t) - 1);
			t[k < 0 ? 0 : k] = 0;
			fprintf(o, " -> ");
			esc(o, t);
		}
		char names[4096], *xn[64];
		int nx = 0;
		ssize_t xl = llistxattr(p, names, sizeof(names));
		for (ssize_t i = 0; xl > 0 && i < xl && nx < 64; i += (ssize_t)strlen(names + i) + 1)
			if (!strncmp(names + i, "user.", 5) || !strcmp(names + i, "security.capability"))
				xn[nx++] = names + i;
		qsort(xn, (size_t)nx, sizeof(char *), cmp);
		for (int i = 0; i < nx; i++) {
			char v[4096];
			ssize_t vl = lgetxattr(p, xn[i], v, sizeof(v));
			fprintf(o, " %s=%016llx", xn[i],
				(unsigned long long)fnv(v, vl > 0 ? (size_t)vl : 0, 0xcbf29ce484222325ull));
		}
		fclose(o);
		if (nlines < (1 << 16))
			lines[nlines++] = buf;
		if (S_ISDIR(st.st_mode))
			walk(p, r);
	}
	closedir(d);
}

/* Hard-link groups as sorted path lists: "LINKS a b c" (inode numbers left out). */
static void print_links(void)
{
	qsort(links, (size_t)nlinks, sizeof(char *), cmp);
	char *groups[1 << 12];
	int ng = 0;
	for (int i = 0; i < nlinks;) {
		unsigned long long ino = strtoull(links[i], NULL, 10);
		char *buf = NULL;
		size_t len = 0;
		FILE *o = open_memstream(&buf, &len);
		fprintf(o, "LINKS");
		for (; i < nlinks && strtoull(links[i], NULL, 10) == ino; i++) {
			fputc(' ', o);
			esc(o, strchr(links[i], ' ') + 1);
		}
		fclose(o);
		/* a group of one: its other names were deleted above a lower
		 * layer, where overlayfs still counts them in st_nlink */
		if (strchr(buf + 6, ' ') && ng < (1 << 12))
			groups[ng++] = buf;
		else
			free(buf);
	}
	qsort(groups, (size_t)ng, sizeof(char *), cmp);
	for (int i = 0; i < ng; i++)
		puts(groups[i]);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "make")) {
		rng = strtoull(argv[3], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
		umask(0);
		return make(argv[2], atoi(argv[4]));
	}
	if (argc == 3 && !strcmp(argv[1], "manifest")) {
		walk(argv[2], "");
		qsort(lines, (size_t)nlines, sizeof(char *), cmp);
		for (int i = 0; i < nlines; i++)
			puts(lines[i]);
		print_links();
		return 0;
	}
	fprintf(stderr, "usage: treeprobe make DIR SEED N | treeprobe manifest DIR\n");
	return 2;
}
