/* E2B's user (docs/e2b.md), and envd's /run/e2b marks (e2b_sandbox_marks,
 * below). E2B's base image has a user `user` (uid and
 * gid 1000, home /home/user, bash) that commands and file calls run as
 * unless a call names another. Sandboxes the E2B API makes from the base
 * (host) template get it in the environment's own /etc/passwd and
 * /etc/group (its writable layer; the host's /etc is never touched) and a
 * home it owns.
 *
 * The line edits are pure (unit-tested in tests/unit/test_e2b_user.c). A
 * host that has a user of uid 1000 already (say `ubuntu`) keeps it; E2B's
 * line goes before it, so that uid 1000 is named `user` inside, as on E2B. */
#pragma once
#include <stdbool.h>

#include "sbx.h"

#define E2B_USER "user"
#define E2B_USER_ID 1000
#define E2B_USER_HOME "/home/user"
#define E2B_USER_PASSWD "user:x:1000:1000::/home/user:/bin/bash"
#define E2B_USER_GROUP "user:x:1000:"

/* text (an /etc/passwd or /etc/group, may be NULL) with line added, unless
 * an entry of line's name is there already (NULL then: nothing to write).
 * The line goes before the first entry whose third field (the id) equals
 * line's, else at the end. malloc'd; NULL also when out of memory (*ret_oom). */
char *e2b_user_add_line(const char *text, const char *line, bool *ret_oom);

/* Gives sandbox id E2B's user: passwd and group entries and its home (made
 * and chowned as root). Nothing to do when rootless (only uid 0 exists
 * there: commands then run as root) or when the user exists already. */
int e2b_user_setup(sbx_ctx *ctx, const char *id, sbx_err **err);

/* Runs argv in sandbox id as its root, output captured; a non-zero exit is
 * an error "<what>: <argv>: <its stderr>". For what the file calls cannot
 * do (give a file away, make a link). */
int e2b_root_exec(sbx_ctx *ctx, const char *id, const char *const *argv, const char *what, sbx_err **err);

/* envd's marks in every sandbox it runs: /run/e2b/.E2B_SANDBOX ("true")
 * and /run/e2b/.E2B_SANDBOX_ID (the id), written as root over whatever a
 * snapshot brought (a fork's parent's id). A file call each; id_only: the
 * sandbox has the first already (a fork of E2B's base snapshot, which
 * holds it: e2b_base.h), one call. */
int e2b_sandbox_marks(sbx_ctx *ctx, const char *id, bool id_only, sbx_err **err);

/* The user a data-plane call of sandbox id runs as: asked (Authorization:
 * Basic) when given; else E2B's `user` when the sandbox has it; else NULL
 * (the environment's own user). Remembers who has it (thread-safe). */
const char *e2b_user_for(sbx_ctx *ctx, const char *id, const char *asked);
