/* probe: one static binary that tries one attack from inside a sandbox and
 * says what happened, for the integration tests (in the spirit of
 * bubblewrap's try-syscall).
 *
 *   probe ATTACK [ARGS]   prints exactly one line and exits:
 *     "BLOCKED: <attack>: <errno text or reason>"   exit 0, the attack failed
 *     "ESCAPED: <attack>: <what happened>"          exit 1, the attack worked
 *     usage errors go to stderr with exit 2
 *   probe info            prints what the process sees of its walls, exit 0
 *
 * Plain libc only (no libseccomp): it must run in any rootfs. Attacks are
 * written so that a success does as little as possible to the host: files
 * under /proc/sys and /sys are only opened for writing, never written;
 * mounts that succeed are undone; pivot_root is asked for something the
 * kernel always refuses after the permission check, so EBUSY/EINVAL mean
 * "got past the gate".
 *
 * x32: this kernel may be built without CONFIG_X86_X32_ABI, so outside a
 * sandbox `probe x32` prints BLOCKED (ENOSYS); inside one, seccomp must kill
 * the child with SIGSYS. Both count as blocked; the reason tells which. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/klog.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/un.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *attack; /* the attack being run, for the result line */

static int blocked(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int escaped(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int result(const char *verdict, int code, const char *fmt, va_list ap)
{
	printf("%s: %s: ", verdict, attack);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return code;
}
static int blocked(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = result("BLOCKED", 0, fmt, ap);
	va_end(ap);
	return r;
}
static int escaped(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = result("ESCAPED", 1, fmt, ap);
	va_end(ap);
	return r;
}
static int usage_error(const char *usage)
{
	fprintf(stderr, "usage: probe %s %s\n", attack, usage);
	return 2;
}

/* errno values that mean "stopped at the permission gate". */
static int gated(int e)
{
	return e == EPERM || e == EACCES || e == ENOSYS || e == EROFS;
}

/* Appends "what: strerror; " to a fixed buffer. */
static void note(char *buf, size_t size, const char *what, int e)
{
	size_t len = strlen(buf);
	snprintf(buf + len, size - len, "%s%s: %s", len ? "; " : "", what, e ? strerror(e) : "ok");
}

/* Reads "Field:\t..." from /proc/self/status into out (trimmed). */
static int status_field(const char *field, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	size_t len = strlen(field);
	int found = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			char *v = line + len + 1;
			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, size, "%s", v);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

/* Forks; the child runs fn and exits with its return value. Returns the
 * wait status, or -1. */
static int in_child(int (*fn)(void *), void *arg)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(fn(arg));
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return st;
}

/* ---- the attacks ---- */

static int probe_read(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("PATH");
	int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return blocked("open %s: %s", argv[0], strerror(errno));
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		/* A directory is read by listing it: any entry besides . and ..
		 * is something the environment can see (EISDIR is no wall). */
		DIR *d = fdopendir(fd);
		if (!d) {
			int e = errno;
			close(fd);
			return blocked("list %s: %s", argv[0], strerror(e));
		}
		errno = 0;
		struct dirent *de;
		const char *seen = NULL;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
				seen = de->d_name;
				break;
			}
		int e = errno;
		char name[256] = "";
		if (seen)
			snprintf(name, sizeof(name), "%s", seen);
		closedir(d);
		if (*name)
			return escaped("listed %s: it holds '%s'", argv[0], name);
		if (e)
			return blocked("list %s: %s", argv[0], strerror(e));
		return blocked("%s is empty here", argv[0]);
	}
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	int e = errno;
	close(fd);
	if (n < 0)
		return blocked("read %s: %s", argv[0], strerror(e));
	return escaped("read %zd bytes from %s", n, argv[0]);
}

static int probe_write(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("PATH");
	int fd = open(argv[0], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return blocked("open %s for writing: %s", argv[0], strerror(errno));
	ssize_t n = write(fd, "probe\n", 6);
	int e = errno;
	close(fd);
	if (n < 0)
		return blocked("write %s: %s", argv[0], strerror(e));
	return escaped("wrote %zd bytes to %s", n, argv[0]);
}

static int probe_mount(int argc, char **argv)
{
	char why[512] = "";
	int got = 0;
	if (mount("probe", "/mnt", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") == 0) {
		got = 1;
		note(why, sizeof(why), "tmpfs on /mnt", 0);
		umount2("/mnt", MNT_DETACH);
	} else
		note(why, sizeof(why), "tmpfs on /mnt", errno);
	if (mount("proc", "/mnt", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0) {
		got = 1;
		note(why, sizeof(why), "proc on /mnt", 0);
		umount2("/mnt", MNT_DETACH);
	} else
		note(why, sizeof(why), "proc on /mnt", errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

static int probe_umount(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("PATH");
	if (umount2(argv[0], MNT_DETACH) < 0)
		return blocked("umount %s: %s", argv[0], strerror(errno));
	return escaped("unmounted %s", argv[0]);
}

static int probe_mknod(int argc, char **argv)
{
	const char *path = "/tmp/probe-null";
	if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) < 0)
		return blocked("mknod %s c 1 3: %s", path, strerror(errno));
	/* Creating the node is one thing; being able to open it is the escape. */
	int fd = open(path, O_RDWR | O_CLOEXEC);
	int e = errno;
	unlink(path);
	if (fd < 0)
		return escaped("created %s (c 1:3) though open failed: %s", path, strerror(e));
	close(fd);
	return escaped("created and opened %s (c 1:3)", path);
}

static int probe_ptrace(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("PID");
	pid_t pid = (pid_t)atoi(argv[0]);
	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
		return blocked("attach %d: %s", pid, strerror(errno));
	int st;
	waitpid(pid, &st, __WALL);
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return escaped("attached to pid %d", pid);
}

static int probe_kill(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("PID");
	pid_t pid = (pid_t)atoi(argv[0]);
	if (kill(pid, 0) < 0)
		return blocked("signal 0 to %d: %s", pid, strerror(errno));
	return escaped("signal 0 delivered to pid %d", pid);
}

static int probe_module(int argc, char **argv)
{
	static const char garbage[64] = "\x7f"
					"ELFnot-a-module";
	char why[512] = "";
	int passed = 0;
	/* Each call checks CAP_SYS_MODULE before looking at its arguments, so any
	 * error other than EPERM/ENOSYS means the gate was passed. */
	errno = 0;
	if (syscall(SYS_finit_module, -1, "", 0) == 0 || !gated(errno))
		passed = 1;
	note(why, sizeof(why), "finit_module", errno);
	errno = 0;
	if (syscall(SYS_init_module, garbage, sizeof(garbage), "") == 0 || !gated(errno))
		passed = 1;
	note(why, sizeof(why), "init_module", errno);
	errno = 0;
	if (syscall(SYS_delete_module, "x", O_NONBLOCK) == 0 || !gated(errno))
		passed = 1;
	note(why, sizeof(why), "delete_module", errno);
	return passed ? escaped("past the permission check: %s", why) : blocked("%s", why);
}

static int probe_tiocsti(int argc, char **argv)
{
	char why[512] = "", c = 'x';
	int got = 0;
	for (int fd = 0; fd <= 2; fd++) {
		char what[16];
		snprintf(what, sizeof(what), "fd %d", fd);
		if (ioctl(fd, TIOCSTI, &c) == 0)
			got = 1;
		note(why, sizeof(why), what, got ? 0 : errno);
	}
	int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0)
		note(why, sizeof(why), "open /dev/tty", errno);
	else {
		int ok = ioctl(tty, TIOCSTI, &c) == 0;
		note(why, sizeof(why), "/dev/tty", ok ? 0 : errno);
		got |= ok;
		close(tty);
	}
	return got ? escaped("injected a character: %s", why) : blocked("%s", why);
}

/* x32 and i386 run in a child: the expected outcome is its death by SIGSYS. */
enum { CHILD_ENOSYS = 3, CHILD_OK = 4, CHILD_OTHER = 5 };

static int child_x32(void *arg)
{
	long r = syscall(0x40000000 | 39); /* x32 getpid */
	if (r < 0)
		return errno == ENOSYS ? CHILD_ENOSYS : CHILD_OTHER;
	return CHILD_OK;
}

static int child_i386(void *arg)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	if (r < 0)
		return r == -ENOSYS ? CHILD_ENOSYS : CHILD_OTHER;
	return CHILD_OK;
#else
	return CHILD_ENOSYS;
#endif
}

static int abi_verdict(int st, const char *what)
{
	if (st < 0)
		return blocked("fork: %s", strerror(errno));
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
		return blocked("child killed by SIGSYS (seccomp)");
	if (WIFSIGNALED(st))
		return blocked("child killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
	switch (WEXITSTATUS(st)) {
	case CHILD_ENOSYS:
		return blocked("ENOSYS (%s not enabled in this kernel)", what);
	case CHILD_OK:
		return escaped("%s getpid succeeded", what);
	default:
		return blocked("%s getpid failed with an error other than ENOSYS", what);
	}
}

static int probe_x32(int argc, char **argv)
{
	return abi_verdict(in_child(child_x32, NULL), "x32 ABI");
}

static int probe_i386(int argc, char **argv)
{
#if !defined(__x86_64__)
	return blocked("not applicable: not an x86_64 build");
#endif
	return abi_verdict(in_child(child_i386, NULL), "i386 ABI (int 0x80)");
}

static int child_unshare_userns(void *arg)
{
	return unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
}

static int child_clone_userns(void *arg)
{
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return errno;
	waitpid((pid_t)pid, NULL, 0);
	return 0;
}

static int probe_userns(int argc, char **argv)
{
	char why[512] = "";
	int got = 0;
	int st = in_child(child_unshare_userns, NULL);
	int e = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
	got |= e == 0;
	note(why, sizeof(why), "unshare(CLONE_NEWUSER)", e);
	st = in_child(child_clone_userns, NULL);
	e = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
	got |= e == 0;
	note(why, sizeof(why), "clone(CLONE_NEWUSER)", e);
	return got ? escaped("%s", why) : blocked("%s", why);
}

static int probe_connect(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("IPV4 PORT");
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	if (inet_pton(AF_INET, argv[0], &sa.sin_addr) != 1)
		return usage_error("IPV4 PORT (an IPv4 literal)");
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return blocked("socket: %s", strerror(errno));
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (r < 0 && errno == EINPROGRESS) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		r = poll(&p, 1, 3000);
		if (r == 0) {
			close(fd);
			return blocked("connect %s:%s: timed out after 3s", argv[0], argv[1]);
		}
		int soerr = 0;
		socklen_t len = sizeof(soerr);
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
		errno = soerr;
		r = soerr ? -1 : 0;
	}
	int e = errno;
	close(fd);
	if (r < 0)
		return blocked("connect %s:%s: %s", argv[0], argv[1], strerror(e));
	return escaped("connected to %s:%s", argv[0], argv[1]);
}

static int probe_fds(int argc, char **argv)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return blocked("cannot list /proc/self/fd: %s", strerror(errno));
	char list[2048] = "";
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (de->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		char link[64], target[256];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t len = readlink(link, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = '\0';
		size_t used = strlen(list);
		snprintf(list + used, sizeof(list) - used, "%s%d -> %s", n ? ", " : "", fd, target);
		n++;
	}
	closedir(d);
	if (n == 0)
		return blocked("no open fds besides 0, 1, 2");
	return escaped("%d inherited fd(s): %s", n, list);
}

static int probe_setuid(int argc, char **argv)
{
	if (geteuid() == 0)
		return blocked("not applicable: already euid 0 here (run as a non-root user to test)");
	char why[256] = "";
	note(why, sizeof(why), "setuid(0)", setuid(0) == 0 ? 0 : errno);
	note(why, sizeof(why), "setresuid(0,0,0)", setresuid(0, 0, 0) == 0 ? 0 : errno);
	if (geteuid() == 0)
		return escaped("euid is now 0: %s", why);
	return blocked("euid stays %u: %s", (unsigned)geteuid(), why);
}

/* Opening for writing is the permission check for sysctl and sysfs files; we
 * never write, so a success on the host changes nothing. */
static int probe_open_for_write(const char *const *paths, size_t n)
{
	char why[1024] = "";
	int got = 0;
	for (size_t i = 0; i < n; i++) {
		int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			got = 1;
			close(fd);
			note(why, sizeof(why), paths[i], 0);
		} else
			note(why, sizeof(why), paths[i], errno);
	}
	return got ? escaped("opened for writing: %s", why) : blocked("%s", why);
}

static int probe_sysctl(int argc, char **argv)
{
	static const char *const paths[] = {"/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches"};
	return probe_open_for_write(paths, sizeof(paths) / sizeof(paths[0]));
}

static int probe_sysfs(int argc, char **argv)
{
	static const char *const paths[] = {
	    "/sys/kernel/uevent_helper",
	    "/sys/kernel/mm/transparent_hugepage/enabled",
	    "/sys/kernel/mm/ksm/run",
	    "/sys/kernel/profiling",
	};
	if (argc >= 1)
		return probe_open_for_write((const char *const *)argv, 1);
	return probe_open_for_write(paths, sizeof(paths) / sizeof(paths[0]));
}

static int probe_bpf(int argc, char **argv)
{
	struct bpf_insn prog[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0}, /* r0 = 0 */
	    {.code = BPF_JMP | BPF_EXIT},					   /* return r0 */
	};
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (uintptr_t)prog;
	attr.insn_cnt = sizeof(prog) / sizeof(prog[0]);
	attr.license = (uintptr_t) "GPL";
	int fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return blocked("BPF_PROG_LOAD: %s", strerror(errno));
	close(fd);
	return escaped("loaded a socket filter program (fd %d)", fd);
}

static int probe_keyctl(int argc, char **argv)
{
	char why[256] = "";
	long id = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0);
	note(why, sizeof(why), "keyctl(GET_KEYRING_ID)", id < 0 ? errno : 0);
	long key = syscall(SYS_add_key, "user", "probe", "x", 1, -2 /* process keyring */);
	note(why, sizeof(why), "add_key", key < 0 ? errno : 0);
	if (id >= 0 || key >= 0)
		return escaped("%s", why);
	return blocked("%s", why);
}

static int probe_iouring(int argc, char **argv)
{
	char params[120]; /* struct io_uring_params, zeroed */
	memset(params, 0, sizeof(params));
	int fd = (int)syscall(SYS_io_uring_setup, 1, params);
	if (fd < 0)
		return blocked("io_uring_setup: %s", strerror(errno));
	close(fd);
	return escaped("io_uring_setup returned an fd");
}

static int probe_perf(int argc, char **argv)
{
	struct perf_event_attr pa;
	memset(&pa, 0, sizeof(pa));
	pa.type = PERF_TYPE_SOFTWARE;
	pa.size = sizeof(pa);
	pa.config = PERF_COUNT_SW_CPU_CLOCK;
	pa.disabled = 1;
	int fd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return blocked("perf_event_open: %s", strerror(errno));
	close(fd);
	return escaped("perf_event_open returned an fd");
}

static int probe_pivot_root(int argc, char **argv)
{
	/* pivot_root("/", "/") is refused (EBUSY/EINVAL) after the permission
	 * check even when allowed, so it never changes anything. */
	if (syscall(SYS_pivot_root, "/", "/") == 0)
		return escaped("pivot_root succeeded");
	if (gated(errno))
		return blocked("pivot_root: %s", strerror(errno));
	return escaped("past the permission check (%s)", strerror(errno));
}

static int child_chroot_escape(void *arg)
{
	const char *marker = arg;
	char dir[] = "/tmp/probe-chroot-XXXXXX";
	if (chdir("/tmp") < 0 || !mkdtemp(dir))
		return 10;
	/* cwd stays outside the new root: the classic mistake a chroot makes. */
	if (chroot(dir) < 0) {
		int e = errno;
		rmdir(dir);
		return e == EPERM ? 11 : 12;
	}
	for (int i = 0; i < 256; i++)
		if (chdir("..") < 0)
			break;
	if (chroot(".") < 0)
		return 13;
	/* dir is now at "tmp/<name>" of whatever root we reached; best effort. */
	rmdir(dir);
	return access(marker, F_OK) == 0 ? 0 : 14;
}

static int probe_chroot_escape(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("MARKER_PATH (a file that exists only outside the sandbox)");
	int st = in_child(child_chroot_escape, argv[0]);
	if (st < 0 || !WIFEXITED(st))
		return blocked("child failed");
	switch (WEXITSTATUS(st)) {
	case 0:
		return escaped("%s is visible after breaking out of a chroot", argv[0]);
	case 10:
		return blocked("cannot create a directory under /tmp");
	case 11:
		return blocked("chroot: Operation not permitted");
	case 12:
		return blocked("chroot failed");
	case 13:
		return blocked("second chroot failed");
	default:
		return blocked("%s not visible from the outermost root reachable", argv[0]);
	}
}

static const struct {
	int bit;
	const char *name;
} dangerous_caps[] = {
    {21, "SYS_ADMIN"}, {12, "NET_ADMIN"}, {16, "SYS_MODULE"}, {19, "SYS_PTRACE"}, {17, "SYS_RAWIO"}};

static int probe_caps(int argc, char **argv)
{
	char eff[64] = "?", bnd[64] = "?", held[128] = "";
	if (status_field("CapEff", eff, sizeof(eff)) < 0)
		return blocked("cannot read /proc/self/status: %s", strerror(errno));
	status_field("CapBnd", bnd, sizeof(bnd));
	unsigned long long e = strtoull(eff, NULL, 16);
	for (size_t i = 0; i < sizeof(dangerous_caps) / sizeof(dangerous_caps[0]); i++)
		if (e & (1ULL << dangerous_caps[i].bit)) {
			size_t len = strlen(held);
			snprintf(held + len, sizeof(held) - len, " %s", dangerous_caps[i].name);
		}
	if (held[0])
		return escaped("CapEff=%s CapBnd=%s holds%s", eff, bnd, held);
	return blocked("CapEff=%s CapBnd=%s (no SYS_ADMIN, NET_ADMIN, SYS_MODULE, SYS_PTRACE, SYS_RAWIO)",
		       eff, bnd);
}

static int probe_nnp(int argc, char **argv)
{
	int v = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	if (v == 1)
		return blocked("no_new_privs is set");
	return escaped("no_new_privs is %d", v);
}

static int probe_seccomp(int argc, char **argv)
{
	char mode[16] = "?";
	if (status_field("Seccomp", mode, sizeof(mode)) == 0 && strcmp(mode, "2") == 0)
		return blocked("Seccomp: 2 (filter mode)");
	return escaped("Seccomp: %s (no filter)", mode);
}

/* A command run as a user other than root: every capability set empty. */
static int probe_nocaps(int argc, char **argv)
{
	static const char *const fields[] = {"CapEff", "CapPrm", "CapInh", "CapAmb"};
	char buf[64], all[256] = "";
	bool any = false;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (status_field(fields[i], buf, sizeof(buf)) < 0)
			return escaped("cannot read %s from /proc/self/status", fields[i]);
		any |= strtoull(buf, NULL, 16) != 0;
		size_t len = strlen(all);
		snprintf(all + len, sizeof(all) - len, "%s%s=%s", len ? " " : "", fields[i], buf);
	}
	return any ? escaped("holds capabilities: %s", all) : blocked("no capabilities: %s", all);
}

/* Raising a capability without holding it: capset into effective and
 * permitted, an ambient raise, setgroups to group 0. */
static int probe_capset(int argc, char **argv)
{
	char why[512] = "";
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {{0}};
	bool won = false;
	if (syscall(SYS_capget, &hdr, d) == 0) {
		uint32_t want = 1u << CAP_CHOWN | 1u << CAP_SETUID | 1u << CAP_DAC_OVERRIDE;
		bool had = (d[0].effective & want) == want;
		d[0].effective |= want;
		d[0].permitted |= want;
		int r = (int)syscall(SYS_capset, &hdr, d);
		note(why, sizeof(why), "capset(CHOWN|SETUID|DAC_OVERRIDE)", r == 0 ? 0 : errno);
		won |= r == 0 && !had;
	}
	int r = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_CHOWN, 0, 0);
	note(why, sizeof(why), "ambient raise CHOWN", r == 0 ? 0 : errno);
	won |= r == 0;
	if (geteuid() != 0) {
		gid_t zero = 0;
		r = setgroups(1, &zero);
		note(why, sizeof(why), "setgroups([0])", r == 0 ? 0 : errno);
		won |= r == 0;
	}
	return won ? escaped("gained a privilege: %s", why) : blocked("%s", why);
}

/* chown FILE UID: changing a file's owner needs CAP_CHOWN. */
static int probe_chown(int argc, char **argv)
{
	if (argc < 2)
		return usage_error("chown FILE UID");
	uid_t to = (uid_t)strtoul(argv[1], NULL, 10);
	struct stat st;
	if (stat(argv[0], &st) == 0 && st.st_uid == to) /* no change needs no capability */
		return usage_error("chown FILE UID (a UID other than FILE's owner)");
	if (chown(argv[0], to, (gid_t)-1) == 0)
		return escaped("chown %s to uid %u worked", argv[0], (unsigned)to);
	return blocked("chown %s to uid %u: %s", argv[0], (unsigned)to, strerror(errno));
}

static int probe_info(int argc, char **argv)
{
	char host[256] = "?", buf[64];
	uid_t ru, eu, su;
	gid_t rg, eg, sg;
	getresuid(&ru, &eu, &su);
	getresgid(&rg, &eg, &sg);
	gethostname(host, sizeof(host));
	printf("uid: %u %u %u\ngid: %u %u %u\n", ru, eu, su, rg, eg, sg);
	printf("hostname: %s\npid: %d\nppid: %d\n", host, (int)getpid(), (int)getppid());
	static const char *const fields[] = {"CapInh", "CapPrm",     "CapEff",	"CapBnd",
					     "CapAmb", "NoNewPrivs", "Seccomp", "Seccomp_filters"};
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (status_field(fields[i], buf, sizeof(buf)) == 0)
			printf("%s: %s\n", fields[i], buf);
	printf("no_new_privs: %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
	if (abi < 0)
		printf("landlock: unavailable (%s)\n", strerror(errno));
	else
		printf("landlock: ABI %ld available (whether this process is restricted is not observable)\n",
		       abi);
	return 0;
}

/* ---- more kernel doors (each must stay shut) ---- */

/* The new mount API: fsopen/fsmount and open_tree(OPEN_TREE_CLONE) would
 * mount without mount(2). */
static int probe_newmount(int argc, char **argv)
{
	char why[512] = "";
	int got = 0;
	int fd = (int)syscall(SYS_fsopen, "tmpfs", 1 /* FSOPEN_CLOEXEC */);
	if (fd >= 0) {
		got = 1;
		close(fd);
	}
	note(why, sizeof(why), "fsopen(tmpfs)", fd >= 0 ? 0 : errno);
	fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/", 1 /* OPEN_TREE_CLONE */ | O_CLOEXEC);
	if (fd >= 0) {
		got = 1;
		close(fd);
	}
	note(why, sizeof(why), "open_tree(/, CLONE)", fd >= 0 ? 0 : errno);
	fd = (int)syscall(SYS_fspick, AT_FDCWD, "/", 1 /* FSPICK_CLOEXEC */);
	if (fd >= 0) {
		got = 1;
		close(fd);
	}
	note(why, sizeof(why), "fspick(/)", fd >= 0 ? 0 : errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* "Shocker": open_by_handle_at with a forged handle of the filesystem's
 * root inode opens files outside any chroot or mount. */
static int probe_handle(int argc, char **argv)
{
	struct {
		unsigned int handle_bytes;
		int handle_type;
		unsigned char f_handle[8];
	} h = {
	    .handle_bytes = 8, .handle_type = 1 /* FILEID_INO32_GEN */, .f_handle = {2, 0, 0, 0, 0, 0, 0, 0}};
	int mfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return blocked("open /: %s", strerror(errno));
	int fd = (int)syscall(SYS_open_by_handle_at, mfd, &h, O_RDONLY | O_CLOEXEC);
	int e = errno;
	close(mfd);
	if (fd >= 0) {
		close(fd);
		return escaped("open_by_handle_at opened inode 2 of the root filesystem");
	}
	return blocked("open_by_handle_at: %s", strerror(e));
}

static int probe_uffd(int argc, char **argv)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return escaped("userfaultfd() gave a descriptor");
	}
	return blocked("userfaultfd: %s", strerror(errno));
}

/* Setting the host's clock (the time namespace does not cover CLOCK_REALTIME). */
static int probe_settime(int argc, char **argv)
{
	char why[512] = "";
	int got = 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (clock_settime(CLOCK_REALTIME, &ts) == 0)
		got = 1;
	note(why, sizeof(why), "clock_settime", got ? 0 : errno);
	struct timeval tv = {.tv_sec = ts.tv_sec, .tv_usec = ts.tv_nsec / 1000};
	int r = settimeofday(&tv, NULL);
	got |= r == 0;
	note(why, sizeof(why), "settimeofday", r == 0 ? 0 : errno);
	struct timex tx = {.modes = ADJ_OFFSET_SINGLESHOT, .offset = 0};
	r = adjtimex(&tx);
	got |= r >= 0;
	note(why, sizeof(why), "adjtimex(ADJ_OFFSET_SINGLESHOT)", r >= 0 ? 0 : errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* The host kernel's log: syslog(2) and /dev/kmsg. */
static int probe_syslog(int argc, char **argv)
{
	char why[512] = "", buf[256];
	int got = 0;
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf));
	got |= n > 0;
	note(why, sizeof(why), "syslog(READ_ALL)", n >= 0 ? 0 : errno);
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t k = read(fd, buf, sizeof(buf));
		got |= k > 0;
		note(why, sizeof(why), "read /dev/kmsg", k > 0 ? 0 : errno);
		close(fd);
	} else
		note(why, sizeof(why), "open /dev/kmsg", errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* CVE-2019-5736: rewrite the runtime's binary through /proc/PID/exe. init
 * (pid 1) is an sbx process: its executable must not open for writing,
 * directly or reopened through a descriptor. */
static int probe_procexe(int argc, char **argv)
{
	char why[512] = "";
	int got = 0;
	int fd = open("/proc/1/exe", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = 1;
		close(fd);
	}
	note(why, sizeof(why), "open /proc/1/exe for writing", fd >= 0 ? 0 : errno);
	fd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
	if (fd >= 0) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		int w = open(p, O_WRONLY | O_CLOEXEC);
		if (w >= 0) {
			got = 1;
			close(w);
		}
		note(why, sizeof(why), "reopen /proc/1/exe's O_PATH fd for writing", w >= 0 ? 0 : errno);
		close(fd);
	} else
		note(why, sizeof(why), "open /proc/1/exe O_PATH", errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* An abstract unix socket the host listens on (the test makes one):
 * abstract names belong to the network namespace. */
static int probe_abstract(int argc, char **argv)
{
	if (argc < 1)
		return usage_error("NAME");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(argv[0]);
	if (n + 1 > sizeof(sa.sun_path))
		return usage_error("NAME (shorter)");
	memcpy(sa.sun_path + 1, argv[0], n);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return blocked("socket: %s", strerror(errno));
	int r =
	    connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
	int e = errno;
	close(fd);
	if (r == 0)
		return escaped("connected to the abstract socket @%s", argv[0]);
	return blocked("connect @%s: %s", argv[0], strerror(e));
}

/* Leaving the environment's cgroup, or making one: the cgroup tree inside
 * is read-only. */
static int probe_cgroup(int argc, char **argv)
{
	char why[768] = "";
	int got = 0;
	static const char *const procs[] = {
	    "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/unified/cgroup.procs",
	    "/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/pids/cgroup.procs"};
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		int fd = open(procs[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0) {
			if (errno != ENOENT)
				note(why, sizeof(why), procs[i], errno);
			continue;
		}
		char pid[16];
		int len = snprintf(pid, sizeof(pid), "%d", (int)getpid());
		ssize_t w = write(fd, pid, (size_t)len);
		got |= w == len;
		note(why, sizeof(why), procs[i], w == len ? 0 : errno);
		close(fd);
	}
	if (mkdir("/sys/fs/cgroup/sbx-probe", 0755) == 0) {
		got = 1;
		rmdir("/sys/fs/cgroup/sbx-probe");
		note(why, sizeof(why), "mkdir /sys/fs/cgroup/sbx-probe", 0);
	} else
		note(why, sizeof(why), "mkdir /sys/fs/cgroup/sbx-probe", errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* /proc files that act on the host: sysrq, the kernel's memory. */
static int probe_procfiles(int argc, char **argv)
{
	char why[512] = "";
	int got = 0;
	int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = 1;
		close(fd);
	}
	note(why, sizeof(why), "open /proc/sysrq-trigger for writing", fd >= 0 ? 0 : errno);
	static const char *const rd[] = {"/proc/kcore", "/proc/timer_list", "/proc/sched_debug",
					 "/proc/keys"};
	for (size_t i = 0; i < sizeof(rd) / sizeof(rd[0]); i++) {
		char buf[64];
		fd = open(rd[i], O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
		int e = errno;
		if (fd >= 0)
			close(fd);
		got |= n > 0;
		note(why, sizeof(why), rd[i], n > 0 ? 0 : (n == 0 ? ENODATA : e));
	}
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* ---- init, the one sbx process inside ---- */

/* Reaching into init (pid 1, the host's sbx binary): its root, cwd, fds,
 * memory, environment and mapped files through /proc, its memory through
 * process_vm_readv, its descriptors through pidfd_getfd, kcmp. Walls: init
 * is not dumpable (its /proc entries belong to the host's root and ptrace
 * access is refused), seccomp (process_vm_*, kcmp). */
static int probe_initproc(int argc, char **argv)
{
	char why[1024] = "";
	int got = 0;
	static const char *const dirs[] = {"/proc/1/root/", "/proc/1/cwd/", "/proc/1/fd",
					   "/proc/1/map_files"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d = opendir(dirs[i]);
		if (d) {
			got = 1;
			closedir(d);
		}
		note(why, sizeof(why), dirs[i], d ? 0 : errno);
	}
	static const char *const files[] = {"/proc/1/environ", "/proc/1/mem", "/proc/1/exe", "/proc/1/auxv"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char buf[16];
		int fd = open(files[i], O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;
		int e = errno;
		if (fd >= 0)
			close(fd);
		/* /proc/1/mem opens only with ptrace access; a read at offset 0 fails (EIO) even then */
		got |= fd >= 0;
		note(why, sizeof(why), files[i], fd < 0 ? e : (n >= 0 ? 0 : e));
	}
	char buf[16];
	struct iovec local = {buf, sizeof(buf)}, remote = {(void *)0x400000, sizeof(buf)};
	long r = syscall(SYS_process_vm_readv, 1, &local, 1, &remote, 1, 0);
	got |= r >= 0 || (errno != EPERM && errno != ENOSYS && errno != EACCES);
	note(why, sizeof(why), "process_vm_readv(1)", r >= 0 ? 0 : errno);
	r = syscall(SYS_kcmp, 1, getpid(), 0 /* KCMP_FILE */, 0, 0);
	got |= r >= 0;
	note(why, sizeof(why), "kcmp(1, self)", r >= 0 ? 0 : errno);
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	if (pfd >= 0) {
		for (int fd = 0; fd < 16; fd++) {
			int got_fd = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
			if (got_fd >= 0) {
				got = 1;
				close(got_fd);
				note(why, sizeof(why), "pidfd_getfd(init)", 0);
				break;
			}
			if (fd == 15 || errno != EBADF) {
				note(why, sizeof(why), "pidfd_getfd(init)", errno);
				break;
			}
		}
		close(pfd);
	} else
		note(why, sizeof(why), "pidfd_open(1)", errno);
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* Taking init down: every signal, by kill(2) and by pidfd, then init must
 * still be there and not stopped (the kernel drops signals to a pid
 * namespace's init from inside unless it handles them; init must handle
 * none in a way that stops the environment). If init dies the namespace
 * goes with it and this probe is killed: the test sees that too. */
static char proc_state(pid_t pid)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : '?';
}

static int probe_signal_init(int argc, char **argv)
{
	/* This signals whatever pid 1 is: never the host's by accident. */
	if (argc < 1 || strcmp(argv[0], "inside") != 0)
		return usage_error("inside (run it only inside a sandbox: it signals pid 1)");
	int pfd = (int)syscall(SYS_pidfd_open, 1, 0);
	signal(SIGCHLD, SIG_DFL);
	for (int sig = 1; sig < SIGRTMIN; sig++) {
		if (sig == SIGCONT)
			continue; /* last, below */
		kill(1, sig);
		if (pfd >= 0)
			syscall(SYS_pidfd_send_signal, pfd, sig, NULL, 0);
	}
	struct timespec ts = {0, 200 * 1000 * 1000};
	nanosleep(&ts, NULL);
	char st = proc_state(1);
	kill(1, SIGCONT);
	if (pfd >= 0)
		close(pfd);
	if (kill(1, 0) < 0 && errno == ESRCH) /* EPERM: there, and not ours to signal */
		return escaped("init is gone after the signals");
	if (st == 'T' || st == 't' || st == 'Z' || st == 'X' || st == '?')
		return escaped("init is in state '%c' after the signals", st);
	return blocked("signals 1-%d to pid 1 (kill and pidfd_send_signal): init still runs (state %c)",
		       SIGRTMIN - 1, st);
}

/* New namespaces of every kind, by unshare, clone3 and setns (to its own
 * namespaces: even that needs CAP_SYS_ADMIN). Walls: seccomp (clone3 is
 * ENOSYS so its flags can be checked on clone, CLONE_NEWUSER refused), no
 * CAP_SYS_ADMIN. */
static int probe_newns(int argc, char **argv)
{
	static const struct {
		int flag;
		const char *name;
	} ns[] = {{CLONE_NEWNS, "mnt"},
		  {CLONE_NEWUTS, "uts"},
		  {CLONE_NEWIPC, "ipc"},
		  {CLONE_NEWNET, "net"},
		  {CLONE_NEWPID, "pid"},
		  {CLONE_NEWCGROUP, "cgroup"},
		  {0x80 /* CLONE_NEWTIME */, "time"}};
	char why[1024] = "";
	int got = 0;
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		char what[32];
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0)
			_exit(unshare(ns[i].flag) == 0 ? 0 : errno);
		int st = 0;
		waitpid(pid, &st, 0);
		int e = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
		got |= e == 0;
		snprintf(what, sizeof(what), "unshare(%s)", ns[i].name);
		note(why, sizeof(why), what, e);
	}
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
		    set_tid_size, cgroup;
	} ca = {.flags = CLONE_NEWNS | CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID, .exit_signal = SIGCHLD};
	fflush(NULL);
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		_exit(0);
	if (pid > 0) {
		got = 1;
		waitpid((pid_t)pid, NULL, 0);
	}
	note(why, sizeof(why), "clone3(NEWNS|NEWUSER|NEWNET|NEWPID)", pid > 0 ? 0 : errno);
	static const char *const own[] = {"mnt", "net", "pid", "ipc", "uts", "user", "cgroup"};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		char p[64], what[32];
		snprintf(p, sizeof(p), "/proc/self/ns/%s", own[i]);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		int r = setns(fd, 0);
		close(fd);
		/* setns to the user namespace one is in is EINVAL after the check */
		if (r == 0)
			got = 1;
		snprintf(what, sizeof(what), "setns(own %s)", own[i]);
		note(why, sizeof(why), what, r == 0 ? 0 : errno);
	}
	return got ? escaped("%s", why) : blocked("%s", why);
}

/* personality(2) flags that weaken memory protection: READ_IMPLIES_EXEC
 * (every readable mapping executable), MMAP_PAGE_ZERO (page 0 mapped, for
 * NULL-dereference exploits). Wall: seccomp, which allows only the plain
 * personalities (and ADDR_NO_RANDOMIZE, which replays need). */
static int probe_personality(int argc, char **argv)
{
	char why[256] = "";
	int got = 0;
	static const struct {
		unsigned long v;
		const char *name;
	} p[] = {{0x0400000, "READ_IMPLIES_EXEC"}, {0x0100000, "MMAP_PAGE_ZERO"}};
	for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
		int r = personality(p[i].v);
		int now = personality(0xffffffff);
		bool set = r >= 0 && now >= 0 && ((unsigned long)now & p[i].v);
		got |= set;
		note(why, sizeof(why), p[i].name, set ? 0 : (r < 0 ? errno : EINVAL));
		if (set)
			personality(0);
	}
	return got ? escaped("set %s", why) : blocked("%s", why);
}

/* The kernel's usermode helpers run a program of the writer's choosing as
 * the host's root: core_pattern (a pipe), modprobe, cgroup v1's
 * release_agent (CVE-2022-0492: mount a v1 hierarchy in a new cgroup
 * namespace, then write release_agent), binfmt_misc. Opened for writing only,
 * never written. Walls: /proc/sys read-only, no /sys, seccomp on mount, no
 * CAP_SYS_ADMIN. */
static int probe_usermodehelper(int argc, char **argv)
{
	char why[1024] = "";
	int got = 0;
	static const char *const paths[] = {
	    "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/fs/binfmt_misc/register",
	    "/sys/fs/cgroup/memory/release_agent", "/sys/fs/cgroup/rdma/release_agent"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		int fd = open(paths[i], O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			got = 1;
			close(fd);
		}
		if (fd >= 0 || errno != ENOENT)
			note(why, sizeof(why), paths[i], fd >= 0 ? 0 : errno);
	}
	char dir[] = "/tmp/probe-cg-XXXXXX";
	if (mkdtemp(dir)) {
		static const char *const opts[] = {"rdma", "memory", "none,name=probe"};
		for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
			char what[64];
			snprintf(what, sizeof(what), "mount cgroup v1 -o %s", opts[i]);
			if (mount("cgroup", dir, "cgroup", 0, opts[i]) == 0) {
				got = 1;
				char ra[64];
				snprintf(ra, sizeof(ra), "%s/release_agent", dir);
				int fd = open(ra, O_WRONLY | O_CLOEXEC);
				note(why, sizeof(why), what, 0);
				note(why, sizeof(why), "open its release_agent", fd >= 0 ? 0 : errno);
				if (fd >= 0)
					close(fd);
				umount2(dir, MNT_DETACH);
			} else
				note(why, sizeof(why), what, errno);
		}
		rmdir(dir);
	}
	return got ? escaped("%s", why) : blocked("%s", why);
}

static const struct probe_attack {
	const char *name;
	int (*fn)(int argc, char **argv); /* argv: the arguments after the name */
} attacks[] = {
    {"newmount", probe_newmount},
    {"handle", probe_handle},
    {"uffd", probe_uffd},
    {"settime", probe_settime},
    {"syslog", probe_syslog},
    {"procexe", probe_procexe},
    {"abstract", probe_abstract},
    {"cgroup", probe_cgroup},
    {"procfiles", probe_procfiles},
    {"initproc", probe_initproc},
    {"signal_init", probe_signal_init},
    {"newns", probe_newns},
    {"personality", probe_personality},
    {"usermodehelper", probe_usermodehelper},
    {"read", probe_read},
    {"write", probe_write},
    {"mount", probe_mount},
    {"umount", probe_umount},
    {"mknod", probe_mknod},
    {"ptrace", probe_ptrace},
    {"kill", probe_kill},
    {"module", probe_module},
    {"tiocsti", probe_tiocsti},
    {"x32", probe_x32},
    {"i386", probe_i386},
    {"userns", probe_userns},
    {"connect", probe_connect},
    {"fds", probe_fds},
    {"setuid", probe_setuid},
    {"sysctl", probe_sysctl},
    {"sysfs", probe_sysfs},
    {"bpf", probe_bpf},
    {"keyctl", probe_keyctl},
    {"iouring", probe_iouring},
    {"perf", probe_perf},
    {"pivot_root", probe_pivot_root},
    {"chroot_escape", probe_chroot_escape},
    {"caps", probe_caps},
    {"nnp", probe_nnp},
    {"seccomp", probe_seccomp},
    {"nocaps", probe_nocaps},
    {"capset", probe_capset},
    {"chown", probe_chown},
    {"info", probe_info},
};

int main(int argc, char **argv)
{
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
			if (strcmp(argv[1], attacks[i].name) == 0) {
				attack = attacks[i].name;
				return attacks[i].fn(argc - 2, argv + 2);
			}
	fprintf(stderr, "usage: probe ATTACK [ARGS]\nattacks:");
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		fprintf(stderr, " %s", attacks[i].name);
	fputc('\n', stderr);
	return 2;
}
