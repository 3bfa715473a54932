/* e2b_watch_map.h: inotify events as envd's, and the watched directories. */
#include "server/e2b_watch_map.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#define WATCH_DIRS_MAX 4096

uint32_t e2b_watch_mask(void)
{
	return IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_ATTRIB | IN_DELETE_SELF |
	       IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK;
}

size_t e2b_watch_types(uint32_t mask, const char *out[5])
{
	size_t n = 0;
	if (mask & (IN_CREATE | IN_MOVED_TO))
		out[n++] = "EVENT_TYPE_CREATE";
	if (mask & IN_DELETE)
		out[n++] = "EVENT_TYPE_REMOVE";
	if (mask & IN_MODIFY)
		out[n++] = "EVENT_TYPE_WRITE";
	if (mask & IN_MOVED_FROM)
		out[n++] = "EVENT_TYPE_RENAME";
	if (mask & IN_ATTRIB)
		out[n++] = "EVENT_TYPE_CHMOD";
	return n;
}

static e2b_watch_dir *find(const e2b_watch_table *t, int wd)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].wd == wd)
			return &t->v[i];
	return NULL;
}

int e2b_watch_table_put(e2b_watch_table *t, int wd, const char *rel)
{
	char *copy = strdup(rel);
	if (!copy)
		return -ENOMEM;
	e2b_watch_dir *d = find(t, wd);
	if (d) { /* the same directory again (moved within the tree) */
		free(d->rel);
		d->rel = copy;
		return 0;
	}
	if (t->n >= (t->max ? t->max : WATCH_DIRS_MAX)) {
		free(copy);
		return -ENOSPC;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		e2b_watch_dir *v = realloc(t->v, cap * sizeof(*v));
		if (!v) {
			free(copy);
			return -ENOMEM;
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = (e2b_watch_dir){.wd = wd, .rel = copy};
	return 0;
}

const char *e2b_watch_table_get(const e2b_watch_table *t, int wd)
{
	const e2b_watch_dir *d = find(t, wd);
	return d ? d->rel : NULL;
}

void e2b_watch_table_drop(e2b_watch_table *t, int wd)
{
	e2b_watch_dir *d = find(t, wd);
	if (!d)
		return;
	free(d->rel);
	*d = t->v[--t->n];
}

void e2b_watch_table_free(e2b_watch_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].rel);
	free(t->v);
	*t = (e2b_watch_table){.max = t->max};
}

int e2b_watch_name(const char *rel, const char *name, char *out, size_t size)
{
	int n = *rel ? snprintf(out, size, "%s/%s", rel, name) : snprintf(out, size, "%s", name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
