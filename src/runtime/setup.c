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
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/caps.h"
#include "runtime/devices.h"
#include "runtime/hide.h"
#include "runtime/landlock.h"
#include "runtime/mount.h"
#include "runtime/netns.h"
#include "runtime/quota.h"
#include "runtime/runtime.h"
#include "runtime/seccomp.h"
#include "runtime/user.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/syscalls.h"

typedef struct setup_fds {
	int upper, work;
	int lowers[FD_MSG_MAX_FDS];
	size_t n_lowers;
	int volumes[FD_MSG_MAX_FDS];
	size_t n_volumes;
	int layers[FD_MSG_MAX_FDS];
	size_t n_layers;
	int run_dir, env_dir; /* O_PATH descriptors of c->run_dir and c->env_dir, or -1 */
} setup_fds;

_noreturn_ static void fail(int sock, sbx_err *e)
{
	_cleanup_json_ json_t *m = json_pack("{s:s,s:s,s:s,s:i}", "ev", "error", "code",
					     sbx_code_name(sbx_err_code(e)), "message", sbx_err_message(e), "errno",
					     sbx_err_errno(e));
	if (m)
		(void)json_send(sock, m, NULL, 0);
	_exit(1);
}

/* Waits for the supervisor's "go": maps written, and the prepared mount
 * trees attached as fds. */
static int wait_go(int sock, setup_fds *f, sbx_err **err)
{
	int fds[FD_MSG_MAX_FDS];
	size_t n = FD_MSG_MAX_FDS;
	_cleanup_json_ json_t *m = NULL;
	int r = json_recv(sock, &m, fds, &n);
	if (r <= 0)
		return err_errnum(err, r ? r : EPIPE, "wait for the supervisor");
	if (!streq(json_str(m, "op") ?: "", "go"))
		return err_set(err, SBX_E_INTERNAL, EPROTO, "unexpected message from the supervisor");
	int64_t u = json_int(m, "upper", -1), w = json_int(m, "work", -1);
	f->upper = u >= 0 && (size_t)u < n ? fds[u] : -1;
	f->work = w >= 0 && (size_t)w < n ? fds[w] : -1;
	int64_t rd = json_int(m, "run_dir", -1), ed = json_int(m, "env_dir", -1);
	f->run_dir = rd >= 0 && (size_t)rd < n ? fds[rd] : -1;
	f->env_dir = ed >= 0 && (size_t)ed < n ? fds[ed] : -1;
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
	return 0;
}

static int wait_attached(int sock, sbx_err **err)
{
	_cleanup_json_ json_t *m = NULL;
	int r = json_recv(sock, &m, NULL, NULL);
	if (r <= 0)
		return err_errnum(err, r ? r : EPIPE, "wait for the supervisor");
	if (!streq(json_str(m, "op") ?: "", "attached"))
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

/* A lower layer as a path for overlay's options: a detached tree from the
 * supervisor (idmapped) is attached under the staging tmpfs; a directory fd
 * of our own mount namespace is used in place through /proc/self/fd. */
static int lower_path(const char *stage, const char *prefix, size_t i, int fd, bool is_tree, char *out, size_t n,
		      sbx_err **err)
{
	if (!is_tree) {
		snprintf(out, n, "/proc/self/fd/%d", fd);
		return 0;
	}
	snprintf(out, n, "%s/%s%zu", stage, prefix, i);
	if (mkdir(out, 0755) < 0)
		return err_errno(err, "mkdir '%s'", out);
	return mount_attach(fd, out, err);
}

static int append(char *buf, size_t n, const char *part, sbx_err **err)
{
	size_t len = strlen(buf);
	int k = snprintf(buf + len, n - len, "%s%s", len ? ":" : "", part);
	if (k < 0 || (size_t)k >= n - len)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "too many layers for one overlay mount");
	return 0;
}

/* The host template: overlayfs refuses a lower layer that contains another
 * layer (the store, snapshot layers) or whose mount has locked submounts
 * (rootless), so "/" is never a layer. The root overlay gets the snapshot
 * layers over the mask; each system directory c->lowers[i] ("/usr", ...)
 * gets its own overlay: the layers' <dir> subtrees, mask/<dir>, the host
 * directory. Upper layout is what one overlay would give: upper/usr, ... */
static int mount_split_dirs(env_config *c, const char *stage, const char *root, const char *mask_dir,
			    const char *hide_dir, char layer_paths[][4400], char lower_paths[][4400], sbx_err **err)
{
	char base[4300], up[4400], wk[4400], part[4500];
	static char lowerdir[16384];
	if (c->ephemeral)
		snprintf(base, sizeof(base), "%s", stage);
	else
		quota_layer_base(c->env_dir, c->disk_bytes, base, sizeof(base));
	for (size_t i = 0; i < c->n_lowers; i++) {
		const char *d = c->lowers[i] + 1;
		snprintf(up, sizeof(up), "%s/upper/%s", base, d);
		snprintf(wk, sizeof(wk), "%s/work/%s", base, d);
		/* Hidden as a whole (hide.c): no overlay, and no name in the upper. */
		if (hide_dir && hide_is_whiteout(hide_dir, d)) {
			(void)rmdir(up);
			continue;
		}
		if ((mkdir(up, 0755) < 0 && errno != EEXIST) || (mkdir(wk, 0700) < 0 && errno != EEXIST))
			return err_errno(err, "create '%s'", up);
		if (!c->rootless)
			(void)!chown(up, 0, 0); /* env root, not whoever created it */
		lowerdir[0] = 0;
		/* Hidden paths (hide.c): their whiteout layer on top of all. */
		struct stat hst;
		snprintf(part, sizeof(part), "%.4300s/%.150s", hide_dir ? hide_dir : "", d);
		if (hide_dir && lstat(part, &hst) == 0 && S_ISDIR(hst.st_mode) && append(lowerdir, sizeof(lowerdir), part, err) < 0)
			return -1;
		for (size_t k = 0; k < c->n_layers; k++) {
			struct stat st;
			snprintf(part, sizeof(part), "%.4300s/%.150s", layer_paths[k], d);
			if (lstat(part, &st) == 0 && S_ISDIR(st.st_mode) && append(lowerdir, sizeof(lowerdir), part, err) < 0)
				return -1;
		}
		snprintf(part, sizeof(part), "%s/%s", mask_dir, d);
		if (append(lowerdir, sizeof(lowerdir), part, err) < 0 ||
		    append(lowerdir, sizeof(lowerdir), lower_paths[i], err) < 0)
			return -1;
		if (mount_overlay_dir(root, d, lowerdir, up, wk, err) < 0)
			return -1;
	}
	return 0;
}

/* Points *path at "/proc/self/fd/<fd>" (fd >= 0), keeping the host path in
 * *ret_host. Nothing to do without a descriptor (an older supervisor). */
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

char *degraded_home(const env_config *c) { return fs_path_join(c->env_dir, "home"); }

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
		{"/usr", LL_READ | LL_EXEC},   {"/bin", LL_READ | LL_EXEC},  {"/sbin", LL_READ | LL_EXEC},
		{"/lib", LL_READ | LL_EXEC},   {"/lib32", LL_READ | LL_EXEC}, {"/lib64", LL_READ | LL_EXEC},
		{"/libx32", LL_READ | LL_EXEC}, {"/etc", LL_READ},           {"/opt", LL_READ | LL_EXEC},
		{"/var/lib", LL_READ},          {"/proc", LL_READ},           {"/dev", LL_READ | LL_WRITE | LL_DEV},
		{home, LL_READ | LL_EXEC | LL_WRITE}, {tmp, LL_READ | LL_EXEC | LL_WRITE},
	};
	int abi = landlock_restrict(rules, ARRAY_SIZE(rules), &e);
	if (abi < 0)
		fail(sock, e);
	if (abi == 0)
		err_set(&e, SBX_E_UNAVAILABLE, ENOSYS,
			"neither user namespaces nor Landlock are available: refusing to run without a filesystem wall"),
			fail(sock, e);
	if (seccomp_apply_flags(SECCOMP_NO_INET, &e) < 0)
		fail(sock, e);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	*abi_out = abi;
	_cleanup_json_ json_t *ready = json_pack("{s:s,s:i}", "ev", "ready", "landlock_abi", abi);
	if (!ready || json_send(sock, ready, NULL, 0) < 0)
		_exit(1);
	init_main(c, sock);
}

_noreturn_ void setup_child(env_config *c, int sock)
{
	sbx_err *e = NULL;
	setup_fds f = {.run_dir = -1, .env_dir = -1};
	char stage[4200], root[4300];

	/* 0. Die with the supervisor; it is the only one who can clean up. Keep
	 *    no descriptor but our socket (clone copied the supervisor's). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
		_exit(1);
	if (sock != 3 && (dup3(sock, 3, O_CLOEXEC) < 0 || (sock = 3) < 0))
		_exit(1);
	sys_close_range(4, ~0U, 0);

	/* 1. Wait until the supervisor wrote our uid/gid maps. Until then we
	 *    have no identity. */
	if (wait_go(sock, &f, &e) < 0)
		fail(sock, e);
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

	/* 3. A time namespace for the commands (init itself stays outside it). */
	if (unshare(CLONE_NEWTIME) < 0 && errno != EINVAL)
		err_errno(&e, "unshare time namespace"), fail(sock, e);

	/* 4. Nothing we mount may propagate back to the host. */
	if (mount_make_private(&e) < 0)
		fail(sock, e);

	/* 5. Assemble the root in a private staging tmpfs: lower layers (idmapped
	 *    by the supervisor, or cloned here when rootless), the overlay, then
	 *    /dev, /proc, /tmp and the volumes. */
	snprintf(stage, sizeof(stage), "%s/mnt", c->run_dir);
	char stage_opts[64] = "mode=0755";
	if (c->ephemeral && c->disk_bytes > 0) /* the writable layer lives here: its size is the quota */
		snprintf(stage_opts, sizeof(stage_opts), "mode=0755,size=%lld", (long long)c->disk_bytes);
	if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, stage_opts) < 0)
		err_errno(&e, "mount staging tmpfs on '%s'", stage), fail(sock, e);
	/* Lower layers as paths: the template's (trees from the supervisor, or
	 * opened here when rootless) and the snapshot layers. */
	static char lower_paths[FD_MSG_MAX_FDS][4400], layer_paths[FD_MSG_MAX_FDS][4400];
	for (size_t i = 0; i < c->n_lowers; i++) {
		bool tree = i < f.n_lowers && f.lowers[i] >= 0;
		if (!tree && (f.lowers[i] = open(c->lowers[i], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			err_errno(&e, "open lower layer '%s'", c->lowers[i]), fail(sock, e);
		if (lower_path(stage, "l", i, f.lowers[i], tree, lower_paths[i], sizeof(lower_paths[i]), &e) < 0)
			fail(sock, e);
	}
	for (size_t i = 0; i < c->n_layers; i++) {
		bool tree = i < f.n_layers && f.layers[i] >= 0;
		if (!tree && (f.layers[i] = open(c->layers[i], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			err_errno(&e, "open snapshot layer '%s'", c->layers[i]), fail(sock, e);
		if (lower_path(stage, "s", i, f.layers[i], tree, layer_paths[i], sizeof(layer_paths[i]), &e) < 0)
			fail(sock, e);
	}
	/* upper/ and work/ are opened here, in our mount namespace: overlay
	 * refuses layers whose mount belongs to another namespace. */
	if (!c->ephemeral) {
		char lbase[4250];
		quota_layer_base(c->env_dir, c->disk_bytes, lbase, sizeof(lbase));
		snprintf(root, sizeof(root), "%s/upper", lbase);
		f.upper = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		snprintf(root, sizeof(root), "%s/work%s", lbase, c->mask ? "/_root" : "");
		if (c->mask)
			(void)mkdir(root, 0700);
		f.work = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (f.upper < 0 || f.work < 0)
			err_errno(&e, "open '%s'", root), fail(sock, e);
	}
	char mask_dir[4300];
	if (c->mask) {
		snprintf(mask_dir, sizeof(mask_dir), "%s/mask", stage);
		_cleanup_close_ int mfd = -1;
		int q = mkdir(mask_dir, 0755) < 0 ? -errno : 0;
		if (q == 0 && (mfd = open(mask_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			q = -errno;
		if (q == 0)
			q = mask_replay(c->mask, mfd, !c->rootless);
		if (q < 0)
			err_errnum(&e, q, "build the mask layer in '%s'", mask_dir), fail(sock, e);
	}
	/* Host template: "/" is never a layer (see mount_split_dirs). The root
	 * overlay: snapshot layers over the mask (host) or the template dir. */
	bool split = c->mask != NULL;
	static char lowerdir[16384];
	lowerdir[0] = 0;
	for (size_t i = 0; i < c->n_layers; i++)
		if (append(lowerdir, sizeof(lowerdir), layer_paths[i], &e) < 0)
			fail(sock, e);
	for (size_t i = 0; i < (split ? 1 : c->n_lowers); i++)
		if (append(lowerdir, sizeof(lowerdir), split ? mask_dir : lower_paths[i], &e) < 0)
			fail(sock, e);
	log_debug("child: mask replayed");
	if (mount_rootfs(stage, lowerdir, f.upper, f.work, c->ephemeral, &e) < 0)
		fail(sock, e);
	snprintf(root, sizeof(root), "%s/root", stage);
	if (split && mount_split_dirs(c, stage, root, mask_dir, NULL, layer_paths, lower_paths, &e) < 0)
		fail(sock, e);
	/* 5a. Hidden paths (hide.c): those in the layers become whiteouts in a
	 *     layer above all others, so the overlays are mounted again with it
	 *     (upper and work are untouched); the rest are covered below. */
	_cleanup_strv_free_ char **hide_later = NULL;
	_cleanup_json_ json_t *setup_warnings = json_array();
	/* Rootless, host root is not mapped: what it owns in the host template
	 * appears owned by nobody (mask.c mirrors the directories, so files can
	 * be created, replaced and removed). Say so once, at create. */
	if (c->rootless && c->mask && setup_warnings)
		json_array_append_new(setup_warnings,
				      json_string("rootless: the host template's files owned by host root appear owned "
						  "by nobody: the environment can create, remove and replace (write anew, "
						  "rename over) files in /etc, /var and /opt, but not change one in place "
						  "(`>>`, `sed` without -i); run sbx as root for that"));
	bool remount = false;
	char hide_dir[4300];
	snprintf(hide_dir, sizeof(hide_dir), "%s/hide", stage);
	if (c->hidden && hide_prepare(c, root, hide_dir, &remount, &hide_later, setup_warnings, &e) < 0)
		fail(sock, e);
	if (remount) {
		static char hidden_lowerdir[16384 + 4400];
		snprintf(hidden_lowerdir, sizeof(hidden_lowerdir), "%s:%s", hide_dir, lowerdir);
		if (umount2(root, MNT_DETACH) < 0)
			err_errno(&e, "unmount '%s'", root), fail(sock, e);
		if (mount_rootfs(stage, hidden_lowerdir, f.upper, f.work, c->ephemeral, &e) < 0 ||
		    (split && mount_split_dirs(c, stage, root, mask_dir, hide_dir, layer_paths, lower_paths, &e) < 0))
			err_wrap(&e, "hidden paths"), fail(sock, e);
	}
	log_debug("child: rootfs mounted");
	if (mount_dev(root, c->rootless, &e) < 0 || mount_proc(root, &e) < 0 || mount_tmp(root, &e) < 0)
		fail(sock, e);
	for (size_t i = 0; i < c->n_volumes; i++) {
		env_volume *v = &c->volumes[i];
		int t = i < f.n_volumes ? f.volumes[i] : -1;
		if (t < 0 && (t = mount_clone_tree(v->host, &e)) < 0)
			fail(sock, e);
		struct stat st;
		bool is_dir = fstat(t, &st) < 0 || S_ISDIR(st.st_mode);
		if (mount_volume(root, t, v->path, v->readonly, is_dir, &e) < 0)
			err_wrap(&e, "volume '%s'", v->host), fail(sock, e);
		safe_close(t);
	}
	/* 5b. File secrets on a tmpfs of their own (never the writable layer),
	 *     then hidden paths under the mounts above get empty covers. */
	if (secrets_mount(c, root, &e) < 0 || hide_cover(root, stage, hide_later, &e) < 0)
		fail(sock, e);
	/* 5c. CDI devices' nodes and mounts (devices.h): binds of host paths. */
	if (cdi_mount_apply(c, root, &e) < 0)
		fail(sock, e);

	log_debug("child: dev, proc, tmp, volumes mounted");
	/* 6. Switch root; the host tree is detached and unreachable by path. */
	if (mount_pivot(root, &e) < 0)
		fail(sock, e);

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
	/* network allow: the egress proxy's listening socket is made here, in
	 * the environment's network namespace, and served from outside by the
	 * supervisor; the only route out. */
	_cleanup_close_ int proxy_fd = streq(c->network, "allow") ? netns_proxy_socket(&e) : -1;
	if (streq(c->network, "allow") && proxy_fd < 0)
		fail(sock, e);

	/* 8. Resource limits that cgroups do not cover: no core dumps (a piped
	 *    core_pattern runs on the host), a bound on open files. */
	struct rlimit nocore = {0, 0}, files = {65536, 65536};
	if (setrlimit(RLIMIT_CORE, &nocore) < 0)
		err_errno(&e, "setrlimit core"), fail(sock, e);
	(void)!setrlimit(RLIMIT_NOFILE, &files);

	/* 8b. The supervisor moved us into the environment's cgroup while we
	 *     built the root; once it says so, a cgroup namespace rooted there. */
	if (wait_attached(sock, &e) < 0)
		fail(sock, e);
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
		err_set(&e, SBX_E_INVALID_ARGUMENT, EPERM, "user '%s' is uid 0: the policy runs commands as a user other "
			"than root", c->user), fail(sock, e);
	/*     File secrets (0400 in a 0700 tmpfs) belong to that user, who
	 *     could not read them as root's; other users still cannot. */
	if (c->user && uid_check.uid != 0 && c->secrets_dirfd >= 0) {
		if (fchown(c->secrets_dirfd, uid_check.uid, uid_check.gid) < 0)
			err_errno(&e, "secrets: give /run/secrets to the user"), fail(sock, e);
		for (size_t i = 0; i < c->n_secret_files; i++)
			if (fchownat(c->secrets_dirfd, c->secret_files[i].name, uid_check.uid, uid_check.gid,
				     AT_SYMLINK_NOFOLLOW) < 0)
				err_errno(&e, "secrets: give /run/secrets/%s to the user", c->secret_files[i].name),
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

	log_debug("child: caps, nnp");
	/* 11. Landlock: a second wall tied to the new root's inode. */
	int abi = apply_landlock(&e);
	if (abi < 0)
		fail(sock, e);

	log_debug("child: landlock");
	/* 12. seccomp last: it denies mount and friends that the steps above used. */
	if (seccomp_apply(&e) < 0)
		fail(sock, e);

	log_debug("child: seccomp");
	/* 13. Init is not dumpable: no ptrace, no /proc/1/mem from commands. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	for (size_t i = 0; i < c->n_lowers; i++)
		safe_close(f.lowers[i]);
	for (size_t i = 0; i < c->n_layers; i++)
		safe_close(f.layers[i]);
	safe_close(f.upper);
	safe_close(f.work);

	_cleanup_json_ json_t *ready = json_pack("{s:s,s:i,s:O}", "ev", "ready", "landlock_abi", abi, "warnings",
						 setup_warnings);
	if (!ready || json_send(sock, ready, proxy_fd >= 0 ? &proxy_fd : NULL, proxy_fd >= 0 ? 1 : 0) < 0)
		_exit(1);
	proxy_fd = safe_close(proxy_fd);
	init_main(c, sock);
}
