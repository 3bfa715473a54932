/* sbx_env_limits_check: the bounds on a create's limits (include/sbx.h). */
#include "sbx.h"
#include "unit.h"

static bool refused(sbx_create_opts o, const char *word)
{
	sbx_err *e = NULL;
	bool ok = sbx_env_limits_check(&o, &e) < 0 && sbx_err_code(e) == SBX_E_INVALID_ARGUMENT &&
		  strstr(sbx_err_message(e), word) != NULL;
	sbx_err_free(e);
	return ok;
}

static bool accepted(sbx_create_opts o)
{
	return sbx_env_limits_check(&o, NULL) == 0;
}

TEST(defaults_and_none_accepted)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	CHECK(accepted(o));
	CHECK(sbx_env_limits_check(NULL, NULL) == 0);
	o.memory_bytes = -1, o.pids = -1, o.output_bytes = -1;
	CHECK(accepted(o));
}

TEST(bounds_accepted)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.memory_bytes = SBX_MEMORY_MIN, o.pids = 1, o.cpus = SBX_CPUS_MIN, o.timeout_ms = SBX_TIMEOUT_MAX_MS;
	o.ttl_ms = SBX_TTL_MAX_MS, o.output_bytes = SBX_OUTPUT_MAX, o.disk_bytes = SBX_DISK_MIN;
	CHECK(accepted(o));
	o.memory_bytes = SBX_MEMORY_MAX, o.pids = SBX_PIDS_MAX, o.cpus = SBX_CPUS_MAX,
	o.disk_bytes = SBX_DISK_MAX;
	CHECK(accepted(o));
}

TEST(negative_and_absurd_refused)
{
	const sbx_create_opts d = SBX_CREATE_OPTS_INIT;
	sbx_create_opts o;
	o = d, o.memory_bytes = -2;
	CHECK(refused(o, "memory_bytes"));
	o = d, o.memory_bytes = SBX_MEMORY_MIN - 1;
	CHECK(refused(o, "at least 4m"));
	o = d, o.memory_bytes = SBX_MEMORY_MAX + 1;
	CHECK(refused(o, "memory_bytes"));
	o = d, o.pids = -5;
	CHECK(refused(o, "pids"));
	o = d, o.pids = 1000000000;
	CHECK(refused(o, "pids"));
	o = d, o.pids = SBX_PIDS_MAX + 1;
	CHECK(refused(o, "4194304"));
	o = d, o.cpus = -1;
	CHECK(refused(o, "cpus"));
	o = d, o.cpus = 0.001;
	CHECK(refused(o, "cpus"));
	o = d, o.cpus = 5000;
	CHECK(refused(o, "cpus"));
	o = d, o.cpus = 0.0 / 0.0;
	CHECK(refused(o, "cpus"));
	o = d, o.cpus = 1.0 / 0.0;
	CHECK(refused(o, "cpus"));
	o = d, o.timeout_ms = -1;
	CHECK(refused(o, "timeout_ms"));
	o = d, o.timeout_ms = SBX_TIMEOUT_MAX_MS + 1;
	CHECK(refused(o, "timeout_ms"));
	o = d, o.ttl_ms = -1;
	CHECK(refused(o, "ttl_ms"));
	o = d, o.output_bytes = -2;
	CHECK(refused(o, "output_bytes"));
	o = d, o.output_bytes = SBX_OUTPUT_MAX + 1;
	CHECK(refused(o, "output_bytes"));
	o = d, o.disk_bytes = -1;
	CHECK(refused(o, "disk_bytes"));
	o = d, o.disk_bytes = 1000;
	CHECK(refused(o, "at least 4m"));
}

TEST(disk_ignored_before_version_3)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.version = 2;
	o.disk_bytes = -1; /* not a field of version-2 callers: never read */
	CHECK(accepted(o));
}
