/* The last steps of a container process (create's init and every exec)
 * before execve, in an order where each step still has the privilege it
 * needs:
 *   terminal -> rlimits, oom_score_adj -> Landlock -> seccomp (the spec's,
 *   then sbx's deny list: the kernel applies the stricter answer of the two
 *   filters) -> bounding set -> groups, gid, uid (keeping caps) -> the
 *   spec's capability sets (intersected with sbx's safe set) -> ambient ->
 *   no_new_privs -> umask, cwd.
 * Landlock and seccomp come before capabilities are dropped: without
 * no_new_privs (Docker's default) they need CAP_SYS_ADMIN to load. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "runc/runc.h"
#include "runtime/caps.h"
#include "runtime/landlock.h"
#include "runtime/seccomp.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/macro.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static bool executable(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

char *runc_find_exe(const oci_process *p, sbx_err **err)
{
	const char *a0 = p->args[0];
	if (strchr(a0, '/')) {
		struct stat st;
		if (stat(a0, &st) < 0) {
			err_set(err, SBX_E_NOT_FOUND, errno, "exec: \"%s\": stat %s: %s", a0, a0, strerror(errno));
			return NULL;
		}
		if (S_ISDIR(st.st_mode) || access(a0, X_OK) < 0) {
			err_set(err, SBX_E_INVALID_ARGUMENT, EACCES, "exec: \"%s\": permission denied", a0);
			return NULL;
		}
		char *r = strdup(a0);
		if (!r)
			err_oom(err);
		return r;
	}
	const char *path = oci_env_get(p->env, "PATH") ?: DEFAULT_PATH;
	_cleanup_free_ char *dup = strdup(path);
	if (!dup) {
		err_oom(err);
		return NULL;
	}
	char *save = NULL;
	for (char *d = strtok_r(dup, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char *cand = NULL;
		if (asprintf(&cand, "%s/%s", *d ? d : ".", a0) < 0) {
			err_oom(err);
			return NULL;
		}
		if (executable(cand))
			return cand;
		free(cand);
	}
	err_set(err, SBX_E_NOT_FOUND, ENOENT, "exec: \"%s\": executable file not found in $PATH", a0);
	return NULL;
}

char **runc_exec_env(const oci_process *p)
{
	size_t n = 0;
	while (p->env[n])
		n++;
	char **v = calloc(n + 2, sizeof(char *));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = p->env[i];
	if (oci_env_get(p->env, "HOME"))
		return v;
	/* As runc: HOME from the container's /etc/passwd, "/" if the uid has no entry. */
	const char *home = "/";
	_cleanup_free_ char *pw = NULL;
	char *found = NULL;
	if (fs_read_file("/etc/passwd", 1 << 20, &pw, NULL) == 0) {
		char *save = NULL;
		for (char *l = strtok_r(pw, "\n", &save); l && !found; l = strtok_r(NULL, "\n", &save)) {
			/* name:x:uid:gid:gecos:home:shell */
			char *f[7] = {0};
			size_t k = 0;
			for (char *c = l; k < 7; k++) {
				f[k] = c;
				c = strchr(c, ':');
				if (!c)
					break;
				*c++ = 0;
			}
			if (k >= 5 && f[2] && f[5] && strtoul(f[2], NULL, 10) == p->user.uid && *f[5])
				found = f[5];
		}
	}
	if (found)
		home = found;
	static char buf[4200];
	snprintf(buf, sizeof(buf), "HOME=%s", home);
	v[n] = buf;
	return v;
}

/* A pty whose master goes to the engine over the console socket (runc's
 * protocol: one message, the name as data, the master as SCM_RIGHTS); the
 * slave becomes our controlling terminal and stdio. */
static int setup_terminal(int sock, uid_t uid, sbx_err **err)
{
	_cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return err_errno(err, "terminal: open /dev/ptmx");
	if (unlockpt(master) < 0)
		return err_errno(err, "terminal: unlockpt");
	char name[128];
	if (ptsname_r(master, name, sizeof(name)) != 0)
		return err_errno(err, "terminal: ptsname");
	_cleanup_close_ int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return err_errno(err, "terminal: open '%s'", name);
	(void)!fchown(slave, uid, (gid_t)-1);
	int r = fd_send_msg(sock, "/dev/ptmx", strlen("/dev/ptmx"), &master, 1);
	if (r < 0)
		return err_errnum(err, -r, "terminal: send the pty master on the console socket");
	if (setsid() < 0 && errno != EPERM)
		return err_errno(err, "terminal: setsid");
	if (ioctl(slave, TIOCSCTTY, 0) < 0)
		return err_errno(err, "terminal: TIOCSCTTY");
	for (int fd = 0; fd < 3; fd++)
		if (dup2(slave, fd) < 0)
			return err_errno(err, "terminal: dup2");
	return 0;
}

static int drop_bounding(const oci_caps *want, unsigned walls, sbx_err **err)
{
	uint64_t mask = (walls & RUNC_WALL_CAPS) ? caps_safe_set : ~0ULL;
	uint64_t bnd = want->bounding & mask;
	for (int cap = 0; cap <= 63; cap++) {
		if (bnd & (1ULL << cap))
			continue;
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0)
			break; /* beyond the kernel's last capability */
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return err_errno(err, "caps: drop %d from the bounding set", cap);
	}
	return 0;
}

/* After the user switch (PR_SET_KEEPCAPS kept permitted; effective is
 * empty now): the spec's sets, within sbx's safe set unless that wall is off. */
static int set_caps(const oci_caps *want, unsigned walls, sbx_err **err)
{
	uint64_t mask = (walls & RUNC_WALL_CAPS) ? caps_safe_set : ~0ULL;
	uint64_t eff = want->effective & mask, inh = want->inheritable & mask, prm = want->permitted & mask,
		 amb = want->ambient & mask;
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {
	    {.effective = (uint32_t)eff, .permitted = (uint32_t)prm, .inheritable = (uint32_t)inh},
	    {.effective = (uint32_t)(eff >> 32), .permitted = (uint32_t)(prm >> 32), .inheritable = (uint32_t)(inh >> 32)},
	};
	if (syscall(SYS_capset, &hdr, data) < 0)
		return err_errno(err, "caps: capset");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return err_errno(err, "caps: clear ambient");
	/* The kernel allows an ambient capability only if it is permitted and
	 * inheritable; others are skipped, as runc does (runc spec lists
	 * ambient capabilities without inheritable ones). */
	amb &= prm & inh;
	for (int cap = 0; cap <= 63; cap++)
		if ((amb & (1ULL << cap)) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) < 0)
			return err_errno(err, "caps: raise ambient %d", cap);
	return 0;
}

static int set_user(const oci_user *u, sbx_err **err)
{
	if (setgroups(u->n_additional_gids, u->additional_gids) < 0 && errno != EPERM)
		return err_errno(err, "setgroups");
	if (setresgid(u->gid, u->gid, u->gid) < 0)
		return err_errno(err, "setgid %u", u->gid);
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return err_errno(err, "keepcaps");
	if (setresuid(u->uid, u->uid, u->uid) < 0)
		return err_errno(err, "setuid %u", u->uid);
	(void)prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	return 0;
}

int runc_proc_finalize(const runc_proc_ctx *c, sbx_err **err)
{
	const oci_process *p = c->p;
	if (p->terminal && c->console_sock >= 0 && setup_terminal(c->console_sock, p->user.uid, err) < 0)
		return -1;
	for (size_t i = 0; i < p->n_rlimits; i++) {
		struct rlimit rl = {.rlim_cur = p->rlimits[i].soft, .rlim_max = p->rlimits[i].hard};
		if (setrlimit(p->rlimits[i].resource, &rl) < 0)
			return err_errno(err, "setrlimit %d", p->rlimits[i].resource);
	}
	if (p->has_oom_score_adj) {
		char v[16];
		snprintf(v, sizeof(v), "%d", p->oom_score_adj);
		if (fs_write_string("/proc/self/oom_score_adj", v) < 0)
			return err_errno(err, "oom_score_adj");
	}
	/* The working directory first: Landlock and the user switch below
	 * must not keep us from reaching it. Created as runc does. */
	if (chdir(p->cwd) < 0) {
		if (errno != ENOENT || fs_mkdir_p(p->cwd, 0755) < 0 || chdir(p->cwd) < 0)
			return err_errno(err, "chdir to cwd (\"%s\") set in config.json", p->cwd);
	}
	if (c->walls & RUNC_WALL_LANDLOCK) {
		static const landlock_rule rules[] = {{"/", LL_READ | LL_EXEC | LL_WRITE | LL_DEV}};
		if (landlock_restrict_fs(rules, ARRAY_SIZE(rules), err) < 0)
			return err_wrap(err, "landlock");
	}
	if (c->seccomp && runc_seccomp_load_spec(c->seccomp, err) < 0)
		return err_wrap(err, "the spec's seccomp profile");
	if ((c->walls & RUNC_WALL_SECCOMP) && seccomp_apply(err) < 0)
		return err_wrap(err, "sbx's seccomp deny list");
	oci_caps none = {0};
	if (drop_bounding(p->caps.present ? &p->caps : &none, c->walls, err) < 0)
		return -1;
	if (set_user(&p->user, err) < 0)
		return -1;
	if (set_caps(p->caps.present ? &p->caps : &none, c->walls, err) < 0)
		return -1;
	if (p->no_new_privileges && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_errno(err, "no_new_privs");
	umask(p->user.has_umask ? p->user.umask : 022);
	return 0;
}
