/* Incremental snapshots: the index of an environment's writable layer as
 * its last snapshot captured it, and delta layers (docs/store.md
 * "Incremental snapshots").
 *
 * The environment's writable layer (upper/) holds everything changed since
 * its base (the snapshot it was created or restored from). A full snapshot
 * stores all of it as one layer L over the base layers B. After a snapshot
 * S with layers B+C (C: the full layer and the deltas taken since), the next
 * one stores a delta D such that the stack B+C+D shows exactly what B+L'
 * (L' a full layer of the writable layer now) would show, and its manifest
 * is B+C+D with parent S.
 *
 * What changed is decided from lstat alone, against the index written at S
 * (envs/<id>/snapindex): one record per entry of upper/ (type, mode, owner,
 * size, mtime, ctime, inode, links, device, opaque flag). ctime changes on
 * every write, truncate, chmod, chown, xattr change, link and rename of an
 * inode and cannot be set from user space, and the inode number tells a
 * replaced entry from the old one: an entry whose record matches is the
 * entry captured at S. Three holes are closed:
 * - coarse timestamps: a change right after S could get the same ctime as
 *   one right before it. Since Linux 6.13 ext4, xfs, btrfs and tmpfs hand
 *   out a finer ctime once a ctime was read (multigrain timestamps), and we
 *   read every one; elsewhere a record whose ctime is not older than the
 *   clock tick (or second, without sub-second timestamps) at the end of the
 *   capture is "racy" and counts as changed next time (git's racy-clean rule).
 * - writes through a shared mapping only update ctime when a clean page is
 *   first written: every capture ends with syncfs() of the writable layer
 *   while frozen, so a later write faults and updates ctime.
 * - a crash can persist data without its ctime: the index records the boot
 *   id and is ignored after a reboot.
 *
 * Three passes, all while frozen: (1) a merge walk of upper/ against the
 * index decides what D gets, by lstat only (nothing is modified, so every
 * stat sees upper/ as it is); (2) hard-link groups are closed (an inode staged
 * through one path is staged through all, as a layer keeps the hard-link
 * structure) and ancestors added; (3) D is built as a tree in $SBX_ROOT/tmp
 * (upper/'s mount; with a disk quota, on the quota's disk), then stored with
 * store_layer_put_from_dir like any layer:
 * - a changed or new non-directory is hard-linked from upper/ (no copy; the
 *   canonical tar writer copies the bytes, the stored tree has its own
 *   inodes). Linking changes the inode's ctime, so linked entries are
 *   stat'ed again once the staging tree is gone (still frozen).
 * - whiteouts (char 0:0, created with mknod, which needs no privilege) for
 *   entries captured at S and gone now, and whiteouts of upper/ as they are.
 * - directories, with upper/'s owner, mode, mtime and xattrs, when new, when
 *   their metadata changed, or as ancestors of a staged entry. A directory
 *   that was and is opaque is staged without the opaque mark (its hiding is
 *   already below, in C); one that became opaque (or replaces a
 *   non-directory, or is new) is staged with all its contents and its own
 *   opaque flag, as a full layer has it.
 * Overlayfs rules guarantee the rest (an entry vanishes from upper/ without
 * a whiteout only if nothing below had it; a directory created where
 * something below exists is opaque); where the stack would have to show
 * something of B again that D cannot express, the snapshot is a full one:
 * a directory that stopped being opaque, an entry gone from upper/ or a
 * non-opaque directory over a former non-directory where a base lower
 * (conservatively: any base layer, the dir: template, or the host and its
 * mask for the host template) has that path, a staged inode with links
 * outside upper/, more than SNAP_DELTA_MAX_LAYERS layers, no valid
 * index (first snapshot, after a restore, another boot), an environment
 * that could not be frozen, SBX_SNAPSHOT_FULL=1, or any unexpected error
 * while staging. A full snapshot writes a new index too, so the next one
 * can be a delta. */
#include "store/delta.h"
#include "store/delta_stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "api/ctx.h"
#include "runtime/mask.h"
#include "store/digest.h"
#include "store/snapshot.h"
#include "store/storefs.h"
#include "store/tar.h"
#include "store/tarw.h"
#include "store/xattr.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"

/* 2: layers keep POSIX ACLs. An index of version 1 says "unchanged" of
 * entries whose ACLs its snapshot's layer left out: it is not used. */
#define SD_MAGIC "sbx-snapindex 2\n"
#define SD_MAGIC_V1 "sbx-snapindex 1\n"
#define SD_FILE "snapindex"
#define SD_LOCK "snapindex.lock"
#define SD_MAX_ENTRIES (16u << 20)
#define SD_MAX_DEPTH 256
#define SD_MAX_FILE ((size_t)2 << 30)
#define SD_NONE UINT32_MAX

enum { SD_OPAQUE = 1, SD_RACY = 2 };

/* One entry of upper/ (record 0 is upper/ itself), in depth-first order,
 * children sorted by name: a parent comes before its children. Stored as is
 * (host-local file, checked by size and digest). */
typedef struct sd_rec {
	uint64_t ino, size, nlink, rdev;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
	uint32_t mode, uid, gid;
	uint32_t parent;
	uint32_t name_off, name_len;
	uint32_t flags;
	uint32_t pad;
} sd_rec;

struct snapd_index {
	sd_rec *r;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	/* Loaded: the header, and each record's children (CSR). */
	json_t *hdr;
	uint32_t *kid_start, *kids;
	/* Captured: upper/ itself. */
	uint64_t up_dev, up_ino;
	int64_t up_btime_sec;
	uint32_t up_btime_nsec;
};

static void index_free(struct snapd_index *x)
{
	if (!x)
		return;
	free(x->r);
	free(x->names);
	json_decref(x->hdr);
	free(x->kid_start);
	free(x->kids);
	free(x);
}

static void index_freep(struct snapd_index **x)
{
	index_free(*x);
}

static const char *rec_name(const struct snapd_index *x, uint32_t i)
{
	return x->names + x->r[i].name_off;
}

/* ---- small helpers ---------------------------------------------------------- */

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool read_boot_id(char buf[64])
{
	_cleanup_close_ int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, 63);
	if (n <= 0)
		return false;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return buf[0] != 0;
}

static bool upper_identity(int ufd, struct snapd_index *x)
{
	struct statx sx;
	if (statx(ufd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_BTIME, &sx) < 0)
		return false;
	x->up_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	x->up_ino = sx.stx_ino;
	if (sx.stx_mask & STATX_BTIME) {
		x->up_btime_sec = sx.stx_btime.tv_sec;
		x->up_btime_nsec = sx.stx_btime.tv_nsec;
	}
	return true;
}

/* Filesystems whose ctime is multigrain (distinct after it was read) since
 * Linux 6.13. */
static bool fs_multigrain(int fd)
{
	struct utsname u;
	unsigned maj = 0, min = 0;
	if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &maj, &min) != 2 || maj < 6 || (maj == 6 && min < 13))
		return false;
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return false;
	switch ((unsigned long)sf.f_type) {
	case 0xEF53UL:	   /* ext4 */
	case 0x58465342UL: /* xfs */
	case 0x9123683EUL: /* btrfs */
	case 0x01021994UL: /* tmpfs */
		return true;
	default:
		return false;
	}
}

/* Layer lists: absent, null and [] are the same (no layers). */
static bool json_layers_eq(const json_t *a, const json_t *b)
{
	if (json_array_size(a) == 0 || json_array_size(b) == 0)
		return json_array_size(a) == json_array_size(b);
	return json_equal(a, b);
}

static bool json_str_eq(const json_t *a, const json_t *b)
{
	if (!a || json_is_null(a))
		return !b || json_is_null(b);
	return json_is_string(a) && json_is_string(b) && streq(json_string_value(a), json_string_value(b));
}

static char *env_file(sbx_ctx *ctx, const char *id, const char *name)
{
	_cleanup_free_ char *dir = ctx_env_dir(ctx, id);
	return dir ? fs_path_join(dir, name) : NULL;
}

/* ---- the index file --------------------------------------------------------- */

/* Loads the index of environment id and checks it belongs to the state st
 * and writable layer ufd. NULL on success, else why not (static text). */
static const char *index_load(sbx_ctx *ctx, const char *id, const json_t *st, int ufd,
			      struct snapd_index **ret)
{
	_cleanup_free_ char *path = env_file(ctx, id, SD_FILE), *buf = NULL;
	size_t len = 0;
	if (!path)
		return "out of memory";
	int r = fs_read_file(path, SD_MAX_FILE, &buf, &len);
	if (r == -ENOENT)
		return "no index of a previous snapshot (first snapshot since the environment was created or "
		       "restored)";
	if (r < 0)
		return "the index of the previous snapshot cannot be read";
	size_t ml = strlen(SD_MAGIC);
	if (len > ml && memcmp(buf, SD_MAGIC_V1, ml) == 0)
		return "the index of the previous snapshot is from an sbx whose layers left out POSIX ACLs";
	char *nl = len > ml && memcmp(buf, SD_MAGIC, ml) == 0 ? memchr(buf + ml, '\n', len - ml) : NULL;
	if (!nl)
		return "the index of the previous snapshot is corrupt";
	json_t *hdr = json_loadb(buf + ml, (size_t)(nl - (buf + ml)), 0, NULL);
	_cleanup_(index_freep) struct snapd_index *x = calloc(1, sizeof(*x));
	if (!x) {
		json_decref(hdr);
		return "out of memory";
	}
	x->hdr = hdr;
	const char *body = nl + 1;
	size_t blen = len - (size_t)(body - buf);
	int64_t n = json_int(hdr, "count", -1), nb = json_int(hdr, "names_bytes", -1);
	if (!hdr || json_int(hdr, "rec_size", 0) != (int64_t)sizeof(sd_rec) || n < 1 || n > SD_MAX_ENTRIES ||
	    nb < 0 || (uint64_t)n * sizeof(sd_rec) + (uint64_t)nb != blen || !json_str(hdr, "body"))
		return "the index of the previous snapshot is corrupt";
	char dg[STORE_DIGEST_SIZE];
	if (store_digest_buf(body, blen, dg, NULL) < 0 || !streq(dg, json_str(hdr, "body")))
		return "the index of the previous snapshot is corrupt (digest)";
	/* Whose and when. */
	char boot[64];
	if (!streq(json_str(hdr, "env") ?: "", id))
		return "the index belongs to another environment";
	if (!read_boot_id(boot) || !streq(json_str(hdr, "boot_id") ?: "", boot))
		return "the index was written before the host restarted";
	if (!json_str_eq(json_object_get(hdr, "base_snapshot"), json_object_get(st, "snapshot_id")) ||
	    !json_layers_eq(json_object_get(hdr, "base_layers"), json_object_get(st, "layers")))
		return "the environment was restored since the previous snapshot";
	struct snapd_index cur = {0};
	json_t *up = json_object_get(hdr, "upper");
	if (!upper_identity(ufd, &cur) || (uint64_t)json_int(up, "dev", -1) != cur.up_dev ||
	    (uint64_t)json_int(up, "ino", -1) != cur.up_ino ||
	    json_int(up, "btime_sec", -1) != cur.up_btime_sec ||
	    json_int(up, "btime_nsec", -1) != (int64_t)cur.up_btime_nsec)
		return "the writable layer was replaced since the previous snapshot";
	/* The previous snapshot and its layers must still be there (its
	 * manifest is content-addressed: the file name stands for its content,
	 * layers included, which the index recorded when it was written). */
	const char *sid = json_str(hdr, "snapshot_id");
	_cleanup_free_ char *mp = NULL;
	struct stat ms;
	if (!sid || !store_digest_valid(sid) ||
	    asprintf(&mp, "%s/" STORE_DIR_SNAPSHOTS "/%s.json", ctx->root, store_digest_hex(sid)) < 0 ||
	    stat(mp, &ms) < 0 || !S_ISREG(ms.st_mode))
		return "the previous snapshot is gone from the store";
	json_t *ls = json_object_get(hdr, "layers"), *l;
	size_t li;
	if (!json_is_array(ls) || json_array_size(ls) == 0)
		return "the index of the previous snapshot is corrupt (layers)";
	json_array_foreach(
	    ls, li,
	    l) if (!json_is_string(l) ||
		   !store_layer_exists(
		       ctx->root, json_string_value(
				      l))) return "a layer of the previous snapshot is gone from the store";
	/* Records. */
	x->n = x->cap = (size_t)n;
	x->names_len = x->names_cap = (size_t)nb;
	x->r = malloc(x->n * sizeof(sd_rec));
	x->names = malloc(x->names_len + 1);
	x->kid_start = calloc(x->n + 1, sizeof(uint32_t));
	x->kids = malloc(x->n * sizeof(uint32_t));
	if (!x->r || !x->names || !x->kid_start || !x->kids)
		return "out of memory";
	memcpy(x->r, body, x->n * sizeof(sd_rec));
	memcpy(x->names, body + x->n * sizeof(sd_rec), x->names_len);
	x->names[x->names_len] = 0;
	for (size_t i = 0; i < x->n; i++) {
		const sd_rec *e = &x->r[i];
		if ((uint64_t)e->name_off + e->name_len >= x->names_len ||
		    (i == 0 ? e->parent != 0 : e->parent >= i) || !S_ISDIR(x->r[e->parent].mode) ||
		    (i && e->name_len == 0) || memchr(x->names + e->name_off, 0, e->name_len) ||
		    x->names[e->name_off + e->name_len] != 0)
			return "the index of the previous snapshot is corrupt";
		if (i)
			x->kid_start[e->parent + 1]++;
	}
	for (size_t i = 0; i < x->n; i++)
		x->kid_start[i + 1] += x->kid_start[i];
	_cleanup_free_ uint32_t *fill = calloc(x->n, sizeof(uint32_t));
	if (!fill)
		return "out of memory";
	for (size_t i = 1; i < x->n; i++) {
		uint32_t p = x->r[i].parent;
		x->kids[x->kid_start[p] + fill[p]++] = (uint32_t)i;
	}
	/* Siblings must be in name order (the merge walk relies on it). */
	for (size_t i = 0; i < x->n; i++)
		for (uint32_t k = x->kid_start[i] + 1; k < x->kid_start[i + 1]; k++)
			if (strcmp(rec_name(x, x->kids[k - 1]), rec_name(x, x->kids[k])) >= 0)
				return "the index of the previous snapshot is corrupt (order)";
	*ret = TAKE_PTR(x);
	return NULL;
}

static int index_write(sbx_ctx *ctx, const char *id, const json_t *st, const struct snapd_index *x,
		       const char *snapshot_id, char *const *layers)
{
	_cleanup_free_ char *path = env_file(ctx, id, SD_FILE);
	if (!path)
		return -ENOMEM;
	size_t rl = x->n * sizeof(sd_rec), blen = rl + x->names_len;
	_cleanup_free_ char *body = malloc(blen ? blen : 1);
	char boot[64], dg[STORE_DIGEST_SIZE];
	if (!body || !read_boot_id(boot))
		return -ENOMEM;
	memcpy(body, x->r, rl);
	memcpy(body + rl, x->names, x->names_len);
	if (store_digest_buf(body, blen, dg, NULL) < 0)
		return -EIO;
	_cleanup_json_ json_t *hdr =
	    json_pack("{s:s,s:s,s:s,s:o,s:O,s:O,s:{s:I,s:I,s:I,s:I},s:I,s:I,s:I,s:s}", "env", id, "boot_id",
		      boot, "snapshot_id", snapshot_id, "layers", json_from_strv((const char *const *)layers),
		      "base_snapshot", json_object_get(st, "snapshot_id") ?: json_null(), "base_layers",
		      json_object_get(st, "layers") ?: json_null(), "upper", "dev", (json_int_t)x->up_dev,
		      "ino", (json_int_t)x->up_ino, "btime_sec", (json_int_t)x->up_btime_sec, "btime_nsec",
		      (json_int_t)x->up_btime_nsec, "count", (json_int_t)x->n, "names_bytes",
		      (json_int_t)x->names_len, "rec_size", (json_int_t)sizeof(sd_rec), "body", dg);
	if (!hdr)
		return -ENOMEM;
	_cleanup_free_ char *h = json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS);
	if (!h)
		return -ENOMEM;
	size_t ml = strlen(SD_MAGIC), hl = strlen(h), total = ml + hl + 1 + blen;
	_cleanup_free_ char *out = malloc(total);
	if (!out)
		return -ENOMEM;
	memcpy(out, SD_MAGIC, ml);
	memcpy(out + ml, h, hl);
	out[ml + hl] = '\n';
	memcpy(out + ml + hl + 1, body, blen);
	/* Not fsynced: after a crash the boot id no longer matches anyway. */
	return fs_write_atomic_flags(path, out, total, 0600, false);
}

/* ---- the walk ----------------------------------------------------------------- */

/* How a directory is walked: records only; compared with the old index by
 * name; everything in it staged. */
enum { M_NONE, M_CMP, M_ALL };
/* What the delta gets of a record. */
enum { A_NONE, A_LINK, A_WHITEOUT, A_DIR, A_DIR_OPAQUE };

/* A whiteout for an entry gone since the last snapshot: parent record, name. */
typedef struct gone {
	uint32_t parent;
	uint32_t name_off;
} gone;

typedef struct walk {
	sbx_ctx *ctx;
	const json_t *st;
	struct snapd_index *ni;	      /* being built */
	const struct snapd_index *oi; /* M_CMP only */
	int ufd;
	char *path; /* of the directory being walked, relative to upper/ ("" for the root) */
	size_t plen, pcap;
	uint8_t *act; /* per record of ni: A_* */
	size_t act_cap;
	gone *gone;
	size_t n_gone, cap_gone;
	char *gone_names;
	size_t gone_len, gone_cap;
	uint64_t staged;
	bool has_content; /* anything but plain directories (a full snapshot with nothing new is none) */
	bool saw_nsec;
	char reason[512]; /* why the walk stopped */
	/* The base lowers, opened on first use. */
	bool base_ready, base_unknown;
	int base_fds[80];
	size_t n_base;
	mask_list *mask;
	int host_fd;	  /* host template: "/" (-1 otherwise) */
	char **host_dirs; /* the top-level directories it shows from the host */
} walk;

static void walk_clear(walk *w)
{
	free(w->path);
	free(w->act);
	free(w->gone);
	free(w->gone_names);
	for (size_t i = 0; i < w->n_base; i++)
		safe_close(w->base_fds[i]);
	if (w->mask)
		mask_free(w->mask);
	safe_close(w->host_fd);
	strv_free(w->host_dirs);
	index_free(w->ni);
}

static int stop(walk *w, const char *fmt, ...) _printf_(2, 3);
static int stop(walk *w, const char *fmt, ...)
{
	if (!w->reason[0]) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(w->reason, sizeof(w->reason), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int stop_errno(walk *w, const char *what, const char *name)
{
	int e = errno;
	return stop(w, "%s '%s%s%s': %s", what, w->path ? w->path : "", w->path && w->plen && name ? "/" : "",
		    name ? name : "", strerror(e));
}

/* Appends "/name" (or "name" at the root) to the walk's path; returns the old length. */
static ssize_t path_push(walk *w, const char *name)
{
	size_t old = w->plen, nl = strlen(name), need = old + 1 + nl + 1;
	if (need > w->pcap) {
		size_t cap = w->pcap ? w->pcap : 256;
		while (cap < need)
			cap *= 2;
		char *p = realloc(w->path, cap);
		if (!p)
			return -1;
		w->path = p;
		w->pcap = cap;
	}
	if (old)
		w->path[w->plen++] = '/';
	memcpy(w->path + w->plen, name, nl + 1);
	w->plen += nl;
	return (ssize_t)old;
}

static void path_pop(walk *w, size_t old)
{
	w->plen = old;
	w->path[old] = 0;
}

static int add_rec(walk *w, uint32_t parent, const char *name, const struct stat *st, uint32_t *ret)
{
	struct snapd_index *x = w->ni;
	if (x->n >= SD_MAX_ENTRIES)
		return stop(w, "more than %u entries", SD_MAX_ENTRIES);
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 1024;
		sd_rec *r = realloc(x->r, cap * sizeof(*r));
		if (!r)
			return stop(w, "out of memory");
		x->r = r;
		x->cap = cap;
	}
	if (x->n == w->act_cap) {
		size_t cap = w->act_cap ? w->act_cap * 2 : 1024;
		uint8_t *a = realloc(w->act, cap);
		if (!a)
			return stop(w, "out of memory");
		w->act = a;
		w->act_cap = cap;
	}
	size_t nl = strlen(name);
	if (x->names_len + nl + 1 > x->names_cap) {
		size_t cap = x->names_cap ? x->names_cap * 2 : 16384;
		while (cap < x->names_len + nl + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return stop(w, "names too long for the index");
		char *p = realloc(x->names, cap);
		if (!p)
			return stop(w, "out of memory");
		x->names = p;
		x->names_cap = cap;
	}
	sd_rec *r = &x->r[x->n];
	*r = (sd_rec){.ino = st->st_ino,
		      .size = (uint64_t)st->st_size,
		      .nlink = st->st_nlink,
		      .rdev = st->st_rdev,
		      .mtime_sec = st->st_mtim.tv_sec,
		      .ctime_sec = st->st_ctim.tv_sec,
		      .mtime_nsec = (uint32_t)st->st_mtim.tv_nsec,
		      .ctime_nsec = (uint32_t)st->st_ctim.tv_nsec,
		      .mode = st->st_mode,
		      .uid = st->st_uid,
		      .gid = st->st_gid,
		      .parent = parent,
		      .name_off = (uint32_t)x->names_len,
		      .name_len = (uint32_t)nl};
	memcpy(x->names + x->names_len, name, nl + 1);
	x->names_len += nl + 1;
	w->act[x->n] = A_NONE;
	if (st->st_mtim.tv_nsec || st->st_ctim.tv_nsec)
		w->saw_nsec = true;
	*ret = (uint32_t)x->n++;
	return 0;
}

static bool same_times(const sd_rec *o, const struct stat *st)
{
	return o->ino == st->st_ino && o->mode == st->st_mode && o->uid == st->st_uid &&
	       o->gid == st->st_gid && o->mtime_sec == st->st_mtim.tv_sec &&
	       o->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec && o->ctime_sec == st->st_ctim.tv_sec &&
	       o->ctime_nsec == (uint32_t)st->st_ctim.tv_nsec;
}

static bool same_nondir(const sd_rec *o, const struct stat *st)
{
	return same_times(o, st) && o->size == (uint64_t)st->st_size && o->nlink == st->st_nlink &&
	       o->rdev == st->st_rdev;
}

static bool is_whiteout_mode(uint32_t mode, uint64_t rdev)
{
	return S_ISCHR(mode) && rdev == 0;
}

/* ---- the base lowers (what the environment's stack has below upper/) ---------- */

static void base_open(walk *w)
{
	w->base_ready = true;
	json_t *ls = json_object_get(w->st, "layers"), *l;
	size_t i;
	json_array_foreach(ls, i, l)
	{
		_cleanup_free_ char *p = store_layer_path(w->ctx->root, json_string_value(l));
		int fd =
		    p && w->n_base < ARRAY_SIZE(w->base_fds) ? open(p, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (fd < 0) {
			w->base_unknown = true;
			return;
		}
		w->base_fds[w->n_base++] = fd;
	}
	const char *t = json_str(w->st, "template") ?: "host";
	_cleanup_free_ char *dir = NULL;
	if (streq(t, "host")) {
		/* The mask, and the host's system directories (the rest of "/"
		 * is not part of the environment's tree). */
		if (mask_host_layer(w->ctx->root, w->ctx->run, w->ctx->rootless, &w->mask, NULL) < 0 ||
		    !(w->host_dirs = mask_host_dirs(w->mask)) ||
		    (w->host_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			w->base_unknown = true;
		return;
	} else if (startswith(t, "dir:")) {
		dir = realpath(t + 4, NULL);
		if (!dir) {
			w->base_unknown = true;
			return;
		}
	}
	if (dir) {
		int fd =
		    w->n_base < ARRAY_SIZE(w->base_fds) ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (fd < 0) {
			w->base_unknown = true;
			return;
		}
		w->base_fds[w->n_base++] = fd;
	}
}

/* Whether anything below upper/ may have rel (conservative: any entry of
 * any base lower at that path, whiteouts and hidden ones included). */
static bool base_may_have(walk *w, const char *rel)
{
	if (!w->base_ready)
		base_open(w);
	if (w->base_unknown)
		return true;
	struct stat st;
	for (size_t i = 0; i < w->n_base; i++)
		if (fstatat(w->base_fds[i], rel, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		    (errno != ENOENT && errno != ENOTDIR))
			return true;
	size_t top = strcspn(rel, "/");
	for (char **d = w->host_dirs; w->host_fd >= 0 && d && *d; d++)
		if (strlen(*d) == top && strncmp(*d, rel, top) == 0 &&
		    (fstatat(w->host_fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
		     (errno != ENOENT && errno != ENOTDIR)))
			return true;
	for (size_t i = 0; w->mask && i < w->mask->n; i++) {
		const char *p = w->mask->e[i].path;
		size_t pl = strlen(p);
		if (streq(p, rel) ||
		    (w->mask->e[i].type == 'l' && strncmp(p, rel, pl) == 0 && rel[pl] == '/'))
			return true;
	}
	return false;
}

/* ---- phase 1: what changed (lstat only, nothing is modified) ------------------- */

typedef struct kid {
	char *name;
	struct stat st;
} kid;

static int cmp_kid(const void *a, const void *b)
{
	return strcmp(((const kid *)a)->name, ((const kid *)b)->name);
}

static void kids_free(kid *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].name);
	free(k);
}

/* The entries of directory dfd, lstat'ed, in name order. */
static int read_kids(walk *w, int dfd, kid **ret, size_t *ret_n)
{
	int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
	if (!d) {
		safe_close(dup);
		return stop_errno(w, "open directory", NULL);
	}
	kid *k = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	struct dirent *de;
	for (errno = 0; (de = readdir(d)); errno = 0) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			kid *nk = realloc(k, cap * sizeof(*k));
			if (!nk) {
				r = stop(w, "out of memory");
				break;
			}
			k = nk;
		}
		if (fstatat(dfd, de->d_name, &k[n].st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = stop_errno(w, "stat", de->d_name);
			break;
		}
		if (!(k[n].name = strdup(de->d_name))) {
			r = stop(w, "out of memory");
			break;
		}
		n++;
	}
	if (r == 0 && errno)
		r = stop_errno(w, "read directory", NULL);
	closedir(d);
	if (r < 0) {
		kids_free(k, n);
		return r;
	}
	if (n > 1)
		qsort(k, n, sizeof(*k), cmp_kid);
	*ret = k;
	*ret_n = n;
	return 0;
}

static int walk_dir(walk *w, int dfd, uint32_t self, uint32_t old_self, int mode, bool b_visible, int depth);

/* An entry captured at the last snapshot and gone from upper/ now: a whiteout. */
static int visit_gone(walk *w, uint32_t self, const char *name, bool b_visible)
{
	ssize_t old = path_push(w, name);
	if (old < 0)
		return stop(w, "out of memory");
	int r =
	    b_visible && base_may_have(w, w->path)
		? stop(w, "'%s' is gone from the writable layer without a whiteout while a base layer has it",
		       w->path)
		: 0;
	path_pop(w, (size_t)old);
	if (r < 0)
		return r;
	size_t nl = strlen(name);
	if (w->n_gone == w->cap_gone) {
		size_t cap = w->cap_gone ? w->cap_gone * 2 : 64;
		gone *g = realloc(w->gone, cap * sizeof(*g));
		if (!g)
			return stop(w, "out of memory");
		w->gone = g;
		w->cap_gone = cap;
	}
	if (w->gone_len + nl + 1 > w->gone_cap) {
		size_t cap = w->gone_cap ? w->gone_cap * 2 : 4096;
		while (cap < w->gone_len + nl + 1)
			cap *= 2;
		char *p = realloc(w->gone_names, cap);
		if (!p)
			return stop(w, "out of memory");
		w->gone_names = p;
		w->gone_cap = cap;
	}
	memcpy(w->gone_names + w->gone_len, name, nl + 1);
	w->gone[w->n_gone++] = (gone){self, (uint32_t)w->gone_len};
	w->gone_len += nl + 1;
	if (self && w->act[self] == A_NONE)
		w->act[self] = A_DIR;
	return 0;
}

static int visit(walk *w, int dfd, uint32_t self, const kid *k, uint32_t old, int mode, bool b_visible,
		 int depth)
{
	uint32_t rec;
	if (add_rec(w, self, k->name, &k->st, &rec) < 0)
		return -1;
	const sd_rec *o = old != SD_NONE ? &w->oi->r[old] : NULL;
	if (!S_ISDIR(k->st.st_mode)) {
		w->has_content = true;
		if (mode == M_NONE)
			return 0;
		bool wh = is_whiteout_mode(k->st.st_mode, k->st.st_rdev);
		bool inc;
		if (mode == M_ALL || !o)
			inc = true;
		else if (wh)
			inc = !is_whiteout_mode(o->mode, o->rdev);
		else
			inc = (o->flags & SD_RACY) || !same_nondir(o, &k->st);
		if (inc)
			w->act[rec] = wh ? A_WHITEOUT : A_LINK;
		return 0;
	}
	_cleanup_close_ int cfd =
	    openat(dfd, k->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	struct stat cst;
	if (cfd < 0 || fstat(cfd, &cst) < 0)
		return stop_errno(w, "open", k->name);
	if (cst.st_ino != k->st.st_ino || cst.st_dev != k->st.st_dev)
		return stop(w, "'%s/%s' changed while being read", w->path, k->name);
	bool opq = store_dir_is_opaque(cfd);
	if (opq) {
		w->ni->r[rec].flags |= SD_OPAQUE;
		w->has_content = true;
	}
	ssize_t oldlen = path_push(w, k->name);
	if (oldlen < 0)
		return stop(w, "out of memory");
	int cmode = M_NONE, r = 0, a = A_NONE;
	uint32_t cold = SD_NONE;
	if (mode == M_NONE)
		;
	else if (mode == M_ALL || !o) {
		/* New here: all of it, as a full layer has it. */
		cmode = M_ALL;
		a = opq ? A_DIR_OPAQUE : A_DIR;
	} else if (S_ISDIR(o->mode)) {
		bool oopq = o->flags & SD_OPAQUE;
		if (oopq == opq) {
			/* Same opacity: what it hides below is hidden in the stack already. */
			cmode = M_CMP;
			cold = old;
			if ((o->flags & SD_RACY) || !same_times(o, &k->st))
				a = A_DIR;
		} else if (!oopq) {
			cmode = M_ALL;
			a = A_DIR_OPAQUE;
		} else
			r = stop(w, "directory '%s' is no longer opaque", w->path);
	} else {
		/* A directory where a non-directory (or a whiteout) was: the stack
		 * stops there, so it shows this directory alone, which is right
		 * unless a base layer would show through. */
		cmode = M_ALL;
		a = opq ? A_DIR_OPAQUE : A_DIR;
		if (!opq && b_visible && base_may_have(w, w->path))
			r = stop(w,
				 "directory '%s' replaces a non-directory while a base layer has that path",
				 w->path);
	}
	w->act[rec] = (uint8_t)a;
	if (r == 0)
		r = walk_dir(w, cfd, rec, cold, cmode, b_visible && !opq, depth + 1);
	path_pop(w, (size_t)oldlen);
	return r;
}

/* Walks directory dfd (record self). M_CMP: old_self is its record in the
 * old index, children are compared by name; M_ALL: everything is staged;
 * M_NONE: records only. b_visible: the base lowers show through here. */
static int walk_dir(walk *w, int dfd, uint32_t self, uint32_t old_self, int mode, bool b_visible, int depth)
{
	if (depth > SD_MAX_DEPTH)
		return stop(w, "deeper than %d directories", SD_MAX_DEPTH);
	kid *k = NULL;
	size_t nk = 0;
	if (read_kids(w, dfd, &k, &nk) < 0)
		return -1;
	const uint32_t *ok = NULL;
	size_t nok = 0;
	if (mode == M_CMP) {
		ok = w->oi->kids + w->oi->kid_start[old_self];
		nok = w->oi->kid_start[old_self + 1] - w->oi->kid_start[old_self];
	}
	size_t i = 0, j = 0;
	int r = 0;
	while (r == 0 && (i < nk || j < nok)) {
		int c = i < nk && j < nok ? strcmp(k[i].name, rec_name(w->oi, ok[j])) : i < nk ? -1 : 1;
		if (c > 0) {
			r = visit_gone(w, self, rec_name(w->oi, ok[j]), b_visible);
			j++;
			continue;
		}
		r = visit(w, dfd, self, &k[i], c == 0 ? ok[j] : SD_NONE, mode, b_visible, depth);
		i++;
		if (c == 0)
			j++;
	}
	kids_free(k, nk);
	return r;
}

/* Starts the walk: the root record (upper/ itself). */
static int walk_root(walk *w, int ufd, bool *ret_opaque)
{
	if (!(w->ni = calloc(1, sizeof(*w->ni))) || path_push(w, "") < 0)
		return stop(w, "out of memory");
	struct stat st;
	if (fstat(ufd, &st) < 0)
		return stop_errno(w, "stat", NULL);
	uint32_t rec;
	if (add_rec(w, 0, "", &st, &rec) < 0)
		return -1;
	*ret_opaque = store_dir_is_opaque(ufd);
	if (*ret_opaque) {
		w->ni->r[rec].flags |= SD_OPAQUE;
		w->has_content = true;
	}
	return 0;
}

/* ---- phase 2: whole hard-link groups, ancestors ------------------------------------ */

typedef struct hl_ref {
	uint64_t ino;
	uint32_t rec;
} hl_ref;

static int cmp_hl(const void *a, const void *b)
{
	const hl_ref *x = a, *y = b;
	return x->ino < y->ino ? -1 : x->ino > y->ino ? 1 : x->rec < y->rec ? -1 : x->rec > y->rec;
}

/* A layer keeps the hard-link structure: an inode with several links is
 * staged with all of them (all found in upper/, or it is a full snapshot).
 * Then every staged entry's directories are staged too. */
static int close_delta(walk *w)
{
	struct snapd_index *x = w->ni;
	_cleanup_free_ hl_ref *hl = NULL;
	size_t n = 0;
	for (size_t i = 1; i < x->n; i++)
		if (x->r[i].nlink > 1 && !S_ISDIR(x->r[i].mode) &&
		    !is_whiteout_mode(x->r[i].mode, x->r[i].rdev))
			n++;
	if (n) {
		if (!(hl = malloc(n * sizeof(*hl))))
			return stop(w, "out of memory");
		n = 0;
		for (size_t i = 1; i < x->n; i++)
			if (x->r[i].nlink > 1 && !S_ISDIR(x->r[i].mode) &&
			    !is_whiteout_mode(x->r[i].mode, x->r[i].rdev))
				hl[n++] = (hl_ref){x->r[i].ino, (uint32_t)i};
		qsort(hl, n, sizeof(*hl), cmp_hl);
	}
	for (size_t i = 0; i < n;) {
		size_t j = i;
		bool staged = false;
		while (j < n && hl[j].ino == hl[i].ino)
			staged |= w->act[hl[j++].rec] == A_LINK;
		if (staged) {
			for (size_t k = i; k < j; k++) {
				if (x->r[hl[k].rec].nlink != j - i)
					return stop(w,
						    "hard-linked file (inode %" PRIu64
						    ") changed and has links outside the "
						    "writable layer's tree",
						    hl[i].ino);
				w->act[hl[k].rec] = A_LINK;
			}
		}
		i = j;
	}
	for (size_t i = x->n - 1; i >= 1; i--) {
		uint32_t p = x->r[i].parent;
		if (w->act[i] != A_NONE && p && w->act[p] == A_NONE)
			w->act[p] = A_DIR;
		if (w->act[i] != A_NONE)
			w->staged++;
	}
	w->staged += w->n_gone;
	return 0;
}

/* ---- phase 3: the staging tree ------------------------------------------------------- */

typedef struct frame {
	uint32_t rec;
	int ufd, sfd;
} frame;

/* Gives a staged directory the metadata of upper/'s. */
static int stage_finish(walk *w, const frame *f)
{
	const sd_rec *e = &w->ni->r[f->rec];
	char list[65536], val[65536];
	ssize_t n = flistxattr(f->ufd, list, sizeof(list));
	if (n < 0 && errno != ENOTSUP && errno != ENODATA)
		return stop(w, "list the xattrs of '%s': %s", rec_name(w->ni, f->rec), strerror(errno));
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(list + off) + 1) {
		const char *k = list + off;
		/* the set the canonical tar keeps (xattr.h), copied as they are:
		 * upper/ and the stage are both seen from the host, and the tar
		 * writer normalizes their ids */
		if (!store_xattr_kept(k))
			continue;
		ssize_t vl = fgetxattr(f->ufd, k, val, sizeof(val));
		if (vl < 0 && errno == ENODATA)
			continue;
		if (vl < 0 || fsetxattr(f->sfd, k, val, (size_t)vl, 0) < 0)
			return stop(w, "copy xattr %s of '%s': %s", k, rec_name(w->ni, f->rec),
				    strerror(errno));
	}
	if (w->act[f->rec] == A_DIR_OPAQUE && fsetxattr(f->sfd, STORE_OVL_OPAQUE_XATTR, "y", 1, 0) < 0)
		return stop(w, "mark the staged '%s' opaque: %s", rec_name(w->ni, f->rec), strerror(errno));
	struct stat cur;
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {e->mtime_sec, e->mtime_nsec}};
	if (fstat(f->sfd, &cur) < 0 ||
	    ((cur.st_uid != e->uid || cur.st_gid != e->gid) && fchown(f->sfd, e->uid, e->gid) < 0) ||
	    fchmod(f->sfd, e->mode & 07777) < 0 || futimens(f->sfd, ts) < 0)
		return stop(w, "set the metadata of the staged '%s': %s", rec_name(w->ni, f->rec),
			    strerror(errno));
	return 0;
}

static int cmp_gone(const void *a, const void *b)
{
	const gone *x = a, *y = b;
	return x->parent < y->parent ? -1 : x->parent > y->parent ? 1 : x->name_off < y->name_off ? -1 : 1;
}

static int stage_gone(walk *w, const frame *f, size_t *gi)
{
	for (; *gi < w->n_gone && w->gone[*gi].parent == f->rec; (*gi)++) {
		const char *name = w->gone_names + w->gone[*gi].name_off;
		if (mknodat(f->sfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0)
			return stop(w, "create a whiteout for '%s': %s", name, strerror(errno));
	}
	return 0;
}

/* Builds the delta tree under sfd: records in order (parents first), with a
 * stack of open directories (upper/'s and the stage's). */
static int stage_build(walk *w, int sfd)
{
	struct snapd_index *x = w->ni;
	if (w->n_gone > 1)
		qsort(w->gone, w->n_gone, sizeof(*w->gone), cmp_gone);
	const int depth_max = SD_MAX_DEPTH + 2;
	_cleanup_free_ frame *stack = calloc(depth_max, sizeof(frame));
	if (!stack)
		return stop(w, "out of memory");
	int top = 0, r = 0;
	size_t gi = 0;
	stack[0] = (frame){0, w->ufd, sfd};
	r = stage_gone(w, &stack[0], &gi);
	for (size_t i = 1; r == 0 && i < x->n; i++) {
		int a = w->act[i];
		if (a == A_NONE)
			continue;
		const sd_rec *e = &x->r[i];
		while (r == 0 && top > 0 && stack[top].rec != e->parent) {
			r = stage_finish(w, &stack[top]);
			safe_close(stack[top].ufd);
			safe_close(stack[top].sfd);
			top--;
		}
		if (r < 0)
			break;
		if (stack[top].rec != e->parent) {
			r = stop(w, "internal error: staging out of order");
			break;
		}
		const char *name = rec_name(x, (uint32_t)i);
		frame *f = &stack[top];
		struct stat st;
		if (a == A_DIR || a == A_DIR_OPAQUE) {
			frame c = {(uint32_t)i,
				   openat(f->ufd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), -1};
			if (c.ufd < 0 || fstat(c.ufd, &st) < 0 || st.st_ino != e->ino ||
			    mkdirat(f->sfd, name, 0700) < 0 ||
			    (c.sfd = openat(f->sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
				0) {
				r = stop(w, "stage directory '%s': %s", name, strerror(errno));
				safe_close(c.ufd);
				break;
			}
			if (top + 1 >= depth_max) {
				safe_close(c.ufd);
				safe_close(c.sfd);
				r = stop(w, "too deep");
				break;
			}
			stack[++top] = c;
			r = stage_gone(w, &stack[top], &gi);
		} else if (a == A_WHITEOUT) {
			if (mknodat(f->sfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0)
				r = stop(w, "create a whiteout for '%s': %s", name, strerror(errno));
		} else if (linkat(f->ufd, name, f->sfd, name, 0) < 0 ||
			   fstatat(f->sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != e->ino)
			r = stop(w, "link '%s' into the staging tree: %s", name,
				 strerror(errno ? errno : ESTALE));
	}
	while (top > 0) {
		if (r == 0)
			r = stage_finish(w, &stack[top]);
		safe_close(stack[top].ufd);
		safe_close(stack[top].sfd);
		top--;
	}
	if (r == 0 && gi != w->n_gone)
		r = stop(w, "internal error: whiteouts left unstaged");
	return r;
}

/* Relative path of record i. */
static char *rec_path(const struct snapd_index *x, uint32_t i)
{
	size_t len = 0;
	for (uint32_t p = i; p; p = x->r[p].parent)
		len += x->r[p].name_len + (x->r[p].parent ? 1 : 0);
	char *s = malloc(len + 1);
	if (!s)
		return NULL;
	size_t at = len;
	s[at] = 0;
	for (uint32_t p = i; p; p = x->r[p].parent) {
		at -= x->r[p].name_len;
		memcpy(s + at, rec_name(x, p), x->r[p].name_len);
		if (x->r[p].parent)
			s[--at] = '/';
	}
	return s;
}

/* Once the stage is gone: the linked entries' ctime and link count as they
 * are now (linking and unlinking changed them). */
static void restat_linked(walk *w)
{
	for (size_t i = 1; i < w->ni->n; i++) {
		if (w->act[i] != A_LINK)
			continue;
		sd_rec *e = &w->ni->r[i];
		_cleanup_free_ char *p = rec_path(w->ni, (uint32_t)i);
		struct stat st;
		if (!p || fstatat(w->ufd, p, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != e->ino ||
		    (uint64_t)st.st_size != e->size || st.st_mtim.tv_sec != e->mtime_sec ||
		    (uint32_t)st.st_mtim.tv_nsec != e->mtime_nsec || st.st_mode != e->mode) {
			e->flags |= SD_RACY; /* cannot happen while frozen: staged again next time */
			continue;
		}
		e->ctime_sec = st.st_ctim.tv_sec;
		e->ctime_nsec = (uint32_t)st.st_ctim.tv_nsec;
		e->nlink = st.st_nlink;
	}
}

/* After the capture, still frozen: writes back upper/ (so that a later write
 * through a shared mapping faults and updates ctime) and marks the records a
 * later change could leave with the same ctime. */
static void index_seal(walk *w, int ufd)
{
	(void)syncfs(ufd);
	struct snapd_index *x = w->ni;
	(void)upper_identity(ufd, x);
	const char *nomg = getenv("SBX_SNAPSHOT_NO_MULTIGRAIN"); /* tests: the rule for other filesystems */
	if (w->saw_nsec && fs_multigrain(ufd) && !(nomg && streq(nomg, "1")))
		return;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME_COARSE, &now);
	if (!w->saw_nsec)
		now.tv_nsec = 0; /* timestamps in whole seconds */
	for (size_t i = 0; i < x->n; i++) {
		sd_rec *e = &x->r[i];
		if (e->ctime_sec > now.tv_sec ||
		    (e->ctime_sec == now.tv_sec && e->ctime_nsec >= (uint32_t)now.tv_nsec))
			e->flags |= SD_RACY;
	}
}

/* ---- capture ---------------------------------------------------------------------- */

/* Where to stage: a directory on upper/'s mount (hard links do not cross
 * mounts), and upper/ as seen from that mount (*ret_ufd, owned). With a disk
 * quota, upper/ is a bind mount of <env>/disk/upper: the stage goes on the
 * disk; otherwise in the store's tmp/. */
static int stage_dir(sbx_ctx *ctx, const char *id, int ufd, char **ret_path, int *ret_ufd)
{
	struct stat us, ts;
	if (fstat(ufd, &us) < 0)
		return -errno;
	unsigned rnd = 0;
	(void)!getrandom(&rnd, sizeof(rnd), 0);
	_cleanup_free_ char *tmp = store_fs_path(ctx->root, STORE_DIR_TMP), *env = ctx_env_dir(ctx, id),
			    *p = NULL;
	_cleanup_free_ char *disk = env ? fs_path_join(env, "disk") : NULL;
	if (!tmp || !disk)
		return -ENOMEM;
	_cleanup_free_ char *dup = fs_path_join(disk, "upper");
	_cleanup_close_ int dfd = dup ? open(dup, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (dfd >= 0 && fstat(dfd, &ts) == 0 && ts.st_dev == us.st_dev && ts.st_ino == us.st_ino) {
		if (asprintf(&p, "%s/" SNAP_STAGE_DISK "%d-%08x", disk, (int)getpid(), rnd) < 0)
			return -ENOMEM;
	} else if (stat(tmp, &ts) == 0 && ts.st_dev == us.st_dev) {
		safe_close(dfd);
		if ((dfd = fcntl(ufd, F_DUPFD_CLOEXEC, 3)) < 0)
			return -errno;
		if (asprintf(&p, "%s/" SNAP_STAGE_TMP "%s-%d-%08x", tmp, id, (int)getpid(), rnd) < 0)
			return -ENOMEM;
	} else
		return -EXDEV;
	if (mkdir(p, 0700) < 0)
		return -errno;
	*ret_path = TAKE_PTR(p);
	*ret_ufd = TAKE_FD(dfd);
	return 0;
}

/* Staging trees left by a snapshot of this environment that died (the lock
 * is held: no other snapshot of it runs). */
static void remove_stale_stages(sbx_ctx *ctx, const char *id)
{
	_cleanup_free_ char *tmp = store_fs_path(ctx->root, STORE_DIR_TMP), *env = ctx_env_dir(ctx, id),
			    *disk = env ? fs_path_join(env, "disk") : NULL, *pre = NULL;
	if (!tmp || !disk || asprintf(&pre, SNAP_STAGE_TMP "%s-", id) < 0)
		return;
	fs_rm_rf_prefixed(tmp, pre);
	fs_rm_rf_prefixed(disk, SNAP_STAGE_DISK);
}

static char **strv_copy_n(char *const *v, const char *extra)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **c = calloc(n + 2, sizeof(char *));
	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			strv_free(c);
			return NULL;
		}
	if (extra && !(c[n] = strdup(extra))) {
		strv_free(c);
		return NULL;
	}
	return c;
}

/* Tries a delta over the old index's snapshot. 1 (and *why) when it has to
 * be a full snapshot after all; -1 on an error of the store. */
static int capture_delta(sbx_ctx *ctx, const char *id, const json_t *st, int ufd, const store_idmap *ids,
			 const struct snapd_index *oi, snap_capture *cap, char *why, size_t why_len,
			 sbx_err **err)
{
	_cleanup_(walk_clear) walk w = {.ctx = ctx, .st = st, .oi = oi, .ufd = ufd, .host_fd = -1};
	double t0 = mono_ms(), t1 = 0, t2 = 0, t3 = 0;
	bool ropq = false;
	int r = walk_root(&w, ufd, &ropq);
	if (r == 0 && ropq != !!(oi->r[0].flags & SD_OPAQUE))
		r = stop(&w, "the writable layer's root changed opacity");
	if (r == 0)
		r = walk_dir(&w, ufd, 0, 0, M_CMP, !ropq, 0);
	if (r == 0)
		r = close_delta(&w);
	if (r < 0) {
		snprintf(why, why_len, "%s", w.reason);
		return 1;
	}
	t1 = mono_ms();
	const char *prev = json_str(oi->hdr, "snapshot_id");
	_cleanup_strv_free_ char **prev_layers = json_to_strv(json_object_get(oi->hdr, "layers"));
	if (w.staged) {
		_cleanup_free_ char *stage = NULL;
		_cleanup_close_ int sufd = -1;
		r = stage_dir(ctx, id, ufd, &stage, &sufd);
		if (r < 0) {
			snprintf(why, why_len, "%s",
				 r == -EXDEV ? "the writable layer is on another filesystem than the store's "
					       "tmp/ (no staging area)"
					     : "cannot create a staging directory");
			return 1;
		}
		_cleanup_close_ int sfd = open(stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		w.ufd = sufd;
		r = sfd < 0 ? stop(&w, "open the staging directory: %s", strerror(errno))
			    : stage_build(&w, sfd);
		w.ufd = ufd;
		t2 = mono_ms();
		if (r == 0)
			r = store_layer_put_from_dir(ctx->root, sfd, ids, &cap->li, err) < 0 ? -2 : 0;
		safe_close(TAKE_FD(sfd));
		(void)fs_rm_rf(stage);
		if (r == -2)
			return -1;
		if (r < 0) {
			snprintf(why, why_len, "%s", w.reason);
			return 1;
		}
		cap->new_layer = true;
		t3 = mono_ms();
		restat_linked(&w);
	}
	index_seal(&w, ufd);
	cap->delta = true;
	cap->layers = strv_copy_n(prev_layers, cap->new_layer ? cap->li.digest : NULL);
	cap->parent = strdup(prev);
	log_debug("snapshot %s: delta over %s: %" PRIu64
		  " of %zu entries staged; walk %.1f ms, stage %.1f ms, "
		  "store %.1f ms, seal %.1f ms",
		  id, prev, w.staged, w.ni->n, t1 - t0, t2 ? t2 - t1 : 0, t3 ? t3 - t2 : 0,
		  mono_ms() - (t3 ? t3 : t1));
	cap->index = TAKE_PTR(w.ni);
	if (!cap->layers || !cap->parent)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	return 0;
}

int snap_delta_capture(sbx_ctx *ctx, const char *id, const json_t *st, int ufd, const store_idmap *ids,
		       bool quiesced, snap_capture *cap, sbx_err **err)
{
	_cleanup_free_ char *lock = env_file(ctx, id, SD_LOCK);
	if (!lock)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	cap->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (cap->lock_fd < 0 || flock(cap->lock_fd, LOCK_EX) < 0)
		return err_errno(err, "lock '%s'", lock);
	if (store_fs_init(ctx->root, err) < 0)
		return -1;
	remove_stale_stages(ctx, id);

	char why[600] = "";
	_cleanup_(index_freep) struct snapd_index *oi = NULL;
	const char *full = getenv("SBX_SNAPSHOT_FULL");
	if (full && *full && !streq(full, "0"))
		snprintf(why, sizeof(why), "SBX_SNAPSHOT_FULL is set");
	else if (!quiesced)
		snprintf(why, sizeof(why), "the environment could not be frozen");
	else {
		double t0 = mono_ms();
		const char *e = index_load(ctx, id, st, ufd, &oi);
		log_debug("snapshot %s: index loaded in %.1f ms", id, mono_ms() - t0);
		if (e)
			snprintf(why, sizeof(why), "%s", e);
		else if (json_array_size(json_object_get(oi->hdr, "layers")) + 1 > SNAP_DELTA_MAX_LAYERS)
			snprintf(why, sizeof(why),
				 "the previous snapshot has %zu layers (a delta allows at most %d)",
				 json_array_size(json_object_get(oi->hdr, "layers")), SNAP_DELTA_MAX_LAYERS);
	}
	if (!why[0]) {
		int r = capture_delta(ctx, id, st, ufd, ids, oi, cap, why, sizeof(why), err);
		if (r <= 0)
			return r;
	}
	log_debug("snapshot %s: full: %s", id, why);
	if (!(cap->full_reason = strdup(why)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");

	/* Full: the index first (stat before read: a change during the read
	 * shows up as a change next time), then the whole writable layer. */
	_cleanup_(walk_clear) walk w = {.ctx = ctx, .st = st, .ufd = ufd, .host_fd = -1};
	bool ropq = false;
	int r = walk_root(&w, ufd, &ropq);
	if (r == 0)
		r = walk_dir(&w, ufd, 0, SD_NONE, M_NONE, !ropq, 0);
	if (r < 0) {
		log_debug("snapshot %s: no index: %s", id, w.reason);
		index_free(TAKE_PTR(w.ni));
		w.has_content = true;
	}
	/* Nothing changed since the environment's base: no new layer at all. */
	json_t *base = json_object_get(st, "layers");
	bool unchanged = json_array_size(base) > 0 && !w.has_content;
	if (!unchanged) {
		if (store_layer_put_from_dir(ctx->root, ufd, ids, &cap->li, err) < 0)
			return -1;
		cap->new_layer = true;
	}
	_cleanup_strv_free_ char **bl = json_to_strv(base);
	cap->layers = strv_copy_n(bl, cap->new_layer ? cap->li.digest : NULL);
	if (w.ni && quiesced)
		index_seal(&w, ufd);
	else {
		index_free(TAKE_PTR(w.ni));
		(void)syncfs(ufd);
	}
	cap->index = TAKE_PTR(w.ni);
	if (!cap->layers)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	return 0;
}

void snap_delta_commit(sbx_ctx *ctx, const char *id, const json_t *st, snap_capture *cap,
		       const char *snapshot_id)
{
	if (cap->index && index_write(ctx, id, st, cap->index, snapshot_id, cap->layers) == 0)
		return;
	_cleanup_free_ char *p = env_file(ctx, id, SD_FILE);
	if (p)
		(void)unlink(p);
}

void snap_capture_clear(snap_capture *cap)
{
	strv_free(cap->layers);
	free(cap->parent);
	free(cap->full_reason);
	index_free(cap->index);
	safe_close(cap->lock_fd);
	*cap = (snap_capture)SNAP_CAPTURE_INIT;
}

void snap_delta_forget(sbx_ctx *ctx, const char *id)
{
	_cleanup_free_ char *lock = env_file(ctx, id, SD_LOCK), *p = env_file(ctx, id, SD_FILE);
	if (!lock || !p)
		return;
	_cleanup_close_ int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		(void)flock(fd, LOCK_EX);
	(void)unlink(p);
}
