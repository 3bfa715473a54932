/* A byte relay between two connected stream sockets, both ways at once
 * (a proxied WebSocket or any Upgrade'd connection): what one end sends the
 * other receives, in order, until both directions have ended. An end that
 * stops sending (EOF) is passed on as a half-close (shutdown SHUT_WR) of the
 * other, so a request-then-close protocol works; an error on either end ends
 * both. Each direction has its own buffer and is only read while that
 * buffer is empty, so a slow reader on one side holds back its sender and
 * nothing else (no unbounded memory). */
#pragma once
#include <stddef.h>

#define RELAY_BUF (64 << 10)

/* Relays between a and b (borrowed; made non-blocking for the relay) until
 * both directions are done. a_first (a_len bytes) is sent to b first, and
 * b_first to a: bytes already read from one end before the relay began.
 * 0 when both ended cleanly, -errno on an error (the relay stops then). */
int relay_run(int a, int b, const char *a_first, size_t a_len, const char *b_first, size_t b_len);
