/* CDI specs: parsing (JSON and YAML), versions, resolution, the allowlist. */
#include "unit.h"

#include "policy/policy.h"
#include "runtime/cdi.h"
#include "util/err.h"
#include "util/macro.h"

static const char fake_json[] =
    "{\"cdiVersion\":\"0.6.0\",\"kind\":\"example.com/fake\","
    "\"containerEdits\":{\"env\":[\"FAKE_SPEC=1\"],\"mounts\":[{\"hostPath\":\"/etc/hostname\","
    "\"containerPath\":\"/opt/fake/hostname\",\"options\":[\"ro\",\"bind\"]}]},"
    "\"devices\":["
    "{\"name\":\"0\",\"containerEdits\":{\"env\":[\"FAKE_DEV=0\"],\"deviceNodes\":[{\"path\":\"/dev/"
    "fakegpu0\","
    "\"hostPath\":\"/dev/null\",\"type\":\"c\",\"major\":1,\"minor\":3,\"permissions\":\"wr\"}]}},"
    "{\"name\":\"0:1\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/fakemig01\",\"hostPath\":\"/dev/"
    "zero\"}],"
    "\"hooks\":[{\"hookName\":\"createContainer\",\"path\":\"/bin/"
    "sh\",\"args\":[\"sh\",\"-c\",\"true\"],\"timeout\":5}]}}"
    "]}";

static cdi_spec *parse(const char *text, const char *file, sbx_err **e)
{
	cdi_spec *s = NULL;
	if (cdi_spec_parse(text, strlen(text), file, &s, e) < 0)
		return NULL;
	return s;
}

TEST(parses_json_spec)
{
	_cleanup_err_ sbx_err *e = NULL;
	cdi_spec *s = parse(fake_json, "fake.json", &e);
	CHECK(s);
	CHECK_STREQ(s->kind, "example.com/fake");
	CHECK(s->n_devices == 2);
	CHECK_STREQ(s->devices[0].edits.nodes[0].path, "/dev/fakegpu0");
	CHECK_STREQ(s->devices[0].edits.nodes[0].host_path, "/dev/null");
	CHECK(s->devices[0].edits.nodes[0].type == 'c' && s->devices[0].edits.nodes[0].major == 1);
	CHECK_STREQ(s->devices[0].edits.nodes[0].perms, "rw");
	CHECK_STREQ(s->devices[1].edits.nodes[0].perms, "rwm"); /* the default */
	CHECK(s->devices[1].edits.nodes[0].major == -1);
	CHECK(s->devices[1].edits.hooks[0].timeout_s == 5);
	CHECK_STREQ(s->edits.mounts[0].options[1], "bind");
	cdi_spec_free(s);
}

TEST(parses_yaml_spec_like_nvidia_ctk)
{
	static const char y[] = "---\n"
				"cdiVersion: 0.5.0\n"
				"kind: nvidia.com/gpu\n"
				"devices:\n"
				"- name: \"0\"\n"
				"  containerEdits:\n"
				"    deviceNodes:\n"
				"    - path: /dev/nvidia0\n"
				"      major: 195\n"
				"      fileMode: 0666\n"
				"- name: 1\n"
				"  containerEdits:\n"
				"    deviceNodes:\n"
				"    - path: /dev/nvidia1\n"
				"- name: all\n"
				"  containerEdits:\n"
				"    deviceNodes:\n"
				"    - path: /dev/nvidia0\n"
				"containerEdits:\n"
				"  env:\n"
				"  - NVIDIA_VISIBLE_DEVICES=void\n"
				"  hooks:\n"
				"  - hookName: createContainer\n"
				"    path: /usr/bin/nvidia-ctk\n"
				"    args: [nvidia-ctk, hook, update-ldcache]\n"
				"  mounts:\n"
				"  - hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
				"    containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.1\n"
				"    options: [ro, nosuid, nodev, bind]\n";
	_cleanup_err_ sbx_err *e = NULL;
	cdi_spec *s = parse(y, "nvidia.yaml", &e);
	if (!s)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(s);
	CHECK_STREQ(s->devices[0].name, "0"); /* quoted: a string */
	CHECK_STREQ(s->devices[1].name, "1"); /* unquoted: still the name "1" */
	CHECK(s->devices[0].edits.nodes[0].major == 195);
	CHECK(s->devices[0].edits.nodes[0].file_mode == 0666);
	CHECK_STREQ(s->edits.hooks[0].args[2], "update-ldcache");
	CHECK_STREQ(s->edits.env[0], "NVIDIA_VISIBLE_DEVICES=void");
	cdi_spec_free(s);
}

TEST(malformed_specs_are_clear_errors)
{
	static const struct {
		const char *file, *text, *want;
	} cases[] = {
	    {"a.json", "{\"cdiVersion\":", "malformed JSON"},
	    {"a.yaml", "kind: [unclosed\n", "malformed YAML"},
	    {"a.json", "{\"cdiVersion\":\"0.6.0\",\"kind\":\"x\",\"devices\":[{\"name\":\"a\"}]}", "kind"},
	    {"a.json", "{\"cdiVersion\":\"9.0.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"a\"}]}",
	     "not supported"},
	    {"a.json", "{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/b\",\"devices\":[]}", "devices"},
	    {"a.json",
	     "{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"a\",\"bogus\":1}]}",
	     "devices[0].bogus: unknown field"},
	    {"a.json",
	     "{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"a\",\"containerEdits\":"
	     "{\"deviceNodes\":[{\"path\":\"dev/x\"}]}}]}",
	     "deviceNodes[0].path: must be an absolute path"},
	    {"a.json",
	     "{\"cdiVersion\":\"0.4.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"a\",\"containerEdits\":"
	     "{\"deviceNodes\":[{\"path\":\"/dev/x\",\"hostPath\":\"/dev/y\"}]}}]}",
	     "uses fields of cdiVersion 0.5.0"},
	    {"a.json",
	     "{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/"
	     "b\",\"devices\":[{\"name\":\"a\"},{\"name\":\"a\"}]}",
	     "defined twice"},
	    {"a.json",
	     "{\"cdiVersion\":\"0.6.0\",\"kind\":\"a.com/b\",\"devices\":[{\"name\":\"a\",\"containerEdits\":"
	     "{\"hooks\":[{\"hookName\":\"whenever\",\"path\":\"/bin/true\"}]}}]}",
	     "hookName"},
	    {"a.yaml", "a: &x [*x]\n", "malformed YAML"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		_cleanup_err_ sbx_err *e = NULL;
		cdi_spec *s = parse(cases[i].text, cases[i].file, &e);
		if (s || !e || !strstr(sbx_err_message(e), cases[i].want))
			fprintf(stderr, "  case %zu: %s\n", i, e ? sbx_err_message(e) : "(parsed)");
		CHECK(!s && e && strstr(sbx_err_message(e), cases[i].want));
	}
}

TEST(yaml_alias_bomb_is_bounded)
{
	/* 9 levels of 10 aliases each would unroll to 10^9 nodes. */
	char y[2048] = "a0: &a0 [x]\n";
	for (int i = 1; i <= 9; i++) {
		char line[160];
		snprintf(line, sizeof(line),
			 "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i, i - 1,
			 i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
		strcat(y, line);
	}
	_cleanup_err_ sbx_err *e = NULL;
	cdi_spec *s = parse(y, "bomb.yaml", &e);
	CHECK(!s && e && strstr(sbx_err_message(e), "too large"));
}

TEST(resolves_spec_and_device_edits)
{
	_cleanup_err_ sbx_err *e = NULL;
	cdi_spec *s = parse(fake_json, "fake.json", &e);
	CHECK(s);
	const char *names[] = {"example.com/fake=0", "example.com/fake=0:1", "example.com/fake=0", NULL};
	cdi_edits ed;
	char **res = NULL;
	CHECK(cdi_resolve(&s, 1, names, &ed, &res, &e) == 0);
	/* spec-level edits once, then each device's in order; the repeat counts once */
	CHECK(ed.env && strcmp(ed.env[0], "FAKE_SPEC=1") == 0 && strcmp(ed.env[1], "FAKE_DEV=0") == 0 &&
	      !ed.env[2]);
	CHECK(ed.n_nodes == 2 && ed.n_mounts == 1 && ed.n_hooks == 1);
	CHECK_STREQ(ed.nodes[1].path, "/dev/fakemig01");
	CHECK(res && strcmp(res[1], "example.com/fake=0:1") == 0 && !res[2]);
	cdi_edits_done(&ed);
	strv_free(res);
	/* all: every device of the kind (this spec has no device named all) */
	const char *all[] = {"example.com/fake=all", NULL};
	CHECK(cdi_resolve(&s, 1, all, &ed, &res, &e) == 0);
	CHECK(ed.n_nodes == 2 && res[0] && res[1] && !res[2]);
	cdi_edits_done(&ed);
	strv_free(res);
	cdi_spec_free(s);
}

TEST(unknown_names_are_not_found)
{
	_cleanup_err_ sbx_err *e1 = NULL, *e2 = NULL, *e3 = NULL;
	cdi_spec *s = parse(fake_json, "fake.json", &e1);
	CHECK(s);
	cdi_edits ed;
	const char *a[] = {"example.com/fake=7", NULL}, *b[] = {"other.com/gpu=0", NULL},
		   *c[] = {"nonsense", NULL};
	CHECK(cdi_resolve(&s, 1, a, &ed, NULL, &e1) < 0 && sbx_err_code(e1) == SBX_E_NOT_FOUND &&
	      strstr(sbx_err_message(e1), "has no device '7'"));
	CHECK(cdi_resolve(&s, 1, b, &ed, NULL, &e2) < 0 &&
	      strstr(sbx_err_message(e2), "no CDI spec defines kind"));
	CHECK(cdi_resolve(&s, 1, c, &ed, NULL, &e3) < 0 && sbx_err_code(e3) == SBX_E_INVALID_ARGUMENT);
	cdi_spec_free(s);
}

TEST(same_device_in_two_files_of_one_directory_conflicts)
{
	_cleanup_err_ sbx_err *e = NULL;
	cdi_spec *v[2] = {parse(fake_json, "one.json", &e), parse(fake_json, "two.json", &e)};
	CHECK(v[0] && v[1]);
	cdi_edits ed;
	const char *a[] = {"example.com/fake=0", NULL};
	CHECK(cdi_resolve(v, 2, a, &ed, NULL, &e) < 0 && sbx_err_code(e) == SBX_E_CONFLICT);
	/* a later directory wins */
	sbx_err_free(e);
	e = NULL;
	v[1]->priority = 1;
	free(v[1]->devices[0].edits.nodes[0].path);
	v[1]->devices[0].edits.nodes[0].path = strdup("/dev/winner");
	CHECK(cdi_resolve(v, 2, a, &ed, NULL, &e) == 0);
	CHECK_STREQ(ed.nodes[0].path, "/dev/winner");
	cdi_edits_done(&ed);
	cdi_spec_free(v[0]);
	cdi_spec_free(v[1]);
}

TEST(allowlist)
{
	const char *allow[] = {"nvidia.com/gpu=0", "example.com/fake=*", NULL};
	CHECK(cdi_allowed(allow, "nvidia.com/gpu=0"));
	CHECK(!cdi_allowed(allow, "nvidia.com/gpu=1"));
	CHECK(!cdi_allowed(allow, "nvidia.com/gpu=all"));
	CHECK(cdi_allowed(allow, "example.com/fake=0:1"));
	CHECK(!cdi_allowed(allow, "example.com/fakex=0"));
	CHECK(!cdi_allowed(NULL, "nvidia.com/gpu=0"));
	const char *any[] = {"*", NULL};
	CHECK(cdi_allowed(any, "a.com/b=c"));
}

TEST(names)
{
	char *k = NULL, *n = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(cdi_name_parse("nvidia.com/gpu=0:1", &k, &n, &e) == 0);
	CHECK_STREQ(k, "nvidia.com/gpu");
	CHECK_STREQ(n, "0:1");
	free(k);
	free(n);
	CHECK(cdi_name_parse("nvidia.com/gpu/x=0", &k, &n, NULL) < 0);
	CHECK(cdi_name_parse("nvidia.com/gpu=", &k, &n, NULL) < 0);
	CHECK(cdi_name_parse("nvidia.com/gpu=a/b", &k, &n, NULL) < 0);
}

TEST(policy_devices_parse_and_merge)
{
	policy *base = NULL, *later = NULL, *wide = NULL, *m = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	const char *b = "{\"devices\":[\"nvidia.com/gpu=*\",\"example.com/fake=0\"]}";
	const char *l = "{\"devices\":[\"nvidia.com/gpu=0:1\"]}";
	const char *w = "{\"devices\":[\"example.com/fake=1\"]}";
	CHECK(policy_parse(b, strlen(b), &base, &e) == 0);
	CHECK(policy_parse(l, strlen(l), &later, &e) == 0);
	CHECK(policy_parse(w, strlen(w), &wide, &e) == 0);
	CHECK(policy_merge(base, later, &m, &e) == 0);
	CHECK(m->devices && strcmp(m->devices[0], "nvidia.com/gpu=0:1") == 0 && !m->devices[1]);
	policy_free(m);
	m = NULL;
	/* a later policy may not allow what the base does not */
	CHECK(policy_merge(base, wide, &m, &e) < 0 && strstr(sbx_err_message(e), "devices"));
	/* the canonical form round-trips */
	json_t *j = policy_to_json(base);
	CHECK(j && json_array_size(json_object_get(j, "devices")) == 2);
	json_decref(j);
	policy_free(base);
	policy_free(later);
	policy_free(wide);
	const char *bad[] = {"{\"devices\":\"x\"}", "{\"devices\":[\"gpu\"]}",
			     "{\"devices\":[\"a.com/b=c/d\"]}", NULL};
	for (int i = 0; bad[i]; i++) {
		_cleanup_err_ sbx_err *be = NULL;
		policy *p = NULL;
		CHECK(policy_parse(bad[i], strlen(bad[i]), &p, &be) < 0 &&
		      strstr(sbx_err_message(be), "devices"));
	}
}
