/* A sandbox's spare login shell: which Starts it serves and which requests
 * drop it (src/server/e2b_spare.h). */
#include <stdlib.h>
#include <string.h>

#include "server/e2b_spare.h"
#include "unit.h"

static bool fits(const char *js, const char *home)
{
	json_t *j = json_loads(js, 0, NULL);
	if (!j)
		abort();
	e2b_start_req r;
	sbx_err *e = NULL;
	bool ok = e2b_start_parse(j, home, &r, &e) == 0 && e2b_spare_fits(&r, home);
	if (!e)
		e2b_start_req_clear(&r);
	sbx_err_free(e);
	json_decref(j);
	return ok;
}

TEST(spare_serves_only_what_a_fresh_login_shell_does_alike)
{
	const char *h = "/home/user";
	/* What commands.run sends: with or without the empty envs, the home as cwd, stdin or not. */
	CHECK(fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"]}}", h));
	CHECK(fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"true\"],\"envs\":{},"
		   "\"cwd\":\"/home/user\"},\"stdin\":true,\"tag\":\"t\"}",
		   h));
	CHECK(fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"x\"],\"cwd\":\"\"}}", h));
	/* Per-call envs (the profile may set them again: /etc/profile sets PATH), another cwd. */
	CHECK(!fits(
	    "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"x\"],\"envs\":{\"A\":\"1\"}}}",
	    h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"x\"],\"cwd\":\"/tmp\"}}",
		    h));
	CHECK(
	    !fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"x\"],\"cwd\":\"sub\"}}", h));
	/* Other shapes: a pty, another shell or flags, extra arguments, an empty command. */
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"x\"]},"
		    "\"pty\":{\"size\":{\"cols\":80,\"rows\":24}}}",
		    h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-i\",\"-l\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"bash\",\"args\":[\"-l\",\"-c\",\"x\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-l\",\"-c\",\"x\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-c\",\"x\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"x\",\"a0\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\"]}}", h));
	CHECK(!fits("{\"process\":{\"cmd\":\"/bin/bash\"}}", h));
	/* The size bound: it reads byte by byte. */
	size_t n = E2B_SPARE_CMD_MAX;
	char *js = malloc(n + 200), *cmd = malloc(n + 2);
	memset(cmd, 'x', n + 1);
	cmd[n] = 0;
	snprintf(js, n + 200, "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"%s\"]}}", cmd);
	CHECK(fits(js, h));
	cmd[n] = 'x';
	cmd[n + 1] = 0;
	snprintf(js, n + 200, "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"%s\"]}}", cmd);
	CHECK(!fits(js, h));
	free(js);
	free(cmd);
	e2b_start_req empty = {0};
	CHECK(!e2b_spare_fits(&empty, h));
}

TEST(spare_dropped_by_what_may_write)
{
	uint16_t envd = 49983;
	/* Reads and the process service keep it. */
	CHECK(!e2b_spare_invalidated_by(envd, "POST", "/process.Process/Start"));
	CHECK(!e2b_spare_invalidated_by(envd, "POST", "/process.Process/List"));
	CHECK(!e2b_spare_invalidated_by(envd, "GET", "/files"));
	CHECK(!e2b_spare_invalidated_by(envd, "GET", "/health"));
	CHECK(!e2b_spare_invalidated_by(envd, "GET", "/envs"));
	CHECK(!e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/Stat"));
	CHECK(!e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/ListDir"));
	CHECK(!e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/WatchDir"));
	CHECK(!e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/GetWatcherEvents"));
	CHECK(!e2b_spare_invalidated_by(49999, "GET", "/contexts"));
	CHECK(!e2b_spare_invalidated_by(49999, "GET", "/health"));
	/* Writes drop it, and whatever is not known to be a read. */
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/files"));
	CHECK(e2b_spare_invalidated_by(envd, "PUT", "/files"));
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/MakeDir"));
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/Move"));
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/Remove"));
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/Stat2"));
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/filesystem.Filesystem/"));
	CHECK(e2b_spare_invalidated_by(envd, "POST", "/something/new"));
	CHECK(e2b_spare_invalidated_by(49999, "POST", "/execute"));
	CHECK(e2b_spare_invalidated_by(49999, "POST", "/contexts/abc/restart"));
	CHECK(e2b_spare_invalidated_by(49999, "DELETE", "/contexts/abc"));
	CHECK(e2b_spare_invalidated_by(8080, "GET", "/"));
	CHECK(e2b_spare_invalidated_by(envd, NULL, "/files"));
	CHECK(e2b_spare_invalidated_by(envd, "GET", NULL));
}
