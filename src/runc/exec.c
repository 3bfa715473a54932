/* runc exec (container.c has the process model): a process joins the
 * container process's namespaces, cgroup and walls. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runc/runc.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/syscalls.h"

/* ---- exec ---- */

static int open_ns_fds(pid_t pid, int *fds, size_t *n, sbx_err **err)
{
	static const char *const names[] = {"user", "ipc", "uts", "net", "pid", "cgroup", "mnt"};
	*n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		char p[64], self[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/%s", (int)pid, names[i]);
		snprintf(self, sizeof(self), "/proc/self/ns/%s", names[i]);
		struct stat a, b;
		if (stat(p, &a) < 0)
			return err_errno(err, "open '%s'", p);
		if (stat(self, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			continue; /* the same namespace (setns to one's own user ns fails) */
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err_errno(err, "open '%s'", p);
		fds[(*n)++] = fd;
	}
	return 0;
}

int runc_exec(const runc_globals *g, const char *id, const char *process_file, const oci_exec_args *xa,
	      bool detach, const char *pid_file, const char *console_socket, bool tty, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	int r = -1;
	oci_process proc = {0};
	_cleanup_oci_spec_ oci_spec *spec = NULL;
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	_cleanup_free_ char *ctxt = NULL;
	size_t clen = 0;
	_cleanup_close_ int console = -1, psock = -1, csock = -1;
	_cleanup_pid_ pid_t mid = 0;
	int nsfds[8];
	size_t n_ns = 0;
	char p[4200];
	if (!streq(status, "running") && !streq(status, "created")) {
		err_set(err, SBX_E_CONFLICT, EINVAL, "cannot exec in a %s container", status);
		goto done;
	}
	/* The bundle's spec for the seccomp profile and annotations (walls). */
	snprintf(p, sizeof(p), "%s/config.json", rec.bundle);
	if (fs_read_file(p, 16 << 20, &ctxt, &clen) == 0)
		(void)oci_spec_parse(ctxt, clen, &spec, NULL);
	if (process_file) {
		if (fs_read_file(process_file, 16 << 20, &txt, &len) < 0) {
			err_errno(err, "read '%s'", process_file);
			goto done;
		}
		if (oci_process_parse(txt, len, &proc, err) < 0)
			goto done;
	} else {
		/* runc exec ID CMD...: the bundle's process, overridden. */
		_cleanup_json_ json_t *cj = ctxt ? json_loadb(ctxt, clen, 0, NULL) : NULL;
		_cleanup_json_ json_t *pj = NULL;
		if (!xa || !xa->argv) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "exec needs --process FILE or a command");
			goto done;
		}
		if (oci_exec_process(cj ? json_object_get(cj, "process") : NULL, xa, &pj, err) < 0 ||
		    oci_process_parse_json(pj, &proc, err) < 0)
			goto done;
	}
	if (tty)
		proc.terminal = true;
	unsigned walls = runc_walls(g, rec.annotations);
	if (proc.terminal) {
		if (!console_socket) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "a terminal needs --console-socket");
			goto done;
		}
		if ((console = runc_connect_console(console_socket, err)) < 0)
			goto done;
	}
	if (open_ns_fds(rec.pid, nsfds, &n_ns, err) < 0)
		goto done;
	if (!detach)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		err_errno(err, "socketpair");
		goto done;
	}
	psock = sp[0];
	csock = sp[1];
	mid = fork();
	if (mid < 0) {
		err_errno(err, "fork");
		goto done;
	}
	if (mid == 0) {
		_cleanup_err_ sbx_err *e = NULL;
		psock = safe_close(psock);
		char buf[64];
		if (runc_expect(csock, "attached", buf, sizeof(buf), &e) < 0)
			_exit(1);
		for (size_t i = 0; i < n_ns; i++)
			if (setns(nsfds[i], 0) < 0)
				err_errno(&e, "join the container's namespaces"), runc_child_fail(csock, e);
		pid_t c = fork();
		if (c < 0)
			err_errno(&e, "fork"), runc_child_fail(csock, e);
		if (c == 0) {
			(void)sys_close_range(3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
			_cleanup_free_ char *exe = runc_find_exe(&proc, &e);
			if (!exe)
				runc_child_fail(csock, e);
			runc_proc_ctx pc = {.p = &proc, .walls = walls, .seccomp = spec ? spec->seccomp : NULL,
					    .console_sock = console};
			if (runc_proc_finalize(&pc, &e) < 0)
				runc_child_fail(csock, e);
			safe_close(console);
			char **envp = runc_exec_env(&proc);
			execve(exe, proc.args, envp ? envp : proc.env);
			err_errno(&e, "exec: \"%s\"", proc.args[0]);
			runc_child_fail(csock, e);
		}
		char msg[64];
		snprintf(msg, sizeof(msg), "pid:%d", (int)c);
		_exit(runc_send_str(csock, msg) < 0 ? 1 : 0);
	}
	csock = safe_close(csock);
	console = safe_close(console);
	for (size_t i = 0; i < n_ns; i++)
		safe_close(nsfds[i]);
	if (rcg_attach(rec.cgroup, mid, err) < 0 || runc_send_str(psock, "attached") < 0)
		goto done;
	char buf[RUNC_MSG_MAX];
	if (runc_expect(psock, "pid:", buf, sizeof(buf), err) < 0)
		goto done;
	pid_t cpid = (pid_t)atoi(buf + 4);
	int st;
	(void)waitpid(TAKE_PID(mid), &st, 0);
	/* EOF once the process has exec'd (its end is close-on-exec); an
	 * error message if it failed before. */
	ssize_t n = fd_recv_msg(psock, buf, sizeof(buf), NULL, NULL);
	if (n > 0 && startswith(buf, "error:")) {
		err_set(err, SBX_E_INTERNAL, EIO, "%s", buf + 6);
		if (!detach)
			(void)waitpid(cpid, NULL, 0);
		goto done;
	}
	if (pid_file && runc_write_pid_file(pid_file, cpid, err) < 0)
		goto done;
	if (detach) {
		r = 0;
		goto done;
	}
	/* Attached: we are the subreaper of the exec'd process; its status is ours. */
	while (waitpid(cpid, &st, 0) < 0 && errno == EINTR)
		;
	r = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
done:
	oci_process_done(&proc);
	oci_state_rec_done(&rec);
	return r;
}
