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

/* Whether s may give way to a newcomer at time now: idle, and half-open
 * (of the kind wanted: established false) or established and idle for
 * min_idle_us (established true). */
static bool evictable(const session_meta *s, bool established, const session_limits *lim, int64_t now_us)
{
	if (s->active || s->established != established)
		return false;
	return !established || now_us - s->last_used_us >= lim->min_idle_us;
}

/* The least recently used session of that kind that may give way (of
 * peer, if given); n if there is none. */
static size_t lru(const session_meta *t, size_t n, const session_peer *peer, bool established,
		  const session_limits *lim, int64_t now_us)
{
	size_t best = n;
	for (size_t i = 0; i < n; i++) {
		if (!evictable(&t[i], established, lim, now_us) || (peer && !peer_eq(&t[i].peer, peer)))
			continue;
		if (best == n || t[i].last_used_us < t[best].last_used_us)
			best = i;
	}
	return best;
}

/* Seconds until the first idle session (of peer, if given) may give way:
 * an idle half-open one may now, an established one once it has idled
 * min_idle_us. At least 1 (a refusal saw none that may give way now). */
static unsigned retry_after(const session_meta *t, size_t n, const session_peer *peer,
			    const session_limits *lim, int64_t now_us)
{
	int64_t first = -1;
	for (size_t i = 0; i < n; i++) {
		if (t[i].active || (peer && !peer_eq(&t[i].peer, peer)))
			continue;
		int64_t left = t[i].established ? t[i].last_used_us + lim->min_idle_us - now_us : 0;
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

static session_decision evict(size_t victim)
{
	return (session_decision){.verdict = SESSION_EVICT, .victim = victim};
}

session_decision session_admit(const session_meta *t, size_t n, const session_peer *peer,
			       const session_limits *lim, int64_t now_us)
{
	size_t mine = 0, v;
	for (size_t i = 0; i < n; i++)
		mine += peer_eq(&t[i].peer, peer);
	if (mine >= lim->max_per_peer) { /* its own sessions only, half-open first */
		if ((v = lru(t, n, peer, false, lim, now_us)) < n ||
		    (v = lru(t, n, peer, true, lim, now_us)) < n)
			return evict(v);
		return (session_decision){.verdict = SESSION_REFUSE_PEER,
					  .retry_after_s = retry_after(t, n, peer, lim, now_us)};
	}
	if (n < lim->max)
		return (session_decision){.verdict = SESSION_ADMIT};
	/* Full: half-open before established, its own before anyone's. */
	if ((v = lru(t, n, peer, false, lim, now_us)) < n || (v = lru(t, n, NULL, false, lim, now_us)) < n ||
	    (v = lru(t, n, peer, true, lim, now_us)) < n || (v = lru(t, n, NULL, true, lim, now_us)) < n)
		return evict(v);
	return (session_decision){.verdict = SESSION_REFUSE_FULL,
				  .retry_after_s = retry_after(t, n, NULL, lim, now_us)};
}
