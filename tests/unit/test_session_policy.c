/* session_admit: which MCP HTTP session gives way for a newcomer
 * (src/server/session_policy.h). */
#include <arpa/inet.h>
#include <netinet/in.h>

#include "server/session_policy.h"
#include "unit.h"

#define S 1000000 /* a second, in microseconds */

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

static const session_limits lim = {.max = 4, .max_per_peer = 3, .ttl_us = 3600LL * S};

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

TEST(room_admits)
{
	session_meta t[] = {established(1, 0), half_open(2, 0)};
	session_peer p = peer(1);
	CHECK(session_admit(t, 0, &p, &lim, 10).verdict == SESSION_ADMIT);
	CHECK(session_admit(t, 2, &p, &lim, 10).verdict == SESSION_ADMIT);
}

/* Full: the newcomer's own oldest half-open session goes, though another
 * peer's is older and an established one older still. */
TEST(full_evicts_own_half_open_first)
{
	session_meta t[] = {established(1, 1), half_open(2, 2), half_open(3, 5), half_open(3, 4)};
	session_peer p = peer(3);
	session_decision d = session_admit(t, 4, &p, &lim, 10 * S);
	CHECK(d.verdict == SESSION_EVICT && d.victim == 3);
	/* A peer with none of its own takes the oldest half-open of anyone. */
	p = peer(9);
	d = session_admit(t, 4, &p, &lim, 10 * S);
	CHECK(d.verdict == SESSION_EVICT && d.victim == 1);
}

/* Full of established (idle) or busy sessions: refused, never evicting;
 * Retry-After is when the first idle one expires. */
TEST(full_of_established_refuses)
{
	session_meta t[] = {established(1, 100 * S), established(2, 50 * S), established(3, 70 * S),
			    half_open(4, 0)};
	t[3].active = 1; /* busy: not evictable, though half-open */
	session_peer p = peer(9);
	session_decision d = session_admit(t, 4, &p, &lim, 60 * S);
	CHECK(d.verdict == SESSION_REFUSE_FULL);
	CHECK(d.retry_after_s == 3600 - 10); /* t[1] expires at 3650 s */
	/* Less than a second left rounds up to 1, none left is still 1. */
	d = session_admit(t, 4, &p, &lim, 50 * S + lim.ttl_us - 1);
	CHECK(d.verdict == SESSION_REFUSE_FULL && d.retry_after_s == 1);
	d = session_admit(t, 4, &p, &lim, 50 * S + lim.ttl_us);
	CHECK(d.retry_after_s == 1);
	/* All busy: no expiry to predict. */
	for (size_t i = 0; i < 4; i++)
		t[i].active = 1;
	d = session_admit(t, 4, &p, &lim, 60 * S);
	CHECK(d.verdict == SESSION_REFUSE_FULL && d.retry_after_s == SESSION_RETRY_BUSY_S);
}

/* A peer at its share evicts its own half-open session even with room in
 * the table, and is refused (not another peer's) when it has none; the
 * retry counts its own sessions only. */
TEST(peer_share)
{
	session_meta t[] = {half_open(2, 0), established(1, 10 * S), half_open(1, 30 * S),
			    established(1, 20 * S)};
	session_peer p = peer(1);
	const session_limits big = {.max = 100, .max_per_peer = 3, .ttl_us = lim.ttl_us};
	session_decision d = session_admit(t, 4, &p, &big, 40 * S);
	CHECK(d.verdict == SESSION_EVICT && d.victim == 2);
	t[2].established = true;
	d = session_admit(t, 4, &p, &big, 40 * S);
	CHECK(d.verdict == SESSION_REFUSE_PEER);
	CHECK(d.retry_after_s == 3600 - 30); /* its t[1], not peer 2's older t[0] */
	/* Another peer is seated. */
	p = peer(3);
	CHECK(session_admit(t, 4, &p, &big, 40 * S).verdict == SESSION_ADMIT);
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
	const session_limits l = {.max = 16, .max_per_peer = 4, .ttl_us = lim.ttl_us};
	session_meta t[16];
	size_t n = 0;
	t[n++] = established(1, 0);
	t[n++] = half_open(3, 1);
	session_peer f = peer(2);
	for (int64_t i = 0; i < 10000; i++) {
		session_decision d = session_admit(t, n, &f, &l, 10 + i);
		CHECK(d.verdict == SESSION_ADMIT || d.verdict == SESSION_EVICT);
		n = apply(t, n, d, half_open(2, 10 + i));
	}
	size_t flood = 0, legit = 0, other = 0;
	for (size_t i = 0; i < n; i++) {
		session_peer p1 = peer(1), p3 = peer(3);
		flood += memcmp(&t[i].peer, &f, sizeof(f)) == 0;
		legit += memcmp(&t[i].peer, &p1, sizeof(f)) == 0 && t[i].established;
		other += memcmp(&t[i].peer, &p3, sizeof(f)) == 0;
	}
	CHECK(flood == 4 && legit == 1 && other == 1);
	/* An established flood from the same peer is refused past its share. */
	for (size_t i = 0; i < n; i++)
		t[i].established = true;
	session_decision d = session_admit(t, n, &f, &l, 20000);
	CHECK(d.verdict == SESSION_REFUSE_PEER && d.retry_after_s >= 1);
}

/* A flood from ever new addresses displaces half-open sessions only. */
TEST(flood_from_many_peers)
{
	const session_limits l = {.max = 8, .max_per_peer = 2, .ttl_us = lim.ttl_us};
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

/* The invariants over random tables: an established or busy session is
 * never the victim; eviction only for a full table or a full share; the
 * victim is the newcomer's own when its share is full or it has an idle
 * half-open one; a refusal only when nothing is evictable. */
TEST(random_tables_keep_invariants)
{
	unsigned seed = 12345, evicts = 0, refusals = 0, admits = 0;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
	for (int round = 0; round < 20000; round++) {
		session_limits l = {.max = 1 + RND() % 12, .max_per_peer = 1 + RND() % 6, .ttl_us = 100};
		session_meta t[12];
		size_t n = RND() % (l.max + 1);
		for (size_t i = 0; i < n; i++) {
			t[i] = (session_meta){.last_used_us = RND() % 100,
					      .active = RND() % 4 == 0,
					      .established = RND() % 2,
					      .peer = peer(RND() % 4)};
		}
		session_peer p = peer(RND() % 5);
		session_decision d = session_admit(t, n, &p, &l, 100);
		size_t mine = 0, mine_free = 0, any_free = 0;
		for (size_t i = 0; i < n; i++) {
			bool m = memcmp(&t[i].peer, &p, sizeof(p)) == 0,
			     fr = !t[i].active && !t[i].established;
			mine += m;
			mine_free += m && fr;
			any_free += fr;
		}
		bool share_full = mine >= l.max_per_peer, full = n >= l.max;
		switch (d.verdict) {
		case SESSION_ADMIT:
			admits++;
			CHECK(!share_full && !full);
			break;
		case SESSION_EVICT:
			evicts++;
			CHECK(share_full || full);
			CHECK(d.victim < n && !t[d.victim].active && !t[d.victim].established);
			if (share_full || mine_free)
				CHECK(memcmp(&t[d.victim].peer, &p, sizeof(p)) == 0);
			for (size_t i = 0; i < n; i++) /* the least recently used of its kind */
				if (!t[i].active && !t[i].established &&
				    memcmp(&t[i].peer, &t[d.victim].peer, sizeof(p)) == 0)
					CHECK(t[i].last_used_us >= t[d.victim].last_used_us);
			break;
		case SESSION_REFUSE_PEER:
			refusals++;
			CHECK(share_full && mine_free == 0 && d.retry_after_s >= 1);
			break;
		case SESSION_REFUSE_FULL:
			refusals++;
			CHECK(!share_full && full && any_free == 0 && d.retry_after_s >= 1);
			break;
		}
	}
#undef RND
	/* Not vacuous: every outcome came up often. */
	CHECK(evicts > 1000 && refusals > 1000 && admits > 1000);
}
