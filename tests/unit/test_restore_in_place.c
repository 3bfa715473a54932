/* Unit tests: src/api/snap.c's snap_in_place_refusal, which restores may
 * keep their supervisor (docs/runtime.md "Restore in place"; pure). */
#include <string.h>

#include "api/api.h"
#include "api/env_state.h"
#include "store/snapshot.h"
#include "unit.h"
#include "util/json.h"
#include "util/macro.h"

/* A plain environment's record, as create writes it, with `extra` merged in. */
static int record(const char *extra, env_record *r)
{
	json_t *st =
	    json_loads("{\"environment_id\":\"0123456789ab\",\"template\":\"host\",\"phase\":\"setup\","
		       "\"secrets\":[],\"rootless\":false,\"ephemeral\":false,\"degraded\":false,"
		       "\"limits\":{\"memory_bytes\":1073741824,\"disk_bytes\":0},\"layers\":[]}",
		       0, NULL);
	json_t *x = extra ? json_loads(extra, 0, NULL) : json_object();
	if (!st || !x)
		return -1;
	json_object_update(st, x);
	if (json_is_object(json_object_get(x, "limits")))
		json_object_set(st, "limits", json_object_get(x, "limits"));
	json_decref(x);
	int rc = env_record_parse(st, r);
	json_decref(st);
	return rc;
}

static const char *why(const char *extra, const char *base_template)
{
	static char buf[128];
	env_record r = {.uid_slot = -1};
	if (record(extra, &r) < 0)
		return "(bad test record)";
	store_snapshot snap = {.base_template = (char *)base_template};
	const char *w = snap_in_place_refusal(&r, &snap);
	snprintf(buf, sizeof(buf), "%s", w ? w : "");
	env_record_clear(&r);
	return buf;
}

TEST(plain_environment_restarts_in_place)
{
	CHECK_STREQ(why(NULL, NULL), "");
	CHECK_STREQ(why(NULL, "host"), "");
	CHECK_STREQ(why("{\"network\":\"allow\",\"network_allow\":[\"example.com\"]}", "host"), "");
	CHECK_STREQ(why("{\"rootless\":true,\"uid_slot\":-1}", "host"), "");
	CHECK_STREQ(why("{\"template\":\"dir:/srv/t\"}", "dir:/srv/t"), "");
}

TEST(what_a_new_supervisor_would_build_differently_refuses)
{
	CHECK_STREQ(why("{\"degraded\":true}", NULL), "no namespaces or no writable layer");
	CHECK_STREQ(why("{\"ephemeral\":true}", NULL), "no namespaces or no writable layer");
	CHECK_STREQ(why("{\"limits\":{\"disk_bytes\":67108864}}", NULL), "a disk quota");
	CHECK_STREQ(why("{\"secrets\":[{\"name\":\"T\",\"from\":\"env\"}]}", NULL), "secrets");
	CHECK_STREQ(why("{\"plugins\":[{\"path\":\"/p.so\"}]}", NULL), "plugins");
	CHECK_STREQ(why("{\"devices\":[\"nvidia.com/gpu=0\"]}", NULL), "devices");
	CHECK_STREQ(why("{\"pool\":\"k\"}", NULL), "a pool entry");
	CHECK_STREQ(why("{\"phase\":\"agent\"}", NULL), "the agent phase");
	CHECK_STREQ(why(NULL, "dir:/srv/other"), "another template");
	CHECK_STREQ(why("{\"template\":\"dir:/srv/t\"}", "host"), "another template");
}
