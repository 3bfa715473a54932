#include "util/json.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/fd.h"

json_t *json_from_strv(const char *const *v)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	for (; v && *v; v++)
		if (json_array_append_new(a, json_string(*v)) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

char **json_to_strv(const json_t *a)
{
	if (!json_is_array(a))
		return NULL;
	size_t n = json_array_size(a);
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s || !(v[i] = strdup(s))) {
			strv_free(v);
			return NULL;
		}
	}
	return v;
}

int json_send(int sock, const json_t *msg, const int *fds, size_t n_fds)
{
	_cleanup_free_ char *s = json_dumps(msg, JSON_COMPACT);
	if (!s)
		return -ENOMEM;
	size_t len = strlen(s);
	if (len >= FD_MSG_MAX)
		return -E2BIG;
	return fd_send_msg(sock, s, len, fds, n_fds);
}

int json_recv(int sock, json_t **ret, int *fds, size_t *n_fds)
{
	_cleanup_free_ char *buf = malloc(FD_MSG_MAX);
	if (!buf)
		return -ENOMEM;
	ssize_t n = fd_recv_msg(sock, buf, FD_MSG_MAX, fds, n_fds);
	if (n < 0)
		return (int)n;
	if (n == 0)
		return 0;
	json_error_t je;
	json_t *j = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		if (n_fds)
			for (size_t i = 0; i < *n_fds; i++)
				safe_close(fds[i]);
		if (n_fds)
			*n_fds = 0;
		return -EBADMSG;
	}
	*ret = j;
	return 1;
}

const char *json_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

int64_t json_int(const json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(obj, key);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

bool json_bool(const json_t *obj, const char *key, bool dflt)
{
	json_t *v = json_object_get(obj, key);
	return json_is_boolean(v) ? json_is_true(v) : dflt;
}

char *json_join_strings(const json_t *a, const char *prefix, char sep)
{
	size_t len = strlen(prefix) + 1, i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v))
			return NULL;
		len += strlen(json_string_value(v)) + 1;
	}
	char *out = malloc(len), *p = out;
	if (!out)
		return NULL;
	p = stpcpy(p, prefix);
	json_array_foreach(a, i, v)
	{
		if (i)
			*p++ = sep;
		p = stpcpy(p, json_string_value(v));
	}
	*p = 0;
	return out;
}

/* Appends ".key" or "[i]" to path (malloc'd). */
static char *nul_child(const char *path, const char *key, size_t idx)
{
	char *p = NULL;
	int n =
	    key ? asprintf(&p, "%s%s%s", path, *path ? "." : "", key) : asprintf(&p, "%s[%zu]", path, idx);
	return n < 0 ? NULL : p;
}

static int nul_walk(const json_t *v, const char *path, const char *const *skip_top, char **ret_path)
{
	if (json_is_string(v)) {
		if (strlen(json_string_value(v)) == json_string_length(v))
			return 0;
		return (*ret_path = strdup(*path ? path : "(value)")) ? 1 : -ENOMEM;
	}
	if (json_is_array(v)) {
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e)
		{
			_cleanup_free_ char *p = nul_child(path, NULL, i);
			if (!p)
				return -ENOMEM;
			int r = nul_walk(e, p, NULL, ret_path);
			if (r != 0)
				return r;
		}
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	const char *k;
	size_t klen;
	json_t *e;
	json_object_keylen_foreach((json_t *)v, k, klen, e)
	{
		_cleanup_free_ char *p = nul_child(path, k, 0);
		if (!p)
			return -ENOMEM;
		if (strlen(k) != klen)
			return (*ret_path = TAKE_PTR(p)) ? 1 : -ENOMEM; /* a name cut short at its NUL */
		bool skip = false;
		for (const char *const *q = skip_top; q && *q && !skip; q++)
			skip = strcmp(*q, k) == 0;
		if (skip)
			continue;
		int r = nul_walk(e, p, NULL, ret_path);
		if (r != 0)
			return r;
	}
	return 0;
}

int json_find_nul(const json_t *v, const char *const *skip_top, char **ret_path)
{
	*ret_path = NULL;
	return nul_walk(v, "", skip_top, ret_path);
}

bool json_is_strv(const json_t *a)
{
	size_t i;
	json_t *x;
	if (!json_is_array(a))
		return false;
	json_array_foreach((json_t *)a, i, x)
	{
		if (!json_is_string(x))
			return false;
	}
	return true;
}
