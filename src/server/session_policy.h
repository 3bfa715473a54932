/* Which MCP HTTP session gives way when a new one is asked for: the pure
 * decision over the table's metadata (no I/O, no clock, no locks; the
 * caller holds the table and passes the time). Unit-tested in
 * tests/unit/test_session_policy.c; the policy is docs/server.md "Sessions".
 *
 * A session is half-open from its initialize until the first message that
 * names it (notifications/initialized, or any request): like a SYN
 * without its ACK, it cost the client one request and proves nothing. A
 * session that has sent a message is established. Then:
 *   - a session with a request in flight (active > 0) is never evicted and
 *     never expires;
 *   - an idle session expires after ttl_us without a message
 *     (session_expired; the caller drops those first);
 *   - an idle half-open session may give way to a newcomer at once; an
 *     idle established one once it has gone min_idle_us without a message
 *     (it is stale), so a client that keeps working keeps its session;
 *   - a newcomer whose peer already holds max_per_peer sessions evicts that
 *     peer's least recently used idle half-open session, else that peer's
 *     least recently used stale established one, or is refused: never
 *     another peer's;
 *   - otherwise, when the table holds max sessions, the newcomer evicts the
 *     first there is of: its own peer's least recently used idle half-open
 *     session, anyone's, its own peer's least recently used stale
 *     established one, anyone's; or it is refused (its own first: a flood
 *     recycles its own sessions before it touches another peer's).
 * So a flood of initialize requests displaces half-open sessions first,
 * its own first, and one peer holds at most max_per_peer of the table. A
 * flood that completes its handshakes and walks away holds its share for
 * min_idle_us, not for the TTL: then newcomers displace its sessions, least
 * recently used first. A displaced client gets 404 on its next call and
 * initializes again (the MCP spec's rule; a session holds no state but its
 * id). A refused newcomer is told when a seat may be free. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* A client's address without its port: IPv4 as ::ffff:a.b.c.d, so the two
 * forms of one address are one peer; anything else (a UNIX socket) is all
 * zeroes, one peer for all. */
typedef struct session_peer {
	uint8_t addr[16];
} session_peer;

/* What the table knows of one session. */
typedef struct session_meta {
	int64_t last_used_us; /* its initialize, or its last message's end */
	unsigned active;      /* requests in flight */
	bool established;     /* has sent a message after initialize */
	session_peer peer;    /* the address its initialize came from */
} session_meta;

typedef struct session_limits {
	size_t max;	     /* sessions in total, >= 1 */
	size_t max_per_peer; /* sessions of one peer, >= 1 */
	int64_t ttl_us;	     /* an idle session expires after this, > 0 */
	int64_t min_idle_us; /* an established session used this recently is kept, 0 to ttl_us */
} session_limits;

typedef enum session_verdict {
	SESSION_ADMIT,	     /* there is room */
	SESSION_EVICT,	     /* drop the session at index victim, then admit */
	SESSION_REFUSE_PEER, /* the peer holds its share, none of it evictable */
	SESSION_REFUSE_FULL, /* the table is full, none of it evictable */
} session_verdict;

typedef struct session_decision {
	session_verdict verdict;
	size_t victim;		/* SESSION_EVICT: an index into the table */
	unsigned retry_after_s; /* SESSION_REFUSE_*: when a seat may be free, >= 1 */
} session_decision;

/* How long to wait, when refused, if every session in question is busy
 * (a call's end cannot be predicted). */
#define SESSION_RETRY_BUSY_S 5

/* peer from a socket address (NULL or an unknown family: the zero peer). */
void session_peer_of(const struct sockaddr *sa, session_peer *ret);

/* Whether s has idled past the TTL at time now (a busy one never has). */
bool session_expired(const session_meta *s, int64_t now_us, int64_t ttl_us);

/* The decision for a newcomer from peer, given the table's n sessions
 * (none of them expired: drop those first). retry_after_s on a refusal is
 * the time until the first idle session that counts against the newcomer
 * (its peer's for REFUSE_PEER, anyone's for REFUSE_FULL) becomes stale,
 * rounded up (at least 1), or SESSION_RETRY_BUSY_S if all of them are busy. */
session_decision session_admit(const session_meta *table, size_t n, const session_peer *peer,
			       const session_limits *lim, int64_t now_us);
