/* Unit tests: src/api/env_state.c, the typed environment record (parse and
 * format of state.json; pure). */
#include <errno.h>
#include <string.h>

#include "api/env_state.h"
#include "unit.h"
#include "util/json.h"
#include "util/macro.h"

/* What create writes (env.c), with keys the struct does not type. */
static const char sample[] =
    "{\"environment_id\":\"0123456789ab\",\"name\":\"web\",\"hostname\":\"sbx-0123\",\"template\":\"host\","
    "\"created_at\":\"2026-01-01T00:00:00Z\",\"created_ms\":1767225600000,\"rootless\":false,\"ephemeral\":"
    "true,"
    "\"uid_slot\":3,\"host_uid\":100000,\"id_count\":65536,\"limits\":{\"memory_bytes\":1073741824,\"pids\":"
    "1024,"
    "\"cpus\":0.5,\"timeout_ms\":0,\"ttl_ms\":0,\"output_bytes\":10485760},\"env\":[\"A=1\"],\"volumes\":[],"
    "\"network\":\"allow\",\"network_allow\":[\"example.com\"],\"degraded\":false,\"user\":null,"
    "\"capabilities\":[\"CHOWN\"],\"snapshot_id\":\"sha256:ab\",\"layers\":[],\"state\":\"running\","
    "\"supervisor_pid\":42,\"landlock_abi\":4,\"warnings\":[],\"untyped\":{\"kept\":true}}";

TEST(record_parse_typed_fields)
{
	_cleanup_json_ json_t *st = json_loads(sample, 0, NULL);
	CHECK(st != NULL);
	env_record r;
	CHECK(env_record_parse(st, &r) == 0);
	CHECK(streq(r.id, "0123456789ab") && streq(r.name, "web") && streq(r.template_spec, "host"));
	CHECK(streq(r.network, "allow") && streq(r.state, "running") && streq(r.snapshot_id, "sha256:ab"));
	CHECK(r.user == NULL && r.phase == NULL);
	CHECK(r.uid_slot == 3 && r.host_uid == 100000 && r.id_count == 65536 && r.supervisor_pid == 42);
	CHECK(r.ephemeral && !r.rootless && !r.degraded && !r.ttl_keep);
	CHECK(r.limits.memory_bytes == 1073741824 && r.limits.pids == 1024 && r.limits.cpus == 0.5);
	CHECK(r.limits.disk_bytes == 0);
	CHECK(json_array_size(r.network_allow) == 1 && json_array_size(r.env) == 1);
	env_record_clear(&r);
	env_record_clear(&r); /* idempotent */
	CHECK(r.json == NULL && r.uid_slot == -1);
}

TEST(record_format_round_trip)
{
	_cleanup_json_ json_t *st = json_loads(sample, 0, NULL);
	env_record r;
	CHECK(env_record_parse(st, &r) == 0);
	_cleanup_json_ json_t *out = env_record_format(&r);
	CHECK(out != NULL && json_equal(out, st)); /* unchanged: the same JSON, untyped keys too */
	env_record_clear(&r);
}

TEST(record_format_writes_changes)
{
	_cleanup_json_ json_t *st = json_loads(sample, 0, NULL);
	env_record r;
	CHECK(env_record_parse(st, &r) == 0);
	r.phase = "agent";
	r.network = "none";
	r.network_allow = NULL;
	r.state = NULL;
	r.ttl_keep = true;
	r.limits.disk_bytes = 1 << 30;
	r.uid_slot = -1;
	_cleanup_json_ json_t *out = env_record_format(&r);
	CHECK(out != NULL);
	CHECK(streq(json_str(out, "phase"), "agent") && streq(json_str(out, "network"), "none"));
	CHECK(json_object_get(out, "network_allow") == NULL);
	CHECK(json_is_null(json_object_get(out, "state")));
	CHECK(json_is_true(json_object_get(out, "ttl_keep")));
	CHECK(json_int(json_object_get(out, "limits"), "disk_bytes", 0) == 1 << 30);
	CHECK(json_int(out, "uid_slot", 0) == -1);
	CHECK(json_is_true(json_object_get(json_object_get(out, "untyped"), "kept")));
	/* the record's own JSON is not touched */
	CHECK(streq(json_str(st, "network"), "allow") && json_object_get(st, "phase") == NULL);
	env_record_clear(&r);
}

TEST(record_keeps_untyped_shapes)
{
	/* a key of another type than the struct's stays as it is */
	_cleanup_json_ json_t *st =
	    json_loads("{\"template\":{\"kind\":\"dir\"},\"host_uid\":\"x\"}", 0, NULL);
	env_record r;
	CHECK(env_record_parse(st, &r) == 0);
	CHECK(r.template_spec == NULL && r.host_uid == 0 && r.uid_slot == -1);
	_cleanup_json_ json_t *out = env_record_format(&r);
	CHECK(out != NULL && json_equal(out, st));
	env_record_clear(&r);
	_cleanup_json_ json_t *arr = json_array();
	CHECK(env_record_parse(arr, &r) == -EBADMSG);
}

/* The phase switch (phase.c) and restore (snap.c) write through the record:
 * their keys are typed, and limits merge field by field. */
TEST(record_phase_fields_and_limits)
{
	_cleanup_json_ json_t *st = json_loads(sample, 0, NULL);
	json_object_set_new(st, "phase_switching", json_true());
	json_object_set_new(st, "agent_phase", json_pack("{s:s}", "network", "none"));
	json_object_set_new(st, "pool", json_string("k"));
	json_object_set_new(st, "creator", json_pack("{s:i,s:i}", "pid", 1, "start", 2));
	env_record r;
	CHECK(env_record_parse(st, &r) == 0);
	CHECK(r.phase_switching && json_is_object(r.agent_phase) && streq(r.pool, "k"));
	CHECK(json_int(r.creator, "pid", 0) == 1);
	_cleanup_json_ json_t *plan =
	    json_pack("{s:I,s:f,s:s}", "memory_bytes", (json_int_t)(256 << 20), "cpus", 0.25, "ignored", "x");
	env_record_limits_update(&r, plan);
	CHECK(r.limits.memory_bytes == 256 << 20 && r.limits.cpus == 0.25 && r.limits.pids == 1024);
	_cleanup_json_ json_t *lj = env_record_limits_json(&r);
	CHECK(lj && json_int(lj, "memory_bytes", 0) == 256 << 20 && json_int(lj, "pids", 0) == 1024);
	CHECK(!json_object_get(lj, "disk_bytes") && !json_object_get(lj, "ignored")); /* only the set ones */
	r.phase_switching = false;
	r.agent_phase = NULL;
	r.phase_changed_ms = 7;
	r.restoring_ms = 9;
	_cleanup_json_ json_t *out = env_record_format(&r);
	CHECK(out && json_is_false(json_object_get(out, "phase_switching")));
	CHECK(!json_object_get(out, "agent_phase") && json_int(out, "phase_changed_ms", 0) == 7);
	CHECK(json_int(out, "restoring_ms", 0) == 9);
	json_t *lim = json_object_get(out, "limits");
	CHECK(json_int(lim, "memory_bytes", 0) == 256 << 20 &&
	      json_number_value(json_object_get(lim, "cpus")) == 0.25);
	CHECK(json_int(lim, "pids", 0) == 1024 && json_int(lim, "output_bytes", 0) == 10485760);
	env_record_clear(&r);
}
