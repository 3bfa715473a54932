/* CDI device nodes and mounts, inside the environment's mount namespace
 * before pivot_root (runtime/devices.h). The host's tree is still visible
 * here, so every source is a host path; every target is resolved inside the
 * new root with RESOLVE_IN_ROOT, so a symlink in a layer cannot redirect it.
 *
 * Why bind mounts and not mknod: the kernel refuses mknod of a device in a
 * user namespace, whatever capabilities it holds there (and sbx runs all of
 * setup in one). A bind mount of the host's node is what runc does rootless,
 * and it carries the host inode as it is: type, major/minor, mode, owner
 * (devices.c checked them against the spec on the host). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cdi.h"
#include "runtime/devices.h"
#include "runtime/mount.h"
#include "util/fs.h"
#include "util/syscalls.h"

static bool has_opt(char *const *opts, const char *o)
{
	for (; opts && *opts; opts++)
		if (streq(*opts, o))
			return true;
	return false;
}

/* Clones host path `src` and attaches it at `dst` inside root_fd with the
 * given mount attributes. */
static int bind_in(int root_fd, const char *src, const char *dst, bool recursive, uint64_t attrs,
		   sbx_err **err)
{
	struct stat st;
	if (stat(src, &st) < 0)
		return err_errno(err, "'%s' on the host", src);
	_cleanup_close_ int tree = sys_open_tree(
	    AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		return err_errno(err, "clone '%s'", src);
	_cleanup_close_ int target = mount_mkdir_in_root(root_fd, dst, S_ISDIR(st.st_mode), err);
	if (target < 0)
		return -1;
	struct sbx_mount_attr attr = {.attr_set = attrs};
	if (attrs && sys_mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr) < 0)
		return err_errno(err, "set attributes of '%s'", dst);
	if (sys_move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return err_errno(err, "attach '%s' at '%s'", src, dst);
	return 0;
}

/* rw: /dev's tmpfs (mount.c: 256 inodes) made writable and large enough
 * for n more nodes and their directories (a GPU's "all" with its MIG caps
 * names hundreds); else read-only again. */
static int dev_writable(const char *root, bool rw, size_t n, sbx_err **err)
{
	char dev[4300], opts[64];
	snprintf(dev, sizeof(dev), "%s/dev", root);
	snprintf(opts, sizeof(opts), "nr_inodes=%zu", 256 + 2 * n);
	if (rw && mount(NULL, dev, NULL, MS_REMOUNT | MS_NOSUID | MS_NOEXEC, opts) < 0)
		return err_errno(err, "remount '%s' with %s", dev, opts);
	unsigned long fl = MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC | (rw ? 0 : MS_RDONLY);
	if (mount(NULL, dev, NULL, fl, NULL) < 0)
		return err_errno(err, "remount '%s' %s", dev, rw ? "read-write" : "read-only");
	return 0;
}

int cdi_mount_apply(const env_config *c, const char *root, sbx_err **err)
{
	const cdi_edits *e = c->cdi;
	if (!e)
		return 0;
	_cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0)
		return err_errno(err, "open '%s'", root);
	if (e->n_nodes && dev_writable(root, true, e->n_nodes, err) < 0)
		return -1;
	for (size_t i = 0; i < e->n_nodes; i++) {
		/* No nodev, no noexec change: the node must work. nosuid is
		 * harmless on a device. */
		if (bind_in(root_fd, e->nodes[i].host_path, e->nodes[i].path, false, MOUNT_ATTR_NOSUID, err) <
		    0) {
			(void)dev_writable(root, false, 0, NULL);
			return err_wrap(err, "device node '%s'", e->nodes[i].path);
		}
	}
	if (e->n_nodes && dev_writable(root, false, 0, err) < 0)
		return -1;
	for (size_t i = 0; i < e->n_mounts; i++) {
		const cdi_mount *m = &e->mounts[i];
		uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
		if (has_opt(m->options, "ro"))
			attrs |= MOUNT_ATTR_RDONLY;
		if (has_opt(m->options, "noexec"))
			attrs |= MOUNT_ATTR_NOEXEC;
		if (bind_in(root_fd, m->host_path, m->container_path, has_opt(m->options, "rbind"), attrs,
			    err) < 0)
			return err_wrap(err, "CDI mount '%s'", m->container_path);
	}
	return 0;
}

void cdi_gids_add(const env_config *c, user_ident *id)
{
	if (!c->cdi)
		return;
	for (size_t i = 0; i < c->cdi->n_gids && id->n_groups < USER_GROUPS_MAX; i++) {
		bool have = false;
		for (size_t k = 0; k < id->n_groups && !have; k++)
			have = id->groups[k] == (gid_t)c->cdi->gids[i];
		if (!have && c->cdi->gids[i] < c->id_count)
			id->groups[id->n_groups++] = (gid_t)c->cdi->gids[i];
	}
}
