/* envd's directory watch, its pure half (src/server/e2b_watch_map.h). */
#include <errno.h>
#include <string.h>
#include <sys/inotify.h>

#include "server/e2b_watch_map.h"
#include "unit.h"

TEST(types_as_envd_reports_them)
{
	const char *t[5];
	CHECK(e2b_watch_types(IN_CREATE, t) == 1 && strcmp(t[0], "EVENT_TYPE_CREATE") == 0);
	CHECK(e2b_watch_types(IN_MOVED_TO, t) == 1 && strcmp(t[0], "EVENT_TYPE_CREATE") == 0);
	CHECK(e2b_watch_types(IN_DELETE, t) == 1 && strcmp(t[0], "EVENT_TYPE_REMOVE") == 0);
	CHECK(e2b_watch_types(IN_MODIFY, t) == 1 && strcmp(t[0], "EVENT_TYPE_WRITE") == 0);
	CHECK(e2b_watch_types(IN_MOVED_FROM, t) == 1 && strcmp(t[0], "EVENT_TYPE_RENAME") == 0);
	CHECK(e2b_watch_types(IN_ATTRIB, t) == 1 && strcmp(t[0], "EVENT_TYPE_CHMOD") == 0);
	/* a directory made: the same type, IN_ISDIR aside */
	CHECK(e2b_watch_types(IN_CREATE | IN_ISDIR, t) == 1 && strcmp(t[0], "EVENT_TYPE_CREATE") == 0);
	/* several bits: one each, in envd's order */
	CHECK(e2b_watch_types(IN_ATTRIB | IN_MODIFY | IN_CREATE, t) == 3);
	CHECK(strcmp(t[0], "EVENT_TYPE_CREATE") == 0 && strcmp(t[1], "EVENT_TYPE_WRITE") == 0 &&
	      strcmp(t[2], "EVENT_TYPE_CHMOD") == 0);
	/* about the watched directory itself, or the kernel's own: none */
	CHECK(e2b_watch_types(IN_DELETE_SELF, t) == 0);
	CHECK(e2b_watch_types(IN_MOVE_SELF, t) == 0);
	CHECK(e2b_watch_types(IN_IGNORED, t) == 0);
	CHECK(e2b_watch_types(IN_Q_OVERFLOW, t) == 0);
	CHECK(e2b_watch_types(IN_OPEN | IN_ACCESS | IN_CLOSE_WRITE, t) == 0);
	/* the mask asks for what is reported, and only directories */
	uint32_t m = e2b_watch_mask();
	CHECK((m & (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_ATTRIB)) ==
	      (IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_ATTRIB));
	CHECK(m & IN_ONLYDIR);
	CHECK(!(m & (IN_OPEN | IN_ACCESS)));
}

TEST(table_names_events_under_the_root)
{
	e2b_watch_table t = {.max = 3};
	CHECK(e2b_watch_table_put(&t, 1, "") == 0);
	CHECK(e2b_watch_table_put(&t, 2, "a") == 0);
	CHECK(e2b_watch_table_put(&t, 3, "a/b") == 0);
	CHECK(e2b_watch_table_put(&t, 4, "c") == -ENOSPC); /* the cap */
	CHECK(strcmp(e2b_watch_table_get(&t, 3), "a/b") == 0);
	CHECK(e2b_watch_table_get(&t, 4) == NULL);
	/* moved within the tree: the same wd, a new path; no new slot */
	CHECK(e2b_watch_table_put(&t, 2, "moved") == 0);
	CHECK(strcmp(e2b_watch_table_get(&t, 2), "moved") == 0);
	e2b_watch_table_drop(&t, 2);
	CHECK(e2b_watch_table_get(&t, 2) == NULL);
	CHECK(strcmp(e2b_watch_table_get(&t, 3), "a/b") == 0);
	CHECK(strcmp(e2b_watch_table_get(&t, 1), "") == 0);
	CHECK(e2b_watch_table_put(&t, 5, "d") == 0); /* room again */
	e2b_watch_table_drop(&t, 99);		     /* not there: nothing */
	char name[16];
	CHECK(e2b_watch_name("", "f.txt", name, sizeof(name)) == 0 && strcmp(name, "f.txt") == 0);
	CHECK(e2b_watch_name("a/b", "f", name, sizeof(name)) == 0 && strcmp(name, "a/b/f") == 0);
	CHECK(e2b_watch_name("a/b", "a-long-name.txt", name, sizeof(name)) == -ENAMETOOLONG);
	e2b_watch_table_free(&t);
	CHECK(t.n == 0 && t.v == NULL && t.max == 3);
}
