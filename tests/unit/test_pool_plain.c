/* Which creates a warm pool can serve (src/api/pool.c pool_opts_plain; pure). */
#include "api/api.h"
#include "unit.h"

TEST(variables_are_served_except_to_code_and_one_shot)
{
	const char *const env[] = {"X=1", NULL};
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	CHECK(pool_opts_plain(NULL) && pool_opts_plain(&o));
	o.env = env;
	CHECK(pool_opts_plain(&o));
	o.code = true;
	CHECK(!pool_opts_plain(&o)); /* the kernel was started with the entry's variables */
	o.env = NULL;
	CHECK(pool_opts_plain(&o));
	o.code = false;
	o.one_shot = true;
	CHECK(pool_opts_plain(&o));
	o.env = env;
	CHECK(!pool_opts_plain(&o)); /* its supervisor hands the entry out */
	/* malformed variables are left to the cold create, which says why */
	o.one_shot = false;
	const char *const bad[] = {"NOEQUALS", NULL}, *const blank[] = {"=v", NULL};
	o.env = bad;
	CHECK(!pool_opts_plain(&o));
	o.env = blank;
	CHECK(!pool_opts_plain(&o));
	/* an older caller's struct: no code or one_shot fields to read */
	sbx_create_opts old = SBX_CREATE_OPTS_INIT;
	old.version = 6;
	old.env = env;
	CHECK(pool_opts_plain(&old));
}

TEST(what_changes_an_entry_is_not_served)
{
	sbx_create_opts o = SBX_CREATE_OPTS_INIT;
	o.name = "n";
	CHECK(!pool_opts_plain(&o));
	o = (sbx_create_opts)SBX_CREATE_OPTS_INIT;
	o.memory_bytes = 1 << 20;
	CHECK(!pool_opts_plain(&o));
	o = (sbx_create_opts)SBX_CREATE_OPTS_INIT;
	o.network = "internet";
	CHECK(!pool_opts_plain(&o));
	o.network = "none";
	CHECK(pool_opts_plain(&o));
	o = (sbx_create_opts)SBX_CREATE_OPTS_INIT;
	o.snapshot = "sha256:00";
	o.template_spec = "host";
	CHECK(!pool_opts_plain(&o));
}
