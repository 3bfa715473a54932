/* envd's process.Process service on the E2B data plane (e2b_rpc.h): the
 * commands of E2B's SDK (sandbox.commands.*, sandbox.pty.*).
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
 * pids are the processes' own inside the environment (sbx_exec_opts'
 * on_start): Start answers its start event once the command runs, and a
 * command that cannot start is the call's error, before any event (envd's
 * order). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_data.h"
#include "server/e2b_events.h"
#include "server/e2b_proc_util.h"
#include "server/e2b_rpc.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"

#define E2B_PROC_LOG_MAX ((size_t)1 << 20) /* unsent output before the command waits */
#define E2B_PROCS_PER_SANDBOX 256	   /* running processes of one sandbox */
#define E2B_PROCS_MAX 2048		   /* in the whole server */
#define E2B_INPUT_WAIT_MS 10000		   /* SendInput waits this long for a full pipe */
#define E2B_PROC_TICK_MS 200		   /* a waiting stream looks at its client this often */
#define E2B_PROC_GRACE_MS 1000		   /* after the deadline, the exec's own timeout first */
#define E2B_KILL_WAIT_MS 2000		   /* SendSignal(SIGKILL) answers once the process ended */

typedef struct chunk {
	struct chunk *next;
	uint64_t seq;
	int kind; /* 1 stdout, 2 stderr, 3 pty */
	size_t len;
	char data[];
} chunk;

typedef struct sub {
	struct sub *next;
	uint64_t cursor; /* the next seq it sends */
} sub;

typedef struct eproc {
	struct eproc *next; /* the registry's (reg_lock) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs;
	sbx_ctx *ctx;
	e2b_events *events; /* the sandbox's logs (a reference; NULL: none) */
	char *sandbox;
	uint32_t pid; /* 0 until it runs (atomic: set by on_start, read anywhere) */
	e2b_start_req req;
	json_t *in;	     /* Start's request, for a retry as root */
	char *user;	     /* NULL: the environment's default */
	int64_t timeout_ms;  /* the exec's (-1: none) */
	chunk *head, *tail;  /* the log */
	uint64_t next_seq;   /* seq of the next chunk */
	size_t bytes;	     /* in the log */
	sub *subs;	     /* streams sending its output */
	bool done;	     /* the exec returned: what follows is set */
	sbx_exec_result res; /* exit_code, signal, timed_out (buffers unused) */
	sbx_err *fail;	     /* it could not run (or the environment went) */
	pthread_mutex_t in_lock;
	int in_w; /* stdin's write end (in_lock), -1 */
	int in_r; /* the exec's */
	int sig_r, sig_w;
	int winch_r, winch_w;
	int size_fd; /* a pty master holding the size (pty) */
} eproc;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static eproc *reg;
static size_t reg_count;

static int64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

static uint32_t pid_of(eproc *p)
{
	return __atomic_load_n(&p->pid, __ATOMIC_ACQUIRE);
}

static void proc_unref(eproc *p)
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
	sbx_err_free(p->fail);
	e2b_start_req_clear(&p->req);
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
static eproc *proc_find(const char *sandbox, const e2b_selector *sel, sbx_err **err)
{
	pthread_mutex_lock(&reg_lock);
	eproc *p = reg;
	for (; p; p = p->next)
		if (pid_of(p) && streq(p->sandbox, sandbox) &&
		    (sel->pid ? pid_of(p) == sel->pid : p->req.tag && streq(p->req.tag, sel->tag)))
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

static void reg_remove(eproc *p)
{
	pthread_mutex_lock(&reg_lock);
	for (eproc **pp = &reg; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			reg_count--;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
}

/* Drops the chunks every subscriber has sent (all of them when none
 * listens); the caller holds p->lock. */
static void log_trim(eproc *p)
{
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
	c->kind = p->req.pty ? 3 : stream;
	c->len = len;
	memcpy(c->data, buf, len);
	pthread_mutex_lock(&p->lock);
	c->seq = p->next_seq++;
	if (p->tail)
		p->tail->next = c;
	else
		p->head = c;
	p->tail = c;
	p->bytes += len;
	log_trim(p);
	pthread_cond_broadcast(&p->cond);
	while (p->subs && p->bytes > E2B_PROC_LOG_MAX)
		pthread_cond_wait(&p->cond, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/* One of the sandbox's events (its logs) about p: pid, cmd and the pair k=v. */
static void proc_event(eproc *p, e2b_log_level level, const char *msg, const char *k, const char *v)
{
	if (!p->events)
		return;
	char pid[16], cmd[E2B_EVENT_VAL_MAX];
	snprintf(pid, sizeof(pid), "%u", pid_of(p));
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
	__atomic_store_n(&p->pid, pid > 0 && pid <= (int64_t)UINT32_MAX ? (uint32_t)pid : UINT32_MAX,
			 __ATOMIC_RELEASE);
	proc_event(p, E2B_LOG_INFO, "process started", NULL, NULL);
	pthread_mutex_lock(&p->lock);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static bool no_such_user(const sbx_err *e)
{
	return e && sbx_err_code(e) == SBX_E_NOT_FOUND && sbx_err_spawn_errno(e) == 0 &&
	       strstr(sbx_err_message(e), "no such user");
}

static int proc_exec(eproc *p, sbx_exec_result *res, sbx_err **err)
{
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = (const char *const *)p->req.argv;
	o.env = (const char *const *)p->req.env;
	o.cwd = p->req.cwd;
	o.user = p->user;
	o.timeout_ms = p->timeout_ms;
	o.tty = p->req.pty;
	o.stdin_fd = p->in_r;
	o.stdout_fd = p->req.pty ? p->size_fd : -1;
	o.winch_fd = p->req.pty ? p->winch_r : -1;
	o.signal_fd = p->sig_r;
	o.output_bytes = -1;
	o.on_output = on_output;
	o.on_start = on_start;
	o.userdata = p;
	o.no_auto_resume = true;
	return sbx_env_exec(p->ctx, p->sandbox, &o, res, err);
}

static void *proc_main(void *arg)
{
	eproc *p = arg;
	sbx_exec_result res = {0};
	sbx_err *e = NULL;
	int r = proc_exec(p, &res, &e);
	if (r < 0 && p->user && no_such_user(e)) {
		/* envd's default user may not exist in this environment: root. */
		sbx_err_free(TAKE_PTR(e));
		e2b_start_req again = {0};
		if (e2b_start_parse(p->in, "/root", &again, &e) == 0) {
			free(p->req.cwd);
			p->req.cwd = TAKE_PTR(again.cwd);
			e2b_start_req_clear(&again);
			free(p->user);
			p->user = NULL;
			r = proc_exec(p, &res, &e);
		}
	}
	p->in_r = safe_close(p->in_r);
	char st[32];
	if (r < 0)
		proc_event(p, E2B_LOG_ERROR, "process failed", "error", e ? sbx_err_message(e) : "?");
	else if (res.signal > 0) {
		snprintf(st, sizeof(st), "%d", res.signal);
		proc_event(p, E2B_LOG_WARN, "process exited", "signal", st);
	} else {
		snprintf(st, sizeof(st), "%d", res.exit_code);
		proc_event(p, res.exit_code ? E2B_LOG_WARN : E2B_LOG_INFO, "process exited", "exitCode", st);
	}
	/* Out of the registry (List) before done is told: whoever waited for
	 * the end (a SIGKILL's SendSignal) then finds it gone from List too. */
	reg_remove(p);
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
	proc_unref(p); /* the registry's */
	proc_unref(p); /* this thread's */
	return NULL;
}

/* ---- streaming a process's output ----------------------------------------------------------- */

static int send_event(e2b_stream *s, json_t *ev, sbx_err **err)
{
	if (!ev)
		return err_oom(err);
	int r = e2b_stream_send(s, ev);
	json_decref(ev);
	if (r < 0)
		return err_set(err, SBX_E_UNAVAILABLE, ECANCELED, "the client went away");
	return 0;
}

/* Sends p's output from the subscriber's cursor on until p is done (its
 * end event then), the client goes, or the call's deadline passes. */
static int follow(e2b_call *c, eproc *p, sub *me, e2b_stream *s, sbx_err **err)
{
	json_int_t pid = pid_of(p);
	_cleanup_json_ json_t *start = json_pack("{s:{s:{s:I}}}", "event", "start", "pid", pid);
	if (send_event(s, json_incref(start), err) < 0)
		return -1;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		chunk *c0 = p->head;
		while (c0 && c0->seq < me->cursor)
			c0 = c0->next;
		if (!c0 && !p->done) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += (long)E2B_PROC_TICK_MS * 1000000L;
			if (ts.tv_nsec >= 1000000000L)
				ts.tv_sec++, ts.tv_nsec -= 1000000000L;
			pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			pthread_mutex_unlock(&p->lock);
			if (e2b_stream_closed(s))
				return err_set(err, SBX_E_UNAVAILABLE, ECANCELED, "the client went away");
			if (c->deadline_ms >= 0 && mono_ms() > c->deadline_ms + E2B_PROC_GRACE_MS)
				return err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
					       "the call's deadline passed");
			continue;
		}
		if (!c0) { /* done, and everything sent */
			pthread_mutex_unlock(&p->lock);
			break;
		}
		/* Copy out, so the command's relay is not held while the client reads. */
		int kind = c0->kind;
		size_t len = c0->len;
		char *data = malloc(len ? len : 1);
		if (data)
			memcpy(data, c0->data, len);
		me->cursor = c0->seq + 1;
		log_trim(p);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (!data)
			return err_oom(err);
		int r = send_event(s, e2b_data_event(kind, data, len), err);
		free(data);
		if (r < 0)
			return -1;
	}
	if (p->fail)
		return err_set(err, sbx_err_code(p->fail), sbx_err_errno(p->fail), "%s",
			       sbx_err_message(p->fail));
	if (p->res.timed_out)
		return err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
			       "the command ran past its timeout and was killed");
	return send_event(s, e2b_end_event(p->res.exit_code, p->res.signal, NULL), err);
}

static int follow_sub(e2b_call *c, eproc *p, sub *me, e2b_stream *s, sbx_err **err)
{
	int r = follow(c, p, me, s, err);
	pthread_mutex_lock(&p->lock);
	for (sub **pp = &p->subs; *pp; pp = &(*pp)->next)
		if (*pp == me) {
			*pp = me->next;
			break;
		}
	log_trim(p);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* ---- the methods ---------------------------------------------------------------------------- */

static int make_pipe(int fds[2], bool nonblock_w, sbx_err **err)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	if (nonblock_w)
		fd_set_nonblock(fds[1], 1);
	return 0;
}

static int proc_new(e2b_call *c, const json_t *in, eproc **ret, sbx_err **err)
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
	p->ctx = c->ctx;
	p->events = e2b_events_ref(c->events);
	p->in = json_deep_copy(in);
	p->sandbox = strdup(c->sandbox_id);
	p->user = c->user ? strdup(c->user) : NULL;
	if (!p->in || !p->sandbox || (c->user && !p->user)) {
		proc_unref(p);
		return err_oom(err);
	}
	if (e2b_start_parse(in, e2b_user_home(c->user, home, sizeof(home)), &p->req, err) < 0) {
		proc_unref(p);
		return -1;
	}
	int fds[2];
	if (p->req.stdin_open || p->req.pty) {
		if (make_pipe(fds, true, err) < 0) {
			proc_unref(p);
			return -1;
		}
		p->in_r = fds[0];
		p->in_w = fds[1];
	}
	if (make_pipe(fds, true, err) < 0) {
		proc_unref(p);
		return -1;
	}
	p->sig_r = fds[0];
	p->sig_w = fds[1];
	if (p->req.pty) {
		if (make_pipe(fds, true, err) < 0) {
			proc_unref(p);
			return -1;
		}
		p->winch_r = fds[0];
		p->winch_w = fds[1];
		p->size_fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
		struct winsize ws = {.ws_row = p->req.rows, .ws_col = p->req.cols};
		if (p->size_fd < 0 || ioctl(p->size_fd, TIOCSWINSZ, &ws) < 0) {
			err_errno(err, "pty");
			proc_unref(p);
			return -1;
		}
	}
	int64_t left = c->deadline_ms >= 0 ? c->deadline_ms - mono_ms() : -1;
	p->timeout_ms = c->deadline_ms < 0 ? -1 : left > 0 ? left : 1;
	*ret = p;
	return 0;
}

static int proc_start(e2b_call *c, const json_t *in, e2b_stream *s, sbx_err **err)
{
	eproc *p = NULL;
	if (proc_new(c, in, &p, err) < 0)
		return -1;
	pthread_mutex_lock(&reg_lock);
	size_t mine = 0;
	for (eproc *q = reg; q; q = q->next)
		mine += streq(q->sandbox, p->sandbox);
	if (mine >= E2B_PROCS_PER_SANDBOX || reg_count >= E2B_PROCS_MAX) {
		pthread_mutex_unlock(&reg_lock);
		proc_unref(p);
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EAGAIN,
			       "too many processes running in this sandbox");
	}
	p->next = reg;
	reg = p;
	reg_count++;
	p->refs += 2; /* the registry (it had the first: now this call's) and the thread */
	pthread_mutex_unlock(&reg_lock);
	/* Subscribed before it runs: Start sees all of its output. */
	sub me = {.cursor = 0};
	pthread_mutex_lock(&p->lock);
	me.next = p->subs;
	p->subs = &me;
	pthread_mutex_unlock(&p->lock);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	int r = pthread_create(&t, &at, proc_main, p);
	pthread_attr_destroy(&at);
	if (r != 0) {
		reg_remove(p);
		p->refs -= 2;
		pthread_mutex_lock(&p->lock);
		p->subs = NULL;
		pthread_mutex_unlock(&p->lock);
		proc_unref(p);
		return err_set(err, SBX_E_LIMIT_EXCEEDED, r, "cannot start a thread for the process");
	}
	/* Its start event once it runs; a command that could not start is
	 * the call's error (envd answers so, before any event). */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (pid_of(p) || p->done)
			break;
		pthread_cond_wait(&p->cond, &p->lock);
	}
	bool failed = p->done && p->fail;
	if (failed)
		for (sub **pp = &p->subs; *pp; pp = &(*pp)->next)
			if (*pp == &me) {
				*pp = me.next;
				break;
			}
	pthread_mutex_unlock(&p->lock);
	if (failed) {
		r = err_set(err, sbx_err_code(p->fail), sbx_err_errno(p->fail), "%s",
			    sbx_err_message(p->fail));
		proc_unref(p);
		return r;
	}
	r = follow_sub(c, p, &me, s, err);
	proc_unref(p);
	return r;
}

static int proc_connect(e2b_call *c, const json_t *in, e2b_stream *s, sbx_err **err)
{
	e2b_selector sel;
	if (e2b_selector_parse(in, "process", &sel, err) < 0)
		return -1;
	eproc *p = proc_find(c->sandbox_id, &sel, err);
	if (!p)
		return -1;
	sub me;
	pthread_mutex_lock(&p->lock);
	me.cursor = p->next_seq; /* from now on, as envd */
	me.next = p->subs;
	p->subs = &me;
	pthread_mutex_unlock(&p->lock);
	int r = follow_sub(c, p, &me, s, err);
	proc_unref(p);
	return r;
}

static int proc_list(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	(void)in;
	_cleanup_json_ json_t *list = json_array();
	if (!list)
		return err_oom(err);
	pthread_mutex_lock(&reg_lock);
	for (eproc *p = reg; p; p = p->next) {
		if (!pid_of(p) || !streq(p->sandbox, c->sandbox_id))
			continue;
		json_t *e = json_pack("{s:O,s:I}", "config", p->req.config, "pid", (json_int_t)pid_of(p));
		if (e && p->req.tag)
			json_object_set_new(e, "tag", json_string(p->req.tag));
		if (e)
			json_array_insert_new(list, 0, e); /* oldest first */
	}
	pthread_mutex_unlock(&reg_lock);
	*out = json_pack("{s:O}", "processes", list);
	return *out ? 0 : err_oom(err);
}

/* Finds the process a unary call's "process" names; NULL with err. */
static eproc *selected(e2b_call *c, const json_t *in, sbx_err **err)
{
	e2b_selector sel;
	if (e2b_selector_parse(in, "process", &sel, err) < 0)
		return NULL;
	return proc_find(c->sandbox_id, &sel, err);
}

static int proc_signal(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	int sig;
	if (e2b_signal_parse(json_object_get(in, "signal"), &sig, err) < 0)
		return -1;
	eproc *p = selected(c, in, err);
	if (!p)
		return -1;
	unsigned char b = (unsigned char)sig;
	ssize_t n = write(p->sig_w, &b, 1);
	if (n != 1) {
		proc_unref(p);
		return err_errno(err, "signal");
	}
	/* SIGKILL cannot be caught: answer once the process has ended and been
	 * reaped, so that List and `kill -0` right after the SDK's kill() agree
	 * with it (a process stuck in the kernel: after E2B_KILL_WAIT_MS). */
	if (sig == SIGKILL) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += E2B_KILL_WAIT_MS / 1000;
		until.tv_nsec += (long)(E2B_KILL_WAIT_MS % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L)
			until.tv_sec++, until.tv_nsec -= 1000000000L;
		pthread_mutex_lock(&p->lock);
		while (!p->done && pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&p->lock);
	}
	proc_unref(p);
	*out = json_object();
	return 0;
}

static int write_input(eproc *p, const unsigned char *buf, size_t len, int64_t deadline_ms, sbx_err **err)
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

static int proc_input(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	_cleanup_free_ unsigned char *buf = NULL;
	size_t len;
	bool pty;
	if (e2b_input_parse(in, &buf, &len, &pty, err) < 0)
		return -1;
	eproc *p = selected(c, in, err);
	if (!p)
		return -1;
	int r = write_input(p, buf, len, c->deadline_ms, err);
	proc_unref(p);
	if (r < 0)
		return -1;
	*out = json_object();
	return 0;
}

static int proc_close_stdin(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	eproc *p = selected(c, in, err);
	if (!p)
		return -1;
	pthread_mutex_lock(&p->in_lock);
	p->in_w = safe_close(p->in_w);
	pthread_mutex_unlock(&p->in_lock);
	proc_unref(p);
	*out = json_object();
	return 0;
}

static int proc_update(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	uint16_t cols, rows;
	if (e2b_pty_size_parse(in, "pty", &cols, &rows, err) < 0)
		return -1;
	eproc *p = selected(c, in, err);
	if (!p)
		return -1;
	int r = 0;
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	if (!p->req.pty)
		r = err_set(err, SBX_E_INVALID_ARGUMENT, ENOTTY, "the process has no pty");
	else if (ioctl(p->size_fd, TIOCSWINSZ, &ws) < 0 || write(p->winch_w, "w", 1) != 1)
		r = err_errno(err, "resize");
	proc_unref(p);
	if (r < 0)
		return -1;
	*out = json_object();
	return 0;
}

const e2b_method e2b_process_methods[] = {
    {.service = "process.Process", .method = "Start", .stream = proc_start},
    {.service = "process.Process", .method = "Connect", .stream = proc_connect},
    {.service = "process.Process", .method = "List", .unary = proc_list},
    {.service = "process.Process", .method = "SendSignal", .unary = proc_signal},
    {.service = "process.Process", .method = "SendInput", .unary = proc_input},
    {.service = "process.Process", .method = "CloseStdin", .unary = proc_close_stdin},
    {.service = "process.Process", .method = "Update", .unary = proc_update},
    {0},
};
