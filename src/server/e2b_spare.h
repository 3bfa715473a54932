/* A sandbox's spare login shell (docs/e2b.md "Spare shells"): the pure
 * decisions. No I/O; unit-tested in tests/unit/test_e2b_spare.c.
 *
 * Every command E2B's SDK runs is `/bin/bash -l -c CMD`, and most of its
 * cost is the login shell's start (the profile: /etc/profile runs `id -u`,
 * the profile.d scripts, ~/.profile), not CMD. After a sandbox's commands
 * have all ended, e2b_process.c starts one more `bash -l` with the same
 * user, cwd and environment a command would get, which sources its profile
 * and then waits on its stdin for a command (E2B_SPARE_WRAPPER). The next
 * Start of that exact shape takes it: the command is written to its stdin,
 * ended by a NUL, and the shell runs it with eval. The process, its pid,
 * its output (what the profile printed first, as with a fresh one), its
 * stdin after the command, its signals and its exit are then the command's.
 *
 * A spare is only ever taken for what a fresh `bash -l -c` would do the
 * same: exactly that argv, no per-call envs, the user's home as cwd, no
 * pty, a command of at most E2B_SPARE_CMD_MAX bytes. Nothing may have
 * changed the files its profile read since it started: a spare is made
 * only when none of the sandbox's processes runs, and dropped by any Start
 * it does not serve and by any request that may write to the sandbox
 * (e2b_spare_invalidated_by). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "server/e2b_proc_util.h"

#define E2B_SPARE_CMD_MAX 4096	/* bytes of a command a spare takes (read byte by byte) */
#define E2B_SPARE_IDLE_S 30	/* an untaken spare ends itself after this (its read -t) */
#define E2B_SPARE_TAKE_MS 25000 /* and is taken only this long after it started */

/* The spare's -c script: reads the command up to a NUL (at most
 * E2B_SPARE_IDLE_S seconds, then exits 0 unseen), shows it as
 * BASH_EXECUTION_STRING as bash -c does, and evals it with its own
 * variable gone. */
#define E2B_SPARE_WRAPPER                                                                                    \
	"IFS= read -r -d '' -t 30 __sbx_c || exit 0; BASH_EXECUTION_STRING=$__sbx_c; "                       \
	"eval \"unset -v __sbx_c; $__sbx_c\""

/* Whether a fresh `bash -l -c` for r would do what the spare does with
 * r's command: argv exactly /bin/bash -l -c CMD, CMD non-empty and at most
 * E2B_SPARE_CMD_MAX bytes, no envs, cwd home, no pty. */
bool e2b_spare_fits(const e2b_start_req *r, const char *home);

/* Whether a data-plane request (method, path, to the sandbox's port) may
 * change what a login shell reads, so that the sandbox's spare must go:
 * envd's uploads and filesystem changes, the code interpreter's runs and
 * contexts, and anything through the port proxy (a server inside may
 * write anything). Reads (GET /files, Stat, ListDir, watchers, health,
 * /envs, the process service) do not. */
bool e2b_spare_invalidated_by(uint16_t port, const char *method, const char *path);
