/* sbx_env_*: environments as the API sees them, the entry points on top
 * of src/api (docs/layout.md): a create that takes a warm pool's entry
 * first (else env_create.c), sbx run's exec and removal in one, list,
 * inspect, ps, gc and the egress log. State lives in
 * $SBX_ROOT/envs/<id>/state.json (written atomically); liveness is the
 * supervisor's flock on $SBX_RUN/<id>/lock. Starting and stopping a
 * supervisor are the core's (env_start.c, env_core.c). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/reclaim.h"
#include "api/trace_api.h"
#include "policy/egress_match.h"
#include "runtime/caps.h"
#include "runtime/cgroup.h"
#include "runtime/ctl_proto.h"
#include "runtime/devices.h"
#include "runtime/quota.h"
#include "runtime/runtime.h"
#include "runtime/startup_trace.h"
#include "runtime/user.h"
#include "util/fs.h"
#include "util/json.h"

_public_ int sbx_env_create(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings,
			    sbx_err **err)
{
	startup_mark("create: begin");
	if (pool_take(ctx, o, ret_id, ret_warnings) > 0) { /* a warm pool's entry (docs/warm.md) */
		pool_observe(ctx, o, true);
		return 0;
	}
	int r = env_create_cold(ctx, o, ret_id, ret_warnings, err);
	if (r == 0)
		pool_observe(ctx, o, false);
	return r;
}

/* A traced or deterministic run is trace.c's, any other exec.c's: both sit
 * below this entry point, and trace.c runs its command through exec.c. */
_public_ int sbx_env_exec(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *o, sbx_exec_result *ret,
			  sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (exec_opts_check(o, err) < 0 || sbx_env_resolve(ctx, ref, &id, err) < 0)
		return -1;
	if (o->version >= 2 && (o->trace || o->deterministic > 0))
		return trace_exec(ctx, id, o, ret, err);
	startup_mark("exec: begin");
	int r = exec_core(ctx, id, o, NULL, ret, err);
	startup_mark("exec: done");
	return r;
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
			stopped = env_stop_wait(ctx, id, x.sock);
			safe_close(x.sock);
		}
	}
	if (stopped == STOP_REMOVED) {
		devcg_remove(id);
		startup_mark("remove: files removed (by the supervisor, before its reply)");
	} else if (stopped != STOP_NOT_SEEN) {
		devcg_remove(id); /* as stop_supervisor after a "stopped" */
		(void)env_remove_stopped(ctx, id, stopped == STOP_LINGERING, ret_remove_err);
	} else
		remove_after_run(ctx, id, ret_remove_err);
	return r;
}

static json_t *summary(sbx_ctx *ctx, const char *id)
{
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	/* Pool entries are not listed: neither one whose state says so nor one
	 * still being created (hidden by its mark alone), which no lookup
	 * would find. */
	if (!env_visible(ctx, id) || env_record_read(ctx, id, &st) < 0 || st.pool)
		return NULL;
	bool live = env_is_live(ctx, id);
	const char *state = live ? "running" : "stopped";
	if (!st.state)
		state = live && !env_creator_gone(st.json) ? "creating" : "failed";
	else if (env_warm_state(ctx, id, live)) /* paused, suspended (docs/warm.md) */
		state = env_warm_state(ctx, id, live);
	json_t *s = json_pack("{s:s,s:s?,s:s,s:s?,s:s?,s:s?}", "environment_id", id, "name", st.name, "state",
			      state, "created_at", st.created_at, "snapshot_id", st.snapshot_id, "template",
			      st.template_spec);
	json_t *ports = json_object_get(st.json, "ports"); /* published (docs/ports.md) */
	if (s && json_array_size(ports) > 0)
		json_object_set(s, "ports", ports);
	return s;
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
					: streq(net, "internet")
					    ? "loopback only; egress through the sbx proxy to every public "
					      "host and port (internal addresses only by IP rule)"
					    : "loopback only"));
	if (st.network_allow)
		json_object_set(iso, "network_allow", st.network_allow);
	if (net_proxied(net)) {
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
		env_remove_files(ctx, *p, NULL);
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
	pool_gc_owned(ctx, removed); /* pools of a server that is gone */
	pool_gc(ctx, removed);	     /* entries of warm pools that are gone */
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
	if (!net_proxied(st.network))
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "environment '%s' has network '%s': only network allow and internet go through the "
		    "egress proxy, which keeps the log",
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
