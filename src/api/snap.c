/* Snapshots: sbx_env_snapshot, sbx_env_restore, sbx_snapshot_list (the
 * resolver and the template bases are snap_base.c's). The store (src/store)
 * does the content-addressed work; this file freezes, reads the
 * environment's writable layer, writes the manifest, and restarts
 * environments on snapshot layers. */
#include <ctype.h>
#include <dirent.h>
#include <sys/xattr.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/random.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/reclaim.h"
#include "api/snap_base.h"
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

static bool strv_same(char *const *a, char *const *b)
{
	size_t i = 0;
	for (; a && b && a[i] && b[i]; i++)
		if (!streq(a[i], b[i]))
			return false;
	return (!a || !a[i]) && (!b || !b[i]);
}

static bool str_same(const char *a, const char *b)
{
	return a == b || (a && b && streq(a, b));
}

/* The image config the environment was made with (docker commit keeps it). */
static char *image_config(const env_record *st)
{
	json_t *img = json_object_get(st->json, "image");
	return json_is_object(img) ? json_dumps(img, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

/* The environment's last snapshot, if it is the environment as it is now:
 * its writable layer is, entry by entry, what that snapshot captured
 * (snap_delta_unchanged: the incremental-snapshot index's lstat records,
 * none racy; docs/store.md "Incremental snapshots"), and what the manifest
 * takes from the record is the same (environment variables, user,
 * template, image config). Not frozen: a change can only move ctime
 * forward, so an entry that matches when the walk reaches it matched when
 * the walk began, and the state at that moment is the snapshot's; what
 * changes later is after the snapshot, as after any. The result JSON, or
 * NULL where a snapshot must be taken. */
static json_t *unchanged_last(sbx_ctx *ctx, const char *id, const env_record *st, double t0)
{
	char p[4300], last[STORE_DIGEST_SIZE];
	snprintf(p, sizeof(p), "%s/envs/%s/upper", ctx->root, id);
	_cleanup_close_ int ufd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ufd < 0 || snap_delta_unchanged(ctx, id, st->json, ufd, NULL, last) != 1)
		return NULL;
	startup_mark("snapshot: the writable layer is the last snapshot's");
	_cleanup_snapshot_ store_snapshot *ps = NULL;
	if (store_snapshot_read(ctx->root, last, &ps, NULL) < 0)
		return NULL;
	startup_mark("snapshot: its manifest read");
	_cleanup_strv_free_ char **env = json_to_strv(st->env);
	_cleanup_free_ char *icfg = image_config(st);
	static char *empty[] = {NULL};
	if (!strv_same(ps->env, env ? env : empty) || !str_same(ps->user, st->user ?: "root") ||
	    !str_same(ps->base_template, st->template_spec) || !str_same(ps->config, icfg))
		return NULL;
	size_t nl = 0;
	while (ps->layers && ps->layers[nl])
		nl++;
	return json_pack("{s:s,s:I,s:I,s:I,s:f,s:s,s:b,s:o,s:b,s:b}", "snapshot_id", last, "size_bytes",
			 (json_int_t)ps->size_bytes, "new_bytes", (json_int_t)0, "files", (json_int_t)0,
			 "snapshot_ms", now_ms() - t0, "layer", nl ? ps->layers[nl - 1] : "", "frozen", false,
			 "layers", json_from_strv((const char *const *)ps->layers), "incremental", true,
			 "reused", true);
}

static int env_snapshot(sbx_ctx *ctx, const char *ref, const char *label, bool reuse, json_t **ret,
			sbx_err **err);

_public_ int sbx_env_snapshot(sbx_ctx *ctx, const char *ref, const char *label, json_t **ret, sbx_err **err)
{
	return env_snapshot(ctx, ref, label, false, ret, err);
}

int api_env_snapshot_or_last(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	return env_snapshot(ctx, ref, NULL, true, ret, err);
}

static int env_snapshot(sbx_ctx *ctx, const char *ref, const char *label, bool reuse, json_t **ret,
			sbx_err **err)
{
	double t0 = now_ms();
	_cleanup_free_ char *id = NULL;
	if (label && !store_label_valid(label))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid label '%s': use letters, digits, '.', '_' or '-' (at most 128), "
			       "not 'host' (the host template's name)",
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

	if (reuse && (*ret = unchanged_last(ctx, id, &st, t0))) {
		startup_mark("snapshot: unchanged since the last one");
		return 0;
	}

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
		frozen = json_bool(rep, CTL_F_FROZEN, false);
		/* Frozen, or (rootless) every process stopped: nothing writes. */
		quiesced = frozen || json_bool(rep, CTL_F_OK, false);
	} else
		quiesced = !env_is_live(ctx, id);

	startup_mark("snapshot: frozen");
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
	startup_mark("snapshot: captured");
	if (fc >= 0) {
		_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_THAW), *rep = NULL;
		if (json_send(fc, req, NULL, 0) == 0)
			(void)json_recv(fc, &rep, NULL, NULL);
	}
	startup_mark("snapshot: thawed");
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
	_cleanup_free_ char *icfg = image_config(&st);
	char envdir[4300];
	snprintf(envdir, sizeof(envdir), "%s/envs/%s", ctx->root, id);
	_cleanup_free_ char *osr = snap_os_release(envdir);
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
	snap.user = (char *)(st.user ?: "root"); /* a fork runs as it (env_create.c) */
	snap.os_release = osr;
	snap.packages = pkgs;
	snap.labels = label ? labels : empty;
	snap.created_at = created;
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
	startup_mark("snapshot: manifest built");
	char sid[STORE_DIGEST_SIZE];
	if (store_snapshot_write(ctx->root, &snap, sid, err) < 0)
		return err_wrap(err, "snapshot '%s'", id);
	snap_delta_commit(ctx, id, st.json, &cap, sid);
	startup_mark("snapshot: written");
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

/* Why the environment cannot restart in place (its supervisor kept, a new
 * init on the snapshot's layers: docs/runtime.md "Restore in place"), or
 * NULL if it can. What a new supervisor would build differently is here:
 * secrets (read again from the restoring process), plugins (on_create runs
 * again), CDI devices (resolved again), a disk quota or a pool entry's
 * tmpfs (the layer's mount is reset), the agent phase (its narrowed
 * network and limits), another template (other lower layers and mask).
 * Pure (api.h). */
const char *snap_in_place_refusal(const env_record *rec, const store_snapshot *snap)
{
	return rec->degraded || rec->ephemeral				? "no namespaces or no writable layer"
	       : rec->limits.disk_bytes					? "a disk quota"
	       : json_array_size(rec->secrets)				? "secrets"
	       : json_array_size(rec->plugins)				? "plugins"
	       : json_array_size(json_object_get(rec->json, "devices")) ? "devices"
	       : rec->pool						? "a pool entry"
	       : rec->phase && !streq(rec->phase, "setup")		? "the agent phase"
	       : snap->base_template && !streq(snap->base_template, rec->template_spec ?: "host")
		   ? "another template"
		   : NULL;
}

/* One reply on fd within 15 s (the supervisor's restart steps take
 * milliseconds; a dead one gives EOF): 0, or -1. */
static int restart_reply(int fd, const char *want, json_t **ret)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	json_t *m = NULL;
	if (poll(&p, 1, 15000) <= 0 || json_recv(fd, &m, NULL, NULL) <= 0)
		return -1;
	if (!streq(json_str(m, CTL_F_EV) ?: "", want)) {
		json_decref(m);
		return -1;
	}
	*ret = m;
	return 0;
}

/* In place, step 1 (ctl_proto.h CTL_OP_RESTART): every process ends and
 * init is reaped, so the writable layer is mounted nowhere. Returns the
 * connection that sends step 2, or -1 if the supervisor refused (nothing
 * changed) or is gone. */
static int restart_end(sbx_ctx *ctx, const char *id)
{
	_cleanup_close_ int fd = env_connect(ctx, id, NULL);
	_cleanup_json_ json_t *req = json_pack("{s:s}", CTL_F_OP, CTL_OP_RESTART), *rep = NULL;
	if (fd < 0 || !req || json_send(fd, req, NULL, 0) < 0 || restart_reply(fd, CTL_EV_ENDED, &rep) < 0)
		return -1;
	return TAKE_FD(fd);
}

/* In place, step 2: a new init on snap's layers (topmost first, as
 * env_start.c's setup_layers gives them to a new supervisor); *ret_info is the
 * supervisor's "restarted". -1 if it failed (the supervisor then stops). */
/* SBX_RESTORE_STANDBY=0: no standby init is built (docs/warm.md "Restore"). */
static bool restore_standby_enabled(void)
{
	const char *v = getenv("SBX_RESTORE_STANDBY");
	return !v || !streq(v, "0");
}

static int restart_start(sbx_ctx *ctx, int fd, const store_snapshot *snap, const char *digest,
			 json_t **ret_info)
{
	size_t n = 0;
	while (snap->layers && snap->layers[n])
		n++;
	/* standby: the supervisor builds the next restore's init meanwhile. */
	_cleanup_json_ json_t *req = json_pack("{s:s,s:[],s:s,s:b}", CTL_F_OP, CTL_OP_START, "layers",
					       "snapshot_id", digest, "standby", restore_standby_enabled());
	bool ok = req != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		_cleanup_free_ char *lp = store_layer_path(ctx->root, snap->layers[n - 1 - i]);
		ok = lp && json_array_append_new(json_object_get(req, "layers"), json_string(lp)) == 0;
	}
	if (!ok || json_send(fd, req, NULL, 0) < 0)
		return -1;
	return restart_reply(fd, CTL_EV_RESTARTED, ret_info);
}

/* upper/ and work/ again, empty, as env_start.c's create_on_disk makes them
 * (owned by the environment's root). 0 or -errno. */
static int remake_layer_dirs(sbx_ctx *ctx, const char *id, const env_record *rec)
{
	static const char *const subs[] = {"upper", "work"};
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		char p[4300];
		snprintf(p, sizeof(p), "%s/envs/%s/%s", ctx->root, id, subs[i]);
		int r = fs_mkdir_mode(p, 0755);
		if (r < 0 && r != -EEXIST)
			return r;
		if (!rec->rootless && chown(p, (uid_t)rec->host_uid, (gid_t)rec->host_uid) < 0)
			return -errno;
	}
	return 0;
}

/* The record of an in-place restart, as a new supervisor's create writes
 * it (env_start.c record_new, record_running), in two steps: the snapshot's
 * layers before the new init mounts them (a snapshot taken after a restore
 * whose client was killed must not read the old layers under the new
 * writable layer), still marked restoring; then, with info (the
 * supervisor's "restarted"), running with what the new init found. */
static void record_on_layers(json_t *st, const store_snapshot *snap, const char *digest)
{
	json_object_del(st, "creator");
	json_object_set_new(st, "snapshot_id", json_string(digest));
	json_object_set_new(st, "layers", json_from_strv((const char *const *)snap->layers));
	if (snap->config)
		json_object_set_new(st, "image", json_loads(snap->config, 0, NULL));
	else
		json_object_del(st, "image");
}

static void record_restarted(json_t *st, const json_t *info)
{
	json_object_del(st, "restoring_ms");
	json_object_set_new(st, "created_ms", json_integer(now_ms_real()));
	json_object_set_new(st, "state", json_string("running"));
	json_object_set_new(st, "landlock_abi", json_integer(json_int(info, CTL_F_LANDLOCK_ABI, 0)));
	json_object_set(st, "warnings", json_object_get(info, CTL_F_WARNINGS) ?: json_array());
}

/* The standby way (docs/warm.md "Restore"; ctl_proto.h
 * CTL_OP_RESTORE_STANDBY): the live supervisor holds an init ready on
 * this snapshot's layers, built after the last restore to it (so neither
 * the snapshot nor its layers need reading here); one request switches to
 * it (the old writable layer goes to the trash under names given here),
 * one record write follows. The layers do not change, so the
 * record is consistent at every point: a client killed before the switch
 * leaves the environment as it was, one killed after it leaves it restored
 * (its record then has the old created_ms). 0, or -1 when the supervisor
 * refused (nothing changed): the caller takes the two steps; -2 (err
 * set) when out of memory after the switch. */
static int restore_by_standby(sbx_ctx *ctx, const char *id, const env_record *rec, const char *digest,
			      double t0, json_t **ret, sbx_err **err)
{
	static const char *const subs[] = {"upper", "work"};
	char names[2][256];
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		char tag[128];
		uint32_t rnd = 0;
		(void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
		snprintf(tag, sizeof(tag), "%s-%s", id, subs[i]);
		if (reclaim_trash_name(tag, rnd, names[i], sizeof(names[i])) < 0)
			return -1;
	}
	/* Before the switch: the next snapshot cannot be a delta over the last. */
	snap_delta_forget(ctx, id);
	_cleanup_close_ int fd = env_connect(ctx, id, NULL);
	_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:[s,s]}", CTL_F_OP, CTL_OP_RESTORE_STANDBY,
					       "snapshot_id", digest, "trash", names[0], names[1]),
			      *info = NULL;
	if (fd < 0 || !req || json_send(fd, req, NULL, 0) < 0 ||
	    restart_reply(fd, CTL_EV_RESTARTED, &info) < 0)
		return -1;
	startup_mark("restore: switched to the standby init");
	const char *nv[2] = {names[0], names[1]};
	(void)reclaim_moved(ctx, nv, ARRAY_SIZE(nv));
	startup_mark("restore: old writable layer to the reclaimer");
	_cleanup_json_ json_t *st = env_record_format(rec);
	if (!st)
		return err_oom(err), -2;
	json_object_del(st, "creator"); /* snapshot_id, layers, image: this snapshot's already */
	record_restarted(st, info);
	(void)env_state_write(ctx, id, st);
	startup_mark("restore: done by the standby");
	/* standby_waited: it was still being built when the restore came. */
	*ret = json_pack("{s:s,s:s,s:f,s:b,s:b}", "environment_id", id, "snapshot_id", digest, "restore_ms",
			 now_ms() - t0, "standby", 1, "standby_waited",
			 json_bool(info, "standby_waited", false));
	return *ret ? 0 : (err_oom(err), -2);
}

_public_ int sbx_env_restore(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err)
{
	double t0 = now_ms();
	_cleanup_free_ char *id = NULL, *digest = NULL;
	if (sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	/* A digest is read (and its content checked) once, below. */
	if (store_digest_valid(snapshot) ? !(digest = strdup(snapshot))
					 : sbx_snapshot_resolve(ctx, snapshot, &digest, err) < 0)
		return digest ? -1 : err_oom(err);
	_cleanup_env_record_ env_record rec = {.uid_slot = -1};
	int r = env_record_read(ctx, id, &rec);
	if (r < 0)
		return err_errnum(err, r, "read state of '%s'", id);
	startup_mark("restore: state read");
	/* The standby way reads no snapshot: the environment is on this one's
	 * layers already, and the supervisor has a standby for it only if the
	 * last restore to it passed every check below (same template). */
	static const store_snapshot same = {0};
	if (restore_standby_enabled() && !rec.phase_switching && !snap_in_place_refusal(&rec, &same) &&
	    streq(rec.snapshot_id ?: "", digest) && env_is_live(ctx, id)) {
		r = restore_by_standby(ctx, id, &rec, digest, t0, ret, err);
		if (r != -1)
			return r < 0 ? -1 : 0;
	}
	_cleanup_snapshot_ store_snapshot *snap = NULL;
	if (store_snapshot_read(ctx->root, digest, &snap, err) < 0)
		return -1;
	for (char **l = snap->layers; l && *l; l++)
		if (!store_layer_exists(ctx->root, *l))
			return err_set(err, SBX_E_NOT_FOUND, ENOENT,
				       "layer %s of snapshot %s is missing from the store (run sbx fsck)", *l,
				       digest);
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
	startup_mark("restore: snapshot read");
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
	 * emptied and the environment starts again on the snapshot's layers:
	 * in place (the live supervisor starts a new init) where that builds
	 * what a new supervisor would, else with a new supervisor. */
	(void)env_state_write(ctx, id, st);
	startup_mark("restore: state read, marked restoring");
	_cleanup_close_ int rfd =
	    !snap_in_place_refusal(&rec, snap) && env_is_live(ctx, id) ? restart_end(ctx, id) : -1;
	if (rfd >= 0)
		startup_mark("restore: processes ended, supervisor kept");
	else {
		stop_supervisor(ctx, id);
		startup_mark("restore: old supervisor stopped");
		if (env_is_live(ctx, id))
			return err_set(err, SBX_E_INTERNAL, EBUSY, "environment '%s' did not stop", id);
	}
	/* The next snapshot cannot be a delta over the last one. */
	snap_delta_forget(ctx, id);
	char p[4300];
	/* A disk quota's image goes too: create formats a fresh one. */
	snprintf(p, sizeof(p), "%s/envs/%s", ctx->root, id);
	if (quota_reset(p, err) < 0)
		return err_wrap(err, "restore '%s'", id);
	/* Into the trash, removed in the background (api/reclaim.h): the
	 * restore does not wait for the old layer's size. */
	const char *subs[] = {"upper", "work"};
	char paths[2][4300], tags[2][64];
	const char *pv[2], *tv[2];
	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/envs/%s/%s", ctx->root, id, subs[i]);
		snprintf(tags[i], sizeof(tags[i]), "%s-%s", id, subs[i]);
		pv[i] = paths[i], tv[i] = tags[i];
	}
	r = reclaim_dirs(ctx, pv, tv, ARRAY_SIZE(subs));
	if (r < 0)
		return err_errnum(err, r, "empty the writable layer of '%s'", id);
	startup_mark("restore: writable layer emptied");
	if (rfd >= 0) {
		_cleanup_json_ json_t *info = NULL, *on = json_deep_copy(st);
		if (on)
			record_on_layers(on, snap, digest);
		if (on && env_state_write(ctx, id, on) == 0 && remake_layer_dirs(ctx, id, &rec) == 0 &&
		    restart_start(ctx, rfd, snap, digest, &info) == 0) {
			record_restarted(on, info);
			(void)env_state_write(ctx, id, on);
			startup_mark("restore: done in place");
			*ret = json_pack("{s:s,s:s,s:f}", "environment_id", id, "snapshot_id", digest,
					 "restore_ms", now_ms() - t0);
			return *ret ? 0 : err_oom(err);
		}
		/* The new init failed: its supervisor stops, a new one starts. */
		rfd = safe_close(rfd);
		stop_supervisor(ctx, id);
		if (env_is_live(ctx, id))
			return err_set(err, SBX_E_INTERNAL, EBUSY, "environment '%s' did not stop", id);
	}
	_cleanup_free_ char *nid = NULL;
	_cleanup_json_ json_t *w = NULL;
	env_create_req q = {.o = &o, .restore_state = st, .snap = snap, .snap_id = digest};
	if (env_create_impl(ctx, &q, &nid, &w, err) < 0)
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

_public_ int sbx_snapshot_delete(sbx_ctx *ctx, const char *ref, sbx_err **err)
{
	_cleanup_free_ char *digest = NULL;
	if (sbx_snapshot_resolve(ctx, ref, &digest, err) < 0)
		return -1;
	/* An environment started from it needs its manifest to start again
	 * (after a host restart, a suspend): refused while one exists. */
	_cleanup_strv_free_ char **ids = env_list_ids(ctx);
	for (char **i = ids; i && *i; i++) {
		_cleanup_json_ json_t *st = NULL;
		const char *sid = env_state_read(ctx, *i, &st) == 0 ? json_str(st, "snapshot_id") : NULL;
		if (sid && streq(sid, digest))
			return err_set(err, SBX_E_CONFLICT, EBUSY,
				       "snapshot %s: environment '%s' was started from it (remove it first)",
				       digest, *i);
	}
	/* The labels first: a label is never left naming a missing manifest. */
	_cleanup_strv_free_ char **refs = NULL;
	if (store_ref_list(ctx->root, &refs, err) < 0)
		return err_wrap(err, "delete snapshot %s", digest);
	for (char **l = refs; l && *l; l++) {
		char d[STORE_DIGEST_SIZE];
		if (store_ref_get(ctx->root, *l, d, NULL) < 0 || !streq(d, digest))
			continue;
		_cleanup_err_ sbx_err *e = NULL;
		if (store_ref_delete(ctx->root, *l, &e) < 0 && sbx_err_code(e) != SBX_E_NOT_FOUND) {
			if (err)
				*err = TAKE_PTR(e);
			return err_wrap(err, "delete snapshot %s", digest);
		}
	}
	if (store_snapshot_delete(ctx->root, digest, err) < 0)
		return err_wrap(err, "delete snapshot %s", digest);
	return 0;
}
