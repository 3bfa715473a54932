/* sbx_env_*: environments as the API sees them. State lives in
 * $SBX_ROOT/envs/<id>/state.json (written atomically); liveness is the
 * supervisor's flock on $SBX_RUN/<id>/lock. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/reclaim.h"
#include "api/snap_base.h"
#include "build/image_config.h"
#include "api/secrets.h"
#include "api/devices.h"
#include "runtime/devices.h"
#include "runtime/caps.h"
#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "runtime/quota.h"
#include "runtime/user.h"
#include "policy/egress_match.h"
#include "policy/policy.h"
#include "store/layer.h"
#include "store/snapshot.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/proc.h"
#include "util/syscalls.h"
#include "util/log.h"

#define DEFAULT_MEMORY (1LL << 30)
#define DEFAULT_PIDS 1024
#define DEFAULT_OUTPUT (10LL << 20)

void env_config_free(env_config *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->user);
	free(c->hostname);
	free(c->env_dir);
	free(c->run_dir);
	free(c->template_spec);
	strv_free(c->lowers);
	strv_free(c->layers);
	mask_free(c->mask);
	for (size_t i = 0; i < c->n_volumes; i++) {
		free(c->volumes[i].host);
		free(c->volumes[i].path);
	}
	free(c->volumes);
	strv_free(c->env);
	strv_free(c->warnings);
	free(c->network);
	strv_free(c->network_allow);
	secrets_wipe(c); /* this process's copy: the environment's init holds its own */
	devices_config_free(c);
	strv_free(c->hidden);
	json_decref(c->plugins);
	safe_close(c->lock_fd);
	safe_close(c->owner_fd);
	free(c->pool_token);
	free(c->pool_claim);
	free(c);
}
static void env_config_freep(env_config **c)
{
	env_config_free(*c);
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

/* Names: $SBX_ROOT/names/<name> is a symlink to the id. symlink() is the
 * atomic test-and-set that makes names unique without a store lock. */
static int name_register(sbx_ctx *ctx, const char *name, const char *id, sbx_err **err)
{
	char dir[4200], link[4300], target[64];
	snprintf(dir, sizeof(dir), "%s/names", ctx->root);
	(void)fs_mkdir_mode(dir, 0711);
	snprintf(link, sizeof(link), "%s/%s", dir, name);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (symlink(id, link) == 0)
			return 0;
		if (errno != EEXIST)
			return err_errno(err, "register name '%s'", name);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n > 0) {
			target[n] = 0;
			_cleanup_free_ char *other = ctx_env_dir(ctx, target);
			if (other && fs_exists(other))
				return err_set(err, SBX_E_CONFLICT, EEXIST,
					       "an environment named '%s' already exists (%s)", name, target);
		}
		(void)unlink(link); /* stale: its environment is gone */
	}
	return err_set(err, SBX_E_CONFLICT, EEXIST, "an environment named '%s' is being created", name);
}

static void name_unregister(sbx_ctx *ctx, const char *name, const char *id)
{
	char link[4300], target[64];
	snprintf(link, sizeof(link), "%s/names/%s", ctx->root, name);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n > 0 && (target[n] = 0, streq(target, id)))
		(void)unlink(link);
}

/* The layer trees of a snapshot, topmost first, all present in the store. */
static int setup_layers(sbx_ctx *ctx, env_config *c, const store_snapshot *snap, sbx_err **err)
{
	size_t n = 0;
	while (snap->layers && snap->layers[n])
		n++;
	c->layers = calloc(n + 1, sizeof(char *));
	if (!c->layers)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const char *d = snap->layers[n - 1 - i];
		if (!store_layer_exists(ctx->root, d))
			return err_set(err, SBX_E_NOT_FOUND, ENOENT,
				       "layer %s of the snapshot is missing from the store (run sbx fsck)",
				       d);
		if (!(c->layers[i] = store_layer_path(ctx->root, d)))
			return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	c->n_layers = n;
	/* overlayfs refuses a layer inside another layer: the store must not
	 * lie under a directory the template overlays. */
	for (size_t i = 0; i < c->n_lowers; i++) {
		size_t l = strlen(c->lowers[i]);
		if (strncmp(ctx->root, c->lowers[i], l) == 0 && (ctx->root[l] == '/' || ctx->root[l] == 0))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "the store %s lies under %s, which the template overlays: snapshots cannot be "
			    "mounted from there; move SBX_ROOT (e.g. to /srv/sbx)",
			    ctx->root, c->lowers[i]);
	}
	return 0;
}

/* Each environment gets its own /etc/machine-id (a fork is not its parent). */
static int write_machine_id(const env_config *c)
{
	char dir[4300], p[4400], id[33];
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return -errno;
	rnd[6] = (rnd[6] & 0x0f) | 0x40; /* a v4 UUID, as systemd-machine-id-setup makes */
	rnd[8] = (rnd[8] & 0x3f) | 0x80;
	for (int i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", rnd[i]);
	snprintf(dir, sizeof(dir), "%s/upper/etc", c->env_dir);
	int r = fs_mkdir_mode(dir, 0755);
	if (r < 0 && r != -EEXIST)
		return r;
	if (!c->rootless && chown(dir, c->host_uid, c->host_gid) < 0)
		return -errno;
	snprintf(p, sizeof(p), "%s/machine-id", dir);
	char line[34];
	snprintf(line, sizeof(line), "%s\n", id);
	r = fs_write_atomic_flags(p, line, strlen(line), 0444, false);
	if (r < 0)
		return r;
	if (!c->rootless && chown(p, c->host_uid, c->host_gid) < 0)
		return -errno;
	return 0;
}

static int setup_template(sbx_ctx *ctx, env_config *c, const char *spec, sbx_err **err)
{
	if (!spec || streq(spec, "host")) {
		if (mask_host_layer(ctx->root, ctx->run, ctx->rootless, &c->mask, err) < 0)
			return -1;
		/* One lower per system directory (see setup.c, mount_split_dirs). */
		_cleanup_strv_free_ char **dirs = mask_host_dirs(c->mask);
		size_t n = 0;
		while (dirs && dirs[n])
			n++;
		c->lowers = calloc(n + 1, sizeof(char *));
		if (!c->lowers)
			return err_oom(err);
		for (size_t i = 0; i < n; i++)
			if (asprintf(&c->lowers[i], "/%s", dirs[i]) < 0)
				return err_oom(err);
		c->n_lowers = n;
		return 0;
	}
	if (startswith(spec, "dir:")) {
		const char *p = spec + 4;
		char *real = realpath(p, NULL);
		struct stat st;
		if (!real || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
			int e = real ? ENOTDIR : errno;
			free(real);
			return err_set(err, e == ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, e,
				       "template '%s': '%s' is not a directory: %s", spec, p, strerror(e));
		}
		if (streq(real, "/")) {
			free(real);
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "template 'dir:/' would expose the whole host: use the 'host' template");
		}
		c->lowers = calloc(2, sizeof(char *));
		if (!c->lowers) {
			free(real);
			return err_oom(err);
		}
		c->lowers[0] = real;
		c->n_lowers = 1;
		return 0;
	}
	/* OCI: an imported template (a name, or oci:DIR[:TAG]): no host, no dir;
	 * the lowers are exactly its snapshot's layers, which sbx_env_create (or
	 * restore) passes as `snap` (setup_layers). */
	if (startswith(spec, "oci:") || store_label_valid(spec)) {
		c->lowers = calloc(1, sizeof(char *));
		if (!c->lowers)
			return err_oom(err);
		c->n_lowers = 0;
		c->mask = NULL;
		return 0;
	}
	return err_set(
	    err, SBX_E_NOT_FOUND, ENOENT,
	    "unknown template '%s': expected 'host', 'dir:PATH', 'oci:DIR[:TAG]' or a template name", spec);
}

static int setup_volumes(env_config *c, const sbx_create_opts *o, sbx_err **err)
{
	if (o->n_volumes == 0)
		return 0;
	c->volumes = calloc(o->n_volumes, sizeof(env_volume));
	if (!c->volumes)
		return err_oom(err);
	for (size_t i = 0; i < o->n_volumes; i++) {
		const sbx_volume *v = &o->volumes[i];
		if (!v->host || !v->path || v->path[0] != '/')
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "volume %zu: host and absolute path required", i);
		char *real = realpath(v->host, NULL);
		if (!real)
			return err_errno(err, "volume '%s'", v->host);
		c->volumes[c->n_volumes].host = real;
		c->volumes[c->n_volumes].readonly = v->readonly;
		c->volumes[c->n_volumes].path = strdup(v->path);
		c->n_volumes++;
		if (!c->volumes[c->n_volumes - 1].path)
			return err_oom(err);
		char *h, *p;
		bool ro;
		_cleanup_free_ char *spec = NULL;
		if (asprintf(&spec, "/x:%s", v->path) < 0)
			return err_oom(err);
		if (sbx_parse_volume(spec, &h, &p, &ro, NULL) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "volume target '%s' must be an absolute path without '..'", v->path);
		free(h);
		free(p);
	}
	return 0;
}

/* What the first half of a removal in two (env_dispose_hide) leaves to
 * the second: the uid range, and the trash entry's removal. */
typedef struct env_hidden {
	sbx_ctx *ctx;
	char *dir, *trash; /* dir: where it was; trash: its name there, or NULL */
	int64_t uid_slot;
} env_hidden;

/* The files' part of a removal. h: only hide the environment (its
 * processes may still be dying, and it has no quota's mounts): the uid
 * range and the trash's removal are left in *h for env_dispose_finish. */
static void remove_env_files(sbx_ctx *ctx, const char *id, env_hidden *h)
{
	_cleanup_free_ char *dir = ctx_env_dir(ctx, id), *run = ctx_run_dir(ctx, id);
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (dir && env_record_read(ctx, id, &st) == 0 && st.uid_slot >= 0 && !h)
		userns_slot_free_owned((unsigned)st.uid_slot, dir);
	if (st.name)
		name_unregister(ctx, st.name, id);
	startup_mark("remove: uid range and name freed");
	/* A disk quota's mounts first (the env is stopped): nothing may leak. */
	if (dir && !h)
		(void)quota_teardown(dir);
	startup_mark("remove: quota checked");
	/* The run directory (lock, mnt/) rides along into the trash when it is
	 * on the same filesystem: unlinking its inodes inline cost 1-4 ms of a
	 * removal on a busy ext4 (their eviction), more than all the rest of
	 * the files' part. Elsewhere (a tmpfs $SBX_RUN) it goes inline. */
	char inner[4300];
	bool moved = dir && run && snprintf(inner, sizeof(inner), "%s/.run", dir) < (int)sizeof(inner) &&
		     rename(run, inner) == 0;
	startup_mark("remove: run directory moved");
	/* Into the trash at once (a rename: a concurrent reader never sees half
	 * an environment, and the id is free again); the bytes go in the
	 * background (api/reclaim.h), or, hiding, once the finish says so. */
	if (dir && !(h && reclaim_hide(ctx, dir, id, &h->trash) == 0))
		(void)reclaim_dir(ctx, dir, id);
	if (run && !moved)
		fs_rm_rf(run);
	if (h) {
		h->ctx = ctx;
		h->dir = TAKE_PTR(dir);
		h->uid_slot = st.uid_slot;
	}
}

/* env_config.dispose: a one-shot environment's supervisor removes it
 * (runtime.h), in its own process, before it answers "stopped". The trees
 * go to the trash while its mounts may still linger: this process holds
 * the lock that a reclaimer waits for, so it must not wait for it itself. */
static void env_dispose(void *arg, const char *id)
{
	reclaim_self_lingering();
	remove_env_files(arg, id, NULL);
}

/* env_config.dispose_hide / dispose_finish: env_dispose in two halves
 * (runtime.h; the supervisor uses dispose when there is a quota). */
static void *env_dispose_hide(void *arg, const char *id)
{
	reclaim_self_lingering();
	env_hidden *h = calloc(1, sizeof(*h));
	remove_env_files(arg, id, h); /* out of memory (h NULL): the whole removal now */
	return h;
}

static void env_dispose_finish(void *arg, void *hidden)
{
	env_hidden *h = hidden;
	if (!h)
		return;
	if (h->uid_slot >= 0 && h->dir)
		userns_slot_free_owned((unsigned)h->uid_slot, h->dir);
	if (h->trash) {
		const char *nv[] = {h->trash};
		(void)reclaim_moved(h->ctx, nv, 1);
	}
	free(h->trash);
	free(h->dir);
	free(h);
}

int64_t now_ms_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void iso_time(int64_t ms, char *buf, size_t n)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Create, step 1: the options alone (the bounds in sbx.h, the forms). */
static int check_opts(const sbx_create_opts *o, const char **ret_netmode, char ***ret_allow,
		      int64_t *ret_disk, sbx_err **err)
{
	if (o->name && !valid_name(o->name))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid name '%s': use 1-63 letters, digits, '_', '.' or '-', starting with "
			       "a letter or digit",
			       o->name);
	if (api_network_opts(o, ret_netmode, ret_allow, err) < 0) /* api/limits.c */
		return -1;
	if (sbx_env_limits_check(o, err) < 0) /* the bounds in sbx.h */
		return -1;
	int64_t disk = *ret_disk = o->version >= 3 ? o->disk_bytes : 0;
	if (disk < 0 || (disk > 0 && disk < QUOTA_MIN_BYTES))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid disk quota %lld: at least 4m",
			       (long long)disk);
	for (const char *const *e = o->env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "invalid environment variable '%s': expected K=V", *e);
	if (o->version >= 5 && o->idle_suspend_ms > 0 && o->ephemeral)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "idle suspend keeps the writable layer on disk: a one-shot (ephemeral) "
			       "environment has none");
	if (o->version >= 3 && o->ttl_keep && o->ttl_ms <= 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "ttl_keep needs an idle TTL (--ttl)");
	if (o->version >= 3 && o->hostname &&
	    (!*o->hostname || strlen(o->hostname) > 64 || strchr(o->hostname, '/')))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid host name '%s' (1 to 64 characters)", o->hostname);
	return 0;
}

/* Create, step 2: the default user and the capabilities of root's commands. */
static int config_user(sbx_ctx *ctx, env_config *c, const env_create_req *q, sbx_err **err)
{
	const sbx_create_opts *o = q->o;
	const json_t *restore_state = q->restore_state;
	/* Users and capabilities (docs/policy.md): the form is checked here, the
	 * name resolved inside (at setup, then by init at each exec). A restart
	 * keeps the environment's own. */
	const char *user = o->version >= 4 ? o->user : NULL;
	c->caps = caps_safe_set;
	c->no_root = o->version >= 4 && o->user_no_root;
	if (restore_state) {
		user = json_str(restore_state, "user");
		json_t *cj = json_object_get(restore_state, "capabilities");
		if (cj && caps_from_json(cj, &c->caps) < 0)
			return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state: capabilities");
		c->no_root = json_bool(restore_state, "user_no_root", false);
	} else if (o->version >= 4 &&
		   caps_compute(caps_safe_set, false, o->cap_drop, o->cap_add, &c->caps, err) < 0)
		return -1;
	user_spec us;
	if (user && user_spec_parse(user, &us, err) < 0)
		return -1;
	if (user && !(c->user = strdup(user)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	if (user && ctx->rootless && !userns_available())
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "user '%s': commands run as the calling user on this host (no user namespaces)", user);
	return 0;
}

/* Create, step 3: identity (id, name, host name, directories), network,
 * plugins, environment variables and limits. */
static int config_identity(sbx_ctx *ctx, env_config *c, const env_create_req *q, const char *netmode,
			   char ***allow, int64_t disk, sbx_err **err)
{
	const sbx_create_opts *o = q->o;
	const char *restore_id = q->restore_state ? json_str(q->restore_state, "environment_id") : NULL;
	const json_t *plugins = q->plugins;
	/* Identity. */
	if (restore_id) {
		if (!env_valid_id(restore_id))
			return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state: bad environment id");
		snprintf(c->id, sizeof(c->id), "%s", restore_id);
	} else {
		unsigned char rnd[ENV_ID_LEN / 2];
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return err_errno(err, "getrandom");
		for (size_t i = 0; i < sizeof(rnd); i++)
			snprintf(c->id + 2 * i, 3, "%02x", rnd[i]);
	}
	c->name = o->name ? strdup(o->name) : NULL;
	const char *hn = o->version >= 3 && o->hostname ? o->hostname : o->name ? o->name : "sbx";
	if (asprintf(&c->hostname, "%s", hn) < 0)
		c->hostname = NULL;
	c->env_dir = ctx_env_dir(ctx, c->id);
	c->run_dir = ctx_run_dir(ctx, c->id);
	c->template_spec = strdup(o->template_spec ? o->template_spec : "host");
	c->network = strdup(netmode);
	c->network_allow = TAKE_PTR(*allow);
	/* Plugins (a policy's; a restarted environment keeps its own). */
	if (q->restore_state)
		plugins = json_object_get(q->restore_state, "plugins");
	if (json_array_size(plugins) && !(c->plugins = json_deep_copy(plugins)))
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	c->rootless = ctx->rootless;
	c->ephemeral = o->ephemeral;
	c->env = calloc(1, sizeof(char *));
	if (!c->name && o->name)
		return err_oom(err);
	if (!c->hostname || !c->env_dir || !c->run_dir || !c->template_spec || !c->network || !c->env)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	strv_free(c->env);
	c->env = NULL;
	if (o->env) {
		size_t n = 0;
		while (o->env[n])
			n++;
		c->env = calloc(n + 1, sizeof(char *));
		for (size_t i = 0; c->env && i < n; i++)
			c->env[i] = strdup(o->env[i]);
	}
	c->limits.memory_bytes = o->memory_bytes == 0 ? DEFAULT_MEMORY : o->memory_bytes;
	c->limits.pids = o->pids == 0 ? DEFAULT_PIDS : o->pids;
	c->limits.cpus = o->cpus;
	c->timeout_ms = o->timeout_ms;
	c->ttl_ms = o->ttl_ms;
	c->idle_suspend_ms = o->version >= 5 ? o->idle_suspend_ms : 0;
	c->output_bytes = o->output_bytes ? o->output_bytes : DEFAULT_OUTPUT;
	c->disk_bytes = disk;
	if (disk && ctx->rootless && !c->ephemeral)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "a disk quota needs root: the writable layer goes on an ext4 image mounted from a loop "
		    "device, which an unprivileged user cannot mount (one-shot runs, whose writable layer "
		    "is a tmpfs, can have one)");
	if (disk && ctx->rootless && !userns_available())
		return err_set(err, SBX_E_UNAVAILABLE, EPERM,
			       "a disk quota needs user namespaces, which this host does not allow");
	return 0;
}

/* Create, step 4: what the root is built from: the template (or, without
 * user namespaces, the degraded walls), volumes, the snapshot's layers or
 * the template's own base (base_id). */
static int config_root(sbx_ctx *ctx, env_config *c, const env_create_req *q, char base_id[STORE_DIGEST_SIZE],
		       sbx_err **err)
{
	const sbx_create_opts *o = q->o;
	const store_snapshot *snap = q->snap;
	if (ctx->rootless && !userns_available()) {
		/* Degraded mode: Landlock + seccomp + no_new_privs only (see runtime.h). */
		c->degraded = true;
		if (!streq(c->network, "none"))
			return err_set(err, SBX_E_UNAVAILABLE, EPERM,
				       "network '%s' needs user namespaces, which this host does not allow",
				       o->network);
		if (o->template_spec && !streq(o->template_spec, "host"))
			return err_set(err, SBX_E_UNAVAILABLE, EPERM,
				       "template '%s' needs user namespaces, which this host does not allow "
				       "(only the 'host' template works without them)",
				       o->template_spec);
		if (o->n_volumes)
			return err_set(err, SBX_E_UNAVAILABLE, EPERM,
				       "volumes need user namespaces, which this host does not allow");
		static const char *const missing[] = {
		    "user namespaces are not allowed on this host: running with Landlock + seccomp + "
		    "no_new_privs only",
		    "no mount namespace: the host's system directories are visible read-only (Landlock); "
		    "writes go to the "
		    "environment's own directory only",
		    "no pid namespace: host processes are visible in /proc (but cannot be signalled or "
		    "traced)",
		    "no network namespace: IP sockets are denied by seccomp instead",
		    "no per-environment uid: commands run as the calling user",
		    NULL};
		c->warnings = calloc(ARRAY_SIZE(missing), sizeof(char *));
		for (size_t i = 0; c->warnings && missing[i]; i++)
			c->warnings[i] = strdup(missing[i]);
		c->template_spec = c->template_spec ? c->template_spec : strdup("host");
	} else if (setup_template(ctx, c, o->template_spec, err) < 0 || setup_volumes(c, o, err) < 0)
		return err_ret(err);
	if (snap) {
		/* A one-shot run (ephemeral) may start from a snapshot or an image
		 * template: its writable layer on tmpfs goes over the layers. */
		if (c->degraded)
			return err_set(err, SBX_E_UNAVAILABLE, EPERM, "snapshots need user namespaces");
		if (setup_layers(ctx, c, snap, err) < 0)
			return -1;
	}
	/* No snapshot: the template's own content-addressed base (snap.c). */
	if (!snap && !c->degraded && !c->ephemeral &&
	    snap_template_base(ctx, c->template_spec, c->mask, base_id, err) < 0)
		return -1;
	return 0;
}

/* Create, step 5: on disk, in the order a concurrent gc and a crash need.
 * *slot and *have_slot say which uid range to give back on failure. */
static int create_on_disk(sbx_ctx *ctx, env_config *c, const env_create_req *q, unsigned *slot,
			  bool *have_slot, sbx_err **err)
{
	const sbx_create_opts *o = q->o;
	const json_t *restore_state = q->restore_state;
	const char *restore_id = restore_state ? json_str(restore_state, "environment_id") : NULL;
	const store_snapshot *snap = q->snap;
	int r;
	char p[4300];
	/* Liveness lock first, before anything exists on disk, so that a
	 * concurrent gc never takes a half-created environment for dead. */
	if ((r = fs_mkdir_p(c->run_dir, 0711)) < 0)
		return err_errnum(err, r, "create '%s'", c->run_dir);
	snprintf(p, sizeof(p), "%s/lock", c->run_dir);
	c->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (c->lock_fd < 0 || flock(c->lock_fd, LOCK_EX) < 0)
		return err_errno(err, "lock '%s'", p);
	if ((r = fs_mkdir_p(c->env_dir, 0711)) < 0)
		return err_errnum(err, r, "create '%s'", c->env_dir);
	/* A warm pool's entry is hidden from the moment it exists until it is
	 * handed out: no id lookup finds it (env_state.h ENV_POOL_MARK). */
	if (ctx->pool_key) {
		snprintf(p, sizeof(p), "%s/" ENV_POOL_MARK, c->env_dir);
		_cleanup_close_ int mk = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (mk < 0)
			return err_errno(err, "create '%s'", p);
	}
	if (restore_id) {
		/* Same uid range and name as before: the files are already theirs. */
		*slot = (unsigned)json_int(restore_state, "uid_slot", 0);
		c->host_uid = (uid_t)json_int(restore_state, "host_uid", ctx->uid);
		c->host_gid = c->rootless ? ctx->gid : c->host_uid;
		c->id_count = (uint32_t)json_int(restore_state, "id_count", 1);
	} else if (!c->rootless) {
		if (userns_slot_alloc(c->env_dir, slot, err) < 0)
			return -1;
		*have_slot = true;
		c->host_uid = userns_slot_base(*slot);
		c->host_gid = c->host_uid;
		c->id_count = ENV_UID_COUNT;
	} else {
		c->host_uid = ctx->uid;
		c->host_gid = ctx->gid;
		c->id_count = 1;
	}
	if (!restore_id && c->name && name_register(ctx, c->name, c->id, err) < 0)
		return -1;
	const char *subs[][2] = {{c->env_dir, "upper"},
				 {c->env_dir, "work"},
				 {c->run_dir, "mnt"},
				 {c->env_dir, "home"},
				 {c->env_dir, "tmp"}};
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		if ((c->ephemeral && i < 2) || (c->degraded ? i < 3 : i >= 3))
			continue;
		snprintf(p, sizeof(p), "%s/%s", subs[i][0], subs[i][1]);
		int e = fs_mkdir_mode(p, 0755);
		if ((e < 0 && !(restore_id && e == -EEXIST)) ||
		    (!c->rootless && (e = chown(p, c->host_uid, c->host_gid) < 0 ? -errno : 0) < 0))
			return err_errnum(err, e, "create '%s'", p);
	}
	/* Disk quota: upper/ and work/ move onto an image of the quota's size
	 * (host mount namespace: snapshots and diff read them from here). */
	if (c->disk_bytes && !c->ephemeral &&
	    quota_setup(c->env_dir, c->disk_bytes, c->host_uid, c->host_gid, err) < 0)
		return -1;
	/* A warm pool entry's layer may be a tmpfs of its own (docs/warm.md). */
	if (!c->disk_bytes && !c->ephemeral && !c->degraded && !restore_id && pool_layer_tmpfs(ctx) &&
	    quota_setup_tmpfs(c->env_dir, c->host_uid, c->host_gid, err) < 0)
		return -1;
	bool keep_id = o->version >= 2 && o->keep_identity && snap;
	if (!restore_id && !keep_id && !c->ephemeral && !c->degraded && (r = write_machine_id(c)) < 0)
		return err_errnum(err, r, "write /etc/machine-id");
	return 0;
}

/* Create, step 6: the record of a new environment (state.json), before
 * its supervisor runs. NULL on ENOMEM. */
static json_t *record_new(const env_config *c, const env_create_req *q, json_t *sec_state,
			  const char *base_id, unsigned slot)
{
	const sbx_create_opts *o = q->o;
	const json_t *restore_state = q->restore_state;
	const store_snapshot *snap = q->snap;
	const char *restore_id = restore_state ? json_str(restore_state, "environment_id") : NULL;
	char created[32];
	int64_t now = now_ms_real();
	iso_time(now, created, sizeof(created));
	if (restore_id && json_str(restore_state, "created_at"))
		snprintf(created, sizeof(created), "%s", json_str(restore_state, "created_at"));
	json_t *st = json_pack(
	    "{s:s,s:s?,s:s,s:s,s:s,s:I,s:b,s:b,s:i,s:I,s:I,s:{s:I,s:I,s:f,s:I,s:I,s:I},s:o,s:o,s:s,s:b}",
	    "environment_id", c->id, "name", c->name, "hostname", c->hostname, "template", c->template_spec,
	    "created_at", created, "created_ms", (json_int_t)now, "rootless", c->rootless, "ephemeral",
	    c->ephemeral, "uid_slot", c->rootless ? -1 : (int)slot, "host_uid", (json_int_t)c->host_uid,
	    "id_count", (json_int_t)c->id_count, "limits", "memory_bytes", (json_int_t)c->limits.memory_bytes,
	    "pids", (json_int_t)c->limits.pids, "cpus", c->limits.cpus, "timeout_ms",
	    (json_int_t)c->timeout_ms, "ttl_ms", (json_int_t)c->ttl_ms, "output_bytes",
	    (json_int_t)c->output_bytes, "env", json_from_strv((const char *const *)c->env), "volumes",
	    json_array(), "network", c->network, "degraded", c->degraded);
	if (st) {
		json_object_set_new(st, "user", c->user ? json_string(c->user) : json_null());
		json_object_set_new(st, "capabilities", caps_to_json(c->caps));
		if (c->no_root)
			json_object_set_new(st, "user_no_root", json_true());
	}
	if (st && o->version >= 3 && o->ttl_keep)
		json_object_set_new(st, "ttl_keep", json_true());
	if (st && c->idle_suspend_ms > 0) /* docs/warm.md */
		json_object_set_new(json_object_get(st, "limits"), "idle_suspend_ms",
				    json_integer(c->idle_suspend_ms));
	if (st && c->network_allow)
		json_object_set_new(st, "network_allow",
				    json_from_strv((const char *const *)c->network_allow));
	if (st && c->plugins)
		json_object_set(st, "plugins", c->plugins);
	if (st && sec_state) /* names and sources only, never a value */
		json_object_update(st, sec_state);
	if (st)
		json_object_set_new(json_object_get(st, "limits"), "disk_bytes", json_integer(c->disk_bytes));
	if (st && o->policy)
		json_object_set_new(st, "policy", json_string(o->policy[0] == '{' ? "(inline)" : o->policy));
	if (st && snap) {
		json_object_set_new(st, "snapshot_id", json_string(q->snap_id));
		json_object_set_new(st, "layers", json_from_strv((const char *const *)snap->layers));
		/* An image's config (WORKDIR, CMD, ...): exec and run apply it (build/image_config.h). */
		if (snap->config)
			json_object_set_new(st, "image", json_loads(snap->config, 0, NULL));
	} else if (st && *base_id) {
		json_object_set_new(st, "snapshot_id", json_string(base_id));
		json_object_set_new(st, "layers", json_array());
	}
	for (size_t i = 0; st && i < c->n_volumes; i++)
		json_array_append_new(json_object_get(st, "volumes"),
				      json_pack("{s:s,s:s,s:b}", "host", c->volumes[i].host, "path",
						c->volumes[i].path, "readonly", c->volumes[i].readonly));
	return st;
}

/* Create, steps 1-4 and what they need on the host: the configuration c
 * (base_id: the template's base when there is no snapshot), secrets' record
 * in *ret_sec_state. Nothing on disk yet: a failure leaves nothing. */
static int create_configure(sbx_ctx *ctx, env_config *c, const env_create_req *q,
			    char base_id[STORE_DIGEST_SIZE], json_t **ret_sec_state, sbx_err **err)
{
	const sbx_create_opts *o = q->o;
	_cleanup_strv_free_ char **allow = NULL;
	const char *netmode = "none";
	int64_t disk = 0;
	if (check_opts(o, &netmode, &allow, &disk, err) < 0 || config_user(ctx, c, q, err) < 0 ||
	    config_identity(ctx, c, q, netmode, &allow, disk, err) < 0 ||
	    config_root(ctx, c, q, base_id, err) < 0)
		return -1;
	/* Secrets (values read on the host now, kept in memory only), hidden
	 * paths and the agent phase's plan: src/api/secrets.c. */
	if (secrets_prepare(o, q->restore_state, c, ret_sec_state, err) < 0)
		return -1;
	/* CDI devices (api/devices.c): resolved and checked on the host now; a
	 * restart resolves its own again. */
	_cleanup_strv_free_ char **dev_names =
	    q->restore_state ? json_to_strv(json_object_get(q->restore_state, "devices")) : NULL;
	return devices_prepare(ctx, c,
			       q->restore_state	 ? (const char *const *)dev_names
			       : o->version >= 5 ? o->devices
						 : NULL,
			       err);
}

/* Create, step 6: the record (state.json) written, before the supervisor
 * runs; *ret_st is it, to complete at step 7. */
static int create_record(sbx_ctx *ctx, env_config *c, const env_create_req *q, json_t *sec_state,
			 const char *base_id, unsigned slot, json_t **ret_st, sbx_err **err)
{
	_cleanup_json_ json_t *st = record_new(c, q, sec_state, base_id, slot);
	if (st)
		devices_state(c, st);
	if (st && ctx->pool_key) /* a warm pool's entry, hidden until taken (docs/warm.md) */
		json_object_set_new(st, "pool", json_string(ctx->pool_key));
	if (st && ctx->pool_key && ctx->pool_inputs)
		json_object_set_new(st, "pool_inputs", json_string(ctx->pool_inputs));
	/* Who is creating it: until "state" is written, a create whose process
	 * died (kill -9 of the CLI, of sbx serve) left an environment nobody was
	 * given; gc removes it once its creator is gone (env_creator_gone). */
	uint64_t start = 0;
	if (st && proc_start_time(getpid(), &start) == 0)
		json_object_set_new(st, "creator",
				    json_pack("{s:i,s:I}", "pid", (int)getpid(), "start", (json_int_t)start));
	if (st && c->one_shot) /* docs/runtime.md "One-shot runs" */
		json_object_set_new(st, "one_shot", json_true());
	int r;
	if (!st || (r = env_state_write(ctx, c->id, st)) < 0)
		return err_errnum(err, st ? r : ENOMEM, "write environment state");
	if (devices_env_apply(c, err) < 0)
		return -1;
	*ret_st = TAKE_PTR(st);
	return 0;
}

/* Create, step 7b: the record says running, with what the supervisor
 * found (info: its ready message). */
static void record_running(sbx_ctx *ctx, const env_config *c, json_t *st, const json_t *info)
{
	json_object_set_new(st, "state", json_string("running"));
	json_object_del(st, "creator");
	json_object_set_new(st, "supervisor_pid", json_integer(json_int(info, "supervisor_pid", 0)));
	json_object_set_new(st, "landlock_abi", json_integer(json_int(info, "landlock_abi", 0)));
	if (json_is_object(json_object_get(info, "limits"))) /* lowered by a plugin's on_create */
		json_object_update(json_object_get(st, "limits"), json_object_get(info, "limits"));
	json_object_set(st, "warnings", json_object_get(info, "warnings") ?: json_array());
	(void)env_state_write_replacing(ctx, c->id, st);
}

/* A one-shot create's steps 5-6, run by its supervisor's process before
 * it starts (runtime.h prepare): a failure undoes them there. */
typedef struct create_prep {
	sbx_ctx *ctx;
	const env_create_req *q;
	json_t *sec_state;
	const char *base_id;
} create_prep;

static int create_prepare(void *arg, env_config *c, sbx_err **err)
{
	create_prep *a = arg;
	unsigned slot = 0;
	bool have_slot = false;
	_cleanup_json_ json_t *st = NULL;
	if (create_on_disk(a->ctx, c, a->q, &slot, &have_slot, err) == 0 &&
	    create_record(a->ctx, c, a->q, a->sec_state, a->base_id, slot, &st, err) == 0)
		return 0;
	remove_env_files(a->ctx, c->id, NULL);
	if (c->name)
		name_unregister(a->ctx, c->name, c->id);
	if (have_slot)
		userns_slot_free(slot);
	return -1;
}

int env_create_impl(sbx_ctx *ctx, const env_create_req *req, char **ret_id, json_t **ret_warnings,
		    sbx_err **err)
{
	sbx_create_opts defaults = SBX_CREATE_OPTS_INIT;
	env_create_req q = *req;
	if (!q.o)
		q.o = &defaults;
	const char *restore_id = q.restore_state ? json_str(q.restore_state, "environment_id") : NULL;
	_cleanup_(env_config_freep) env_config *c = calloc(1, sizeof(*c));
	if (!c)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	c->lock_fd = -1;
	c->owner_fd = -1;
	char base_id[STORE_DIGEST_SIZE] = "";
	_cleanup_json_ json_t *sec_state = NULL, *st = NULL, *info = NULL;
	/* 1-4: the configuration, nothing on disk yet (a failure leaves nothing). */
	if (create_configure(ctx, c, &q, base_id, &sec_state, err) < 0)
		return -1;
	startup_mark("create: configured");
	/* The supervisor removes a one-shot environment (runtime.h one_shot) and,
	 * as a pool's entry, may be taken by one: it calls the removal here. */
	c->dispose = env_dispose;
	c->dispose_hide = env_dispose_hide;
	c->dispose_finish = env_dispose_finish;
	c->dispose_arg = ctx;
	pool_entry_paths(ctx, c->id, &c->pool_token, &c->pool_claim);
	c->handout = pool_handout;
	/* One-shot: bound to this process by a pidfd of it, which the supervisor
	 * inherits; and steps 5-6 are the supervisor's, so that from the first
	 * file on disk a process exists that removes it if we die. Without
	 * pidfds (Linux < 5.3) a one-shot create is an ordinary one. */
	create_prep prep = {.ctx = ctx, .q = &q, .sec_state = sec_state, .base_id = base_id};
	if (q.o->version >= 7 && q.o->one_shot && !restore_id && !ctx->pool_key &&
	    (c->owner_fd = sys_pidfd_open(getpid(), 0)) >= 0) {
		c->one_shot = true;
		c->prepare = create_prepare;
		c->prepare_arg = &prep;
	}
	/* 5-6: on disk, then the record; a failure from here undoes both. */
	unsigned slot = 0;
	bool have_slot = false;
	char **warnings = NULL;
	if (!c->prepare && (create_on_disk(ctx, c, &q, &slot, &have_slot, err) < 0 ||
			    create_record(ctx, c, &q, sec_state, base_id, slot, &st, err) < 0))
		goto fail;
	startup_mark("create: on disk, state written");

	/* 7. The supervisor (src/runtime) builds and runs it; the record then
	 *    says running, with what the supervisor found. */
	log_debug("create: prepared, starting supervisor");
	c->supervisor_child = ctx->short_lived > 0 && ctx->short_lived == getpid();
	if (supervisor_start(c, &warnings, &info, err) < 0) {
		err_wrap(err, "create environment");
		goto fail;
	}
	log_debug("create: supervisor ready");
	if (!st && env_state_read(ctx, c->id, &st) < 0) { /* one-shot: written by the supervisor */
		stop_supervisor(ctx, c->id);
		err_set(err, SBX_E_INTERNAL, EIO, "create environment: its state is unreadable");
		goto fail;
	}
	record_running(ctx, c, st, info);
	startup_mark("create: done");
	if (ret_warnings)
		*ret_warnings = json_incref(json_object_get(st, "warnings"));
	strv_free(warnings);
	*ret_id = strdup(c->id);
	return 0;
fail:
	if (restore_id) {
		/* Keep the environment (stopped) so the user can retry or rm it. */
		return err_ret(err);
	}
	remove_env_files(ctx, c->id, NULL);
	if (c->name)
		name_unregister(ctx, c->name, c->id);
	if (have_slot)
		userns_slot_free(slot);
	return err_ret(err);
}

static int env_create_opts(sbx_ctx *ctx, const sbx_create_opts *o, const json_t *plugins, char **ret_id,
			   json_t **ret_warnings, sbx_err **err);

_public_ int sbx_env_create(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings,
			    sbx_err **err)
{
	startup_mark("create: begin");
	if (pool_take(ctx, o, ret_id, ret_warnings) > 0) /* a warm pool's entry (docs/warm.md) */
		return 0;
	if (!o || !o->policy)
		return env_create_opts(ctx, o, NULL, ret_id, ret_warnings, err);
	_cleanup_policy_ policy *p = NULL;
	if (policy_load_spec(o->policy, &p, err) < 0)
		return -1;
	sbx_create_opts co = *o;
	/* A whole current struct for policy_apply: fields newer than the
	 * caller's version are unset. */
	if (co.version < 2)
		co.keep_identity = false;
	if (co.version < 3) {
		co.disk_bytes = 0;
		co.hidden = co.secrets = NULL;
		co.agent_policy = NULL;
	}
	if (co.version < 4) {
		co.user = NULL;
		co.cap_drop = co.cap_add = NULL;
		co.user_no_root = false;
	}
	if (co.version < 5) {
		co.idle_suspend_ms = 0;
		co.devices = NULL;
	}
	if (co.version < 6)
		co.network_allow = NULL;
	if (co.version < 7)
		co.one_shot = false;
	co.version = SBX_CREATE_OPTS_VERSION;
	int64_t asked_disk = co.disk_bytes;
	const char *asked_user = co.user;
	policy_storage keep = {0};
	int r = policy_apply(p, &co, &keep, err);
	/* Rootless, a quota can only be a one-shot run's tmpfs: the policy's
	 * is not enforced otherwise (asking for one explicitly is refused). */
	if (r == 0 && ctx->rootless && !asked_disk && co.disk_bytes > 0 &&
	    (!co.ephemeral || !userns_available())) {
		co.disk_bytes = 0;
		keep.warning = "the policy's disk quota (limits.disk_bytes) is not enforced: rootless, the "
			       "writable layer "
			       "cannot go on the loop-mounted ext4 image a quota needs (run as root)";
	}
	/* Rootless, the environment maps one uid (root inside): a policy's
	 * unprivileged user becomes root with no capabilities at all (an
	 * explicit --user is refused at create, naming why). */
	static const char *const drop_all[] = {"ALL", NULL};
	const char *user_warning = NULL;
	user_spec pus;
	if (r == 0 && ctx->rootless && !asked_user && co.user && user_spec_parse(co.user, &pus, NULL) == 0 &&
	    !user_spec_is_root(&pus)) {
		co.user = NULL;
		co.user_no_root = false;
		co.cap_drop = drop_all;
		co.cap_add = NULL;
		user_warning =
		    "the policy's user is not used: rootless, the environment maps a single uid (root "
		    "inside); "
		    "commands run as root with no capabilities instead (run sbx as root for a separate user)";
	}
	json_t *w = NULL;
	if (r == 0)
		r = env_create_opts(ctx, &co, keep.plugins, ret_id, &w, err);
	if (r == 0 && keep.warning && w)
		json_array_append_new(w, json_string(keep.warning));
	if (r == 0 && user_warning && w)
		json_array_append_new(w, json_string(user_warning));
	if (ret_warnings)
		*ret_warnings = w;
	else
		json_decref(w);
	policy_storage_clear(&keep);
	return r;
}

/* A fork (or an image template) runs as its snapshot's user (the manifest's
 * "user": the environment's, or the image config's User) unless the create
 * names one; "root" or a form sbx cannot use leaves root. */
static void snapshot_default_user(sbx_create_opts *co, const store_snapshot *snap)
{
	if (co->version < 4) {
		co->user = NULL;
		co->cap_drop = co->cap_add = NULL;
		co->user_no_root = false;
		co->devices = NULL;
		co->network_allow = NULL;
		co->one_shot = false;
		co->version = SBX_CREATE_OPTS_VERSION;
	}
	user_spec us;
	if (!co->user && snap->user && user_spec_parse(snap->user, &us, NULL) == 0 && !user_spec_is_root(&us))
		co->user = snap->user;
}

/* A fork or an image template starts with its snapshot's variables (the
 * image's Env, or the environment's), the create's --env over them
 * (build/image_config.h). *ret_env holds the merged array (strings borrowed). */
static int snapshot_default_env(sbx_create_opts *co, const store_snapshot *snap, char ***ret_env,
				sbx_err **err)
{
	const image_layer img = {.env = (const char *const *)snap->env}, cre = {.env = co->env};
	image_merged m;
	if (image_merge((const image_layer *const[]){&img, &cre}, 2, &m, err) < 0)
		return -1;
	co->env = (const char *const *)m.env;
	*ret_env = m.env;
	return 0;
}

static int env_create_opts(sbx_ctx *ctx, const sbx_create_opts *o, const json_t *plugins, char **ret_id,
			   json_t **ret_warnings, sbx_err **err)
{
	/* OCI: a template that is neither host nor dir:PATH is an imported image
	 * (a template name, or oci:DIR[:TAG] imported first): create from its
	 * snapshot, as a fork, with the image's Env before the caller's. */
	if (o && !o->snapshot && o->template_spec && !streq(o->template_spec, "host") &&
	    !startswith(o->template_spec, "dir:")) {
		_cleanup_free_ char *tdigest = NULL;
		_cleanup_snapshot_ store_snapshot *tsnap = NULL;
		if (sbx_template_resolve(ctx, o->template_spec, &tdigest, err) < 0 ||
		    store_snapshot_read(ctx->root, tdigest, &tsnap, err) < 0)
			return -1;
		sbx_create_opts co = *o;
		co.template_spec = tsnap->base_template ? tsnap->base_template : o->template_spec;
		_cleanup_free_ char **tenv = NULL;
		if (snapshot_default_env(&co, tsnap, &tenv, err) < 0)
			return -1;
		snapshot_default_user(&co, tsnap);
		env_create_req q = {.o = &co, .snap = tsnap, .snap_id = tdigest, .plugins = plugins};
		return env_create_impl(ctx, &q, ret_id, ret_warnings, err);
	}
	if (!o || !o->snapshot)
		return env_create_impl(ctx, &(env_create_req){.o = o, .plugins = plugins}, ret_id,
				       ret_warnings, err);
	/* fork: a new environment from a snapshot (its template and layers). */
	_cleanup_free_ char *digest = NULL;
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	if (sbx_snapshot_resolve(ctx, o->snapshot, &digest, err) < 0 ||
	    store_snapshot_read(ctx->root, digest, &snap, err) < 0)
		return -1;
	sbx_create_opts co = *o;
	if (o->template_spec && snap->base_template && !streq(o->template_spec, snap->base_template))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "snapshot %s was taken from template '%s', not '%s'", digest,
			       snap->base_template, o->template_spec);
	co.template_spec = snap->base_template;
	_cleanup_free_ char **fenv = NULL;
	if (snapshot_default_env(&co, snap, &fenv, err) < 0)
		return -1;
	snapshot_default_user(&co, snap);
	env_create_req q = {.o = &co, .snap = snap, .snap_id = digest, .plugins = plugins};
	return env_create_impl(ctx, &q, ret_id, ret_warnings, err);
}

/* What stop_wait saw (STOP_REMOVED: a one-shot environment removed itself). */
enum { STOP_NOT_SEEN, STOP_DONE, STOP_LINGERING, STOP_REMOVED };

/* fd: a connection to id's supervisor that asked it to stop (a stop, or an
 * exec with CTL_F_STOP_AFTER). Waits for its "stopped", which comes after
 * its teardown (anything before it is skipped; EOF or 15 s: not seen),
 * then for it to exit (it does at once; its lock, without polling), unless
 * it lingers (asked with CTL_F_LINGER: every process and the cgroup are
 * gone, its mounts go after the reply, and it exits then; reclaim.c waits
 * for that before removing the trees). */
static int stop_wait(sbx_ctx *ctx, const char *id, int fd)
{
	bool lingering = false, removed = false;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 15000) <= 0)
			return STOP_NOT_SEEN;
		json_t *m = NULL;
		if (json_recv(fd, &m, NULL, NULL) <= 0)
			return STOP_NOT_SEEN;
		bool stopped = streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_STOPPED);
		lingering = json_bool(m, CTL_F_LINGERING, false);
		removed = json_bool(m, CTL_F_REMOVED, false);
		json_decref(m);
		if (stopped)
			break;
	}
	if (removed)
		return STOP_REMOVED; /* its lock and mounts go as it exits: nothing is ours to wait for */
	if (lingering)
		return STOP_LINGERING;
	char lp[4300];
	snprintf(lp, sizeof(lp), "%s/%s/lock", ctx->run, id);
	_cleanup_close_ int lk = open(lp, O_RDONLY | O_CLOEXEC);
	if (lk >= 0 && flock(lk, LOCK_SH) == 0)
		flock(lk, LOCK_UN);
	return STOP_DONE;
}

/* Stops the supervisor (if alive) and waits until it has cleaned up, or
 * (linger: the caller removes the environment's files next) until every
 * process and the cgroup are gone, the supervisor still unmounting
 * (STOP_LINGERING), or until a one-shot environment removed itself
 * (STOP_REMOVED). */
static int stop_supervisor_linger(sbx_ctx *ctx, const char *id, bool linger)
{
	int stopped = STOP_NOT_SEEN; /* it said so: its teardown destroyed the cgroup */
	_cleanup_close_ int fd = env_connect(ctx, id, NULL);
	/* A supervisor still starting (its creator or restorer killed a moment
	 * ago) holds the lock before it listens: give it a few seconds to
	 * listen (or to fail and exit) rather than tearing its cgroup down under
	 * it and finding it still alive. */
	for (int i = 0; fd < 0 && i < 1500 && env_is_live(ctx, id); i++) {
		usleep(2000);
		fd = env_connect(ctx, id, NULL);
	}
	if (fd >= 0) {
		_cleanup_json_ json_t *req =
		    json_pack("{s:s,s:b}", CTL_F_OP, CTL_OP_STOP, CTL_F_LINGER, linger);
		if (req && json_send(fd, req, NULL, 0) == 0)
			stopped = stop_wait(ctx, id, fd);
	}
	/* Whatever is left (a dead supervisor's cgroup and processes) goes too.
	 * Not after a "stopped": its teardown destroyed the cgroup, and looking
	 * again over every v1 hierarchy cost ~0.3 ms of each removal. */
	sbx_cgroup *cg = NULL;
	if (!stopped && cgroup_open(id, &cg, NULL) == 0) {
		(void)cgroup_destroy(cg, NULL);
		cgroup_free(cg);
	}
	devcg_remove(id); /* CDI devices' v1 device group (runtime/devices.h) */
	if (stopped == STOP_LINGERING || stopped == STOP_REMOVED)
		return stopped;
	/* Wait for the supervisor to release its lock (it exits right after). */
	for (int i = 0; i < 2000 && env_is_live(ctx, id); i++)
		usleep(1000);
	return stopped;
}

void stop_supervisor(sbx_ctx *ctx, const char *id)
{
	(void)stop_supervisor_linger(ctx, id, false);
}

/* Removal, once the supervisor is gone (or lingering: only unmounting):
 * the files. */
static int remove_stopped(sbx_ctx *ctx, const char *id, bool lingering, sbx_err **err)
{
	startup_mark("remove: supervisor stopped");
	if (!lingering && env_is_live(ctx, id))
		return err_set(err, SBX_E_INTERNAL, EBUSY, "environment '%s' did not stop", id);
	remove_env_files(ctx, id, NULL);
	startup_mark("remove: files removed");
	return 0;
}

_public_ int sbx_env_remove(sbx_ctx *ctx, const char *ref, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	startup_mark("remove: begin");
	int stopped = stop_supervisor_linger(ctx, id, true);
	if (stopped == STOP_REMOVED)
		return 0;
	return remove_stopped(ctx, id, stopped == STOP_LINGERING, err);
}

/* The removal at the end of sbx run: a one-shot environment that ended by
 * itself (its init died) removed itself too (runtime.h): not found is
 * removed. */
static void remove_after_run(sbx_ctx *ctx, const char *id, sbx_err **ret_remove_err)
{
	sbx_err *e = NULL;
	if (sbx_env_remove(ctx, id, &e) < 0 && sbx_err_code(e) == SBX_E_NOT_FOUND)
		sbx_err_free(TAKE_PTR(e));
	if (ret_remove_err)
		*ret_remove_err = e;
	else
		sbx_err_free(e);
}

/* sbx run's exec and remove in one request: the exec asks the supervisor
 * to stop the environment when the command ends (CTL_F_STOP_AFTER), so the
 * teardown begins as the command exits, and its "stopped" comes on the
 * exec's connection. What the supervisor's stop did not cover (it never
 * got the request, or said no "stopped") is sbx_env_remove's. */
_public_ int sbx_env_exec_remove(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *o, sbx_exec_result *ret,
				 sbx_err **ret_remove_err, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	int r;
	int stopped = STOP_NOT_SEEN;
	if (o && o->version >= 2 && (o->trace || o->deterministic > 0)) {
		/* A trace's own path (it reads the environment after the command:
		 * the filesystem digest), then a plain remove. A one-shot environment
		 * whose caller dies meanwhile removes itself; the trace is then never
		 * stored (docs/trace.md): nothing half-written. */
		r = sbx_env_exec(ctx, id, o, ret, err);
	} else if ((r = exec_opts_check(o, err)) == 0) {
		_cleanup_json_ json_t *f = json_pack("{s:b,s:b}", CTL_F_STOP_AFTER, 1, CTL_F_LINGER, 1);
		exec_extra x = {
		    .req_fields = f, .trace_rd = -1, .trace_out = -1, .keep_sock = true, .sock = -1};
		startup_mark("exec: begin");
		r = f ? exec_core(ctx, id, o, &x, ret, err) : err_oom(err);
		startup_mark("exec: done");
		json_decref(x.started);
		json_decref(x.exit);
		if (x.sock >= 0) {
			startup_mark("remove: begin");
			stopped = stop_wait(ctx, id, x.sock);
			safe_close(x.sock);
		}
	}
	if (stopped == STOP_REMOVED) {
		devcg_remove(id);
		startup_mark("remove: files removed (by the supervisor, before its reply)");
	} else if (stopped != STOP_NOT_SEEN) {
		devcg_remove(id); /* as stop_supervisor after a "stopped" */
		(void)remove_stopped(ctx, id, stopped == STOP_LINGERING, ret_remove_err);
	} else
		remove_after_run(ctx, id, ret_remove_err);
	return r;
}

static json_t *summary(sbx_ctx *ctx, const char *id)
{
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_read(ctx, id, &st) < 0 || st.pool) /* pool entries are not listed */
		return NULL;
	bool live = env_is_live(ctx, id);
	const char *state = live ? "running" : "stopped";
	if (!st.state)
		state = live && !env_creator_gone(st.json) ? "creating" : "failed";
	else if (env_warm_state(ctx, id, live)) /* paused, suspended (docs/warm.md) */
		state = env_warm_state(ctx, id, live);
	return json_pack("{s:s,s:s?,s:s,s:s?,s:s?,s:s?}", "environment_id", id, "name", st.name, "state",
			 state, "created_at", st.created_at, "snapshot_id", st.snapshot_id, "template",
			 st.template_spec);
}

_public_ int sbx_env_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	_cleanup_strv_free_ char **ids = env_list_ids(ctx);
	json_t *a = json_array();
	for (char **p = ids; p && *p; p++) {
		json_t *s = summary(ctx, *p);
		if (s)
			json_array_append_new(a, s);
	}
	*ret = json_pack("{s:o}", "environments", a);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

_public_ int sbx_env_inspect(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_load(ctx, ref, &id, &st, err) < 0)
		return -1;
	json_t *s = summary(ctx, id);
	if (!s)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment: '%s'", id);
	json_object_update_missing(s, st.json);
	json_object_del(s, "created_ms");
	json_t *susp = env_suspend_info(ctx, id); /* docs/warm.md */
	if (susp)
		json_object_set_new(s, "suspend", susp);
	bool rootless = st.rootless;
	int abi = (int)st.landlock_abi;
	json_t *iso = json_pack("{s:[sssssss],s:s,s:b,s:s,s:b,s:i,s:b}", "namespaces", "user", "mount", "pid",
				"net", "uts", "ipc", "cgroup", "uid_map", "", "rootless", rootless, "seccomp",
				"deny-list (libseccomp), foreign ABIs killed", "no_new_privs", 1,
				"landlock_abi", abi, "landlock", abi > 0);
	json_array_append_new(json_object_get(iso, "namespaces"), json_string("time"));
	char map[64];
	snprintf(map, sizeof(map), "0 %lld %lld", (long long)st.host_uid, (long long)st.id_count);
	json_object_set_new(iso, "uid_map", json_string(map));
	/* Capabilities of a command run as root (state.json; before users
	 * existed, always the safe set); any other user has none. */
	uint64_t kept = caps_safe_set;
	if (st.capabilities)
		(void)caps_from_json(st.capabilities, &kept);
	/* What the default user's commands hold: the kept set for root, none for
	 * another user; root_capabilities: what a command run as root holds. */
	const char *user = st.user;
	user_spec ius;
	bool user_nonroot = user && user_spec_parse(user, &ius, NULL) == 0 && !user_spec_is_root(&ius);
	json_object_set_new(iso, "capabilities", caps_to_json(user_nonroot ? 0 : kept));
	json_object_set_new(iso, "root_capabilities", caps_to_json(kept));
	if (st.user_no_root)
		json_object_set_new(iso, "root_allowed", json_false());
	json_object_set_new(s, "user", json_string(user ? user : "root"));
	json_object_set_new(iso, "user", json_string(user ? user : "root"));
	const char *net = st.network ?: "none";
	json_object_set_new(iso, "network",
			    json_string(streq(net, "open") ? "open: the host's network (unsafe)"
					: streq(net, "allow")
					    ? "loopback only; egress through the sbx proxy to the allowlist"
					    : "loopback only"));
	if (st.network_allow)
		json_object_set(iso, "network_allow", st.network_allow);
	if (streq(net, "allow")) {
		char lp[4300];
		snprintf(lp, sizeof(lp), "%s/%s/egress.log", ctx->run, id);
		json_object_set_new(iso, "egress_log", json_string(lp));
	}
	if (st.degraded) {
		json_object_set_new(
		    iso, "mode", json_string("degraded: Landlock + seccomp + no_new_privs, no namespaces"));
		json_object_set_new(iso, "namespaces", json_array());
		json_object_set_new(iso, "network", json_string("IP sockets denied by seccomp"));
		json_object_set_new(iso, "uid_map", json_string("none"));
	}
	json_object_set_new(iso, "cgroup", json_string(cgroup_host_mode()));
	json_object_set(iso, "missing", st.warnings ?: json_array());
	json_object_set_new(s, "isolation", iso);
	json_object_del(s, "warnings");
	if (env_is_live(ctx, id)) {
		_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_INFO), *info = NULL;
		if (env_call(ctx, id, req, &info, NULL) == 0) {
			json_object_del(info, CTL_F_EV);
			json_object_del(info, "warnings");
			json_object_update(s, info);
		}
	}
	int64_t quota = st.limits.disk_bytes;
	if (quota > 0) {
		/* The writable layer's filesystem, as the host sees it (a one-shot
		 * run's tmpfs is inside the environment: no usage from here). */
		bool eph = st.ephemeral;
		json_t *d = json_pack("{s:I,s:s,s:n}", "quota_bytes", (json_int_t)quota, "backing",
				      eph ? "tmpfs inside the environment" : "ext4 image on a loop device",
				      "used_bytes");
		_cleanup_free_ char *dir = ctx_env_dir(ctx, id);
		int64_t size, used, avail;
		if (d && dir && !eph && quota_usage(dir, &size, &used, &avail) == 0) {
			json_object_set_new(d, "size_bytes", json_integer(size));
			json_object_set_new(d, "used_bytes", json_integer(used));
			json_object_set_new(d, "available_bytes", json_integer(avail));
		}
		if (d)
			json_object_set_new(s, "disk", d);
	}
	*ret = s;
	return 0;
}

_public_ int sbx_env_ps(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_PS);
	json_t *m = NULL;
	if (env_call(ctx, id, req, &m, err) < 0)
		return -1;
	json_object_del(m, CTL_F_EV);
	*ret = m;
	return 0;
}

/* A restore stops the supervisor before starting a new one; meanwhile the
 * environment looks dead. Its state says so, for two minutes at most (a
 * restore killed halfway leaves a stopped environment for gc after that). */
static bool env_is_restoring(sbx_ctx *ctx, const char *id)
{
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_read(ctx, id, &st) < 0)
		return false;
	int64_t since = st.restoring_ms;
	return since > 0 && now_ms_real() - since < 120000;
}

static void trash_teardown(const char *path)
{
	(void)quota_teardown(path);
}

_public_ int sbx_gc(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	json_t *removed = json_array();
	_cleanup_strv_free_ char **ids = env_list_ids(ctx);
	reclaim_defer(true); /* the drain below removes what this moves to the trash */
	for (char **p = ids; p && *p; p++) {
		_cleanup_env_record_ env_record kst = {.uid_slot = -1};
		bool have = env_record_read(ctx, *p, &kst) == 0;
		bool orphan = have && !kst.state && env_creator_gone(kst.json);
		if ((env_is_live(ctx, *p) && !orphan) || env_is_restoring(ctx, *p))
			continue;
		/* Ended by its idle TTL and asked to keep its state: sbx rm decides. */
		if (have && kst.ttl_keep)
			continue;
		if (env_warm_state(ctx, *p, false)) /* suspended: it comes back on the next call */
			continue;
		stop_supervisor(ctx, *p);
		remove_env_files(ctx, *p, NULL);
		json_array_append_new(removed, json_string(*p));
	}
	/* Run dirs (and their cgroups) of environments whose creation died
	 * before the state was written. Only this store's: other stores'
	 * environments share the host's cgroup tree. */
	DIR *d = opendir(ctx->run);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!env_valid_id(de->d_name))
			continue;
		_cleanup_free_ char *dir = ctx_env_dir(ctx, de->d_name), *run = ctx_run_dir(ctx, de->d_name);
		if (dir && run && !fs_exists(dir) && !env_is_live(ctx, de->d_name)) {
			sbx_cgroup *cg = NULL;
			if (cgroup_open(de->d_name, &cg, NULL) == 0) {
				(void)cgroup_destroy(cg, NULL);
				cgroup_free(cg);
			}
			fs_rm_rf(run);
		}
	}
	if (d)
		closedir(d);
	/* Host uid ranges whose owner no longer exists (any store). */
	d = opendir(USERNS_SLOT_DIR);
	while (!ctx->rootless && d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *owner = NULL, *sp = fs_path_join(USERNS_SLOT_DIR, de->d_name);
		struct stat sst;
		if (sp && fs_read_file(sp, 8192, &owner, NULL) == 0 && owner[0] == '/' && !fs_exists(owner))
			unlink(sp);
		else if (sp && owner && !owner[0] && stat(sp, &sst) == 0 &&
			 time(NULL) - sst.st_mtime > SLOT_EMPTY_STALE_S)
			unlink(sp); /* a claim whose creator died before naming itself (userns.c) */
	}
	if (d)
		closedir(d);
	pool_gc(ctx, removed); /* entries of warm pools that are gone */
	reclaim_defer(false);
	/* Last, the trash (api/reclaim.h), the removals above included: after
	 * waiting for a reclaimer at work; a quota's mounts first (a removal
	 * that died halfway). */
	reclaim_drain(ctx, RECLAIM_GC_WAIT_MS, trash_teardown);
	*ret = json_pack("{s:o}", "removed", removed);
	if (!*ret)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	/* Store objects nothing reaches (src/api/store_admin.c). */
	if (store_admin_gc(ctx, *ret, err) < 0) {
		json_decref(TAKE_PTR(*ret));
		return -1;
	}
	return 0;
}

_public_ int sbx_env_net_log(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_load(ctx, ref, &id, &st, err) < 0)
		return -1;
	if (!streq(st.network ?: "none", "allow"))
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "environment '%s' has network '%s': only network allow goes through the egress proxy, "
		    "which keeps the log",
		    id, st.network ?: "none");
	char p[4300];
	snprintf(p, sizeof(p), "%s/%s/egress.log", ctx->run, id);
	_cleanup_free_ char *buf = NULL;
	int r = fs_read_file(p, 64 << 20, &buf, NULL);
	json_t *events = json_array();
	for (char *line = r == 0 ? buf : NULL, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		json_t *e = json_loads(line, 0, NULL);
		if (e)
			json_array_append_new(events, e);
	}
	*ret = json_pack("{s:s,s:o}", "environment_id", id, "events", events);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
