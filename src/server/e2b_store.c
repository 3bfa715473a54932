/* The E2B front door's sandbox records (e2b_store.h). */
#include "server/e2b_store.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

#define RECORD_MAX_BYTES (1 << 20) /* a record file larger than this is not read */

struct e2b_store {
	char *dir;
	pthread_mutex_t lock; /* guards v, n, cap */
	e2b_record *v;
	size_t n, cap;
};

void e2b_record_clear(e2b_record *r)
{
	if (!r)
		return;
	json_decref(r->metadata);
	r->metadata = NULL;
}

void e2b_records_free(e2b_record *v, size_t n)
{
	for (size_t i = 0; i < n && v; i++)
		e2b_record_clear(&v[i]);
	free(v);
}

static void record_copy(e2b_record *dst, const e2b_record *src)
{
	*dst = *src;
	dst->metadata = json_incref(src->metadata);
}

json_t *e2b_record_to_json(const e2b_record *r)
{
	return json_pack("{s:s,s:s,s:s,s:O,s:I,s:I,s:b,s:b,s:i,s:I,s:I}", "id", r->id, "token", r->token,
			 "template_id", r->template_id, "metadata", r->metadata ? r->metadata : json_null(),
			 "started_ms", (json_int_t)r->started_ms, "end_ms", (json_int_t)r->end_ms,
			 "auto_pause", r->auto_pause, "paused", r->paused, "cpu_count", r->cpu_count,
			 "memory_mb", (json_int_t)r->memory_mb, "disk_mb", (json_int_t)r->disk_mb);
}

static bool token_valid(const char *t)
{
	if (strlen(t) != E2B_TOKEN_LEN)
		return false;
	for (const char *p = t; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

int e2b_record_from_json(const json_t *j, e2b_record *ret)
{
	const char *id = json_str(j, "id"), *token = json_str(j, "token"), *tpl = json_str(j, "template_id");
	json_t *md = json_object_get(j, "metadata");
	if (!id || !e2b_id_valid(id) || !token || !token_valid(token) || !tpl ||
	    strlen(tpl) > E2B_TEMPLATE_MAX || !json_is_object(md))
		return -EINVAL;
	const char *k;
	json_t *v;
	json_object_foreach(md, k, v) if (!json_is_string(v)) return -EINVAL;
	*ret = (e2b_record){
	    .started_ms = json_int(j, "started_ms", 0),
	    .end_ms = json_int(j, "end_ms", 0),
	    .auto_pause = json_bool(j, "auto_pause", false),
	    .paused = json_bool(j, "paused", false),
	    .cpu_count = (int)json_int(j, "cpu_count", 1),
	    .memory_mb = json_int(j, "memory_mb", 0),
	    .disk_mb = json_int(j, "disk_mb", 0),
	    .metadata = json_incref(md),
	};
	snprintf(ret->id, sizeof(ret->id), "%s", id);
	snprintf(ret->token, sizeof(ret->token), "%s", token);
	snprintf(ret->template_id, sizeof(ret->template_id), "%s", tpl);
	return 0;
}

/* The index of id in s->v, or -1. Under s->lock. */
static ssize_t find_locked(const e2b_store *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (streq(s->v[i].id, id))
			return (ssize_t)i;
	return -1;
}

/* Adds or replaces (taking r's metadata reference). Under s->lock. */
static int set_locked(e2b_store *s, e2b_record *r)
{
	ssize_t i = find_locked(s, r->id);
	if (i >= 0) {
		e2b_record_clear(&s->v[i]);
		s->v[i] = *r;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		e2b_record *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *r;
	return 0;
}

static void load(e2b_store *s)
{
	DIR *d = opendir(s->dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len < 6 || !streq(de->d_name + len - 5, ".json") || de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *path = fs_path_join(s->dir, de->d_name), *buf = NULL;
		size_t n = 0;
		if (!path || fs_read_file(path, RECORD_MAX_BYTES, &buf, &n) < 0)
			continue;
		_cleanup_json_ json_t *j = json_loadb(buf, n, 0, NULL);
		e2b_record r;
		if (!j || e2b_record_from_json(j, &r) < 0)
			continue;
		if (strncmp(de->d_name, r.id, len - 5) != 0 || strlen(r.id) != len - 5 ||
		    set_locked(s, &r) < 0)
			e2b_record_clear(&r);
	}
	closedir(d);
}

int e2b_store_open(const char *dir, e2b_store **ret, sbx_err **err)
{
	int r = fs_mkdir_p(dir, 0700);
	if (r < 0 && r != -EEXIST)
		return err_set(err, SBX_E_INTERNAL, -r, "create %s", dir);
	struct stat st;
	if (lstat(dir, &st) < 0)
		return err_errno(err, "stat %s", dir);
	if (!S_ISDIR(st.st_mode))
		return err_set(err, SBX_E_INTERNAL, ENOTDIR, "%s is not a directory", dir);
	if ((st.st_mode & 077) && chmod(dir, 0700) < 0)
		return err_errno(err, "chmod %s", dir);
	e2b_store *s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(dir))) {
		free(s);
		return err_oom(err);
	}
	pthread_mutex_init(&s->lock, NULL);
	load(s);
	*ret = s;
	return 0;
}

void e2b_store_free(e2b_store *s)
{
	if (!s)
		return;
	e2b_records_free(s->v, s->n);
	pthread_mutex_destroy(&s->lock);
	free(s->dir);
	free(s);
}

static char *record_path(const e2b_store *s, const char *id)
{
	char name[E2B_ID_MAX + 8];
	snprintf(name, sizeof(name), "%s.json", id);
	return fs_path_join(s->dir, name);
}

int e2b_store_put(e2b_store *s, const e2b_record *r, sbx_err **err)
{
	if (!e2b_id_valid(r->id))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid sandbox id '%s'", r->id);
	_cleanup_json_ json_t *j = e2b_record_to_json(r);
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL, *path = record_path(s, r->id);
	if (!text || !path)
		return err_oom(err);
	e2b_record copy;
	record_copy(&copy, r);
	/* The file and the table change together: a concurrent put of the same
	 * id cannot leave the file and the table disagreeing. */
	pthread_mutex_lock(&s->lock);
	int w = fs_write_atomic(path, text, strlen(text), 0600);
	int a = w < 0 ? 0 : set_locked(s, &copy);
	pthread_mutex_unlock(&s->lock);
	if (w < 0 || a < 0) {
		e2b_record_clear(&copy);
		return w < 0 ? err_set(err, SBX_E_INTERNAL, -w, "write %s", path) : err_oom(err);
	}
	return 0;
}

bool e2b_store_get(e2b_store *s, const char *id, e2b_record *ret)
{
	pthread_mutex_lock(&s->lock);
	ssize_t i = find_locked(s, id);
	if (i >= 0)
		record_copy(ret, &s->v[i]);
	pthread_mutex_unlock(&s->lock);
	return i >= 0;
}

void e2b_store_remove(e2b_store *s, const char *id)
{
	_cleanup_free_ char *path = e2b_id_valid(id) ? record_path(s, id) : NULL;
	pthread_mutex_lock(&s->lock);
	ssize_t i = find_locked(s, id);
	if (i >= 0) {
		e2b_record_clear(&s->v[i]);
		s->v[i] = s->v[--s->n];
	}
	if (path)
		(void)unlink(path);
	pthread_mutex_unlock(&s->lock);
}

int e2b_store_list(e2b_store *s, e2b_record **ret, size_t *ret_n)
{
	pthread_mutex_lock(&s->lock);
	e2b_record *v = calloc(s->n ? s->n : 1, sizeof(*v));
	if (v)
		for (size_t i = 0; i < s->n; i++)
			record_copy(&v[i], &s->v[i]);
	size_t n = s->n;
	pthread_mutex_unlock(&s->lock);
	if (!v)
		return -ENOMEM;
	*ret = v;
	*ret_n = n;
	return 0;
}

int64_t e2b_store_next_deadline(e2b_store *s, int64_t now_ms, e2b_record *due, bool *ret_due)
{
	int64_t next = INT64_MAX;
	ssize_t at = -1;
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].paused && s->v[i].end_ms < next) {
			next = s->v[i].end_ms;
			at = (ssize_t)i;
		}
	*ret_due = at >= 0 && next <= now_ms;
	if (*ret_due)
		record_copy(due, &s->v[at]);
	pthread_mutex_unlock(&s->lock);
	return next;
}
