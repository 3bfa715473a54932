/* E2B's user `user` in sandboxes of the base template (see e2b_user.h). */
#include "server/e2b_user.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b_auth.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/macro.h"

#define PASSWD_MAX (1 << 20)
#define KNOWN_MAX 256 /* sandboxes remembered as having the user */

/* The length of line's field f (0-based) and where it starts; false if it
 * has fewer fields. */
static bool field(const char *line, size_t len, int f, const char **ret, size_t *ret_len)
{
	const char *s = line, *end = line + len;
	for (int i = 0; i < f; i++) {
		const char *c = memchr(s, ':', (size_t)(end - s));
		if (!c)
			return false;
		s = c + 1;
	}
	const char *c = memchr(s, ':', (size_t)(end - s));
	*ret = s;
	*ret_len = c ? (size_t)(c - s) : (size_t)(end - s);
	return true;
}

char *e2b_user_add_line(const char *text, const char *line, bool *ret_oom)
{
	*ret_oom = false;
	const char *name, *id;
	size_t name_len, id_len;
	if (!field(line, strlen(line), 0, &name, &name_len) || !field(line, strlen(line), 2, &id, &id_len))
		return NULL;
	text = text ?: "";
	const char *insert = NULL;
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		const char *n, *i;
		size_t nlen, ilen;
		if (field(l, len, 0, &n, &nlen) && nlen == name_len && !memcmp(n, name, nlen))
			return NULL; /* there already */
		if (!insert && field(l, len, 2, &i, &ilen) && ilen == id_len && !memcmp(i, id, ilen))
			insert = l;
		if (!nl)
			break;
		l = nl + 1;
	}
	size_t tlen = strlen(text), llen = strlen(line);
	char *out = malloc(tlen + llen + 3);
	if (!out) {
		*ret_oom = true;
		return NULL;
	}
	if (insert) {
		size_t head = (size_t)(insert - text);
		memcpy(out, text, head);
		memcpy(out + head, line, llen);
		out[head + llen] = '\n';
		memcpy(out + head + llen + 1, insert, tlen - head + 1);
	} else {
		memcpy(out, text, tlen);
		size_t o = tlen;
		if (tlen && text[tlen - 1] != '\n')
			out[o++] = '\n';
		memcpy(out + o, line, llen);
		out[o + llen] = '\n';
		out[o + llen + 1] = 0;
	}
	return out;
}

/* Adds line to the environment's file path; *ret_added: whether it had to. */
static int file_add(sbx_ctx *ctx, const char *id, const char *path, const char *line, bool *ret_added,
		    sbx_err **err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	bool truncated = false;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_read_file(ctx, id, path, PASSWD_MAX, &text, &len, NULL, &truncated, &e) < 0) {
		if (sbx_err_code(e) != SBX_E_NOT_FOUND) {
			*err = TAKE_PTR(e);
			return err_wrap(err, "E2B's user: read %s", path);
		}
	} else if (truncated || strlen(text) != len) {
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "E2B's user: %s is not a text of at most 1 MiB", path);
	}
	bool oom;
	_cleanup_free_ char *out = e2b_user_add_line(text, line, &oom);
	*ret_added = out != NULL;
	if (oom)
		return err_oom(err);
	if (out && sbx_env_write_file(ctx, id, path, out, strlen(out), 0644, err) < 0)
		return err_wrap(err, "E2B's user: write %s", path);
	return 0;
}

int e2b_user_setup(sbx_ctx *ctx, const char *id, sbx_err **err)
{
	if (sbx_ctx_rootless(ctx))
		return 0;
	bool added_user = false, added_group = false;
	if (file_add(ctx, id, "/etc/group", E2B_USER_GROUP, &added_group, err) < 0 ||
	    file_add(ctx, id, "/etc/passwd", E2B_USER_PASSWD, &added_user, err) < 0)
		return -1;
	if (!added_user)
		return 0; /* the template has it (a snapshot of an E2B sandbox) */
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.parents = true;
	o.mode = 0750;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_make_dir(ctx, id, E2B_USER_HOME, &o, NULL, &e) < 0 && sbx_err_code(e) != SBX_E_CONFLICT) {
		*err = TAKE_PTR(e);
		return err_wrap(err, "E2B's user: make " E2B_USER_HOME);
	}
	/* Owned by the user: a chown as the environment's root (the file
	 * calls cannot give away what they make). */
	const char *argv[] = {"chown", "1000:1000", E2B_USER_HOME, NULL};
	return e2b_root_exec(ctx, id, argv, "E2B's user", err);
}

int e2b_root_exec(sbx_ctx *ctx, const char *id, const char *const *argv, const char *what, sbx_err **err)
{
	sbx_exec_opts xo = SBX_EXEC_OPTS_INIT;
	xo.argv = argv;
	xo.user = "0";
	xo.capture = true;
	sbx_exec_result res = {0};
	int r = sbx_env_exec(ctx, id, &xo, &res, err);
	if (r == 0 && res.exit_code != 0) {
		char cmd[256];
		size_t w = 0;
		for (size_t i = 0; argv[i] && w < sizeof(cmd); i++)
			w += (size_t)snprintf(cmd + w, sizeof(cmd) - w, "%s%s", i ? " " : "", argv[i]);
		r = err_set(err, SBX_E_INTERNAL, EPERM, "%s: %s: %.200s", what, cmd,
			    res.stderr_buf ?: "failed");
	}
	sbx_exec_result_free(&res);
	return r < 0 ? -1 : 0;
}

static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
static char known[KNOWN_MAX][E2B_ID_MAX + 1];
static unsigned known_next;

static bool known_has(const char *id)
{
	bool has = false;
	pthread_mutex_lock(&known_lock);
	for (unsigned i = 0; i < KNOWN_MAX && !has; i++)
		has = streq(known[i], id);
	pthread_mutex_unlock(&known_lock);
	return has;
}

const char *e2b_user_for(sbx_ctx *ctx, const char *id, const char *asked)
{
	if (asked)
		return asked;
	if (!id || strlen(id) > E2B_ID_MAX)
		return NULL;
	if (known_has(id))
		return E2B_USER;
	_cleanup_free_ char *text = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_read_file(ctx, id, "/etc/passwd", PASSWD_MAX, &text, NULL, NULL, NULL, &e) < 0)
		return NULL;
	bool oom;
	_cleanup_free_ char *out = e2b_user_add_line(text, E2B_USER_PASSWD, &oom);
	if (out || oom)
		return NULL; /* no such user there */
	pthread_mutex_lock(&known_lock);
	snprintf(known[known_next++ % KNOWN_MAX], E2B_ID_MAX + 1, "%s", id);
	pthread_mutex_unlock(&known_lock);
	return E2B_USER;
}

int e2b_sandbox_marks(sbx_ctx *ctx, const char *id, bool id_only, sbx_err **err)
{
	const struct {
		const char *path, *text;
	} marks[] = {{"/run/e2b/.E2B_SANDBOX", "true"}, {"/run/e2b/.E2B_SANDBOX_ID", id}};
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = "0";
	o.parents = true;
	o.write = true;
	for (size_t i = id_only ? 1 : 0; i < ARRAY_SIZE(marks); i++) {
		_cleanup_close_ int fd = -1;
		if (sbx_env_file_open(ctx, id, marks[i].path, &o, &fd, NULL, err) < 0)
			return err_wrap(err, "envd's marks: %s", marks[i].path);
		if (fd_write_all(fd, marks[i].text, strlen(marks[i].text)) < 0)
			return err_errno(err, "envd's marks: write %s", marks[i].path);
	}
	return 0;
}
