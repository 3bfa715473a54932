/* sbx policy ls | show NAME|FILE | check FILE */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cmd_policy(cli *c, int argc, char **argv)
{
	const char *pos[3] = {0};
	int n;
	if (cli_args("policy", argc, argv, pos, 3, &n))
		return EXIT_SBX;
	const char *verb = pos[0];
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (verb && streq(verb, "ls") && n == 1) {
		if (sbx_policy_list(&j, &e) < 0)
			return cli_fail("policy ls", e);
		if (c->json) {
			cli_print_json(j);
			return 0;
		}
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(j, "policies"), i, p)
		{
			json_t *net = json_object_get(p, "network");
			printf("%-8s network=%-6s %s\n", json_string_value(json_object_get(p, "name")),
			       json_string_value(json_object_get(net, "mode")) ?: "-",
			       json_string_value(json_object_get(p, "description")) ?: "");
		}
		json_decref(j);
		return 0;
	}
	if (verb && (streq(verb, "show") || streq(verb, "check")) && n == 2) {
		if (sbx_policy_show(pos[1], &j, &e) < 0) {
			char what[64];
			snprintf(what, sizeof(what), "policy %s", verb);
			return cli_fail(what, e);
		}
		if (streq(verb, "check") && !c->json) {
			printf("%s: valid\n", pos[1]);
			json_decref(j);
			return 0;
		}
		cli_print_json(j);
		return 0;
	}
	return cli_usage_error("policy", "expected: sbx policy ls | show NAME|FILE | check FILE");
}
