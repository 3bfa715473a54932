/* The supervisor: one per live environment, outside it (like conmon).
 * It creates the namespaces and cgroup, prepares the mount trees that need
 * host privilege, starts init, owns the control socket $SBX_RUN/<id>/ctl.sock,
 * enforces timeouts and the idle TTL, and cleans everything up when the
 * environment is stopped or init dies. Single-threaded epoll loop.
 *
 * This file is the loop (supervisor_main) and its dispatch: client requests,
 * init's events, the timers, signals and standby events, with the helpers
 * every concern uses (replies, the epoll set, the idle timers, the exec
 * table, init's end). Each concern is a file of its own, over the shared
 * state in sup_internal.h (which lists them). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "runtime/ctl_proto.h"
#include "runtime/devices.h"
#include "runtime/runtime.h"
#include "runtime/sup_internal.h"
#include "runtime/sup_proc.h"
#include "runtime/startup_trace.h"
#include "store/delta_stage.h"
#include "trace/bpf_rec.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/syscalls.h"

/* ---- replies, the epoll set, the idle timers, warnings ------------------- */

void sup_ep_add(supervisor *s, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	(void)epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
}

void sup_ep_del(supervisor *s, int fd)
{
	(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
}

void sup_send_json(int fd, json_t *m, const int *fds, size_t n)
{
	if (fd >= 0 && m)
		(void)json_send(fd, m, fds, n);
	json_decref(m);
}

json_t *sup_err_json(const sbx_err *e)
{
	return json_pack("{s:s,s:s,s:s,s:i}", CTL_F_EV, CTL_EV_ERROR, CTL_F_CODE,
			 sbx_code_name(sbx_err_code(e)), CTL_F_MESSAGE, sbx_err_message(e), CTL_F_ERRNO,
			 sbx_err_errno(e));
}

static void arm_idle(supervisor *s)
{
	if (s->idle_fd < 0)
		return;
	struct itimerspec it = {0};
	if (s->n_execs == 0 && !s->paused) {
		it.it_value.tv_sec = s->c->idle_suspend_ms / 1000;
		it.it_value.tv_nsec = (s->c->idle_suspend_ms % 1000) * 1000000;
	}
	(void)timerfd_settime(s->idle_fd, 0, &it, NULL);
}

void sup_arm_ttl(supervisor *s)
{
	arm_idle(s);
	if (s->ttl_fd < 0)
		return;
	struct itimerspec it = {0};
	if (s->n_execs == 0 && !s->paused) {
		it.it_value.tv_sec = s->c->ttl_ms / 1000;
		it.it_value.tv_nsec = (s->c->ttl_ms % 1000) * 1000000;
	}
	(void)timerfd_settime(s->ttl_fd, 0, &it, NULL);
}

void sup_close_conn(supervisor *s, int fd)
{
	sup_ep_del(s, fd);
	safe_close(fd);
}

void sup_add_warning(supervisor *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(s->warnings, json_string(buf));
}

/* ---- the exec table ----------------------------------------------------- */

static sup_exec *find_exec(supervisor *s, int64_t id)
{
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].id == id)
			return &s->execs[i];
	return NULL;
}

/* Stops the eBPF recorder (it drains what is left first); fills info. */
void sup_stop_recorder(supervisor *s, json_t *info)
{
	if (s->rec) {
		bpf_rec_stats st = {0};
		_cleanup_err_ sbx_err *e = NULL;
		if (bpf_rec_stop(s->rec, &st, &e) < 0 && info)
			json_object_set_new(info, "error", json_string(sbx_err_message(e)));
		s->rec = NULL;
		s->rec_fd = safe_close(s->rec_fd);
		if (info) {
			json_object_set_new(info, "records", json_integer((json_int_t)st.records));
			json_object_set_new(info, "lost", json_integer((json_int_t)st.lost));
		}
	}
	if (info && s->rec_error)
		json_object_set_new(info, "error", json_string(s->rec_error));
	s->rec_error = mfree(s->rec_error);
}

void sup_drop_exec(supervisor *s, sup_exec *x)
{
	if (x->traced)
		sup_stop_recorder(s, NULL);
	if (x->timer >= 0) {
		sup_ep_del(s, x->timer);
		safe_close(x->timer);
	}
	if (x->conn >= 0)
		sup_close_conn(s, x->conn);
	sup_proc_free(x->bg);
	*x = s->execs[--s->n_execs];
	sup_arm_ttl(s);
	if (s->sb_deferred && s->n_execs == 0) /* the first command after a restore was served */
		sup_restore_standby_deferred(s);
}

/* A command has ended (or never started): sup_drop_exec. One that its client
 * asked the environment to end with (sbx run, CTL_F_STOP_AFTER) begins
 * the stop now, with no second connection; the client, told "exit" (or
 * the error) already, gets "stopped" on the same connection after the
 * teardown. A client that is gone gets nothing: the environment ends all
 * the same (a killed `sbx run` leaves a stopped environment for gc). */
static void end_exec(supervisor *s, sup_exec *x)
{
	bool stop = x->stop_after, linger = x->linger;
	int conn = stop ? x->conn : -1;
	if (stop)
		x->conn = -1; /* kept open for the stop's reply */
	sup_drop_exec(s, x);
	if (stop && !s->stopping) {
		sup_begin_stop(s, conn);
		s->linger_ok = linger && conn >= 0;
	} else if (conn >= 0)
		sup_close_conn(s, conn);
}

void sup_signal_exec(supervisor *s, int64_t id, int sig)
{
	_cleanup_json_ json_t *m =
	    json_pack("{s:s,s:I,s:i}", CTL_F_OP, CTL_OP_SIGNAL, CTL_F_ID, (json_int_t)id, CTL_F_SIG, sig);
	if (m)
		(void)json_send(s->init_sock, m, NULL, 0);
}

static int64_t oom_count(supervisor *s)
{
	cgroup_stats st;
	if (!s->cg || cgroup_stats_read(s->cg, &st) < 0)
		return -1;
	return st.oom_kills;
}

/* ---- client requests ---------------------------------------------------- */

static json_t *info_json(supervisor *s)
{
	json_t *j = json_pack("{s:i,s:i,s:i,s:O}", "supervisor_pid", (int)getpid(), "init_pid",
			      (int)s->init_pid, "landlock_abi", s->landlock_abi, "warnings", s->warnings);
	cgroup_stats st;
	if (s->cg && cgroup_stats_read(s->cg, &st) == 0)
		json_object_set_new(j, "usage",
				    json_pack("{s:I,s:I,s:I,s:I,s:I}", "memory_bytes",
					      (json_int_t)st.memory_current, "memory_peak_bytes",
					      (json_int_t)st.memory_peak, "oom_kills",
					      (json_int_t)st.oom_kills, "pids", (json_int_t)st.pids_current,
					      "cpu_usage_us", (json_int_t)st.cpu_usage_us));
	json_object_set_new(j, "running_commands", json_integer((json_int_t)s->n_execs));
	json_t *sb = sup_restore_standby_info(s); /* docs/warm.md "Restore" */
	if (sb)
		json_object_set_new(j, "standby", sb);
	json_object_set_new(j, "paused", json_boolean(s->paused));
	json_object_set_new(j, CTL_F_EV, json_string(CTL_EV_INFO));
	return j;
}

void sup_thaw(supervisor *s)
{
	if (s->frozen && s->cg)
		(void)cgroup_freeze(s->cg, false, NULL);
	if (s->stopped) {
		/* Init answers stop_all; with stop false it does not wait. */
		_cleanup_json_ json_t *q = json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP_ALL, CTL_F_STOP, 0);
		if (q && s->n_waiters < ARRAY_SIZE(s->waiters) && json_send(s->init_sock, q, NULL, 0) == 0)
			s->waiters[s->n_waiters++] = -1; /* reply dropped */
	}
	s->frozen = false;
	s->stopped = false;
	s->freeze_conn = -1;
}

/* A snapshot whose client died while the environment was frozen leaves its
 * stage: hard links to the files it changed (store/delta_stage.h), which
 * until the next snapshot removed them gave those files link counts the
 * environment never made. Removed here, before the thaw, by the dead
 * client's pid (SO_PEERCRED): never another process's stage. */
static void drop_dead_snapshot_stage(supervisor *s, int conn)
{
	struct ucred cr;
	socklen_t n = sizeof(cr);
	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cr, &n) < 0 || cr.pid <= 0)
		return;
	char tmp_pre[128], disk_pre[64];
	snprintf(tmp_pre, sizeof(tmp_pre), SNAP_STAGE_TMP "%s-%d-", s->c->id, (int)cr.pid);
	snprintf(disk_pre, sizeof(disk_pre), SNAP_STAGE_DISK "%d-", (int)cr.pid);
	_cleanup_free_ char *tmp = fs_path_join(s->c->env_dir, "../../tmp"),
			    *disk = fs_path_join(s->c->env_dir, "disk");
	fs_rm_rf_prefixed(tmp, tmp_pre);
	fs_rm_rf_prefixed(disk, disk_pre);
}

void sup_begin_stop(supervisor *s, int conn)
{
	s->stopping = true;
	s->stop_conn = conn;
}

static void client_request(supervisor *s, int conn)
{
	int fds[FD_MSG_MAX_FDS];
	size_t n = FD_MSG_MAX_FDS;
	json_t *m = NULL;
	int r = json_recv(conn, &m, fds, &n);
	if (r <= 0) {
		/* Client gone. A command it was waiting for is cancelled. */
		for (size_t i = 0; i < s->n_execs; i++) {
			if (s->execs[i].conn == conn) {
				s->execs[i].conn = -1;
				sup_signal_exec(s, s->execs[i].id, SIGKILL);
			}
			(void)sup_proc_drop_waiter(s->execs[i].bg, conn);
		}
		for (size_t i = 0; i < s->n_waiters; i++)
			if (s->waiters[i] == conn || s->waiters[i] == -2 - conn)
				s->waiters[i] = -1;
		if (conn == s->freeze_conn) {
			drop_dead_snapshot_stage(s, conn);
			sup_thaw(s);
		}
		if (conn == s->sb_waiter) { /* a restore waiting for the standby, cancelled */
			s->sb_waiter = -1;
			json_decref(s->sb_waiter_m);
			s->sb_waiter_m = NULL;
		}
		if (conn == s->restart_conn) { /* gone before "start": the environment is over */
			s->restart_conn = -1;
			sup_begin_stop(s, -1);
		}
		sup_close_conn(s, conn);
		return;
	}
	const char *op = json_str(m, CTL_F_OP) ?: "";
	bool keep = false;
	arm_idle(s); /* any request is activity */
	if (s->restart_conn >= 0 && conn != s->restart_conn && !streq(op, CTL_OP_INFO) &&
	    !streq(op, CTL_OP_STOP)) {
		/* Between "ended" and "start" there is no init to ask. */
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_CONFLICT, EAGAIN, "environment '%s' is being restored: retry", s->c->id);
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		json_decref(m);
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		sup_close_conn(s, conn);
		return;
	}
	if ((streq(op, CTL_OP_EXEC) || streq(op, CTL_OP_PS) || streq(op, CTL_OP_FILE)) &&
	    !sup_warm_gate(s, conn, m)) {
		json_decref(m);
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		sup_close_conn(s, conn);
		return;
	}
	if (conn == s->freeze_conn && streq(op, CTL_OP_THAW)) {
		sup_thaw(s);
		sup_send_json(conn, json_pack("{s:s}", CTL_F_EV, CTL_EV_THAWED), NULL, 0);
		json_decref(m);
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		return;
	}
	if (streq(op, CTL_OP_EXEC)) {
		sup_exec_request(s, conn, m, fds, n);
		keep = true;
	} else if (streq(op, CTL_OP_SIGNAL)) {
		for (size_t i = 0; i < s->n_execs; i++)
			if (s->execs[i].conn == conn)
				sup_signal_exec(s, s->execs[i].id, (int)json_int(m, CTL_F_SIG, SIGTERM));
		keep = true;
	} else if ((streq(op, CTL_OP_PS) || streq(op, CTL_OP_FILE)) &&
		   s->n_waiters < ARRAY_SIZE(s->waiters)) {
		/* Init answers these in order; the reply goes to the oldest waiter. */
		if (json_send(s->init_sock, m, NULL, 0) == 0) {
			s->waiters[s->n_waiters++] = conn;
			keep = true;
		}
	} else if (streq(op, CTL_OP_FREEZE)) {
		/* Held for as long as this connection lives: a client that dies
		 * mid-snapshot never leaves the environment frozen. */
		_cleanup_err_ sbx_err *fe = NULL;
		bool frozen = false;
		if (s->freeze_conn >= 0)
			err_set(&fe, SBX_E_CONFLICT, EBUSY,
				"a snapshot of this environment is already in progress");
		else if (s->paused) {
			/* Already frozen by sbx pause: the snapshot's thaw leaves it so. */
			s->freeze_conn = conn;
			sup_send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FROZEN, CTL_F_FROZEN, 1),
				      NULL, 0);
			keep = true;
		} else if (s->cg && cgroup_freeze(s->cg, true, &fe) == 0)
			frozen = true;
		if (!keep && !fe && !s->cg && !s->c->degraded) {
			/* No cgroup (rootless): init stops every process with SIGSTOP
			 * and answers once they all are; its reply goes to this client. */
			_cleanup_json_ json_t *q =
			    json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP_ALL, CTL_F_STOP, 1);
			if (q && s->n_waiters < ARRAY_SIZE(s->waiters) &&
			    json_send(s->init_sock, q, NULL, 0) == 0) {
				s->waiters[s->n_waiters++] = -2 - conn; /* marks a stop_all reply for conn */
				s->freeze_conn = conn;
				s->stopped = true;
				keep = true;
			} else
				err_set(&fe, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
		} else if (!keep && (frozen || !fe || !s->cg)) {
			s->freeze_conn = conn;
			s->frozen = frozen;
			sup_send_json(conn,
				      json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FROZEN, CTL_F_FROZEN, frozen),
				      NULL, 0);
			keep = true;
		}
		if (fe)
			sup_send_json(conn, sup_err_json(fe), NULL, 0);
	} else if (streq(op, CTL_OP_PROC_KILL) || streq(op, CTL_OP_PROC_WAIT)) {
		keep = sup_exec_proc(s, conn, op, m);
	} else if (streq(op, CTL_OP_PAUSE)) {
		keep = sup_warm_pause(s, conn);
	} else if (streq(op, CTL_OP_RESUME)) {
		bool was = s->paused;
		sup_warm_resume(s);
		sup_send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_RESUMED, "was_paused", was), NULL,
			      0);
	} else if (streq(op, CTL_OP_PHASE)) {
		/* The switch runs in init, which a pause has frozen: resumed first. */
		if (sup_warm_gate(s, conn, m))
			keep = sup_phase_begin(s, conn, m);
	} else if (streq(op, CTL_OP_EGRESS)) {
		sup_egress_set(s, conn, m);
	} else if (streq(op, CTL_OP_ENV)) {
		if (sup_warm_gate(s, conn, m)) /* init, which a pause has frozen, takes them */
			sup_env_set(s, conn, m);
	} else if (streq(op, CTL_OP_INFO)) {
		sup_send_json(conn, info_json(s), NULL, 0);
	} else if (streq(op, CTL_OP_STOP)) {
		sup_begin_stop(s, conn);
		s->linger_ok = json_bool(m, CTL_F_LINGER, false);
		keep = true;
	} else if (streq(op, CTL_OP_RESTART)) {
		keep = sup_restore_end(s, conn);
	} else if (streq(op, CTL_OP_START) && conn == s->restart_conn) {
		sup_restore_start(s, conn, m);
	} else if (streq(op, CTL_OP_RESTORE_STANDBY)) {
		keep = sup_restore_standby(s, conn, m);
	} else if (streq(op, CTL_OP_OWN)) {
		keep = sup_oneshot_own(s, conn, fds, n);
	} else {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown request '%s'", op);
		sup_send_json(conn, sup_err_json(e), NULL, 0);
	}
	for (size_t i = 0; i < n; i++)
		safe_close(fds[i]);
	json_decref(m);
	if (!keep)
		sup_close_conn(s, conn);
}

/* ---- init events -------------------------------------------------------- */

static void init_event(supervisor *s)
{
	int fds[FD_MSG_MAX_FDS];
	size_t n = FD_MSG_MAX_FDS;
	json_t *m = NULL;
	int r = json_recv(s->init_sock, &m, fds, &n);
	if (r <= 0) {
		if (r == 0 || r == -ECONNRESET) {
			sup_ep_del(s, s->init_sock);
			sup_begin_stop(s, -1); /* init died: the environment is over */
		}
		return;
	}
	ctl_init_event e;
	if (ctl_init_event_decode(m, &e) < 0)
		e = (ctl_init_event){.kind = CTL_EVK_UNKNOWN, .id = -1};
	sup_exec *x = find_exec(s, e.id);
	if (e.kind == CTL_EVK_PHASE)
		sup_phase_end(s, m);
	if (e.kind == CTL_EVK_PS || e.kind == CTL_EVK_FILE || e.kind == CTL_EVK_STOP_ALL ||
	    e.kind == CTL_EVK_PHASE) {
		if (s->n_waiters > 0) {
			int conn = s->waiters[0];
			memmove(s->waiters, s->waiters + 1, --s->n_waiters * sizeof(int));
			if (conn <= -2) {
				/* A snapshot's freeze: answer as the cgroup freezer would,
				 * and keep the connection (it holds the freeze). */
				conn = -2 - conn;
				if (conn == s->freeze_conn)
					sup_send_json(conn,
						      json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FROZEN,
								CTL_F_FROZEN, e.ok),
						      NULL, 0);
			} else if (conn >= 0) {
				(void)json_send(conn, m, fds, n);
				sup_close_conn(s, conn);
			}
		}
	} else if (x && x->bg && e.kind == CTL_EVK_SPAWNED) {
		/* Background: the record says running, the client learns the
		 * process id, and the command no longer depends on the client. */
		x->started = true;
		sup_proc_started(x->bg, e.pid);
		if (x->conn >= 0) {
			sup_send_json(x->conn,
				      json_pack("{s:s,s:I,s:s,s:I}", CTL_F_EV, CTL_EV_STARTED, CTL_F_PID,
						(json_int_t)e.pid, CTL_F_PROCESS_ID, x->bg->id, "started_ms",
						(json_int_t)x->bg->started_ms),
				      NULL, 0);
			sup_close_conn(s, x->conn);
			x->conn = -1;
		}
	} else if (x && e.kind == CTL_EVK_SPAWNED) {
		startup_mark("supervisor: spawned");
		x->started = true;
		_cleanup_json_ json_t *o =
		    json_pack("{s:s,s:I}", CTL_F_EV, CTL_EV_STARTED, CTL_F_PID, (json_int_t)e.pid);
		if (o && x->traced) {
			json_object_set_new(o, "recorder", json_string(x->recorder));
			json_object_set_new(o, "engine", json_boolean(x->engine));
		}
		if (x->conn >= 0 && o)
			(void)json_send(x->conn, o, fds, n);
		else
			sup_signal_exec(s, x->id, SIGKILL);
	} else if (x && e.kind == CTL_EVK_SPAWN_FAILED) {
		sbx_code code = ctl_spawn_failed_code(&e);
		_cleanup_json_ json_t *o = json_pack(
		    "{s:s,s:s,s:s,s:i,s:i}", CTL_F_EV, CTL_EV_ERROR, CTL_F_CODE, sbx_code_name(code),
		    CTL_F_MESSAGE, e.message ?: "spawn failed", CTL_F_ERRNO, e.err, CTL_F_STAGE, e.stage);
		if (x->conn >= 0 && o)
			(void)json_send(x->conn, o, NULL, 0);
		sup_proc_discard(x->bg); /* it never ran: no record */
		end_exec(s, x);
	} else if (x && e.kind == CTL_EVK_EXITED) {
		startup_mark("supervisor: exited");
		int status = e.status;
		/* An OOM kill is a SIGKILL; only then is the cgroup's counter read
		 * (reading it on every exec costs more than the exec). */
		bool oom = false;
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !x->timed_out) {
			int64_t now = oom_count(s);
			oom = now > s->oom_seen;
			if (now >= 0)
				s->oom_seen = now;
		}
		struct timespec end;
		clock_gettime(CLOCK_MONOTONIC, &end);
		int64_t us =
		    (end.tv_sec - x->start.tv_sec) * 1000000 + (end.tv_nsec - x->start.tv_nsec) / 1000;
		_cleanup_json_ json_t *o =
		    json_pack("{s:s,s:i,s:b,s:b,s:I,s:I}", CTL_F_EV, CTL_EV_EXIT, CTL_F_STATUS, status,
			      "timed_out", x->timed_out, "oom", oom, "duration_us", (json_int_t)us,
			      "timeout_ms", (json_int_t)x->timeout_ms);
		if (o && x->traced) {
			json_t *ti = json_object();
			sup_stop_recorder(s, ti);
			json_object_set_new(o, "trace", ti);
			x->traced = false;
		}
		if (x->conn >= 0 && o)
			(void)json_send(x->conn, o, NULL, 0);
		if (x->bg)
			sup_proc_exited(x->bg, status, x->timed_out, oom, NULL);
		end_exec(s, x);
	}
	for (size_t i = 0; i < n; i++)
		safe_close(fds[i]);
	json_decref(m);
}

/* ---- the end of commands and of init (teardown, restore) ------------------ */

/* Answers every client still waiting for a command: the environment was
 * `what` (stopped, restored) under it. */
void sup_fail_execs(supervisor *s, const char *what)
{
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].conn >= 0) {
			_cleanup_err_ sbx_err *ge = NULL;
			err_set(&ge, SBX_E_UNAVAILABLE, ESRCH, "the environment was %s while the command ran",
				what);
			sup_send_json(s->execs[i].conn, sup_err_json(ge), NULL, 0);
		}
}

/* Killing init kills every process of its pid namespace; the mount,
 * network and other namespaces vanish with the last of them. sup_kill_init
 * waits until it is reaped, sup_signal_init does not. */
void sup_signal_init(supervisor *s)
{
	if (s->init_pidfd >= 0)
		(void)sys_pidfd_send_signal(s->init_pidfd, SIGKILL, NULL, 0);
	else if (s->init_pid > 0)
		(void)kill(s->init_pid, SIGKILL);
}

void sup_kill_init(supervisor *s)
{
	sup_signal_init(s);
	if (s->init_pid > 0)
		(void)RETRY_EINTR(waitpid(s->init_pid, NULL, 0));
}

/* ---- the loop ------------------------------------------------------------ */

_noreturn_ void supervisor_main(env_config *c, int ready_fd)
{
	/* ~113 KiB (the exec table): static, so that only the pages in use are
	 * faulted in; a zero-initialized local had every page touched by its
	 * memset. It is still all zeros here: this function never returns,
	 * and every supervisor is forked by supervisor_start's caller, a
	 * process that never ran it. */
	static supervisor S;
	supervisor *s = &S;
	s->c = c;
	s->listen_fd = -1;
	s->init_sock = -1;
	s->init_pidfd = -1;
	s->ttl_fd = -1;
	s->idle_fd = -1;
	s->rec_fd = -1;
	s->stop_conn = -1;
	s->freeze_conn = -1;
	s->proxy_listen = -1;
	s->proxy_stop = -1;
	s->egress_log = -1;
	s->restart_conn = -1;
	s->linger_ns = -1;
	s->old_init_pid = -1;
	s->old_mnt_ns = -1;
	s->sb_defer_fd = -1;
	s->sb_helper = -1;
	s->sb_helper_fd = -1;
	s->sb_waiter = -1;
	_cleanup_err_ sbx_err *e = NULL;
	(void)prctl(PR_SET_NAME, "sbx-supervisor", 0, 0, 0);
	/* Our argv and environ are the creator's (`sbx create --env K=V -v
	 * /host/dir:...`): the init cloned from us is pid 1 of the environment,
	 * whose cmdline anyone inside may read. */
	(void)proc_set_title("sbx-supervisor");
	startup_mark("supervisor: started");
	s->warnings = json_array();
	for (char **w = c->warnings; w && *w; w++)
		sup_add_warning(s, "%s", *w);

	/* The creator took $SBX_RUN/<id>/lock before forking us; we hold it
	 * (fd 4) for our whole life: it says "alive" to gc and to the CLI. */
	/* Published ports before anything else: a port in use fails the create
	 * while there is nothing to undo (docs/ports.md). */
	if (sup_ports_bind(s, &e) < 0)
		goto fail;
	/* Plugins next: their host is cloned while we are single-threaded and
	 * hold nothing of the environment yet; on_create may veto the create or
	 * lower limits that the cgroup below then enforces. */
	if (plugin_env_create(c, &s->plugins, &s->plugin_limits, &e) < 0)
		goto fail;
	if ((plugin_host_hooks(s->plugins) & PLUGIN_HOOK_EGRESS) && streq(c->network, "open"))
		sup_add_warning(
		    s, "network open bypasses the egress proxy: plugins' on_egress hooks see no connection");
	_cleanup_free_ char *missing = NULL;
	if (cgroup_create(c->id, &c->limits, &s->cg, &missing, &e) < 0) {
		if (!c->rootless)
			goto fail;
		sup_add_warning(s, "%s", sbx_err_message(e));
		sbx_err_free(e);
		e = NULL;
	} else if (missing)
		sup_add_warning(s, "limits not enforced on this host: %s", missing);
	startup_mark("supervisor: plugins, cgroup created");
	log_debug("supervisor: cgroup created");
	s->n_base_warnings = json_array_size(s->warnings); /* a restart's start gives the rest again */
	if (sup_init_start(s, true, &e) < 0 || cdi_hooks_create(c, s->init_pid, s->warnings, &e) < 0)
		goto fail;
	secrets_wipe(c); /* init holds the one copy of the secrets now */

	s->ep = epoll_create1(EPOLL_CLOEXEC);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	s->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->ep < 0 || s->sig_fd < 0) {
		err_errno(&e, "event loop");
		goto fail;
	}
	sup_ep_add(s, s->listen_fd);
	sup_ep_add(s, s->init_sock);
	sup_ep_add(s, s->sig_fd);
	/* Every few seconds: does our environment still exist? If its state
	 * was deleted behind our back (rm -rf of the store), nobody could ever
	 * reach or stop us: end instead of running forever. */
	int watch_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec every = {.it_interval = {5, 0}, .it_value = {5, 0}};
	if (watch_fd >= 0 && timerfd_settime(watch_fd, 0, &every, NULL) == 0)
		sup_ep_add(s, watch_fd);
	if (c->ttl_ms > 0 && (s->ttl_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0) {
		sup_ep_add(s, s->ttl_fd);
		sup_arm_ttl(s);
	}
	if (c->idle_suspend_ms > 0 &&
	    (s->idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0) {
		sup_ep_add(s, s->idle_fd);
		arm_idle(s);
	}
	if (sup_ports_start(s, &e) < 0)
		goto fail;
	startup_mark("supervisor: listening, event loop");
	log_debug("supervisor: ready");
	json_t *ready =
	    json_pack("{s:b,s:i,s:i,s:i,s:O}", "ok", 1, "supervisor_pid", (int)getpid(), "init_pid",
		      (int)s->init_pid, "landlock_abi", s->landlock_abi, "warnings", s->warnings);
	if (ready && s->plugin_limits)
		json_object_set(ready, "limits", s->plugin_limits);
	if (ready && s->c->n_ports)
		json_object_set_new(ready, "ports", sup_ports_json(s));
	if (startup_trace_enabled()) { /* the creator's stderr, kept for the trace: give it back */
		char lp[4200];
		snprintf(lp, sizeof(lp), "%s/supervisor.log", c->run_dir);
		int lfd = log_debug_enabled ? open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)
					    : open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (lfd >= 0 && lfd != 2) {
			dup2(lfd, 2);
			close(lfd);
		}
	}
	if (!sup_start_report(ready_fd, ready)) {
		/* The create was killed before it learned the environment exists:
		 * nobody was given its id, nobody will use it. (A creator killed
		 * after reading this is gc's: sbx gc removes what its creator left
		 * without a state; a one-shot one is removed here, or when its
		 * owner's pidfd says it exited.) */
		sup_teardown(s);
		sup_oneshot_dispose(s);
		_exit(1);
	}
	/* One-shot: the owner's exit ends the environment (runtime.h). */
	if (c->one_shot && c->owner_fd >= 0)
		sup_ep_add(s, c->owner_fd);

	while (!s->stopping) {
		struct epoll_event evs[32];
		int64_t wait = -1; /* ms; a pending hand-out's deadline (sup_oneshot_own) */
		if (s->handout_taken_ms) {
			wait = s->handout_due_ms - clock_ms(CLOCK_MONOTONIC);
			if (wait < 0)
				wait = 0;
		}
		int n = epoll_wait(s->ep, evs, 32, (int)wait);
		if (s->handout_taken_ms && clock_ms(CLOCK_MONOTONIC) >= s->handout_due_ms)
			sup_oneshot_handout(s);
		if (n < 0 && errno != EINTR)
			break;
		s->loop_reset = false;
		for (int i = 0; i < n && !s->stopping && !s->loop_reset; i++) {
			int fd = evs[i].data.fd;
			if (fd == s->listen_fd) {
				int conn;
				while ((conn = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
					sup_ep_add(s, conn);
			} else if (fd == s->init_sock) {
				init_event(s);
			} else if (sup_restore_standby_owns(s, fd)) {
				sup_restore_standby_event(s, fd);
			} else if (fd == s->sb_helper_fd && fd >= 0) {
				sup_restore_standby_spawned(s);
			} else if (fd == s->sig_fd) {
				struct signalfd_siginfo si;
				while (read(s->sig_fd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo != SIGCHLD)
						sup_begin_stop(s, -1);
				/* Reap: init (then the environment is over) and, in
				 * degraded mode, orphans we inherited as subreaper. */
				pid_t dead;
				while ((dead = waitpid(-1, NULL, WNOHANG)) > 0)
					if (dead == s->init_pid) {
						s->init_pid = -1;
						sup_begin_stop(s, -1);
					} else if (dead == s->old_init_pid) {
						s->old_init_pid = -1;
					} else {
						(void)sup_restore_reaped(s, dead);
					}
			} else if (fd == watch_fd) {
				uint64_t t;
				(void)!read(fd, &t, sizeof(t));
				struct stat st;
				char lp[4300];
				snprintf(lp, sizeof(lp), "%s/lock", c->run_dir);
				if (stat(c->env_dir, &st) < 0 && errno == ENOENT && stat(lp, &st) < 0 &&
				    errno == ENOENT)
					sup_begin_stop(s, -1);
			} else if (fd == c->owner_fd && c->one_shot) {
				/* The owner exited (readable pidfd) before it removed us. */
				sup_ep_del(s, fd);
				if (!s->stopping)
					sup_begin_stop(s, -1);
			} else if (fd == s->sb_defer_fd && fd >= 0) {
				sup_restore_standby_deferred(s);
			} else if (fd == s->idle_fd) {
				sup_warm_idle(s);
			} else if (fd == s->ttl_fd) {
				uint64_t t;
				(void)!read(fd, &t, sizeof(t));
				if (s->n_execs == 0 && s->restart_conn < 0)
					sup_begin_stop(s, -1);
			} else {
				bool is_timer = false;
				sup_proc *out = NULL;
				for (size_t k = 0; k < s->n_execs; k++) {
					is_timer |= s->execs[k].timer == fd;
					if (sup_proc_owns(s->execs[k].bg, fd))
						out = s->execs[k].bg;
				}
				if (is_timer)
					sup_exec_timeout(s, fd);
				else if (out)
					sup_proc_drain(out, fd);
				else
					client_request(s, fd);
			}
		}
	}
	/* Tell every waiting client, then clean up, then answer the stop. */
	sup_fail_execs(s, "stopped");
	/* One-shot: whatever ended it (its owner's stop, the owner's exit, init's
	 * death), it is removed before the reply: the owner may be killed at
	 * any moment from here on and nothing is left (docs/runtime.md). In
	 * two halves where it can be (no disk quota's mounts, no CDI poststop
	 * hooks: those must be done when sbx run returns): hidden while init
	 * dies, answered once its processes are gone, and the cgroup, the uid
	 * range and the files after the answer (this process holds the run
	 * directory's lock until it exits: a reclaimer, sbx gc, waits for it). */
	bool halves = c->one_shot && c->dispose_hide && c->dispose_finish && !c->disk_bytes && !c->cdi;
	void *hidden = NULL;
	if (halves) {
		sup_teardown_signal(s);
		hidden = c->dispose_hide(c->dispose_arg, c->id);
		startup_mark("teardown: hidden (one-shot)");
		sup_teardown_reap(s);
	} else
		sup_teardown(s);
	/* Background processes ended with the environment: their records say
	 * so (killed with init, SIGKILL), with everything they printed. */
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].bg) {
			sup_proc_exited(s->execs[i].bg, SIGKILL, false, false, "environment_stopped");
			sup_proc_free(s->execs[i].bg);
			s->execs[i].bg = NULL;
		}
	if (!halves)
		sup_oneshot_dispose(s);
	if (s->stop_conn >= 0)
		sup_send_json(s->stop_conn,
			      json_pack("{s:s,s:b,s:b}", CTL_F_EV, CTL_EV_STOPPED, CTL_F_LINGERING,
					s->linger_ns >= 0, CTL_F_REMOVED, c->one_shot && c->dispose),
			      NULL, 0);
	/* A pool entry's claim names a hidden environment now: it goes after
	 * the reply (sbx gc drops a claim whose environment is gone). */
	if (halves && c->pool_claim)
		(void)unlink(c->pool_claim);
	/* Lingering: every process is gone, and the cgroup; the mounts go now,
	 * then the lock (at exit). */
	if (halves)
		sup_teardown_cgroup(s);
	safe_close(s->linger_ns);
	safe_close(s->old_mnt_ns); /* a replaced init's, if no standby's helper took it */
	startup_mark("teardown: mounts released");
	if (halves) {
		c->dispose_finish(c->dispose_arg, hidden);
		startup_mark("teardown: files to the reclaimer (one-shot)");
	}
	/* An environment that ended by itself (init died, TTL) leaves its state
	 * for `sbx ls` to show as exited and `sbx gc`/`sbx rm` to remove. */
	_exit(0);

fail:
	sup_teardown(s);
	if (!sup_start_report(ready_fd,
			      json_pack("{s:b,s:s,s:s,s:i}", "ok", 0, "code", sbx_code_name(sbx_err_code(e)),
					"message", sbx_err_message(e), "errno", sbx_err_errno(e))))
		sup_oneshot_dispose(s); /* a one-shot creator gone: nobody else removes it */
	_exit(1);
}
