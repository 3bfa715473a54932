/* Init's file operations: the requests of CTL_OP_FILE (read, write and list
 * for read_file, write_file and list_files; sbx_env_stat, make_dir, move,
 * remove_path and list_dir; src/api/env_fs.c), the identity and path
 * resolution every one of them shares, and "socket". The copies (stat,
 * tar_out, tar_in: sbx cp) are init_copy.c's.
 *
 * Init is inside the environment with every wall up (pivot_root done, its
 * own mount namespace), so a path resolves exactly as a command's would:
 * ".." stops at the environment's root and a symlink that points "out"
 * points into the environment's own tree. Each request runs with the
 * filesystem identity of the user it names (init_fs_request), so
 * permissions are that user's and what is created belongs to it. Nothing
 * in the fs_* actions follows a symlink in the last component: stat and
 * list describe the link, remove removes the link, move renames the link.
 *
 * Replies (one JSON message; on failure {ok: false, errno, message}):
 *   read, write: {ok, size} + [the opened regular file's fd]
 *   list:      {ok, entries: [{name, type, size, mode}], truncated}
 *   fs_stat:   {ok, entry}
 *   fs_mkdir:  {ok, entry}           EEXIST if anything is there ("parents": mkdir -p)
 *   fs_move:   {ok, entry}           of the destination ("to"); its parents are made
 *   fs_remove: {ok}                  a directory with everything under it
 *   fs_opendir: {ok} + the directory's descriptor (read-only)
 *   fs_list:   {ok, entries, truncated}  pre-order, each directory's entries in
 *              byte order, "depth" levels (1: the directory's own entries)
 * An entry: {name, path, type ("file"|"dir"|"symlink"|"other"), size, mode
 * (st_mode & 07777), uid, gid, owner, group (names from the environment's
 * /etc/passwd and /etc/group, else the number), mtime_ns, symlink_target?}. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "runtime/runtime.h"
#include "runtime/user.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"

#define LIST_DEPTH_MAX 64
#define NAMES_MAX (1 << 20) /* largest /etc/passwd or /etc/group read for names */

/* Where a file operation's path p leads inside the environment (absolute
 * as given; relative to home, else /root): 0 or -EINVAL, -ENAMETOOLONG. */
static int resolve_path(const char *p, const char *home, char *out, size_t n)
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

/* mkdir -p of path's parent directory (0755, as the current fs identity):
 * 0 or -errno. */
static int make_parents(const char *path)
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
#define USER_XATTRS_MAX 64	  /* user.* attributes an entry reports */
#define USER_XATTR_VALUE_MAX 4096 /* bytes of each value */

/* The user.* extended attributes of a file or directory (name in dfd), as
 * {name without "user.": value}: what the E2B data plane shows as a file's
 * metadata. Values that are not UTF-8 are left out. NULL when there are none
 * (or they cannot be read: no read permission, a filesystem without them). */
static json_t *user_xattrs(int dfd, const char *name)
{
	_cleanup_close_ int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char p[64], list[8192], value[USER_XATTR_VALUE_MAX];
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd); /* the inode itself, whatever its path */
	ssize_t n = listxattr(p, list, sizeof(list));
	if (n <= 0)
		return NULL;
	json_t *o = NULL;
	size_t count = 0;
	for (char *k = list; k < list + n && count < USER_XATTRS_MAX; k += strlen(k) + 1) {
		if (strncmp(k, "user.", 5) != 0 || !k[5])
			continue;
		ssize_t v = getxattr(p, k, value, sizeof(value));
		json_t *s = v >= 0 ? json_stringn(value, (size_t)v) : NULL;
		if (!s)
			continue;
		if (!o && !(o = json_object())) {
			json_decref(s);
			return NULL;
		}
		json_object_set_new(o, k + 5, s);
		count++;
	}
	return o;
}

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
	json_t *x = S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) ? user_xattrs(dfd, name) : NULL;
	if (x)
		json_object_set_new(e, "user_xattrs", x);
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

/* The actions fs_stat, fs_mkdir, fs_move, fs_remove and fs_list; true if
 * action was one of them (answered). */
static bool handle_fs_action(int sock, const json_t *m, const char *action, const char *path,
			     const char *shown, const char *home)
{
	names nm = {0};
	if (streq(action, "fs_stat")) {
		reply_entry(sock, "stat", path, shown, &nm);
	} else if (streq(action, "fs_list")) {
		do_list(sock, m, path, shown, &nm);
	} else if (streq(action, "fs_mkdir")) {
		int mode = (int)json_int(m, "mode", 0755);
		int r = json_bool(m, "parents", false) ? make_parents(path) : 0;
		if (r == 0)
			r = fs_mkdir_mode(path, (mode_t)mode & 07777);
		if (r < 0)
			reply_error(sock, -r, "make directory", shown);
		else
			reply_entry(sock, "make directory", path, shown, &nm);
	} else if (streq(action, "fs_move")) {
		const char *to = json_str(m, "to");
		char dst[4200];
		int r = resolve_path(to, home, dst, sizeof(dst));
		if (r == 0)
			r = make_parents(dst);
		if (r == 0 && rename(path, dst) < 0)
			r = -errno;
		if (r < 0)
			reply_error(sock, -r, "move", shown);
		else
			reply_entry(sock, "move", dst, to, &nm);
	} else if (streq(action, "fs_opendir")) {
		/* A directory as a descriptor, opened as the user (read
		 * permission needed): the caller outside watches it. */
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			reply_error(sock, errno, "open directory", shown);
		} else {
			_cleanup_json_ json_t *r = json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1);
			if (r)
				(void)json_send(sock, r, &fd, 1);
			close(fd);
		}
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

/* The failure reply of read, write, list and socket, in their own words
 * (reply_error's are the fs_* actions'). */
static void file_reply_error(int sock, int errnum, const char *what, const char *path)
{
	char msg[4400];
	const char *why = errnum == ENOENT    ? "no such file or directory"
			  : errnum == EISDIR  ? "is a directory"
			  : errnum == ENOTDIR ? "not a directory"
			  : errnum == EINVAL  ? "not a regular file"
					      : strerror(errnum);
	snprintf(msg, sizeof(msg), "%s '%s': %s", what, path, why);
	_cleanup_json_ json_t *m = json_pack("{s:s,s:b,s:i,s:s}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 0,
					     CTL_F_ERRNO, errnum, CTL_F_MESSAGE, msg);
	if (m)
		(void)json_send(sock, m, NULL, 0);
}

/* File operations run with the filesystem identity of the environment's
 * user (fsuid, fsgid and its groups) when that is not root: the file tools
 * can read and write exactly what its commands can, and what they create
 * belongs to it. Changing fsuid away from 0 drops the file capabilities
 * (DAC_OVERRIDE, FOWNER, ...) from the effective set; changing it back
 * restores them from permitted. Init is single-threaded, so nothing else
 * runs meanwhile. 1: entered; 0: root, nothing to do; -1: *msg says why. */
static int file_identity_enter(const env_config *c, const char *user, user_ident *who, char *msg, size_t n)
{
	if (!c || !user || c->degraded)
		return 0;
	user_ident id;
	_cleanup_err_ sbx_err *e = NULL;
	if (user_resolve(user, c->id_count, c->rootless, &id, &e) < 0) {
		snprintf(msg, n, "%s", sbx_err_message(e));
		return -1;
	}
	*who = id;
	if (id.uid == 0)
		return 0;
	if (setgroups(id.n_groups, id.groups) < 0) {
		snprintf(msg, n, "user '%s': setgroups: %s", user, strerror(errno));
		return -1;
	}
	(void)setfsgid(id.gid);
	(void)setfsuid(id.uid);
	if ((uid_t)setfsuid((uid_t)-1) != id.uid || (gid_t)setfsgid((gid_t)-1) != id.gid) {
		snprintf(msg, n, "user '%s': could not take its filesystem identity", user);
		(void)setfsuid(0);
		(void)setfsgid(0);
		(void)setgroups(0, NULL);
		return -1;
	}
	return 1;
}

static void file_identity_leave(void)
{
	(void)setfsuid(0);
	(void)setfsgid(0);
	(void)setgroups(0, NULL);
}

/* action "socket": a fresh, unconnected TCP socket of the environment's own
 * network namespace (docs/code.md "How sbx reaches the kernel"). The caller
 * outside connects it to the environment's loopback (a socket keeps the
 * namespace it was made in); init itself connects nowhere. Refused where the
 * environment has no network namespace of its own: with network open it is
 * the host's, and a connect there would reach the host's loopback. */
static void handle_socket(const env_config *c, int sock)
{
	if (!c || c->degraded || streq(c->network ?: "none", "open")) {
		_cleanup_json_ json_t *r =
		    json_pack("{s:s,s:b,s:i,s:s}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 0, CTL_F_ERRNO, EPERM,
			      CTL_F_MESSAGE,
			      "the environment has no network namespace of its own (network open or degraded "
			      "mode): its ports are the host's, and sbx does not connect to them");
		if (r)
			(void)json_send(sock, r, NULL, 0);
		return;
	}
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		file_reply_error(sock, errno, "socket", "tcp");
		return;
	}
	_cleanup_json_ json_t *r = json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1);
	if (r)
		(void)json_send(sock, r, &fd, 1);
}

/* One request, its identity taken: the path resolved (degraded mode: a
 * relative path is under the environment's home directory on the host),
 * then the action. Read and write hand the client an fd of the opened
 * regular file. */
static void handle_file_as(const env_config *c, int sock, const json_t *m, const user_ident *who)
{
	const char *action = json_str(m, "action") ?: "", *p = json_str(m, "path");
	char path[4200];
	if (streq(action, "socket")) {
		handle_socket(c, sock);
		return;
	}
	bool degraded = c && c->degraded;
	if (!p || !*p || strlen(p) > 4000) {
		file_reply_error(sock, EINVAL, "path", p ? p : "");
		return;
	}
	if (degraded && p[0] != '/')
		snprintf(path, sizeof(path), "%s/home/%s", c->env_dir, p);
	else if (resolve_path(p, json_str(m, "user") ? who->home : NULL, path, sizeof(path)) < 0) {
		file_reply_error(sock, ENAMETOOLONG, "path", p);
		return;
	}
	if (degraded && !strncmp(action, "fs_", 3)) { /* no walls: a path would be the host's */
		file_reply_error(sock, EPERM, "file operation (degraded mode)", p);
		return;
	}
	if (handle_fs_action(sock, m, action, path, p, json_str(m, "user") ? who->home : NULL))
		return; /* fs_stat, fs_mkdir, fs_move, fs_remove, fs_list: above */
	if (streq(action, "read") || streq(action, "write")) {
		bool w = streq(action, "write");
		int mode = (int)json_int(m, "mode", -1);
		int pr = w && !degraded && json_bool(m, "parents", false) ? make_parents(path) : 0;
		if (pr < 0) {
			file_reply_error(sock, -pr, "write", p);
			return;
		}
		_cleanup_close_ int fd =
		    open(path, (w ? O_WRONLY | O_CREAT : O_RDONLY) | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
			 mode >= 0 ? mode & 07777 : 0644);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			file_reply_error(sock, errno, w ? "write" : "read", p);
			return;
		}
		if (!S_ISREG(st.st_mode)) {
			file_reply_error(sock, S_ISDIR(st.st_mode) ? EISDIR : EINVAL, w ? "write" : "read",
					 p);
			return;
		}
		if (w && (ftruncate(fd, 0) < 0 || (mode >= 0 && fchmod(fd, (mode_t)mode & 07777) < 0))) {
			file_reply_error(sock, errno, "write", p);
			return;
		}
		(void)fd_set_nonblock(fd, 0);
		_cleanup_json_ json_t *r = json_pack("{s:s,s:b,s:I}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1,
						     "size", (json_int_t)st.st_size);
		if (r)
			(void)json_send(sock, r, &fd, 1);
		return;
	}
	if (init_copy_handle(sock, m, action, path, p))
		return; /* stat, tar_out, tar_in: init_copy.c */
	if (!streq(action, "list")) {
		file_reply_error(sock, EINVAL, "file operation", action);
		return;
	}
	DIR *d = opendir(path);
	if (!d) {
		file_reply_error(sock, errno, "list", p);
		return;
	}
	json_t *entries = json_array();
	size_t bytes = 0;
	bool truncated = false;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		bytes += strlen(de->d_name) + 64;
		if (bytes > FD_MSG_MAX - 4096) {
			truncated = true;
			break;
		}
		const char *type = S_ISREG(st.st_mode)	 ? "file"
				   : S_ISDIR(st.st_mode) ? "dir"
				   : S_ISLNK(st.st_mode) ? "symlink"
							 : "other";
		json_t *e = json_pack("{s:s,s:s,s:I,s:i}", "name", de->d_name, "type", type, "size",
				      (json_int_t)st.st_size, "mode", (int)(st.st_mode & 07777));
		if (e)
			json_array_append_new(entries, e);
	}
	closedir(d);
	_cleanup_json_ json_t *r = json_pack("{s:s,s:b,s:o,s:b}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 1,
					     "entries", entries, "truncated", truncated);
	if (r)
		(void)json_send(sock, r, NULL, 0);
}

/* A request's "user" (sbx_fs_opts.user) overrides the environment's. */
void init_fs_request(const env_config *c, int sock, const json_t *m)
{
	char msg[512];
	user_ident who = {0};
	const char *user = json_str(m, "user") ?: (c ? c->user : NULL);
	int q = file_identity_enter(c, user, &who, msg, sizeof(msg));
	if (q < 0) {
		_cleanup_json_ json_t *r = json_pack("{s:s,s:b,s:i,s:s}", CTL_F_EV, CTL_EV_FILE, CTL_F_OK, 0,
						     CTL_F_ERRNO, EPERM, CTL_F_MESSAGE, msg);
		if (r)
			(void)json_send(sock, r, NULL, 0);
		return;
	}
	handle_file_as(c, sock, m, &who);
	if (q > 0)
		file_identity_leave();
}
