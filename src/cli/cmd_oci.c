/* sbx export | import | template add | template ls */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cmd_export(cli *c, int argc, char **argv)
{
	const char *pos[2] = {0};
	int n = 0;
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			return cli_usage_error("export", "unknown option '%s'", argv[i]);
		if (n >= 2)
			return cli_usage_error("export", "too many arguments");
		pos[n++] = argv[i];
	}
	if (n != 2)
		return cli_usage_error("export", "expected: sbx export SNAPSHOT oci:DIR[:TAG]");
	if (!startswith(pos[1], "oci:"))
		return cli_usage_error("export", "destination '%s' must be oci:DIR[:TAG]", pos[1]);
	int r = cli_open_ctx(c);
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
	const char *ref = NULL, *name = NULL;
	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--name")) {
			if (i + 1 >= argc)
				return cli_usage_error("import", "--name needs a value");
			name = argv[++i];
		} else if (startswith(argv[i], "--name="))
			name = argv[i] + 7;
		else if (argv[i][0] == '-')
			return cli_usage_error("import", "unknown option '%s'", argv[i]);
		else if (!ref)
			ref = argv[i];
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
	if (argc < 2)
		return cli_usage_error("template", "expected: sbx template add NAME SOURCE | sbx template ls");
	const char *sub = argv[1];
	json_t *j = NULL;
	sbx_err *e = NULL;
	int r;
	if (streq(sub, "add")) {
		if (argc != 4 || argv[2][0] == '-' || argv[3][0] == '-')
			return cli_usage_error("template", "expected: sbx template add NAME oci:DIR[:TAG]|dir:PATH|host|SNAPSHOT");
		if ((r = cli_open_ctx(c)))
			return r;
		if (sbx_template_add(c->ctx, argv[2], argv[3], &j, &e) < 0)
			return cli_fail("template add", e);
		if (c->json)
			cli_print_json(j);
		else {
			printf("%s %s\n", argv[2], json_string_value(json_object_get(j, "snapshot_id")));
			json_decref(j);
		}
		return 0;
	}
	if (streq(sub, "ls") || streq(sub, "list")) {
		if (argc != 2)
			return cli_usage_error("template", "unexpected argument '%s'", argv[2]);
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
			       json_string_value(json_object_get(v, "snapshot_id")), json_array_size(json_object_get(v, "layers")),
			       base ? base : "(image)");
		}
		json_decref(j);
		return 0;
	}
	return cli_usage_error("template", "unknown subcommand '%s' (add or ls)", sub);
}
