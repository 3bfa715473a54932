/* Pure parts of the OCI import/export: index, manifest and config parsing
 * and validation, ref parsing, selection, and the builders. */
#include <string.h>

#include "store/oci.h"
#include "unit.h"
#include "util/err.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static int parse_index(const char *j, oci_index **ix, char **msg)
{
	sbx_err *e = NULL;
	int r = oci_index_parse(j, strlen(j), ix, &e);
	*msg = e ? strdup(sbx_err_message(e)) : NULL;
	sbx_err_free(e);
	return r;
}

TEST(index_select_by_tag)
{
	const char *j = "{\"schemaVersion\":2,\"manifests\":["
			"{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"" D1 "\",\"size\":10,"
			"\"annotations\":{\"org.opencontainers.image.ref.name\":\"a\"}},"
			"{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"" D2 "\",\"size\":20,"
			"\"annotations\":{\"org.opencontainers.image.ref.name\":\"latest\"}}]}";
	oci_index *ix = NULL;
	char *msg = NULL;
	CHECK(parse_index(j, &ix, &msg) == 0);
	CHECK(ix->n == 2);
	const oci_descriptor *d = NULL;
	CHECK(oci_index_select(ix, "a", "amd64", &d, NULL) == 0);
	CHECK_STREQ(d->digest, D1);
	CHECK(d->size == 10);
	CHECK(oci_index_select(ix, NULL, "amd64", &d, NULL) == 0); /* no tag: "latest" */
	CHECK_STREQ(d->digest, D2);
	sbx_err *e = NULL;
	CHECK(oci_index_select(ix, "nope", "amd64", &d, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "no image tagged 'nope'"));
	sbx_err_free(e);
	oci_index_free(ix);
}

TEST(index_select_platform)
{
	const char *j =
	    "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MT_INDEX "\",\"manifests\":["
	    "{\"digest\":\"" D1 "\",\"size\":1,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\"}},"
	    "{\"digest\":\"" D2 "\",\"size\":1,\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}]}";
	oci_index *ix = NULL;
	char *msg = NULL;
	CHECK(parse_index(j, &ix, &msg) == 0);
	const oci_descriptor *d = NULL;
	CHECK(oci_index_select(ix, NULL, "amd64", &d, NULL) == 0);
	CHECK_STREQ(d->digest, D2);
	CHECK(oci_index_select(ix, NULL, "arm64", &d, NULL) == 0);
	CHECK_STREQ(d->digest, D1);
	CHECK(oci_index_select(ix, NULL, "s390x", &d, NULL) < 0);
	oci_index_free(ix);
}

TEST(index_rejects)
{
	static const struct {
		const char *json, *msg;
	} bad[] = {
	    {"[]", "not a JSON object"},
	    {"{", "invalid JSON"},
	    {"{\"schemaVersion\":1,\"manifests\":[]}", "schemaVersion must be 2"},
	    {"{\"schemaVersion\":2}", "manifests must be an array"},
	    {"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"sha256:../../etc/passwd\",\"size\":1}]}",
	     "is not sha256"},
	    {"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"sha512:aa\",\"size\":1}]}", "only sha256"},
	    {"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" D1 "\",\"size\":-1}]}", "non-negative"},
	    {"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" D1 "\"}]}", "size must be"},
	    {"{\"schemaVersion\":2,\"manifests\":[{\"size\":1}]}", "without a digest"},
	    {"{\"schemaVersion\":2,\"schemaVersion\":2,\"manifests\":[]}",
	     "invalid JSON"}, /* duplicate key */
	    {"{\"schemaVersion\":2,\"mediaType\":\"" OCI_MT_MANIFEST "\",\"manifests\":[]}",
	     "is not an image index"},
	    {"{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"" D1 "\",\"size\":1,\"annotations\":[]}]}",
	     "annotations"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		oci_index *ix = NULL;
		char *msg = NULL;
		if (parse_index(bad[i].json, &ix, &msg) == 0 || !msg || !strstr(msg, bad[i].msg)) {
			fprintf(stderr, "  case %zu: %s -> %s\n", i, bad[i].json, msg ? msg : "(accepted)");
			unit_failed_now = 1;
		}
		free(msg);
		oci_index_free(ix);
	}
}

TEST(manifest_parse)
{
	const char *j =
	    "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MT_MANIFEST "\","
	    "\"config\":{\"mediaType\":\"" OCI_MT_CONFIG "\",\"digest\":\"" D1 "\",\"size\":5},"
	    "\"layers\":[{\"mediaType\":\"" OCI_MT_LAYER_GZIP "\",\"digest\":\"" D2 "\",\"size\":7},"
	    "{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":\"" D3
	    "\",\"size\":8},"
	    "{\"mediaType\":\"" OCI_MT_LAYER_ZSTD "\",\"digest\":\"" D3 "\",\"size\":8},"
	    "{\"mediaType\":\"" OCI_MT_LAYER "\",\"digest\":\"" D3 "\",\"size\":8}]}";
	oci_manifest *m = NULL;
	CHECK(oci_manifest_parse(j, strlen(j), &m, NULL) == 0);
	CHECK(m->n_layers == 4);
	CHECK_STREQ(m->config.digest, D1);
	CHECK(m->comp[0] == OCI_COMP_GZIP && m->comp[1] == OCI_COMP_GZIP && m->comp[2] == OCI_COMP_ZSTD &&
	      m->comp[3] == OCI_COMP_NONE);
	oci_manifest_free(m);

	sbx_err *e = NULL;
	const char *bad =
	    "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":5},"
	    "\"layers\":[{\"mediaType\":\"application/x-evil\",\"digest\":\"" D2 "\",\"size\":7}]}";
	CHECK(oci_manifest_parse(bad, strlen(bad), &m, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "unsupported layer media type"));
	sbx_err_free(e);
	e = NULL;
	const char *cfgmt = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"text/plain\",\"digest\":\"" D1
			    "\",\"size\":5},\"layers\":[]}";
	CHECK(oci_manifest_parse(cfgmt, strlen(cfgmt), &m, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "not an image config"));
	sbx_err_free(e);
}

TEST(manifest_layer_limit)
{
	size_t cap = 600 * 200 + 256;
	char *j = malloc(cap);
	CHECK(j);
	size_t n = (size_t)snprintf(
	    j, cap, "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[");
	for (int i = 0; i < 501; i++)
		n += (size_t)snprintf(
		    j + n, cap - n, "%s{\"mediaType\":\"" OCI_MT_LAYER "\",\"digest\":\"" D2 "\",\"size\":1}",
		    i ? "," : "");
	snprintf(j + n, cap - n, "]}");
	oci_manifest *m = NULL;
	sbx_err *e = NULL;
	int r = oci_manifest_parse(j, strlen(j), &m, &e);
	free(j);
	CHECK(r < 0);
	CHECK(sbx_err_code(e) == SBX_E_LIMIT_EXCEEDED);
	CHECK(strstr(sbx_err_message(e), "501 layers (max 500)"));
	sbx_err_free(e);
}

TEST(config_parse)
{
	const char *j =
	    "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/bin\",\"A=b=c\"],"
	    "\"WorkingDir\":\"/work\",\"User\":\"1000\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1
	    "\",\"" D2 "\"]},\"history\":[]}";
	oci_config *c = NULL;
	CHECK(oci_config_parse(j, strlen(j), &c, NULL) == 0);
	CHECK_STREQ(c->arch, "amd64");
	CHECK(c->n_diff_ids == 2);
	CHECK_STREQ(c->diff_ids[1], D2);
	CHECK_STREQ(c->env[1], "A=b=c");
	CHECK(c->env[2] == NULL);
	CHECK_STREQ(c->cwd, "/work");
	CHECK_STREQ(c->user, "1000");
	oci_config_free(c);
	/* No config section: empty env. */
	const char *min = "{\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
	CHECK(oci_config_parse(min, strlen(min), &c, NULL) == 0);
	CHECK(c->env && c->env[0] == NULL && c->cwd == NULL);
	oci_config_free(c);

	static const struct {
		const char *json, *msg;
	} bad[] = {
	    {"{\"rootfs\":{\"type\":\"tar\",\"diff_ids\":[]}}", "rootfs.type"},
	    {"{\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:x\"]}}", "not a sha256 digest"},
	    {"{\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[1]}}", "diff_ids must be"},
	    {"{\"os\":\"windows\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}", "not linux"},
	    {"{\"config\":{\"Env\":[\"NOEQUALS\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
	     "KEY=value"},
	    {"{\"config\":{\"Env\":\"PATH=/\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
	     "Env must be"},
	    {"{\"config\":{\"WorkingDir\":\"rel\"},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
	     "not absolute"},
	    {"{\"config\":{\"Env\":[\"A=\\u0000b\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}",
	     "invalid JSON"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		sbx_err *e = NULL;
		c = NULL;
		int r = oci_config_parse(bad[i].json, strlen(bad[i].json), &c, &e);
		if (r == 0 || !strstr(sbx_err_message(e), bad[i].msg)) {
			fprintf(stderr, "  case %zu: %s -> %s\n", i, bad[i].json,
				e ? sbx_err_message(e) : "(accepted)");
			unit_failed_now = 1;
		}
		sbx_err_free(e);
		oci_config_free(c);
	}
}

TEST(json_size_limit)
{
	size_t n = OCI_MAX_JSON + 1;
	char *j = malloc(n + 1);
	CHECK(j);
	memset(j, ' ', n);
	j[n] = 0;
	oci_index *ix = NULL;
	sbx_err *e = NULL;
	int r = oci_index_parse(j, n, &ix, &e);
	free(j);
	CHECK(r < 0 && sbx_err_code(e) == SBX_E_LIMIT_EXCEEDED);
	sbx_err_free(e);
}

TEST(ref_parse)
{
	char *dir = NULL, *tag = NULL;
	CHECK(oci_ref_parse("oci:/tmp/img:v1.2", &dir, &tag, NULL) == 0);
	CHECK_STREQ(dir, "/tmp/img");
	CHECK_STREQ(tag, "v1.2");
	free(dir), free(tag);
	CHECK(oci_ref_parse("oci:/tmp/a:b/img", &dir, &tag, NULL) == 0);
	CHECK_STREQ(dir, "/tmp/a:b/img");
	CHECK(tag == NULL);
	free(dir);
	CHECK(oci_ref_parse("oci:rel", &dir, &tag, NULL) == 0);
	CHECK_STREQ(dir, "rel");
	free(dir);
	CHECK(oci_ref_parse("oci:", &dir, &tag, NULL) < 0);
	CHECK(oci_ref_parse("docker://x", &dir, &tag, NULL) < 0);
	CHECK(oci_ref_parse("oci:/x:", &dir, &tag, NULL) < 0);
	CHECK(oci_ref_parse("oci:/x:-bad", &dir, &tag, NULL) < 0);
	CHECK(oci_ref_parse("oci::t", &dir, &tag, NULL) < 0);
	CHECK(oci_tag_valid("latest") && oci_tag_valid("_a.b-c") && !oci_tag_valid(".x") &&
	      !oci_tag_valid(""));
	CHECK_STREQ(oci_arch_from_machine("x86_64"), "amd64");
	CHECK_STREQ(oci_arch_from_machine("aarch64"), "arm64");
}

TEST(build_roundtrip)
{
	const char *env[] = {"PATH=/bin", NULL}, *ids[] = {D1, D2, NULL};
	char *cfg = oci_config_build("amd64", env, "/root", ids, "2024-05-01T12:00:00Z");
	CHECK(cfg);
	oci_config *c = NULL;
	CHECK(oci_config_parse(cfg, strlen(cfg), &c, NULL) == 0);
	CHECK(c->n_diff_ids == 2 && streq(c->diff_ids[0], D1) && streq(c->cwd, "/root") &&
	      streq(c->env[0], "PATH=/bin"));
	oci_config_free(c);
	free(cfg);
	oci_descriptor cd = {.media_type = OCI_MT_CONFIG, .digest = D1, .size = 3};
	oci_descriptor ls[2] = {{.media_type = OCI_MT_LAYER_GZIP, .digest = D2, .size = 4},
				{.media_type = OCI_MT_LAYER, .digest = D3, .size = 5}};
	char *man = oci_manifest_build(&cd, ls, 2, "2024-05-01T12:00:00Z");
	CHECK(man);
	oci_manifest *m = NULL;
	CHECK(oci_manifest_parse(man, strlen(man), &m, NULL) == 0);
	CHECK(m->n_layers == 2 && m->comp[0] == OCI_COMP_GZIP && m->comp[1] == OCI_COMP_NONE &&
	      m->layers[1].size == 5);
	oci_manifest_free(m);
	free(man);
	/* index.json: add, then replace the same tag and add another. */
	oci_descriptor md = {.media_type = OCI_MT_MANIFEST, .digest = D1, .size = 9};
	char *ix1 = NULL, *ix2 = NULL, *ix3 = NULL;
	CHECK(oci_index_add(NULL, 0, &md, "t", &ix1, NULL) == 0);
	memcpy(md.digest, D2, STORE_DIGEST_SIZE);
	CHECK(oci_index_add(ix1, strlen(ix1), &md, "t", &ix2, NULL) == 0);
	CHECK(oci_index_add(ix2, strlen(ix2), &md, "u", &ix3, NULL) == 0);
	oci_index *ix = NULL;
	CHECK(oci_index_parse(ix3, strlen(ix3), &ix, NULL) == 0);
	CHECK(ix->n == 2);
	const oci_descriptor *d = NULL;
	CHECK(oci_index_select(ix, "t", "amd64", &d, NULL) == 0);
	CHECK_STREQ(d->digest, D2);
	oci_index_free(ix);
	char *ix4 = NULL;
	CHECK(oci_index_add("{\"schemaVersion\":3}", 19, &md, "t", &ix4, NULL) < 0);
	free(ix1), free(ix2), free(ix3);
}
