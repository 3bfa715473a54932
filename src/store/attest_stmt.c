/* Building and checking the in-toto statement (see attest_stmt.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "store/attest_stmt.h"
#include "store/digest.h"
#include "util/json.h"

int attest_time_minus(const char *when, int64_t ms, char ret[32])
{
	struct tm tm = {0};
	const char *end = when ? strptime(when, "%Y-%m-%dT%H:%M:%SZ", &tm) : NULL;
	if (!end || *end || ms < 0)
		return -1;
	time_t t = timegm(&tm) - (time_t)((ms + 999) / 1000);
	struct tm out;
	if (!gmtime_r(&t, &out) || strftime(ret, 32, "%Y-%m-%dT%H:%M:%SZ", &out) == 0)
		return -1;
	return 0;
}

static json_t *subject(const char *name, const char *digest)
{
	const char *hex = store_digest_hex(digest);
	return hex ? json_pack("{s:s,s:{s:s}}", "name", name, "digest", "sha256", hex) : NULL;
}

/* A copy of obj[key], or null. */
static json_t *copy_or_null(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return v ? json_deep_copy(v) : json_null();
}

int attest_statement_build(const json_t *m, const char *trace_id, const json_t *files, const json_t *replay,
			   const char *version, json_t **ret, sbx_err **err)
{
	const json_t *res = json_object_get(m, "result"), *cmd = json_object_get(m, "command"),
		     *ev = json_object_get(m, "events"), *envj = json_object_get(m, "environment"),
		     *fs = json_object_get(res, "fs"), *det = json_object_get(m, "determinism");
	const char *out_d = json_str(json_object_get(res, "stdout"), "digest"),
		   *err_d = json_str(json_object_get(res, "stderr"), "digest"),
		   *snap = json_str(m, "snapshot_id");
	if (!store_digest_valid(trace_id) || !snap || !store_digest_valid(snap))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "statement: the trace has no valid id or snapshot");
	if (!out_d || !err_d || !store_digest_valid(out_d) || !store_digest_valid(err_d))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "statement: the trace's manifest has no stdout/stderr digests");
	_cleanup_json_ json_t *subjects = json_array();
	if (!subjects || json_array_append_new(subjects, subject("stdout", out_d)) < 0 ||
	    json_array_append_new(subjects, subject("stderr", err_d)) < 0)
		return err_oom(err);
	size_t i;
	json_t *f;
	json_array_foreach(files, i, f)
	{
		const char *name = json_str(f, "name"), *d = json_str(f, "digest");
		json_t *s = name && d ? subject(name, d) : NULL;
		if (!s)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "statement: file %zu has no name or digest", i);
		json_array_append_new(subjects, s);
	}
	if (json_array_size(subjects) > ATTEST_SUBJECTS_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "statement: %zu subjects, at most %d",
			       json_array_size(subjects), ATTEST_SUBJECTS_MAX);

	int64_t record_ms = (int64_t)json_number_value(json_object_get(m, "record_ms"));
	char started[32] = "";
	const char *created = json_str(m, "created_at");
	bool have_started = attest_time_minus(created, record_ms, started) == 0;
	char now_s[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(now_s, sizeof(now_s), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));

	json_t *inputs = json_pack("{s:o,s:o}", "volumes", copy_or_null(envj, "volumes"), "stdin",
				   copy_or_null(cmd, "stdin"));
	/* The read set (what the run read from outside its snapshot) when the
	 * recorder wrote one; otherwise the volumes above are the inputs. */
	const json_t *rs = json_object_get(m, "read_set");
	if (!rs)
		rs = json_object_get(json_object_get(m, "inputs"), "read_set");
	if (!rs)
		rs = json_object_get(envj, "read_set");
	if (inputs && rs)
		json_object_set_new(inputs, "read_set", json_deep_copy(rs));
	json_t *pred = json_pack(
	    "{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o},s:{s:o,s:o,s:o,s:o},s:o,s:o,s:o,s:o,s:s,s:"
	    "s}",
	    "trace_id", trace_id, "snapshot_id", snap, "command", copy_or_null(cmd, "argv"), "env",
	    copy_or_null(cmd, "env"), "cwd", copy_or_null(cmd, "cwd"), "environment_env",
	    copy_or_null(envj, "env"), "network", copy_or_null(envj, "network"), "exit_code",
	    copy_or_null(res, "exit_code"), "signal", copy_or_null(res, "signal"), "timed_out",
	    copy_or_null(res, "timed_out"), "filesystem", "digest", copy_or_null(fs, "digest"), "changes",
	    copy_or_null(fs, "changes"), "events", "digest", copy_or_null(ev, "digest"), "syscalls",
	    copy_or_null(ev, "syscalls"), "processes", copy_or_null(ev, "processes"), "lost",
	    copy_or_null(ev, "lost"), "inputs", inputs ? inputs : json_null(), "recorder",
	    copy_or_null(ev, "recorder"), "deterministic", copy_or_null(det, "enabled"), "duration_ms",
	    copy_or_null(res, "duration_ms"), "sbx_version", version ? version : "", "attested_at", now_s);
	if (!pred)
		return err_oom(err);
	json_object_set_new(pred, "recorded_at", created ? json_string(created) : json_null());
	json_object_set_new(pred, "started_at", have_started ? json_string(started) : json_null());
	if (replay) {
		json_t *r = json_pack("{s:o,s:o,s:o}", "verdict", copy_or_null(replay, "verdict"),
				      "divergence", copy_or_null(replay, "divergence"), "replay_trace_id",
				      copy_or_null(replay, "replay_trace_id"));
		json_object_set_new(pred, "replay", r ? r : json_null());
	}
	json_t *st = json_pack("{s:s,s:O,s:s,s:o}", "_type", ATTEST_STATEMENT_TYPE, "subject", subjects,
			       "predicateType", ATTEST_PREDICATE_TYPE, "predicate", pred);
	if (!st)
		return err_oom(err);
	*ret = st;
	return 0;
}

static bool hex64(const char *s)
{
	return s && store_digest_hex_valid(s);
}

int attest_statement_parse(const void *payload, size_t len, json_t **ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *st = json_loadb(payload, len, JSON_REJECT_DUPLICATES, &je);
	if (!st)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "statement: not JSON: %s", je.text);
	if (!json_is_object(st))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "statement: not a JSON object");
	const char *type = json_str(st, "_type"), *ptype = json_str(st, "predicateType");
	if (!type || !streq(type, ATTEST_STATEMENT_TYPE))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "statement: _type is not '%s'",
			       ATTEST_STATEMENT_TYPE);
	if (!ptype || !streq(ptype, ATTEST_PREDICATE_TYPE))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "statement: predicateType is not '%s'",
			       ATTEST_PREDICATE_TYPE);
	json_t *subs = json_object_get(st, "subject"), *pred = json_object_get(st, "predicate");
	if (!json_is_array(subs) || json_array_size(subs) == 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "statement: subject: missing or empty");
	if (json_array_size(subs) > ATTEST_SUBJECTS_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG, "statement: subject: more than %d",
			       ATTEST_SUBJECTS_MAX);
	_cleanup_json_ json_t *seen = json_object();
	if (!seen)
		return err_oom(err);
	size_t i;
	json_t *s;
	json_array_foreach(subs, i, s)
	{
		json_t *name = json_object_get(s, "name");
		if (!json_is_string(name) || json_string_length(name) == 0 ||
		    json_string_length(name) > ATTEST_NAME_MAX)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "statement: subject[%zu].name: missing, empty or too long", i);
		if (!hex64(json_str(json_object_get(s, "digest"), "sha256")))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "statement: subject '%.128s': no sha256 digest of 64 lowercase hex digits",
			    json_string_value(name));
		if (json_object_get(seen, json_string_value(name)))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "statement: subject '%.128s' appears twice", json_string_value(name));
		json_object_set_new(seen, json_string_value(name), json_true());
	}
	if (!json_is_object(pred))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "statement: predicate: missing or not an object");
	const char *tid = json_str(pred, "trace_id"), *snap = json_str(pred, "snapshot_id");
	if (!tid || !store_digest_valid(tid))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "statement: predicate.trace_id: not a sha256 digest");
	if (!snap || !store_digest_valid(snap))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "statement: predicate.snapshot_id: not a sha256 digest");
	*ret = TAKE_PTR(st);
	return 0;
}
