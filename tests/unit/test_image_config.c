/* src/build/image_config.c: an image's config against create and exec options (pure). */
#include <string.h>

#include "build/image_config.h"
#include "store/oci.h"
#include "store/snapshot.h"
#include "unit.h"
#include "util/json.h"
#include "util/macro.h"

static char *joined(char **v)
{
	static char buf[512];
	buf[0] = 0;
	for (char **p = v; p && *p; p++) {
		strcat(buf, *p);
		if (p[1])
			strcat(buf, " ");
	}
	return buf;
}

TEST(merge_later_layers_win)
{
	const char *ienv[] = {"PATH=/img/bin", "A=image", "B=image", NULL};
	const char *cenv[] = {"B=create", "C=create", NULL};
	const char *xenv[] = {"A=exec", NULL};
	image_layer img = {.env = ienv, .cwd = "/app", .user = "nobody"};
	image_layer cre = {.env = cenv, .user = "1000"};
	image_layer ex = {.env = xenv, .cwd = "/tmp"};
	const image_layer *ls[] = {&img, &cre, &ex};
	image_merged m;
	CHECK(image_merge(ls, 3, &m, NULL) == 0);
	CHECK_STREQ(joined(m.env), "PATH=/img/bin A=exec B=create C=create");
	CHECK_STREQ(m.cwd, "/tmp");
	CHECK_STREQ(m.user, "1000");
	free(m.env);
	/* Without the exec's say: the image's cwd; without the create's user: the image's. */
	const image_layer *ls2[] = {&img, NULL, NULL};
	CHECK(image_merge(ls2, 3, &m, NULL) == 0);
	CHECK_STREQ(joined(m.env), "PATH=/img/bin A=image B=image");
	CHECK_STREQ(m.cwd, "/app");
	CHECK_STREQ(m.user, "nobody");
	free(m.env);
}

TEST(merge_image_root_says_nothing)
{
	image_layer img = {.user = "root"};
	const image_layer *ls[] = {&img};
	image_merged m;
	CHECK(image_merge(ls, 1, &m, NULL) == 0);
	CHECK(m.user == NULL && m.cwd == NULL && m.env && !m.env[0]);
	free(m.env);
	/* ...but a create's root is a choice. */
	image_layer img2 = {.user = "nobody"}, cre = {.user = "root"};
	const image_layer *ls2[] = {&img2, &cre};
	CHECK(image_merge(ls2, 2, &m, NULL) == 0);
	CHECK_STREQ(m.user, "root");
	free(m.env);
}

static char *text_of(const char *json, sbx_err **e)
{
	_cleanup_json_ json_t *j = json_loads(json, 0, NULL);
	char *t = NULL;
	if (image_config_text(j, &t, e) < 0)
		return NULL;
	return t;
}

TEST(config_text_canonical_and_checked)
{
	_cleanup_free_ char *t = text_of("{\"WorkingDir\":\"/app\",\"Cmd\":[\"pwd\"],\"Labels\":{},"
					 "\"Entrypoint\":null,\"ExposedPorts\":{\"80/tcp\":{}}}",
					 NULL);
	CHECK_STREQ(t, "{\"Cmd\":[\"pwd\"],\"ExposedPorts\":{\"80/tcp\":{}},\"WorkingDir\":\"/app\"}");
	_cleanup_free_ char *none = text_of("{\"WorkingDir\":\"\",\"Cmd\":[]}", NULL);
	CHECK(none == NULL);
	sbx_err *e = NULL;
	CHECK(text_of("{\"WorkingDir\":\"app\"}", &e) == NULL && e);
	CHECK(strstr(sbx_err_message(e), "absolute"));
	sbx_err_free(e);
	e = NULL;
	CHECK(text_of("{\"Healthcheck\":{}}", &e) == NULL && e);
	CHECK(strstr(sbx_err_message(e), "unknown key"));
	sbx_err_free(e);
	e = NULL;
	CHECK(text_of("{\"Cmd\":\"pwd\"}", &e) == NULL && e);
	sbx_err_free(e);
	e = NULL;
	CHECK(text_of("{\"Labels\":{\"a\":1}}", &e) == NULL && e);
	sbx_err_free(e);
}

static const char *cmd_of(const char *cfg, const char *const *argv)
{
	_cleanup_json_ json_t *j = cfg ? json_loads(cfg, 0, NULL) : NULL;
	_cleanup_strv_free_ char **v = NULL;
	sbx_err *e = NULL;
	if (image_command(j, argv, &v, &e) < 0) {
		static char msg[300];
		snprintf(msg, sizeof msg, "error: %s", sbx_err_message(e));
		sbx_err_free(e);
		return msg;
	}
	return joined(v);
}

TEST(command_docker_rule)
{
	const char *given[] = {"echo", "hi", NULL};
	const char *none[] = {NULL};
	CHECK_STREQ(cmd_of("{\"Cmd\":[\"pwd\"]}", NULL), "pwd");
	CHECK_STREQ(cmd_of("{\"Cmd\":[\"pwd\"]}", none), "pwd");
	CHECK_STREQ(cmd_of("{\"Cmd\":[\"pwd\"]}", given), "echo hi");
	CHECK_STREQ(cmd_of("{\"Entrypoint\":[\"/bin/sh\",\"-c\"],\"Cmd\":[\"id -u\"]}", NULL),
		    "/bin/sh -c id -u");
	CHECK_STREQ(cmd_of("{\"Entrypoint\":[\"/bin/sh\",\"-c\"],\"Cmd\":[\"id -u\"]}", given),
		    "/bin/sh -c echo hi");
	CHECK_STREQ(cmd_of("{\"Entrypoint\":[\"env\"]}", NULL), "env");
	CHECK_STREQ(cmd_of(NULL, given), "echo hi");
	CHECK(strstr(cmd_of(NULL, NULL), "no CMD or ENTRYPOINT"));
	CHECK(strstr(cmd_of("{\"Cmd\":[]}", none), "no CMD or ENTRYPOINT"));
}

TEST(workdir)
{
	_cleanup_json_ json_t *j = json_loads("{\"WorkingDir\":\"/app\"}", 0, NULL);
	CHECK_STREQ(image_config_workdir(j), "/app");
	CHECK(image_config_workdir(NULL) == NULL);
	_cleanup_json_ json_t *k = json_loads("{\"Cmd\":[\"x\"]}", 0, NULL);
	CHECK(image_config_workdir(k) == NULL);
}

TEST(oci_config_keeps_image_keys)
{
	const char *j =
	    "{\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]},\"config\":{\"Env\":["
	    "\"A=1\"],\"WorkingDir\":\"/w\",\"User\":\"app\",\"Cmd\":[\"run\"],\"Entrypoint\":null,"
	    "\"Healthcheck\":{\"Test\":[]},\"Labels\":{\"k\":\"v\"}}}";
	oci_config *c = NULL;
	CHECK(oci_config_parse(j, strlen(j), &c, NULL) == 0);
	CHECK_STREQ(c->image, "{\"Cmd\":[\"run\"],\"Labels\":{\"k\":\"v\"},\"WorkingDir\":\"/w\"}");
	oci_config_free(c);
	/* ...and export writes them back, with User. */
	const char *env[] = {"A=1", NULL}, *ids[] = {NULL};
	_cleanup_free_ char *out =
	    oci_config_build_image("amd64", env, "/root", "app", "{\"Cmd\":[\"run\"],\"WorkingDir\":\"/w\"}",
				   ids, "2024-05-01T12:00:00Z");
	CHECK(out && strstr(out, "\"Cmd\":[\"run\"]") && strstr(out, "\"User\":\"app\"") &&
	      strstr(out, "\"WorkingDir\":\"/w\""));
	_cleanup_free_ char *root =
	    oci_config_build_image("amd64", env, "/root", "root", NULL, ids, "2024-05-01T12:00:00Z");
	CHECK(root && !strstr(root, "User") && strstr(root, "\"WorkingDir\":\"/root\""));
}

TEST(snapshot_manifest_config_round_trip)
{
	static char *empty[] = {NULL};
	store_snapshot s = {.layers = empty,
			    .env = empty,
			    .cwd = "/root",
			    .user = "root",
			    .labels = empty,
			    .created_at = "2024-05-01T12:00:00Z"};
	_cleanup_free_ char *plain = NULL, *with = NULL;
	char id1[STORE_DIGEST_SIZE], id2[STORE_DIGEST_SIZE];
	CHECK(store_snapshot_encode(&s, &plain, id1, NULL) == 0);
	CHECK(!strstr(plain, "config")); /* absent: existing ids do not move */
	s.config = "{\"Cmd\":[\"pwd\"],\"WorkingDir\":\"/app\"}";
	CHECK(store_snapshot_encode(&s, &with, id2, NULL) == 0);
	CHECK(strcmp(id1, id2) != 0);
	store_snapshot *d = NULL;
	CHECK(store_snapshot_decode(with, strlen(with), &d, NULL) == 0);
	CHECK_STREQ(d->config, s.config);
	store_snapshot_free(d);
	/* The manifest refuses a config it could not apply. */
	const char *bad[] = {"{\"WorkingDir\":\"rel\"}", "{\"Cmd\":\"pwd\"}", "{\"Volumes\":{}}", "[1]"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		_cleanup_free_ char *t = NULL;
		sbx_err *e = NULL;
		s.config = (char *)bad[i];
		CHECK(store_snapshot_encode(&s, &t, id2, &e) < 0 && e);
		sbx_err_free(e);
	}
}
