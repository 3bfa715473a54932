/* OCI hooks: each hook is executed with the container's state on its stdin,
 * its own args and env, and killed when its timeout passes. Where a hook
 * runs (host or container namespaces) is the caller's choice (docs/runc.md). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runc/runc.h"
#include "util/fd.h"
#include "util/macro.h"

static int run_one(const oci_hook *h, const char *kind, const char *state_json, sbx_err **err)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_errno(err, "%s hook: pipe", kind);
	pid_t pid = fork();
	if (pid < 0) {
		close(pfd[0]), close(pfd[1]);
		return err_errno(err, "%s hook: fork", kind);
	}
	if (pid == 0) {
		if (dup2(pfd[0], 0) < 0)
			_exit(127);
		/* The hook's stdout goes where ours goes; runc discards it
		 * for some callers, keeping it helps debugging. */
		char *const dflt_args[] = {h->path, NULL};
		char *const empty_env[] = {NULL};
		execve(h->path, h->args && h->args[0] ? h->args : dflt_args, h->env ? h->env : empty_env);
		_exit(127);
	}
	close(pfd[0]);
	(void)signal(SIGPIPE, SIG_IGN);
	(void)fd_write_all(pfd[1], state_json, strlen(state_json));
	close(pfd[1]);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, h->timeout > 0 ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return err_errno(err, "%s hook '%s': wait", kind, h->path);
		if (h->timeout > 0) {
			struct timespec t;
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= h->timeout) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				return err_set(err, SBX_E_LIMIT_EXCEEDED, ETIMEDOUT, "%s hook '%s' timed out after %ds",
					       kind, h->path, h->timeout);
			}
			nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return err_set(err, SBX_E_INTERNAL, EIO, "%s hook '%s' exited with status %d", kind, h->path,
			       WEXITSTATUS(status));
	return err_set(err, SBX_E_INTERNAL, EIO, "%s hook '%s' was killed by signal %d", kind, h->path,
		       WTERMSIG(status));
}

int runc_hooks_run(const oci_hook *h, size_t n, const char *kind, const char *state_json, sbx_err **err)
{
	for (size_t i = 0; i < n; i++) {
		int r = run_one(&h[i], kind, state_json, err);
		if (r < 0)
			return r;
	}
	return 0;
}
