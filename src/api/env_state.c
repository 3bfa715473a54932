/* The environment record (env_state.h): $SBX_ROOT/envs/<id>/state.json,
 * read and written whole (atomically), the typed view of it, the liveness
 * lock, and the control-socket connect/call. No lifecycle here: env.c
 * creates and removes environments. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "api/base.h"
#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/proc.h"

bool env_valid_id(const char *s)
{
	if (strlen(s) != ENV_ID_LEN)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s) || isupper((unsigned char)*s))
			return false;
	return true;
}

int env_state_read(const sbx_ctx *ctx, const char *id, json_t **ret)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/envs/%s/state.json", ctx->root, id);
	_cleanup_free_ char *buf = NULL;
	int r = fs_read_file(p, 1 << 20, &buf, NULL);
	if (r < 0)
		return r;
	json_t *j = json_loads(buf, 0, NULL);
	if (!j)
		return -EBADMSG;
	*ret = j;
	return 0;
}

int env_state_write(const sbx_ctx *ctx, const char *id, const json_t *st)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/envs/%s/state.json", ctx->root, id);
	_cleanup_free_ char *s = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!s)
		return -ENOMEM;
	/* Runtime state, not store data: atomic (rename) but not fsync'd; after
	 * a crash gc removes the environment anyway. */
	return fs_write_atomic_flags(p, s, strlen(s), 0644, false);
}

/* renameat for env_state_write_replacing: exchange, then keep what was
 * there as creating-state.json (a plain rename where the kernel or the
 * filesystem has no exchange, or nothing was there). */
static int rename_keeping_old(int olddfd, const char *old, int newdfd, const char *new_)
{
	if (renameat2(olddfd, old, newdfd, new_, RENAME_EXCHANGE) < 0)
		return errno == ENOENT || errno == EINVAL ? renameat(olddfd, old, newdfd, new_) : -1;
	if (renameat(olddfd, old, olddfd, "creating-state.json") < 0)
		(void)unlinkat(olddfd, old, 0);
	return 0;
}

int env_state_write_replacing(const sbx_ctx *ctx, const char *id, const json_t *st)
{
	static const fs_atomic_ops ops = {.write = write, .fsync = fsync, .renameat = rename_keeping_old};
	char p[4200];
	snprintf(p, sizeof(p), "%s/envs/%s", ctx->root, id);
	_cleanup_free_ char *s = json_dumps(st, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!s)
		return -ENOMEM;
	_cleanup_close_ int dfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	/* Not fsync'd, as env_state_write. */
	return fs_write_atomicat(dfd, "state.json", s, strlen(s), 0644, 0, &ops);
}

/* ---- the typed record ---------------------------------------------------- */

/* One line per typed key: where it lives in the struct and its JSON name. */
/* clang-format off: one field per line (the formatter folds X-macros differently on each pass) */
#define STR_FIELDS(X)                                                                                        \
	X(id, "environment_id")                                                                              \
	X(name, "name")                                                                                      \
	X(hostname, "hostname")                                                                              \
	X(template_spec, "template")                                                                         \
	X(created_at, "created_at")                                                                          \
	X(network, "network")                                                                                \
	X(user, "user")                                                                                      \
	X(snapshot_id, "snapshot_id")                                                                        \
	X(state, "state")                                                                                    \
	X(phase, "phase")                                                                                    \
	X(policy, "policy")                                                                                  \
	X(pool, "pool")
#define INT_FIELDS(X)                                                                                        \
	X(created_ms, "created_ms")                                                                          \
	X(host_uid, "host_uid")                                                                              \
	X(id_count, "id_count")                                                                              \
	X(supervisor_pid, "supervisor_pid")                                                                  \
	X(landlock_abi, "landlock_abi")                                                                      \
	X(restoring_ms, "restoring_ms")                                                                      \
	X(phase_changed_ms, "phase_changed_ms")
#define BOOL_FIELDS(X)                                                                                       \
	X(rootless, "rootless")                                                                              \
	X(ephemeral, "ephemeral")                                                                            \
	X(degraded, "degraded")                                                                              \
	X(user_no_root, "user_no_root")                                                                      \
	X(ttl_keep, "ttl_keep")                                                                              \
	X(phase_switching, "phase_switching")
#define LIMIT_FIELDS(X)                                                                                      \
	X(memory_bytes, "memory_bytes")                                                                      \
	X(pids, "pids")                                                                                      \
	X(timeout_ms, "timeout_ms")                                                                          \
	X(ttl_ms, "ttl_ms")                                                                                  \
	X(output_bytes, "output_bytes")                                                                      \
	X(disk_bytes, "disk_bytes")                                                                          \
	X(idle_suspend_ms, "idle_suspend_ms")
#define JSON_FIELDS(X)                                                                                       \
	X(env, "env")                                                                                        \
	X(volumes, "volumes")                                                                                \
	X(network_allow, "network_allow")                                                                    \
	X(capabilities, "capabilities")                                                                      \
	X(layers, "layers")                                                                                  \
	X(warnings, "warnings")                                                                              \
	X(agent_phase, "agent_phase")                                                                        \
	X(secrets, "secrets")                                                                                \
	X(plugins, "plugins")                                                                                \
	X(agent_policy, "agent_policy")                                                                      \
	X(creator, "creator")
/* clang-format on */

int env_record_parse(json_t *st, env_record *ret)
{
	if (!json_is_object(st))
		return -EBADMSG;
	env_record r = {.json = json_incref(st)};
#define GET_STR(f, k) r.f = json_str(st, k);
#define GET_INT(f, k) r.f = json_int(st, k, 0);
#define GET_BOOL(f, k) r.f = json_bool(st, k, false);
#define GET_JSON(f, k) r.f = json_object_get(st, k);
	STR_FIELDS(GET_STR)
	INT_FIELDS(GET_INT)
	BOOL_FIELDS(GET_BOOL)
	JSON_FIELDS(GET_JSON)
	r.uid_slot = (int)json_int(st, "uid_slot", -1);
	json_t *lim = json_object_get(st, "limits");
#define GET_LIMIT(f, k) r.limits.f = json_int(lim, k, 0);
	LIMIT_FIELDS(GET_LIMIT)
	json_t *cpus = json_object_get(lim, "cpus");
	r.limits.cpus = json_is_number(cpus) ? json_number_value(cpus) : 0;
	*ret = r;
	return 0;
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && streq(a, b));
}

/* Sets j[k] = v (stolen); ENOMEM as -ENOMEM. */
static int put(json_t *j, const char *k, json_t *v)
{
	return v && json_object_set_new(j, k, v) == 0 ? 0 : -ENOMEM;
}

static bool limits_zero(const env_record *r)
{
	return !r->limits.memory_bytes && !r->limits.pids && !r->limits.timeout_ms && !r->limits.ttl_ms &&
	       !r->limits.output_bytes && !r->limits.disk_bytes && !r->limits.idle_suspend_ms &&
	       !r->limits.cpus;
}

json_t *env_record_format(const env_record *r)
{
	/* Only the fields that differ from what r->json holds are written, so a
	 * record read and formatted unchanged is the same JSON, and keys the
	 * struct does not type (or types more narrowly) survive. */
	const json_t *o = r->json;
	_cleanup_json_ json_t *j = o ? json_deep_copy(o) : json_object();
	if (!j)
		return NULL;
	int q = 0;
#define PUT_STR(f, k)                                                                                        \
	if (!str_same(json_str(o, k), r->f))                                                                 \
		q |= put(j, k, r->f ? json_string(r->f) : json_null());
#define PUT_INT(f, k)                                                                                        \
	if (json_int(o, k, 0) != r->f)                                                                       \
		q |= put(j, k, json_integer(r->f));
#define PUT_BOOL(f, k)                                                                                       \
	if (json_bool(o, k, false) != r->f)                                                                  \
		q |= put(j, k, json_boolean(r->f));
#define PUT_JSON(f, k)                                                                                       \
	if (json_object_get(o, k) != r->f)                                                                   \
		q |= r->f ? put(j, k, json_deep_copy(r->f)) : (json_object_del(j, k), 0);
	STR_FIELDS(PUT_STR)
	INT_FIELDS(PUT_INT)
	BOOL_FIELDS(PUT_BOOL)
	JSON_FIELDS(PUT_JSON)
	if (json_int(o, "uid_slot", -1) != r->uid_slot)
		q |= put(j, "uid_slot", json_integer(r->uid_slot));
	const json_t *olim = json_object_get(o, "limits");
	json_t *lim = json_object_get(j, "limits");
	if (!json_is_object(lim) && !limits_zero(r)) {
		q |= put(j, "limits", json_object());
		lim = json_object_get(j, "limits");
	}
	lim = json_is_object(lim) ? lim : NULL;
#define PUT_LIMIT(f, k)                                                                                      \
	if (lim && json_int(olim, k, 0) != r->limits.f)                                                      \
		q |= put(lim, k, json_integer(r->limits.f));
	LIMIT_FIELDS(PUT_LIMIT)
	json_t *ocpus = json_object_get(olim, "cpus");
	if (lim && (json_is_number(ocpus) ? json_number_value(ocpus) : 0) != r->limits.cpus)
		q |= put(lim, "cpus", json_real(r->limits.cpus));
	return q ? NULL : TAKE_PTR(j);
}

void env_record_clear(env_record *r)
{
	json_decref(r->json);
	*r = (env_record){.uid_slot = -1};
}

int env_record_write(const sbx_ctx *ctx, const char *id, const env_record *r)
{
	_cleanup_json_ json_t *j = env_record_format(r);
	return j ? env_state_write(ctx, id, j) : -ENOMEM;
}

void env_record_limits_update(env_record *r, const json_t *lim)
{
#define UPD_LIMIT(f, k)                                                                                      \
	if (json_is_integer(json_object_get(lim, k)))                                                        \
		r->limits.f = json_integer_value(json_object_get(lim, k));
	LIMIT_FIELDS(UPD_LIMIT)
	json_t *cpus = json_object_get(lim, "cpus");
	if (json_is_number(cpus))
		r->limits.cpus = json_number_value(cpus);
}

json_t *env_record_limits_json(const env_record *r)
{
	_cleanup_json_ json_t *j = json_object();
	int q = j ? 0 : -ENOMEM;
#define LIMIT_JSON(f, k)                                                                                     \
	if (j && r->limits.f)                                                                                \
		q |= put(j, k, json_integer(r->limits.f));
	LIMIT_FIELDS(LIMIT_JSON)
	if (j && r->limits.cpus)
		q |= put(j, "cpus", json_real(r->limits.cpus));
	return q ? NULL : TAKE_PTR(j);
}

int env_record_read(const sbx_ctx *ctx, const char *id, env_record *ret)
{
	_cleanup_json_ json_t *st = NULL;
	int r = env_state_read(ctx, id, &st);
	if (r < 0)
		return r;
	return env_record_parse(st, ret);
}

int env_record_load(sbx_ctx *ctx, const char *ref, char **ret_id, env_record *ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	int r = env_record_read(ctx, id, ret);
	if (r < 0)
		return err_errnum(err, r, "read state of '%s'", id);
	*ret_id = TAKE_PTR(id);
	return 0;
}

/* ---- liveness and the control socket ------------------------------------------ */

/* The supervisor holds the lock for its whole life. */
bool env_creator_gone(const json_t *st)
{
	json_t *cr = json_object_get(st, "creator");
	if (!json_is_object(cr))
		return false; /* an older record: not ours to judge */
	return !proc_alive((pid_t)json_int(cr, "pid", 0), (uint64_t)json_int(cr, "start", 0));
}

bool env_is_live(const sbx_ctx *ctx, const char *id)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s/lock", ctx->run, id);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		flock(fd, LOCK_UN);
		return false;
	}
	return errno == EWOULDBLOCK;
}

char **env_list_ids(const sbx_ctx *ctx)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/envs", ctx->root);
	size_t n = 0, cap = 16;
	char **v = calloc(cap + 1, sizeof(char *));
	DIR *d = opendir(p);
	struct dirent *de;
	while (v && d && (de = readdir(d))) {
		if (!env_valid_id(de->d_name))
			continue;
		if (n == cap) {
			char **nv = realloc(v, (cap * 2 + 1) * sizeof(char *));
			if (!nv)
				break;
			v = nv;
			cap *= 2;
		}
		v[n++] = strdup(de->d_name);
		v[n] = NULL;
	}
	if (d)
		closedir(d);
	return v;
}

static __thread bool see_pool_entries;

void env_see_pool_entries(bool on)
{
	see_pool_entries = on;
}

/* env_state.h */
bool env_visible(const sbx_ctx *ctx, const char *id)
{
	char p[4300];
	snprintf(p, sizeof(p), "%s/envs/%s", ctx->root, id);
	if (!fs_exists(p))
		return false;
	if (see_pool_entries || streq(ctx->own_entry, id))
		return true;
	snprintf(p, sizeof(p), "%s/envs/%s/" ENV_POOL_MARK, ctx->root, id);
	return access(p, F_OK) < 0;
}

_public_ int sbx_env_resolve(sbx_ctx *ctx, const char *ref, char **ret_id, sbx_err **err)
{
	if (!ref || !*ref)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "empty environment id");
	char p[4300], target[64];
	/* A full id, then a name: one lookup each, whatever the number of environments. */
	if (env_valid_id(ref) && env_visible(ctx, ref))
		return (*ret_id = strdup(ref)) ? 0 : err_oom(err);
	if (!strchr(ref, '/') && ref[0] != '.') {
		snprintf(p, sizeof(p), "%s/names/%s", ctx->root, ref);
		ssize_t n = readlink(p, target, sizeof(target) - 1);
		if (n > 0 && (target[n] = 0, env_valid_id(target)) && env_visible(ctx, target))
			return (*ret_id = strdup(target)) ? 0 : err_oom(err);
	}
	/* A unique prefix of at least 3 characters. */
	_cleanup_strv_free_ char **ids = strlen(ref) >= 3 ? env_list_ids(ctx) : NULL;
	const char *match = NULL;
	int matches = 0;
	for (char **i = ids; i && *i; i++)
		if (startswith(*i, ref) && env_visible(ctx, *i)) {
			match = *i;
			matches++;
		}
	if (matches == 1)
		return (*ret_id = strdup(match)) ? 0 : err_oom(err);
	if (matches > 1)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "environment id prefix '%s' is ambiguous",
			       ref);
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment: '%s'", ref);
}

int env_load(sbx_ctx *ctx, const char *ref, char **ret_id, json_t **ret_state, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	int r = env_state_read(ctx, id, ret_state);
	if (r < 0)
		return err_errnum(err, r, "read state of '%s'", id);
	*ret_id = TAKE_PTR(id);
	return 0;
}

int env_connect(const sbx_ctx *ctx, const char *id, sbx_err **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s/ctl.sock", ctx->run, id);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_errno(err, "socket");
	if (RETRY_EINTR(connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0) {
		int e = errno;
		safe_close(fd);
		if (e == ENOENT || e == ECONNREFUSED) {
			/* What to do next depends on why: both come back with their
			 * files (sbx resume); removing it is the last resort. */
			char p[4300];
			snprintf(p, sizeof(p), "%s/envs/%s/suspended", ctx->root, id);
			if (access(p, F_OK) == 0)
				return err_set(
				    err, SBX_E_UNAVAILABLE, e,
				    "environment '%s' is suspended (`sbx resume %s` brings it back; "
				    "exec, cp and file calls wake it too)",
				    id, id);
			return err_set(
			    err, SBX_E_UNAVAILABLE, e,
			    "environment '%s' is not running (stopped, or its supervisor exited): "
			    "`sbx resume %s` starts it again with its files; `sbx rm %s` removes it",
			    id, id, id);
		}
		return err_errnum(err, e, "connect to environment '%s'", id);
	}
	return fd;
}

/* One request, one reply. */
int env_call(const sbx_ctx *ctx, const char *id, json_t *req, json_t **ret, sbx_err **err)
{
	_cleanup_close_ int fd = env_connect(ctx, id, err);
	if (fd < 0)
		return -1;
	int r = json_send(fd, req, NULL, 0);
	if (r < 0)
		return err_errnum(err, r, "send request to environment '%s'", id);
	_cleanup_json_ json_t *m = NULL;
	r = json_recv(fd, &m, NULL, NULL);
	if (r <= 0)
		return err_set(err, SBX_E_UNAVAILABLE, r ? -r : EPIPE, "environment '%s' stopped answering",
			       id);
	if (streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_ERROR))
		return api_err_from_json(m, err);
	*ret = TAKE_PTR(m);
	return 0;
}

int api_err_from_json(const json_t *m, sbx_err **err)
{
	sbx_code cc = err_code_from_name(json_str(m, CTL_F_CODE));
	int en = (int)json_int(m, CTL_F_ERRNO, 0);
	int r = err_set(err, cc, en, "%s", json_str(m, CTL_F_MESSAGE) ?: "unknown error");
	/* A spawn that failed at the exec call itself (stage 0; ctl_proto.h). */
	if (err && *err && en > 0 && json_int(m, CTL_F_STAGE, -1) == 0)
		(*err)->spawn_errno = en;
	return r;
}
