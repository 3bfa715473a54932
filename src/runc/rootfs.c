/* The container's root, in its new mount namespace (the container process,
 * before pivot_root): the spec's mounts in order, default devices, the
 * createContainer hooks, pivot_root, masked and read-only paths (the spec's,
 * plus sbx's own unless the mask wall is off), read-only root, hostname,
 * sysctl. Targets inside the rootfs are resolved with openat2
 * RESOLVE_IN_ROOT and mounted through /proc/self/fd, so a symlink in the
 * image cannot redirect a mount onto the host. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runc/runc.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/syscalls.h"

static int openat2_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	while (*path == '/')
		path++;
	if (!*path)
		path = ".";
	int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/* An O_PATH fd of path inside the root, created (directories on the way,
 * and the last component as a directory or an empty file) if missing. */
static int ensure_in_root(int rootfd, const char *path, bool dir, sbx_err **err)
{
	int fd = openat2_in_root(rootfd, path, O_PATH);
	if (fd >= 0)
		return fd;
	if (fd != -ENOENT)
		return err_errnum(err, -fd, "resolve '%s' in the root", path);
	_cleanup_free_ char *dup = strdup(path);
	if (!dup)
		return err_oom(err);
	_cleanup_close_ int cur = openat2_in_root(rootfd, "/", O_PATH | O_DIRECTORY);
	if (cur < 0)
		return err_errnum(err, -cur, "open the root");
	char *save = NULL;
	char *c = strtok_r(dup, "/", &save);
	while (c) {
		char *next = strtok_r(NULL, "/", &save);
		bool last = next == NULL;
		if (streq(c, ".."))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' has a '..' component", path);
		int nfd = -1;
		/* Resolve the component relative to the root each time (a
		 * symlink in the image resolves inside the root). */
		nfd = openat2_in_root(cur, c, O_PATH);
		if (nfd == -ENOENT) {
			if (!last || dir) {
				if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
					return err_errno(err, "mkdir '%s' (for '%s')", c, path);
			} else {
				int f = openat(cur, c, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
				if (f < 0 && errno != EEXIST)
					return err_errno(err, "create '%s'", path);
				safe_close(f);
			}
			nfd = openat2_in_root(cur, c, O_PATH);
		}
		if (nfd < 0)
			return err_errnum(err, -nfd, "resolve '%s'", path);
		safe_close(cur);
		cur = nfd;
		c = next;
	}
	return TAKE_FD(cur);
}

static void fdpath(char *buf, size_t n, int fd) { snprintf(buf, n, "/proc/self/fd/%d", fd); }

/* Flags the kernel locks on a mount (in a user namespace a remount must
 * keep them): read from the mount at path. */
static unsigned long locked_flags(const char *path)
{
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return 0;
	unsigned long f = 0;
	if (sv.f_flag & ST_NOSUID)
		f |= MS_NOSUID;
	if (sv.f_flag & ST_NODEV)
		f |= MS_NODEV;
	if (sv.f_flag & ST_NOEXEC)
		f |= MS_NOEXEC;
	if (sv.f_flag & ST_RDONLY)
		f |= MS_RDONLY;
	return f;
}

static int remount_bind(const char *target, unsigned long flags, sbx_err **err)
{
	unsigned long want = (flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME |
				       MS_RELATIME | MS_STRICTATIME));
	if (mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | want, NULL) == 0)
		return 0;
	if (errno == EPERM && mount(NULL, target, NULL, MS_BIND | MS_REMOUNT | want | locked_flags(target), NULL) == 0)
		return 0;
	return err_errno(err, "remount '%s'", target);
}

static bool is_dir_path(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* /sys/fs/cgroup for a spec "cgroup" mount: a tmpfs with the container's
 * own group of each hierarchy bound at its place (no cgroup namespace on v1;
 * on v2 a cgroup2 mount in the container's cgroup namespace). */
static int mount_cgroupfs(int rootfd, int target_fd, const oci_mount *m, const char *cgroup, sbx_err **err)
{
	char t[64];
	fdpath(t, sizeof(t), target_fd);
	/* A pure v2 host: cgroup2 itself (rooted at the container's group when
	 * it has a cgroup namespace, as engines ask on v2). */
	struct statfs sf;
	if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
		if (mount("cgroup2", t, "cgroup2", m->flags & ~(MS_BIND | MS_REC), NULL) < 0)
			return err_errno(err, "mount cgroup2 on '%s'", m->destination);
		return 0;
	}
	if (mount("tmpfs", t, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=755") < 0)
		return err_errno(err, "mount tmpfs on '%s'", m->destination);
	/* The fd names the covered directory: resolve the new tmpfs. */
	_cleanup_close_ int tfd = openat2_in_root(rootfd, m->destination, O_PATH | O_DIRECTORY);
	if (tfd < 0)
		return err_errnum(err, -tfd, "resolve '%s'", m->destination);
	fdpath(t, sizeof(t), tfd);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return err_errno(err, "open mountinfo");
	char *line = NULL;
	size_t cap = 0;
	while (getline(&line, &cap, f) > 0) {
		char root[512], mnt[512];
		char *sep = strstr(line, " - ");
		if (!sep || sscanf(line, "%*s %*s %*s %511s %511s", root, mnt) != 2 || !streq(root, "/") ||
		    !startswith(mnt, "/sys/fs/cgroup/"))
			continue;
		if (!startswith(sep + 3, "cgroup"))
			continue;
		const char *name = mnt + strlen("/sys/fs/cgroup/");
		if (strchr(name, '/'))
			continue;
		char src[4200], dst[600];
		snprintf(src, sizeof(src), "%s%s", mnt, cgroup);
		if (!is_dir_path(src))
			snprintf(src, sizeof(src), "%s", mnt);
		snprintf(dst, sizeof(dst), "%s/%s", t, name);
		if (mkdir(dst, 0755) < 0 && errno != EEXIST)
			continue;
		if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
			continue;
		(void)remount_bind(dst, MS_NOSUID | MS_NODEV | MS_NOEXEC | (m->flags & MS_RDONLY), NULL);
	}
	free(line);
	fclose(f);
	if (m->flags & MS_RDONLY)
		(void)remount_bind(t, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	return 0;
}

static int do_mount(int rootfd, const oci_mount *m, const char *cgroup, sbx_err **err)
{
	bool dir = true;
	if (m->bind) {
		struct stat st;
		if (stat(m->source, &st) < 0)
			return err_errno(err, "bind mount source '%s'", m->source);
		dir = S_ISDIR(st.st_mode);
	}
	_cleanup_close_ int fd = ensure_in_root(rootfd, m->destination, dir, err);
	if (fd < 0)
		return err_wrap(err, "mount '%s'", m->destination);
	char t[64];
	fdpath(t, sizeof(t), fd);
	if (m->bind) {
		if (mount(m->source, t, NULL, MS_BIND | (m->flags & MS_REC), NULL) < 0)
			return err_errno(err, "bind '%s' on '%s'", m->source, m->destination);
		/* Re-resolve: the fd names the covered inode, not the new mount. */
		_cleanup_close_ int nfd = openat2_in_root(rootfd, m->destination, O_PATH);
		if (nfd < 0)
			return err_errnum(err, -nfd, "resolve '%s'", m->destination);
		fdpath(t, sizeof(t), nfd);
		if ((m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT)) && remount_bind(t, m->flags, err) < 0)
			return err_wrap(err, "mount '%s'", m->destination);
		if (m->propagation && mount(NULL, t, NULL, m->propagation, NULL) < 0)
			return err_errno(err, "propagation of '%s'", m->destination);
		return 0;
	}
	if (streq(m->type, "cgroup"))
		return mount_cgroupfs(rootfd, fd, m, cgroup, err);
	unsigned long flags = m->flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
	const char *src = m->source ? m->source : m->type;
	if (mount(src, t, m->type, flags, m->data) < 0) {
		/* sysfs needs a network namespace of our own; without one,
		 * bind the host's read-only (as runc does). */
		if (streq(m->type, "sysfs") && (errno == EPERM || errno == EBUSY)) {
			if (mount("/sys", t, NULL, MS_BIND | MS_REC, NULL) < 0)
				return err_errno(err, "bind /sys on '%s'", m->destination);
			_cleanup_close_ int nfd = openat2_in_root(rootfd, m->destination, O_PATH);
			if (nfd >= 0) {
				fdpath(t, sizeof(t), nfd);
				(void)remount_bind(t, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
			}
			return 0;
		}
		/* mqueue in a user namespace without its own ipc namespace. */
		if (streq(m->type, "mqueue") && errno == EPERM)
			return 0;
		return err_errno(err, "mount %s on '%s'", m->type, m->destination);
	}
	if (m->propagation) {
		/* The fd names the covered directory (no mount point: EINVAL);
		 * the propagation is the new mount's. */
		_cleanup_close_ int nfd = openat2_in_root(rootfd, m->destination, O_PATH);
		if (nfd < 0)
			return err_errnum(err, -nfd, "resolve '%s'", m->destination);
		fdpath(t, sizeof(t), nfd);
		if (mount(NULL, t, NULL, m->propagation, NULL) < 0)
			return err_errno(err, "propagation of '%s'", m->destination);
	}
	return 0;
}

/* /dev when the spec mounts a tmpfs there: the default devices runc gives
 * every container (bound from the host's nodes, which works in a user
 * namespace too), the /dev/fd symlinks and ptmx. */
static int default_devices(int rootfd, sbx_err **err)
{
	static const char *const devs[] = {"null", "zero", "full", "random", "urandom", "tty"};
	for (size_t i = 0; i < ARRAY_SIZE(devs); i++) {
		char host[64], in[64];
		snprintf(host, sizeof(host), "/dev/%s", devs[i]);
		snprintf(in, sizeof(in), "/dev/%s", devs[i]);
		_cleanup_close_ int fd = openat2_in_root(rootfd, in, O_PATH);
		if (fd >= 0)
			continue; /* a bind from the spec already */
		fd = ensure_in_root(rootfd, in, false, err);
		if (fd < 0)
			return err_wrap(err, "default device");
		char t[64];
		fdpath(t, sizeof(t), fd);
		if (mount(host, t, NULL, MS_BIND, NULL) < 0)
			return err_errno(err, "bind %s", host);
	}
	static const struct {
		const char *link, *to;
	} links[] = {{"fd", "/proc/self/fd"},		{"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"},
		     {"stderr", "/proc/self/fd/2"},	{"ptmx", "pts/ptmx"},	      {"core", "/proc/kcore"}};
	_cleanup_close_ int devfd = openat2_in_root(rootfd, "/dev", O_PATH | O_DIRECTORY);
	if (devfd < 0)
		return err_errnum(err, -devfd, "open /dev");
	for (size_t i = 0; i < ARRAY_SIZE(links); i++)
		if (symlinkat(links[i].to, devfd, links[i].link) < 0 && errno != EEXIST)
			return err_errno(err, "symlink /dev/%s", links[i].link);
	return 0;
}

/* linux.devices: mknod where we may (root without a user namespace), else a
 * bind of the host's node with the same numbers (in a user namespace mknod
 * of a device is refused), then mode and owner. */
static int make_devices(int rootfd, const oci_spec *s, sbx_err **err)
{
	for (size_t i = 0; i < s->n_devices; i++) {
		const oci_device *d = &s->devices[i];
		mode_t type = d->type == 'b' ? S_IFBLK : d->type == 'p' ? S_IFIFO : S_IFCHR;
		dev_t dev = makedev((unsigned)d->major, (unsigned)d->minor);
		_cleanup_free_ char *parent = strdup(d->path);
		if (!parent)
			return err_oom(err);
		char *slash = strrchr(parent, '/');
		const char *name = slash + 1;
		*slash = 0;
		if (!*name || streq(name, "..") || streq(name, "."))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "device path '%s'", d->path);
		_cleanup_close_ int pfd = ensure_in_root(rootfd, *parent ? parent : "/", true, err);
		if (pfd < 0)
			return err_wrap(err, "device '%s'", d->path);
		/* mknodat needs a real directory fd, not O_PATH. */
		char pp[64];
		fdpath(pp, sizeof(pp), pfd);
		_cleanup_close_ int dfd = open(pp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			return err_errno(err, "open the directory of '%s'", d->path);
		/* Already there with these numbers (a default device bound above,
		 * or a bind from the spec): nothing to do. */
		struct stat cur;
		if (fstatat(dfd, name, &cur, AT_SYMLINK_NOFOLLOW) == 0 && (cur.st_mode & S_IFMT) == type &&
		    cur.st_rdev == dev)
			continue;
		(void)unlinkat(dfd, name, 0);
		mode_t perm = d->has_mode ? (d->mode & 07777) : 0666;
		if (mknodat(dfd, name, type | perm, dev) < 0) {
			if (errno != EPERM || type == S_IFIFO)
				return err_errno(err, "mknod '%s'", d->path);
			/* Find a host node with these numbers to bind. */
			char host[4200] = "";
			struct stat st;
			if (stat(d->path, &st) == 0 && (st.st_mode & S_IFMT) == type && st.st_rdev == dev)
				snprintf(host, sizeof(host), "%s", d->path);
			if (!*host)
				return err_set(err, SBX_E_UNAVAILABLE, EPERM,
					       "device '%s': mknod not permitted and no host node %u:%u at that path",
					       d->path, (unsigned)d->major, (unsigned)d->minor);
			int f = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
			if (f < 0)
				return err_errno(err, "create '%s'", d->path);
			close(f);
			_cleanup_close_ int tfd = openat2_in_root(rootfd, d->path, O_PATH);
			char t[64];
			fdpath(t, sizeof(t), tfd);
			if (tfd < 0 || mount(host, t, NULL, MS_BIND, NULL) < 0)
				return err_errno(err, "bind device '%s'", d->path);
			continue;
		}
		if (fchmodat(dfd, name, perm, 0) < 0)
			return err_errno(err, "chmod '%s'", d->path);
		if ((d->has_uid || d->has_gid) &&
		    fchownat(dfd, name, d->has_uid ? d->uid : (uid_t)-1, d->has_gid ? d->gid : (gid_t)-1,
			     AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(err, "chown '%s'", d->path);
	}
	return 0;
}

/* sbx's own masks, added to the spec's unless the mask wall is off: what
 * Docker masks by default, so that a spec with an empty list (ctr's
 * `--privileged`-less defaults differ between engines) still hides them. */
static const char *const sbx_masked[] = {
    "/proc/acpi",	 "/proc/asound",     "/proc/kcore",	 "/proc/keys",	     "/proc/latency_stats",
    "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",	     "/sys/firmware",
    "/proc/sysrq-trigger", "/sys/kernel/debug", "/sys/kernel/security", "/sys/devices/virtual/powercap",
};
static const char *const sbx_readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys"};

static int mask_path(const char *p, sbx_err **err)
{
	struct stat st;
	if (lstat(p, &st) < 0)
		return 0; /* nothing to mask */
	if (S_ISDIR(st.st_mode)) {
		if (mount("tmpfs", p, "tmpfs", MS_RDONLY, "size=0") < 0 && errno != ENOENT)
			return err_errno(err, "mask '%s'", p);
		return 0;
	}
	if (mount("/dev/null", p, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
		return err_errno(err, "mask '%s'", p);
	return 0;
}

static int readonly_path(const char *p, sbx_err **err)
{
	if (access(p, F_OK) < 0)
		return 0;
	if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0)
		return err_errno(err, "read-only '%s'", p);
	return remount_bind(p, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, err);
}

static bool has_new_ns(const oci_spec *s, int type)
{
	for (size_t i = 0; i < s->n_namespaces; i++)
		if (s->namespaces[i].type == type)
			return !s->namespaces[i].path;
	return false;
}

int runc_rootfs_setup(const runc_rootfs_ctx *c, sbx_err **err)
{
	const oci_spec *s = c->spec;
	/* 1. Nothing we mount propagates back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return err_errno(err, "make / a slave mount");
	/* 2. The rootfs as a mount of its own (pivot_root needs one). */
	if (mount(c->rootfs, c->rootfs, NULL, MS_BIND | MS_REC, NULL) < 0)
		return err_errno(err, "bind the rootfs '%s'", c->rootfs);
	_cleanup_close_ int rootfd = open(c->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return err_errno(err, "open the rootfs '%s'", c->rootfs);
	/* 3. The spec's mounts, in order. */
	bool dev_tmpfs = false;
	for (size_t i = 0; i < s->n_mounts; i++) {
		const oci_mount *m = &s->mounts[i];
		if (do_mount(rootfd, m, c->cgroup, err) < 0)
			return -1;
		if (streq(m->destination, "/dev") && !m->bind)
			dev_tmpfs = true;
	}
	if (dev_tmpfs && default_devices(rootfd, err) < 0)
		return -1;
	if (make_devices(rootfd, s, err) < 0)
		return -1;
	/* 4. createContainer hooks: in the container's mount namespace, before
	 *    pivot_root (the spec's order), host paths still visible. */
	if (runc_hooks_run(s->hooks[OCI_HOOK_CREATE_CONTAINER], s->n_hooks[OCI_HOOK_CREATE_CONTAINER],
			   "createContainer", c->state_json, err) < 0)
		return -1;
	/* 5. pivot_root into the rootfs and drop the old root. */
	if (fchdir(rootfd) < 0)
		return err_errno(err, "chdir into the rootfs");
	if (c->no_pivot) {
		if (mount(".", "/", NULL, MS_MOVE, NULL) < 0 || chroot(".") < 0)
			return err_errno(err, "move the rootfs to / (--no-pivot)");
	} else {
		/* The old root is stacked on the new one at "/"; mount(2) resolves
		 * "." to the mount of the cwd, so the cwd must be the old root's
		 * (from the new root, MS_REC | MS_SLAVE would flatten every
		 * propagation the spec asked for, rshared and rprivate alike). */
		_cleanup_close_ int oldfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (oldfd < 0)
			return err_errno(err, "open the old root");
		if (sys_pivot_root(".", ".") < 0)
			return err_errno(err, "pivot_root");
		if (fchdir(oldfd) < 0 || mount(NULL, ".", NULL, MS_REC | MS_SLAVE, NULL) < 0 ||
		    umount2(".", MNT_DETACH) < 0)
			return err_errno(err, "detach the old root");
	}
	if (chdir("/") < 0)
		return err_errno(err, "chdir /");
	/* 6. sysctl (before / goes read-only; /proc/sys may be read-only by
	 *    now, so write through a fresh fd of the proc mount). */
	if (s->sysctl) {
		const char *k;
		json_t *v;
		json_object_foreach (s->sysctl, k, v) {
			if (!json_is_string(v))
				continue;
			char p[512];
			snprintf(p, sizeof(p), "/proc/sys/%s", k);
			for (char *q = p + 10; *q; q++)
				if (*q == '.')
					*q = '/';
			if (strstr(p, ".."))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "sysctl '%s'", k);
			if (fs_write_string(p, json_string_value(v)) < 0)
				return err_errno(err, "sysctl %s=%s", k, json_string_value(v));
		}
	}
	/* 7. Masked and read-only paths: the spec's, then sbx's own. */
	for (size_t i = 0; s->masked_paths[i]; i++)
		if (mask_path(s->masked_paths[i], err) < 0)
			return -1;
	for (size_t i = 0; s->readonly_paths[i]; i++)
		if (readonly_path(s->readonly_paths[i], err) < 0)
			return -1;
	if (c->walls & RUNC_WALL_MASK) {
		for (size_t i = 0; i < ARRAY_SIZE(sbx_masked); i++)
			if (!strv_contains(s->masked_paths, sbx_masked[i]) && mask_path(sbx_masked[i], err) < 0)
				return -1;
		for (size_t i = 0; i < ARRAY_SIZE(sbx_readonly); i++)
			if (!strv_contains(s->readonly_paths, sbx_readonly[i]) && readonly_path(sbx_readonly[i], err) < 0)
				return -1;
	}
	/* 8. Read-only root. */
	if (s->root_readonly && remount_bind("/", MS_RDONLY, err) < 0)
		return err_wrap(err, "read-only root");
	/* 9. Hostname, in a UTS namespace of its own only. */
	if (s->hostname && has_new_ns(s, CLONE_NEWUTS) && sethostname(s->hostname, strlen(s->hostname)) < 0)
		return err_errno(err, "sethostname '%s'", s->hostname);
	return 0;
}
