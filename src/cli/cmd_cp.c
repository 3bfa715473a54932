/* sbx cp SRC DST: files and directory trees between the host and an
 * environment (ID:PATH on one side), as `docker cp` does. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

/* "ID:PATH" -> ref and path (both into buf); false for a host path. A
 * host path that holds a colon is written with a slash first: ./a:b. */
static bool split_env(const char *arg, char **ret_ref, const char **ret_path)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || arg[0] == '/' || arg[0] == '.' ||
	    memchr(arg, '/', (size_t)(colon - arg)))
		return false;
	*ret_ref = strndup(arg, (size_t)(colon - arg));
	*ret_path = colon + 1;
	return *ret_ref != NULL;
}

int cmd_cp(cli *c, int argc, char **argv)
{
	const char *pos[2];
	int n, r = cli_args("cp", argc, argv, pos, 2, &n);
	if (r)
		return r;
	if (n != 2)
		return cli_usage_error("cp", "expected: sbx cp SRC DST, with ID:PATH on one side");
	_cleanup_free_ char *sref = NULL, *dref = NULL;
	const char *spath = pos[0], *dpath = pos[1];
	bool sin = split_env(pos[0], &sref, &spath), din = split_env(pos[1], &dref, &dpath);
	if (sin == din)
		return cli_usage_error("cp", sin ? "both sides are in an environment: copy through the host"
						 : "neither side is in an environment: write one as ID:PATH");
	if (!*spath || !*dpath)
		return cli_usage_error("cp", "an empty path");
	r = cli_open_ctx(c);
	if (r)
		return r;
	sbx_err *e = NULL;
	if (sin ? sbx_env_copy_out(c->ctx, sref, spath, dpath, &e)
		: sbx_env_copy_in(c->ctx, dref, spath, dpath, &e))
		return cli_fail("cp", e);
	if (c->json)
		cli_print_json(
		    json_pack("{s:s,s:s,s:b}", "source", pos[0], "destination", pos[1], "copied", 1));
	return 0;
}
