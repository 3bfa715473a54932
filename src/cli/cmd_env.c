/* sbx create | run | exec | ls | inspect | ps | rm | gc */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "api/ctx.h"
#include "cli/cli.h"
#include "util/macro.h"

typedef struct opts {
	sbx_create_opts create;
	sbx_exec_opts exec;
	const char *envs[256];
	size_t n_envs;
	sbx_volume vols[64];
	size_t n_vols;
	char *vol_strs[128];
	size_t n_vol_strs;
	const char *hidden[257], *secrets[257]; /* --hide, --secret (docs/secrets.md) */
	size_t n_hidden, n_secrets;
	const char *cap_drop[65], *cap_add[65]; /* --cap-drop, --cap-add */
	size_t n_cap_drop, n_cap_add;
	const char *devices[65]; /* --device (docs/devices.md) */
	size_t n_devices;
	const char *publish[SBX_PUBLISH_MAX + 1]; /* -p (docs/ports.md) */
	size_t n_publish;
	bool interactive, have_timeout;
	int64_t timeout;
	const char *id; /* exec's environment */
	int n_positional;
	char **cmd; /* after -- (or the rest) */
	int n_cmd;
	bool detach; /* exec -d: a background process (cmd_proc.c) */
} opts;

static void opts_free(opts *o)
{
	for (size_t i = 0; i < o->n_vol_strs; i++)
		free(o->vol_strs[i]);
}

enum { F_CREATE = 1, F_EXEC = 2, F_DETACH = 4 /* exec only */ };

/* Long-only options; the short ones are their letter. */
enum {
	O_TEMPLATE = 256,
	O_NAME,
	O_NETWORK,
	O_MEMORY,
	O_DISK,
	O_PIDS,
	O_CPUS,
	O_TTL,
	O_TTL_KEEP,
	O_CODE,
	O_OUTPUT_LIMIT,
	O_TIMEOUT,
	O_CWD,
	O_SNAPSHOT,
	O_POLICY,
	O_AGENT_POLICY,
	O_HIDE,
	O_SECRET,
	O_CAP_DROP,
	O_CAP_ADD,
	O_TRACE,
	O_DETERMINISTIC,
	O_NO_DETERMINISTIC,
	O_IDLE_SUSPEND,
	O_NO_AUTO_RESUME,
	O_DEVICE,
	O_DETACH,
};

/* Every option of create, exec and run, and which of them take it. */
static const struct {
	struct option o;
	unsigned flags;
} env_options[] = {
    {{"template", required_argument, NULL, O_TEMPLATE}, F_CREATE},
    {{"name", required_argument, NULL, O_NAME}, F_CREATE},
    {{"volume", required_argument, NULL, 'v'}, F_CREATE},
    {{"env", required_argument, NULL, 'e'}, F_CREATE | F_EXEC},
    {{"network", required_argument, NULL, O_NETWORK}, F_CREATE},
    {{"memory", required_argument, NULL, O_MEMORY}, F_CREATE},
    {{"disk", required_argument, NULL, O_DISK}, F_CREATE},
    {{"pids", required_argument, NULL, O_PIDS}, F_CREATE},
    {{"cpus", required_argument, NULL, O_CPUS}, F_CREATE},
    {{"ttl-keep", no_argument, NULL, O_TTL_KEEP}, F_CREATE},
    {{"code", no_argument, NULL, O_CODE}, F_CREATE},
    {{"idle-suspend", required_argument, NULL, O_IDLE_SUSPEND}, F_CREATE},
    {{"no-auto-resume", no_argument, NULL, O_NO_AUTO_RESUME}, F_EXEC},
    {{"ttl", required_argument, NULL, O_TTL}, F_CREATE},
    {{"output-limit", required_argument, NULL, O_OUTPUT_LIMIT}, F_CREATE | F_EXEC},
    {{"timeout", required_argument, NULL, O_TIMEOUT}, F_CREATE | F_EXEC},
    {{"cwd", required_argument, NULL, O_CWD}, F_EXEC},
    {{"interactive", no_argument, NULL, 'i'}, F_EXEC},
    {{"tty", no_argument, NULL, 't'}, F_EXEC},
    {{"snapshot", required_argument, NULL, O_SNAPSHOT}, F_CREATE},
    {{"policy", required_argument, NULL, O_POLICY}, F_CREATE},
    {{"agent-policy", required_argument, NULL, O_AGENT_POLICY}, F_CREATE},
    {{"hide", required_argument, NULL, O_HIDE}, F_CREATE},
    {{"secret", required_argument, NULL, O_SECRET}, F_CREATE},
    {{"user", required_argument, NULL, 'u'}, F_CREATE | F_EXEC},
    {{"cap-drop", required_argument, NULL, O_CAP_DROP}, F_CREATE},
    {{"cap-add", required_argument, NULL, O_CAP_ADD}, F_CREATE},
    {{"device", required_argument, NULL, O_DEVICE}, F_CREATE},
    {{"publish", required_argument, NULL, 'p'}, F_CREATE},
    {{"trace", no_argument, NULL, O_TRACE}, F_EXEC},
    {{"deterministic", no_argument, NULL, O_DETERMINISTIC}, F_EXEC},
    {{"no-deterministic", no_argument, NULL, O_NO_DETERMINISTIC}, F_EXEC},
    {{"detach", no_argument, NULL, 'd'}, F_DETACH},
};

/* -v and -p (create), -e and -u (both), -i and -t (exec) */
static const char *env_shortopts(unsigned flags)
{
	return flags == F_CREATE	      ? "v:p:e:u:"
	       : flags == (F_EXEC | F_DETACH) ? "e:u:itd"
	       : flags == F_EXEC	      ? "e:u:it"
					      : "v:p:e:u:it";
}

static int parse_pids(const char *cmd, const char *v, int64_t *ret)
{
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || *end || n <= 0 || n > 4194304)
		return cli_usage_error(cmd, "invalid --pids '%s': expected a number from 1 to 4194304", v);
	*ret = n;
	return 0;
}

static int parse_cpus(const char *cmd, const char *v, double *ret)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !(x > 0.0) || x > 1024)
		return cli_usage_error(cmd,
				       "invalid --cpus '%s': expected a number of cores such as 0.5 or 2", v);
	*ret = x;
	return 0;
}

/* Appends v to a NULL-terminated list of capacity cap (one kept for NULL). */
static int push(const char *cmd, const char **list, size_t *n, size_t cap, const char *what, const char *v)
{
	if (*n >= cap - 1)
		return cli_usage_error(cmd, "too many %s", what);
	list[(*n)++] = v;
	return 0;
}

static int parse(const char *cmd, int argc, char **argv, unsigned flags, opts *o, int max_positional)
{
	sbx_create_opts ci = SBX_CREATE_OPTS_INIT;
	sbx_exec_opts ei = SBX_EXEC_OPTS_INIT;
	o->create = ci;
	o->exec = ei;
	struct option longopts[ARRAY_SIZE(env_options) + 1] = {{0}};
	size_t n_long = 0;
	for (size_t k = 0; k < ARRAY_SIZE(env_options); k++)
		if (env_options[k].flags & flags)
			longopts[n_long++] = env_options[k].o;
	cli_opts p = {.cmd = cmd,
		      .shortopts = env_shortopts(flags),
		      .longopts = longopts,
		      .tail_after = max_positional};
	sbx_err *e = NULL;
	int opt, r = 0;
	while (r == 0 && (opt = cli_opt_next(&p, argc, argv)) != CLI_END) {
		const char *v = p.arg;
		switch (opt) {
		case CLI_ERR:
			return EXIT_SBX;
		case CLI_ARG:
			o->id = v;
			o->n_positional++;
			break;
		case O_TEMPLATE:
			o->create.template_spec = v;
			break;
		case O_NAME:
			o->create.name = v;
			break;
		case 'v': {
			if (o->n_vols >= ARRAY_SIZE(o->vols))
				return cli_usage_error(cmd, "too many volumes");
			char *h, *pa;
			bool ro;
			if (sbx_parse_volume(v, &h, &pa, &ro, &e) < 0)
				return cli_fail(cmd, e);
			o->vol_strs[o->n_vol_strs++] = h;
			o->vol_strs[o->n_vol_strs++] = pa;
			o->vols[o->n_vols++] = (sbx_volume){.host = h, .path = pa, .readonly = ro};
			break;
		}
		case 'e':
			if (!strchr(v, '=') || v[0] == '=')
				return cli_usage_error(cmd, "invalid --env '%s': expected K=V", v);
			r = push(cmd, o->envs, &o->n_envs, ARRAY_SIZE(o->envs), "--env", v);
			break;
		case O_NETWORK:
			o->create.network = v;
			break;
		case O_MEMORY:
			if (sbx_parse_size(v, &o->create.memory_bytes, &e) < 0)
				return cli_fail(cmd, e);
			break;
		case O_DISK:
			if (sbx_parse_size(v, &o->create.disk_bytes, &e) < 0)
				return cli_fail(cmd, e);
			if (o->create.disk_bytes <= 0)
				return cli_usage_error(
				    cmd, "invalid --disk '%s': expected a size such as 512m or 4g", v);
			break;
		case O_PIDS:
			r = parse_pids(cmd, v, &o->create.pids);
			break;
		case O_CPUS:
			r = parse_cpus(cmd, v, &o->create.cpus);
			break;
		case O_IDLE_SUSPEND: /* docs/warm.md */
			if (sbx_parse_duration(v, &o->create.idle_suspend_ms, &e) < 0)
				return cli_fail(cmd, e);
			break;
		case O_NO_AUTO_RESUME:
			o->exec.no_auto_resume = true;
			break;
		case O_CODE: /* docs/code.md "Warm kernels" */
			o->create.code = true;
			break;
		case O_TTL_KEEP:
			o->create.ttl_keep = true;
			break;
		case O_TTL:
			if (sbx_parse_duration(v, &o->create.ttl_ms, &e) < 0)
				return cli_fail(cmd, e);
			break;
		case O_OUTPUT_LIMIT: {
			int64_t n;
			if (sbx_parse_size(v, &n, &e) < 0)
				return cli_fail(cmd, e);
			o->create.output_bytes = n;
			o->exec.output_bytes = n;
			break;
		}
		case O_TIMEOUT:
			if (sbx_parse_duration(v, &o->timeout, &e) < 0)
				return cli_fail(cmd, e);
			if (o->timeout == 0)
				return cli_usage_error(cmd, "--timeout must be greater than zero");
			o->have_timeout = true;
			break;
		case O_CWD:
			o->exec.cwd = v;
			break;
		case 'i':
			o->interactive = true;
			break;
		case 't':
			o->exec.tty = true;
			break;
		case O_SNAPSHOT:
			o->create.snapshot = v;
			break;
		case O_POLICY:
			o->create.policy = v;
			break;
		case O_AGENT_POLICY:
			o->create.agent_policy = v;
			break;
		case O_HIDE:
			r = push(cmd, o->hidden, &o->n_hidden, ARRAY_SIZE(o->hidden), "--hide", v);
			break;
		case O_SECRET:
			r = push(cmd, o->secrets, &o->n_secrets, ARRAY_SIZE(o->secrets), "--secret", v);
			break;
		case 'u':
			/* create: every command's default; exec: this command's */
			if (flags & F_CREATE)
				o->create.user = v;
			else
				o->exec.user = v;
			break;
		case O_CAP_DROP:
			r = push(cmd, o->cap_drop, &o->n_cap_drop, ARRAY_SIZE(o->cap_drop), "--cap-drop", v);
			break;
		case O_CAP_ADD:
			r = push(cmd, o->cap_add, &o->n_cap_add, ARRAY_SIZE(o->cap_add), "--cap-add", v);
			break;
		case O_DEVICE: /* docs/devices.md */
			r = push(cmd, o->devices, &o->n_devices, ARRAY_SIZE(o->devices), "--device", v);
			break;
		case 'p': { /* docs/ports.md: checked here, so that a bad one is a usage error */
			sbx_port_map m;
			if (sbx_parse_publish(v, &m, &e) < 0) {
				r = cli_usage_error(cmd, "%s", sbx_err_message(e));
				sbx_err_free(e);
				e = NULL;
				break;
			}
			r = push(cmd, o->publish, &o->n_publish, ARRAY_SIZE(o->publish), "--publish", v);
			break;
		}
		case O_TRACE:
			o->exec.trace = true;
			break;
		case O_DETERMINISTIC:
			o->exec.deterministic = 1;
			break;
		case O_NO_DETERMINISTIC:
			o->exec.deterministic = 0;
			break;
		case 'd':
			o->detach = true;
			break;
		}
	}
	if (r)
		return r;
	o->cmd = p.tail;
	o->n_cmd = p.n_tail;
	o->envs[o->n_envs] = NULL;
	if (o->n_vols) {
		o->create.volumes = o->vols;
		o->create.n_volumes = o->n_vols;
	}
	o->hidden[o->n_hidden] = o->secrets[o->n_secrets] = NULL;
	if (o->n_hidden)
		o->create.hidden = o->hidden;
	if (o->n_secrets)
		o->create.secrets = o->secrets;
	o->cap_drop[o->n_cap_drop] = o->cap_add[o->n_cap_add] = NULL;
	if (o->n_cap_drop)
		o->create.cap_drop = o->cap_drop;
	if (o->n_cap_add)
		o->create.cap_add = o->cap_add;
	o->devices[o->n_devices] = NULL;
	if (o->n_devices)
		o->create.devices = o->devices;
	o->publish[o->n_publish] = NULL;
	if (o->n_publish)
		o->create.publish = o->publish;
	return 0;
}

static void print_warnings(json_t *w)
{
	size_t i;
	json_t *v;
	json_array_foreach(w, i, v) fprintf(stderr, "sbx: warning: %s\n", json_string_value(v));
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int cmd_create(cli *c, int argc, char **argv)
{
	opts o = {0};
	int r = parse("create", argc, argv, F_CREATE, &o, 0);
	if (r || (r = cli_open_ctx(c)))
		goto out;
	ctx_short_lived(c->ctx); /* its supervisor is forked directly (ctx.h) */
	if (o.n_cmd > 0) {
		r = cli_usage_error("create", "unexpected argument '%s'", o.cmd[0]);
		goto out;
	}
	o.create.env = o.n_envs ? o.envs : NULL;
	if (o.have_timeout)
		o.create.timeout_ms = o.timeout;
	char *id = NULL;
	json_t *w = NULL;
	sbx_err *e = NULL;
	double t0 = now_ms();
	if (sbx_env_create(c->ctx, &o.create, &id, &w, &e) < 0) {
		r = cli_fail("create", e);
		goto out;
	}
	double t1 = now_ms();
	if (c->json) {
		json_t *info = NULL; /* its base snapshot: what it was created from */
		(void)sbx_env_inspect(c->ctx, id, &info, NULL);
		json_t *j = json_pack("{s:s,s:O,s:f,s:O}", "environment_id", id, "snapshot_id",
				      json_object_get(info, "snapshot_id") ?: json_null(), "create_ms",
				      t1 - t0, "warnings", w);
		json_decref(info);
		json_object_set_new(j, "from_pool",
				    json_boolean(sbx_env_from_pool(c->ctx, id))); /* docs/warm.md */
		cli_print_json(j);
	} else {
		print_warnings(w);
		printf("%s\n", id);
	}
	json_decref(w);
	free(id);
out:
	opts_free(&o);
	return r;
}

static int winch_pipe[2] = {-1, -1};

static void on_winch(int sig)
{
	(void)sig;
	int e = errno;
	(void)!write(winch_pipe[1], "w", 1);
	errno = e;
}

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the command (its process
 * group), as docker run's signal proxy does: one byte each on this pipe,
 * which the exec reads (sbx_exec_opts.signal_fd; docs/runtime.md). A
 * command that dies of one makes sbx exit 128+N; one that handles it goes
 * on. Installed from the start of sbx run: a signal during the create is
 * sent as the command starts. */
static int sig_pipe[2] = {-1, -1};

static void on_forward(int sig)
{
	int e = errno;
	unsigned char b = (unsigned char)sig;
	(void)!write(sig_pipe[1], &b, 1);
	errno = e;
}

static void forward_signals(void)
{
	if (sig_pipe[0] >= 0 || pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return;
	struct sigaction sa = {.sa_handler = on_forward, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

static struct termios saved_tio;
static bool tio_saved;

static void tty_restore(void)
{
	if (tio_saved)
		tcsetattr(0, TCSADRAIN, &saved_tio);
}

/* Runs o->cmd in env `id` and turns the result into an exit status. */
/* extra: fields added to the --json result (sbx run's create), or NULL.
 * ret_remove_err: non-NULL for sbx run, which removes the environment with
 * the exec (sbx_env_exec_remove); the removal's error lands there. */
static int do_exec(cli *c, const char *id, opts *o, json_t *extra, sbx_err **ret_remove_err)
{
	sbx_exec_opts *x = &o->exec;
	forward_signals();
	x->signal_fd = sig_pipe[0];
	x->argv = (const char *const *)o->cmd;
	x->env = o->n_envs ? o->envs : NULL;
	x->timeout_ms = o->have_timeout ? o->timeout : 0;
	if (c->json) {
		x->capture = true;
		if (o->interactive)
			x->stdin_fd = 0;
	} else {
		x->stdout_fd = 1;
		x->stderr_fd = 2;
		if (o->interactive || x->tty)
			x->stdin_fd = o->interactive ? 0 : -1;
		if (x->tty && isatty(1) && pipe2(winch_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
			/* Terminal resizes reach the pty inside (SIGWINCH there). */
			struct sigaction sa = {.sa_handler = on_winch, .sa_flags = SA_RESTART};
			sigemptyset(&sa.sa_mask);
			sigaction(SIGWINCH, &sa, NULL);
			x->winch_fd = winch_pipe[0];
		}
		if (x->tty && o->interactive && isatty(0) && tcgetattr(0, &saved_tio) == 0) {
			struct termios raw = saved_tio;
			cfmakeraw(&raw);
			tio_saved = tcsetattr(0, TCSANOW, &raw) == 0;
			atexit(tty_restore);
		}
	}
	sbx_exec_result res = {0};
	sbx_err *e = NULL;
	int r = ret_remove_err ? sbx_env_exec_remove(c->ctx, id, x, &res, ret_remove_err, &e)
			       : sbx_env_exec(c->ctx, id, x, &res, &e);
	tty_restore();
	tio_saved = false;
	if (r < 0) {
		int en = sbx_err_spawn_errno(e); /* as shells: 127 not found, 126 not executable */
		sbx_code code = sbx_err_code(e);
		bool spawn = en == ENOENT;
		bool noexec = en && !spawn;
		/* --json: the error object on stdout, as environment_execute's
		 * structuredContent; and, as for every error, its line on stderr. */
		if (c->json)
			cli_print_json(json_pack("{s:{s:s,s:s}}", "error", "code", sbx_code_name(code),
						 "message", sbx_err_message(e)));
		cli_fail("exec", e);
		return spawn ? 127 : noexec ? 126 : EXIT_SBX;
	}
	int status = res.exit_code >= 0 ? res.exit_code : 128 + res.signal;
	if (c->json) {
		json_t *j = sbx_exec_result_json(&res);
		if (j && extra)
			json_object_update(j, extra);
		cli_print_json(j);
	} else {
		if (res.timed_out)
			fprintf(stderr, "sbx: exec: command timed out after %lld ms and was killed\n",
				(long long)res.timeout_ms);
		else if (res.oom_killed)
			fprintf(stderr, "sbx: exec: command was killed: out of memory (the environment's "
					"memory limit)\n");
		if (res.stdout_truncated || res.stderr_truncated)
			fprintf(stderr, "sbx: exec: output truncated at the output limit\n");
		if (res.trace_id)
			fprintf(stderr, "sbx: trace %s%s\n", res.trace_id,
				res.trace_lost ? " (events were lost: see sbx trace stats)" : "");
	}
	sbx_exec_result_free(&res);
	return status;
}

int cmd_exec(cli *c, int argc, char **argv)
{
	opts o = {0};
	int r = parse("exec", argc, argv, F_EXEC | F_DETACH, &o, 1);
	if (r || (r = cli_open_ctx(c)))
		goto out;
	if (o.n_positional < 1) {
		r = cli_usage_error("exec", "missing environment id");
		goto out;
	}
	if (o.n_cmd < 1) {
		r = cli_usage_error("exec", "missing command (sbx exec ID -- CMD [ARG...])");
		goto out;
	}
	if (o.detach) { /* a background process: prints its id (cmd_proc.c) */
		o.exec.argv = (const char *const *)o.cmd;
		o.exec.env = o.n_envs ? o.envs : NULL;
		o.exec.timeout_ms = o.have_timeout ? o.timeout : 0;
		r = cli_exec_detach(c, o.id, &o.exec, o.interactive);
	} else
		r = do_exec(c, o.id, &o, NULL, NULL);
out:
	opts_free(&o);
	return r;
}

int cmd_run(cli *c, int argc, char **argv)
{
	opts o = {0};
	int r = parse("run", argc, argv, F_CREATE | F_EXEC, &o, 0);
	if (r || (r = cli_open_ctx(c)))
		goto out;
	ctx_short_lived(c->ctx); /* its supervisor is forked directly (ctx.h) */
	/* No command: an image template's (or snapshot's) CMD/ENTRYPOINT, as docker run. */
	if (o.n_cmd < 1 && !o.create.template_spec && !o.create.snapshot) {
		r = cli_usage_error("run", "missing command (sbx run [OPTIONS] -- CMD [ARG...])");
		goto out;
	}
	o.create.env = o.n_envs ? o.envs : NULL;
	/* One-shot: the writable layer on tmpfs, gone with the environment;
	 * but a traced run needs a snapshot to start from, which the trace
	 * outlives the environment with. */
	o.create.ephemeral = !o.exec.trace;
	/* Bound to this process: if it dies at any moment (kill -9 included),
	 * the environment's supervisor removes it (docs/runtime.md). */
	o.create.one_shot = true;
	forward_signals();
	char *id = NULL;
	json_t *w = NULL;
	sbx_err *e = NULL;
	double t0 = now_ms();
	if (sbx_env_create(c->ctx, &o.create, &id, &w, &e) < 0) {
		r = cli_fail("run", e);
		goto out;
	}
	double t1 = now_ms();
	json_t *extra = c->json ? json_pack("{s:f,s:b}", "create_ms", t1 - t0, "from_pool",
					    sbx_env_from_pool(c->ctx, id)) /* docs/warm.md */
				: NULL;
	if (!c->json)
		print_warnings(w);
	json_decref(w);
	char **run_argv = NULL, **given = o.cmd;
	sbx_err *re = NULL;
	if (sbx_env_image_command(c->ctx, id, (const char *const *)o.cmd, &run_argv, &e) < 0) {
		r = cli_fail("run", e);
		if (sbx_env_remove(c->ctx, id, &re) < 0)
			cli_fail("run: remove environment", re);
	} else {
		size_t saved_envs = o.n_envs;
		o.n_envs = 0; /* already in the environment */
		o.cmd = run_argv;
		/* The exec removes the environment as the command ends (one
		 * request to the supervisor, sbx_env_exec_remove). */
		r = do_exec(c, id, &o, extra, &re);
		o.cmd = given;
		o.n_envs = saved_envs;
		for (char **a = run_argv; *a; a++)
			free(*a);
		free(run_argv);
		if (re) {
			cli_fail("run: remove environment", re);
			if (r == 0)
				r = EXIT_SBX;
		}
	}
	json_decref(extra);
	free(id);
out:
	opts_free(&o);
	return r;
}

/* A command without options and min..max (-1: any) environment ids, into
 * ids (room for argc). */
static int simple_args(const char *cmd, int argc, char **argv, int min, int max, const char **ids, int *ret_n)
{
	int n, r = cli_args(cmd, argc, argv, ids, argc, &n);
	if (r)
		return r;
	if (ret_n)
		*ret_n = n;
	if (n < min)
		return cli_usage_error(cmd, "missing environment id");
	if (max >= 0 && n > max)
		return cli_usage_error(cmd, "too many arguments");
	return 0;
}

/* "127.0.0.1:8080->8000/tcp, ..." as docker ps shows published ports;
 * NULL for none. */
static char *ports_column(const json_t *ports)
{
	if (json_array_size(ports) == 0)
		return NULL;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	size_t i;
	json_t *m;
	json_array_foreach(ports, i, m)
	{
		fprintf(f, "%s%s:%lld->%lld/%s", i ? ", " : "",
			json_string_value(json_object_get(m, "host_ip")) ?: "?",
			(long long)json_integer_value(json_object_get(m, "host_port")),
			(long long)json_integer_value(json_object_get(m, "port")),
			json_string_value(json_object_get(m, "protocol")) ?: "tcp");
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

int cmd_ls(cli *c, int argc, char **argv)
{
	const char *ids[argc];
	int r = simple_args("ls", argc, argv, 0, 0, ids, NULL);
	if (r || (r = cli_open_ctx(c)))
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_list(c->ctx, &j, &e) < 0)
		return cli_fail("ls", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	printf("%-14s %-20s %-9s %-21s %-12s %s\n", "ID", "NAME", "STATE", "CREATED", "TEMPLATE", "PORTS");
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(j, "environments"), i, v)
	{
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *tpl = json_string_value(json_object_get(v, "template"));
		const char *snap = json_string_value(json_object_get(v, "snapshot_id"));
		_cleanup_free_ char *ports = ports_column(json_object_get(v, "ports"));
		/* a fork's source is its snapshot, shown as docker shows an image id */
		char from[20];
		snprintf(from, sizeof(from), "%s", snap && !tpl ? snap : tpl ? tpl : "-");
		printf("%-14s %-20s %-9s %-21s %-12s %s\n",
		       json_string_value(json_object_get(v, "environment_id")), name ? name : "-",
		       json_string_value(json_object_get(v, "state")),
		       json_string_value(json_object_get(v, "created_at")) ?: "-", from, ports ? ports : "-");
	}
	json_decref(j);
	return 0;
}

int cmd_inspect(cli *c, int argc, char **argv)
{
	const char *ids[argc];
	int r = simple_args("inspect", argc, argv, 1, 1, ids, NULL);
	if (r || (r = cli_open_ctx(c)))
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_inspect(c->ctx, ids[0], &j, &e) < 0)
		return cli_fail("inspect", e);
	cli_print_json(j); /* inspect is JSON either way, like docker inspect */
	return 0;
}

/* sbx port ID [PORT]: docs/ports.md */
int cmd_port(cli *c, int argc, char **argv)
{
	const char *ids[argc];
	int n, only = 0;
	int r = simple_args("port", argc, argv, 1, 2, ids, &n);
	if (r)
		return r;
	if (n == 2) {
		char *end;
		long v = strtol(ids[1], &end, 10);
		if (*end || end == ids[1] || v < 1 || v > 65535)
			return cli_usage_error("port", "invalid PORT '%s': expected 1-65535", ids[1]);
		only = (int)v;
	}
	if ((r = cli_open_ctx(c)))
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_ports(c->ctx, ids[0], &j, &e) < 0)
		return cli_fail("port", e);
	json_t *ports = json_object_get(j, "ports"), *m;
	size_t i;
	if (only) { /* only that inner port's mappings */
		json_t *keep = json_array();
		json_array_foreach(ports, i, m)
		{
			if (json_integer_value(json_object_get(m, "port")) == only)
				json_array_append(keep, m);
		}
		json_object_set_new(j, "ports", keep);
		ports = keep;
		if (!json_array_size(ports)) {
			json_decref(j);
			fprintf(stderr, "sbx: port: no published port %d in environment '%s'\n", only,
				ids[0]);
			return EXIT_SBX;
		}
	}
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	json_array_foreach(ports, i, m)
	{
		const char *ip = json_string_value(json_object_get(m, "host_ip")) ?: "";
		bool v6 = strchr(ip, ':') != NULL;
		printf("%lld/%s -> %s%s%s:%lld\n", (long long)json_integer_value(json_object_get(m, "port")),
		       json_string_value(json_object_get(m, "protocol")) ?: "tcp", v6 ? "[" : "", ip,
		       v6 ? "]" : "", (long long)json_integer_value(json_object_get(m, "host_port")));
	}
	json_decref(j);
	return 0;
}

int cmd_rm(cli *c, int argc, char **argv)
{
	const char *ids[argc];
	int n;
	int r = simple_args("rm", argc, argv, 1, -1, ids, &n);
	if (r || (r = cli_open_ctx(c)))
		return r;
	json_t *removed = json_array();
	for (int i = 0; i < n; i++) {
		sbx_err *e = NULL;
		if (sbx_env_remove(c->ctx, ids[i], &e) < 0) {
			char what[300];
			snprintf(what, sizeof(what), "rm '%s'", ids[i]);
			r = cli_fail(what, e);
			continue;
		}
		json_array_append_new(removed, json_string(ids[i]));
		if (!c->json)
			printf("%s\n", ids[i]);
	}
	if (c->json)
		cli_print_json(json_pack("{s:o}", "removed", removed));
	else
		json_decref(removed);
	return r;
}

int cmd_gc(cli *c, int argc, char **argv)
{
	const char *ids[argc];
	int r = simple_args("gc", argc, argv, 0, 0, ids, NULL);
	if (r || (r = cli_open_ctx(c)))
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_gc(c->ctx, &j, &e) < 0)
		return cli_fail("gc", e);
	if (c->json)
		cli_print_json(j);
	else {
		printf("removed %zu environment(s)\n", json_array_size(json_object_get(j, "removed")));
		json_decref(j);
	}
	return 0;
}

int cmd_fork(cli *c, int argc, char **argv)
{
	if (argc < 2 || argv[1][0] == '-')
		return cli_usage_error("fork", "expected: sbx fork SNAPSHOT [CREATE-OPTS]");
	/* sbx fork S [opts] == sbx create --snapshot S [opts] */
	char **args = calloc((size_t)argc + 2, sizeof(char *));
	if (!args)
		return EXIT_SBX;
	args[0] = argv[0];
	args[1] = "--snapshot";
	args[2] = argv[1];
	for (int i = 2; i < argc; i++)
		args[i + 1] = argv[i];
	int r = cmd_create(c, argc + 1, args);
	free(args);
	return r;
}

int cmd_logs(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {{"net", no_argument, NULL, 'n'}, {0}};
	cli_opts p = {.cmd = "logs", .longopts = longopts, .tail_after = -1};
	const char *id = NULL;
	bool net = false;
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (o == 'n')
			net = true;
		else if (!id)
			id = p.arg;
		else
			return cli_usage_error("logs", "too many arguments");
	}
	if (!id || !net)
		return cli_usage_error("logs", "expected: sbx logs ID --net");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_net_log(c->ctx, id, &j, &e) < 0)
		return cli_fail("logs", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(j, "events"), i, v)
	{
		printf("%-7s %-7s %s:%lld  %s  up %lld down %lld\n",
		       json_string_value(json_object_get(v, "verdict")) ?: "?",
		       json_string_value(json_object_get(v, "kind")) ?: "-",
		       json_string_value(json_object_get(v, "host")) ?: "?",
		       (long long)json_integer_value(json_object_get(v, "port")),
		       json_string_value(json_object_get(v, "rule")) ?: "",
		       (long long)json_integer_value(json_object_get(v, "bytes_up")),
		       (long long)json_integer_value(json_object_get(v, "bytes_down")));
	}
	json_decref(j);
	return 0;
}
