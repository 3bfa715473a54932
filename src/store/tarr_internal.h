/* Module-private interface of the safe tar reader (tarr.h): its state and
 * the calls between the files it is split into. In reading order:
 *
 *   tarr.c       the reader: blocks, entries, extraction, store_tar_extract
 *   tarr_hdr.c   header fields: numbers, the checksum, pax records
 *   tarr_meta.c  directories below the root, room for an entry, metadata
 *
 * Calls go one way: tarr.c -> tarr_hdr.c, tarr_meta.c. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "store/tarr.h"
#include "util/err.h"

typedef struct xattr_kv {
	char *name;
	char *value;
	size_t len;
	bool drop; /* an ACL not restored (check_xattrs) */
} xattr_kv;

typedef struct pending {
	char *path, *linkpath;
	bool has_size, has_uid, has_gid, has_mtime;
	bool literal;	 /* SBX.literal=1: a real ".wh." name */
	bool wh_literal; /* SBX.whiteout=1: a whiteout of a ".wh." name */
	uint64_t size, uid, gid;
	int64_t mtime_sec;
	long mtime_nsec;
	xattr_kv *xa;
	size_t n_xa;
} pending;

typedef struct dirmeta {
	char *path;
	uint32_t mode;
	struct timespec mtime;
	xattr_kv *acl; /* its ACLs, set with the mode (a default ACL earlier would be inherited) */
	size_t n_acl;
} dirmeta;

typedef struct reader {
	store_tar_read_fn fn;
	void *ud;
	store_tar_extract_opts o;
	int root;
	uint64_t consumed, entries;
	char *cache_path; /* the parent directory opened last */
	int cache_fd;
	dirmeta *dirs;
	size_t n_dirs, cap_dirs;
	uint8_t *buf;
	pending pd;
	char *disp; /* the current entry's name, for messages */
	/* fn is store_tar_fd_read of a regular file: file data in its holes is
	 * skipped with SEEK_DATA, not read (layer.c's temporary tar). -1: no. */
	int hole_fd;
	uint64_t in_size, in_data_end; /* in_data_end: the current data segment's end */
} reader;

typedef struct meta {
	uint32_t mode;
	uint64_t uid, gid;
	struct timespec mtime;
} meta;

/* err_set on the sbx_err **err in scope. */
#define FAIL(code, errnum, ...) err_set(err, code, errnum, __VA_ARGS__)
#define BAD(...) err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, __VA_ARGS__)

/* ---- tarr_hdr.c ---- */

/* Numeric header field: octal (spaces/NULs around) or GNU base-256. */
int tarr_parse_num(const uint8_t *f, size_t w, uint64_t *ret);
/* Whether header block h's checksum holds (unsigned or signed sum). */
int tarr_header_checksum_ok(const uint8_t *h);
/* Applies the pax records b[0..n) to r->pd (the next entry's overrides). */
int tarr_pax_parse(reader *r, const char *b, size_t n, sbx_err **err);

/* ---- tarr_meta.c ---- */

/* Opens directory `path` ("" = root) below the root (see tarr_meta.c). */
int tarr_open_dir(reader *r, const char *path, bool create, int *ret_fd, sbx_err **err);
/* Splits a clean path into a malloc'd parent and a pointer to its last name. */
int tarr_split(const char *path, char **ret_parent, const char **ret_name);
/* Makes room for a new entry `name` in pfd (see tarr_meta.c). */
int tarr_make_room(reader *r, int pfd, const char *name, bool is_dir, sbx_err **err);
int tarr_check_xattrs(reader *r, char type, sbx_err **err);
bool tarr_xattr_kept(const reader *r, const xattr_kv *kv);
uint32_t tarr_final_mode(reader *r, uint32_t mode);
int tarr_apply_meta_fd(reader *r, int fd, const meta *m, bool set_mode, sbx_err **err);
int tarr_apply_meta_at(reader *r, int pfd, const char *name, const meta *m, bool set_mode, sbx_err **err);
