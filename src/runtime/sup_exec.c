/* The supervisor's side of a command (exec): the client's request checked
 * (plugins, limits), given its timeout, its recorder when traced, or its
 * record and pipes when it runs in the background (sup_proc.h), and
 * forwarded to init with the client's descriptors; proc_kill and
 * proc_wait; a command's timeout. What init reports back (spawned,
 * exited) is the loop's (supervisor.c), like the exec table itself. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "runtime/ctl_proto.h"
#include "runtime/startup_trace.h"
#include "runtime/sup_internal.h"
#include "trace/bpf_rec.h"
#include "util/json.h"

/* A traced command: the eBPF recorder on the environment's pid namespace
 * when this process may load it, otherwise init's ptrace engine records.
 * The client sends the recorder's output file as the last fd ("bpf_fd");
 * it never reaches init. One traced command at a time: the recorder sees
 * the whole environment. */
static int start_trace(supervisor *s, sup_exec *x, json_t *tr, json_t *m, int *fds, size_t *n_fds,
		       sbx_err **err)
{
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].traced)
			return err_set(
			    err, SBX_E_CONFLICT, EBUSY,
			    "another traced command is running in this environment (a trace records the "
			    "whole environment, so traced commands run one at a time)");
	int bpf_idx = (int)json_int(m, "bpf_fd", -1);
	int bpf_fd = -1;
	if (bpf_idx >= 0 && (size_t)bpf_idx == *n_fds - 1) {
		bpf_fd = fds[bpf_idx];
		(*n_fds)--;
	} else if (bpf_idx >= 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "trace: the recorder file must be the last fd");
	json_object_del(m, "bpf_fd");
	const char *want = json_str(tr, "recorder");
	bool use_bpf = false;
	s->rec_error = mfree(s->rec_error);
	if (bpf_fd >= 0 && (!want || streq(want, "bpf"))) {
		char p[64];
		struct stat ns;
		snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)s->init_pid);
		_cleanup_err_ sbx_err *e = NULL;
		if (!bpf_rec_available())
			err_set(&e, SBX_E_UNAVAILABLE, EPERM,
				"the eBPF recorder needs root (CAP_BPF and CAP_PERFMON) and kernel BTF");
		else if (stat(p, &ns) < 0)
			err_errno(&e, "stat '%s'", p);
		else if ((s->rec_fd = fcntl(bpf_fd, F_DUPFD_CLOEXEC, 3)) < 0)
			err_errno(&e, "dup");
		else if (bpf_rec_start((uint64_t)ns.st_dev, (uint64_t)ns.st_ino, s->rec_fd, &s->rec, &e) == 0)
			use_bpf = true;
		if (!use_bpf) {
			s->rec_fd = safe_close(s->rec_fd);
			if (want)
				return err_set(err, SBX_E_UNAVAILABLE, EPERM, "trace: eBPF recorder: %s",
					       sbx_err_message(e));
			/* Falls back to ptrace, and the trace says why. */
			if (asprintf(&s->rec_error, "eBPF recorder unavailable (%s); recorded with ptrace",
				     sbx_err_message(e)) < 0)
				s->rec_error = NULL;
		}
	}
	json_object_set_new(tr, "record", json_boolean(!use_bpf && json_object_get(m, "trace_fd")));
	/* The engine is needed to record (ptrace), for determinism and for a
	 * replay's pids; the eBPF recorder alone sees the command spawned as an
	 * untraced one is, without the engine's fork, set-up and ptrace stops
	 * (most of a short traced command's cost). */
	x->engine = !use_bpf || json_bool(tr, "deterministic", false) || json_int(tr, "first_pid", 0) > 0;
	json_object_set_new(tr, "engine", json_boolean(x->engine));
	x->traced = true;
	x->recorder = use_bpf ? "bpf" : "ptrace";
	return 0;
}

/* x becomes a background process: its record and pipes, and the request
 * rewritten so init gives the command our pipes' write ends (ret_wr) as
 * stdout and stderr. On failure the client is answered and x dropped. */
static int start_background(supervisor *s, sup_exec *x, json_t *m, int ret_wr[2])
{
	_cleanup_err_ sbx_err *e = NULL;
	if (s->next_proc == 0)
		s->next_proc = sup_proc_next_id(s->c->run_dir);
	int64_t cap = json_int(m, CTL_F_OUTPUT_BYTES, 0);
	if (cap == 0)
		cap = s->c->output_bytes > 0 ? s->c->output_bytes : SUP_PROC_DEFAULT_CAP;
	if (cap < 0 || cap > SBX_OUTPUT_MAX) /* none: the largest cap there is */
		cap = SBX_OUTPUT_MAX;
	if (sup_proc_new(s->c->run_dir, s->ep, s->next_proc, json_object_get(m, "argv"), cap, x->timeout_ms,
			 &x->bg, ret_wr, &e) < 0) {
		sup_send_json(x->conn, sup_err_json(e), NULL, 0);
		sup_drop_exec(s, x);
		return -1;
	}
	s->next_proc++;
	json_object_del(m, "stdin");
	json_object_del(m, CTL_F_BACKGROUND);
	json_object_set_new(m, "stdout", json_integer(0));
	json_object_set_new(m, "stderr", json_integer(1));
	return 0;
}

static sup_exec *find_proc(supervisor *s, int64_t n)
{
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].bg && s->execs[i].bg->n == n)
			return &s->execs[i];
	return NULL;
}

/* proc_kill and proc_wait. A process that is not running here (it exited,
 * or never existed in this supervisor's life) is answered at once: the
 * client reads its record. Returns whether conn is kept (a waiter). */
bool sup_exec_proc(supervisor *s, int conn, const char *op, const json_t *m)
{
	ctl_proc_request q;
	_cleanup_err_ sbx_err *e = NULL;
	if (ctl_proc_request_decode(m, &q) < 0) {
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"invalid process request (process_id must be p<number>, sig 1 to 64)");
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	sup_exec *x = find_proc(s, q.n);
	const char *pid = x ? x->bg->id : json_str(m, CTL_F_PROCESS_ID);
	if (streq(op, CTL_OP_PROC_KILL)) {
		if (x && x->started)
			sup_signal_exec(s, x->id, q.sig);
		sup_send_json(conn,
			      json_pack("{s:s,s:s,s:b,s:i}", CTL_F_EV, CTL_EV_PROC_KILLED, CTL_F_PROCESS_ID,
					pid, "delivered", x && x->started, CTL_F_SIG, q.sig),
			      NULL, 0);
		return false;
	}
	if (x && sup_proc_add_waiter(x->bg, conn))
		return true;
	if (x)
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many clients waiting for process %s", pid);
	sup_send_json(
	    conn,
	    e ? sup_err_json(e)
	      : json_pack("{s:s,s:s,s:b}", CTL_F_EV, CTL_EV_PROC_EXIT, CTL_F_PROCESS_ID, pid, "running", 0),
	    NULL, 0);
	return false;
}

void sup_exec_request(supervisor *s, int conn, json_t *m, int *fds, size_t n_fds)
{
	if (s->n_execs >= MAX_SUP_EXECS) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many commands running in this environment");
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		sup_close_conn(s, conn);
		return;
	}
	/* Plugins may veto the command or adjust its argv and env (this loop
	 * waits for them: at most the plugin timeout). */
	_cleanup_err_ sbx_err *pe = NULL;
	if (s->plugins && plugin_env_exec(s->plugins, s->c->id, m, &pe) < 0) {
		sup_send_json(conn, sup_err_json(pe), NULL, 0);
		sup_close_conn(s, conn);
		return;
	}
	bool bg = json_bool(m, CTL_F_BACKGROUND, false);
	if (bg && (json_bool(m, "tty", false) || json_object_get(m, "trace"))) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"a background process has no terminal and cannot be traced");
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		sup_close_conn(s, conn);
		for (size_t i = 0; i < n_fds; i++)
			fds[i] = safe_close(fds[i]);
		return;
	}
	sup_exec *x = &s->execs[s->n_execs++];
	*x = (sup_exec){.id = ++s->next_id, .conn = conn, .timer = -1};
	x->stop_after = !bg && json_bool(m, CTL_F_STOP_AFTER, false);
	x->linger = x->stop_after && json_bool(m, CTL_F_LINGER, false);
	clock_gettime(CLOCK_MONOTONIC, &x->start);
	int64_t timeout = json_int(m, "timeout_ms", 0);
	if (timeout == 0 && !bg) /* a background process: only its own timeout */
		timeout = s->c->timeout_ms;
	x->timeout_ms = timeout > 0 ? timeout : 0;
	if (timeout > 0) {
		x->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		struct itimerspec it = {.it_value = {timeout / 1000, (timeout % 1000) * 1000000}};
		if (x->timer >= 0 && timerfd_settime(x->timer, 0, &it, NULL) == 0)
			sup_ep_add(s, x->timer);
	}
	if (s->ttl_fd >= 0)
		sup_arm_ttl(s);
	int bg_fds[2] = {-1, -1};
	if (bg && start_background(s, x, m, bg_fds) < 0)
		return;
	if (bg) { /* the command's stdio: our pipes (stdin /dev/null), never the client's */
		fds = bg_fds;
		n_fds = 2;
	}
	json_t *tr = json_object_get(m, "trace");
	if (json_is_object(tr)) {
		_cleanup_err_ sbx_err *e = NULL;
		if (start_trace(s, x, tr, m, fds, &n_fds, &e) < 0) {
			sup_send_json(conn, sup_err_json(e), NULL, 0);
			sup_drop_exec(s, x);
			return;
		}
	}
	/* Forward to init: same document, our exec id, the client's fds. */
	startup_mark("supervisor: exec request");
	json_object_set_new(m, CTL_F_OP, json_string(CTL_OP_SPAWN));
	json_object_set_new(m, "id", json_integer(x->id));
	int sent = json_send(s->init_sock, m, fds, n_fds);
	safe_close(bg_fds[0]);
	safe_close(bg_fds[1]);
	if (sent < 0) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		sup_proc_discard(x->bg);
		sup_drop_exec(s, x);
	}
}

void sup_exec_timeout(supervisor *s, int fd)
{
	uint64_t ticks;
	(void)!read(fd, &ticks, sizeof(ticks));
	for (size_t i = 0; i < s->n_execs; i++) {
		sup_exec *x = &s->execs[i];
		if (x->timer != fd)
			continue;
		x->timed_out = true;
		sup_signal_exec(s, x->id, SIGKILL);
		sup_ep_del(s, fd);
		safe_close(x->timer);
		x->timer = -1;
	}
}
