/* sbx_env_limits_check: the bounds on a create's limits (include/sbx.h);
 * api_network_opts: the one reading of a create's network. */
#include "api/api.h"
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

/* The mode and the patterns, or NULL with the error's message in *msg. */
static char **net_of(const char *network, const char *const *allow, const char **mode, char *msg, size_t n)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.network = network;
	o.network_allow = allow;
	char **v = NULL;
	sbx_err *e = NULL;
	*msg = 0;
	if (api_network_opts(&o, mode, &v, &e) < 0) {
		snprintf(msg, n, "%s", sbx_err_message(e));
		*mode = NULL;
	}
	sbx_err_free(e);
	return v;
}

TEST(network_array_is_taken_whole)
{
	const char *mode;
	char msg[512];
	char **v = net_of(NULL, NULL, &mode, msg, sizeof(msg));
	CHECK(!v && mode && streq(mode, "none"));
	v = net_of("open", NULL, &mode, msg, sizeof(msg));
	CHECK(!v && mode && streq(mode, "open"));
	/* The string form (the CLI's) is split at commas. */
	v = net_of("allow=example.com,*.example.org:8443", NULL, &mode, msg, sizeof(msg));
	CHECK(v && streq(mode, "allow") && streq(v[0], "example.com") && streq(v[1], "*.example.org:8443") &&
	      !v[2]);
	strv_free(v);
	/* The array form: every pattern as given. */
	const char *const two[] = {"example.com", "[::1]:8080", NULL};
	v = net_of("allow", two, &mode, msg, sizeof(msg));
	CHECK(v && streq(mode, "allow") && streq(v[0], "example.com") && streq(v[1], "[::1]:8080") && !v[2]);
	strv_free(v);
	/* A comma inside an array's pattern is refused by the pattern check,
	 * naming the pattern: never split into two rules. */
	const char *const comma[] = {"example.com,evil.example", NULL};
	v = net_of("allow", comma, &mode, msg, sizeof(msg));
	CHECK(!v && !mode && strstr(msg, "example.com,evil.example") && strstr(msg, "invalid character"));
	const char *const comma_port[] = {"example.com:443,evil.example", NULL};
	v = net_of("allow", comma_port, &mode, msg, sizeof(msg));
	CHECK(!v && !mode && strstr(msg, "port"));
	/* An array needs mode allow; the string form needs patterns. */
	v = net_of("none", two, &mode, msg, sizeof(msg));
	CHECK(!v && !mode && strstr(msg, "network_allow"));
	v = net_of(NULL, two, &mode, msg, sizeof(msg));
	CHECK(!v && !mode && strstr(msg, "network_allow"));
	const char *const none[] = {NULL};
	/* An empty array: a proxy that lets nothing out (sbx_env_egress_set may
	 * give it rules later), an empty list rather than none. */
	v = net_of("allow", none, &mode, msg, sizeof(msg));
	CHECK(v && !v[0] && mode && streq(mode, "allow"));
	strv_free(v);
	v = net_of("allow=", NULL, &mode, msg, sizeof(msg));
	CHECK(!v && !mode && strstr(msg, "expected none, internet, open"));
	/* internet: every public host through the proxy; a list only adds
	 * internal addresses, checked as patterns. */
	v = net_of("internet", NULL, &mode, msg, sizeof(msg));
	CHECK(!v && mode && streq(mode, "internet"));
	const char *const inner[] = {"10.0.0.5:5432", NULL};
	v = net_of("internet", inner, &mode, msg, sizeof(msg));
	CHECK(v && mode && streq(mode, "internet") && streq(v[0], "10.0.0.5:5432") && !v[1]);
	strv_free(v);
	const char *const star[] = {"*", NULL};
	v = net_of("internet", star, &mode, msg, sizeof(msg));
	CHECK(!v && !mode && strstr(msg, "too broad"));
	/* A caller of an older version has no network_allow: never read. */
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.version = 5;
	o.network = "none";
	o.network_allow = two;
	CHECK(api_network_opts(&o, &mode, &v, NULL) == 0 && streq(mode, "none") && !v);
}
