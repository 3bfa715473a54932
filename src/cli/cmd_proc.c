/* sbx exec -d | ps | kill: background processes (docs/processes.md). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

int cli_exec_detach(cli *c, const char *id, sbx_exec_opts *x, bool interactive)
{
	if (interactive || x->tty)
		return cli_usage_error("exec", "-d runs without a terminal or stdin: leave out -i and -t");
	if (x->trace)
		return cli_usage_error("exec", "-d cannot be combined with --trace");
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_process_start(c->ctx, id, x, &j, &e) < 0)
		return cli_fail("exec", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("%s\n", json_string_value(json_object_get(j, "process_id")));
		json_decref(j);
	}
	return 0;
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long jint(const json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* "exit 0", "signal 15", or "-" while running. */
static void status_text(const json_t *p, char *buf, size_t n)
{
	json_t *code = json_object_get(p, "exit_code"), *sig = json_object_get(p, "signal");
	if (json_is_integer(code))
		snprintf(buf, n, "exit %lld", (long long)json_integer_value(code));
	else if (json_is_integer(sig))
		snprintf(buf, n, "signal %lld", (long long)json_integer_value(sig));
	else
		snprintf(buf, n, "-");
}

static void print_background(const json_t *procs)
{
	if (json_array_size(procs) == 0)
		return;
	printf("\n%-6s %7s %-8s %-10s %-21s %9s %-15s %s\n", "PROC", "PID", "STATE", "STATUS", "STARTED",
	       "DURATION", "OUT/ERR BYTES", "COMMAND");
	size_t i;
	json_t *p;
	json_array_foreach(procs, i, p)
	{
		char st[32], sizes[48];
		status_text(p, st, sizeof(st));
		snprintf(sizes, sizeof(sizes), "%lld%s/%lld%s", jint(p, "stdout_bytes"),
			 json_is_true(json_object_get(p, "stdout_truncated")) ? "+" : "",
			 jint(p, "stderr_bytes"),
			 json_is_true(json_object_get(p, "stderr_truncated")) ? "+" : "");
		printf("%-6s %7lld %-8s %-10s %-21s %8.1fs %-15s %s\n", jstr(p, "process_id") ?: "?",
		       jint(p, "pid"), jstr(p, "state") ?: "?", st, jstr(p, "started_at") ?: "-",
		       (double)jint(p, "duration_ms") / 1000.0, sizes, jstr(p, "command") ?: "");
	}
}

static void print_record(const json_t *p)
{
	char st[32];
	status_text(p, st, sizeof(st));
	printf("process_id:  %s\npid:         %lld\ncommand:     %s\nstate:       %s\nstatus:      %s\n",
	       jstr(p, "process_id") ?: "?", jint(p, "pid"), jstr(p, "command") ?: "",
	       jstr(p, "state") ?: "?", st);
	if (jstr(p, "end_reason") && !streq(jstr(p, "end_reason"), "exited"))
		printf("ended:       %s\n", jstr(p, "end_reason"));
	if (json_is_true(json_object_get(p, "timed_out")))
		printf("timed out:   yes\n");
	printf("started_at:  %s\nduration:    %.1fs\nstdout:      %lld bytes%s\nstderr:      %lld bytes%s\n",
	       jstr(p, "started_at") ?: "-", (double)jint(p, "duration_ms") / 1000.0, jint(p, "stdout_bytes"),
	       json_is_true(json_object_get(p, "stdout_truncated")) ? " (truncated at the output limit)" : "",
	       jint(p, "stderr_bytes"),
	       json_is_true(json_object_get(p, "stderr_truncated")) ? " (truncated at the output limit)"
								    : "");
}

/* Everything the process printed so far: stdout to stdout and stderr to
 * stderr (--json: one object with both). */
static int print_output(cli *c, const char *id, const char *proc)
{
	json_t *all = NULL;
	char *acc[2] = {NULL, NULL};
	size_t acc_len[2] = {0, 0};
	int64_t off[2] = {0, 0};
	static const char *const keys[2] = {"stdout", "stderr"};
	for (;;) {
		json_t *j = NULL;
		sbx_err *e = NULL;
		if (sbx_process_output(c->ctx, id, proc, off[0], off[1], SBX_PROCESS_OUTPUT_MAX, &j, &e) <
		    0) {
			free(acc[0]);
			free(acc[1]);
			json_decref(all);
			return cli_fail("ps", e);
		}
		bool more = false;
		for (int i = 0; i < 2; i++) {
			json_t *s = json_object_get(j, keys[i]);
			size_t n = json_string_length(s);
			if (c->json) {
				char *b = realloc(acc[i], acc_len[i] + n + 1);
				if (b) {
					memcpy(b + acc_len[i], json_string_value(s), n);
					acc_len[i] += n;
					b[acc_len[i]] = 0;
					acc[i] = b;
				}
			} else
				fwrite(json_string_value(s), 1, n, i ? stderr : stdout);
			char k[32];
			snprintf(k, sizeof(k), "%s_offset", keys[i]);
			int64_t next = json_integer_value(json_object_get(j, k));
			snprintf(k, sizeof(k), "%s_more", keys[i]);
			more |= json_is_true(json_object_get(j, k)) && next > off[i];
			off[i] = next;
		}
		json_decref(all);
		all = j;
		if (!more)
			break;
	}
	if (c->json) {
		for (int i = 0; i < 2; i++)
			json_object_set_new(all, keys[i], json_stringn(acc[i] ? acc[i] : "", acc_len[i]));
		cli_print_json(all);
	} else
		json_decref(all);
	free(acc[0]);
	free(acc[1]);
	return 0;
}

int cmd_ps(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", no_argument, NULL, 'o'}, {"wait", required_argument, NULL, 'w'}, {0}};
	cli_opts p = {.cmd = "ps", .longopts = longopts, .tail_after = -1};
	const char *id = NULL, *proc = NULL;
	bool output = false;
	int64_t wait_ms = -2;
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		sbx_err *e = NULL;
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (o == 'o')
			output = true;
		else if (o == 'w') {
			if (sbx_parse_duration(p.arg, &wait_ms, &e) < 0)
				return cli_fail("ps", e);
		} else if (!id)
			id = p.arg;
		else if (!proc)
			proc = p.arg;
		else
			return cli_usage_error("ps", "too many arguments");
	}
	if (!id)
		return cli_usage_error("ps", "missing environment id");
	if (!proc && (output || wait_ms != -2))
		return cli_usage_error("ps", "--output and --wait need a process id (sbx ps ID PROC)");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (proc) {
		bool running = false;
		if (wait_ms != -2) {
			if (sbx_process_wait(c->ctx, id, proc, wait_ms, &j, &e) < 0)
				return cli_fail("ps", e);
			running = streq(jstr(j, "state") ?: "", "running");
			if (output) {
				json_decref(j);
				j = NULL;
			}
		}
		if (output) {
			r = print_output(c, id, proc);
			return r ? r : running;
		}
		if (!j && sbx_process_get(c->ctx, id, proc, &j, &e) < 0)
			return cli_fail("ps", e);
		if (c->json)
			cli_print_json(j);
		else {
			print_record(j);
			json_decref(j);
		}
		return running;
	}
	json_t *bg = NULL;
	if (sbx_env_ps(c->ctx, id, &j, &e) < 0)
		return cli_fail("ps", e);
	if (sbx_process_list(c->ctx, id, &bg, &e) < 0) {
		json_decref(j);
		return cli_fail("ps", e);
	}
	json_t *procs = json_object_get(bg, "processes");
	if (c->json) {
		json_object_set(j, "background", procs);
		json_decref(bg);
		cli_print_json(j);
		return 0;
	}
	printf("%7s %7s %-2s %s\n", "PID", "PPID", "S", "COMMAND");
	size_t i, k;
	json_t *v, *a;
	json_array_foreach(json_object_get(j, "processes"), i, v)
	{
		printf("%7lld %7lld %-2s", jint(v, "pid"), jint(v, "ppid"), jstr(v, "state"));
		json_t *argvj = json_object_get(v, "argv");
		if (json_array_size(argvj) == 0)
			printf(" [%s]", jstr(v, "comm"));
		json_array_foreach(argvj, k, a) printf(" %s", json_string_value(a));
		printf("\n");
	}
	print_background(procs);
	json_decref(bg);
	json_decref(j);
	return 0;
}

int cmd_kill(cli *c, int argc, char **argv)
{
	const char *pos[3];
	int n, r = cli_args("kill", argc, argv, pos, 3, &n);
	if (r)
		return r;
	if (n < 2)
		return cli_usage_error("kill", "expected: sbx kill ID PROC [SIGNAL]");
	if (n > 3)
		return cli_usage_error("kill", "too many arguments");
	int sig = SIGTERM;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (n == 3 && sbx_parse_signal(pos[2], &sig, &e) < 0)
		return cli_fail("kill", e);
	if ((r = cli_open_ctx(c)))
		return r;
	if (sbx_process_kill(c->ctx, pos[0], pos[1], sig, &j, &e) < 0)
		return cli_fail("kill", e);
	bool delivered = json_is_true(json_object_get(j, "delivered"));
	if (c->json)
		cli_print_json(j);
	else {
		if (!delivered)
			fprintf(stderr, "sbx: kill: process %s had already exited\n", pos[1]);
		json_decref(j);
	}
	return 0;
}
