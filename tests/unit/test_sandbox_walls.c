/* The walls, each applied in a forked child and checked from inside it.
 *
 * A child function returns 0 when every check holds, or the line number of
 * the first that failed (exit status is that & 0xff, and the line is printed
 * on stderr). Tests that need root (seccomp's mount check, caps) run as root;
 * the host is never changed: mount checks run in a private mount namespace,
 * caps in a fresh user namespace. */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/caps.h"
#include "runtime/landlock.h"
#include "runtime/seccomp.h"
#include "unit.h"

#define EXPECT(cond)                                                                                         \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			fprintf(stderr, "  child %s:%d: %s (errno %s)\n", __FILE__, __LINE__, #cond,         \
				strerrorname_np(errno) ?: "0");                                              \
			return __LINE__;                                                                     \
		}                                                                                            \
	} while (0)
#define EXPECT_ERRNO(expr, e) EXPECT((expr) < 0 && errno == (e))

/* Runs fn in a child; returns the raw wait status (or -1). */
static int run_child(int (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg) & 0xff);
	int status;
	if (RETRY_EINTR(waitpid(pid, &status, 0)) < 0)
		return -1;
	return status;
}
#define CHECK_EXITED_OK(st) CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0)
#define CHECK_KILLED_BY(st, sig) CHECK(WIFSIGNALED(st) && WTERMSIG(st) == (sig))

static int apply_seccomp(void)
{
	_cleanup_err_ sbx_err *err = NULL;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	if (seccomp_apply(&err) < 0) {
		fprintf(stderr, "  child: %s\n", sbx_err_message(err));
		return -1;
	}
	return 0;
}

static int child_seccomp_denies(void *arg)
{
	/* Private mount namespace first: if the filter failed, mount() would
	 * succeed, and it must not touch the host. */
	EXPECT(unshare(CLONE_NEWNS) == 0);
	EXPECT(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
	EXPECT(apply_seccomp() == 0);

	EXPECT_ERRNO(mount("none", "/mnt", "tmpfs", 0, NULL), EPERM);
	EXPECT_ERRNO(umount2("/proc", MNT_DETACH), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	EXPECT_ERRNO(unshare(CLONE_NEWNET), EPERM);
	EXPECT_ERRNO(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0), EPERM);
	/* size 0 would be EINVAL from the kernel: ENOSYS proves the filter answered. */
	EXPECT_ERRNO(syscall(SYS_clone3, NULL, 0), ENOSYS);
	char c = 'x';
	EXPECT_ERRNO(ioctl(0, TIOCSTI, &c), EPERM);
	EXPECT_ERRNO(syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c), EPERM); /* high garbage bits */
	EXPECT_ERRNO(syscall(SYS_ioctl, 0, 0x541C, &c), EPERM);		       /* TIOCLINUX */
	EXPECT_ERRNO(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_add_key, "user", "sbx", "x", 1, -3), EPERM);
	EXPECT_ERRNO(syscall(SYS_bpf, 0, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_io_uring_setup, 1, NULL), ENOSYS);
	EXPECT_ERRNO(syscall(SYS_userfaultfd, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_finit_module, -1, "", 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM);
	EXPECT_ERRNO(syscall(SYS_setns, -1, 0), EPERM);
	EXPECT_ERRNO(socket(40 /* AF_VSOCK */, SOCK_STREAM, 0), EAFNOSUPPORT);
	EXPECT_ERRNO(personality(READ_IMPLIES_EXEC), EPERM);
	EXPECT_ERRNO(personality(ADDR_NO_RANDOMIZE | READ_IMPLIES_EXEC), EPERM);
	EXPECT(personality(ADDR_NO_RANDOMIZE) >= 0); /* determinism mode */
	EXPECT_ERRNO(syscall(SYS_personality, (1UL << 32)), EPERM);
	return 0;
}

static int child_seccomp_allows(void *arg)
{
	EXPECT(apply_seccomp() == 0);
	EXPECT(getpid() > 0);
	EXPECT(syscall(SYS_getpid) == getpid());
	int p = personality(0xffffffff);
	EXPECT(p >= 0);
	EXPECT(personality(p) >= 0);
	EXPECT(personality(PER_LINUX32) >= 0);
	EXPECT(personality(PER_LINUX) >= 0);
	/* Ordinary process creation (fork = clone without namespace flags). */
	fflush(NULL);
	pid_t pid = fork();
	EXPECT(pid >= 0);
	if (pid == 0)
		_exit(7);
	int st;
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 7);
	/* Ordinary sockets and ioctls. */
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(s >= 0);
	close(s);
	int fds[2];
	EXPECT(pipe(fds) == 0);
	int n;
	EXPECT(ioctl(fds[0], FIONREAD, &n) == 0 && n == 0);
	EXPECT(write(fds[1], "hi", 2) == 2);
	char buf[2];
	EXPECT(read(fds[0], buf, 2) == 2);
	return 0;
}

static int child_x32(void *arg)
{
	EXPECT(apply_seccomp() == 0);
	syscall(0x40000000 | 39); /* x32 getpid: must be killed, never reach the kernel */
	return 100;
}

static int child_i386(void *arg)
{
	EXPECT(apply_seccomp() == 0);
	long ret;
	/* i386 getpid (20) through the compat entry; r8-r11 may be clobbered. */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	return 100;
}

TEST(seccomp_denies)
{
	if (geteuid() != 0)
		SKIP_OK("needs root (private mount namespace for the mount check)");
	int st = run_child(child_seccomp_denies, NULL);
	CHECK_EXITED_OK(st);
}

TEST(seccomp_allows_ordinary_calls)
{
	int st = run_child(child_seccomp_allows, NULL);
	CHECK_EXITED_OK(st);
}

/* This kernel may lack CONFIG_X86_X32_ABI; the filter must kill either way
 * (seccomp runs before the syscall is dispatched). */
TEST(seccomp_kills_x32)
{
#if defined(__x86_64__)
	int st = run_child(child_x32, NULL);
	CHECK_KILLED_BY(st, SIGSYS);
#else
	SKIP_OK("x86_64 only");
#endif
}

#if defined(__x86_64__)
/* int 0x80 with no filter: some guests (PVM hypervisors) fault it with
 * SIGSEGV before any syscall entry, so there is nothing for seccomp to see. */
static int child_i386_bare(void *arg)
{
	(void)signal(SIGSEGV, SIG_DFL); /* not a sanitizer's handler: the fault itself is the answer */
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	return 0;
}
#endif

TEST(seccomp_kills_i386)
{
#if defined(__x86_64__)
	int bare = run_child(child_i386_bare, NULL);
	if (WIFSIGNALED(bare) && WTERMSIG(bare) == SIGSEGV)
		SKIP_OK("this machine faults int 0x80 before any syscall entry (SIGSEGV without a filter): "
			"no i386 syscall reaches the kernel here");
	int st = run_child(child_i386, NULL);
	CHECK_KILLED_BY(st, SIGSYS);
#else
	SKIP_OK("x86_64 only");
#endif
}

/* A kept program (seccomp_keep: built once by a process that starts many
 * environments) is the one a build gives, and works as one in a child. */
static int child_kept(void *arg)
{
	seccomp_prog *built = NULL, *kept = NULL;
	EXPECT(seccomp_prepare(0, &built, NULL) == 0);
	seccomp_keep(0);
	seccomp_keep(0); /* a second call keeps the first */
	EXPECT(seccomp_prepare(0, &kept, NULL) == 0);
	const struct sock_fprog *a = seccomp_prog_fprog(built), *b = seccomp_prog_fprog(kept);
	EXPECT(a->len > 50 && a->len == b->len && a->filter != b->filter);
	EXPECT(memcmp(a->filter, b->filter, a->len * sizeof(*a->filter)) == 0);
	unsigned short len = a->len;
	seccomp_prog_free(built);
	seccomp_prog_free(kept);
	/* The other flags' program is not the kept one. */
	seccomp_prog *inet = NULL;
	EXPECT(seccomp_prepare(SECCOMP_NO_INET, &inet, NULL) == 0);
	EXPECT(seccomp_prog_fprog(inet)->len > len);
	seccomp_prog_free(inet);
	return child_seccomp_allows(arg);
}

TEST(seccomp_kept_program_is_the_built_one)
{
	int st = run_child(child_kept, NULL);
	CHECK_EXITED_OK(st);
}

TEST(seccomp_table_well_formed)
{
	CHECK(seccomp_deny_table_len > 50);
	for (size_t i = 0; i < seccomp_deny_table_len; i++) {
		const seccomp_rule *r = &seccomp_deny_table[i];
		CHECK(r->name && r->name[0]);
		CHECK(r->why && strlen(r->why) > 10 && !strchr(r->why, '\n'));
		CHECK(r->errnum >= 0);
		for (size_t j = i + 1; j < seccomp_deny_table_len; j++)
			if (streq(r->name, seccomp_deny_table[j].name)) {
				fprintf(stderr, "  duplicate: %s\n", r->name);
				CHECK(0);
			}
	}
}

TEST(seccomp_table_has_required)
{
	static const char *const required[] = {
	    "mount",
	    "umount2",
	    "pivot_root",
	    "move_mount",
	    "open_tree",
	    "fsopen",
	    "fsconfig",
	    "fsmount",
	    "fspick",
	    "mount_setattr",
	    "bpf",
	    "perf_event_open",
	    "userfaultfd",
	    "keyctl",
	    "add_key",
	    "request_key",
	    "io_uring_setup",
	    "io_uring_enter",
	    "io_uring_register",
	    "kexec_load",
	    "kexec_file_load",
	    "init_module",
	    "finit_module",
	    "delete_module",
	    "open_by_handle_at",
	    "name_to_handle_at",
	    "reboot",
	    "swapon",
	    "swapoff",
	    "settimeofday",
	    "clock_settime",
	    "clock_adjtime",
	    "adjtimex",
	    "acct",
	    "iopl",
	    "ioperm",
	    "quotactl",
	    "quotactl_fd",
	    "syslog",
	    "setns",
	    "lookup_dcookie",
	    "nfsservctl",
	    "uselib",
	    "ustat",
	    "sysfs",
	    "vm86",
	    "vm86old",
	    "_sysctl",
	    "create_module",
	    "get_kernel_syms",
	    "query_module",
	    "fanotify_init",
	    "pciconfig_read",
	    "pciconfig_write",
	    "pciconfig_iobase",
	    "vhangup",
	};
	for (size_t i = 0; i < ARRAY_SIZE(required); i++) {
		int found = 0;
		for (size_t j = 0; j < seccomp_deny_table_len; j++)
			found |= streq(required[i], seccomp_deny_table[j].name);
		if (!found)
			fprintf(stderr, "  missing: %s\n", required[i]);
		CHECK(found);
	}
}

/* ---- Landlock ---- */

static char ll_dir[] = "/tmp/sbx-ll-XXXXXX";

static int child_landlock(void *arg)
{
	_cleanup_err_ sbx_err *err = NULL;
	char path[256];
	landlock_rule rules[] = {
	    {ll_dir, LL_READ}, {"/nonexistent/sbx/path", LL_READ | LL_WRITE}, /* skipped */
	};
	EXPECT(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	int abi = landlock_restrict(rules, ARRAY_SIZE(rules), &err);
	if (abi < 0)
		fprintf(stderr, "  child: %s\n", sbx_err_message(err));
	EXPECT(abi >= 1);

	snprintf(path, sizeof(path), "%s/existing", ll_dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	EXPECT(fd >= 0);
	char buf[8] = {0};
	EXPECT(read(fd, buf, sizeof(buf)) == 5 && memcmp(buf, "hello", 5) == 0);
	close(fd);
	EXPECT_ERRNO(open(path, O_WRONLY | O_CLOEXEC), EACCES);
	snprintf(path, sizeof(path), "%s/new", ll_dir);
	EXPECT_ERRNO(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644), EACCES);
	EXPECT_ERRNO(mkdir(path, 0755), EACCES);
	/* Outside every rule: nothing. */
	EXPECT_ERRNO(open("/etc/passwd", O_RDONLY | O_CLOEXEC), EACCES);
	/* ABI 6: signals cannot leave the domain. */
	if (abi >= 6)
		EXPECT_ERRNO(kill(getppid(), 0), EPERM);
	return 0;
}

/* A rule on a regular file gets only the file rights (READ_DIR, MAKE_* are
 * masked), instead of failing with EINVAL. */
static int child_landlock_file_rule(void *arg)
{
	_cleanup_err_ sbx_err *err = NULL;
	char path[256];
	snprintf(path, sizeof(path), "%s/existing", ll_dir);
	landlock_rule rules[] = {{path, LL_READ | LL_WRITE | LL_EXEC | LL_DEV}};
	EXPECT(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	int abi = landlock_restrict(rules, ARRAY_SIZE(rules), &err);
	if (abi < 0)
		fprintf(stderr, "  child: %s\n", sbx_err_message(err));
	EXPECT(abi >= 1);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	EXPECT(fd >= 0);
	close(fd);
	EXPECT_ERRNO(open(ll_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), EACCES);
	return 0;
}

static int landlock_setup(void)
{
	if (!mkdtemp(ll_dir))
		return -1;
	char path[256];
	snprintf(path, sizeof(path), "%s/existing", ll_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	int ok = write(fd, "hello", 5) == 5;
	close(fd);
	return ok ? 0 : -1;
}

static void landlock_cleanup(void)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/existing", ll_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/new", ll_dir);
	unlink(path);
	rmdir(path);
	rmdir(ll_dir);
}

TEST(landlock_read_only_dir)
{
	if (landlock_abi() == 0)
		SKIP_OK("Landlock unavailable on this kernel (not built in or not in lsm=)");
	CHECK(landlock_setup() == 0);
	int st = run_child(child_landlock, NULL);
	int st2 = run_child(child_landlock_file_rule, NULL);
	landlock_cleanup();
	CHECK_EXITED_OK(st);
	CHECK_EXITED_OK(st2);
}

TEST(landlock_unavailable_is_zero_not_error)
{
	/* landlock_abi() and landlock_restrict() agree: 0 means "no wall". */
	int abi = landlock_abi();
	CHECK(abi >= 0);
	if (abi > 0)
		fprintf(stderr, "  landlock ABI %d\n", abi);
}

/* ---- Capabilities ---- */

static uint64_t status_caps(const char *field)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	uint64_t v = UINT64_MAX;
	size_t len = strlen(field);
	if (!f)
		return v;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0 && line[len] == ':')
			v = strtoull(line + len + 1, NULL, 16);
	fclose(f);
	return v;
}

static int child_caps(void *arg)
{
	_cleanup_err_ sbx_err *err = NULL;
	/* A fresh user namespace gives us every capability in it without
	 * touching the host's credentials. */
	EXPECT(unshare(CLONE_NEWUSER) == 0);
	EXPECT(status_caps("CapEff") != caps_safe_set); /* full set before */
	if (caps_drop(&err) < 0) {
		fprintf(stderr, "  child: %s\n", sbx_err_message(err));
		EXPECT(0);
	}
	EXPECT(status_caps("CapBnd") == caps_safe_set);
	EXPECT(status_caps("CapEff") == caps_safe_set);
	EXPECT(status_caps("CapPrm") == caps_safe_set);
	EXPECT(status_caps("CapInh") == 0);
	EXPECT(status_caps("CapAmb") == 0);
	/* A dropped capability is out of the bounding set for good. */
	EXPECT(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) == 0);
	return 0;
}

TEST(caps_drop_to_safe_set)
{
	int st = run_child(child_caps, NULL);
	if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
		/* unshare may be refused by sysctl (max_user_namespaces = 0). */
		FILE *f = fopen("/proc/sys/user/max_user_namespaces", "re");
		int max = -1;
		if (f) {
			if (fscanf(f, "%d", &max) != 1)
				max = -1;
			fclose(f);
		}
		if (max == 0)
			SKIP_OK("user namespaces disabled (user.max_user_namespaces = 0)");
	}
	CHECK_EXITED_OK(st);
}

/* A child in a user namespace whose map the parent (host root) writes:
 * 0 -> host 0 and 1..65535 -> an unused host range, as an environment's. */
typedef struct ident_case {
	uid_t uid;
	uint64_t keep;
} ident_case;

static int child_identity(void *arg)
{
	const ident_case *ic = arg;
	int ready[2], go[2];
	EXPECT(pipe(ready) == 0 && pipe(go) == 0);
	pid_t pid = fork();
	EXPECT(pid >= 0);
	if (pid > 0) {
		char b;
		close(ready[1]);
		close(go[0]);
		if (read(ready[0], &b, 1) == 1) {
			char path[64];
			static const char *const maps[] = {"uid_map", "gid_map"};
			for (size_t i = 0; i < 2; i++) {
				snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, maps[i]);
				int fd = open(path, O_WRONLY | O_CLOEXEC);
				const char *m = "0 0 1\n1 1610612736 65535\n";
				if (fd < 0 || write(fd, m, strlen(m)) < 0)
					kill(pid, SIGKILL);
				if (fd >= 0)
					close(fd);
			}
		}
		(void)!write(go[1], "g", 1);
		int st;
		EXPECT(RETRY_EINTR(waitpid(pid, &st, 0)) == pid);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
	}
	/* the namespace's process: init's walls (caps_drop, no_new_privs), then
	 * a command's identity */
	close(ready[0]);
	close(go[1]);
	EXPECT(unshare(CLONE_NEWUSER) == 0);
	char b;
	EXPECT(write(ready[1], "r", 1) == 1 && read(go[0], &b, 1) == 1);
	EXPECT(setresgid(0, 0, 0) == 0 && setresuid(0, 0, 0) == 0);
	_cleanup_err_ sbx_err *err = NULL;
	EXPECT(caps_drop(&err) == 0);
	EXPECT(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	const gid_t groups[] = {ic->uid, 2000};
	const char *step = NULL;
	int r = caps_enter_identity(ic->uid, ic->uid, groups, ic->uid ? 2 : 0, false, ic->keep, &step);
	if (r < 0)
		fprintf(stderr, "  child: %s: %s\n", step, strerror(-r));
	EXPECT(r == 0);
	EXPECT(getuid() == ic->uid && geteuid() == ic->uid && getgid() == ic->uid);
	uint64_t want = ic->uid ? 0 : ic->keep;
	EXPECT(status_caps("CapEff") == want);
	EXPECT(status_caps("CapPrm") == want);
	EXPECT(status_caps("CapBnd") == want);
	EXPECT(status_caps("CapInh") == 0);
	EXPECT(status_caps("CapAmb") == 0);
	if (ic->uid) {
		gid_t got[8];
		EXPECT(getgroups(8, got) == 2 && got[0] == ic->uid && got[1] == 2000);
		/* no way back: every identity change needs a capability we lack */
		EXPECT_ERRNO(setresuid(0, 0, 0), EPERM);
		EXPECT_ERRNO(setgroups(0, NULL), EPERM);
		EXPECT(prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0) == 0);
	}
	return 0;
}

/* A command as a user: no capability in any set, its own groups, and no
 * way back to root. */
TEST(caps_enter_identity_user_has_none)
{
	if (geteuid() != 0)
		SKIP("needs root (the parent writes a two-range uid map)");
	ident_case ic = {1000, caps_safe_set};
	int st = run_child(child_identity, &ic);
	CHECK_EXITED_OK(st);
}

/* A command as root keeps exactly the kept set, in the bounding set too
 * (root regains its bounding set at exec). */
TEST(caps_enter_identity_root_keeps_kept_set)
{
	if (geteuid() != 0)
		SKIP("needs root (the parent writes a two-range uid map)");
	ident_case ic = {0, (UINT64_C(1) << CAP_CHOWN) | (UINT64_C(1) << CAP_KILL)};
	int st = run_child(child_identity, &ic);
	CHECK_EXITED_OK(st);
}

TEST(caps_safe_set_is_documented_set)
{
	uint64_t want = 0;
	static const int caps[] = {
	    CAP_CHOWN,	CAP_DAC_OVERRIDE, CAP_FOWNER,		CAP_FSETID,	CAP_KILL,   CAP_SETGID,
	    CAP_SETUID, CAP_SETPCAP,	  CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_SETFCAP};
	for (size_t i = 0; i < ARRAY_SIZE(caps); i++)
		want |= UINT64_C(1) << caps[i];
	CHECK(caps_safe_set == want);
	CHECK(!(caps_safe_set & (UINT64_C(1) << CAP_SYS_ADMIN)));
	CHECK(!(caps_safe_set & (UINT64_C(1) << CAP_NET_RAW)));
	CHECK(!(caps_safe_set & (UINT64_C(1) << CAP_MKNOD)));
}
