/* Landlock: a second wall for the filesystem (and, from ABI 6, signal and
 * abstract-unix-socket scoping). Rules are an allowlist of path beneath
 * grants; everything the kernel handles and no rule grants is denied. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include "util/err.h"

enum {
	LL_READ = 1 << 0,  /* read files, list dirs */
	LL_EXEC = 1 << 1,  /* execute files */
	LL_WRITE = 1 << 2, /* write/truncate files, create/remove/rename entries, devices excluded */
	LL_DEV = 1 << 3,   /* ioctl on device files (ABI 5) */
};

typedef struct landlock_rule {
	const char *path; /* absolute, resolved in the caller's current root */
	unsigned access;  /* LL_* */
} landlock_rule;

/* Kernel Landlock ABI version, 0 when unavailable (disabled or too old). */
int landlock_abi(void);

/* Restricts the calling process. Paths that do not exist are skipped.
 * Returns the ABI in use (>= 1) on success, 0 if Landlock is unavailable
 * (nothing applied: the caller reports the missing wall), negative on error. */
int landlock_restrict(const landlock_rule *rules, size_t n_rules, sbx_err **err);
/* The same without the ABI 6 scopes (sbx-runc: processes entered with exec
 * are not descendants of the container's init, so a scoped domain each would
 * keep `docker exec c kill 1` from working; the pid and network namespaces
 * confine signals and abstract sockets there instead). */
int landlock_restrict_fs(const landlock_rule *rules, size_t n_rules, sbx_err **err);
