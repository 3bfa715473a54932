/* envd's process.Process messages (src/server/e2b_proc_util.h). */
#include <errno.h>
#include <signal.h>

#include "server/e2b_proc_util.h"
#include "unit.h"

static json_t *J(const char *s)
{
	json_t *j = json_loads(s, 0, NULL);
	if (!j)
		abort();
	return j;
}

static int parse(const char *js, const char *home, e2b_start_req *r)
{
	json_t *j = J(js);
	sbx_err *e = NULL;
	int rc = e2b_start_parse(j, home, r, &e);
	if (rc < 0 && sbx_err_code(e) != SBX_E_INVALID_ARGUMENT)
		rc = -999;
	sbx_err_free(e);
	json_decref(j);
	return rc;
}

TEST(start_as_the_sdk_sends_it)
{
	e2b_start_req r;
	CHECK(
	    parse("{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\",\"echo hi\"],"
		  "\"envs\":{\"A\":\"1\",\"B\":\"x=y\"},\"cwd\":\"sub/dir\"},\"stdin\":false,\"tag\":\"t1\"}",
		  "/home/user", &r) == 0);
	CHECK_STREQ(r.argv[0], "/bin/bash");
	CHECK_STREQ(r.argv[3], "echo hi");
	CHECK(r.argv[4] == NULL);
	CHECK_STREQ(r.env[0], "A=1");
	CHECK_STREQ(r.env[1], "B=x=y");
	CHECK(r.env[2] == NULL);
	CHECK_STREQ(r.cwd, "/home/user/sub/dir");
	CHECK_STREQ(r.tag, "t1");
	CHECK(!r.stdin_open && !r.pty);
	CHECK_STREQ(json_string_value(json_object_get(r.config, "cwd")), "/home/user/sub/dir");
	CHECK(json_array_size(json_object_get(r.config, "args")) == 3);
	e2b_start_req_clear(&r);

	/* no cwd: the home; an absolute one as given; a pty with its size */
	CHECK(parse("{\"process\":{\"cmd\":\"/bin/bash\"},\"pty\":{\"size\":{\"cols\":80,\"rows\":\"24\"}},"
		    "\"stdin\":true}",
		    "/root", &r) == 0);
	CHECK_STREQ(r.cwd, "/root");
	CHECK(r.pty && r.cols == 80 && r.rows == 24 && r.stdin_open && !r.tag);
	CHECK(r.argv[1] == NULL && r.env[0] == NULL);
	e2b_start_req_clear(&r);
	CHECK(parse("{\"process\":{\"cmd\":\"ls\",\"cwd\":\"/tmp\"}}", "/root", &r) == 0);
	CHECK_STREQ(r.cwd, "/tmp");
	/* no stdin field: open, as envd keeps it for older clients */
	CHECK(r.stdin_open);
	e2b_start_req_clear(&r);
	CHECK(parse("{\"process\":{\"cmd\":\"cat\"},\"stdin\":null}", "/root", &r) == 0);
	CHECK(r.stdin_open);
	e2b_start_req_clear(&r);
}

TEST(env_defaults)
{
	char **v = e2b_env_with_defaults(NULL, "abc");
	CHECK(v && v[0] && v[1] && !v[2]);
	CHECK_STREQ(v[0], "E2B_SANDBOX=true");
	CHECK_STREQ(v[1], "E2B_SANDBOX_ID=abc");
	strv_free(v);
	/* the request's own win; E2B_SANDBOX_IDX is another name */
	char *env[] = {"E2B_SANDBOX=mine", "E2B_SANDBOX_IDX=1", "A=b", NULL};
	v = e2b_env_with_defaults(env, "abc");
	CHECK(v && v[4] == NULL);
	CHECK_STREQ(v[0], "E2B_SANDBOX_ID=abc");
	CHECK_STREQ(v[1], "E2B_SANDBOX=mine");
	CHECK_STREQ(v[2], "E2B_SANDBOX_IDX=1");
	CHECK_STREQ(v[3], "A=b");
	strv_free(v);
}

TEST(env_went)
{
	sbx_err *e = NULL;
	CHECK(!e2b_env_went(NULL));
	err_set(&e, SBX_E_UNAVAILABLE, EPIPE, "environment 'x' stopped while the command ran");
	CHECK(e2b_env_went(e));
	sbx_err_free(e);
	e = NULL;
	err_set(&e, SBX_E_UNAVAILABLE, ESRCH, "the environment was stopped while the command ran");
	CHECK(e2b_env_went(e));
	sbx_err_free(e);
	e = NULL;
	err_set(&e, SBX_E_UNAVAILABLE, ETIMEDOUT, "the command ran past its timeout");
	CHECK(!e2b_env_went(e));
	sbx_err_free(e);
	e = NULL;
	err_set(&e, SBX_E_NOT_FOUND, EPIPE, "no");
	CHECK(!e2b_env_went(e));
	sbx_err_free(e);
}

TEST(start_refusals)
{
	e2b_start_req r;
	const char *bad[] = {
	    "{}",
	    "{\"process\":{}}",
	    "{\"process\":{\"cmd\":\"\"}}",
	    "{\"process\":{\"cmd\":7}}",
	    "{\"process\":{\"cmd\":\"a\",\"args\":\"x\"}}",
	    "{\"process\":{\"cmd\":\"a\",\"args\":[1]}}",
	    "{\"process\":{\"cmd\":\"a\",\"envs\":{\"\":\"v\"}}}",
	    "{\"process\":{\"cmd\":\"a\",\"envs\":{\"A=B\":\"v\"}}}",
	    "{\"process\":{\"cmd\":\"a\",\"envs\":{\"A\":1}}}",
	    "{\"process\":{\"cmd\":\"a\",\"cwd\":3}}",
	    "{\"process\":{\"cmd\":\"a\"},\"stdin\":\"yes\"}",
	    "{\"process\":{\"cmd\":\"a\"},\"tag\":5}",
	    "{\"process\":{\"cmd\":\"a\"},\"pty\":{}}",
	    "{\"process\":{\"cmd\":\"a\"},\"pty\":{\"size\":{\"cols\":0,\"rows\":10}}}",
	    "{\"process\":{\"cmd\":\"a\"},\"pty\":{\"size\":{\"cols\":10,\"rows\":5000}}}",
	    "{\"process\":{\"cmd\":\"a\"},\"pty\":{\"size\":{\"cols\":-1,\"rows\":5}}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], "/root", &r) != -EINVAL) {
			fprintf(stderr, "accepted or wrong error: %s\n", bad[i]);
			CHECK(0);
		}
	}
}

TEST(selectors_signals_input)
{
	e2b_selector s;
	json_t *j = J("{\"process\":{\"pid\":42}}");
	CHECK(e2b_selector_parse(j, "process", &s, NULL) == 0 && s.pid == 42 && !s.tag);
	json_decref(j);
	j = J("{\"process\":{\"pid\":\"7\"}}");
	CHECK(e2b_selector_parse(j, "process", &s, NULL) == 0 && s.pid == 7);
	json_decref(j);
	j = J("{\"process\":{\"tag\":\"srv\"}}");
	CHECK(e2b_selector_parse(j, "process", &s, NULL) == 0 && s.pid == 0 && strcmp(s.tag, "srv") == 0);
	json_decref(j);
	const char *bad[] = {"{}",
			     "{\"process\":{}}",
			     "{\"process\":{\"pid\":0}}",
			     "{\"process\":{\"pid\":-1}}",
			     "{\"process\":{\"pid\":\"1x\"}}",
			     "{\"process\":{\"pid\":4294967296}}",
			     "{\"process\":{\"tag\":\"\"}}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = J(bad[i]);
		CHECK(e2b_selector_parse(j, "process", &s, NULL) == -EINVAL);
		json_decref(j);
	}
	int sig;
	j = J("[\"SIGNAL_SIGKILL\",\"SIGNAL_SIGTERM\",9,\"SIGNAL_UNSPECIFIED\",0,\"SIGKILL\",99]");
	CHECK(e2b_signal_parse(json_array_get(j, 0), &sig, NULL) == 0 && sig == SIGKILL);
	CHECK(e2b_signal_parse(json_array_get(j, 1), &sig, NULL) == 0 && sig == SIGTERM);
	CHECK(e2b_signal_parse(json_array_get(j, 2), &sig, NULL) == 0 && sig == SIGKILL);
	for (size_t i = 3; i < 7; i++)
		CHECK(e2b_signal_parse(json_array_get(j, i), &sig, NULL) == -EINVAL);
	json_decref(j);

	unsigned char *buf;
	size_t len;
	bool pty;
	j = J("{\"input\":{\"stdin\":\"aGkK\"}}");
	CHECK(e2b_input_parse(j, &buf, &len, &pty, NULL) == 0 && len == 3 && memcmp(buf, "hi\n", 3) == 0 &&
	      !pty);
	free(buf);
	json_decref(j);
	j = J("{\"input\":{\"pty\":\"\"}}");
	CHECK(e2b_input_parse(j, &buf, &len, &pty, NULL) == 0 && len == 0 && pty);
	free(buf);
	json_decref(j);
	j = J("{\"input\":{\"stdin\":\"***\"}}");
	CHECK(e2b_input_parse(j, &buf, &len, &pty, NULL) < 0);
	json_decref(j);
	j = J("{\"input\":{}}");
	CHECK(e2b_input_parse(j, &buf, &len, &pty, NULL) < 0);
	json_decref(j);
}

TEST(events)
{
	json_t *e = e2b_end_event(0, 0, NULL);
	char *s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STREQ(s, "{\"event\":{\"end\":{\"exitCode\":0,\"exited\":true,\"status\":\"exit status 0\"}}}");
	free(s);
	json_decref(e);
	e = e2b_end_event(0, SIGKILL, "boom");
	s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STREQ(s, "{\"event\":{\"end\":{\"error\":\"boom\",\"exitCode\":-1,\"exited\":false,\"status\":"
		       "\"signal: killed\"}}}");
	free(s);
	json_decref(e);
	/* Go's cmd.Wait() error text, as envd sends it */
	e = e2b_end_event(7, 0, NULL);
	s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	CHECK_STREQ(s, "{\"event\":{\"end\":{\"error\":\"exit status 7\",\"exitCode\":7,\"exited\":true,"
		       "\"status\":\"exit status 7\"}}}");
	free(s);
	json_decref(e);
	e = e2b_end_event(0, SIGTERM, NULL);
	CHECK_STREQ(
	    json_string_value(json_object_get(json_object_get(json_object_get(e, "event"), "end"), "error")),
	    "signal: terminated");
	json_decref(e);
	e = e2b_data_event(2, "hi\n", 3);
	s = json_dumps(e, JSON_COMPACT);
	CHECK_STREQ(s, "{\"event\":{\"data\":{\"stderr\":\"aGkK\"}}}");
	free(s);
	json_decref(e);
	char home[64];
	CHECK_STREQ(e2b_user_home(NULL, home, sizeof(home)), "/root");
	CHECK_STREQ(e2b_user_home("root", home, sizeof(home)), "/root");
	CHECK_STREQ(e2b_user_home("user", home, sizeof(home)), "/home/user");
}
