/* Installed packages for snapshot manifests: dpkg, pip and npm, read through
 * the environment's own view (init reads the files, inside the walls), as
 * sorted "dpkg:name=version", "pip:name=version", "npm:name=version".
 *
 * Reading dpkg's database costs a few milliseconds, so a snapshot re-reads
 * only when its writable layer touched a package database; otherwise it
 * inherits its parent snapshot's list. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "store/snapshot.h"
#include "util/json.h"

#define PKG_MAX 20000

typedef struct pkglist {
	char **v;
	size_t n, cap;
} pkglist;

static void add(pkglist *l, const char *mgr, const char *name, size_t nlen, const char *ver, size_t vlen)
{
	if (l->n >= PKG_MAX || !nlen)
		return;
	if (l->n + 2 > l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 256;
		char **nv = realloc(l->v, nc * sizeof(char *));
		if (!nv)
			return;
		l->v = nv;
		l->cap = nc;
	}
	char *s = NULL;
	if (asprintf(&s, "%s:%.*s=%.*s", mgr, (int)nlen, name, (int)vlen, ver) < 0)
		return;
	l->v[l->n++] = s;
	l->v[l->n] = NULL;
}

/* dpkg's status file: stanzas of "Field: value" lines; installed packages
 * have "Status: install ok installed". */
static void parse_dpkg(pkglist *l, const char *buf)
{
	const char *name = NULL, *ver = NULL;
	size_t nlen = 0, vlen = 0;
	bool installed = false;
	for (const char *p = buf;; p = strchr(p, '\n') + 1) {
		const char *eol = strchrnul(p, '\n');
		if (p == eol) { /* blank line or end: a stanza ends */
			if (installed && name && ver)
				add(l, "dpkg", name, nlen, ver, vlen);
			name = ver = NULL;
			installed = false;
			if (!*eol)
				break;
			continue;
		}
		if (startswith(p, "Package: "))
			name = p + 9, nlen = (size_t)(eol - name);
		else if (startswith(p, "Version: "))
			ver = p + 9, vlen = (size_t)(eol - ver);
		else if (startswith(p, "Status: "))
			installed = (size_t)(eol - p) >= 17 && strncmp(eol - 10, " installed", 10) == 0;
		if (!*eol) {
			if (installed && name && ver)
				add(l, "dpkg", name, nlen, ver, vlen);
			break;
		}
	}
}

/* "requests-2.28.1.dist-info" / "six-1.16.0.egg-info" -> requests, 2.28.1. */
static void parse_pip_dir(pkglist *l, const char *n)
{
	const char *suf = strstr(n, ".dist-info");
	if (!suf)
		suf = strstr(n, ".egg-info");
	const char *dash = suf ? memchr(n, '-', (size_t)(suf - n)) : NULL;
	if (dash && dash + 1 < suf && isdigit((unsigned char)dash[1]))
		add(l, "pip", n, (size_t)(dash - n), dash + 1, (size_t)(suf - dash - 1));
}

static json_t *list_dir(sbx_ctx *ctx, const char *id, const char *path)
{
	json_t *j = NULL;
	if (sbx_env_list_files(ctx, id, path, &j, NULL) < 0)
		return NULL;
	return j;
}

static void pip_dir(sbx_ctx *ctx, const char *id, pkglist *l, const char *path)
{
	_cleanup_json_ json_t *j = list_dir(ctx, id, path);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "entries"), i, e) parse_pip_dir(l, json_str(e, "name") ?: "");
}

/* site/dist-packages under a lib directory: python3.X/{site,dist}-packages. */
static void pip_lib(sbx_ctx *ctx, const char *id, pkglist *l, const char *lib)
{
	_cleanup_json_ json_t *j = list_dir(ctx, id, lib);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "entries"), i, e)
	{
		const char *n = json_str(e, "name") ?: "";
		if (!startswith(n, "python3"))
			continue;
		char p[512];
		snprintf(p, sizeof(p), "%s/%s/site-packages", lib, n);
		pip_dir(ctx, id, l, p);
		snprintf(p, sizeof(p), "%s/%s/dist-packages", lib, n);
		pip_dir(ctx, id, l, p);
	}
}

static void npm_pkg(sbx_ctx *ctx, const char *id, pkglist *l, const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s/package.json", dir, name);
	_cleanup_free_ char *data = NULL;
	size_t len = 0;
	int64_t size = 0;
	bool trunc = false;
	if (sbx_env_read_file(ctx, id, p, 1 << 20, &data, &len, &size, &trunc, NULL) < 0)
		return;
	_cleanup_json_ json_t *pj = json_loadb(data, len, 0, NULL);
	const char *v = json_str(pj, "version");
	if (v)
		add(l, "npm", name, strlen(name), v, strlen(v));
}

static void npm_dir(sbx_ctx *ctx, const char *id, pkglist *l, const char *dir)
{
	_cleanup_json_ json_t *j = list_dir(ctx, id, dir);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(j, "entries"), i, e)
	{
		const char *n = json_str(e, "name") ?: "";
		if (n[0] == '.')
			continue;
		if (n[0] != '@') {
			npm_pkg(ctx, id, l, dir, n);
			continue;
		}
		char sd[512];
		snprintf(sd, sizeof(sd), "%s/%s", dir, n);
		_cleanup_json_ json_t *sj = list_dir(ctx, id, sd);
		size_t k;
		json_t *se;
		json_array_foreach(json_object_get(sj, "entries"), k, se)
		{
			char full[300];
			snprintf(full, sizeof(full), "%s/%s", n, json_str(se, "name") ?: "");
			npm_pkg(ctx, id, l, dir, full);
		}
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Did the writable layer touch a package database? */
static bool touched(const char *env_dir)
{
	static const char *const paths[] = {"var/lib/dpkg",	    "usr/lib/python3", "usr/local/lib",
					    "usr/lib/node_modules", "root/.local/lib", NULL};
	for (const char *const *p = paths; *p; p++) {
		char full[4400];
		struct stat st;
		snprintf(full, sizeof(full), "%s/upper/%s", env_dir, *p);
		if (lstat(full, &st) == 0)
			return true;
	}
	return false;
}

char **env_packages(sbx_ctx *ctx, const char *id, const char *env_dir, const char *parent)
{
	if (parent && !touched(env_dir)) {
		_cleanup_snapshot_ store_snapshot *ps = NULL;
		if (store_snapshot_read(ctx->root, parent, &ps, NULL) == 0 && ps->packages) {
			size_t n = 0;
			while (ps->packages[n])
				n++;
			char **v = calloc(n + 1, sizeof(char *));
			for (size_t i = 0; v && i < n; i++)
				if (!(v[i] = strdup(ps->packages[i]))) {
					strv_free(v);
					return NULL;
				}
			return v;
		}
	}
	/* Not live, or paused (a read through init would resume it: docs/warm.md). */
	if (!env_is_live(ctx, id) || streq(env_warm_state(ctx, id, true), "paused"))
		return NULL;
	pkglist l = {0};
	_cleanup_free_ char *status = NULL;
	size_t len = 0;
	int64_t size = 0;
	bool trunc = false;
	if (sbx_env_read_file(ctx, id, "/var/lib/dpkg/status", 64 << 20, &status, &len, &size, &trunc,
			      NULL) == 0)
		parse_dpkg(&l, status);
	pip_dir(ctx, id, &l, "/usr/lib/python3/dist-packages");
	pip_lib(ctx, id, &l, "/usr/local/lib");
	pip_lib(ctx, id, &l, "/root/.local/lib");
	npm_dir(ctx, id, &l, "/usr/lib/node_modules");
	npm_dir(ctx, id, &l, "/usr/local/lib/node_modules");
	if (l.n)
		qsort(l.v, l.n, sizeof(char *), cmp_str);
	return l.v;
}
