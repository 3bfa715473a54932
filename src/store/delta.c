

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

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "runtime/startup_trace.h"
#include "store/delta_internal.h"
#include "store/storefs.h"
#include "store/tar.h"
#include "store/xattr.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"

/* ---- small helpers ---------------------------------------------------------- */

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
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
		return sd_stop(w, "list the xattrs of '%s': %s", sd_rec_name(w->ni, f->rec), strerror(errno));
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
			return sd_stop(w, "copy xattr %s of '%s': %s", k, sd_rec_name(w->ni, f->rec),
				       strerror(errno));
	}
	if (w->act[f->rec] == A_DIR_OPAQUE && fsetxattr(f->sfd, STORE_OVL_OPAQUE_XATTR, "y", 1, 0) < 0)
		return sd_stop(w, "mark the staged '%s' opaque: %s", sd_rec_name(w->ni, f->rec),
			       strerror(errno));
	struct stat cur;
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {e->mtime_sec, e->mtime_nsec}};
	if (fstat(f->sfd, &cur) < 0 ||
	    ((cur.st_uid != e->uid || cur.st_gid != e->gid) && fchown(f->sfd, e->uid, e->gid) < 0) ||
	    fchmod(f->sfd, e->mode & 07777) < 0 || futimens(f->sfd, ts) < 0)
		return sd_stop(w, "set the metadata of the staged '%s': %s", sd_rec_name(w->ni, f->rec),
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
			return sd_stop(w, "create a whiteout for '%s': %s", name, strerror(errno));
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
		return sd_stop(w, "out of memory");
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
			r = sd_stop(w, "internal error: staging out of order");
			break;
		}
		const char *name = sd_rec_name(x, (uint32_t)i);
		frame *f = &stack[top];
		struct stat st;
		if (a == A_DIR || a == A_DIR_OPAQUE) {
			frame c = {(uint32_t)i,
				   openat(f->ufd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), -1};
			if (c.ufd < 0 || fstat(c.ufd, &st) < 0 || st.st_ino != e->ino ||
			    mkdirat(f->sfd, name, 0700) < 0 ||
			    (c.sfd = openat(f->sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
				0) {
				r = sd_stop(w, "stage directory '%s': %s", name, strerror(errno));
				safe_close(c.ufd);
				break;
			}
			if (top + 1 >= depth_max) {
				safe_close(c.ufd);
				safe_close(c.sfd);
				r = sd_stop(w, "too deep");
				break;
			}
			stack[++top] = c;
			r = stage_gone(w, &stack[top], &gi);
		} else if (a == A_WHITEOUT) {
			if (mknodat(f->sfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0)
				r = sd_stop(w, "create a whiteout for '%s': %s", name, strerror(errno));
		} else if (linkat(f->ufd, name, f->sfd, name, 0) < 0 ||
			   fstatat(f->sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != e->ino)
			r = sd_stop(w, "link '%s' into the staging tree: %s", name,
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
		r = sd_stop(w, "internal error: whiteouts left unstaged");
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
		memcpy(s + at, sd_rec_name(x, p), x->r[p].name_len);
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
	_cleanup_(sd_walk_clear) walk w = {.ctx = ctx, .st = st, .oi = oi, .ufd = ufd, .host_fd = -1};
	double t0 = mono_ms(), t1 = 0, t2 = 0, t3 = 0;
	bool ropq = false;
	int r = sd_walk_root(&w, ufd, &ropq);
	if (r == 0 && ropq != !!(oi->r[0].flags & SD_OPAQUE))
		r = sd_stop(&w, "the writable layer's root changed opacity");
	if (r == 0)
		r = sd_walk_dir(&w, ufd, 0, 0, M_CMP, !ropq, 0);
	if (r == 0)
		r = sd_close_delta(&w);
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
		r = sfd < 0 ? sd_stop(&w, "open the staging directory: %s", strerror(errno))
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
	sd_index_seal(&w, ufd);
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
	_cleanup_free_ char *lock = sd_env_file(ctx, id, SD_LOCK);
	if (!lock)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	cap->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (cap->lock_fd < 0 || flock(cap->lock_fd, LOCK_EX) < 0)
		return err_errno(err, "lock '%s'", lock);
	if (store_fs_init(ctx->root, err) < 0)
		return -1;
	remove_stale_stages(ctx, id);

	char why[600] = "";
	_cleanup_(sd_index_freep) struct snapd_index *oi = NULL;
	const char *full = getenv("SBX_SNAPSHOT_FULL");
	if (full && *full && !streq(full, "0"))
		snprintf(why, sizeof(why), "SBX_SNAPSHOT_FULL is set");
	else if (!quiesced)
		snprintf(why, sizeof(why), "the environment could not be frozen");
	else {
		double t0 = mono_ms();
		const char *e = sd_index_load(ctx, id, st, ufd, &oi);
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
	_cleanup_(sd_walk_clear) walk w = {.ctx = ctx, .st = st, .ufd = ufd, .host_fd = -1};
	bool ropq = false;
	int r = sd_walk_root(&w, ufd, &ropq);
	if (r == 0)
		r = sd_walk_dir(&w, ufd, 0, SD_NONE, M_NONE, !ropq, 0);
	if (r < 0) {
		log_debug("snapshot %s: no index: %s", id, w.reason);
		sd_index_free(TAKE_PTR(w.ni));
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
		sd_index_seal(&w, ufd);
	else {
		sd_index_free(TAKE_PTR(w.ni));
		(void)syncfs(ufd);
	}
	cap->index = TAKE_PTR(w.ni);
	if (!cap->layers)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	return 0;
}

/* The root's own record: its children are compared by the walk, not it. */
static bool same_root(const sd_rec *o, const sd_rec *n)
{
	return !(o->flags & SD_RACY) && o->ino == n->ino && o->mode == n->mode && o->uid == n->uid &&
	       o->gid == n->gid && o->mtime_sec == n->mtime_sec && o->mtime_nsec == n->mtime_nsec &&
	       o->ctime_sec == n->ctime_sec && o->ctime_nsec == n->ctime_nsec &&
	       (o->flags & SD_OPAQUE) == (n->flags & SD_OPAQUE);
}

int snap_delta_unchanged(sbx_ctx *ctx, const char *id, const json_t *st, int ufd, const char *snapshot_id,
			 char ret_snapshot_id[STORE_DIGEST_SIZE])
{
	_cleanup_free_ char *lock = sd_env_file(ctx, id, SD_LOCK);
	if (!lock)
		return 0;
	/* Shared: no snapshot or restore rewrites the index meanwhile. */
	_cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0 || flock(lfd, LOCK_SH) < 0)
		return 0;
	_cleanup_(sd_index_freep) struct snapd_index *oi = NULL;
	const char *e = sd_index_load(ctx, id, st, ufd, &oi);
	const char *sid = e ? NULL : json_str(oi->hdr, "snapshot_id");
	if (!sid || strlen(sid) >= STORE_DIGEST_SIZE || (snapshot_id && !streq(sid, snapshot_id))) {
		log_debug("%s: no index of snapshot %s: %s", id, snapshot_id ?: "(any)",
			  e ? e : "another snapshot's");
		return 0;
	}
	startup_mark("snapshot index: loaded");
	/* Phases 1 and 2 of a delta capture (lstat only): what it would stage. */
	_cleanup_(sd_walk_clear) walk w = {.ctx = ctx, .st = st, .oi = oi, .ufd = ufd, .host_fd = -1};
	bool ropq = false;
	int r = sd_walk_root(&w, ufd, &ropq);
	if (r == 0)
		r = sd_walk_dir(&w, ufd, 0, 0, M_CMP, !ropq, 0);
	if (r == 0)
		r = sd_close_delta(&w);
	if (r < 0 || w.staged || !same_root(&oi->r[0], &w.ni->r[0])) {
		log_debug("%s: changed since snapshot %s (%" PRIu64 " entries)", id, sid, w.staged);
		return 0;
	}
	if (ret_snapshot_id)
		memcpy(ret_snapshot_id, sid, strlen(sid) + 1);
	return 1;
}

void snap_delta_commit(sbx_ctx *ctx, const char *id, const json_t *st, snap_capture *cap,
		       const char *snapshot_id)
{
	if (cap->index && sd_index_write(ctx, id, st, cap->index, snapshot_id, cap->layers) == 0)
		return;
	_cleanup_free_ char *p = sd_env_file(ctx, id, SD_FILE);
	if (p)
		(void)unlink(p);
}

void snap_capture_clear(snap_capture *cap)
{
	strv_free(cap->layers);
	free(cap->parent);
	free(cap->full_reason);
	sd_index_free(cap->index);
	safe_close(cap->lock_fd);
	*cap = (snap_capture)SNAP_CAPTURE_INIT;
}

void snap_delta_forget(sbx_ctx *ctx, const char *id)
{
	_cleanup_free_ char *lock = sd_env_file(ctx, id, SD_LOCK), *p = sd_env_file(ctx, id, SD_FILE);
	if (!lock || !p)
		return;
	_cleanup_close_ int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0)
		(void)flock(fd, LOCK_EX);
	(void)unlink(p);
}
