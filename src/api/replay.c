/* sbx replay TRACE / environment_replay: re-run a recorded command from the
 * snapshot it started from, under determinism controls, and report MATCH or
 * the first divergence.
 *
 * Order of the checks, which is also the order a divergence is reported in:
 *  1. inputs from outside the snapshot by digest: by default exactly the
 *     files the recording read from volumes and from the template's live
 *     lower tree (the manifest's read_set, readset_io.c), or with inputs
 *     "volumes" (and for traces without a read set) a digest of every
 *     volume; a changed input is reported by path and the command is not
 *     re-run (stdin is a recorded blob: it cannot change);
 *  2. the replay runs in a fresh environment created from the trace's
 *     snapshot with the recorded environment variables, volumes and network,
 *     the recorded clock epoch, random seed and hostname, and the same pids
 *     (init burns pids up to the recorded engine pid);
 *  3. exit status, stdout, stderr, the filesystem changes, the files the
 *     recording wrote to volumes (their contents after the run), then the
 *     normalized syscall sequence of each process (trace_norm). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/readset_io.h"
#include "api/trace_api.h"
#include "policy/egress_match.h"
#include "runtime/caps.h"
#include "store/layer.h"
#include "trace/trace_read.h"
#include "trace/trace_sys.h"
#include "trace/trace_view.h"
#include "trace/trace_store.h"
#include "trace/tree_digest.h"
#include "util/json.h"

#define REPLAY_BLOB_MAX (1u << 30)
#define REPLAY_TIMEOUT_MIN_MS (60 * 1000) /* without a recorded timeout: 20 x its duration, at least this */
#define REPLAY_TTL_MS (10 * 60 * 1000)	  /* idle lifetime of a replay's environment */

static double now_ms_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int trace_load_events(sbx_ctx *ctx, const json_t *m, char **ret, size_t *ret_len, sbx_err **err)
{
	const char *d = json_str(json_object_get(m, "events"), "digest");
	_cleanup_free_ char *z = NULL;
	size_t zlen = 0;
	if (!d || store_blob_get(ctx->root, d, REPLAY_BLOB_MAX, &z, &zlen, err) < 0)
		return err_wrap(err, "trace events");
	return trace_decompress(z, zlen, ret, ret_len, err);
}

static json_t *divergence(const char *kind, int64_t index, int64_t pid, const char *expected,
			  const char *actual)
{
	json_t *d = json_pack("{s:s,s:I,s:s,s:s}", "kind", kind, "index", (json_int_t)index, "expected",
			      expected ? expected : "", "actual", actual ? actual : "");
	if (d)
		json_object_set_new(d, "pid", pid >= 0 ? json_integer(pid) : json_null());
	return d;
}

/* A short, printable excerpt of buf around off (for expected/actual). */
static char *excerpt(const char *buf, size_t len, size_t off)
{
	size_t from = off > 16 ? off - 16 : 0, to = off + 48 < len ? off + 48 : len;
	char *s = malloc((to - from) * 4 + 16), *p = s;
	if (!s)
		return NULL;
	if (from > 0)
		p += sprintf(p, "...");
	for (size_t i = from; i < to; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c == '\n')
			p += sprintf(p, "\\n");
		else if (c < 32 || c == 127)
			p += sprintf(p, "\\x%02x", c);
		else
			*p++ = (char)c;
	}
	if (to < len)
		p += sprintf(p, "...");
	if (from == to)
		p += sprintf(p, "(end of output)");
	*p = 0;
	return s;
}

/* The first differing byte of two outputs. A recorded output that was
 * truncated (it hit the capture cap) is what the command wrote first: the
 * replay's, captured whole, must begin with it. */
static json_t *output_divergence(sbx_ctx *ctx, const char *kind, const json_t *want, const char *got,
				 size_t got_len, int64_t pid)
{
	bool prefix = json_bool(want, "truncated", false);
	const char *d = json_str(want, "digest");
	_cleanup_free_ char *exp = NULL;
	size_t exp_len = 0;
	if (!d || store_blob_get(ctx->root, d, REPLAY_BLOB_MAX, &exp, &exp_len, NULL) < 0)
		return divergence(kind, 0, pid, d ? d : "(missing)", "(different content)");
	size_t i = 0;
	while (i < exp_len && i < got_len && exp[i] == got[i])
		i++;
	if (i == exp_len && (i == got_len || prefix))
		return NULL;
	_cleanup_free_ char *e = excerpt(exp, exp_len, i), *a = excerpt(got, got_len, i);
	return divergence(kind, (int64_t)i, pid, e, a);
}

/* The first differing change: by path (the first 256 paths), else by what
 * the entries are (the first API_DIFF_META_LIST of meta), else a change
 * past the lists or in the content of a file whose path is the same. */
static json_t *fs_divergence(const json_t *wfs, const json_t *gfs)
{
	static const char *const lists[] = {"paths", "meta"};
	for (size_t k = 0; k < ARRAY_SIZE(lists); k++) {
		json_t *wl = json_object_get(wfs, lists[k]), *gl = json_object_get(gfs, lists[k]);
		if (!wl)
			continue; /* recorded before meta */
		size_t i = 0;
		while (i < json_array_size(wl) && i < json_array_size(gl) &&
		       json_equal(json_array_get(wl, i), json_array_get(gl, i)))
			i++;
		const char *e = json_string_value(json_array_get(wl, i)),
			   *a = json_string_value(json_array_get(gl, i));
		if (e || a)
			return divergence("filesystem", (int64_t)i, -1, e ? e : "(no further change)",
					  a ? a : "(no further change)");
	}
	return divergence("filesystem", 0, -1,
			  json_str(wfs, "meta_digest") ?: json_str(wfs, "digest") ?: "",
			  "the same first changes; a later change, or the content of one, differs");
}

static char *status_str(const json_t *res)
{
	char *s = NULL;
	json_t *ec = json_object_get(res, "exit_code");
	if (json_bool(res, "timed_out", false))
		return strdup("timed out");
	if (json_is_integer(ec))
		return asprintf(&s, "exit %lld", (long long)json_integer_value(ec)) < 0 ? NULL : s;
	return asprintf(&s, "killed by signal %lld", (long long)json_int(res, "signal", 0)) < 0 ? NULL : s;
}

static int check_inputs(const json_t *m, json_t **ret_div, sbx_err **err)
{
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(json_object_get(m, "environment"), "volumes"), i, v)
	{
		const char *host = json_str(v, "host") ?: "";
		const char *want = json_str(v, "digest");
		char got[STORE_DIGEST_SIZE] = "";
		_cleanup_err_ sbx_err *e = NULL;
		_cleanup_free_ char *exp = NULL, *act = NULL;
		if (trace_tree_digest(host, got, NULL, &e) < 0)
			snprintf(got, sizeof(got), "unreadable");
		if (want && streq(want, got))
			continue;
		if (asprintf(&exp, "volume %s at %s: %s", host, json_str(v, "path") ?: "",
			     want ? want : "(not recorded)") < 0 ||
		    asprintf(&act, "volume %s: %s", host, e ? sbx_err_message(e) : got) < 0)
			return err_errnum(err, ENOMEM, "replay");
		*ret_div = divergence("input", (int64_t)i, -1, exp, act);
		return 0;
	}
	return 0;
}

/* True when the recording shows processes or threads that ran at the same
 * time: a second thread (the engine's concurrency note), or a process
 * issuing a call while another one that has already run is still alive and
 * has run since this one last did. Their relative order is the scheduler's,
 * so a difference in syscall sequences there is not the program's. */
static bool stream_concurrent(const char *buf, size_t len)
{
	trace_reader rd;
	if (trace_read_init(&rd, buf, len, NULL) < 0)
		return false;
	enum { MAXP = 1024 };
	uint32_t pid[MAXP];
	uint64_t last[MAXP];
	bool alive[MAXP];
	size_t n = 0;
	trace_ev ev;
	while (trace_read_next(&rd, &ev, NULL) > 0) {
		if (ev.type == TR_DETERM && ev.determ.kind == TRACE_DETERM_CONCURRENCY)
			return true;
		if (ev.type == TR_EXIT && (ev.flags & 1)) {
			for (size_t i = 0; i < n; i++)
				if (pid[i] == ev.pid)
					alive[i] = false;
			continue;
		}
		if (ev.type != TR_SYSCALL || trace_sys_timing_dependent(ev.sys.nr))
			continue;
		size_t me = n;
		for (size_t i = 0; i < n; i++)
			if (pid[i] == ev.pid && alive[i])
				me = i;
		if (me == n) {
			if (n == MAXP)
				return true; /* that many processes: assume they overlapped */
			pid[n] = ev.pid, last[n] = 0, alive[n] = true, n++;
		}
		for (size_t i = 0; i < n; i++)
			if (i != me && alive[i] && last[i] > last[me] && last[me] > 0)
				return true;
		last[me] = ev.seq + 1;
	}
	return false;
}

static void strv_freep_const(char ***p)
{
	strv_free(*p);
}

_public_ int sbx_trace_replay(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	return sbx_trace_replay_inputs(ctx, ref, NULL, ret, err);
}

_public_ int sbx_trace_replay_inputs(sbx_ctx *ctx, const char *ref, const char *inputs, json_t **ret,
				     sbx_err **err)
{
	double t0 = now_ms_mono();
	bool by_volume = inputs && streq(inputs, "volumes");
	if (inputs && !by_volume && !streq(inputs, "read_set") && !streq(inputs, "read-set"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "inputs '%s': expected 'read_set' or 'volumes'", inputs);
	_cleanup_free_ char *tid = NULL;
	_cleanup_json_ json_t *m = NULL;
	if (trace_store_resolve(ctx->root, ref, &tid, err) < 0 ||
	    trace_store_get(ctx->root, tid, &m, err) < 0)
		return -1;
	json_t *cmd = json_object_get(m, "command"), *envj = json_object_get(m, "environment"),
	       *detj = json_object_get(m, "determinism"), *want = json_object_get(m, "result");
	const char *snap = json_str(m, "snapshot_id");

	/* 1. Inputs. */
	_cleanup_json_ json_t *div = NULL;
	json_t *read_set = json_object_get(m, "read_set");
	if (!by_volume && json_is_array(read_set)) {
		if (readset_check(ctx, read_set, &div, err) < 0)
			return err_wrap(err, "replay: check inputs");
	} else if (check_inputs(m, &div, err) < 0)
		return -1;
	_cleanup_free_ char *in = NULL, *orig = NULL;
	size_t in_len = 0, orig_len = 0;
	json_t *inj = json_object_get(cmd, "stdin");
	if (!div && json_is_object(inj) &&
	    store_blob_get(ctx->root, json_str(inj, "digest"), REPLAY_BLOB_MAX, &in, &in_len, err) < 0)
		return err_wrap(err, "replay: recorded stdin");
	if (trace_load_events(ctx, m, &orig, &orig_len, err) < 0)
		return err_wrap(err, "replay");

	_cleanup_free_ char *eid = NULL;
	json_t *syscall_note = NULL;
	trace_outcome oc = {0};
	sbx_exec_result res = {0};
	if (!div) {
		/* 2. A fresh environment from the snapshot, as recorded. */
		_cleanup_(strv_freep_const) char **env = json_to_strv(json_object_get(envj, "env"));
		/* the recorded network: its mode and allowlist as they are */
		const char *net = json_str(envj, "network") ?: "none";
		_cleanup_strv_free_ char **net_allow =
		    net_proxied(net) ? json_to_strv(json_object_get(envj, "network_allow") ?: json_array())
				     : NULL;
		size_t nv = json_array_size(json_object_get(envj, "volumes"));
		_cleanup_free_ sbx_volume *vols = calloc(nv + 1, sizeof(*vols));
		if (!vols || (net_proxied(net) && !net_allow))
			return err_errnum(err, ENOMEM, "replay");
		for (size_t i = 0; i < nv; i++) {
			json_t *v = json_array_get(json_object_get(envj, "volumes"), i);
			vols[i] = (sbx_volume){.host = json_str(v, "host"),
					       .path = json_str(v, "path"),
					       .readonly = json_bool(v, "readonly", false)};
		}
		sbx_create_opts co = SBX_CREATE_OPTS_INIT;
		co.snapshot = snap;
		co.env = (const char *const *)env;
		co.volumes = vols;
		co.n_volumes = nv;
		co.network = net;
		co.network_allow = (const char *const *)net_allow;
		co.keep_identity = true;
		co.hostname = json_str(detj, "hostname");
		co.memory_bytes = -1;
		co.pids = -1;
		/* an idle lifetime, so that a replay killed midway (kill -9 of the
		 * CLI, a client gone) leaves no environment running for ever: the
		 * supervisor ends it once idle, gc removes it */
		const char *ttl = getenv("SBX_REPLAY_TTL_MS");
		co.ttl_ms = ttl && atoll(ttl) > 0 ? atoll(ttl) : REPLAY_TTL_MS;
		/* the recorded capabilities, as drops from the safe set */
		const char *drops[65] = {NULL};
		uint64_t kept;
		if (caps_from_json(json_object_get(envj, "capabilities"), &kept) == 0) {
			size_t nd = 0;
			for (int cap = 0; cap < 64; cap++)
				if ((caps_safe_set >> cap & 1) && !(kept >> cap & 1))
					drops[nd++] = caps_name(cap);
			co.cap_drop = drops;
		}
		if (sbx_env_create(ctx, &co, &eid, NULL, err) < 0)
			return err_wrap(err, "replay: create an environment from %s", snap);

		_cleanup_(strv_freep_const) char **argv = json_to_strv(json_object_get(cmd, "argv"));
		_cleanup_(strv_freep_const) char **xenv = json_to_strv(json_object_get(cmd, "env"));
		sbx_exec_opts eo = SBX_EXEC_OPTS_INIT;
		eo.argv = (const char *const *)argv;
		eo.env = (const char *const *)xenv;
		const char *cwd = json_str(cmd, "cwd");
		eo.cwd = cwd && *cwd ? cwd : NULL;
		eo.timeout_ms = json_int(cmd, "timeout_ms", 0);
		if (eo.timeout_ms <= 0) {
			/* bounded even without a recorded timeout: a world that stopped
			 * answering (a server that accepts and never replies) must end
			 * in a divergence, not a replay that hangs */
			const char *t = getenv("SBX_REPLAY_TIMEOUT_MS");
			int64_t floor = t && atoll(t) > 0 ? atoll(t) : REPLAY_TIMEOUT_MIN_MS;
			int64_t d = json_int(want, "duration_ms", 0);
			eo.timeout_ms = d > floor / 20 ? d * 20 : floor;
		}
		eo.user = json_str(cmd, "user");
		eo.stdin_data = in;
		eo.stdin_len = in_len;
		eo.capture = true;
		eo.output_bytes = -1;
		eo.trace = true;
		eo.deterministic = 1;
		trace_params tp = {.deterministic = true,
				   .replay = true,
				   .epoch_ns = json_int(detj, "epoch_ns", 0),
				   .seed = (uint64_t)json_int(detj, "seed", 0),
				   .hostname = json_str(detj, "hostname"),
				   .first_pid = (uint32_t)json_int(detj, "engine_pid", 0),
				   .inodes = json_bool(detj, "inodes", false),
				   .snapshot_id = snap,
				   .replay_of = tid};
		int r = trace_run(ctx, eid, &eo, &tp, &oc, &res, err);
		(void)sbx_env_remove(ctx, eid, NULL);
		if (r < 0)
			return err_wrap(err, "replay");

		/* 3. Outcomes, in order. */
		json_t *got = json_object_get(oc.manifest, "result");
		int64_t pid = json_int(detj, "command_pid", 0) ?: json_int(detj, "engine_pid", 0) + 1;
		_cleanup_free_ char *ws = status_str(want), *gs = status_str(got);
		if (!streq(ws ?: "", gs ?: ""))
			div = divergence("exit", 0, pid, ws, gs);
		if (!div && !streq(json_str(json_object_get(want, "stdout"), "digest") ?: "",
				   json_str(json_object_get(got, "stdout"), "digest") ?: ""))
			div = output_divergence(ctx, "stdout", json_object_get(want, "stdout"),
						res.stdout_buf, res.stdout_len, pid);
		if (!div && !streq(json_str(json_object_get(want, "stderr"), "digest") ?: "",
				   json_str(json_object_get(got, "stderr"), "digest") ?: ""))
			div = output_divergence(ctx, "stderr", json_object_get(want, "stderr"),
						res.stderr_buf, res.stderr_len, pid);
		json_t *wfs = json_object_get(want, "fs"), *gfs = json_object_get(got, "fs");
		/* meta_digest: what the changed entries are, modes, owners, xattrs
		 * and every byte (traces recorded before it have only digest) */
		const char *wm = json_str(wfs, "meta_digest");
		bool fs_differs = !streq(json_str(wfs, "digest") ?: "", json_str(gfs, "digest") ?: "");
		if (!div && (fs_differs || (wm && !streq(wm, json_str(gfs, "meta_digest") ?: ""))))
			div = fs_divergence(wfs, gfs);
		/* files written on the tmpfs (/tmp, /dev/shm), when recorded */
		json_t *wtw = json_object_get(wfs, "tmpfs_writes"),
		       *gtw = json_object_get(gfs, "tmpfs_writes");
		json_t *wt = json_object_get(wtw, "files"), *gt = json_object_get(gtw, "files");
		if (!div && wtw && !streq(json_str(wtw, "digest") ?: "", json_str(gtw, "digest") ?: "")) {
			size_t i = 0;
			while (i < json_array_size(wt) && i < json_array_size(gt) &&
			       json_equal(json_array_get(wt, i), json_array_get(gt, i)))
				i++;
			json_t *we = json_array_get(wt, i), *ge = json_array_get(gt, i);
			_cleanup_free_ char *e = NULL, *a = NULL;
			if (!we || asprintf(&e, "%s %s", json_str(we, "path"), json_str(we, "digest")) < 0)
				e = NULL;
			if (!ge || asprintf(&a, "%s %s", json_str(ge, "path"), json_str(ge, "digest")) < 0)
				a = NULL;
			div = divergence("filesystem", (int64_t)i, -1, e ? e : "(no further file listed)",
					 a ? a : "(no further file listed)");
			if (div && (we || ge))
				json_object_set_new(div, "path", json_string(json_str(we ?: ge, "path")));
		}
		if (!div && readset_check_writes(json_object_get(m, "volume_writes"), &div, err) < 0) {
			trace_outcome_clear(&oc);
			sbx_exec_result_free(&res);
			return err_wrap(err, "replay: compare volume outputs");
		}
		if (!div) {
			_cleanup_trace_norm_ trace_norm *na = NULL, *nb = NULL;
			trace_norm_diff nd = {0};
			int q = trace_norm_build(orig, orig_len, &na, err);
			if (q >= 0)
				q = trace_norm_build(oc.events, oc.events_len, &nb, err);
			if (q >= 0)
				q = trace_norm_compare(na, nb, &nd, err);
			if (q < 0) {
				trace_outcome_clear(&oc);
				sbx_exec_result_free(&res);
				return err_wrap(err, "replay: compare syscalls");
			}
			/* concurrency forgives the order of what ran, never what ran:
			 * the process trees must be the same up to the order of siblings */
			if (q > 0 && stream_concurrent(orig, orig_len) && trace_norm_same_tree(na, nb)) {
				/* Outputs and files are the same; only the interleaving of
				 * concurrent processes differs: a note, not a divergence. */
				_cleanup_free_ char *note = NULL;
				if (asprintf(&note,
					     "the syscall sequences differ (%s: process %lld, item %lld: "
					     "expected %s, got %s), "
					     "but processes or threads ran concurrently and their order is "
					     "the scheduler's, "
					     "not the program's; exit status, outputs and files match",
					     trace_norm_kind_name(nd.kind), (long long)nd.process,
					     (long long)nd.item, nd.expected ? nd.expected : "",
					     nd.actual ? nd.actual : "") >= 0)
					syscall_note = json_string(note);
			} else if (q > 0) {
				_cleanup_free_ char *exp = NULL, *act = NULL;
				if (asprintf(&exp, "%s: process %lld, thread %lld, item %lld: %s",
					     trace_norm_kind_name(nd.kind), (long long)nd.process,
					     (long long)nd.thread, (long long)nd.item,
					     nd.expected ? nd.expected : "") < 0)
					exp = NULL;
				act = nd.actual ? strdup(nd.actual) : NULL;
				div = divergence("syscall", nd.item >= 0 ? nd.item : 0, -1, exp, act);
				if (div) {
					json_object_set_new(div, "process", json_integer(nd.process));
					if (nd.lost_a || nd.lost_b)
						json_object_set_new(div, "lost",
								    json_pack("{s:I,s:I}", "recorded",
									      (json_int_t)nd.lost_a, "replay",
									      (json_int_t)nd.lost_b));
				}
			}
			trace_norm_diff_clear(&nd);
		}
	}
	json_t *out = json_pack("{s:s,s:s,s:f,s:s}", "trace_id", tid, "verdict", div ? "diverged" : "match",
				"replay_ms", now_ms_mono() - t0, "inputs",
				!by_volume && json_is_array(read_set) ? "read_set" : "volumes");
	if (out && syscall_note && !div)
		json_object_set_new(out, "notes", json_pack("[o]", syscall_note));
	else
		json_decref(syscall_note);
	if (out && div)
		json_object_set(out, "divergence", div);
	if (out && oc.manifest)
		json_object_set_new(out, "replay_trace_id", json_string(oc.trace_id));
	if (out && res.trace_id)
		json_object_set_new(out, "lost", json_integer((json_int_t)res.trace_lost));
	trace_outcome_clear(&oc);
	sbx_exec_result_free(&res);
	if (!out)
		return err_errnum(err, ENOMEM, "replay");
	*ret = out;
	return 0;
}
