/* The list filters of GET /v2/sandboxes (src/server/e2b_filter.h). */
#include <jansson.h>

#include "server/e2b_filter.h"
#include "unit.h"

TEST(metadata_pairs_all_must_match)
{
	json_t *md = json_pack("{s:s,s:s}", "user", "ann", "app id", "a&b=c");
	CHECK(e2b_metadata_matches(md, NULL));
	CHECK(e2b_metadata_matches(md, ""));
	CHECK(e2b_metadata_matches(md, "user=ann"));
	CHECK(!e2b_metadata_matches(md, "user=bob"));
	CHECK(!e2b_metadata_matches(md, "user=ann&other=x"));
	CHECK(!e2b_metadata_matches(md, "missing"));
	/* the SDK's encodeURIComponent, then the query's form encoding: twice */
	CHECK(e2b_metadata_matches(md, "user=ann&app%2520id=a%2526b%253Dc"));
	CHECK(e2b_metadata_matches(md, "app+id=a%2526b%253Dc"));
	CHECK(!e2b_metadata_matches(md, "app%2520id=a%26b"));
	/* broken escapes are kept as they are, never read past the end */
	CHECK(!e2b_metadata_matches(md, "user=ann%"));
	CHECK(!e2b_metadata_matches(md, "user=%4"));
	json_decref(md);
	CHECK(!e2b_metadata_matches(NULL, "user=ann"));
	CHECK(e2b_metadata_matches(NULL, NULL));
}

TEST(state_filter)
{
	CHECK(e2b_state_wanted(NULL, true));
	CHECK(e2b_state_wanted("", false));
	CHECK(e2b_state_wanted("running", true));
	CHECK(!e2b_state_wanted("running", false));
	CHECK(e2b_state_wanted("running,paused", false));
	CHECK(e2b_state_wanted("paused,running", true));
	CHECK(!e2b_state_wanted("runningx", true));
	CHECK(!e2b_state_wanted("run", true));
	CHECK(!e2b_state_wanted(",", true));
}
