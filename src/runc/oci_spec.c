/* Pure parsing of the OCI runtime spec (oci_spec.h). */
#include "runc/oci_spec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
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

/* ---- small typed getters: absent is fine, a wrong type is an error ---- */

static int bad(sbx_err **err, const char *field, const char *want)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' must be %s", field, want);
}

static int get_str(const json_t *o, const char *k, const char *field, char **ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(err, field, "a string");
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : err_oom(err);
}

static int get_strv(const json_t *o, const char *k, const char *field, char ***ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return bad(err, field, "an array of strings");
	char **s = json_to_strv(v);
	if (!s)
		return bad(err, field, "an array of strings");
	*ret = s;
	return 0;
}

static int get_bool(const json_t *o, const char *k, const char *field, bool *ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return bad(err, field, "a boolean");
	*ret = json_is_true(v);
	return 0;
}

/* An integer in [lo, hi]; a real with an integral value is accepted too
 * (some writers emit 1e9). */
static int get_int(const json_t *o, const char *k, const char *field, int64_t lo, int64_t hi, int64_t *ret,
		   sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	int64_t x;
	if (json_is_integer(v))
		x = json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) >= -9.2e18 && json_real_value(v) <= 9.2e18 &&
		 (double)(int64_t)json_real_value(v) == json_real_value(v))
		x = (int64_t)json_real_value(v);
	else
		return bad(err, field, "an integer");
	if (x < lo || x > hi)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE, "'%s' is out of range", field);
	*ret = x;
	return 0;
}

static int get_u64(const json_t *o, const char *k, const char *field, uint64_t *ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	/* jansson reads integers as int64; a uint64 above INT64_MAX (RLIM_INFINITY
	 * written as 18446744073709551615) arrives as a real. */
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE, "'%s' is out of range", field);
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && json_real_value(v) >= 0) {
		double d = json_real_value(v);
		*ret = d >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)d;
		return 0;
	}
	return bad(err, field, "an unsigned integer");
}

static json_t *get_obj(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_object(v) ? v : NULL;
}

static int check_obj(const json_t *o, const char *k, const char *field, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (v && !json_is_null(v) && !json_is_object(v))
		return bad(err, field, "an object");
	return 0;
}

static int check_arr(const json_t *o, const char *k, const char *field, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (v && !json_is_null(v) && !json_is_array(v))
		return bad(err, field, "an array");
	return 0;
}

/* ---- process ---- */

static int parse_caps(const json_t *c, oci_caps *ret, sbx_err **err)
{
	static const char *const sets[] = {"bounding", "effective", "inheritable", "permitted", "ambient"};
	uint64_t *dst[] = {&ret->bounding, &ret->effective, &ret->inheritable, &ret->permitted, &ret->ambient};
	ret->present = true;
	for (size_t i = 0; i < ARRAY_SIZE(sets); i++) {
		json_t *a = json_object_get(c, sets[i]);
		if (!a || json_is_null(a))
			continue;
		if (!json_is_array(a))
			return bad(err, "process.capabilities", "an object of arrays of strings");
		size_t j;
		json_t *v;
		json_array_foreach (a, j, v) {
			if (!json_is_string(v))
				return bad(err, "process.capabilities", "an object of arrays of strings");
			int cap = oci_cap_from_name(json_string_value(v));
			/* Unknown capabilities are ignored, as runc does (a newer
			 * engine may name one this kernel table lacks). */
			if (cap >= 0)
				*dst[i] |= 1ULL << cap;
		}
	}
	return 0;
}

void oci_process_done(oci_process *p)
{
	if (!p)
		return;
	strv_free(p->args);
	strv_free(p->env);
	free(p->cwd);
	free(p->user.additional_gids);
	free(p->rlimits);
	memset(p, 0, sizeof(*p));
}

int oci_process_parse_json(const json_t *j, oci_process *ret, sbx_err **err)
{
	oci_process p = {0};
	int r;
	if (!json_is_object(j))
		return bad(err, "process", "an object");
	if ((r = get_strv(j, "args", "process.args", &p.args, err)) < 0)
		goto fail;
	if (!p.args || !p.args[0] || !*p.args[0]) {
		r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'process.args' must not be empty");
		goto fail;
	}
	if ((r = get_strv(j, "env", "process.env", &p.env, err)) < 0)
		goto fail;
	if (!p.env && !(p.env = calloc(1, sizeof(char *)))) {
		r = err_oom(err);
		goto fail;
	}
	if ((r = get_str(j, "cwd", "process.cwd", &p.cwd, err)) < 0)
		goto fail;
	if (!p.cwd && !(p.cwd = strdup("/"))) {
		r = err_oom(err);
		goto fail;
	}
	if (p.cwd[0] != '/') {
		r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'process.cwd' must be an absolute path");
		goto fail;
	}
	if ((r = get_bool(j, "terminal", "process.terminal", &p.terminal, err)) < 0 ||
	    (r = get_bool(j, "noNewPrivileges", "process.noNewPrivileges", &p.no_new_privileges, err)) < 0)
		goto fail;
	if ((r = check_obj(j, "user", "process.user", err)) < 0)
		goto fail;
	json_t *u = get_obj(j, "user");
	if (u) {
		int64_t x = 0;
		if ((r = get_int(u, "uid", "process.user.uid", 0, UINT32_MAX, &x, err)) < 0)
			goto fail;
		p.user.uid = (uint32_t)x;
		x = 0;
		if ((r = get_int(u, "gid", "process.user.gid", 0, UINT32_MAX, &x, err)) < 0)
			goto fail;
		p.user.gid = (uint32_t)x;
		x = -1;
		if ((r = get_int(u, "umask", "process.user.umask", 0, 07777, &x, err)) < 0)
			goto fail;
		if (x >= 0)
			p.user.has_umask = true, p.user.umask = (uint32_t)x;
		if ((r = check_arr(u, "additionalGids", "process.user.additionalGids", err)) < 0)
			goto fail;
		json_t *g = json_object_get(u, "additionalGids");
		if (json_is_array(g) && json_array_size(g) > 0) {
			if (json_array_size(g) > 65536) {
				r = err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many additionalGids");
				goto fail;
			}
			p.user.additional_gids = calloc(json_array_size(g), sizeof(gid_t));
			if (!p.user.additional_gids) {
				r = err_oom(err);
				goto fail;
			}
			size_t i;
			json_t *v;
			json_array_foreach (g, i, v) {
				if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > UINT32_MAX) {
					r = bad(err, "process.user.additionalGids", "an array of gids");
					goto fail;
				}
				p.user.additional_gids[p.user.n_additional_gids++] = (gid_t)json_integer_value(v);
			}
		}
	}
	if ((r = check_obj(j, "capabilities", "process.capabilities", err)) < 0)
		goto fail;
	if (get_obj(j, "capabilities") && (r = parse_caps(get_obj(j, "capabilities"), &p.caps, err)) < 0)
		goto fail;
	if ((r = check_arr(j, "rlimits", "process.rlimits", err)) < 0)
		goto fail;
	json_t *rl = json_object_get(j, "rlimits");
	if (json_is_array(rl) && json_array_size(rl) > 0) {
		if (json_array_size(rl) > 64) {
			r = err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many rlimits");
			goto fail;
		}
		p.rlimits = calloc(json_array_size(rl), sizeof(*p.rlimits));
		if (!p.rlimits) {
			r = err_oom(err);
			goto fail;
		}
		size_t i;
		json_t *v;
		json_array_foreach (rl, i, v) {
			oci_rlimit *l = &p.rlimits[p.n_rlimits];
			if (!json_is_object(v)) {
				r = bad(err, "process.rlimits", "an array of objects");
				goto fail;
			}
			l->resource = oci_rlimit_from_name(json_str(v, "type"));
			if (l->resource < 0) {
				r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown rlimit type '%s'",
					    json_str(v, "type") ?: "(none)");
				goto fail;
			}
			if ((r = get_u64(v, "soft", "process.rlimits.soft", &l->soft, err)) < 0 ||
			    (r = get_u64(v, "hard", "process.rlimits.hard", &l->hard, err)) < 0)
				goto fail;
			p.n_rlimits++;
		}
	}
	int64_t adj = INT64_MIN;
	if ((r = get_int(j, "oomScoreAdj", "process.oomScoreAdj", -1000, 1000, &adj, err)) < 0)
		goto fail;
	if (adj != INT64_MIN)
		p.has_oom_score_adj = true, p.oom_score_adj = (int)adj;
	*ret = p;
	return 0;
fail:
	oci_process_done(&p);
	return r;
}

int oci_process_parse(const char *text, size_t len, oci_process *ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "process: %s (line %d)", je.text, je.line);
	return oci_process_parse_json(j, ret, err);
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

static void mount_done(oci_mount *m)
{
	free(m->destination);
	free(m->type);
	free(m->source);
	free(m->data);
}

static int parse_mount(const json_t *j, oci_mount *m, sbx_err **err)
{
	int r;
	if (!json_is_object(j))
		return bad(err, "mounts", "an array of objects");
	if ((r = get_str(j, "destination", "mounts.destination", &m->destination, err)) < 0 ||
	    (r = get_str(j, "type", "mounts.type", &m->type, err)) < 0 ||
	    (r = get_str(j, "source", "mounts.source", &m->source, err)) < 0)
		return r;
	if (!m->destination || m->destination[0] != '/')
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "a mount's destination must be an absolute path");
	_cleanup_strv_free_ char **opts = NULL;
	if ((r = get_strv(j, "options", "mounts.options", &opts, err)) < 0)
		return r;
	size_t n = 0;
	while (opts && opts[n])
		n++;
	if ((r = oci_mount_options((const char *const *)opts, n, &m->flags, &m->propagation, &m->data, &m->bind,
				   err)) < 0)
		return err_wrap(err, "mount '%s'", m->destination);
	/* A mount without a type is a bind mount when its options say so (CDI
	 * writes such mounts); "bind" as a type always is. */
	if ((!m->type || !*m->type) && m->bind) {
		free(m->type);
		if (!(m->type = strdup("bind")))
			return err_oom(err);
	}
	if (m->type && streq(m->type, "bind"))
		m->bind = true, m->flags |= MS_BIND;
	if (!m->type || !*m->type)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "mount '%s' has no type", m->destination);
	if (m->bind && !m->source)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "bind mount '%s' has no source", m->destination);
	return 0;
}

/* ---- hooks ---- */

void oci_hooks_free(oci_hook *h, size_t n)
{
	for (size_t i = 0; h && i < n; i++) {
		free(h[i].path);
		strv_free(h[i].args);
		strv_free(h[i].env);
	}
	free(h);
}

int oci_hooks_parse(const json_t *hooks, oci_hook_kind kind, oci_hook **ret, size_t *ret_n, sbx_err **err)
{
	json_t *a = hooks ? json_object_get(hooks, oci_hook_names[kind]) : NULL;
	*ret = NULL;
	*ret_n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 1024)
		return bad(err, oci_hook_names[kind], "an array of hooks");
	size_t n = json_array_size(a);
	if (n == 0)
		return 0;
	oci_hook *h = calloc(n, sizeof(*h));
	if (!h)
		return err_oom(err);
	size_t i;
	json_t *v;
	int r;
	json_array_foreach (a, i, v) {
		if (!json_is_object(v)) {
			r = bad(err, oci_hook_names[kind], "an array of objects");
			goto fail;
		}
		int64_t t = 0;
		if ((r = get_str(v, "path", "hooks.path", &h[i].path, err)) < 0 ||
		    (r = get_strv(v, "args", "hooks.args", &h[i].args, err)) < 0 ||
		    (r = get_strv(v, "env", "hooks.env", &h[i].env, err)) < 0 ||
		    (r = get_int(v, "timeout", "hooks.timeout", 0, 86400, &t, err)) < 0)
			goto fail;
		if (!h[i].path || h[i].path[0] != '/') {
			r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "a %s hook's path must be absolute",
				    oci_hook_names[kind]);
			goto fail;
		}
		h[i].timeout = (int)t;
	}
	*ret = h;
	*ret_n = n;
	return 0;
fail:
	oci_hooks_free(h, n);
	return r;
}

/* ---- resources ---- */

void oci_resources_done(oci_resources *r)
{
	if (!r)
		return;
	free(r->cpuset_cpus);
	free(r->cpuset_mems);
	free(r->blkio_devs);
	memset(r, 0, sizeof(*r));
}

static int id_parse(const char *s, uint32_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || v > UINT32_MAX || *s == '-')
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int append_strs(json_t *o, const char *k, const char *const *v)
{
	if (!v || !*v)
		return 0;
	json_t *a = json_object_get(o, k);
	if (!a || !json_is_array(a)) {
		a = json_array();
		if (!a || json_object_set_new(o, k, a) < 0)
			return -ENOMEM;
	}
	for (; *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0)
			return -ENOMEM;
	return 0;
}

int oci_exec_process(const json_t *spec_process, const oci_exec_args *a, json_t **ret, sbx_err **err)
{
	if (!a->argv || !a->argv[0])
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "exec args cannot be empty");
	_cleanup_json_ json_t *p = json_is_object(spec_process) ? json_deep_copy(spec_process) : json_object();
	_cleanup_json_ json_t *args = json_array();
	if (!p || !args)
		return err_oom(err);
	for (char *const *v = a->argv; *v; v++)
		if (json_array_append_new(args, json_string(*v)) < 0)
			return err_oom(err);
	if (json_object_set(p, "args", args) < 0 || append_strs(p, "env", a->env) < 0 ||
	    json_object_set_new(p, "terminal", json_boolean(a->tty)) < 0)
		return err_oom(err);
	if (a->cwd && json_object_set_new(p, "cwd", json_string(a->cwd)) < 0)
		return err_oom(err);
	if (a->no_new_privs && json_object_set_new(p, "noNewPrivileges", json_true()) < 0)
		return err_oom(err);
	json_t *u = json_object_get(p, "user");
	if (!json_is_object(u)) {
		u = json_pack("{s:i,s:i}", "uid", 0, "gid", 0);
		if (!u || json_object_set_new(p, "user", u) < 0)
			return err_oom(err);
	}
	if (a->user) {
		_cleanup_free_ char *dup = strdup(a->user);
		if (!dup)
			return err_oom(err);
		char *colon = strchr(dup, ':');
		uint32_t uid, gid;
		if (colon)
			*colon = 0;
		if (id_parse(dup, &uid) < 0 || (colon && id_parse(colon + 1, &gid) < 0))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--user '%s': want uid[:gid], numbers",
				       a->user);
		if (json_object_set_new(u, "uid", json_integer(uid)) < 0 ||
		    (colon && json_object_set_new(u, "gid", json_integer(gid)) < 0))
			return err_oom(err);
	}
	for (const char *const *g = a->gids; g && *g; g++) {
		uint32_t gid;
		if (id_parse(*g, &gid) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--additional-gids '%s': want a number", *g);
		json_t *l = json_object_get(u, "additionalGids");
		if (!json_is_array(l)) {
			l = json_array();
			if (!l || json_object_set_new(u, "additionalGids", l) < 0)
				return err_oom(err);
		}
		if (json_array_append_new(l, json_integer(gid)) < 0)
			return err_oom(err);
	}
	if (a->caps && *a->caps) {
		json_t *c = json_object_get(p, "capabilities");
		if (!json_is_object(c)) {
			c = json_object();
			if (!c || json_object_set_new(p, "capabilities", c) < 0)
				return err_oom(err);
		}
		/* Not inheritable: runc 1.1 stopped adding there (CVE-2022-29162). */
		static const char *const sets[] = {"bounding", "effective", "permitted", "ambient"};
		for (size_t i = 0; i < ARRAY_SIZE(sets); i++)
			if (append_strs(c, sets[i], a->caps) < 0)
				return err_oom(err);
	}
	*ret = TAKE_PTR(p);
	return 0;
}

/* docker's units.RAMInBytes: a number with an optional b/k/m/g/t/p suffix
 * (powers of 1024, "kb"/"mb"... too); -1 is "unlimited". */
static int ram_bytes(const char *s, int64_t *ret)
{
	if (streq(s, "-1")) {
		*ret = -1;
		return 0;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -EINVAL;
	double mul = 1;
	char u = (char)tolower((unsigned char)*end);
	const char *units = "bkmgtp";
	const char *at = *end ? strchr(units, u) : NULL;
	if (*end) {
		if (!at)
			return -EINVAL;
		for (const char *c = units; c < at; c++)
			mul *= 1024;
		end++;
		if (*end && tolower((unsigned char)*end) == 'b' && u != 'b')
			end++;
		else if (*end == 'i' && end[1] && tolower((unsigned char)end[1]) == 'b')
			end += 2;
	}
	if (*end || v * mul > 9.2e18)
		return -EINVAL;
	*ret = (int64_t)(v * mul);
	return 0;
}

int oci_resources_from_flags(const char *const *names, const char *const *values, size_t n, char **ret,
			     sbx_err **err)
{
	static const struct {
		const char *flag, *group, *key;
		char kind; /* 'm' memory size, 'i' integer, 's' string */
	} map[] = {
	    {"memory", "memory", "limit", 'm'},
	    {"memory-reservation", "memory", "reservation", 'm'},
	    {"memory-swap", "memory", "swap", 'm'},
	    {"kernel-memory", "memory", "kernel", 'm'},
	    {"kernel-memory-tcp", "memory", "kernelTCP", 'm'},
	    {"pids-limit", "pids", "limit", 'i'},
	    {"cpu-share", "cpu", "shares", 'i'},
	    {"cpu-quota", "cpu", "quota", 'i'},
	    {"cpu-period", "cpu", "period", 'i'},
	    {"cpu-rt-period", "cpu", "realtimePeriod", 'i'},
	    {"cpu-rt-runtime", "cpu", "realtimeRuntime", 'i'},
	    {"cpuset-cpus", "cpu", "cpus", 's'},
	    {"cpuset-mems", "cpu", "mems", 's'},
	    {"blkio-weight", "blockIO", "weight", 'i'},
	};
	_cleanup_json_ json_t *j = json_object();
	if (!j)
		return err_oom(err);
	for (size_t i = 0; i < n; i++) {
		size_t k;
		for (k = 0; k < ARRAY_SIZE(map) && !streq(map[k].flag, names[i]); k++)
			;
		if (k == ARRAY_SIZE(map))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "update: unknown resource flag '--%s'", names[i]);
		json_t *g = json_object_get(j, map[k].group);
		if (!g) {
			g = json_object();
			if (!g || json_object_set_new(j, map[k].group, g) < 0)
				return err_oom(err);
		}
		json_t *v;
		if (map[k].kind == 's') {
			v = json_string(values[i]);
		} else {
			int64_t x;
			char *end;
			errno = 0;
			if (map[k].kind == 'm') {
				if (ram_bytes(values[i], &x) < 0)
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--%s '%s': want a size such as 64m",
						       names[i], values[i]);
			} else {
				x = strtoll(values[i], &end, 10);
				if (errno || end == values[i] || *end)
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--%s '%s': want a number",
						       names[i], values[i]);
			}
			v = json_integer(x);
		}
		if (!v || json_object_set_new(g, map[k].key, v) < 0)
			return err_oom(err);
	}
	char *t = json_dumps(j, JSON_COMPACT);
	if (!t)
		return err_oom(err);
	*ret = t;
	return 0;
}

/* blockIO's device lists, appended to res->blkio_devs. */
static int parse_blkio_devs(const json_t *b, const char *k, oci_blkio_kind kind, oci_resources *res, sbx_err **err)
{
	json_t *a = json_object_get(b, k);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 1024)
		return bad(err, k, "an array of at most 1024 devices");
	oci_blkio_dev *v = realloc(res->blkio_devs, (res->n_blkio_devs + json_array_size(a) + 1) * sizeof(*v));
	if (!v)
		return err_oom(err);
	res->blkio_devs = v;
	size_t i;
	json_t *d;
	json_array_foreach (a, i, d) {
		oci_blkio_dev x = {.kind = kind, .major = -1, .minor = -1};
		int64_t w = 0, lw = 0;
		int r;
		if (!json_is_object(d))
			return bad(err, k, "an array of {major, minor, ...}");
		if ((r = get_int(d, "major", k, 0, UINT32_MAX, &x.major, err)) < 0 ||
		    (r = get_int(d, "minor", k, 0, UINT32_MAX, &x.minor, err)) < 0)
			return r;
		if (x.major < 0 || x.minor < 0)
			return bad(err, k, "an array of {major, minor, ...}");
		if (kind == OCI_BLKIO_WEIGHT) {
			if ((r = get_int(d, "weight", k, 0, 1000, &w, err)) < 0 ||
			    (r = get_int(d, "leafWeight", k, 0, 1000, &lw, err)) < 0)
				return r;
			x.value = (uint64_t)w;
			x.leaf = (uint64_t)lw;
		} else if ((r = get_u64(d, "rate", k, &x.value, err)) < 0) {
			return r;
		}
		res->blkio_devs[res->n_blkio_devs++] = x;
	}
	return 0;
}

int oci_resources_parse_json(const json_t *j, oci_resources *ret, sbx_err **err)
{
	oci_resources res = {0};
	int r;
	if (!json_is_object(j))
		return bad(err, "resources", "an object");
	json_t *m = get_obj(j, "memory"), *p = get_obj(j, "pids"), *c = get_obj(j, "cpu");
	if ((r = check_obj(j, "memory", "resources.memory", err)) < 0 ||
	    (r = check_obj(j, "pids", "resources.pids", err)) < 0 ||
	    (r = check_obj(j, "cpu", "resources.cpu", err)) < 0)
		return r;
	if (m && ((r = get_int(m, "limit", "memory.limit", -1, INT64_MAX, &res.memory_limit, err)) < 0 ||
		  (r = get_int(m, "reservation", "memory.reservation", -1, INT64_MAX, &res.memory_reservation, err)) <
		      0 ||
		  (r = get_int(m, "swap", "memory.swap", -1, INT64_MAX, &res.memory_swap, err)) < 0))
		goto fail;
	if (m && json_object_get(m, "swappiness") && !json_is_null(json_object_get(m, "swappiness"))) {
		int64_t sw = -1;
		/* docker sends -1 ("the default") when unset through the API */
		if ((r = get_int(m, "swappiness", "memory.swappiness", -1, 100, &sw, err)) < 0)
			goto fail;
		res.has_swappiness = sw >= 0;
		res.memory_swappiness = sw >= 0 ? (uint64_t)sw : 0;
	}
	if (m && json_object_get(m, "disableOOMKiller") && !json_is_null(json_object_get(m, "disableOOMKiller"))) {
		bool d = false;
		if ((r = get_bool(m, "disableOOMKiller", "memory.disableOOMKiller", &d, err)) < 0)
			goto fail;
		res.disable_oom_killer = d ? 1 : -1;
	}
	json_t *b = get_obj(j, "blockIO");
	if ((r = check_obj(j, "blockIO", "resources.blockIO", err)) < 0)
		goto fail;
	if (b) {
		int64_t w = 0, lw = 0;
		if ((r = get_int(b, "weight", "blockIO.weight", 0, 1000, &w, err)) < 0 ||
		    (r = get_int(b, "leafWeight", "blockIO.leafWeight", 0, 1000, &lw, err)) < 0)
			goto fail;
		res.blkio_weight = (uint64_t)w;
		res.blkio_leaf_weight = (uint64_t)lw;
		static const struct {
			const char *key;
			oci_blkio_kind kind;
		} lists[] = {{"weightDevice", OCI_BLKIO_WEIGHT},
			     {"throttleReadBpsDevice", OCI_BLKIO_READ_BPS},
			     {"throttleWriteBpsDevice", OCI_BLKIO_WRITE_BPS},
			     {"throttleReadIOPSDevice", OCI_BLKIO_READ_IOPS},
			     {"throttleWriteIOPSDevice", OCI_BLKIO_WRITE_IOPS}};
		for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
			if ((r = parse_blkio_devs(b, lists[i].key, lists[i].kind, &res, err)) < 0)
				goto fail;
	}
	if (p && (r = get_int(p, "limit", "pids.limit", -1, INT64_MAX, &res.pids_limit, err)) < 0)
		goto fail;
	if (c) {
		int64_t q = 0;
		if ((r = get_u64(c, "shares", "cpu.shares", &res.cpu_shares, err)) < 0 ||
		    (r = get_int(c, "quota", "cpu.quota", -1, INT64_MAX, &q, err)) < 0 ||
		    (r = get_u64(c, "period", "cpu.period", &res.cpu_period, err)) < 0 ||
		    (r = get_str(c, "cpus", "cpu.cpus", &res.cpuset_cpus, err)) < 0 ||
		    (r = get_str(c, "mems", "cpu.mems", &res.cpuset_mems, err)) < 0)
			goto fail;
		res.cpu_quota = q;
	}
	*ret = res;
	return 0;
fail:
	oci_resources_done(&res);
	return r;
}

int oci_resources_parse(const char *text, size_t len, oci_resources *ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, 0, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "resources: %s (line %d)", je.text, je.line);
	return oci_resources_parse_json(j, ret, err);
}

/* ---- the whole spec ---- */

void oci_spec_free(oci_spec *s)
{
	if (!s)
		return;
	free(s->oci_version);
	oci_process_done(&s->process);
	free(s->root_path);
	free(s->hostname);
	for (size_t i = 0; i < s->n_mounts; i++)
		mount_done(&s->mounts[i]);
	free(s->mounts);
	for (size_t i = 0; i < s->n_namespaces; i++)
		free(s->namespaces[i].path);
	free(s->namespaces);
	for (size_t i = 0; i < s->n_devices; i++)
		free(s->devices[i].path);
	free(s->devices);
	free(s->uid_mappings);
	free(s->gid_mappings);
	oci_resources_done(&s->resources);
	free(s->cgroups_path);
	strv_free(s->masked_paths);
	strv_free(s->readonly_paths);
	for (int k = 0; k < OCI_HOOK_MAX; k++)
		oci_hooks_free(s->hooks[k], s->n_hooks[k]);
	json_decref(s->hooks_json);
	json_decref(s->annotations);
	json_decref(s->seccomp);
	json_decref(s->sysctl);
	free(s);
}

static int parse_idmaps(const json_t *l, const char *k, oci_idmap **ret, size_t *ret_n, sbx_err **err)
{
	json_t *a = json_object_get(l, k);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 340 /* the kernel's limit */)
		return bad(err, k, "an array of at most 340 mappings");
	if (json_array_size(a) == 0)
		return 0;
	oci_idmap *m = calloc(json_array_size(a), sizeof(*m));
	if (!m)
		return err_oom(err);
	size_t i;
	json_t *v;
	json_array_foreach (a, i, v) {
		int64_t c = -1, h = -1, s = -1;
		int r;
		if (!json_is_object(v) || (r = get_int(v, "containerID", k, 0, UINT32_MAX, &c, err)) < 0 ||
		    (r = get_int(v, "hostID", k, 0, UINT32_MAX, &h, err)) < 0 ||
		    (r = get_int(v, "size", k, 1, UINT32_MAX, &s, err)) < 0 || c < 0 || h < 0 || s < 1) {
			free(m);
			return bad(err, k, "an array of {containerID, hostID, size}");
		}
		m[i] = (oci_idmap){(uint32_t)c, (uint32_t)h, (uint32_t)s};
	}
	*ret = m;
	*ret_n = json_array_size(a);
	return 0;
}

int oci_spec_parse(const char *text, size_t len, oci_spec **ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, 0, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "config.json: %s (line %d)", je.text, je.line);
	if (!json_is_object(j))
		return bad(err, "config.json", "an object");
	_cleanup_oci_spec_ oci_spec *s = calloc(1, sizeof(*s));
	if (!s)
		return err_oom(err);
	int r;
	if ((r = get_str(j, "ociVersion", "ociVersion", &s->oci_version, err)) < 0 ||
	    (r = get_str(j, "hostname", "hostname", &s->hostname, err)) < 0)
		return r;
	if (!json_is_object(json_object_get(j, "process")))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "config.json has no process");
	if ((r = oci_process_parse_json(json_object_get(j, "process"), &s->process, err)) < 0)
		return r;
	json_t *root = get_obj(j, "root");
	if ((r = check_obj(j, "root", "root", err)) < 0)
		return r;
	if (root && ((r = get_str(root, "path", "root.path", &s->root_path, err)) < 0 ||
		     (r = get_bool(root, "readonly", "root.readonly", &s->root_readonly, err)) < 0))
		return r;
	if (!s->root_path && !(s->root_path = strdup("rootfs")))
		return err_oom(err);

	if ((r = check_arr(j, "mounts", "mounts", err)) < 0)
		return r;
	json_t *ms = json_object_get(j, "mounts");
	if (json_is_array(ms) && json_array_size(ms) > 0) {
		if (json_array_size(ms) > 4096)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many mounts");
		if (!(s->mounts = calloc(json_array_size(ms), sizeof(*s->mounts))))
			return err_oom(err);
		size_t i;
		json_t *v;
		json_array_foreach (ms, i, v) {
			r = parse_mount(v, &s->mounts[s->n_mounts], err);
			s->n_mounts++; /* counted either way so that free releases it */
			if (r < 0)
				return r;
		}
	}

	if ((r = check_obj(j, "hooks", "hooks", err)) < 0)
		return r;
	json_t *hooks = get_obj(j, "hooks");
	if (hooks) {
		s->hooks_json = json_incref(hooks);
		for (int k = 0; k < OCI_HOOK_MAX; k++)
			if ((r = oci_hooks_parse(hooks, k, &s->hooks[k], &s->n_hooks[k], err)) < 0)
				return r;
	}
	if ((r = check_obj(j, "annotations", "annotations", err)) < 0)
		return r;
	json_t *an = get_obj(j, "annotations");
	s->annotations = an ? json_incref(an) : json_object();
	if (!s->annotations)
		return err_oom(err);

	if ((r = check_obj(j, "linux", "linux", err)) < 0)
		return r;
	json_t *l = get_obj(j, "linux");
	if (!(s->masked_paths = calloc(1, sizeof(char *))) || !(s->readonly_paths = calloc(1, sizeof(char *))))
		return err_oom(err);
	if (!l)
		goto done;
	if ((r = check_arr(l, "namespaces", "linux.namespaces", err)) < 0)
		return r;
	json_t *ns = json_object_get(l, "namespaces");
	if (json_is_array(ns) && json_array_size(ns) > 0) {
		if (json_array_size(ns) > 16)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many namespaces");
		if (!(s->namespaces = calloc(json_array_size(ns), sizeof(*s->namespaces))))
			return err_oom(err);
		size_t i;
		json_t *v;
		json_array_foreach (ns, i, v) {
			if (!json_is_object(v))
				return bad(err, "linux.namespaces", "an array of objects");
			int t = oci_namespace_type(json_str(v, "type"));
			if (!t)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown namespace type '%s'",
					       json_str(v, "type") ?: "(none)");
			for (size_t k = 0; k < s->n_namespaces; k++)
				if (s->namespaces[k].type == t)
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
						       "namespace '%s' is listed twice", json_str(v, "type"));
			oci_namespace *n = &s->namespaces[s->n_namespaces++];
			n->type = t;
			if ((r = get_str(v, "path", "linux.namespaces.path", &n->path, err)) < 0)
				return r;
			if (n->path && !*n->path)
				n->path = mfree(n->path);
		}
	}
	if ((r = check_arr(l, "devices", "linux.devices", err)) < 0)
		return r;
	json_t *dv = json_object_get(l, "devices");
	if (json_is_array(dv) && json_array_size(dv) > 0) {
		if (json_array_size(dv) > 4096)
			return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "too many devices");
		if (!(s->devices = calloc(json_array_size(dv), sizeof(*s->devices))))
			return err_oom(err);
		size_t i;
		json_t *v;
		json_array_foreach (dv, i, v) {
			oci_device *d = &s->devices[s->n_devices];
			if (!json_is_object(v))
				return bad(err, "linux.devices", "an array of objects");
			if ((r = get_str(v, "path", "linux.devices.path", &d->path, err)) < 0)
				return r;
			s->n_devices++;
			const char *t = json_str(v, "type");
			if (!d->path || d->path[0] != '/' || !t || strlen(t) != 1 || !strchr("cbup", t[0]))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "a device needs an absolute path and a type c, b, u or p");
			d->type = t[0] == 'u' ? 'c' : t[0];
			int64_t x = -1;
			if ((r = get_int(v, "major", "linux.devices.major", 0, 0xfff, &d->major, err)) < 0 ||
			    (r = get_int(v, "minor", "linux.devices.minor", 0, 0xfffff, &d->minor, err)) < 0)
				return r;
			if ((r = get_int(v, "fileMode", "linux.devices.fileMode", 0, 07777, &x, err)) < 0)
				return r;
			if (x >= 0)
				d->has_mode = true, d->mode = (uint32_t)x;
			x = -1;
			if ((r = get_int(v, "uid", "linux.devices.uid", 0, UINT32_MAX, &x, err)) < 0)
				return r;
			if (x >= 0)
				d->has_uid = true, d->uid = (uint32_t)x;
			x = -1;
			if ((r = get_int(v, "gid", "linux.devices.gid", 0, UINT32_MAX, &x, err)) < 0)
				return r;
			if (x >= 0)
				d->has_gid = true, d->gid = (uint32_t)x;
		}
	}
	if ((r = parse_idmaps(l, "uidMappings", &s->uid_mappings, &s->n_uid_mappings, err)) < 0 ||
	    (r = parse_idmaps(l, "gidMappings", &s->gid_mappings, &s->n_gid_mappings, err)) < 0)
		return r;
	if ((r = check_obj(l, "resources", "linux.resources", err)) < 0)
		return r;
	if (get_obj(l, "resources") &&
	    (r = oci_resources_parse_json(get_obj(l, "resources"), &s->resources, err)) < 0)
		return r;
	if ((r = get_str(l, "cgroupsPath", "linux.cgroupsPath", &s->cgroups_path, err)) < 0)
		return r;
	char **mp = NULL, **rp = NULL;
	if ((r = get_strv(l, "maskedPaths", "linux.maskedPaths", &mp, err)) < 0)
		return r;
	if (mp)
		strv_free(s->masked_paths), s->masked_paths = mp;
	if ((r = get_strv(l, "readonlyPaths", "linux.readonlyPaths", &rp, err)) < 0)
		return r;
	if (rp)
		strv_free(s->readonly_paths), s->readonly_paths = rp;
	if ((r = check_obj(l, "seccomp", "linux.seccomp", err)) < 0 ||
	    (r = check_obj(l, "sysctl", "linux.sysctl", err)) < 0)
		return r;
	if (get_obj(l, "seccomp"))
		s->seccomp = json_incref(get_obj(l, "seccomp"));
	if (get_obj(l, "sysctl"))
		s->sysctl = json_incref(get_obj(l, "sysctl"));
done:
	*ret = TAKE_PTR(s);
	return 0;
}
