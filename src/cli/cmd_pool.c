/* sbx pool set|ls|rm (docs/warm.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int cmd_pool(cli *c, int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL, *source = NULL, *policy = NULL;
	long size = -1;
	bool code = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if ((!strcmp(a, "--size") || !strcmp(a, "--policy")) && i + 1 >= argc)
			return cli_usage_error("pool", "%s needs a value", a);
		if (!strcmp(a, "--size")) {
			/* Digits only: strtol would take "", " 3" and "+3". */
			const char *v = argv[++i];
			size = *v && strspn(v, "0123456789") == strlen(v) && strlen(v) <= 3
				   ? strtol(v, NULL, 10)
				   : -1;
			if (size < 0 || size > 256)
				return cli_usage_error("pool", "invalid --size '%s': a number from 0 to 256",
						       v);
		} else if (!strcmp(a, "--policy"))
			policy = argv[++i];
		else if (!strcmp(a, "--code"))
			code = true;
		else if (a[0] == '-' && a[1])
			return cli_usage_error("pool", "unknown option '%s'", a);
		else if (!source)
			source = a;
		else
			return cli_usage_error("pool", "too many arguments");
	}
	bool ls = sub && !strcmp(sub, "ls"), set = sub && !strcmp(sub, "set"), rm = sub && !strcmp(sub, "rm");
	if (!ls && !set && !rm)
		return cli_usage_error("pool", "expected set, ls or rm");
	if ((set || rm) && !source)
		return cli_usage_error("pool", "missing template or snapshot");
	if (set && size < 0)
		return cli_usage_error("pool", "set needs --size N");
	if (ls && (source || policy || code || size >= 0))
		return cli_usage_error("pool", "ls takes no arguments");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	sbx_pool_opts po = SBX_POOL_OPTS_INIT;
	po.policy = policy;
	po.code = code;
	if (set)
		r = sbx_pool_set_opts(c->ctx, source, (int)size, &po, &j, &e);
	else if (rm)
		r = sbx_pool_remove_opts(c->ctx, source, &po, &j, &e);
	else
		r = sbx_pool_list(c->ctx, &j, &e);
	if (r < 0)
		return cli_fail("pool", e);
	if (c->json || !ls) {
		if (c->json)
			cli_print_json(j);
		else {
			printf("%s\n", json_string_value(json_object_get(j, "pool")));
			json_decref(j);
		}
		return 0;
	}
	printf("%-18s %-9s %-5s %-5s %-10s %-4s %-12s %s\n", "POOL", "KIND", "SIZE", "READY", "POLICY",
	       "CODE", "OWNER", "SOURCE");
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(j, "pools"), i, p)
	{
		const char *pol = json_string_value(json_object_get(p, "policy"));
		/* A pool a server keeps for itself (docs/warm.md) names it. */
		const json_t *own = json_object_get(p, "owner");
		char owner[32] = "-";
		if (json_is_object(own))
			snprintf(owner, sizeof(owner), "pid %lld",
				 json_integer_value(json_object_get(own, "pid")));
		printf("%-18s %-9s %-5lld %-5lld %-10s %-4s %-12s %s\n",
		       json_string_value(json_object_get(p, "pool")),
		       json_string_value(json_object_get(p, "kind")),
		       json_integer_value(json_object_get(p, "size")),
		       json_integer_value(json_object_get(p, "ready")), pol ? pol : "-",
		       json_is_true(json_object_get(p, "code")) ? "yes" : "-", owner,
		       json_string_value(json_object_get(p, "source")));
	}
	json_decref(j);
	return 0;
}
