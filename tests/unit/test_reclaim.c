/* api/reclaim.h: the pure decisions (inline or background, trash names) and
 * the limits read from the environment. The reclaimer itself is tested
 * through the CLI (tests/integration/test_reclaim.sh). */
#include <stdlib.h>
#include <sys/inotify.h>

#include "api/reclaim.h"
#include "unit.h"

#define GIB (1ULL << 30)

TEST(defaults)
{
	unsetenv("SBX_RECLAIM_SYNC");
	unsetenv("SBX_RECLAIM_MAX");
	unsetenv("SBX_RECLAIM_MIN_FREE");
	unsetenv("SBX_RECLAIM_LINGER_MS");
	reclaim_limits l;
	reclaim_limits_from_env(&l);
	CHECK(!l.sync && l.max_entries == RECLAIM_MAX_DEFAULT && l.min_free == -1);
	CHECK(l.linger_ms == RECLAIM_LINGER_DEFAULT_MS);
}

TEST(linger_from_environment)
{
	reclaim_limits l;
	setenv("SBX_RECLAIM_LINGER_MS", "0", 1);
	reclaim_limits_from_env(&l);
	CHECK(l.linger_ms == 0);
	setenv("SBX_RECLAIM_LINGER_MS", "99999999", 1); /* capped at the lifetime */
	reclaim_limits_from_env(&l);
	CHECK(l.linger_ms == RECLAIM_LIFETIME_MS);
	setenv("SBX_RECLAIM_LINGER_MS", "-1", 1);
	reclaim_limits_from_env(&l);
	CHECK(l.linger_ms == RECLAIM_LINGER_DEFAULT_MS);
	setenv("SBX_RECLAIM_LINGER_MS", "5s", 1);
	reclaim_limits_from_env(&l);
	CHECK(l.linger_ms == RECLAIM_LINGER_DEFAULT_MS);
	unsetenv("SBX_RECLAIM_LINGER_MS");
}

TEST(environment_overrides_and_bad_values)
{
	reclaim_limits l;
	setenv("SBX_RECLAIM_SYNC", "1", 1);
	setenv("SBX_RECLAIM_MAX", "0", 1);
	setenv("SBX_RECLAIM_MIN_FREE", "2g", 1);
	reclaim_limits_from_env(&l);
	CHECK(l.sync && l.max_entries == 0 && l.min_free == 2 * (int64_t)GIB);
	/* Anything else keeps the default. */
	setenv("SBX_RECLAIM_SYNC", "yes", 1);
	setenv("SBX_RECLAIM_MAX", "-3", 1);
	setenv("SBX_RECLAIM_MIN_FREE", "lots", 1);
	reclaim_limits_from_env(&l);
	CHECK(!l.sync && l.max_entries == RECLAIM_MAX_DEFAULT && l.min_free == -1);
	setenv("SBX_RECLAIM_MAX", "12x", 1);
	reclaim_limits_from_env(&l);
	CHECK(l.max_entries == RECLAIM_MAX_DEFAULT);
	unsetenv("SBX_RECLAIM_SYNC");
	unsetenv("SBX_RECLAIM_MAX");
	unsetenv("SBX_RECLAIM_MIN_FREE");
}

TEST(entries_cap)
{
	reclaim_limits l = {.max_entries = 3, .min_free = -1};
	uint64_t total = 100 * GIB, avail = 50 * GIB;
	CHECK(!reclaim_inline(&l, 1, avail, total));
	CHECK(!reclaim_inline(&l, 3, avail, total)); /* ours counted: up to the cap waits */
	CHECK(reclaim_inline(&l, 4, avail, total));
	l.max_entries = 0; /* never in the background */
	CHECK(reclaim_inline(&l, 1, avail, total));
	l = (reclaim_limits){.sync = true, .max_entries = 64, .min_free = -1};
	CHECK(reclaim_inline(&l, 1, avail, total));
}

TEST(free_space_floor)
{
	reclaim_limits l = {.max_entries = 64, .min_free = -1};
	/* Default: 5% of the filesystem, at most 1 GiB. */
	CHECK(!reclaim_inline(&l, 1, 6 * GIB, 100 * GIB));
	CHECK(!reclaim_inline(&l, 1, GIB, 100 * GIB));
	CHECK(reclaim_inline(&l, 1, GIB - 1, 100 * GIB));
	CHECK(!reclaim_inline(&l, 1, 100ULL << 20, 1 * GIB)); /* 10% free of a small disk */
	CHECK(reclaim_inline(&l, 1, 50ULL << 20, 1 * GIB));   /* under 5% of it */
	/* Set: that many bytes; 0 turns the floor off. */
	l.min_free = 10 * (int64_t)GIB;
	CHECK(reclaim_inline(&l, 1, 9 * GIB, 100 * GIB));
	CHECK(!reclaim_inline(&l, 1, 10 * GIB, 100 * GIB));
	l.min_free = 0;
	CHECK(!reclaim_inline(&l, 1, 0, 100 * GIB));
	/* Unknown (statvfs failed): free space decides nothing. */
	l.min_free = -1;
	CHECK(!reclaim_inline(&l, 1, 0, 0));
}

TEST(trash_names)
{
	char b[64];
	CHECK(reclaim_trash_name("0123456789ab", 0xbeef, b, sizeof(b)) == 0);
	CHECK_STREQ(b, ".trash-0123456789ab-0000beef");
	CHECK(reclaim_trash_name("0123456789ab-upper", 0xffffffffu, b, sizeof(b)) == 0);
	CHECK_STREQ(b, ".trash-0123456789ab-upper-ffffffff");
	CHECK(reclaim_trash_name("", 1, b, sizeof(b)) < 0);
	CHECK(reclaim_trash_name(NULL, 1, b, sizeof(b)) < 0);
	CHECK(reclaim_trash_name("../x", 1, b, sizeof(b)) < 0);
	CHECK(reclaim_trash_name("0123456789ab", 1, b, 20) < 0); /* does not fit */
}

/* A lingering reclaimer looks on trash arriving, stops on gc's nudge (an
 * attribute change of envs/ itself) or the directory going, and sleeps on
 * everything else (environments come and go in envs/ all the time). */
TEST(linger_events)
{
	CHECK(reclaim_linger_event(IN_MOVED_TO, ".trash-abc-0011aabb") == RECLAIM_EV_WORK);
	CHECK(reclaim_linger_event(IN_CREATE | IN_ISDIR, ".trash-x-00000000") == RECLAIM_EV_WORK);
	CHECK(reclaim_linger_event(IN_MOVED_TO, "abcdef012345") == RECLAIM_EV_IGNORE);
	CHECK(reclaim_linger_event(IN_CREATE, ".trash") == RECLAIM_EV_IGNORE);
	CHECK(reclaim_linger_event(IN_ATTRIB, ".trash-abc-0011aabb") == RECLAIM_EV_IGNORE);
	CHECK(reclaim_linger_event(IN_ATTRIB | IN_ISDIR, "") == RECLAIM_EV_STOP);
	CHECK(reclaim_linger_event(IN_ATTRIB, NULL) == RECLAIM_EV_STOP);
	CHECK(reclaim_linger_event(IN_DELETE_SELF, "") == RECLAIM_EV_STOP);
	CHECK(reclaim_linger_event(IN_MOVE_SELF, "") == RECLAIM_EV_STOP);
	CHECK(reclaim_linger_event(IN_IGNORED, "") == RECLAIM_EV_STOP);
	CHECK(reclaim_linger_event(IN_Q_OVERFLOW, "") == RECLAIM_EV_WORK);
	CHECK(reclaim_linger_event(IN_DELETE, ".trash-abc-0011aabb") == RECLAIM_EV_IGNORE);
}
