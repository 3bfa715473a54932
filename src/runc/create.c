/* runc create (container.c has the process model): the intermediate child,
 * namespaces and maps, the container process up to its start socket. */
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
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runc/runc.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/syscalls.h"

/* ---- create ---- */

static const int ns_order[] = {CLONE_NEWUSER, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET,
			       CLONE_NEWPID,  CLONE_NEWCGROUP, CLONE_NEWNS, 0x00000080};

/* Joins the namespaces with paths (user first), unshares the rest except
 * cgroup (after the parent moved us) and user (done by the caller). */
static int join_namespaces(const oci_spec *s, sbx_err **err)
{
	int fds[16];
	size_t n = 0;
	for (size_t o = 0; o < ARRAY_SIZE(ns_order); o++)
		for (size_t i = 0; i < s->n_namespaces; i++)
			if (s->namespaces[i].type == ns_order[o] && s->namespaces[i].path) {
				int fd = open(s->namespaces[i].path, O_RDONLY | O_CLOEXEC);
				if (fd < 0)
					return err_errno(err, "open namespace '%s'", s->namespaces[i].path);
				fds[n++] = fd;
				if (n == ARRAY_SIZE(fds))
					break;
			}
	for (size_t i = 0; i < n; i++) {
		if (setns(fds[i], 0) < 0) {
			int e = errno;
			for (size_t k = i; k < n; k++)
				close(fds[k]);
			return err_errnum(err, e, "join a namespace given by path");
		}
		close(fds[i]);
	}
	return 0;
}

static int new_ns_flags(const oci_spec *s)
{
	int f = 0;
	for (size_t i = 0; i < s->n_namespaces; i++)
		if (!s->namespaces[i].path)
			f |= s->namespaces[i].type;
	return f;
}

static int write_maps(pid_t pid, const oci_spec *s, sbx_err **err)
{
	for (int k = 0; k < 2; k++) {
		const oci_idmap *m = k ? s->gid_mappings : s->uid_mappings;
		size_t n = k ? s->n_gid_mappings : s->n_uid_mappings;
		char buf[340 * 40] = "";
		size_t len = 0;
		for (size_t i = 0; i < n; i++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%u %u %u\n", m[i].container_id,
						m[i].host_id, m[i].size);
		if (n == 0) /* a user namespace without maps: map root to root's (nobody otherwise) */
			len = (size_t)snprintf(buf, sizeof(buf), "0 0 1\n");
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, k ? "gid_map" : "uid_map");
		if (fs_write_string(p, buf) < 0)
			return err_errno(err, "write %s", p);
	}
	return 0;
}

static char *iso_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char b[64], *r = NULL;
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	return asprintf(&r, "%s.%09ldZ", b, ts.tv_nsec) < 0 ? NULL : r;
}

/* The unix socket start connects to; bound relative to the state
 * directory (absolute paths may exceed sun_path). */
static int bind_start_sock(int dirfd, sbx_err **err)
{
	_cleanup_close_ int cwd = open(".", O_PATH | O_CLOEXEC);
	if (fchdir(dirfd) < 0)
		return err_errno(err, "chdir to the state directory");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strcpy(a.sun_path, RUNC_START_SOCK);
	int r = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&a, sizeof(a));
	if (r == 0)
		r = listen(fd, 4);
	int e = errno;
	if (cwd >= 0)
		(void)!fchdir(cwd);
	if (r < 0) {
		safe_close(fd);
		return err_errnum(err, e, "bind the start socket");
	}
	return fd;
}

static void die_of_signal(int sig) { _exit(128 + sig); }

/* The container process (pid 1 of its pid namespace, if it has one). */
_noreturn_ static void container_main(int sock, int listen_fd, int console, const oci_spec *s, const char *rootfs,
				     const char *cgroup, unsigned walls, bool no_pivot)
{
	_cleanup_err_ sbx_err *e = NULL;
	char buf[RUNC_MSG_MAX];
	/* Everything but stdio, the sync and start sockets and the console
	 * closes at exec. */
	(void)sys_close_range(3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
	(void)prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	if (runc_expect(sock, "go", buf, sizeof(buf), &e) < 0)
		_exit(1);
	const char *state_json = buf + 3; /* "go:<state>" */
	_cleanup_free_ char *sj = strdup(state_json);
	if (new_ns_flags(s) & CLONE_NEWCGROUP && unshare(CLONE_NEWCGROUP) < 0)
		err_errno(&e, "unshare cgroup namespace"), runc_child_fail(sock, e);
	runc_rootfs_ctx rc = {.spec = s, .rootfs = rootfs, .cgroup = cgroup, .walls = walls, .no_pivot = no_pivot,
			      .state_json = sj ? sj : "{}"};
	if (runc_rootfs_setup(&rc, &e) < 0)
		runc_child_fail(sock, e);
	_cleanup_free_ char *exe = runc_find_exe(&s->process, &e);
	if (!exe)
		runc_child_fail(sock, e);
	runc_proc_ctx pc = {.p = &s->process, .walls = walls, .seccomp = s->seccomp, .console_sock = console};
	if (runc_proc_finalize(&pc, &e) < 0)
		runc_child_fail(sock, e);
	safe_close(console);
	if (runc_send_str(sock, "ready") < 0)
		_exit(1);
	safe_close(sock);
	/* As pid 1 of its namespace the process ignores every signal it has no
	 * handler for (SIGKILL aside); runc's waiting init dies of SIGTERM and
	 * the like, so ours must too. execve resets the handlers. */
	static const int term_sigs[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM};
	for (size_t i = 0; i < ARRAY_SIZE(term_sigs); i++)
		(void)sigaction(term_sigs[i], &(struct sigaction){.sa_handler = die_of_signal}, NULL);
	/* Wait for `start`. Stray connections (none expected) are dropped
	 * unless they send the start byte. */
	for (;;) {
		int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		char b = 0;
		if (read(c, &b, 1) == 1 && b == 's') {
			safe_close(listen_fd);
			/* startContainer hooks: in the container, after start. */
			if (s->n_hooks[OCI_HOOK_START_CONTAINER] &&
			    runc_hooks_run(s->hooks[OCI_HOOK_START_CONTAINER], s->n_hooks[OCI_HOOK_START_CONTAINER],
					   "startContainer", sj ? sj : "{}", &e) < 0) {
				(void)fd_write_all(c, sbx_err_message(e), strlen(sbx_err_message(e)));
				_exit(1);
			}
			char **envp = runc_exec_env(&s->process);
			execve(exe, s->process.args, envp ? envp : s->process.env);
			char msg[512];
			int n = snprintf(msg, sizeof(msg), "exec: \"%s\": %s", s->process.args[0], strerror(errno));
			(void)fd_write_all(c, msg, (size_t)n);
			_exit(errno == ENOENT ? 127 : 126);
		}
		safe_close(c);
	}
}

static void cleanup_failed(const char *dir, const char *cgroup)
{
	if (cgroup) {
		(void)rcg_signal_all(cgroup, SIGKILL);
		(void)rcg_destroy(cgroup);
	}
	if (dir)
		(void)fs_rm_rf(dir);
}

int runc_create(const runc_globals *g, const char *id, const char *bundle, const char *pid_file,
		const char *console_socket, bool no_pivot, sbx_err **err)
{
	if (!oci_id_valid(id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid container id '%s'", id ? id : "");
	_cleanup_free_ char *bundle_abs = realpath(bundle ? bundle : ".", NULL);
	if (!bundle_abs)
		return err_errno(err, "bundle '%s'", bundle ? bundle : ".");
	char p[4200];
	snprintf(p, sizeof(p), "%s/config.json", bundle_abs);
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	if (fs_read_file(p, 16 << 20, &txt, &len) < 0)
		return err_errno(err, "read '%s'", p);
	_cleanup_oci_spec_ oci_spec *s = NULL;
	if (oci_spec_parse(txt, len, &s, err) < 0)
		return -1;
	if (s->root_path[0] == '/')
		snprintf(p, sizeof(p), "%s", s->root_path);
	else
		snprintf(p, sizeof(p), "%s/%s", bundle_abs, s->root_path);
	_cleanup_free_ char *rootfs = realpath(p, NULL);
	if (!rootfs)
		return err_errno(err, "rootfs '%s'", p);
	_cleanup_free_ char *cgroup = NULL;
	if (oci_cgroup_path(s->cgroups_path, id, g->systemd_cgroup, &cgroup, err) < 0)
		return -1;
	unsigned walls = runc_walls(g, s->annotations);

	if (fs_mkdir_p(g->root, 0711) < 0)
		return err_errno(err, "state root '%s'", g->root);
	_cleanup_free_ char *dir = runc_state_dir(g, id);
	if (!dir)
		return err_oom(err);
	if (mkdir(dir, 0711) < 0) {
		if (errno == EEXIST)
			return err_set(err, SBX_E_CONFLICT, EEXIST, "container with id exists: %s", id);
		return err_errno(err, "create '%s'", dir);
	}
	const char *cleanup_dir = dir, *cleanup_cg = NULL;
	int r = -1;
	_cleanup_close_ int console = -1, psock = -1, csock = -1;
	_cleanup_pid_ pid_t mid = 0;
	_cleanup_free_ char *created = NULL, *state_txt = NULL, *hs = NULL;
	pid_t cpid = 0;
	char buf[RUNC_MSG_MAX];
	_cleanup_close_ int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int listen_fd = dirfd < 0 ? err_errno(err, "open '%s'", dir) : bind_start_sock(dirfd, err);
	if (listen_fd < 0)
		goto out;
	if (s->process.terminal) {
		if (!console_socket) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "process.terminal needs --console-socket");
			goto out;
		}
		if ((console = runc_connect_console(console_socket, err)) < 0)
			goto out;
	}
	if (rcg_create(cgroup, &s->resources, err) < 0)
		goto out;
	cleanup_cg = cgroup;

	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		err_errno(err, "socketpair");
		goto out;
	}
	psock = sp[0];
	csock = sp[1];
	int flags = new_ns_flags(s);
	mid = fork();
	if (mid < 0) {
		err_errno(err, "fork");
		goto out;
	}
	if (mid == 0) {
		/* The intermediate child: namespaces, then the container process. */
		_cleanup_err_ sbx_err *e = NULL;
		psock = safe_close(psock);
		if (runc_expect(csock, "attached", buf, sizeof(buf), &e) < 0)
			_exit(1);
		if (join_namespaces(s, &e) < 0)
			runc_child_fail(csock, e);
		if (flags & CLONE_NEWUSER) {
			if (unshare(CLONE_NEWUSER) < 0)
				err_errno(&e, "unshare user namespace"), runc_child_fail(csock, e);
			if (runc_send_str(csock, "maps") < 0 || runc_expect(csock, "mapped", buf, sizeof(buf), &e) < 0)
				_exit(1);
			if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
				err_errno(&e, "become root in the user namespace"), runc_child_fail(csock, e);
		}
		if (unshare(flags & ~(CLONE_NEWUSER | CLONE_NEWCGROUP)) < 0)
			err_errno(&e, "unshare namespaces"), runc_child_fail(csock, e);
		pid_t c = fork();
		if (c < 0)
			err_errno(&e, "fork the container process"), runc_child_fail(csock, e);
		if (c == 0)
			container_main(csock, listen_fd, console, s, rootfs, cgroup, walls, no_pivot);
		char msg[64];
		snprintf(msg, sizeof(msg), "pid:%d", (int)c);
		_exit(runc_send_str(csock, msg) < 0 ? 1 : 0);
	}
	csock = safe_close(csock);
	listen_fd = safe_close(listen_fd);
	console = safe_close(console);
	/* The container's cgroup from its first instruction: we move the
	 * intermediate child before it forks. */
	if (rcg_attach(cgroup, mid, err) < 0 || runc_send_str(psock, "attached") < 0)
		goto out;
	for (;;) {
		if (runc_expect(psock, NULL, buf, sizeof(buf), err) < 0)
			goto out;
		if (streq(buf, "maps")) {
			if (write_maps(mid, s, err) < 0 || runc_send_str(psock, "mapped") < 0)
				goto out;
			continue;
		}
		if (startswith(buf, "pid:")) {
			cpid = (pid_t)atoi(buf + 4);
			break;
		}
	}
	int st;
	(void)waitpid(TAKE_PID(mid), &st, 0);
	if (cpid <= 0) {
		err_set(err, SBX_E_INTERNAL, EPROTO, "no container pid");
		goto out;
	}
	oci_state_rec rec = {.id = (char *)id, .pid = cpid, .bundle = bundle_abs, .rootfs = rootfs,
			     .cgroup = cgroup, .owner = getuid(), .annotations = s->annotations,
			     .hooks = s->hooks_json};
	char state_ch;
	if (runc_read_proc(cpid, &state_ch, &rec.start_time) < 0) {
		err_set(err, SBX_E_INTERNAL, ESRCH, "the container process exited during setup");
		goto out;
	}
	created = iso_now();
	rec.created = created ? created : (char *)"";
	state_txt = oci_state_format(&rec);
	snprintf(p, sizeof(p), "%s/state.json", dir);
	if (!state_txt || fs_write_atomic(p, state_txt, strlen(state_txt), 0644) < 0) {
		err_errno(err, "write '%s'", p);
		goto out;
	}
	hs = runc_hook_state(&rec, "creating");
	if (!hs) {
		err_oom(err);
		goto out;
	}
	/* prestart (deprecated) and createRuntime: in the runtime's (host's)
	 * namespaces, after the container's exist (dockerd's
	 * libnetwork-setkey hook reads the pid and joins its netns). */
	if (runc_hooks_run(s->hooks[OCI_HOOK_PRESTART], s->n_hooks[OCI_HOOK_PRESTART], "prestart", hs, err) < 0 ||
	    runc_hooks_run(s->hooks[OCI_HOOK_CREATE_RUNTIME], s->n_hooks[OCI_HOOK_CREATE_RUNTIME], "createRuntime",
			   hs, err) < 0)
		goto kill;
	char go[RUNC_MSG_MAX];
	snprintf(go, sizeof(go), "go:%s", hs);
	if (runc_send_str(psock, go) < 0) {
		err_errno(err, "signal the container process");
		goto kill;
	}
	if (runc_expect(psock, "ready", buf, sizeof(buf), err) < 0)
		goto kill;
	if (pid_file && runc_write_pid_file(pid_file, cpid, err) < 0)
		goto kill;
	return 0;
kill:
	kill(cpid, SIGKILL);
out:
	cleanup_failed(cleanup_dir, cleanup_cg);
	return r;
}
