/* sbx build's COPY and ADD (build.c): the sources picked from the context
 * (globs, .dockerignore), staged with their owner and mode, and the content
 * digest that goes into the step's cache key. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include "api/api.h"
#include "api/build_internal.h"
#include "build/dockerfile.h"
#include "store/digest.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

/* ---- the context: staging COPY sources, their content digest ---------- */

static int hash_str(store_hasher *h, const char *s, sbx_err **err)
{
	return store_hasher_update(h, s, strlen(s) + 1, err);
}

/* Copies host `src` (file, symlink or directory) to `dst` (absent), skipping
 * what .dockerignore excludes (rel: the path inside the context), hashing
 * names, types, modes and contents into h in sorted order. */
static int stage(build *b, const char *src, const char *rel, const char *dst, mode_t chmod_mode,
		 bool chmod_set, store_hasher *h, sbx_err **err)
{
	if (*rel && dockerignore_excluded((const char *const *)b->ignore, rel))
		return 0;
	struct stat st;
	if (lstat(src, &st) < 0)
		return err_errno(err, "context '%s'", rel);
	char hdr[64];
	mode_t mode = chmod_set ? chmod_mode : (st.st_mode & 07777);
	snprintf(hdr, sizeof hdr, "%o", (unsigned)((st.st_mode & S_IFMT) | mode));
	if (hash_str(h, rel, err) < 0 || hash_str(h, hdr, err) < 0)
		return -1;
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	if (S_ISLNK(st.st_mode)) {
		char t[PATH_MAX];
		ssize_t n = readlink(src, t, sizeof t - 1);
		if (n < 0)
			return err_errno(err, "context '%s'", rel);
		t[n] = 0;
		if (hash_str(h, t, err) < 0)
			return -1;
		if (symlink(t, dst) < 0)
			return err_errno(err, "stage '%s'", rel);
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		_cleanup_close_ int out =
		    in < 0 ? -1 : open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (in < 0 || out < 0)
			return err_errno(err, "stage '%s'", rel);
		char d[STORE_DIGEST_SIZE];
		if (store_digest_fd(in, d, NULL, err) < 0 || hash_str(h, d, err) < 0)
			return -1;
		off_t off = 0;
		while (off < st.st_size) {
			ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
			if (n <= 0)
				return err_errno(err, "stage '%s'", rel);
		}
		if (fchmod(out, mode) < 0 || futimens(out, ts) < 0)
			return err_errno(err, "stage '%s'", rel);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "context '%s': not a file, directory or symlink", rel);
	if (mkdir(dst, 0700) < 0)
		return err_errno(err, "stage '%s'", rel);
	struct dirent **list = NULL;
	int n = scandir(src, &list, NULL, alphasort);
	if (n < 0)
		return err_errno(err, "context '%s'", rel);
	int r = 0;
	for (int i = 0; i < n; i++) {
		const char *nm = list[i]->d_name;
		if (r == 0 && strcmp(nm, ".") && strcmp(nm, "..")) {
			_cleanup_free_ char *s2 = fs_path_join(src, nm), *d2 = fs_path_join(dst, nm),
					    *r2 = NULL;
			if (asprintf(&r2, "%s%s%s", rel, *rel ? "/" : "", nm) < 0)
				r2 = NULL;
			r = (!s2 || !d2 || !r2) ? err_oom(err)
						: stage(b, s2, r2, d2, chmod_mode, chmod_set, h, err);
		}
		free(list[i]);
	}
	free(list);
	if (r < 0)
		return r;
	if (chmod(dst, chmod_set ? chmod_mode : (st.st_mode & 07777)) < 0 ||
	    utimensat(AT_FDCWD, dst, ts, 0) < 0)
		return err_errno(err, "stage '%s'", rel);
	return 0;
}

/* A source of COPY inside the context: globbed, each match beneath it. */
static int context_sources(build *b, const char *pat, glob_t *g, unsigned line, sbx_err **err)
{
	if (strstr(pat, "://") || startswith(pat, "git@"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "%s:%u: '%s': URLs are not supported (only files from the build context)",
			       b->name, line, pat);
	/* Lexically: ".." may not climb above the context. */
	int depth = 0;
	for (const char *c = pat; *c;) {
		size_t l = strcspn(c, "/");
		if (l == 2 && c[0] == '.' && c[1] == '.')
			depth--;
		else if (l && !(l == 1 && c[0] == '.'))
			depth++;
		if (depth < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "%s:%u: '%s' is outside the build context", b->name, line, pat);
		c += l;
		c += strspn(c, "/");
	}
	_cleanup_free_ char *full = NULL;
	const char *p = pat;
	while (*p == '/')
		p++;
	if (asprintf(&full, "%s/%s", b->o->context, *p ? p : ".") < 0)
		return err_oom(err);
	int r = glob(full, 0, NULL, g); /* sorted: the staging order is stable */
	if (r == GLOB_NOMATCH)
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "%s:%u: '%s' is not in the build context",
			       b->name, line, pat);
	if (r)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "%s:%u: glob '%s' failed", b->name, line, pat);
	_cleanup_free_ char *croot = realpath(b->o->context, NULL);
	if (!croot)
		return err_errno(err, "build context '%s'", b->o->context);
	size_t cl = strlen(croot);
	for (size_t i = 0; i < g->gl_pathc; i++) {
		/* The parent must resolve beneath the context (the last component may be a symlink, copied as
		 * such). */
		_cleanup_free_ char *dup = strdup(g->gl_pathv[i]);
		if (!dup)
			return err_oom(err);
		_cleanup_free_ char *rp = realpath(dirname(dup), NULL);
		if (!rp || strncmp(rp, croot, cl) || (rp[cl] && rp[cl] != '/'))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
				       "%s:%u: '%s' is outside the build context", b->name, line, pat);
	}
	return 0;
}

/* ---- steps --------------------------------------------------------------- */

int build_step_copy(build *b, const dockerfile_instr *in, const char *args, char **ret_extra,
		    char **ret_staging, char **ret_dest, sbx_err **err)
{
	_cleanup_strv_free_ char **w = NULL;
	if (args[0] == '[') { /* COPY ["a b", "/dst/"]: the JSON form, for names with spaces */
		json_error_t je;
		_cleanup_(json_decrefp) json_t *j = json_loads(args, 0, &je);
		if (!j || !json_is_array(j) || json_array_size(j) < 2)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "%s:%u: %s: expected [\"SOURCE\", ..., \"DEST\"]", b->name, in->line,
				       in->keyword);
		w = calloc(json_array_size(j) + 1, sizeof(char *));
		for (size_t i = 0; w && i < json_array_size(j); i++)
			if (!json_is_string(json_array_get(j, i)) ||
			    !(w[i] = strdup(json_string_value(json_array_get(j, i)))))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "%s:%u: %s: expected strings", b->name, in->line, in->keyword);
		if (!w)
			return err_oom(err);
	} else if (dockerfile_words(args, b->escape, &w, err) < 0) {
		return err_wrap(err, "%s:%u: %s", b->name, in->line, in->keyword);
	}
	size_t n = 0;
	while (w[n])
		n++;
	const char *dest = w[n - 1];
	bool dest_dir = dest[strlen(dest) - 1] == '/' || n > 2;
	_cleanup_free_ char *dabs = NULL;
	if (asprintf(&dabs, "%s%s%s", dest[0] == '/' ? "" : (b->workdir ? b->workdir : "/"),
		     dest[0] == '/' || (b->workdir && b->workdir[strlen(b->workdir) - 1] == '/') ||
			     !b->workdir
			 ? ""
			 : "/",
		     dest) < 0)
		return err_oom(err);
	size_t dl = strlen(dabs);
	while (dl > 1 && dabs[dl - 1] == '/')
		dabs[--dl] = 0;
	mode_t cm = 0;
	if (in->chmod)
		cm = (mode_t)strtoul(in->chmod, NULL, 8);
	char tmpl[PATH_MAX];
	snprintf(tmpl, sizeof tmpl, "%s/tmp/build-XXXXXX", b->ctx->root);
	(void)fs_mkdir_p(tmpl, 0700); /* makes the template path's parents; the leaf is replaced below */
	rmdir(tmpl);
	if (!mkdtemp(tmpl))
		return err_errno(err, "staging directory");
	const char *target = dabs;
	_cleanup_free_ char *parent = NULL;
	_cleanup_free_ char *staging = strdup(tmpl);
	if (!staging)
		return err_oom(err);
	_cleanup_(store_hasher_freep) store_hasher *h = store_hasher_new(err);
	if (!h)
		goto fail;
	/* Where the staged tree lands: dest itself when it is a directory,
	 * else its parent with the single file named as dest. */
	for (size_t i = 0; i + 1 < n; i++) {
		if (in->kind == DF_ADD) {
			const char *s = w[i];
			size_t sl = strlen(s);
			const char *ext[] = {".tar", ".tar.gz",	 ".tgz",    ".tar.xz",
					     ".txz", ".tar.bz2", ".tar.zst"};
			for (size_t k = 0; k < ARRAY_SIZE(ext); k++)
				if (sl > strlen(ext[k]) && !strcmp(s + sl - strlen(ext[k]), ext[k])) {
					err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
						"%s:%u: ADD of a local archive ('%s') is not supported: COPY "
						"it and RUN tar",
						b->name, in->line, s);
					goto fail;
				}
		}
		glob_t g = {0};
		if (context_sources(b, w[i], &g, in->line, err) < 0) {
			globfree(&g);
			goto fail;
		}
		if (g.gl_pathc > 1)
			dest_dir = true;
		for (size_t k = 0; k < g.gl_pathc; k++) {
			const char *src = g.gl_pathv[k];
			struct stat st;
			if (lstat(src, &st) < 0) {
				err_errno(err, "%s:%u: '%s'", b->name, in->line, w[i]);
				globfree(&g);
				goto fail;
			}
			const char *rel = src + strlen(b->o->context);
			while (*rel == '/')
				rel++;
			if (*rel == '.' && (!rel[1] || rel[1] == '/'))
				rel += rel[1] ? 2 : 1;
			int r;
			if (S_ISDIR(st.st_mode)) {
				/* A directory's contents, merged into dest. */
				dest_dir = true;
				_cleanup_free_ char *tmp = NULL;
				if (asprintf(&tmp, "%s.d", staging) < 0) {
					globfree(&g);
					err_oom(err);
					goto fail;
				}
				(void)fs_rm_rf(tmp);
				r = stage(b, src, rel, tmp, cm, in->chmod != NULL, h, err);
				if (r == 0) {
					/* Move its entries up into staging. */
					DIR *d = opendir(tmp);
					struct dirent *de;
					while (r == 0 && d && (de = readdir(d))) {
						if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
							continue;
						_cleanup_free_ char *a = fs_path_join(tmp, de->d_name),
								    *z = fs_path_join(staging, de->d_name);
						if (!a || !z || rename(a, z) < 0)
							r = err_errno(err, "stage '%s'", de->d_name);
					}
					if (d)
						closedir(d);
				}
				(void)fs_rm_rf(tmp);
			} else {
				if (!rel[0] || dockerignore_excluded((const char *const *)b->ignore, rel)) {
					if (g.gl_pathc == 1 && n == 2) {
						err_set(err, SBX_E_NOT_FOUND, ENOENT,
							"%s:%u: '%s' is excluded by .dockerignore", b->name,
							in->line, w[i]);
						globfree(&g);
						goto fail;
					}
					continue;
				}
				_cleanup_free_ char *bn = strdup(src), *dst = NULL;
				const char *leaf = dest_dir ? basename(bn) : basename(dabs);
				if (!dest_dir && !parent) {
					_cleanup_free_ char *dd = strdup(dabs);
					parent = dd ? strdup(dirname(dd)) : NULL;
					target = parent;
				}
				dst = fs_path_join(staging, leaf);
				r = dst ? stage(b, src, rel, dst, cm, in->chmod != NULL, h, err)
					: err_oom(err);
			}
			if (r < 0) {
				globfree(&g);
				goto fail;
			}
		}
		globfree(&g);
	}
	char d[STORE_DIGEST_SIZE];
	if (hash_str(h, target, err) < 0 || store_hasher_final(h, d, err) < 0)
		goto fail;
	if (!(*ret_extra = strdup(d)) || !(*ret_dest = strdup(target)))
		goto fail;
	*ret_staging = TAKE_PTR(staging);
	return 0;
fail:
	(void)fs_rm_rf(staging);
	return err_ret(err) ? err_ret(err) : err_oom(err);
}
