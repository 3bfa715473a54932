/* envd's process.Process service on the E2B data plane (e2b_rpc.h): the
 * commands of E2B's SDK (sandbox.commands.*, sandbox.pty.*), over the
 * processes of e2b_proc_core.h.
 *
 * pids are the processes' own inside the environment (sbx_exec_opts'
 * on_start): Start answers its start event once the command runs, and a
 * command that cannot start is the call's error, before any event (envd's
 * order). A Start that a sandbox's spare login shell fits is served by it
 * (e2b_spare.h). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_data.h"
#include "server/e2b_proc_core.h"
#include "server/e2b_proc_util.h"
#include "server/e2b_rpc.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

#define E2B_PROC_TICK_MS 200   /* a waiting stream looks at its client this often */
#define E2B_PROC_GRACE_MS 1000 /* after the deadline, the exec's own timeout first */
#define E2B_KILL_WAIT_MS 2000  /* SendSignal(SIGKILL) answers once the process ended */

static int64_t mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
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
	json_int_t pid = eproc_pid(p);
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
		eproc_log_trim(p);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (!data)
			return err_oom(err);
		int r = send_event(s, e2b_data_event(kind, data, len), err);
		free(data);
		if (r < 0)
			return -1;
	}
	if (p->fail) {
		/* The environment stopped under the command (killed, or its
		 * deadline): envd's connection goes with its VM, so cut ours. */
		if (e2b_env_went(p->fail)) {
			/* after /health says so: the SDK asks it at once */
			(void)e2b_sandbox_gone_within(c->ctx, c->sandbox_id, 1500);
			e2b_stream_cut(s);
		}
		return err_set(err, sbx_err_code(p->fail), sbx_err_errno(p->fail), "%s",
			       sbx_err_message(p->fail));
	}
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
	eproc_log_trim(p);
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	return r;
}

/* ---- the methods ---------------------------------------------------------------------------- */

static int proc_start(e2b_call *c, const json_t *in, e2b_stream *s, sbx_err **err)
{
	sub me = {.cursor = 0};
	eproc *p = eproc_spare_take(c->ctx, c->sandbox_id, c->user, c->deadline_ms, in, &me);
	if (p) {
		/* Its start event once it runs (it may still be sourcing its
		 * profile), then its output as any command's. */
		pthread_mutex_lock(&p->lock);
		while (!eproc_pid(p) && !p->done)
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
		int r = follow_sub(c, p, &me, s, err);
		eproc_unref(p);
		return r;
	}
	if (eproc_alloc(c->ctx, c->events, c->sandbox_id, c->user, c->deadline_ms, in, &p, err) < 0)
		return -1;
	if (eproc_launch(p, &me, err) < 0) {
		eproc_unref(p);
		return -1;
	}
	/* Its start event once it runs; a command that could not start is
	 * the call's error (envd answers so, before any event). */
	pthread_mutex_lock(&p->lock);
	while (!eproc_pid(p) && !p->done)
		pthread_cond_wait(&p->cond, &p->lock);
	bool failed = p->done && p->fail;
	if (failed)
		for (sub **pp = &p->subs; *pp; pp = &(*pp)->next)
			if (*pp == &me) {
				*pp = me.next;
				break;
			}
	pthread_mutex_unlock(&p->lock);
	int r;
	if (failed) {
		r = err_set(err, sbx_err_code(p->fail), sbx_err_errno(p->fail), "%s",
			    sbx_err_message(p->fail));
		eproc_unref(p);
		return r;
	}
	r = follow_sub(c, p, &me, s, err);
	eproc_unref(p);
	return r;
}

static int proc_connect(e2b_call *c, const json_t *in, e2b_stream *s, sbx_err **err)
{
	e2b_selector sel;
	if (e2b_selector_parse(in, "process", &sel, err) < 0)
		return -1;
	eproc *p = eproc_find(c->sandbox_id, &sel, err);
	if (!p)
		return -1;
	sub me;
	pthread_mutex_lock(&p->lock);
	me.cursor = p->next_seq; /* from now on, as envd */
	me.next = p->subs;
	p->subs = &me;
	pthread_mutex_unlock(&p->lock);
	int r = follow_sub(c, p, &me, s, err);
	eproc_unref(p);
	return r;
}

static int proc_list(e2b_call *c, const json_t *in, json_t **out, sbx_err **err)
{
	(void)in;
	_cleanup_json_ json_t *list = eproc_list_json(c->sandbox_id);
	if (!list)
		return err_oom(err);
	*out = json_pack("{s:O}", "processes", list);
	return *out ? 0 : err_oom(err);
}

/* Finds the process a unary call's "process" names; NULL with err. */
static eproc *selected(e2b_call *c, const json_t *in, sbx_err **err)
{
	e2b_selector sel;
	if (e2b_selector_parse(in, "process", &sel, err) < 0)
		return NULL;
	return eproc_find(c->sandbox_id, &sel, err);
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
		eproc_unref(p);
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
	eproc_unref(p);
	*out = json_object();
	return 0;
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
	int r = eproc_write_input(p, buf, len, c->deadline_ms, err);
	eproc_unref(p);
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
	eproc_unref(p);
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
	eproc_unref(p);
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
