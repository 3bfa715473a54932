/* The privilege sequence: what the cloned child does, in order, between
 * clone() and becoming init. Read it top to bottom; each step says why it
 * sits where it does. On any failure the child reports the error to the
 * supervisor and exits: nothing it did is visible outside its namespaces. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/egress_match.h"
#include "runtime/caps.h"
#include "runtime/cgroup.h"
#include "runtime/ctl_proto.h"
#include "runtime/devices.h"
#include "runtime/landlock.h"
#include "runtime/mount.h"
#include "runtime/netns.h"
#include "runtime/runtime.h"
#include "runtime/seccomp.h"
#include "runtime/startup_trace.h"
#include "runtime/user.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

_noreturn_ static void fail(int sock, sbx_err *e)
{
	_cleanup_json_ json_t *m =
	    json_pack("{s:s,s:s,s:s,s:i}", CTL_F_EV, CTL_EV_ERROR, CTL_F_CODE, sbx_code_name(sbx_err_code(e)),
		      CTL_F_MESSAGE, sbx_err_message(e), CTL_F_ERRNO, sbx_err_errno(e));
	if (m)
		(void)json_send(sock, m, NULL, 0);
	_exit(1);
}

/* Waits for the supervisor's "go": maps written, and the prepared mount
 * trees attached as fds; also the cgroup files to move ourselves in by
 * (cg[0..*n_cg), cgroup_self_fds). */
static int wait_go(int sock, setup_fds *f, int *cg, size_t *n_cg, sbx_err **err)
{
	int fds[FD_MSG_MAX_FDS];
	size_t n = FD_MSG_MAX_FDS;
	_cleanup_json_ json_t *m = NULL;
	int r = json_recv(sock, &m, fds, &n);
	if (r <= 0)
		return err_errnum(err, r ? r : EPIPE, "wait for the supervisor");
	if (!streq(json_str(m, CTL_F_OP) ?: "", CTL_OP_GO))
		return err_set(err, SBX_E_INTERNAL, EPROTO, "unexpected message from the supervisor");
	int64_t u = json_int(m, "upper", -1), w = json_int(m, "work", -1);
	f->upper = u >= 0 && (size_t)u < n ? fds[u] : -1;
	f->work = w >= 0 && (size_t)w < n ? fds[w] : -1;
	int64_t rd = json_int(m, "run_dir", -1), ed = json_int(m, "env_dir", -1);
	f->run_dir = rd >= 0 && (size_t)rd < n ? fds[rd] : -1;
	f->env_dir = ed >= 0 && (size_t)ed < n ? fds[ed] : -1;
	int64_t mk = json_int(m, "mask", -1);
	f->mask = mk >= 0 && (size_t)mk < n ? fds[mk] : -1;
	json_t *a = json_object_get(m, "lowers"), *v;
	size_t i;
	f->n_lowers = 0;
	json_array_foreach(a, i, v)
	{
		int64_t k = json_integer_value(v);
		f->lowers[f->n_lowers++] = k >= 0 && (size_t)k < n ? fds[k] : -1;
	}
	a = json_object_get(m, "layers");
	f->n_layers = 0;
	json_array_foreach(a, i, v)
	{
		int64_t k = json_integer_value(v);
		f->layers[f->n_layers++] = k >= 0 && (size_t)k < n ? fds[k] : -1;
	}
	a = json_object_get(m, "volumes");
	f->n_volumes = 0;
	json_array_foreach(a, i, v)
	{
		int64_t k = json_integer_value(v);
		f->volumes[f->n_volumes++] = k >= 0 && (size_t)k < n ? fds[k] : -1;
	}
	a = json_object_get(m, CTL_F_CG_TASKS);
	*n_cg = 0;
	json_array_foreach(a, i, v)
	{
		int64_t k = json_integer_value(v);
		if (k < 0 || (size_t)k >= n || *n_cg >= CGROUP_SELF_FDS_MAX)
			return err_set(err, SBX_E_INTERNAL, EPROTO,
				       "bad cgroup descriptors from the supervisor");
		cg[(*n_cg)++] = fds[k];
	}
	return 0;
}

static int wait_attached(int sock, sbx_err **err)
{
	_cleanup_json_ json_t *m = NULL;
	int r = json_recv(sock, &m, NULL, NULL);
	if (r <= 0)
		return err_errnum(err, r ? r : EPIPE, "wait for the supervisor");
	if (!streq(json_str(m, CTL_F_OP) ?: "", CTL_OP_ATTACHED))
		return err_set(err, SBX_E_INTERNAL, EPROTO, "unexpected message from the supervisor");
	return 0;
}

/* Landlock grants on the environment's own root: every host directory that
 * might still be reachable (a leaked fd, a magic link) is outside it. */
static int apply_landlock(sbx_err **err)
{
	static const landlock_rule rules[] = {{"/", LL_READ | LL_EXEC | LL_WRITE | LL_DEV}};
	return landlock_restrict(rules, ARRAY_SIZE(rules), err);
}

/* Points *path at "/proc/self/fd/<fd>" (fd >= 0), keeping the host path in
 * *ret_host. Nothing to do without a descriptor (an older supervisor). */
/* The kernel counts inotify instances and watches per user at every user
 * namespace level, charging the level above to the namespace's owner: every
 * environment's, root or rootless, to the uid that runs sbx (host root, or
 * the rootless caller), against fs.inotify.max_user_instances (128 here)
 * shared with that user's own programs (systemd's, as root). One
 * environment took them all: other environments and the host's services got
 * EMFILE. This user namespace (ours: we are its root) gets an eighth of each.
 * Best effort: a kernel without the per-namespace files keeps the shared
 * limits. */
static void userns_share_inotify(void)
{
	static const struct {
		const char *host, *ours;
	} lim[] = {{"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances"},
		   {"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"}};
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++) {
		char buf[32] = "";
		_cleanup_close_ int in = open(lim[i].host, O_RDONLY | O_CLOEXEC);
		ssize_t n = in >= 0 ? read(in, buf, sizeof(buf) - 1) : -1;
		long host = n > 0 ? strtol(buf, NULL, 10) : 0;
		if (host <= 0)
			continue;
		long share = host / 8 > 0 ? host / 8 : 1;
		_cleanup_close_ int out = open(lim[i].ours, O_WRONLY | O_CLOEXEC);
		int len = snprintf(buf, sizeof(buf), "%ld\n", share);
		if (out < 0 || write(out, buf, (size_t)len) != len)
			log_debug("setup: cannot bound %s in the user namespace: %s", lim[i].ours,
				  strerror(errno));
	}
}

static int dir_via_fd(char **path, int fd, char **ret_host)
{
	if (fd < 0)
		return 0;
	char *p = NULL;
	if (asprintf(&p, "/proc/self/fd/%d", fd) < 0)
		return -ENOMEM;
	*ret_host = *path;
	*path = p;
	return 0;
}

char *degraded_home(const env_config *c)
{
	return fs_path_join(c->env_dir, "home");
}

/* Degraded mode (no user namespaces on this host): the same sequence minus
 * everything that needs namespaces. Landlock is the filesystem wall: the
 * system directories read-only, the environment's own directory writable,
 * nothing else (the user's home, /tmp, other environments). seccomp denies
 * IP sockets since there is no network namespace. */
_noreturn_ static void setup_degraded(env_config *c, int sock, int *abi_out)
{
	sbx_err *e = NULL;
	char home[4300], tmp[4300];
	snprintf(home, sizeof(home), "%s/home", c->env_dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", c->env_dir);
	if (chdir(home) < 0)
		err_errno(&e, "chdir '%s'", home), fail(sock, e);
	if (wait_attached(sock, &e) < 0)
		fail(sock, e);
	struct rlimit nocore = {0, 0};
	if (setrlimit(RLIMIT_CORE, &nocore) < 0)
		err_errno(&e, "setrlimit core"), fail(sock, e);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		err_errno(&e, "no_new_privs"), fail(sock, e);
	/* Init adopts orphans so that ps and teardown see the whole tree. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	const landlock_rule rules[] = {
	    {"/usr", LL_READ | LL_EXEC},
	    {"/bin", LL_READ | LL_EXEC},
	    {"/sbin", LL_READ | LL_EXEC},
	    {"/lib", LL_READ | LL_EXEC},
	    {"/lib32", LL_READ | LL_EXEC},
	    {"/lib64", LL_READ | LL_EXEC},
	    {"/libx32", LL_READ | LL_EXEC},
	    {"/etc", LL_READ},
	    {"/opt", LL_READ | LL_EXEC},
	    {"/var/lib", LL_READ},
	    {"/proc", LL_READ},
	    {"/dev", LL_READ | LL_WRITE | LL_DEV},
	    {home, LL_READ | LL_EXEC | LL_WRITE},
	    {tmp, LL_READ | LL_EXEC | LL_WRITE},
	};
	int abi = landlock_restrict(rules, ARRAY_SIZE(rules), &e);
	if (abi < 0)
		fail(sock, e);
	if (abi == 0)
		err_set(&e, SBX_E_UNAVAILABLE, ENOSYS,
			"neither user namespaces nor Landlock are available: refusing to run without a "
			"filesystem wall"),
		    fail(sock, e);
	if (seccomp_apply_flags(SECCOMP_NO_INET, &e) < 0)
		fail(sock, e);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	*abi_out = abi;
	_cleanup_json_ json_t *ready =
	    json_pack("{s:s,s:i}", CTL_F_EV, CTL_EV_READY, CTL_F_LANDLOCK_ABI, abi);
	if (!ready || json_send(sock, ready, NULL, 0) < 0)
		_exit(1);
	init_main(c, sock);
}

_noreturn_ void setup_child(env_config *c, int sock)
{
	sbx_err *e = NULL;
	setup_fds f = {.run_dir = -1, .env_dir = -1, .mask = -1};
	char stage[4200], root[4300];

	/* 0. Die with the supervisor; it is the only one who can clean up. Keep
	 *    no descriptor but our socket (clone copied the supervisor's). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
		_exit(1);
	if (sock != 3 && (dup3(sock, 3, O_CLOEXEC) < 0 || (sock = 3) < 0))
		_exit(1);
	sys_close_range(4, ~0U, 0);
	startup_trace_pin(); /* SBX_TRACE_STARTUP=/path only: opened while we still have the host's view */

	/* 1. Wait until the supervisor wrote our uid/gid maps. Until then we
	 *    have no identity. */
	startup_mark("child: cloned");
	/* 1'. The seccomp program is built now, while the supervisor writes
	 *     our maps and opens our trees (the wait for "go"), so that the
	 *     message is usually there when we look; it is loaded last, at
	 *     step 12. Building is computation only (libseccomp, a memfd): it
	 *     needs no identity. On a hybrid host its short-lived heap is
	 *     charged to the supervisor's v1 memory group, which we leave at
	 *     step 1a. */
	_cleanup_(seccomp_prog_freep) seccomp_prog *filter = NULL;
	if (!c->degraded && seccomp_prepare(0, &filter, &e) < 0)
		fail(sock, e);
	startup_mark("child: seccomp program built");
	int cg[CGROUP_SELF_FDS_MAX];
	size_t n_cg = 0;
	if (wait_go(sock, &f, cg, &n_cg, &e) < 0)
		fail(sock, e);
	startup_mark("child: go received");
	/* 1a. Into the environment's cgroup (v1 hierarchies; v2 cloned us into
	 *     ours) before anything else is charged: moving ourselves, a single
	 *     thread, takes no global lock, where a write of our pid by the
	 *     supervisor waits for an RCU grace period (6-14 ms under load). */
	int moved = cgroup_self_move(cg, n_cg, &e);
	for (size_t i = 0; i < n_cg; i++)
		safe_close(cg[i]);
	if (moved < 0)
		fail(sock, e);
	if (n_cg)
		startup_mark("child: moved itself into its cgroup");
	if (c->degraded) {
		int abi = 0;
		f.run_dir = safe_close(f.run_dir); /* no mount namespace: paths are reachable as they are */
		f.env_dir = safe_close(f.env_dir);
		setup_degraded(c, sock, &abi);
	}
	log_debug("child: go");

	/* 1b. Reach our own directories through the supervisor's descriptors
	 *     (/proc/self/fd/N jumps to the directory without searching its
	 *     parents): SBX_ROOT and SBX_RUN may sit under a directory that our
	 *     uids cannot search, such as a `mktemp -d` one (mode 0700). Every
	 *     path below is built from these two; the host paths come back
	 *     after pivot_root. */
	_cleanup_free_ char *host_run_dir = NULL, *host_env_dir = NULL;
	if (dir_via_fd(&c->run_dir, f.run_dir, &host_run_dir) < 0 ||
	    dir_via_fd(&c->env_dir, f.env_dir, &host_env_dir) < 0)
		err_set(&e, SBX_E_INTERNAL, ENOMEM, "out of memory"), fail(sock, e);

	/* 2. Become root of our user namespace; drop supplementary groups
	 *    where the kernel lets us (not rootless: setgroups is denied). */
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		err_errno(&e, "become root in the user namespace"), fail(sock, e);
	if (!c->rootless && setgroups(0, NULL) < 0)
		err_errno(&e, "setgroups"), fail(sock, e);
	/* 2b. Changing credentials cleared the parent-death signal (prctl(2)):
	 *     arm it again, or a supervisor killed from here on (mid-snapshot,
	 *     say) would leave init and every command running. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		err_errno(&e, "arm the parent-death signal"), fail(sock, e);
	/* 2c. A share of the inotify limits of the user that runs sbx (the
	 *     host's /proc is still ours to write this namespace's values). */
	userns_share_inotify();

	/* 3. A time namespace for the commands (init itself stays outside it). */
	if (unshare(CLONE_NEWTIME) < 0 && errno != EINVAL)
		err_errno(&e, "unshare time namespace"), fail(sock, e);

	/* 4. Nothing we mount may propagate back to the host. */
	if (mount_make_private(&e) < 0)
		fail(sock, e);

	/* 5. Assemble the root in a private staging tmpfs (mount.c): lower
	 *    layers, the overlay, hidden paths, /dev, /proc, /tmp, the volumes,
	 *    file secrets. */
	snprintf(stage, sizeof(stage), "%s/mnt", c->run_dir);
	_cleanup_json_ json_t *setup_warnings = json_array();
	if (mount_assemble_root(c, &f, stage, root, sizeof(root), setup_warnings, &e) < 0)
		fail(sock, e);
	startup_mark("child: root assembled");
	/* 5c. CDI devices' nodes and mounts (devices.h): binds of host paths. */
	if (cdi_mount_apply(c, root, &e) < 0)
		fail(sock, e);
	log_debug("child: dev, proc, tmp, volumes mounted");
	/* 6. Switch root; the host tree is detached and unreachable by path. */
	if (mount_pivot(root, &e) < 0)
		fail(sock, e);
	startup_mark("child: pivoted");

	if (host_run_dir) {
		free(c->run_dir);
		c->run_dir = TAKE_PTR(host_run_dir);
	}
	if (host_env_dir) {
		free(c->env_dir);
		c->env_dir = TAKE_PTR(host_env_dir);
	}
	f.run_dir = safe_close(f.run_dir);
	f.env_dir = safe_close(f.env_dir);

	/* 7. Identity and network: our own hostname, loopback only. */
	if (sethostname(c->hostname, strlen(c->hostname)) < 0)
		err_errno(&e, "sethostname"), fail(sock, e);
	if (!streq(c->network, "open") && netns_loopback_up(&e) < 0)
		fail(sock, e);
	/* network allow and internet: the egress proxy's listening socket is
	 * made here, in the environment's network namespace, and served from
	 * outside by the supervisor; the only route out. */
	_cleanup_close_ int proxy_fd = net_proxied(c->network) ? netns_proxy_socket(&e) : -1;
	if (net_proxied(c->network) && proxy_fd < 0)
		fail(sock, e);

	/* 8. Resource limits that cgroups do not cover: no core dumps (a piped
	 *    core_pattern runs on the host), a bound on open files. Rootless,
	 *    where there is no pids cgroup, the pids limit as RLIMIT_NPROC:
	 *    counted per user namespace, so it bounds this environment's
	 *    processes, and a fork bomb cannot take the host's whole pid space. */
	struct rlimit nocore = {0, 0}, files = {65536, 65536};
	if (setrlimit(RLIMIT_CORE, &nocore) < 0)
		err_errno(&e, "setrlimit core"), fail(sock, e);
	(void)!setrlimit(RLIMIT_NOFILE, &files);
	if (c->rootless && c->limits.pids > 0) {
		struct rlimit nproc = {(rlim_t)c->limits.pids, (rlim_t)c->limits.pids};
		if (setrlimit(RLIMIT_NPROC, &nproc) < 0)
			err_errno(&e, "setrlimit nproc"), fail(sock, e);
	}

	startup_mark("child: hostname, net, rlimits");

	/* 8b. The supervisor moved us into the environment's cgroup while we
	 *     built the root; once it says so, a cgroup namespace rooted there. */
	if (wait_attached(sock, &e) < 0)
		fail(sock, e);
	startup_mark("child: attached received");
	log_debug("child: attached");
	if (unshare(CLONE_NEWCGROUP) < 0)
		err_errno(&e, "unshare cgroup namespace"), fail(sock, e);
	/* 8c. The default user must exist in the environment's own /etc/passwd
	 *     (our root since step 6): a create that names an unknown user fails
	 *     here, not at its first exec. Init resolves it again at each exec. */
	user_ident uid_check;
	if (c->user && user_resolve(c->user, c->id_count, c->rootless, &uid_check, &e) < 0)
		fail(sock, e);
	if (c->user && c->no_root && uid_check.uid == 0) /* a name for uid 0 under a non-root policy */
		err_set(&e, SBX_E_INVALID_ARGUMENT, EPERM,
			"user '%s' is uid 0: the policy runs commands as a user other "
			"than root",
			c->user),
		    fail(sock, e);
	/*     File secrets (0400 in a 0700 tmpfs) belong to that user, who
	 *     could not read them as root's; other users still cannot. */
	if (c->user && uid_check.uid != 0 && c->secrets_dirfd >= 0) {
		if (fchown(c->secrets_dirfd, uid_check.uid, uid_check.gid) < 0)
			err_errno(&e, "secrets: give /run/secrets to the user"), fail(sock, e);
		for (size_t i = 0; i < c->n_secret_files; i++)
			if (fchownat(c->secrets_dirfd, c->secret_files[i].name, uid_check.uid, uid_check.gid,
				     AT_SYMLINK_NOFOLLOW) < 0)
				err_errno(&e, "secrets: give /run/secrets/%s to the user",
					  c->secret_files[i].name),
				    fail(sock, e);
	}

	/* 9. Capabilities: keep only the documented safe set. After this,
	 *    nothing below may need CAP_SYS_ADMIN. */
	if (caps_drop(&e) < 0)
		fail(sock, e);

	/* 10. no_new_privs: setuid/setcap binaries gain nothing; also what lets
	 *     Landlock and seccomp be applied without CAP_SYS_ADMIN. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		err_errno(&e, "no_new_privs"), fail(sock, e);

	startup_mark("child: user, caps, nnp");
	log_debug("child: caps, nnp");
	/* 11. Landlock: a second wall tied to the new root's inode. */
	int abi = apply_landlock(&e);
	if (abi < 0)
		fail(sock, e);

	startup_mark("child: landlock");
	log_debug("child: landlock");
	/* 12. seccomp last: it denies mount and friends that the steps above used
	 *     (the program built at step 1'). */
	if (seccomp_load_prog(filter, &e) < 0)
		fail(sock, e);
	seccomp_prog_free(TAKE_PTR(filter)); /* init_main() never returns */

	startup_mark("child: seccomp");
	log_debug("child: seccomp");
	/* 13. Init is not dumpable: no ptrace, no /proc/1/mem from commands. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	for (size_t i = 0; i < c->n_lowers; i++)
		safe_close(f.lowers[i]);
	for (size_t i = 0; i < c->n_layers; i++)
		safe_close(f.layers[i]);
	safe_close(f.upper);
	safe_close(f.work);

	_cleanup_json_ json_t *ready = json_pack("{s:s,s:i,s:O}", CTL_F_EV, CTL_EV_READY, CTL_F_LANDLOCK_ABI,
						 abi, CTL_F_WARNINGS, setup_warnings);
	if (!ready || json_send(sock, ready, proxy_fd >= 0 ? &proxy_fd : NULL, proxy_fd >= 0 ? 1 : 0) < 0)
		_exit(1);
	startup_mark("child: ready sent");
	if (startup_trace_enabled()) { /* stderr mode: the creator's stderr is not init's to keep */
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null >= 0 && null != 2) {
			dup2(null, 2);
			close(null);
		}
	}
	proxy_fd = safe_close(proxy_fd);
	init_main(c, sock);
}
