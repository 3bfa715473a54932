/* The supervisor's side of init's start (a cold start, and a restore's new
 * or standby init): the clone into new namespaces (and into the v2 cgroup),
 * the uid maps, the host trees prepared here with host privilege (lower
 * layers, the host mask, snapshot layers, volumes: detached, idmapped,
 * read-only where they must be) and sent with "go", the cgroup attach while
 * the child builds its root, and its ready report read and applied. The
 * child's side is setup.c, the privilege sequence. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "policy/egress_match.h"
#include "runtime/ctl_proto.h"
#include "runtime/devices.h"
#include "runtime/startup_trace.h"
#include "runtime/sup_internal.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

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
		sup_add_warning(s,
				"idmapped mount of '%s' unavailable (%s): its files appear owned by nobody",
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
				sup_add_warning(
				    s,
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
 * we go on, and reports on *ret_sock (sup_init_ready_read). */
/* sibling: called in a helper child of the supervisor (standby_build),
 * the new init is the supervisor's child all the same (CLONE_PARENT). */
int sup_init_spawn(supervisor *s, const char *layer_dir, bool sibling, pid_t *ret_pid, int *ret_pidfd,
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
int sup_init_ready_read(int sock, json_t **ret_m, int *ret_proxy, sbx_err **err)
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
int sup_init_ready_apply(supervisor *s, const json_t *m, sbx_err **err)
{
	env_config *c = s->c;
	ctl_init_event e;
	if (ctl_init_event_decode(m, &e) < 0)
		e = (ctl_init_event){.kind = CTL_EVK_UNKNOWN, .id = -1};
	s->landlock_abi = e.landlock_abi;
	json_t *cw;
	size_t wi;
	json_array_foreach(e.warnings, wi, cw) sup_add_warning(s, "%s", json_string_value(cw) ?: "");
	if (net_proxied(c->network) && sup_egress_start(s, err) < 0)
		return -1;
	if (streq(c->network, "open"))
		sup_add_warning(
		    s,
		    "network open: the environment shares the host's network stack (no network isolation)");
	if (s->landlock_abi == 0)
		sup_add_warning(s, "Landlock unavailable on this kernel: filesystem second wall missing");
	return 0;
}

static int listen_ctl(supervisor *s, sbx_err **err);
/* listen: the first start also makes the control socket, while init builds
 * its root (the socket's bind is an inode on SBX_RUN's filesystem: off the
 * critical path there). */
int sup_init_start(supervisor *s, bool listen, sbx_err **err)
{
	_cleanup_json_ json_t *m = NULL;
	if (sup_init_spawn(s, s->c->env_dir, false, &s->init_pid, &s->init_pidfd, &s->init_sock, err) < 0 ||
	    (listen && listen_ctl(s, err) < 0) ||
	    sup_init_ready_read(s->init_sock, &m, &s->proxy_listen, err) < 0)
		return -1;
	return sup_init_ready_apply(s, m, err);
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
