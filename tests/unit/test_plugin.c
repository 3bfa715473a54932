/* Plugins: the wire form (info decoding, verdicts, replies), the policy's
 * plugin entries, and the plugin host process with plugins built into this
 * test (no dlopen): hooks called in order, vetoes, adjustments, and a
 * plugin that crashes, hangs, has the wrong ABI or fails init, which must
 * fail closed without taking this process down; and the egress proxy's
 * check hook, where on_egress plugs in. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "policy/policy.h"
#include "policy/proxy.h"
#include "util/fs.h"
#include "util/json.h"
#include "unit.h"

static json_t *J(const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, 0, &je);
	if (!j)
		fprintf(stderr, "  bad test JSON: %s\n", je.text);
	return j;
}

static char msg[1024];
/* The error of a call, or "(ok)". */
#define ERRMSG(call)                                                                                         \
	({                                                                                                   \
		sbx_err *_e = NULL;                                                                          \
		int _r = (call);                                                                             \
		snprintf(msg, sizeof(msg), "%s", _r < 0 ? sbx_err_message(_e) : "(ok)");                     \
		last_code = _r < 0 ? sbx_err_code(_e) : SBX_OK;                                              \
		last_errno = _r < 0 ? sbx_err_errno(_e) : 0;                                                 \
		sbx_err_free(_e);                                                                            \
		msg;                                                                                         \
	})
static sbx_code last_code;
static int last_errno;

/* ---- pure parts ------------------------------------------------------------------ */

TEST(hook_names)
{
	CHECK(plugin_hook_bit("create") == PLUGIN_HOOK_CREATE);
	CHECK(plugin_hook_bit("exec") == PLUGIN_HOOK_EXEC);
	CHECK(plugin_hook_bit("egress") == PLUGIN_HOOK_EGRESS);
	CHECK(plugin_hook_bit("fini") == 0 && plugin_hook_bit(NULL) == 0);
	CHECK_STREQ(plugin_hook_fn("exec"), "on_exec");
}

TEST(sanitize)
{
	char a[] = "two\r\nlines\tand\x7f";
	plugin_sanitize(a);
	CHECK_STREQ(a, "two  lines and ");
	char b[] = "caf\xc3\xa9 ok";
	plugin_sanitize(b);
	CHECK_STREQ(b, "caf\xc3\xa9 ok");
	char c[] = "bad \xff\xfe utf8 \xc3\xa9";
	plugin_sanitize(c);
	CHECK_STREQ(c, "bad ?? utf8 ??");
}

TEST(info_decode)
{
	plugin_info pi;
	sbx_err *e = NULL;
	json_t *x = J("{\"environment_id\":\"0123456789ab\",\"argv\":[\"/bin/ls\",\"-l\"],\"env\":[\"A=1\"],"
		      "\"cwd\":\"/tmp\",\"timeout_ms\":5,\"tty\":true}");
	CHECK(plugin_info_decode("exec", x, &pi, &e) == 0);
	CHECK_STREQ(pi.exec.argv[0], "/bin/ls");
	CHECK(pi.exec.argv[2] == NULL);
	CHECK_STREQ(pi.exec.env[0], "A=1");
	CHECK_STREQ(pi.exec.cwd, "/tmp");
	CHECK(pi.exec.timeout_ms == 5 && pi.exec.tty == 1 && pi.exec.size == sizeof(sbx_plugin_exec));
	plugin_info_done(&pi);
	json_decref(x);

	x = J("{\"environment_id\":\"e\",\"template\":\"host\",\"network\":\"allow\",\"network_allow\":[\"a."
	      "com\"],"
	      "\"limits\":{\"memory_bytes\":100,\"pids\":-1,\"cpus\":1.5,\"timeout_ms\":0},"
	      "\"volumes\":[{\"host\":\"/h\",\"path\":\"/p\",\"readonly\":true}],\"rootless\":false}");
	CHECK(plugin_info_decode("create", x, &pi, &e) == 0);
	CHECK(pi.create.limits.memory_bytes == 100 && pi.create.limits.pids == -1 &&
	      pi.create.limits.cpus == 1.5);
	CHECK(pi.create.limits.timeout_ms == -1 && pi.create.limits.ttl_ms == -1);
	CHECK_STREQ(pi.create.network_allow[0], "a.com");
	CHECK(pi.create.n_volumes == 1 && pi.create.volumes[0].readonly == 1);
	CHECK(pi.create.name == NULL);
	plugin_info_done(&pi);
	json_decref(x);

	x = J("{\"environment_id\":\"e\",\"kind\":\"http\",\"host\":\"pypi.org\",\"port\":80}");
	CHECK(plugin_info_decode("egress", x, &pi, &e) == 0);
	CHECK_STREQ(pi.egress.host, "pypi.org");
	CHECK(pi.egress.port == 80);
	plugin_info_done(&pi);
	json_decref(x);

	const char *bad[][2] = {
	    {"exec", "{\"environment_id\":\"e\",\"argv\":[]}"},
	    {"exec", "{\"environment_id\":\"e\",\"argv\":[\"\"]}"},
	    {"exec", "{\"environment_id\":\"e\",\"argv\":[1]}"},
	    {"exec", "{\"argv\":[\"ls\"]}"},
	    {"egress", "{\"environment_id\":\"e\",\"host\":\"a\",\"port\":0}"},
	    {"nosuch", "{\"environment_id\":\"e\"}"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		x = J(bad[i][1]);
		CHECK(strcmp(ERRMSG(plugin_info_decode(bad[i][0], x, &pi, &_e)), "(ok)") != 0);
		json_decref(x);
	}
}

/* Runs one verdict through plugin_verdict_apply: the reply (or NULL to go on). */
static json_t *apply(plugin_info *pi, int rc, const sbx_plugin_verdict *v, json_t *adjust)
{
	json_t *reply = NULL;
	int r = plugin_verdict_apply(pi, "p1", rc, v, adjust, &reply);
	if (r == 1 && reply) {
		json_decref(reply);
		return json_string("unexpected reply");
	}
	return reply;
}

TEST(verdicts)
{
	plugin_info pi;
	sbx_err *e = NULL;
	json_t *x = J("{\"environment_id\":\"e\",\"argv\":[\"ls\"],\"env\":[\"A=1\",\"B=2\"]}");
	CHECK(plugin_info_decode("exec", x, &pi, &e) == 0);
	json_t *adjust = json_object();
	sbx_plugin_verdict v = {.size = sizeof(v)};
	/* allow, unchanged */
	CHECK(apply(&pi, 0, &v, adjust) == NULL);
	CHECK(json_object_size(adjust) == 0);
	/* adjust: argv replaced, env added with a later value winning */
	static const char *const argv[] = {"nice", "ls", NULL};
	static const char *const add[] = {"B=3", "C=4", NULL};
	v.argv = argv;
	v.env_add = add;
	CHECK(apply(&pi, 0, &v, adjust) == NULL);
	CHECK_STREQ(pi.exec.argv[0], "nice"); /* the next plugin sees it */
	CHECK_STREQ(pi.exec.env[0], "A=1");
	CHECK_STREQ(pi.exec.env[1], "B=3");
	CHECK_STREQ(pi.exec.env[2], "C=4");
	CHECK(pi.exec.env[3] == NULL);
	CHECK(json_array_size(json_object_get(adjust, "argv")) == 2);
	CHECK(json_array_size(json_object_get(adjust, "env")) == 3);
	/* bad adjustments fail the chain */
	static const char *const noeq[] = {"NOPE", NULL};
	static const char *const empty0[] = {"", NULL};
	sbx_plugin_verdict b = {.size = sizeof(b), .env_add = noeq};
	json_t *r = apply(&pi, 0, &b, adjust);
	CHECK(r && streq(json_str(r, "result"), "error") && strstr(json_str(r, "message"), "K=V"));
	json_decref(r);
	b = (sbx_plugin_verdict){.size = sizeof(b), .argv = empty0};
	r = apply(&pi, 0, &b, adjust);
	CHECK(r && streq(json_str(r, "result"), "error") && strstr(json_str(r, "message"), "argv"));
	json_decref(r);
	/* deny with a message; deny without one; a failing hook */
	b = (sbx_plugin_verdict){.size = sizeof(b)};
	sbx_plugin_deny(&b, "no %s\nhere", "ls");
	r = apply(&pi, 0, &b, adjust);
	CHECK(r && streq(json_str(r, "result"), "deny"));
	CHECK_STREQ(json_str(r, "message"), "no ls here");
	CHECK_STREQ(json_str(r, "plugin"), "p1");
	json_decref(r);
	b = (sbx_plugin_verdict){.size = sizeof(b), .deny = 1};
	r = apply(&pi, 0, &b, adjust);
	CHECK_STREQ(json_str(r, "message"), "no reason given");
	json_decref(r);
	b = (sbx_plugin_verdict){.size = sizeof(b)};
	r = apply(&pi, -3, &b, adjust);
	CHECK(r && streq(json_str(r, "result"), "error") && strstr(json_str(r, "message"), "returned -3"));
	json_decref(r);
	/* a message that fills the buffer without a NUL stays bounded */
	memset(b.message, 'x', sizeof(b.message));
	b.deny = 1;
	r = apply(&pi, 0, &b, adjust);
	CHECK(r && strlen(json_str(r, "message")) == SBX_PLUGIN_MESSAGE_MAX - 1);
	json_decref(r);
	plugin_info_done(&pi);
	json_decref(adjust);
	json_decref(x);

	/* create: limits only go down */
	x = J("{\"environment_id\":\"e\",\"limits\":{\"memory_bytes\":1000,\"pids\":-1,\"cpus\":2}}");
	CHECK(plugin_info_decode("create", x, &pi, &e) == 0);
	adjust = json_object();
	v = (sbx_plugin_verdict){.size = sizeof(v), .limits = {.memory_bytes = 500, .pids = 10, .cpus = 1}};
	CHECK(apply(&pi, 0, &v, adjust) == NULL);
	CHECK(pi.create.limits.memory_bytes == 500 && pi.create.limits.pids == 10 &&
	      pi.create.limits.cpus == 1);
	json_t *l = json_object_get(adjust, "limits");
	CHECK(json_int(l, "memory_bytes", 0) == 500 && json_int(l, "pids", 0) == 10);
	v = (sbx_plugin_verdict){.size = sizeof(v), .limits = {.memory_bytes = 600}};
	r = apply(&pi, 0, &v, adjust);
	CHECK(r && strstr(json_str(r, "message"), "raise limits.memory_bytes from 500 to 600"));
	json_decref(r);
	v = (sbx_plugin_verdict){.size = sizeof(v), .limits = {.ttl_ms = -5}};
	r = apply(&pi, 0, &v, adjust);
	CHECK(r && strstr(json_str(r, "message"), "only positive"));
	json_decref(r);
	v = (sbx_plugin_verdict){.size = sizeof(v), .limits = {.cpus = 4}};
	r = apply(&pi, 0, &v, adjust);
	CHECK(r && strstr(json_str(r, "message"), "raise limits.cpus"));
	json_decref(r);
	plugin_info_done(&pi);
	json_decref(adjust);
	json_decref(x);
}

TEST(replies)
{
	json_t *adj = NULL;
	json_t *m = J("{\"result\":\"allow\",\"adjust\":{\"argv\":[\"x\"]}}");
	CHECK_STREQ(ERRMSG(plugin_reply_decode(m, "exec", &adj, &_e)), "(ok)");
	CHECK(adj && json_object_get(adj, "argv"));
	json_decref(adj);
	json_decref(m);
	m = J("{\"result\":\"allow\"}");
	CHECK_STREQ(ERRMSG(plugin_reply_decode(m, "exec", &adj, &_e)), "(ok)");
	CHECK(adj == NULL);
	json_decref(m);
	m = J("{\"result\":\"deny\",\"plugin\":\"guard\",\"message\":\"not today\"}");
	CHECK_STREQ(ERRMSG(plugin_reply_decode(m, "exec", &adj, &_e)), "plugin 'guard' refused: not today");
	CHECK(last_code == SBX_E_INVALID_ARGUMENT && last_errno == EPERM);
	json_decref(m);
	m = J("{\"result\":\"error\",\"plugin\":\"guard\",\"message\":\"on_exec failed (returned 1)\"}");
	CHECK_STREQ(ERRMSG(plugin_reply_decode(m, "exec", &adj, &_e)),
		    "plugin 'guard' failed: on_exec failed (returned 1); refusing");
	CHECK(last_code == SBX_E_UNAVAILABLE);
	json_decref(m);
	m = J("{\"what\":1}");
	CHECK(strstr(ERRMSG(plugin_reply_decode(m, "egress", &adj, &_e)), "malformed reply to on_egress"));
	CHECK(last_errno == EPROTO);
	json_decref(m);
}

TEST(policy_plugin_entries)
{
	policy *p = NULL, *q = NULL, *m = NULL;
	sbx_err *e = NULL;
	const char *doc = "{\"plugins\":[\"/a/x.so\",{\"path\":\"/a/y.so\",\"config\":{\"deny\":[\"rm\"]}}]}";
	CHECK(policy_parse(doc, strlen(doc), &p, &e) == 0);
	CHECK_STREQ(p->plugins[0], "/a/x.so");
	CHECK_STREQ(p->plugins[1], "/a/y.so");
	CHECK(json_object_get(p->plugin_config, "/a/x.so") == NULL);
	CHECK(json_array_size(json_object_get(json_object_get(p->plugin_config, "/a/y.so"), "deny")) == 1);
	/* the canonical form keeps the config */
	json_t *j = policy_to_json(p);
	char *s = json_dumps(j, JSON_COMPACT);
	CHECK(strstr(s, "{\"path\":\"/a/y.so\",\"config\":{\"deny\":[\"rm\"]}}"));
	free(s);
	json_decref(j);
	/* errors */
	const char *bad[][2] = {
	    {"{\"plugins\":[{\"config\":1}]}", "needs a \"path\""},
	    {"{\"plugins\":[{\"path\":\"/a/x.so\",\"cfg\":1}]}", "plugins[0]"},
	    {"{\"plugins\":[{\"path\":\"rel.so\"}]}", "plugins[0]"},
	    {"{\"plugins\":[\"/a/x.so\",{\"path\":\"/a/x.so\"}]}", "named twice"},
	    {"{\"plugins\":[{\"path\":\"/a/x.txt\"}]}", "not a shared object"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		policy *b = NULL;
		CHECK(strstr(ERRMSG(policy_parse(bad[i][0], strlen(bad[i][0]), &b, &_e)), bad[i][1]));
		policy_free(b);
	}
	/* merge: a later policy keeps a subset; it may not change a config */
	const char *later = "{\"plugins\":[\"/a/y.so\"]}";
	CHECK(policy_parse(later, strlen(later), &q, &e) == 0);
	CHECK(policy_merge(p, q, &m, &e) == 0);
	CHECK(m->plugins[0] && !m->plugins[1]);
	CHECK(json_object_get(m->plugin_config, "/a/y.so")); /* the base's config stays */
	policy_free(q);
	policy_free(m);
	later = "{\"plugins\":[{\"path\":\"/a/y.so\",\"config\":{\"deny\":[]}}]}";
	CHECK(policy_parse(later, strlen(later), &q, &e) == 0);
	CHECK(strstr(ERRMSG(policy_merge(p, q, &m, &_e)), "config differs"));
	policy_free(q);
	later = "{\"override\":true,\"plugins\":[{\"path\":\"/a/y.so\",\"config\":{\"deny\":[]}}]}";
	CHECK(policy_parse(later, strlen(later), &q, &e) == 0);
	CHECK(policy_merge(p, q, &m, &e) == 0);
	CHECK(json_array_size(json_object_get(json_object_get(m->plugin_config, "/a/y.so"), "deny")) == 0);
	policy_free(q);
	policy_free(m);
	policy_free(p);
}

/* ---- the host process, with built-in plugins ------------------------------------------ */

static int guard_on_exec(void *ctx, const sbx_plugin_exec *info, sbx_plugin_verdict *out)
{
	const char *a0 = info->argv[0];
	if (streq(a0, "rm"))
		sbx_plugin_deny(out, "rm is not allowed (config %s)", (const char *)ctx);
	else if (streq(a0, "crash"))
		raise(SIGSEGV);
	else if (streq(a0, "forkcrash")) {
		/* a child that would outlive the host, then a crash */
		pid_t kid = fork();
		if (kid == 0) {
			for (;;)
				pause();
		}
		char p[64];
		snprintf(p, sizeof(p), "/tmp/sbx-test-plugin-kid.%d", (int)getppid());
		FILE *f = fopen(p, "w");
		if (f) {
			fprintf(f, "%d", (int)kid);
			fclose(f);
		}
		raise(SIGSEGV);
	} else if (streq(a0, "hang"))
		pause();
	else if (streq(a0, "fail"))
		return 7;
	else if (streq(a0, "whoami"))
		sbx_plugin_deny(out, "uid=%d", (int)getuid());
	else if (streq(a0, "mount")) {
		int r = mount("none", "/mnt", "tmpfs", 0, NULL);
		sbx_plugin_deny(out, "mount=%d errno=%d", r, errno);
	} else if (streq(a0, "wrap")) {
		static const char *const argv[] = {"nice", "wrapped", NULL};
		static const char *const env[] = {"WRAPPED=1", NULL};
		out->argv = argv;
		out->env_add = env;
	}
	return 0;
}

static int guard_init(const char *config, void **ctx, char *errbuf, size_t errlen)
{
	if (strstr(config, "crash"))
		raise(SIGSEGV);
	if (strstr(config, "refuse")) {
		snprintf(errbuf, errlen, "bad config %s", config);
		return -1;
	}
	*ctx = strdup(config);
	return 0;
}

static void guard_fini(void *ctx)
{
	/* The marker only for the test that looks for it (and removes it):
	 * the other tests' hosts end after their test has moved on. */
	if (strcmp((const char *)ctx, "\"cfg1\"") != 0) {
		free(ctx);
		return;
	}
	char p[64];
	snprintf(p, sizeof(p), "/tmp/sbx-test-plugin-fini.%d", (int)getppid());
	FILE *f = fopen(p, "w");
	if (f) {
		fputs((const char *)ctx, f);
		fclose(f);
	}
	free(ctx);
}

static const struct sbx_plugin guard = {
    .abi_version = SBX_PLUGIN_ABI_VERSION,
    .size = sizeof(struct sbx_plugin),
    .name = "guard",
    .init = guard_init,
    .fini = guard_fini,
    .on_exec = guard_on_exec,
};

/* Sees what the guard passed on: vetoes "nice" only after a wrap. */
static int second_on_exec(void *ctx, const sbx_plugin_exec *info, sbx_plugin_verdict *out)
{
	if (streq(info->argv[0], "nice") && info->env[0] && streq(info->env[0], "WRAPPED=1"))
		sbx_plugin_deny(out, "second saw %s %s", info->argv[0], info->argv[1]);
	return 0;
}

static int second_on_create(void *ctx, const sbx_plugin_create *info, sbx_plugin_verdict *out)
{
	if (info->limits.memory_bytes < 0 || info->limits.memory_bytes > 1000)
		out->limits.memory_bytes = 1000;
	if (info->name && streq(info->name, "forbidden"))
		sbx_plugin_deny(out, "no environment may be called %s", info->name);
	return 0;
}

static int second_on_egress(void *ctx, const sbx_plugin_egress *info, sbx_plugin_verdict *out)
{
	if (streq(info->host, "evil.test"))
		sbx_plugin_deny(out, "%s %s:%d is evil", info->kind, info->host, info->port);
	return 0;
}

static const struct sbx_plugin second = {
    .abi_version = SBX_PLUGIN_ABI_VERSION,
    .size = sizeof(struct sbx_plugin),
    .name = "second",
    .on_create = second_on_create,
    .on_exec = second_on_exec,
    .on_egress = second_on_egress,
};

static const char *call_exec(plugin_host *h, const char *argv0, json_t **adjust)
{
	json_t *info = json_pack("{s:s,s:[s],s:[]}", "environment_id", "0123456789ab", "argv", argv0, "env");
	const char *r = ERRMSG(plugin_host_call(h, "exec", info, adjust, &_e));
	json_decref(info);
	return r;
}

static plugin_host *start2(const char *config, int timeout_ms)
{
	const struct sbx_plugin *ps[] = {&guard, &second};
	const char *cfgs[] = {config, NULL};
	plugin_host *h = NULL;
	sbx_err *e = NULL;
	if (plugin_host_start_static(ps, cfgs, 2, timeout_ms, &h, &e) < 0) {
		fprintf(stderr, "  start: %s\n", sbx_err_message(e));
		sbx_err_free(e);
	}
	return h;
}

TEST(host_hooks_veto_and_adjust)
{
	signal(SIGPIPE, SIG_IGN);
	plugin_host *h = start2("\"cfg1\"", 2000);
	CHECK(h);
	CHECK(plugin_host_hooks(h) == (PLUGIN_HOOK_CREATE | PLUGIN_HOOK_EXEC | PLUGIN_HOOK_EGRESS));
	CHECK_STREQ(plugin_host_names(h)[1], "second");
	json_t *adj = NULL;
	CHECK_STREQ(call_exec(h, "ls", &adj), "(ok)");
	CHECK(adj == NULL);
	CHECK_STREQ(call_exec(h, "rm", &adj), "plugin 'guard' refused: rm is not allowed (config \"cfg1\")");
	CHECK(last_code == SBX_E_INVALID_ARGUMENT);
	/* the second plugin sees the first one's adjustment */
	CHECK_STREQ(call_exec(h, "wrap", &adj), "plugin 'second' refused: second saw nice wrapped");
	CHECK_STREQ(call_exec(h, "fail", &adj),
		    "plugin 'guard' failed: on_exec failed (returned 7); refusing");
	CHECK(last_code == SBX_E_UNAVAILABLE);
	/* one failure does not end the host */
	CHECK_STREQ(call_exec(h, "ls", &adj), "(ok)");
	/* hooks run unprivileged, under the seccomp deny list */
	if (geteuid() == 0)
		CHECK_STREQ(call_exec(h, "whoami", &adj), "plugin 'guard' refused: uid=65534");
	CHECK_STREQ(call_exec(h, "mount", &adj), "plugin 'guard' refused: mount=-1 errno=1");
	/* create: lowered limits, a veto */
	json_t *info =
	    json_pack("{s:s,s:{s:I}}", "environment_id", "e", "limits", "memory_bytes", (json_int_t)5000);
	CHECK_STREQ(ERRMSG(plugin_host_call(h, "create", info, &adj, &_e)), "(ok)");
	CHECK(json_int(json_object_get(adj, "limits"), "memory_bytes", 0) == 1000);
	json_decref(adj);
	adj = NULL;
	json_object_set_new(info, "name", json_string("forbidden"));
	CHECK(strstr(ERRMSG(plugin_host_call(h, "create", info, &adj, &_e)),
		     "no environment may be called forbidden"));
	json_decref(info);
	/* egress */
	info = json_pack("{s:s,s:s,s:s,s:i}", "environment_id", "e", "kind", "connect", "host", "evil.test",
			 "port", 443);
	CHECK_STREQ(ERRMSG(plugin_host_call(h, "egress", info, NULL, &_e)),
		    "plugin 'second' refused: connect evil.test:443 is evil");
	json_object_set_new(info, "host", json_string("good.test"));
	CHECK_STREQ(ERRMSG(plugin_host_call(h, "egress", info, NULL, &_e)), "(ok)");
	json_decref(info);
	/* stop: fini runs; later calls fail closed */
	char p[64];
	snprintf(p, sizeof(p), "/tmp/sbx-test-plugin-fini.%d", (int)getpid());
	unlink(p);
	plugin_host_stop(h);
	CHECK(access(p, F_OK) == 0);
	unlink(p);
	CHECK(plugin_host_dead(h));
	CHECK(strstr(call_exec(h, "ls", &adj), "refusing"));
	plugin_host_free(h);
}

TEST(host_crash_fails_closed)
{
	signal(SIGPIPE, SIG_IGN);
	plugin_host *h = start2("null", 2000);
	CHECK(h);
	json_t *adj = NULL;
	const char *m = call_exec(h, "crash", &adj);
	CHECK(strstr(m, "plugin host crashed: plugin 'guard' in on_exec: killed by signal 11"));
	CHECK(strstr(m, "refusing"));
	CHECK(last_code == SBX_E_UNAVAILABLE);
	CHECK(plugin_host_dead(h));
	/* every later call is refused, with the same reason */
	CHECK(strstr(call_exec(h, "ls", &adj), "plugin host crashed"));
	plugin_host_free(h);
	/* what a plugin started ends with its host */
	h = start2("null", 2000);
	CHECK(h);
	char p[64];
	snprintf(p, sizeof(p), "/tmp/sbx-test-plugin-kid.%d", (int)getpid());
	unlink(p);
	CHECK(strstr(call_exec(h, "forkcrash", &adj), "plugin host crashed"));
	FILE *f = fopen(p, "r");
	int kid = 0;
	CHECK(f && fscanf(f, "%d", &kid) == 1 && kid > 0);
	fclose(f);
	unlink(p);
	bool gone = false;
	for (int i = 0; i < 100 && !gone; i++) {
		char sp[64], *st = NULL;
		size_t n = 0;
		snprintf(sp, sizeof(sp), "/proc/%d/stat", kid);
		FILE *s = fopen(sp, "r");
		gone = !s || (getline(&st, &n, s) > 0 && strstr(st, ") Z "));
		free(st);
		if (s)
			fclose(s);
		if (!gone)
			usleep(10000);
	}
	CHECK(gone);
	plugin_host_free(h);
}

TEST(host_timeout_fails_closed)
{
	signal(SIGPIPE, SIG_IGN);
	plugin_host *h = start2("null", 300);
	CHECK(h);
	json_t *adj = NULL;
	const char *m = call_exec(h, "hang", &adj);
	CHECK(
	    strstr(m, "did not answer within 300 ms (plugin 'guard' in on_exec) and was stopped; refusing"));
	CHECK(strstr(call_exec(h, "ls", &adj), "did not answer"));
	plugin_host_free(h);
}

TEST(host_load_failures)
{
	signal(SIGPIPE, SIG_IGN);
	plugin_host *h = NULL;
	struct sbx_plugin wrong = guard;
	wrong.abi_version = 99;
	const struct sbx_plugin *ps[] = {&wrong};
	CHECK(strstr(ERRMSG(plugin_host_start_static(ps, NULL, 1, 1000, &h, &_e)),
		     "ABI version 99, but this sbx loads version 1 only"));
	struct sbx_plugin small = guard;
	small.size = 8;
	ps[0] = &small;
	CHECK(strstr(ERRMSG(plugin_host_start_static(ps, NULL, 1, 1000, &h, &_e)),
		     "struct sbx_plugin is 8 bytes"));
	struct sbx_plugin noname = guard;
	noname.name = "two words";
	ps[0] = &noname;
	CHECK(strstr(ERRMSG(plugin_host_start_static(ps, NULL, 1, 1000, &h, &_e)), "its name must be"));
	ps[0] = &guard;
	const char *cfg[] = {"\"refuse\""};
	CHECK_STREQ(ERRMSG(plugin_host_start_static(ps, cfg, 1, 1000, &h, &_e)),
		    "plugin 'guard': init failed: bad config \"refuse\"");
	cfg[0] = "\"crash\"";
	CHECK(strstr(ERRMSG(plugin_host_start_static(ps, cfg, 1, 1000, &h, &_e)),
		     "plugin host crashed: plugin 'guard' in init: killed by signal 11"));
	/* dlopen'd plugins: missing, outside the plugin directories, not a
	 * shared object, writable by everyone, not a plugin */
	json_t *spec = J("[{\"path\":\"/nonexistent/x.so\"}]");
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)),
		     "plugin '/nonexistent/x.so': No such file"));
	CHECK(last_code == SBX_E_NOT_FOUND);
	json_decref(spec);
	char dir[] = "/tmp/sbx-test-plugdir-XXXXXX", tmp[300], lib[300], link[300];
	CHECK(mkdtemp(dir));
	snprintf(tmp, sizeof(tmp), "%s/text.so", dir);
	FILE *f = fopen(tmp, "w");
	CHECK(f && fputs("not elf", f) >= 0);
	fclose(f);
	chmod(tmp, 0644);
	spec = json_pack("[{s:s}]", "path", tmp);
	unsetenv("SBX_PLUGIN_PATH");
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)),
		     "is not in a plugin directory (/usr/lib/sbx/plugins:/usr/local/lib/sbx/plugins)"));
	setenv("SBX_PLUGIN_PATH", "relative:/nonexistent", 1);
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)), "is not in a plugin directory"));
	setenv("SBX_PLUGIN_PATH", dir, 1);
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)), "cannot load it"));
	chmod(tmp, 0666);
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)), "writable by every user"));
	chmod(tmp, 0644);
	chmod(dir, 0777);
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)), "plugin directory"));
	CHECK(strstr(msg, "is writable by every user"));
	chmod(dir, 0700);
	json_decref(spec);
	/* a symlink from elsewhere into the directory resolves into it; one out of it does not */
	snprintf(link, sizeof(link), "%s-link.so", dir);
	CHECK(symlink(tmp, link) == 0);
	spec = json_pack("[s]", link);
	CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)), "cannot load it"));
	json_decref(spec);
	unlink(link);
	unlink(tmp);
	/* a library that is not a plugin */
	snprintf(lib, sizeof(lib), "%s/libz.so", dir);
	char *zbuf = NULL;
	size_t zlen = 0;
	if (fs_read_file("/lib/x86_64-linux-gnu/libz.so.1", 16 << 20, &zbuf, &zlen) == 0) {
		CHECK(fs_write_atomic(lib, zbuf, zlen, 0644) == 0);
		free(zbuf);
		spec = json_pack("[s]", lib);
		CHECK(strstr(ERRMSG(plugin_host_start(spec, 1000, &h, &_e)),
			     "not an sbx plugin (no sbx_plugin_entry symbol)"));
		json_decref(spec);
		unlink(lib);
	}
	rmdir(dir);
	unsetenv("SBX_PLUGIN_PATH");
	CHECK(h == NULL);
}

/* Printed, not asserted (docs/plugins.md "Costs"). */
TEST(measure_hook_round_trip)
{
	signal(SIGPIPE, SIG_IGN);
	plugin_host *h = start2("null", 2000);
	CHECK(h);
	json_t *info = json_pack("{s:s,s:[s,s],s:[s]}", "environment_id", "0123456789ab", "argv", "ls", "-l",
				 "env", "A=1");
	struct timespec t0, t1;
	int n = 2000, ok = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		json_t *adj = NULL;
		ok += plugin_host_call(h, "exec", info, &adj, NULL) == 0;
		json_decref(adj);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double us = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / n;
	fprintf(stderr, "  on_exec round trip (2 plugins): %.1f us per call\n", us);
	CHECK(ok == n);
	json_decref(info);
	plugin_host_free(h);
}

/* ---- the proxy's check hook (where on_egress plugs in) --------------------------------- */

static int check_calls;
static int deny_evil(void *ud, const char *kind, const char *host, int port, char *why, size_t cap)
{
	__atomic_add_fetch(&check_calls, 1, __ATOMIC_SEQ_CST);
	if (!streq(host, "evil.test"))
		return 1;
	snprintf(why, cap, "plugin 'x' refused: %s %s:%d\r\nX-Injected: 1", kind, host, port);
	return 0;
}

static int listen_any(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t l = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) < 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

typedef struct pxy {
	int lfd, stop;
	egress_allowlist *al;
	proxy_opts o;
} pxy;

static void *pxy_main(void *arg)
{
	pxy *p = arg;
	(void)proxy_serve(p->lfd, p->al, &p->o, NULL);
	return NULL;
}

/* Sends req to the proxy, returns what comes back before EOF (up to 4 KiB). */
static char *round_trip(int port, const char *req, char *buf, size_t cap)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	size_t n = 0;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && write(fd, req, strlen(req)) > 0) {
		ssize_t k;
		while (n < cap - 1 && (k = read(fd, buf + n, cap - 1 - n)) > 0) {
			n += (size_t)k;
			if (strstr(buf, "200 Connection established\r\n\r\n"))
				break;
		}
	}
	buf[n] = '\0';
	close(fd);
	return buf;
}

TEST(proxy_check_hook)
{
	signal(SIGPIPE, SIG_IGN);
	int pport = 0, uport = 0;
	pxy p = {.o = PROXY_OPTS_INIT};
	p.lfd = listen_any(&pport);
	int up = listen_any(&uport);
	CHECK(p.lfd >= 0 && up >= 0);
	char rule[64];
	snprintf(rule, sizeof(rule), "127.0.0.1:%d", uport);
	const char *rules[] = {rule, "evil.test:443", "good.test:443", NULL};
	CHECK(egress_allowlist_parse(rules, &p.al, NULL) == 0);
	p.stop = eventfd(0, EFD_CLOEXEC);
	p.o.stop_fd = p.stop;
	p.o.check = deny_evil;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, pxy_main, &p) == 0);
	char buf[4096], req[256];
	/* refused: 403 with the check's reason on one header line */
	round_trip(pport, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n", buf, sizeof(buf));
	CHECK(strstr(buf, "HTTP/1.1 403 Forbidden"));
	CHECK(strstr(buf, "X-Sbx-Policy-Rule: plugin 'x' refused: connect evil.test:443  X-Injected: 1\r\n"));
	CHECK(strstr(buf, "sbx egress policy refused evil.test:443: plugin 'x' refused"));
	CHECK(!strstr(buf, "\r\nX-Injected"));
	/* the allowlist comes first: a host it refuses never reaches the check */
	int before = __atomic_load_n(&check_calls, __ATOMIC_SEQ_CST);
	round_trip(pport, "CONNECT other.test:443 HTTP/1.1\r\n\r\n", buf, sizeof(buf));
	CHECK(strstr(buf, "403") && strstr(buf, "no rule allows it"));
	CHECK(__atomic_load_n(&check_calls, __ATOMIC_SEQ_CST) == before);
	/* an IP literal is checked too, then connected */
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n", uport);
	round_trip(pport, req, buf, sizeof(buf));
	CHECK(strstr(buf, "200 Connection established"));
	CHECK(__atomic_load_n(&check_calls, __ATOMIC_SEQ_CST) == before + 1);
	uint64_t one = 1;
	CHECK(write(p.stop, &one, sizeof(one)) == sizeof(one));
	pthread_join(t, NULL);
	close(p.stop);
	close(p.lfd);
	close(up);
	egress_allowlist_free(p.al);
}
