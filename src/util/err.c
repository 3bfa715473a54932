#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/utf8.h"

static const char *const code_names[] = {
    [SBX_OK] = "ok",
    [SBX_E_NOT_FOUND] = "not_found",
    [SBX_E_INVALID_ARGUMENT] = "invalid_argument",
    [SBX_E_LIMIT_EXCEEDED] = "limit_exceeded",
    [SBX_E_CONFLICT] = "conflict",
    [SBX_E_UNAVAILABLE] = "unavailable",
    [SBX_E_INTERNAL] = "internal",
};

_public_ const char *sbx_code_name(sbx_code c)
{
	if ((unsigned)c >= ARRAY_SIZE(code_names))
		return "internal";
	return code_names[c];
}
_public_ const char *sbx_err_message(const sbx_err *e)
{
	return e && e->msg ? e->msg : "unknown error";
}
_public_ sbx_code sbx_err_code(const sbx_err *e)
{
	return e ? e->code : SBX_OK;
}
_public_ int sbx_err_errno(const sbx_err *e)
{
	return e ? e->errnum : 0;
}
_public_ int sbx_err_spawn_errno(const sbx_err *e)
{
	return e ? e->spawn_errno : 0;
}
_public_ void sbx_err_free(sbx_err *e)
{
	if (!e)
		return;
	free(e->msg);
	free(e);
}

sbx_code err_code_from_name(const char *name)
{
	for (size_t k = SBX_E_NOT_FOUND; name && k < ARRAY_SIZE(code_names); k++)
		if (streq(name, code_names[k]))
			return (sbx_code)k;
	return SBX_E_INTERNAL;
}

sbx_code err_code_from_errno(int errnum)
{
	switch (errnum < 0 ? -errnum : errnum) {
	case ENOENT:
	case ESRCH:
		return SBX_E_NOT_FOUND;
	case EINVAL:
	case ENAMETOOLONG:
	case ENOTDIR:
	case EISDIR:
	case E2BIG:
	case ELOOP:
		return SBX_E_INVALID_ARGUMENT;
	case ENOSPC:
	case EDQUOT:
	case ENOMEM:
	case EMFILE:
	case ENFILE:
	case EAGAIN:
		return SBX_E_LIMIT_EXCEEDED;
	case EEXIST:
	case EBUSY:
		return SBX_E_CONFLICT;
	case EPERM:
	case EACCES:
	case ENOSYS:
	case EOPNOTSUPP:
	case ECONNREFUSED:
		return SBX_E_UNAVAILABLE;
	default:
		return SBX_E_INTERNAL;
	}
}

int err_ret(sbx_err *const *err)
{
	if (err && *err && (*err)->errnum)
		return -(*err)->errnum;
	return -1;
}

/* A message quotes what it was given (an id, a path, a command), and what
 * it was given may be megabytes (an MCP argument): past ERR_MSG_MAX bytes
 * its middle is cut, at UTF-8 character boundaries, so that the start
 * (what failed) and the end (why) stay and a reply that carries it stays
 * small. m is freed when replaced. */
#define ERR_MSG_MAX 8192
#define ERR_MSG_HEAD 5120
#define ERR_MSG_TAIL 2048
static char *msg_cap(char *m)
{
	size_t n = m ? strlen(m) : 0;
	if (n <= ERR_MSG_MAX)
		return m;
	size_t head = utf8_complete_prefix(m, ERR_MSG_HEAD), tail = n - ERR_MSG_TAIL;
	while (tail < n && ((unsigned char)m[tail] & 0xc0) == 0x80)
		tail++; /* past the continuation bytes of a character cut */
	char *c = NULL;
	if (asprintf(&c, "%.*s ... (%zu bytes left out) ... %s", (int)head, m, tail - head, m + tail) < 0)
		return m;
	free(m);
	return c;
}

static int vset(sbx_err **err, sbx_code code, int errnum, const char *suffix, const char *fmt, va_list ap)
{
	if (errnum < 0)
		errnum = -errnum;
	int ret = errnum ? -errnum : -1;
	if (!err || *err)
		return ret;
	sbx_err *e = calloc(1, sizeof(*e));
	if (!e)
		return ret;
	char *m = NULL;
	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	if (m && suffix) {
		char *m2 = NULL;
		if (asprintf(&m2, "%s: %s", m, suffix) >= 0) {
			free(m);
			m = m2;
		}
	}
	e->code = code;
	e->errnum = errnum;
	e->msg = msg_cap(m);
	*err = e;
	return ret;
}

int err_set(sbx_err **err, sbx_code code, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, code, errnum, NULL, fmt, ap);
	va_end(ap);
	return r;
}

int err_errnum(sbx_err **err, int errnum, const char *fmt, ...)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EIO;
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, err_code_from_errno(errnum), errnum, strerror(errnum), fmt, ap);
	va_end(ap);
	return r;
}

int err_errno(sbx_err **err, const char *fmt, ...)
{
	int errnum = errno ? errno : EIO;
	va_list ap;
	va_start(ap, fmt);
	int r = vset(err, err_code_from_errno(errnum), errnum, strerror(errnum), fmt, ap);
	va_end(ap);
	errno = errnum;
	return r;
}

int err_wrap(sbx_err **err, const char *fmt, ...)
{
	if (!err || !*err)
		return -1;
	char *prefix = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&prefix, fmt, ap);
	va_end(ap);
	if (n >= 0) {
		char *m = NULL;
		if (asprintf(&m, "%s: %s", prefix, (*err)->msg ? (*err)->msg : "error") >= 0) {
			free((*err)->msg);
			(*err)->msg = msg_cap(m);
		}
		free(prefix);
	}
	return err_ret(err);
}

int err_oom(sbx_err **err)
{
	return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
