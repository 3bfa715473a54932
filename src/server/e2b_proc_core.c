/* The processes of envd's process.Process service (e2b_proc_core.h).
 *
 * A process here is one sbx_env_exec call running on a thread of its own
 * (proc_main), so that it has what envd's processes have and background
 * processes (sbx_process_*) do not: a stdin the client writes to while it
 * runs, a pty with a size, signals at any time. It outlives the stream that
 * started it, as envd's do: Start and Connect are subscribers to its
 * output, and a process with no subscriber runs on, its output dropped
 * (envd's Connect too sees only what comes after it attached).
 *
 * The output log holds the chunks not every subscriber has sent yet; when
 * it is over E2B_PROC_LOG_MAX the command's relay waits for the slowest
 * subscriber (the command then blocks on its full pipe), so a slow client
 * slows the command instead of losing its output.
 *
 * The plumbing between a call and its exec: stdin is a pipe (its write end
 * ours: SendInput, CloseStdin); signals are bytes on a pipe (the exec's
 * signal_fd: SendSignal); a pty's size lives on a host pty master that is
 * the exec's stdout_fd only for its size (TIOCGWINSZ at the start and on
 * each byte of winch_fd: Update); what exec_core writes to it fails once
 * its small buffer is full, and it stops writing there.
 *
 * A spare (e2b_spare.h) is a process of this kind started ahead, with no
 * request: a `bash -l` waiting on its stdin for a command. It is in the
 * spares list, not the registry (List and the selectors do not see it),
 * and keeps its output (what its profile printed) for the Start that takes
 * it. Taking it moves it to the registry with that Start's request, writes
 * the command to its stdin and arms its deadline (a timerfd as the exec's
 * cancel_fd: a spare's exec was started without a timeout). */
#include "server/e2b_proc_core.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_data.h"
#include "server/e2b_spare.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"
#include "util/thread.h"

#define E2B_PROC_LOG_MAX ((size_t)1 << 20) /* unsent output before the command waits */
#define E2B_PROCS_PER_SANDBOX 256	   /* running processes of one sandbox */
#define E2B_PROCS_MAX 2048		   /* in the whole server */
#define E2B_INPUT_WAIT_MS 10000		   /* SendInput waits this long for a full pipe */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static eproc *reg;
static size_t reg_count;
static eproc *spares; /* reg_lock: at most one per sandbox */

static int64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

uint32_t eproc_pid(eproc *p)
{
	return __atomic_load_n(&p->pid, __ATOMIC_ACQUIRE);
}

void eproc_unref(eproc *p)
{
	pthread_mutex_lock(&p->lock);
	bool last = --p->refs == 0;
	pthread_mutex_unlock(&p->lock);
	if (!last)
		return;
	for (chunk *c = p->head, *n; c; c = n) {
		n = c->next;
		free(c);
	}
	safe_close(p->in_w);
	safe_close(p->in_r);
	safe_close(p->sig_r);
	safe_close(p->sig_w);
	safe_close(p->winch_r);
	safe_close(p->winch_w);
	safe_close(p->size_fd);
	safe_close(p->deadline_fd);
	sbx_err_free(p->fail);
	e2b_start_req_clear(&p->req);
	e2b_start_req_clear(&p->spare_req);
	json_decref(p->in);
	free(p->user);
	free(p->sandbox);
	e2b_events_unref(p->events);
	pthread_mutex_destroy(&p->in_lock);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* The running process of sandbox that sel names, with a reference; NULL
 * with err not_found. */
eproc *eproc_find(const char *sandbox, const e2b_selector *sel, sbx_err **err)
{
	pthread_mutex_lock(&reg_lock);
	eproc *p = reg;
	for (; p; p = p->next)
		if (eproc_pid(p) && streq(p->sandbox, sandbox) &&
		    (sel->pid ? eproc_pid(p) == sel->pid : p->req.tag && streq(p->req.tag, sel->tag)))
			break;
	if (p) {
		pthread_mutex_lock(&p->lock);
		p->refs++;
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&reg_lock);
	if (!p) {
		if (sel->pid)
			err_set(err, SBX_E_NOT_FOUND, ESRCH, "process with pid %u not found", sel->pid);
		else
			err_set(err, SBX_E_NOT_FOUND, ESRCH, "process with tag '%.100s' not found", sel->tag);
	}
	return p;
}

/* Takes p out of the registry, or of the spares; true if it was in either. */
static bool reg_remove(eproc *p)
{
	bool found = false;
	pthread_mutex_lock(&reg_lock);
	for (eproc **pp = &reg; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			reg_count--;
			found = true;
			break;
		}
	for (eproc **pp = &spares; !found && *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			found = true;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	return found;
}

/* Drops the chunks every subscriber has sent (all of them when none
 * listens); the caller holds p->lock. */
void eproc_log_trim(eproc *p)
{
	if (p->spare) /* kept for the Start that takes it */
		return;
	uint64_t min = p->next_seq;
	for (sub *s = p->subs; s; s = s->next)
		if (s->cursor < min)
			min = s->cursor;
	while (p->head && p->head->seq < min) {
		chunk *c = p->head;
		p->head = c->next;
		if (!p->head)
			p->tail = NULL;
		p->bytes -= c->len;
		free(c);
	}
}

static void on_output(void *userdata, int stream, const char *buf, size_t len)
{
	eproc *p = userdata;
	chunk *c = malloc(sizeof(*c) + len);
	if (!c)
		return;
	c->next = NULL;
	c->len = len;
	memcpy(c->data, buf, len);
	pthread_mutex_lock(&p->lock);
	c->kind = p->req.pty ? 3 : stream;
	c->seq = p->next_seq++;
	if (p->tail)
		p->tail->next = c;
	else
		p->head = c;
	p->tail = c;
	p->bytes += len;
	eproc_log_trim(p);
	pthread_cond_broadcast(&p->cond);
	while ((p->subs || p->spare) && p->bytes > E2B_PROC_LOG_MAX)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/* One of the sandbox's events (its logs) about p: pid, cmd and the pair k=v. */
static void proc_event(eproc *p, e2b_log_level level, const char *msg, const char *k, const char *v)
{
	if (!p->events)
		return;
	char pid[16], cmd[E2B_EVENT_VAL_MAX];
	snprintf(pid, sizeof(pid), "%u", eproc_pid(p));
	size_t n = 0;
	cmd[0] = 0;
	for (char **a = p->req.argv; a && *a && n < sizeof(cmd) - 1; a++) {
		int w = snprintf(cmd + n, sizeof(cmd) - n, "%s%s", n ? " " : "", *a);
		n = w < 0 ? n : n + (size_t)w >= sizeof(cmd) ? sizeof(cmd) - 1 : n + (size_t)w;
	}
	const char *kv[] = {"pid", pid, "cmd", cmd, k, v};
	e2b_events_add(p->events, p->sandbox, level, msg, kv, k ? 6 : 4);
}

static void on_start(void *userdata, int64_t pid)
{
	eproc *p = userdata;
	/* Under the lock: a spare taken now tells its start (with its pid)
	 * exactly once, here or in spare_take. */
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->pid, pid > 0 && pid <= (int64_t)UINT32_MAX ? (uint32_t)pid : UINT32_MAX,
			 __ATOMIC_RELEASE);
	bool spare = p->spare;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (!spare)
		proc_event(p, E2B_LOG_INFO, "process started", NULL, NULL);
}

static bool no_such_user(const sbx_err *e)
{
	return e && sbx_err_code(e) == SBX_E_NOT_FOUND && sbx_err_spawn_errno(e) == 0 &&
	       strstr(sbx_err_message(e), "no such user");
}

static int proc_exec(eproc *p, sbx_exec_result *res, sbx_err **err)
{
	/* envd's defaults under the request's own (a spare's too: a command
	 * it serves has no envs of its own) */
	_cleanup_strv_free_ char **env = e2b_env_with_defaults(p->req.env, p->sandbox);
	if (!env)
		return err_oom(err);
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = (const char *const *)p->req.argv;
	o.env = (const char *const *)env;
	o.cwd = p->req.cwd;
	o.user = p->user;
	o.timeout_ms = p->timeout_ms;
	o.tty = p->req.pty;
	o.stdin_fd = p->in_r;
	o.stdout_fd = p->req.pty ? p->size_fd : -1;
	o.winch_fd = p->req.pty ? p->winch_r : -1;
	o.signal_fd = p->sig_r;
	o.cancel_fd = p->deadline_fd;
	o.output_bytes = -1;
	o.on_output = on_output;
	o.on_start = on_start;
	o.userdata = p;
	o.no_auto_resume = true;
	return sbx_env_exec(p->ctx, p->sandbox, &o, res, err);
}

static void spare_start(sbx_ctx *ctx, e2b_events *events, const char *sandbox, const char *user);

static void *proc_main(void *arg)
{
	eproc *p = arg;
	sbx_exec_result res = {0};
	sbx_err *e = NULL;
	int r = proc_exec(p, &res, &e);
	pthread_mutex_lock(&p->lock);
	p->ended = true; /* a spare is taken only while it runs */
	bool spare = p->spare;
	pthread_mutex_unlock(&p->lock);
	if (r < 0 && p->user && !spare && no_such_user(e)) {
		/* envd's default user may not exist in this environment: root. */
		sbx_err_free(TAKE_PTR(e));
		e2b_start_req again = {0};
		if (e2b_start_parse(p->in, "/root", &again, &e) == 0) {
			free(p->req.cwd);
			p->req.cwd = TAKE_PTR(again.cwd);
			e2b_start_req_clear(&again);
			free(p->user);
			p->user = NULL;
			p->asked_root = true;
			r = proc_exec(p, &res, &e);
		}
	}
	p->in_r = safe_close(p->in_r);
	if (p->deadline_fd >= 0 && res.cancelled)
		res.timed_out = true; /* a taken spare's deadline */
	char st[32];
	if (spare)
		; /* never a command: nothing to tell */
	else if (r < 0)
		proc_event(p, E2B_LOG_ERROR, "process failed", "error", e ? sbx_err_message(e) : "?");
	else if (res.signal > 0) {
		snprintf(st, sizeof(st), "%d", res.signal);
		proc_event(p, E2B_LOG_WARN, "process exited", "signal", st);
	} else {
		snprintf(st, sizeof(st), "%d", res.exit_code);
		proc_event(p, res.exit_code ? E2B_LOG_WARN : E2B_LOG_INFO, "process exited", "exitCode", st);
	}
	/* Out of the registry (List) before done is told: whoever waited for
	 * the end (a SIGKILL's SendSignal) then finds it gone from List too.
	 * A spare dropped earlier is in neither list and holds no list's
	 * reference any more. */
	bool listed = reg_remove(p);
	pthread_mutex_lock(&p->lock);
	p->done = true;
	p->res =
	    (sbx_exec_result){.exit_code = res.exit_code, .signal = res.signal, .timed_out = res.timed_out};
	if (r < 0)
		p->fail = e ? e : NULL;
	else
		sbx_err_free(e);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	sbx_exec_result_free(&res);
	/* A command a spare could have served ended: the next one, likely of
	 * the same shape, may find a spare (spare_start makes one only if none
	 * of the sandbox's processes runs). A client whose commands a spare
	 * never serves (envs, a cwd, a pty) costs none. */
	char home[300];
	if (!spare && r == 0 && !p->asked_root &&
	    e2b_spare_fits(&p->req, e2b_user_home(p->user, home, sizeof(home))))
		spare_start(p->ctx, p->events, p->sandbox, p->user);
	if (listed)
		eproc_unref(p); /* the registry's, or the spares' */
	eproc_unref(p);		/* this thread's */
	return NULL;
}

static int make_pipe(int fds[2], bool nonblock_w, sbx_err **err)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	if (nonblock_w)
		fd_set_nonblock(fds[1], 1);
	return 0;
}

int eproc_alloc(sbx_ctx *ctx, e2b_events *events, const char *sandbox, const char *user, int64_t deadline_ms,
		const json_t *in, eproc **ret, sbx_err **err)
{
	char home[300];
	eproc *p = calloc(1, sizeof(*p));
	if (!p)
		return err_oom(err);
	pthread_mutex_init(&p->lock, NULL);
	pthread_mutex_init(&p->in_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cond, &ca);
	pthread_condattr_destroy(&ca);
	p->refs = 1;
	p->in_w = p->in_r = p->sig_r = p->sig_w = p->winch_r = p->winch_w = p->size_fd = -1;
	p->deadline_fd = -1;
	p->ctx = ctx;
	p->events = e2b_events_ref(events);
	p->in = json_deep_copy(in);
	p->sandbox = strdup(sandbox);
	p->user = user ? strdup(user) : NULL;
	if (!p->in || !p->sandbox || (user && !p->user)) {
		eproc_unref(p);
		return err_oom(err);
	}
	if (e2b_start_parse(in, e2b_user_home(user, home, sizeof(home)), &p->req, err) < 0) {
		eproc_unref(p);
		return -1;
	}
	int fds[2];
	if (p->req.stdin_open || p->req.pty) {
		if (make_pipe(fds, true, err) < 0) {
			eproc_unref(p);
			return -1;
		}
		p->in_r = fds[0];
		p->in_w = fds[1];
	}
	if (make_pipe(fds, true, err) < 0) {
		eproc_unref(p);
		return -1;
	}
	p->sig_r = fds[0];
	p->sig_w = fds[1];
	if (p->req.pty) {
		if (make_pipe(fds, true, err) < 0) {
			eproc_unref(p);
			return -1;
		}
		p->winch_r = fds[0];
		p->winch_w = fds[1];
		p->size_fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		struct winsize ws = {.ws_row = p->req.rows, .ws_col = p->req.cols};
		if (p->size_fd < 0 || ioctl(p->size_fd, TIOCSWINSZ, &ws) < 0) {
			err_errno(err, "pty");
			eproc_unref(p);
			return -1;
		}
	}
	int64_t left = deadline_ms >= 0 ? deadline_ms - mono_ms() : -1;
	p->timeout_ms = deadline_ms < 0 ? -1 : left > 0 ? left : 1;
	*ret = p;
	return 0;
}

/* ---- spares (e2b_spare.h) ------------------------------------------------------------------- */

static bool spares_on(void)
{
	static int on = -1;
	if (__atomic_load_n(&on, __ATOMIC_RELAXED) < 0) {
		const char *v = getenv("SBX_E2B_SPARE");
		__atomic_store_n(&on, !(v && streq(v, "0")), __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&on, __ATOMIC_RELAXED) > 0;
}

static bool same_user(const char *a, const char *b)
{
	return a == b || (a && b && streq(a, b));
}

/* Ends an untaken spare (its read sees the end of its stdin and it exits)
 * and drops the spares list's reference; the caller took it off the list. */
static void spare_drop(eproc *p)
{
	pthread_mutex_lock(&p->in_lock);
	p->in_w = safe_close(p->in_w);
	pthread_mutex_unlock(&p->in_lock);
	eproc_unref(p);
}

static size_t running_in(const char *sandbox)
{
	size_t n = 0;
	for (eproc *q = reg; q; q = q->next)
		n += streq(q->sandbox, sandbox);
	return n;
}

/* Whether any process of sandbox runs or it has a spare (reg_lock held). */
static bool sandbox_busy(const char *sandbox)
{
	bool busy = running_in(sandbox) > 0;
	for (eproc *q = spares; q && !busy; q = q->next)
		busy = streq(q->sandbox, sandbox);
	return busy;
}

/* proc_main on a detached thread of its own: pthread_create's result. */
static int run_detached(eproc *p)
{
	return thread_start_detached(proc_main, p, 0);
}

/* Starts sandbox's spare as user, unless it has one or any of its
 * processes runs. Failures are silent: the next command starts as usual. */
static void spare_start(sbx_ctx *ctx, e2b_events *events, const char *sandbox, const char *user)
{
	if (!spares_on())
		return;
	pthread_mutex_lock(&reg_lock);
	bool busy = sandbox_busy(sandbox);
	pthread_mutex_unlock(&reg_lock);
	if (busy)
		return;
	_cleanup_json_ json_t *in = json_pack("{s:{s:s,s:[s,s,s]},s:b}", "process", "cmd", "/bin/bash",
					      "args", "-l", "-c", E2B_SPARE_WRAPPER, "stdin", 1);
	eproc *p = NULL;
	sbx_err *e = NULL;
	if (!in || eproc_alloc(ctx, events, sandbox, user, -1, in, &p, &e) < 0) {
		sbx_err_free(e);
		return;
	}
	p->spare = true;
	p->born_ms = mono_ms();
	p->deadline_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (p->deadline_fd < 0) {
		eproc_unref(p);
		return;
	}
	pthread_mutex_lock(&reg_lock);
	busy = sandbox_busy(sandbox);
	if (!busy) {
		p->next = spares; /* the list has the first reference */
		spares = p;
		p->refs++; /* the thread's */
	}
	pthread_mutex_unlock(&reg_lock);
	if (busy) {
		eproc_unref(p);
		return;
	}
	int r = run_detached(p);
	if (r != 0) {
		if (reg_remove(p))
			eproc_unref(p);
		eproc_unref(p);
	}
}

void e2b_proc_spare_drop(const char *sandbox)
{
	eproc *p = NULL;
	pthread_mutex_lock(&reg_lock);
	for (eproc **pp = &spares; *pp; pp = &(*pp)->next)
		if (streq((*pp)->sandbox, sandbox)) {
			p = *pp;
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	if (p)
		spare_drop(p);
}

/* The sandbox's spare, taken for Start's request in (which it fits) and
 * subscribed to by me, with a reference for the call; NULL: none to take
 * (then any spare of the sandbox is gone: a command it does not serve may
 * change what the next login shell would read). */
eproc *eproc_spare_take(sbx_ctx *ctx, const char *sandbox, const char *user, int64_t deadline_ms,
			const json_t *in, sub *me)
{
	if (!spares_on())
		return NULL;
	char home[300];
	e2b_user_home(user, home, sizeof(home));
	e2b_start_req req = {0};
	sbx_err *e = NULL;
	if (e2b_start_parse(in, home, &req, &e) < 0) {
		sbx_err_free(e);
		e2b_proc_spare_drop(sandbox);
		return NULL;
	}
	bool fits = e2b_spare_fits(&req, home);
	eproc *p = NULL, *dropped = NULL;
	pthread_mutex_lock(&reg_lock);
	for (eproc **pp = &spares; *pp; pp = &(*pp)->next) {
		eproc *q = *pp;
		if (!streq(q->sandbox, sandbox))
			continue;
		*pp = q->next;
		pthread_mutex_lock(&q->lock);
		bool ok = fits && !q->ended && same_user(q->user, user) &&
			  mono_ms() - q->born_ms < E2B_SPARE_TAKE_MS && reg_count < E2B_PROCS_MAX &&
			  running_in(sandbox) < E2B_PROCS_PER_SANDBOX;
		if (ok) {
			/* Now the command's: listed, its request, its subscriber
			 * from the first byte (what the profile printed). */
			q->spare_req = q->req; /* its exec may still be reading it */
			q->req = req;
			req = (e2b_start_req){0};
			me->cursor = 0;
			me->next = q->subs;
			q->subs = me;
			q->spare = false;
			q->refs++; /* the call's */
			q->next = reg;
			reg = q;
			reg_count++;
			p = q;
		}
		pthread_mutex_unlock(&q->lock);
		if (!ok)
			dropped = q;
		break;
	}
	pthread_mutex_unlock(&reg_lock);
	e2b_start_req_clear(&req);
	if (dropped)
		spare_drop(dropped);
	if (!p)
		return NULL;
	if (eproc_pid(p))
		proc_event(p, E2B_LOG_INFO, "process started", NULL, NULL);
	if (deadline_ms >= 0) {
		struct itimerspec its = {
		    .it_value = {.tv_sec = deadline_ms / 1000, .tv_nsec = (deadline_ms % 1000) * 1000000L}};
		if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
			its.it_value.tv_nsec = 1;
		if (timerfd_settime(p->deadline_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
			unsigned char k = SIGKILL; /* no deadline to keep: it must not run unbounded */
			(void)!write(p->sig_w, &k, 1);
		}
	}
	/* The command and its NUL (the pipe is empty and larger than
	 * E2B_SPARE_CMD_MAX); then the stdin is the command's, or ends. */
	const char *cmd = p->req.argv[3];
	sbx_err *we = NULL;
	if (eproc_write_input(p, (const unsigned char *)cmd, strlen(cmd) + 1, deadline_ms, &we) < 0) {
		unsigned char k = SIGKILL; /* the shell is gone or stuck: its end is the answer */
		(void)!write(p->sig_w, &k, 1);
	}
	sbx_err_free(we);
	if (!p->req.stdin_open) {
		pthread_mutex_lock(&p->in_lock);
		p->in_w = safe_close(p->in_w);
		pthread_mutex_unlock(&p->in_lock);
	}
	return p;
}

int eproc_write_input(eproc *p, const unsigned char *buf, size_t len, int64_t deadline_ms, sbx_err **err)
{
	pthread_mutex_lock(&p->in_lock);
	int r = 0;
	size_t off = 0;
	int64_t until = mono_ms() + E2B_INPUT_WAIT_MS;
	if (deadline_ms >= 0 && deadline_ms < until)
		until = deadline_ms;
	if (p->in_w < 0)
		r = err_set(err, SBX_E_CONFLICT, EBADF,
			    "the process has no stdin (start it with stdin, or stdin was closed)");
	while (r == 0 && off < len) {
		ssize_t n = write(p->in_w, buf + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			r = err_errno(err, "stdin");
			break;
		}
		int64_t left = until - mono_ms();
		if (left <= 0) {
			r = err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT, "the process does not read its stdin");
			break;
		}
		struct pollfd pf = {.fd = p->in_w, .events = POLLOUT};
		(void)poll(&pf, 1, (int)(left < 200 ? left : 200));
	}
	pthread_mutex_unlock(&p->in_lock);
	return r;
}

int eproc_launch(eproc *p, sub *me, sbx_err **err)
{
	pthread_mutex_lock(&reg_lock);
	if (running_in(p->sandbox) >= E2B_PROCS_PER_SANDBOX || reg_count >= E2B_PROCS_MAX) {
		pthread_mutex_unlock(&reg_lock);
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EAGAIN,
			       "too many processes running in this sandbox");
	}
	p->next = reg;
	reg = p;
	reg_count++;
	pthread_mutex_lock(&p->lock);
	p->refs += 2; /* the registry's and the thread's */
	/* Subscribed before it runs: Start sees all of its output. */
	me->next = p->subs;
	p->subs = me;
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&reg_lock);
	int r = run_detached(p);
	if (r != 0) {
		reg_remove(p);
		pthread_mutex_lock(&p->lock);
		p->refs -= 2;
		p->subs = NULL;
		pthread_mutex_unlock(&p->lock);
		return err_set(err, SBX_E_LIMIT_EXCEEDED, r, "cannot start a thread for the process");
	}
	return 0;
}

json_t *eproc_list_json(const char *sandbox)
{
	json_t *list = json_array();
	if (!list)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (eproc *p = reg; p; p = p->next) {
		if (!eproc_pid(p) || !streq(p->sandbox, sandbox))
			continue;
		json_t *e = json_pack("{s:O,s:I}", "config", p->req.config, "pid", (json_int_t)eproc_pid(p));
		if (e && p->req.tag)
			json_object_set_new(e, "tag", json_string(p->req.tag));
		if (e)
			json_array_insert_new(list, 0, e); /* oldest first */
	}
	pthread_mutex_unlock(&reg_lock);
	return list;
}
