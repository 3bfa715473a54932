/* Secrets inside a live environment (docs/secrets.md).
 *
 * Values are read on the host when the environment is created
 * (src/api/secrets.c) and then exist only in memory: the creating process
 * wipes its copy once the supervisor runs, the supervisor wipes its own once
 * init is up, and init keeps the one copy that commands are given. Env
 * secrets are added to every command's environment by init; file secrets are
 * files on a tmpfs mounted at /run/secrets by the privilege sequence (never
 * part of the writable layer, so never in a snapshot or an export). Switching
 * to the agent phase removes them from both. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/err.h"

#define SECRETS_DIR "/run/secrets"

typedef struct env_secret {
	char *name;
	char *value; /* len bytes (+ NUL); file secrets may hold any bytes */
	size_t len;
} env_secret;

struct env_config;

/* Zeroes and frees every secret value of c (names too); c keeps no secret. */
void secrets_wipe(struct env_config *c);
/* Privilege sequence (before pivot_root): a tmpfs at root/run/secrets with
 * one file per file secret (0400, owned by the environment's root). Sets
 * c->secrets_dirfd to the tmpfs root (kept by init for the phase switch). */
int secrets_mount(struct env_config *c, const char *root, sbx_err **err);
/* Init, on the phase switch: removes every secret whose name is not in
 * `keep` (NULL-terminated, may be NULL): the variable from later commands'
 * environments, the file from the tmpfs (anything else written there goes
 * too). Appends the removed names to `removed`. */
void secrets_drop(struct env_config *c, char *const *keep, json_t *removed);
