/* A sandbox's spare login shell: the pure decisions (e2b_spare.h). */
#include "server/e2b_spare.h"

#include <string.h>

#include "server/e2b_ports.h"
#include "server/http_e2b.h"
#include "util/macro.h"

bool e2b_spare_fits(const e2b_start_req *r, const char *home)
{
	char *const *a = r->argv;
	if (!a || !a[0] || !streq(a[0], "/bin/bash") || !a[1] || !streq(a[1], "-l") || !a[2] ||
	    !streq(a[2], "-c") || !a[3] || a[4])
		return false;
	size_t n = strlen(a[3]);
	return n > 0 && n <= E2B_SPARE_CMD_MAX && (!r->env || !r->env[0]) && r->cwd && home &&
	       streq(r->cwd, home) && !r->pty;
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

bool e2b_spare_invalidated_by(uint16_t port, const char *method, const char *path)
{
	if (!method || !path)
		return true;
	if (port != HTTP_E2B_ENVD_PORT) /* the code interpreter, and the port proxy */
		return port != E2B_CODE_PORT || !streq(method, "GET");
	if (has_prefix(path, "/process.Process/") || streq(path, "/health") || streq(path, "/envs"))
		return false;
	if (streq(path, "/files"))
		return !streq(method, "GET") && !streq(method, "HEAD");
	static const char *const reads[] = {"Stat",	     "ListDir",		 "WatchDir",
					    "CreateWatcher", "GetWatcherEvents", "RemoveWatcher"};
	if (has_prefix(path, "/filesystem.Filesystem/")) {
		const char *m = path + strlen("/filesystem.Filesystem/");
		for (size_t i = 0; i < ARRAY_SIZE(reads); i++)
			if (streq(m, reads[i]))
				return false;
	}
	return true;
}
