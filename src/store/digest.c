/* SHA-256 through libcrypto's low-level interface: EVP_sha256's first use
 * fetches a provider and loads the OpenSSL configuration (about 1 ms of
 * every CLI call that reads a snapshot manifest, e.g. a restore: measured);
 * SHA256_* runs the same assembly without it (as api/pool.c's key does). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include "store/digest.h"

#include <errno.h>
#include <openssl/sha.h>
#include <string.h>
#include <unistd.h>

struct store_hasher {
	SHA256_CTX ctx;
	uint64_t bytes;
};

store_hasher *store_hasher_new(sbx_err **err)
{
	store_hasher *h = calloc(1, sizeof(*h));
	if (!h) {
		err_errnum(err, ENOMEM, "sha256");
		return NULL;
	}
	if (SHA256_Init(&h->ctx) != 1) {
		store_hasher_free(h);
		err_set(err, SBX_E_INTERNAL, EIO, "sha256: libcrypto could not initialise a digest");
		return NULL;
	}
	return h;
}

void store_hasher_free(store_hasher *h)
{
	if (!h)
		return;
	explicit_bzero(h, sizeof(*h));
	free(h);
}

int store_hasher_update(store_hasher *h, const void *data, size_t len, sbx_err **err)
{
	if (len && SHA256_Update(&h->ctx, data, len) != 1)
		return err_set(err, SBX_E_INTERNAL, EIO, "sha256: update failed");
	h->bytes += len;
	return 0;
}

uint64_t store_hasher_bytes(const store_hasher *h)
{
	return h->bytes;
}

int store_hasher_final(store_hasher *h, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	uint8_t raw[SHA256_DIGEST_LENGTH];
	_Static_assert(SHA256_DIGEST_LENGTH == STORE_DIGEST_RAW_LEN, "sha256 is 32 bytes");
	if (SHA256_Final(raw, &h->ctx) != 1)
		return err_set(err, SBX_E_INTERNAL, EIO, "sha256: final failed");
	store_digest_format(raw, ret);
	return 0;
}

int store_digest_buf(const void *data, size_t len, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	int r = store_hasher_update(h, data, len, err);
	if (r < 0)
		return r;
	return store_hasher_final(h, ret, err);
}

int store_digest_fd(int fd, char ret[STORE_DIGEST_SIZE], uint64_t *ret_size, sbx_err **err)
{
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return err_ret(err);
	_cleanup_free_ char *buf = malloc(1 << 16);
	if (!buf)
		return err_errnum(err, ENOMEM, "sha256");
	for (;;) {
		ssize_t n = RETRY_EINTR(read(fd, buf, 1 << 16));
		if (n < 0)
			return err_errno(err, "read");
		if (n == 0)
			break;
		int r = store_hasher_update(h, buf, (size_t)n, err);
		if (r < 0)
			return r;
	}
	char d[STORE_DIGEST_SIZE];
	int r = store_hasher_final(h, d, err);
	if (r < 0)
		return r;
	memcpy(ret, d, STORE_DIGEST_SIZE);
	if (ret_size)
		*ret_size = store_hasher_bytes(h);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool store_digest_hex_valid(const char *hex)
{
	if (!hex)
		return false;
	for (size_t i = 0; i < STORE_DIGEST_HEX_LEN; i++)
		if (hexval(hex[i]) < 0) /* also stops at a NUL */
			return false;
	return hex[STORE_DIGEST_HEX_LEN] == 0;
}

bool store_digest_valid(const char *s)
{
	return s && strncmp(s, STORE_DIGEST_PREFIX, 7) == 0 && store_digest_hex_valid(s + 7);
}

const char *store_digest_hex(const char *s)
{
	return store_digest_valid(s) ? s + 7 : NULL;
}

static const char *prefix_hex(const char *ref)
{
	if (!ref)
		return NULL;
	const char *hex = strncmp(ref, STORE_DIGEST_PREFIX, 7) == 0 ? ref + 7 : ref;
	size_t n = 0;
	while (hex[n] && hexval(hex[n]) >= 0)
		n++;
	return !hex[n] && n >= STORE_DIGEST_PREFIX_MIN && n <= STORE_DIGEST_HEX_LEN ? hex : NULL;
}

bool store_digest_prefix_valid(const char *ref)
{
	return prefix_hex(ref) != NULL;
}

int store_digest_prefix_match(char *const *all, const char *ref, const char **ret_match)
{
	const char *hex = prefix_hex(ref), *match = NULL;
	if (!hex)
		return 0;
	size_t hl = strlen(hex);
	int n = 0;
	for (char *const *p = all; p && *p && n < 2; p++) {
		const char *h = store_digest_hex(*p);
		if (h && strncmp(h, hex, hl) == 0)
			match = *p, n++;
	}
	if (n == 1 && ret_match)
		*ret_match = match;
	return n;
}

void store_digest_format(const uint8_t raw[STORE_DIGEST_RAW_LEN], char ret[STORE_DIGEST_SIZE])
{
	static const char hx[] = "0123456789abcdef";
	memcpy(ret, STORE_DIGEST_PREFIX, 7);
	for (size_t i = 0; i < STORE_DIGEST_RAW_LEN; i++) {
		ret[7 + 2 * i] = hx[raw[i] >> 4];
		ret[7 + 2 * i + 1] = hx[raw[i] & 15];
	}
	ret[STORE_DIGEST_LEN] = 0;
}

int store_digest_parse(const char *s, uint8_t ret[STORE_DIGEST_RAW_LEN])
{
	if (!store_digest_valid(s))
		return -EINVAL;
	for (size_t i = 0; i < STORE_DIGEST_RAW_LEN; i++)
		ret[i] = (uint8_t)(hexval(s[7 + 2 * i]) << 4 | hexval(s[7 + 2 * i + 1]));
	return 0;
}
