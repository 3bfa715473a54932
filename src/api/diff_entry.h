/* `sbx diff`'s comparison of one path's entry on two sides: whether any
 * field a snapshot keeps differs (docs/store.md "Canonical tar"): type,
 * permission bits (not a symlink's), owner, a regular file's bytes, a
 * symlink's target, a device's number, and the kept xattrs (store/xattr.h:
 * user.* but overlay's own, security.capability, POSIX ACLs), compared in the
 * layer's form, so that the writable layer (host ids) and a stored layer
 * (ids from 0) compare as the snapshot would store them. Times are not kept
 * as a change (a file rewritten with the same bytes is the same), and the
 * hard-link structure is not a field of one entry: diff.c compares it.
 *
 * Every read goes beneath the entry's tree root (store/treewalk.h); an entry
 * that cannot be read (gone meanwhile: the environment is not frozen)
 * counts as different. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "store/tar.h"
#include "store/xattr.h"

typedef struct diff_entry {
	struct stat st;	    /* lstat of the entry */
	int root;	    /* its tree's root (an O_PATH directory); -1: synthetic (the
			     * host template's mask), with no xattrs and nothing to read */
	const char *target; /* a synthetic symlink's target */
	store_idmap ids;    /* on-disk owner base + k is k; count 0: ids as they are */
} diff_entry;

/* The fields, in the order they are compared (cheapest first). */
enum {
	DIFF_TYPE = 1u << 0,
	DIFF_MODE = 1u << 1,
	DIFF_OWNER = 1u << 2,
	DIFF_SIZE = 1u << 3,
	DIFF_RDEV = 1u << 4,
	DIFF_TARGET = 1u << 5,
	DIFF_XATTRS = 1u << 6,
	DIFF_CONTENT = 1u << 7,
};

/* An on-disk id as the environment's: id - base when within [base,
 * base+count), else as it is (count 0: always as it is). Pure. */
uint32_t diff_norm_id(uint32_t id, uint32_t base, uint32_t count);

/* The fields of the stat alone that differ between a and b (type, mode,
 * owner normalized by each side's ids, a regular file's size, a device's
 * number): a mask of DIFF_*, 0 when the same. Pure. */
unsigned diff_stat_compare(const diff_entry *a, const diff_entry *b);

/* The first field found to differ between a and b, the same path rel in
 * their trees (DIFF_*, stat fields first, the file's bytes last), or 0. */
unsigned diff_entry_compare(const diff_entry *a, const diff_entry *b, const char *rel);

/* The entry's kept xattrs in the layer's form (store_xattr_normalize with
 * e->ids; a value that does not normalize is kept as on disk, so it differs
 * from any that did). A synthetic entry has none. 0 or a negative errno. */
int diff_entry_xattrs(const diff_entry *e, const char *rel, store_xattrs *ret);

/* A symlink's target (malloc'd), or NULL. */
char *diff_entry_target(const diff_entry *e, const char *rel);

/* What the entry is, for api_env_diff_meta's lines (traces' meta_digest):
 * "<type> <mode> <uid>:<gid>" (the environment's ids), then a regular file's
 * " <size> <digest of every byte>", a device's " <major>:<minor>" or
 * " unreadable", a symlink's " -> <target>", and " xattrs <digest>" of a
 * file's or directory's user.* xattrs ("-" for other types). Times are left
 * out (they are the clock's, not the program's). malloc'd; NULL on ENOMEM.
 * Not for a synthetic entry. */
char *diff_entry_describe(const diff_entry *e, const char *rel);
