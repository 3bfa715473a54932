/* The index of an environment's writable layer as its last snapshot captured
 * it (envs/<id>/snapindex): load and check it, write it, seal it at the end
 * of a capture (delta.c says what it is for). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "store/delta_internal.h"
#include "store/digest.h"
#include "store/layer.h"
#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"

void sd_index_free(struct snapd_index *x)
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

void sd_index_freep(struct snapd_index **x)
{
	sd_index_free(*x);
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

char *sd_env_file(sbx_ctx *ctx, const char *id, const char *name)
{
	_cleanup_free_ char *dir = ctx_env_dir(ctx, id);
	return dir ? fs_path_join(dir, name) : NULL;
}

/* ---- the index file --------------------------------------------------------- */

/* Loads the index of environment id and checks it belongs to the state st
 * and writable layer ufd. NULL on success, else why not (static text). */
const char *sd_index_load(sbx_ctx *ctx, const char *id, const json_t *st, int ufd, struct snapd_index **ret)
{
	_cleanup_free_ char *path = sd_env_file(ctx, id, SD_FILE), *buf = NULL;
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
	_cleanup_(sd_index_freep) struct snapd_index *x = calloc(1, sizeof(*x));
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
			if (strcmp(sd_rec_name(x, x->kids[k - 1]), sd_rec_name(x, x->kids[k])) >= 0)
				return "the index of the previous snapshot is corrupt (order)";
	*ret = TAKE_PTR(x);
	return NULL;
}

int sd_index_write(sbx_ctx *ctx, const char *id, const json_t *st, const struct snapd_index *x,
		   const char *snapshot_id, char *const *layers)
{
	_cleanup_free_ char *path = sd_env_file(ctx, id, SD_FILE);
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

/* After the capture, still frozen: writes back upper/ (so that a later write
 * through a shared mapping faults and updates ctime) and marks the records a
 * later change could leave with the same ctime. */
void sd_index_seal(walk *w, int ufd)
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
