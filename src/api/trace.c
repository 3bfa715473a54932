/* Traced execution: `sbx exec --trace` and environment_execute {trace:true}.
 *
 * Order of a traced run:
 *  1. snapshot the environment: the trace names the state it started from;
 *  2. run the command with a recorder: the supervisor (outside) records
 *     every syscall of the environment's pid namespace with eBPF when it
 *     may (root), otherwise init runs the command under the ptrace engine
 *     in record mode (slower; said in the trace); with determinism on
 *     (default for traces) the ptrace engine also answers clocks,
 *     randomness, uname and stat times from a seeded, virtual source;
 *  3. store the event stream (zstd), stdin/stdout/stderr as blobs, a digest
 *     of the filesystem changes, and the manifest (trace_store.c).
 * The replay side is in replay.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "api/api.h"
#include "api/readset_io.h"
#include "api/trace_api.h"
#include "runtime/startup_trace.h"
#include "store/delta.h"
#include "store/layer.h"
#include "store/storefs.h"
#include "trace/determ_cpuid.h"
#include "trace/determ_tsc.h"
#include "trace/readset.h"
#include "trace/trace_format.h"
#include "trace/trace_store.h"
#include "trace/trace_read.h"
#include "trace/tree_digest.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"

#define TRACE_STDIN_MAX (64u << 20)
#define TRACE_EVENTS_MAX (1u << 30) /* uncompressed stream we keep in memory */
#define TRACE_TMPFS_LIST 256	    /* tmpfs writes listed by name in the manifest */
#define TRACE_FS_FILES_MAX 4096	    /* changed files whose contents enter the fs digest */

static int64_t now_ns_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double now_ms_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* An unlinked scratch file in the store's tmp/ (same filesystem as the
 * blobs; never visible under a name, so nothing is left after a crash). */
static int scratch_file(sbx_ctx *ctx, sbx_err **err)
{
	_cleanup_free_ char *tmp = store_fs_path(ctx->root, STORE_DIR_TMP);
	if (!tmp || store_fs_init(ctx->root, err) < 0)
		return err && *err ? -1 : err_errnum(err, ENOMEM, "store");
	int fd = open(tmp, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_errno(err, "create a scratch file in '%s'", tmp);
	return fd;
}

static int read_scratch(int fd, char **ret, size_t *ret_len, sbx_err **err)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return err_errno(err, "rewind trace file");
	int r = fd_read_all(fd, TRACE_EVENTS_MAX, ret, ret_len);
	if (r < 0)
		return err_errnum(err, -r, "read trace file");
	return 0;
}

/* Drops the records of processes that are the runtime's, not the
 * command's: init (pid 1), the engine that spawned the command, and what the
 * command's own process did before its first exec (the engine's set-up in
 * the child: signal resets, personality, affinity, the seccomp filter; or
 * init's, when no engine ran). pid: the engine's, or with engine false the
 * command's own (init spawned it directly). */
static void drop_runtime_records(char *buf, size_t *len, uint32_t pid, bool engine)
{
	if (*len < sizeof(struct trace_file_header))
		return;
	/* The command's processes: the engine's first child and what descends
	 * from it (init's own children, e.g. the pids a replay burns, are not). */
	uint32_t tree[4096];
	size_t n_tree = 0;
	bool exec_seen = false;
	size_t in = sizeof(struct trace_file_header), out = in;
	while (in + sizeof(struct trace_rec) <= *len) {
		struct trace_rec h;
		memcpy(&h, buf + in, sizeof(h));
		if (h.len < sizeof(h) || h.len % 8 || in + h.len > *len)
			break;
		bool mine = false;
		for (size_t i = 0; i < n_tree && !mine; i++)
			mine = tree[i] == h.pid;
		if (h.type == TR_FORK && h.len >= sizeof(struct trace_fork) && !mine) {
			struct trace_fork f;
			memcpy(&f, buf + in, sizeof(f));
			bool parent_mine =
			    n_tree == 0 ? (engine ? f.parent_pid == pid : h.pid == pid) : false;
			for (size_t i = 0; i < n_tree && !parent_mine; i++)
				parent_mine = tree[i] == f.parent_pid;
			if (parent_mine && n_tree < ARRAY_SIZE(tree))
				tree[n_tree++] = h.pid;
			mine = parent_mine;
		}
		bool keep = h.type == TR_LOST || mine;
		if (keep && n_tree && h.pid == tree[0] && !exec_seen) {
			/* A failed execve of the PATH search stays; the engine's set-up
			 * in the child before it goes. */
			bool is_execve = false;
			if (h.type == TR_SYSCALL && h.len >= sizeof(struct trace_syscall)) {
				struct trace_syscall sc;
				memcpy(&sc, buf + in, sizeof(sc));
				is_execve = sc.nr == SYS_execve || sc.nr == SYS_execveat;
			}
			if (h.type == TR_EXEC)
				exec_seen = true;
			keep = h.type == TR_FORK || h.type == TR_EXEC || is_execve;
		}
		if (keep) {
			memmove(buf + out, buf + in, h.len);
			out += h.len;
		}
		in += h.len;
	}
	*len = out;
}

/* With the eBPF recorder, the engine's stream adds only what it substituted
 * (TR_DETERM): the rest the recorder saw itself. */
static void keep_only_determ(char *buf, size_t *len)
{
	if (*len < sizeof(struct trace_file_header))
		return;
	size_t in = sizeof(struct trace_file_header), out = in;
	while (in + sizeof(struct trace_rec) <= *len) {
		struct trace_rec h;
		memcpy(&h, buf + in, sizeof(h));
		if (h.len < sizeof(h) || h.len % 8 || in + h.len > *len)
			break;
		if (h.type == TR_DETERM || h.type == TR_LOST) {
			memmove(buf + out, buf + in, h.len);
			out += h.len;
		}
		in += h.len;
	}
	*len = out;
}

static int put_blob(sbx_ctx *ctx, const void *data, size_t len, json_t **ret, sbx_err **err)
{
	char d[STORE_DIGEST_SIZE];
	if (store_blob_put(ctx->root, data ? data : "", data ? len : 0, d, err) < 0)
		return -1;
	*ret = json_pack("{s:s,s:I}", "digest", d, "size", (json_int_t)len);
	return *ret ? 0 : err_errnum(err, ENOMEM, "trace");
}

/* The merged stream of the two recorders; either may have written nothing
 * (no eBPF recorder ran; the engine had nothing to say). */
static int merge_streams(char *a, size_t alen, char *b, size_t blen, char **ret, size_t *ret_len,
			 sbx_err **err)
{
	bool ha = alen >= sizeof(struct trace_file_header), hb = blen >= sizeof(struct trace_file_header);
	if (ha && hb)
		return trace_merge(a, alen, b, blen, (void **)ret, ret_len, err);
	if (ha || hb) {
		char *src = ha ? a : b;
		size_t len = ha ? alen : blen;
		if (trace_check(src, len, NULL, err) < 0)
			return -1;
		if (!(*ret = malloc(len)))
			return err_errnum(err, ENOMEM, "trace");
		memcpy(*ret, src, len);
		*ret_len = len;
		return 0;
	}
	struct trace_file_header h = {.version = TRACE_VERSION, .arch = TRACE_ARCH_NATIVE};
	memcpy(h.magic, TRACE_MAGIC, 8);
	if (!(*ret = malloc(sizeof(h))))
		return err_errnum(err, ENOMEM, "trace");
	memcpy(*ret, &h, sizeof(h));
	*ret_len = sizeof(h);
	return 0;
}

int trace_stream_count(const char *buf, size_t len, trace_counts *ret, sbx_err **err)
{
	trace_reader rd;
	if (trace_read_init(&rd, buf, len, err) < 0)
		return -1;
	trace_counts c = {0};
	trace_ev ev;
	int r;
	while ((r = trace_read_next(&rd, &ev, err)) > 0) {
		c.records++;
		if (ev.type == TR_SYSCALL)
			c.syscalls++;
		else if (ev.type == TR_LOST)
			c.lost += ev.lost.count;
		else if (ev.type == TR_FORK && !(ev.flags & 1))
			c.processes++;
	}
	if (r < 0)
		return -1;
	*ret = c;
	return 0;
}

int trace_compress(const char *buf, size_t len, char **ret, size_t *ret_len, sbx_err **err)
{
	size_t cap = ZSTD_compressBound(len);
	_cleanup_free_ char *z = malloc(cap ? cap : 1);
	if (!z)
		return err_errnum(err, ENOMEM, "compress trace");
	size_t n = ZSTD_compress(z, cap, buf, len, 3);
	if (ZSTD_isError(n))
		return err_set(err, SBX_E_INTERNAL, EIO, "compress trace: %s", ZSTD_getErrorName(n));
	*ret = TAKE_PTR(z);
	*ret_len = n;
	return 0;
}

int trace_decompress(const char *buf, size_t len, char **ret, size_t *ret_len, sbx_err **err)
{
	unsigned long long want = ZSTD_getFrameContentSize(buf, len);
	if (want == ZSTD_CONTENTSIZE_ERROR || want == ZSTD_CONTENTSIZE_UNKNOWN || want > TRACE_EVENTS_MAX)
		return err_set(err, SBX_E_INTERNAL, EBADMSG,
			       "trace events: not a zstd frame of a known size");
	_cleanup_free_ char *out = malloc(want ? want : 1);
	if (!out)
		return err_errnum(err, ENOMEM, "decompress trace");
	size_t n = ZSTD_decompress(out, want, buf, len);
	if (ZSTD_isError(n) || n != want)
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "trace events: %s",
			       ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short frame");
	*ret = TAKE_PTR(out);
	*ret_len = n;
	return 0;
}

/* The writable layer is, by its index's stat records, what snapshot
 * captured (snap_delta_unchanged: every entry's inode, ctime, mtime, size,
 * mode, owner and links as then; ctime cannot be set from user space and
 * changes with every write, chmod, chown, xattr change, link and rename).
 * Then the diff against snapshot is empty, and reading both trees to find
 * that out would cost as much as the files they hold. */
static bool fs_unchanged_since(sbx_ctx *ctx, const char *ref, const char *snapshot)
{
	_cleanup_free_ char *id = NULL;
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (getenv("SBX_TRACE_FULL_DIGEST") || sbx_env_resolve(ctx, ref, &id, NULL) < 0 ||
	    env_record_read(ctx, id, &st) < 0 || st.ephemeral || st.degraded)
		return false;
	char p[4300];
	snprintf(p, sizeof(p), "%s/envs/%s/upper", ctx->root, id);
	_cleanup_close_ int ufd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return ufd >= 0 && snap_delta_unchanged(ctx, id, st.json, ufd, snapshot, NULL) == 1;
}

/* What api_env_diff_meta gives where nothing changed. */
static json_t *empty_diff(void)
{
	char dg[STORE_DIGEST_SIZE];
	if (store_digest_buf("", 0, dg, NULL) < 0)
		return NULL;
	return json_pack("{s:[],s:[],s:[],s:[],s:s}", "added", "modified", "deleted", "meta", "meta_digest",
			 dg);
}

/* A digest of what the command changed in the filesystem, relative to the
 * snapshot it started from: every added/modified/deleted path and, for up
 * to TRACE_FS_FILES_MAX changed regular files, a digest of the content (read
 * through init, inside the walls); and meta_digest, what every changed
 * entry is (api_env_diff_meta: mode, owner, xattrs, all bytes). Times are
 * not part of either. */
int trace_fs_digest(sbx_ctx *ctx, const char *id, const char *snapshot, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *d = NULL;
	if (fs_unchanged_since(ctx, id, snapshot)) {
		startup_mark("trace: fs unchanged since the snapshot (stat only)");
		if (!(d = empty_diff()))
			return err_errnum(err, ENOMEM, "filesystem changes");
	} else if (api_env_diff_meta(ctx, id, snapshot, &d, err) < 0)
		return err_wrap(err, "filesystem changes");
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return -1;
	static const char *const kinds[] = {"added", "modified", "deleted"};
	size_t files = 0, changes = 0;
	json_t *paths = json_array();
	for (size_t k = 0; k < 3; k++) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(d, kinds[k]), i, p)
		{
			const char *path = json_string_value(p);
			if (!path)
				continue;
			changes++;
			if (json_array_size(paths) < 256)
				json_array_append_new(paths, json_sprintf("%c %s", kinds[k][0] - 32, path));
			char line[64];
			snprintf(line, sizeof(line), "%c ", kinds[k][0]);
			(void)store_hasher_update(h, line, strlen(line), NULL);
			(void)store_hasher_update(h, path, strlen(path) + 1, NULL);
			if (k == 2 || files >= TRACE_FS_FILES_MAX)
				continue;
			_cleanup_free_ char *data = NULL;
			size_t len = 0;
			int64_t size = 0;
			bool trunc = false;
			_cleanup_err_ sbx_err *e = NULL;
			char cd[STORE_DIGEST_SIZE] = "";
			if (sbx_env_read_file(ctx, id, path, 256 << 20, &data, &len, &size, &trunc, &e) ==
			    0) {
				files++;
				(void)store_digest_buf(data, len, cd, NULL);
			} else
				snprintf(cd, sizeof(cd), "not-a-file:%s", sbx_code_name(sbx_err_code(e)));
			(void)store_hasher_update(h, cd, strlen(cd) + 1, NULL);
		}
	}
	char dg[STORE_DIGEST_SIZE];
	if (store_hasher_final(h, dg, err) < 0) {
		json_decref(paths);
		return -1;
	}
	/* meta_digest: every change's type, mode, owner, xattrs, target and all
	 * of its bytes (digest above: paths and the first files' contents, as
	 * traces recorded before it have it). */
	*ret = json_pack("{s:s,s:I,s:I,s:o,s:O?,s:O?}", "digest", dg, "changes", (json_int_t)changes,
			 "files_hashed", (json_int_t)files, "paths", paths, "meta_digest",
			 json_object_get(d, "meta_digest"), "meta", json_object_get(d, "meta"));
	return *ret ? 0 : err_errnum(err, ENOMEM, "trace");
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files the run created, truncated or renamed into on the environment's
 * tmpfs (/tmp, /dev/shm): no snapshot holds them and the filesystem digest
 * does not see them, but the environment's later commands do. Each as
 * {path, digest} (content read through init, "absent", or "not-a-file:…"),
 * sorted by path, at most TRACE_FS_FILES_MAX: {digest over all, count,
 * files: the first TRACE_TMPFS_LIST}. */
static json_t *tmpfs_writes(sbx_ctx *ctx, const char *id, const char *events, size_t len, const char *cwd)
{
	readset rs = {0};
	if (readset_derive(events, len, cwd, &rs, NULL) < 0)
		return NULL;
	json_t *out = json_array();
	char **paths = calloc(rs.n_written + 1, sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; paths && i < rs.n_written && n < TRACE_FS_FILES_MAX; i++)
		if (startswith(rs.written[i], "/tmp/") || startswith(rs.written[i], "/dev/shm/"))
			paths[n++] = rs.written[i];
	if (n)
		qsort(paths, n, sizeof(char *), strcmp_ptr);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(NULL);
	size_t files = 0;
	for (size_t i = 0; out && h && paths && i < n; i++) {
		if (i && streq(paths[i], paths[i - 1]))
			continue;
		_cleanup_free_ char *data = NULL;
		size_t dlen = 0;
		int64_t size = 0;
		bool trunc = false;
		_cleanup_err_ sbx_err *e = NULL;
		char cd[STORE_DIGEST_SIZE + 40] = "";
		if (sbx_env_read_file(ctx, id, paths[i], 256 << 20, &data, &dlen, &size, &trunc, &e) == 0)
			(void)store_digest_buf(data, dlen, cd, NULL);
		else if (sbx_err_code(e) == SBX_E_NOT_FOUND)
			snprintf(cd, sizeof(cd), "absent");
		else
			snprintf(cd, sizeof(cd), "not-a-file:%s", sbx_code_name(sbx_err_code(e)));
		if (trunc)
			snprintf(cd + strlen(cd), sizeof(cd) - strlen(cd), " (first 256 MiB of %lld)",
				 (long long)size);
		(void)store_hasher_update(h, paths[i], strlen(paths[i]) + 1, NULL);
		(void)store_hasher_update(h, cd, strlen(cd) + 1, NULL);
		if (files++ < TRACE_TMPFS_LIST) /* the first ones, by name, for a divergence's report */
			json_array_append_new(out, json_pack("{s:s,s:s}", "path", paths[i], "digest", cd));
	}
	free(paths);
	readset_free(&rs);
	char dg[STORE_DIGEST_SIZE];
	if (!paths || !h || store_hasher_final(h, dg, NULL) < 0) {
		json_decref(out);
		return NULL;
	}
	return json_pack("{s:s,s:I,s:o}", "digest", dg, "count", (json_int_t)files, "files", out);
}

/* Where init starts the command (init.c): the given cwd, else /root (a
 * degraded environment's home is init's to choose: unknown here, so paths
 * relative to it are left out of the read set). */
static const char *command_cwd(const sbx_exec_opts *o, const env_record *st)
{
	if (o->cwd && *o->cwd)
		return o->cwd;
	return st->degraded ? NULL : "/root";
}

static void set_result_json(json_t *res, const sbx_exec_result *r)
{
	json_object_set_new(res, "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
	json_object_set_new(res, "signal", json_integer(r->signal));
	json_object_set_new(res, "timed_out", json_boolean(r->timed_out));
	json_object_set_new(res, "oom_killed", json_boolean(r->oom_killed));
	json_object_set_new(res, "duration_ms", json_integer(r->duration_ms));
}

int trace_run(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, const trace_params *tp,
	      trace_outcome *out, sbx_exec_result *ret, sbx_err **err)
{
	double t0 = now_ms_mono();
	if (o->tty)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "a traced command cannot run on a terminal (-t): terminal input is not replayable");
	/* rdtsc_trapped: false where the machine ignores PR_SET_TSC (determ_tsc.h):
	 * rdtsc then reads the real counter, so a replay may diverge on it. Probed
	 * (in a forked child, once) before this run holds anything on the heap:
	 * under valgrind the child's exit checks its copy of the heap for leaks,
	 * where what this function held only in registers at the fork looks lost. */
	bool tsc_trapped = tp->deterministic && determ_tsc_traps();
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	if (env_record_read(ctx, id, &st) < 0)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment: '%s'", id);

	startup_mark("trace: begin");
	/* 1. The state the run starts from. */
	_cleanup_free_ char *snap = NULL;
	if (tp->snapshot_id) {
		snap = strdup(tp->snapshot_id);
	} else {
		_cleanup_json_ json_t *sj = NULL;
		if (api_env_snapshot_or_last(ctx, id, &sj, err) < 0)
			return err_wrap(err, "trace: snapshot the environment first");
		snap = strdup(json_str(sj, "snapshot_id") ?: "");
	}
	if (!snap)
		return err_errnum(err, ENOMEM, "trace");

	startup_mark("trace: snapshot taken");
	/* 2. stdin is an input of the run: it is stored, so read it all first. */
	_cleanup_free_ char *in_buf = NULL;
	size_t in_len = 0;
	bool have_stdin = false;
	if (o->stdin_fd >= 0) {
		int r = fd_read_all(o->stdin_fd, TRACE_STDIN_MAX, &in_buf, &in_len);
		if (r < 0)
			return err_errnum(err, -r, "trace: read stdin (at most %u MiB)",
					  TRACE_STDIN_MAX >> 20);
		have_stdin = true;
	} else if (o->stdin_data) {
		in_buf = malloc(o->stdin_len + 1);
		if (!in_buf)
			return err_errnum(err, ENOMEM, "trace");
		memcpy(in_buf, o->stdin_data, o->stdin_len);
		in_len = o->stdin_len;
		have_stdin = true;
	}

	/* Inputs from outside the snapshot: volumes, by content digest. */
	_cleanup_json_ json_t *inputs = json_array();
	size_t vi;
	json_t *vol;
	json_array_foreach(st.volumes, vi, vol)
	{
		char vd[STORE_DIGEST_SIZE];
		uint64_t entries = 0;
		_cleanup_err_ sbx_err *ve = NULL;
		const char *host = json_str(vol, "host") ?: "";
		json_t *one = json_pack("{s:s,s:s,s:b}", "host", host, "path", json_str(vol, "path") ?: "",
					"readonly", json_bool(vol, "readonly", false));
		if (trace_tree_digest(host, vd, &entries, &ve) == 0) {
			json_object_set_new(one, "digest", json_string(vd));
			json_object_set_new(one, "entries", json_integer((json_int_t)entries));
		} else
			json_object_set_new(one, "error", json_string(sbx_err_message(ve)));
		json_array_append_new(inputs, one);
	}

	startup_mark("trace: volumes digested");
	/* 3. Where the recorders write. The eBPF recorder's drain thread writes
	 *    as fast as the command makes syscalls (~100 bytes each), on the
	 *    command's CPUs: to memory, not through the store's filesystem. */
	_cleanup_close_ int bpf_out = memfd_create("sbx-trace", MFD_CLOEXEC);
	if (bpf_out < 0)
		return err_errno(err, "trace: memfd_create");
	_cleanup_close_ int det_out = scratch_file(ctx, err);
	if (det_out < 0)
		return -1;
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return err_errno(err, "pipe");
	_cleanup_close_ int det_rd = pp[0], det_wr = pp[1];

	bool det = tp->deterministic;
	uint64_t seed = tp->seed;
	if (!tp->replay && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		return err_errno(err, "getrandom");
	int64_t epoch = tp->replay ? tp->epoch_ns : now_ns_real();
	/* The environment's own host name: uname, $HOSTNAME and /proc agree, and
	 * the replay's environment is created with the same one. */
	const char *hostname = tp->hostname ? tp->hostname : st.hostname ?: "sbx";

	/* Inode numbers are virtual in every deterministic recording; a trace
	 * from before they were replays with the real ones, as it recorded. */
	bool inodes = det && (tp->replay ? tp->inodes : true);
	_cleanup_json_ json_t *fields =
	    json_pack("{s:{s:b,s:I,s:I,s:s,s:I,s:b}}", "trace", "deterministic", det, "epoch_ns",
		      (json_int_t)epoch, "seed", (json_int_t)seed, "hostname", hostname, "first_pid",
		      (json_int_t)tp->first_pid, "inodes", inodes);
	if (!fields)
		return err_errnum(err, ENOMEM, "trace");
	if (tp->recorder)
		json_object_set_new(json_object_get(fields, "trace"), "recorder", json_string(tp->recorder));
	exec_extra x = {.req_fields = fields,
			.fds = {det_wr, bpf_out},
			.fd_names = {"trace_fd", "bpf_fd"},
			.n_fds = 2,
			.close_after_send = 1u << 0,
			.trace_rd = det_rd,
			.trace_out = det_out};
	sbx_exec_opts so = *o;
	so.capture = true;
	so.stdin_fd = -1;
	so.stdin_data = have_stdin ? in_buf : NULL;
	so.stdin_len = in_len;
	sbx_exec_result res = {0};
	det_wr = -1; /* exec_core closes it once sent */
	int r = exec_core(ctx, id, &so, &x, &res, err);
	safe_close(x.fds[0]); /* if it was never sent */
	_cleanup_json_ json_t *started = x.started, *exitm = x.exit;
	startup_mark("trace: command done");
	if (r < 0)
		return -1;

	/* 4. The event stream: the eBPF recorder's (if it ran) and the
	 *    engine's, merged by time. */
	_cleanup_free_ char *bbuf = NULL, *dbuf = NULL, *merged = NULL, *z = NULL;
	size_t blen = 0, dlen = 0, mlen = 0, zlen = 0;
	_cleanup_json_ json_t *ev = NULL, *outj = NULL, *errj = NULL, *inj = NULL, *fsj = NULL, *m = NULL;
	_cleanup_json_ json_t *read_set = NULL, *vol_writes = NULL;
	_cleanup_err_ sbx_err *rs_err = NULL;
	trace_counts counts = {0};
	json_t *tinfo = json_object_get(exitm, "trace");
	const char *recorder = json_str(started, "recorder") ?: "ptrace";
	uint32_t spawned = (uint32_t)json_int(started, "pid", 0);
	/* Without an engine (the eBPF recorder alone) the command is init's own
	 * child: the manifest gives its pid instead. A replay runs the engine and
	 * does not reach that pid: as before, a recording without determinism
	 * may differ from its replay in pids (t_replay_without_determinism_diverges). */
	bool engine = json_bool(started, "engine", true);
	uint32_t engine_pid = engine ? spawned : 0, command_pid = engine ? 0 : spawned;
	if (read_scratch(bpf_out, &bbuf, &blen, err) < 0 || read_scratch(det_out, &dbuf, &dlen, err) < 0)
		goto fail;
	drop_runtime_records(bbuf, &blen, spawned, engine);
	if (streq(recorder, "bpf"))
		keep_only_determ(dbuf, &dlen);
	if (merge_streams(bbuf, blen, dbuf, dlen, &merged, &mlen, err) < 0)
		goto fail;
	if (trace_stream_count(merged, mlen, &counts, err) < 0)
		goto fail;
	startup_mark("trace: streams merged");
	/* The files it read from outside its snapshot, digested now (readset_io.c). */
	double t_rs = now_ms_mono();
	/* Without one (an unreadable layer, a malformed stream) the trace is still
	 * recorded: its replay falls back to whole-volume digests. */
	if (readset_record(ctx, id, snap, &st, merged, mlen, command_cwd(o, &st), &read_set, &vol_writes,
			   &rs_err) < 0)
		read_set = vol_writes = NULL;
	t_rs = now_ms_mono() - t_rs;
	startup_mark("trace: read set");
	if (trace_compress(merged, mlen, &z, &zlen, err) < 0)
		goto fail;

	startup_mark("trace: compressed");
	/* 5. Blobs and the result's filesystem digest. */
	if (put_blob(ctx, z, zlen, &ev, err) < 0 ||
	    put_blob(ctx, res.stdout_buf, res.stdout_len, &outj, err) < 0 ||
	    put_blob(ctx, res.stderr_buf, res.stderr_len, &errj, err) < 0 ||
	    (have_stdin && put_blob(ctx, in_buf, in_len, &inj, err) < 0))
		goto fail;
	startup_mark("trace: blobs stored");
	if (trace_fs_digest(ctx, id, snap, &fsj, err) < 0)
		goto fail;
	startup_mark("trace: fs digest");
	json_t *tw = tmpfs_writes(ctx, id, merged, mlen, command_cwd(o, &st));
	if (tw)
		json_object_set_new(fsj, "tmpfs_writes", tw);
	startup_mark("trace: tmpfs writes");
	json_object_set_new(ev, "compression", json_string("zstd"));
	json_object_set_new(ev, "uncompressed_size", json_integer((json_int_t)mlen));
	json_object_set_new(ev, "records", json_integer((json_int_t)counts.records));
	json_object_set_new(ev, "syscalls", json_integer((json_int_t)counts.syscalls));
	json_object_set_new(ev, "processes", json_integer((json_int_t)counts.processes));
	json_object_set_new(ev, "lost", json_integer((json_int_t)counts.lost));
	json_object_set_new(ev, "recorder", json_string(recorder));
	if (json_str(tinfo, "error"))
		json_object_set_new(ev, "recorder_error", json_string(json_str(tinfo, "error")));
	json_object_set_new(outj, "truncated", json_boolean(res.stdout_truncated));
	json_object_set_new(errj, "truncated", json_boolean(res.stderr_truncated));

	char created[32];
	time_t now = time(NULL);
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	json_t *cmd = json_pack("{s:o,s:o,s:s,s:I,s:O}", "argv", json_from_strv(o->argv), "env",
				json_from_strv(o->env), "cwd", o->cwd ? o->cwd : "", "timeout_ms",
				(json_int_t)o->timeout_ms, "stdin", inj ? inj : json_null());
	json_t *envj = json_pack("{s:s,s:O?,s:O,s:s?,s:O?}", "environment_id", id, "env", st.env, "volumes",
				 inputs, "network", st.network, "network_allow", st.network_allow);
	/* Who ran it (this exec's user, else the environment's) and what a root
	 * command held: a replay runs the same identity. */
	const char *tuser = o->version >= 3 && o->user ? o->user : st.user;
	if (cmd && tuser)
		json_object_set_new(cmd, "user", json_string(tuser));
	if (envj && st.capabilities)
		json_object_set(envj, "capabilities", st.capabilities);
	/* rdrand_visible: the CPU offers rdrand/rdseed and the engine does not
	 * hide them (determ_cpuid.h): a program may read the hardware generator. */
	json_t *detj =
	    json_pack("{s:b,s:I,s:I,s:s,s:I,s:I,s:b,s:b,s:b}", "enabled", det, "epoch_ns", (json_int_t)epoch,
		      "seed", (json_int_t)seed, "hostname", hostname, "engine_pid", (json_int_t)engine_pid,
		      "command_pid", (json_int_t)command_pid, "rdtsc_trapped", tsc_trapped, "rdrand_visible",
		      det && determ_cpu_has_rdrand(), "inodes", inodes);
	json_t *resj = json_pack("{s:O,s:O,s:O}", "stdout", outj, "stderr", errj, "fs", fsj);
	if (resj)
		set_result_json(resj, &res);
	m = json_pack("{s:i,s:s,s:s,s:o,s:o,s:o,s:O,s:o,s:f}", "schema", TRACE_SCHEMA, "snapshot_id", snap,
		      "created_at", created, "command", cmd, "environment", envj, "determinism", detj,
		      "events", ev, "result", resj, "record_ms", now_ms_mono() - t0);
	if (!m) {
		err_errnum(err, ENOMEM, "trace manifest");
		goto fail;
	}
	if (tp->replay_of)
		json_object_set_new(m, "replay_of", json_string(tp->replay_of));
	if (read_set) {
		json_object_set(m, "read_set", read_set);
		json_object_set(m, "volume_writes", vol_writes);
		json_object_set_new(m, "read_set_ms", json_real(t_rs));
	} else
		json_object_set_new(m, "read_set_error", json_string(sbx_err_message(rs_err)));
	char tid[STORE_DIGEST_SIZE];
	if (trace_store_put(ctx->root, m, tid, err) < 0)
		goto fail;
	startup_mark("trace: manifest stored");
	res.trace_id = strdup(tid);
	res.trace_lost = counts.lost;
	if (out) {
		out->manifest = json_incref(m);
		memcpy(out->trace_id, tid, sizeof(tid));
		out->events = TAKE_PTR(merged);
		out->events_len = mlen;
	}
	if (!o->capture) {
		free(res.stdout_buf);
		free(res.stderr_buf);
		res.stdout_buf = res.stderr_buf = NULL;
		res.stdout_len = res.stderr_len = 0;
	}
	*ret = res;
	return 0;
fail:
	sbx_exec_result_free(&res);
	return err_wrap(err, "trace");
}

int trace_exec(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, sbx_exec_result *ret, sbx_err **err)
{
	trace_params tp = {.deterministic = o->deterministic != 0};
	if (o->trace)
		return trace_run(ctx, id, o, &tp, NULL, ret, err);
	/* --deterministic alone: the same controls, nothing recorded. */
	if (o->tty)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "a deterministic command cannot run on a terminal (-t)");
	uint64_t seed;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		return err_errno(err, "getrandom");
	_cleanup_json_ json_t *fields =
	    json_pack("{s:{s:b,s:I,s:I,s:s}}", "trace", "deterministic", 1, "epoch_ns",
		      (json_int_t)now_ns_real(), "seed", (json_int_t)seed, "hostname", "sandbox");
	if (!fields)
		return err_errnum(err, ENOMEM, "deterministic exec");
	exec_extra x = {.req_fields = fields, .trace_rd = -1, .trace_out = -1};
	int r = exec_core(ctx, id, o, &x, ret, err);
	json_decref(x.started);
	json_decref(x.exit);
	return r;
}
