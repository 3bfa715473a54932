/* Warm environments, the supervisor's side (docs/warm.md): sbx pause and
 * resume (the cgroup freezer, or init's SIGSTOP where there is no cgroup),
 * the timeouts that stand still while paused, a paused environment woken
 * by a request, and the idle suspend (the environment ends, its
 * environment directory says "suspended"). The idle timers themselves are
 * the loop's (sup_arm_ttl). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "runtime/sup_internal.h"
#include "util/fs.h"
#include "util/json.h"

/* Marks in the run directory (paused: gone with a reboot, like the
 * processes) and the environment directory (suspended: survives it). */
static void warm_mark(supervisor *s, const char *dir, const char *name, const char *content)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (content) /* durable only where a reboot must find it */
		(void)fs_write_atomic_flags(p, content, strlen(content), 0600, dir == s->c->env_dir);
	else
		(void)unlink(p);
}

/* While paused no timeout may fire (the command cannot run, so its time
 * stands still): each exec's remaining time is kept and set again on resume.
 * The idle TTL and idle suspend are off too (sup_arm_ttl). */
static void pause_timers(supervisor *s, bool pause)
{
	for (size_t i = 0; i < s->n_execs; i++) {
		sup_exec *x = &s->execs[i];
		if (x->timer < 0)
			continue;
		if (pause) {
			struct itimerspec off = {0};
			(void)timerfd_gettime(x->timer, &x->paused_left);
			(void)timerfd_settime(x->timer, 0, &off, NULL);
		} else {
			if (!x->paused_left.it_value.tv_sec && !x->paused_left.it_value.tv_nsec)
				x->paused_left.it_value.tv_nsec = 1; /* it was about to fire */
			(void)timerfd_settime(x->timer, 0, &x->paused_left, NULL);
		}
	}
}

/* Freezes every process. With a cgroup the freezer does it (init too);
 * rootless, init SIGSTOPs every other process and answers once they all
 * are: that reply goes to conn. Returns whether conn is kept. */
bool sup_warm_pause(supervisor *s, int conn)
{
	_cleanup_err_ sbx_err *e = NULL;
	if (s->paused) {
		sup_send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_PAUSED, "already", 1), NULL, 0);
		return false;
	}
	if (s->freeze_conn >= 0)
		err_set(&e, SBX_E_CONFLICT, EBUSY,
			"a snapshot of this environment is in progress: pause after it");
	else if (s->c->degraded)
		err_set(&e, SBX_E_UNAVAILABLE, EPERM,
			"pause needs a pid namespace or a cgroup, and this host allows neither");
	else if (s->phase_pending)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "the environment is switching phases: pause after it");
	else if (s->cg)
		(void)cgroup_freeze(s->cg, true, &e);
	else if (s->n_waiters >= ARRAY_SIZE(s->waiters))
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many requests waiting for this environment");
	if (e) {
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	bool keep = false;
	if (!s->cg) {
		_cleanup_json_ json_t *q = json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP_ALL, CTL_F_STOP, 1);
		if (!q || json_send(s->init_sock, q, NULL, 0) < 0) {
			err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
			sup_send_json(conn, sup_err_json(e), NULL, 0);
			return false;
		}
		s->waiters[s->n_waiters++] = conn; /* init's stop_all reply */
		keep = true;
	}
	/* Marked before the reply: the client's next sbx ls must see it. */
	s->paused = true;
	pause_timers(s, true);
	sup_arm_ttl(s);
	warm_mark(s, s->c->run_dir, "paused", "1\n");
	if (!keep)
		sup_send_json(conn, json_pack("{s:s}", CTL_F_EV, CTL_EV_PAUSED), NULL, 0);
	return keep;
}

/* Thaws what sup_warm_pause froze; nothing when not paused. A snapshot's own
 * freeze (freeze_conn) is separate and stays. */
void sup_warm_resume(supervisor *s)
{
	if (!s->paused)
		return;
	if (s->freeze_conn >= 0) {
		/* A snapshot holds the freeze: its thaw ends the pause too. */
		s->frozen = s->cg != NULL;
		s->stopped = !s->cg;
	} else if (s->cg)
		(void)cgroup_freeze(s->cg, false, NULL);
	else {
		_cleanup_json_ json_t *q = json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP_ALL, CTL_F_STOP, 0);
		if (q && s->n_waiters < ARRAY_SIZE(s->waiters) && json_send(s->init_sock, q, NULL, 0) == 0)
			s->waiters[s->n_waiters++] = -1; /* reply dropped */
	}
	s->paused = false;
	pause_timers(s, false);
	sup_arm_ttl(s);
	warm_mark(s, s->c->run_dir, "paused", NULL);
}

/* A request that needs the environment's processes (exec, ps, file) while
 * it is paused: it resumes first, unless the client said no_auto_resume.
 * Returns false (and answers conn) when the request is refused. */
bool sup_warm_gate(supervisor *s, int conn, const json_t *m)
{
	if (!s->paused)
		return true;
	if (json_bool(m, "no_auto_resume", false)) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_CONFLICT, EAGAIN,
			"environment '%s' is paused (sbx resume %s, or leave out --no-auto-resume)", s->c->id,
			s->c->id);
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	sup_warm_resume(s);
	return true;
}

/* Processes below pid (its threads' children files), to say how many a
 * suspend ended; -1 if they cannot be read. */
static int64_t count_descendants(pid_t pid, int depth)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	DIR *d = depth < 64 ? opendir(p) : NULL;
	if (!d)
		return -1;
	int64_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char cp[128];
		snprintf(cp, sizeof(cp), "/proc/%d/task/%.20s/children", (int)pid, de->d_name);
		_cleanup_free_ char *buf = NULL;
		if (fs_read_file(cp, 1 << 20, &buf, NULL) < 0)
			continue;
		char *save = NULL;
		for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
			int64_t below = count_descendants((pid_t)atoi(t), depth + 1);
			n += 1 + (below > 0 ? below : 0);
		}
	}
	closedir(d);
	return n;
}

/* Idle for idle_suspend_ms: the environment ends (processes and memory go)
 * and its environment directory says "suspended", with what was running,
 * so that the next call starts it again on the same writable layer
 * (src/api/suspend.c) and sbx inspect can say the processes are gone. */
void sup_warm_idle(supervisor *s)
{
	uint64_t t;
	(void)!read(s->idle_fd, &t, sizeof(t));
	if (s->n_execs > 0 || s->paused || s->freeze_conn >= 0 || s->phase_pending || s->n_waiters > 0 ||
	    s->restart_conn >= 0)
		return;
	/* Test hook (t_exec_racing_idle_suspend_is_retried): SBX_SUSPEND_HOLD=FIFO
	 * holds the suspend here, after "FIFO.held" appears, until a byte comes
	 * on FIFO (at most 30 s), so that a request can arrive meanwhile. */
	const char *hold = getenv("SBX_SUSPEND_HOLD");
	if (hold && *hold) {
		char held[4200];
		snprintf(held, sizeof(held), "%s.held", hold);
		_cleanup_close_ int hf = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		_cleanup_close_ int fifo = open(hold, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		struct pollfd p = {.fd = fifo, .events = POLLIN};
		char b;
		if (fifo >= 0 && poll(&p, 1, 30000) > 0)
			(void)!read(fifo, &b, 1);
	}
	int64_t procs = count_descendants(s->init_pid, 0);
	char at[32];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(at, sizeof(at), "%lld", (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
	_cleanup_json_ json_t *j =
	    json_pack("{s:s,s:I,s:I}", "reason", "idle", "suspended_ms", (json_int_t)strtoll(at, NULL, 10),
		      "processes_ended", (json_int_t)procs);
	_cleanup_free_ char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (!txt)
		return;
	warm_mark(s, s->c->env_dir, "suspended", txt);
	sup_begin_stop(s, -1);
}
