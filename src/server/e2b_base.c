/* E2B's base template as a labelled snapshot of host + E2B's user (e2b_base.h). */
#include "server/e2b_base.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/e2b_user.h"
#include "util/err.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"

#define HOST_FILE_MAX (1 << 20)
/* Bump when what the snapshot holds changes (another user line, a file). */
#define BASE_VERSION "2"
/* E2B's base image has `python`; a Debian host without python-is-python3
 * has only python3: the snapshot gains this link to it. */
#define PYTHON_LINK "/usr/local/bin/python"
#define PYTHON3 "/usr/bin/python3"

static bool python_link_wanted(void)
{
	return access("/usr/bin/python", F_OK) < 0 && access(PYTHON_LINK, F_OK) < 0 &&
	       access(PYTHON3, X_OK) == 0 && access("/usr/local/bin", F_OK) == 0;
}

/* 64-bit FNV-1a: a name for contents, not a defence (the host's own files). */
static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

void e2b_base_label(const char *passwd, const char *group, bool python_link, char ret[E2B_BASE_LABEL_MAX])
{
	const char *parts[] = {BASE_VERSION, E2B_USER_PASSWD, E2B_USER_GROUP, passwd, group};
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
		/* a missing file differs from an empty one; each part is delimited */
		h = parts[i] ? fnv(h, parts[i], strlen(parts[i]) + 1) : fnv(h, "\xff", 1);
	}
	if (python_link) /* a host without it keeps the label it had */
		h = fnv(h, PYTHON_LINK, sizeof(PYTHON_LINK));
	snprintf(ret, E2B_BASE_LABEL_MAX, E2B_BASE_LABEL_PREFIX "%016llx", (unsigned long long)h);
}

static pthread_mutex_t base_lock = PTHREAD_MUTEX_INITIALIZER;
static char base_label[E2B_BASE_LABEL_MAX]; /* what base_digest was found for */
static char *base_digest;

void e2b_base_forget(void)
{
	pthread_mutex_lock(&base_lock);
	free(base_digest);
	base_digest = NULL;
	base_label[0] = 0;
	pthread_mutex_unlock(&base_lock);
}

/* The link, made as the environment's root (the file calls make no links). */
static int python_link(sbx_ctx *ctx, const char *id, sbx_err **err)
{
	const char *argv[] = {"ln", "-s", PYTHON3, PYTHON_LINK, NULL};
	return e2b_root_exec(ctx, id, argv, "E2B's base template", err);
}

/* Makes the snapshot: a host environment, E2B's user, a snapshot labelled
 * label, the environment removed. */
static int base_make(sbx_ctx *ctx, const char *label, bool want_python, char **ret_digest, sbx_err **err)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.template_spec = "host";
	_cleanup_free_ char *id = NULL;
	if (sbx_env_create(ctx, &o, &id, NULL, err) < 0)
		return err_wrap(err, "E2B's base template: create");
	_cleanup_json_ json_t *snap = NULL;
	int r = e2b_user_setup(ctx, id, err);
	if (r == 0 && want_python)
		r = python_link(ctx, id, err);
	if (r == 0) /* envd's marks: the id is each sandbox's own, written at its create */
		r = e2b_sandbox_marks(ctx, id, false, err);
	if (r == 0 && sbx_env_snapshot(ctx, id, label, &snap, err) < 0)
		r = err_wrap(err, "E2B's base template: snapshot");
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_remove(ctx, id, &e) < 0)
		log_debug("E2B's base template: remove its builder %s: %s", id, sbx_err_message(e));
	if (r < 0)
		return -1;
	const char *d = json_str(snap, "snapshot_id");
	if (!d)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "E2B's base template: the snapshot has no id");
	*ret_digest = strdup(d);
	return *ret_digest ? 0 : err_oom(err);
}

int e2b_base_snapshot(sbx_ctx *ctx, char **ret_digest, sbx_err **err)
{
	*ret_digest = NULL;
	if (sbx_ctx_rootless(ctx))
		return 0;
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	(void)fs_read_file("/etc/passwd", HOST_FILE_MAX, &passwd, NULL);
	(void)fs_read_file("/etc/group", HOST_FILE_MAX, &group, NULL);
	char label[E2B_BASE_LABEL_MAX];
	bool want_python = python_link_wanted();
	e2b_base_label(passwd, group, want_python, label);

	pthread_mutex_lock(&base_lock);
	int r = 0;
	if (!base_digest || !streq(base_label, label)) {
		free(base_digest);
		base_digest = NULL;
		base_label[0] = 0;
		_cleanup_err_ sbx_err *e = NULL;
		if (sbx_snapshot_resolve(ctx, label, &base_digest, &e) < 0) {
			base_digest = NULL;
			if (sbx_err_code(e) != SBX_E_NOT_FOUND) {
				*err = TAKE_PTR(e);
				r = err_wrap(err, "E2B's base template: look up %s", label);
			} else {
				r = base_make(ctx, label, want_python, &base_digest, err);
			}
		}
		if (r == 0)
			snprintf(base_label, sizeof(base_label), "%s", label);
	}
	if (r == 0 && !(*ret_digest = strdup(base_digest)))
		r = err_oom(err);
	pthread_mutex_unlock(&base_lock);
	return r;
}
