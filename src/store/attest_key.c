/* Ed25519 keys and signatures through libcrypto (see attest_key.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <dlfcn.h>
#include <pthread.h>

#include "store/attest_key.h"
#include "util/fd.h"
#include "util/macro.h"

/* libcrypto's EVP, PEM and BIO are opened on first use (dlopen), not
 * linked: the CLI links libcrypto statically for SHA-256 only. Linked, the
 * key code pulled in the provider, ASN.1 and X.509 tables (340 KiB of
 * pointers), which a position-independent executable relocates, page by
 * page, at every start of every sbx command. */
#define CK_SYMS(X)                                                                                           \
	X(BIO_ctrl)                                                                                          \
	X(BIO_free)                                                                                          \
	X(BIO_new)                                                                                           \
	X(BIO_new_mem_buf)                                                                                   \
	X(BIO_s_mem)                                                                                         \
	X(CRYPTO_free)                                                                                       \
	X(ERR_clear_error)                                                                                   \
	X(EVP_DigestSign)                                                                                    \
	X(EVP_DigestSignInit)                                                                                \
	X(EVP_DigestVerify)                                                                                  \
	X(EVP_DigestVerifyInit)                                                                              \
	X(EVP_MD_CTX_free)                                                                                   \
	X(EVP_MD_CTX_new)                                                                                    \
	X(EVP_PKEY_CTX_free)                                                                                 \
	X(EVP_PKEY_CTX_new_id)                                                                               \
	X(EVP_PKEY_free)                                                                                     \
	X(EVP_PKEY_get0_type_name)                                                                           \
	X(EVP_PKEY_get_id)                                                                                   \
	X(EVP_PKEY_keygen)                                                                                   \
	X(EVP_PKEY_keygen_init)                                                                              \
	X(EVP_PKEY_new_raw_private_key)                                                                      \
	X(EVP_PKEY_new_raw_public_key)                                                                       \
	X(OPENSSL_cleanse)                                                                                   \
	X(PEM_read_bio_PUBKEY)                                                                               \
	X(PEM_read_bio_PrivateKey)                                                                           \
	X(PEM_write_bio_PUBKEY)                                                                              \
	X(PEM_write_bio_PrivateKey)                                                                          \
	X(i2d_PUBKEY)

static struct {
#define CK_FIELD(f) __typeof__(&f) f;
	CK_SYMS(CK_FIELD)
#undef CK_FIELD
	char err[256];
	bool ok;
} ck;
static pthread_once_t ck_once = PTHREAD_ONCE_INIT;

static void ck_load(void)
{
	static const char *const names[] = {"libcrypto.so.3", "libcrypto.so"};
	void *h = NULL;
	for (size_t i = 0; !h && i < ARRAY_SIZE(names); i++)
		h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(ck.err, sizeof(ck.err), "%s", dlerror());
		return;
	}
#define CK_SYM(f)                                                                                            \
	if (!(*(void **)&ck.f = dlsym(h, #f))) {                                                             \
		snprintf(ck.err, sizeof(ck.err), "libcrypto lacks %s", #f);                                  \
		return;                                                                                      \
	}
	CK_SYMS(CK_SYM)
#undef CK_SYM
	ck.ok = true;
}

/* 0, or -1 with *err (when err is given) saying what is missing. */
static int ck_open(sbx_err **err)
{
	pthread_once(&ck_once, ck_load);
	if (ck.ok)
		return 0;
	return err ? err_set(err, SBX_E_UNAVAILABLE, ELIBACC, "libcrypto: %s (install libssl3)", ck.err) : -1;
}

#define CK_USE(f) ck.f
#define BIO_ctrl CK_USE(BIO_ctrl)
#define BIO_free CK_USE(BIO_free)
#define BIO_new CK_USE(BIO_new)
#define BIO_new_mem_buf CK_USE(BIO_new_mem_buf)
#define BIO_s_mem CK_USE(BIO_s_mem)
#define CRYPTO_free CK_USE(CRYPTO_free)
#define ERR_clear_error CK_USE(ERR_clear_error)
#define EVP_DigestSign CK_USE(EVP_DigestSign)
#define EVP_DigestSignInit CK_USE(EVP_DigestSignInit)
#define EVP_DigestVerify CK_USE(EVP_DigestVerify)
#define EVP_DigestVerifyInit CK_USE(EVP_DigestVerifyInit)
#define EVP_MD_CTX_free CK_USE(EVP_MD_CTX_free)
#define EVP_MD_CTX_new CK_USE(EVP_MD_CTX_new)
#define EVP_PKEY_CTX_free CK_USE(EVP_PKEY_CTX_free)
#define EVP_PKEY_CTX_new_id CK_USE(EVP_PKEY_CTX_new_id)
#define EVP_PKEY_free CK_USE(EVP_PKEY_free)
#define EVP_PKEY_get0_type_name CK_USE(EVP_PKEY_get0_type_name)
#define EVP_PKEY_get_id CK_USE(EVP_PKEY_get_id)
#define EVP_PKEY_keygen CK_USE(EVP_PKEY_keygen)
#define EVP_PKEY_keygen_init CK_USE(EVP_PKEY_keygen_init)
#define EVP_PKEY_new_raw_private_key CK_USE(EVP_PKEY_new_raw_private_key)
#define EVP_PKEY_new_raw_public_key CK_USE(EVP_PKEY_new_raw_public_key)
#define OPENSSL_cleanse CK_USE(OPENSSL_cleanse)
#define PEM_read_bio_PUBKEY CK_USE(PEM_read_bio_PUBKEY)
#define PEM_read_bio_PrivateKey CK_USE(PEM_read_bio_PrivateKey)
#define PEM_write_bio_PUBKEY CK_USE(PEM_write_bio_PUBKEY)
#define PEM_write_bio_PrivateKey CK_USE(PEM_write_bio_PrivateKey)
#define i2d_PUBKEY CK_USE(i2d_PUBKEY)

void attest_key_free(attest_key *k)
{
	if (k) /* a key exists only once libcrypto is loaded */
		EVP_PKEY_free(k);
}

static void bio_freep(BIO **b)
{
	if (*b)
		BIO_free(*b);
}
#define _cleanup_bio_ _cleanup_(bio_freep)

static void md_ctx_freep(EVP_MD_CTX **c)
{
	if (*c)
		EVP_MD_CTX_free(*c);
}

/* Never prompt for a pass phrase (the default callback reads the terminal):
 * an encrypted key fails to load, and says so. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag;
	*(bool *)u = true;
	return -1;
}

int attest_key_id(const attest_key *k, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	if (ck_open(err) < 0)
		return -1;
	unsigned char *der = NULL;
	int n = i2d_PUBKEY((EVP_PKEY *)k, &der);
	if (n <= 0)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "key id: cannot encode the public key");
	int r = store_digest_buf(der, (size_t)n, ret, err);
	OPENSSL_free(der);
	return r;
}

char *attest_key_public_pem(const attest_key *k)
{
	if (ck_open(NULL) < 0)
		return NULL;
	_cleanup_bio_ BIO *b = BIO_new(BIO_s_mem());
	if (!b || PEM_write_bio_PUBKEY(b, (EVP_PKEY *)k) != 1)
		return NULL;
	char *p;
	long n = BIO_get_mem_data(b, &p);
	return n > 0 ? strndup(p, (size_t)n) : NULL;
}

/* Writes data to a new file (O_EXCL); on failure the file is removed. */
static int write_new(const char *path, const char *data, size_t len, mode_t mode, sbx_err **err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return errno == EEXIST ? err_set(err, SBX_E_CONFLICT, EEXIST,
						 "'%s' exists: refusing to overwrite a key", path)
				       : err_errno(err, "create '%s'", path);
	/* The mode asked for, whatever the umask. */
	if (fchmod(fd, mode) < 0 || fd_write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		int q = err_errno(err, "write '%s'", path);
		close(fd);
		unlink(path);
		return q;
	}
	close(fd);
	return 0;
}

int attest_keygen(const char *path, char ret_keyid[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_free_ char *pub = NULL;
	if (ck_open(err) < 0)
		return -1;
	if (asprintf(&pub, "%s.pub", path) < 0)
		return err_oom(err);
	struct stat st;
	if (lstat(path, &st) == 0)
		return err_set(err, SBX_E_CONFLICT, EEXIST, "'%s' exists: refusing to overwrite a key", path);
	if (lstat(pub, &st) == 0)
		return err_set(err, SBX_E_CONFLICT, EEXIST, "'%s' exists: refusing to overwrite a key", pub);
	_cleanup_attest_key_ attest_key *k = NULL;
	EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	int ok = pc && EVP_PKEY_keygen_init(pc) == 1 && EVP_PKEY_keygen(pc, &k) == 1;
	EVP_PKEY_CTX_free(pc);
	if (!ok)
		return err_set(err, SBX_E_INTERNAL, EIO, "generate an Ed25519 key: libcrypto failed");
	_cleanup_bio_ BIO *priv_bio = BIO_new(BIO_s_mem());
	if (!priv_bio || PEM_write_bio_PrivateKey(priv_bio, k, NULL, NULL, 0, NULL, NULL) != 1)
		return err_set(err, SBX_E_INTERNAL, EIO, "encode the private key as PEM");
	char *priv_pem;
	long priv_len = BIO_get_mem_data(priv_bio, &priv_pem);
	_cleanup_free_ char *pub_pem = attest_key_public_pem(k);
	char kid[STORE_DIGEST_SIZE];
	if (!pub_pem || priv_len <= 0)
		return err_set(err, SBX_E_INTERNAL, EIO, "encode the key as PEM");
	if (attest_key_id(k, kid, err) < 0)
		return -1;
	if (write_new(path, priv_pem, (size_t)priv_len, 0600, err) < 0)
		return -1;
	if (write_new(pub, pub_pem, strlen(pub_pem), 0644, err) < 0) {
		unlink(path);
		return -1;
	}
	OPENSSL_cleanse(priv_pem, (size_t)priv_len);
	memcpy(ret_keyid, kid, sizeof(kid));
	return 0;
}

/* The file's bytes, at most ATTEST_KEY_FILE_MAX, and its mode. */
static int read_key_file(const char *path, char **ret, size_t *ret_len, mode_t *ret_mode, sbx_err **err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? err_set(err, SBX_E_NOT_FOUND, ENOENT, "key '%s': no such file", path)
				       : err_errno(err, "key '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return err_errno(err, "key '%s'", path);
	if (!S_ISREG(st.st_mode))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "key '%s': not a regular file", path);
	int r = fd_read_all(fd, ATTEST_KEY_FILE_MAX, ret, ret_len);
	if (r < 0)
		return r == -EFBIG ? err_set(err, SBX_E_INVALID_ARGUMENT, EFBIG,
					     "key '%s': not a PEM key (too large)", path)
				   : err_errnum(err, -r, "key '%s'", path);
	*ret_mode = st.st_mode;
	return 0;
}

static int check_ed25519(const char *path, attest_key *k, sbx_err **err)
{
	if (EVP_PKEY_id(k) == EVP_PKEY_ED25519)
		return 0;
	const char *name = EVP_PKEY_get0_type_name(k);
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "key '%s': a key of type %s, not Ed25519", path,
		       name ? name : "non-Ed25519");
}

int attest_key_load_private(const char *path, attest_key **ret, sbx_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	mode_t mode = 0;
	if (ck_open(err) < 0 || read_key_file(path, &buf, &len, &mode, err) < 0)
		return -1;
	bool asked = false;
	_cleanup_bio_ BIO *b = BIO_new_mem_buf(buf, (int)len);
	attest_key *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, &asked) : NULL;
	ERR_clear_error();
	if (!k) {
		if (asked)
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EINVAL,
			    "key '%s': encrypted with a pass phrase (not supported: use sbx keygen)", path);
		_cleanup_bio_ BIO *b2 = BIO_new_mem_buf(buf, (int)len);
		attest_key *pub = b2 ? PEM_read_bio_PUBKEY(b2, NULL, no_passphrase, &asked) : NULL;
		ERR_clear_error();
		OPENSSL_cleanse(buf, len);
		if (pub) {
			attest_key_free(pub);
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "key '%s': a public key; signing needs the private key", path);
		}
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "key '%s': not a PEM private key", path);
	}
	OPENSSL_cleanse(buf, len);
	_cleanup_attest_key_ attest_key *kk = k;
	if (mode & 077)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EPERM,
		    "key '%s': permissions %04o are too open: a private key must be readable by its owner "
		    "only (chmod 600 '%s')",
		    path, (unsigned)(mode & 07777), path);
	if (check_ed25519(path, kk, err) < 0)
		return -1;
	*ret = TAKE_PTR(kk);
	return 0;
}

int attest_key_load_public(const char *path, attest_key **ret, sbx_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	mode_t mode = 0;
	if (ck_open(err) < 0 || read_key_file(path, &buf, &len, &mode, err) < 0)
		return -1;
	bool asked = false;
	_cleanup_bio_ BIO *b = BIO_new_mem_buf(buf, (int)len);
	_cleanup_attest_key_ attest_key *k = b ? PEM_read_bio_PUBKEY(b, NULL, no_passphrase, &asked) : NULL;
	ERR_clear_error();
	if (!k) {
		bool is_private = strstr(buf, "PRIVATE KEY-----") != NULL;
		OPENSSL_cleanse(buf, len);
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "key '%s': %s", path,
			       is_private ? "a private key; verifying takes the public key (FILE.pub)"
					  : "not a PEM public key");
	}
	if (check_ed25519(path, k, err) < 0)
		return -1;
	*ret = TAKE_PTR(k);
	return 0;
}

attest_key *attest_key_from_raw(const unsigned char raw[32], bool is_private)
{
	if (ck_open(NULL) < 0)
		return NULL;
	return is_private ? EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, raw, 32)
			  : EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, 32);
}

int attest_sign(attest_key *k, const void *msg, size_t len, unsigned char ret_sig[ATTEST_SIG_LEN],
		sbx_err **err)
{
	if (ck_open(err) < 0)
		return -1;
	_cleanup_(md_ctx_freep) EVP_MD_CTX *c = EVP_MD_CTX_new();
	size_t n = ATTEST_SIG_LEN;
	/* Ed25519 is one-shot: no digest (NULL), the whole message at once. */
	if (!c || EVP_DigestSignInit(c, NULL, NULL, NULL, k) != 1 ||
	    EVP_DigestSign(c, ret_sig, &n, msg, len) != 1 || n != ATTEST_SIG_LEN) {
		ERR_clear_error();
		return err_set(err, SBX_E_INTERNAL, EIO, "sign: libcrypto failed");
	}
	return 0;
}

int attest_verify_sig(attest_key *k, const void *msg, size_t len, const void *sig, size_t sig_len,
		      sbx_err **err)
{
	if (sig_len != ATTEST_SIG_LEN)
		return 0;
	if (ck_open(err) < 0)
		return -1;
	_cleanup_(md_ctx_freep) EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (!c || EVP_DigestVerifyInit(c, NULL, NULL, NULL, k) != 1) {
		ERR_clear_error();
		return err_set(err, SBX_E_INTERNAL, EIO, "verify: libcrypto failed");
	}
	int r = EVP_DigestVerify(c, sig, sig_len, msg, len);
	ERR_clear_error();
	return r == 1 ? 1 : 0;
}
