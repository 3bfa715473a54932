/* Secrets and phases, the pure parts (docs/secrets.md): the agent phase's
 * plan (a ceiling that may only narrow), a policy's secrets and hidden paths
 * as create options, and what an MCP client may name. */
#include <errno.h>
#include <stdlib.h>

#include "api/secrets.h"
#include "policy/policy.h"
#include "unit.h"
#include "util/json.h"

static char msg[1024];

/* An environment as create would configure it: network allow a.example.com
 * and b.example.com:443, 1 GiB, 1024 pids, one env secret. */
static env_config *config(void)
{
	env_config *c = calloc(1, sizeof(*c));
	static char *allow[] = {"a.example.com", "b.example.com:443", NULL};
	static char *env[] = {"LANG=C", NULL};
	static char *senv[] = {"TOKEN=value", NULL};
	c->network = "allow";
	c->network_allow = allow;
	c->env = env;
	c->secret_env = senv;
	c->limits.memory_bytes = 1 << 30;
	c->limits.pids = 1024;
	c->output_bytes = 10 << 20;
	c->secrets_dirfd = -1;
	return c;
}

static const char *plan_err(const char *setup, const char *agent)
{
	env_config *c = config();
	json_t *p = NULL;
	sbx_err *e = NULL;
	int r = phase_plan(c, setup, agent, &p, &e);
	free(c);
	json_decref(p);
	if (r == 0)
		return "(planned)";
	snprintf(msg, sizeof(msg), "%s", sbx_err_message(e));
	sbx_err_free(e);
	return msg;
}

TEST(default_agent_phase_keeps_all_but_secrets)
{
	env_config *c = config();
	json_t *p = NULL;
	CHECK(phase_plan(c, NULL, NULL, &p, NULL) == 0);
	free(c);
	CHECK_STREQ(json_str(p, "network"), "allow");
	CHECK(json_array_size(json_object_get(p, "network_allow")) == 2);
	CHECK(json_array_size(json_object_get(p, "secrets")) == 0);
	CHECK(json_int(json_object_get(p, "limits"), "memory_bytes", 0) == 1 << 30);
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(p, "env"), 0)), "LANG=C");
	json_decref(p);
}

TEST(agent_policy_is_a_ceiling)
{
	env_config *c = config();
	json_t *p = NULL;
	sbx_err *e = NULL;
	/* Larger than what the setup phase has, with no setup policy: the smaller wins. */
	CHECK(
	    phase_plan(
		c, NULL,
		"{\"network\":{\"allow\":[\"a.example.com:443\",\"*.example.com\"]},"
		"\"limits\":{\"memory_bytes\":268435456,\"pids\":4096,\"output_bytes\":33554432},"
		"\"env\":{\"LANG\":\"C.UTF-8\",\"PHASE\":\"agent\"},\"secrets\":{\"TOKEN\":{\"env\":true}}}",
		&p, &e) == 0);
	free(c);
	json_t *l = json_object_get(p, "limits");
	CHECK(json_int(l, "memory_bytes", 0) == 268435456);
	CHECK(json_int(l, "pids", 0) == 1024);
	CHECK(json_int(l, "output_bytes", 0) == 10 << 20);
	/* Allowlists: the rules within both. */
	_cleanup_free_ char *allow = json_join_strings(json_object_get(p, "network_allow"), "", ',');
	CHECK_STREQ(allow, "a.example.com:443,a.example.com,b.example.com:443");
	CHECK_STREQ(json_string_value(json_array_get(json_object_get(p, "secrets"), 0)), "TOKEN");
	_cleanup_free_ char *env = json_join_strings(json_object_get(p, "env"), "", ',');
	CHECK_STREQ(env, "LANG=C.UTF-8,PHASE=agent");
	json_decref(p);
	sbx_err_free(e);
}

TEST(agent_policy_may_not_widen_the_setup_policy)
{
	const char *setup =
	    "{\"network\":{\"allow\":[\"a.example.com\"]},\"limits\":{\"memory_bytes\":536870912}}";
	CHECK(strstr(plan_err(setup, "{\"limits\":{\"memory_bytes\":1073741824}}"), "limits.memory_bytes"));
	CHECK(strstr(plan_err(setup, "{\"network\":{\"allow\":[\"c.example.com\"]}}"), "network.allow[0]"));
	CHECK(strstr(plan_err(setup, "open"), "wider"));
	CHECK(strstr(plan_err(NULL, "{\"override\":true}"), "override"));
	CHECK(strstr(plan_err(NULL, "{\"secrets\":{\"OTHER\":{\"env\":true}}}"), "secrets.OTHER"));
	CHECK(strstr(plan_err(NULL, "{\"filesystem\":{\"hidden\":[\"/x\"]}}"), "filesystem.hidden"));
	CHECK(strstr(plan_err(NULL, "{\"filesystem\":{\"volumes\":[{\"host\":\"/tmp\",\"path\":\"/t\"}]}}"),
		     "volumes cannot change"));
	CHECK_STREQ(plan_err(setup, "strict"), "(planned)");
	CHECK_STREQ(plan_err(setup, "{\"network\":{\"mode\":\"none\"}}"), "(planned)");
}

TEST(policy_secrets_and_hidden_become_options)
{
	policy *p = NULL;
	const char *doc = "{\"secrets\":{\"A\":{\"env\":true},\"B\":{\"file\":\"/run/"
			  "b\"}},\"filesystem\":{\"hidden\":[\"/h\"]}}";
	CHECK(policy_parse(doc, strlen(doc), &p, NULL) == 0);
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	const char *hidden[] = {"/mine", NULL};
	o.hidden = hidden;
	policy_storage keep = {0};
	CHECK(secrets_policy_apply(p, &o, &keep, NULL) == 0);
	CHECK_STREQ(o.hidden[0], "/mine");
	CHECK_STREQ(o.hidden[1], "/h");
	CHECK_STREQ(o.secrets[0], "A");
	CHECK_STREQ(o.secrets[1], "B=/run/b");
	CHECK(o.secrets[2] == NULL);
	policy_storage_clear(&keep);
	/* Explicit secrets must be the policy's. */
	sbx_create_opts o2 = SBX_CREATE_OPTS_INIT;
	const char *ok[] = {"B=/run/b", NULL}, *bad[] = {"B=/etc/shadow", NULL};
	policy_storage k2 = {0};
	o2.secrets = ok;
	CHECK(secrets_policy_apply(p, &o2, &k2, NULL) == 0);
	o2.secrets = bad;
	sbx_err *e = NULL;
	CHECK(secrets_policy_apply(p, &o2, &k2, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "not granted"));
	sbx_err_free(e);
	policy_storage_clear(&k2);
	policy_free(p);
}

TEST(mcp_clients_name_only_offered_variables)
{
	json_t *ok = json_loads("{\"secrets\":{\"GH\":{\"env\":true}}}", 0, NULL);
	json_t *file = json_loads("{\"secrets\":{\"GH\":{\"file\":\"/etc/passwd\"}}}", 0, NULL);
	json_t *other = json_loads("{\"secrets\":{\"HOME\":{\"env\":true}}}", 0, NULL);
	sbx_err *e = NULL;
	setenv("SBX_MCP_SECRETS", "NPM,GH", 1);
	CHECK(secrets_mcp_check(ok, "policy", NULL) == 0);
	CHECK(secrets_mcp_check(file, "policy", &e) < 0);
	CHECK(strstr(sbx_err_message(e), "host file"));
	sbx_err_free(e);
	e = NULL;
	CHECK(secrets_mcp_check(other, "phases.setup", &e) < 0);
	CHECK(strstr(sbx_err_message(e), "phases.setup.secrets.HOME"));
	sbx_err_free(e);
	unsetenv("SBX_MCP_SECRETS");
	CHECK(secrets_mcp_check(ok, "policy", NULL) < 0);
	json_decref(ok);
	json_decref(file);
	json_decref(other);
}
