/* The E2B front door's sandbox records (src/server/e2b_store.h): their JSON
 * form, the files a restarted server reads back, deadlines. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "server/e2b_store.h"
#include "unit.h"
#include "util/fs.h"

static e2b_record rec(const char *id, int64_t end_ms)
{
	e2b_record r = {.started_ms = 1000, .end_ms = end_ms, .cpu_count = 2, .memory_mb = 1024};
	snprintf(r.id, sizeof(r.id), "%s", id);
	memset(r.token, 'a', E2B_TOKEN_LEN);
	r.token[E2B_TOKEN_LEN] = 0;
	snprintf(r.template_id, sizeof(r.template_id), "base");
	r.metadata = json_pack("{s:s}", "k", "v");
	return r;
}

TEST(record_json_round_trip_and_rejections)
{
	e2b_record r = rec("abc123", 5000), back;
	r.auto_pause = true;
	json_t *j = e2b_record_to_json(&r);
	CHECK(j != NULL);
	CHECK(e2b_record_from_json(j, &back) == 0);
	CHECK_STREQ(back.id, "abc123");
	CHECK_STREQ(back.token, r.token);
	CHECK_STREQ(back.template_id, "base");
	CHECK(back.end_ms == 5000 && back.started_ms == 1000 && back.auto_pause && !back.paused);
	CHECK(back.cpu_count == 2 && back.memory_mb == 1024);
	CHECK_STREQ(json_string_value(json_object_get(back.metadata, "k")), "v");
	e2b_record_clear(&back);
	/* an id E2B would refuse, a token that is not 64 hex digits, metadata not of strings */
	json_object_set_new(j, "id", json_string("ABC-1"));
	CHECK(e2b_record_from_json(j, &back) == -EINVAL);
	json_object_set_new(j, "id", json_string("abc123"));
	json_object_set_new(j, "token", json_string("xyz"));
	CHECK(e2b_record_from_json(j, &back) == -EINVAL);
	json_object_set_new(j, "token", json_string(r.token));
	json_object_set_new(j, "metadata", json_pack("{s:i}", "k", 1));
	CHECK(e2b_record_from_json(j, &back) == -EINVAL);
	json_decref(j);
	e2b_record_clear(&r);
}

TEST(store_persists_across_opens)
{
	char tmp[] = "/tmp/test_e2b_store.XXXXXX";
	CHECK(mkdtemp(tmp) != NULL);
	char *dir = fs_path_join(tmp, "e2b");
	e2b_store *s = NULL;
	CHECK(e2b_store_open(dir, &s, NULL) == 0);
	struct stat st;
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	e2b_record a = rec("aaa", 3000), b = rec("bbb", 2000), got;
	CHECK(e2b_store_put(s, &a, NULL) == 0);
	CHECK(e2b_store_put(s, &b, NULL) == 0);
	b.end_ms = 9000; /* a put replaces */
	CHECK(e2b_store_put(s, &b, NULL) == 0);
	char *path = fs_path_join(dir, "aaa.json");
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	free(path);
	/* a stray file is skipped */
	path = fs_path_join(dir, "junk.json");
	CHECK(fs_write_atomic(path, "{", 1, 0600) == 0);
	free(path);
	e2b_store_free(s);

	CHECK(e2b_store_open(dir, &s, NULL) == 0);
	e2b_record *v = NULL;
	size_t n = 0;
	CHECK(e2b_store_list(s, &v, &n) == 0 && n == 2);
	e2b_records_free(v, n);
	CHECK(e2b_store_get(s, "bbb", &got) && got.end_ms == 9000);
	e2b_record_clear(&got);
	CHECK(!e2b_store_get(s, "ccc", &got));
	/* the earliest deadline; due only once reached; paused ones have none */
	bool due = true;
	CHECK(e2b_store_next_deadline(s, 2999, &got, &due) == 3000 && !due);
	CHECK(e2b_store_next_deadline(s, 3000, &got, &due) == 3000 && due);
	CHECK_STREQ(got.id, "aaa");
	e2b_record_clear(&got);
	a.paused = true;
	CHECK(e2b_store_put(s, &a, NULL) == 0);
	CHECK(e2b_store_next_deadline(s, 3000, &got, &due) == 9000 && !due);
	e2b_store_remove(s, "bbb");
	CHECK(e2b_store_next_deadline(s, 3000, &got, &due) == INT64_MAX && !due);
	e2b_store_free(s);
	CHECK(e2b_store_open(dir, &s, NULL) == 0);
	CHECK(!e2b_store_get(s, "bbb", &got)); /* its file went with it */
	e2b_store_free(s);
	e2b_record_clear(&a);
	e2b_record_clear(&b);
	CHECK(fs_rm_rf(tmp) == 0);
	free(dir);
}
