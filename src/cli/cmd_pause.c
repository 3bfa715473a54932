/* sbx pause ID, sbx resume ID (docs/warm.md). */
#include <stdio.h>

#include "cli/cli.h"

static int warm_cmd(cli *c, int argc, char **argv, const char *cmd,
		    int (*fn)(sbx_ctx *, const char *, json_t **, sbx_err **))
{
	if (argc != 2 || argv[1][0] == '-')
		return argc < 2 ? cli_usage_error(cmd, "missing environment id")
				: cli_usage_error(
				      cmd, argc > 2 ? "too many arguments" : "unknown option '%s'", argv[1]);
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (fn(c->ctx, argv[1], &j, &e) < 0)
		return cli_fail(cmd, e);
	if (c->json)
		cli_print_json(j);
	else {
		const char *id = json_string_value(json_object_get(j, "environment_id"));
		bool restarted = json_is_true(json_object_get(j, "restarted"));
		printf("%s %s%s\n", id ? id : argv[1], json_string_value(json_object_get(j, "state")),
		       restarted ? " (started again: its earlier processes are gone)" : "");
		json_decref(j);
	}
	return 0;
}

int cmd_pause(cli *c, int argc, char **argv)
{
	return warm_cmd(c, argc, argv, "pause", sbx_env_pause);
}

int cmd_resume(cli *c, int argc, char **argv)
{
	return warm_cmd(c, argc, argv, "resume", sbx_env_resume);
}
