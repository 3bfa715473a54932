/* Published ports at create (docs/ports.md): the options' "-p" specs, or a
 * restarted environment's record, into env_config (the supervisor binds and
 * serves them: runtime/sup_ports.c), and the record's "ports". */
#pragma once
#include <jansson.h>

#include "runtime/runtime.h"

/* c->ports from publish (NULL-terminated specs, sbx_parse_publish), or from
 * restore_state's "ports" when restore_state is not NULL (a restart keeps
 * the host ports its first start bound, and does not fail when one is
 * taken meanwhile: c->ports_lenient). invalid_argument for a bad spec, two
 * mappings of one host address and port (or one inner port twice on one
 * host address with HOSTPORT 0), more than SBX_PUBLISH_MAX, or any mapping
 * with network open or in degraded mode (no network namespace: the
 * environment's ports are the host's). Needs c->network and c->degraded. */
int publish_prepare(env_config *c, const char *const *publish, const json_t *restore_state, sbx_err **err);
/* The record's "ports" ([{port, protocol, host_ip, host_port}]) from c, with
 * the host ports as the supervisor reported them (info's "ports", by index;
 * NULL: as configured). Nothing when there are none. */
void publish_state(const env_config *c, const json_t *info, json_t *st);
