/* sbx trace ls | show | stats | export | inspect, and sbx replay. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

#define MAX_FILTER 64

/* "a,b,c" appended to a NULL-terminated list. */
static int split_into(const char *cmd, const char *v, const char **list, size_t *n, char **keep)
{
	char *copy = strdup(v);
	if (!copy)
		return cli_usage_error(cmd, "out of memory");
	*keep = copy;
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (*n >= MAX_FILTER - 1)
			return cli_usage_error(cmd, "too many filter values (at most %d)", MAX_FILTER - 1);
		list[(*n)++] = t;
	}
	list[*n] = NULL;
	return 0;
}

static int trace_ls(cli *c)
{
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_trace_list(c->ctx, &j, &e) < 0)
		return cli_fail("trace ls", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	printf("%-19s %-12s %-19s %-6s %9s %5s %-6s %s\n", "TRACE", "ENV", "SNAPSHOT", "EXIT", "SYSCALLS",
	       "LOST", "REC", "COMMAND");
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(j, "traces"), i, t)
	{
		const char *tid = json_string_value(json_object_get(t, "trace_id")) ?: "";
		const char *sid = json_string_value(json_object_get(t, "snapshot_id")) ?: "";
		json_t *ec = json_object_get(t, "exit_code");
		char exit_s[16];
		snprintf(exit_s, sizeof(exit_s), "%s", json_is_integer(ec) ? "" : "-");
		if (json_is_integer(ec))
			snprintf(exit_s, sizeof(exit_s), "%lld", (long long)json_integer_value(ec));
		char cmdline[256] = "";
		size_t k;
		json_t *a;
		json_array_foreach(json_object_get(t, "argv"), k, a)
		{
			size_t l = strlen(cmdline);
			snprintf(cmdline + l, sizeof(cmdline) - l, "%s%s", k ? " " : "",
				 json_string_value(a) ?: "");
		}
		printf("%-19.19s %-12.12s %-19.19s %-6s %9lld %5lld %-6s %s%s\n", tid,
		       json_string_value(json_object_get(t, "environment_id")) ?: "-", sid, exit_s,
		       (long long)json_integer_value(json_object_get(t, "syscalls")),
		       (long long)json_integer_value(json_object_get(t, "lost")),
		       json_string_value(json_object_get(t, "recorder")) ?: "", cmdline,
		       json_is_string(json_object_get(t, "replay_of")) ? "  (replay)" : "");
	}
	json_decref(j);
	return 0;
}

int cmd_trace(cli *c, int argc, char **argv)
{
	if (argc >= 2 && streq(argv[1], "html"))
		return cmd_trace_html(c, argc - 1, argv + 1);
	if (argc < 2)
		return cli_usage_error("trace", "expected ls, show, stats, export or inspect");
	const char *sub = argv[1];
	const char *ref = NULL, *format = NULL, *outfile = NULL;
	const char *pids[MAX_FILTER] = {0}, *calls[MAX_FILTER] = {0};
	size_t n_pids = 0, n_calls = 0;
	char *keep[2 * MAX_FILTER] = {0};
	size_t n_keep = 0;
	enum { O_FORMAT = 256 };
	static const struct option longopts[] = {
	    {"pid", required_argument, NULL, 'p'},
	    {"syscall", required_argument, NULL, 'e'},
	    {"format", required_argument, NULL, O_FORMAT},
	    {"output", required_argument, NULL, 'o'},
	    {0},
	};
	/* the subcommand stands where getopt expects the program name */
	cli_opts p = {.cmd = "trace", .shortopts = "p:e:o:", .longopts = longopts, .tail_after = -1};
	int r = 0, o;
	while (!r && (o = cli_opt_next(&p, argc - 1, argv + 1)) != CLI_END) {
		const char *v = p.arg;
		if (o == CLI_ERR)
			r = EXIT_SBX;
		else if (o == 'p')
			r = split_into("trace", v, pids, &n_pids, &keep[n_keep++]);
		else if (o == 'e')
			r = split_into("trace", v, calls, &n_calls, &keep[n_keep++]);
		else if (o == O_FORMAT)
			format = v;
		else if (o == 'o')
			outfile = v;
		else if (!ref)
			ref = v;
		else
			r = cli_usage_error("trace", "too many arguments");
	}
	if (!r && !streq(sub, "ls") && !ref)
		r = cli_usage_error("trace", "missing trace id (see 'sbx trace ls')");
	if (!r)
		r = cli_open_ctx(c);
	sbx_err *e = NULL;
	sbx_trace_filter f = {.pids = n_pids ? pids : NULL, .syscalls = n_calls ? calls : NULL};
	if (r) {
	} else if (streq(sub, "ls") || streq(sub, "list")) {
		r = trace_ls(c);
	} else if (streq(sub, "show")) {
		json_t *j = NULL;
		if (c->json)
			r = sbx_trace_events_json(c->ctx, ref, &f, &j, &e) < 0 ? cli_fail("trace show", e)
									       : (cli_print_json(j), 0);
		else
			r = sbx_trace_show(c->ctx, ref, &f, stdout, &e) < 0 ? cli_fail("trace show", e) : 0;
	} else if (streq(sub, "stats")) {
		json_t *j = NULL;
		if (c->json)
			r = sbx_trace_stats(c->ctx, ref, &j, &e) < 0 ? cli_fail("trace stats", e)
								     : (cli_print_json(j), 0);
		else
			r = sbx_trace_stats_text(c->ctx, ref, stdout, &e) < 0 ? cli_fail("trace stats", e)
									      : 0;
	} else if (streq(sub, "export")) {
		if (!format || !streq(format, "chrome"))
			r = cli_usage_error(
			    "trace",
			    "export needs --format chrome (the Chrome trace-event JSON, for Perfetto)");
		else {
			FILE *out = outfile ? fopen(outfile, "we") : stdout;
			if (!out) {
				fprintf(stderr, "sbx: trace export: open '%s': %s\n", outfile,
					strerror(errno));
				r = EXIT_SBX;
			} else {
				r = sbx_trace_export_chrome(c->ctx, ref, out, &e) < 0
					? cli_fail("trace export", e)
					: 0;
				if (outfile && fclose(out) != 0 && !r) {
					fprintf(stderr, "sbx: trace export: write '%s': %s\n", outfile,
						strerror(errno));
					r = EXIT_SBX;
				}
			}
		}
	} else if (streq(sub, "inspect")) {
		json_t *j = NULL;
		r = sbx_trace_manifest(c->ctx, ref, &j, &e) < 0 ? cli_fail("trace inspect", e)
								: (cli_print_json(j), 0);
	} else {
		r = cli_usage_error("trace", "unknown subcommand '%s' (ls, show, stats, export, inspect)",
				    sub);
	}
	for (size_t i = 0; i < n_keep; i++)
		free(keep[i]);
	return r;
}

int cmd_replay(cli *c, int argc, char **argv)
{
	enum { O_INPUTS = 256 };
	static const struct option longopts[] = {
	    {"inputs", required_argument, NULL, O_INPUTS},
	    {0},
	};
	cli_opts p = {.cmd = "replay", .longopts = longopts, .tail_after = -1};
	const char *trace = NULL, *inputs = NULL;
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (o == O_INPUTS)
			inputs = p.arg;
		else if (!trace)
			trace = p.arg;
		else
			return cli_usage_error("replay",
					       "expected: sbx replay [--inputs read-set|volumes] TRACE");
	}
	if (!trace)
		return cli_usage_error("replay", "expected: sbx replay [--inputs read-set|volumes] TRACE");
	if (inputs && !streq(inputs, "read-set") && !streq(inputs, "read_set") && !streq(inputs, "volumes"))
		return cli_usage_error("replay", "--inputs: expected 'read-set' or 'volumes', not '%s'",
				       inputs);
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_trace_replay_inputs(c->ctx, trace, inputs, &j, &e) < 0)
		return cli_fail("replay", e);
	bool match = streq(json_string_value(json_object_get(j, "verdict")) ?: "", "match");
	if (c->json) {
		cli_print_json(j);
		return match ? 0 : 1;
	}
	if (match) {
		printf("MATCH (%.1f ms)\n", json_number_value(json_object_get(j, "replay_ms")));
		size_t i;
		json_t *n;
		json_array_foreach(json_object_get(j, "notes"), i, n)
		    printf("  note: %s\n", json_string_value(n));
	} else {
		json_t *d = json_object_get(j, "divergence");
		json_t *pid = json_object_get(d, "pid");
		printf("DIVERGED: %s at index %lld", json_string_value(json_object_get(d, "kind")) ?: "?",
		       (long long)json_integer_value(json_object_get(d, "index")));
		if (json_is_integer(pid))
			printf(", pid %lld", (long long)json_integer_value(pid));
		if (json_is_string(json_object_get(d, "path")))
			printf(", path %s", json_string_value(json_object_get(d, "path")));
		printf("\n  expected: %s\n  actual:   %s\n",
		       json_string_value(json_object_get(d, "expected")) ?: "",
		       json_string_value(json_object_get(d, "actual")) ?: "");
	}
	json_decref(j);
	return match ? 0 : 1;
}
