/* sbx push | pull: snapshots through OCI registries. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cmd_push(cli *c, int argc, char **argv)
{
	const char *pos[2] = {0};
	int n = 0;
	bool insecure = false;
	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--insecure"))
			insecure = true;
		else if (argv[i][0] == '-')
			return cli_usage_error("push", "unknown option '%s'", argv[i]);
		else if (n >= 2)
			return cli_usage_error("push", "too many arguments");
		else
			pos[n++] = argv[i];
	}
	if (n != 2)
		return cli_usage_error("push", "expected: sbx push SNAPSHOT REGISTRY/REPO:TAG [--insecure]");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_snapshot_push(c->ctx, pos[0], pos[1], insecure, &j, &e) < 0)
		return cli_fail("push", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s\n", json_string_value(json_object_get(j, "manifest_digest")));
		json_decref(j);
	}
	return 0;
}

int cmd_pull(cli *c, int argc, char **argv)
{
	const char *ref = NULL, *name = NULL;
	bool insecure = false;
	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--insecure"))
			insecure = true;
		else if (streq(argv[i], "--name")) {
			if (i + 1 >= argc)
				return cli_usage_error("pull", "--name needs a value");
			name = argv[++i];
		} else if (startswith(argv[i], "--name="))
			name = argv[i] + 7;
		else if (argv[i][0] == '-')
			return cli_usage_error("pull", "unknown option '%s'", argv[i]);
		else if (!ref)
			ref = argv[i];
		else
			return cli_usage_error("pull", "too many arguments");
	}
	if (!ref)
		return cli_usage_error("pull",
				       "expected: sbx pull REGISTRY/REPO:TAG [--name N] [--insecure]");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_snapshot_pull(c->ctx, ref, name, insecure, &j, &e) < 0)
		return cli_fail("pull", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s\n", json_string_value(json_object_get(j, "snapshot_id")));
		json_decref(j);
	}
	return 0;
}
