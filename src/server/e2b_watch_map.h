/* The pure half of envd's directory watch (e2b_watch.c): inotify events
 * turned into envd's FilesystemEvent types, and the table of watched
 * directories that names an event by its path under the watched root. No
 * I/O; unit-tested in tests/unit/test_e2b_watch_map.c.
 *
 * Types as envd reports them (fsnotify's inotify mapping): IN_CREATE and
 * IN_MOVED_TO are a create, IN_DELETE a remove, IN_MODIFY a write,
 * IN_MOVED_FROM a rename, IN_ATTRIB a chmod; one inotify event with
 * several of these bits is one envd event per bit, in that order. Events
 * about a watched directory itself (IN_*_SELF, IN_IGNORED) are not
 * reported: they end its watch (and the whole watch when it is the root). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The inotify mask every watched directory gets. */
uint32_t e2b_watch_mask(void);

/* The envd event types of an inotify event's mask, at most 5, in envd's
 * order, into out ("EVENT_TYPE_CREATE", ...). Returns how many. */
size_t e2b_watch_types(uint32_t mask, const char *out[5]);

/* Watched directories: inotify's watch descriptor -> the directory's path
 * under the root ("" for the root itself). */
typedef struct e2b_watch_dir {
	int wd;
	char *rel;
} e2b_watch_dir;

typedef struct e2b_watch_table {
	e2b_watch_dir *v;
	size_t n, cap, max; /* max: the most directories watched (0: 4096) */
} e2b_watch_table;

/* Adds (or renames) wd at rel. 0; -ENOSPC past max; -ENOMEM. */
int e2b_watch_table_put(e2b_watch_table *t, int wd, const char *rel);
/* The path of wd under the root, NULL when it is not watched. */
const char *e2b_watch_table_get(const e2b_watch_table *t, int wd);
/* Forgets wd (its directory is gone or moved out). */
void e2b_watch_table_drop(e2b_watch_table *t, int wd);
void e2b_watch_table_free(e2b_watch_table *t);

/* The name envd reports for entry name in the directory at rel: "rel/name",
 * or "name" at the root. -ENAMETOOLONG if it does not fit in size. */
int e2b_watch_name(const char *rel, const char *name, char *out, size_t size);
