/* sbx-runc: the runc command line that containerd's runc shim, dockerd
 * (through the shim) and podman's conmon call, over sbx's runtime modules.
 * Options are accepted as "--opt value", "--opt=value" and with one dash,
 * before or after the subcommand's own, as the Go flag parsers that
 * runc/crun users rely on accept them. Errors go to stderr and, with --log,
 * to that file (JSON lines with --log-format json), which the shim shows. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "runc/runc.h"
#include "sbx.h"
#include "util/json.h"
#include "util/macro.h"

#define DEFAULT_ROOT "/run/sbx-runc"

static runc_globals G = {.root = DEFAULT_ROOT};

static void log_error(const char *msg)
{
	fprintf(stderr, "sbx-runc: %s\n", msg);
	if (!G.log)
		return;
	FILE *f = fopen(G.log, "ae");
	if (!f)
		return;
	if (G.log_json) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		struct tm tm;
		gmtime_r(&ts.tv_sec, &tm);
		char t[64];
		strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
		_cleanup_json_ json_t *j = json_pack("{s:s,s:s,s:s}", "level", "error", "msg", msg, "time", t);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
		if (s)
			fprintf(f, "%s\n", s);
		free(s);
	} else {
		fprintf(f, "sbx-runc: %s\n", msg);
	}
	fclose(f);
}

#define OPT_MULTI_MAX 64

typedef struct opt {
	const char *name;
	bool has_arg;
	const char *value; /* set when seen: the argument, or "" for a flag */
	bool multi;	   /* repeatable (runc exec --env, --cap, --additional-gids): every value in vals */
	const char *vals[OPT_MULTI_MAX + 1];
	size_t n_vals;
} opt;

/* Consumes options from argv[*i...] (stops at the first positional or
 * "--"); unknown options are an error. Positionals are collected into pos.
 * With ret_rest, parsing stops once max_pos positionals are in: what follows
 * is a command line (runc exec ID CMD ARGS...), returned there. */
static int parse_opts_rest(int argc, char **argv, int start, opt *opts, size_t n_opts, char **pos, size_t *n_pos,
			   size_t max_pos, char ***ret_rest)
{
	bool only_pos = false;
	for (int i = start; i < argc; i++) {
		char *a = argv[i];
		if (ret_rest && *n_pos >= max_pos) {
			/* everything after the id, options too, is the command's */
			*ret_rest = argv + i;
			return 0;
		}
		if (only_pos || a[0] != '-' || streq(a, "-")) {
			if (*n_pos >= max_pos) {
				/* exec's trailing command line (runc exec ID cmd...): ignored
				 * here since engines always pass --process. */
				continue;
			}
			pos[(*n_pos)++] = a;
			continue;
		}
		if (streq(a, "--")) {
			only_pos = true;
			continue;
		}
		const char *name = a + (a[1] == '-' ? 2 : 1);
		const char *eq = strchr(name, '=');
		size_t nl = eq ? (size_t)(eq - name) : strlen(name);
		opt *o = NULL;
		for (size_t k = 0; k < n_opts; k++)
			if (strlen(opts[k].name) == nl && strncmp(opts[k].name, name, nl) == 0)
				o = &opts[k];
		if (!o) {
			char m[256];
			snprintf(m, sizeof(m), "unknown option '%s'", a);
			log_error(m);
			return -1;
		}
		if (o->has_arg) {
			if (eq)
				o->value = eq + 1;
			else if (i + 1 < argc)
				o->value = argv[++i];
			else {
				char m[256];
				snprintf(m, sizeof(m), "option '%s' needs a value", a);
				log_error(m);
				return -1;
			}
			if (o->multi) {
				if (o->n_vals >= OPT_MULTI_MAX) {
					log_error("too many values for one option");
					return -1;
				}
				o->vals[o->n_vals++] = o->value;
			}
		} else {
			/* Go booleans: --flag, --flag=true, --flag=false. */
			o->value = eq && (streq(eq + 1, "false") || streq(eq + 1, "0")) ? NULL : "";
		}
	}
	if (ret_rest)
		*ret_rest = argv + argc;
	return 0;
}

static int parse_opts(int argc, char **argv, int start, opt *opts, size_t n_opts, char **pos, size_t *n_pos,
		      size_t max_pos)
{
	return parse_opts_rest(argc, argv, start, opts, n_opts, pos, n_pos, max_pos, NULL);
}

static const char *optv(const opt *opts, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (streq(opts[i].name, name))
			return opts[i].value;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sbx-runc [--root DIR] [--log FILE] [--log-format text|json] [--systemd-cgroup]\n"
		   "                [--no-wall seccomp|landlock|capabilities|mask] COMMAND ...\n"
		   "commands:\n"
		   "  create --bundle DIR [--pid-file F] [--console-socket S] [--no-pivot] [--no-new-keyring] ID\n"
		   "  start ID | state ID | delete [--force] ID | kill [--all] ID [SIGNAL]\n"
		   "  exec --process FILE [--detach] [--pid-file F] [--console-socket S] [--tty] ID\n"
		   "  exec [--cwd D] [-e K=V]... [-u UID[:GID]] [-g GID]... [--cap CAP]... [--no-new-privs] [-t] ID CMD...\n"
		   "  pause ID | resume ID | ps [--format table|json] ID [PS-ARGS...]\n"
		   "  update --resources FILE|- ID | update [--memory 64m] [--pids-limit N] [--cpu-quota N] ... ID\n"
		   "  events [--stats] [--interval 5s] ID\n"
		   "  list [--format table|json] [--quiet] | features | --version\n"
		   "An OCI runtime for containerd, docker and podman over sbx's walls (docs/runc.md).\n");
}

static int features(void)
{
	static const char *const ns[] = {"cgroup", "ipc", "mount", "network", "pid", "user", "uts", NULL};
	json_t *hooks = json_array();
	for (int k = 0; hooks && k < OCI_HOOK_MAX; k++)
		(void)json_array_append_new(hooks, json_string(oci_hook_names[k]));
	_cleanup_json_ json_t *j = json_pack(
	    "{s:s,s:s,s:s,s:o,s:o,s:{s:o,s:{s:b,s:b,s:b},s:o,s:{s:b},s:{s:b}},s:{s:s}}", "ociVersionMin", "1.0.0",
	    "ociVersionMax", OCI_SPEC_VERSION, "_comment", "sbx-runc", "mountOptions", oci_features_mount_options(),
	    "hooks", hooks, "linux", "namespaces", json_from_strv(ns), "cgroup", "v1", 1, "v2", 1, "systemd", 0,
	    "seccomp", runc_seccomp_features(), "apparmor", "enabled", 0, "selinux", "enabled", 0, "annotations",
	    "run.sbx.wall.*", "off: turn off one of sbx's walls (seccomp, landlock, capabilities, mask)");
	if (!j)
		return 1;
	char *s = json_dumps(j, JSON_INDENT(2));
	printf("%s\n", s);
	free(s);
	return 0;
}

static int fail(sbx_err *e)
{
	log_error(e ? sbx_err_message(e) : "failed");
	sbx_err_free(e);
	return 1;
}

int main(int argc, char **argv)
{
	opt g[] = {{"root", true, NULL},     {"log", true, NULL},	    {"log-format", true, NULL},
		   {"systemd-cgroup", false, NULL}, {"debug", false, NULL},   {"rootless", true, NULL},
		   {"criu", true, NULL},     {"no-wall", true, NULL},	    {"version", false, NULL},
		   {"v", false, NULL},	     {"help", false, NULL},	    {"h", false, NULL}};
	int i = 1;
	/* Global options come before the command. */
	for (; i < argc && argv[i][0] == '-'; i++) {
		char *pos[1];
		size_t np = 0;
		int end = i + 1;
		/* one option (with its value) at a time */
		const char *a = argv[i];
		const char *name = a + (a[1] == '-' ? 2 : 1);
		bool has_eq = strchr(name, '=') != NULL;
		for (size_t k = 0; k < ARRAY_SIZE(g); k++)
			if (g[k].has_arg && !has_eq && strcmp(g[k].name, name) == 0)
				end = i + 2;
		if (end > argc)
			end = argc;
		char *sub[3] = {NULL};
		int sc = 0;
		sub[sc++] = argv[0];
		for (int k = i; k < end; k++)
			sub[sc++] = argv[k];
		if (parse_opts(sc, sub, 1, g, ARRAY_SIZE(g), pos, &np, 0) < 0)
			return 1;
		i = end - 1;
	}
	if (optv(g, ARRAY_SIZE(g), "root"))
		G.root = optv(g, ARRAY_SIZE(g), "root");
	G.log = optv(g, ARRAY_SIZE(g), "log");
	G.log_json = optv(g, ARRAY_SIZE(g), "log-format") && streq(optv(g, ARRAY_SIZE(g), "log-format"), "json");
	G.systemd_cgroup = optv(g, ARRAY_SIZE(g), "systemd-cgroup") != NULL;
	if (optv(g, ARRAY_SIZE(g), "no-wall")) {
		_cleanup_free_ char *w = strdup(optv(g, ARRAY_SIZE(g), "no-wall"));
		char *save = NULL;
		for (char *t = w ? strtok_r(w, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
			int bit = runc_wall_from_name(t);
			if (!bit) {
				log_error("--no-wall: unknown wall (seccomp, landlock, capabilities, mask)");
				return 1;
			}
			G.no_walls |= (unsigned)bit;
		}
	}
	if (optv(g, ARRAY_SIZE(g), "version") || optv(g, ARRAY_SIZE(g), "v")) {
		printf("sbx-runc version %s\nspec: %s\n", sbx_version(), OCI_SPEC_VERSION);
		return 0;
	}
	if (optv(g, ARRAY_SIZE(g), "help") || optv(g, ARRAY_SIZE(g), "h")) {
		usage(stdout);
		return 0;
	}
	if (i >= argc) {
		usage(stderr);
		return 1;
	}
	const char *cmd = argv[i++];
	sbx_err *e = NULL;
	char *pos[4] = {NULL};
	size_t np = 0;
#define PARSE(opts, maxpos)                                                                              \
	do {                                                                                             \
		if (parse_opts(argc, argv, i, opts, ARRAY_SIZE(opts), pos, &np, maxpos) < 0)             \
			return 1;                                                                        \
	} while (0)
#define NEED_ID()                                                                                        \
	do {                                                                                             \
		if (np < 1) {                                                                            \
			log_error("container id required");                                              \
			return 1;                                                                        \
		}                                                                                        \
	} while (0)
	if (streq(cmd, "create") || streq(cmd, "run")) {
		opt o[] = {{"bundle", true, NULL},   {"b", true, NULL},		  {"pid-file", true, NULL},
			   {"console-socket", true, NULL}, {"no-pivot", false, NULL}, {"no-new-keyring", false, NULL},
			   {"preserve-fds", true, NULL}, {"detach", false, NULL},   {"d", false, NULL}};
		PARSE(o, 1);
		NEED_ID();
		if (optv(o, ARRAY_SIZE(o), "preserve-fds") && atoi(optv(o, ARRAY_SIZE(o), "preserve-fds")) > 0) {
			log_error("--preserve-fds is not supported");
			return 1;
		}
		const char *bundle = optv(o, ARRAY_SIZE(o), "bundle") ?: optv(o, ARRAY_SIZE(o), "b");
		if (runc_create(&G, pos[0], bundle, optv(o, ARRAY_SIZE(o), "pid-file"),
				optv(o, ARRAY_SIZE(o), "console-socket"), optv(o, ARRAY_SIZE(o), "no-pivot") != NULL,
				&e) < 0)
			return fail(e);
		if (streq(cmd, "run") && runc_start(&G, pos[0], &e) < 0)
			return fail(e);
		return 0;
	}
	if (streq(cmd, "start") || streq(cmd, "state") || streq(cmd, "pause") || streq(cmd, "resume")) {
		opt o[] = {{"h", false, NULL}};
		PARSE(o, 1);
		NEED_ID();
		int r = streq(cmd, "start")   ? runc_start(&G, pos[0], &e)
			: streq(cmd, "state") ? runc_state(&G, pos[0], &e)
					      : runc_pause(&G, pos[0], streq(cmd, "pause"), &e);
		return r < 0 ? fail(e) : 0;
	}
	if (streq(cmd, "kill")) {
		opt o[] = {{"all", false, NULL}, {"a", false, NULL}};
		PARSE(o, 2);
		NEED_ID();
		int sig = np > 1 ? oci_signal_parse(pos[1]) : SIGTERM;
		if (sig < 0) {
			log_error("invalid signal");
			return 1;
		}
		bool all = optv(o, ARRAY_SIZE(o), "all") || optv(o, ARRAY_SIZE(o), "a");
		return runc_kill(&G, pos[0], sig, all, &e) < 0 ? fail(e) : 0;
	}
	if (streq(cmd, "delete") || streq(cmd, "rm")) {
		opt o[] = {{"force", false, NULL}, {"f", false, NULL}};
		PARSE(o, 1);
		NEED_ID();
		bool force = optv(o, ARRAY_SIZE(o), "force") || optv(o, ARRAY_SIZE(o), "f");
		return runc_delete(&G, pos[0], force, &e) < 0 ? fail(e) : 0;
	}
	if (streq(cmd, "ps")) {
		opt o[] = {{"format", true, NULL}, {"f", true, NULL}};
		char **rest = NULL;
		if (parse_opts_rest(argc, argv, i, o, ARRAY_SIZE(o), pos, &np, 1, &rest) < 0)
			return 1;
		NEED_ID();
		return runc_ps(&G, pos[0], optv(o, ARRAY_SIZE(o), "format") ?: optv(o, ARRAY_SIZE(o), "f"), rest, &e) < 0
			       ? fail(e)
			       : 0;
	}
	if (streq(cmd, "update")) {
		opt o[] = {{"resources", true, NULL},	    {"r", true, NULL},		    {"memory", true, NULL},
			   {"memory-reservation", true, NULL}, {"memory-swap", true, NULL},	    {"kernel-memory", true, NULL},
			   {"kernel-memory-tcp", true, NULL},  {"pids-limit", true, NULL},	    {"cpu-share", true, NULL},
			   {"cpu-quota", true, NULL},	    {"cpu-period", true, NULL},	    {"cpu-rt-period", true, NULL},
			   {"cpu-rt-runtime", true, NULL},	    {"cpuset-cpus", true, NULL},	    {"cpuset-mems", true, NULL},
			   {"blkio-weight", true, NULL}};
		PARSE(o, 1);
		NEED_ID();
		const char *f = optv(o, ARRAY_SIZE(o), "resources") ?: optv(o, ARRAY_SIZE(o), "r");
		/* runc update ID --memory 64m ...: the flags as a document. */
		const char *names[ARRAY_SIZE(o)], *vals[ARRAY_SIZE(o)];
		size_t nf = 0;
		for (size_t k = 2; k < ARRAY_SIZE(o); k++)
			if (o[k].value)
				names[nf] = o[k].name, vals[nf++] = o[k].value;
		_cleanup_free_ char *doc = NULL;
		if (!f && nf && oci_resources_from_flags(names, vals, nf, &doc, &e) < 0)
			return fail(e);
		if (!f && !doc) {
			log_error("update: --resources FILE|- or a resource flag (--memory, --pids-limit, ...) is needed");
			return 1;
		}
		return runc_update(&G, pos[0], f, doc, &e) < 0 ? fail(e) : 0;
	}
	if (streq(cmd, "exec")) {
		opt o[] = {{"process", true, NULL},
			   {"p", true, NULL},
			   {"detach", false, NULL},
			   {"d", false, NULL},
			   {"pid-file", true, NULL},
			   {"console-socket", true, NULL},
			   {"tty", false, NULL},
			   {"t", false, NULL},
			   {"preserve-fds", true, NULL},
			   {"no-new-privs", false, NULL},
			   {"cgroup", true, NULL},
			   {"ignore-paused", false, NULL},
			   {"cwd", true, NULL},
			   {"user", true, NULL},
			   {"u", true, NULL},
			   {"env", true, NULL, true},
			   {"e", true, NULL, true},
			   {"additional-gids", true, NULL, true},
			   {"g", true, NULL, true},
			   {"cap", true, NULL, true},
			   {"c", true, NULL, true}};
		char **rest = NULL;
		if (parse_opts_rest(argc, argv, i, o, ARRAY_SIZE(o), pos, &np, 1, &rest) < 0)
			return 1;
		NEED_ID();
		if (optv(o, ARRAY_SIZE(o), "preserve-fds") && atoi(optv(o, ARRAY_SIZE(o), "preserve-fds")) > 0) {
			log_error("--preserve-fds is not supported");
			return 1;
		}
		/* Repeatable options: both spellings, in order of the long one first. */
		const char *env[2 * OPT_MULTI_MAX + 1] = {0}, *gids[2 * OPT_MULTI_MAX + 1] = {0},
			   *caps[2 * OPT_MULTI_MAX + 1] = {0};
		const struct {
			const char *l, *s;
			const char **out;
		} multi[] = {{"env", "e", env}, {"additional-gids", "g", gids}, {"cap", "c", caps}};
		for (size_t m = 0; m < ARRAY_SIZE(multi); m++) {
			size_t k = 0;
			for (size_t x = 0; x < ARRAY_SIZE(o); x++)
				if (streq(o[x].name, multi[m].l) || streq(o[x].name, multi[m].s))
					for (size_t v = 0; v < o[x].n_vals; v++)
						multi[m].out[k++] = o[x].vals[v];
		}
		bool tty = optv(o, ARRAY_SIZE(o), "tty") || optv(o, ARRAY_SIZE(o), "t");
		oci_exec_args xa = {.argv = rest && *rest ? rest : NULL,
				    .cwd = optv(o, ARRAY_SIZE(o), "cwd"),
				    .user = optv(o, ARRAY_SIZE(o), "user") ?: optv(o, ARRAY_SIZE(o), "u"),
				    .env = env,
				    .gids = gids,
				    .caps = caps,
				    .tty = tty,
				    .no_new_privs = optv(o, ARRAY_SIZE(o), "no-new-privs") != NULL};
		int r = runc_exec(&G, pos[0], optv(o, ARRAY_SIZE(o), "process") ?: optv(o, ARRAY_SIZE(o), "p"), &xa,
				  optv(o, ARRAY_SIZE(o), "detach") || optv(o, ARRAY_SIZE(o), "d"),
				  optv(o, ARRAY_SIZE(o), "pid-file"), optv(o, ARRAY_SIZE(o), "console-socket"), tty, &e);
		return r < 0 ? fail(e) : r;
	}
	if (streq(cmd, "list")) {
		opt o[] = {{"format", true, NULL}, {"f", true, NULL}, {"quiet", false, NULL}, {"q", false, NULL}};
		PARSE(o, 0);
		return runc_list(&G, optv(o, ARRAY_SIZE(o), "format") ?: optv(o, ARRAY_SIZE(o), "f"),
				 optv(o, ARRAY_SIZE(o), "quiet") || optv(o, ARRAY_SIZE(o), "q"), &e) < 0
			       ? fail(e)
			       : 0;
	}
	if (streq(cmd, "events")) {
		opt o[] = {{"stats", false, NULL}, {"interval", true, NULL}};
		PARSE(o, 1);
		NEED_ID();
		uint64_t ms = 5000;
		if (optv(o, ARRAY_SIZE(o), "interval") &&
		    (oci_duration_ms(optv(o, ARRAY_SIZE(o), "interval"), &ms) < 0 || ms == 0)) {
			log_error("--interval: want a positive duration such as 5s or 500ms");
			return 1;
		}
		return runc_events(&G, pos[0], optv(o, ARRAY_SIZE(o), "stats") != NULL, ms, &e) < 0 ? fail(e) : 0;
	}
	if (streq(cmd, "features"))
		return features();
	char m[256];
	snprintf(m, sizeof(m), "unknown command '%s'", cmd);
	log_error(m);
	usage(stderr);
	return 1;
}
