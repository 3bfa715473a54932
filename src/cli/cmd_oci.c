/* sbx export | import | template add | template ls */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cmd_export(cli *c, int argc, char **argv)
{
	const char *pos[2] = {0};
	int n, r = cli_args("export", argc, argv, pos, 2, &n);
	if (r)
		return r;
	if (n > 2)
		return cli_usage_error("export", "too many arguments");
	if (n != 2)
		return cli_usage_error("export", "expected: sbx export SNAPSHOT oci:DIR[:TAG]");
	if (!startswith(pos[1], "oci:"))
		return cli_usage_error("export", "destination '%s' must be oci:DIR[:TAG]", pos[1]);
	r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_snapshot_export(c->ctx, pos[0], pos[1], &j, &e) < 0)
		return cli_fail("export", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s\n", json_string_value(json_object_get(j, "manifest_digest")));
		json_decref(j);
	}
	return 0;
}

int cmd_import(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {{"name", required_argument, NULL, 'n'}, {0}};
	cli_opts p = {.cmd = "import", .longopts = longopts, .tail_after = -1};
	const char *ref = NULL, *name = NULL;
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (o == 'n')
			name = p.arg;
		else if (!ref)
			ref = p.arg;
		else
			return cli_usage_error("import", "too many arguments");
	}
	if (!ref)
		return cli_usage_error("import", "expected: sbx import oci:DIR[:TAG] [--name N]");
	if (!startswith(ref, "oci:"))
		return cli_usage_error("import", "source '%s' must be oci:DIR[:TAG]", ref);
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_image_import(c->ctx, ref, name, &j, &e) < 0)
		return cli_fail("import", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s %s\n", json_string_value(json_object_get(j, "name")),
		       json_string_value(json_object_get(j, "snapshot_id")));
		json_decref(j);
	}
	return 0;
}

int cmd_template(cli *c, int argc, char **argv)
{
	const char *pos[3] = {0};
	int n;
	if (cli_args("template", argc, argv, pos, 3, &n))
		return EXIT_SBX;
	if (n < 1)
		return cli_usage_error("template",
				       "expected: sbx template add NAME SOURCE | sbx template ls");
	const char *sub = pos[0];
	json_t *j = NULL;
	sbx_err *e = NULL;
	int r;
	if (streq(sub, "add")) {
		if (n != 3)
			return cli_usage_error(
			    "template",
			    "expected: sbx template add NAME oci:DIR[:TAG]|dir:PATH|host|SNAPSHOT");
		if ((r = cli_open_ctx(c)))
			return r;
		if (sbx_template_add(c->ctx, pos[1], pos[2], &j, &e) < 0)
			return cli_fail("template add", e);
		if (c->json)
			cli_print_json(j);
		else {
			printf("%s %s\n", pos[1], json_string_value(json_object_get(j, "snapshot_id")));
			json_decref(j);
		}
		return 0;
	}
	if (streq(sub, "ls") || streq(sub, "list")) {
		if (n != 1)
			return cli_usage_error("template", "unexpected argument '%s'", pos[1]);
		if ((r = cli_open_ctx(c)))
			return r;
		if (sbx_template_list(c->ctx, &j, &e) < 0)
			return cli_fail("template ls", e);
		if (c->json) {
			cli_print_json(j);
			return 0;
		}
		printf("%-24s %-20s %-7s %s\n", "NAME", "SNAPSHOT", "LAYERS", "BASE");
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(j, "templates"), i, v)
		{
			const char *base = json_string_value(json_object_get(v, "base_template"));
			printf("%-24s %-20.19s %-7zu %s\n", json_string_value(json_object_get(v, "name")),
			       json_string_value(json_object_get(v, "snapshot_id")),
			       json_array_size(json_object_get(v, "layers")), base ? base : "(image)");
		}
		json_decref(j);
		return 0;
	}
	return cli_usage_error("template", "unknown subcommand '%s' (add or ls)", sub);
}
