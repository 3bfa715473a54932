/* Where the tar reader's entries land and what they get (tarr.c): directories
 * opened below the root one component at a time, room made for an entry,
 * owner, mode, xattrs and mtime applied. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "store/acl.h"
#include "store/tarr_internal.h"
#include "store/xattr.h"
#include "util/fd.h"

/* ---- directories ----------------------------------------------------------- */

/* Opens directory `path` ("" = root) below the root, one component at a time
 * without following symlinks; creates missing components when create. The
 * returned fd belongs to the cache (do not close). */
int tarr_open_dir(reader *r, const char *path, bool create, int *ret_fd, sbx_err **err)
{
	if (r->cache_path && streq(r->cache_path, path)) {
		*ret_fd = r->cache_fd;
		return 0;
	}
	_cleanup_close_ int cur = fcntl(r->root, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return err_errno(err, "tar: dup");
	_cleanup_free_ char *copy = strdup(path);
	if (!copy)
		return err_errnum(err, ENOMEM, "tar");
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int fd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
				return err_errno(err, "tar entry '%s': create parent '%s'", r->disp, c);
			fd = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 && r->o.chown && fchown(fd, r->o.ids.uid_base, r->o.ids.gid_base) < 0) {
				safe_close(fd);
				return err_errno(err, "tar entry '%s': chown parent '%s'", r->disp, c);
			}
		}
		if (fd < 0) {
			if (errno == ELOOP || errno == ENOTDIR)
				return FAIL(
				    SBX_E_INVALID_ARGUMENT, errno,
				    "tar entry '%s': parent component '%s' is not a directory (symlinks "
				    "are never followed)",
				    r->disp, c);
			return err_errno(err, "tar entry '%s': open parent '%s'", r->disp, c);
		}
		safe_close(cur);
		cur = fd;
	}
	char *p = strdup(path);
	if (!p)
		return err_errnum(err, ENOMEM, "tar");
	free(r->cache_path);
	safe_close(r->cache_fd);
	r->cache_path = p;
	r->cache_fd = TAKE_FD(cur);
	*ret_fd = r->cache_fd;
	return 0;
}

/* Splits a clean path into a malloc'd parent and a pointer to its last name. */
int tarr_split(const char *path, char **ret_parent, const char **ret_name)
{
	const char *s = strrchr(path, '/');
	*ret_parent = s ? strndup(path, (size_t)(s - path)) : strdup("");
	*ret_name = s ? s + 1 : path;
	return *ret_parent ? 0 : -ENOMEM;
}

/* Makes room for a new entry `name`: a non-directory there is removed (a later
 * entry replaces an earlier one); a directory stays only if the new entry is
 * one. Returns 1 if a directory is already there, 0 otherwise. */
int tarr_make_room(reader *r, int pfd, const char *name, bool is_dir, sbx_err **err)
{
	struct stat st;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_errno(err, "tar entry '%s': stat", r->disp);
	}
	if (S_ISDIR(st.st_mode)) {
		if (is_dir)
			return 1;
		return FAIL(SBX_E_CONFLICT, EEXIST, "tar entry '%s': would replace a directory", r->disp);
	}
	if (unlinkat(pfd, name, 0) < 0)
		return err_errno(err, "tar entry '%s': replace", r->disp);
	return 0;
}

/* ---- metadata -------------------------------------------------------------- */

int tarr_check_xattrs(reader *r, char type, sbx_err **err)
{
	for (size_t i = 0; i < r->pd.n_xa; i++) {
		xattr_kv *kv = &r->pd.xa[i];
		const char *k = kv->name;
		if (startswith(k, "user.overlay.") || startswith(k, "trusted.overlay."))
			return BAD("tar entry '%s': overlay xattr '%s' is not accepted from an archive",
				   r->disp, k);
		if (!store_acl_xattr(k))
			continue;
		/* ACLs name ids: kept where ids mean something (layers, imports), each
		 * named id shifted as owners are; symlinks and hard links have none
		 * of their own, only a directory has a default one. */
		if (!r->o.acls || type == '2' || type == '1') {
			kv->drop = true;
			continue;
		}
		if (streq(k, STORE_ACL_DEFAULT) && type != '5')
			return BAD("tar entry '%s': a default ACL on a non-directory", r->disp);
		store_acl_error ae;
		int q = store_acl_shift((uint8_t *)kv->value, kv->len, &r->o.ids, STORE_ACL_TO_DISK, &ae);
		if (q == -EINVAL)
			return BAD("tar entry '%s': malformed %s (%s)", r->disp, k, ae.why);
		if (q < 0 && r->o.chown)
			return FAIL(SBX_E_INVALID_ARGUMENT, ERANGE,
				    "tar entry '%s': %s names %s %u, outside the id range [0, %u)", r->disp,
				    k, ae.group ? "gid" : "uid", ae.id, r->o.ids.count);
		if (q < 0)
			kv->drop = true; /* not chowning: ownership collapses to the extractor too */
	}
	return 0;
}

/* File capabilities are privilege, as setid bits are: kept only from a
 * trusted archive (keep_setid). A v2 capability is valid in every namespace,
 * so one from an environment's tar (`sbx cp` out, written by the host's root)
 * would give any host user its capabilities. */
bool tarr_xattr_kept(const reader *r, const xattr_kv *kv)
{
	if (streq(kv->name, "security.capability"))
		return r->o.keep_setid;
	if (store_acl_xattr(kv->name))
		return r->o.acls && !kv->drop;
	return store_xattr_kept(kv->name); /* user.*, overlay's own aside */
}

/* Applies xattrs through fd, or to name in pfd (through /proc) when fd < 0;
 * ACLs only with acls (a directory's come last, with its mode: finish()). */
static int set_xattrs(reader *r, int fd, int pfd, const char *name, bool acls, sbx_err **err)
{
	char proc[64 + NAME_MAX];
	if (fd < 0)
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", pfd, name);
	for (size_t i = 0; i < r->pd.n_xa; i++) {
		xattr_kv *kv = &r->pd.xa[i];
		if (!tarr_xattr_kept(r, kv) || (!acls && store_acl_xattr(kv->name)))
			continue;
		int q = fd >= 0 ? fsetxattr(fd, kv->name, kv->value, kv->len, 0)
				: lsetxattr(proc, kv->name, kv->value, kv->len, 0);
		if (q < 0)
			return err_errno(err, "tar entry '%s': set xattr '%s'", r->disp, kv->name);
	}
	return 0;
}

static int owner(reader *r, const meta *m, uid_t *u, gid_t *g, sbx_err **err)
{
	if (m->uid >= r->o.ids.count || m->gid >= r->o.ids.count)
		return FAIL(SBX_E_INVALID_ARGUMENT, ERANGE,
			    "tar entry '%s': owner %" PRIu64 ":%" PRIu64 " is outside the id range [0, %u)",
			    r->disp, m->uid, m->gid, r->o.ids.count);
	*u = (uid_t)(r->o.ids.uid_base + m->uid);
	*g = (gid_t)(r->o.ids.gid_base + m->gid);
	return 0;
}

uint32_t tarr_final_mode(reader *r, uint32_t mode)
{
	mode &= 07777;
	if (!r->o.keep_setid)
		mode &= ~(uint32_t)(S_ISUID | S_ISGID);
	return mode;
}

/* Owner, mode, xattrs, mtime, in that order (chown clears setid bits and
 * file capabilities, so those come after it). */
int tarr_apply_meta_fd(reader *r, int fd, const meta *m, bool set_mode, sbx_err **err)
{
	if (r->o.chown) {
		uid_t u = 0;
		gid_t g = 0;
		int q = owner(r, m, &u, &g, err);
		if (q < 0)
			return q;
		if (fchown(fd, u, g) < 0)
			return err_errno(err, "tar entry '%s': chown", r->disp);
	}
	/* xattrs before the mode: user.* needs write permission, which a
	 * read-only file denies to an unprivileged extractor (rootless). */
	int q = set_xattrs(r, fd, -1, NULL, set_mode, err);
	if (q < 0)
		return q;
	if (set_mode && fchmod(fd, tarr_final_mode(r, m->mode)) < 0)
		return err_errno(err, "tar entry '%s': chmod", r->disp);
	return 0;
}

int tarr_apply_meta_at(reader *r, int pfd, const char *name, const meta *m, bool set_mode, sbx_err **err)
{
	if (r->o.chown) {
		uid_t u = 0;
		gid_t g = 0;
		int q = owner(r, m, &u, &g, err);
		if (q < 0)
			return q;
		if (fchownat(pfd, name, u, g, AT_SYMLINK_NOFOLLOW) < 0)
			return err_errno(err, "tar entry '%s': chown", r->disp);
	}
	/* Only called on entries just created here (fifo, device): no symlink. */
	if (set_mode && fchmodat(pfd, name, tarr_final_mode(r, m->mode), 0) < 0)
		return err_errno(err, "tar entry '%s': chmod", r->disp);
	int q = set_xattrs(r, -1, pfd, name, true, err);
	if (q < 0)
		return q;
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, m->mtime};
	if (utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return err_errno(err, "tar entry '%s': set mtime", r->disp);
	return 0;
}
