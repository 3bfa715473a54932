/* Starting an environment's supervisor (env_create_impl): a create's
 * steps 1-7 (configuration, files on disk, the record, the supervisor),
 * for a new environment and for a restart from its record (restore, wake).
 * Part of the core below the features (docs/layout.md): the warm pool's
 * entries reach it through ctx.h's hooks, never by a call into pool.c. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/core.h"
#include "api/devices.h"
#include "api/publish.h"
#include "api/secrets.h"
#include "api/snap_base.h"
#include "policy/egress_match.h"
#include "runtime/caps.h"
#include "runtime/quota.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "runtime/user.h"
#include "store/layer.h"
#include "store/snapshot.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/proc.h"
#include "util/syscalls.h"

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
	for (size_t i = 0; i < c->n_ports; i++)
		safe_close(c->ports[i].fd);
	free(c->ports);
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
	if (!restore_id && c->name && env_name_register(ctx, c->name, c->id, err) < 0)
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
	if (!c->disk_bytes && !c->ephemeral && !c->degraded && !restore_id && ctx_pool_layer_tmpfs(ctx) &&
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
	/* Published ports (api/publish.c): a restart keeps its record's. */
	if (publish_prepare(c, o->version >= 8 ? o->publish : NULL, q->restore_state, err) < 0)
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
	if (st)
		publish_state(c, NULL, st);
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
	publish_state(c, info, st); /* the host ports bound (HOSTPORT 0: chosen then) */
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
	startup_mark("prepare: begin");
	if (create_on_disk(a->ctx, c, a->q, &slot, &have_slot, err) == 0) {
		startup_mark("prepare: on disk");
		if (create_record(a->ctx, c, a->q, a->sec_state, a->base_id, slot, &st, err) == 0) {
			startup_mark("prepare: state written");
			return 0;
		}
	}
	env_remove_files(a->ctx, c->id, NULL);
	if (c->name)
		env_name_unregister(a->ctx, c->name, c->id);
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
	if (ctx->pool_entry_paths) /* building a warm pool's entry (pool.c through ctx.h) */
		ctx->pool_entry_paths(ctx, c->id, &c->pool_token, &c->pool_claim);
	c->handout = ctx->pool_handout;
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
	env_remove_files(ctx, c->id, NULL);
	if (c->name)
		env_name_unregister(ctx, c->name, c->id);
	if (have_slot)
		userns_slot_free(slot);
	return err_ret(err);
}

/* Rebuilds create options from an environment's recorded state (core.h). */
int opts_from_state(const json_t *st, sbx_create_opts *o, sbx_volume *vols, size_t max_vols, char ***env,
		    char ***net_allow)
{
	sbx_create_opts d = SBX_CREATE_OPTS_INIT;
	*o = d;
	_cleanup_env_record_ env_record r = {.uid_slot = -1};
	if (env_record_parse((json_t *)st, &r) < 0)
		return -EBADMSG;
	/* Strings stay borrowed from st (the caller's), not from r's reference. */
	o->name = r.name;
	o->template_spec = r.template_spec;
	o->memory_bytes = r.limits.memory_bytes;
	o->pids = r.limits.pids;
	o->cpus = r.limits.cpus;
	o->timeout_ms = r.limits.timeout_ms;
	o->ttl_ms = r.limits.ttl_ms;
	o->output_bytes = r.limits.output_bytes;
	o->disk_bytes = r.limits.disk_bytes;
	o->idle_suspend_ms = r.limits.idle_suspend_ms;
	if (r.env && !(*env = json_to_strv(r.env)))
		return -ENOMEM;
	o->network = r.network ?: "none";
	if (net_proxied(o->network)) {
		if (!(*net_allow = json_to_strv(r.network_allow ?: json_array())))
			return -ENOMEM;
		o->network_allow = (const char *const *)*net_allow;
	}
	o->env = (const char *const *)*env;
	json_t *v;
	size_t i;
	json_array_foreach(r.volumes, i, v)
	{
		if (i >= max_vols)
			return -E2BIG;
		vols[i] = (sbx_volume){.host = json_str(v, "host"),
				       .path = json_str(v, "path"),
				       .readonly = json_bool(v, "readonly", false)};
	}
	o->volumes = vols;
	o->n_volumes = json_array_size(r.volumes);
	return 0;
}
