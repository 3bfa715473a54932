/* session_admit: which MCP HTTP session gives way for a newcomer
 * (src/server/session_policy.h). */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "server/session_policy.h"
#include "unit.h"

#define S 1000000LL /* a second, in microseconds */

/* Sessions of peer 127.0.0.p last used at t (µs): half-open or established,
 * idle or busy. With lim, an established one is stale (may give way) from
 * 60 s of idleness: at now 1000 s, if last used at 940 s or before. */
#define PEER(p)                                                                                              \
	{                                                                                                    \
		.addr = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = (p) }                                 \
	}
#define HALF(p, t)                                                                                           \
	{                                                                                                    \
		.last_used_us = (t), .peer = PEER(p)                                                         \
	}
#define EST(p, t)                                                                                            \
	{                                                                                                    \
		.last_used_us = (t), .established = true, .peer = PEER(p)                                    \
	}
#define HALF_BUSY(p, t)                                                                                      \
	{                                                                                                    \
		.last_used_us = (t), .active = 1, .peer = PEER(p)                                            \
	}
#define EST_BUSY(p, t)                                                                                       \
	{                                                                                                    \
		.last_used_us = (t), .active = 1, .established = true, .peer = PEER(p)                       \
	}
#define NOW (1000 * S)

static session_peer peer(unsigned n)
{
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000000 + n)};
	session_peer p;
	session_peer_of((struct sockaddr *)&in, &p);
	return p;
}

static session_meta half_open(unsigned p, int64_t t)
{
	return (session_meta){.last_used_us = t, .peer = peer(p)};
}

static session_meta established(unsigned p, int64_t t)
{
	return (session_meta){.last_used_us = t, .established = true, .peer = peer(p)};
}

static const session_limits lim = {.max = 4, .max_per_peer = 3, .ttl_us = 3600LL * S, .min_idle_us = 60 * S};

static bool same_peer(const session_peer *a, const session_peer *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

TEST(peer_forms)
{
	struct sockaddr_in in = {
	    .sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(0x7f000001)};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6, .sin6_port = htons(2)};
	CHECK(inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr) == 1);
	session_peer a, b, z, u;
	session_peer_of((struct sockaddr *)&in, &a);
	session_peer_of((struct sockaddr *)&in6, &b);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0); /* one address, either form, any port */
	CHECK(inet_pton(AF_INET6, "::1", &in6.sin6_addr) == 1);
	session_peer_of((struct sockaddr *)&in6, &b);
	CHECK(memcmp(&a, &b, sizeof(a)) != 0);
	session_peer_of(NULL, &z);
	struct sockaddr un = {.sa_family = AF_UNIX};
	session_peer_of(&un, &u);
	CHECK(memcmp(&z, &u, sizeof(z)) == 0);
	for (size_t i = 0; i < sizeof(z.addr); i++)
		CHECK(z.addr[i] == 0);
	session_peer m = PEER(5), p5 = peer(5); /* the tables' spelling of 127.0.0.5 */
	CHECK(same_peer(&m, &p5));
}

TEST(expiry)
{
	session_meta s = established(1, 0);
	CHECK(!session_expired(&s, lim.ttl_us, lim.ttl_us));
	CHECK(session_expired(&s, lim.ttl_us + 1, lim.ttl_us));
	s.active = 1; /* a call in flight: never */
	CHECK(!session_expired(&s, 100 * lim.ttl_us, lim.ttl_us));
	session_meta h = half_open(1, 0);
	CHECK(session_expired(&h, lim.ttl_us + 1, lim.ttl_us));
}

/* One admission: the table, the newcomer's peer, the time, the verdict. */
typedef struct admit_case {
	const char *name;
	const session_limits *lim; /* NULL: lim */
	size_t n;
	session_meta t[4];
	unsigned newcomer;
	int64_t now_us;
	session_verdict verdict;
	size_t victim;	  /* SESSION_EVICT */
	unsigned retry_s; /* SESSION_REFUSE_* */
} admit_case;

static const session_limits roomy = {
    .max = 100, .max_per_peer = 3, .ttl_us = 3600LL * S, .min_idle_us = 60 * S};
static const session_limits no_grace = {.max = 4, .max_per_peer = 3, .ttl_us = 3600LL * S, .min_idle_us = 0};

static const admit_case admit_cases[] = {
    {"an empty table admits", .n = 0, .newcomer = 1, .now_us = NOW, .verdict = SESSION_ADMIT},
    {"room in the table and the share admits, evicting nothing", .n = 2, .t = {EST(1, 0), HALF(1, 0)},
     .newcomer = 1, .now_us = NOW, .verdict = SESSION_ADMIT},

    /* The newcomer's peer holds its share: only its own sessions may go. */
    {"share: its own half-open goes first, though an established one is staler", .lim = &roomy, .n = 3,
     .t = {EST(1, 100 * S), HALF(1, 995 * S), EST(1, 900 * S)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"share: the least recently used of its half-open ones", .lim = &roomy, .n = 3,
     .t = {HALF(1, 990 * S), HALF(1, 980 * S), EST(1, 100 * S)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"share: no half-open: its least recently used stale established one", .lim = &roomy, .n = 3,
     .t = {EST(1, 900 * S), EST(1, 800 * S), EST(1, 990 * S)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"share: idle exactly min_idle is stale", .lim = &roomy, .n = 3,
     .t = {EST(1, 990 * S), EST(1, 940 * S), EST(1, 990 * S)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"share: a microsecond short of stale: refused, retry in 1 s", .lim = &roomy, .n = 3,
     .t = {EST(1, 990 * S), EST(1, 940 * S + 1), EST(1, 990 * S)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_REFUSE_PEER, .retry_s = 1},
    {"share: all used recently: refused until its first goes stale, never another peer's", .n = 4,
     .t = {EST(1, 990 * S), EST(1, 985 * S), EST(1, 995 * S), HALF(2, 0)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_REFUSE_PEER, .retry_s = 45},
    {"share: busy sessions never go, the oldest neither", .lim = &roomy, .n = 3,
     .t = {EST_BUSY(1, 0), HALF_BUSY(1, 0), EST(1, 950 * S)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_REFUSE_PEER, .retry_s = 10},
    {"share: all busy: the busy retry", .lim = &roomy, .n = 3,
     .t = {EST_BUSY(1, 0), HALF_BUSY(1, 0), EST_BUSY(1, 0)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_REFUSE_PEER, .retry_s = SESSION_RETRY_BUSY_S},
    {"share in a full table: its own only, though another peer's is stale", .n = 4,
     .t = {EST(1, 990 * S), EST(1, 990 * S), EST(1, 980 * S), EST(2, 0)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_REFUSE_PEER, .retry_s = 40},
    {"share, no grace: any idle established one may go", .lim = &no_grace, .n = 3,
     .t = {EST(1, 999 * S), EST(1, 998 * S), EST_BUSY(1, 0)}, .newcomer = 1, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},

    /* The table is full: half-open before established, its own before anyone's. */
    {"full: its own half-open, though another's is older and an established one older still", .n = 4,
     .t = {EST(1, 1 * S), HALF(2, 2 * S), HALF(3, 5 * S), HALF(3, 4 * S)}, .newcomer = 3, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 3},
    {"full: none of its own: anyone's least recently used half-open", .n = 4,
     .t = {EST(1, 1 * S), HALF(2, 2 * S), HALF(3, 5 * S), HALF(3, 4 * S)}, .newcomer = 9, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"full: anyone's half-open before its own stale established one", .n = 4,
     .t = {EST(3, 0), HALF(2, 990 * S), EST(1, 0), EST(4, 0)}, .newcomer = 3, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"full: its own stale established before another's staler one", .n = 4,
     .t = {EST(1, 100 * S), EST(3, 900 * S), EST(2, 990 * S), EST(3, 800 * S)}, .newcomer = 3, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 3},
    {"full: its own all fresh: anyone's least recently used stale one", .n = 4,
     .t = {EST(3, 990 * S), EST(1, 500 * S), EST(3, 995 * S), EST(2, 600 * S)}, .newcomer = 3, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"full: none of its own: anyone's least recently used stale one", .n = 4,
     .t = {EST(1, 900 * S), EST(2, 100 * S), EST(2, 990 * S), EST(4, 800 * S)}, .newcomer = 9, .now_us = NOW,
     .verdict = SESSION_EVICT, .victim = 1},
    {"full: all used recently or busy: refused until the first goes stale", .n = 4,
     .t = {EST(1, 990 * S), EST(2, 950 * S), EST(3, 970 * S), HALF_BUSY(4, 0)}, .newcomer = 9, .now_us = NOW,
     .verdict = SESSION_REFUSE_FULL, .retry_s = 10},
    {"full: all busy: the busy retry", .n = 4,
     .t = {EST_BUSY(1, 0), HALF_BUSY(2, 0), EST_BUSY(3, 0), EST_BUSY(3, 0)}, .newcomer = 9, .now_us = NOW,
     .verdict = SESSION_REFUSE_FULL, .retry_s = SESSION_RETRY_BUSY_S},
};

TEST(admit_table)
{
	for (size_t k = 0; k < sizeof(admit_cases) / sizeof(admit_cases[0]); k++) {
		const admit_case *c = &admit_cases[k];
		session_peer p = peer(c->newcomer);
		session_decision d = session_admit(c->t, c->n, &p, c->lim ? c->lim : &lim, c->now_us);
		bool ok = d.verdict == c->verdict && (d.verdict != SESSION_EVICT || d.victim == c->victim) &&
			  (d.verdict == SESSION_ADMIT || d.verdict == SESSION_EVICT ||
			   d.retry_after_s == c->retry_s);
		if (!ok)
			fprintf(stderr, "  case '%s': verdict %d victim %zu retry %u\n", c->name, d.verdict,
				d.victim, d.retry_after_s);
		CHECK(ok);
	}
}

/* Applies d to the table as the transport does (drop by moving the last). */
static size_t apply(session_meta *t, size_t n, session_decision d, session_meta newcomer)
{
	if (d.verdict == SESSION_EVICT)
		t[d.victim] = t[--n];
	if (d.verdict == SESSION_ADMIT || d.verdict == SESSION_EVICT)
		t[n++] = newcomer;
	return n;
}

/* The audit's case: a client that did work, and one mid-handshake on another
 * address, survive any number of initialize requests from a third; the
 * flood holds its share and no more. */
TEST(flood_from_one_peer)
{
	const session_limits l = {.max = 16, .max_per_peer = 4, .ttl_us = lim.ttl_us, .min_idle_us = 60 * S};
	session_meta t[16];
	size_t n = 0;
	t[n++] = established(1, 0);
	t[n++] = half_open(3, 1);
	session_peer f = peer(2), p1 = peer(1), p3 = peer(3);
	for (int64_t i = 0; i < 10000; i++) {
		session_decision d = session_admit(t, n, &f, &l, 10 + i);
		CHECK(d.verdict == SESSION_ADMIT || d.verdict == SESSION_EVICT);
		n = apply(t, n, d, half_open(2, 10 + i));
	}
	size_t flood = 0, legit = 0, other = 0;
	for (size_t i = 0; i < n; i++) {
		flood += same_peer(&t[i].peer, &f);
		legit += same_peer(&t[i].peer, &p1) && t[i].established;
		other += same_peer(&t[i].peer, &p3);
	}
	CHECK(flood == 4 && legit == 1 && other == 1);
	/* Had the flood completed its handshakes, it is refused past its share
	 * while they are fresh, told to come back when the first goes stale... */
	for (size_t i = 0; i < n; i++)
		t[i].established = true;
	session_decision d = session_admit(t, n, &f, &l, 20000);
	CHECK(d.verdict == SESSION_REFUSE_PEER && d.retry_after_s == 60);
	/* ...and then displaces its own, never the others'. */
	d = session_admit(t, n, &f, &l, 60 * S + 20000);
	CHECK(d.verdict == SESSION_EVICT && same_peer(&t[d.victim].peer, &f));
}

/* A flood from ever new addresses displaces half-open sessions only. */
TEST(flood_from_many_peers)
{
	const session_limits l = {.max = 8, .max_per_peer = 2, .ttl_us = lim.ttl_us, .min_idle_us = 60 * S};
	session_meta t[8];
	size_t n = 0;
	t[n++] = established(1, 0);
	t[n++] = established(2, 0);
	for (unsigned i = 0; i < 5000; i++) {
		session_peer p = peer(100 + i);
		session_decision d = session_admit(t, n, &p, &l, 10 + i);
		CHECK(d.verdict == SESSION_ADMIT || d.verdict == SESSION_EVICT);
		if (d.verdict == SESSION_EVICT)
			CHECK(!t[d.victim].established);
		n = apply(t, n, d, half_open(100 + i, 10 + i));
	}
	CHECK(n == 8 && t[0].established && t[1].established);
}

/* The lockout this policy used to allow: behind one address (every client
 * of a loopback server is 127.0.0.1), a client completes handshakes for
 * 10 s, ten a second, and walks away. A client on that address that makes
 * a call every 10 s keeps its session throughout; a newcomer is refused
 * (Retry-After at most min_idle, never the TTL) until the flood's sessions
 * have idled min_idle, then seated by displacing the flood's oldest. A
 * half-open session on another address is untouched. */
TEST(walk_away_flood_does_not_lock_out)
{
	const session_limits l = {.max = 64, .max_per_peer = 16, .ttl_us = lim.ttl_us, .min_idle_us = 60 * S};
	session_meta t[64];
	size_t n = 0;
	t[n++] = established(1, 0); /* the working client, index 0 until something moves */
	t[n++] = half_open(2, 0);
	session_peer p1 = peer(1), p2 = peer(2);
	const int64_t tick = S / 10;
	size_t flood_seated = 0, refused = 0;
	int64_t seated_at = -1;
	for (int64_t now = tick; now <= 200 * S && seated_at < 0; now += tick) {
		if (now % (10 * S) ==
		    0) /* the working client's call (the table's first of peer 1, established) */
			for (size_t i = 0; i < n; i++)
				if (same_peer(&t[i].peer, &p1) && t[i].established &&
				    t[i].last_used_us == now - 10 * S) {
					t[i].last_used_us = now;
					break;
				}
		session_decision d = session_admit(t, n, &p1, &l, now);
		if (now <= 10 * S) { /* the flood's handshake */
			if (d.verdict == SESSION_REFUSE_PEER) {
				CHECK(d.retry_after_s >= 1 && d.retry_after_s <= 60);
				continue;
			}
			CHECK(d.verdict != SESSION_EVICT || !t[d.victim].established);
			flood_seated++;
			n = apply(t, n, d, established(1, now));
			continue;
		}
		if (now % S) /* a newcomer tries once a second */
			continue;
		if (d.verdict == SESSION_REFUSE_PEER) {
			refused++;
			CHECK(d.retry_after_s >= 1 && d.retry_after_s <= 60);
			continue;
		}
		CHECK(d.verdict == SESSION_EVICT);
		CHECK(t[d.victim].established && t[d.victim].last_used_us != now - now % (10 * S));
		seated_at = now;
		n = apply(t, n, d, half_open(1, now));
	}
	CHECK(flood_seated == 15);			  /* its share, less the working client's */
	CHECK(seated_at > 60 * S && seated_at <= 71 * S); /* when the flood's first went stale */
	CHECK(refused >= 49);
	size_t working = 0, other = 0;
	for (size_t i = 0; i < n; i++) {
		working +=
		    same_peer(&t[i].peer, &p1) && t[i].established && t[i].last_used_us % (10 * S) == 0;
		other += same_peer(&t[i].peer, &p2);
	}
	CHECK(working == 1 && other == 1);
}

/* A flood that goes on (handshakes all the while, from the address of a
 * client that works every 10 s) recycles its own stale sessions: the
 * working client is never the victim. */
TEST(ongoing_flood_keeps_working_client)
{
	const session_limits l = {.max = 64, .max_per_peer = 8, .ttl_us = lim.ttl_us, .min_idle_us = 60 * S};
	session_meta t[64];
	size_t n = 0;
	t[n++] = established(1, 0);
	session_peer p1 = peer(1);
	unsigned evicted = 0;
	for (int64_t now = S; now <= 3600 * S; now += S) {
		if (now % (10 * S) == 0)
			for (size_t i = 0; i < n; i++)
				if (t[i].last_used_us == now - 10 * S && t[i].last_used_us % (10 * S) == 0 &&
				    t[i].established) {
					t[i].last_used_us = now;
					break;
				}
		session_decision d =
		    session_admit(t, n, &p1, &l, now + 1); /* +1: not a working client's time */
		if (d.verdict == SESSION_EVICT) {
			CHECK(t[d.victim].last_used_us % (10 * S) != 0); /* one of the flood's */
			evicted++;
		}
		n = apply(t, n, d, established(1, now + 1));
	}
	CHECK(evicted > 100);
	bool kept = false;
	for (size_t i = 0; i < n; i++)
		kept |= t[i].last_used_us == 3600 * S;
	CHECK(kept);
}

/* What the newcomer may evict, in the order the policy tries: its own
 * half-open, anyone's half-open (a full table only), its own stale
 * established, anyone's (a full table only). Returns the class (0 to 3) of
 * session i for the newcomer p, or -1 if it may not be evicted. */
static int victim_class(const session_meta *s, const session_peer *p, const session_limits *l, int64_t now,
			bool share_full)
{
	bool own = same_peer(&s->peer, p);
	if (s->active || (share_full && !own))
		return -1;
	if (!s->established)
		return own ? 0 : 1;
	if (now - s->last_used_us < l->min_idle_us)
		return -1;
	return own ? 2 : 3;
}

/* The invariants over random tables: a busy or a fresh established session
 * is never the victim; eviction only for a full table or a full share, of
 * the newcomer's own at a full share; the victim is the least recently
 * used of the first class that has one; a refusal only when nothing is
 * evictable, with the retry computed here independently. */
TEST(random_tables_keep_invariants)
{
	unsigned seed = 12345, evicts = 0, evicts_est = 0, evicts_other_est = 0, refusals = 0, admits = 0;
	const int64_t q = S / 4, now = 400 * q; /* times in quarter seconds */
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
	for (int round = 0; round < 40000; round++) {
		session_limits l = {.max = 1 + RND() % 12,
				    .max_per_peer = 1 + RND() % 6,
				    .ttl_us = 400 * q,
				    .min_idle_us = (RND() % 401) * q};
		session_meta t[12];
		size_t n = RND() % (l.max + 1);
		for (size_t i = 0; i < n; i++) {
			t[i] = (session_meta){.last_used_us = (RND() % 400) * q,
					      .active = RND() % 4 == 0,
					      .established = RND() % 2,
					      .peer = peer(RND() % 4)};
		}
		session_peer p = peer(RND() % 5);
		session_decision d = session_admit(t, n, &p, &l, now);
		size_t mine = 0;
		for (size_t i = 0; i < n; i++)
			mine += same_peer(&t[i].peer, &p);
		bool share_full = mine >= l.max_per_peer, full = n >= l.max;
		int first = 4; /* the first class with an evictable session */
		for (size_t i = 0; i < n; i++) {
			int c = victim_class(&t[i], &p, &l, now, share_full);
			if (c >= 0 && c < first)
				first = c;
		}
		/* The retry: the first idle one that counts against it to go stale. */
		int64_t left = -1;
		for (size_t i = 0; i < n; i++) {
			if (t[i].active || (share_full && !same_peer(&t[i].peer, &p)))
				continue;
			int64_t w = t[i].established ? t[i].last_used_us + l.min_idle_us - now : 0;
			if (left < 0 || w < left)
				left = w < 0 ? 0 : w;
		}
		unsigned retry = left < 0    ? SESSION_RETRY_BUSY_S
				 : left <= S ? 1
					     : (unsigned)((left + S - 1) / S);
		switch (d.verdict) {
		case SESSION_ADMIT:
			admits++;
			CHECK(!share_full && !full);
			break;
		case SESSION_EVICT:
			evicts++;
			CHECK(share_full || full);
			CHECK(d.victim < n && !t[d.victim].active);
			CHECK(victim_class(&t[d.victim], &p, &l, now, share_full) == first);
			if (share_full)
				CHECK(same_peer(&t[d.victim].peer, &p));
			if (t[d.victim].established) {
				evicts_est++;
				CHECK(now - t[d.victim].last_used_us >= l.min_idle_us);
				evicts_other_est += !same_peer(&t[d.victim].peer, &p);
			}
			for (size_t i = 0; i < n; i++) /* the least recently used of its class */
				if (victim_class(&t[i], &p, &l, now, share_full) == first)
					CHECK(t[i].last_used_us >= t[d.victim].last_used_us);
			break;
		case SESSION_REFUSE_PEER:
			refusals++;
			CHECK(share_full && first == 4 && d.retry_after_s == retry);
			break;
		case SESSION_REFUSE_FULL:
			refusals++;
			CHECK(!share_full && full && first == 4 && d.retry_after_s == retry);
			break;
		}
	}
#undef RND
	/* Not vacuous: every outcome came up often. */
	CHECK(evicts > 1000 && evicts_est > 1000 && evicts_other_est > 100 && refusals > 1000 &&
	      admits > 1000);
}
