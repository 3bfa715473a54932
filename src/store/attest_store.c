/* Attestation records: gc roots for the blobs of attested files (see attest_store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/attest_store.h"
#include "store/attest_stmt.h"
#include "store/digest.h"
#include "store/storefs.h"
#include "util/fs.h"
#include "util/json.h"

#define ATTEST_RECORD_MAX (16u << 20)

int attest_store_put(const char *root, const void *statement, size_t len, sbx_err **err)
{
	char d[STORE_DIGEST_SIZE];
	if (store_digest_buf(statement, len, d, err) < 0)
		return -1;
	_cleanup_free_ char *dir = store_fs_path(root, STORE_DIR_ATTESTATIONS), *name = NULL;
	if (!dir || asprintf(&name, "%s.json", store_digest_hex(d)) < 0)
		return err_oom(err);
	if (fs_mkdir_p(dir, 0700) < 0)
		return err_errno(err, "create '%s'", dir);
	return store_fs_write_atomic(dir, name, statement, len, 0644, err);
}

static char *keep_record(const char *name)
{
	size_t n = strlen(name);
	if (n != STORE_DIGEST_HEX_LEN + 5 || strcmp(name + STORE_DIGEST_HEX_LEN, ".json") != 0)
		return NULL;
	return strdup(name);
}

char **attest_store_blobs(const char *root)
{
	_cleanup_free_ char *dir = store_fs_path(root, STORE_DIR_ATTESTATIONS);
	_cleanup_strv_free_ char **names = NULL;
	char **out = calloc(1, sizeof(char *));
	size_t n = 0;
	if (!dir || !out) {
		strv_free(out);
		return NULL;
	}
	if (store_fs_list_dir(dir, keep_record, &names, NULL) < 0)
		return out;
	for (char **p = names; p && *p; p++) {
		_cleanup_free_ char *path = fs_path_join(dir, *p), *buf = NULL;
		size_t len = 0;
		_cleanup_json_ json_t *st = NULL;
		if (!path || fs_read_file(path, ATTEST_RECORD_MAX, &buf, &len) < 0 ||
		    attest_statement_parse(buf, len, &st, NULL) < 0)
			continue;
		size_t i;
		json_t *s;
		json_array_foreach(json_object_get(st, "subject"), i, s)
		{
			char d[STORE_DIGEST_SIZE];
			snprintf(d, sizeof(d), "sha256:%s", json_str(json_object_get(s, "digest"), "sha256"));
			if (strv_push_copy(&out, &n, d) < 0) {
				strv_free(out);
				return NULL;
			}
		}
	}
	return out;
}
