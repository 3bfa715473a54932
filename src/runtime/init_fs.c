/* File operations beyond read, write and list (sbx_env_stat, make_dir,
 * move, remove_path, list_dir; src/api/env_fs.c), init's side, and the path
 * resolution every file operation shares.
 *
 * Init is inside the environment with every wall up (pivot_root done, its
 * own mount namespace), so a path resolves exactly as a command's would:
 * ".." stops at the environment's root and a symlink that points "out"
 * points into the environment's own tree. The caller (init.c's handle_file)
 * has already taken the filesystem identity of the user the request names,
 * so permissions are that user's and what is created belongs to it. Nothing
 * here follows a symlink in the last component: stat and list describe the
 * link, remove removes the link, move renames the link.
 *
 * Replies (one JSON message; on failure {ok: false, errno, message}):
 *   fs_stat:   {ok, entry}
 *   fs_mkdir:  {ok, entry}           EEXIST if anything is there ("parents": mkdir -p)
 *   fs_move:   {ok, entry}           of the destination ("to"); its parents are made
 *   fs_remove: {ok}                  a directory with everything under it
 *   fs_list:   {ok, entries, truncated}  pre-order, each directory's entries in
 *              byte order, "depth" levels (1: the directory's own entries)
 * An entry: {name, path, type ("file"|"dir"|"symlink"|"other"), size, mode
 * (st_mode & 07777), uid, gid, owner, group (names from the environment's
 * /etc/passwd and /etc/group, else the number), mtime_ns, symlink_target?}. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"

#define LIST_DEPTH_MAX 64
#define NAMES_MAX (1 << 20) /* largest /etc/passwd or /etc/group read for names */

int init_fs_path(const char *p, const char *home, char *out, size_t n)
{
	if (!p || !*p || strlen(p) > 4000 || strlen(home ?: "") > 255)
		return -EINVAL;
	char raw[4400];
	int w;
	if (p[0] == '/')
		w = snprintf(raw, sizeof(raw), "%s", p);
	else if (home && home[0] == '/')
		w = snprintf(raw, sizeof(raw), "%s/%s", home, p);
	else
		w = snprintf(raw, sizeof(raw), "/root/%s", p);
	if (w < 0 || (size_t)w >= sizeof(raw) || n < 2)
		return -ENAMETOOLONG;
	/* Cleaned as text (Go's filepath.Clean, as envd reports paths): "//"
	 * and "." dropped, ".." takes the previous component away and stops at
	 * "/". Nothing can climb out either way: "/" is the environment's. */
	size_t o = 0;
	for (char *s = raw, *tok; (tok = strsep(&s, "/"));) {
		if (!*tok || streq(tok, "."))
			continue;
		if (streq(tok, "..")) {
			while (o > 0 && out[--o] != '/')
				;
			continue;
		}
		size_t l = strlen(tok);
		if (o + 1 + l + 1 > n)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, tok, l);
		o += l;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = 0;
	return 0;
}

int init_fs_make_parents(const char *path)
{
	_cleanup_free_ char *dir = strdup(path);
	if (!dir)
		return -ENOMEM;
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	struct stat st;
	if (stat(dir, &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
	return fs_mkdir_p(dir, 0755);
}

static void reply(int sock, json_t *m)
{
	if (m)
		(void)json_send(sock, m, NULL, 0);
	json_decref(m);
}

static void reply_error(int sock, int errnum, const char *what, const char *shown)
{
	char msg[4400];
	const char *why = errnum == ENOENT	? "no such file or directory"
			  : errnum == EEXIST	? "already exists"
			  : errnum == ENOTDIR	? "not a directory"
			  : errnum == ENOTEMPTY ? "directory not empty"
						: strerror(errnum);
	snprintf(msg, sizeof(msg), "%s '%s': %s", what, shown, why);
	reply(sock, json_pack("{s:s,s:b,s:i,s:s}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 0, CTL_F_ERRNO, errnum,
			      CTL_F_MESSAGE, msg));
}

/* The name of id in an /etc/passwd or /etc/group text (field 3 is the id),
 * written to out; the number when there is none. */
static void name_of(const char *text, unsigned id, char *out, size_t n)
{
	snprintf(out, n, "%u", id);
	for (const char *l = text; l && *l;) {
		const char *end = strchr(l, '\n');
		size_t len = end ? (size_t)(end - l) : strlen(l);
		const char *c1 = memchr(l, ':', len);
		const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - l)) : NULL;
		if (c1 && c2 && (size_t)(c1 - l) < n && c2 + 1 < l + len) {
			char *stop;
			unsigned long v = strtoul(c2 + 1, &stop, 10);
			if (stop != c2 + 1 && *stop == ':' && v == id) {
				snprintf(out, n, "%.*s", (int)(c1 - l), l);
				return;
			}
		}
		l = end ? end + 1 : NULL;
	}
}

typedef struct names {
	char *passwd, *group; /* NULL: unreadable (numbers then) */
} names;

static void names_clear(names *nm)
{
	free(nm->passwd);
	free(nm->group);
}

/* An entry for name in dfd (lstat: a symlink is described, not followed);
 * path is what the client sees. NULL with errno. */
static json_t *entry_json(int dfd, const char *name, const char *path, names *nm)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return NULL;
	if (!nm->passwd)
		(void)fs_read_file("/etc/passwd", NAMES_MAX, &nm->passwd, NULL);
	if (!nm->group)
		(void)fs_read_file("/etc/group", NAMES_MAX, &nm->group, NULL);
	char owner[64], group[64];
	name_of(nm->passwd, st.st_uid, owner, sizeof(owner));
	name_of(nm->group, st.st_gid, group, sizeof(group));
	const char *type = S_ISREG(st.st_mode)	 ? "file"
			   : S_ISDIR(st.st_mode) ? "dir"
			   : S_ISLNK(st.st_mode) ? "symlink"
						 : "other";
	json_t *e =
	    json_pack("{s:s,s:s,s:s,s:I,s:i,s:I,s:I,s:s,s:s,s:I}", "name", name, "path", path, "type", type,
		      "size", (json_int_t)st.st_size, "mode", (int)(st.st_mode & 07777), "uid",
		      (json_int_t)st.st_uid, "gid", (json_int_t)st.st_gid, "owner", owner, "group", group,
		      "mtime_ns", (json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
	if (!e) {
		errno = EILSEQ; /* a name that is not UTF-8 */
		return NULL;
	}
	if (S_ISLNK(st.st_mode)) {
		char target[4097];
		ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = 0;
			json_t *t = json_string(target);
			if (t)
				json_object_set_new(e, "symlink_target", t);
		}
	}
	return e;
}

/* The entry of a whole path: its parent opened, then the last component. */
static json_t *path_entry(const char *path, names *nm)
{
	_cleanup_free_ char *dir = strdup(path);
	if (!dir) {
		errno = ENOMEM;
		return NULL;
	}
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	if (!*base) /* "/" or a trailing slash: the directory itself */
		base = ".";
	if (slash)
		*slash = 0;
	_cleanup_close_ int dfd = open(slash ? (*dir ? dir : "/") : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return NULL;
	json_t *e = entry_json(dfd, base, path, nm);
	if (e && streq(base, ".")) {
		const char *n = strrchr(path, '/');
		json_object_set_new(e, "name", json_string(n && n[1] ? n + 1 : path));
	}
	return e;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

typedef struct lister {
	json_t *entries;
	size_t bytes;
	bool truncated;
	names *nm;
} lister;

/* Appends dir's entries (and, below depth, their subdirectories') in
 * pre-order. A subdirectory that cannot be read is listed, not entered. */
static int list_walk(lister *ls, int dfd, const char *shown, int depth)
{
	_cleanup_close_ int own = dup(dfd);
	if (own < 0)
		return -errno;
	DIR *d = fdopendir(own);
	if (!d)
		return -errno;
	own = -1;
	size_t n = 0, cap = 0;
	char **v = NULL;
	struct dirent *de;
	int r = 0;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[n] = strdup(de->d_name))) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_name);
	for (size_t i = 0; r == 0 && i < n && !ls->truncated; i++) {
		_cleanup_free_ char *p = NULL;
		if (asprintf(&p, "%s/%s", streq(shown, "/") ? "" : shown, v[i]) < 0) {
			r = -ENOMEM;
			break;
		}
		ls->bytes += strlen(p) + strlen(v[i]) + 256;
		if (ls->bytes > FD_MSG_MAX - 8192) {
			ls->truncated = true;
			break;
		}
		json_t *e = entry_json(dirfd(d), v[i], p, ls->nm);
		if (!e)
			continue; /* gone meanwhile, or a name that is not UTF-8 */
		bool is_dir = streq(json_str(e, "type") ?: "", "dir");
		json_array_append_new(ls->entries, e);
		if (is_dir && depth > 1) {
			_cleanup_close_ int sub =
			    openat(dirfd(d), v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				r = list_walk(ls, sub, p, depth - 1);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	closedir(d);
	return r;
}

static void do_list(int sock, const json_t *m, const char *path, const char *shown, names *nm)
{
	int depth = (int)json_int(m, "depth", 1);
	if (depth < 1 || depth > LIST_DEPTH_MAX) {
		reply_error(sock, EINVAL, "list: depth from 1 to 64", shown);
		return;
	}
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		reply_error(sock, errno, "list", shown);
		return;
	}
	lister ls = {.entries = json_array(), .nm = nm};
	int r = ls.entries ? list_walk(&ls, dfd, path, depth) : -ENOMEM;
	if (r < 0) {
		json_decref(ls.entries);
		reply_error(sock, -r, "list", shown);
		return;
	}
	reply(sock, json_pack("{s:s,s:b,s:o,s:b}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1, "entries", ls.entries,
			      "truncated", ls.truncated));
}

static void reply_entry(int sock, const char *what, const char *path, const char *shown, names *nm)
{
	json_t *e = path_entry(path, nm);
	if (!e) {
		reply_error(sock, errno, what, shown);
		return;
	}
	reply(sock, json_pack("{s:s,s:b,s:o}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1, "entry", e));
}

bool init_fs_handle(int sock, const json_t *m, const char *action, const char *path, const char *shown,
		    const char *home)
{
	names nm = {0};
	if (streq(action, "fs_stat")) {
		reply_entry(sock, "stat", path, shown, &nm);
	} else if (streq(action, "fs_list")) {
		do_list(sock, m, path, shown, &nm);
	} else if (streq(action, "fs_mkdir")) {
		int mode = (int)json_int(m, "mode", 0755);
		int r = json_bool(m, "parents", false) ? init_fs_make_parents(path) : 0;
		if (r == 0)
			r = fs_mkdir_mode(path, (mode_t)mode & 07777);
		if (r < 0)
			reply_error(sock, -r, "make directory", shown);
		else
			reply_entry(sock, "make directory", path, shown, &nm);
	} else if (streq(action, "fs_move")) {
		const char *to = json_str(m, "to");
		char dst[4200];
		int r = init_fs_path(to, home, dst, sizeof(dst));
		if (r == 0)
			r = init_fs_make_parents(dst);
		if (r == 0 && rename(path, dst) < 0)
			r = -errno;
		if (r < 0)
			reply_error(sock, -r, "move", shown);
		else
			reply_entry(sock, "move", dst, to, &nm);
	} else if (streq(action, "fs_remove")) {
		struct stat st;
		int r = lstat(path, &st) < 0 ? -errno : 0;
		if (r == 0 && streq(path, "/"))
			r = -EBUSY;
		if (r == 0)
			r = S_ISDIR(st.st_mode) ? fs_rm_rf(path) : (unlink(path) < 0 ? -errno : 0);
		if (r < 0)
			reply_error(sock, -r, "remove", shown);
		else
			reply(sock, json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1));
	} else {
		return false;
	}
	names_clear(&nm);
	return true;
}
