/* The xattrs a layer keeps (xattr.h): the one filter, reading, the layer's
 * form, comparison. */
#include "store/xattr.h"

#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "util/macro.h"

bool store_xattr_kept(const char *name)
{
	return (startswith(name, "user.") && !startswith(name, "user.overlay.")) ||
	       streq(name, "security.capability") || store_acl_xattr(name);
}

void store_xattrs_clear(store_xattrs *x)
{
	for (size_t i = 0; i < x->n; i++) {
		free(x->v[i].name);
		free(x->v[i].value);
	}
	free(x->v);
	x->v = NULL;
	x->n = 0;
}

static int cmp_xattr(const void *a, const void *b)
{
	return strcmp(((const store_xattr *)a)->name, ((const store_xattr *)b)->name);
}

int store_xattrs_read(int fd, int dfd, const char *name, store_xattrs *ret)
{
	char proc[64 + NAME_MAX];
	if (fd < 0)
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d/%s", dfd, name);
	/* on the heap: the walks that call this may run on small thread stacks */
	_cleanup_free_ char *list = malloc(STORE_XATTR_LIST_MAX);
	if (!list)
		return -ENOMEM;
	ssize_t n = fd >= 0 ? flistxattr(fd, list, STORE_XATTR_LIST_MAX)
			    : llistxattr(proc, list, STORE_XATTR_LIST_MAX);
	if (n < 0) {
		if (errno != ENOTSUP)
			return -errno;
		*ret = (store_xattrs){0};
		return 0;
	}
	store_xattrs x _cleanup_(store_xattrs_clear) = {0};
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(list + off) + 1) {
		const char *k = list + off;
		if (!store_xattr_kept(k))
			continue;
		ssize_t vl = fd >= 0 ? fgetxattr(fd, k, NULL, 0) : lgetxattr(proc, k, NULL, 0);
		if (vl < 0) {
			if (errno == ENODATA) /* removed since the list */
				continue;
			return -errno;
		}
		store_xattr *nv = realloc(x.v, (x.n + 1) * sizeof(*x.v));
		if (!nv)
			return -ENOMEM;
		x.v = nv;
		_cleanup_free_ char *kn = strdup(k), *v = malloc((size_t)vl + 1);
		if (!kn || !v)
			return -ENOMEM;
		vl = fd >= 0 ? fgetxattr(fd, k, v, (size_t)vl) : lgetxattr(proc, k, v, (size_t)vl);
		if (vl < 0)
			return -errno; /* ERANGE: it grew since its size was read */
		v[vl] = 0;
		x.v[x.n++] = (store_xattr){TAKE_PTR(kn), TAKE_PTR(v), (size_t)vl};
	}
	if (x.n)
		qsort(x.v, x.n, sizeof(*x.v), cmp_xattr);
	*ret = x;
	x = (store_xattrs){0};
	return 0;
}

/* security.capability as read from the initial namespace is v3 (with the
 * namespace root's host uid); a layer carries the namespace-independent v2. */
static int cap_normalize(store_xattr *x, const store_idmap *ids)
{
	if (x->len != sizeof(struct vfs_ns_cap_data))
		return 0;
	struct vfs_ns_cap_data c;
	memcpy(&c, x->value, sizeof(c));
	if ((le32toh(c.magic_etc) & VFS_CAP_REVISION_MASK) != VFS_CAP_REVISION_3)
		return 0;
	if (le32toh(c.rootid) != ids->uid_base)
		return -ERANGE;
	c.magic_etc = htole32(VFS_CAP_REVISION_2 | (le32toh(c.magic_etc) & VFS_CAP_FLAGS_EFFECTIVE));
	memcpy(x->value, &c, sizeof(struct vfs_cap_data));
	x->len = sizeof(struct vfs_cap_data);
	return 0;
}

int store_xattr_normalize(store_xattr *x, const store_idmap *ids, store_acl_error *ae)
{
	if (streq(x->name, "security.capability"))
		return cap_normalize(x, ids);
	if (store_acl_xattr(x->name))
		return store_acl_shift((uint8_t *)x->value, x->len, ids, STORE_ACL_FROM_DISK, ae);
	return 0;
}

bool store_xattrs_equal(const store_xattrs *a, const store_xattrs *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!streq(a->v[i].name, b->v[i].name) || a->v[i].len != b->v[i].len ||
		    memcmp(a->v[i].value, b->v[i].value, a->v[i].len) != 0)
			return false;
	return true;
}
