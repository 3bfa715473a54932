/* Cleanup attributes and ownership transfer, in the style of systemd/crun.
 * Every fd, heap pointer and child pid that a function owns is declared with
 * one of the _cleanup_ helpers below; ownership leaves a scope only through
 * TAKE_PTR / TAKE_FD, which null the local so the destructor does nothing. */
#pragma once
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _public_ __attribute__((visibility("default")))
#define _noreturn_ __attribute__((noreturn))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define TAKE_PTR(p)                                                                                          \
	({                                                                                                   \
		__typeof__(p) _p = (p);                                                                      \
		(p) = NULL;                                                                                  \
		_p;                                                                                          \
	})
#define TAKE_FD(fd)                                                                                          \
	({                                                                                                   \
		int _fd = (fd);                                                                              \
		(fd) = -1;                                                                                   \
		_fd;                                                                                         \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

/* close() that preserves errno and ignores -1; the only place fds are closed. */
static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -1;
}
static inline void closep(int *fd)
{
	safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* A child process a function owns: on scope exit it is killed (SIGKILL) and
 * reaped, so no error path leaves a stray child or a zombie. TAKE_PID hands
 * it on (to a caller that waits for it itself). Needs <signal.h> and
 * <sys/wait.h> where used. */
static inline void pid_killp(pid_t *pid)
{
	if (*pid > 0) {
		int saved = errno;
		kill(*pid, SIGKILL);
		while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR)
			;
		errno = saved;
	}
}
#define _cleanup_pid_ _cleanup_(pid_killp)
#define TAKE_PID(pid)                                                                                        \
	({                                                                                                   \
		pid_t _pid = (pid);                                                                          \
		(pid) = 0;                                                                                   \
		_pid;                                                                                        \
	})

static inline void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}
static inline void strv_freep(char ***v)
{
	strv_free(*v);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)
/* Appends s (taken: freed on failure) to the NULL-terminated *v of *n
 * entries. -ENOMEM if s is NULL or the array cannot grow. */
static inline int strv_push(char ***v, size_t *n, char *s)
{
	if (!s)
		return -ENOMEM;
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv) {
		free(s);
		return -ENOMEM;
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}
/* The same with a copy of s (strdup). */
static inline int strv_push_copy(char ***v, size_t *n, const char *s)
{
	return strv_push(v, n, s ? strdup(s) : NULL);
}

/* Retry a syscall expression while it fails with EINTR. */
#define RETRY_EINTR(expr)                                                                                    \
	({                                                                                                   \
		__typeof__(expr) _r;                                                                         \
		do                                                                                           \
			_r = (expr);                                                                         \
		while (_r < 0 && errno == EINTR);                                                            \
		_r;                                                                                          \
	})

#define streq(a, b) (strcmp((a), (b)) == 0)
/* Whether the NULL-terminated v holds s. */
static inline bool strv_contains(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}
/* free() that returns NULL, for p = mfree(p). */
static inline void *mfree(void *p)
{
	free(p);
	return NULL;
}

#define startswith(s, p) (strncmp((s), (p), strlen(p)) == 0)
