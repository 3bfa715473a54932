/* E2B's user in a sandbox's /etc/passwd and /etc/group (src/server/e2b_user.h). */
#include <stdlib.h>

#include "server/e2b_user.h"
#include "unit.h"

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
