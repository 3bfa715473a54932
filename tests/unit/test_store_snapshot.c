/* Unit tests: src/store/snapshot.c — manifest encode/decode (pure), id
 * stability, validation, and the on-disk manifest and label refs. */
#include <errno.h>
#include <unistd.h>

#include "store/snapshot.h"
#include "unit.h"
#include "util/fs.h"

#define L1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define L2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

static char **strv(const char *a, const char *b)
{
	char **v = calloc(3, sizeof(char *));
	if (a)
		v[0] = strdup(a);
	if (a && b)
		v[1] = strdup(b);
	return v;
}

static store_snapshot *sample(void)
{
	store_snapshot *s = calloc(1, sizeof(*s));
	s->parent = strdup(L2);
	s->layers = strv(L1, L2);
	s->base_template = strdup("debian-12");
	s->env = strv("PATH=/usr/bin:/bin", "LANG=C.UTF-8");
	s->cwd = strdup("/work");
	s->user = strdup("root");
	s->os_release = strdup("Debian GNU/Linux 12 (bookworm)");
	s->packages = strv("bash=5.2.15-2", "café=1");
	s->labels = strv("zeta", "alpha-1");
	s->created_at = strdup("2024-05-01T12:00:00.123Z");
	s->size_bytes = 123456789;
	return s;
}

TEST(manifest_round_trip_and_stable_id)
{
	_cleanup_snapshot_ store_snapshot *s = sample();
	_cleanup_free_ char *json = NULL;
	char id[STORE_DIGEST_SIZE];
	CHECK(store_snapshot_encode(s, &json, id, NULL) == 0);
	CHECK(store_digest_valid(id));
	CHECK(strstr(json, id));
	/* canonical: sorted keys, no whitespace */
	CHECK(startswith(json, "{\"base_template\":\"debian-12\",\"created_at\""));
	CHECK(!strchr(json, '\n'));
	_cleanup_snapshot_ store_snapshot *d = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	int r = store_snapshot_decode(json, strlen(json), &d, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	CHECK_STREQ(d->snapshot_id, id);
	CHECK_STREQ(d->layers[0], L1);
	CHECK_STREQ(d->layers[1], L2);
	CHECK_STREQ(d->labels[0], "alpha-1"); /* labels are a set: sorted */
	CHECK_STREQ(d->packages[1], "café=1");
	CHECK(d->size_bytes == 123456789);
	/* re-encoding the decoded manifest gives the same bytes and id */
	_cleanup_free_ char *json2 = NULL;
	char id2[STORE_DIGEST_SIZE];
	CHECK(store_snapshot_encode(d, &json2, id2, NULL) == 0);
	CHECK_STREQ(json, json2);
	CHECK_STREQ(id, id2);
	/* label order does not matter; layer order does */
	char *t = s->labels[0];
	s->labels[0] = s->labels[1];
	s->labels[1] = t;
	free(json2);
	json2 = NULL;
	CHECK(store_snapshot_encode(s, &json2, id2, NULL) == 0);
	CHECK_STREQ(id, id2);
	t = s->layers[0];
	s->layers[0] = s->layers[1];
	s->layers[1] = t;
	free(json2);
	json2 = NULL;
	CHECK(store_snapshot_encode(s, &json2, id2, NULL) == 0);
	CHECK(!streq(id, id2));
	/* a pinned id: changes to the canonical form are caught here */
	_cleanup_snapshot_ store_snapshot *m = calloc(1, sizeof(*m));
	m->layers = strv(L1, NULL);
	m->env = strv(NULL, NULL);
	m->labels = strv(NULL, NULL);
	m->cwd = strdup("/");
	m->user = strdup("root");
	m->created_at = strdup("2024-01-01T00:00:00Z");
	_cleanup_free_ char *mj = NULL;
	CHECK(store_snapshot_encode(m, &mj, id2, NULL) == 0);
	CHECK_STREQ(
	    mj, "{\"base_template\":null,\"created_at\":\"2024-01-01T00:00:00Z\",\"cwd\":\"/\",\"env\":[],"
		"\"labels\":[],\"layers\":[\"" L1 "\"],\"os_release\":null,\"parent\":null,\"schema\":1,"
		"\"size_bytes\":0,\"snapshot_id\":\"sha256:"
		"8fcbd73d7faade58ee35e06be173f37770f62c976bd0e4fc47f81f778c514915\",\"user\":\"root\"}");
}

TEST(manifest_rejects_bad_input)
{
	_cleanup_snapshot_ store_snapshot *s = sample();
	_cleanup_free_ char *json = NULL;
	char id[STORE_DIGEST_SIZE];
	CHECK(store_snapshot_encode(s, &json, id, NULL) == 0);
	/* tampered value -> id mismatch */
	char *u = strstr(json, "/work");
	CHECK(u);
	u[1] = 'W';
	store_snapshot *d = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(store_snapshot_decode(json, strlen(json), &d, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "does not match"));
	static const char *const bad[] = {
	    "",
	    "[]",
	    "{\"schema\":2}",
	    "{\"schema\":1,\"snapshot_id\":\"x\"}",
	    "{\"schema\":1,\"snapshot_id\":\"" L1 "\",\"surprise\":1}",
	    "{\"schema\":1,\"schema\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		store_snapshot *x = NULL;
		_cleanup_err_ sbx_err *e2 = NULL;
		CHECK(store_snapshot_decode(bad[i], strlen(bad[i]), &x, &e2) < 0);
		CHECK(sbx_err_code(e2) == SBX_E_INVALID_ARGUMENT);
	}
	/* validation names the field */
	_cleanup_snapshot_ store_snapshot *v = sample();
	free(v->cwd);
	v->cwd = strdup("relative");
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(store_snapshot_validate(v, &e3) < 0 && strstr(sbx_err_message(e3), "cwd"));
	free(v->cwd);
	v->cwd = strdup("/");
	free(v->layers[0]);
	v->layers[0] = strdup("sha256:nothex");
	_cleanup_err_ sbx_err *e4 = NULL;
	CHECK(store_snapshot_validate(v, &e4) < 0 && strstr(sbx_err_message(e4), "layer"));
	free(v->layers[0]);
	v->layers[0] = strdup(L1);
	free(v->labels[0]);
	v->labels[0] = strdup("../etc");
	_cleanup_err_ sbx_err *e5 = NULL;
	CHECK(store_snapshot_validate(v, &e5) < 0 && strstr(sbx_err_message(e5), "label"));
	free(v->labels[0]);
	v->labels[0] = strdup("ok");
	free(v->created_at);
	v->created_at = strdup("yesterday");
	_cleanup_err_ sbx_err *e6 = NULL;
	CHECK(store_snapshot_validate(v, &e6) < 0 && strstr(sbx_err_message(e6), "created_at"));
}

/* A template's base (issue 13.9): base_identity is optional (absent: the
 * pinned id above is unchanged), kept in order, part of the id, and each
 * entry must be key=value. */
TEST(manifest_base_identity)
{
	_cleanup_snapshot_ store_snapshot *s = sample();
	char id0[STORE_DIGEST_SIZE], id1[STORE_DIGEST_SIZE], id2[STORE_DIGEST_SIZE];
	_cleanup_free_ char *j0 = NULL, *j1 = NULL, *j2 = NULL;
	CHECK(store_snapshot_encode(s, &j0, id0, NULL) == 0);
	CHECK(!strstr(j0, "base_identity"));
	s->base_identity = strv("template=host", "mask=sha256:00");
	CHECK(store_snapshot_encode(s, &j1, id1, NULL) == 0);
	CHECK(strstr(j1, "\"base_identity\":[\"template=host\",\"mask=sha256:00\"]"));
	CHECK(!streq(id0, id1));
	_cleanup_snapshot_ store_snapshot *d = NULL;
	CHECK(store_snapshot_decode(j1, strlen(j1), &d, NULL) == 0);
	CHECK_STREQ(d->base_identity[1], "mask=sha256:00");
	free(s->base_identity[1]);
	s->base_identity[1] = strdup("mask=sha256:01");
	CHECK(store_snapshot_encode(s, &j2, id2, NULL) == 0);
	CHECK(!streq(id1, id2));
	free(s->base_identity[0]);
	s->base_identity[0] = strdup("no-equals");
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(store_snapshot_validate(s, &e) < 0 && strstr(sbx_err_message(e), "base_identity"));
}

TEST(labels)
{
	static const char *const ok[] = {"a", "base", "v1.2_x-y", "A9"};
	static const char *const bad[] = {"",
					  ".hidden",
					  "-x",
					  "a/b",
					  "..",
					  "a b",
					  "ü",
					  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
					  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		CHECK(store_label_valid(ok[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!store_label_valid(bad[i]));
	CHECK(!store_label_valid(NULL));
}

TEST(snapshot_store_and_refs)
{
	char top[] = "/var/tmp/sbx-test-snap-XXXXXX";
	CHECK(mkdtemp(top));
	_cleanup_snapshot_ store_snapshot *s = sample();
	char id[STORE_DIGEST_SIZE];
	CHECK(store_snapshot_write(top, s, id, NULL) == 0);
	CHECK(store_snapshot_write(top, s, NULL, NULL) == 0); /* idempotent */
	_cleanup_snapshot_ store_snapshot *r = NULL;
	CHECK(store_snapshot_read(top, id, &r, NULL) == 0);
	CHECK_STREQ(r->snapshot_id, id);
	_cleanup_strv_free_ char **list = NULL;
	CHECK(store_snapshot_list(top, &list, NULL) == 0);
	CHECK(list[0] && streq(list[0], id) && !list[1]);
	store_snapshot *x = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	CHECK(store_snapshot_read(top, L1, &x, &e) < 0 && sbx_err_code(e) == SBX_E_NOT_FOUND);
	/* a manifest under the wrong name */
	char p[512];
	snprintf(p, sizeof(p), "%s/snapshots/sha256/%s.json", top, store_digest_hex(L1));
	char src[512];
	snprintf(src, sizeof(src), "%s/snapshots/sha256/%s.json", top, store_digest_hex(id));
	CHECK(link(src, p) == 0);
	_cleanup_err_ sbx_err *e2 = NULL;
	CHECK(store_snapshot_read(top, L1, &x, &e2) < 0 && sbx_err_errno(e2) == EBADMSG);

	CHECK(store_ref_set(top, "main", id, NULL) == 0);
	CHECK(store_ref_set(top, "other", id, NULL) == 0);
	char got[STORE_DIGEST_SIZE];
	CHECK(store_ref_get(top, "main", got, NULL) == 0);
	CHECK_STREQ(got, id);
	_cleanup_strv_free_ char **refs = NULL;
	CHECK(store_ref_list(top, &refs, NULL) == 0);
	CHECK(refs[0] && streq(refs[0], "main") && refs[1] && streq(refs[1], "other") && !refs[2]);
	_cleanup_err_ sbx_err *e3 = NULL;
	CHECK(store_ref_set(top, "../escape", id, &e3) < 0 && sbx_err_code(e3) == SBX_E_INVALID_ARGUMENT);
	_cleanup_err_ sbx_err *e4 = NULL;
	CHECK(store_ref_set(top, "ok", "sha256:short", &e4) < 0);
	CHECK(store_ref_delete(top, "other", NULL) == 0);
	_cleanup_err_ sbx_err *e5 = NULL;
	CHECK(store_ref_get(top, "other", got, &e5) < 0 && sbx_err_code(e5) == SBX_E_NOT_FOUND);
	/* delete: the manifest goes (read is then not_found), once; a bad
	 * digest never becomes a path */
	CHECK(store_snapshot_delete(top, id, NULL) == 0);
	_cleanup_err_ sbx_err *e6 = NULL, *e7 = NULL, *e8 = NULL;
	_cleanup_snapshot_ store_snapshot *gone = NULL;
	CHECK(store_snapshot_read(top, id, &gone, &e6) < 0 && sbx_err_code(e6) == SBX_E_NOT_FOUND);
	CHECK(store_snapshot_delete(top, id, &e7) < 0 && sbx_err_code(e7) == SBX_E_NOT_FOUND);
	CHECK(store_snapshot_delete(top, "sha256:../../x", &e8) < 0 &&
	      sbx_err_code(e8) == SBX_E_INVALID_ARGUMENT);
	fs_rm_rf(top);
}
