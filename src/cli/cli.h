/* The sbx command line: parse, make one sbx_* call, print. */
#pragma once
#include <stdbool.h>
#include "sbx.h"

#define EXIT_SBX 125

typedef struct cli {
	sbx_ctx *ctx;
	bool json;
} cli;

typedef struct cli_cmd {
	const char *name;
	int (*run)(cli *c, int argc, char **argv);
	const char *usage;
	const char *help;
} cli_cmd;

/* Prints "sbx: <what>: <message>" and returns EXIT_SBX (or `code`). */
int cli_fail(const char *what, sbx_err *e);
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_print_json(json_t *j); /* steals */
int cli_open_ctx(cli *c);
/* Shows progress of long operations on stderr when it is a terminal (not with --json). */
void cli_progress_setup(cli *c);

int cmd_create(cli *c, int argc, char **argv);
int cmd_run(cli *c, int argc, char **argv);
int cmd_exec(cli *c, int argc, char **argv);
int cmd_ls(cli *c, int argc, char **argv);
int cmd_inspect(cli *c, int argc, char **argv);
int cmd_ps(cli *c, int argc, char **argv);
int cmd_phase(cli *c, int argc, char **argv);
int cmd_rm(cli *c, int argc, char **argv);
int cmd_gc(cli *c, int argc, char **argv);
int cmd_snapshot(cli *c, int argc, char **argv);
int cmd_restore(cli *c, int argc, char **argv);
int cmd_snapshots(cli *c, int argc, char **argv);
int cmd_fork(cli *c, int argc, char **argv);
int cmd_policy(cli *c, int argc, char **argv);
int cmd_logs(cli *c, int argc, char **argv);
int cmd_mcp(cli *c, int argc, char **argv);
int cmd_serve(cli *c, int argc, char **argv);
int cmd_export(cli *c, int argc, char **argv);
int cmd_import(cli *c, int argc, char **argv);
int cmd_push(cli *c, int argc, char **argv);
int cmd_pull(cli *c, int argc, char **argv);
int cmd_template(cli *c, int argc, char **argv);
int cmd_diff(cli *c, int argc, char **argv);
int cmd_fsck(cli *c, int argc, char **argv);
int cmd_trace(cli *c, int argc, char **argv);
int cmd_replay(cli *c, int argc, char **argv);
int cmd_cp(cli *c, int argc, char **argv);
