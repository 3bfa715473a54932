/* The tar extractor: unpacks an untrusted tar stream (pax, ustar or GNU
 * long names) into a directory without ever writing outside it.
 *
 * Rules (docs/store.md "Hostile input"): every header checksum is verified;
 * absolute names and ".." components are refused; parent directories are
 * opened one component at a time with O_NOFOLLOW from the target directory,
 * so no symlink (from the archive or already there) is ever followed; hard
 * links must point at an earlier non-directory entry inside the target;
 * device nodes are refused (or skipped) unless the caller asks to create
 * them; setuid/setgid bits are dropped unless kept on request; declared sizes
 * count against max_bytes before any byte is read and entries against
 * max_entries; pax records are length-checked; overlay xattrs
 * (user.overlay.*, trusted.overlay.*) in the archive are refused, since an
 * overlay lower layer would honour them.
 *
 * On failure the target directory holds a partial tree: extract into a
 * fresh temporary directory and remove it on failure (store_layer does). */
#pragma once
#include "store/tar.h"

typedef enum store_tar_devices {
	STORE_TAR_DEV_REFUSE = 0, /* fail on a char/block device entry */
	STORE_TAR_DEV_SKIP,	  /* ignore them */
	STORE_TAR_DEV_CREATE,	  /* mknod (needs CAP_MKNOD) */
} store_tar_devices;

typedef struct store_tar_extract_opts {
	uint64_t max_bytes;   /* archive bytes incl. headers and declared data; 0 = 64 GiB */
	uint64_t max_entries; /* 0 = 16M */
	/* Turn OCI whiteouts into overlay ones: `.wh.<name>` -> char 0:0 device
	 * <name>, `.wh..wh..opq` -> user.overlay.opaque="y" on the directory; a
	 * char 0:0 entry is then accepted as a whiteout too. Off: such entries
	 * are ordinary files. */
	bool whiteouts;
	/* With whiteouts: an entry with the pax record SBX.literal=1 is a real
	 * file of its `.wh.` name, not a whiteout, and one with SBX.whiteout=1
	 * the whiteout of the name after `.wh.` (a `.wh.` name, or one of 252 to
	 * 255 bytes, whose tar name is then over NAME_MAX) (the store's own
	 * tars; an OCI import leaves it off: there the name is a whiteout). */
	bool literal_names;
	/* chown each entry to (uid + ids.uid_base, gid + ids.gid_base); ids
	 * outside [0, ids.count) fail. Off: the extracting user owns everything. */
	bool chown;
	store_idmap ids;
	bool keep_setid; /* keep S_ISUID/S_ISGID and security.capability (trusted archives only) */
	/* Restore POSIX ACLs (system.posix_acl_access/_default, acl.h), each named
	 * id k shifted to ids.*_base + k; a malformed one, or a default ACL on a
	 * non-directory, is refused; one naming an id >= ids.count is refused
	 * with chown, dropped without (ownership collapses to the extracting user
	 * too). A directory's ACLs are set last, with its mode, so that nothing
	 * extracted inherits a default ACL. Off: ACLs are ignored (`sbx cp`:
	 * their ids would name users of another namespace). */
	bool acls;
	store_tar_devices devices;
} store_tar_extract_opts;
#define STORE_TAR_EXTRACT_OPTS_INIT                                                                          \
	{                                                                                                    \
		.devices = STORE_TAR_DEV_REFUSE                                                              \
	}

/* Extracts the stream read through fn into dir_fd (not consumed). */
int store_tar_extract(int dir_fd, store_tar_read_fn fn, void *userdata, const store_tar_extract_opts *opts,
		      store_tar_stats *ret_stats, sbx_err **err);

/* Readers for store_tar_extract: an fd (userdata: int *), a memory buffer.
 * An fd of a regular file at offset 0 is read with its holes skipped
 * (SEEK_DATA): file data there is zeros, written as holes, never read. */
ssize_t store_tar_fd_read(void *userdata, void *buf, size_t len);
typedef struct store_tar_mem {
	const uint8_t *data;
	size_t len, off;
} store_tar_mem;
ssize_t store_tar_mem_read(void *userdata, void *buf, size_t len);

/* Pure: normalizes an archive path ("./a//b/" -> "a/b", "." -> "").
 * -EXDEV for ".." components or an absolute path, -ENAMETOOLONG for a
 * component over 255 bytes or a path over 4095, -EINVAL for an empty name. */
int store_tar_path_clean(const char *in, char **ret);
/* The same, but the last component (never followed by a '/') may be up to
 * NAME_MAX + last_extra bytes and the path up to 4095 + last_extra: the tar
 * name `.wh.<name>` of a whiteout marked SBX.whiteout=1, whose <name> may
 * have up to NAME_MAX bytes (the caller checks the prefix). */
int store_tar_path_clean_wh(const char *in, size_t last_extra, char **ret);
