/* Init: pid 1 inside the environment. It reaps every process and spawns
 * commands on the supervisor's request; all restrictions were applied to it
 * once (setup.c) and are inherited by what it spawns. It holds no host fd
 * other than its socket to the supervisor and the stdio it is handed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "policy/egress_match.h"
#include "runtime/devices.h"
#include "runtime/caps.h"
#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "runtime/user.h"
#include "trace/ptrace_engine.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/proc.h"
#include "util/syscalls.h"

#define INIT_MAX_EXECS 4096

typedef struct init_exec {
	int64_t id;
	pid_t pid;
} init_exec;

static init_exec execs[INIT_MAX_EXECS];
static const env_config *g_config; /* read-only; set once in init_main */
static size_t n_execs;

static const char *const default_env[] = {
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/root",
    "USER=root",
    "LOGNAME=root",
    "LANG=C.UTF-8",
    "SHELL=/bin/sh",
    NULL,
};

/* Builds the command's environment: defaults (HOME, USER and LOGNAME those
 * of the command's user when it is not root), then the environment's own,
 * then the exec's; a later K=V replaces an earlier K. */
static char **build_env(const env_config *c, char **extra, bool tty, const char *const *user_env)
{
	size_t n = ARRAY_SIZE(default_env) + 14;
	for (char **p = c->env; p && *p; p++)
		n++;
	for (char **p = c->secret_env; p && *p; p++)
		n++;
	for (char **p = extra; p && *p; p++)
		n++;
	char **v = calloc(n, sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	/* Static: the vector points into them after we return (init is
	 * single-threaded and uses each vector before building the next). */
	static char host[300], dhome[4300], dtmp[4300];
	snprintf(host, sizeof(host), "HOSTNAME=%s", c->hostname);
	snprintf(dhome, sizeof(dhome), "HOME=%s/home", c->env_dir);
	snprintf(dtmp, sizeof(dtmp), "TMPDIR=%s/tmp", c->env_dir);
	const char *const degraded_env[] = {dhome, dtmp, NULL};
	/* network allow: every well-behaved client goes through the proxy. */
	const char *const proxy_env[] = {
	    "HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128",
	    "http_proxy=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
	    "ALL_PROXY=http://127.0.0.1:3128",	"NO_PROXY=localhost,127.0.0.1,::1",
	    "no_proxy=localhost,127.0.0.1,::1", NULL};
	const char *const *lists[] = {
	    default_env,
	    user_env,
	    (const char *const[]){host, tty ? "TERM=xterm-256color" : "TERM=dumb", NULL},
	    c->degraded ? degraded_env : NULL,
	    net_proxied(c->network) ? proxy_env : NULL,
	    (const char *const *)c->env,
	    (const char *const *)c->secret_env,
	    (const char *const *)extra};
	for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
		for (const char *const *p = lists[l]; p && *p; p++) {
			const char *eq = strchr(*p, '=');
			if (!eq)
				continue;
			size_t keylen = (size_t)(eq - *p) + 1;
			size_t j;
			for (j = 0; j < k; j++)
				if (strncmp(v[j], *p, keylen) == 0)
					break;
			v[j] = (char *)*p;
			if (j == k)
				k++;
		}
	v[k] = NULL;
	return v;
}

typedef struct spawn_err {
	int stage; /* 0 exec, 1 cwd, 2 stdio/tty, 3 user and capabilities */
	int errnum;
	char step[48]; /* stage 3: which step failed */
} spawn_err;

/* Who the command runs as (user.h) and what a root command keeps (caps.h). */
typedef struct spawn_user {
	bool apply; /* false: degraded mode (no user namespace: the caller's own uid) */
	user_ident id;
	uint64_t caps;
	bool no_setgroups; /* rootless: the kernel denies setgroups */
	bool default_cwd;  /* no --cwd: the user's home, else / */
} spawn_user;

/* A traced or deterministic command (API.md --trace): the child runs the
 * ptrace engine (src/trace/ptrace_engine.c), which forks the command as its
 * tracee and exits with the command's status. */
typedef struct spawn_trace {
	bool on;
	bool engine; /* false: the eBPF recorder alone, the command spawned as an untraced one */
	ptrace_opts po;
	int fd; /* the engine's record stream, -1 none */
} spawn_trace;

/* The engine's outcome as this process's own: same exit code, or death by
 * the same signal (core dumps are off: RLIMIT_CORE is 0). */
_noreturn_ static void exit_like(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		signal(sig, SIG_DFL);
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 125);
}

/* execvp's lookup, so that a traced command that does not exist fails the
 * spawn as an untraced one does instead of becoming exit 127 in the engine. */
static int find_in_path(const char *cmd, char **envp)
{
	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0 ? 0 : -errno;
	const char *path = NULL;
	for (char **e = envp; e && *e; e++)
		if (startswith(*e, "PATH="))
			path = *e + 5;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int best = -ENOENT;
	for (const char *p = path; *p;) {
		const char *end = strchrnul(p, ':');
		char full[PATH_MAX];
		if (snprintf(full, sizeof(full), "%.*s/%s", (int)(end - p), p, cmd) < (int)sizeof(full)) {
			if (access(full, X_OK) == 0)
				return 0;
			if (errno == EACCES)
				best = -EACCES;
		}
		p = *end ? end + 1 : end;
	}
	return best;
}

/* Signals init ignores (SIG_IGN survives exec), read once at start: init
 * never changes a disposition afterwards (its children do, after fork). A
 * signal init handles would be reset by exec itself, and init handles none
 * (SIGCHLD comes through a signalfd). */
static uint64_t init_ignored; /* bit s-1: signal s was ignored when init started */

/* The command's process. Untraced, it is made with clone(CLONE_VM |
 * CLONE_VFORK) on a stack of its own, as posix_spawn does: no copy of
 * init's page tables, no faults to fill the child's back in, no teardown of
 * that copy at exec; init sleeps until the command has exec'd or failed, so
 * the reason of a failure is left in shared memory (report) instead of an
 * error pipe. The child shares init's memory until exec: it writes nothing
 * but report, errno and environ (which the parent puts back), and calls
 * nothing that allocates. The command enters the time namespace at exec
 * (exec_task_namespaces, Linux 6.0) as a forked child would at fork, so what
 * it runs with is the same: credentials, capabilities, seccomp and Landlock
 * (inherited), rlimits, time namespace, environment, cwd.
 *
 * A command under the ptrace engine (recorded with ptrace, or deterministic)
 * forks (report NULL, errpipe): its child runs the engine for as long as the
 * command runs, without exec. So does an ASan
 * build: the sanitizer's stack bookkeeping does not follow the switch. */
#if defined(__SANITIZE_ADDRESS__)
#define INIT_SPAWN_VM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define INIT_SPAWN_VM 0
#endif
#endif
#ifndef INIT_SPAWN_VM
#define INIT_SPAWN_VM 1
#endif
/* The child's stack (a multiple of the page size, so that its top is
 * 16-byte aligned as the ABI wants): execvp's buffers (PATH_MAX + NAME_MAX,
 * and argv + 2 pointers for a script without #!) on top of the setup below.
 * A request is at most FD_MSG_MAX bytes, so argv has fewer than
 * FD_MSG_MAX / 3 entries. Reserved, not committed: only touched pages count. */
#define SPAWN_STACK_SIZE (2 * 1024 * 1024)
_Static_assert(SPAWN_STACK_SIZE >= 1024 * 1024 + FD_MSG_MAX / 3 * sizeof(char *), "spawn stack too small");

_noreturn_ static void child_exec(char **argv, char **envp, const char *cwd, int in, int out, int errfd,
				  const char *tty_path, int errpipe, spawn_err *report, spawn_trace *tr,
				  const spawn_user *su)
{
	spawn_err se = {2, 0, ""};
	/* Dispositions first, then the mask (init blocks every signal around
	 * the spawn): nothing is delivered here before both are the command's.
	 * Without exec (the engine), handlers must go too; with exec only what
	 * is ignored survives. */
	for (int s = 1; s < NSIG; s++) {
		if (init_ignored >> (s - 1) & 1) { /* glibc's own 32 and 33 too */
			const struct sbx_ksigaction dfl = {.handler = SIG_DFL};
			(void)sys_rt_sigaction(s, &dfl, NULL);
		} else if (tr)
			signal(s, SIG_DFL);
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	setsid();
	if (tty_path) {
		int t = open(tty_path, O_RDWR | O_NOCTTY);
		if (t < 0 || ioctl(t, TIOCSCTTY, 0) < 0)
			goto fail;
		in = out = errfd = t;
	}
	int null = -1;
	if (in < 0 || out < 0 || errfd < 0) {
		null = open("/dev/null", O_RDWR);
		if (null < 0)
			goto fail;
	}
	int src[3] = {in >= 0 ? in : null, out >= 0 ? out : null, errfd >= 0 ? errfd : null};
	/* Lift sources out of 0..2 first so the dup2s cannot clobber each other. */
	for (int i = 0; i < 3; i++)
		if (src[i] <= 2 && (src[i] = fcntl(src[i], F_DUPFD, 3)) < 0)
			goto fail;
	for (int i = 0; i < 3; i++)
		if (dup2(src[i], i) < 0)
			goto fail;
	/* Every other descriptor goes, except the error pipe (close-on-exec)
	 * and a trace stream (moved to 3, close-on-exec: the engine's, never
	 * the command's). */
	if (tr && tr->fd >= 0) {
		if (errpipe == 3 && (errpipe = fcntl(errpipe, F_DUPFD_CLOEXEC, 4)) < 0)
			goto fail;
		if (tr->fd != 3 && (dup3(tr->fd, 3, O_CLOEXEC) < 0))
			goto fail;
		tr->fd = tr->po.record_fd = 3;
		if (errpipe > 4)
			sys_close_range(4, (unsigned)errpipe - 1, 0);
		sys_close_range((unsigned)errpipe + 1, ~0U, 0);
	} else if (errpipe < 0) {
		sys_close_range(3, ~0U, 0);
	} else {
		if (errpipe > 3)
			sys_close_range(3, (unsigned)errpipe - 1, 0);
		sys_close_range((unsigned)errpipe + 1, ~0U, 0);
	}
	/* The command's identity: its groups, gid and uid, and its capabilities
	 * (the kept set for root, none for anyone else). Before chdir, so that
	 * the working directory is entered with the user's own permissions. */
	if (su->apply) {
		const char *step = NULL;
		int q = caps_enter_identity(su->id.uid, su->id.gid, su->id.groups, su->id.n_groups,
					    su->no_setgroups, su->caps, &step);
		if (q < 0) {
			se.stage = 3;
			snprintf(se.step, sizeof(se.step), "%s", step ? step : "?");
			errno = -q;
			goto fail;
		}
	}
	se.stage = 1;
	if (chdir(cwd) < 0 && !(su->default_cwd && chdir("/") == 0))
		goto fail;
	umask(022);
	se.stage = 0;
	extern char **environ;
	environ = envp;
	if (tr && tr->on) {
		int q = find_in_path(argv[0], envp);
		if (q < 0) {
			errno = -q;
			goto fail;
		}
		safe_close(errpipe); /* spawned: from here on the engine reports through the exit status */
		/* Init is not dumpable and fork keeps that; the engine must be, or
		 * its own child could not be traced without CAP_SYS_PTRACE. It
		 * holds nothing but the trace stream. */
		(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		int status = 0;
		_cleanup_err_ sbx_err *e = NULL;
		if (ptrace_engine_run(&tr->po, argv, envp, &status, &e) < 0) {
			dprintf(2, "sbx: trace: %s\n", sbx_err_message(e));
			_exit(125);
		}
		exit_like(status);
	}
	execvp(argv[0], argv);
fail:
	se.errnum = errno;
	if (report)
		*report = se;
	else
		(void)!write(errpipe, &se, sizeof(se));
	_exit(127);
}

typedef struct spawn_vm_args {
	char **argv, **envp;
	const char *cwd, *tty_path;
	int in, out, errfd;
	const spawn_user *su;
	spawn_err *report;
} spawn_vm_args;

static int spawn_vm_main(void *arg)
{
	const spawn_vm_args *a = arg;
	child_exec(a->argv, a->envp, a->cwd, a->in, a->out, a->errfd, a->tty_path, -1, a->report, NULL,
		   a->su);
}

/* The spawn stack, reserved once and reused: a spawn ends (exec or exit)
 * before the next begins. A guard page below catches an overflow. Init
 * reserves it as it starts (after ready: off a create's path; nothing is
 * touched, so an idle environment's memory stays as it was); a failure then
 * is retried at the first spawn. NULL: *ret_errno says why. */
static char *spawn_stack(int *ret_errno)
{
	static char *stack;
	if (!stack) {
		char *p = mmap(NULL, SPAWN_STACK_SIZE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) {
			*ret_errno = errno;
			return NULL;
		}
		if (mprotect(p, 4096, PROT_NONE) < 0) {
			*ret_errno = errno;
			munmap(p, SPAWN_STACK_SIZE);
			return NULL;
		}
		stack = p;
	}
	return stack;
}

/* Starts an untraced command (see child_exec). The pid, with *se's stage
 * -1; or the pid of a child that has failed and exits 127, with *se saying
 * why; or -errno if there is no child. */
static pid_t spawn_vm(const spawn_vm_args *a, spawn_err *se)
{
	int serr = 0;
	char *stack = spawn_stack(&serr);
	if (!stack)
		return -serr;
	*se = (spawn_err){.stage = -1};
	spawn_vm_args args = *a;
	args.report = se;
	extern char **environ;
	char **saved_env = environ;
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid_t pid = clone(spawn_vm_main, stack + SPAWN_STACK_SIZE, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	environ = saved_env; /* the child set the command's for execvp */
	return pid < 0 ? -e : pid;
}

static void reply_error_code(int sock, int64_t id, int stage, int errnum, const char *what, const char *code);
static void reply_error(int sock, int64_t id, int stage, int errnum, const char *what)
{
	reply_error_code(sock, id, stage, errnum, what, NULL);
}

/* code: an API.md code name for the supervisor to report (stage 3), or NULL. */
static void reply_error_code(int sock, int64_t id, int stage, int errnum, const char *what, const char *code)
{
	char msg[512];
	if (stage == 3)
		snprintf(msg, sizeof(msg), "%s", what);
	else if (stage == 1)
		snprintf(msg, sizeof(msg), "working directory '%s': %s", what, strerror(errnum));
	else if (stage == 2)
		snprintf(msg, sizeof(msg), "set up stdio: %s", strerror(errnum));
	else
		snprintf(msg, sizeof(msg), "%s: %s", what,
			 errnum == ENOENT   ? "command not found"
			 : errnum == EACCES ? "permission denied (not executable)"
					    : strerror(errnum));
	_cleanup_json_ json_t *m =
	    json_pack("{s:s,s:I,s:i,s:i,s:s}", CTL_F_EV, CTL_EV_SPAWN_FAILED, CTL_F_ID, (json_int_t)id,
		      CTL_F_ERRNO, errnum, CTL_F_STAGE, stage, CTL_F_MESSAGE, msg);
	if (m && code)
		json_object_set_new(m, CTL_F_CODE, json_string(code));
	if (m)
		(void)json_send(sock, m, NULL, 0);
}

static void handle_spawn(env_config *c, int sock, json_t *m, int *fds, size_t n_fds)
{
	startup_mark("init: spawn request");
	int64_t id = json_int(m, CTL_F_ID, -1);
	int64_t ki = json_int(m, "stdin", -1), ko = json_int(m, "stdout", -1), ke = json_int(m, "stderr", -1);
	int in = ki >= 0 && (size_t)ki < n_fds ? fds[ki] : -1;
	int out = ko >= 0 && (size_t)ko < n_fds ? fds[ko] : -1;
	int errfd = ke >= 0 && (size_t)ke < n_fds ? fds[ke] : -1;
	bool tty = json_bool(m, "tty", false);
	const char *cwd = json_str(m, "cwd");
	_cleanup_strv_free_ char **argv = json_to_strv(json_object_get(m, "argv"));
	_cleanup_strv_free_ char **extra = json_to_strv(json_object_get(m, "env"));
	/* The user: this exec's, else the environment's default, else root. */
	spawn_user su = {
	    .apply = !c->degraded, .caps = c->caps, .no_setgroups = c->rootless, .default_cwd = !cwd};
	const char *uspec = json_str(m, "user") ?: c->user;
	static char u_home[300], u_user[64], u_logname[64];
	const char *user_env[4] = {NULL};
	if (uspec && c->degraded) {
		reply_error_code(sock, id, 3, EPERM,
				 "user: commands run as the calling user here (no user namespaces)",
				 "unavailable");
		return;
	}
	if (uspec && su.apply) {
		_cleanup_err_ sbx_err *ue = NULL;
		if (user_resolve(uspec, c->id_count, c->rootless, &su.id, &ue) < 0) {
			reply_error_code(sock, id, 3, sbx_err_errno(ue) ?: EINVAL, sbx_err_message(ue),
					 sbx_code_name(sbx_err_code(ue)));
			return;
		}
		if (c->no_root && su.id.uid == 0) {
			char msg[400];
			snprintf(msg, sizeof(msg),
				 "user '%.64s': the environment's policy runs commands as '%.64s', not root; "
				 "an exec may not ask for root",
				 uspec, c->user ? c->user : "?");
			reply_error_code(sock, id, 3, EPERM, msg, "invalid_argument");
			return;
		}
		if (su.id.uid != 0) {
			/* HOME: the passwd entry's if it is a directory, else /tmp (a
			 * tmpfs any user can write), which is also the default cwd. */
			struct stat hs;
			const char *h = su.id.home[0] && stat(su.id.home, &hs) == 0 && S_ISDIR(hs.st_mode)
					    ? su.id.home
					    : "/tmp";
			snprintf(u_home, sizeof(u_home), "HOME=%s", h);
			if (su.id.name[0]) {
				snprintf(u_user, sizeof(u_user), "USER=%s", su.id.name);
				snprintf(u_logname, sizeof(u_logname), "LOGNAME=%s", su.id.name);
			} else {
				snprintf(u_user, sizeof(u_user), "USER=%u", (unsigned)su.id.uid);
				snprintf(u_logname, sizeof(u_logname), "LOGNAME=%u", (unsigned)su.id.uid);
			}
			user_env[0] = u_home;
			user_env[1] = u_user;
			user_env[2] = u_logname;
			if (!cwd)
				cwd = u_home + 5;
		}
	}
	cdi_gids_add(c, &su.id); /* CDI devices' additionalGids (devices.h) */
	_cleanup_free_ char **envp = build_env(c, extra, tty, user_env);
	_cleanup_close_ int master = -1;
	char tty_path[64] = {0};
	if (!argv || !argv[0] || !envp || n_execs >= INIT_MAX_EXECS) {
		reply_error(sock, id, 2,
			    !argv || !argv[0]		? EINVAL
			    : n_execs >= INIT_MAX_EXECS ? EAGAIN
							: ENOMEM,
			    "request");
		return;
	}
	_cleanup_free_ char *home = c->degraded ? degraded_home(c) : NULL;
	if (!cwd)
		cwd = home ? home : access("/root", X_OK) == 0 ? "/root" : "/";
	if (tty) {
		master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
		int unlock = 0, ptn = -1;
		if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0 ||
		    ioctl(master, TIOCGPTN, &ptn) < 0) {
			reply_error(sock, id, 2, errno, "pty");
			return;
		}
		snprintf(tty_path, sizeof(tty_path), "/dev/pts/%d", ptn);
		struct winsize ws = {.ws_row = (unsigned short)json_int(m, "rows", 24),
				     .ws_col = (unsigned short)json_int(m, "cols", 80)};
		(void)ioctl(master, TIOCSWINSZ, &ws);
	}
	spawn_trace tr = {.fd = -1};
	json_t *tj = json_object_get(m, "trace");
	if (json_is_object(tj)) {
		int64_t kt = json_int(m, "trace_fd", -1);
		tr.on = true;
		tr.engine = json_bool(tj, "engine", true);
		tr.fd = kt >= 0 && (size_t)kt < n_fds ? fds[kt] : -1;
		tr.po = (ptrace_opts)PTRACE_OPTS_INIT;
		tr.po.deterministic = json_bool(tj, "deterministic", false);
		tr.po.record = json_bool(tj, "record", false) && tr.fd >= 0;
		tr.po.record_fd = tr.fd;
		tr.po.epoch_ns = (uint64_t)json_int(tj, "epoch_ns", 0);
		tr.po.seed = (uint64_t)json_int(tj, "seed", 0);
		tr.po.hostname = json_str(tj, "hostname");
		tr.po.inodes = json_bool(tj, "inodes", false);
		/* Replay: the engine gets the pid it had in the recording, so the
		 * command's pids match too (pids are handed out in order). */
		int64_t first = json_int(tj, "first_pid", 0);
		sbx_err *pe = NULL;
		if (first > 0 && determ_pid_reach((pid_t)first, &pe) < 0) {
			/* the message says why (in use, passed, out of range) */
			reply_error(sock, id, 3, sbx_err_errno(pe), sbx_err_message(pe));
			sbx_err_free(pe);
			return;
		}
	}
	spawn_err se;
	bool failed;
	bool engine = tr.on && tr.engine;
	if (INIT_SPAWN_VM && !engine) {
		spawn_vm_args va = {.argv = argv,
				    .envp = envp,
				    .cwd = cwd,
				    .tty_path = tty ? tty_path : NULL,
				    .in = in,
				    .out = out,
				    .errfd = errfd,
				    .su = &su};
		pid_t pid = spawn_vm(&va, &se);
		if (pid < 0) {
			reply_error(sock, id, 2, (int)-pid,
				    pid == -EAGAIN ? "fork (pid limit reached)" : "fork");
			return;
		}
		startup_mark("init: command exec'd");
		failed = se.stage >= 0;
		if (!failed)
			execs[n_execs++] = (init_exec){id, pid};
	} else {
		int ep[2];
		if (pipe2(ep, O_CLOEXEC) < 0) {
			reply_error(sock, id, 2, errno, "pipe");
			return;
		}
		pid_t pid = fork();
		if (pid < 0) {
			int e = errno;
			safe_close(ep[0]);
			safe_close(ep[1]);
			reply_error(sock, id, 2, e, e == EAGAIN ? "fork (pid limit reached)" : "fork");
			return;
		}
		if (pid == 0) {
			safe_close(ep[0]);
			child_exec(argv, envp, cwd, in, out, errfd, tty ? tty_path : NULL, ep[1], NULL,
				   engine ? &tr : NULL, &su);
		}
		safe_close(ep[1]);
		ssize_t n = RETRY_EINTR(read(ep[0], &se, sizeof(se)));
		startup_mark("init: command exec'd");
		safe_close(ep[0]);
		failed = n == (ssize_t)sizeof(se);
		if (!failed)
			execs[n_execs++] = (init_exec){id, pid};
	}
	if (failed) {
		/* The child reported and exits 127; it is reaped untracked. */
		char what[200];
		if (se.stage == 3)
			snprintf(what, sizeof(what), "run as uid %u gid %u: %s: %s", (unsigned)su.id.uid,
				 (unsigned)su.id.gid, se.step, strerror(se.errnum));
		reply_error(sock, id, se.stage, se.errnum,
			    se.stage == 3   ? what
			    : se.stage == 1 ? cwd
					    : argv[0]);
		return;
	}
	_cleanup_json_ json_t *r = json_pack("{s:s,s:I,s:i}", CTL_F_EV, CTL_EV_SPAWNED, CTL_F_ID,
					     (json_int_t)id, CTL_F_PID, (int)execs[n_execs - 1].pid);
	if (r)
		(void)json_send(sock, r, tty ? &master : NULL, tty ? 1 : 0);
}

static void handle_signal(json_t *m)
{
	int64_t id = json_int(m, CTL_F_ID, -1);
	int sig = (int)json_int(m, CTL_F_SIG, SIGKILL);
	for (size_t i = 0; i < n_execs; i++)
		if (execs[i].id == id) {
			/* The command leads its own session and process group. */
			if (kill(-execs[i].pid, sig) < 0)
				(void)kill(execs[i].pid, sig);
		}
}

static json_t *read_proc(const char *pid)
{
	char path[320];
	_cleanup_free_ char *stat = NULL, *cmd = NULL;
	size_t cmdlen = 0;
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if (fs_read_file(path, 4096, &stat, NULL) < 0)
		return NULL;
	char *rp = strrchr(stat, ')'), *lp = strchr(stat, '(');
	if (!rp || !lp)
		return NULL;
	*rp = 0;
	char state = 0;
	int ppid = 0;
	if (sscanf(rp + 2, "%c %d", &state, &ppid) != 2)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	json_t *argv = json_array();
	if (atoi(pid) == getpid())
		json_array_append_new(argv, json_string("sbx-init")); /* its argv is the creator's */
	else if (fs_read_file(path, 65536, &cmd, &cmdlen) == 0)
		for (size_t o = 0; o < cmdlen; o += strlen(cmd + o) + 1)
			json_array_append_new(argv, json_string(cmd + o));
	return json_pack("{s:i,s:i,s:s#,s:s,s:o}", "pid", atoi(pid), "ppid", ppid, "state", &state, (size_t)1,
			 "comm", lp + 1, "argv", argv);
}

static void handle_ps(int sock)
{
	json_t *procs = json_array();
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] >= '1' && de->d_name[0] <= '9') {
			json_t *p = read_proc(de->d_name);
			if (p)
				json_array_append_new(procs, p);
		}
	if (d)
		closedir(d);
	if (g_config && g_config->degraded) {
		/* No pid namespace: show init and its descendants only. */
		json_t *mine = json_array();
		size_t n = json_array_size(procs);
		for (size_t i = 0; i < n; i++) {
			json_t *p = json_array_get(procs, i);
			int64_t cur = json_int(p, "pid", 0);
			for (int depth = 0; depth < 4096 && cur > 1 && cur != getpid(); depth++) {
				int64_t parent = 0;
				for (size_t k = 0; k < n; k++)
					if (json_int(json_array_get(procs, k), "pid", 0) == cur)
						parent = json_int(json_array_get(procs, k), "ppid", 0);
				cur = parent;
			}
			if (cur == getpid())
				json_array_append(mine, p);
		}
		json_decref(procs);
		procs = mine;
	}
	_cleanup_json_ json_t *r = json_pack("{s:s,s:o}", CTL_F_EV, CTL_EV_PS, "processes", procs);
	if (r)
		(void)json_send(sock, r, NULL, 0);
}

/* Freezing without a cgroup freezer (rootless): SIGSTOP every process of
 * the environment (kill(-1) from pid 1 reaches all of them but init), then
 * wait until each one is really stopped, so that nothing writes while the
 * filesystem is read. SIGCONT undoes it. */
static void handle_stop_all(int sock, json_t *m)
{
	bool stop = json_bool(m, CTL_F_STOP, true);
	(void)kill(-1, stop ? SIGSTOP : SIGCONT);
	bool all = !stop;
	for (int round = 0; stop && round < 200 && !all; round++) {
		all = true;
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (all && d && (de = readdir(d))) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9' || atoi(de->d_name) == getpid())
				continue;
			char p[300];
			_cleanup_free_ char *st = NULL;
			snprintf(p, sizeof(p), "/proc/%s/stat", de->d_name);
			if (fs_read_file(p, 4096, &st, NULL) < 0)
				continue;
			char *rp = strrchr(st, ')');
			if (rp && rp[1] == ' ' && !strchr("TtZX", rp[2]))
				all = false;
		}
		if (d)
			closedir(d);
		if (!all)
			usleep(1000);
	}
	_cleanup_json_ json_t *r = json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_STOP_ALL, CTL_F_OK, all);
	if (r)
		(void)json_send(sock, r, NULL, 0);
}

static void reap(int sock)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0)
			return;
		for (size_t i = 0; i < n_execs; i++) {
			if (execs[i].pid != pid)
				continue;
			startup_mark("init: command reaped");
			_cleanup_json_ json_t *m =
			    json_pack("{s:s,s:I,s:i}", CTL_F_EV, CTL_EV_EXITED, CTL_F_ID,
				      (json_int_t)execs[i].id, CTL_F_STATUS, status);
			if (m)
				(void)json_send(sock, m, NULL, 0);
			execs[i] = execs[--n_execs];
			break;
		}
	}
}

/* The agent phase (docs/secrets.md): every process of the setup phase ends
 * (any of them may hold a secret in its memory or environment), the secrets
 * the agent phase does not keep are removed, and later commands get the
 * agent phase's environment. */
static void handle_phase(env_config *c, int sock, json_t *m)
{
	int ended = 0;
	if (c->degraded) { /* not pid 1: kill(-1) would reach all the user's processes (the supervisor
			      refuses) */
		_cleanup_json_ json_t *no = json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_PHASE, CTL_F_OK, 0);
		if (no)
			(void)json_send(sock, no, NULL, 0);
		return;
	}
	/* The agent phase's user (docs/policy.md): it must exist before anything
	 * of the setup phase ends. */
	const char *user = json_str(m, "user");
	user_ident uid_check;
	_cleanup_err_ sbx_err *ue = NULL;
	char *user_copy = user ? strdup(user) : NULL;
	if (user && (!user_copy || user_resolve(user, c->id_count, c->rootless, &uid_check, &ue) < 0)) {
		_cleanup_json_ json_t *no =
		    json_pack("{s:s,s:b,s:s,s:s}", CTL_F_EV, CTL_EV_PHASE, CTL_F_OK, 0, CTL_F_MESSAGE,
			      ue ? sbx_err_message(ue) : "out of memory", CTL_F_CODE,
			      sbx_code_name(ue ? sbx_err_code(ue) : SBX_E_INTERNAL));
		free(user_copy);
		if (no)
			(void)json_send(sock, no, NULL, 0);
		return;
	}
	for (int round = 0; round < 3000; round++) {
		int left = 0;
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d)))
			left += de->d_name[0] >= '1' && de->d_name[0] <= '9' && atoi(de->d_name) != getpid();
		if (d)
			closedir(d);
		if (round == 0)
			ended = left;
		if (!left)
			break;
		(void)kill(-1, SIGKILL); /* pid 1: everything in the namespace but us */
		reap(sock);		 /* commands' exits are reported as usual */
		usleep(1000);
	}
	_cleanup_strv_free_ char **keep = json_to_strv(json_object_get(m, "keep_secrets"));
	json_t *removed = json_array();
	secrets_drop(c, keep, removed);
	char **env = json_to_strv(json_object_get(m, "env"));
	if (env) {
		strv_free(c->env);
		c->env = env;
	}
	const char *net = json_str(m, "network");
	if (net && streq(net, "none") && net_proxied(c->network)) {
		char *none = strdup("none"); /* no proxy variables any more: it refuses everything */
		if (none) {
			free(c->network);
			c->network = none;
		}
	}
	if (user_copy) {
		free(c->user);
		c->user = user_copy;
		c->no_root = c->no_root || uid_check.uid != 0;
	}
	uint64_t kept;
	if (caps_from_json(json_object_get(m, "capabilities"), &kept) == 0)
		c->caps &= kept; /* narrowing only (phase.c checked; this cannot widen) */
	c->agent_phase = true;
	_cleanup_json_ json_t *r = json_pack("{s:s,s:b,s:i,s:o}", CTL_F_EV, CTL_EV_PHASE, CTL_F_OK, 1,
					     "processes_ended", ended, "secrets_removed", removed);
	if (r)
		(void)json_send(sock, r, NULL, 0);
}

/* The environment's own variables, replaced (ctl_proto.h CTL_OP_ENV; the
 * supervisor checked them). */
static void handle_env(env_config *c, const json_t *m)
{
	char **env = json_to_strv(json_object_get(m, "env"));
	if (env) {
		strv_free(c->env);
		c->env = env;
	}
}

_noreturn_ void init_main(env_config *c, int sock)
{
	g_config = c;
	/* The creator's environment (which may hold the host variables that env
	 * secrets came from) is not kept: commands get build_env's. */
	(void)clearenv();
	(void)prctl(PR_SET_NAME, "sbx-init", 0, 0, 0);
	/* /proc/1/cmdline: ours, not the creator's (whose options name host
	 * paths and values); the supervisor did it too, but not every creator
	 * of an init is a supervisor. */
	(void)proc_set_title("sbx-init");
	init_ignored = 0;
	for (int s = 1; s < NSIG && s <= 64; s++) {
		struct sbx_ksigaction sa;
		if (sys_rt_sigaction(s, NULL, &sa) == 0 && sa.handler == SIG_IGN)
			init_ignored |= UINT64_C(1) << (s - 1);
	}
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		_exit(1);
	if (INIT_SPAWN_VM) {
		int serr;
		(void)spawn_stack(&serr);
	}
	for (;;) {
		struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (p[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) > 0)
				;
			reap(sock);
		}
		if (p[0].revents & POLLIN) {
			int fds[FD_MSG_MAX_FDS];
			size_t n = FD_MSG_MAX_FDS;
			json_t *m = NULL;
			int r = json_recv(sock, &m, fds, &n);
			if (r == 0)
				_exit(0); /* supervisor gone: the pid namespace dies with us */
			if (r < 0)
				continue;
			const char *op = json_str(m, CTL_F_OP) ?: "";
			if (streq(op, CTL_OP_SPAWN))
				handle_spawn(c, sock, m, fds, n);
			else if (streq(op, CTL_OP_SIGNAL))
				handle_signal(m);
			else if (streq(op, CTL_OP_PS))
				handle_ps(sock);
			else if (streq(op, CTL_OP_FILE))
				init_fs_request(c, sock, m);
			else if (streq(op, CTL_OP_STOP_ALL))
				handle_stop_all(sock, m);
			else if (streq(op, CTL_OP_PHASE))
				handle_phase(c, sock, m);
			else if (streq(op, CTL_OP_ENV))
				handle_env(c, m);
			for (size_t i = 0; i < n; i++)
				safe_close(fds[i]);
			json_decref(m);
		} else if (p[0].revents & (POLLHUP | POLLERR))
			_exit(0);
	}
}
