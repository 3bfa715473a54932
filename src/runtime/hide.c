/* Hidden paths: whiteouts in a layer above the others, or empty read-only
 * mounts over what lies under later mounts (see hide.h, docs/secrets.md).
 *
 * Why not Landlock: Landlock rules only grant, and a grant on a directory
 * covers everything beneath it. Keeping a hidden path unreachable with
 * Landlock alone means granting every sibling of the path and of each of its
 * ancestors instead of the ancestors themselves; then whatever is created
 * later directly in an ancestor (a file in /root when /root/.ssh is hidden,
 * a directory made in /) has no grant and cannot be read. And a second name
 * of the same inode (a hard link, a second volume of the same host
 * directory) is granted through its own parents anyway, since rules attach
 * to inodes. So the wall is the mount tree itself: the whiteout leaves no
 * name to open, a second route is refused at create (src/api/secrets.c:
 * volumes that expose a hidden path again) or reported (hard links), and
 * Landlock keeps its single rule on the environment's root. */
#include "runtime/hide.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runtime/mask.h"
#include "util/fs.h"
#include "util/syscalls.h"

static int open_in_root(int root_fd, const char *path, int flags)
{
	return fs_open_beneath(root_fd, path, flags, 0, FS_IN_ROOT);
}

/* "/a//b/./c/" -> "/a/b/c"; "" for the root. */
static void normalize(const char *in, char *out, size_t n)
{
	size_t k = 0;
	out[0] = 0;
	for (const char *p = in; *p;) {
		while (*p == '/')
			p++;
		const char *e = strchrnul(p, '/');
		size_t l = (size_t)(e - p);
		if (l && !(l == 1 && p[0] == '.') && k + l + 2 < n) {
			out[k++] = '/';
			memcpy(out + k, p, l);
			k += l;
			out[k] = 0;
		}
		p = e;
	}
}

/* The path of fd relative to the root at rootpath ("" for the root). */
static int path_in_root(int fd, const char *rootpath, char *out, size_t n)
{
	char p[64], buf[PATH_MAX];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	ssize_t k = readlink(p, buf, sizeof(buf) - 1);
	if (k < 0)
		return -errno;
	buf[k] = 0;
	size_t rl = strlen(rootpath);
	if (strncmp(buf, rootpath, rl) != 0 || (buf[rl] != 0 && buf[rl] != '/'))
		return -EXDEV;
	snprintf(out, n, "%s", buf + rl);
	return 0;
}

/* The canonical form of `path` inside the root: its directory with every
 * symlink resolved (inside), then its last name as given. -ENOENT or
 * -ENOTDIR when the directory does not exist (yet). */
static int canonical(int root_fd, const char *rootpath, const char *path, char *out, size_t n)
{
	char norm[PATH_MAX], parent[PATH_MAX];
	normalize(path, norm, sizeof(norm));
	if (!norm[0])
		return -EINVAL;
	char *slash = strrchr(norm, '/');
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - norm), norm);
	_cleanup_close_ int pfd = open_in_root(root_fd, parent[0] ? parent : "/", O_PATH | O_DIRECTORY);
	if (pfd < 0)
		return -errno;
	char cp[PATH_MAX];
	int r = path_in_root(pfd, rootpath, cp, sizeof(cp));
	if (r < 0)
		return r;
	if ((size_t)snprintf(out, n, "%s/%s", cp, slash + 1) >= n)
		return -ENAMETOOLONG;
	return 0;
}

static bool under(const char *p, const char *m)
{
	size_t l = strlen(m);
	return strncmp(p, m, l) == 0 && (p[l] == 0 || p[l] == '/');
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

bool hide_is_whiteout(const char *dir, const char *name)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

int hide_prepare(const env_config *c, const char *root, const char *dir, bool *ret_remount,
		 char ***ret_deferred, json_t *warnings, sbx_err **err)
{
	*ret_remount = false;
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return err_errno(err, "hidden paths: open '%s'", root);
	char rootpath[PATH_MAX];
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", root_fd);
	ssize_t rl = readlink(proc, rootpath, sizeof(rootpath) - 1);
	if (rl < 0)
		return err_errno(err, "hidden paths: readlink '%s'", proc);
	rootpath[rl] = 0;

	/* Mount points made after the overlays: what lies under them is covered
	 * later, not whited out (a whiteout under a mount would hide nothing). */
	_cleanup_strv_free_ char **later = NULL;
	size_t n_later = 0;
	static const char *const fixed[] = {"/dev", "/proc", "/tmp"};
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (strv_add(&later, &n_later, fixed[i]) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (c->n_secret_files && strv_add(&later, &n_later, SECRETS_DIR) < 0)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (size_t i = 0; i < c->n_volumes; i++) {
		char cp[PATH_MAX];
		if (canonical(root_fd, rootpath, c->volumes[i].path, cp, sizeof(cp)) < 0)
			normalize(c->volumes[i].path, cp, sizeof(cp));
		if (strv_add(&later, &n_later, cp[0] ? cp : "/") < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}

	_cleanup_strv_free_ char **deferred = calloc(1, sizeof(char *)), **wh = calloc(1, sizeof(char *));
	size_t n_def = 0, n_wh = 0;
	if (!deferred || !wh)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (char **h = c->hidden; h && *h; h++) {
		char cp[PATH_MAX];
		int r = canonical(root_fd, rootpath, *h, cp, sizeof(cp));
		bool later_mount = r == -ENOENT || r == -ENOTDIR; /* maybe a volume's directory */
		if (r < 0 && !later_mount)
			return err_errnum(err, -r, "hidden path '%s'", *h);
		for (char **m = later; !later_mount && m && *m; m++)
			later_mount = under(cp, *m) || streq(*m, "/");
		if (later_mount) {
			if (strv_add(&deferred, &n_def, *h) < 0)
				return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
			continue;
		}
		struct stat st;
		if (fstatat(root_fd, cp + 1, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				continue; /* nothing there: nothing to hide */
			return err_errno(err, "hidden path '%s'", *h);
		}
		if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
			char w[PATH_MAX + 200];
			snprintf(w, sizeof(w),
				 "hidden file '%s' has %lu other hard link(s) in the template: those names "
				 "stay visible",
				 *h, (unsigned long)st.st_nlink - 1);
			json_array_append_new(warnings, json_string(w));
		}
		if (strv_add(&wh, &n_wh, cp) < 0)
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	*ret_deferred = TAKE_PTR(deferred);
	if (n_wh == 0)
		return 0;

	/* The layer: ancestors first (mirrored), then the whiteouts; a path
	 * under another hidden path is already gone. */
	qsort(wh, n_wh, sizeof(char *), cmp_str);
	mask_list m = {0};
	_cleanup_strv_free_ char **dirs = calloc(1, sizeof(char *));
	size_t n_dirs = 0;
	int r = dirs ? 0 : -ENOMEM;
	struct stat st;
	if (r == 0 && fstat(root_fd, &st) < 0)
		r = -errno;
	if (r == 0)
		r = mask_list_add(&m, 'd', ".", &st);
	/* Keep only the outermost of nested hidden paths. */
	size_t n_keep = 0;
	for (size_t i = 0; i < n_wh; i++) {
		bool inner = false;
		for (size_t k = 0; k < n_keep && !inner; k++)
			inner = under(wh[i], wh[k]);
		if (inner)
			free(wh[i]);
		else
			wh[n_keep++] = wh[i];
	}
	wh[n_keep] = NULL;
	n_wh = n_keep;
	for (size_t i = 0; r == 0 && i < n_wh; i++) {
		for (char *s = wh[i] + 1; r == 0 && (s = strchr(s, '/')); s++) {
			*s = 0;
			bool seen = false;
			for (size_t k = 0; k < n_dirs && !seen; k++)
				seen = streq(dirs[k], wh[i] + 1);
			if (!seen) {
				if (fstatat(root_fd, wh[i] + 1, &st, AT_SYMLINK_NOFOLLOW) < 0)
					r = -errno;
				else if ((r = strv_add(&dirs, &n_dirs, wh[i] + 1)) == 0)
					r = mask_list_add(&m, 'd', wh[i] + 1, &st);
			}
			*s = '/';
		}
	}
	/* Whiteouts after all directories (mask_replay creates in order). */
	for (size_t i = 0; r == 0 && i < n_wh; i++)
		r = mask_list_add(&m, 'w', wh[i] + 1, NULL);
	if (r == 0 && mkdir(dir, 0755) < 0)
		r = -errno;
	_cleanup_close_ int dfd = r == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (r == 0 && dfd < 0)
		r = -errno;
	if (r == 0)
		r = mask_replay(&m, dfd, !c->rootless);
	for (size_t i = 0; i < m.n; i++)
		free(m.e[i].path);
	free(m.e);
	if (r < 0)
		return err_errnum(err, -r, "hidden paths: build the whiteout layer in '%s'", dir);
	*ret_remount = true;
	return 0;
}

int hide_cover(const char *root, const char *stage, char *const *deferred, sbx_err **err)
{
	if (!deferred || !deferred[0])
		return 0;
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return err_errno(err, "hidden paths: open '%s'", root);
	char empty[PATH_MAX + 16] = "";
	for (char *const *h = deferred; *h; h++) {
		_cleanup_close_ int t = open_in_root(root_fd, *h, O_PATH | O_NOFOLLOW);
		if (t < 0 && (errno == ENOENT || errno == ENOTDIR))
			continue;
		struct stat st;
		if (t < 0 || fstat(t, &st) < 0)
			return err_errno(err, "hidden path '%s'", *h);
		if (S_ISLNK(st.st_mode))
			return err_set(err, SBX_E_INVALID_ARGUMENT, ELOOP,
				       "hidden path '%s' is a symbolic link under a volume, /dev, /proc or "
				       "/tmp: hide the "
				       "path it points to",
				       *h);
		char target[64];
		snprintf(target, sizeof(target), "/proc/self/fd/%d", t);
		if (S_ISDIR(st.st_mode)) {
			if (mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "mode=0555,size=4k,nr_inodes=1") < 0)
				return err_errno(err, "hidden path '%s': cover it", *h);
			continue;
		}
		if (!empty[0]) {
			/* One empty file on a tmpfs of its own, bound read-only over each. */
			char d[PATH_MAX];
			snprintf(d, sizeof(d), "%s/hidden-file", stage);
			if (mkdir(d, 0755) < 0 || mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
							"mode=0555,size=4k,nr_inodes=4") < 0)
				return err_errno(err, "hidden paths: tmpfs for the empty file");
			snprintf(empty, sizeof(empty), "%s/empty", d);
			int fd = open(empty, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0000);
			if (fd < 0 || (fd = safe_close(fd), false) ||
			    mount(NULL, d, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  NULL) < 0)
				return err_errno(err, "hidden paths: the empty file");
		}
		_cleanup_close_ int tree =
		    sys_open_tree(AT_FDCWD, empty, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		struct sbx_mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
						       MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
		if (tree < 0 || sys_mount_setattr(tree, "", AT_EMPTY_PATH, &a) < 0 ||
		    sys_move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
			return err_errno(err, "hidden path '%s': cover it", *h);
	}
	return 0;
}
