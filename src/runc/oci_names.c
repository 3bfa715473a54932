/* The names the OCI runtime spec uses (oci_spec.h): hooks, capabilities,
 * signals, namespaces, rlimits, mount options. Pure tables. */
#include "runc/oci_spec.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "util/json.h"
#include "util/macro.h"

const char *const oci_hook_names[OCI_HOOK_MAX] = {
    [OCI_HOOK_PRESTART] = "prestart",
    [OCI_HOOK_CREATE_RUNTIME] = "createRuntime",
    [OCI_HOOK_CREATE_CONTAINER] = "createContainer",
    [OCI_HOOK_START_CONTAINER] = "startContainer",
    [OCI_HOOK_POSTSTART] = "poststart",
    [OCI_HOOK_POSTSTOP] = "poststop",
};

static const char *const cap_names[] = {
    "CAP_CHOWN",	    "CAP_DAC_OVERRIDE",	  "CAP_DAC_READ_SEARCH", "CAP_FOWNER",	      "CAP_FSETID",
    "CAP_KILL",		    "CAP_SETGID",	  "CAP_SETUID",		 "CAP_SETPCAP",	      "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",  "CAP_NET_ADMIN",	 "CAP_NET_RAW",	      "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",	    "CAP_SYS_MODULE",	  "CAP_SYS_RAWIO",	 "CAP_SYS_CHROOT",    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",	    "CAP_SYS_ADMIN",	  "CAP_SYS_BOOT",	 "CAP_SYS_NICE",      "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",	    "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",		 "CAP_LEASE",	      "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",    "CAP_SETFCAP",	  "CAP_MAC_OVERRIDE",	 "CAP_MAC_ADMIN",     "CAP_SYSLOG",
    "CAP_WAKE_ALARM",	    "CAP_BLOCK_SUSPEND",  "CAP_AUDIT_READ",	 "CAP_PERFMON",	      "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

int oci_cap_from_name(const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(cap_names); i++)
		if (strcasecmp(name, cap_names[i]) == 0 || strcasecmp(name, cap_names[i] + 4) == 0)
			return (int)i;
	return -1;
}

static const struct {
	const char *name;
	int sig;
} sig_names[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},	    {"QUIT", SIGQUIT},	 {"ILL", SIGILL},     {"TRAP", SIGTRAP},
    {"ABRT", SIGABRT}, {"IOT", SIGIOT},	    {"BUS", SIGBUS},	 {"FPE", SIGFPE},     {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},	 {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},
    {"TERM", SIGTERM}, {"STKFLT", SIGSTKFLT}, {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"STOP", SIGSTOP},
    {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},	 {"URG", SIGURG},     {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"POLL", SIGPOLL}, {"PWR", SIGPWR},	    {"SYS", SIGSYS},
};

int oci_signal_parse(const char *s)
{
	if (!s || !*s)
		return -1;
	if (isdigit((unsigned char)*s)) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		/* 0 is runc's "is it alive" check */
		if (errno || *end || v < 0 || v > SIGRTMAX)
			return -1;
		return (int)v;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(sig_names); i++)
		if (strcasecmp(s, sig_names[i].name) == 0)
			return sig_names[i].sig;
	if (strncasecmp(s, "RTMIN+", 6) == 0 || strncasecmp(s, "RTMAX-", 6) == 0) {
		char *end;
		long v = strtol(s + 6, &end, 10);
		if (*end || v < 0 || v > SIGRTMAX - SIGRTMIN)
			return -1;
		return s[5] == '+' ? SIGRTMIN + (int)v : SIGRTMAX - (int)v;
	}
	return -1;
}

int oci_namespace_type(const char *name)
{
	static const struct {
		const char *n;
		int t;
	} t[] = {
	    {"pid", CLONE_NEWPID},   {"network", CLONE_NEWNET},	   {"mount", CLONE_NEWNS}, {"ipc", CLONE_NEWIPC},
	    {"uts", CLONE_NEWUTS},   {"user", CLONE_NEWUSER},	   {"cgroup", CLONE_NEWCGROUP},
	    {"time", 0x00000080 /* CLONE_NEWTIME */},
	};
	for (size_t i = 0; name && i < ARRAY_SIZE(t); i++)
		if (streq(name, t[i].n))
			return t[i].t;
	return 0;
}

int oci_rlimit_from_name(const char *name)
{
	static const struct {
		const char *n;
		int r;
	} t[] = {
	    {"RLIMIT_CPU", RLIMIT_CPU},		{"RLIMIT_FSIZE", RLIMIT_FSIZE},	    {"RLIMIT_DATA", RLIMIT_DATA},
	    {"RLIMIT_STACK", RLIMIT_STACK},	{"RLIMIT_CORE", RLIMIT_CORE},	    {"RLIMIT_RSS", RLIMIT_RSS},
	    {"RLIMIT_NPROC", RLIMIT_NPROC},	{"RLIMIT_NOFILE", RLIMIT_NOFILE},   {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
	    {"RLIMIT_AS", RLIMIT_AS},		{"RLIMIT_LOCKS", RLIMIT_LOCKS},	    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	    {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE}, {"RLIMIT_NICE", RLIMIT_NICE},   {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
	    {"RLIMIT_RTTIME", RLIMIT_RTTIME},
	};
	for (size_t i = 0; name && i < ARRAY_SIZE(t); i++)
		if (streq(name, t[i].n))
			return t[i].r;
	return -1;
}

const char *oci_env_get(char *const *env, const char *key)
{
	size_t kl = strlen(key);
	for (size_t i = 0; env && env[i]; i++)
		if (strncmp(env[i], key, kl) == 0 && env[i][kl] == '=')
			return env[i] + kl + 1;
	return NULL;
}

/* ---- mounts ---- */

/* Mount options: flags (set or cleared), propagation, and the crun/runc
 * extensions accepted and ignored; anything else is filesystem data. */
static const struct {
	const char *name;
	bool clear;
	unsigned long flag;
} mount_flags[] = {
    {"ro", false, MS_RDONLY},	     {"rw", true, MS_RDONLY},		{"suid", true, MS_NOSUID},
    {"nosuid", false, MS_NOSUID},    {"dev", true, MS_NODEV},		{"nodev", false, MS_NODEV},
    {"exec", true, MS_NOEXEC},	     {"noexec", false, MS_NOEXEC},	{"sync", false, MS_SYNCHRONOUS},
    {"async", true, MS_SYNCHRONOUS}, {"dirsync", false, MS_DIRSYNC},	{"remount", false, MS_REMOUNT},
    {"mand", false, MS_MANDLOCK},    {"nomand", true, MS_MANDLOCK},	{"atime", true, MS_NOATIME},
    {"noatime", false, MS_NOATIME},  {"diratime", true, MS_NODIRATIME}, {"nodiratime", false, MS_NODIRATIME},
    {"bind", false, MS_BIND},	     {"rbind", false, MS_BIND | MS_REC}, {"relatime", false, MS_RELATIME},
    {"norelatime", true, MS_RELATIME}, {"strictatime", false, MS_STRICTATIME},
    {"nostrictatime", true, MS_STRICTATIME},
};
static const struct {
	const char *name;
	unsigned long flag;
} mount_props[] = {
    {"private", MS_PRIVATE},		 {"rprivate", MS_PRIVATE | MS_REC},   {"shared", MS_SHARED},
    {"rshared", MS_SHARED | MS_REC},	 {"slave", MS_SLAVE},		      {"rslave", MS_SLAVE | MS_REC},
    {"unbindable", MS_UNBINDABLE},	 {"runbindable", MS_UNBINDABLE | MS_REC},
};
static const char *const mount_ignored[] = {"tmpcopyup", "notmpcopyup", "copy-symlink"};

json_t *oci_features_mount_options(void)
{
	json_t *a = json_array();
	for (size_t k = 0; a && k < ARRAY_SIZE(mount_flags); k++)
		(void)json_array_append_new(a, json_string(mount_flags[k].name));
	for (size_t k = 0; a && k < ARRAY_SIZE(mount_props); k++)
		(void)json_array_append_new(a, json_string(mount_props[k].name));
	for (size_t k = 0; a && k < ARRAY_SIZE(mount_ignored); k++)
		(void)json_array_append_new(a, json_string(mount_ignored[k]));
	return a;
}

int oci_mount_options(const char *const *opts, size_t n, unsigned long *ret_flags, unsigned long *ret_propagation,
		      char **ret_data, bool *ret_bind, sbx_err **err)
{
	unsigned long f = 0, prop = 0;
	size_t dlen = 0;
	_cleanup_free_ char *data = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *o = opts[i];
		bool done = false;
		for (size_t k = 0; !done && k < ARRAY_SIZE(mount_flags); k++)
			if (streq(o, mount_flags[k].name)) {
				if (mount_flags[k].clear)
					f &= ~mount_flags[k].flag;
				else
					f |= mount_flags[k].flag;
				done = true;
			}
		for (size_t k = 0; !done && k < ARRAY_SIZE(mount_props); k++)
			if (streq(o, mount_props[k].name))
				prop = mount_props[k].flag, done = true;
		/* crun/runc extensions sbx-runc does not need: tmpcopyup (tmpfs
		 * over an image directory starts empty), copy-symlink; idmap and
		 * ridmap are not supported, refused. */
		for (size_t k = 0; !done && k < ARRAY_SIZE(mount_ignored); k++)
			done = streq(o, mount_ignored[k]);
		if (!done && (streq(o, "idmap") || streq(o, "ridmap")))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EOPNOTSUPP, "mount option '%s' is not supported", o);
		if (done)
			continue;
		size_t ol = strlen(o);
		if (ol == 0)
			continue;
		char *nd = realloc(data, dlen + ol + 2);
		if (!nd)
			return err_oom(err);
		data = nd;
		if (dlen)
			data[dlen++] = ',';
		memcpy(data + dlen, o, ol + 1);
		dlen += ol;
	}
	*ret_bind = (f & MS_BIND) != 0;
	*ret_flags = f;
	*ret_propagation = prop;
	*ret_data = TAKE_PTR(data);
	return 0;
}
