#include "runtime/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/syscalls.h"

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *data,
		    sbx_err **err)
{
	if (mount(src, dst, type, flags, data) < 0)
		return err_errno(err, "mount %s on '%s'", type ? type : src ? src : "(remount)", dst);
	return 0;
}

int mount_make_private(sbx_err **err) { return do_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, err); }

int mount_clone_tree(const char *path, sbx_err **err)
{
	/* Recursive: without privilege over the host's mount namespace, a
	 * subtree with (locked) submounts can only be cloned whole. */
	int fd = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
	if (fd < 0)
		return err_errno(err, "clone mount of '%s'", path);
	return fd;
}

int mount_attach(int tree_fd, const char *dir, sbx_err **err)
{
	if (sys_move_mount(tree_fd, "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		return err_errno(err, "attach mount at '%s'", dir);
	return 0;
}

int mount_rootfs(const char *stage, const char *lowerdir, int upper_fd, int work_fd, bool ephemeral, sbx_err **err)
{
	char path[4300], opts[4096];
	size_t o = (size_t)snprintf(opts, sizeof(opts), "userxattr,lowerdir=%s", lowerdir);
	if (ephemeral) {
		/* (EEXIST: mounted again, with hidden paths' layer: setup.c) */
		snprintf(path, sizeof(path), "%s/upper", stage);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return err_errno(err, "mkdir '%s'", path);
		/* work/_root, so that per-directory overlays (rootless) can have
		 * their work dirs beside it, never inside it. */
		snprintf(path, sizeof(path), "%s/work", stage);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return err_errno(err, "mkdir '%s'", path);
		snprintf(path, sizeof(path), "%s/work/_root", stage);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return err_errno(err, "mkdir '%s'", path);
		o += (size_t)snprintf(opts + o, sizeof(opts) - o, ",upperdir=%s/upper,workdir=%s/work/_root", stage, stage);
	} else {
		o += (size_t)snprintf(opts + o, sizeof(opts) - o, ",upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d",
				      upper_fd, work_fd);
	}
	if (o >= sizeof(opts) - 1)
		return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "overlay options too long");
	snprintf(path, sizeof(path), "%s/root", stage);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "mkdir '%s'", path);
	return do_mount("overlay", path, "overlay", MS_NOSUID | MS_NODEV, opts, err);
}

static int ensure_dir(const char *root, const char *sub, mode_t mode, char *out, size_t outsz, sbx_err **err)
{
	snprintf(out, outsz, "%s/%s", root, sub);
	if (mkdir(out, mode) < 0 && errno != EEXIST)
		return err_errno(err, "mkdir '%s'", out);
	return 0;
}

int mount_overlay_dir(const char *root, const char *dir, const char *lowerdir, const char *upper, const char *work,
		      sbx_err **err)
{
	char target[4300], opts[4096];
	snprintf(target, sizeof(target), "%s/%s", root, dir);
	int n = snprintf(opts, sizeof(opts), "userxattr,lowerdir=%s,upperdir=%s,workdir=%s", lowerdir, upper, work);
	if (n >= (int)sizeof(opts))
		return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "overlay options too long");
	return do_mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts, err);
}

int mount_dev(const char *root, bool rootless, sbx_err **err)
{
	char dev[4200], p[4300];
	if (ensure_dir(root, "dev", 0755, dev, sizeof(dev), err) < 0)
		return -1;
	if (do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m,nr_inodes=256", err) < 0)
		return -1;
	static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty", NULL};
	for (int i = 0; nodes[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, nodes[i]);
		_cleanup_close_ int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return err_errno(err, "create '%s'", p);
		char host[64];
		snprintf(host, sizeof(host), "/dev/%s", nodes[i]);
		if (do_mount(host, p, NULL, MS_BIND, NULL, err) < 0)
			return -1;
	}
	static const char *const links[][2] = {{"ptmx", "pts/ptmx"},        {"fd", "/proc/self/fd"},
					       {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
					       {"stderr", "/proc/self/fd/2"}, {"core", "/dev/null"}};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, links[i][0]);
		if (symlink(links[i][1], p) < 0)
			return err_errno(err, "symlink '%s'", p);
	}
	if (ensure_dir(dev, "pts", 0755, p, sizeof(p), err) < 0)
		return -1;
	if (do_mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		     rootless ? "newinstance,ptmxmode=0666,mode=0620" : "newinstance,ptmxmode=0666,mode=0620,gid=5", err) < 0)
		return -1;
	if (ensure_dir(dev, "shm", 01777, p, sizeof(p), err) < 0)
		return -1;
	if (do_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", err) < 0)
		return -1;
	if (ensure_dir(dev, "mqueue", 0755, p, sizeof(p), err) < 0)
		return -1;
	/* The /dev tmpfs itself becomes read-only: nothing new appears in /dev. */
	return do_mount(NULL, dev, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL, err);
}

int mount_proc(const char *root, sbx_err **err)
{
	char proc[4200], p[4300];
	if (ensure_dir(root, "proc", 0555, proc, sizeof(proc), err) < 0)
		return -1;
	if (do_mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, err) < 0)
		return -1;
	/* Read-only views of kernel knobs (Docker's list), then masked files. */
	static const char *const ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs", NULL};
	for (int i = 0; ro[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", proc, ro[i]);
		if (access(p, F_OK) < 0)
			continue;
		if (do_mount(p, p, NULL, MS_BIND | MS_REC, NULL, err) < 0 ||
		    do_mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
			     err) < 0)
			return -1;
	}
	static const char *const masked[] = {"kcore", "keys", "timer_list", "sched_debug", "kallsyms",
					     "latency_stats", "acpi", "scsi", "kpageflags", "kpagecount", NULL};
	snprintf(p, sizeof(p), "%s/dev/null", root);
	_cleanup_free_ char *null = strdup(p);
	if (!null)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (int i = 0; masked[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", proc, masked[i]);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (do_mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0", err) < 0)
				return -1;
		} else if (do_mount(null, p, NULL, MS_BIND, NULL, err) < 0)
			return -1;
	}
	return 0;
}

int mount_tmp(const char *root, sbx_err **err)
{
	char p[4200];
	if (ensure_dir(root, "tmp", 01777, p, sizeof(p), err) < 0)
		return -1;
	return do_mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", err);
}

/* Creates every missing component of `path` inside root_fd, never leaving
 * the root (RESOLVE_IN_ROOT), and returns an O_PATH fd of the last one. */
int mount_mkdir_in_root(int root_fd, const char *path, bool last_is_dir, sbx_err **err)
{
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (char *s = copy + 1;; s++) {
		if (*s != '/' && *s != 0)
			continue;
		char saved = *s;
		*s = 0;
		char *slash = strrchr(copy, '/');
		const char *name = slash + 1;
		*slash = 0;
		_cleanup_close_ int parent = fs_open_beneath(root_fd, *copy ? copy : "/", O_PATH, 0, FS_IN_ROOT);
		*slash = '/';
		if (parent < 0)
			return err_errno(err, "resolve '%s' in the environment", copy);
		if (*name) {
			int r;
			if (saved || last_is_dir)
				r = mkdirat(parent, name, 0755);
			else {
				r = openat(parent, name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
				if (r >= 0)
					r = close(r);
			}
			if (r < 0 && errno != EEXIST)
				return err_errno(err, "create '%s' in the environment", copy);
		}
		*s = saved;
		if (!saved)
			break;
	}
	int fd = fs_open_beneath(root_fd, path, O_PATH, 0, FS_IN_ROOT);
	if (fd < 0)
		return err_errno(err, "resolve '%s' in the environment", path);
	return fd;
}

int mount_volume(const char *root, int tree_fd, const char *path, bool readonly, bool is_dir, sbx_err **err)
{
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return err_errno(err, "open '%s'", root);
	_cleanup_close_ int target = mount_mkdir_in_root(root_fd, path, is_dir, err);
	if (target < 0)
		return -1;
	struct sbx_mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0)};
	if (sys_mount_setattr(tree_fd, "", AT_EMPTY_PATH, &attr) < 0)
		return err_errno(err, "set volume '%s' attributes", path);
	if (sys_move_mount(tree_fd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return err_errno(err, "attach volume at '%s'", path);
	return 0;
}

int mount_pivot(const char *root, sbx_err **err)
{
	if (chdir(root) < 0)
		return err_errno(err, "chdir '%s'", root);
	/* pivot_root(".", ".") stacks the old root on top of the new one; the
	 * lazy unmount then drops it (and the staging tmpfs with it). */
	if (sys_pivot_root(".", ".") < 0)
		return err_errno(err, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return err_errno(err, "detach old root");
	if (chdir("/") < 0)
		return err_errno(err, "chdir /");
	return 0;
}
