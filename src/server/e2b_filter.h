/* The list filters of GET /v2/sandboxes (E2B's Sandbox.list), pure
 * (tests/unit/test_e2b_filter.c). */
#pragma once
#include <stdbool.h>

#include <jansson.h>

/* True if metadata (an object of strings) has every pair of filter, the
 * query's "k=v&k2=v2" as the SDK sends it: each key and value
 * percent-decoded twice (the query's form encoding, then the SDK's
 * encodeURIComponent). NULL or "": no filter. */
bool e2b_metadata_matches(const json_t *metadata, const char *filter);

/* True if a sandbox running (else paused) passes the state filter, a
 * comma-separated list of "running" and "paused". NULL or "": no filter. */
bool e2b_state_wanted(const char *filter, bool running);
