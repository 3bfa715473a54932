/* Restore in place (docs/warm.md "Restore", docs/runtime.md): the live
 * supervisor, its cgroup, lock, socket and uid range kept, gives the
 * environment a new init on the snapshot's layers.
 *
 *   two steps     CTL_OP_RESTART ends every process (sup_restore_end), the
 *                 client switches the writable layer, CTL_OP_START starts
 *                 init on the new layers (sup_restore_start);
 *   one step      CTL_OP_RESTORE_STANDBY makes a standby init, built in the
 *                 background for the same snapshot after the last restore,
 *                 the environment's init (sup_restore_standby).
 *
 * The standbys' life: two are kept (SUP_STANDBYS), built one at a time, so
 * that restores in a loop each find one ready while the next builds; a
 * build after a restore is deferred until the first command after it is
 * served, or a short timer fires (standby_defer), but not when restores
 * come back to back (sb_quick); built by a helper child at SCHED_IDLE
 * (standby_build), spawned and ready as events of the loop, all dropped
 * when they would be stale or one is gone (a two-step restart, the phase
 * switch, a death, the teardown). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/egress_match.h"
#include "runtime/ctl_proto.h"
#include "runtime/startup_trace.h"
#include "runtime/sup_internal.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

static void standby_build(supervisor *s);
static void restart_forget(supervisor *s);
static void standby_defer(supervisor *s, char *sid);

/* ---- restart in place (sbx restore; ctl_proto.h CTL_OP_RESTART) ------------ */

/* Step 1: every process ends, as at a stop (init killed: its pid namespace
 * takes the rest, and the mount namespace that holds the overlay on the
 * writable layer dies with the last of them, before waitpid returns), but
 * the supervisor, its cgroup (and limits), lock, socket and uid range stay.
 * Refused, with nothing changed, where a new supervisor is the safe way.
 * Returns whether conn is kept (it sends "start" next). */
bool sup_restore_end(supervisor *s, int conn)
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
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	startup_mark("restart: begin");
	sup_restore_standby_drop(s); /* another snapshot, or none was ready */
	sup_fail_execs(s, "restored");
	sup_warm_resume(s); /* sbx pause's freeze: a v1-frozen task does not even die */
	sup_thaw(s);
	sup_egress_stop(s); /* its listening socket is in the old network namespace */
	sup_stop_recorder(s, NULL);
	sup_kill_init(s);
	s->init_pid = -1;
	s->init_pidfd = safe_close(s->init_pidfd);
	sup_ep_del(s, s->init_sock);
	s->init_sock = safe_close(s->init_sock);
	startup_mark("restart: init reaped");
	restart_forget(s);
	s->restart_conn = conn;
	s->loop_reset = true; /* descriptors of this batch may be closed or reused */
	sup_send_json(conn, json_pack("{s:s}", CTL_F_EV, CTL_EV_ENDED), NULL, 0);
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
		sup_drop_exec(s, x);
	}
	for (size_t i = 0; i < s->n_waiters; i++)
		if (s->waiters[i] >= 0) {
			_cleanup_err_ sbx_err *we = NULL;
			err_set(&we, SBX_E_UNAVAILABLE, ESRCH, "the environment was restored meanwhile");
			sup_send_json(s->waiters[i], sup_err_json(we), NULL, 0);
			sup_close_conn(s, s->waiters[i]);
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

/* Step 2: a new init on the new layers, by the same sup_init_start a cold
 * start runs (same namespaces, maps, trees, cgroup, setup sequence, walls).
 * On failure the environment is over (the client starts a new supervisor).
 * conn is answered; the caller closes it. */
void sup_restore_start(supervisor *s, int conn, const json_t *m)
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
		if (sup_init_start(s, false, &e) == 0)
			sup_ep_add(s, s->init_sock);
	}
	if (e) {
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		sup_begin_stop(s, -1);
		return;
	}
	s->loop_reset = true;
	sup_arm_ttl(s); /* idle TTL and idle suspend count from now */
	startup_mark("restart: ready");
	sup_send_json(conn,
		      json_pack("{s:s,s:i,s:i,s:O}", CTL_F_EV, CTL_EV_RESTARTED, "init_pid", (int)s->init_pid,
				CTL_F_LANDLOCK_ABI, s->landlock_abi, CTL_F_WARNINGS, s->warnings),
		      NULL, 0);
	const char *sid = json_str(m, "snapshot_id");
	if (sid && json_bool(m, "standby", false))
		standby_defer(s, strdup(sid));
}

/* ---- standby inits (docs/warm.md "Restore"; CTL_OP_RESTORE_STANDBY) ------- */

/* Memory a standby init is charged (its few pages, and the kernel objects
 * of its namespaces and mounts: docs/warm.md), added to the environment's
 * memory limit for each one that exists, as its one process is to the pids
 * limit: the commands get what they get without a standby. */
#define SUP_STANDBY_MEMORY (8LL << 20)

/* How long a restore by the standby waits for the replaced init's
 * processes to be gone (they were sent SIGKILL: only one stuck in the
 * kernel takes longer; the restore then answers without waiting more). */
#define SUP_OLD_INIT_WAIT_MS 2000

/* How long the next standby waits for the first command after a restore
 * before it is built anyway (standby_defer). */
#define SUP_STANDBY_DEFER_MS 100

/* The limits raised for exactly the standbys that exist (s->n_sb). */
static void standby_limits(supervisor *s)
{
	cgroup_limits l = s->c->limits;
	if (l.pids > 0)
		l.pids += (int64_t)s->n_sb;
	if (l.memory_bytes > 0)
		l.memory_bytes += SUP_STANDBY_MEMORY * (int64_t)s->n_sb;
	_cleanup_err_ sbx_err *e = NULL;
	if (s->cg && (l.pids > 0 || l.memory_bytes > 0) && cgroup_set_limits(s->cg, &l, &e) < 0)
		log_debug("standby: limits: %s", sbx_err_message(e));
}

/* $SBX_ROOT/envs/<id>/standby[/<dir>[/sub]]: a standby's own upper/ and work/. */
static void standby_dir(const supervisor *s, int dir, const char *sub, char *buf, size_t n)
{
	if (dir < 0)
		snprintf(buf, n, "%s/standby", s->c->env_dir);
	else
		snprintf(buf, n, "%s/standby/%d%s%s", s->c->env_dir, dir, sub ? "/" : "", sub ?: "");
}

/* Whether the last standby is still being built (no "ready" yet). */
static bool standby_building(const supervisor *s)
{
	return s->sb_helper_fd >= 0 || (s->n_sb > 0 && !s->sb[s->n_sb - 1].ready);
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

static bool standby_boost(supervisor *s, const sup_standby *b)
{
	struct sched_param sp = {0};
	int pol = sched_getscheduler(0);
	if (pol == SCHED_FIFO || pol == SCHED_RR)
		(void)sched_getparam(0, &sp);
	/* A restore waits: the helper too, if it has not reported yet and
	 * builds this one (the clone, the maps and the trees are its; starved
	 * at SCHED_IDLE on a busy host they took most of such a wait). It goes
	 * back to SCHED_IDLE itself once it has reported (standby_build). */
	if (pol >= 0 && s->sb_helper > 0 && b == &s->sb[s->n_sb - 1])
		(void)sched_setscheduler(s->sb_helper, pol, &sp);
	if (b->pid <= 0)
		return pol >= 0;
	if (pol < 0 || sched_getscheduler(b->pid) == pol)
		return pol >= 0;
	return sched_setscheduler(b->pid, pol, &sp) == 0;
}

/* Lets the replaced init's mount namespace go (s->old_mnt_ns) in a child at
 * SCHED_IDLE, where no standby's helper takes it: its overlays' unmount
 * syncs the upper's filesystem, off the loop and the commands' CPU. Here
 * if no child can be forked or tracked. */
static void release_old_ns(supervisor *s)
{
	if (s->old_mnt_ns < 0)
		return;
	size_t k = 0;
	while (k < ARRAY_SIZE(s->ns_helpers) && s->ns_helpers[k] > 0)
		k++;
	pid_t p = k < ARRAY_SIZE(s->ns_helpers) && !s->stopping ? fork() : -1;
	if (p == 0) {
		sup_ports_close_copies(s); /* it may outlive the supervisor: not with its ports */
		standby_idle(0);
		safe_close(s->old_mnt_ns);
		_exit(0);
	}
	if (p > 0)
		s->ns_helpers[k] = p;
	s->old_mnt_ns = safe_close(s->old_mnt_ns);
}

/* One standby killed and reaped (it is in the environment's cgroup), its
 * descriptors closed; its directory stays until another is built there. */
static void standby_end(supervisor *s, sup_standby *b)
{
	if (b->pidfd >= 0)
		(void)sys_pidfd_send_signal(b->pidfd, SIGKILL, NULL, 0);
	else if (b->pid > 0)
		(void)kill(b->pid, SIGKILL);
	if (b->pid > 0)
		(void)RETRY_EINTR(waitpid(b->pid, NULL, 0));
	if (b->sock >= 0)
		sup_ep_del(s, b->sock);
	safe_close(b->sock);
	safe_close(b->pidfd);
	safe_close(b->proxy);
	json_decref(b->ready);
	json_decref(b->warnings);
	*b = (sup_standby){.pid = -1, .pidfd = -1, .sock = -1, .proxy = -1};
}

/* Ends every standby (one that dies or fails takes the others with it: the
 * next restore takes the two steps and starts afresh) and forgets them. */
void sup_restore_standby_drop(supervisor *s)
{
	if (s->sb_defer_fd >= 0) {
		sup_ep_del(s, s->sb_defer_fd);
		s->sb_defer_fd = safe_close(s->sb_defer_fd);
		s->loop_reset = true;
	}
	s->sb_deferred = mfree(s->sb_deferred);
	s->sb_quick = false;
	if (!s->stopping) /* no helper will take it (stopping: teardown's) */
		release_old_ns(s);
	if (s->n_sb == 0 && s->sb_helper_fd < 0 && !s->sb_snapshot)
		return;
	if (s->sb_helper > 0) { /* what it spawned gets no "go" from anyone and fails */
		(void)kill(s->sb_helper, SIGKILL);
		(void)RETRY_EINTR(waitpid(s->sb_helper, NULL, 0));
		s->sb_helper = -1;
	}
	if (s->sb_helper_fd >= 0) {
		sup_ep_del(s, s->sb_helper_fd);
		s->sb_helper_fd = safe_close(s->sb_helper_fd);
	}
	for (size_t i = 0; i < s->n_sb; i++)
		standby_end(s, &s->sb[i]);
	s->n_sb = 0;
	if (s->sb_waiter >= 0) { /* refused: it takes the two steps */
		_cleanup_err_ sbx_err *e = NULL;
		err_set(&e, SBX_E_UNAVAILABLE, ENOENT, "the standby init failed");
		sup_send_json(s->sb_waiter, sup_err_json(e), NULL, 0);
		sup_close_conn(s, s->sb_waiter);
		s->sb_waiter = -1;
	}
	json_decref(s->sb_waiter_m);
	s->sb_waiter_m = NULL;
	s->sb_snapshot = mfree(s->sb_snapshot);
	standby_limits(s);
	s->loop_reset = true; /* a standby's sock may be in this batch's events */
	startup_mark("standby: dropped");
}

/* Starts the next standby init for the current layers (c->layers, those of
 * s->sb_snapshot), if fewer than SUP_STANDBYS exist and none builds, by the
 * sup_init_spawn a cold start runs, on an empty writable layer of its own;
 * its "ready" comes as an event (sup_restore_standby_event). Where it
 * cannot be built as a cold start would build it (network allow: the
 * proxy's thread would be running at the clone; no pid namespace), or
 * fails, there is simply none. */
static void standby_build(supervisor *s)
{
	env_config *c = s->c;
	_cleanup_err_ sbx_err *e = NULL;
	if (!s->sb_snapshot || s->n_sb >= SUP_STANDBYS || standby_building(s))
		return;
	if (c->degraded || net_proxied(c->network) || s->plugins || c->cdi || c->disk_bytes ||
	    c->agent_phase || s->stopping || thread_count() != 1)
		return;
	startup_mark("standby: build begin");
	int dir = 0; /* a directory no standby that exists uses */
	for (size_t i = 0; i < s->n_sb; i++)
		if (s->sb[i].dir == dir)
			dir++, i = (size_t)-1;
	char d[4300];
	standby_dir(s, dir, NULL, d, sizeof(d));
	(void)fs_rm_rf(d); /* a used one's: a few directories */
	startup_mark("standby: directory emptied");
	standby_dir(s, -1, NULL, d, sizeof(d));
	if (mkdir(d, 0755) < 0 && errno != EEXIST)
		return;
	static const char *const subs[] = {NULL, "upper", "work"};
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		standby_dir(s, dir, subs[i], d, sizeof(d));
		if ((mkdir(d, 0755) < 0 && errno != EEXIST) ||
		    (i > 0 && !c->rootless && chown(d, c->host_uid, c->host_gid) < 0))
			return;
	}
	/* The next restore's (none other exists) builds at our own policy: at
	 * SCHED_IDLE a busy host starved it for 100 ms and more, and that
	 * restore waited for it; a spare, behind one that exists, at
	 * SCHED_IDLE (boosted once it is next: the switch, standby_spawned). */
	bool idle = s->n_sb > 0;
	s->sb[s->n_sb++] = (sup_standby){.pid = -1, .pidfd = -1, .sock = -1, .proxy = -1, .dir = dir};
	standby_limits(s);
	standby_dir(s, dir, NULL, d, sizeof(d));
	/* The clone (of every namespace: milliseconds on a busy host), the maps,
	 * the trees and the cgroup are a helper's, a child of ours that exits
	 * once it has reported: our loop answers the environment's commands
	 * meanwhile. The new init is our child (CLONE_PARENT). */
	int rp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rp) < 0) {
		sup_restore_standby_drop(s);
		return;
	}
	pid_t h = fork();
	if (h == 0) {
		safe_close(rp[0]);
		sup_ports_close_copies(s); /* it may outlive the supervisor: not with its ports */
		if (idle)
			standby_idle(0); /* the helper, and what it clones, from the start */
		size_t nw = json_array_size(s->warnings);
		pid_t pid = -1;
		int pidfd = -1, sock = -1;
		int r = sup_init_spawn(s, d, true, &pid, &pidfd, &sock, &e);
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
		sup_restore_standby_drop(s);
		return;
	}
	s->sb_helper = h;
	s->sb_helper_fd = rp[0];
	sup_ep_add(s, s->sb_helper_fd);
	startup_mark("standby: helper forked");
}

/* After a restore by a standby, the next one is built once the first
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
		sup_ep_add(s, s->sb_defer_fd);
	if (s->sb_defer_fd < 0 || timerfd_settime(s->sb_defer_fd, 0, &once, NULL) < 0)
		sup_restore_standby_deferred(s); /* no timer: now */
}

/* Starts the deferred standby (standby_defer), if one waits. */
void sup_restore_standby_deferred(supervisor *s)
{
	_cleanup_free_ char *sid = TAKE_PTR(s->sb_deferred);
	if (s->sb_defer_fd >= 0) {
		sup_ep_del(s, s->sb_defer_fd);
		s->sb_defer_fd = safe_close(s->sb_defer_fd);
		s->loop_reset = true;
	}
	if (sid && s->sb_snapshot && !streq(sid, s->sb_snapshot))
		sup_restore_standby_drop(s); /* built for another snapshot */
	if (sid && !s->sb_snapshot)
		s->sb_snapshot = TAKE_PTR(sid);
	standby_build(s);
	release_old_ns(s); /* no helper took it */
}

/* The helper reported: the last standby exists and builds its root (its
 * "ready" comes on its sock), or it could not be spawned (dropped). */
void sup_restore_standby_spawned(supervisor *s)
{
	int fds[1] = {-1};
	size_t n = 1;
	_cleanup_json_ json_t *m = NULL;
	int r = json_recv(s->sb_helper_fd, &m, fds, &n);
	/* It exits after this, after unmounting a replaced init's overlays
	 * if it was given them (then SIGCHLD or teardown reaps it). */
	if (RETRY_EINTR(waitpid(s->sb_helper, NULL, WNOHANG)) == 0) {
		size_t k = 0;
		while (k < ARRAY_SIZE(s->ns_helpers) && s->ns_helpers[k] > 0)
			k++;
		if (k == ARRAY_SIZE(s->ns_helpers)) /* all busy: wait for the first */
			(void)RETRY_EINTR(waitpid(s->ns_helpers[k = 0], NULL, 0));
		s->ns_helpers[k] = s->sb_helper;
	}
	s->sb_helper = -1;
	sup_ep_del(s, s->sb_helper_fd);
	s->sb_helper_fd = safe_close(s->sb_helper_fd);
	sup_standby *b = s->n_sb > 0 ? &s->sb[s->n_sb - 1] : NULL;
	pid_t pid = r > 0 ? (pid_t)json_int(m, CTL_F_PID, -1) : -1;
	if (b && pid > 0) /* our child, not reaped: the pid is its own */
		b->pid = pid;
	if (!b || r <= 0 || n != 1 || !json_bool(m, CTL_F_OK, false) || pid <= 0 ||
	    (b->pidfd = sys_pidfd_open(pid, 0)) < 0) {
		if (n == 1)
			safe_close(fds[0]);
		sup_restore_standby_drop(s);
		return;
	}
	b->sock = fds[0];
	b->warnings = json_incref(json_object_get(m, CTL_F_WARNINGS));
	sup_ep_add(s, b->sock);
	if (b == &s->sb[0]) /* the next restore's: lifted if it was cloned at SCHED_IDLE */
		(void)standby_boost(s, b);
	startup_mark("standby: spawned, building");
}

bool sup_restore_standby_owns(const supervisor *s, int fd)
{
	for (size_t i = 0; fd >= 0 && i < s->n_sb; i++)
		if (s->sb[i].sock == fd)
			return true;
	return false;
}

/* A standby reported: ready (kept), or failed or died (all dropped). */
void sup_restore_standby_event(supervisor *s, int fd)
{
	_cleanup_err_ sbx_err *e = NULL;
	json_t *m = NULL;
	size_t i = 0;
	while (i < s->n_sb && s->sb[i].sock != fd)
		i++;
	if (i == s->n_sb)
		return;
	sup_standby *b = &s->sb[i];
	if (b->ready || sup_init_ready_read(b->sock, &m, &b->proxy, &e) < 0) {
		sup_restore_standby_drop(s);
		return;
	}
	b->ready = m;
	startup_mark("standby: ready");
	if (i == 0 && s->sb_waiter >= 0) { /* a restore waited for it */
		int conn = s->sb_waiter;
		_cleanup_json_ json_t *req = TAKE_PTR(s->sb_waiter_m);
		s->sb_waiter = -1;
		if (!sup_restore_standby(s, conn, req))
			sup_close_conn(s, conn);
	}
	if (!s->sb_deferred) /* the next, unless a command after a restore is due first */
		standby_build(s);
}

bool sup_restore_reaped(supervisor *s, pid_t dead)
{
	for (size_t k = 0; k < ARRAY_SIZE(s->ns_helpers); k++)
		if (s->ns_helpers[k] == dead) {
			s->ns_helpers[k] = 0;
			return true;
		}
	for (size_t i = 0; i < s->n_sb; i++)
		if (s->sb[i].pid == dead) {
			s->sb[i].pid = -1; /* a dead standby is dropped, the others with it */
			sup_restore_standby_drop(s);
			return true;
		}
	return false;
}

void sup_restore_wait_helpers(supervisor *s)
{
	for (size_t k = 0; k < ARRAY_SIZE(s->ns_helpers); k++)
		if (s->ns_helpers[k] > 0) {
			(void)RETRY_EINTR(waitpid(s->ns_helpers[k], NULL, 0));
			s->ns_helpers[k] = 0;
		}
}

json_t *sup_restore_standby_info(const supervisor *s)
{
	if (s->n_sb == 0 || s->sb[0].pid <= 0)
		return NULL;
	size_t exist = 0, ready = 0;
	for (size_t i = 0; i < s->n_sb; i++) {
		exist += s->sb[i].pid > 0;
		ready += s->sb[i].ready != NULL;
	}
	return json_pack("{s:i,s:s,s:b,s:I,s:I}", "pid", (int)s->sb[0].pid, "snapshot_id",
			 s->sb_snapshot ?: "", "ready", s->sb[0].ready != NULL, "count", (json_int_t)exist,
			 "ready_count", (json_int_t)ready);
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
/* A restore to the snapshot the standbys were built for, in one step
 * (ctl_proto.h CTL_OP_RESTORE_STANDBY): sb[0] becomes init. Returns whether
 * conn is kept (a standby still building answers it when ready); false:
 * conn is answered, the caller closes it. */
bool sup_restore_standby(supervisor *s, int conn, const json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	const char *sid = json_str(m, "snapshot_id");
	json_t *tr = json_object_get(m, "trash");
	const char *t0 = json_string_value(json_array_get(tr, 0)),
		   *t1 = json_string_value(json_array_get(tr, 1));
	if (s->sb_deferred && sid && streq(sid, s->sb_deferred)) {
		/* No command since the last restore: the next standby now, and
		 * after this restore at once too (sb_quick: back to back). */
		s->sb_quick = true;
		sup_restore_standby_deferred(s);
	}
	bool same = sid && s->n_sb > 0 && streq(sid, s->sb_snapshot ?: "");
	sup_standby *b = &s->sb[0];
	if (!trash_name_ok(t0) || !trash_name_ok(t1) || streq(t0, t1))
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "restore_standby: bad trash names");
	else if (same && !b->ready && s->sb_waiter < 0) {
		/* Still building (milliseconds): answered once it is ready. */
		(void)standby_boost(s, b);
		s->sb_waiter = conn;
		s->sb_waiter_m = json_deep_copy(m);
		if (s->sb_waiter_m)
			json_object_set_new(s->sb_waiter_m, "waited", json_true());
		return s->sb_waiter_m != NULL || (s->sb_waiter = -1, false);
	} else if (!same || !b->ready)
		err_set(&e, SBX_E_UNAVAILABLE, ENOENT, "no standby init ready for this snapshot");
	else if (s->restart_conn >= 0 || s->freeze_conn >= 0 || s->phase_pending || s->stopping)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "the environment is busy (restore, snapshot or phase)");
	else if (!standby_boost(s, b)) {
		sup_restore_standby_drop(s);
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
	standby_dir(s, b->dir, "upper", from[2], sizeof(from[2]));
	snprintf(to[2], sizeof(to[2]), "%s", from[0]);
	standby_dir(s, b->dir, "work", from[3], sizeof(from[3]));
	snprintf(to[3], sizeof(to[3]), "%s", from[1]);
	int r = e ? 0 : standby_renames(from, to, 4);
	if (r < 0)
		err_errnum(&e, r, "restore_standby: switch the writable layer");
	if (e) {
		s->sb_quick = false;
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	startup_mark("standby: switch begin");
	sup_fail_execs(s, "restored");
	sup_warm_resume(s); /* sbx pause's freeze: a v1-frozen task does not even die */
	sup_thaw(s);
	sup_stop_recorder(s, NULL);
	/* The active init ends, and every process of its pid namespace with
	 * it: gone (not alive in our cgroup, where they would count against
	 * the limits and take the commands' CPU) when we answer, up to
	 * SUP_OLD_INIT_WAIT_MS (a process stuck in the kernel; SIGCHLD reaps
	 * it later, teardown waits for it). Its mount namespace is held
	 * first: its last process's exit would otherwise unmount the
	 * overlays, which syncs the upper's filesystem (a disk flush per
	 * overlay), in the next command's way; the next standby's helper, or
	 * a releaser, lets it go (standby_build, release_old_ns). */
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
	sup_ep_del(s, s->init_sock);
	safe_close(s->init_sock);
	restart_forget(s);
	/* The standby is init; the next one, if any, is next. */
	s->init_pid = b->pid;
	s->init_pidfd = b->pidfd;
	s->init_sock = b->sock;
	b->pid = -1, b->pidfd = b->sock = -1;
	sup_ep_add(s, s->init_sock);
	while (json_array_size(s->warnings) > s->n_base_warnings)
		json_array_remove(s->warnings, json_array_size(s->warnings) - 1);
	s->landlock_abi = 0;
	json_t *w;
	size_t wi;
	json_array_foreach(b->warnings, wi, w) sup_add_warning(s, "%s", json_string_value(w) ?: "");
	_cleanup_json_ json_t *ready = TAKE_PTR(b->ready);
	(void)sup_init_ready_apply(s, ready, NULL); /* no proxy: network allow has no standby */
	standby_end(s, b);			    /* what is left of it: its warnings */
	memmove(&s->sb[0], &s->sb[1], (s->n_sb - 1) * sizeof(s->sb[0]));
	s->n_sb--;
	if (s->n_sb > 0 && !s->sb[0].ready) /* a spare still building is now the next restore's */
		(void)standby_boost(s, &s->sb[0]);
	standby_limits(s);
	s->loop_reset = true;
	sup_arm_ttl(s);
	if (old_pidfd >= 0) {
		struct pollfd pf = {.fd = old_pidfd, .events = POLLIN};
		if (RETRY_EINTR(poll(&pf, 1, SUP_OLD_INIT_WAIT_MS)) == 1 &&
		    RETRY_EINTR(waitpid(s->old_init_pid, NULL, WNOHANG)) == s->old_init_pid)
			s->old_init_pid = -1;
	}
	startup_mark("standby: the replaced init's processes are gone");
	startup_mark("standby: switched");
	sup_send_json(conn,
		      json_pack("{s:s,s:i,s:i,s:O,s:b,s:b}", CTL_F_EV, CTL_EV_RESTARTED, "init_pid",
				(int)s->init_pid, CTL_F_LANDLOCK_ABI, s->landlock_abi, CTL_F_WARNINGS,
				s->warnings, "standby", 1, "standby_waited", json_bool(m, "waited", false)),
		      NULL, 0);
	if (s->sb_quick) { /* restores back to back: the next one at once */
		s->sb_quick = false;
		standby_build(s);
		release_old_ns(s); /* no helper took it: one is building already */
	} else {
		standby_defer(s, strdup(s->sb_snapshot));
	}
	return false;
}
