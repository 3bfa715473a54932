/* sbx phase ID [agent] (docs/secrets.md) */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cmd_phase(cli *c, int argc, char **argv)
{
	const char *pos[2] = {0};
	int n, r = cli_args("phase", argc, argv, pos, 2, &n);
	if (r)
		return r;
	if (n > 2)
		return cli_usage_error("phase", "too many arguments");
	if (n < 1)
		return cli_usage_error("phase", "missing environment id");
	const char *id = pos[0], *phase = pos[1];
	r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_phase(c->ctx, id, phase, &j, &e) < 0)
		return cli_fail("phase", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	if (!json_object_get(j, "previous_phase")) {
		printf("%s\n", json_string_value(json_object_get(j, "phase")));
		json_decref(j);
		return 0;
	}
	json_t *w;
	size_t i;
	json_array_foreach(json_object_get(j, "warnings"), i, w)
	    fprintf(stderr, "sbx: warning: %s\n", json_string_value(w));
	printf("agent (setup phase ended: %lld process(es) stopped, %zu secret(s) removed, network %s)\n",
	       (long long)json_integer_value(json_object_get(j, "processes_ended")),
	       json_array_size(json_object_get(j, "secrets_removed")),
	       json_string_value(json_object_get(j, "network")));
	json_decref(j);
	return 0;
}
