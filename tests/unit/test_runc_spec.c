/* sbx-runc's pure parts: config.json / process.json / resources parsing,
 * mount options, signals, the state file, status decisions, /proc stat
 * parsing and cgroupsPath resolution (src/runc/oci_spec.h, oci_state.h). */
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>

#include "runc/oci_spec.h"
#include "runc/oci_state.h"
#include "sbx.h"
#include "unit.h"
#include "util/json.h"

static const char docker_like[] =
    "{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"terminal\":false,\"user\":{\"uid\":65534,\"gid\":65534,"
    "\"additionalGids\":[10,20]},\"args\":[\"sh\",\"-c\",\"true\"],\"env\":[\"PATH=/"
    "bin\",\"A=b\"],\"cwd\":\"/tmp\","
    "\"capabilities\":{\"bounding\":[\"CAP_CHOWN\",\"CAP_KILL\",\"CAP_NOSUCH\"],\"effective\":[\"CAP_KILL\"]}"
    ","
    "\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1024}],\"noNewPrivileges\":true,"
    "\"oomScoreAdj\":-500},"
    "\"root\":{\"path\":\"/var/lib/x/rootfs\",\"readonly\":true},\"hostname\":\"h1\","
    "\"mounts\":[{\"destination\":\"/"
    "proc\",\"type\":\"proc\",\"source\":\"proc\",\"options\":[\"nosuid\",\"noexec\",\"nodev\"]},"
    "{\"destination\":\"/data\",\"source\":\"/srv\",\"options\":[\"rbind\",\"ro\",\"rprivate\"]},"
    "{\"destination\":\"/dev/"
    "shm\",\"type\":\"tmpfs\",\"source\":\"shm\",\"options\":[\"nosuid\",\"mode=1777\",\"size=65536k\"]}],"
    "\"hooks\":{\"prestart\":[{\"path\":\"/proc/1/exe\",\"args\":[\"libnetwork-setkey\",\"x\"]}],"
    "\"poststop\":[{\"path\":\"/bin/true\",\"timeout\":5}]},"
    "\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/7/ns/"
    "net\"},{\"type\":\"mount\"}],"
    "\"uidMappings\":[{\"containerID\":0,\"hostID\":100000,\"size\":65536}],"
    "\"resources\":{\"memory\":{\"limit\":67108864,\"swap\":67108864},\"pids\":{\"limit\":100},\"cpu\":{"
    "\"shares\":512,"
    "\"quota\":50000,\"period\":100000}},\"cgroupsPath\":\"/docker/abc\",\"maskedPaths\":[\"/proc/kcore\"],"
    "\"readonlyPaths\":[\"/proc/sys\"],\"sysctl\":{\"net.ipv4.ip_forward\":\"1\"},"
    "\"seccomp\":{\"defaultAction\":\"SCMP_ACT_ERRNO\"}},\"annotations\":{\"run.sbx.wall.seccomp\":\"off\"}}";

TEST(spec_docker_like)
{
	oci_spec *s = NULL;
	sbx_err *e = NULL;
	CHECK(oci_spec_parse(docker_like, sizeof(docker_like) - 1, &s, &e) == 0);
	CHECK_STREQ(s->process.args[0], "sh");
	CHECK_STREQ(s->process.cwd, "/tmp");
	CHECK(s->process.user.uid == 65534 && s->process.user.n_additional_gids == 2);
	CHECK(s->process.caps.present);
	CHECK(s->process.caps.bounding == ((1ULL << 0) | (1ULL << 5))); /* the unknown one ignored */
	CHECK(s->process.n_rlimits == 1 && s->process.rlimits[0].resource == RLIMIT_NOFILE &&
	      s->process.rlimits[0].hard == 1048576);
	CHECK(s->process.no_new_privileges && s->process.has_oom_score_adj &&
	      s->process.oom_score_adj == -500);
	CHECK(s->root_readonly);
	CHECK_STREQ(s->hostname, "h1");
	CHECK(s->n_mounts == 3);
	/* A mount without a type is a bind when its options say so (CDI). */
	CHECK_STREQ(s->mounts[1].type, "bind");
	CHECK(s->mounts[1].bind && (s->mounts[1].flags & MS_RDONLY) && (s->mounts[1].flags & MS_REC));
	CHECK(s->mounts[1].propagation == (MS_PRIVATE | MS_REC));
	CHECK_STREQ(s->mounts[2].data, "mode=1777,size=65536k");
	CHECK(s->n_hooks[OCI_HOOK_PRESTART] == 1 && s->n_hooks[OCI_HOOK_POSTSTOP] == 1);
	CHECK(s->hooks[OCI_HOOK_POSTSTOP][0].timeout == 5);
	CHECK(s->n_namespaces == 3 && s->namespaces[1].type == CLONE_NEWNET);
	CHECK_STREQ(s->namespaces[1].path, "/proc/7/ns/net");
	CHECK(s->n_uid_mappings == 1 && s->uid_mappings[0].host_id == 100000);
	CHECK(s->resources.memory_limit == 67108864 && s->resources.pids_limit == 100 &&
	      s->resources.cpu_shares == 512 && s->resources.cpu_quota == 50000);
	CHECK_STREQ(s->cgroups_path, "/docker/abc");
	CHECK_STREQ(s->masked_paths[0], "/proc/kcore");
	CHECK(s->seccomp && s->sysctl);
	CHECK_STREQ(json_string_value(json_object_get(s->annotations, "run.sbx.wall.seccomp")), "off");
	oci_spec_free(s);
}

TEST(spec_defaults_and_refusals)
{
	static const char *const bad[] = {
	    "{}",									 /* no process */
	    "{\"process\":{\"args\":[]}}",						 /* empty args */
	    "{\"process\":{\"args\":[\"a\"],\"cwd\":\"rel\"}}",				 /* relative cwd */
	    "{\"process\":{\"args\":[\"a\"],\"user\":{\"uid\":-1}}}",			 /* bad uid */
	    "{\"process\":{\"args\":[\"a\"],\"rlimits\":[{\"type\":\"RLIMIT_NOPE\"}]}}", /* unknown rlimit */
	    "{\"process\":{\"args\":[\"a\"]},\"mounts\":[{\"destination\":\"rel\",\"type\":\"tmpfs\"}]}",
	    "{\"process\":{\"args\":[\"a\"]},\"mounts\":[{\"destination\":\"/x\"}]}", /* no type, not a bind
										       */
	    "{\"process\":{\"args\":[\"a\"]},\"mounts\":[{\"destination\":\"/x\",\"type\":\"bind\"}]}",
	    "{\"process\":{\"args\":[\"a\"]},\"linux\":{\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"pid\"}"
	    "]}}",
	    "{\"process\":{\"args\":[\"a\"]},\"linux\":{\"namespaces\":[{\"type\":\"nope\"}]}}",
	    "{\"process\":{\"args\":[\"a\"]},\"hooks\":{\"prestart\":[{\"path\":\"rel\"}]}}",
	    "{\"process\":{\"args\":\"a\"}}",
	    "[1]",
	    "{\"process\":{\"args\":[\"a\"]},\"mounts\":[{\"destination\":\"/"
	    "x\",\"type\":\"none\",\"source\":\"/y\",\"options\":[\"idmap\"]}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		oci_spec *s = NULL;
		sbx_err *e = NULL;
		if (oci_spec_parse(bad[i], strlen(bad[i]), &s, &e) == 0) {
			fprintf(stderr, "  accepted: %s\n", bad[i]);
			oci_spec_free(s);
			CHECK(0);
		}
		CHECK(sbx_err_code(e) == SBX_E_INVALID_ARGUMENT || sbx_err_code(e) == SBX_E_INTERNAL);
		sbx_err_free(e);
	}
	const char *min = "{\"process\":{\"args\":[\"a\"]}}";
	oci_spec *s = NULL;
	CHECK(oci_spec_parse(min, strlen(min), &s, NULL) == 0);
	CHECK_STREQ(s->root_path, "rootfs");
	CHECK_STREQ(s->process.cwd, "/");
	CHECK(s->process.env && !s->process.env[0]);
	CHECK(!s->process.caps.present);
	CHECK(s->masked_paths && !s->masked_paths[0]);
	oci_spec_free(s);
}

TEST(process_json_exec)
{
	const char *p = "{\"args\":[\"ls\"],\"env\":[\"PATH=/usr/bin\"],\"terminal\":true,\"cwd\":\"/\","
			"\"user\":{\"uid\":1,\"gid\":2,\"umask\":18}}";
	oci_process pr = {0};
	CHECK(oci_process_parse(p, strlen(p), &pr, NULL) == 0);
	CHECK(pr.terminal && pr.user.uid == 1 && pr.user.gid == 2 && pr.user.has_umask &&
	      pr.user.umask == 022);
	CHECK_STREQ(oci_env_get(pr.env, "PATH"), "/usr/bin");
	CHECK(oci_env_get(pr.env, "PAT") == NULL);
	oci_process_done(&pr);
}

/* docker update sends every field; zeros mean unchanged (they stay 0 here,
 * and cgroup.c writes only non-zero ones). */
TEST(resources_zero_is_unset)
{
	const char *r = "{\"memory\":{\"limit\":0,\"swap\":0,\"reservation\":0},\"pids\":{\"limit\":0},"
			"\"cpu\":{\"shares\":512,\"quota\":0,\"period\":0,\"cpus\":\"\",\"mems\":\"\"}}";
	oci_resources res = {0};
	CHECK(oci_resources_parse(r, strlen(r), &res, NULL) == 0);
	CHECK(res.memory_limit == 0 && res.memory_swap == 0 && res.pids_limit == 0 && res.cpu_quota == 0);
	CHECK(res.cpu_shares == 512);
	oci_resources_done(&res);
	const char *u = "{\"memory\":{\"limit\":-1},\"pids\":{\"limit\":-1}}";
	CHECK(oci_resources_parse(u, strlen(u), &res, NULL) == 0);
	CHECK(res.memory_limit == -1 && res.pids_limit == -1);
	oci_resources_done(&res);
	const char *bad = "{\"memory\":{\"limit\":\"64m\"}}";
	CHECK(oci_resources_parse(bad, strlen(bad), &res, NULL) < 0);
}

/* swappiness 0 is a value (not "unset"); -1 is docker's "default"; blockIO
 * device lists keep their kind and numbers; a weight over 1000 is refused. */
TEST(resources_swappiness_oom_blkio)
{
	const char *r =
	    "{\"memory\":{\"swappiness\":0,\"disableOOMKiller\":true},\"blockIO\":{\"weight\":300,"
	    "\"weightDevice\":[{\"major\":8,\"minor\":0,\"weight\":200,\"leafWeight\":100}],"
	    "\"throttleReadBpsDevice\":[{\"major\":254,\"minor\":0,\"rate\":1048576}],"
	    "\"throttleWriteIOPSDevice\":[{\"major\":254,\"minor\":1,\"rate\":300}]}}";
	oci_resources res = {0};
	CHECK(oci_resources_parse(r, strlen(r), &res, NULL) == 0);
	CHECK(res.has_swappiness && res.memory_swappiness == 0 && res.disable_oom_killer == 1);
	CHECK(res.blkio_weight == 300 && res.n_blkio_devs == 3);
	CHECK(res.blkio_devs[0].kind == OCI_BLKIO_WEIGHT && res.blkio_devs[0].value == 200 &&
	      res.blkio_devs[0].leaf == 100);
	CHECK(res.blkio_devs[1].kind == OCI_BLKIO_READ_BPS && res.blkio_devs[1].major == 254 &&
	      res.blkio_devs[1].value == 1048576);
	CHECK(res.blkio_devs[2].kind == OCI_BLKIO_WRITE_IOPS && res.blkio_devs[2].minor == 1 &&
	      res.blkio_devs[2].value == 300);
	oci_resources_done(&res);
	const char *d = "{\"memory\":{\"swappiness\":-1,\"disableOOMKiller\":false}}";
	CHECK(oci_resources_parse(d, strlen(d), &res, NULL) == 0);
	CHECK(!res.has_swappiness && res.disable_oom_killer == -1 && res.n_blkio_devs == 0);
	oci_resources_done(&res);
	const char *bad[] = {
	    "{\"blockIO\":{\"weight\":1001}}", "{\"memory\":{\"swappiness\":101}}",
	    "{\"blockIO\":{\"throttleReadBpsDevice\":[{\"major\":-1,\"minor\":0,\"rate\":1}]}}",
	    "{\"blockIO\":{\"throttleReadBpsDevice\":{}}}"};
	for (size_t i = 0; i < 4; i++) {
		sbx_err *e = NULL;
		CHECK(oci_resources_parse(bad[i], strlen(bad[i]), &res, &e) < 0);
		CHECK(e != NULL);
		sbx_err_free(e);
		oci_resources_done(&res);
	}
}

TEST(signals)
{
	CHECK(oci_signal_parse("9") == SIGKILL);
	CHECK(oci_signal_parse("15") == SIGTERM);
	CHECK(oci_signal_parse("KILL") == SIGKILL);
	CHECK(oci_signal_parse("SIGUSR1") == SIGUSR1);
	CHECK(oci_signal_parse("sigterm") == SIGTERM);
	CHECK(oci_signal_parse("RTMIN+1") == SIGRTMIN + 1);
	CHECK(oci_signal_parse("0") == 0); /* runc kill ID 0: an alive check */
	CHECK(oci_signal_parse("99") == -1);
	CHECK(oci_signal_parse("9x") == -1);
	CHECK(oci_signal_parse("NOPE") == -1);
	CHECK(oci_signal_parse("") == -1);
}

TEST(caps_names)
{
	CHECK(oci_cap_from_name("CAP_SYS_ADMIN") == 21);
	CHECK(oci_cap_from_name("sys_admin") == 21);
	CHECK(oci_cap_from_name("CAP_CHECKPOINT_RESTORE") == 40);
	CHECK(oci_cap_from_name("CAP_NOPE") == -1);
}

TEST(state_roundtrip_and_status)
{
	oci_state_rec r = {.id = "c1",
			   .pid = 1234,
			   .start_time = 987654321ULL,
			   .bundle = "/b",
			   .rootfs = "/b/rootfs",
			   .created = "2026-01-01T00:00:00Z",
			   .cgroup = "/default/c1",
			   .owner = 0};
	r.annotations = json_pack("{s:s}", "a", "b");
	r.hooks = json_pack("{s:[{s:s}]}", "poststop", "path", "/bin/true");
	char *txt = oci_state_format(&r);
	CHECK(txt);
	oci_state_rec back = {0};
	CHECK(oci_state_parse(txt, strlen(txt), &back, NULL) == 0);
	free(txt);
	CHECK(back.pid == 1234 && back.start_time == 987654321ULL);
	CHECK_STREQ(back.cgroup, "/default/c1");
	CHECK_STREQ(json_string_value(json_object_get(back.annotations, "a")), "b");
	oci_hook *h = NULL;
	size_t n = 0;
	CHECK(oci_hooks_parse(back.hooks, OCI_HOOK_POSTSTOP, &h, &n, NULL) == 0 && n == 1);
	CHECK_STREQ(h[0].path, "/bin/true");
	oci_hooks_free(h, n);
	char *rep = oci_state_report(&back, "stopped");
	CHECK(rep && strstr(rep, "\"pid\": 0") && strstr(rep, "\"status\": \"stopped\""));
	free(rep);
	rep = oci_state_report(&back, "running");
	CHECK(rep && strstr(rep, "\"pid\": 1234"));
	free(rep);
	oci_state_rec_done(&back);
	json_decref(r.annotations);
	json_decref(r.hooks);
	CHECK(oci_state_parse("{\"pid\":0}", 9, &back, NULL) < 0);

	CHECK_STREQ(oci_status_decide(&(oci_observed){.alive = false, .start_pending = true}), "stopped");
	CHECK_STREQ(oci_status_decide(&(oci_observed){.alive = true, .start_pending = true}), "created");
	CHECK_STREQ(oci_status_decide(&(oci_observed){.alive = true}), "running");
	CHECK_STREQ(oci_status_decide(&(oci_observed){.alive = true, .frozen = true}), "paused");
}

TEST(proc_stat)
{
	char st;
	uint64_t t;
	/* A command name with spaces and a ')' : the last ')' ends it. */
	const char *s = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 5550123 1000 10";
	CHECK(oci_proc_stat_parse(s, &st, &t) == 0);
	CHECK(st == 'S' && t == 5550123);
	CHECK(oci_proc_stat_parse("42 (x) Z 1 2", &st, &t) < 0);
	CHECK(oci_proc_stat_parse("garbage", &st, &t) < 0);
}

TEST(cgroup_paths)
{
	char *p = NULL;
	CHECK(oci_cgroup_path("/default/c1", "c1", false, &p, NULL) == 0);
	CHECK_STREQ(p, "/default/c1");
	free(p);
	CHECK(oci_cgroup_path(NULL, "c1", false, &p, NULL) == 0);
	CHECK_STREQ(p, "/sbx-runc/c1");
	free(p);
	CHECK(oci_cgroup_path("rel/x", "c1", false, &p, NULL) == 0);
	CHECK_STREQ(p, "/rel/x");
	free(p);
	CHECK(oci_cgroup_path("system.slice:docker:abc", "abc", true, &p, NULL) == 0);
	CHECK_STREQ(p, "/system.slice/docker-abc.scope");
	free(p);
	CHECK(oci_cgroup_path("kubepods-besteffort-pod1.slice:cri-containerd:abc", "abc", true, &p, NULL) ==
	      0);
	CHECK_STREQ(p, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/"
		       "cri-containerd-abc.scope");
	free(p);
	CHECK(oci_cgroup_path("/a/../b", "c1", false, &p, NULL) < 0);
	CHECK(oci_cgroup_path("a:b", "c1", true, &p, NULL) < 0);
	CHECK(oci_cgroup_path("x.slice:p:../n", "c1", true, &p, NULL) < 0);
}

TEST(ids)
{
	CHECK(oci_id_valid("abc-1.2_3+x"));
	CHECK(oci_id_valid("e827398092a9d4b1284ec7fc041c59f295dc5fbab0ead1ddb0bcecda63e7051d"));
	CHECK(!oci_id_valid(""));
	CHECK(!oci_id_valid(".."));
	CHECK(!oci_id_valid("a/b"));
	CHECK(!oci_id_valid("-x"));
	CHECK(!oci_id_valid(NULL));
}

TEST(mount_options)
{
	const char *o[] = {"bind", "ro", "nosuid", "size=1m", "rw", "rslave", "tmpcopyup", "mode=755"};
	unsigned long f, p;
	char *data = NULL;
	bool bind;
	CHECK(oci_mount_options(o, 8, &f, &p, &data, &bind, NULL) == 0);
	CHECK(bind && (f & MS_BIND) && !(f & MS_RDONLY) && (f & MS_NOSUID));
	CHECK(p == (MS_SLAVE | MS_REC));
	CHECK_STREQ(data, "size=1m,mode=755");
	free(data);
}

TEST(devices)
{
	const char *j =
	    "{\"process\":{\"args\":[\"a\"]},\"linux\":{\"devices\":[{\"path\":\"/dev/x\",\"type\":\"u\","
	    "\"major\":1,\"minor\":3,\"fileMode\":438,\"uid\":5}]}}";
	oci_spec *s = NULL;
	CHECK(oci_spec_parse(j, strlen(j), &s, NULL) == 0);
	CHECK(s->n_devices == 1 && s->devices[0].type == 'c' && s->devices[0].minor == 3);
	CHECK(s->devices[0].has_mode && s->devices[0].mode == 0666 && s->devices[0].has_uid &&
	      !s->devices[0].has_gid);
	oci_spec_free(s);
	const char *bad =
	    "{\"process\":{\"args\":[\"a\"]},\"linux\":{\"devices\":[{\"path\":\"x\",\"type\":\"c\"}]}}";
	CHECK(oci_spec_parse(bad, strlen(bad), &s, NULL) < 0);
}

/* runc exec ID CMD...: the spec's process, args replaced, env appended,
 * user/gids/caps/cwd/terminal overridden; bad ids refused. */
TEST(exec_process_from_spec)
{
	json_t *sp =
	    json_loads("{\"args\":[\"sleep\"],\"env\":[\"PATH=/bin\"],\"cwd\":\"/\",\"terminal\":true,"
		       "\"user\":{\"uid\":5,\"gid\":6},\"capabilities\":{\"bounding\":[\"CAP_CHOWN\"],"
		       "\"inheritable\":[]}}",
		       0, NULL);
	char *argv[] = {"sh", "-c", "x", NULL};
	const char *env[] = {"A=1", NULL}, *gids[] = {"7", NULL}, *caps[] = {"CAP_KILL", NULL};
	oci_exec_args a = {.argv = argv, .cwd = "/tmp", .user = "10", .env = env, .gids = gids, .caps = caps};
	json_t *p = NULL;
	CHECK(oci_exec_process(sp, &a, &p, NULL) == 0);
	oci_process pr = {0};
	CHECK(oci_process_parse_json(p, &pr, NULL) == 0);
	CHECK(streq(pr.args[0], "sh") && streq(pr.args[2], "x") && !pr.args[3]);
	CHECK(streq(pr.env[0], "PATH=/bin") && streq(pr.env[1], "A=1") && !pr.env[2]);
	CHECK(streq(pr.cwd, "/tmp") && !pr.terminal);
	CHECK(pr.user.uid == 10 && pr.user.gid == 6 && pr.user.n_additional_gids == 1 &&
	      pr.user.additional_gids[0] == 7);
	CHECK(pr.caps.bounding == ((1ull << 0) | (1ull << 5)) && pr.caps.effective == (1ull << 5) &&
	      pr.caps.inheritable == 0);
	oci_process_done(&pr);
	json_decref(p);
	/* the spec's own process is left as it was */
	CHECK(json_array_size(json_object_get(sp, "env")) == 1);
	const char *bad_users[] = {"x", "1:y", "-1", "1:", "99999999999"};
	for (size_t i = 0; i < 5; i++) {
		sbx_err *e = NULL;
		a.user = bad_users[i];
		CHECK(oci_exec_process(sp, &a, &p, &e) < 0 && e);
		sbx_err_free(e);
	}
	a.user = NULL;
	a.argv = (char *[]){NULL};
	CHECK(oci_exec_process(sp, &a, &p, NULL) < 0);
	/* no spec process at all: an empty one, root */
	a.argv = argv;
	CHECK(oci_exec_process(NULL, &a, &p, NULL) == 0);
	CHECK(json_integer_value(json_object_get(json_object_get(p, "user"), "uid")) == 0);
	json_decref(p);
	json_decref(sp);
}

/* ps's table filtered to the container's pids: the header stays, the PID
 * column is found by name wherever ps puts it. */
TEST(ps_filter)
{
	const char *out = "UID          PID    PPID  C STIME TTY          TIME CMD\n"
			  "root           1       0  0 01:00 ?        00:00:01 /sbin/init\n"
			  "root          42       1  0 01:00 ?        00:00:00 sleep 42\n"
			  "root         420      42  0 01:00 ?        00:00:00 sh -c 1 42\n";
	pid_t pids[] = {42, 7};
	char *t = NULL;
	CHECK(oci_ps_filter(out, pids, 2, &t) == 0);
	CHECK(streq(t, "UID          PID    PPID  C STIME TTY          TIME CMD\n"
		       "root          42       1  0 01:00 ?        00:00:00 sleep 42\n"));
	free(t);
	const char *o2 = "  PID COMMAND\n    7 sh\n   77 x\n";
	CHECK(oci_ps_filter(o2, pids, 2, &t) == 0);
	CHECK(streq(t, "  PID COMMAND\n    7 sh\n"));
	free(t);
	CHECK(oci_ps_filter("USER COMMAND\nroot x\n", pids, 2, &t) == -EINVAL);
	CHECK(oci_ps_filter("", pids, 2, &t) == -EINVAL);
}

/* The cgroup file helpers of events --stats, and Go durations. */
TEST(stats_helpers_duration)
{
	const char *ms = "cache 4096\nrss 8192\nhierarchical_memory_limit 9223372036854771712\nbad x\n";
	uint64_t v = 0;
	CHECK(oci_kv_get(ms, "rss", &v) == 0 && v == 8192);
	CHECK(oci_kv_get(ms, "cache", &v) == 0 && v == 4096);
	CHECK(oci_kv_get(ms, "rs", &v) == -ENOENT);
	CHECK(oci_kv_get(ms, "bad", &v) == -EINVAL);
	json_t *o = oci_kv_object(ms);
	CHECK(o && json_object_size(o) == 3 && json_integer_value(json_object_get(o, "rss")) == 8192);
	json_decref(o);
	json_t *a = oci_u64_array("10 20 30 \n");
	CHECK(a && json_array_size(a) == 3 && json_integer_value(json_array_get(a, 2)) == 30);
	json_decref(a);
	CHECK(oci_duration_ms("5s", &v) == 0 && v == 5000);
	CHECK(oci_duration_ms("300ms", &v) == 0 && v == 300);
	CHECK(oci_duration_ms("1m30s", &v) == 0 && v == 90000);
	CHECK(oci_duration_ms("1.5h", &v) == 0 && v == 5400000);
	CHECK(oci_duration_ms("5", &v) == -EINVAL);
	CHECK(oci_duration_ms("bogus", &v) == -EINVAL);
	CHECK(oci_duration_ms("", &v) == -EINVAL);
	CHECK(oci_duration_ms("-1s", &v) == -EINVAL);
}

/* features' mountOptions are exactly names the mount option parser takes as
 * flags, propagation or ignored extensions (none is left as data). */
TEST(features_mount_options_known)
{
	json_t *a = oci_features_mount_options();
	CHECK(a && json_array_size(a) > 30);
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		const char *o = json_string_value(v);
		unsigned long f = 0, p = 0;
		char *data = NULL;
		bool bind = false;
		CHECK(oci_mount_options(&o, 1, &f, &p, &data, &bind, NULL) == 0);
		CHECK(data == NULL);
		free(data);
	}
	json_decref(a);
}

/* runc update's flags as a resources document: sizes with docker's units,
 * numbers, strings; unknown flags and bad values refused. */
TEST(update_flags_document)
{
	const char *names[] = {"memory", "memory-swap", "pids-limit", "cpuset-cpus", "cpu-quota"};
	const char *vals[] = {"64m", "-1", "20", "0-1", "25000"};
	char *doc = NULL;
	CHECK(oci_resources_from_flags(names, vals, 5, &doc, NULL) == 0);
	oci_resources r = {0};
	CHECK(oci_resources_parse(doc, strlen(doc), &r, NULL) == 0);
	CHECK(r.memory_limit == 67108864 && r.memory_swap == -1 && r.pids_limit == 20 &&
	      r.cpu_quota == 25000);
	CHECK(r.cpuset_cpus && streq(r.cpuset_cpus, "0-1"));
	oci_resources_done(&r);
	free(doc);
	const char *n2[] = {"memory"}, *v2[] = {"1.5GiB"};
	CHECK(oci_resources_from_flags(n2, v2, 1, &doc, NULL) == 0);
	CHECK(strstr(doc, "1610612736") != NULL);
	free(doc);
	const char *bad_v[] = {"lots", "12q", "-5", ""};
	for (size_t i = 0; i < 4; i++) {
		sbx_err *e = NULL;
		CHECK(oci_resources_from_flags(n2, &bad_v[i], 1, &doc, &e) < 0 && e);
		sbx_err_free(e);
	}
	const char *n3[] = {"nosuch"}, *v3[] = {"1"};
	CHECK(oci_resources_from_flags(n3, v3, 1, &doc, NULL) < 0);
	const char *n4[] = {"pids-limit"}, *v4[] = {"x"};
	CHECK(oci_resources_from_flags(n4, v4, 1, &doc, NULL) < 0);
}
