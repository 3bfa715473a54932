/* sbx snapshot | restore | fork | snapshots */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cmd_snapshot(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {{"label", required_argument, NULL, 'l'}, {0}};
	cli_opts p = {.cmd = "snapshot", .shortopts = "l:", .longopts = longopts, .tail_after = -1};
	const char *id = NULL, *label = NULL;
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (o == 'l')
			label = p.arg;
		else if (!id)
			id = p.arg;
		else
			return cli_usage_error("snapshot", "too many arguments");
	}
	if (!id)
		return cli_usage_error("snapshot", "missing environment id");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_snapshot(c->ctx, id, label, &j, &e) < 0)
		return cli_fail("snapshot", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s\n", json_string_value(json_object_get(j, "snapshot_id")));
		json_decref(j);
	}
	return 0;
}

int cmd_restore(cli *c, int argc, char **argv)
{
	const char *pos[2];
	int n, r = cli_args("restore", argc, argv, pos, 2, &n);
	if (r)
		return r;
	if (n != 2)
		return cli_usage_error("restore", "expected: sbx restore ID SNAPSHOT");
	r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_restore(c->ctx, pos[0], pos[1], &j, &e) < 0)
		return cli_fail("restore", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s\n", json_string_value(json_object_get(j, "environment_id")));
		json_decref(j);
	}
	return 0;
}

#define SNAPSHOTS_RM_MAX 64

/* sbx snapshots rm REF...: each deleted, its layers left to the next gc. */
static int snapshots_rm(cli *c, const char *const *refs, int n)
{
	int r = cli_open_ctx(c);
	if (r)
		return r;
	int status = 0;
	for (int i = 0; i < n; i++) {
		sbx_err *e = NULL;
		if (sbx_snapshot_delete(c->ctx, refs[i], &e) < 0)
			status = cli_fail("snapshots rm", e);
		else if (!c->json)
			printf("%s\n", refs[i]);
	}
	if (c->json && !status)
		printf("{}\n");
	return status;
}

int cmd_snapshots(cli *c, int argc, char **argv)
{
	const char *pos[SNAPSHOTS_RM_MAX + 1];
	int n, r = cli_args("snapshots", argc, argv, pos, SNAPSHOTS_RM_MAX + 1, &n);
	if (r)
		return r;
	if (n > 0 && streq(pos[0], "rm")) {
		if (n == 1)
			return cli_usage_error("snapshots",
					       "rm: name the snapshots (digest, prefix or label)");
		if (n > SNAPSHOTS_RM_MAX + 1)
			return cli_usage_error("snapshots", "rm: at most %d snapshots at once",
					       SNAPSHOTS_RM_MAX);
		return snapshots_rm(c, pos + 1, n - 1);
	}
	if (n > 0)
		return cli_usage_error("snapshots", "unexpected argument '%s'", pos[0]);
	r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_snapshot_list(c->ctx, &j, &e) < 0)
		return cli_fail("snapshots", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	printf("%-20s %-16s %-20s %-21s %10s\n", "SNAPSHOT", "LABEL", "PARENT", "CREATED", "SIZE");
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(j, "snapshots"), i, v)
	{
		const char *sid = json_string_value(json_object_get(v, "snapshot_id"));
		const char *label = json_string_value(json_object_get(v, "label"));
		const char *parent = json_string_value(json_object_get(v, "parent"));
		printf("%-20.19s %-16s %-20.19s %-21s %10lld\n", sid, label ? label : "-",
		       parent ? parent : "-", json_string_value(json_object_get(v, "created_at")) ?: "-",
		       (long long)json_integer_value(json_object_get(v, "size_bytes")));
	}
	json_decref(j);
	return 0;
}
