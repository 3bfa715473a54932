/* POSIX ACLs as layers carry them: the xattrs system.posix_acl_access and
 * system.posix_acl_default, in the kernel's binary xattr format (what
 * getxattr returns and setxattr takes; OCI layers hold the same bytes as
 * PAX SCHILY.xattr.system.posix_acl_* records):
 *   le32 version (2), then entries of { le16 tag, le16 perm, le32 id }
 * tags USER_OBJ 0x01, USER 0x02, GROUP_OBJ 0x04, GROUP 0x08, MASK 0x10,
 * OTHER 0x20; perm within rwx (7); id meaningful for USER and GROUP only.
 *
 * The ids of named entries are ids of the environment, shifted like file
 * owners (tar.h store_idmap): a tar holds k, the disk base + k. The kernel
 * translates these xattrs across user namespaces and idmapped mounts on get
 * and set, so the values read on the host side of an environment's upper
 * directory are host ids (base + k) and those inside it are k.
 *
 * Pure: no I/O. Everything here is hostile input (an imported image). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/tar.h"

#define STORE_ACL_ACCESS "system.posix_acl_access"
#define STORE_ACL_DEFAULT "system.posix_acl_default"
#define STORE_ACL_VERSION 2u
#define STORE_ACL_UNDEFINED_ID 0xffffffffu

/* True for the two ACL xattr names. */
bool store_acl_xattr(const char *name);

typedef enum store_acl_dir {
	STORE_ACL_FROM_DISK, /* named id base+k -> k; outside [base, base+count) is -ERANGE */
	STORE_ACL_TO_DISK,   /* named id k -> base+k; k >= count is -ERANGE */
} store_acl_dir;

typedef struct store_acl_error {
	const char *why; /* -EINVAL: what is malformed (a static string) */
	uint32_t id;	 /* -ERANGE: the id out of range */
	bool group;	 /* -ERANGE: it names a group (else a user) */
} store_acl_error;

/* Checks that value (len bytes) is an ACL the kernel accepts (version 2,
 * whole entries, at least one, known tags in the order USER_OBJ, USER...,
 * GROUP_OBJ, GROUP..., MASK, OTHER with exactly one of each *_OBJ and
 * OTHER, a MASK when a named entry is present, perms within rwx) and
 * rewrites it in place: named ids shifted by ids in direction dir, the ids
 * of unnamed entries set to STORE_ACL_UNDEFINED_ID (as the kernel returns
 * them), so the result is the canonical form a later getxattr gives back.
 * Returns 0; -EINVAL (malformed: e->why) or -ERANGE (e->id, e->group),
 * value then partly rewritten. e may be NULL. */
int store_acl_shift(uint8_t *value, size_t len, const store_idmap *ids, store_acl_dir dir,
		    store_acl_error *e);
