/* sbx mcp: the MCP server on stdio (the protocol lives in src/server). */
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/mcp.h"
#include "util/macro.h"

int cmd_mcp(cli *c, int argc, char **argv)
{
	if (argc > 1)
		return cli_usage_error("mcp", "unexpected argument '%s'", argv[1]);
	int r = cli_open_ctx(c);
	if (r != 0)
		return r;
	sbx_err *e = NULL;
	if (mcp_serve_stdio(c->ctx, STDIN_FILENO, STDOUT_FILENO, &e) < 0)
		return cli_fail("mcp", e);
	return 0;
}
