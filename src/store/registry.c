/* The OCI distribution client's I/O over libcurl (see registry.h; the pure
 * parsing it calls is in registry_parse.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "store/oci.h"
#include "store/progress.h"
#include "store/registry.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"

/* libcurl is opened on first use (dlopen), not linked: the CLI is otherwise
 * static, and linking libcurl made every sbx command load 30 more shared
 * objects (2.5 ms -> 7.8 ms for `sbx --version` here). */
#include <dlfcn.h>
#include <pthread.h>

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	void (*easy_reset)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	char err[256];
	bool ok;
} lc;
static pthread_once_t lc_once = PTHREAD_ONCE_INIT;

static void lc_load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(lc.err, sizeof(lc.err), "%s", dlerror());
		return;
	}
#define SYM(f, name)                                                                                         \
	if (!(*(void **)&lc.f = dlsym(h, name))) {                                                           \
		snprintf(lc.err, sizeof(lc.err), "libcurl.so.4 lacks %s", name);                             \
		return;                                                                                      \
	}
	SYM(global_init, "curl_global_init");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(easy_reset, "curl_easy_reset");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_perform, "curl_easy_perform");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
	if (lc.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(lc.err, sizeof(lc.err), "curl_global_init failed");
		return;
	}
	lc.ok = true;
}

static int lc_open(sbx_err **err)
{
	pthread_once(&lc_once, lc_load);
	return lc.ok ? 0
		     : err_set(err, SBX_E_UNAVAILABLE, ELIBACC,
			       "libcurl: %s (install libcurl4, e.g. libcurl4-openssl-dev)", lc.err);
}

#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_easy_init lc.easy_init
#define curl_easy_cleanup lc.easy_cleanup
#define curl_easy_reset lc.easy_reset
#define curl_easy_setopt lc.easy_setopt
#define curl_easy_perform lc.easy_perform
#define curl_easy_getinfo lc.easy_getinfo
#define curl_easy_strerror lc.easy_strerror
#define curl_slist_append lc.slist_append
#define curl_slist_free_all lc.slist_free_all

struct reg_client {
	CURL *curl;
	char *base; /* http[s]://host[:port] */
	char *repo;
	char *user, *pass;
	char *authz; /* "Authorization: Basic ..." or "Authorization: Bearer ..." */
	bool push;
	uint64_t sent;
};

typedef struct reg_resp {
	long status;
	char *location, *content_type, *docker_digest, *www_auth;
	int64_t content_length;
	/* body sink: memory (max bytes) or fd with a hasher */
	char *body;
	size_t len, max;
	int out_fd;
	store_hasher *h;
	int64_t limit;
	bool overflow, write_err;
	int write_errno;
} reg_resp;

static void resp_clear(reg_resp *r)
{
	free(r->location);
	free(r->content_type);
	free(r->docker_digest);
	free(r->www_auth);
	free(r->body);
	r->location = r->content_type = r->docker_digest = r->www_auth = r->body = NULL;
	r->len = 0;
}

static size_t on_header(char *buf, size_t sz, size_t n, void *ud)
{
	reg_resp *r = ud;
	size_t len = sz * n;
	/* A new status line (after a redirect or 100-continue) starts over. */
	if (len > 5 && !strncmp(buf, "HTTP/", 5)) {
		free(r->location);
		free(r->content_type);
		free(r->docker_digest);
		free(r->www_auth);
		r->location = r->content_type = r->docker_digest = r->www_auth = NULL;
		r->content_length = -1;
		/* "HTTP/1.1 200 OK": the body callback needs the status during the transfer. */
		const char *sp = memchr(buf, ' ', len);
		r->status = sp && (size_t)(sp - buf) + 4 <= len ? strtol(sp + 1, NULL, 10) : 0;
		return len;
	}
	const char *c = memchr(buf, ':', len);
	if (!c)
		return len;
	size_t kl = (size_t)(c - buf);
	const char *v = c + 1;
	const char *end = buf + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
		end--;
	char **slot = NULL;
#define IS(name) (kl == strlen(name) && !strncasecmp(buf, name, kl))
	if (IS("Location"))
		slot = &r->location;
	else if (IS("Content-Type"))
		slot = &r->content_type;
	else if (IS("Docker-Content-Digest"))
		slot = &r->docker_digest;
	else if (IS("WWW-Authenticate")) {
		/* Keep the first challenge the client understands. */
		if (r->www_auth)
			return len;
		slot = &r->www_auth;
	} else if (IS("Content-Length")) {
		char tmp[32];
		size_t vl = (size_t)(end - v) < sizeof(tmp) - 1 ? (size_t)(end - v) : sizeof(tmp) - 1;
		memcpy(tmp, v, vl);
		tmp[vl] = 0;
		r->content_length = strtoll(tmp, NULL, 10);
	}
#undef IS
	if (slot) {
		free(*slot);
		*slot = strndup(v, (size_t)(end - v));
	}
	return len;
}

static size_t on_body(char *buf, size_t sz, size_t n, void *ud)
{
	reg_resp *r = ud;
	size_t len = sz * n;
	if (r->out_fd >= 0) {
		if (r->limit >= 0 && (int64_t)len > r->limit) {
			r->overflow = true;
			return 0;
		}
		if (r->status >= 200 && r->status < 300) {
			r->limit -= (int64_t)len;
			if (store_hasher_update(r->h, buf, len, NULL) < 0 ||
			    fd_write_all(r->out_fd, buf, len) < 0) {
				r->write_err = true;
				r->write_errno = errno;
				return 0;
			}
			store_progress_add(len, 0);
			return len;
		}
		/* An error answer's body (kept small, for the message). */
	}
	size_t max = r->out_fd >= 0 ? 65536 : r->max;
	if (r->len + len > max) {
		r->overflow = true;
		return 0;
	}
	char *nb = realloc(r->body, r->len + len + 1);
	if (!nb)
		return 0;
	memcpy(nb + r->len, buf, len);
	r->body = nb;
	r->len += len;
	r->body[r->len] = 0;
	return len;
}

typedef struct reg_src {
	const char *mem;
	int fd;
	int64_t off, end, pos;
	reg_client *c;
} reg_src;

static size_t on_read(char *buf, size_t sz, size_t n, void *ud)
{
	reg_src *s = ud;
	size_t want = sz * n;
	int64_t left = s->end - s->pos;
	if (left <= 0)
		return 0;
	if ((int64_t)want > left)
		want = (size_t)left;
	if (s->mem) {
		memcpy(buf, s->mem + s->pos, want);
		s->pos += (int64_t)want;
		s->c->sent += want;
		return want;
	}
	ssize_t k;
	do
		k = pread(s->fd, buf, want, s->pos);
	while (k < 0 && errno == EINTR);
	if (k <= 0)
		return CURL_READFUNC_ABORT;
	s->pos += k;
	s->c->sent += (uint64_t)k;
	store_progress_add((uint64_t)k, 0);
	return (size_t)k;
}

static int on_seek(void *ud, curl_off_t off, int origin)
{
	reg_src *s = ud;
	if (origin != SEEK_SET)
		return CURL_SEEKFUNC_CANTSEEK;
	s->pos = s->off + off;
	return CURL_SEEKFUNC_OK;
}

/* A body to send: memory, or [off, off+len) of fd. */
typedef struct reg_body {
	const char *mem;
	int fd;
	int64_t off, len;
	const char *content_type;
	const char *content_range; /* "Content-Range: a-b" value, or NULL */
} reg_body;

static int get_token(reg_client *c, const reg_challenge *ch, sbx_err **err);

/* One request; on a 401 with a challenge, authenticates and retries once. */
static int do_request(reg_client *c, const char *method, const char *url, const char *const *hdrs,
		      const reg_body *b, reg_resp *r, sbx_err **err)
{
	for (int attempt = 0;; attempt++) {
		resp_clear(r);
		r->status = 0;
		r->content_length = -1;
		r->overflow = r->write_err = false;
		CURL *h = c->curl;
		curl_easy_reset(h);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION,
				 streq(method, "GET") || streq(method, "HEAD") ? 1L : 0L);
		curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
		/* A stalled transfer (under 1 byte/s for 120 s) fails instead of hanging. */
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 120L);
		curl_easy_setopt(h, CURLOPT_USERAGENT, "sbx");
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
		struct curl_slist *sl = NULL;
		for (const char *const *p = hdrs; p && *p; p++)
			sl = curl_slist_append(sl, *p);
		if (c->authz)
			sl = curl_slist_append(sl, c->authz);
		char ctbuf[256], crbuf[128];
		reg_src src = {0};
		if (streq(method, "HEAD"))
			curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		else if (streq(method, "GET"))
			curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
		else {
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
			src = (reg_src){.mem = b ? b->mem : NULL,
					.fd = b ? b->fd : -1,
					.off = b ? b->off : 0,
					.end = b ? b->off + b->len : 0,
					.pos = b ? b->off : 0,
					.c = c};
			if (b && b->mem)
				src.pos = src.off = 0, src.end = b->len;
			curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(h, CURLOPT_READDATA, &src);
			curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, on_seek);
			curl_easy_setopt(h, CURLOPT_SEEKDATA, &src);
			curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)(b ? b->len : 0));
			snprintf(ctbuf, sizeof(ctbuf), "Content-Type: %s",
				 b && b->content_type ? b->content_type : "application/octet-stream");
			sl = curl_slist_append(sl, ctbuf);
			if (b && b->content_range) {
				snprintf(crbuf, sizeof(crbuf), "Content-Range: %s", b->content_range);
				sl = curl_slist_append(sl, crbuf);
			}
			sl = curl_slist_append(sl, "Expect:");
		}
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, sl);
		CURLcode cc = curl_easy_perform(h);
		curl_slist_free_all(sl);
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
		if (r->write_err)
			return err_errnum(err, r->write_errno ? r->write_errno : EIO, "%s %s: write", method,
					  url);
		if (r->overflow)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EFBIG,
				       "%s %s: the registry sent more than expected", method, url);
		if (cc != CURLE_OK)
			return err_set(err, SBX_E_UNAVAILABLE, ECONNREFUSED, "%s %s: %s", method, url,
				       curl_easy_strerror(cc));
		if (r->status == 401 && attempt == 0 && r->www_auth) {
			reg_challenge ch = {0};
			if (reg_challenge_parse(r->www_auth, &ch, err) < 0)
				return err_wrap(err, "%s %s", method, url);
			int k = get_token(c, &ch, err);
			reg_challenge_clear(&ch);
			if (k < 0)
				return err_wrap(err, "%s %s", method, url);
			continue;
		}
		return 0;
	}
}

/* The registry's error answer: {"errors":[{"code","message"}]} or the status. */
static int status_error(const reg_resp *r, const char *what, sbx_err **err)
{
	_cleanup_json_ json_t *j = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
	json_t *e0 = json_array_get(json_object_get(j, "errors"), 0);
	const char *code = json_str(e0, "code"), *msg = json_str(e0, "message");
	sbx_code sc = r->status == 404			     ? SBX_E_NOT_FOUND
		      : r->status == 401 || r->status == 403 ? SBX_E_UNAVAILABLE
		      : r->status == 429 || r->status >= 500 ? SBX_E_UNAVAILABLE
							     : SBX_E_INVALID_ARGUMENT;
	int en = r->status == 404 ? ENOENT : r->status == 401 || r->status == 403 ? EACCES : EPROTO;
	if (code)
		return err_set(err, sc, en, "%s: HTTP %ld: %.60s: %.200s", what, r->status, code,
			       msg ? msg : "");
	return err_set(err, sc, en, "%s: HTTP %ld%s", what, r->status,
		       r->status == 401 ? " (unauthorized: no or wrong credentials for this registry)" : "");
}

static int set_basic(reg_client *c, sbx_err **err)
{
	if (!c->user)
		return err_set(
		    err, SBX_E_UNAVAILABLE, EACCES,
		    "the registry asks for credentials and none are configured for it (docker login, "
		    "~/.docker/config.json or $REGISTRY_AUTH_FILE)");
	_cleanup_free_ char *up = NULL;
	if (asprintf(&up, "%s:%s", c->user, c->pass) < 0)
		return err_oom(err);
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(up);
	_cleanup_free_ char *b = malloc(n / 3 * 4 + 8);
	if (!b)
		return err_oom(err);
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)up[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)up[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)up[i + 2];
		b[o++] = tab[(v >> 18) & 63];
		b[o++] = tab[(v >> 12) & 63];
		b[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		b[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	b[o] = 0;
	free(c->authz);
	c->authz = NULL;
	if (asprintf(&c->authz, "Authorization: Basic %s", b) < 0) {
		c->authz = NULL;
		return err_oom(err);
	}
	return 0;
}

/* Answers a challenge: Basic with the configured credentials, Bearer by
 * fetching a token from the realm (with them, when configured). */
static int get_token(reg_client *c, const reg_challenge *ch, sbx_err **err)
{
	if (ch->scheme == REG_AUTH_BASIC)
		return set_basic(c, err);
	_cleanup_free_ char *scope = NULL, *u1 = NULL, *url = NULL;
	if (asprintf(&scope, "repository:%s:%s", c->repo, c->push ? "pull,push" : "pull") < 0)
		return err_oom(err);
	for (const char *p = ch->realm; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "token realm has a space or a control character");
	if (ch->service && reg_url_add_query(ch->realm, "service", ch->service, &u1, err) < 0)
		return -1;
	if (reg_url_add_query(u1 ? u1 : ch->realm, "scope", scope, &url, err) < 0)
		return -1;
	free(c->authz);
	c->authz = NULL;
	if (c->user && set_basic(c, err) < 0)
		return -1;
	reg_resp r = {.out_fd = -1, .max = 1u << 20};
	/* The token request itself: no retry on 401 (that would loop). */
	CURL *h = c->curl;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
	struct curl_slist *sl = c->authz ? curl_slist_append(NULL, c->authz) : NULL;
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, sl);
	CURLcode cc = curl_easy_perform(h);
	curl_slist_free_all(sl);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
	free(c->authz);
	c->authz = NULL;
	int ret;
	if (cc != CURLE_OK)
		ret = err_set(err, SBX_E_UNAVAILABLE, ECONNREFUSED, "token from %s: %s", ch->realm,
			      curl_easy_strerror(cc));
	else if (r.status != 200)
		ret = status_error(&r, "token", err);
	else {
		_cleanup_free_ char *tok = NULL;
		ret = reg_token_parse(r.body ? r.body : "", r.len, &tok, err);
		if (ret == 0 && asprintf(&c->authz, "Authorization: Bearer %s", tok) < 0) {
			c->authz = NULL;
			ret = err_oom(err);
		}
	}
	resp_clear(&r);
	return ret;
}

static char *auth_file_path(void)
{
	const char *f = getenv("REGISTRY_AUTH_FILE");
	char *p = NULL;
	if (f && *f)
		return strdup(f);
	const char *dc = getenv("DOCKER_CONFIG");
	if (dc && *dc)
		return asprintf(&p, "%s/config.json", dc) < 0 ? NULL : p;
	const char *home = getenv("HOME");
	if (home && *home)
		return asprintf(&p, "%s/.docker/config.json", home) < 0 ? NULL : p;
	return NULL;
}

void reg_client_free(reg_client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	free(c->base);
	free(c->repo);
	if (c->pass)
		explicit_bzero(c->pass, strlen(c->pass));
	free(c->user);
	free(c->pass);
	if (c->authz)
		explicit_bzero(c->authz, strlen(c->authz));
	free(c->authz);
	free(c);
}

int reg_client_open(const reg_ref *ref, bool insecure, bool push, reg_client **ret, sbx_err **err)
{
	if (lc_open(err) < 0)
		return -1;
	_cleanup_(reg_client_freep) reg_client *c = calloc(1, sizeof(*c));
	if (!c || !(c->curl = curl_easy_init()) || !(c->repo = strdup(ref->repo)) ||
	    asprintf(&c->base, "%s://%s", insecure ? "http" : "https", ref->registry) < 0)
		return err_oom(err);
	c->push = push;
	_cleanup_free_ char *af = auth_file_path();
	if (af) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		int r = fs_read_file(af, 4u << 20, &buf, &len);
		if (r == 0) {
			if (reg_auth_lookup(buf, len, ref->registry, &c->user, &c->pass, err) < 0)
				return err_wrap(err, "credentials '%s'", af);
		} else if (r != -ENOENT || getenv("REGISTRY_AUTH_FILE"))
			return err_errnum(err, -r, "credentials '%s'", af);
	}
	/* The ping: answers which challenge the registry wants. */
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s/v2/", c->base) < 0)
		return err_oom(err);
	reg_resp r = {.out_fd = -1, .max = 1u << 20};
	int k = do_request(c, "GET", url, NULL, NULL, &r, err);
	if (k == 0 && r.status != 200)
		k = status_error(&r, "registry", err);
	resp_clear(&r);
	if (k < 0)
		return err_wrap(err, "registry %s", ref->registry);
	*ret = TAKE_PTR(c);
	return 0;
}

uint64_t reg_client_bytes_sent(const reg_client *c)
{
	return c->sent;
}

int reg_blob_exists(reg_client *c, const char *digest, int64_t size, sbx_err **err)
{
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s/v2/%s/blobs/%s", c->base, c->repo, digest) < 0)
		return err_oom(err);
	reg_resp r = {.out_fd = -1, .max = 1u << 20};
	int k = do_request(c, "HEAD", url, NULL, NULL, &r, err);
	if (k == 0) {
		if (r.status == 200)
			k = r.content_length < 0 || r.content_length == size;
		else if (r.status == 404)
			k = 0;
		else
			k = status_error(&r, "HEAD blob", err);
	}
	resp_clear(&r);
	return k;
}

/* POST an upload (with mount/from, or plain): returns 201 (mounted), or 202
 * with the upload's location in *ret_loc. */
static int upload_start(reg_client *c, const char *digest, const char *from, long *ret_status, char **ret_loc,
			sbx_err **err)
{
	_cleanup_free_ char *url = NULL, *u2 = NULL, *u3 = NULL;
	if (asprintf(&url, "%s/v2/%s/blobs/uploads/", c->base, c->repo) < 0)
		return err_oom(err);
	if (from) {
		if (reg_url_with_query(c->base, url, "mount", digest, &u2, err) < 0 ||
		    reg_url_with_query(c->base, u2, "from", from, &u3, err) < 0)
			return -1;
	}
	reg_body b = {.mem = "", .len = 0};
	reg_resp r = {.out_fd = -1, .max = 1u << 20};
	int k = do_request(c, "POST", u3 ? u3 : url, NULL, &b, &r, err);
	if (k == 0 && r.status != 201 && r.status != 202)
		k = status_error(&r, "start upload", err);
	if (k == 0 && r.status == 202 && !r.location)
		k = err_set(err, SBX_E_INVALID_ARGUMENT, EPROTO, "start upload: no Location");
	if (k == 0) {
		*ret_status = r.status;
		*ret_loc = r.location ? TAKE_PTR(r.location) : NULL;
	}
	resp_clear(&r);
	return k;
}

static void upload_cancel(reg_client *c, const char *loc)
{
	_cleanup_free_ char *url = NULL;
	if (reg_url_with_query(c->base, loc, NULL, NULL, &url, NULL) < 0)
		return;
	reg_resp r = {.out_fd = -1, .max = 65536};
	(void)do_request(c, "DELETE", url, NULL, &(reg_body){.mem = "", .len = 0}, &r, NULL);
	resp_clear(&r);
}

int reg_blob_mount(reg_client *c, const char *digest, const char *from, sbx_err **err)
{
	long st = 0;
	_cleanup_free_ char *loc = NULL;
	if (upload_start(c, digest, from, &st, &loc, err) < 0)
		return -1;
	if (st == 201)
		return 1;
	upload_cancel(c, loc);
	return 0;
}

int reg_blob_upload(reg_client *c, int fd, int64_t size, const char *digest, uint64_t chunk, sbx_err **err)
{
	long st = 0;
	_cleanup_free_ char *loc = NULL;
	if (upload_start(c, digest, NULL, &st, &loc, err) < 0)
		return err_wrap(err, "upload %s", digest);
	int64_t off = 0;
	if (chunk && (uint64_t)size > chunk) {
		/* Chunked: PATCH each range at the location the last answer gave. */
		while (off < size) {
			int64_t n = size - off > (int64_t)chunk ? (int64_t)chunk : size - off;
			char range[64];
			snprintf(range, sizeof(range), "%lld-%lld", (long long)off, (long long)(off + n - 1));
			_cleanup_free_ char *url = NULL;
			if (reg_url_with_query(c->base, loc, NULL, NULL, &url, err) < 0)
				return err_wrap(err, "upload %s", digest);
			reg_body b = {.fd = fd, .off = off, .len = n, .content_range = range};
			reg_resp r = {.out_fd = -1, .max = 1u << 20};
			int k = do_request(c, "PATCH", url, NULL, &b, &r, err);
			if (k == 0 && r.status != 202)
				k = status_error(&r, "upload chunk", err);
			if (k == 0 && r.location) {
				free(loc);
				loc = TAKE_PTR(r.location);
			}
			resp_clear(&r);
			if (k < 0)
				return err_wrap(err, "upload %s", digest);
			off += n;
		}
	}
	_cleanup_free_ char *url = NULL;
	if (reg_url_with_query(c->base, loc, "digest", digest, &url, err) < 0)
		return err_wrap(err, "upload %s", digest);
	reg_body b = {.fd = fd, .off = off, .len = size - off};
	reg_resp r = {.out_fd = -1, .max = 1u << 20};
	int k = do_request(c, "PUT", url, NULL, &b, &r, err);
	if (k == 0 && r.status != 201)
		k = status_error(&r, "finish upload", err);
	resp_clear(&r);
	return k < 0 ? err_wrap(err, "upload %s", digest) : 0;
}

int reg_manifest_put(reg_client *c, const char *ref, const char *media_type, const char *body, size_t len,
		     sbx_err **err)
{
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s/v2/%s/manifests/%s", c->base, c->repo, ref) < 0)
		return err_oom(err);
	reg_body b = {.mem = body, .len = (int64_t)len, .content_type = media_type};
	reg_resp r = {.out_fd = -1, .max = 1u << 20};
	int k = do_request(c, "PUT", url, NULL, &b, &r, err);
	if (k == 0 && r.status != 201)
		k = status_error(&r, "put manifest", err);
	resp_clear(&r);
	return k;
}

int reg_manifest_get(reg_client *c, const char *ref, const char *want_digest, char **ret, size_t *ret_len,
		     bool *ret_is_index, char ret_digest[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s/v2/%s/manifests/%s", c->base, c->repo, ref) < 0)
		return err_oom(err);
	static const char *const hdrs[] = {
	    "Accept: " OCI_MT_MANIFEST ", " OCI_MT_INDEX ", " DOCKER_MT_MANIFEST ", " DOCKER_MT_LIST, NULL};
	reg_resp r = {.out_fd = -1, .max = OCI_MAX_JSON};
	int k = do_request(c, "GET", url, hdrs, NULL, &r, err);
	if (k == 0 && r.status != 200)
		k = status_error(&r, "manifest", err);
	if (k == 0)
		k = reg_manifest_check(r.body ? r.body : "", r.len, r.content_type, want_digest,
				       r.docker_digest, ret_is_index, ret_digest, err);
	if (k == 0) {
		*ret = r.body ? TAKE_PTR(r.body) : strdup("");
		*ret_len = r.len;
	}
	resp_clear(&r);
	return k < 0 ? err_wrap(err, "manifest %s:%s", c->repo, ref) : 0;
}

int reg_blob_get(reg_client *c, const char *digest, int64_t size, int out_fd, sbx_err **err)
{
	_cleanup_free_ char *url = NULL;
	if (asprintf(&url, "%s/v2/%s/blobs/%s", c->base, c->repo, digest) < 0)
		return err_oom(err);
	_cleanup_hasher_ store_hasher *h = store_hasher_new(err);
	if (!h)
		return -1;
	reg_resp r = {.out_fd = out_fd, .h = h, .limit = size};
	int k = do_request(c, "GET", url, NULL, NULL, &r, err);
	if (k == 0 && r.status != 200)
		k = status_error(&r, "blob", err);
	char d[STORE_DIGEST_SIZE];
	if (k == 0 && r.limit != 0)
		k = err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "blob %s: %lld bytes, expected %lld",
			    digest, (long long)(size - r.limit), (long long)size);
	if (k == 0 && (k = store_hasher_final(h, d, err)) == 0 && !streq(d, digest))
		k = err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "blob %s: its content hashes to %s", digest,
			    d);
	resp_clear(&r);
	return k;
}
