/* The one error convention (docs/conventions.md).
 *
 * A fallible function returns a negative value (or NULL) and, when its last
 * parameter `sbx_err **err` is non-NULL, stores an error there. Errors are
 * built where a cause is known (err_set / err_errno) and wrapped on the way up
 * (err_wrap) into a chain: "create 'x': mount overlay: Permission denied".
 * Helpers return -abs(errno) (or -1) so callers can `return err_set(...)`. */
#pragma once
#include "sbx.h"
#include "util/macro.h"

struct sbx_err {
	sbx_code code;
	int errnum;
	int spawn_errno; /* sbx_err_spawn_errno(); kept by err_wrap */
	char *msg;
};

/* Sets *err (if err and *err is NULL) with code and message; errnum may be 0.
 * Returns -errnum, or -1 when errnum is 0. */
int err_set(sbx_err **err, sbx_code code, int errnum, const char *fmt, ...) _printf_(4, 5);
/* Like err_set with errno and ": strerror(errno)" appended; code picked from errno. */
int err_errno(sbx_err **err, const char *fmt, ...) _printf_(2, 3);
/* Same with an explicit errno value (positive or negative). */
int err_errnum(sbx_err **err, int errnum, const char *fmt, ...) _printf_(3, 4);
/* Prefixes the existing message with "fmt: ". Returns the same value as err_set would. */
int err_wrap(sbx_err **err, const char *fmt, ...) _printf_(2, 3);
/* An allocation failed: SBX_E_INTERNAL, ENOMEM, "out of memory" (never
 * return a bare -ENOMEM from a function that takes err: the caller would
 * report "unknown error"). */
int err_oom(sbx_err **err);
/* The code that fits an errno value. */
sbx_code err_code_from_errno(int errnum);
/* The code named by an API.md code name ("not_found", ...); internal if unknown. */
sbx_code err_code_from_name(const char *name);
/* Return value for an error already set: -errnum or -1. */
int err_ret(sbx_err *const *err);

static inline void sbx_err_freep(sbx_err **e)
{
	sbx_err_free(*e);
}
#define _cleanup_err_ _cleanup_(sbx_err_freep)
