/* envd's GET and POST /files on the E2B data plane (docs/e2b.md): a
 * sandbox's files read and written as a user, through the environment's own
 * view of its tree (sbx_env_file_open: init resolves the path inside, with
 * that user's identity; no path or symlink leads out).
 *
 *   GET  /files?path=P[&username=U]   the bytes (gzip with Accept-Encoding: gzip);
 *                                     404 (FileNotFoundError), 400 for a directory
 *   POST /files[?path=P][&username=U] multipart/form-data: every part named "file"
 *                                     written to P, else to its filename (the SDK's
 *                                     several files at once); or application/
 *                                     octet-stream (Content-Encoding: gzip allowed)
 *                                     to P. 200 [{path, name, type: "file"}]
 * The user: username, else E2B's `user` where the sandbox has it
 * (e2b_user_for), else the environment's. Parents are made, as that user.
 *
 * Auth. With E2b-Sandbox-Id, http_e2b.c's data_auth has checked the sandbox
 * and its X-Access-Token before e2b_files_headers runs. A URL from the SDK's
 * uploadUrl()/downloadUrl() carries a signature instead (and no sandbox
 * header: the SDK fetches it bare): such a request comes through the open
 * route (e2b_files_signed) and is checked here: the sandbox the header
 * names, else the one whose token signs these fields (e2b_auth.h's
 * verifier, against each record), must be running (else 502) and the
 * signature right and unexpired (else 401). A signed upload is checked
 * before its body is read, and again after.
 *
 * Limits: a body of E2B_FILES_MAX_BODY (the route's max_body: 413), a file
 * read of E2B_FILES_READ_MAX (413), a gzip upload inflating past
 * E2B_FILES_MAX_BODY (413). Bodies are whole in memory (http_server reads
 * them so); streaming them is still to do. */
#include "server/e2b_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "server/e2b_auth.h"
#include "server/e2b_data.h"
#include "server/e2b_reply.h"
#include "server/e2b_rpc.h"
#include "server/e2b_store.h"
#include "server/e2b_user.h"
#include "server/multipart.h"
#include "util/fd.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

enum {
	ST_OK = 200,
	ST_BAD_REQUEST = 400,
	ST_UNAUTHORIZED = 401,
	ST_FORBIDDEN = 403,
	ST_NOT_FOUND = 404,
	ST_CONFLICT = 409,
	ST_TOO_LARGE = 413,
	ST_UNSUPPORTED = 415,
	ST_INTERNAL = 500,
	ST_BAD_GATEWAY = 502,
	ST_UNAVAILABLE = 503,
	ST_NO_SPACE = 507,
};

/* envd's statuses for file errors. */
static unsigned status_of(const sbx_err *e)
{
	int en = sbx_err_errno(e);
	if (en == EACCES || en == EPERM)
		return ST_FORBIDDEN;
	if (en == ENOSPC || en == EDQUOT)
		return ST_NO_SPACE;
	switch (sbx_err_code(e)) {
	case SBX_E_NOT_FOUND:
		return ST_NOT_FOUND;
	case SBX_E_INVALID_ARGUMENT:
		return ST_BAD_REQUEST;
	case SBX_E_LIMIT_EXCEEDED:
		return ST_NO_SPACE;
	case SBX_E_CONFLICT:
		return ST_CONFLICT;
	case SBX_E_UNAVAILABLE:
		return ST_UNAVAILABLE;
	default:
		return ST_INTERNAL;
	}
}

static http_result reply_sbx_error(http_request *req, const sbx_err *e)
{
	return e2b_reply_error(req, status_of(e), "%s", sbx_err_message(e));
}

bool e2b_files_signed(const http_request *req)
{
	return streq(req->path, "/files") && http_request_query(req, "signature") != NULL;
}

/* The sandbox a signed request is for (see the top): 0 with its id in
 * ret_id, or an answer given. */
static int signed_sandbox(http_request *req, char ret_id[E2B_ID_MAX + 1], http_result *ret)
{
	sbx_ctx *ctx = e2b_req_ctx(req);
	const char *sig = http_request_query(req, "signature"),
		   *exp = http_request_query(req, "signature_expiration");
	const char *path = http_request_query(req, "path") ?: "", *user = http_request_query(req, "username");
	const char *op = streq(req->method, "POST") ? "write" : "read";
	const char *want = e2b_req_sandbox(req); /* its header, or a Host of {port}-{id}.{domain} */
	_cleanup_free_ char *dir = fs_path_join(sbx_ctx_root(ctx), "e2b");
	e2b_store *st = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (!dir || e2b_store_open(dir, &st, &e) < 0) {
		*ret = e2b_reply_error(req, ST_INTERNAL, "the sandboxes' records: %s",
				       e ? sbx_err_message(e) : "no memory");
		return -1;
	}
	e2b_record *v = NULL;
	size_t n = 0;
	if (e2b_store_list(st, &v, &n) < 0)
		n = 0;
	e2b_store_free(st);
	int64_t now = (int64_t)time(NULL);
	e2b_sig_verdict best = E2B_SIG_BAD;
	bool named_found = false;
	for (size_t i = 0; i < n && best != E2B_SIG_OK; i++) {
		if (want && !streq(v[i].id, want))
			continue;
		named_found = true;
		e2b_sig_verdict d =
		    e2b_file_signature_verify(path, op, user ?: "", v[i].token, sig, exp, now);
		if (d == E2B_SIG_OK || d == E2B_SIG_EXPIRED) {
			best = d;
			snprintf(ret_id, E2B_ID_MAX + 1, "%s", v[i].id);
		}
	}
	e2b_records_free(v, n);
	if (want && (!named_found || e2b_sandbox_state(ctx, want) != 1)) {
		*ret = e2b_reply_json(req, ST_BAD_GATEWAY,
				      json_pack("{s:s,s:s,s:i}", "sandboxId", want, "message",
						"The sandbox was not found", "code", ST_BAD_GATEWAY));
		return -1;
	}
	if (best != E2B_SIG_OK) {
		*ret = e2b_reply_error(req, ST_UNAUTHORIZED,
				       best == E2B_SIG_EXPIRED ? "signature is already expired"
							       : "invalid signature");
		return -1;
	}
	if (!want && e2b_sandbox_state(ctx, ret_id) != 1) {
		*ret = e2b_reply_json(req, ST_BAD_GATEWAY,
				      json_pack("{s:s,s:s,s:i}", "sandboxId", ret_id, "message",
						"The sandbox was not found", "code", ST_BAD_GATEWAY));
		return -1;
	}
	return 0;
}

typedef struct files_call {
	sbx_ctx *ctx;
	char id[E2B_ID_MAX + 1];
	const char *user; /* the user the call runs as, NULL: the environment's */
	const char *path; /* the path query, NULL if none */
	json_t *metadata; /* an upload's X-Metadata-* headers: {key: value}, NULL if none */
} files_call;

/* Who and where: the sandbox (checked), the user. 0, or an answer given. */
static int call_setup(http_request *req, files_call *c, http_result *ret)
{
	c->ctx = e2b_req_ctx(req);
	if (e2b_files_signed(req)) {
		if (signed_sandbox(req, c->id, ret) < 0)
			return -1;
	} else {
		snprintf(c->id, sizeof(c->id), "%s", e2b_req_sandbox(req) ?: "");
	}
	if (!streq(req->method, "GET") && !streq(req->method, "HEAD"))
		e2b_proc_spare_drop(c->id); /* an upload may change what a login shell reads */
	const char *u = http_request_query(req, "username");
	if (u && *u) {
		user_spec us;
		_cleanup_err_ sbx_err *e = NULL;
		if (user_spec_parse(u, &us, &e) < 0) {
			*ret = e2b_reply_error(req, ST_BAD_REQUEST, "username: %s", sbx_err_message(e));
			return -1;
		}
	}
	c->user = e2b_user_for(c->ctx, c->id, u && *u ? u : NULL);
	c->path = http_request_query(req, "path");
	if (c->path && !*c->path)
		c->path = NULL;
	return 0;
}

static bool accepts_gzip(const http_request *req)
{
	const char *ae = http_request_header(req, "Accept-Encoding");
	return ae && strcasestr(ae, "gzip");
}

/* The whole of data as a gzip stream (malloc'd). */
static int gzip_all(const char *data, size_t len, char **ret, size_t *ret_len)
{
	z_stream z = {0};
	if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	size_t cap = deflateBound(&z, len) + 32;
	char *out = malloc(cap);
	if (!out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)cap;
	int r = deflate(&z, Z_FINISH);
	*ret_len = cap - z.avail_out;
	deflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(out);
		return -EIO;
	}
	*ret = out;
	return 0;
}

static http_result do_read(http_request *req, files_call *c)
{
	if (!c->path)
		return e2b_reply_error(req, ST_BAD_REQUEST, "path: give the file to read");
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = c->user;
	int fd = -1;
	int64_t size = 0;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_file_open(c->ctx, c->id, c->path, &o, &fd, &size, &e) < 0)
		return reply_sbx_error(req, e);
	_cleanup_close_ int cfd = fd;
	if (size > E2B_FILES_READ_MAX)
		return e2b_reply_error(req, ST_TOO_LARGE,
				       "'%.200s' is %lld bytes: sbx serves files of at most %d MiB", c->path,
				       (long long)size, E2B_FILES_READ_MAX >> 20);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = fd_read_all(cfd, E2B_FILES_READ_MAX, &buf, &len);
	if (r < 0)
		return e2b_reply_error(req, r == -EFBIG ? ST_TOO_LARGE : ST_INTERNAL, "read '%.200s': %s",
				       c->path, strerror(-r));
	bool gz = accepts_gzip(req) && len > 0;
	if (gz) {
		char *z = NULL;
		size_t zlen = 0;
		if (gzip_all(buf ?: "", len, &z, &zlen) < 0)
			return e2b_reply_error(req, ST_INTERNAL, "gzip '%.200s' failed", c->path);
		free(buf);
		buf = z;
		len = zlen;
	}
	http_response *resp = http_response_buffer(TAKE_PTR(buf), len);
	if (!resp)
		return HTTP_CLOSE;
	http_response_header(resp, "Content-Type", "application/octet-stream");
	if (gz)
		http_response_header(resp, "Content-Encoding", "gzip");
	return http_respond(req, ST_OK, resp);
}

/* One upload target open for writing. */
typedef struct upload {
	files_call *c;
	json_t *written; /* the reply: [{path, name, type}] */
	int fd;		 /* the file being written, -1 between parts */
	char path[MULTIPART_VALUE_MAX + 1];
	bool skip; /* a part not named "file" */
	sbx_err *e;
	unsigned status; /* an answer other than the error's status, 0 if none */
} upload;

/* Removes the file's user.e2b.* attributes: an upload replaces the
 * file's metadata with its own (none when it sends none), as envd's
 * write does; other attributes stay. 0, or -errno. */
static int metadata_clear(int fd)
{
	ssize_t n = flistxattr(fd, NULL, 0);
	if (n <= 0)
		return n < 0 && errno != ENOTSUP ? -errno : 0;
	_cleanup_free_ char *names = malloc((size_t)n);
	if (!names)
		return -ENOMEM;
	if ((n = flistxattr(fd, names, (size_t)n)) < 0)
		return -errno;
	for (const char *p = names; p < names + n; p += strlen(p) + 1)
		if (strncmp(p, "user.e2b.", 9) == 0 && fremovexattr(fd, p) < 0 && errno != ENODATA)
			return -errno;
	return 0;
}

static int upload_open(upload *u, const char *path)
{
	if (!*path)
		return err_set(&u->e, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "a file part without a path (filename or ?path=)");
	snprintf(u->path, sizeof(u->path), "%s", path);
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = u->c->user;
	o.write = true;
	o.parents = true;
	if (sbx_env_file_open(u->c->ctx, u->c->id, path, &o, &u->fd, NULL, &u->e) < 0)
		return -1;
	/* The metadata, on the file just opened inside (the descriptor is the
	 * file's, whatever its path): user.e2b.<key>, as envd stores it; an
	 * overwritten file's earlier metadata goes first. */
	int r = metadata_clear(u->fd);
	if (r < 0)
		return err_errnum(&u->e, -r, "metadata of '%.200s'", path);
	const char *k;
	json_t *v;
	json_object_foreach(u->c->metadata, k, v)
	{
		char name[16 + E2B_METADATA_KEY_MAX];
		snprintf(name, sizeof(name), "user.e2b.%s", k);
		const char *val = json_string_value(v);
		if (fsetxattr(u->fd, name, val, strlen(val), 0) < 0)
			return err_errno(&u->e, "metadata '%s' of '%.200s'", k, path);
	}
	return 0;
}

static int upload_write(upload *u, const char *d, size_t n)
{
	ssize_t w = fd_write_all(u->fd, d, n);
	return w < 0 ? err_errnum(&u->e, (int)-w, "write '%.200s'", u->path) : 0;
}

/* The file just written, as the reply lists it (its path as resolved inside). */
static int upload_close(upload *u)
{
	safe_close(u->fd);
	u->fd = -1;
	sbx_fs_opts o = SBX_FS_OPTS_INIT;
	o.user = u->c->user;
	_cleanup_json_ json_t *entry = NULL;
	if (sbx_env_stat(u->c->ctx, u->c->id, u->path, &o, &entry, &u->e) < 0)
		return -1;
	json_t *w = json_pack("{s:O,s:O,s:s}", "path", json_object_get(entry, "path"), "name",
			      json_object_get(entry, "name"), "type", "file");
	_cleanup_json_ json_t *info = e2b_entry_info(entry); /* its metadata as reads show it */
	json_t *md = json_object_get(info, "metadata");
	if (w && md)
		json_object_set(w, "metadata", md);
	if (!w || json_array_append_new(u->written, w) < 0)
		return err_oom(&u->e);
	return 0;
}

static int on_begin(void *ud, const multipart_part *p)
{
	upload *u = ud;
	u->skip = !streq(p->name, "file");
	if (u->skip)
		return 0;
	return upload_open(u, u->c->path ?: p->filename);
}

static int on_data(void *ud, const char *d, size_t n)
{
	upload *u = ud;
	return u->skip ? 0 : upload_write(u, d, n);
}

static int on_end(void *ud)
{
	upload *u = ud;
	return u->skip ? 0 : upload_close(u);
}

static const multipart_cb parts_cb = {on_begin, on_data, on_end};

static int upload_multipart(http_request *req, upload *u, const char *boundary)
{
	multipart_parser p;
	multipart_init(&p, boundary);
	int r = multipart_feed(&p, req->body ?: "", req->body_len, &parts_cb, u);
	if (r == MULTIPART_MORE)
		r = multipart_eof(&p);
	if (r == MULTIPART_DONE && json_array_size(u->written) == 0)
		return err_set(&u->e, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "multipart body: no part named \"file\"");
	if (r == MULTIPART_ERROR && !u->e)
		err_set(&u->e, SBX_E_INVALID_ARGUMENT, EINVAL, "multipart body: %s", p.error);
	return r == MULTIPART_DONE ? 0 : -1;
}

/* Inflates a gzip body into the open file, at most E2B_FILES_MAX_BODY bytes. */
static int upload_gunzip(upload *u, const char *data, size_t len)
{
	z_stream z = {0};
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return err_oom(&u->e);
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	char out[64 << 10];
	size_t total = 0;
	int r;
	do {
		z.next_out = (Bytef *)out;
		z.avail_out = sizeof(out);
		r = inflate(&z, Z_NO_FLUSH);
		if (r != Z_OK && r != Z_STREAM_END)
			break;
		size_t n = sizeof(out) - z.avail_out;
		total += n;
		if (total > E2B_FILES_MAX_BODY) {
			inflateEnd(&z);
			u->status = ST_TOO_LARGE;
			return err_set(&u->e, SBX_E_LIMIT_EXCEEDED, EFBIG,
				       "the gzip body inflates past %d MiB, sbx's upload limit",
				       E2B_FILES_MAX_BODY >> 20);
		}
		if (n && upload_write(u, out, n) < 0) {
			inflateEnd(&z);
			return -1;
		}
	} while (r != Z_STREAM_END && (z.avail_in > 0 || z.avail_out == 0));
	inflateEnd(&z);
	if (r != Z_STREAM_END)
		return err_set(&u->e, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "the gzip body is malformed or truncated");
	return 0;
}

/* The X-Metadata-* headers of an upload (e2b_metadata_header). */
typedef struct metadata_scan {
	json_t *metadata;
	sbx_err *e;
} metadata_scan;

static void scan_metadata(void *ud, const char *name, const char *value)
{
	metadata_scan *ms = ud;
	char key[E2B_METADATA_KEY_MAX + 1];
	int r = ms->e ? 0 : e2b_metadata_header(name, value ?: "", key, &ms->e);
	if (r <= 0)
		return;
	if (!ms->metadata && !(ms->metadata = json_object())) {
		err_oom(&ms->e);
		return;
	}
	if (json_object_size(ms->metadata) >= E2B_METADATA_MAX) {
		err_set(&ms->e, SBX_E_INVALID_ARGUMENT, E2BIG, "more than %d X-Metadata-* headers",
			E2B_METADATA_MAX);
		return;
	}
	json_object_set_new(ms->metadata, key, json_string(value ?: ""));
}

static http_result do_write(http_request *req, files_call *c)
{
	const char *ct = http_request_header(req, "Content-Type") ?: "";
	const char *ce = http_request_header(req, "Content-Encoding");
	bool gz = ce && !strcasecmp(ce, "gzip");
	if (ce && !gz && strcasecmp(ce, "identity"))
		return e2b_reply_error(req, ST_UNSUPPORTED, "Content-Encoding '%.64s': only gzip", ce);
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	bool multi = multipart_boundary(ct, boundary) == 0;
	if (!multi && strncasecmp(ct, "application/octet-stream", 24) != 0)
		return e2b_reply_error(
		    req, ST_UNSUPPORTED,
		    "Content-Type: multipart/form-data with a boundary, or application/octet-stream");
	if (multi && gz)
		return e2b_reply_error(req, ST_UNSUPPORTED,
				       "Content-Encoding: gzip goes with application/octet-stream");
	metadata_scan ms = {0};
	http_request_each(req, false, scan_metadata, &ms);
	if (ms.e) {
		http_result bad = e2b_reply_error(req, ST_BAD_REQUEST, "%s", sbx_err_message(ms.e));
		sbx_err_free(ms.e);
		json_decref(ms.metadata);
		return bad;
	}
	c->metadata = ms.metadata;
	upload u = {.c = c, .written = json_array(), .fd = -1};
	if (!u.written) {
		json_decref(ms.metadata);
		return HTTP_CLOSE;
	}
	int r;
	if (multi) {
		r = upload_multipart(req, &u, boundary);
	} else if (!c->path) {
		r = err_set(&u.e, SBX_E_INVALID_ARGUMENT, EINVAL, "path: give the file to write (?path=)");
	} else {
		r = upload_open(&u, c->path);
		if (r == 0)
			r = gz ? upload_gunzip(&u, req->body ?: "", req->body_len)
			       : upload_write(&u, req->body ?: "", req->body_len);
		if (r == 0)
			r = upload_close(&u);
	}
	safe_close(u.fd);
	http_result res;
	if (r < 0)
		res = e2b_reply_error(req, u.status ?: status_of(u.e), "%s", sbx_err_message(u.e));
	else
		res = e2b_reply_json(req, ST_OK, json_incref(u.written));
	json_decref(u.written);
	json_decref(ms.metadata);
	c->metadata = NULL;
	sbx_err_free(u.e);
	return res;
}

http_result e2b_files_headers(http_request *req)
{
	if (!streq(req->method, "GET") && !streq(req->method, "POST"))
		return e2b_reply_error(req, 405, "/files: GET or POST");
	files_call c = {0};
	http_result ret = HTTP_CLOSE;
	if (streq(req->method, "POST")) {
		/* A signed upload came through the open route. One larger than
		 * E2B_FILES_EARLY_CHECK (or of no stated length) has its signature
		 * checked before its body is read, so that a request nobody signed
		 * cannot make the server read and hold 32 MiB: refused then, the
		 * connection is closed after the 401 (libmicrohttpd's rule for an
		 * answer before the body), which a client still sending may see as
		 * a reset. A smaller one is read first, so that its client sees the
		 * 401 itself. Either is checked with the body (call_setup). A
		 * request with a token was authorized before its headers got here. */
		const char *cl = http_request_header(req, "Content-Length");
		bool big = !cl || strtoull(cl, NULL, 10) > E2B_FILES_EARLY_CHECK;
		char id[E2B_ID_MAX + 1];
		if (big && e2b_files_signed(req) && signed_sandbox(req, id, &ret) < 0)
			return ret;
		return HTTP_OK;
	}
	if (call_setup(req, &c, &ret) < 0)
		return ret;
	return do_read(req, &c);
}

http_result e2b_files_body(http_request *req)
{
	files_call c = {0};
	http_result ret = HTTP_CLOSE;
	if (call_setup(req, &c, &ret) < 0)
		return ret;
	return do_write(req, &c);
}
