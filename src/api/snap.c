/* Snapshots: sbx_env_snapshot, sbx_env_restore, sbx_snapshot_list,
 * sbx_snapshot_resolve. The store (src/store) does the content-addressed
 * work; this file freezes, reads the environment's writable layer, writes
 * the manifest, and restarts environments on snapshot layers. */
#include <ctype.h>
#include <dirent.h>
#include <sys/xattr.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/startup_trace.h"
#include "runtime/ctl_proto.h"
#include "store/delta.h"
#include "runtime/runtime.h"
#include "runtime/mask.h"
#include "runtime/quota.h"
#include "store/layer.h"
#include "store/progress.h"
#include "store/snapshot.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

_public_ int sbx_snapshot_resolve(sbx_ctx *ctx, const char *ref, char **ret_digest, sbx_err **err)
{
	if (!ref || !*ref)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "empty snapshot id");
	char d[STORE_DIGEST_SIZE];
	if (store_digest_valid(ref)) {
		_cleanup_snapshot_ store_snapshot *s = NULL;
		if (store_snapshot_read(ctx->root, ref, &s, err) < 0)
			return -1;
		return (*ret_digest = strdup(ref)) ? 0 : -ENOMEM;
	}
	if (store_label_valid(ref) && store_ref_get(ctx->root, ref, d, NULL) == 0)
		return (*ret_digest = strdup(d)) ? 0 : -ENOMEM;
	/* A unique prefix of the hex (with or without "sha256:"). */
	if (store_digest_prefix_valid(ref)) {
		_cleanup_strv_free_ char **all = NULL;
		if (store_snapshot_list(ctx->root, &all, NULL) == 0) {
			const char *match = NULL;
			int n = store_digest_prefix_match(all, ref, &match);
			if (n == 1)
				return (*ret_digest = strdup(match)) ? 0 : -ENOMEM;
			if (n > 1)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "snapshot prefix '%s' is ambiguous", ref);
		}
	}
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such snapshot: '%s' (not a digest, prefix or label)",
		       ref);
}

static char *read_os_release(const char *env_dir)
{
	char p[4400];
	_cleanup_free_ char *buf = NULL;
	snprintf(p, sizeof(p), "%s/upper/etc/os-release", env_dir ? env_dir : "");
	if ((!env_dir || fs_read_file(p, 65536, &buf, NULL) < 0) &&
	    fs_read_file("/etc/os-release", 65536, &buf, NULL) < 0)
		return NULL;
	char *q = strstr(buf, "PRETTY_NAME=");
	if (!q)
		return NULL;
	q += strlen("PRETTY_NAME=");
	if (*q == '"')
		q++;
	size_t n = strcspn(q, "\"\n");
	return strndup(q, n);
}

/* ---- template bases (docs/store.md "Template bases") ---------------------- */

/* The mask as identity: each entry's type, mode, owner, path and link
 * target, in order (not mtimes: they do not change what is shown). */
static int mask_digest(const mask_list *m, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	for (size_t i = 0; i < m->n; i++) {
		const mask_entry *e = &m->e[i];
		char head[64];
		int n = snprintf(head, sizeof(head), "%c %o %u %u ", e->type, e->mode & 07777,
				 (unsigned)e->uid, (unsigned)e->gid);
		if (store_hasher_update(h, head, (size_t)n, err) < 0 ||
		    store_hasher_update(h, e->path, strlen(e->path) + 1, err) < 0 ||
		    store_hasher_update(h, e->target ? e->target : "",
					(e->target ? strlen(e->target) : 0) + 1, err) < 0)
			return err_ret(err);
	}
	return store_hasher_final(h, ret, err);
}

static char *kv(const char *k, const char *v)
{
	char *s = NULL;
	return asprintf(&s, "%s=%s", k, v) < 0 ? NULL : s;
}

/* A package database's digest, remembered per process by the file's
 * identity (device, inode, size, mtime, ctime): /var/lib/dpkg/status is
 * ~0.8 MB here, 0.4 ms of SHA-256 in every create of a long-lived process
 * (sbx mcp, a pool's refiller). Git's rule against racy entries: a file
 * changed in the last 2 s is hashed, and not remembered. */
static int pkgdb_digest(int fd, const char *path, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static struct {
		char path[64];
		struct stat st;
		char digest[STORE_DIGEST_SIZE];
	} cache[4];
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "stat '%s'", path);
#define PKGDB_SAME(a, b)                                                                                      \
	((a).st_dev == (b).st_dev && (a).st_ino == (b).st_ino && (a).st_size == (b).st_size &&               \
	 (a).st_mtim.tv_sec == (b).st_mtim.tv_sec && (a).st_mtim.tv_nsec == (b).st_mtim.tv_nsec &&           \
	 (a).st_ctim.tv_sec == (b).st_ctim.tv_sec && (a).st_ctim.tv_nsec == (b).st_ctim.tv_nsec)
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ARRAY_SIZE(cache); i++)
		if (streq(cache[i].path, path) && PKGDB_SAME(cache[i].st, st)) {
			memcpy(ret, cache[i].digest, STORE_DIGEST_SIZE);
			pthread_mutex_unlock(&lock);
			return 0;
		}
	pthread_mutex_unlock(&lock);
	if (store_digest_fd(fd, ret, NULL, err) < 0)
		return -1;
	if (time(NULL) - st.st_ctim.tv_sec < 2 || time(NULL) - st.st_mtim.tv_sec < 2 || strlen(path) >= 64)
		return 0;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ARRAY_SIZE(cache); i++)
		if (!cache[i].path[0] || streq(cache[i].path, path)) {
			snprintf(cache[i].path, sizeof(cache[i].path), "%s", path);
			cache[i].st = st;
			memcpy(cache[i].digest, ret, STORE_DIGEST_SIZE);
			break;
		}
	pthread_mutex_unlock(&lock);
#undef PKGDB_SAME
	return 0;
}

int snap_template_base(sbx_ctx *ctx, const char *spec, const mask_list *mask, char *ret, sbx_err **err)
{
	/* What names the tree: the template, and for `host` the directories it
	 * shows, the mask over them and the host's package databases. */
	static const char *const pkgdbs[] = {"/var/lib/dpkg/status", "/var/lib/rpm/rpmdb.sqlite",
					     "/var/lib/rpm/Packages", "/lib/apk/db/installed", NULL};
	_cleanup_strv_free_ char **idv = NULL;
	size_t n = 0;
	int r = strv_push(&idv, &n, kv("template", spec));
	if (r == 0 && mask) {
		_cleanup_strv_free_ char **dirs = mask_host_dirs(mask);
		size_t jl = 1;
		for (char **d = dirs; d && *d; d++)
			jl += strlen(*d) + 1;
		_cleanup_free_ char *joined = calloc(1, jl);
		for (char **d = dirs; joined && d && *d; d++) {
			if (d != dirs)
				strcat(joined, ",");
			strcat(joined, *d);
		}
		char md[STORE_DIGEST_SIZE];
		if (mask_digest(mask, md, err) < 0)
			return err_wrap(err, "template base");
		r = strv_push(&idv, &n, kv("dirs", joined ? joined : ""));
		if (r == 0)
			r = strv_push(&idv, &n, kv("mask", md));
		for (size_t i = 0; r == 0 && pkgdbs[i]; i++) {
			_cleanup_close_ int fd = open(pkgdbs[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
			char d[STORE_DIGEST_SIZE];
			if (fd < 0)
				continue;
			if (pkgdb_digest(fd, pkgdbs[i], d, err) < 0)
				return err_wrap(err, "template base: '%s'", pkgdbs[i]);
			_cleanup_free_ char *k = NULL;
			r = asprintf(&k, "pkgdb:%s", pkgdbs[i]) < 0 ? -ENOMEM : strv_push(&idv, &n, kv(k, d));
		}
	}
	if (r < 0)
		return err_errnum(err, -r, "template base");
	_cleanup_free_ char *osr = mask ? read_os_release(NULL) : NULL;
	static char *empty[] = {NULL};
	store_snapshot snap = {.layers = empty,
			       .base_template = (char *)spec,
			       .env = empty,
			       .cwd = "/root",
			       .user = "root",
			       .os_release = osr,
			       .labels = empty,
			       /* The id names the tree only: the same host state, the same base. */
			       .created_at = "1970-01-01T00:00:00Z",
			       .base_identity = idv};
	_cleanup_free_ char *json = NULL;
	if (store_snapshot_encode(&snap, &json, ret, err) < 0)
		return err_wrap(err, "template base");
	/* Built once: present means complete (written as a unique temp name,
	 * then renamed; concurrent creates write the same bytes). */
	_cleanup_snapshot_ store_snapshot *have = NULL;
	if (store_snapshot_read(ctx->root, ret, &have, NULL) == 0)
		return 0;
	char id2[STORE_DIGEST_SIZE];
	if (store_snapshot_write(ctx->root, &snap, id2, err) < 0)
		return err_wrap(err, "template base");
	return 0;
}

_public_ int sbx_env_snapshot(sbx_ctx *ctx, const char *ref, const char *label, json_t **ret, sbx_err **err)
{
	double t0 = now_ms();
	_cleanup_free_ char *id = NULL;
	if (label && !store_label_valid(label))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid label '%s': use letters, digits, '.', '_' or '-' (at most 128)",
			       label);
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_load(ctx, ref, &id, &st, err) < 0)
		return -1;
	int r;
	if (st.ephemeral || st.degraded)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "environment '%s' cannot be snapshotted (one-shot runs and environments without user "
		    "namespaces have no persistent writable layer)",
		    id);

	/* Freeze for a consistent capture; the freeze lasts as long as this
	 * connection, so a crash here thaws it. Not live: nothing to freeze. */
	_cleanup_close_ int fc = env_is_live(ctx, id) ? env_connect(ctx, id, NULL) : -1;
	bool frozen = false, quiesced;
	if (fc >= 0) {
		_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_FREEZE), *rep = NULL;
		if (json_send(fc, req, NULL, 0) < 0 || json_recv(fc, &rep, NULL, NULL) <= 0)
			return err_set(err, SBX_E_UNAVAILABLE, EPIPE, "environment '%s' stopped answering",
				       id);
		if (streq(json_str(rep, CTL_F_EV) ?: "", CTL_EV_ERROR))
			return api_err_from_json(rep, err);
		frozen = json_bool(rep, "frozen", false);
		/* Frozen, or (rootless) every process stopped: nothing writes. */
		quiesced = frozen || json_bool(rep, "ok", false);
	} else
		quiesced = !env_is_live(ctx, id);

	char p[4300];
	snprintf(p, sizeof(p), "%s/envs/%s/upper", ctx->root, id);
	_cleanup_close_ int ufd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0)
		return err_errno(err, "open '%s'", p);
	store_idmap ids = {.uid_base = (uid_t)st.host_uid,
			   .gid_base = (gid_t)st.host_uid,
			   .count = (uint32_t)(st.id_count ?: 1)};
	if (st.rootless) {
		ids.uid_base = ctx->uid;
		ids.gid_base = ctx->gid;
		ids.count = 1;
	}
	/* A delta over the last snapshot's layers when its index is valid, else
	 * the whole writable layer over the base layers (src/store/delta.c). */
	_cleanup_(snap_capture_clear) snap_capture cap = SNAP_CAPTURE_INIT;
	store_progress_begin(ctx->progress, ctx->progress_ud, "snapshot", 0, 0);
	r = snap_delta_capture(ctx, id, st.json, ufd, &ids, quiesced, &cap, err);
	store_progress_end();
	if (fc >= 0) {
		_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_THAW), *rep = NULL;
		if (json_send(fc, req, NULL, 0) == 0)
			(void)json_recv(fc, &rep, NULL, NULL);
	}
	if (r < 0)
		return err_wrap(err, "snapshot '%s'", id);

	/* Manifest: the layers the capture gives (bottom first). */
	store_snapshot snap = {0};
	char **layers = cap.layers;
	size_t nl = 0;
	while (layers[nl])
		nl++;
	store_layer_info li = cap.new_layer ? cap.li : (store_layer_info){.existed = true};
	_cleanup_strv_free_ char **env = json_to_strv(st.env);
	char envdir[4300];
	snprintf(envdir, sizeof(envdir), "%s/envs/%s", ctx->root, id);
	_cleanup_free_ char *osr = read_os_release(envdir);
	_cleanup_strv_free_ char **pkgs = env_packages(ctx, id, envdir, st.snapshot_id);
	char created[32];
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	char *labels[2] = {(char *)label, NULL};
	static char *empty[] = {NULL};
	snap.parent = cap.parent ? cap.parent : (char *)st.snapshot_id;
	snap.layers = layers;
	snap.base_template = (char *)st.template_spec;
	snap.env = env ? env : empty;
	snap.cwd = "/root";
	snap.user = (char *)(st.user ?: "root"); /* a fork runs as it (env.c) */
	snap.os_release = osr;
	snap.packages = pkgs;
	snap.labels = label ? labels : empty;
	snap.created_at = created;
	/* The image config the environment was made with goes on (docker commit keeps it). */
	_cleanup_free_ char *icfg =
	    json_is_object(json_object_get(st.json, "image"))
		? json_dumps(json_object_get(st.json, "image"), JSON_COMPACT | JSON_SORT_KEYS)
		: NULL;
	snap.config = icfg;
	/* Size: the sum of the layers' tar sizes, i.e. the parent's (whose layers
	 * are this stack without its top) plus the new layer's. */
	uint64_t total = cap.new_layer ? cap.li.size : 0;
	if (snap.parent) {
		_cleanup_snapshot_ store_snapshot *ps = NULL;
		if (store_snapshot_read(ctx->root, snap.parent, &ps, NULL) == 0)
			total += ps->size_bytes;
	}
	snap.size_bytes = total;
	char sid[STORE_DIGEST_SIZE];
	if (store_snapshot_write(ctx->root, &snap, sid, err) < 0)
		return err_wrap(err, "snapshot '%s'", id);
	snap_delta_commit(ctx, id, st.json, &cap, sid);
	if (label && store_ref_set(ctx->root, label, sid, err) < 0)
		return err_wrap(err, "label snapshot %s", sid);
	*ret =
	    json_pack("{s:s,s:I,s:I,s:I,s:f,s:s,s:b,s:o}", "snapshot_id", sid, "size_bytes",
		      (json_int_t)total, "new_bytes", (json_int_t)(li.existed ? 0 : li.size), "files",
		      (json_int_t)li.files, "snapshot_ms", now_ms() - t0, "layer", nl ? layers[nl - 1] : "",
		      "frozen", frozen, "layers", json_from_strv((const char *const *)layers));
	if (*ret)
		json_object_set_new(*ret, "incremental", json_boolean(cap.delta));
	if (*ret && cap.full_reason)
		json_object_set_new(*ret, "full_reason", json_string(cap.full_reason));
	if (label && *ret)
		json_object_set_new(*ret, "label", json_string(label));
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

/* Rebuilds create options from an environment's recorded state (api.h). */
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
	if (streq(o->network, "allow")) {
		if (!(*net_allow = json_to_strv(r.network_allow)))
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

_public_ int sbx_env_restore(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err)
{
	double t0 = now_ms();
	_cleanup_free_ char *id = NULL, *digest = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0 || sbx_snapshot_resolve(ctx, snapshot, &digest, err) < 0)
		return -1;
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	if (store_snapshot_read(ctx->root, digest, &snap, err) < 0)
		return -1;
	for (char **l = snap->layers; l && *l; l++)
		if (!store_layer_exists(ctx->root, *l))
			return err_set(err, SBX_E_NOT_FOUND, ENOENT,
				       "layer %s of snapshot %s is missing from the store (run sbx fsck)", *l,
				       digest);
	_cleanup_env_record_ env_record rec = {.uid_slot = -1};
	int r = env_record_read(ctx, id, &rec);
	if (r < 0)
		return err_errnum(err, r, "read state of '%s'", id);
	if (rec.phase_switching) {
		/* An interrupted switch to the agent phase is finished first: the
		 * restored environment starts in the phase it was moving to. */
		_cleanup_json_ json_t *ph = NULL;
		if (sbx_env_phase(ctx, id, NULL, &ph, err) < 0)
			return err_wrap(err, "restore '%s'", id);
		env_record_clear(&rec);
		if ((r = env_record_read(ctx, id, &rec)) < 0)
			return err_errnum(err, r, "read state of '%s'", id);
	}
	if (rec.ephemeral || rec.degraded)
		return err_set(err, SBX_E_UNAVAILABLE, EPERM,
			       "environment '%s' cannot be restored (no persistent writable layer)", id);
	/* The record goes on as JSON into env_create_impl (a restart keeps
	 * what it does not type): the restore's mark is written through it. */
	rec.restoring_ms = now_ms_real(); /* gc leaves it alone */
	_cleanup_json_ json_t *st = env_record_format(&rec);
	if (!st)
		return err_oom(err);
	sbx_create_opts o;
	sbx_volume vols[64];
	_cleanup_strv_free_ char **env = NULL, **net = NULL;
	if (opts_from_state(st, &o, vols, ARRAY_SIZE(vols), &env, &net) < 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state of '%s'", id);
	if (snap->base_template)
		o.template_spec = snap->base_template;

	/* Every process ends with the old root; then the writable layer is
	 * emptied and the environment starts again on the snapshot's layers. */
	(void)env_state_write(ctx, id, st);
	startup_mark("restore: state read, marked restoring");
	stop_supervisor(ctx, id);
	startup_mark("restore: old supervisor stopped");
	if (env_is_live(ctx, id))
		return err_set(err, SBX_E_INTERNAL, EBUSY, "environment '%s' did not stop", id);
	/* The next snapshot cannot be a delta over the last one. */
	snap_delta_forget(ctx, id);
	char p[4300];
	/* A disk quota's image goes too: create formats a fresh one. */
	snprintf(p, sizeof(p), "%s/envs/%s", ctx->root, id);
	if (quota_reset(p, err) < 0)
		return err_wrap(err, "restore '%s'", id);
	const char *subs[] = {"upper", "work"};
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(p, sizeof(p), "%s/envs/%s/%s", ctx->root, id, subs[i]);
		r = fs_rm_rf(p);
		if (r < 0)
			return err_errnum(err, r, "empty '%s'", p);
	}
	startup_mark("restore: writable layer emptied");
	_cleanup_free_ char *nid = NULL;
	_cleanup_json_ json_t *w = NULL;
	if (env_create_impl(ctx, &o, st, snap, digest, NULL, &nid, &w, err) < 0)
		return err_wrap(err, "restore '%s' to %s", id, digest);
	*ret = json_pack("{s:s,s:s,s:f}", "environment_id", id, "snapshot_id", digest, "restore_ms",
			 now_ms() - t0);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}

_public_ int sbx_snapshot_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	_cleanup_strv_free_ char **all = NULL, **refs = NULL;
	if (store_snapshot_list(ctx->root, &all, err) < 0)
		return -1;
	(void)store_ref_list(ctx->root, &refs, NULL);
	json_t *a = json_array();
	for (char **p = all; p && *p; p++) {
		_cleanup_snapshot_ store_snapshot *s = NULL;
		if (store_snapshot_read(ctx->root, *p, &s, NULL) < 0)
			continue;
		json_t *labels = json_array();
		for (char **l = refs; l && *l; l++) {
			char d[STORE_DIGEST_SIZE];
			if (store_ref_get(ctx->root, *l, d, NULL) == 0 && streq(d, *p))
				json_array_append_new(labels, json_string(*l));
		}
		json_t *e = json_pack(
		    "{s:s,s:O,s:o,s:s?,s:s?,s:I,s:o,s:s?}", "snapshot_id", *p, "label",
		    json_array_size(labels) ? json_array_get(labels, 0) : json_null(), "labels", labels,
		    "parent", s->parent, "created_at", s->created_at, "size_bytes", (json_int_t)s->size_bytes,
		    "layers", json_from_strv((const char *const *)s->layers), "template", s->base_template);
		if (e)
			json_array_append_new(a, e);
	}
	*ret = json_pack("{s:o}", "snapshots", a);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
