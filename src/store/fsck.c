#include "store/fsck.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/digest.h"
#include "store/layer.h"
#include "store/snapshot.h"
#include "store/storefs.h"
#include "util/fs.h"

void store_fsck_report_clear(store_fsck_report *r)
{
	strv_free(r->problems);
	*r = (store_fsck_report){0};
}

static int problem(store_fsck_report *r, const char *fmt, ...) _printf_(2, 3);
static int problem(store_fsck_report *r, const char *fmt, ...)
{
	char **nv = realloc(r->problems, (r->n_problems + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	r->problems = nv;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&nv[r->n_problems], fmt, ap);
	va_end(ap);
	if (n < 0) {
		nv[r->n_problems] = NULL;
		return -ENOMEM;
	}
	nv[++r->n_problems] = NULL;
	return 0;
}

static int problem_err(store_fsck_report *r, sbx_err **e)
{
	int q = problem(r, "%s", sbx_err_message(*e));
	sbx_err_free(*e);
	*e = NULL;
	return q;
}

static bool strv_has(char **v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

static int check_blobs(const char *root, char **layers, store_fsck_report *rep, sbx_err **err)
{
	_cleanup_free_ char *dir = store_fs_path(root, STORE_DIR_OBJECTS);
	if (!dir)
		return -ENOMEM;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : err_errno(err, "open '%s'", dir);
	struct dirent *de;
	int q = 0;
	while (q >= 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *sub = fs_path_join(dir, de->d_name);
		DIR *s = sub ? opendir(sub) : NULL;
		if (!s) {
			q = problem(rep, "objects: unexpected entry '%s'", de->d_name);
			continue;
		}
		struct dirent *fe;
		while (q >= 0 && (fe = readdir(s))) {
			if (streq(fe->d_name, ".") || streq(fe->d_name, ".."))
				continue;
			if (!store_digest_hex_valid(fe->d_name) || strncmp(fe->d_name, de->d_name, 2) != 0 ||
			    strlen(de->d_name) != 2) {
				q = problem(rep, "objects: unexpected entry '%s/%s'", de->d_name, fe->d_name);
				continue;
			}
			rep->blobs++;
			char digest[STORE_DIGEST_SIZE];
			memcpy(digest, STORE_DIGEST_PREFIX, 7);
			memcpy(digest + 7, fe->d_name, STORE_DIGEST_HEX_LEN + 1);
			_cleanup_err_ sbx_err *e = NULL;
			if (store_blob_verify(root, digest, &e) < 0)
				q = problem_err(rep, &e);
			(void)layers;
		}
		closedir(s);
	}
	closedir(d);
	return q < 0 ? err_errnum(err, q, "fsck") : 0;
}

int store_fsck(const char *store_root, store_fsck_report *ret, sbx_err **err)
{
	store_fsck_report rep = {0};
	_cleanup_strv_free_ char **layers = NULL, **snaps = NULL, **labels = NULL;
	int r = store_layer_list(store_root, &layers, err);
	if (r >= 0)
		r = store_snapshot_list(store_root, &snaps, err);
	if (r >= 0)
		r = store_ref_list(store_root, &labels, err);
	if (r < 0)
		return err_wrap(err, "fsck");
	int q = 0;
	for (char **l = layers; q >= 0 && *l; l++) {
		rep.layers++;
		_cleanup_err_ sbx_err *e = NULL;
		if (store_layer_verify(store_root, *l, &e) < 0)
			q = problem_err(&rep, &e);
	}
	if (q >= 0)
		q = check_blobs(store_root, layers, &rep, err);
	if (q < 0 && err && *err) {
		store_fsck_report_clear(&rep);
		return err_wrap(err, "fsck");
	}
	for (char **s = snaps; q >= 0 && *s; s++) {
		rep.snapshots++;
		_cleanup_err_ sbx_err *e = NULL;
		_cleanup_snapshot_ store_snapshot *m = NULL;
		if (store_snapshot_read(store_root, *s, &m, &e) < 0) {
			q = problem_err(&rep, &e);
			continue;
		}
		for (char **l = m->layers; q >= 0 && l && *l; l++)
			if (!strv_has(layers, *l))
				q = problem(&rep, "snapshot %s: layer %s is missing", *s, *l);
		if (q >= 0 && m->parent && !strv_has(snaps, m->parent))
			q = problem(&rep, "snapshot %s: parent snapshot %s is missing", *s, m->parent);
	}
	for (char **l = labels; q >= 0 && *l; l++) {
		rep.refs++;
		char d[STORE_DIGEST_SIZE];
		_cleanup_err_ sbx_err *e = NULL;
		if (store_ref_get(store_root, *l, d, &e) < 0)
			q = problem_err(&rep, &e);
		else if (!strv_has(snaps, d))
			q = problem(&rep, "label '%s': snapshot %s is missing", *l, d);
	}
	_cleanup_free_ char *tmp = store_fs_path(store_root, STORE_DIR_TMP);
	DIR *d = tmp ? opendir(tmp) : NULL;
	if (d) {
		struct dirent *de;
		while ((de = readdir(d)))
			if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
				rep.tmp_entries++;
		closedir(d);
	}
	if (q < 0) {
		store_fsck_report_clear(&rep);
		return err_errnum(err, q, "fsck");
	}
	*ret = rep;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int store_gc_referenced_layers(const char *store_root, char ***ret, sbx_err **err)
{
	_cleanup_strv_free_ char **snaps = NULL;
	int r = store_snapshot_list(store_root, &snaps, err);
	if (r < 0)
		return r;
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	size_t n = 0;
	if (!v)
		return err_errnum(err, ENOMEM, "gc");
	for (char **s = snaps; *s; s++) {
		_cleanup_snapshot_ store_snapshot *m = NULL;
		r = store_snapshot_read(store_root, *s, &m, err);
		if (r < 0)
			return err_wrap(err, "gc"); /* never guess what a corrupt manifest holds */
		for (char **l = m->layers; l && *l; l++) {
			if (strv_has(v, *l))
				continue;
			char **nv = realloc(v, (n + 2) * sizeof(char *));
			if (!nv)
				return err_errnum(err, ENOMEM, "gc");
			v = nv;
			if (!(v[n] = strdup(*l)))
				return err_errnum(err, ENOMEM, "gc");
			v[++n] = NULL;
		}
	}
	qsort(v, n, sizeof(char *), cmp_str);
	*ret = TAKE_PTR(v);
	return 0;
}

int store_gc_unreferenced_layers(const char *store_root, const char *const *referenced, char ***ret,
				 sbx_err **err)
{
	_cleanup_strv_free_ char **layers = NULL;
	int r = store_layer_list(store_root, &layers, err);
	if (r < 0)
		return r;
	size_t o = 0;
	for (size_t i = 0; layers[i]; i++) {
		if (strv_has((char **)referenced, layers[i]))
			free(layers[i]);
		else
			layers[o++] = layers[i];
	}
	layers[o] = NULL;
	*ret = TAKE_PTR(layers);
	return 0;
}

static int clean_dir(const char *dir, bool only_dot_tmp, size_t *removed, sbx_err **err)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : err_errno(err, "open '%s'", dir);
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (only_dot_tmp && !startswith(de->d_name, ".tmp-"))
			continue;
		_cleanup_free_ char *p = fs_path_join(dir, de->d_name);
		int q = p ? fs_rm_rf(p) : -ENOMEM;
		if (q < 0 && r == 0)
			r = err_errnum(err, q, "remove '%s'", p ? p : de->d_name);
		else if (q >= 0)
			(*removed)++;
	}
	closedir(d);
	return r;
}

int store_gc_clean_tmp(const char *store_root, size_t *ret_removed, sbx_err **err)
{
	size_t removed = 0;
	static const struct {
		const char *dir;
		bool dot_tmp;
	} dirs[] = {{STORE_DIR_TMP, false}, {STORE_DIR_SNAPSHOTS, true}, {STORE_DIR_LABELS, true}};
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		_cleanup_free_ char *p = store_fs_path(store_root, dirs[i].dir);
		if (!p)
			return err_errnum(err, ENOMEM, "gc");
		int r = clean_dir(p, dirs[i].dot_tmp, &removed, err);
		if (r < 0)
			return err_wrap(err, "gc");
	}
	if (ret_removed)
		*ret_removed = removed;
	return 0;
}
