/* E2B's user in a sandbox's /etc/passwd and /etc/group (src/server/e2b_user.h). */
#include <stdlib.h>
#include <string.h>

#include "server/e2b_base.h"
#include "server/e2b_user.h"
#include "unit.h"
#include "util/macro.h"

TEST(appended_when_absent)
{
	bool oom;
	char *s = e2b_user_add_line("root:x:0:0:root:/root:/bin/bash\n", E2B_USER_PASSWD, &oom);
	CHECK(s && !oom);
	CHECK_STREQ(s, "root:x:0:0:root:/root:/bin/bash\n" E2B_USER_PASSWD "\n");
	free(s);
	s = e2b_user_add_line("root:x:0:", E2B_USER_GROUP, &oom); /* no final newline */
	CHECK_STREQ(s, "root:x:0:\n" E2B_USER_GROUP "\n");
	free(s);
	s = e2b_user_add_line(NULL, E2B_USER_GROUP, &oom);
	CHECK_STREQ(s, E2B_USER_GROUP "\n");
	free(s);
}

TEST(before_another_user_of_uid_1000)
{
	bool oom;
	char *s = e2b_user_add_line("root:x:0:0::/root:/bin/sh\nubuntu:x:1000:1000::/home/ubuntu:/bin/bash\n",
				    E2B_USER_PASSWD, &oom);
	CHECK_STREQ(s, "root:x:0:0::/root:/bin/sh\n" E2B_USER_PASSWD
		       "\nubuntu:x:1000:1000::/home/ubuntu:/bin/bash\n");
	free(s);
	/* an id that only starts the same is another id */
	s = e2b_user_add_line("a:x:10000:1::/:/bin/sh\n", E2B_USER_PASSWD, &oom);
	CHECK_STREQ(s, "a:x:10000:1::/:/bin/sh\n" E2B_USER_PASSWD "\n");
	free(s);
}

TEST(nothing_when_present)
{
	bool oom;
	CHECK(e2b_user_add_line("root:x:0:0::/root:/bin/sh\nuser:x:1001:1001::/u:/bin/sh\n", E2B_USER_PASSWD,
				&oom) == NULL);
	CHECK(!oom);
	/* "username" is not "user" */
	char *s = e2b_user_add_line("username:x:5:5::/:/bin/sh\n", E2B_USER_PASSWD, &oom);
	CHECK(s != NULL);
	free(s);
}

/* The base snapshot's label names what it holds: the host's passwd and group. */
TEST(base_label_follows_the_host_files)
{
	char a[E2B_BASE_LABEL_MAX], b[E2B_BASE_LABEL_MAX];
	e2b_base_label("root:x:0:0::/root:/bin/sh\n", "root:x:0:\n", false, a);
	CHECK(strncmp(a, E2B_BASE_LABEL_PREFIX, strlen(E2B_BASE_LABEL_PREFIX)) == 0);
	CHECK(strlen(a) == strlen(E2B_BASE_LABEL_PREFIX) + 16);
	for (const char *p = a + strlen(E2B_BASE_LABEL_PREFIX); *p; p++)
		CHECK((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
	e2b_base_label("root:x:0:0::/root:/bin/sh\n", "root:x:0:\n", false, b);
	CHECK_STREQ(a, b);
	/* a user more, or the same bytes moved from one file to the other: another label */
	e2b_base_label("root:x:0:0::/root:/bin/sh\nu:x:5:5::/:/bin/sh\n", "root:x:0:\n", false, b);
	CHECK(!streq(a, b));
	e2b_base_label("root:x:0:0::/root:/bin/sh\nroot:x:0:\n", "", false, b);
	CHECK(!streq(a, b));
	/* a missing file is not an empty one */
	e2b_base_label(NULL, "root:x:0:\n", false, a);
	e2b_base_label("", "root:x:0:\n", false, b);
	CHECK(!streq(a, b));
	/* the python link is part of what it holds */
	e2b_base_label("root:x:0:0::/root:/bin/sh\n", "root:x:0:\n", false, a);
	e2b_base_label("root:x:0:0::/root:/bin/sh\n", "root:x:0:\n", true, b);
	CHECK(!streq(a, b));
}
