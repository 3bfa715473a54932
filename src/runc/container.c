/* The runc commands over the state root (docs/runc.md has the design).
 *
 * Process model. `create` forks an intermediate child that joins the
 * namespaces the spec names by path, unshares the new ones (the user
 * namespace first, its maps written by the parent) and forks the container
 * process, then exits: the container process is orphaned to the nearest
 * subreaper, the engine's shim, which reaps it and takes its exit status as
 * the container's. It is the pid written to --pid-file, it sits in the spec's
 * cgroup from before its first instruction, it builds its root, raises the
 * walls and then blocks on accept() of <state>/start.sock until `start`
 * connects: then it execs the spec's process. So "created" is "alive and the
 * start socket is still there", "running" is "alive and start has removed
 * it", "stopped" is "no such process with the recorded start time, or a
 * zombie" (the shim has not reaped it yet). `exec` does the same dance
 * with setns into the container process's namespaces. */
#include <dirent.h>
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

#define START_SOCK "start.sock"
#define MSG_MAX 8192

int runc_wall_from_name(const char *name)
{
	if (!name)
		return 0;
	if (streq(name, "seccomp"))
		return RUNC_WALL_SECCOMP;
	if (streq(name, "landlock"))
		return RUNC_WALL_LANDLOCK;
	if (streq(name, "capabilities") || streq(name, "caps"))
		return RUNC_WALL_CAPS;
	if (streq(name, "mask"))
		return RUNC_WALL_MASK;
	return 0;
}

unsigned runc_walls(const runc_globals *g, const json_t *annotations)
{
	unsigned w = RUNC_WALL_SECCOMP | RUNC_WALL_LANDLOCK | RUNC_WALL_CAPS | RUNC_WALL_MASK;
	w &= ~g->no_walls;
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)annotations, k, v) {
		if (!startswith(k, "run.sbx.wall."))
			continue;
		int bit = runc_wall_from_name(k + strlen("run.sbx.wall."));
		if (bit && json_is_string(v) && streq(json_string_value(v), "off"))
			w &= ~(unsigned)bit;
	}
	return w;
}

static char *state_dir(const runc_globals *g, const char *id)
{
	char *p = NULL;
	return asprintf(&p, "%s/%s", g->root, id) < 0 ? NULL : p;
}

static int read_proc(pid_t pid, char *ret_state, uint64_t *ret_start)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	_cleanup_free_ char *txt = NULL;
	if (fs_read_file(p, 4096, &txt, NULL) < 0)
		return -errno;
	return oci_proc_stat_parse(txt, ret_state, ret_start);
}

static bool proc_alive(pid_t pid, uint64_t start)
{
	char st;
	uint64_t t;
	if (read_proc(pid, &st, &t) < 0)
		return false;
	return t == start && st != 'Z' && st != 'X';
}

int runc_load(const runc_globals *g, const char *id, oci_state_rec *ret_rec, const char **ret_status, sbx_err **err)
{
	if (!oci_id_valid(id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid container id '%s'", id ? id : "");
	_cleanup_free_ char *dir = state_dir(g, id);
	if (!dir)
		return err_oom(err);
	char p[4200];
	snprintf(p, sizeof(p), "%s/state.json", dir);
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	if (fs_read_file(p, 1 << 20, &txt, &len) < 0) {
		if (errno == ENOENT)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT, "container does not exist");
		return err_errno(err, "read '%s'", p);
	}
	oci_state_rec rec = {0};
	if (oci_state_parse(txt, len, &rec, err) < 0)
		return err_wrap(err, "container '%s'", id);
	snprintf(p, sizeof(p), "%s/%s", dir, START_SOCK);
	oci_observed o = {
	    .alive = proc_alive(rec.pid, rec.start_time),
	    .start_pending = access(p, F_OK) == 0,
	};
	if (o.alive)
		o.frozen = rcg_frozen(rec.cgroup);
	*ret_status = oci_status_decide(&o);
	*ret_rec = rec;
	return 0;
}

/* ---- create ---- */

static int send_str(int sock, const char *s) { return fd_send_msg(sock, s, strlen(s), NULL, 0); }

/* Child side: report an error to the parent and exit. */
_noreturn_ static void child_fail(int sock, sbx_err *e)
{
	char msg[MSG_MAX];
	snprintf(msg, sizeof(msg), "error:%s", e ? sbx_err_message(e) : "unknown error");
	(void)send_str(sock, msg);
	_exit(1);
}

static int expect(int sock, const char *want, char *buf, size_t cap, sbx_err **err)
{
	ssize_t n = fd_recv_msg(sock, buf, cap, NULL, NULL);
	if (n <= 0)
		return err_set(err, SBX_E_INTERNAL, n ? (int)-n : EPIPE, "the container process exited during setup");
	if (startswith(buf, "error:"))
		return err_set(err, SBX_E_INTERNAL, EIO, "%s", buf + 6);
	if (want && !startswith(buf, want))
		return err_set(err, SBX_E_INTERNAL, EPROTO, "unexpected message '%s'", buf);
	return 0;
}

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

static char *hook_state(const oci_state_rec *r, const char *status)
{
	_cleanup_json_ json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:s,s:O}", "ociVersion", OCI_SPEC_VERSION, "id", r->id,
					     "status", status, "pid", (json_int_t)r->pid, "bundle", r->bundle,
					     "annotations", r->annotations ? r->annotations : json_object());
	return j ? json_dumps(j, JSON_COMPACT) : NULL;
}

static int write_pid_file(const char *path, pid_t pid, sbx_err **err)
{
	char v[32];
	int n = snprintf(v, sizeof(v), "%d", (int)pid);
	if (fs_write_atomic(path, v, (size_t)n, 0644) < 0)
		return err_errno(err, "write pid file '%s'", path);
	return 0;
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
	strcpy(a.sun_path, START_SOCK);
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

static int connect_rel(int dirfd, const char *name, sbx_err **err)
{
	_cleanup_close_ int cwd = open(".", O_PATH | O_CLOEXEC);
	if (fchdir(dirfd) < 0)
		return err_errno(err, "chdir");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", name);
	int r = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&a, sizeof(a));
	int e = errno;
	if (cwd >= 0)
		(void)!fchdir(cwd);
	if (r < 0) {
		safe_close(fd);
		return err_errnum(err, e, "connect to '%s'", name);
	}
	return fd;
}

/* A connected --console-socket (absolute or relative to our cwd). */
static int connect_console(const char *path, sbx_err **err)
{
	if (strlen(path) < sizeof(((struct sockaddr_un *)0)->sun_path)) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		int e = errno;
		safe_close(fd);
		return err_errnum(err, e, "connect to the console socket '%s'", path);
	}
	_cleanup_free_ char *dup = strdup(path);
	if (!dup)
		return err_oom(err);
	char *slash = strrchr(dup, '/');
	*slash = 0;
	_cleanup_close_ int d = open(*dup ? dup : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return err_errno(err, "console socket directory");
	return connect_rel(d, slash + 1, err);
}

static void die_of_signal(int sig) { _exit(128 + sig); }

/* The container process (pid 1 of its pid namespace, if it has one). */
_noreturn_ static void container_main(int sock, int listen_fd, int console, const oci_spec *s, const char *rootfs,
				     const char *cgroup, unsigned walls, bool no_pivot)
{
	_cleanup_err_ sbx_err *e = NULL;
	char buf[MSG_MAX];
	/* Everything but stdio, the sync and start sockets and the console
	 * closes at exec. */
	(void)sys_close_range(3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
	(void)prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	if (expect(sock, "go", buf, sizeof(buf), &e) < 0)
		_exit(1);
	const char *state_json = buf + 3; /* "go:<state>" */
	_cleanup_free_ char *sj = strdup(state_json);
	if (new_ns_flags(s) & CLONE_NEWCGROUP && unshare(CLONE_NEWCGROUP) < 0)
		err_errno(&e, "unshare cgroup namespace"), child_fail(sock, e);
	runc_rootfs_ctx rc = {.spec = s, .rootfs = rootfs, .cgroup = cgroup, .walls = walls, .no_pivot = no_pivot,
			      .state_json = sj ? sj : "{}"};
	if (runc_rootfs_setup(&rc, &e) < 0)
		child_fail(sock, e);
	_cleanup_free_ char *exe = runc_find_exe(&s->process, &e);
	if (!exe)
		child_fail(sock, e);
	runc_proc_ctx pc = {.p = &s->process, .walls = walls, .seccomp = s->seccomp, .console_sock = console};
	if (runc_proc_finalize(&pc, &e) < 0)
		child_fail(sock, e);
	safe_close(console);
	if (send_str(sock, "ready") < 0)
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
	_cleanup_free_ char *dir = state_dir(g, id);
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
	char buf[MSG_MAX];
	_cleanup_close_ int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int listen_fd = dirfd < 0 ? err_errno(err, "open '%s'", dir) : bind_start_sock(dirfd, err);
	if (listen_fd < 0)
		goto out;
	if (s->process.terminal) {
		if (!console_socket) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "process.terminal needs --console-socket");
			goto out;
		}
		if ((console = connect_console(console_socket, err)) < 0)
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
		if (expect(csock, "attached", buf, sizeof(buf), &e) < 0)
			_exit(1);
		if (join_namespaces(s, &e) < 0)
			child_fail(csock, e);
		if (flags & CLONE_NEWUSER) {
			if (unshare(CLONE_NEWUSER) < 0)
				err_errno(&e, "unshare user namespace"), child_fail(csock, e);
			if (send_str(csock, "maps") < 0 || expect(csock, "mapped", buf, sizeof(buf), &e) < 0)
				_exit(1);
			if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
				err_errno(&e, "become root in the user namespace"), child_fail(csock, e);
		}
		if (unshare(flags & ~(CLONE_NEWUSER | CLONE_NEWCGROUP)) < 0)
			err_errno(&e, "unshare namespaces"), child_fail(csock, e);
		pid_t c = fork();
		if (c < 0)
			err_errno(&e, "fork the container process"), child_fail(csock, e);
		if (c == 0)
			container_main(csock, listen_fd, console, s, rootfs, cgroup, walls, no_pivot);
		char msg[64];
		snprintf(msg, sizeof(msg), "pid:%d", (int)c);
		_exit(send_str(csock, msg) < 0 ? 1 : 0);
	}
	csock = safe_close(csock);
	listen_fd = safe_close(listen_fd);
	console = safe_close(console);
	/* The container's cgroup from its first instruction: we move the
	 * intermediate child before it forks. */
	if (rcg_attach(cgroup, mid, err) < 0 || send_str(psock, "attached") < 0)
		goto out;
	for (;;) {
		if (expect(psock, NULL, buf, sizeof(buf), err) < 0)
			goto out;
		if (streq(buf, "maps")) {
			if (write_maps(mid, s, err) < 0 || send_str(psock, "mapped") < 0)
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
	if (read_proc(cpid, &state_ch, &rec.start_time) < 0) {
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
	hs = hook_state(&rec, "creating");
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
	char go[MSG_MAX];
	snprintf(go, sizeof(go), "go:%s", hs);
	if (send_str(psock, go) < 0) {
		err_errno(err, "signal the container process");
		goto kill;
	}
	if (expect(psock, "ready", buf, sizeof(buf), err) < 0)
		goto kill;
	if (pid_file && write_pid_file(pid_file, cpid, err) < 0)
		goto kill;
	return 0;
kill:
	kill(cpid, SIGKILL);
out:
	cleanup_failed(cleanup_dir, cleanup_cg);
	return r;
}

/* ---- start, state, kill, delete, pause, ps, update ---- */

int runc_start(const runc_globals *g, const char *id, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	int r = -1;
	_cleanup_free_ char *dir = state_dir(g, id), *reply = NULL, *hs = NULL;
	_cleanup_close_ int dirfd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	_cleanup_close_ int c = -1;
	if (!streq(status, "created")) {
		err_set(err, SBX_E_CONFLICT, EINVAL, "cannot start a container that is %s", status);
		goto done;
	}
	if (dirfd < 0) {
		err_errno(err, "open the state directory");
		goto done;
	}
	c = connect_rel(dirfd, START_SOCK, err);
	if (c < 0)
		goto done;
	/* From here on `state` says running. */
	(void)unlinkat(dirfd, START_SOCK, 0);
	if (write(c, "s", 1) != 1) {
		err_errno(err, "start");
		goto done;
	}
	/* EOF: the exec succeeded (the connection was close-on-exec);
	 * anything else is the container's error. */
	size_t n = 0;
	if (fd_read_all(c, 4096, &reply, &n) < 0 || n > 0) {
		err_set(err, SBX_E_INTERNAL, EIO, "%s", n ? reply : "start failed");
		goto done;
	}
	hs = hook_state(&rec, "running");
	oci_hook *h = NULL;
	size_t nh = 0;
	if (hs && oci_hooks_parse(rec.hooks, OCI_HOOK_POSTSTART, &h, &nh, NULL) == 0) {
		_cleanup_err_ sbx_err *he = NULL;
		if (runc_hooks_run(h, nh, "poststart", hs, &he) < 0) {
			/* The spec: a failing poststart hook is logged, the container keeps running. */
			fprintf(stderr, "sbx-runc: warning: %s\n", sbx_err_message(he));
		}
		oci_hooks_free(h, nh);
	}
	r = 0;
done:
	oci_state_rec_done(&rec);
	return r;
}

int runc_state(const runc_globals *g, const char *id, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	_cleanup_free_ char *out = oci_state_report(&rec, status);
	oci_state_rec_done(&rec);
	if (!out)
		return err_oom(err);
	printf("%s\n", out);
	return 0;
}

int runc_kill(const runc_globals *g, const char *id, int sig, bool all, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	int r = 0;
	if (all) {
		(void)rcg_signal_all(rec.cgroup, sig);
		if (sig == SIGKILL && rcg_frozen(rec.cgroup))
			(void)rcg_freeze(rec.cgroup, false, NULL);
	} else if (streq(status, "stopped")) {
		r = err_set(err, SBX_E_CONFLICT, ESRCH, "container not running");
	} else if (kill(rec.pid, sig) < 0) {
		r = err_errno(err, "kill %d", (int)rec.pid);
	} else if (sig == SIGKILL && streq(status, "paused")) {
		/* A frozen task dies only once thawed. */
		(void)rcg_freeze(rec.cgroup, false, NULL);
	}
	oci_state_rec_done(&rec);
	return r;
}

static void wait_dead(pid_t pid, uint64_t start)
{
	for (int i = 0; i < 1000 && proc_alive(pid, start); i++)
		nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
}

int runc_delete(const runc_globals *g, const char *id, bool force, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	_cleanup_err_ sbx_err *le = NULL;
	if (runc_load(g, id, &rec, &status, &le) < 0) {
		/* `delete --force` of a container that is gone is success: the
		 * shim deletes, then force-deletes again. */
		if (force && sbx_err_code(le) == SBX_E_NOT_FOUND)
			return 0;
		if (err)
			*err = TAKE_PTR(le);
		return -1;
	}
	if (!streq(status, "stopped") && !streq(status, "created") && !force) {
		err_set(err, SBX_E_CONFLICT, EBUSY, "cannot delete container %s that is not stopped: %s", id, status);
		oci_state_rec_done(&rec);
		return -1;
	}
	if (!streq(status, "stopped")) {
		(void)kill(rec.pid, SIGKILL);
		if (streq(status, "paused"))
			(void)rcg_freeze(rec.cgroup, false, NULL);
		wait_dead(rec.pid, rec.start_time);
	}
	/* Whatever else is in the group (exec'd processes in a shared pid
	 * namespace, a frozen straggler). */
	if (rcg_frozen(rec.cgroup))
		(void)rcg_freeze(rec.cgroup, false, NULL);
	for (int i = 0; i < 100; i++) {
		pid_t *pids = NULL;
		size_t n = 0;
		(void)rcg_pids(rec.cgroup, &pids, &n);
		for (size_t k = 0; k < n; k++)
			(void)kill(pids[k], SIGKILL);
		free(pids);
		if (n == 0)
			break;
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
	}
	_cleanup_free_ char *hs = hook_state(&rec, "stopped");
	oci_hook *h = NULL;
	size_t nh = 0;
	if (hs && oci_hooks_parse(rec.hooks, OCI_HOOK_POSTSTOP, &h, &nh, NULL) == 0) {
		_cleanup_err_ sbx_err *he = NULL;
		if (runc_hooks_run(h, nh, "poststop", hs, &he) < 0)
			fprintf(stderr, "sbx-runc: warning: %s\n", sbx_err_message(he));
		oci_hooks_free(h, nh);
	}
	(void)rcg_destroy(rec.cgroup);
	_cleanup_free_ char *dir = state_dir(g, id);
	if (dir)
		(void)fs_rm_rf(dir);
	oci_state_rec_done(&rec);
	return 0;
}

int runc_pause(const runc_globals *g, const char *id, bool pause, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	int r;
	if (pause && !streq(status, "running") && !streq(status, "created"))
		r = err_set(err, SBX_E_CONFLICT, EINVAL, "container not running");
	else if (!pause && !streq(status, "paused"))
		r = err_set(err, SBX_E_CONFLICT, EINVAL, "container not paused");
	else
		r = rcg_freeze(rec.cgroup, pause, err);
	oci_state_rec_done(&rec);
	return r;
}

/* Runs ps (the host's, with args or "-ef") and returns its stdout. */
static int run_ps(char *const *args, char **ret, sbx_err **err)
{
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	_cleanup_close_ int rd = pp[0];
	pid_t c = fork();
	if (c < 0) {
		close(pp[1]);
		return err_errno(err, "fork");
	}
	if (c == 0) {
		char *argv[64] = {"ps"};
		size_t n = 1;
		if (!args || !*args)
			argv[n++] = "-ef";
		for (; args && *args && n < ARRAY_SIZE(argv) - 1; args++)
			argv[n++] = *args;
		argv[n] = NULL;
		if (dup2(pp[1], 1) < 0)
			_exit(127);
		execvp("ps", argv);
		_exit(127);
	}
	close(pp[1]);
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	int r = fd_read_all(rd, 16 << 20, &txt, &len);
	int st = 0;
	while (waitpid(c, &st, 0) < 0 && errno == EINTR)
		;
	if (r < 0)
		return err_errno(err, "read ps's output");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(err, SBX_E_INTERNAL, EIO, "ps failed (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	*ret = TAKE_PTR(txt);
	return 0;
}

int runc_ps(const runc_globals *g, const char *id, const char *format, char *const *ps_args, sbx_err **err)
{
	bool json = format && streq(format, "json");
	if (format && !json && !streq(format, "table"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid format option '%s'", format);
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	pid_t *pids = NULL;
	size_t n = 0;
	int r = rcg_pids(rec.cgroup, &pids, &n);
	oci_state_rec_done(&rec);
	if (r < 0)
		return err_errnum(err, -r, "read the container's cgroup");
	if (json) {
		printf("[");
		for (size_t i = 0; i < n; i++)
			printf("%s%d", i ? "," : "", (int)pids[i]);
		printf("]\n");
		free(pids);
		return 0;
	}
	_cleanup_free_ char *out = NULL, *table = NULL;
	if (run_ps(ps_args, &out, err) < 0) {
		free(pids);
		return -1;
	}
	r = oci_ps_filter(out, pids, n, &table);
	free(pids);
	if (r < 0)
		return err_errnum(err, -r, "ps's output has no PID column");
	fputs(table, stdout);
	return 0;
}

int runc_update(const runc_globals *g, const char *id, const char *file, const char *doc, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	_cleanup_free_ char *txt = NULL;
	size_t len = 0;
	int r;
	if (!file && doc)
		r = (txt = strdup(doc)) ? (len = strlen(doc), 0) : -1;
	else if (!file || streq(file, "-"))
		r = fd_read_all(0, 1 << 20, &txt, &len);
	else
		r = fs_read_file(file, 1 << 20, &txt, &len);
	if (r < 0) {
		oci_state_rec_done(&rec);
		return err_errno(err, "read resources '%s'", file ? file : "-");
	}
	oci_resources res = {0};
	r = oci_resources_parse(txt, len, &res, err);
	if (r == 0)
		r = rcg_update(rec.cgroup, &res, err);
	oci_resources_done(&res);
	oci_state_rec_done(&rec);
	return r;
}

int runc_list(const runc_globals *g, const char *format, bool quiet, sbx_err **err)
{
	bool json = format && streq(format, "json");
	if (format && !json && !streq(format, "table"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid format option '%s'", format);
	_cleanup_json_ json_t *arr = json ? json_array() : NULL;
	if (json && !arr)
		return err_oom(err);
	if (!json && !quiet)
		printf("ID\tPID\tSTATUS\tBUNDLE\tCREATED\n");
	DIR *d = opendir(g->root);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		oci_state_rec rec = {0};
		const char *status;
		if (runc_load(g, de->d_name, &rec, &status, NULL) < 0)
			continue;
		if (json) {
			json_t *o = oci_state_json(&rec, status);
			if (!o || json_array_append_new(arr, o) < 0) {
				oci_state_rec_done(&rec);
				closedir(d);
				return err_oom(err);
			}
		} else if (quiet) {
			printf("%s\n", rec.id);
		} else {
			printf("%s\t%d\t%s\t%s\t%s\n", rec.id, streq(status, "stopped") ? 0 : (int)rec.pid, status,
			       rec.bundle, rec.created);
		}
		oci_state_rec_done(&rec);
	}
	if (d)
		closedir(d);
	if (json) {
		char *out = json_dumps(arr, JSON_COMPACT);
		if (!out)
			return err_oom(err);
		printf("%s\n", out);
		free(out);
	}
	return 0;
}

static int print_event(const char *type, const char *id, json_t *data)
{
	_cleanup_json_ json_t *ev = data ? json_pack("{s:s,s:s,s:O}", "type", type, "id", id, "data", data)
					 : json_pack("{s:s,s:s}", "type", type, "id", id);
	char *s = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
	if (!s)
		return -ENOMEM;
	printf("%s\n", s);
	fflush(stdout);
	free(s);
	return 0;
}

int runc_events(const runc_globals *g, const char *id, bool stats_once, uint64_t interval_ms, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	int r = 0;
	if (streq(status, "stopped")) {
		r = err_set(err, SBX_E_CONFLICT, ESRCH, "container with id %s is not running", id);
		goto done;
	}
	uint64_t ooms = 0, now_ooms = 0;
	(void)rcg_oom_kills(rec.cgroup, &ooms);
	for (;;) {
		_cleanup_json_ json_t *st = NULL;
		if (rcg_stats(rec.cgroup, &st, err) < 0) {
			r = -1;
			break;
		}
		if (print_event("stats", id, st) < 0) {
			r = err_oom(err);
			break;
		}
		if (stats_once)
			break;
		/* Sleep the interval in slices, watching for OOM kills and the end. */
		for (uint64_t t = 0; t < interval_ms; t += 100) {
			nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
			if (rcg_oom_kills(rec.cgroup, &now_ooms) == 0 && now_ooms > ooms) {
				ooms = now_ooms;
				(void)print_event("oom", id, NULL);
			}
			if (!proc_alive(rec.pid, rec.start_time))
				goto done;
		}
	}
done:
	oci_state_rec_done(&rec);
	return r;
}

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
		if ((console = connect_console(console_socket, err)) < 0)
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
		if (expect(csock, "attached", buf, sizeof(buf), &e) < 0)
			_exit(1);
		for (size_t i = 0; i < n_ns; i++)
			if (setns(nsfds[i], 0) < 0)
				err_errno(&e, "join the container's namespaces"), child_fail(csock, e);
		pid_t c = fork();
		if (c < 0)
			err_errno(&e, "fork"), child_fail(csock, e);
		if (c == 0) {
			(void)sys_close_range(3, ~0U, 4 /* CLOSE_RANGE_CLOEXEC */);
			_cleanup_free_ char *exe = runc_find_exe(&proc, &e);
			if (!exe)
				child_fail(csock, e);
			runc_proc_ctx pc = {.p = &proc, .walls = walls, .seccomp = spec ? spec->seccomp : NULL,
					    .console_sock = console};
			if (runc_proc_finalize(&pc, &e) < 0)
				child_fail(csock, e);
			safe_close(console);
			char **envp = runc_exec_env(&proc);
			execve(exe, proc.args, envp ? envp : proc.env);
			err_errno(&e, "exec: \"%s\"", proc.args[0]);
			child_fail(csock, e);
		}
		char msg[64];
		snprintf(msg, sizeof(msg), "pid:%d", (int)c);
		_exit(send_str(csock, msg) < 0 ? 1 : 0);
	}
	csock = safe_close(csock);
	console = safe_close(console);
	for (size_t i = 0; i < n_ns; i++)
		safe_close(nsfds[i]);
	if (rcg_attach(rec.cgroup, mid, err) < 0 || send_str(psock, "attached") < 0)
		goto done;
	char buf[MSG_MAX];
	if (expect(psock, "pid:", buf, sizeof(buf), err) < 0)
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
	if (pid_file && write_pid_file(pid_file, cpid, err) < 0)
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
