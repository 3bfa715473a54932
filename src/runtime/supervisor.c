/* The supervisor: one per live environment, outside it (like conmon).
 * It creates the namespaces and cgroup, prepares the mount trees that need
 * host privilege, starts init, owns the control socket $SBX_RUN/<id>/ctl.sock,
 * enforces timeouts and the idle TTL, and cleans everything up when the
 * environment is stopped or init dies. Single-threaded epoll loop. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "policy/proxy.h"
#include "runtime/ctl_proto.h"
#include "runtime/devices.h"
#include "runtime/mount.h"
#include "runtime/runtime.h"
#include "runtime/seccomp.h"
#include "runtime/sup_proc.h"
#include "runtime/startup_trace.h"
#include "trace/bpf_rec.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/syscalls.h"

#define MAX_CONNS 1024
#define MAX_SUP_EXECS 1024

typedef struct sup_exec {
	int64_t id;
	int conn;  /* client connection fd, -1 once the client is gone */
	int timer; /* timerfd for the timeout, -1 if none */
	bool started, timed_out;
	int64_t timeout_ms;   /* the timeout that applies (the command's or the environment's), 0: none */
	bool traced;	      /* holds the environment's one recorder slot */
	const char *recorder; /* "bpf" or "ptrace" when traced */
	struct timespec start;
	struct itimerspec paused_left; /* the timeout's remaining time while paused */
	sup_proc *bg; /* a background process (docs/processes.md): no client, output to files */
	/* sbx run: the environment stops when this command ends (CTL_F_STOP_AFTER),
	 * and its remover lets the unmount follow the reply (CTL_F_LINGER). */
	bool stop_after, linger;
} sup_exec;

typedef struct supervisor {
	env_config *c;
	int ep, listen_fd, init_sock, sig_fd, ttl_fd;
	pid_t init_pid;
	int init_pidfd;
	sbx_cgroup *cg;
	sup_exec execs[MAX_SUP_EXECS];
	bpf_rec *rec;	 /* the eBPF recorder of the one traced command, if it runs */
	int rec_fd;	 /* where it writes (our copy of the client's file) */
	char *rec_error; /* why eBPF was not used, for the trace */
	size_t n_execs;
	int64_t next_id;
	/* Clients waiting for init's in-order replies (ps, file operations). */
	int waiters[256];
	size_t n_waiters;
	int landlock_abi;
	json_t *warnings;
	int64_t oom_seen; /* OOM kills already attributed to a command */
	int freeze_conn;  /* the snapshot client holding the freeze, or -1 */
	bool stopped;	  /* frozen by SIGSTOP through init (no cgroup freezer) */
	int proxy_listen; /* network allow: listening socket inside the environment */
	int proxy_stop;	  /* eventfd that ends the proxy thread */
	pthread_t proxy_thread;
	bool proxy_running;
	egress_allowlist *allow;
	int egress_log;
	plugin_host *plugins;  /* the policy's plugins (a separate process), or NULL */
	json_t *plugin_limits; /* limits a plugin lowered at create, for the creator */
	bool frozen;
	bool stopping;
	int stop_conn;	      /* replied to once everything is cleaned up */
	bool linger_ok;	      /* the stop's asker removes the environment (CTL_F_LINGER) */
	int linger_ns;	      /* the dead init's mount namespace, held past the reply; -1 */
	bool phase_pending;   /* the agent phase: init is ending the setup phase's processes */
	json_t *phase_limits; /* cgroup limits to lower to once it has */
	/* Warm environments (docs/warm.md): sbx pause, idle suspend. */
	bool paused;	   /* frozen by sbx pause (cgroup freezer, or init's SIGSTOP) */
	int idle_fd;	   /* idle suspend timer, -1 if none */
	int64_t next_proc; /* the next background process id's number; 0: not read yet */
	/* An in-place restart (restore): the client between "ended" and
	 * "start", or -1; the warnings a start gives start after the first
	 * n_base_warnings; loop_reset: descriptors changed, poll again. */
	int restart_conn;
	size_t n_base_warnings;
	bool loop_reset;
	/* A standby init (docs/warm.md "Restore"): built in the background
	 * after an in-place restart, for the same layers; the next restore to
	 * sb_snapshot makes it the active init. sb_sock >= 0 while one exists;
	 * sb_ready is its "ready" report, NULL while it builds. old_init_pid:
	 * the init it replaced, killed and not reaped yet (SIGCHLD reaps it).
	 * old_mnt_ns: the replaced init's mount namespace, held so that its
	 * overlays' unmount (which syncs the upper's filesystem) is not the
	 * dying init's, on the next command's way: the next standby's helper
	 * lets it go, at SCHED_IDLE, once it has reported (ns_helper: that
	 * helper, not reaped yet). */
	pid_t sb_pid, old_init_pid, ns_helper;
	int old_mnt_ns;
	/* The next standby, not started yet (standby_defer): its snapshot, and
	 * the timer that starts it if no command comes first (-1 if none). */
	char *sb_deferred;
	int sb_defer_fd;
	int sb_pidfd, sb_sock, sb_proxy;
	json_t *sb_ready;
	char *sb_snapshot;
	pid_t sb_helper;     /* the helper process that spawns it (standby_build), or -1 */
	int sb_helper_fd;    /* its report, or -1 */
	json_t *sb_warnings; /* what preparing its trees warned of (send_go) */
	int sb_waiter;	     /* a restore_standby that came while it builds, or -1 */
	json_t *sb_waiter_m; /* its request */
	/* A pool entry owned by a one-shot taker (CTL_OP_OWN) whose hand-out
	 * (env_config.handout) is still to come: when it was owned (realtime
	 * ms; 0: none pending), and its deadline (monotonic ms). */
	int64_t handout_taken_ms, handout_due_ms;
} supervisor;

static void proxy_stop(supervisor *s);
static bool restart_end(supervisor *s, int conn);
static void restart_start(supervisor *s, int conn, const json_t *m);
static bool standby_restore(supervisor *s, int conn, const json_t *m);
static void standby_build(supervisor *s, const char *sid);
static void restart_forget(supervisor *s);
static void standby_event(supervisor *s);
static void standby_spawned(supervisor *s);
static void standby_drop(supervisor *s);
static void standby_deferred_start(supervisor *s);
static void standby_defer(supervisor *s, char *sid);
static bool phase_begin(supervisor *s, int conn, json_t *m);
static void phase_end(supervisor *s, json_t *reply);

static void ep_add(supervisor *s, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
	(void)epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void ep_del(supervisor *s, int fd)
{
	(void)epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
}

static void send_json(int fd, json_t *m, const int *fds, size_t n)
{
	if (fd >= 0 && m)
		(void)json_send(fd, m, fds, n);
	json_decref(m);
}

static json_t *err_json(const sbx_err *e)
{
	return json_pack("{s:s,s:s,s:s,s:i}", CTL_F_EV, CTL_EV_ERROR, CTL_F_CODE,
			 sbx_code_name(sbx_err_code(e)), CTL_F_MESSAGE, sbx_err_message(e), CTL_F_ERRNO,
			 sbx_err_errno(e));
}

static void arm_idle(supervisor *s);

static void arm_ttl(supervisor *s)
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

static void close_conn(supervisor *s, int fd)
{
	ep_del(s, fd);
	safe_close(fd);
}

static sup_exec *find_exec(supervisor *s, int64_t id)
{
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].id == id)
			return &s->execs[i];
	return NULL;
}

/* Stops the eBPF recorder (it drains what is left first); fills info. */
static void stop_recorder(supervisor *s, json_t *info)
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

static void drop_exec(supervisor *s, sup_exec *x)
{
	if (x->traced)
		stop_recorder(s, NULL);
	if (x->timer >= 0) {
		ep_del(s, x->timer);
		safe_close(x->timer);
	}
	if (x->conn >= 0)
		close_conn(s, x->conn);
	sup_proc_free(x->bg);
	*x = s->execs[--s->n_execs];
	arm_ttl(s);
	if (s->sb_deferred && s->n_execs == 0) /* the first command after a restore was served */
		standby_deferred_start(s);
}

/* A command has ended (or never started): drop_exec. One that its client
 * asked the environment to end with (sbx run, CTL_F_STOP_AFTER) begins
 * the stop now, with no second connection; the client, told "exit" (or
 * the error) already, gets "stopped" on the same connection after the
 * teardown. A client that is gone gets nothing: the environment ends all
 * the same (a killed `sbx run` leaves a stopped environment for gc). */
static void begin_stop(supervisor *s, int conn);
static void end_exec(supervisor *s, sup_exec *x)
{
	bool stop = x->stop_after, linger = x->linger;
	int conn = stop ? x->conn : -1;
	if (stop)
		x->conn = -1; /* kept open for the stop's reply */
	drop_exec(s, x);
	if (stop && !s->stopping) {
		begin_stop(s, conn);
		s->linger_ok = linger && conn >= 0;
	} else if (conn >= 0)
		close_conn(s, conn);
}

static void signal_exec(supervisor *s, int64_t id, int sig)
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
	x->traced = true;
	x->recorder = use_bpf ? "bpf" : "ptrace";
	return 0;
}

/* ---- background processes (docs/processes.md; sup_proc.h) ---------------- */

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
		send_json(x->conn, err_json(e), NULL, 0);
		drop_exec(s, x);
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
static bool client_proc(supervisor *s, int conn, const char *op, const json_t *m)
{
	ctl_proc_request q;
	_cleanup_err_ sbx_err *e = NULL;
	if (ctl_proc_request_decode(m, &q) < 0) {
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"invalid process request (process_id must be p<number>, sig 1 to 64)");
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	sup_exec *x = find_proc(s, q.n);
	const char *pid = x ? x->bg->id : json_str(m, CTL_F_PROCESS_ID);
	if (streq(op, CTL_OP_PROC_KILL)) {
		if (x && x->started)
			signal_exec(s, x->id, q.sig);
		send_json(conn,
			  json_pack("{s:s,s:s,s:b,s:i}", CTL_F_EV, CTL_EV_PROC_KILLED, CTL_F_PROCESS_ID, pid,
				    "delivered", x && x->started, CTL_F_SIG, q.sig),
			  NULL, 0);
		return false;
	}
	if (x && sup_proc_add_waiter(x->bg, conn))
		return true;
	if (x)
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many clients waiting for process %s", pid);
	send_json(
	    conn,
	    e ? err_json(e)
	      : json_pack("{s:s,s:s,s:b}", CTL_F_EV, CTL_EV_PROC_EXIT, CTL_F_PROCESS_ID, pid, "running", 0),
	    NULL, 0);
	return false;
}

/* One-shot (runtime.h): removes the environment (the API's dispose), and
 * the pool claim this supervisor made for its owner. */
static void dispose_env(supervisor *s)
{
	if (!s->c->one_shot || !s->c->dispose)
		return;
	s->c->dispose(s->c->dispose_arg, s->c->id);
	if (s->c->pool_claim)
		(void)unlink(s->c->pool_claim);
	startup_mark("teardown: files removed (one-shot)");
}

/* How long after a one-shot take its hand-out comes (client_own). */
#define HANDOUT_DELAY_MS 5

/* CTL_OP_OWN: a one-shot create's take of this pool entry. The claim (the
 * token's rename) and the ownership are one step here, so that the taker
 * dying at any moment leaves the entry either in the pool or owned (and
 * then removed with its owner). */
static bool client_own(supervisor *s, int conn, int *fds, size_t n_fds)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	if (n_fds != 1 || !c->pool_token || !c->pool_claim)
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "own: not a pool entry, or no pidfd");
	else if (c->one_shot)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "own: the entry is owned already");
	else if (rename(c->pool_token, c->pool_claim) < 0)
		err_set(&e, errno == ENOENT ? SBX_E_CONFLICT : SBX_E_INTERNAL, errno,
			"own: claim the pool entry: %s", strerror(errno));
	else if ((c->owner_fd = fcntl(fds[0], F_DUPFD_CLOEXEC, 3)) < 0) {
		err_errno(&e, "own: dup");
		(void)rename(c->pool_claim, c->pool_token); /* back in the pool */
	}
	if (e) {
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	c->one_shot = true;
	ep_add(s, c->owner_fd);
	send_json(conn, json_pack("{s:s,s:O?}", CTL_F_EV, CTL_EV_OWNED, CTL_F_WARNINGS, s->warnings), NULL,
		  0);
	/* The hand-out (the entry's state rewritten as an ordinary environment)
	 * comes HANDOUT_DELAY_MS later, off the taker's way: its first command
	 * comes on this connection, which stays open for it, and a command
	 * that ends sooner (sbx run -- true) ends the one-shot environment
	 * before anyone could list it, so its hand-out is never written. */
	if (c->handout) {
		s->handout_taken_ms = clock_ms(CLOCK_REALTIME);
		s->handout_due_ms = clock_ms(CLOCK_MONOTONIC) + HANDOUT_DELAY_MS;
	}
	return true;
}

/* The pending hand-out, if any (client_own). */
static void handout_run(supervisor *s)
{
	if (!s->handout_taken_ms)
		return;
	int64_t taken = s->handout_taken_ms;
	s->handout_taken_ms = 0;
	if (s->stopping)
		return; /* being removed: nothing to hand out */
	if (s->c->handout(s->c->dispose_arg, s->c->id, taken) < 0)
		log_debug("pool: hand-out of %s: its state was not rewritten", s->c->id);
	if (s->c->pool_claim)
		(void)unlink(s->c->pool_claim); /* handed out */
	startup_mark("supervisor: handed out");
}

static void client_exec(supervisor *s, int conn, json_t *m, int *fds, size_t n_fds)
{
	if (s->n_execs >= MAX_SUP_EXECS) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many commands running in this environment");
		send_json(conn, err_json(e), NULL, 0);
		close_conn(s, conn);
		return;
	}
	/* Plugins may veto the command or adjust its argv and env (this loop
	 * waits for them: at most the plugin timeout). */
	_cleanup_err_ sbx_err *pe = NULL;
	if (s->plugins && plugin_env_exec(s->plugins, s->c->id, m, &pe) < 0) {
		send_json(conn, err_json(pe), NULL, 0);
		close_conn(s, conn);
		return;
	}
	bool bg = json_bool(m, CTL_F_BACKGROUND, false);
	if (bg && (json_bool(m, "tty", false) || json_object_get(m, "trace"))) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"a background process has no terminal and cannot be traced");
		send_json(conn, err_json(e), NULL, 0);
		close_conn(s, conn);
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
			ep_add(s, x->timer);
	}
	if (s->ttl_fd >= 0)
		arm_ttl(s);
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
			send_json(conn, err_json(e), NULL, 0);
			drop_exec(s, x);
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
		send_json(conn, err_json(e), NULL, 0);
		sup_proc_discard(x->bg);
		drop_exec(s, x);
	}
}

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
	if (s->sb_pid > 0) /* docs/warm.md "Restore" */
		json_object_set_new(j, "standby",
				    json_pack("{s:i,s:s,s:b}", "pid", (int)s->sb_pid, "snapshot_id",
					      s->sb_snapshot ?: "", "ready", s->sb_ready != NULL));
	json_object_set_new(j, "paused", json_boolean(s->paused));
	json_object_set_new(j, CTL_F_EV, json_string(CTL_EV_INFO));
	return j;
}

static void thaw(supervisor *s)
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

static void begin_stop(supervisor *s, int conn)
{
	s->stopping = true;
	s->stop_conn = conn;
}

/* ---- pause, resume, idle suspend (docs/warm.md) ------------------------- */

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
 * The idle TTL and idle suspend are off too (arm_ttl). */
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
static bool pause_env(supervisor *s, int conn)
{
	_cleanup_err_ sbx_err *e = NULL;
	if (s->paused) {
		send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_PAUSED, "already", 1), NULL, 0);
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
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	bool keep = false;
	if (!s->cg) {
		_cleanup_json_ json_t *q = json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP_ALL, CTL_F_STOP, 1);
		if (!q || json_send(s->init_sock, q, NULL, 0) < 0) {
			err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
			send_json(conn, err_json(e), NULL, 0);
			return false;
		}
		s->waiters[s->n_waiters++] = conn; /* init's stop_all reply */
		keep = true;
	}
	/* Marked before the reply: the client's next sbx ls must see it. */
	s->paused = true;
	pause_timers(s, true);
	arm_ttl(s);
	warm_mark(s, s->c->run_dir, "paused", "1\n");
	if (!keep)
		send_json(conn, json_pack("{s:s}", CTL_F_EV, CTL_EV_PAUSED), NULL, 0);
	return keep;
}

/* Thaws what pause_env froze; nothing when not paused. A snapshot's own
 * freeze (freeze_conn) is separate and stays. */
static void resume_env(supervisor *s)
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
	arm_ttl(s);
	warm_mark(s, s->c->run_dir, "paused", NULL);
}

/* A request that needs the environment's processes (exec, ps, file) while
 * it is paused: it resumes first, unless the client said no_auto_resume.
 * Returns false (and answers conn) when the request is refused. */
static bool pause_gate(supervisor *s, int conn, const json_t *m)
{
	if (!s->paused)
		return true;
	if (json_bool(m, "no_auto_resume", false)) {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_CONFLICT, EAGAIN,
			"environment '%s' is paused (sbx resume %s, or leave out --no-auto-resume)", s->c->id,
			s->c->id);
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	resume_env(s);
	return true;
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
static void idle_event(supervisor *s)
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
	begin_stop(s, -1);
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
				signal_exec(s, s->execs[i].id, SIGKILL);
			}
			(void)sup_proc_drop_waiter(s->execs[i].bg, conn);
		}
		for (size_t i = 0; i < s->n_waiters; i++)
			if (s->waiters[i] == conn || s->waiters[i] == -2 - conn)
				s->waiters[i] = -1;
		if (conn == s->freeze_conn)
			thaw(s);
		if (conn == s->sb_waiter) { /* a restore waiting for the standby, cancelled */
			s->sb_waiter = -1;
			json_decref(s->sb_waiter_m);
			s->sb_waiter_m = NULL;
		}
		if (conn == s->restart_conn) { /* gone before "start": the environment is over */
			s->restart_conn = -1;
			begin_stop(s, -1);
		}
		close_conn(s, conn);
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
		send_json(conn, err_json(e), NULL, 0);
		json_decref(m);
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		close_conn(s, conn);
		return;
	}
	if ((streq(op, CTL_OP_EXEC) || streq(op, CTL_OP_PS) || streq(op, CTL_OP_FILE)) &&
	    !pause_gate(s, conn, m)) {
		json_decref(m);
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		close_conn(s, conn);
		return;
	}
	if (conn == s->freeze_conn && streq(op, CTL_OP_THAW)) {
		thaw(s);
		send_json(conn, json_pack("{s:s}", CTL_F_EV, CTL_EV_THAWED), NULL, 0);
		json_decref(m);
		for (size_t i = 0; i < n; i++)
			safe_close(fds[i]);
		return;
	}
	if (streq(op, CTL_OP_EXEC)) {
		client_exec(s, conn, m, fds, n);
		keep = true;
	} else if (streq(op, CTL_OP_SIGNAL)) {
		for (size_t i = 0; i < s->n_execs; i++)
			if (s->execs[i].conn == conn)
				signal_exec(s, s->execs[i].id, (int)json_int(m, CTL_F_SIG, SIGTERM));
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
			send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FROZEN, CTL_F_FROZEN, 1),
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
			send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FROZEN, CTL_F_FROZEN, frozen),
				  NULL, 0);
			keep = true;
		}
		if (fe)
			send_json(conn, err_json(fe), NULL, 0);
	} else if (streq(op, CTL_OP_PROC_KILL) || streq(op, CTL_OP_PROC_WAIT)) {
		keep = client_proc(s, conn, op, m);
	} else if (streq(op, CTL_OP_PAUSE)) {
		keep = pause_env(s, conn);
	} else if (streq(op, CTL_OP_RESUME)) {
		bool was = s->paused;
		resume_env(s);
		send_json(conn, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_RESUMED, "was_paused", was), NULL, 0);
	} else if (streq(op, CTL_OP_PHASE)) {
		/* The switch runs in init, which a pause has frozen: resumed first. */
		if (pause_gate(s, conn, m))
			keep = phase_begin(s, conn, m);
	} else if (streq(op, CTL_OP_INFO)) {
		send_json(conn, info_json(s), NULL, 0);
	} else if (streq(op, CTL_OP_STOP)) {
		begin_stop(s, conn);
		s->linger_ok = json_bool(m, CTL_F_LINGER, false);
		keep = true;
	} else if (streq(op, CTL_OP_RESTART)) {
		keep = restart_end(s, conn);
	} else if (streq(op, CTL_OP_START) && conn == s->restart_conn) {
		restart_start(s, conn, m);
	} else if (streq(op, CTL_OP_RESTORE_STANDBY)) {
		keep = standby_restore(s, conn, m);
	} else if (streq(op, CTL_OP_OWN)) {
		keep = client_own(s, conn, fds, n);
	} else {
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown request '%s'", op);
		send_json(conn, err_json(e), NULL, 0);
	}
	for (size_t i = 0; i < n; i++)
		safe_close(fds[i]);
	json_decref(m);
	if (!keep)
		close_conn(s, conn);
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
			ep_del(s, s->init_sock);
			begin_stop(s, -1); /* init died: the environment is over */
		}
		return;
	}
	ctl_init_event e;
	if (ctl_init_event_decode(m, &e) < 0)
		e = (ctl_init_event){.kind = CTL_EVK_UNKNOWN, .id = -1};
	sup_exec *x = find_exec(s, e.id);
	if (e.kind == CTL_EVK_PHASE)
		phase_end(s, m);
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
					send_json(conn,
						  json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FROZEN,
							    CTL_F_FROZEN, e.ok),
						  NULL, 0);
			} else if (conn >= 0) {
				(void)json_send(conn, m, fds, n);
				close_conn(s, conn);
			}
		}
	} else if (x && x->bg && e.kind == CTL_EVK_SPAWNED) {
		/* Background: the record says running, the client learns the
		 * process id, and the command no longer depends on the client. */
		x->started = true;
		sup_proc_started(x->bg, e.pid);
		if (x->conn >= 0) {
			send_json(x->conn,
				  json_pack("{s:s,s:I,s:s,s:I}", CTL_F_EV, CTL_EV_STARTED, CTL_F_PID,
					    (json_int_t)e.pid, CTL_F_PROCESS_ID, x->bg->id, "started_ms",
					    (json_int_t)x->bg->started_ms),
				  NULL, 0);
			close_conn(s, x->conn);
			x->conn = -1;
		}
	} else if (x && e.kind == CTL_EVK_SPAWNED) {
		startup_mark("supervisor: spawned");
		x->started = true;
		_cleanup_json_ json_t *o =
		    json_pack("{s:s,s:I}", CTL_F_EV, CTL_EV_STARTED, CTL_F_PID, (json_int_t)e.pid);
		if (o && x->traced)
			json_object_set_new(o, "recorder", json_string(x->recorder));
		if (x->conn >= 0 && o)
			(void)json_send(x->conn, o, fds, n);
		else
			signal_exec(s, x->id, SIGKILL);
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
			stop_recorder(s, ti);
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

static void timer_event(supervisor *s, int fd)
{
	uint64_t ticks;
	(void)!read(fd, &ticks, sizeof(ticks));
	for (size_t i = 0; i < s->n_execs; i++) {
		sup_exec *x = &s->execs[i];
		if (x->timer != fd)
			continue;
		x->timed_out = true;
		signal_exec(s, x->id, SIGKILL);
		ep_del(s, fd);
		safe_close(x->timer);
		x->timer = -1;
	}
}

/* ---- teardown ----------------------------------------------------------- */

/* SIGKILLs every descendant of this process (reparented orphans included,
 * since we are their subreaper) until none is left, and reaps them. */
static void kill_descendants(void)
{
	pid_t self = getpid();
	for (int round = 0; round < 100; round++) {
		size_t n = 0, cap = 0;
		_cleanup_free_ pid_t *pids = NULL, *ppids = NULL;
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			char p[300];
			_cleanup_free_ char *st = NULL;
			snprintf(p, sizeof(p), "/proc/%s/stat", de->d_name);
			if (fs_read_file(p, 4096, &st, NULL) < 0)
				continue;
			char *rp = strrchr(st, ')');
			int ppid = 0;
			if (!rp || sscanf(rp + 2, "%*c %d", &ppid) != 1)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				pid_t *a = realloc(pids, cap * sizeof(pid_t)),
				      *b = a ? realloc(ppids, cap * sizeof(pid_t)) : NULL;
				if (a)
					pids = a;
				if (!a || !b)
					break;
				ppids = b;
			}
			pids[n] = atoi(de->d_name);
			ppids[n++] = ppid;
		}
		if (d)
			closedir(d);
		size_t killed = 0;
		for (size_t i = 0; i < n; i++) {
			/* Is `self` an ancestor of pids[i]? Walk the parent chain. */
			pid_t p = ppids[i];
			for (int depth = 0; depth < 4096 && p > 1 && p != self; depth++) {
				size_t k;
				for (k = 0; k < n && pids[k] != p; k++)
					;
				p = k < n ? ppids[k] : 0;
			}
			if (p == self && pids[i] != self) {
				(void)kill(pids[i], SIGKILL);
				killed++;
			}
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (killed == 0)
			return;
		usleep(2000);
	}
}

/* Answers every client still waiting for a command: the environment was
 * `what` (stopped, restored) under it. */
static void fail_execs(supervisor *s, const char *what)
{
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].conn >= 0) {
			_cleanup_err_ sbx_err *ge = NULL;
			err_set(&ge, SBX_E_UNAVAILABLE, ESRCH, "the environment was %s while the command ran",
				what);
			send_json(s->execs[i].conn, err_json(ge), NULL, 0);
		}
}

/* Killing init kills every process of its pid namespace; the mount,
 * network and other namespaces vanish with the last of them. kill_init
 * waits until it is reaped, signal_init does not. */
static void signal_init(supervisor *s)
{
	if (s->init_pidfd >= 0)
		(void)sys_pidfd_send_signal(s->init_pidfd, SIGKILL, NULL, 0);
	else if (s->init_pid > 0)
		(void)kill(s->init_pid, SIGKILL);
}

static void kill_init(supervisor *s)
{
	signal_init(s);
	if (s->init_pid > 0)
		(void)RETRY_EINTR(waitpid(s->init_pid, NULL, 0));
}

/* The teardown in three steps (teardown() runs them in a row): the first
 * sends init its SIGKILL, the second waits until every process of the
 * environment is gone, the third removes the cgroup and the devices. A
 * one-shot stop hides the environment between the first two (while init
 * dies) and answers between the last two (supervisor_run). */
static void teardown_signal(supervisor *s)
{
	startup_mark("teardown: begin");
	resume_env(s); /* sbx pause's freeze too */
	thaw(s);       /* a v1-frozen task does not even die until thawed */
	proxy_stop(s);
	/* fini, then the plugin host ends (not freed: a resolver thread of the
	 * proxy may still ask it, and then gets a refusal) */
	plugin_host_stop(s->plugins);
	stop_recorder(s, NULL);
	standby_drop(s);
	/* A remover that lets the unmount follow the reply: the dead init's
	 * mount namespace is held (past its death) and let go after "stopped"
	 * (linger_release), so the overlays' unmount, which syncs the upper's
	 * filesystem (a disk flush per overlay), is off the remover's path. */
	if (s->linger_ok && s->init_pid > 0 && !s->c->degraded) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)s->init_pid);
		s->linger_ns = open(p, O_RDONLY | O_CLOEXEC);
	}
	signal_init(s);
}

static void teardown_reap(supervisor *s)
{
	if (s->init_pid > 0)
		(void)RETRY_EINTR(waitpid(s->init_pid, NULL, 0));
	if (s->old_init_pid > 0) /* replaced by a standby, not reaped yet */
		(void)RETRY_EINTR(waitpid(s->old_init_pid, NULL, 0));
	if (s->linger_ns < 0) /* else let go with the dead init's, after the reply */
		s->old_mnt_ns = safe_close(s->old_mnt_ns);
	if (s->ns_helper > 0) /* unmounting a replaced init's overlays */
		(void)RETRY_EINTR(waitpid(s->ns_helper, NULL, 0));
	startup_mark("teardown: init reaped");
	/* Without a pid namespace, init's death does not take its descendants
	 * with it; as their subreaper we find and kill them all. */
	if (s->c->degraded)
		kill_descendants();
}

static void teardown_cgroup(supervisor *s)
{
	devices_teardown(s->c, s->init_pid); /* CDI poststop hooks, device cgroup */
	if (s->cg) {
		(void)cgroup_destroy(s->cg, NULL);
		cgroup_free(s->cg);
		s->cg = NULL;
	}
	startup_mark("teardown: cgroup destroyed");
	char path[4200];
	snprintf(path, sizeof(path), "%s/ctl.sock", s->c->run_dir);
	(void)unlink(path);
}

static void teardown(supervisor *s)
{
	teardown_signal(s);
	teardown_reap(s);
	teardown_cgroup(s);
}

/* ---- egress proxy (network allow) ---------------------------------------- */

/* One JSON line per connection in $SBX_RUN/<id>/egress.log. */
static void egress_log_event(void *ud, json_t *event)
{
	supervisor *s = ud;
	if (s->egress_log < 0)
		return;
	char *line = json_dumps(event, JSON_COMPACT);
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n';
		(void)fd_write_all(s->egress_log, line, n + 1); /* O_APPEND: whole lines */
		free(line);
	}
}

/* proxy_opts.check: the plugins' on_egress (in a resolver thread). */
static int egress_plugin_check(void *ud, const char *kind, const char *host, int port, char *why, size_t cap)
{
	supervisor *s = ud;
	_cleanup_err_ sbx_err *e = NULL;
	if (plugin_env_egress(s->plugins, s->c->id, kind, host, port, &e) == 0)
		return 1;
	snprintf(why, cap, "%s", sbx_err_message(e));
	return 0;
}

static void *proxy_main(void *arg)
{
	supervisor *s = arg;
	proxy_opts o = PROXY_OPTS_INIT;
	o.stop_fd = s->proxy_stop;
	o.log = egress_log_event;
	o.ud = s;
	if (plugin_host_hooks(s->plugins) & PLUGIN_HOOK_EGRESS)
		o.check = egress_plugin_check;
	(void)proxy_serve(s->proxy_listen, s->allow, &o, NULL);
	return NULL;
}

/* The agent phase's allowlist (docs/secrets.md): the proxy thread is
 * stopped (connections of the setup phase end), the allowlist replaced and
 * the thread started again on the same listening socket, whose backlog keeps
 * what arrives meanwhile. */
static int proxy_swap(supervisor *s, const json_t *allow, sbx_err **err)
{
	_cleanup_strv_free_ char **v = json_to_strv(allow);
	egress_allowlist *al = NULL;
	if (!v || egress_allowlist_parse((const char *const *)v, &al, err) < 0)
		return v ? err_wrap(err, "agent phase network allowlist")
			 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	uint64_t one = 1, drain;
	(void)!write(s->proxy_stop, &one, sizeof(one));
	pthread_join(s->proxy_thread, NULL);
	(void)!read(s->proxy_stop, &drain, sizeof(drain));
	egress_allowlist_free(s->allow);
	s->allow = al;
	int r = pthread_create(&s->proxy_thread, NULL, proxy_main, s);
	if (r != 0) {
		s->proxy_running = false; /* no proxy: nothing gets out at all */
		return err_errnum(err, r, "restart the egress proxy");
	}
	return 0;
}

static int proxy_start(supervisor *s, sbx_err **err)
{
	if (s->proxy_listen < 0)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "no egress proxy socket from the environment");
	if (egress_allowlist_parse((const char *const *)s->c->network_allow, &s->allow, err) < 0)
		return err_wrap(err, "network allowlist");
	char p[4300];
	snprintf(p, sizeof(p), "%s/egress.log", s->c->run_dir);
	s->egress_log = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	s->proxy_stop = eventfd(0, EFD_CLOEXEC);
	if (s->proxy_stop < 0)
		return err_errno(err, "eventfd");
	int r = pthread_create(&s->proxy_thread, NULL, proxy_main, s);
	if (r != 0)
		return err_errnum(err, r, "start the egress proxy");
	s->proxy_running = true;
	return 0;
}

static void proxy_stop(supervisor *s)
{
	if (s->proxy_running) {
		uint64_t one = 1;
		(void)!write(s->proxy_stop, &one, sizeof(one));
		pthread_join(s->proxy_thread, NULL);
		s->proxy_running = false;
	}
	s->proxy_stop = safe_close(s->proxy_stop);
	s->proxy_listen = safe_close(s->proxy_listen);
	s->egress_log = safe_close(s->egress_log);
	egress_allowlist_free(s->allow);
	s->allow = NULL;
}

/* ---- phases (docs/secrets.md) ------------------------------------------------ */

/* setup -> agent, once. What later commands get is narrowed first (the
 * egress allowlist, timeouts), then init ends every process of the setup
 * phase and drops the secrets; when it answers, the cgroup limits are
 * lowered (nothing of the setup phase holds memory any more) and the client
 * gets init's reply. Requests that arrive meanwhile reach init after it. */
static bool phase_begin(supervisor *s, int conn, json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	if (!streq(json_str(m, "phase") ?: "", "agent"))
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"unknown phase '%s' (the only switch is to agent)", json_str(m, "phase") ?: "");
	else if (c->agent_phase || s->phase_pending)
		err_set(&e, SBX_E_CONFLICT, EALREADY,
			"the environment is already in the agent phase (phases only move forward)");
	else if (c->degraded)
		err_set(&e, SBX_E_UNAVAILABLE, EPERM,
			"phases need a pid namespace to end the setup phase's processes, and this host "
			"allows none");
	else if (s->freeze_conn >= 0)
		err_set(&e, SBX_E_CONFLICT, EBUSY,
			"a snapshot of this environment is in progress: switch after it");
	else if (s->n_waiters >= ARRAY_SIZE(s->waiters))
		err_set(&e, SBX_E_LIMIT_EXCEEDED, EAGAIN, "too many requests waiting for this environment");
	json_t *allow = json_object_get(m, "network_allow");
	if (!e && s->proxy_running && json_is_array(allow))
		(void)proxy_swap(s, allow, &e);
	if (!e) {
		json_t *l = json_object_get(m, "limits");
		c->timeout_ms = json_int(l, "timeout_ms", c->timeout_ms);
		c->output_bytes = json_int(l, "output_bytes", c->output_bytes);
		c->ttl_ms = json_int(l, "ttl_ms", c->ttl_ms);
		if (c->ttl_ms > 0 && s->ttl_fd < 0 &&
		    (s->ttl_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0)
			ep_add(s, s->ttl_fd);
		arm_ttl(s);
		if (json_send(s->init_sock, m, NULL, 0) < 0)
			err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment init is not answering");
	}
	if (e) {
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	standby_drop(s); /* built for the setup phase's walls */
	s->waiters[s->n_waiters++] = conn;
	s->phase_pending = true;
	s->phase_limits = json_incref(json_object_get(m, "limits"));
	return true;
}

static void phase_end(supervisor *s, json_t *reply)
{
	s->phase_pending = false;
	s->c->agent_phase = json_bool(reply, "ok", false);
	json_t *l = s->phase_limits;
	if (s->c->agent_phase && s->cg && json_is_object(l)) {
		json_t *cpus = json_object_get(l, "cpus");
		cgroup_limits lim = {.memory_bytes = json_int(l, "memory_bytes", 0),
				     .pids = json_int(l, "pids", 0),
				     .cpus = json_is_number(cpus) ? json_number_value(cpus) : 0};
		_cleanup_err_ sbx_err *e = NULL;
		if (cgroup_set_limits(s->cg, &lim, &e) < 0)
			json_object_set_new(reply, "limits_error", json_string(sbx_err_message(e)));
	}
	json_decref(s->phase_limits);
	s->phase_limits = NULL;
}

/* ---- start -------------------------------------------------------------- */

static void add_warning(supervisor *s, const char *fmt, ...) _printf_(2, 3);
static void add_warning(supervisor *s, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_array_append_new(s->warnings, json_string(buf));
}

/* A detached, read-only clone of host path `path`, idmapped through userns
 * `userns_fd` when >= 0. Falls back to no idmapping (with a warning) where
 * the filesystem does not support it. */
static int prepare_tree(supervisor *s, const char *path, int userns_fd, bool readonly, sbx_err **err)
{
	_cleanup_close_ int t = sys_open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (t < 0)
		return err_errno(err, "clone mount of '%s'", path);
	struct sbx_mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					       (readonly ? MOUNT_ATTR_RDONLY : 0)};
	if (userns_fd >= 0) {
		a.attr_set |= MOUNT_ATTR_IDMAP;
		a.userns_fd = (uint64_t)userns_fd;
		if (sys_mount_setattr(t, "", AT_EMPTY_PATH, &a) == 0)
			return TAKE_FD(t);
		add_warning(s, "idmapped mount of '%s' unavailable (%s): its files appear owned by nobody",
			    path, strerror(errno));
		a.attr_set &= ~(uint64_t)MOUNT_ATTR_IDMAP;
		a.userns_fd = 0;
	}
	if (sys_mount_setattr(t, "", AT_EMPTY_PATH, &a) < 0)
		return err_errno(err, "set attributes of '%s'", path);
	return TAKE_FD(t);
}

/* Sends "go" to the child (pid, on sock) with the lower and volume trees;
 * layer_dir is the directory whose upper/ and work/ it mounts (env_dir, or
 * a standby's: the child reaches "env_dir" through it only for those). */
/* *ret_cg_self: the child got the cgroup files to move itself in by
 * (cgroup_self_fds), so cgroup_attach leaves those groups to it. */
static int send_go(supervisor *s, pid_t pid, int sock, const char *layer_dir, bool *ret_cg_self,
		   sbx_err **err)
{
	env_config *c = s->c;
	int fds[FD_MSG_MAX_FDS];
	size_t n = 0;
	int r = -1;
	_cleanup_json_ json_t *m =
	    json_pack("{s:s,s:[],s:[],s:[]}", CTL_F_OP, CTL_OP_GO, "lowers", "volumes", "layers");
	_cleanup_close_ int userns = -1;
	if (!m)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (c->n_lowers + c->n_volumes + c->n_layers + 3 > FD_MSG_MAX_FDS)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "too many layers and volumes (at most %d)",
			       FD_MSG_MAX_FDS - 3);
	if (!c->rootless) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/user", (int)pid);
		userns = open(p, O_RDONLY | O_CLOEXEC);
		if (userns < 0)
			return err_errno(err, "open '%s'", p);
	}
	for (size_t i = 0; i < c->n_lowers; i++) {
		int idx = -1;
		if (!c->rootless) {
			int t = prepare_tree(s, c->lowers[i], userns, true, err);
			if (t < 0)
				goto out;
			idx = (int)n;
			fds[n++] = t;
		}
		json_array_append_new(json_object_get(m, "lowers"), json_integer(idx));
	}
	/* The host template's mask, the store's tree of it (mask.c): read-only
	 * and idmapped like the host directories. Without it (not built, or not
	 * cloneable here) the child replays the mask into its own tmpfs. */
	if (!c->rootless && c->mask && c->mask->tree) {
		_cleanup_err_ sbx_err *me = NULL;
		int t = prepare_tree(s, c->mask->tree, userns, true, &me);
		if (t >= 0) {
			json_object_set_new(m, "mask", json_integer((json_int_t)n));
			fds[n++] = t;
		}
	}
	/* Snapshot layers: 0-based ownership on disk, idmapped like the template. */
	for (size_t i = 0; i < c->n_layers; i++) {
		int idx = -1;
		if (!c->rootless) {
			int t = prepare_tree(s, c->layers[i], userns, true, err);
			if (t < 0)
				goto out;
			idx = (int)n;
			fds[n++] = t;
		}
		json_array_append_new(json_object_get(m, "layers"), json_integer(idx));
	}
	for (size_t i = 0; i < c->n_volumes; i++) {
		int idx = -1;
		if (!c->rootless) {
			struct stat st;
			if (stat(c->volumes[i].host, &st) < 0) {
				err_errno(err, "volume '%s'", c->volumes[i].host);
				goto out;
			}
			/* Idmap the volume so the environment's root reads and writes
			 * as the owner of the host directory: it then sees the volume
			 * as that owner's permissions say.
			 * A root-owned volume is idmapped too (host root appears as
			 * the environment's root, so a 0700 directory and its 0600
			 * files are readable), but always read-only, whatever was
			 * asked: a writable one would let the environment create
			 * setuid-root files, or change root's files, on the host.
			 * The mount is ro, nosuid and nodev: the kernel refuses
			 * every change through it (create, write, chmod, chown,
			 * setxattr), and no setuid bit on it takes effect. Nothing
			 * inside can make it writable: remounting needs CAP_SYS_ADMIN
			 * and the mount syscalls, which the environment loses before
			 * its first command (caps.c, seccomp) - the argument that
			 * already keeps the idmapped host tree of the `host` template
			 * read-only (README, "Volumes are idmapped"). */
			_cleanup_close_ int ns =
			    userns_make_idmap_ns(st.st_uid, st.st_gid, c->host_uid, c->host_gid, err);
			if (ns < 0)
				goto out;
			bool ro = c->volumes[i].readonly || st.st_uid == 0;
			if (st.st_uid == 0 && !c->volumes[i].readonly)
				add_warning(s,
					    "volume '%s' is owned by host root: it is mounted read-only (a "
					    "writable one would "
					    "let the environment create setuid-root files on the host); use "
					    "a directory "
					    "owned by an unprivileged user to write",
					    c->volumes[i].host);
			int t = prepare_tree(s, c->volumes[i].host, ns, ro, err);
			if (t < 0)
				goto out;
			idx = (int)n;
			fds[n++] = t;
		}
		json_array_append_new(json_object_get(m, "volumes"), json_integer(idx));
	}
	/* The environment's own directories, opened here with our (host)
	 * credentials: the child resolves everything under them through these
	 * descriptors, so SBX_ROOT and SBX_RUN may sit under a directory its
	 * uids cannot search (a `mktemp -d` parent, mode 0700). They are opened
	 * through /proc/<child>/root so that they name the child's copies of
	 * the mounts: it mounts on them, and the kernel refuses a mount point
	 * (or an overlay layer) that belongs to another mount namespace. */
	const char *dirs[2][2] = {{"run_dir", c->run_dir}, {"env_dir", layer_dir}};
	for (size_t i = 0; i < 2; i++) {
		char p[4400];
		snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, dirs[i][1]);
		int d = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (d < 0) {
			err_errno(err, "open '%s'", p);
			goto out;
		}
		json_object_set_new(m, dirs[i][0], json_integer((json_int_t)n));
		fds[n++] = d;
	}
	/* cgroup v1: the child moves itself (no RCU grace period to wait for,
	 * as a write of its pid from here has); if the files cannot be opened
	 * or do not fit, we move it as before. */
	*ret_cg_self = false;
	size_t room = FD_MSG_MAX_FDS - n < CGROUP_SELF_FDS_MAX ? FD_MSG_MAX_FDS - n : CGROUP_SELF_FDS_MAX;
	int nt = s->cg ? cgroup_self_fds(s->cg, fds + n, room) : 0;
	if (nt > 0) {
		json_t *a = json_array();
		for (int i = 0; a && i < nt; i++)
			json_array_append_new(a, json_integer((json_int_t)(n + (size_t)i)));
		json_object_set_new(m, CTL_F_CG_TASKS, a);
		n += (size_t)nt;
		*ret_cg_self = a != NULL;
	}
	r = json_send(sock, m, fds, n);
	if (r < 0)
		err_errnum(err, r, "start the environment");
out:
	for (size_t i = 0; i < n; i++)
		safe_close(fds[i]);
	return r;
}

/* A new init: clone, maps, trees, cgroup. *ret_pid, *ret_pidfd and
 * *ret_sock are set as soon as it exists (the caller kills it on failure);
 * on success it builds its root (its writable layer under layer_dir) while
 * we go on, and reports on *ret_sock (init_ready_read). */
/* sibling: called in a helper child of the supervisor (standby_build),
 * the new init is the supervisor's child all the same (CLONE_PARENT). */
static int init_spawn(supervisor *s, const char *layer_dir, bool sibling, pid_t *ret_pid, int *ret_pidfd,
		      int *ret_sock, sbx_err **err)
{
	env_config *c = s->c;
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return err_errno(err, "socketpair");
	int pidfd = -1;
	uint64_t ns = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;
	if (!streq(c->network, "open"))
		ns |= CLONE_NEWNET; /* open: the host's network, by request (flagged in inspect) */
	if (c->degraded) {
		/* No namespaces: we become the subreaper of everything the
		 * environment starts, so that teardown can find it all. */
		ns = 0;
		(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	}
	struct sbx_clone_args args = {
	    .flags = ns | CLONE_PIDFD | (sibling ? CLONE_PARENT : 0),
	    .pidfd = (uint64_t)(uintptr_t)&pidfd,
	    .exit_signal = sibling ? 0 : SIGCHLD, /* CLONE_PARENT: our parent's (SIGCHLD) */
	};
	/* Born in its v2 group (CLONE_INTO_CGROUP): no migration there, and on
	 * a v2-only host none at all. Kernels or setups that refuse it (before
	 * 5.7, a delegation that does not allow it) get the classic clone and
	 * the migration below. */
	int v2fd = s->cg ? cgroup_v2_fd(s->cg) : -1;
	bool into_cgroup = v2fd >= 0;
	if (into_cgroup) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)v2fd;
	}
	pid_t pid = sys_clone3(&args);
	if (pid < 0 && into_cgroup && errno != ENOSYS) {
		into_cgroup = false;
		args.flags &= ~CLONE_INTO_CGROUP;
		args.cgroup = 0;
		pid = sys_clone3(&args);
	}
	if (pid < 0)
		into_cgroup = false;
	if (pid < 0 && errno == ENOSYS)
		/* clone3 filtered (Docker's default seccomp profile, valgrind): the
		 * classic clone does the same here (fork-like, no new stack). */
		pid = sys_clone_fork((unsigned long)args.flags | SIGCHLD, &pidfd);
	if (pid < 0) {
		int e = errno;
		safe_close(sp[0]);
		safe_close(sp[1]);
		if (e == EPERM || e == EACCES || e == ENOSPC || e == EUSERS)
			return err_set(
			    err, SBX_E_UNAVAILABLE, e,
			    "create namespaces: %s (unprivileged user namespaces are disabled or exhausted "
			    "on "
			    "this host; run as root, or allow them with sysctl user.max_user_namespaces / "
			    "kernel.apparmor_restrict_unprivileged_userns=0)",
			    strerror(e));
		return err_errnum(err, e, "create namespaces");
	}
	if (pid == 0) {
		safe_close(sp[0]);
		setup_child(c, sp[1]);
	}
	safe_close(sp[1]);
	*ret_sock = sp[0];
	*ret_pid = pid;
	*ret_pidfd = pidfd;
	startup_mark("supervisor: cloned");
	if (!c->degraded && userns_write_maps(pid, c, err) < 0)
		return -1;
	startup_mark("supervisor: maps written");
	log_debug("supervisor: cloned, maps written");
	bool cg_self = false;
	if (send_go(s, pid, sp[0], layer_dir, &cg_self, err) < 0)
		return -1;
	startup_mark("supervisor: trees prepared, go sent");
	/* Joining a cgroup can wait for an RCU grace period (milliseconds on
	 * cgroup v1): do it while the child builds its root, and tell it when
	 * it is done; it enters its cgroup namespace and runs nothing of the
	 * user's before that. */
	startup_mark(into_cgroup ? "supervisor: attach begin (born in its v2 group)"
				 : "supervisor: attach begin");
	if (s->cg && cgroup_attach(s->cg, pid, into_cgroup, cg_self, err) < 0)
		return -1;
	startup_mark("supervisor: cgroup_attach done");
	if (devcg_attach(c, pid, s->cg ? cgroup_v2_fd(s->cg) : -1, s->warnings, err) <
	    0) /* CDI devices only */
		return -1;
	startup_mark("supervisor: attached to cgroup");
	log_debug("supervisor: go sent, attached");
	_cleanup_json_ json_t *att = json_pack("{s:s}", CTL_F_OP, CTL_OP_ATTACHED);
	if (!att || json_send(sp[0], att, NULL, 0) < 0)
		return err_set(err, SBX_E_INTERNAL, EPIPE, "environment init died during setup");
	return 0;
}

/* Waits for the child's verdict on sock: ready (*ret_m; with network allow
 * it carries the proxy's listening socket, *ret_proxy), or the step that
 * failed. */
static int init_ready_read(int sock, json_t **ret_m, int *ret_proxy, sbx_err **err)
{
	_cleanup_json_ json_t *m = NULL;
	int pfd[1] = {-1};
	size_t npfd = 1;
	int r = json_recv(sock, &m, pfd, &npfd);
	startup_mark("supervisor: child ready");
	if (r > 0 && npfd == 1)
		*ret_proxy = pfd[0];
	if (r <= 0)
		return err_set(err, SBX_E_INTERNAL, r ? -r : EPIPE, "environment init died during setup");
	ctl_init_event e;
	if (ctl_init_event_decode(m, &e) < 0)
		e = (ctl_init_event){.kind = CTL_EVK_UNKNOWN, .id = -1};
	if (e.kind == CTL_EVK_ERROR)
		return err_set(err, err_code_from_name(e.code), e.err, "set up environment: %s",
			       e.message ?: "unknown error");
	*ret_m = TAKE_PTR(m);
	return 0;
}

/* What a ready init's report gives the environment: its Landlock ABI, its
 * warnings and those of the walls, the egress proxy. */
static int init_ready_apply(supervisor *s, const json_t *m, sbx_err **err)
{
	env_config *c = s->c;
	ctl_init_event e;
	if (ctl_init_event_decode(m, &e) < 0)
		e = (ctl_init_event){.kind = CTL_EVK_UNKNOWN, .id = -1};
	s->landlock_abi = e.landlock_abi;
	json_t *cw;
	size_t wi;
	json_array_foreach(e.warnings, wi, cw) add_warning(s, "%s", json_string_value(cw) ?: "");
	if (streq(c->network, "allow") && proxy_start(s, err) < 0)
		return -1;
	if (streq(c->network, "open"))
		add_warning(
		    s,
		    "network open: the environment shares the host's network stack (no network isolation)");
	if (s->landlock_abi == 0)
		add_warning(s, "Landlock unavailable on this kernel: filesystem second wall missing");
	return 0;
}

static int listen_ctl(supervisor *s, sbx_err **err);
/* listen: the first start also makes the control socket, while init builds
 * its root (the socket's bind is an inode on SBX_RUN's filesystem: off the
 * critical path there). */
static int start_init(supervisor *s, bool listen, sbx_err **err)
{
	_cleanup_json_ json_t *m = NULL;
	if (init_spawn(s, s->c->env_dir, false, &s->init_pid, &s->init_pidfd, &s->init_sock, err) < 0 ||
	    (listen && listen_ctl(s, err) < 0) ||
	    init_ready_read(s->init_sock, &m, &s->proxy_listen, err) < 0)
		return -1;
	return init_ready_apply(s, m, err);
}

static int listen_ctl(supervisor *s, sbx_err **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", s->c->run_dir);
	if (n >= (int)sizeof(sa.sun_path))
		return err_set(err, SBX_E_INVALID_ARGUMENT, ENAMETOOLONG, "socket path too long");
	(void)unlink(sa.sun_path);
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0)
		return err_errno(err, "socket");
	mode_t old = umask(0077);
	int r = bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0)
		return err_errno(err, "bind '%s'", sa.sun_path);
	if (listen(s->listen_fd, 128) < 0)
		return err_errno(err, "listen");
	return 0;
}

/* ---- restart in place (sbx restore; ctl_proto.h CTL_OP_RESTART) ------------ */

/* Step 1: every process ends, as at a stop (init killed: its pid namespace
 * takes the rest, and the mount namespace that holds the overlay on the
 * writable layer dies with the last of them, before waitpid returns), but
 * the supervisor, its cgroup (and limits), lock, socket and uid range stay.
 * Refused, with nothing changed, where a new supervisor is the safe way.
 * Returns whether conn is kept (it sends "start" next). */
static bool restart_end(supervisor *s, int conn)
{
	_cleanup_err_ sbx_err *e = NULL;
	/* What the restart keeps must be what a new supervisor would build
	 * (the client checks the record too: secrets, whose values were wiped
	 * here after the start, and the template). */
	if (s->c->degraded || s->plugins || s->c->cdi || s->c->disk_bytes || s->c->agent_phase)
		err_set(&e, SBX_E_UNAVAILABLE, EPERM,
			"this environment restarts with a new supervisor (no pid namespace, plugins, "
			"devices, a disk quota or the agent phase)");
	else if (s->restart_conn >= 0)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "a restore of this environment is in progress");
	else if (s->freeze_conn >= 0)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "a snapshot of this environment is in progress");
	else if (s->phase_pending)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "the environment is switching phases");
	if (e) {
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	startup_mark("restart: begin");
	standby_drop(s); /* another snapshot, or none was ready */
	fail_execs(s, "restored");
	resume_env(s); /* sbx pause's freeze: a v1-frozen task does not even die */
	thaw(s);
	proxy_stop(s); /* its listening socket is in the old network namespace */
	stop_recorder(s, NULL);
	kill_init(s);
	s->init_pid = -1;
	s->init_pidfd = safe_close(s->init_pidfd);
	ep_del(s, s->init_sock);
	s->init_sock = safe_close(s->init_sock);
	startup_mark("restart: init reaped");
	restart_forget(s);
	s->restart_conn = conn;
	s->loop_reset = true; /* descriptors of this batch may be closed or reused */
	send_json(conn, json_pack("{s:s}", CTL_F_EV, CTL_EV_ENDED), NULL, 0);
	return true;
}

/* Background processes ended with init: their records say so, as a
 * restore with a new supervisor leaves them; clients waiting for init's
 * replies are told. */
static void restart_forget(supervisor *s)
{
	while (s->n_execs > 0) {
		sup_exec *x = &s->execs[s->n_execs - 1];
		if (x->bg)
			sup_proc_exited(x->bg, SIGKILL, false, false, "environment_stopped");
		drop_exec(s, x);
	}
	for (size_t i = 0; i < s->n_waiters; i++)
		if (s->waiters[i] >= 0) {
			_cleanup_err_ sbx_err *we = NULL;
			err_set(&we, SBX_E_UNAVAILABLE, ESRCH, "the environment was restored meanwhile");
			send_json(s->waiters[i], err_json(we), NULL, 0);
			close_conn(s, s->waiters[i]);
		}
	s->n_waiters = 0;
}

/* Threads of this process (1 unless a name resolver of the proxy that was
 * stopped has not returned yet), -1 if unknown. */
static int thread_count(void)
{
	_cleanup_free_ char *st = NULL;
	if (fs_read_file("/proc/self/status", 1 << 16, &st, NULL) < 0)
		return -1;
	const char *t = strstr(st, "\nThreads:");
	return t ? atoi(t + 10) : -1;
}

/* A layer "start" names must be a tree of the store this environment is
 * in ($SBX_ROOT/layers/..., env_dir being $SBX_ROOT/envs/<id>), never just
 * any host directory. */
static bool layer_path_ok(const env_config *c, const char *p)
{
	const char *slash = strrchr(c->env_dir, '/');
	size_t n = slash ? (size_t)(slash - c->env_dir) : 0;
	if (n < 5 || strncmp(c->env_dir + n - 5, "/envs", 5) != 0)
		return false;
	n -= 5;
	return strncmp(p, c->env_dir, n) == 0 && strncmp(p + n, "/layers/", 8) == 0 && !strstr(p + n, "/.");
}

/* Step 2: a new init on the new layers, by the same start_init a cold
 * start runs (same namespaces, maps, trees, cgroup, setup sequence, walls).
 * On failure the environment is over (the client starts a new supervisor).
 * conn is answered; the caller closes it. */
static void restart_start(supervisor *s, int conn, const json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	s->restart_conn = -1;
	json_t *lj = json_object_get(m, "layers"), *v;
	size_t i, n = json_array_size(lj);
	_cleanup_strv_free_ char **layers = json_is_array(lj) && n < FD_MSG_MAX_FDS ? json_to_strv(lj) : NULL;
	bool bad = !layers;
	json_array_foreach(lj, i, v) bad |= !json_is_string(v) || !layer_path_ok(c, json_string_value(v));
	if (bad)
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "start: layers must be trees of the store");
	/* clone without exec copies the memory, not the other threads: no lock
	 * a thread holds (malloc's) may be copied held. */
	for (int k = 0; !e && thread_count() != 1; k++)
		if (k == 200)
			err_set(&e, SBX_E_UNAVAILABLE, EBUSY,
				"start: a thread of the egress proxy is still running");
		else
			usleep(1000);
	if (!e) {
		strv_free(c->layers);
		c->layers = TAKE_PTR(layers);
		c->n_layers = n;
		while (json_array_size(s->warnings) > s->n_base_warnings)
			json_array_remove(s->warnings, json_array_size(s->warnings) - 1);
		s->landlock_abi = 0;
		startup_mark("restart: start");
		if (start_init(s, false, &e) == 0)
			ep_add(s, s->init_sock);
	}
	if (e) {
		send_json(conn, err_json(e), NULL, 0);
		begin_stop(s, -1);
		return;
	}
	s->loop_reset = true;
	arm_ttl(s); /* idle TTL and idle suspend count from now */
	startup_mark("restart: ready");
	send_json(conn,
		  json_pack("{s:s,s:i,s:i,s:O}", CTL_F_EV, CTL_EV_RESTARTED, "init_pid", (int)s->init_pid,
			    CTL_F_LANDLOCK_ABI, s->landlock_abi, CTL_F_WARNINGS, s->warnings),
		  NULL, 0);
	const char *sid = json_str(m, "snapshot_id");
	if (sid && json_bool(m, "standby", false))
		standby_defer(s, strdup(sid));
}

/* ---- standby init (docs/warm.md "Restore"; CTL_OP_RESTORE_STANDBY) -------- */

/* Memory a standby init is charged (its few pages, and the kernel objects
 * of its namespaces and mounts: docs/warm.md), added to the environment's
 * memory limit while one exists, as its one process is to the pids limit:
 * the commands get what they get without a standby. */
#define SUP_STANDBY_MEMORY (8LL << 20)

/* How long a restore by the standby waits for the replaced init's
 * processes to be gone (they were sent SIGKILL: only one stuck in the
 * kernel takes longer; the restore then answers without waiting more). */
#define SUP_OLD_INIT_WAIT_MS 2000

/* How long the next standby waits for the first command after a restore
 * before it is built anyway (standby_defer). */
#define SUP_STANDBY_DEFER_MS 100

static void standby_limits(supervisor *s, bool with)
{
	cgroup_limits l = s->c->limits;
	if (with && l.pids > 0)
		l.pids += 1;
	if (with && l.memory_bytes > 0)
		l.memory_bytes += SUP_STANDBY_MEMORY;
	_cleanup_err_ sbx_err *e = NULL;
	if (s->cg && (l.pids > 0 || l.memory_bytes > 0) && cgroup_set_limits(s->cg, &l, &e) < 0)
		log_debug("standby: limits: %s", sbx_err_message(e));
}

/* $SBX_ROOT/envs/<id>/standby: the standby's own upper/ and work/. */
static void standby_dir(const supervisor *s, const char *sub, char *buf, size_t n)
{
	snprintf(buf, n, "%s/standby%s%s", s->c->env_dir, sub ? "/" : "", sub ?: "");
}

/* The standby builds at SCHED_IDLE (root only: an unprivileged process
 * cannot leave it again), so that its root's assembly takes no CPU from the
 * environment's commands; standby_boost gives it the supervisor's own
 * policy back (what a cold start's init inherits) when a restore needs it,
 * false if it could not (the standby then must not be used). */
static void standby_idle(pid_t pid)
{
	struct sched_param sp = {0};
	if (geteuid() == 0)
		(void)sched_setscheduler(pid, SCHED_IDLE, &sp);
}

static bool standby_boost(supervisor *s)
{
	struct sched_param sp = {0};
	int pol = sched_getscheduler(0);
	if (pol == SCHED_FIFO || pol == SCHED_RR)
		(void)sched_getparam(0, &sp);
	/* A restore waits: the helper too, if it has not reported yet (the
	 * clone, the maps and the trees are its; starved at SCHED_IDLE on a
	 * busy host they took most of such a wait). It goes back to
	 * SCHED_IDLE itself once it has reported (standby_build). */
	if (pol >= 0 && s->sb_helper > 0)
		(void)sched_setscheduler(s->sb_helper, pol, &sp);
	if (pol < 0 || sched_getscheduler(s->sb_pid) == pol)
		return pol >= 0;
	return sched_setscheduler(s->sb_pid, pol, &sp) == 0;
}

/* Ends the standby (killed and reaped: it is in the environment's cgroup)
 * and forgets it; its directory stays until the next one is built. */
static void standby_drop(supervisor *s)
{
	if (s->sb_defer_fd >= 0) {
		ep_del(s, s->sb_defer_fd);
		s->sb_defer_fd = safe_close(s->sb_defer_fd);
		s->loop_reset = true;
	}
	s->sb_deferred = mfree(s->sb_deferred);
	if (!s->stopping) /* no helper will take it: unmounted here (stopping: teardown's) */
		s->old_mnt_ns = safe_close(s->old_mnt_ns);
	if (s->sb_sock < 0 && s->sb_pid <= 0 && s->sb_helper_fd < 0 && !s->sb_snapshot)
		return;
	if (s->sb_helper > 0) { /* what it spawned gets no "go" from anyone and fails */
		(void)kill(s->sb_helper, SIGKILL);
		(void)RETRY_EINTR(waitpid(s->sb_helper, NULL, 0));
		s->sb_helper = -1;
	}
	if (s->sb_helper_fd >= 0) {
		ep_del(s, s->sb_helper_fd);
		s->sb_helper_fd = safe_close(s->sb_helper_fd);
	}
	json_decref(s->sb_warnings);
	s->sb_warnings = NULL;
	if (s->sb_pidfd >= 0)
		(void)sys_pidfd_send_signal(s->sb_pidfd, SIGKILL, NULL, 0);
	else if (s->sb_pid > 0)
		(void)kill(s->sb_pid, SIGKILL);
	if (s->sb_pid > 0)
		(void)RETRY_EINTR(waitpid(s->sb_pid, NULL, 0));
	if (s->sb_waiter >= 0) { /* refused: it takes the two steps */
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_UNAVAILABLE, ENOENT, "the standby init failed");
		send_json(s->sb_waiter, err_json(e), NULL, 0);
		close_conn(s, s->sb_waiter);
		s->sb_waiter = -1;
	}
	json_decref(s->sb_waiter_m);
	s->sb_waiter_m = NULL;
	if (s->sb_sock >= 0)
		ep_del(s, s->sb_sock);
	s->sb_sock = safe_close(s->sb_sock);
	s->sb_pidfd = safe_close(s->sb_pidfd);
	s->sb_proxy = safe_close(s->sb_proxy);
	s->sb_pid = -1;
	json_decref(s->sb_ready);
	s->sb_ready = NULL;
	free(s->sb_snapshot);
	s->sb_snapshot = NULL;
	standby_limits(s, false);
	s->loop_reset = true; /* sb_sock may be in this batch's events */
	startup_mark("standby: dropped");
}

/* Starts a standby init for the current layers (c->layers, those of
 * snapshot sid) by the init_spawn a cold start runs, on an empty writable
 * layer of its own; its "ready" comes as an event (standby_event). Where
 * it cannot be built as a cold start would build it (network allow: the
 * proxy's thread would be running at the clone; no pid namespace), or
 * fails, there is simply none. */
static void standby_build(supervisor *s, const char *sid)
{
	env_config *c = s->c;
	_cleanup_err_ sbx_err *e = NULL;
	if (c->degraded || streq(c->network, "allow") || s->plugins || c->cdi || c->disk_bytes ||
	    c->agent_phase || s->stopping || thread_count() != 1)
		return;
	startup_mark("standby: build begin");
	char d[4300];
	standby_dir(s, NULL, d, sizeof(d));
	(void)fs_rm_rf(d); /* a dropped one's: a few directories */
	startup_mark("standby: directory emptied");
	static const char *const subs[] = {NULL, "upper", "work"};
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		standby_dir(s, subs[i], d, sizeof(d));
		if ((mkdir(d, 0755) < 0 && errno != EEXIST) ||
		    (i > 0 && !c->rootless && chown(d, c->host_uid, c->host_gid) < 0))
			return;
	}
	if (!(s->sb_snapshot = strdup(sid)))
		return;
	standby_limits(s, true);
	standby_dir(s, NULL, d, sizeof(d));
	/* The clone (of every namespace: milliseconds on a busy host), the maps,
	 * the trees and the cgroup are a helper's, a child of ours that exits
	 * once it has reported: our loop answers the environment's commands
	 * meanwhile. The new init is our child (CLONE_PARENT). */
	int rp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rp) < 0) {
		standby_drop(s);
		return;
	}
	pid_t h = fork();
	if (h == 0) {
		safe_close(rp[0]);
		standby_idle(0); /* the helper, and what it clones, from the start */
		size_t nw = json_array_size(s->warnings);
		pid_t pid = -1;
		int pidfd = -1, sock = -1;
		int r = init_spawn(s, d, true, &pid, &pidfd, &sock, &e);
		json_t *w = json_array();
		for (size_t i = nw; w && i < json_array_size(s->warnings); i++)
			json_array_append(w, json_array_get(s->warnings, i));
		json_t *rep =
		    json_pack("{s:i,s:b,s:o}", CTL_F_PID, (int)pid, CTL_F_OK, r == 0, CTL_F_WARNINGS, w);
		(void)json_send(rp[1], rep, r == 0 ? &sock : NULL, r == 0 ? 1 : 0);
		/* The replaced init's mount namespace, if we hold the last
		 * reference: its overlays are unmounted here, at SCHED_IDLE
		 * (again, if a waiting restore lifted us out of it), after the
		 * report (the supervisor does not wait for us). */
		standby_idle(0);
		safe_close(s->old_mnt_ns);
		_exit(0);
	}
	safe_close(rp[1]);
	if (h > 0) /* the helper's copy is now the namespace's last reference */
		s->old_mnt_ns = safe_close(s->old_mnt_ns);
	if (h < 0) {
		safe_close(rp[0]);
		standby_drop(s);
		return;
	}
	s->sb_helper = h;
	s->sb_helper_fd = rp[0];
	ep_add(s, s->sb_helper_fd);
	startup_mark("standby: helper forked");
}

/* After a restore by the standby, the next one is built once the first
 * command after it has been served (or SUP_STANDBY_DEFER_MS without one, or
 * at once when a restore asks for it): its construction (a clone of every
 * namespace, the root's assembly) shares the machine with whatever runs,
 * and at SCHED_IDLE still delayed the command that follows a restore
 * 1.5-3x (docs/BENCHMARKS.md). Takes sid. */
static void standby_defer(supervisor *s, char *sid)
{
	struct itimerspec once = {
	    .it_value = {SUP_STANDBY_DEFER_MS / 1000, (SUP_STANDBY_DEFER_MS % 1000) * 1000000L}};
	free(s->sb_deferred);
	s->sb_deferred = sid;
	if (!sid)
		return;
	if (s->sb_defer_fd < 0 &&
	    (s->sb_defer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0)
		ep_add(s, s->sb_defer_fd);
	if (s->sb_defer_fd < 0 || timerfd_settime(s->sb_defer_fd, 0, &once, NULL) < 0)
		standby_deferred_start(s); /* no timer: now */
}

/* Starts the deferred standby (standby_defer), if one waits. */
static void standby_deferred_start(supervisor *s)
{
	_cleanup_free_ char *sid = TAKE_PTR(s->sb_deferred);
	if (s->sb_defer_fd >= 0) {
		ep_del(s, s->sb_defer_fd);
		s->sb_defer_fd = safe_close(s->sb_defer_fd);
		s->loop_reset = true;
	}
	if (sid)
		standby_build(s, sid);
	s->old_mnt_ns = safe_close(s->old_mnt_ns); /* no helper took it: unmounted here */
}

/* The helper reported: the standby exists and builds its root (its
 * "ready" comes on sb_sock), or it could not be spawned (dropped). */
static void standby_spawned(supervisor *s)
{
	int fds[1] = {-1};
	size_t n = 1;
	_cleanup_json_ json_t *m = NULL;
	int r = json_recv(s->sb_helper_fd, &m, fds, &n);
	/* It exits after this, after unmounting a replaced init's overlays
	 * if it was given them (then SIGCHLD or teardown reaps it). */
	if (RETRY_EINTR(waitpid(s->sb_helper, NULL, WNOHANG)) == 0) {
		if (s->ns_helper > 0) /* an earlier one, still unmounting */
			(void)RETRY_EINTR(waitpid(s->ns_helper, NULL, 0));
		s->ns_helper = s->sb_helper;
	}
	s->sb_helper = -1;
	ep_del(s, s->sb_helper_fd);
	s->sb_helper_fd = safe_close(s->sb_helper_fd);
	pid_t pid = r > 0 ? (pid_t)json_int(m, CTL_F_PID, -1) : -1;
	if (pid > 0) /* our child, not reaped: the pid is its own */
		s->sb_pid = pid;
	if (r <= 0 || n != 1 || !json_bool(m, CTL_F_OK, false) || pid <= 0 ||
	    (s->sb_pidfd = sys_pidfd_open(pid, 0)) < 0) {
		if (n == 1)
			safe_close(fds[0]);
		standby_drop(s);
		return;
	}
	s->sb_sock = fds[0];
	s->sb_warnings = json_incref(json_object_get(m, CTL_F_WARNINGS));
	ep_add(s, s->sb_sock);
	if (s->sb_waiter >= 0) /* a restore waits for it */
		(void)standby_boost(s);
	startup_mark("standby: spawned, building");
}

/* The standby reported: ready (kept), or failed or died (dropped). */
static void standby_event(supervisor *s)
{
	_cleanup_err_ sbx_err *e = NULL;
	json_t *m = NULL;
	if (s->sb_ready || init_ready_read(s->sb_sock, &m, &s->sb_proxy, &e) < 0) {
		standby_drop(s);
		return;
	}
	s->sb_ready = m;
	startup_mark("standby: ready");
	if (s->sb_waiter >= 0) { /* a restore waited for it */
		int conn = s->sb_waiter;
		_cleanup_json_ json_t *req = TAKE_PTR(s->sb_waiter_m);
		s->sb_waiter = -1;
		if (!standby_restore(s, conn, req))
			close_conn(s, conn);
	}
}

/* A trash name the client gave: one component, of the reclaimer's form. */
static bool trash_name_ok(const char *n)
{
	return n && strncmp(n, ".trash-", 7) == 0 && !strchr(n, '/') && strlen(n) < 200;
}

/* Renames for the switch: from[i] -> to[i], in order, undone on failure. */
static int standby_renames(char (*from)[4400], char (*to)[4400], size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (rename(from[i], to[i]) < 0) {
			int r = -errno;
			while (i-- > 0)
				(void)rename(to[i], from[i]);
			return r;
		}
	return 0;
}

/* A restore to the snapshot the standby was built for, in one step
 * (ctl_proto.h CTL_OP_RESTORE_STANDBY). Returns whether conn is kept (a
 * standby still building answers it when ready); false: conn is answered,
 * the caller closes it. */
static bool standby_restore(supervisor *s, int conn, const json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	const char *sid = json_str(m, "snapshot_id");
	json_t *tr = json_object_get(m, "trash");
	const char *t0 = json_string_value(json_array_get(tr, 0)),
		   *t1 = json_string_value(json_array_get(tr, 1));
	if (s->sb_deferred && sid && streq(sid, s->sb_deferred))
		standby_deferred_start(s); /* no command since the last restore: now, and wait */
	if (!trash_name_ok(t0) || !trash_name_ok(t1) || streq(t0, t1))
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "restore_standby: bad trash names");
	else if ((s->sb_pid > 0 || s->sb_helper_fd >= 0) && !s->sb_ready && sid &&
		 streq(sid, s->sb_snapshot ?: "") && s->sb_waiter < 0) {
		/* Still building (milliseconds): answered once it is ready. */
		(void)standby_boost(s);
		s->sb_waiter = conn;
		s->sb_waiter_m = json_deep_copy(m);
		return s->sb_waiter_m != NULL || (s->sb_waiter = -1, false);
	} else if (!s->sb_ready || !sid || !streq(sid, s->sb_snapshot ?: ""))
		err_set(&e, SBX_E_UNAVAILABLE, ENOENT, "no standby init ready for this snapshot");
	else if (s->restart_conn >= 0 || s->freeze_conn >= 0 || s->phase_pending || s->stopping)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "the environment is busy (restore, snapshot or phase)");
	else if (!standby_boost(s)) {
		standby_drop(s);
		err_set(&e, SBX_E_UNAVAILABLE, EPERM, "the standby init's scheduling could not be restored");
	}
	/* upper/ and work/ to the trash, the standby's in their place (the
	 * overlays hold their directories, not their names). */
	char from[4][4400], to[4][4400];
	const char *envs_end = strrchr(c->env_dir, '/');
	int envs_len = envs_end ? (int)(envs_end - c->env_dir) : 0;
	snprintf(from[0], sizeof(from[0]), "%s/upper", c->env_dir);
	snprintf(to[0], sizeof(to[0]), "%.*s/%s", envs_len, c->env_dir, t0 ?: "");
	snprintf(from[1], sizeof(from[1]), "%s/work", c->env_dir);
	snprintf(to[1], sizeof(to[1]), "%.*s/%s", envs_len, c->env_dir, t1 ?: "");
	standby_dir(s, "upper", from[2], sizeof(from[2]));
	snprintf(to[2], sizeof(to[2]), "%s", from[0]);
	standby_dir(s, "work", from[3], sizeof(from[3]));
	snprintf(to[3], sizeof(to[3]), "%s", from[1]);
	int r = e ? 0 : standby_renames(from, to, 4);
	if (r < 0)
		err_errnum(&e, r, "restore_standby: switch the writable layer");
	if (e) {
		send_json(conn, err_json(e), NULL, 0);
		return false;
	}
	startup_mark("standby: switch begin");
	fail_execs(s, "restored");
	resume_env(s); /* sbx pause's freeze: a v1-frozen task does not even die */
	thaw(s);
	stop_recorder(s, NULL);
	/* The active init ends, and every process of its pid namespace with
	 * it: gone (not alive in our cgroup, where they would count against
	 * the limits and take the commands' CPU) when we answer, up to
	 * SUP_OLD_INIT_WAIT_MS (a process stuck in the kernel; SIGCHLD reaps
	 * it later, teardown waits for it). Its mount namespace is held
	 * first: its last process's exit would otherwise unmount the
	 * overlays, which syncs the upper's filesystem (a disk flush per
	 * overlay), in the next command's way; the next standby's helper
	 * lets it go (standby_build). */
	if (s->old_init_pid > 0)
		(void)RETRY_EINTR(waitpid(s->old_init_pid, NULL, 0));
	s->old_mnt_ns = safe_close(s->old_mnt_ns); /* no helper took it: here, then */
	if (s->init_pid > 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)s->init_pid); /* our child, not reaped */
		s->old_mnt_ns = open(p, O_RDONLY | O_CLOEXEC);
	}
	if (s->init_pidfd >= 0)
		(void)sys_pidfd_send_signal(s->init_pidfd, SIGKILL, NULL, 0);
	else if (s->init_pid > 0)
		(void)kill(s->init_pid, SIGKILL);
	s->old_init_pid = s->init_pid;
	/* Waited for below, before the answer: its end overlaps the switch. */
	_cleanup_close_ int old_pidfd = TAKE_FD(s->init_pidfd);
	ep_del(s, s->init_sock);
	safe_close(s->init_sock);
	restart_forget(s);
	/* The standby is init. */
	s->init_pid = s->sb_pid;
	s->init_pidfd = s->sb_pidfd;
	s->init_sock = s->sb_sock;
	s->sb_pid = -1, s->sb_pidfd = s->sb_sock = -1;
	ep_add(s, s->init_sock);
	while (json_array_size(s->warnings) > s->n_base_warnings)
		json_array_remove(s->warnings, json_array_size(s->warnings) - 1);
	s->landlock_abi = 0;
	json_t *w;
	size_t wi;
	json_array_foreach(s->sb_warnings, wi, w) add_warning(s, "%s", json_string_value(w) ?: "");
	json_decref(s->sb_warnings);
	s->sb_warnings = NULL;
	_cleanup_json_ json_t *ready = TAKE_PTR(s->sb_ready);
	(void)init_ready_apply(s, ready, NULL); /* no proxy: network allow has no standby */
	_cleanup_free_ char *snap_id = TAKE_PTR(s->sb_snapshot);
	standby_limits(s, false);
	s->loop_reset = true;
	arm_ttl(s);
	if (old_pidfd >= 0) {
		struct pollfd pf = {.fd = old_pidfd, .events = POLLIN};
		if (RETRY_EINTR(poll(&pf, 1, SUP_OLD_INIT_WAIT_MS)) == 1 &&
		    RETRY_EINTR(waitpid(s->old_init_pid, NULL, WNOHANG)) == s->old_init_pid)
			s->old_init_pid = -1;
	}
	startup_mark("standby: the replaced init's processes are gone");
	startup_mark("standby: switched");
	send_json(conn,
		  json_pack("{s:s,s:i,s:i,s:O,s:b}", CTL_F_EV, CTL_EV_RESTARTED, "init_pid", (int)s->init_pid,
			    CTL_F_LANDLOCK_ABI, s->landlock_abi, CTL_F_WARNINGS, s->warnings, "standby", 1),
		  NULL, 0);
	standby_defer(s, TAKE_PTR(snap_id));
	return false;
}

/* Tells the creator how the start went; false if it could not be told
 * (its end of the pipe is closed: the creator is gone). */
static bool report(int fd, json_t *m)
{
	_cleanup_free_ char *t = json_dumps(m, JSON_COMPACT);
	bool told = t && fd_write_all(fd, t, strlen(t)) >= 0;
	json_decref(m);
	safe_close(fd);
	return told;
}

_noreturn_ static void supervisor_main(env_config *c, int ready_fd)
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
	s->sb_pid = -1;
	s->old_init_pid = -1;
	s->ns_helper = -1;
	s->old_mnt_ns = -1;
	s->sb_defer_fd = -1;
	s->sb_pidfd = -1;
	s->sb_sock = -1;
	s->sb_proxy = -1;
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
		add_warning(s, "%s", *w);

	/* The creator took $SBX_RUN/<id>/lock before forking us; we hold it
	 * (fd 4) for our whole life: it says "alive" to gc and to the CLI. */
	/* Plugins first: their host is cloned while we are single-threaded and
	 * hold nothing of the environment yet; on_create may veto the create or
	 * lower limits that the cgroup below then enforces. */
	if (plugin_env_create(c, &s->plugins, &s->plugin_limits, &e) < 0)
		goto fail;
	if ((plugin_host_hooks(s->plugins) & PLUGIN_HOOK_EGRESS) && streq(c->network, "open"))
		add_warning(
		    s, "network open bypasses the egress proxy: plugins' on_egress hooks see no connection");
	_cleanup_free_ char *missing = NULL;
	if (cgroup_create(c->id, &c->limits, &s->cg, &missing, &e) < 0) {
		if (!c->rootless)
			goto fail;
		add_warning(s, "%s", sbx_err_message(e));
		sbx_err_free(e);
		e = NULL;
	} else if (missing)
		add_warning(s, "limits not enforced on this host: %s", missing);
	startup_mark("supervisor: plugins, cgroup created");
	log_debug("supervisor: cgroup created");
	s->n_base_warnings = json_array_size(s->warnings); /* a restart's start gives the rest again */
	if (start_init(s, true, &e) < 0 || cdi_hooks_create(c, s->init_pid, s->warnings, &e) < 0)
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
	ep_add(s, s->listen_fd);
	ep_add(s, s->init_sock);
	ep_add(s, s->sig_fd);
	/* Every few seconds: does our environment still exist? If its state
	 * was deleted behind our back (rm -rf of the store), nobody could ever
	 * reach or stop us: end instead of running forever. */
	int watch_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec every = {.it_interval = {5, 0}, .it_value = {5, 0}};
	if (watch_fd >= 0 && timerfd_settime(watch_fd, 0, &every, NULL) == 0)
		ep_add(s, watch_fd);
	if (c->ttl_ms > 0 && (s->ttl_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0) {
		ep_add(s, s->ttl_fd);
		arm_ttl(s);
	}
	if (c->idle_suspend_ms > 0 &&
	    (s->idle_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) >= 0) {
		ep_add(s, s->idle_fd);
		arm_idle(s);
	}
	startup_mark("supervisor: listening, event loop");
	log_debug("supervisor: ready");
	json_t *ready =
	    json_pack("{s:b,s:i,s:i,s:i,s:O}", "ok", 1, "supervisor_pid", (int)getpid(), "init_pid",
		      (int)s->init_pid, "landlock_abi", s->landlock_abi, "warnings", s->warnings);
	if (ready && s->plugin_limits)
		json_object_set(ready, "limits", s->plugin_limits);
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
	if (!report(ready_fd, ready)) {
		/* The create was killed before it learned the environment exists:
		 * nobody was given its id, nobody will use it. (A creator killed
		 * after reading this is gc's: sbx gc removes what its creator left
		 * without a state; a one-shot one is removed here, or when its
		 * owner's pidfd says it exited.) */
		teardown(s);
		dispose_env(s);
		_exit(1);
	}
	/* One-shot: the owner's exit ends the environment (runtime.h). */
	if (c->one_shot && c->owner_fd >= 0)
		ep_add(s, c->owner_fd);

	while (!s->stopping) {
		struct epoll_event evs[32];
		int64_t wait = -1; /* ms; a pending hand-out's deadline (client_own) */
		if (s->handout_taken_ms) {
			wait = s->handout_due_ms - clock_ms(CLOCK_MONOTONIC);
			if (wait < 0)
				wait = 0;
		}
		int n = epoll_wait(s->ep, evs, 32, (int)wait);
		if (s->handout_taken_ms && clock_ms(CLOCK_MONOTONIC) >= s->handout_due_ms)
			handout_run(s);
		if (n < 0 && errno != EINTR)
			break;
		s->loop_reset = false;
		for (int i = 0; i < n && !s->stopping && !s->loop_reset; i++) {
			int fd = evs[i].data.fd;
			if (fd == s->listen_fd) {
				int conn;
				while ((conn = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
					ep_add(s, conn);
			} else if (fd == s->init_sock) {
				init_event(s);
			} else if (fd == s->sb_sock && fd >= 0) {
				standby_event(s);
			} else if (fd == s->sb_helper_fd && fd >= 0) {
				standby_spawned(s);
			} else if (fd == s->sig_fd) {
				struct signalfd_siginfo si;
				while (read(s->sig_fd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo != SIGCHLD)
						begin_stop(s, -1);
				/* Reap: init (then the environment is over) and, in
				 * degraded mode, orphans we inherited as subreaper. */
				pid_t dead;
				while ((dead = waitpid(-1, NULL, WNOHANG)) > 0)
					if (dead == s->init_pid) {
						s->init_pid = -1;
						begin_stop(s, -1);
					} else if (dead == s->old_init_pid) {
						s->old_init_pid = -1;
					} else if (dead == s->ns_helper) {
						s->ns_helper = -1;
					} else if (dead == s->sb_pid) {
						s->sb_pid = -1; /* a dead standby is dropped */
						standby_drop(s);
					}
			} else if (fd == watch_fd) {
				uint64_t t;
				(void)!read(fd, &t, sizeof(t));
				struct stat st;
				char lp[4300];
				snprintf(lp, sizeof(lp), "%s/lock", c->run_dir);
				if (stat(c->env_dir, &st) < 0 && errno == ENOENT && stat(lp, &st) < 0 &&
				    errno == ENOENT)
					begin_stop(s, -1);
			} else if (fd == c->owner_fd && c->one_shot) {
				/* The owner exited (readable pidfd) before it removed us. */
				ep_del(s, fd);
				if (!s->stopping)
					begin_stop(s, -1);
			} else if (fd == s->sb_defer_fd && fd >= 0) {
				standby_deferred_start(s);
			} else if (fd == s->idle_fd) {
				idle_event(s);
			} else if (fd == s->ttl_fd) {
				uint64_t t;
				(void)!read(fd, &t, sizeof(t));
				if (s->n_execs == 0 && s->restart_conn < 0)
					begin_stop(s, -1);
			} else {
				bool is_timer = false;
				sup_proc *out = NULL;
				for (size_t k = 0; k < s->n_execs; k++) {
					is_timer |= s->execs[k].timer == fd;
					if (sup_proc_owns(s->execs[k].bg, fd))
						out = s->execs[k].bg;
				}
				if (is_timer)
					timer_event(s, fd);
				else if (out)
					sup_proc_drain(out, fd);
				else
					client_request(s, fd);
			}
		}
	}
	/* Tell every waiting client, then clean up, then answer the stop. */
	fail_execs(s, "stopped");
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
		teardown_signal(s);
		hidden = c->dispose_hide(c->dispose_arg, c->id);
		startup_mark("teardown: hidden (one-shot)");
		teardown_reap(s);
	} else
		teardown(s);
	/* Background processes ended with the environment: their records say
	 * so (killed with init, SIGKILL), with everything they printed. */
	for (size_t i = 0; i < s->n_execs; i++)
		if (s->execs[i].bg) {
			sup_proc_exited(s->execs[i].bg, SIGKILL, false, false, "environment_stopped");
			sup_proc_free(s->execs[i].bg);
			s->execs[i].bg = NULL;
		}
	if (!halves)
		dispose_env(s);
	if (s->stop_conn >= 0)
		send_json(s->stop_conn,
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
		teardown_cgroup(s);
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
	teardown(s);
	if (!report(ready_fd, json_pack("{s:b,s:s,s:s,s:i}", "ok", 0, "code", sbx_code_name(sbx_err_code(e)),
					"message", sbx_err_message(e), "errno", sbx_err_errno(e))))
		dispose_env(s); /* a one-shot creator gone: nobody else removes it */
	_exit(1);
}

int supervisor_start(env_config *c, char ***ret_warnings, json_t **ret_info, sbx_err **err)
{
	/* A process that starts environments again and again (sbx serve, a
	 * pool's refiller) builds init's seccomp program once, here, for all
	 * the setup children it forks; a one-shot CLI leaves it to its child,
	 * which builds it while the supervisor moves it into its cgroup. */
	static int started;
	if (__atomic_add_fetch(&started, 1, __ATOMIC_RELAXED) > 1)
		seccomp_keep(0);
	int rp[2];
	if (pipe2(rp, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	/* Detach: a new session, and a second fork so that the supervisor is
	 * not our child (it must outlive the caller and never be its zombie).
	 * The intermediate process is a vfork child: it borrows our memory
	 * (this thread waits until it exits), so our address space is copied
	 * once, for the supervisor, instead of twice. It only calls setsid()
	 * and fork() and exits; it writes no variable of ours (pid is written
	 * by vfork's return in each process).
	 * A short-lived caller (c->supervisor_child: a CLI command) forks the
	 * supervisor directly: one process start fewer on the create's path
	 * (the intermediate had to be scheduled before the supervisor existed;
	 * `sbx run` 0.86-0.92x). It is reparented when the caller exits, and a
	 * supervisor that ends first is a zombie only until then. */
	const bool direct = c->supervisor_child;
	pid_t pid = direct ? fork() : vfork();
	if (pid < 0) {
		safe_close(rp[0]);
		safe_close(rp[1]);
		return err_errno(err, "fork");
	}
	if (pid == 0) {
		if (setsid() < 0)
			_exit(1);
		if (!direct) {
			pid = fork();
			if (pid != 0)
				_exit(pid < 0);
		}
		/* The supervisor, in its own memory from here. Only the ready
		 * pipe survives. The environment's trees, staging directories
		 * and files are made with the modes asked for, whatever the
		 * caller's umask (a 027 or 077 one would take the bits the
		 * environment's uids pass through by); init sets 022 for the
		 * commands anyway. */
		umask(022);
		safe_close(rp[0]);
		/* One-shot: the environment's files are made here, by the process
		 * that removes them whenever its owner goes (runtime.h prepare). */
		if (c->prepare) {
			_cleanup_err_ sbx_err *pe = NULL;
			if (c->prepare(c->prepare_arg, c, &pe) < 0) {
				(void)report(rp[1],
					     json_pack("{s:b,s:s,s:s,s:i}", "ok", 0, "code",
						       sbx_code_name(sbx_err_code(pe)), "message",
						       sbx_err_message(pe), "errno", sbx_err_errno(pe)));
				_exit(1);
			}
		}
		/* Keep exactly: the ready pipe (fd 3), the liveness lock (fd 4) and
		 * a one-shot environment's owner pidfd (fd 5). */
		int a = fcntl(rp[1], F_DUPFD_CLOEXEC, 10), b = fcntl(c->lock_fd, F_DUPFD_CLOEXEC, 10);
		int o = c->one_shot ? fcntl(c->owner_fd, F_DUPFD_CLOEXEC, 10) : -1;
		if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0 ||
		    (c->one_shot && (o < 0 || dup2(o, 5) < 0)))
			_exit(1);
		int fd = 3;
		c->lock_fd = 4;
		c->owner_fd = c->one_shot ? 5 : -1;
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		int logfd = -1;
		if (log_debug_enabled) {
			char lp[4200];
			snprintf(lp, sizeof(lp), "%s/supervisor.log", c->run_dir);
			logfd = open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		}
		dup2(null, 0);
		dup2(null, 1);
		if (!startup_trace_enabled()) /* SBX_TRACE_STARTUP: keep the creator's stderr */
			dup2(logfd >= 0 ? logfd : null, 2);
		if (null > 5)
			safe_close(null);
		if (logfd > 5)
			safe_close(logfd);
		sys_close_range(6, ~0U, 0);
		if (!c->one_shot)
			(void)close(5);
		(void)fd_set_cloexec(3, 1);
		(void)fd_set_cloexec(4, 1);
		(void)fd_set_cloexec(5, 1);
		for (int sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		signal(SIGPIPE, SIG_IGN);
		(void)!chdir("/");
		supervisor_main(c, fd);
	}
	safe_close(rp[1]);
	startup_mark("create: supervisor forked");
	if (!direct)
		(void)RETRY_EINTR(waitpid(pid, NULL, 0));
	_cleanup_free_ char *buf = NULL;
	int r = fd_read_all(rp[0], 1 << 20, &buf, NULL);
	safe_close(rp[0]);
	startup_mark("create: supervisor reported");
	if (r < 0 || !buf || !*buf)
		return err_set(err, SBX_E_INTERNAL, r < 0 ? -r : EPIPE,
			       "supervisor died while starting the environment");
	_cleanup_json_ json_t *m = json_loads(buf, 0, NULL);
	if (!m)
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "supervisor sent a malformed reply");
	if (!json_bool(m, "ok", false)) {
		sbx_code cc = err_code_from_name(json_str(m, "code"));
		return err_set(err, cc, (int)json_int(m, "errno", 0), "%s",
			       json_str(m, "message") ?: "unknown error");
	}
	if (ret_warnings)
		*ret_warnings = json_to_strv(json_object_get(m, "warnings"));
	if (ret_info)
		*ret_info = json_incref(m);
	return 0;
}
