/* The sbx command line: parse, make one sbx_* call, print. */
#pragma once
#include <getopt.h>
#include <stdbool.h>
#include "sbx.h"

#define EXIT_SBX 125

typedef struct cli {
	sbx_ctx *ctx;
	bool json;
} cli;

/* The groups of `sbx --help`, in the order it prints them. */
typedef enum cli_group {
	CLI_GROUP_ENV,
	CLI_GROUP_CMD,
	CLI_GROUP_FILES,
	CLI_GROUP_SNAP,
	CLI_GROUP_IMG,
	CLI_GROUP_TRACE,
	CLI_GROUP_SRV,
	CLI_GROUP_MAINT,
	CLI_GROUP_COUNT,
} cli_group;

typedef struct cli_cmd {
	const char *name;
	cli_group group;
	int (*run)(cli *c, int argc, char **argv);
	const char *summary; /* one short line for `sbx --help` (at most 60 columns) */
	const char *usage;
	const char *help; /* the detail, for `sbx COMMAND --help` and the man page */
} cli_cmd;

/* Prints "sbx: <what>: <message>" and returns EXIT_SBX (or `code`). */
int cli_fail(const char *what, sbx_err *e);
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_print_json(json_t *j); /* steals */
int cli_open_ctx(cli *c);
/* Shows progress of long operations on stderr when it is a terminal (not with --json). */
void cli_progress_setup(cli *c);

/* One way to parse arguments: a command lists its options for getopt_long
 * and loops over cli_opt_next(), which returns
 *   an option's val (its value in .arg), in the order given;
 *   CLI_ARG for a positional argument (in .arg), wherever it stands;
 *   CLI_ERR after printing "sbx: CMD: unknown option '--x'" or
 *     "sbx: CMD: --x needs a value (see 'sbx CMD --help')": return EXIT_SBX;
 *   CLI_END when done.
 * Both "--opt value" and "--opt=value" work, short flags combine (-it), long
 * names must be exact (no abbreviations). "--" ends the options. A command
 * that runs a command line (exec, run) sets tail_after to its number of
 * positionals: the next non-option word, or the word after "--", starts
 * .tail. Otherwise (tail_after = -1) words after "--" are positionals.
 * --json and --help are taken by main.c before the command runs. */
enum { CLI_END = -1, CLI_ERR = -2, CLI_ARG = -3 };
typedef struct cli_opts {
	const char *cmd;	       /* for messages */
	const char *shortopts;	       /* getopt letters ("v:e:it"), may be NULL */
	const struct option *longopts; /* {0}-terminated, may be NULL */
	int tail_after;		       /* -1: no command tail */
	const char *arg;	       /* out: the option's value or the positional */
	char **tail;		       /* out at CLI_END: the command line, n_tail words */
	int n_tail;
	/* private */
	bool started, dashdash;
	int n_pos;
	char optstring[64];
} cli_opts;
int cli_opt_next(cli_opts *p, int argc, char **argv);
/* For a command without options: its positionals, the first `cap` into pos,
 * their count in *ret_n; EXIT_SBX after an option was reported. */
int cli_args(const char *cmd, int argc, char **argv, const char **pos, int cap, int *ret_n);

int cmd_create(cli *c, int argc, char **argv);
int cmd_run(cli *c, int argc, char **argv);
int cmd_exec(cli *c, int argc, char **argv);
int cmd_ls(cli *c, int argc, char **argv);
int cmd_inspect(cli *c, int argc, char **argv);
int cmd_port(cli *c, int argc, char **argv);
int cmd_ps(cli *c, int argc, char **argv); /* cmd_proc.c */
int cmd_kill(cli *c, int argc, char **argv);
int cmd_code(cli *c, int argc, char **argv); /* cmd_code.c */
/* exec -d (cmd_env.c parses, cmd_proc.c starts): prints the process id. */
int cli_exec_detach(cli *c, const char *id, sbx_exec_opts *x, bool interactive);
int cmd_phase(cli *c, int argc, char **argv);
int cmd_rm(cli *c, int argc, char **argv);
int cmd_pause(cli *c, int argc, char **argv); /* cmd_pause.c */
int cmd_resume(cli *c, int argc, char **argv);
int cmd_pool(cli *c, int argc, char **argv); /* cmd_pool.c */
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
int cmd_build(cli *c, int argc, char **argv);
int cmd_trace_html(cli *c, int argc, char **argv);
int cmd_keygen(cli *c, int argc, char **argv);
int cmd_attest(cli *c, int argc, char **argv);
int cmd_verify(cli *c, int argc, char **argv);
