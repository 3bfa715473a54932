/* Policy documents: parse errors, profiles, merge (narrow only unless override). */
#include <errno.h>

#include "policy/policy.h"
#include "util/macro.h"
#include "unit.h"

static policy *P(const char *json)
{
	policy *p = NULL;
	sbx_err *e = NULL;
	if (policy_parse(json, strlen(json), &p, &e) < 0) {
		fprintf(stderr, "  unexpected: %s\n", sbx_err_message(e));
		sbx_err_free(e);
	}
	return p;
}

static char msg[1024];
static const char *perr(const char *json)
{
	policy *p = NULL;
	sbx_err *e = NULL;
	if (policy_parse(json, strlen(json), &p, &e) == 0) {
		policy_free(p);
		return "(parsed)";
	}
	snprintf(msg, sizeof(msg), "%s", sbx_err_message(e));
	sbx_err_free(e);
	return msg;
}

static const char *merr(const char *a, const char *b)
{
	policy *pa = P(a), *pb = P(b), *m = NULL;
	sbx_err *e = NULL;
	const char *r = "(merged)";
	if (!pa || !pb)
		r = "(parse failed)";
	else if (policy_merge(pa, pb, &m, &e) < 0) {
		snprintf(msg, sizeof(msg), "%s", sbx_err_message(e));
		r = msg;
	}
	sbx_err_free(e);
	policy_free(pa);
	policy_free(pb);
	policy_free(m);
	return r;
}

TEST(parse_full)
{
	policy *p =
	    P("{\"name\":\"ci\",\"network\":{\"allow\":[\"Example.com\",\"*.pkg.dev:443\"]},"
	      "\"filesystem\":{\"volumes\":[{\"host\":\"/src\",\"path\":\"/work\",\"readonly\":false},"
	      "{\"host\":\"/data\",\"path\":\"/data\"}],\"hidden\":[\"/etc/shadow\"]},"
	      "\"limits\":{\"memory_bytes\":1048576,\"pids\":10,\"cpus\":0.5,\"timeout_ms\":1000},"
	      "\"env\":{\"B\":\"2\",\"A\":\"1\"},\"secrets\":{\"TOKEN\":{\"env\":true},\"KEY\":{\"file\":\"/"
	      "k\"}},"
	      "\"plugins\":[\"/usr/lib/sbx/veto.so\"]}");
	CHECK(p);
	CHECK_STREQ(p->name, "ci");
	CHECK(p->net_mode == POLICY_NET_ALLOW);
	CHECK_STREQ(p->allow[0], "example.com");
	CHECK_STREQ(p->allow[1], "*.pkg.dev:443");
	CHECK(p->n_volumes == 2 && !p->volumes[0].readonly && p->volumes[1].readonly);
	CHECK(p->limits.memory_bytes == 1048576 && p->limits.cpus == 0.5 && p->limits.ttl_ms == -1);
	CHECK_STREQ(p->env[0], "A=1");
	CHECK(p->n_secrets == 2);
	/* round trip through the canonical form */
	json_t *j = policy_to_json(p);
	policy *q = NULL;
	CHECK(policy_from_json(j, &q, NULL) == 0);
	json_t *j2 = policy_to_json(q);
	CHECK(json_equal(j, j2));
	json_decref(j);
	json_decref(j2);
	policy_free(q);
	policy_free(p);
}

TEST(parse_errors_name_the_field)
{
	CHECK_STREQ(perr("{\"network\":{\"allow\":[\"a.com\",\"b.com\",\"*\"]}}"),
		    "network.allow[2]: '*': '*' is too broad: name hosts or use network mode open");
	CHECK(strstr(perr("{\"network\":{\"mode\":\"some\"}}"), "network.mode: must be"));
	CHECK(strstr(perr("{\"network\":{\"mode\":\"none\",\"allow\":[\"a.com\"]}}"),
		     "network.allow: network mode \"none\""));
	CHECK(strstr(perr("{\"netwrk\":{}}"), "unknown field 'netwrk'"));
	CHECK(strstr(perr("{\"limits\":{\"memory_bytes\":-1}}"),
		     "limits.memory_bytes: must be a positive integer"));
	CHECK(strstr(perr("{\"limits\":{\"memory\":1}}"), "limits: unknown field 'memory'"));
	CHECK(strstr(perr("{\"limits\":{\"cpus\":0}}"), "limits.cpus"));
	CHECK(strstr(perr("{\"filesystem\":{\"volumes\":[{\"host\":\"rel\",\"path\":\"/x\"}]}}"),
		     "filesystem.volumes[0]: host 'rel' must be an absolute path"));
	CHECK(strstr(perr("{\"filesystem\":{\"volumes\":[{\"host\":\"/a\",\"path\":\"/x/../etc\"}]}}"),
		     "'..'"));
	CHECK(strstr(perr("{\"filesystem\":{\"hidden\":[\"/ok\", 3]}}"), "filesystem.hidden[1]"));
	CHECK(strstr(perr("{\"env\":{\"1BAD\":\"x\"}}"), "env.1BAD: invalid variable name"));
	CHECK(strstr(perr("{\"secrets\":{\"T\":\"literal-value\"}}"), "secrets.T: must be"));
	CHECK(strstr(perr("{\"secrets\":{\"T\":{\"env\":true,\"file\":\"/x\"}}}"), "exactly one"));
	CHECK(strstr(perr("{\"plugins\":[\"/x.txt\"]}"), "plugins[0]"));
	CHECK(strstr(perr("{\"name\":\"a b\"}"), "name:"));
	CHECK(strstr(perr("{\"name\":1,"), "invalid JSON"));
	CHECK(strstr(perr("[1]"), "must be a JSON object"));
	CHECK(strstr(perr("{\"env\":{\"A\":\"x\\u0000y\"}}"), "NUL"));
}

TEST(profiles)
{
	policy *s = NULL, *d = NULL, *o = NULL;
	CHECK(policy_profile(NULL, &s, NULL) == 0);
	CHECK_STREQ(s->name, "strict");
	CHECK(s->net_mode == POLICY_NET_NONE && s->n_volumes == 0);
	CHECK(s->limits.memory_bytes == 512LL << 20 && s->limits.pids == 256 && s->limits.cpus == 1 &&
	      s->limits.timeout_ms == 600000);
	CHECK(policy_profile("dev", &d, NULL) == 0);
	CHECK(d->net_mode == POLICY_NET_ALLOW);
	egress_allowlist *al = NULL;
	CHECK(policy_egress_allowlist(d, &al, NULL) == 0 && al);
	CHECK(egress_check(al, "pypi.org", 443, NULL) == 1);
	CHECK(egress_check(al, "proxy.golang.org", 443, NULL) == 1);
	CHECK(egress_check(al, "evil.example", 443, NULL) == 0);
	egress_allowlist_free(al);
	CHECK(policy_profile("open", &o, NULL) == 0 && o->net_mode == POLICY_NET_OPEN);
	CHECK(policy_egress_allowlist(s, &al, NULL) == 0 && al == NULL);
	sbx_err *e = NULL;
	policy *x = NULL;
	CHECK(policy_profile("lax", &x, &e) < 0 && sbx_err_code(e) == SBX_E_NOT_FOUND);
	sbx_err_free(e);
	policy_free(s);
	policy_free(d);
	policy_free(o);
}

/* sbx_policy_list: every built-in profile with a one-line description, each
 * one loadable by name (MCP builds its schema's enum from this list). */
TEST(policy_list_names_and_describes)
{
	json_t *j = NULL;
	CHECK(sbx_policy_list(&j, NULL) == 0 && j);
	json_t *a = json_object_get(j, "policies"), *p;
	CHECK(json_array_size(a) >= 3);
	size_t i;
	bool strict = false;
	json_array_foreach(a, i, p)
	{
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *desc = json_string_value(json_object_get(p, "description"));
		CHECK(name && desc && *desc && !strchr(desc, '\n'));
		policy *x = NULL;
		CHECK(name && policy_profile(name, &x, NULL) == 0);
		policy_free(x);
		strict |= name && streq(name, "strict");
	}
	CHECK(strict);
	json_decref(j);
}

TEST(merge_narrows)
{
	const char *base =
	    "{\"name\":\"base\",\"network\":{\"allow\":[\"*.example.com:*\",\"pypi.org\"]},"
	    "\"filesystem\":{\"volumes\":[{\"host\":\"/src\",\"path\":\"/src\",\"readonly\":false}]},"
	    "\"limits\":{\"memory_bytes\":1000,\"cpus\":2},\"secrets\":{\"T\":{\"env\":true}},"
	    "\"plugins\":[\"/p/a.so\"]}";
	CHECK_STREQ(merr(base, "{\"network\":{\"allow\":[\"api.example.com:443\"]}}"), "(merged)");
	CHECK_STREQ(merr(base, "{\"network\":{\"mode\":\"none\"}}"), "(merged)");
	CHECK_STREQ(merr(base, "{\"limits\":{\"memory_bytes\":999,\"cpus\":1.5}}"), "(merged)");
	CHECK_STREQ(merr(base, "{\"filesystem\":{\"volumes\":[{\"host\":\"/src\",\"path\":\"/src\"}],"
			       "\"hidden\":[\"/secret\"]}}"),
		    "(merged)");
	CHECK_STREQ(merr(base, "{\"filesystem\":{\"volumes\":[]},\"secrets\":{},\"plugins\":[]}"),
		    "(merged)");
	/* the result carries the narrower values and the base's unchanged ones */
	policy *b = P(base), *l = P("{\"limits\":{\"memory_bytes\":500},\"env\":{\"X\":\"1\"}}"), *m = NULL;
	CHECK(b && l && policy_merge(b, l, &m, NULL) == 0);
	CHECK(m->limits.memory_bytes == 500 && m->limits.cpus == 2 && m->net_mode == POLICY_NET_ALLOW);
	CHECK(m->allow && m->allow[1] && !m->allow[2]);
	CHECK_STREQ(m->name, "base");
	CHECK(m->n_volumes == 1 && m->n_secrets == 1);
	CHECK_STREQ(m->env[0], "X=1");
	policy_free(b);
	policy_free(l);
	policy_free(m);
}

TEST(merge_widening_is_an_error)
{
	const char *base =
	    "{\"network\":{\"allow\":[\"*.example.com\",\"pypi.org\"]},"
	    "\"filesystem\":{\"volumes\":[{\"host\":\"/src\",\"path\":\"/src\"}]},"
	    "\"limits\":{\"memory_bytes\":1000,\"cpus\":1},\"secrets\":{\"T\":{\"env\":true}}}";
	CHECK(strstr(merr(base, "{\"network\":{\"allow\":[\"pypi.org\",\"evil.test\"]}}"),
		     "network.allow[1]: 'evil.test' is not allowed by the base policy"));
	CHECK(strstr(merr(base, "{\"network\":{\"allow\":[\"example.com\"]}}"), "network.allow[0]"));
	CHECK(strstr(merr(base, "{\"network\":{\"allow\":[\"pypi.org:8080\"]}}"), "network.allow[0]"));
	CHECK(strstr(
	    merr(base, "{\"network\":{\"mode\":\"open\"}}"),
	    "network.mode: \"open\" is wider than the base's \"allow\"; set \"override\": true to widen"));
	CHECK(strstr(merr("{\"network\":{\"mode\":\"none\"}}", "{\"network\":{\"allow\":[\"a.test\"]}}"),
		     "network.mode"));
	CHECK(strstr(merr(base, "{\"limits\":{\"memory_bytes\":2000}}"),
		     "limits.memory_bytes: 2000 is larger than the base's 1000"));
	CHECK(strstr(merr(base, "{\"limits\":{\"cpus\":1.5}}"), "limits.cpus"));
	CHECK(strstr(merr(base, "{\"filesystem\":{\"volumes\":[{\"host\":\"/\",\"path\":\"/host\"}]}}"),
		     "filesystem.volumes[0]: '/host' is not mounted by the base policy"));
	CHECK(strstr(
	    merr(base,
		 "{\"filesystem\":{\"volumes\":[{\"host\":\"/src\",\"path\":\"/src\",\"readonly\":false}]}}"),
	    "read-only in the base"));
	CHECK(strstr(merr(base, "{\"secrets\":{\"AWS\":{\"env\":true}}}"), "secrets.AWS"));
	CHECK(strstr(merr(base, "{\"secrets\":{\"T\":{\"file\":\"/t\"}}}"), "secrets.T"));
	CHECK(strstr(merr(base, "{\"plugins\":[\"/x.so\"]}"), "plugins[0]"));
	/* ...unless the later document says so explicitly */
	CHECK_STREQ(
	    merr(base,
		 "{\"override\":true,\"network\":{\"mode\":\"open\"},\"limits\":{\"memory_bytes\":2000},"
		 "\"filesystem\":{\"volumes\":[{\"host\":\"/\",\"path\":\"/host\"}]}}"),
	    "(merged)");
}

TEST(secret_values)
{
	policy *p =
	    P("{\"secrets\":{\"SBX_TEST_SECRET\":{\"env\":true},\"F\":{\"file\":\"/proc/self/comm\"}}}");
	CHECK(p);
	char *v = NULL;
	unsetenv("SBX_TEST_SECRET");
	sbx_err *e = NULL;
	CHECK(policy_secret_value(&p->secrets[0], &v, &e) < 0 && strstr(sbx_err_message(e), "not set"));
	sbx_err_free(e);
	setenv("SBX_TEST_SECRET", "s3cret", 1);
	CHECK(policy_secret_value(&p->secrets[0], &v, NULL) == 0);
	CHECK_STREQ(v, "s3cret");
	free(v);
	CHECK(policy_secret_value(&p->secrets[1], &v, NULL) == 0 && strlen(v) > 0);
	free(v);
	/* values never appear in the policy's JSON form */
	json_t *j = policy_to_json(p);
	char *s = json_dumps(j, 0);
	CHECK(!strstr(s, "s3cret"));
	free(s);
	json_decref(j);
	policy_free(p);
}

/* "user" and "capabilities": forms, refusals naming the field, the strict
 * profile, and the ceiling in a merge. */
TEST(user_and_capabilities)
{
	policy *p = P("{\"user\":\"1000:1000\",\"capabilities\":[\"chown\",\"CAP_FOWNER\"]}");
	CHECK(p && streq(p->user, "1000:1000") && p->caps_set);
	CHECK(p->caps == ((UINT64_C(1) << 0) | (UINT64_C(1) << 3)));
	json_t *j = policy_to_json(p);
	json_t *want = json_pack("[ss]", "CHOWN", "FOWNER");
	bool same = json_equal(json_object_get(j, "capabilities"), want);
	json_decref(want);
	json_decref(j);
	CHECK(same);
	policy_free(p);
	CHECK((p = P("{\"user\":1000}")) && streq(p->user, "1000"));
	policy_free(p);
	CHECK((p = P("{\"user\":\"nobody\",\"capabilities\":[]}")) && p->caps_set && p->caps == 0);
	policy_free(p);
	CHECK(startswith(perr("{\"user\":-1}"), "user:"));
	CHECK(startswith(perr("{\"user\":true}"), "user:"));
	CHECK(startswith(perr("{\"user\":\"a b\"}"), "user"));
	CHECK(startswith(perr("{\"user\":\"1000:\"}"), "user"));
	CHECK(startswith(perr("{\"capabilities\":\"CHOWN\"}"), "capabilities:"));
	CHECK(strstr(perr("{\"capabilities\":[\"SYS_ADMIN\"]}"),
		     "capabilities[0] SYS_ADMIN: not in the safe set"));
	CHECK(strstr(perr("{\"capabilities\":[\"CHOWN\",\"NOPE\"]}"),
		     "capabilities[1] 'NOPE': unknown capability"));
	CHECK(strstr(perr("{\"capabilities\":[1]}"), "capabilities[0]"));
}

TEST(strict_runs_as_nobody_without_capabilities)
{
	policy *s = NULL;
	CHECK(policy_profile("strict", &s, NULL) == 0);
	CHECK(s->user && streq(s->user, "65534:65534"));
	CHECK(s->caps_set && s->caps == 0);
	policy_free(s);
	/* dev and open keep root with the safe set (apt-get, pip) */
	CHECK(policy_profile("dev", &s, NULL) == 0 && !s->user && !s->caps_set);
	policy_free(s);
}

TEST(merge_user_and_capabilities_ceiling)
{
	CHECK_STREQ(merr("{\"capabilities\":[\"CHOWN\",\"KILL\"]}", "{\"capabilities\":[\"KILL\"]}"),
		    "(merged)");
	CHECK(strstr(merr("{\"capabilities\":[\"KILL\"]}", "{\"capabilities\":[\"KILL\",\"CHOWN\"]}"),
		     "capabilities: CHOWN is not kept by the base policy; set \"override\": true to widen"));
	CHECK_STREQ(merr("{\"capabilities\":[\"KILL\"]}", "{\"override\":true,\"capabilities\":[\"CHOWN\"]}"),
		    "(merged)");
	CHECK(strstr(merr("{\"user\":\"nobody\"}", "{\"user\":\"root\"}"), "user: 'root' (root) is wider"));
	CHECK(strstr(merr("{\"user\":\"1000\"}", "{\"user\":0}"), "user: '0' (root) is wider"));
	CHECK_STREQ(merr("{\"user\":\"1000\"}", "{\"user\":\"2000\"}"), "(merged)");
	CHECK_STREQ(merr("{}", "{\"user\":\"root\"}"), "(merged)");
	policy *a = P("{\"user\":\"nobody\",\"capabilities\":[\"CHOWN\"]}"), *b = P("{\"name\":\"x\"}"),
	       *m = NULL;
	CHECK(a && b && policy_merge(a, b, &m, NULL) == 0);
	CHECK(streq(m->user, "nobody") && m->caps_set && m->caps == 1);
	policy_free(a);
	policy_free(b);
	policy_free(m);
}
