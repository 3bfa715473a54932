/* The supervisor's own start (supervisor_start, runtime.h): the creator
 * forks it off, detached (a new session, not the caller's child unless the
 * caller is short-lived), with only its ready pipe, the liveness lock and a
 * one-shot owner's pidfd; the supervisor (supervisor_main) reports on the
 * pipe how the environment's start went, and the creator reads that. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/seccomp.h"
#include "runtime/startup_trace.h"
#include "runtime/sup_internal.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

/* Tells the creator how the start went; false if it could not be told
 * (its end of the pipe is closed: the creator is gone). */
bool sup_start_report(int fd, json_t *m)
{
	_cleanup_free_ char *t = json_dumps(m, JSON_COMPACT);
	bool told = t && fd_write_all(fd, t, strlen(t)) >= 0;
	json_decref(m);
	safe_close(fd);
	return told;
}

int supervisor_start(env_config *c, char ***ret_warnings, json_t **ret_info, sbx_err **err)
{
	/* A process that starts environments again and again (sbx serve, a
	 * pool's refiller) builds init's seccomp program once, here, for all
	 * the setup children it forks; a one-shot CLI leaves it to its child,
	 * which builds it while the supervisor moves it into its cgroup. */
	static int started;
	if (__atomic_add_fetch(&started, 1, __ATOMIC_RELAXED) > 1)
		seccomp_keep(0);
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	/* Detach: a new session, and a second fork so that the supervisor is
	 * not our child (it must outlive the caller and never be its zombie).
	 * The intermediate process is a vfork child: it borrows our memory
	 * (this thread waits until it exits), so our address space is copied
	 * once, for the supervisor, instead of twice. It only calls setsid()
	 * and fork() and exits; it writes no variable of ours (pid is written
	 * by vfork's return in each process).
	 * A short-lived caller (c->supervisor_child: a CLI command) forks the
	 * supervisor directly: one process start fewer on the create's path
	 * (the intermediate had to be scheduled before the supervisor existed;
	 * `sbx run` 0.86-0.92x). It is reparented when the caller exits, and a
	 * supervisor that ends first is a zombie only until then. */
	const bool direct = c->supervisor_child;
	pid_t pid = direct ? fork() : vfork();
	if (pid < 0) {
		safe_close(rp[0]);
		safe_close(rp[1]);
		return err_errno(err, "fork");
	}
	if (pid == 0) {
		if (setsid() < 0)
			_exit(1);
		if (!direct) {
			pid = fork();
			if (pid != 0)
				_exit(pid < 0);
		}
		/* The supervisor, in its own memory from here. Only the ready
		 * pipe survives. The environment's trees, staging directories
		 * and files are made with the modes asked for, whatever the
		 * caller's umask (a 027 or 077 one would take the bits the
		 * environment's uids pass through by); init sets 022 for the
		 * commands anyway. */
		umask(022);
		safe_close(rp[0]);
		/* One-shot: the environment's files are made here, by the process
		 * that removes them whenever its owner goes (runtime.h prepare). */
		if (c->prepare) {
			_cleanup_err_ sbx_err *pe = NULL;
			if (c->prepare(c->prepare_arg, c, &pe) < 0) {
				(void)sup_start_report(rp[1], json_pack("{s:b,s:s,s:s,s:i}", "ok", 0, "code",
									sbx_code_name(sbx_err_code(pe)),
									"message", sbx_err_message(pe),
									"errno", sbx_err_errno(pe)));
				_exit(1);
			}
		}
		/* Keep exactly: the ready pipe (fd 3), the liveness lock (fd 4) and
		 * a one-shot environment's owner pidfd (fd 5). */
		int a = fcntl(rp[1], F_DUPFD_CLOEXEC, 10), b = fcntl(c->lock_fd, F_DUPFD_CLOEXEC, 10);
		int o = c->one_shot ? fcntl(c->owner_fd, F_DUPFD_CLOEXEC, 10) : -1;
		if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 ||
		    (c->one_shot && (o < 0 || dup2(o, 5) < 0)))
			_exit(1);
		int fd = 3;
		c->lock_fd = 4;
		c->owner_fd = c->one_shot ? 5 : -1;
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int logfd = -1;
		if (log_debug_enabled) {
			char lp[4200];
			snprintf(lp, sizeof(lp), "%s/supervisor.log", c->run_dir);
			logfd = open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		}
		dup2(null, 0);
		dup2(null, 1);
		if (!startup_trace_enabled()) /* SBX_TRACE_STARTUP: keep the creator's stderr */
			dup2(logfd >= 0 ? logfd : null, 2);
		if (null > 5)
			safe_close(null);
		if (logfd > 5)
			safe_close(logfd);
		sys_close_range(6, ~0U, 0);
		if (!c->one_shot)
			(void)close(5);
		(void)fd_set_cloexec(3, 1);
		(void)fd_set_cloexec(4, 1);
		(void)fd_set_cloexec(5, 1);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		signal(SIGPIPE, SIG_IGN);
		(void)!chdir("/");
		supervisor_main(c, fd);
	}
	safe_close(rp[1]);
	startup_mark("create: supervisor forked");
	if (!direct)
		(void)RETRY_EINTR(waitpid(pid, NULL, 0));
	_cleanup_free_ char *buf = NULL;
	int r = fd_read_all(rp[0], 1 << 20, &buf, NULL);
	safe_close(rp[0]);
	startup_mark("create: supervisor reported");
	if (r < 0 || !buf || !*buf)
		return err_set(err, SBX_E_INTERNAL, r < 0 ? -r : EPIPE,
			       "supervisor died while starting the environment");
	_cleanup_json_ json_t *m = json_loads(buf, 0, NULL);
	if (!m)
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "supervisor sent a malformed reply");
	if (!json_bool(m, "ok", false)) {
		sbx_code cc = err_code_from_name(json_str(m, "code"));
		return err_set(err, cc, (int)json_int(m, "errno", 0), "%s",
			       json_str(m, "message") ?: "unknown error");
	}
	if (ret_warnings)
		*ret_warnings = json_to_strv(json_object_get(m, "warnings"));
	if (ret_info)
		*ret_info = json_incref(m);
	return 0;
}
