/* E2B's base template as a snapshot (docs/e2b.md "Templates"): the host
 * template with E2B's user `user` (e2b_user.h), made once per store and per
 * content of the host's /etc/passwd and /etc/group, and labelled
 * e2b-base-<hash of them>. A create of `base` is then a fork of it: no
 * set-up on its path, and served by the server's warm set like any
 * snapshot (docs/warm.md), where a create of `host` plus a set-up was two
 * file round trips, a directory and a chown exec per sandbox.
 *
 * Rootless there is no such snapshot (only uid 0 exists, e2b_user_setup
 * makes no user): creates stay on `host`. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "sbx.h"

#define E2B_BASE_LABEL_PREFIX "e2b-base-"
#define E2B_BASE_LABEL_MAX 40

/* The label the base snapshot has for these contents of the host's
 * /etc/passwd and /etc/group (either may be NULL: missing), and whether it
 * holds the link /usr/local/bin/python -> /usr/bin/python3 (made when the
 * host has python3 but no python, as E2B's image has one). Pure. */
void e2b_base_label(const char *passwd, const char *group, bool python_link, char ret[E2B_BASE_LABEL_MAX]);

/* The base snapshot's digest in *ret_digest (malloc'd), made first if the
 * store has none for today's host files; NULL (and 0) rootless. Serialized
 * within the process: concurrent first creates make it once. */
int e2b_base_snapshot(sbx_ctx *ctx, char **ret_digest, sbx_err **err);

/* Forgets what e2b_base_snapshot found, so its next call looks again (a
 * create from it found the snapshot gone: deleted since). */
void e2b_base_forget(void);
