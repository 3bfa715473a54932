/* The mask layer of the `host` template.
 *
 * The host template shows the host's OS tree read-only under a private
 * writable layer. Because the lower layers are idmapped (host root appears as
 * the environment's root), the environment's root could read anything host
 * root can; the mask, an overlay layer stacked on top of the host tree, takes
 * that back. Its rule: the environment sees what any unprivileged host user
 * could read of the system directories, and nothing else.
 *  - top-level entries other than the system directories (usr, etc, var, opt
 *    and the /bin-style links) are whited out: /work, /boot, /srv, ...;
 *  - root, home, tmp, run, mnt, media, proc, sys, dev become empty (opaque);
 *  - under etc, var and opt, files, sockets and devices that are not
 *    world-readable, and directories that are not world-searchable, are
 *    whited out (shadow, ssh host keys, ssl/private, database directories);
 *  - SBX_ROOT and SBX_RUN are whited out wherever they are.
 * Rootless, host root is not mapped in the environment: the host's files
 * appear owned by nobody, and the environment's root could not create,
 * remove or rename anything in a host directory. So the rootless mask also
 * mirrors every directory under etc, var and opt (up to MASK_ROOTLESS_DIRS):
 * a mask directory, owned by the environment's root, is the topmost lower
 * layer of that directory, and overlayfs takes the merged directory's owner
 * from it. Files stay host root's (nobody): they can be replaced (write a
 * new file, rename it over) or removed, not changed in place; setup says so
 * at create.
 * The mask is computed once per host state (a key over the stat of the
 * directories it depends on) and stored as a list under $SBX_ROOT/masks, and
 * replayed once into a tree beside it (host-<version>-<key>.d), which every
 * environment of the store mounts as its mask layer: read-only (an overlay
 * never writes a lower layer; root mode hands it over as a read-only,
 * idmapped clone like the host directories), on a staging mount that
 * pivot_root detaches, so no environment can reach it, let alone change it.
 * The tree is built under a temporary name and renamed into place, then
 * never changed (a changed host makes a new key, hence a new tree). Where it
 * cannot be built (a filesystem without whiteouts or user xattrs), each
 * environment replays the list into a tmpfs of its own instead. Either way
 * SBX_ROOT must not lie inside a system directory (ctx.c): overlayfs refuses
 * a lower layer inside another lower layer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runtime/mask.h"
#include "util/fs.h"

#define MASK_VERSION "7"
#define MASK_MAX_ENTRIES 400000

static const char *const keep_top[] = {"bin", "sbin", "lib", "lib32", "lib64", "libx32",
				       "usr", "etc",  "var", "opt",   NULL};
static const char *const empty_top[] = {"root",	 "home", "tmp", "run", "mnt",
					"media", "proc", "sys", "dev", NULL};
static const char *const walk_top[] = {"etc", "var", "opt", NULL};

static bool in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (streq(*l, s))
			return true;
	return false;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t mask_key(const char *sbx_root, const char *sbx_run, bool rootless)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	h = fnv(h, MASK_VERSION, 1);
	if (rootless)
		h = fnv(h, "rootless", 8);
	h = fnv(h, sbx_root, strlen(sbx_root) + 1);
	h = fnv(h, sbx_run, strlen(sbx_run) + 1);
	const char *deps[] = {"/",	  "/etc",	"/etc/ssh", "/etc/ssl", "/var",
			      "/var/lib", "/var/cache", "/var/log", "/opt",	NULL};
	for (int i = 0; deps[i]; i++) {
		struct stat st;
		if (lstat(deps[i], &st) < 0)
			memset(&st, 0, sizeof(st));
		uint64_t v[4] = {st.st_ino, (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec,
				 st.st_mode};
		h = fnv(h, v, sizeof(v));
	}
	return h;
}

void mask_free(mask_list *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->e[i].path);
		free(m->e[i].target);
	}
	free(m->e);
	free(m->tree);
	free(m);
}

static int add_link(mask_list *m, const char *path, const char *target);
int mask_list_add(mask_list *m, char type, const char *path, const struct stat *st)
{
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 64;
		mask_entry *e = realloc(m->e, nc * sizeof(*e));
		if (!e)
			return -ENOMEM;
		m->e = e;
		m->cap = nc;
	}
	mask_entry *e = &m->e[m->n];
	*e = (mask_entry){.type = type, .mode = 0755};
	if (st) {
		e->mode = st->st_mode & 07777;
		e->uid = st->st_uid;
		e->gid = st->st_gid;
		e->mtime = st->st_mtim;
	}
	if (!(e->path = strdup(path)))
		return -ENOMEM;
	m->n++;
	return 0;
}

static int add_link(mask_list *m, const char *path, const char *target)
{
	int r = mask_list_add(m, 'l', path, NULL);
	if (r < 0)
		return r;
	if (!(m->e[m->n - 1].target = strdup(target)))
		return -ENOMEM;
	return 0;
}

static bool have(const mask_list *m, const char *path)
{
	for (size_t i = m->n; i-- > 0;)
		if (streq(m->e[i].path, path))
			return true;
	return false;
}

/* Adds host directory /rel and its parents as mirrored directories. */
static int mirror_path(mask_list *m, const char *rel)
{
	_cleanup_free_ char *copy = NULL;
	if (asprintf(&copy, "/%s", rel) < 0)
		return -ENOMEM;
	for (char *s = copy + 1;; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char saved = *s;
		*s = 0;
		struct stat st;
		if (lstat(copy, &st) < 0)
			return -errno;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
		if (!have(m, copy + 1)) {
			int r = mask_list_add(m, 'd', copy + 1, &st);
			if (r < 0)
				return r;
		}
		*s = saved;
		if (!saved)
			return 0;
	}
}

static bool world_visible(const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return (st->st_mode & (S_IROTH | S_IXOTH)) == (S_IROTH | S_IXOTH);
	if (S_ISLNK(st->st_mode))
		return true;
	if (S_ISREG(st->st_mode))
		return st->st_mode & S_IROTH;
	return false; /* sockets, fifos, devices of the host: never */
}

/* Walks host directory hfd (= /rel), whiting out what is not world-visible.
 * Directories are mirrored (with their parents) only where they hold a
 * whiteout, so the mask stays small. */
static int walk(mask_list *m, size_t *seen, size_t *mirror_left, int hfd, const char *rel, dev_t dev,
		int depth)
{
	if (depth > 64 || *seen > MASK_MAX_ENTRIES)
		return 0;
	int dup = fcntl(hfd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	DIR *d = fdopendir(dup);
	if (!d) {
		safe_close(dup);
		return -errno;
	}
	bool mirrored = false;
	int r = 0;
	struct dirent *de;
	while ((de = readdir(d)) && r >= 0) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		(*seen)++;
		struct stat st;
		if (fstatat(hfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		_cleanup_free_ char *sub = fs_path_join(rel, de->d_name);
		if (!sub) {
			r = -ENOMEM;
			break;
		}
		if (strchr(de->d_name, '\n'))
			continue; /* cannot be listed; such names do not occur in system trees */
		if (!world_visible(&st)) {
			if (!mirrored && (r = mirror_path(m, rel)) < 0) {
				if (r == -ENOENT || r == -ENOTDIR)
					r = 0; /* the host removed this directory as we walked it */
				break;
			}
			mirrored = true;
			if (!have(m, sub))
				r = mask_list_add(m, 'w', sub, NULL);
			continue;
		}
		if (!S_ISDIR(st.st_mode) || st.st_dev != dev || have(m, sub))
			continue; /* files are fine; submounts never show through overlay */
		/* Rootless: the directory is mirrored (see the head comment);
		 * walking top-down, its parent already is. */
		if (*mirror_left) {
			(*mirror_left)--;
			if ((r = mask_list_add(m, 'd', sub, &st)) < 0)
				break;
		}
		_cleanup_close_ int fd =
		    openat(hfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			r = walk(m, seen, mirror_left, fd, sub, dev, depth + 1);
	}
	closedir(d);
	return r;
}

/* Whites out absolute host path p (SBX_ROOT, SBX_RUN) where it is visible. */
static int hide_path(mask_list *m, const char *p)
{
	_cleanup_free_ char *copy = strdup(p);
	if (!copy)
		return -ENOMEM;
	char *slash = strchr(copy + 1, '/');
	if (!slash)
		return 0; /* a top-level entry: handled by the top-level rules */
	*slash = 0;
	bool kept = in_list(keep_top, copy + 1);
	*slash = '/';
	if (!kept)
		return 0; /* hidden with its top-level directory */
	char *leaf = strrchr(copy, '/');
	*leaf = 0;
	int r = mirror_path(m, copy + 1);
	if (r < 0)
		return r == -ENOENT || r == -ENOTDIR ? 0 : r;
	*leaf = '/';
	return have(m, copy + 1) ? 0 : mask_list_add(m, 'w', copy + 1, NULL);
}

static int build(mask_list *m, const char *sbx_root, const char *sbx_run, bool rootless)
{
	_cleanup_close_ int host = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat rst;
	if (host < 0 || fstat(host, &rst) < 0)
		return -errno;
	int r = mask_list_add(m, 'd', ".", &rst);
	int dup = fcntl(host, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		safe_close(dup);
		return -errno;
	}
	struct dirent *de;
	while (r >= 0 && (de = readdir(d))) {
		const char *n = de->d_name;
		if (streq(n, ".") || streq(n, "..") || in_list(empty_top, n) || strchr(n, '\n') ||
		    strchr(n, '\t'))
			continue;
		if (!in_list(keep_top, n)) {
			r = mask_list_add(m, 'w', n, NULL);
			continue;
		}
		/* Kept entries are recorded too, so that the mask alone is a
		 * complete top level (rootless mode mounts each one separately). */
		struct stat st;
		char target[4096];
		if (fstatat(host, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			r = mask_list_add(m, 'd', n, &st);
		else if (S_ISLNK(st.st_mode)) {
			ssize_t k = readlinkat(host, n, target, sizeof(target) - 1);
			if (k > 0) {
				target[k] = 0;
				r = add_link(m, n, target);
			}
		}
	}
	closedir(d);
	for (int i = 0; r >= 0 && empty_top[i]; i++) {
		struct stat st;
		if (fstatat(host, empty_top[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
			st = rst;
			st.st_mode = S_IFDIR | 0755;
		}
		if (streq(empty_top[i], "tmp"))
			st.st_mode = S_IFDIR | 01777;
		r = mask_list_add(m, 'o', empty_top[i], &st);
	}
	/* Shared host scratch space is not the environment's business either. */
	struct stat vt;
	if (r >= 0 && lstat("/var/tmp", &vt) == 0 && S_ISDIR(vt.st_mode) && (r = mirror_path(m, "var")) >= 0)
		r = mask_list_add(m, 'o', "var/tmp", &vt);
	if (r >= 0)
		r = hide_path(m, sbx_root);
	if (r >= 0)
		r = hide_path(m, sbx_run);
	size_t seen = 0, mirror_left = rootless ? MASK_ROOTLESS_DIRS : 0;
	for (int i = 0; r >= 0 && walk_top[i]; i++) {
		_cleanup_close_ int fd =
		    openat(host, walk_top[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			r = walk(m, &seen, &mirror_left, fd, walk_top[i], rst.st_dev, 0);
	}
	return r;
}

static int save(const mask_list *m, const char *path)
{
	size_t cap = 4096, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		const mask_entry *e = &m->e[i];
		for (;;) {
			int n = snprintf(buf + len, cap - len, "%c %o %u %u %lld %ld %s%s%s\n", e->type,
					 e->mode, (unsigned)e->uid, (unsigned)e->gid,
					 (long long)e->mtime.tv_sec, e->mtime.tv_nsec, e->path,
					 e->target ? "\t" : "", e->target ? e->target : "");
			if (n >= 0 && (size_t)n < cap - len) {
				len += (size_t)n;
				break;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap *= 2;
		}
	}
	return fs_write_atomic(path, buf, len, 0644);
}

static int load(const char *path, mask_list **ret)
{
	_cleanup_free_ char *buf = NULL;
	int r = fs_read_file(path, 64 << 20, &buf, NULL);
	if (r < 0)
		return r;
	mask_list *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (char *line = buf, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = 0;
		char type;
		unsigned mode, uid, gid;
		long long sec;
		long nsec;
		int off = 0;
		if (sscanf(line, "%c %o %u %u %lld %ld %n", &type, &mode, &uid, &gid, &sec, &nsec, &off) !=
			6 ||
		    !off || !strchr("dowl", type)) {
			mask_free(m);
			return -EBADMSG;
		}
		struct stat st = {.st_mode = mode, .st_uid = uid, .st_gid = gid};
		st.st_mtim.tv_sec = (time_t)sec;
		st.st_mtim.tv_nsec = nsec;
		char *tab = type == 'l' ? strchr(line + off, '\t') : NULL;
		if (type == 'l' && !tab) {
			mask_free(m);
			return -EBADMSG;
		}
		if (tab)
			*tab = 0;
		r = tab ? add_link(m, line + off, tab + 1)
			: mask_list_add(m, type, line + off, type == 'w' ? NULL : &st);
		if (r < 0) {
			mask_free(m);
			return r;
		}
	}
	*ret = m;
	return 0;
}

/* Takes the lock that serializes the building of masks (list and tree):
 * concurrent creates (processes, or `sbx serve`'s threads) queue on it and
 * the first one builds. flock locks belong to the open file description, so
 * threads of one process exclude each other too. */
static int lock_builds(const char *masks, sbx_err **err)
{
	_cleanup_free_ char *lock = fs_path_join(masks, ".build.lock");
	if (!lock)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	_cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lfd < 0)
		return err_errno(err, "open '%s'", lock);
	int r;
	while ((r = flock(lfd, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (r < 0)
		return err_errno(err, "lock '%s'", lock);
	return TAKE_FD(lfd);
}

/* Sets m->tree to masks/<name>.d, building it first if it is not there
 * (under the build lock: lfd, or taken here when lfd < 0): replayed into a
 * temporary directory, then renamed into place whole. On any failure
 * m->tree stays NULL (environments then replay the list themselves). */
static void tree_set(mask_list *m, const char *masks, const char *name, bool chown_ok, int lfd)
{
	_cleanup_free_ char *tree = NULL, *tmp = NULL;
	struct stat st;
	if (asprintf(&tree, "%s/%s.d", masks, name) < 0)
		return;
	if (lstat(tree, &st) == 0 && S_ISDIR(st.st_mode)) {
		m->tree = TAKE_PTR(tree);
		return;
	}
	_cleanup_close_ int own = lfd < 0 ? lock_builds(masks, NULL) : -1;
	if (lfd < 0 && own < 0)
		return;
	if (lstat(tree, &st) == 0 && S_ISDIR(st.st_mode)) { /* built while we waited */
		m->tree = TAKE_PTR(tree);
		return;
	}
	if (asprintf(&tmp, "%s/.tree-XXXXXX", masks) < 0 || !mkdtemp(tmp))
		return;
	_cleanup_close_ int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0 && mask_replay(m, dfd, chown_ok) == 0 && rename(tmp, tree) == 0) {
		m->tree = TAKE_PTR(tree);
		return;
	}
	(void)fs_rm_rf(tmp);
}

int mask_host_layer(const char *sbx_root, const char *sbx_run, bool rootless, mask_list **ret, sbx_err **err)
{
	char name[48], file[64];
	snprintf(name, sizeof(name), "host-%s-%016llx", MASK_VERSION,
		 (unsigned long long)mask_key(sbx_root, sbx_run, rootless));
	snprintf(file, sizeof(file), "masks/%s.list", name);
	_cleanup_free_ char *path = fs_path_join(sbx_root, file);
	_cleanup_free_ char *masks = fs_path_join(sbx_root, "masks");
	if (!path || !masks)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (load(path, ret) == 0) {
		tree_set(*ret, masks, name, !rootless, -1);
		return 0;
	}
	int r = fs_mkdir_p(masks, 0711);
	if (r < 0)
		return err_errnum(err, r, "create '%s'", masks);
	/* Built once (lock_builds). The list itself is written atomically under
	 * a unique temp name, so a reader without the lock sees it whole or not
	 * at all. */
	_cleanup_close_ int lfd = lock_builds(masks, err);
	if (lfd < 0)
		return -1;
	if (load(path, ret) == 0) {
		tree_set(*ret, masks, name, !rootless, lfd);
		return 0;
	}
	mask_list *m = calloc(1, sizeof(*m));
	if (!m)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	r = build(m, sbx_root, sbx_run, rootless);
	if (r >= 0)
		r = save(m, path);
	if (r < 0) {
		mask_free(m);
		return err_errnum(err, r, "build the host template's mask '%s'", path);
	}
	tree_set(m, masks, name, !rootless, lfd);
	*ret = m;
	return 0;
}

int mask_replay(const mask_list *m, int dfd, bool chown_ok)
{
	for (size_t i = 0; i < m->n; i++) {
		const mask_entry *e = &m->e[i];
		const char *p = e->path;
		if (e->type == 'w') {
			if (mknodat(dfd, p, S_IFCHR | 0000, makedev(0, 0)) < 0 && errno != EEXIST)
				return -errno;
			continue;
		}
		if (e->type == 'l') {
			if (symlinkat(e->target, dfd, p) < 0 && errno != EEXIST)
				return -errno;
			continue;
		}
		if (!streq(p, ".") && mkdirat(dfd, p, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (e->type == 'o') {
			_cleanup_close_ int fd =
			    openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0 || fsetxattr(fd, "user.overlay.opaque", "y", 1, 0) < 0)
				return -errno;
		}
	}
	/* Attributes last (children's creation would bump the mtimes), deepest first. */
	for (size_t i = m->n; i-- > 0;) {
		const mask_entry *e = &m->e[i];
		if (e->type == 'w' || e->type == 'l')
			continue;
		if (chown_ok)
			(void)!fchownat(dfd, e->path, e->uid, e->gid, AT_SYMLINK_NOFOLLOW);
		(void)!fchmodat(dfd, e->path, e->mode, 0);
		struct timespec ts[2] = {e->mtime, e->mtime};
		(void)utimensat(dfd, e->path, ts, AT_SYMLINK_NOFOLLOW);
	}
	return 0;
}

char **mask_host_dirs(const mask_list *m)
{
	char **v = calloc(ARRAY_SIZE(keep_top) + 1, sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; v && i < m->n; i++)
		if (m->e[i].type == 'd' && !strchr(m->e[i].path, '/') && in_list(keep_top, m->e[i].path) &&
		    n < ARRAY_SIZE(keep_top))
			v[n++] = strdup(m->e[i].path);
	return v;
}
