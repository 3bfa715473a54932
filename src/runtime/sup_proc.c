/* Background processes, the supervisor's side (sup_proc.h). */
#include "runtime/sup_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

static const char *const stream_name[2] = {"stdout", "stderr"};

static void iso(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The record: what every reader of status.json sees (docs/processes.md). */
static void write_record(sup_proc *p, const char *state, const json_t *exit_fields)
{
	char at[32];
	iso(p->started_ms, at, sizeof(at));
	_cleanup_json_ json_t *j = json_pack(
	    "{s:s,s:I,s:O,s:s,s:s,s:I,s:I,s:I,s:b,s:b,s:I,s:I}", CTL_F_PROCESS_ID, p->id, "pid",
	    (json_int_t)p->pid, "argv", p->argv, "state", state, "started_at", at, "started_ms",
	    (json_int_t)p->started_ms, "output_limit", (json_int_t)p->cap, "timeout_ms",
	    (json_int_t)p->timeout_ms, "stdout_truncated", p->trunc[0], "stderr_truncated", p->trunc[1],
	    "stdout_bytes", (json_int_t)p->len[0], "stderr_bytes", (json_int_t)p->len[1]);
	if (!j)
		return;
	if (exit_fields)
		(void)json_object_update(j, (json_t *)exit_fields);
	_cleanup_free_ char *txt = json_dumps(j, JSON_COMPACT);
	_cleanup_free_ char *path = fs_path_join(p->dir, "status.json");
	if (txt && path)
		(void)fs_write_atomic_flags(path, txt, strlen(txt), 0600, false);
}

int64_t sup_proc_next_id(const char *run_dir)
{
	_cleanup_free_ char *procs = fs_path_join(run_dir, "procs");
	DIR *d = procs ? opendir(procs) : NULL;
	int64_t max = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		int64_t n = ctl_proc_id_parse(de->d_name);
		if (n > max)
			max = n;
	}
	if (d)
		closedir(d);
	return max + 1;
}

/* Beyond SUP_PROC_KEEP records, the oldest exited one goes. */
static void prune(const char *procs)
{
	DIR *d = opendir(procs);
	if (!d)
		return;
	size_t count = 0;
	int64_t oldest = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		int64_t n = ctl_proc_id_parse(de->d_name);
		if (n < 0)
			continue;
		count++;
		char p[600];
		snprintf(p, sizeof(p), "%s/%s/status.json", procs, de->d_name);
		_cleanup_free_ char *txt = NULL;
		if (fs_read_file(p, 1 << 20, &txt, NULL) < 0 || !strstr(txt, "\"state\":\"exited\""))
			continue;
		if (oldest < 0 || n < oldest)
			oldest = n;
	}
	closedir(d);
	if (count >= SUP_PROC_KEEP && oldest > 0) {
		char p[600];
		snprintf(p, sizeof(p), "%s/p%lld", procs, (long long)oldest);
		(void)fs_rm_rf(p);
	}
}

int sup_proc_new(const char *run_dir, int ep, int64_t n, const json_t *argv, int64_t cap, int64_t timeout_ms,
		 sup_proc **ret, int ret_wr[2], sbx_err **err)
{
	if (n < 1 || n > CTL_PROC_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EOVERFLOW,
			       "no process id left in this environment");
	_cleanup_free_ char *procs = fs_path_join(run_dir, "procs");
	if (!procs)
		return err_oom(err);
	int r = fs_mkdir_p(procs, 0700);
	if (r < 0)
		return err_errnum(err, -r, "create '%s'", procs);
	prune(procs);
	sup_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return err_oom(err);
	*p = (sup_proc){.n = n,
			.ep = ep,
			.rd = {-1, -1},
			.file = {-1, -1},
			.cap = cap,
			.timeout_ms = timeout_ms,
			.started_ms = clock_ms(CLOCK_REALTIME),
			.argv = json_deep_copy(argv)};
	snprintf(p->id, sizeof(p->id), "p%lld", (long long)n);
	int wr[2] = {-1, -1};
	if (!p->argv || !(p->dir = fs_path_join(procs, p->id))) {
		err_oom(err);
		goto fail;
	}
	if (mkdir(p->dir, 0700) < 0) {
		err_errno(err, "create '%s'", p->dir);
		goto fail;
	}
	for (int i = 0; i < 2; i++) {
		_cleanup_free_ char *f = fs_path_join(p->dir, stream_name[i]);
		int pp[2];
		if (!f) {
			err_oom(err);
			goto fail;
		}
		p->file[i] = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (p->file[i] < 0) {
			err_errno(err, "create '%s'", f);
			goto fail;
		}
		if (pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0) {
			err_errno(err, "pipe");
			goto fail;
		}
		p->rd[i] = pp[0];
		wr[i] = pp[1];
		/* The command's end blocks as a pipe normally does; ours never. */
		(void)fd_set_nonblock(wr[i], 0);
		struct epoll_event ev = {.events = EPOLLIN, .data.fd = p->rd[i]};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p->rd[i], &ev) < 0) {
			err_errno(err, "epoll");
			goto fail;
		}
	}
	write_record(p, "starting", NULL);
	ret_wr[0] = wr[0];
	ret_wr[1] = wr[1];
	*ret = p;
	return 0;
fail:
	safe_close(wr[0]);
	safe_close(wr[1]);
	if (p->dir)
		(void)fs_rm_rf(p->dir);
	sup_proc_free(p);
	return -1;
}

bool sup_proc_owns(const sup_proc *p, int fd)
{
	return p && fd >= 0 && (p->rd[0] == fd || p->rd[1] == fd);
}

static void close_stream(sup_proc *p, int i)
{
	if (p->rd[i] < 0)
		return;
	(void)epoll_ctl(p->ep, EPOLL_CTL_DEL, p->rd[i], NULL);
	p->rd[i] = safe_close(p->rd[i]);
}

/* Reads at most a few chunks (the loop stays fair to other fds); closes the
 * stream at EOF. `all`: until the pipe is empty, or 16 MiB more (a child
 * left behind that writes without end must not hold the loop). */
static void drain_stream(sup_proc *p, int i, bool all)
{
	char buf[65536];
	for (int round = 0; p->rd[i] >= 0 && round < (all ? 256 : 4); round++) {
		ssize_t n = read(p->rd[i], buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close_stream(p, i);
			return;
		}
		size_t take = (size_t)n;
		bool hit = false; /* the record must say truncated now */
		if (p->len[i] + (int64_t)take > p->cap) {
			take = p->cap > p->len[i] ? (size_t)(p->cap - p->len[i]) : 0;
			hit = !p->trunc[i];
			p->trunc[i] = true;
		}
		/* A write error (the run directory's filesystem full) drops the
		 * rest, flagged: the command is never held up by it. */
		if (take && fd_write_all(p->file[i], buf, take) < 0) {
			hit |= !p->trunc[i];
			p->trunc[i] = true;
			p->cap = p->len[i];
		} else
			p->len[i] += (int64_t)take;
		if (hit)
			write_record(p, p->pid ? "running" : "starting", NULL);
	}
}

void sup_proc_drain(sup_proc *p, int fd)
{
	for (int i = 0; i < 2; i++)
		if (p->rd[i] >= 0 && p->rd[i] == fd)
			drain_stream(p, i, false);
}

void sup_proc_started(sup_proc *p, int64_t pid)
{
	p->pid = pid;
	write_record(p, "running", NULL);
}

void sup_proc_exited(sup_proc *p, int status, bool timed_out, bool oom, const char *ended)
{
	/* Everything it wrote before it exited is in the pipes; a child that
	 * still holds them open does not keep the record open. */
	for (int i = 0; i < 2; i++) {
		drain_stream(p, i, true);
		close_stream(p, i);
	}
	int64_t end = clock_ms(CLOCK_REALTIME);
	bool sig = WIFSIGNALED(status);
	_cleanup_json_ json_t *x =
	    json_pack("{s:o,s:o,s:b,s:b,s:I,s:I,s:s}", "exit_code",
		      WIFEXITED(status) ? json_integer(WEXITSTATUS(status)) : json_null(), "signal",
		      sig ? json_integer(WTERMSIG(status)) : json_null(), "timed_out", timed_out,
		      "oom_killed", oom, "ended_ms", (json_int_t)end, "duration_ms",
		      (json_int_t)(end - p->started_ms), "end_reason", ended ? ended : "exited");
	write_record(p, "exited", x);
	_cleanup_json_ json_t *ev =
	    json_pack("{s:s,s:s,s:b}", CTL_F_EV, CTL_EV_PROC_EXIT, CTL_F_PROCESS_ID, p->id, "running", 0);
	for (size_t i = 0; i < p->n_waiters; i++) {
		if (ev)
			(void)json_send(p->waiters[i], ev, NULL, 0);
		(void)epoll_ctl(p->ep, EPOLL_CTL_DEL, p->waiters[i], NULL);
		safe_close(p->waiters[i]);
	}
	p->n_waiters = 0;
}

bool sup_proc_add_waiter(sup_proc *p, int conn)
{
	if (p->n_waiters >= SUP_PROC_WAITERS)
		return false;
	p->waiters[p->n_waiters++] = conn;
	return true;
}

bool sup_proc_drop_waiter(sup_proc *p, int conn)
{
	for (size_t i = 0; p && i < p->n_waiters; i++)
		if (p->waiters[i] == conn) {
			p->waiters[i] = p->waiters[--p->n_waiters];
			return true;
		}
	return false;
}

void sup_proc_discard(sup_proc *p)
{
	if (p && p->dir)
		(void)fs_rm_rf(p->dir);
}

void sup_proc_free(sup_proc *p)
{
	if (!p)
		return;
	for (int i = 0; i < 2; i++) {
		close_stream(p, i);
		safe_close(p->file[i]);
	}
	for (size_t i = 0; i < p->n_waiters; i++) {
		(void)epoll_ctl(p->ep, EPOLL_CTL_DEL, p->waiters[i], NULL);
		safe_close(p->waiters[i]);
	}
	json_decref(p->argv);
	free(p->dir);
	free(p);
}
