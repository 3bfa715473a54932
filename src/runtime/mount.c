#include "runtime/startup_trace.h"
#include "runtime/mount.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/hide.h"
#include "runtime/quota.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

static int do_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *data,
		    sbx_err **err)
{
	if (mount(src, dst, type, flags, data) < 0)
		return err_errno(err, "mount %s on '%s'", type ? type : src ? src : "(remount)", dst);
	return 0;
}

int mount_make_private(sbx_err **err)
{
	return do_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, err);
}

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

int mount_rootfs(const char *stage, const char *lowerdir, int upper_fd, int work_fd, bool ephemeral,
		 sbx_err **err)
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
		o += (size_t)snprintf(opts + o, sizeof(opts) - o, ",upperdir=%s/upper,workdir=%s/work/_root",
				      stage, stage);
	} else {
		o += (size_t)snprintf(opts + o, sizeof(opts) - o,
				      ",upperdir=/proc/self/fd/%d,workdir=/proc/self/fd/%d", upper_fd,
				      work_fd);
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

int mount_overlay_dir(const char *root, const char *dir, const char *lowerdir, const char *upper,
		      const char *work, sbx_err **err)
{
	char target[4300], opts[4096];
	snprintf(target, sizeof(target), "%s/%s", root, dir);
	int n = snprintf(opts, sizeof(opts), "userxattr,lowerdir=%s,upperdir=%s,workdir=%s", lowerdir, upper,
			 work);
	if (n >= (int)sizeof(opts))
		return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "overlay options too long");
	return do_mount("overlay", target, "overlay", MS_NOSUID | MS_NODEV, opts, err);
}

int mount_dev(const char *root, bool rootless, sbx_err **err)
{
	char dev[4200], p[4300];
	if (ensure_dir(root, "dev", 0755, dev, sizeof(dev), err) < 0)
		return -1;
	if (do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=1m,nr_inodes=256", err) <
	    0)
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
	static const char *const links[][2] = {{"ptmx", "pts/ptmx"},	      {"fd", "/proc/self/fd"},
					       {"stdin", "/proc/self/fd/0"},  {"stdout", "/proc/self/fd/1"},
					       {"stderr", "/proc/self/fd/2"}, {"core", "/dev/null"}};
	for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
		snprintf(p, sizeof(p), "%s/%s", dev, links[i][0]);
		if (symlink(links[i][1], p) < 0)
			return err_errno(err, "symlink '%s'", p);
	}
	if (ensure_dir(dev, "pts", 0755, p, sizeof(p), err) < 0)
		return -1;
	if (do_mount("devpts", p, "devpts", MS_NOSUID | MS_NOEXEC,
		     rootless ? "newinstance,ptmxmode=0666,mode=0620"
			      : "newinstance,ptmxmode=0666,mode=0620,gid=5",
		     err) < 0)
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
		    do_mount(NULL, p, NULL,
			     MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL,
			     err) < 0)
			return -1;
	}
	static const char *const masked[] = {"kcore",	   "keys",	    "timer_list", "sched_debug",
					     "kallsyms",   "latency_stats", "acpi",	  "scsi",
					     "kpageflags", "kpagecount",    NULL};
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
			if (do_mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				     "size=0", err) < 0)
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
		_cleanup_close_ int parent =
		    fs_open_beneath(root_fd, *copy ? copy : "/", O_PATH, 0, FS_IN_ROOT);
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
	struct sbx_mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
						  (readonly ? MOUNT_ATTR_RDONLY : 0)};
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
	startup_mark("child: pivot_root done");
	if (umount2(".", MNT_DETACH) < 0)
		return err_errno(err, "detach old root");
	if (chdir("/") < 0)
		return err_errno(err, "chdir /");
	return 0;
}

/* A lower layer as a path for overlay's options: a detached tree from the
 * supervisor (idmapped) is attached under the staging tmpfs; a directory fd
 * of our own mount namespace is used in place through /proc/self/fd. */
static int lower_path(const char *stage, const char *prefix, size_t i, int fd, bool is_tree, char *out,
		      size_t n, sbx_err **err)
{
	if (!is_tree) {
		snprintf(out, n, "/proc/self/fd/%d", fd);
		return 0;
	}
	snprintf(out, n, "%s/%s%zu", stage, prefix, i);
	if (mkdir(out, 0755) < 0)
		return err_errno(err, "mkdir '%s'", out);
	return mount_attach(fd, out, err);
}

static int append(char *buf, size_t n, const char *part, sbx_err **err)
{
	size_t len = strlen(buf);
	int k = snprintf(buf + len, n - len, "%s%s", len ? ":" : "", part);
	if (k < 0 || (size_t)k >= n - len)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "too many layers for one overlay mount");
	return 0;
}

/* The host template: overlayfs refuses a lower layer that contains another
 * layer (the store, snapshot layers) or whose mount has locked submounts
 * (rootless), so "/" is never a layer. The root overlay gets the snapshot
 * layers over the mask; each system directory c->lowers[i] ("/usr", ...)
 * gets its own overlay: the layers' <dir> subtrees, mask/<dir>, the host
 * directory. Upper layout is what one overlay would give: upper/usr, ... */
static int mount_split_dirs(env_config *c, const char *stage, const char *root, const char *mask_dir,
			    const char *hide_dir, char layer_paths[][4400], char lower_paths[][4400],
			    sbx_err **err)
{
	char base[4300], up[4400], wk[4400], part[4500];
	static char lowerdir[16384];
	if (c->ephemeral)
		snprintf(base, sizeof(base), "%s", stage);
	else
		quota_layer_base(c->env_dir, c->disk_bytes, base, sizeof(base));
	for (size_t i = 0; i < c->n_lowers; i++) {
		const char *d = c->lowers[i] + 1;
		snprintf(up, sizeof(up), "%s/upper/%s", base, d);
		snprintf(wk, sizeof(wk), "%s/work/%s", base, d);
		/* Hidden as a whole (hide.c): no overlay, and no name in the upper. */
		if (hide_dir && hide_is_whiteout(hide_dir, d)) {
			(void)rmdir(up);
			continue;
		}
		if ((mkdir(up, 0755) < 0 && errno != EEXIST) || (mkdir(wk, 0700) < 0 && errno != EEXIST))
			return err_errno(err, "create '%s'", up);
		if (!c->rootless)
			(void)!chown(up, 0, 0); /* env root, not whoever created it */
		lowerdir[0] = 0;
		/* Hidden paths (hide.c): their whiteout layer on top of all. */
		struct stat hst;
		snprintf(part, sizeof(part), "%.4300s/%.150s", hide_dir ? hide_dir : "", d);
		if (hide_dir && lstat(part, &hst) == 0 && S_ISDIR(hst.st_mode) &&
		    append(lowerdir, sizeof(lowerdir), part, err) < 0)
			return -1;
		for (size_t k = 0; k < c->n_layers; k++) {
			struct stat st;
			snprintf(part, sizeof(part), "%.4300s/%.150s", layer_paths[k], d);
			if (lstat(part, &st) == 0 && S_ISDIR(st.st_mode) &&
			    append(lowerdir, sizeof(lowerdir), part, err) < 0)
				return -1;
		}
		snprintf(part, sizeof(part), "%s/%s", mask_dir, d);
		if (append(lowerdir, sizeof(lowerdir), part, err) < 0 ||
		    append(lowerdir, sizeof(lowerdir), lower_paths[i], err) < 0)
			return -1;
		if (mount_overlay_dir(root, d, lowerdir, up, wk, err) < 0)
			return -1;
	}
	return 0;
}

int mount_assemble_root(env_config *c, setup_fds *f, const char *stage, char *root, size_t root_size,
			json_t *warnings, sbx_err **err)
{
	char stage_opts[64] = "mode=0755";
	if (c->ephemeral && c->disk_bytes > 0) /* the writable layer lives here: its size is the quota */
		snprintf(stage_opts, sizeof(stage_opts), "mode=0755,size=%lld", (long long)c->disk_bytes);
	if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, stage_opts) < 0)
		return err_errno(err, "mount staging tmpfs on '%s'", stage);
	/* Lower layers as paths: the template's (trees from the supervisor, or
	 * opened here when rootless) and the snapshot layers. */
	static char lower_paths[FD_MSG_MAX_FDS][4400], layer_paths[FD_MSG_MAX_FDS][4400];
	for (size_t i = 0; i < c->n_lowers; i++) {
		bool tree = i < f->n_lowers && f->lowers[i] >= 0;
		if (!tree && (f->lowers[i] = open(c->lowers[i], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return err_errno(err, "open lower layer '%s'", c->lowers[i]);
		if (lower_path(stage, "l", i, f->lowers[i], tree, lower_paths[i], sizeof(lower_paths[i]),
			       err) < 0)
			return -1;
	}
	for (size_t i = 0; i < c->n_layers; i++) {
		bool tree = i < f->n_layers && f->layers[i] >= 0;
		if (!tree && (f->layers[i] = open(c->layers[i], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return err_errno(err, "open snapshot layer '%s'", c->layers[i]);
		if (lower_path(stage, "s", i, f->layers[i], tree, layer_paths[i], sizeof(layer_paths[i]),
			       err) < 0)
			return -1;
	}
	/* upper/ and work/ are opened here, in our mount namespace: overlay
	 * refuses layers whose mount belongs to another namespace. */
	if (!c->ephemeral) {
		char lbase[4250];
		quota_layer_base(c->env_dir, c->disk_bytes, lbase, sizeof(lbase));
		snprintf(root, root_size, "%s/upper", lbase);
		f->upper = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		snprintf(root, root_size, "%s/work%s", lbase, c->mask ? "/_root" : "");
		if (c->mask)
			(void)mkdir(root, 0700);
		f->work = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (f->upper < 0 || f->work < 0)
			return err_errno(err, "open '%s'", root);
	}
	/* The mask layer: the store's tree of it (mask.c; the supervisor's
	 * read-only idmapped clone, or opened here when rootless, where the
	 * tree is the caller's own and nothing is idmapped), else the list
	 * replayed into the staging tmpfs. */
	char mask_dir[4300];
	_cleanup_close_ int mask_fd = TAKE_FD(f->mask);
	if (c->mask && mask_fd < 0 && c->rootless && c->mask->tree)
		mask_fd = open(c->mask->tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->mask && mask_fd >= 0) {
		if (lower_path(stage, "mask", 0, mask_fd, !c->rootless, mask_dir, sizeof(mask_dir), err) < 0)
			return -1;
	} else if (c->mask) {
		snprintf(mask_dir, sizeof(mask_dir), "%s/mask", stage);
		_cleanup_close_ int mfd = -1;
		int q = mkdir(mask_dir, 0755) < 0 ? -errno : 0;
		if (q == 0 && (mfd = open(mask_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			q = -errno;
		if (q == 0)
			q = mask_replay(c->mask, mfd, !c->rootless);
		if (q < 0)
			return err_errnum(err, q, "build the mask layer in '%s'", mask_dir);
	}
	/* Host template: "/" is never a layer (see mount_split_dirs). The root
	 * overlay: snapshot layers over the mask (host) or the template dir. */
	bool split = c->mask != NULL;
	static char lowerdir[16384];
	lowerdir[0] = 0;
	for (size_t i = 0; i < c->n_layers; i++)
		if (append(lowerdir, sizeof(lowerdir), layer_paths[i], err) < 0)
			return -1;
	for (size_t i = 0; i < (split ? 1 : c->n_lowers); i++)
		if (append(lowerdir, sizeof(lowerdir), split ? mask_dir : lower_paths[i], err) < 0)
			return -1;
	log_debug("child: mask replayed");
	if (mount_rootfs(stage, lowerdir, f->upper, f->work, c->ephemeral, err) < 0)
		return -1;
	snprintf(root, root_size, "%s/root", stage);
	if (split && mount_split_dirs(c, stage, root, mask_dir, NULL, layer_paths, lower_paths, err) < 0)
		return -1;
	/* 5a. Hidden paths (hide.c): those in the layers become whiteouts in a
	 *     layer above all others, so the overlays are mounted again with it
	 *     (upper and work are untouched); the rest are covered below. */
	_cleanup_strv_free_ char **hide_later = NULL;
	/* Rootless, host root is not mapped: what it owns in the host template
	 * appears owned by nobody (mask.c mirrors the directories, so files can
	 * be created, replaced and removed). Say so once, at create. */
	if (c->rootless && c->mask && warnings)
		json_array_append_new(
		    warnings,
		    json_string("rootless: the host template's files owned by host root appear owned "
				"by nobody: the environment can create, remove and replace (write anew, "
				"rename over) files in /etc, /var and /opt, but not change one in place "
				"(`>>`, `sed` without -i); run sbx as root for that"));
	bool remount = false;
	char hide_dir[4300];
	snprintf(hide_dir, sizeof(hide_dir), "%s/hide", stage);
	if (c->hidden && hide_prepare(c, root, hide_dir, &remount, &hide_later, warnings, err) < 0)
		return -1;
	if (remount) {
		static char hidden_lowerdir[16384 + 4400];
		snprintf(hidden_lowerdir, sizeof(hidden_lowerdir), "%s:%s", hide_dir, lowerdir);
		if (umount2(root, MNT_DETACH) < 0)
			return err_errno(err, "unmount '%s'", root);
		if (mount_rootfs(stage, hidden_lowerdir, f->upper, f->work, c->ephemeral, err) < 0 ||
		    (split &&
		     mount_split_dirs(c, stage, root, mask_dir, hide_dir, layer_paths, lower_paths, err) < 0))
			return err_wrap(err, "hidden paths");
	}
	log_debug("child: rootfs mounted");
	if (mount_dev(root, c->rootless, err) < 0 || mount_proc(root, err) < 0 || mount_tmp(root, err) < 0)
		return -1;
	for (size_t i = 0; i < c->n_volumes; i++) {
		env_volume *v = &c->volumes[i];
		int t = i < f->n_volumes ? f->volumes[i] : -1;
		if (t < 0 && (t = mount_clone_tree(v->host, err)) < 0)
			return -1;
		struct stat st;
		bool is_dir = fstat(t, &st) < 0 || S_ISDIR(st.st_mode);
		if (mount_volume(root, t, v->path, v->readonly, is_dir, err) < 0)
			return err_wrap(err, "volume '%s'", v->host);
		safe_close(t);
	}
	/* 5b. File secrets on a tmpfs of their own (never the writable layer),
	 *     then hidden paths under the mounts above get empty covers. */
	if (secrets_mount(c, root, err) < 0 || hide_cover(root, stage, hide_later, err) < 0)
		return -1;
	return 0;
}
