/* Seeded byte streams for getrandom, /dev/urandom, AT_RANDOM and the
 * /proc/sys/kernel/random UUIDs. ChaCha20
 * rather than a small PRNG: programs use these bytes as keys and nonces, and
 * a stream cipher keeps them unpredictable to anyone without the seed while
 * staying exactly reproducible with it. Streams are addressed by (id, byte
 * position), so the engine never keeps generator state per consumer. */
#include <string.h>

#include "trace/ptrace_engine.h"

#define ROTL(a, b) (((a) << (b)) | ((a) >> (32 - (b))))
#define QR(a, b, c, d)                                                                                       \
	do {                                                                                                 \
		a += b, d ^= a, d = ROTL(d, 16);                                                             \
		c += d, b ^= c, b = ROTL(b, 12);                                                             \
		a += b, d ^= a, d = ROTL(d, 8);                                                              \
		c += d, b ^= c, b = ROTL(b, 7);                                                              \
	} while (0)

void determ_chacha20_block(const uint32_t key[8], uint64_t counter, uint64_t nonce, uint8_t out[64])
{
	uint32_t in[16] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574}, x[16];
	memcpy(in + 4, key, 32);
	in[12] = (uint32_t)counter;
	in[13] = (uint32_t)(counter >> 32);
	in[14] = (uint32_t)nonce;
	in[15] = (uint32_t)(nonce >> 32);
	memcpy(x, in, sizeof(x));
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++) {
		uint32_t v = x[i] + in[i];
		out[4 * i] = (uint8_t)v;
		out[4 * i + 1] = (uint8_t)(v >> 8);
		out[4 * i + 2] = (uint8_t)(v >> 16);
		out[4 * i + 3] = (uint8_t)(v >> 24);
	}
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void determ_rng_init(determ_rng *r, uint64_t seed)
{
	uint64_t s = seed;
	for (int i = 0; i < 4; i++) {
		uint64_t v = splitmix64(&s);
		r->key[2 * i] = (uint32_t)v;
		r->key[2 * i + 1] = (uint32_t)(v >> 32);
	}
}

void determ_rng_read(const determ_rng *r, uint64_t stream, uint64_t pos, void *buf, size_t n)
{
	uint8_t *p = buf, blk[64];
	while (n > 0) {
		determ_chacha20_block(r->key, pos / 64, stream, blk);
		size_t off = pos % 64, k = 64 - off < n ? 64 - off : n;
		memcpy(p, blk + off, k);
		p += k, pos += k, n -= k;
	}
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

uint64_t determ_stream(uint64_t proc_id, uint64_t kind, uint64_t index)
{
	if (proc_id == 0)
		return kind == DETERM_STREAM_GETRANDOM ? 0
		       : kind == DETERM_STREAM_URANDOM ? 1 + index
						       : ((kind - 1) << 40) + index; /* AT_RANDOM: 2^40 + i */
	return mix64(mix64(proc_id ^ (kind << 56)) + index) | (1ULL << 63);
}

uint64_t determ_proc_child_id(uint64_t parent, uint64_t n)
{
	uint64_t id = mix64(mix64(parent) + n + 1);
	return id ? id : 1;
}
