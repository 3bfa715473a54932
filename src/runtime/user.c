/* Users inside the environment (see user.h). */
#include "runtime/user.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fd.h"

#define USER_SPEC_MAX 256
#define USER_FILE_MAX (4u << 20)

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > USER_NAME_MAX || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* All digits, at most 4294967294 (-1 is "no id" to the kernel). */
static bool id_parse(const char *s, size_t n, uint32_t *ret)
{
	if (n == 0 || n > 10)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v >= UINT32_MAX)
		return false;
	*ret = (uint32_t)v;
	return true;
}

static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return n > 0;
}

int user_spec_parse(const char *s, user_spec *ret, sbx_err **err)
{
	user_spec u = {0};
	if (!s || !*s)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "user: must not be empty (UID[:GID] or a user name)");
	size_t len = strlen(s);
	if (len > USER_SPEC_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "user: longer than %d bytes",
			       USER_SPEC_MAX);
	const char *colon = strchr(s, ':');
	size_t ulen = colon ? (size_t)(colon - s) : len;
	uint32_t id;
	if (all_digits(s, ulen)) {
		if (!id_parse(s, ulen, &id))
			return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE, "user '%.64s': uid out of range",
				       s);
		u.uid_numeric = true;
		u.uid = id;
	} else if (name_ok(s, ulen)) {
		memcpy(u.name, s, ulen);
	} else
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "user '%.64s': expected UID[:GID] or a user name (1-32 letters, digits, '_', '.', '-')",
		    s);
	if (colon) {
		const char *g = colon + 1;
		size_t glen = strlen(g);
		u.has_group = true;
		if (all_digits(g, glen)) {
			if (!id_parse(g, glen, &id))
				return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
					       "user '%.64s': gid out of range", s);
			u.gid_numeric = true;
			u.gid = id;
		} else if (name_ok(g, glen))
			memcpy(u.group, g, glen);
		else
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "user '%.64s': expected a GID or a group name after ':'", s);
	}
	*ret = u;
	return 0;
}

bool user_spec_is_root(const user_spec *s)
{
	return s->uid_numeric ? s->uid == 0 : streq(s->name, "root");
}

/* Splits one line of passwd/group into at most `max` ':'-separated fields
 * (pointers into `line`, which is modified). Returns the number found. */
static size_t split_fields(char *line, char **f, size_t max)
{
	size_t n = 0;
	f[n++] = line;
	for (char *p = line; *p && n < max; p++)
		if (*p == ':') {
			*p = 0;
			f[n++] = p + 1;
		}
	return n;
}

typedef bool (*line_fn)(char **f, size_t n, void *ud);

/* Calls fn for each well-formed line (NIS "+"/"-" lines and comments are
 * skipped) until it returns true. */
static bool each_line(const char *text, size_t want_fields, line_fn fn, void *ud)
{
	for (const char *p = text; p && *p;) {
		const char *end = strchrnul(p, '\n');
		size_t n = (size_t)(end - p);
		if (n > 0 && n < 8192 && p[0] != '#' && p[0] != '+' && p[0] != '-') {
			char line[8192];
			memcpy(line, p, n);
			line[n] = 0;
			char *f[8];
			if (split_fields(line, f, want_fields) == want_fields && fn(f, want_fields, ud))
				return true;
		}
		p = *end ? end + 1 : end;
	}
	return false;
}

typedef struct pw_query {
	const user_spec *s;
	user_ident *id;
} pw_query;

static bool pw_match(char **f, size_t n, void *ud)
{
	pw_query *q = ud;
	uint32_t uid, gid;
	if (!id_parse(f[2], strlen(f[2]), &uid) || !id_parse(f[3], strlen(f[3]), &gid) ||
	    !name_ok(f[0], strlen(f[0])))
		return false;
	if (q->s->uid_numeric ? uid != q->s->uid : !streq(f[0], q->s->name))
		return false;
	q->id->uid = uid;
	q->id->gid = gid;
	snprintf(q->id->name, sizeof(q->id->name), "%s", f[0]);
	if (strlen(f[5]) < sizeof(q->id->home) && f[5][0] == '/')
		snprintf(q->id->home, sizeof(q->id->home), "%s", f[5]);
	return true;
}

typedef struct gr_query {
	const char *name; /* a group by name (gid out), or NULL */
	gid_t gid;
	user_ident *id; /* else: collect the groups listing id->name */
} gr_query;

static void add_group(user_ident *id, gid_t g)
{
	for (size_t i = 0; i < id->n_groups; i++)
		if (id->groups[i] == g)
			return;
	if (id->n_groups < USER_GROUPS_MAX)
		id->groups[id->n_groups++] = g;
}

static bool gr_match(char **f, size_t n, void *ud)
{
	gr_query *q = ud;
	uint32_t gid;
	if (!id_parse(f[2], strlen(f[2]), &gid))
		return false;
	if (q->name) {
		if (!streq(f[0], q->name))
			return false;
		q->gid = gid;
		return true;
	}
	/* members: comma-separated names */
	for (char *save = NULL, *m = strtok_r(f[3], ",", &save); m; m = strtok_r(NULL, ",", &save))
		if (streq(m, q->id->name))
			add_group(q->id, gid);
	return false;
}

int user_resolve_text(const user_spec *s, const char *passwd, const char *group, user_ident *ret,
		      sbx_err **err)
{
	user_ident id = {0};
	pw_query pq = {s, &id};
	if (!each_line(passwd, 7, pw_match, &pq)) {
		if (!s->uid_numeric)
			return err_set(err, SBX_E_NOT_FOUND, ENOENT,
				       "user '%s': no such user in the environment's /etc/passwd", s->name);
		id.uid = s->uid;
		id.gid = s->uid;
	}
	if (s->has_group) {
		if (s->gid_numeric)
			id.gid = s->gid;
		else {
			gr_query gq = {.name = s->group};
			if (!each_line(group, 4, gr_match, &gq)) {
				char u[16];
				snprintf(u, sizeof(u), "%u", (unsigned)s->uid);
				return err_set(
				    err, SBX_E_NOT_FOUND, ENOENT,
				    "user '%s:%s': no such group '%s' in the environment's /etc/group",
				    s->uid_numeric ? u : s->name, s->group, s->group);
			}
			id.gid = gq.gid;
		}
	}
	id.groups[id.n_groups++] = id.gid;
	if (id.name[0]) {
		gr_query gq = {.id = &id};
		(void)each_line(group, 4, gr_match, &gq);
	}
	*ret = id;
	return 0;
}

/* /etc/<name> of this mount namespace's root, as text; "" if absent. */
static int read_etc(const char *name, char **ret, sbx_err **err)
{
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	char path[64];
	snprintf(path, sizeof(path), "etc/%s", name);
	_cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return err_errno(err, "open the environment's root");
	_cleanup_close_ int fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOENT) {
		*ret = strdup("");
		return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return err_errno(err, "read the environment's /etc/%s", name);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "the environment's /etc/%s is not a regular file", name);
	if (fd_set_nonblock(fd, 0) < 0)
		return err_errno(err, "read the environment's /etc/%s", name);
	size_t len = 0;
	int r = fd_read_all(fd, USER_FILE_MAX, ret, &len);
	if (r < 0)
		return err_errnum(err, r, "read the environment's /etc/%s", name);
	if (memchr(*ret, 0, len)) { /* a NUL would end the text early: refuse rather than misread */
		free(*ret);
		*ret = NULL;
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "the environment's /etc/%s holds NUL bytes", name);
	}
	return 0;
}

int user_resolve(const char *spec, uint32_t id_count, bool rootless, user_ident *ret, sbx_err **err)
{
	user_spec s;
	if (user_spec_parse(spec, &s, err) < 0)
		return -1;
	_cleanup_free_ char *passwd = NULL, *group = NULL;
	if (read_etc("passwd", &passwd, err) < 0 || read_etc("group", &group, err) < 0)
		return err_wrap(err, "user '%s'", spec);
	user_ident id;
	if (user_resolve_text(&s, passwd, group, &id, err) < 0)
		return -1;
	if (rootless && id.uid != 0)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EPERM,
		    "user '%s' (uid %u): a rootless environment maps a single uid (the calling user, root "
		    "inside), so commands can only run as root; other users need sbx to run as root",
		    spec, (unsigned)id.uid);
	if (id.uid >= id_count || id.gid >= id_count)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
			       "user '%s' (uid %u, gid %u): outside the environment's uid and gid map (0-%u)",
			       spec, (unsigned)id.uid, (unsigned)id.gid, id_count - 1);
	/* Supplementary groups outside the map cannot be set: leave them out. */
	size_t k = 0;
	for (size_t i = 0; i < id.n_groups; i++)
		if (id.groups[i] < id_count)
			id.groups[k++] = id.groups[i];
	id.n_groups = rootless ? 0 : k;
	*ret = id;
	return 0;
}
