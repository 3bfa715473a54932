/* The eviction policy of MCP HTTP sessions (see session_policy.h). */
#include "server/session_policy.h"

#include <limits.h>
#include <netinet/in.h>
#include <string.h>

void session_peer_of(const struct sockaddr *sa, session_peer *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (sa && sa->sa_family == AF_INET) {
		ret->addr[10] = ret->addr[11] = 0xff;
		memcpy(ret->addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa && sa->sa_family == AF_INET6)
		memcpy(ret->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static bool peer_eq(const session_peer *a, const session_peer *b)
{
	return memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

bool session_expired(const session_meta *s, int64_t now_us, int64_t ttl_us)
{
	return s->active == 0 && now_us - s->last_used_us > ttl_us;
}

/* The least recently used idle half-open session (of peer, if given);
 * n if there is none. */
static size_t lru_half_open(const session_meta *t, size_t n, const session_peer *peer)
{
	size_t best = n;
	for (size_t i = 0; i < n; i++) {
		if (t[i].active || t[i].established || (peer && !peer_eq(&t[i].peer, peer)))
			continue;
		if (best == n || t[i].last_used_us < t[best].last_used_us)
			best = i;
	}
	return best;
}

/* Seconds until the first idle session (of peer, if given) expires. */
static unsigned retry_after(const session_meta *t, size_t n, const session_peer *peer,
			    const session_limits *lim, int64_t now_us)
{
	int64_t first = -1;
	for (size_t i = 0; i < n; i++) {
		if (t[i].active || (peer && !peer_eq(&t[i].peer, peer)))
			continue;
		int64_t left = t[i].last_used_us + lim->ttl_us - now_us;
		if (left < 0)
			left = 0;
		if (first < 0 || left < first)
			first = left;
	}
	if (first < 0)
		return SESSION_RETRY_BUSY_S;
	int64_t s = (first + 999999) / 1000000;
	return s < 1 ? 1 : s > UINT_MAX ? UINT_MAX : (unsigned)s;
}

session_decision session_admit(const session_meta *t, size_t n, const session_peer *peer,
			       const session_limits *lim, int64_t now_us)
{
	size_t mine = 0;
	for (size_t i = 0; i < n; i++)
		mine += peer_eq(&t[i].peer, peer);
	if (mine >= lim->max_per_peer) {
		size_t v = lru_half_open(t, n, peer);
		if (v < n)
			return (session_decision){.verdict = SESSION_EVICT, .victim = v};
		return (session_decision){.verdict = SESSION_REFUSE_PEER,
					  .retry_after_s = retry_after(t, n, peer, lim, now_us)};
	}
	if (n < lim->max)
		return (session_decision){.verdict = SESSION_ADMIT};
	size_t v = lru_half_open(t, n, peer);
	if (v == n)
		v = lru_half_open(t, n, NULL);
	if (v < n)
		return (session_decision){.verdict = SESSION_EVICT, .victim = v};
	return (session_decision){.verdict = SESSION_REFUSE_FULL,
				  .retry_after_s = retry_after(t, n, NULL, lim, now_us)};
}
