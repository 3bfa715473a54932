/* Capabilities inside the environment's user namespace: the documented safe
 * set, capability names, the kept set of an environment (pure), and the two
 * places they are applied (init once, each command as it is spawned). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

/* The documented safe set kept inside the user namespace (Docker's default
 * set minus NET_RAW, MKNOD and AUDIT_WRITE): CHOWN, DAC_OVERRIDE, FOWNER,
 * FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, SETFCAP.
 * It is what a command run as the environment's root has by default (what
 * apt-get and pip as root need: chown, setuid/setgid to drop to _apt, ...),
 * and the ceiling of every --cap-add and policy "capabilities". */
extern const uint64_t caps_safe_set;
#define CAPS_SAFE_NAMES                                                                                      \
	"CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, " \
	"SETFCAP"

/* ---- pure ------------------------------------------------------------------ */

/* A capability name -> its number: "CHOWN", "cap_chown", "Cap_Chown" (case
 * does not matter, the CAP_ prefix is optional). -1 if the kernel's list
 * (through CAP_CHECKPOINT_RESTORE) has no such name. */
int caps_number(const char *name);
/* Number -> "CHOWN" (no prefix); NULL if unknown. */
const char *caps_name(int cap);
/* A list of names (NULL-terminated, may be NULL) -> a set. Every name must be
 * known and in the safe set, "ALL" (alone or with others) meaning the whole
 * safe set when allow_all. `field` names the option in errors:
 * "--cap-add SYS_ADMIN: not in the safe set (CHOWN, ...)". */
int caps_parse_list(const char *const *names, bool allow_all, const char *field, uint64_t *ret,
		    sbx_err **err);
/* The set commands run as root keep: `ceiling` (the safe set, or a policy's
 * "capabilities"), minus every --cap-drop (ALL: everything), plus every
 * --cap-add, which must lie within the safe set and within the ceiling (a
 * policy is a ceiling: options only narrow it). Drops apply before adds, so
 * `--cap-drop ALL --cap-add CHOWN` keeps CHOWN alone, as in Docker. */
int caps_compute(uint64_t ceiling, bool ceiling_from_policy, const char *const *drop, const char *const *add,
		 uint64_t *ret, sbx_err **err);
/* ["CHOWN", ...] in capability-number order. */
json_t *caps_to_json(uint64_t set);
/* A JSON array of names -> a set within the safe set (state.json, policies);
 * -1 if anything in it is not a string naming a safe-set capability. */
int caps_from_json(const json_t *a, uint64_t *ret);

/* ---- applied ----------------------------------------------------------------- */

/* Init, once (setup.c): drops every capability outside caps_safe_set from the
 * bounding set, clears ambient and inheritable, and sets permitted =
 * effective = safe set. Init keeps the whole safe set whatever the
 * environment's kept set is: it needs SETUID/SETGID/SETPCAP to start each
 * command as its user with its capabilities (caps_enter_identity). */
int caps_drop(sbx_err **err);

/* A command's identity, in init's child just before exec (init.c), for the
 * calling thread alone (raw syscalls, no glibc set*id broadcast):
 * the bounding set narrowed to `keep` (uid 0) or emptied (any other uid),
 * then supplementary groups (unless `no_setgroups`: rootless, where the
 * kernel denies them), gid and uid, then permitted = effective = `keep`
 * for uid 0 and nothing at all otherwise (inheritable and ambient empty).
 * After exec a root command holds exactly `keep` (root gains its bounding
 * set at exec); any other user holds nothing, and no_new_privs (set on init,
 * inherited) keeps setuid and file-capability binaries from raising that.
 * Only what caps_drop left in the bounding set is dropped from it when
 * caps_drop ran in this process or an ancestor (init: always); no file is
 * read, so it runs in init's CLONE_VM child as well as in a forked one.
 * Returns -errno, with the step in *ret_step ("setgroups", "setgid", ...). */
int caps_enter_identity(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups, bool no_setgroups,
			uint64_t keep, const char **ret_step);
