/* The pure parts of users and capabilities: --user specs, their lookup in
 * passwd/group text (initgroups semantics), capability names and the kept
 * set (safe set, policy ceiling, drops before adds). */
#include <errno.h>
#include <linux/capability.h>

#include "runtime/caps.h"
#include "runtime/user.h"
#include "unit.h"

#define BIT(c) (UINT64_C(1) << (c))

static char msg[1024];
static const char *spec_err(const char *s)
{
	user_spec u;
	sbx_err *e = NULL;
	if (user_spec_parse(s, &u, &e) == 0)
		return "(parsed)";
	snprintf(msg, sizeof(msg), "%s", sbx_err_message(e));
	sbx_err_free(e);
	return msg;
}

TEST(user_spec_forms)
{
	user_spec u;
	CHECK(user_spec_parse("1000", &u, NULL) == 0 && u.uid_numeric && u.uid == 1000 && !u.has_group);
	CHECK(user_spec_parse("1000:1001", &u, NULL) == 0 && u.uid == 1000 && u.has_group && u.gid_numeric &&
	      u.gid == 1001);
	CHECK(user_spec_parse("nobody", &u, NULL) == 0 && !u.uid_numeric && streq(u.name, "nobody"));
	CHECK(user_spec_parse("build-user.x_1:staff", &u, NULL) == 0 && streq(u.name, "build-user.x_1") &&
	      streq(u.group, "staff") && !u.gid_numeric);
	CHECK(user_spec_parse("0", &u, NULL) == 0 && user_spec_is_root(&u));
	CHECK(user_spec_parse("root:1000", &u, NULL) == 0 && user_spec_is_root(&u));
	CHECK(user_spec_parse("4294967294", &u, NULL) == 0 && u.uid == 4294967294u);
	CHECK(user_spec_parse("65534:65534", &u, NULL) == 0 && !user_spec_is_root(&u));
}

TEST(user_spec_refusals_name_the_field)
{
	static const char *const bad[] = {"",		"1000:",
					  ":1000",	"-x",
					  "a b",	"a:b:c",
					  "4294967295", "99999999999",
					  "x/y",	"abcdefghijklmnopqrstuvwxyz0123456",
					  "1000:-1",	"\xc3\xa9",
					  "$"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *m = spec_err(bad[i]);
		if (!startswith(m, "user"))
			fprintf(stderr, "  '%s' -> %s\n", bad[i], m);
		CHECK(startswith(m, "user"));
	}
	CHECK(user_spec_parse(NULL, &(user_spec){0}, NULL) < 0);
}

static const char PASSWD[] = "root:x:0:0:root:/root:/bin/bash\n"
			     "# a comment\n"
			     "+nis::0:0:::\n"
			     "broken line\n"
			     "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
			     "dev:x:1000:1000:Dev,,,:/home/dev:/bin/bash\n"
			     "evil:x:abc:0::/:/bin/sh\n"
			     "dup:x:1000:5:second entry:/home/dup:/bin/sh\n";
static const char GROUP[] = "root:x:0:\n"
			    "sudo:x:27:dev,other\n"
			    "docker:x:999:other,dev\n"
			    "nogroup:x:65534:\n"
			    "dev:x:1000:\n"
			    "staff:x:50:\n"
			    "devx:x:51:devel\n";

static int resolve(const char *spec, user_ident *id)
{
	user_spec s;
	if (user_spec_parse(spec, &s, NULL) < 0)
		return -1;
	sbx_err *e = NULL;
	int r = user_resolve_text(&s, PASSWD, GROUP, id, &e);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "%s", sbx_err_message(e));
		sbx_err_free(e);
	}
	return r;
}

TEST(user_resolve_names_and_initgroups)
{
	user_ident id;
	CHECK(resolve("dev", &id) == 0);
	CHECK(id.uid == 1000 && id.gid == 1000 && streq(id.name, "dev") && streq(id.home, "/home/dev"));
	/* primary first, then every group listing the name (not "devel") */
	CHECK(id.n_groups == 3 && id.groups[0] == 1000 && id.groups[1] == 27 && id.groups[2] == 999);
	CHECK(resolve("nobody", &id) == 0 && id.uid == 65534 && id.gid == 65534 && id.n_groups == 1);
	/* a uid's first entry wins */
	CHECK(resolve("1000", &id) == 0 && streq(id.name, "dev") && id.gid == 1000);
	/* an explicit group replaces the primary group; supplementary stay */
	CHECK(resolve("dev:staff", &id) == 0 && id.gid == 50 && id.groups[0] == 50 && id.n_groups == 3);
	CHECK(resolve("1000:7", &id) == 0 && id.gid == 7);
	CHECK(resolve("root", &id) == 0 && id.uid == 0 && id.gid == 0 && streq(id.home, "/root"));
}

TEST(user_resolve_unknown)
{
	user_ident id;
	CHECK(resolve("nosuch", &id) < 0);
	CHECK(strstr(msg, "user 'nosuch': no such user in the environment's /etc/passwd"));
	CHECK(resolve("evil", &id) < 0); /* malformed uid: not a user */
	CHECK(resolve("dev:nogrp", &id) < 0 && strstr(msg, "no such group 'nogrp'"));
	CHECK(resolve("1000:nogrp", &id) < 0 && strstr(msg, "user '1000:nogrp'"));
	/* a numeric uid without an entry: gid = uid, never group root */
	CHECK(resolve("4242", &id) == 0 && id.uid == 4242 && id.gid == 4242 && !id.name[0] && !id.home[0] &&
	      id.n_groups == 1 && id.groups[0] == 4242);
	/* no files at all */
	user_spec s;
	CHECK(user_spec_parse("1234", &s, NULL) == 0 && user_resolve_text(&s, NULL, NULL, &id, NULL) == 0 &&
	      id.gid == 1234);
	CHECK(user_spec_parse("dev", &s, NULL) == 0 && user_resolve_text(&s, NULL, NULL, &id, NULL) < 0);
}

TEST(caps_names)
{
	CHECK(caps_number("CHOWN") == CAP_CHOWN);
	CHECK(caps_number("cap_chown") == CAP_CHOWN);
	CHECK(caps_number("Cap_Net_Bind_Service") == CAP_NET_BIND_SERVICE);
	CHECK(caps_number("SYS_ADMIN") == CAP_SYS_ADMIN);
	CHECK(caps_number("CHECKPOINT_RESTORE") == 40);
	CHECK(caps_number("CAP_") == -1 && caps_number("NOPE") == -1 && caps_number("") == -1 &&
	      caps_number(NULL) == -1);
	CHECK_STREQ(caps_name(CAP_SETFCAP), "SETFCAP");
	CHECK(caps_name(41) == NULL && caps_name(-1) == NULL);
	for (int c = 0; c <= 40; c++)
		CHECK(caps_number(caps_name(c)) == c);
	json_t *j = caps_to_json(BIT(CAP_KILL) | BIT(CAP_CHOWN));
	uint64_t back = 0;
	CHECK(json_array_size(j) == 2 && streq(json_string_value(json_array_get(j, 0)), "CHOWN"));
	CHECK(caps_from_json(j, &back) == 0 && back == (BIT(CAP_KILL) | BIT(CAP_CHOWN)));
	json_decref(j);
	json_t *bad = json_pack("[s]", "SYS_ADMIN");
	CHECK(caps_from_json(bad, &back) < 0);
	json_decref(bad);
}

static int compute(uint64_t ceiling, bool pol, const char *const *drop, const char *const *add, uint64_t *ret)
{
	sbx_err *e = NULL;
	int r = caps_compute(ceiling, pol, drop, add, ret, &e);
	if (r < 0) {
		snprintf(msg, sizeof(msg), "%s", sbx_err_message(e));
		sbx_err_free(e);
	}
	return r;
}

TEST(caps_kept_set)
{
	uint64_t k;
	CHECK(compute(caps_safe_set, false, NULL, NULL, &k) == 0 && k == caps_safe_set);
	CHECK(compute(caps_safe_set, false, (const char *[]){"chown", "CAP_KILL", NULL}, NULL, &k) == 0 &&
	      k == (caps_safe_set & ~BIT(CAP_CHOWN) & ~BIT(CAP_KILL)));
	/* drops before adds, ALL for drop */
	CHECK(compute(caps_safe_set, false, (const char *[]){"ALL", NULL}, (const char *[]){"CHOWN", NULL},
		      &k) == 0 &&
	      k == BIT(CAP_CHOWN));
	CHECK(compute(caps_safe_set, false, (const char *[]){"all", NULL}, NULL, &k) == 0 && k == 0);
	/* outside the safe set: refused, naming the set */
	CHECK(compute(caps_safe_set, false, NULL, (const char *[]){"SYS_ADMIN", NULL}, &k) < 0);
	CHECK(strstr(msg, "--cap-add SYS_ADMIN: not in the safe set (CHOWN, DAC_OVERRIDE"));
	CHECK(compute(caps_safe_set, false, NULL, (const char *[]){"NET_RAW", NULL}, &k) < 0);
	CHECK(compute(caps_safe_set, false, NULL, (const char *[]){"ALL", NULL}, &k) <
	      0); /* ALL is for drop */
	CHECK(compute(caps_safe_set, false, (const char *[]){"BOGUS", NULL}, NULL, &k) < 0 &&
	      strstr(msg, "--cap-drop 'BOGUS': unknown capability"));
	/* a policy's list is a ceiling: an add beyond it is refused */
	uint64_t pol = BIT(CAP_CHOWN) | BIT(CAP_FOWNER);
	CHECK(compute(pol, true, NULL, NULL, &k) == 0 && k == pol);
	CHECK(compute(pol, true, NULL, (const char *[]){"SETUID", NULL}, &k) < 0 &&
	      strstr(msg, "the policy does not keep it"));
	CHECK(compute(pol, true, (const char *[]){"FOWNER", NULL}, (const char *[]){"CHOWN", NULL}, &k) ==
		  0 &&
	      k == BIT(CAP_CHOWN));
	CHECK(compute(0, true, NULL, (const char *[]){"CHOWN", NULL}, &k) < 0);
}
