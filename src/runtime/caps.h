/* Capabilities inside the environment's user namespace. */
#pragma once
#include <stdint.h>
#include "util/err.h"

/* The documented safe set kept inside the user namespace (Docker's default
 * set minus NET_RAW, MKNOD and AUDIT_WRITE): CHOWN, DAC_OVERRIDE, FOWNER,
 * FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, SETFCAP. */
extern const uint64_t caps_safe_set;

/* Drops every capability outside caps_safe_set from the bounding set, clears
 * ambient and inheritable, and sets permitted = effective = safe set. */
int caps_drop(sbx_err **err);
