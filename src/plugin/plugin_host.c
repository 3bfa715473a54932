/* The plugin host process, and the supervisor's handle on it (plugin.h).
 *
 * The host is cloned from the supervisor (before the environment exists)
 * with no exit signal, loads the plugins, then serves one hook request at a
 * time. A MAP_SHARED page tells the supervisor which plugin and which hook
 * the host was in, so a crash or a hang is reported against that plugin. */
#include <dlfcn.h>
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "plugin/plugin.h"
#include "runtime/seccomp.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/syscalls.h"

/* The unprivileged identity hooks run as when sbx runs as root. */
#define PLUGIN_UID 65534
#define PLUGIN_GID 65534

/* What the host is doing, for crash and timeout messages. Written by the
 * host, read by the supervisor once the host is dead (or killed). */
typedef struct plugin_shared {
	volatile int stage;
	char who[256]; /* "plugin 'name'" or "plugin '/path.so'" */
} plugin_shared;
enum { ST_IDLE, ST_LOAD, ST_INIT, ST_CREATE, ST_EXEC, ST_EGRESS, ST_FINI };
static const char *const stage_names[] = {"between hooks", "while loading", "in init", "in on_create",
					  "in on_exec",	   "in on_egress",  "in fini"};

struct plugin_host {
	pthread_mutex_t lock;
	int sock;
	pid_t pid; /* -1 once reaped */
	int pidfd;
	int timeout_ms;
	plugin_shared *sh;
	char **names;
	unsigned hooks;
	char *dead; /* why every call fails now; NULL while alive */
};

/* ---- where plugins may come from ------------------------------------------------ */

#define PLUGIN_PATH_DEFAULT "/usr/lib/sbx/plugins:/usr/local/lib/sbx/plugins"

const char *plugin_path(void)
{
	const char *e = getenv("SBX_PLUGIN_PATH");
	return e && *e ? e : PLUGIN_PATH_DEFAULT;
}

int plugin_path_check(const char *path, char **ret_real, sbx_err **err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return err_set(err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, errno,
			       "plugin '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "plugin '%s': not a regular file", path);
	/* Code that runs with sbx's privileges must not be writable by others. */
	if (st.st_mode & S_IWOTH)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
			       "plugin '%s' is writable by every user (mode %04o); refusing to load it", path,
			       (unsigned)(st.st_mode & 07777));
	if (st.st_uid != 0 && st.st_uid != geteuid())
		return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
			       "plugin '%s' is owned by uid %u (neither root nor the user running sbx); "
			       "refusing to load it",
			       path, (unsigned)st.st_uid);
	/* Only from a directory the operator named: a policy can come from an
	 * agent (MCP), and an agent can write files through a volume. */
	_cleanup_free_ char *real = realpath(path, NULL), *dirs = strdup(plugin_path());
	if (!real || !dirs)
		return err_errno(err, "plugin '%s'", path);
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		_cleanup_free_ char *rd = d[0] == '/' ? realpath(d, NULL) : NULL;
		size_t n = rd ? strlen(rd) : 0;
		if (!rd || strncmp(real, rd, n) != 0 || (real[n] != '/' && n > 1))
			continue;
		struct stat ds;
		if (stat(rd, &ds) < 0 || (ds.st_mode & S_IWOTH))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EPERM,
			    "plugin directory '%s' is writable by every user; refusing to load plugins "
			    "from it",
			    d);
		*ret_real = TAKE_PTR(real);
		return 0;
	}
	return err_set(
	    err, SBX_E_INVALID_ARGUMENT, EPERM,
	    "plugin '%s' is not in a plugin directory (%s): install it there, or add its directory to "
	    "SBX_PLUGIN_PATH in the environment of the process that creates environments",
	    path, plugin_path());
}

/* ---- the host process -------------------------------------------------------- */

typedef struct hplugin {
	const struct sbx_plugin *p;
	void *ctx;
	char who[256];
} hplugin;

/* Sends {"ev":"error"} and exits. */
_noreturn_ static void host_fail(int sock, sbx_code code, const char *fmt, ...) _printf_(3, 4);
_noreturn_ static void host_fail(int sock, sbx_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	plugin_sanitize(msg);
	_cleanup_json_ json_t *m =
	    json_pack("{s:s,s:s,s:s}", "ev", "error", "code", sbx_code_name(code), "message", msg);
	if (m)
		(void)json_send(sock, m, NULL, 0);
	_exit(1);
}

static unsigned plugin_hooks_of(const struct sbx_plugin *p)
{
	return (p->on_create ? PLUGIN_HOOK_CREATE : 0) | (p->on_exec ? PLUGIN_HOOK_EXEC : 0) |
	       (p->on_egress ? PLUGIN_HOOK_EGRESS : 0);
}

static void load_one(int sock, const char *path, hplugin *hp)
{
	_cleanup_free_ char *real = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (plugin_path_check(path, &real, &e) < 0)
		host_fail(sock, sbx_err_code(e), "%s", sbx_err_message(e));
	void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		const char *why = dlerror();
		host_fail(sock, SBX_E_INVALID_ARGUMENT, "plugin '%s': cannot load it: %s", path,
			  why ? why : "unknown error");
	}
	sbx_plugin_entry_fn entry;
	*(void **)&entry = dlsym(dl, SBX_PLUGIN_ENTRY_SYMBOL);
	if (!entry)
		host_fail(sock, SBX_E_INVALID_ARGUMENT, "plugin '%s': not an sbx plugin (no %s symbol)", path,
			  SBX_PLUGIN_ENTRY_SYMBOL);
	hp->p = entry();
	if (!hp->p)
		host_fail(sock, SBX_E_INVALID_ARGUMENT, "plugin '%s': %s returned NULL", path,
			  SBX_PLUGIN_ENTRY_SYMBOL);
}

/* Checks a loaded plugin's description. */
static void check_one(int sock, const char *what, hplugin *hp)
{
	const struct sbx_plugin *p = hp->p;
	if (p->abi_version != SBX_PLUGIN_ABI_VERSION)
		host_fail(sock, SBX_E_INVALID_ARGUMENT,
			  "plugin %s: ABI version %u, but this sbx loads version %d only; rebuild it "
			  "against this sbx's include/sbx_plugin.h",
			  what, (unsigned)p->abi_version, SBX_PLUGIN_ABI_VERSION);
	size_t min = offsetof(struct sbx_plugin, on_egress) + sizeof(p->on_egress);
	if (p->size < min)
		host_fail(sock, SBX_E_INVALID_ARGUMENT,
			  "plugin %s: struct sbx_plugin is %u bytes, less than ABI version %d's %zu", what,
			  (unsigned)p->size, SBX_PLUGIN_ABI_VERSION, min);
	bool ok = p->name && p->name[0] && strlen(p->name) <= 64;
	for (const char *c = p->name; ok && *c; c++)
		ok = *c > 0x20 && *c < 0x7f && *c != '\'';
	if (!ok)
		host_fail(sock, SBX_E_INVALID_ARGUMENT,
			  "plugin %s: its name must be 1-64 printable characters without spaces or quotes",
			  what);
}

static void drop_privileges(int sock)
{
	if (geteuid() == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(PLUGIN_GID, PLUGIN_GID, PLUGIN_GID) < 0 ||
		    setresuid(PLUGIN_UID, PLUGIN_UID, PLUGIN_UID) < 0)
			host_fail(sock, SBX_E_INTERNAL, "plugin host: drop privileges to uid %d: %s",
				  PLUGIN_UID, strerror(errno));
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		host_fail(sock, SBX_E_INTERNAL, "plugin host: no_new_privs: %s", strerror(errno));
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no ptrace, no core dumps */
	_cleanup_err_ sbx_err *e = NULL;
	if (seccomp_apply(&e) < 0)
		host_fail(sock, SBX_E_INTERNAL, "plugin host: %s", sbx_err_message(e));
}

static void serve(int sock, plugin_shared *sh, hplugin *ps, size_t n)
{
	for (;;) {
		_cleanup_json_ json_t *m = NULL, *reply = NULL, *adjust = NULL;
		int fds[1];
		size_t nf = 0;
		int r = json_recv(sock, &m, fds, &nf);
		if (r == 0 || (r < 0 && r != -EBADMSG && r != -EMSGSIZE && r != -EINTR))
			_exit(0); /* the supervisor is gone */
		if (r < 0)
			continue;
		const char *op = json_str(m, "op") ?: "";
		if (streq(op, "fini")) {
			for (size_t i = 0; i < n; i++)
				if (ps[i].p->fini) {
					snprintf(sh->who, sizeof(sh->who), "%s", ps[i].who);
					sh->stage = ST_FINI;
					ps[i].p->fini(ps[i].ctx);
				}
			sh->stage = ST_IDLE;
			_cleanup_json_ json_t *ok = json_pack("{s:s}", "result", "done");
			(void)json_send(sock, ok, NULL, 0);
			_exit(0);
		}
		plugin_info pi;
		_cleanup_err_ sbx_err *e = NULL;
		unsigned bit = plugin_hook_bit(op);
		adjust = json_object();
		if (plugin_info_decode(op, json_object_get(m, "info"), &pi, &e) < 0) {
			reply = json_pack("{s:s,s:s,s:s}", "result", "error", "plugin", "(sbx)", "message",
					  sbx_err_message(e));
		} else {
			for (size_t i = 0; i < n && !reply; i++) {
				const struct sbx_plugin *p = ps[i].p;
				sbx_plugin_verdict v;
				memset(&v, 0, sizeof(v));
				v.size = sizeof(v);
				int rc = 0;
				snprintf(sh->who, sizeof(sh->who), "%s", ps[i].who);
				if (bit == PLUGIN_HOOK_CREATE && p->on_create) {
					sh->stage = ST_CREATE;
					rc = p->on_create(ps[i].ctx, &pi.create, &v);
				} else if (bit == PLUGIN_HOOK_EXEC && p->on_exec) {
					sh->stage = ST_EXEC;
					rc = p->on_exec(ps[i].ctx, &pi.exec, &v);
				} else if (bit == PLUGIN_HOOK_EGRESS && p->on_egress) {
					sh->stage = ST_EGRESS;
					rc = p->on_egress(ps[i].ctx, &pi.egress, &v);
				} else
					continue;
				sh->stage = ST_IDLE;
				(void)plugin_verdict_apply(&pi, p->name, rc, &v, adjust, &reply);
			}
			plugin_info_done(&pi);
		}
		if (!reply) {
			reply = json_pack("{s:s}", "result", "allow");
			if (reply && json_object_size(adjust))
				json_object_set(reply, "adjust", adjust);
		}
		r = reply ? json_send(sock, reply, NULL, 0) : -ENOMEM;
		if (r < 0) {
			/* Too large (adjustments), or out of memory: still an answer. */
			json_decref(reply);
			reply =
			    json_pack("{s:s,s:s,s:s}", "result", "error", "plugin", "(sbx)", "message",
				      r == -ENOMEM ? "out of memory" : "the adjusted request is too large");
			if (!reply || json_send(sock, reply, NULL, 0) < 0)
				_exit(1);
		}
	}
}

_noreturn_ static void host_main(int sock, pid_t parent, plugin_shared *sh, const json_t *spec,
				 const struct sbx_plugin *const *statics, const char *const *configs,
				 size_t n)
{
	/* Die with the supervisor; keep nothing of it but our socket. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != parent)
		_exit(1);
	/* Our own process group: processes a plugin starts end with us. */
	(void)setsid();
	if (sock != 3 && dup2(sock, 3) < 0)
		_exit(1);
	sock = 3;
	sys_close_range(4, ~0U, 0);
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	(void)prctl(PR_SET_NAME, "sbx-plugins", 0, 0, 0);
	(void)!chdir("/");

	hplugin ps[PLUGIN_MAX];
	memset(ps, 0, sizeof(ps));
	for (size_t i = 0; i < n; i++) {
		hplugin *hp = &ps[i];
		const json_t *ent = spec ? json_array_get(spec, i) : NULL;
		const char *path =
		    spec ? (json_is_string(ent) ? json_string_value(ent) : json_str(ent, "path")) : NULL;
		if (spec && !path)
			host_fail(sock, SBX_E_INVALID_ARGUMENT, "plugins[%zu]: no path", i);
		snprintf(hp->who, sizeof(hp->who), "plugin '%s'", path ? path : "(built in)");
		snprintf(sh->who, sizeof(sh->who), "%s", hp->who);
		sh->stage = ST_LOAD;
		if (path)
			load_one(sock, path, hp);
		else
			hp->p = statics[i];
		char what[600];
		snprintf(what, sizeof(what), "'%s'", path ? path : "(built in)");
		check_one(sock, what, hp);
		snprintf(hp->who, sizeof(hp->who), "plugin '%s'", hp->p->name);
		snprintf(sh->who, sizeof(sh->who), "%s", hp->who);
		if (hp->p->init) {
			_cleanup_free_ char *cfg = NULL;
			const json_t *cj = spec ? json_object_get(ent, "config") : NULL;
			if (spec)
				cfg = cj ? json_dumps(cj, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("null");
			else
				cfg = strdup(configs && configs[i] ? configs[i] : "null");
			if (!cfg)
				host_fail(sock, SBX_E_INTERNAL, "out of memory");
			char ebuf[SBX_PLUGIN_MESSAGE_MAX] = "";
			sh->stage = ST_INIT;
			int rc = hp->p->init(cfg, &hp->ctx, ebuf, sizeof(ebuf));
			sh->stage = ST_LOAD;
			ebuf[sizeof(ebuf) - 1] = '\0';
			if (rc != 0)
				host_fail(sock, SBX_E_INVALID_ARGUMENT, "plugin '%s'%s%s%s: init failed: %s",
					  hp->p->name, path ? " (" : "", path ? path : "", path ? ")" : "",
					  ebuf[0] ? ebuf : "no reason given");
		}
	}
	drop_privileges(sock);
	sh->stage = ST_IDLE;
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_pack("{s:s,s:i}", "name", ps[i].p->name, "hooks",
						      (int)plugin_hooks_of(ps[i].p)));
	_cleanup_json_ json_t *ready = json_pack("{s:s,s:o}", "ev", "ready", "plugins", list);
	if (!ready || json_send(sock, ready, NULL, 0) < 0)
		_exit(1);
	serve(sock, sh, ps, n);
	_exit(0);
}

/* ---- the supervisor's side ------------------------------------------------------ */

/* Waits up to ms for one message from the host: 1 (in *ret), 0 timeout,
 * negative on EOF, an error, or the host's exit (its pidfd: a process it
 * started may still hold the socket open). */
static int recv_timeout(plugin_host *h, int ms, json_t **ret)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p[2] = {{.fd = h->sock, .events = POLLIN}, {.fd = h->pidfd, .events = POLLIN}};
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t left = ms - ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000);
		int r = poll(p, 2, left > 0 ? (int)left : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			return -ECHILD; /* exited without a word */
		int fds[1];
		size_t nf = 0;
		r = json_recv(h->sock, ret, fds, &nf);
		return r > 0 ? 1 : r == 0 ? -EPIPE : r;
	}
}

/* The host is gone or must go: kill it (a timeout), reap it, and record
 * why in h->dead. Called with the lock held. */
static void host_down(plugin_host *h, bool timed_out)
{
	if (h->pid > 0) {
		if (timed_out)
			(void)sys_pidfd_send_signal(h->pidfd, SIGKILL, NULL, 0);
		else {
			/* It closed its socket: give it a moment to finish dying
			 * (a crash), then make sure. */
			struct pollfd p = {.fd = h->pidfd, .events = POLLIN};
			if (RETRY_EINTR(poll(&p, 1, 1000)) <= 0)
				(void)sys_pidfd_send_signal(h->pidfd, SIGKILL, NULL, 0);
		}
	}
	int status = 0;
	bool reaped = h->pid > 0 && RETRY_EINTR(waitpid(h->pid, &status, __WALL)) == h->pid;
	/* And whatever a plugin started (its process group outlives it, so
	 * the id cannot have been reused). */
	if (h->pid > 0)
		(void)kill(-h->pid, SIGKILL);
	h->pid = -1;
	h->pidfd = safe_close(h->pidfd);
	h->sock = safe_close(h->sock);
	if (h->dead)
		return;
	int st = h->sh->stage;
	const char *stage = st >= 0 && st < (int)ARRAY_SIZE(stage_names) ? stage_names[st] : "";
	char who[300];
	snprintf(who, sizeof(who), "%.255s %s", h->sh->who[0] ? h->sh->who : "a plugin", stage);
	char how[200] = "it exited";
	if (reaped && WIFSIGNALED(status))
		snprintf(how, sizeof(how), "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else if (reaped && WIFEXITED(status))
		snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(status));
	int r = timed_out ? asprintf(&h->dead, "plugin host did not answer within %d ms (%s) and was stopped",
				     h->timeout_ms, who)
			  : asprintf(&h->dead, "plugin host crashed: %s: %s", who, how);
	if (r < 0)
		h->dead = strdup("plugin host crashed");
	plugin_sanitize(h->dead);
}

static int timeout_default(void)
{
	const char *e = getenv("SBX_PLUGIN_TIMEOUT_MS");
	long v = e ? strtol(e, NULL, 10) : 0;
	return v >= 10 && v <= 600000 ? (int)v : PLUGIN_TIMEOUT_MS_DEFAULT;
}

void plugin_host_stop(plugin_host *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	if (h->pid > 0) {
		_cleanup_json_ json_t *q = json_pack("{s:s}", "op", "fini"), *m = NULL;
		if (q && json_send(h->sock, q, NULL, 0) == 0)
			(void)recv_timeout(h, 1000, &m);
		if (!h->dead)
			h->dead = strdup("the environment is stopping: plugins are no longer running");
		host_down(h, true);
	}
	pthread_mutex_unlock(&h->lock);
}

void plugin_host_free(plugin_host *h)
{
	if (!h)
		return;
	plugin_host_stop(h);
	pthread_mutex_destroy(&h->lock);
	if (h->sh)
		munmap(h->sh, sizeof(plugin_shared));
	strv_free(h->names);
	free(h->dead);
	free(h);
}

bool plugin_host_dead(plugin_host *h)
{
	pthread_mutex_lock(&h->lock);
	bool d = h->dead != NULL;
	pthread_mutex_unlock(&h->lock);
	return d;
}

unsigned plugin_host_hooks(const plugin_host *h)
{
	return h ? h->hooks : 0;
}
char *const *plugin_host_names(const plugin_host *h)
{
	return h->names;
}

static void plugin_host_freep(plugin_host **h)
{
	plugin_host_free(*h);
}

static int start(const json_t *spec, const struct sbx_plugin *const *statics, const char *const *configs,
		 size_t n, int timeout_ms, plugin_host **ret, sbx_err **err)
{
	if (n == 0 || n > PLUGIN_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "between 1 and %d plugins per environment", PLUGIN_MAX);
	_cleanup_(plugin_host_freep) plugin_host *h = calloc(1, sizeof(*h));
	if (!h)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	pthread_mutex_init(&h->lock, NULL);
	h->sock = h->pidfd = -1;
	h->pid = -1;
	h->timeout_ms = timeout_ms > 0 ? timeout_ms : timeout_default();
	h->sh = mmap(NULL, sizeof(plugin_shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (h->sh == MAP_FAILED) {
		h->sh = NULL;
		return err_errno(err, "plugin host: mmap");
	}
	int sp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return err_errno(err, "plugin host: socketpair");
	/* No exit signal: a "clone child" that waitpid(-1) without __WALL does
	 * not reap, so its status stays for us. */
	pid_t parent = getpid();
	int pidfd = -1;
	struct sbx_clone_args a = {
	    .flags = CLONE_PIDFD, .pidfd = (uint64_t)(uintptr_t)&pidfd, .exit_signal = 0};
	pid_t pid = sys_clone3(&a);
	if (pid < 0 && errno == ENOSYS)
		pid = sys_clone_fork(CLONE_PIDFD, &pidfd);
	if (pid < 0) {
		int e = errno;
		safe_close(sp[0]);
		safe_close(sp[1]);
		return err_errnum(err, e, "plugin host: clone");
	}
	if (pid == 0) {
		safe_close(sp[0]);
		host_main(sp[1], parent, h->sh, spec, statics, configs, n);
	}
	safe_close(sp[1]);
	h->sock = sp[0];
	h->pid = pid;
	h->pidfd = pidfd;
	/* Loading and init: twice a hook's time, at least 10 s. */
	int load_ms = h->timeout_ms * 2 > 10000 ? h->timeout_ms * 2 : 10000;
	_cleanup_json_ json_t *m = NULL;
	int r = recv_timeout(h, load_ms, &m);
	if (r <= 0) {
		host_down(h, r == 0);
		return err_set(err, SBX_E_UNAVAILABLE, r == 0 ? ETIMEDOUT : EPIPE, "%s", h->dead);
	}
	if (streq(json_str(m, "ev") ?: "", "error")) {
		sbx_code code = err_code_from_name(json_str(m, "code"));
		host_down(h, false);
		return err_set(err, code, code == SBX_E_NOT_FOUND ? ENOENT : EINVAL, "%s",
			       json_str(m, "message") ?: "plugin host failed");
	}
	json_t *list = json_object_get(m, "plugins");
	if (!streq(json_str(m, "ev") ?: "", "ready") || json_array_size(list) != n) {
		host_down(h, true);
		return err_set(err, SBX_E_INTERNAL, EPROTO, "plugin host sent a malformed reply");
	}
	h->names = calloc(n + 1, sizeof(char *));
	if (!h->names)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array_get(list, i);
		h->names[i] = strdup(json_str(p, "name") ?: "?");
		h->hooks |= (unsigned)json_int(p, "hooks", 0);
		if (!h->names[i])
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	*ret = TAKE_PTR(h);
	return 0;
}

int plugin_host_start(const json_t *spec, int timeout_ms, plugin_host **ret, sbx_err **err)
{
	if (!json_is_array(spec))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "plugins: not an array");
	return start(spec, NULL, NULL, json_array_size(spec), timeout_ms, ret, err);
}

int plugin_host_start_static(const struct sbx_plugin *const *plugins, const char *const *configs, size_t n,
			     int timeout_ms, plugin_host **ret, sbx_err **err)
{
	return start(NULL, plugins, configs, n, timeout_ms, ret, err);
}

int plugin_host_call(plugin_host *h, const char *hook, const json_t *info, json_t **ret_adjust, sbx_err **err)
{
	if (ret_adjust)
		*ret_adjust = NULL;
	pthread_mutex_lock(&h->lock);
	int r;
	_cleanup_json_ json_t *req = json_pack("{s:s,s:O}", "op", hook, "info", info), *m = NULL;
	_cleanup_err_ sbx_err *e = NULL; /* before any goto */
	if (h->dead) {
		r = err_set(err, SBX_E_UNAVAILABLE, EPIPE, "%s; refusing", h->dead);
		goto out;
	}
	if (!req) {
		r = err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
		goto out;
	}
	r = json_send(h->sock, req, NULL, 0);
	if (r == -E2BIG || r == -EMSGSIZE) {
		r = err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG,
			    "the request is too large for the plugins; refusing");
		goto out;
	}
	if (r >= 0)
		r = recv_timeout(h, h->timeout_ms, &m);
	else
		r = -EPIPE;
	if (r <= 0) {
		host_down(h, r == 0);
		r = err_set(err, SBX_E_UNAVAILABLE, r == 0 ? ETIMEDOUT : EPIPE, "%s; refusing", h->dead);
		goto out;
	}
	r = plugin_reply_decode(m, hook, ret_adjust, &e);
	if (r < 0) {
		if (sbx_err_errno(e) == EPROTO) {
			/* A host that speaks nonsense is not trusted again. */
			h->dead = strdup("plugin host sent a malformed reply");
			host_down(h, true);
		}
		r = err_set(err, sbx_err_code(e), sbx_err_errno(e), "%s", sbx_err_message(e));
	}
out:
	pthread_mutex_unlock(&h->lock);
	return r < 0 ? r : 0;
}
