/* Who a command runs as: `--user UID[:GID]|NAME[:GROUP]` (create: every
 * command's default; exec: this command's), resolved in the environment's
 * own /etc/passwd and /etc/group.
 *
 * The parsing and the lookup in the files' text are pure (unit-tested);
 * user_resolve reads the two files from the root of the calling process's
 * mount namespace, which is the environment's (init, or the privilege
 * sequence after pivot_root), with openat2 RESOLVE_IN_ROOT: a symlink the
 * environment planted can never lead out of it, and a FIFO or device in
 * their place is refused rather than read. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/err.h"

#define USER_NAME_MAX 32
#define USER_GROUPS_MAX 64

typedef struct user_spec {
	bool uid_numeric;
	uid_t uid;
	char name[USER_NAME_MAX + 1]; /* when !uid_numeric */
	bool has_group;
	bool gid_numeric;
	gid_t gid;
	char group[USER_NAME_MAX + 1]; /* when has_group && !gid_numeric */
} user_spec;

/* "1000", "1000:1000", "nobody", "nobody:nogroup", "1000:staff". Names are
 * 1-32 of [A-Za-z0-9_.-], not starting with '-'; numbers 0..4294967294.
 * Errors say "user '...': ..." so that they name the field. */
int user_spec_parse(const char *s, user_spec *ret, sbx_err **err);
/* Does the spec name root (uid 0 or "root") before any lookup? */
bool user_spec_is_root(const user_spec *s);

typedef struct user_ident {
	uid_t uid;
	gid_t gid;
	gid_t groups[USER_GROUPS_MAX]; /* initgroups semantics: gid, then the groups listing the name */
	size_t n_groups;
	char name[USER_NAME_MAX + 1]; /* "" when the uid has no passwd entry */
	char home[256];		      /* "" when unknown */
} user_ident;

/* The spec against the text of passwd and group (either may be NULL: an
 * empty file). A name that is not there is SBX_E_NOT_FOUND; a numeric uid
 * without an entry runs with gid = uid (never group root by accident), no
 * name and no home. */
int user_resolve_text(const user_spec *s, const char *passwd, const char *group, user_ident *ret,
		      sbx_err **err);

/* spec resolved inside the environment (see above), then checked against
 * its uid map: every id must be below id_count (65536 as root; 1 rootless,
 * where only uid 0 exists). */
int user_resolve(const char *spec, uint32_t id_count, bool rootless, user_ident *ret, sbx_err **err);
