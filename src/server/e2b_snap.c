/* E2B's snapshots, fork and metrics over sbx's snapshots and cgroup
 * figures (see e2b_snap.h). */
#include "server/e2b_snap.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "server/e2b_auth.h"
#include "server/e2b_reply.h"
#include "server/e2b_user.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"

#define MIB (1024 * 1024)
#define TIMEOUT_DEFAULT_S 300
#define TIMEOUT_MAX_S ((int64_t)30 * 24 * 3600)

enum {
	STATUS_CREATED = 201,
	STATUS_NO_CONTENT = 204,
	STATUS_CONFLICT = 409,
	STATUS_TOO_MANY_REQUESTS = 429,
};

/* One writer at a time of the snapshot records (read, merge, write). */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- replies (e2b_reply.h) ------------------------------------------------------------ */

/* E2B's error body, as an element of fork's answer. */
static json_t *error_json(unsigned status, const char *msg)
{
	return json_pack("{s:i,s:s}", "code", (int)status, "message", msg);
}

static unsigned status_of(const sbx_err *e)
{
	switch (sbx_err_code(e)) {
	case SBX_E_NOT_FOUND:
		return HTTP_STATUS_NOT_FOUND;
	case SBX_E_INVALID_ARGUMENT:
		return HTTP_STATUS_BAD_REQUEST;
	case SBX_E_LIMIT_EXCEEDED:
		return STATUS_TOO_MANY_REQUESTS;
	case SBX_E_CONFLICT:
		return STATUS_CONFLICT;
	case SBX_E_UNAVAILABLE:
		return HTTP_STATUS_SERVICE_UNAVAILABLE;
	default:
		return HTTP_STATUS_INTERNAL_SERVER_ERROR;
	}
}

static http_result reply_sbx_error(http_request *req, const char *what, const sbx_err *e)
{
	return e2b_reply_error(req, status_of(e), "%s: %s", what, sbx_err_message(e));
}

static http_result reply_not_found(http_request *req, const char *id)
{
	return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "sandbox '%.64s' not found", id);
}

/* ---- the sandbox ----------------------------------------------------------------------- */

/* Sandbox id's record and sbx_env_inspect of exactly that environment:
 * 0; -ENOENT (not an E2B sandbox, or gone); -1 with *err. */
static int sandbox_get(const e2b_plane *p, const char *id, e2b_record *rec, json_t **info, sbx_err **err)
{
	if (!e2b_id_valid(id) || !e2b_store_get(p->store, id, rec))
		return -ENOENT;
	sbx_err *e = NULL;
	if (sbx_env_inspect(p->ctx, id, info, &e) < 0) {
		e2b_record_clear(rec);
		if (sbx_err_code(e) == SBX_E_NOT_FOUND) {
			sbx_err_free(e);
			return -ENOENT;
		}
		*err = e;
		return -1;
	}
	const char *eid = json_str(*info, "environment_id");
	if (!eid || !streq(eid, id)) { /* a prefix or a name matched: not this id */
		json_decref(TAKE_PTR(*info));
		e2b_record_clear(rec);
		return -ENOENT;
	}
	return 0;
}

int e2b_plane_sandbox(const e2b_plane *p, const char *id, e2b_record *rec, json_t **info, sbx_err **err)
{
	return sandbox_get(p, id, rec, info, err);
}

/* sandbox_get, or the reply that says why not in *ret. */
static bool sandbox_or_reply(http_request *req, const e2b_plane *p, const char *id, e2b_record *rec,
			     json_t **info, http_result *ret)
{
	_cleanup_err_ sbx_err *e = NULL;
	int r = sandbox_get(p, id, rec, info, &e);
	if (r == 0)
		return true;
	*ret = r == -ENOENT ? reply_not_found(req, id) : reply_sbx_error(req, "inspect", e);
	return false;
}

/* ---- metrics --------------------------------------------------------------------------- */

/* A query argument of whole seconds: 1 with it, 0 when absent, -1 when bad. */
static int query_seconds(http_request *req, const char *name, int64_t *ret)
{
	const char *s = http_request_query(req, name);
	if (!s || !*s)
		return 0;
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (*end || errno || v < 0)
		return -1;
	*ret = v;
	return 1;
}

json_t *e2b_metric_json(const e2b_plane *p, const json_t *a, const json_t *b, int cpus, int64_t t0,
			int64_t t1)
{
	json_t *u0 = json_object_get(a, "usage"), *u1 = json_object_get(b, "usage");
	int64_t c0 = json_int(u0, "cpu_usage_us", -1), c1 = json_int(u1, "cpu_usage_us", -1);
	double pct = 0;
	if (c0 >= 0 && c1 >= c0 && t1 > t0)
		pct = (double)(c1 - c0) / (double)((t1 - t0) * 1000) / cpus * 100.0;
	if (pct > 100)
		pct = 100;
	json_t *lim = json_object_get(b, "limits"), *disk = json_object_get(b, "disk");
	int64_t mem_total = json_int(lim, "memory_bytes", 0);
	if (mem_total <= 0)
		mem_total = (int64_t)sysconf(_SC_PHYS_PAGES) * (int64_t)sysconf(_SC_PAGESIZE);
	int64_t disk_total = json_int(disk, "size_bytes", json_int(disk, "quota_bytes", 0));
	int64_t disk_used = json_int(disk, "used_bytes", 0);
	struct statvfs sv;
	if (disk_total <= 0 && statvfs(sbx_ctx_root(p->ctx), &sv) == 0)
		disk_total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	char ts[32];
	clock_iso_ms(t1, ts);
	return json_pack("{s:s,s:I,s:i,s:f,s:I,s:I,s:I,s:I,s:I}", "timestamp", ts, "timestampUnix",
			 (json_int_t)(t1 / 1000), "cpuCount", cpus, "cpuUsedPct", pct, "memUsed",
			 (json_int_t)json_int(u1, "memory_bytes", 0), "memTotal", (json_int_t)mem_total,
			 "memCache", (json_int_t)0, "diskUsed", (json_int_t)disk_used, "diskTotal",
			 (json_int_t)disk_total);
}

/* One sample, now: sbx keeps no history. cpuUsedPct is the cgroup's CPU
 * time over E2B_CPU_WINDOW_MS, as a share of cpuCount CPUs; memUsed the
 * cgroup's memory.current (page cache included: memCache is not measured
 * apart, 0); disk the quota's figures, or without a quota the store's
 * filesystem size and 0 used. [] when the window [start, end] excludes
 * now, or the environment is not running (no cgroup to read). */
static http_result e2b_snap_metrics(http_request *req, const e2b_plane *p, const char *id)
{
	int64_t start = 0, end = INT64_MAX;
	if (query_seconds(req, "start", &start) < 0 || query_seconds(req, "end", &end) < 0)
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST,
				       "start, end: unix times in whole seconds");
	e2b_record rec;
	_cleanup_json_ json_t *a = NULL, *b = NULL;
	http_result no;
	if (!sandbox_or_reply(req, p, id, &rec, &a, &no))
		return no;
	int cpus = rec.cpu_count > 0 ? rec.cpu_count : 1;
	e2b_record_clear(&rec);
	int64_t t0 = clock_ms(CLOCK_REALTIME);
	json_t *out = json_array();
	if (!out)
		return HTTP_CLOSE;
	int64_t now_s = t0 / 1000;
	if (!json_object_get(a, "usage") || now_s + 1 < start || now_s - 1 > end)
		return e2b_reply_json(req, HTTP_STATUS_OK, out);
	http_request_busy(req, true);
	usleep(E2B_CPU_WINDOW_MS * 1000);
	http_request_busy(req, false);
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_inspect(p->ctx, id, &b, &e) < 0) {
		json_decref(out);
		return reply_sbx_error(req, "metrics", e);
	}
	int64_t t1 = clock_ms(CLOCK_REALTIME);
	json_array_append_new(out, e2b_metric_json(p, a, b, cpus, t0, t1));
	return e2b_reply_json(req, HTTP_STATUS_OK, out);
}

/* ---- the snapshot records -------------------------------------------------------------- */

/* $SBX_ROOT/e2b/snapshots (made, mode 0700, when mk). */
static char *records_dir(const e2b_plane *p, bool mk)
{
	char *d = NULL;
	if (asprintf(&d, "%s/e2b/snapshots", sbx_ctx_root(p->ctx)) < 0)
		return NULL;
	int r = mk ? fs_mkdir_mode(d, 0700) : 0;
	if (r < 0 && r != -EEXIST) {
		free(d);
		return NULL;
	}
	return d;
}

static char *record_path(const e2b_plane *p, const char *digest)
{
	_cleanup_free_ char *d = records_dir(p, false);
	char *path = NULL;
	if (!d || strncmp(digest, "sha256:", 7) != 0 || asprintf(&path, "%s/%s.json", d, digest + 7) < 0)
		return NULL;
	return path;
}

static json_t *record_read(const e2b_plane *p, const char *digest)
{
	_cleanup_free_ char *path = record_path(p, digest);
	_cleanup_free_ char *data = NULL;
	size_t len;
	if (!path || fs_read_file(path, 1 << 20, &data, &len) < 0)
		return NULL;
	json_t *j = json_loadb(data, len, 0, NULL);
	if (!json_is_object(j) || !json_str(j, "snapshotID") || !streq(json_str(j, "snapshotID"), digest)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

static int record_write(const e2b_plane *p, const json_t *j)
{
	_cleanup_free_ char *d = records_dir(p, true);
	_cleanup_free_ char *path = record_path(p, json_str(j, "snapshotID"));
	_cleanup_free_ char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	if (!d || !path || !s)
		return -ENOMEM;
	return fs_write_atomic(path, s, strlen(s), 0600);
}

static void record_remove(const e2b_plane *p, const char *digest)
{
	_cleanup_free_ char *path = record_path(p, digest);
	if (path)
		(void)unlink(path);
}

/* Every record (an array, newest first). */
static int by_created_desc(const void *a, const void *b)
{
	int64_t x = json_int(*(json_t *const *)a, "createdAt", 0),
		y = json_int(*(json_t *const *)b, "createdAt", 0);
	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(json_str(*(json_t *const *)a, "snapshotID"),
		      json_str(*(json_t *const *)b, "snapshotID"));
}

static json_t *records_all(const e2b_plane *p)
{
	json_t *out = json_array();
	_cleanup_free_ char *d = records_dir(p, false);
	DIR *dir = d ? opendir(d) : NULL;
	if (!out || !dir)
		return out;
	struct dirent *de;
	size_t n = 0, cap = 0;
	json_t **v = NULL;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name);
		if (len != 64 + 5 || !streq(de->d_name + 64, ".json"))
			continue;
		char digest[80];
		snprintf(digest, sizeof(digest), "sha256:%.64s", de->d_name);
		json_t *j = record_read(p, digest);
		if (!j)
			continue;
		if (n == cap) {
			json_t **nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));
			if (!nv) {
				json_decref(j);
				break;
			}
			v = nv;
		}
		v[n++] = j;
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), by_created_desc);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(out, v[i]);
	free(v);
	return out;
}

/* The names of record j that still name its snapshot (a label moves when a
 * later snapshot takes the name). */
static json_t *names_now(const e2b_plane *p, const json_t *j)
{
	json_t *out = json_array();
	const char *digest = json_str(j, "snapshotID");
	size_t i;
	json_t *n;
	json_array_foreach(json_object_get(j, "names"), i, n)
	{
		_cleanup_free_ char *d = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		if (json_is_string(n) && sbx_snapshot_resolve(p->ctx, json_string_value(n), &d, &e) == 0 &&
		    streq(d, digest))
			json_array_append(out, n);
	}
	return out;
}

static bool names_have(const json_t *names, const char *name)
{
	size_t i;
	json_t *n;
	json_array_foreach((json_t *)names, i,
			   n) if (json_is_string(n) && streq(json_string_value(n), name)) return true;
	return false;
}

static json_t *snapshot_info(const e2b_plane *p, const json_t *j)
{
	return json_pack("{s:s,s:o}", "snapshotID", json_str(j, "snapshotID"), "names", names_now(p, j));
}

/* Fork's own snapshots (records with "fork": true, never listed) go once no
 * sandbox made from them is left (sbx_snapshot_delete refuses till then). */
static void forks_sweep(const e2b_plane *p)
{
	_cleanup_json_ json_t *all = records_all(p);
	size_t i;
	json_t *j;
	json_array_foreach(all, i, j)
	{
		if (!json_is_true(json_object_get(j, "fork")))
			continue;
		_cleanup_err_ sbx_err *e = NULL;
		const char *digest = json_str(j, "snapshotID");
		if (sbx_snapshot_delete(p->ctx, digest, &e) == 0 || sbx_err_code(e) == SBX_E_NOT_FOUND)
			record_remove(p, digest);
	}
}

/* ---- snapshots ------------------------------------------------------------------------- */

static http_result e2b_snap_create(http_request *req, const e2b_plane *p, const char *id, const json_t *body)
{
	json_t *nj = json_object_get(body, "name");
	const char *name = NULL;
	if (nj && !json_is_null(nj)) {
		if (!json_is_string(nj) || !*(name = json_string_value(nj)))
			return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "name: a non-empty string");
	}
	e2b_record rec;
	_cleanup_json_ json_t *info = NULL;
	http_result no;
	if (!sandbox_or_reply(req, p, id, &rec, &info, &no))
		return no;
	e2b_record_clear(&rec);
	_cleanup_free_ char *d = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (name) {
		/* A name is an sbx label: never one that a templateID would resolve
		 * to something else first, nor a label of a snapshot not made here. */
		bool taken = streq(name, "base") || streq(name, "host") ||
			     streq(name, "code-interpreter-v1") || streq(name, "desktop") ||
			     sbx_template_resolve(p->ctx, name, &d, &e) == 0;
		sbx_err_free(TAKE_PTR(e));
		free(TAKE_PTR(d));
		if (!taken && sbx_snapshot_resolve(p->ctx, name, &d, &e) == 0) {
			_cleanup_json_ json_t *mine = record_read(p, d);
			taken = !mine || json_is_true(json_object_get(mine, "fork"));
		}
		sbx_err_free(TAKE_PTR(e));
		if (taken)
			return e2b_reply_error(
			    req, STATUS_CONFLICT,
			    "name '%.200s' already names an sbx template or snapshot not made "
			    "through the E2B API",
			    name);
	}
	_cleanup_json_ json_t *out = NULL;
	http_request_busy(req, true);
	int r = sbx_env_snapshot(p->ctx, id, name, &out, &e);
	http_request_busy(req, false);
	if (r < 0)
		return reply_sbx_error(req, "snapshot", e);
	const char *digest = json_str(out, "snapshot_id");
	if (!digest)
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR, "snapshot: no snapshot_id");
	pthread_mutex_lock(&snap_lock);
	json_t *j = record_read(p, digest);
	if (!j)
		j = json_pack("{s:s,s:s,s:I,s:[]}", "snapshotID", digest, "sandboxID", id, "createdAt",
			      (json_int_t)clock_ms(CLOCK_REALTIME), "names");
	if (j && name)
		json_array_append_new(json_object_get(j, "names"), json_string(name));
	int w = j ? record_write(p, j) : -ENOMEM;
	pthread_mutex_unlock(&snap_lock);
	if (w < 0) {
		json_decref(j);
		return e2b_reply_error(req, HTTP_STATUS_INTERNAL_SERVER_ERROR,
				       "snapshot %s: keep its record: %s", digest, strerror(-w));
	}
	http_result res = e2b_reply_json(req, STATUS_CREATED, snapshot_info(p, j));
	json_decref(j);
	return res;
}

static http_result handle_list(http_request *req, const e2b_plane *p)
{
	const char *sid = http_request_query(req, "sandboxID"), *name = http_request_query(req, "name");
	const char *lim_s = http_request_query(req, "limit"), *next = http_request_query(req, "nextToken");
	long limit = E2B_SNAP_LIST_LIMIT, offset = 0;
	char *end = NULL;
	if (lim_s &&
	    (limit = strtol(lim_s, &end, 10), !*lim_s || *end || limit < 1 || limit > E2B_SNAP_LIST_LIMIT))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "limit: a whole number from 1 to %d",
				       E2B_SNAP_LIST_LIMIT);
	if (next && (offset = strtol(next, &end, 10), !*next || *end || offset < 0))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "nextToken: not one this server gave");
	forks_sweep(p);
	_cleanup_json_ json_t *all = records_all(p);
	json_t *out = json_array();
	long seen = 0;
	bool more = false;
	size_t i;
	json_t *j;
	json_array_foreach(all, i, j)
	{
		if (!out)
			break;
		const char *digest = json_str(j, "snapshotID");
		_cleanup_free_ char *d = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		if (sbx_snapshot_resolve(p->ctx, digest, &d, &e) < 0) { /* deleted with sbx */
			if (sbx_err_code(e) == SBX_E_NOT_FOUND)
				record_remove(p, digest);
			continue;
		}
		if (json_is_true(json_object_get(j, "fork")) ||
		    (sid && *sid && !streq(json_str(j, "sandboxID") ?: "", sid)))
			continue;
		json_t *si = snapshot_info(p, j);
		bool named = !name || !*name || names_have(json_object_get(si, "names"), name);
		if (!named || seen++ < offset) {
			json_decref(si);
			continue;
		}
		if ((long)json_array_size(out) == limit) {
			json_decref(si);
			more = true;
			break;
		}
		json_array_append_new(out, si);
	}
	char tok[24];
	snprintf(tok, sizeof(tok), "%ld", offset + limit);
	return e2b_reply_json_paged(req, HTTP_STATUS_OK, out, more ? tok : NULL);
}

/* DELETE /templates/{id}: id is a snapshot's id or one of its names, of a
 * snapshot made here; anything else (an sbx template, another snapshot) is
 * not found. */
static http_result handle_delete(http_request *req, const e2b_plane *p, const char *ref)
{
	_cleanup_free_ char *d = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	_cleanup_json_ json_t *j = NULL;
	if (*ref && strlen(ref) <= E2B_TEMPLATE_MAX && !strchr(ref, '/') &&
	    sbx_snapshot_resolve(p->ctx, ref, &d, &e) == 0 && (j = record_read(p, d)) &&
	    !json_is_true(json_object_get(j, "fork"))) {
		/* the id itself, or a name it was given here */
		if (streq(ref, d) || names_have(json_object_get(j, "names"), ref)) {
			pthread_mutex_lock(&snap_lock);
			int r = sbx_snapshot_delete(p->ctx, d, &e);
			if (r == 0)
				record_remove(p, d);
			pthread_mutex_unlock(&snap_lock);
			if (r < 0)
				return reply_sbx_error(req, "delete snapshot", e);
			return http_respond(req, STATUS_NO_CONTENT, http_response_empty());
		}
	}
	return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "snapshot '%.200s' not found", ref);
}

http_result e2b_snap_route(http_request *req, const e2b_plane *p)
{
	if (streq(req->path, "/snapshots") && streq(req->method, "GET"))
		return handle_list(req, p);
	if (startswith(req->path, "/templates/") && streq(req->method, "DELETE"))
		return handle_delete(req, p, req->path + strlen("/templates/"));
	return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "no such E2B call: %.16s %.200s", req->method,
			       req->path);
}

/* ---- fork ------------------------------------------------------------------------------ */

static int random_bytes(uint8_t *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* A new sandbox from snapshot digest: its own environment, token and
 * record (the parent's template id, metadata and autoPause; its own
 * deadline, now + timeout_s). 0 with *ret filled (e2b_record_clear it). */
static int fork_one(const e2b_plane *p, const e2b_record *parent, const char *digest, int64_t timeout_s,
		    e2b_record *ret, sbx_err **err)
{
	e2b_record rec = {.started_ms = clock_ms(CLOCK_REALTIME), .auto_pause = parent->auto_pause};
	uint8_t rnd[E2B_TOKEN_ENTROPY];
	if (random_bytes(rnd, sizeof(rnd)) < 0)
		return err_set(err, SBX_E_INTERNAL, EIO, "cannot make a token (getrandom)");
	e2b_token_mint(rnd, rec.token);
	snprintf(rec.template_id, sizeof(rec.template_id), "%s", parent->template_id);
	rec.end_ms = rec.started_ms + timeout_s * 1000;
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.snapshot = digest;
	_cleanup_free_ char *id = NULL;
	if (sbx_env_create(p->ctx, &o, &id, NULL, err) < 0)
		return -1;
	snprintf(rec.id, sizeof(rec.id), "%s", id);
	_cleanup_json_ json_t *info = NULL;
	_cleanup_err_ sbx_err *ie = NULL;
	if (e2b_sandbox_marks(p->ctx, id, false, &ie) < 0) { /* over the parent's: told in the fork's logs */
		e2b_events_add(p->events, id, E2B_LOG_WARN, "sandbox marks not written",
			       (const char *const[]){"error", sbx_err_message(ie)}, 2);
		sbx_err_free(TAKE_PTR(ie));
	}
	rec.cpu_count = parent->cpu_count, rec.memory_mb = parent->memory_mb, rec.disk_mb = parent->disk_mb;
	if (sbx_env_inspect(p->ctx, id, &info, &ie) == 0) {
		json_t *lim = json_object_get(info, "limits");
		double cpus = json_real_value(json_object_get(lim, "cpus"));
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		rec.cpu_count = cpus > 0 ? (int)(cpus + 0.999) : (int)(ncpu > 0 ? ncpu : 1);
		rec.memory_mb = json_int(lim, "memory_bytes", 0) / MIB;
		rec.disk_mb = json_int(lim, "disk_bytes", 0) / MIB;
	}
	rec.metadata = json_deep_copy(parent->metadata ? parent->metadata : json_object());
	if (!rec.metadata || e2b_store_put(p->store, &rec, err) < 0) {
		e2b_record_clear(&rec);
		_cleanup_err_ sbx_err *e2 = NULL;
		(void)sbx_env_remove(p->ctx, id, &e2);
		return err && *err ? -1 : err_oom(err);
	}
	e2b_events_add(p->events, rec.id, E2B_LOG_INFO, "sandbox created",
		       (const char *const[]){"templateID", rec.template_id, "forkOf", parent->id}, 4);
	*ret = rec;
	return 0;
}

/* count sandboxes (1..E2B_FORK_MAX, default 1) from a snapshot of the
 * running one; each succeeds or fails on its own, as E2B's. */
static http_result e2b_snap_fork(http_request *req, const e2b_plane *p, const char *id, const json_t *body)
{
	json_t *cj = json_object_get(body, "count"), *tj = json_object_get(body, "timeout");
	int64_t count = 1, timeout_s = TIMEOUT_DEFAULT_S;
	if (cj && !json_is_null(cj) &&
	    (!json_is_integer(cj) || (count = json_integer_value(cj)) < 1 || count > E2B_FORK_MAX))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST, "count: a whole number from 1 to %d",
				       E2B_FORK_MAX);
	if (tj && !json_is_null(tj) &&
	    (!json_is_integer(tj) || (timeout_s = json_integer_value(tj)) < 0 || timeout_s > TIMEOUT_MAX_S))
		return e2b_reply_error(req, HTTP_STATUS_BAD_REQUEST,
				       "timeout: a whole number of seconds from 0 to %lld",
				       (long long)TIMEOUT_MAX_S);
	e2b_record parent;
	_cleanup_json_ json_t *info = NULL, *snap = NULL;
	http_result no;
	if (!sandbox_or_reply(req, p, id, &parent, &info, &no))
		return no;
	_cleanup_err_ sbx_err *e = NULL;
	http_request_busy(req, true);
	forks_sweep(p);
	int r = sbx_env_snapshot(p->ctx, id, NULL, &snap, &e);
	const char *digest = r == 0 ? json_str(snap, "snapshot_id") : NULL;
	json_t *out = json_array();
	if (digest) {
		/* The snapshot is the forks' base: kept (unlisted) while one lives. */
		_cleanup_json_ json_t *j =
		    json_pack("{s:s,s:s,s:I,s:[],s:b}", "snapshotID", digest, "sandboxID", id, "createdAt",
			      (json_int_t)clock_ms(CLOCK_REALTIME), "names", "fork", true);
		if (j)
			(void)record_write(p, j);
	}
	for (int64_t i = 0; digest && out && i < count; i++) {
		e2b_record rec;
		_cleanup_err_ sbx_err *fe = NULL;
		if (fork_one(p, &parent, digest, timeout_s, &rec, &fe) < 0) {
			char msg[1024];
			snprintf(msg, sizeof(msg), "fork: %s", sbx_err_message(fe));
			json_array_append_new(out,
					      json_pack("{s:o}", "error", error_json(status_of(fe), msg)));
			continue;
		}
		json_array_append_new(out, json_pack("{s:o}", "sandbox", e2b_sandbox_body(req, &rec)));
		e2b_record_clear(&rec);
	}
	if (digest)
		forks_sweep(p); /* every fork failed: the snapshot goes now */
	http_request_busy(req, false);
	e2b_record_clear(&parent);
	e2b_deadline_poke(p->deadline);
	if (r < 0) {
		json_decref(out);
		return reply_sbx_error(req, "fork: snapshot", e);
	}
	return e2b_reply_json(req, STATUS_CREATED, out);
}

http_result e2b_snap_op(http_request *req, const e2b_plane *p, const char *id, const char *op,
			const json_t *body)
{
	bool get = streq(req->method, "GET"), post = streq(req->method, "POST");
	if (get && streq(op, "metrics"))
		return e2b_snap_metrics(req, p, id);
	if (post && streq(op, "snapshots"))
		return e2b_snap_create(req, p, id, body);
	if (post && streq(op, "fork"))
		return e2b_snap_fork(req, p, id, body);
	return e2b_reply_error(req, HTTP_STATUS_NOT_FOUND, "no such E2B call: %.16s %.200s", req->method,
			       req->path);
}
