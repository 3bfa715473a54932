/* Landlock: filesystem allowlist plus (ABI >= 6) signal and abstract unix
 * socket scoping, through the raw syscalls in util/syscalls.h.
 *
 * What each ABI adds to what we handle:
 *   1  the 13 basic filesystem rights (execute .. make_sym). Without REFER
 *      handled, ABI 1 always denies renaming or linking a file into another
 *      directory; that is a kernel limit, not ours.
 *   2  REFER (cross-directory rename/link), granted with LL_WRITE
 *   3  TRUNCATE, granted with LL_WRITE
 *   4  TCP bind/connect: deliberately not handled here (network policy is
 *      the network namespace's and the egress proxy's job)
 *   5  IOCTL_DEV, granted with LL_DEV
 *   6  scopes: signals and abstract unix sockets cannot reach processes
 *      outside the domain; always set
 *   7+ audit logging controls only; nothing to add
 *
 * Contract: the caller has set no_new_privs (or holds CAP_SYS_ADMIN),
 * otherwise landlock_restrict_self fails with EPERM. */
#include "runtime/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "util/syscalls.h"

#define LL_FS_ABI1                                                                                           \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |         \
	 LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |      \
	 LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |          \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |       \
	 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* Rights that apply to a file itself; the kernel rejects others (EINVAL) in a
 * rule whose path is not a directory. */
#define LL_FS_FILE                                                                                           \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |         \
	 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define LL_FS_WRITE                                                                                          \
	(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_REMOVE_DIR |       \
	 LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_DIR |        \
	 LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SOCK |         \
	 LANDLOCK_ACCESS_FS_REFER)

int landlock_abi(void)
{
	int abi = sys_landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	/* ENOSYS: not built in; EOPNOTSUPP: built in but not enabled at boot. */
	return abi < 0 ? 0 : abi;
}

/* Everything this ABI can enforce on the filesystem. */
static uint64_t landlock_handled_fs(int abi)
{
	uint64_t fs = LL_FS_ABI1;
	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return fs;
}

static uint64_t landlock_rights(unsigned access)
{
	uint64_t r = 0;
	if (access & LL_READ)
		r |= LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	if (access & LL_EXEC)
		r |= LANDLOCK_ACCESS_FS_EXECUTE;
	if (access & LL_WRITE)
		r |= LL_FS_WRITE; /* MAKE_CHAR and MAKE_BLOCK are never granted */
	if (access & LL_DEV)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

static int landlock_add_path(int ruleset_fd, const landlock_rule *rule, uint64_t handled, sbx_err **err)
{
	_cleanup_close_ int fd = RETRY_EINTR(open(rule->path, O_PATH | O_CLOEXEC));
	struct stat st;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* documented: missing paths are skipped */
		return err_errno(err, "landlock: open '%s'", rule->path);
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "landlock: stat '%s'", rule->path);

	struct sbx_landlock_path_beneath_attr pb = {
	    .allowed_access = landlock_rights(rule->access) & handled,
	    .parent_fd = fd,
	};
	if (!S_ISDIR(st.st_mode))
		pb.allowed_access &= LL_FS_FILE;
	if (pb.allowed_access == 0)
		return 0; /* nothing this ABI can grant here (the kernel would say ENOMSG) */
	if (sys_landlock_add_rule(ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return err_errno(err, "landlock: add rule for '%s'", rule->path);
	return 0;
}

static int landlock_restrict_scoped(const landlock_rule *rules, size_t n_rules, bool scoped, sbx_err **err)
{
	int abi = landlock_abi();
	if (abi <= 0)
		return 0;

	struct sbx_landlock_ruleset_attr attr = {.handled_access_fs = landlock_handled_fs(abi)};
	/* Pass the size of the struct as this ABI knows it. */
	size_t size = offsetof(struct sbx_landlock_ruleset_attr, handled_access_net);
	if (abi >= 4)
		size = offsetof(struct sbx_landlock_ruleset_attr, scoped);
	if (abi >= 6 && scoped) {
		attr.scoped = SBX_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | SBX_LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}

	_cleanup_close_ int ruleset_fd = sys_landlock_create_ruleset(&attr, size, 0);
	if (ruleset_fd < 0) {
		if (errno == ENOSYS || errno == EOPNOTSUPP)
			return 0;
		return err_errno(err, "landlock: create ruleset (ABI %d)", abi);
	}

	for (size_t i = 0; i < n_rules; i++) {
		int r = landlock_add_path(ruleset_fd, &rules[i], attr.handled_access_fs, err);
		if (r < 0)
			return r;
	}

	/* Fails with EPERM unless no_new_privs is set (see the contract above). */
	if (sys_landlock_restrict_self(ruleset_fd, 0) < 0)
		return err_errno(err, "landlock: restrict self");
	return abi;
}

int landlock_restrict(const landlock_rule *rules, size_t n_rules, sbx_err **err)
{
	return landlock_restrict_scoped(rules, n_rules, true, err);
}

int landlock_restrict_fs(const landlock_rule *rules, size_t n_rules, sbx_err **err)
{
	return landlock_restrict_scoped(rules, n_rules, false, err);
}
