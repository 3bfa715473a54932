

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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runc/runc.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

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

char *runc_state_dir(const runc_globals *g, const char *id)
{
	char *p = NULL;
	return asprintf(&p, "%s/%s", g->root, id) < 0 ? NULL : p;
}

int runc_read_proc(pid_t pid, char *ret_state, uint64_t *ret_start)
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
	if (runc_read_proc(pid, &st, &t) < 0)
		return false;
	return t == start && st != 'Z' && st != 'X';
}

int runc_load(const runc_globals *g, const char *id, oci_state_rec *ret_rec, const char **ret_status, sbx_err **err)
{
	if (!oci_id_valid(id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid container id '%s'", id ? id : "");
	_cleanup_free_ char *dir = runc_state_dir(g, id);
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
	snprintf(p, sizeof(p), "%s/%s", dir, RUNC_START_SOCK);
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

/* ---- helpers create.c and exec.c share (runc.h) ---- */

int runc_send_str(int sock, const char *s) { return fd_send_msg(sock, s, strlen(s), NULL, 0); }

/* Child side: report an error to the parent and exit. */
_noreturn_ void runc_child_fail(int sock, sbx_err *e)
{
	char msg[RUNC_MSG_MAX];
	snprintf(msg, sizeof(msg), "error:%s", e ? sbx_err_message(e) : "unknown error");
	(void)runc_send_str(sock, msg);
	_exit(1);
}

int runc_expect(int sock, const char *want, char *buf, size_t cap, sbx_err **err)
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

char *runc_hook_state(const oci_state_rec *r, const char *status)
{
	_cleanup_json_ json_t *j = json_pack("{s:s,s:s,s:s,s:I,s:s,s:O}", "ociVersion", OCI_SPEC_VERSION, "id", r->id,
					     "status", status, "pid", (json_int_t)r->pid, "bundle", r->bundle,
					     "annotations", r->annotations ? r->annotations : json_object());
	return j ? json_dumps(j, JSON_COMPACT) : NULL;
}

int runc_write_pid_file(const char *path, pid_t pid, sbx_err **err)
{
	char v[32];
	int n = snprintf(v, sizeof(v), "%d", (int)pid);
	if (fs_write_atomic(path, v, (size_t)n, 0644) < 0)
		return err_errno(err, "write pid file '%s'", path);
	return 0;
}

int runc_connect_rel(int dirfd, const char *name, sbx_err **err)
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
int runc_connect_console(const char *path, sbx_err **err)
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
	return runc_connect_rel(d, slash + 1, err);
}

/* ---- start, state, kill, delete, pause, ps, update ---- */

int runc_start(const runc_globals *g, const char *id, sbx_err **err)
{
	oci_state_rec rec = {0};
	const char *status;
	if (runc_load(g, id, &rec, &status, err) < 0)
		return -1;
	int r = -1;
	_cleanup_free_ char *dir = runc_state_dir(g, id), *reply = NULL, *hs = NULL;
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
	c = runc_connect_rel(dirfd, RUNC_START_SOCK, err);
	if (c < 0)
		goto done;
	/* From here on `state` says running. */
	(void)unlinkat(dirfd, RUNC_START_SOCK, 0);
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
	hs = runc_hook_state(&rec, "running");
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
	_cleanup_free_ char *hs = runc_hook_state(&rec, "stopped");
	oci_hook *h = NULL;
	size_t nh = 0;
	if (hs && oci_hooks_parse(rec.hooks, OCI_HOOK_POSTSTOP, &h, &nh, NULL) == 0) {
		_cleanup_err_ sbx_err *he = NULL;
		if (runc_hooks_run(h, nh, "poststop", hs, &he) < 0)
			fprintf(stderr, "sbx-runc: warning: %s\n", sbx_err_message(he));
		oci_hooks_free(h, nh);
	}
	(void)rcg_destroy(rec.cgroup);
	_cleanup_free_ char *dir = runc_state_dir(g, id);
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
