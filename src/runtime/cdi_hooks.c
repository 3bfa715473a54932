/* CDI hooks (runtime/devices.h), run by the supervisor.
 *
 * Where each runs: all of them in the supervisor's namespaces, which are the
 * host's (OCI calls them the runtime namespace). OCI runs createContainer
 * and startContainer in the container's mount namespace; sbx does not enter
 * the environment (no setns into it, ever: DESIGN.md), so a hook reaches it
 * through the OCI state on its stdin: "pid" (init's host pid: nsenter -t
 * PID, /proc/PID/root) and "root" (/proc/PID/root). When:
 *   createRuntime, createContainer, startContainer: once the environment is
 *     up (root mounted, walls applied, init waiting) and before the create
 *     returns, so before any command runs; a hook that fails or times out
 *     fails the create;
 *   poststart: right after them; a failure is a warning;
 *   poststop: at teardown, once init is gone; a failure is logged.
 * Each hook: execve(path, args, env) exactly as the spec gives them (args[0]
 * is argv[0]; no args: the path), stdin the state, stdout and stderr
 * /dev/null, killed after its timeout (seconds) or after 60 s when it has
 * none (a create must not hang forever). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cdi.h"
#include "runtime/devices.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

#define HOOK_DEFAULT_TIMEOUT_S 60

static char *hook_state(const env_config *c, pid_t pid, const char *status)
{
	char root[64];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	_cleanup_json_ json_t *st =
	    json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:{s:s}}", "ociVersion", "1.0.2", "id", c->id, "status",
		      status, "pid", pid > 0 ? (int)pid : 0, "bundle", c->env_dir, "root", root,
		      "annotations", "org.sbx.devices", "cdi");
	return st ? json_dumps(st, JSON_COMPACT) : NULL;
}

static int run_hook(const cdi_hook *h, const char *state, sbx_err **err)
{
	int in[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return err_errno(err, "hook '%s': pipe", h->path);
	const char *const noargs[] = {h->path, NULL};
	char *const *argv = h->args && h->args[0] ? h->args : (char *const *)noargs;
	char *const empty[] = {NULL};
	char *const *envp = h->env ? h->env : empty;
	pid_t pid = fork();
	if (pid < 0) {
		close(in[0]);
		close(in[1]);
		return err_errno(err, "hook '%s': fork", h->path);
	}
	if (pid == 0) {
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (dup2(in[0], 0) < 0 || null < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(127);
		sys_close_range(3, ~0U, 0);
		execve(h->path, argv, envp);
		_exit(127);
	}
	close(in[0]);
	size_t len = strlen(state);
	(void)!write(in[1], state, len); /* a hook need not read it (EPIPE is fine: SIGPIPE ignored below) */
	close(in[1]);
	int64_t tmo = h->timeout_s > 0 ? h->timeout_s : HOOK_DEFAULT_TIMEOUT_S;
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return err_errno(err, "hook '%s': wait", h->path);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > tmo * 1000) {
			kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ETIMEDOUT,
				       "%s hook '%s': timed out after %llds", h->name, h->path,
				       (long long)tmo);
		}
		struct timespec d = {0, 5 * 1000 * 1000};
		nanosleep(&d, NULL);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return err_set(err, SBX_E_INTERNAL, ECHILD, "%s hook '%s' exited with status %d%s", h->name,
			       h->path, WEXITSTATUS(status),
			       WEXITSTATUS(status) == 127 ? " (could not be run?)" : "");
	return err_set(err, SBX_E_INTERNAL, ECHILD, "%s hook '%s' killed by signal %d", h->name, h->path,
		       WTERMSIG(status));
}

static int run_stage(const env_config *c, const char *stage, pid_t pid, const char *status, sbx_err **err)
{
	_cleanup_free_ char *state = NULL;
	for (size_t i = 0; c->cdi && i < c->cdi->n_hooks; i++) {
		const cdi_hook *h = &c->cdi->hooks[i];
		/* prestart (deprecated in OCI) is createRuntime's predecessor. */
		bool match =
		    streq(h->name, stage) || (streq(stage, "createRuntime") && streq(h->name, "prestart"));
		if (!match)
			continue;
		if (!state && !(state = hook_state(c, pid, status)))
			return err_oom(err);
		log_debug("cdi: %s hook %s", stage, h->path);
		if (run_hook(h, state, err) < 0)
			return -1;
	}
	return 0;
}

int cdi_hooks_create(const env_config *c, pid_t init_pid, json_t *warnings, sbx_err **err)
{
	if (!c->cdi || !c->cdi->n_hooks)
		return 0;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	static const char *const create[] = {"createRuntime", "createContainer", "startContainer"};
	int r = 0;
	for (size_t i = 0; i < ARRAY_SIZE(create) && r == 0; i++)
		if (run_stage(c, create[i], init_pid, "created", err) < 0)
			r = err_wrap(err, "devices");
	_cleanup_err_ sbx_err *e = NULL;
	if (r == 0 && run_stage(c, "poststart", init_pid, "running", &e) < 0)
		json_array_append_new(warnings, json_string(sbx_err_message(e)));
	sigaction(SIGPIPE, &old, NULL);
	return r;
}

void devices_teardown(const env_config *c, pid_t init_pid)
{
	if (!c->cdi)
		return;
	_cleanup_err_ sbx_err *e = NULL;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	if (run_stage(c, "poststop", init_pid, "stopped", &e) < 0)
		log_debug("cdi: %s", sbx_err_message(e));
	sigaction(SIGPIPE, &old, NULL);
	devcg_remove(c->id);
}
