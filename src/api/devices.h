/* CDI devices at create (docs/devices.md): the orchestration around
 * runtime/cdi.h (parse, resolve) and runtime/devices.h (apply). */
#pragma once
#include <jansson.h>

#include "api/ctx.h"
#include "runtime/runtime.h"

/* Resolves `names` (NULL-terminated "vendor/class=name", may be NULL) against
 * the specs in $SBX_CDI_SPEC_DIRS (default /etc/cdi:/var/run/cdi) and checks
 * them on the host: every device node exists there as a device of the
 * spec's type and numbers (their type, major and minor then come from the
 * host), every mount is a bind of an existing path with options sbx
 * applies, every hook is executable. Fills c->cdi and c->devices. */
int devices_prepare(sbx_ctx *ctx, env_config *c, const char *const *names, sbx_err **err);
/* "devices": the resolved names, into the state (inspect shows them). */
void devices_state(const env_config *c, json_t *st);
/* Appends the devices' env to c->env (after the state is written: state's
 * "env" and snapshots keep only the user's). */
int devices_env_apply(env_config *c, sbx_err **err);
void devices_config_free(env_config *c);
