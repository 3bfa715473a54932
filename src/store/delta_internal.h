/* Module-private interface of incremental snapshots (docs/store.md
 * "Incremental snapshots"): the index's records, the walk's state, and the
 * calls between the files they are split into. In reading order:
 *
 *   delta.c        what an incremental snapshot is (its header comment),
 *                  phase 3 (the staging tree), the capture and the public
 *                  calls (delta.h)
 *   delta_walk.c   phase 1 (what changed, lstat only) and phase 2 (whole
 *                  hard-link groups, ancestors)
 *   delta_index.c  the index file: load and check, write, seal
 *
 * Calls go one way: delta.c -> delta_walk.c, delta_index.c; delta_walk.c ->
 * delta_index.c (sd_index_free). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/ctx.h"
#include "runtime/mask.h"
#include "store/delta.h"
#include "util/macro.h"

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

void sd_index_free(struct snapd_index *x);
void sd_index_freep(struct snapd_index **x);

static inline const char *sd_rec_name(const struct snapd_index *x, uint32_t i)
{
	return x->names + x->r[i].name_off;
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

/* ---- delta_walk.c ---- */

void sd_walk_clear(walk *w);
/* Records why the walk stops (the first reason only); returns -1. */
int sd_stop(walk *w, const char *fmt, ...) _printf_(2, 3);
/* Starts the walk: the root record (upper/ itself). */
int sd_walk_root(walk *w, int ufd, bool *ret_opaque);
/* Walks directory dfd (record self) in mode M_*; see delta_walk.c. */
int sd_walk_dir(walk *w, int dfd, uint32_t self, uint32_t old_self, int mode, bool b_visible, int depth);
/* Phase 2: whole hard-link groups, ancestors. */
int sd_close_delta(walk *w);

/* ---- delta_index.c ---- */

/* envs/<id>/<name> (malloc'ed; NULL without memory). */
char *sd_env_file(sbx_ctx *ctx, const char *id, const char *name);
/* Loads the index of environment id and checks it belongs to the state st
 * and writable layer ufd. NULL on success, else why not (static text). */
const char *sd_index_load(sbx_ctx *ctx, const char *id, const json_t *st, int ufd, struct snapd_index **ret);
int sd_index_write(sbx_ctx *ctx, const char *id, const json_t *st, const struct snapd_index *x,
		   const char *snapshot_id, char *const *layers);
/* After the capture, still frozen: syncfs of upper/, racy records marked. */
void sd_index_seal(walk *w, int ufd);
