/* The disk quota of an environment's writable layer: an ext4 image on a loop
 * device (see quota.h for the layout and its lifetime). Runs in the creating
 * process (host mount namespace), as root. */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/quota.h"
#include "util/fs.h"
#include "util/log.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif
#define LOOP_BLOCK_MAJOR 7

/* Bytes per inode: ext4's default (16 KiB) runs out of inodes before space
 * with package trees (node_modules, site-packages); 8 KiB costs 3% of the
 * image in inode tables, which the image gets on top of the quota. */
#define QUOTA_INODE_RATIO 8192

typedef struct quota_paths {
	char img[4200], tmp[4200], mnt[4200], upper[4200], work[4200];
} quota_paths;

static int quota_paths_make(const char *env_dir, quota_paths *p)
{
	if (strlen(env_dir) > 4000)
		return -ENAMETOOLONG;
	snprintf(p->img, sizeof(p->img), "%s/disk.img", env_dir);
	snprintf(p->tmp, sizeof(p->tmp), "%s/disk.img.tmp", env_dir);
	snprintf(p->mnt, sizeof(p->mnt), "%s/disk", env_dir);
	snprintf(p->upper, sizeof(p->upper), "%s/upper", env_dir);
	snprintf(p->work, sizeof(p->work), "%s/work", env_dir);
	return 0;
}

/* 1 if path is the root of a mount, 0 if not, -errno if it cannot be told. */
static int is_mount_root(const char *path)
{
	struct statx sx;
	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0)
		return -errno;
	if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
		return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	/* Older kernels: another device than the parent's (enough for ours:
	 * the disk is its own device, the binds are on it). */
	char parent[4300];
	struct stat a, b;
	snprintf(parent, sizeof(parent), "%s/..", path);
	if (lstat(path, &a) < 0 || stat(parent, &b) < 0)
		return -errno;
	return a.st_dev != b.st_dev;
}

static const char *mke2fs_path(void)
{
	static const char *const cands[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs", "/usr/local/sbin/mke2fs",
					    "/usr/bin/mke2fs"};
	for (size_t i = 0; i < ARRAY_SIZE(cands); i++)
		if (access(cands[i], X_OK) == 0)
			return cands[i];
	return NULL;
}

/* mke2fs on the image file itself (not the loop device): ext4 without a
 * journal (the layer is thrown away with the environment; a crash is cleaned
 * up by gc), no reserved blocks (the quota is what the environment may use),
 * no online-resize reserve, inode tables left to the sparse file's zeroes. */
static int run_mke2fs(const char *img, sbx_err **err)
{
	const char *exe = mke2fs_path();
	if (!exe)
		return err_set(
		    err, SBX_E_UNAVAILABLE, ENOENT,
		    "mke2fs not found: a disk quota formats an ext4 image with it (install e2fsprogs)");
	char ratio[32];
	snprintf(ratio, sizeof(ratio), "%d", QUOTA_INODE_RATIO);
	char *const argv[] = {"mke2fs",
			      "-q",
			      "-F",
			      "-t",
			      "ext4",
			      "-b",
			      "4096",
			      "-I",
			      "256",
			      "-i",
			      ratio,
			      "-m",
			      "0",
			      "-O",
			      "^has_journal,^resize_inode",
			      "-E",
			      "lazy_itable_init=1,nodiscard,root_owner=0:0",
			      "-L",
			      "sbx-disk",
			      (char *)img,
			      NULL};
	char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL};
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	_cleanup_close_ int rd = pfd[0];
	int wr = pfd[1];
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, wr, 1);
	posix_spawn_file_actions_adddup2(&fa, wr, 2);
	pid_t pid;
	int r = posix_spawn(&pid, exe, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	safe_close(wr);
	if (r != 0)
		return err_errnum(err, r, "run %s", exe);
	char out[1024];
	size_t n = 0;
	for (;;) {
		ssize_t k = RETRY_EINTR(read(rd, out + n, sizeof(out) - 1 - n));
		if (k <= 0)
			break;
		n += (size_t)k;
		if (n == sizeof(out) - 1) {
			char sink[4096]; /* drain, so that mke2fs never blocks on a full pipe */
			while (RETRY_EINTR(read(rd, sink, sizeof(sink))) > 0)
				;
			break;
		}
	}
	out[n] = 0;
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = 0;
	for (char *c = out; *c; c++)
		if (*c == '\n')
			*c = ' ';
	int status;
	if (RETRY_EINTR(waitpid(pid, &status, 0)) < 0)
		return err_errno(err, "wait for mke2fs");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(err, SBX_E_INTERNAL, EIO, "mke2fs on '%s' failed (%s %d)%s%s", img,
			       WIFEXITED(status) ? "exit status" : "signal",
			       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), n ? ": " : "",
			       out);
	return 0;
}

/* A fresh image of `bytes` usable bytes at p->img (made under a temporary
 * name, so a crash never leaves a half-formatted image behind). */
static int image_create(const quota_paths *p, int64_t bytes, sbx_err **err)
{
	/* On top of the quota: the inode tables (256 bytes per inode), and the
	 * pool ext4 keeps back from every writer (2% of the blocks, at most
	 * 4096: it saves extent conversions from ENOSPC), so that what the
	 * environment can write is the quota. */
	int64_t size = bytes + bytes / (QUOTA_INODE_RATIO / 256);
	int64_t pool = size / 49;
	size += pool < (16LL << 20) ? pool : (16LL << 20);
	size = (size + 4095) & ~(int64_t)4095;
	(void)unlink(p->tmp);
	_cleanup_close_ int fd = open(p->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, "create '%s'", p->tmp);
	if (ftruncate(fd, size) < 0) {
		int e = errno;
		(void)unlink(p->tmp);
		if (e == EFBIG || e == EINVAL)
			return err_set(
			    err, SBX_E_LIMIT_EXCEEDED, e,
			    "disk quota of %lld bytes: the host filesystem cannot hold an image that large",
			    (long long)bytes);
		return err_errnum(err, e, "size '%s'", p->tmp);
	}
	fd = safe_close(fd);
	if (run_mke2fs(p->tmp, err) < 0) {
		(void)unlink(p->tmp);
		return -1;
	}
	if (rename(p->tmp, p->img) < 0) {
		int e = errno;
		(void)unlink(p->tmp);
		return err_errnum(err, e, "rename '%s'", p->tmp);
	}
	return 0;
}

/* A free loop device with the image attached, autoclear (it detaches once
 * nothing holds it open: the mount, from when it exists). Returns its fd. */
static int loop_attach(int img_fd, const char *img, char *dev, size_t devsz, sbx_err **err)
{
	_cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return err_set(err, SBX_E_UNAVAILABLE, errno,
			       "open /dev/loop-control: %s (a disk quota is an ext4 image on a loop device)",
			       strerror(errno));
	for (int attempt = 0; attempt < 32; attempt++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0)
			return err_set(err, SBX_E_UNAVAILABLE, errno, "no free loop device: %s",
				       strerror(errno));
		snprintf(dev, devsz, "/dev/loop%d", n);
		_cleanup_close_ int lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			if (errno == ENOENT) { /* devtmpfs has not made the node yet */
				usleep(1000);
				continue;
			}
			return err_errno(err, "open %s", dev);
		}
		struct loop_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)img_fd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		size_t l = strlen(img); /* informational (losetup shows it); cut at LO_NAME_SIZE */
		memcpy(cfg.info.lo_file_name, img, l < LO_NAME_SIZE - 1 ? l : LO_NAME_SIZE - 1);
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0)
			return TAKE_FD(lfd);
		if (errno != EBUSY) /* EBUSY: another process took it meanwhile */
			return err_errno(err, "attach '%s' to %s", img, dev);
	}
	return err_set(err, SBX_E_UNAVAILABLE, EBUSY, "no free loop device: others kept taking them");
}

/* Mounts p->img on p->mnt. */
static int disk_mount(const quota_paths *p, sbx_err **err)
{
	_cleanup_close_ int ifd = open(p->img, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (ifd < 0)
		return err_errno(err, "open '%s'", p->img);
	char dev[64];
	_cleanup_close_ int lfd = loop_attach(ifd, p->img, dev, sizeof(dev), err);
	if (lfd < 0)
		return -1;
	/* noinit_itable: the inode tables are holes of the sparse image, zero
	 * already; the lazy-init thread would only write them out. */
	if (mount(dev, p->mnt, "ext4", MS_NOSUID | MS_NODEV, "noinit_itable") < 0)
		return err_errno(err, "mount '%s' (%s) on '%s'", p->img, dev, p->mnt);
	return 0; /* closing lfd now arms autoclear */
}

/* upper/ and work/ on the mounted disk (owned uid:gid), bound onto
 * env_dir's upper/ and work/ unless they are bound already. */
static int quota_bind_layers(const quota_paths *p, uid_t uid, gid_t gid, sbx_err **err)
{
	const char *subs[][2] = {{"upper", p->upper}, {"work", p->work}};
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		char src[4300];
		snprintf(src, sizeof(src), "%s/%s", p->mnt, subs[i][0]);
		if ((mkdir(src, 0755) < 0 && errno != EEXIST) || lchown(src, uid, gid) < 0)
			return err_errno(err, "create '%s'", src);
		if (mkdir(subs[i][1], 0755) < 0 && errno != EEXIST)
			return err_errno(err, "create '%s'", subs[i][1]);
		int b = is_mount_root(subs[i][1]);
		if (b < 0)
			return err_errnum(err, b, "stat '%s'", subs[i][1]);
		if (b == 0 && mount(src, subs[i][1], NULL, MS_BIND, NULL) < 0)
			return err_errno(err, "bind '%s' on '%s'", src, subs[i][1]);
	}
	return 0;
}

int quota_setup(const char *env_dir, int64_t bytes, uid_t uid, gid_t gid, sbx_err **err)
{
	quota_paths p;
	if (quota_paths_make(env_dir, &p) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG, "path too long: '%s'", env_dir);
	if (bytes < QUOTA_MIN_BYTES)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "disk quota too small: at least 4m");
	bool mounted_here = false;
	int m = is_mount_root(p.mnt);
	if (m < 0 && m != -ENOENT)
		return err_errnum(err, m, "stat '%s'", p.mnt);
	if (m <= 0) {
		if (mkdir(p.mnt, 0700) < 0 && errno != EEXIST)
			return err_errno(err, "create '%s'", p.mnt);
		struct stat st;
		if (lstat(p.img, &st) < 0) {
			if (errno != ENOENT)
				return err_errno(err, "stat '%s'", p.img);
			if (image_create(&p, bytes, err) < 0)
				return err_wrap(err, "disk quota");
		}
		if (disk_mount(&p, err) < 0)
			return err_wrap(err, "disk quota");
		mounted_here = true;
		/* The environment's root (a host uid) passes through to upper/
		 * and work/ (setup.c opens them here), as through env_dir. */
		if (chmod(p.mnt, 0711) < 0) {
			err_errno(err, "chmod '%s'", p.mnt);
			goto undo;
		}
	}
	if (quota_bind_layers(&p, uid, gid, err) < 0)
		goto undo;
	log_debug("quota: %lld bytes on %s", (long long)bytes, p.mnt);
	return 0;
undo:
	if (mounted_here)
		(void)quota_teardown(env_dir);
	return err_wrap(err, "disk quota");
}

int quota_setup_tmpfs(const char *env_dir, uid_t uid, gid_t gid, sbx_err **err)
{
	quota_paths p;
	if (quota_paths_make(env_dir, &p) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG, "path too long: '%s'", env_dir);
	if (mkdir(p.mnt, 0700) < 0 && errno != EEXIST)
		return err_errno(err, "create '%s'", p.mnt);
	/* size=0: no limit of its own (as the disk a cold layer is on); mode
	 * 0711 as env_dir: the environment's root passes through. */
	if (mount("tmpfs", p.mnt, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0711,size=0,nr_inodes=0") < 0)
		return err_errno(err, "mount a tmpfs on '%s'", p.mnt);
	if (quota_bind_layers(&p, uid, gid, err) < 0) {
		(void)quota_teardown(env_dir);
		return err_wrap(err, "tmpfs writable layer");
	}
	return 0;
}

void quota_layer_base(const char *env_dir, int64_t disk_bytes, char *buf, size_t n)
{
	snprintf(buf, n, "%s/disk", env_dir);
	if (disk_bytes > 0 || is_mount_root(buf) > 0)
		return;
	snprintf(buf, n, "%s", env_dir);
}

/* Waits until loop device `minor` no longer holds `img`. */
static void wait_loop_detached(int minor_nr, const char *img)
{
	char sys[128];
	snprintf(sys, sizeof(sys), "/sys/dev/block/%d:%d/loop/backing_file", LOOP_BLOCK_MAJOR, minor_nr);
	size_t l = strlen(img);
	for (int i = 0; i < 2000; i++) {
		_cleanup_free_ char *bf = NULL;
		if (fs_read_file(sys, 8192, &bf, NULL) < 0 || strncmp(bf, img, l) != 0 ||
		    (bf[l] != '\n' && bf[l] != ' ' && bf[l] != 0))
			return;
		usleep(1000);
	}
	log_debug("quota: loop%d still holds %s", minor_nr, img);
}

int quota_teardown(const char *env_dir)
{
	quota_paths p;
	if (quota_paths_make(env_dir, &p) < 0)
		return -ENAMETOOLONG;
	int loop_minor = -1;
	struct stat st;
	if (is_mount_root(p.mnt) > 0 && stat(p.mnt, &st) == 0 && major(st.st_dev) == LOOP_BLOCK_MAJOR)
		loop_minor = (int)minor(st.st_dev);
	/* The binds first (they hold the disk), then the disk. Lazily: the
	 * environment is stopped, and a straggler must not keep them mounted. */
	const char *const mounts[] = {p.upper, p.work, p.mnt};
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(mounts); i++)
		for (int k = 0; k < 8 && is_mount_root(mounts[i]) > 0; k++)
			if (umount2(mounts[i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
				r = -errno;
				break;
			}
	if (loop_minor >= 0)
		wait_loop_detached(loop_minor, p.img);
	return r;
}

int quota_reset(const char *env_dir, sbx_err **err)
{
	quota_paths p;
	if (quota_paths_make(env_dir, &p) < 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG, "path too long: '%s'", env_dir);
	int r = quota_teardown(env_dir);
	if (r < 0)
		return err_errnum(err, r, "unmount the disk quota of '%s'", env_dir);
	if (unlink(p.img) < 0 && errno != ENOENT)
		return err_errno(err, "remove '%s'", p.img);
	(void)unlink(p.tmp);
	return 0;
}

int quota_usage(const char *env_dir, int64_t *ret_size, int64_t *ret_used, int64_t *ret_avail)
{
	quota_paths p;
	if (quota_paths_make(env_dir, &p) < 0)
		return -ENAMETOOLONG;
	if (is_mount_root(p.mnt) <= 0)
		return -ENOENT;
	struct statfs sf;
	if (statfs(p.mnt, &sf) < 0)
		return -errno;
	/* size: what the environment can use (used + available), not the
	 * filesystem's blocks (ext4 keeps a pool back from f_bavail). */
	*ret_used = (int64_t)(sf.f_blocks - sf.f_bfree) * sf.f_bsize;
	*ret_avail = (int64_t)sf.f_bavail * sf.f_bsize;
	*ret_size = *ret_used + *ret_avail;
	return 0;
}
