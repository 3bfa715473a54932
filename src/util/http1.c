/* The HTTP/1.1 response parser (http1.h). The head is taken a byte at a
 * time (it is at most 64 KiB); body bytes are handed on in runs. */
#include <string.h>
#include <strings.h>

#include "util/http1.h"

enum {
	S_STATUS,
	S_HEADER,
	S_BODY_LEN,
	S_BODY_EOF,
	S_CHUNK_SIZE,
	S_CHUNK_DATA,
	S_CHUNK_CRLF,
	S_TRAILER,
	S_DONE,
	S_ERROR,
};

#define CHUNK_LINE_MAX 4096
#define CONTENT_LENGTH_MAX (INT64_C(1) << 62)

void http1_init(http1_parser *p)
{
	memset(p, 0, sizeof(*p));
	p->content_length = -1;
	p->state = S_STATUS;
}

static int fail(http1_parser *p, const char *why)
{
	p->state = S_ERROR;
	p->error = why;
	return HTTP1_ERROR;
}

static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* "HTTP/1.x DDD[ reason]" */
static int parse_status(http1_parser *p)
{
	const char *l = p->line;
	if (p->line_cut)
		return fail(p, "status line too long");
	if (strncmp(l, "HTTP/1.", 7) != 0 || l[7] < '0' || l[7] > '9' || l[8] != ' ')
		return fail(p, "not an HTTP/1.x status line");
	const char *d = l + 9;
	for (int i = 0; i < 3; i++)
		if (d[i] < '0' || d[i] > '9')
			return fail(p, "malformed status code");
	if (d[3] != 0 && d[3] != ' ')
		return fail(p, "malformed status code");
	p->status = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
	if (p->status < 100 || p->status > 599)
		return fail(p, "status code out of range");
	p->state = S_HEADER;
	return HTTP1_MORE;
}

static int end_of_head(http1_parser *p)
{
	if (p->status == 101)
		return fail(p, "unexpected protocol switch (101)");
	if (p->status < 200) { /* interim (100 Continue, 103): the real answer follows */
		http1_init(p);
		return HTTP1_MORE;
	}
	p->head_done = true;
	p->head_len = 0;
	if (p->status == 204 || p->status == 304) {
		p->state = S_DONE;
		return HTTP1_DONE;
	}
	if (p->chunked) {
		p->state = S_CHUNK_SIZE;
		return HTTP1_MORE;
	}
	if (p->saw_cl) {
		p->left = p->content_length;
		p->state = p->left ? S_BODY_LEN : S_DONE;
		return p->left ? HTTP1_MORE : HTTP1_DONE;
	}
	p->state = S_BODY_EOF;
	return HTTP1_MORE;
}

static int parse_header(http1_parser *p)
{
	char *l = p->line;
	if (!*l && !p->line_cut)
		return end_of_head(p);
	if (*l == ' ' || *l == '\t')
		return fail(p, "folded header line");
	char *colon = strchr(l, ':');
	if (!colon || colon == l)
		return fail(p, "malformed header line");
	for (char *c = l; c < colon; c++)
		if (!is_tchar((unsigned char)*c))
			return fail(p, "malformed header name");
	*colon = 0;
	char *v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	size_t n = strlen(v);
	if (!p->line_cut)
		while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
			v[--n] = 0;
	if (strcasecmp(l, "content-length") == 0) {
		if (p->line_cut || n == 0 || n > 19)
			return fail(p, "malformed Content-Length");
		int64_t x = 0;
		for (size_t i = 0; i < n; i++) {
			if (v[i] < '0' || v[i] > '9')
				return fail(p, "malformed Content-Length");
			x = x * 10 + (v[i] - '0');
			if (x > CONTENT_LENGTH_MAX)
				return fail(p, "Content-Length too large");
		}
		if (p->saw_cl && x != p->content_length)
			return fail(p, "two different Content-Length values");
		p->saw_cl = true;
		p->content_length = x;
	} else if (strcasecmp(l, "transfer-encoding") == 0) {
		if (p->line_cut || strcasecmp(v, "chunked") != 0)
			return fail(p, "unsupported Transfer-Encoding");
		p->chunked = true;
	} else if (strcasecmp(l, "content-type") == 0) {
		size_t k = n < sizeof(p->content_type) - 1 ? n : sizeof(p->content_type) - 1;
		memcpy(p->content_type, v, k);
		p->content_type[k] = 0;
	}
	return HTTP1_MORE;
}

static int parse_chunk_size(http1_parser *p)
{
	if (p->chunk_digits == 0)
		return fail(p, "malformed chunk size");
	p->chunk_digits = 0;
	p->chunk_ext = false;
	p->line_len = 0;
	if (p->left == 0) {
		p->state = S_TRAILER;
		p->head_len = 0;
		return HTTP1_MORE;
	}
	p->state = S_CHUNK_DATA;
	return HTTP1_MORE;
}

/* One byte of a line-oriented state: the status line, a header, a chunk
 * size or a trailer. */
static int line_byte(http1_parser *p, unsigned char c)
{
	if (p->state != S_CHUNK_SIZE && ++p->head_len > HTTP1_HEAD_MAX)
		return fail(p, p->state == S_TRAILER ? "trailer too large" : "response head too large");
	if (p->cr && c != '\n')
		return fail(p, "bare CR in a line");
	if (c == '\r') {
		p->cr = true;
		return HTTP1_MORE;
	}
	if (c != '\n') {
		if (c < 0x20 && c != '\t')
			return fail(p, "control character in the head");
		if (c == 0x7f)
			return fail(p, "control character in the head");
	}
	if (p->state == S_CHUNK_SIZE) {
		if (c == '\n') {
			p->cr = false;
			return parse_chunk_size(p);
		}
		if (++p->line_len > CHUNK_LINE_MAX)
			return fail(p, "chunk size line too long");
		if (p->chunk_ext)
			return HTTP1_MORE;
		int v = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (v >= 0 && p->chunk_digits >= 0) {
			if (++p->chunk_digits > 15)
				return fail(p, "chunk size too large");
			p->left = p->left * 16 + v;
			return HTTP1_MORE;
		}
		if (c == ';') {
			p->chunk_ext = true;
			return HTTP1_MORE;
		}
		if ((c == ' ' || c == '\t') && p->chunk_digits > 0) {
			p->chunk_digits = -p->chunk_digits; /* only whitespace or ';' may follow */
			return HTTP1_MORE;
		}
		if ((c == ' ' || c == '\t') && p->chunk_digits < 0)
			return HTTP1_MORE;
		return fail(p, "malformed chunk size");
	}
	if (c != '\n') {
		if (p->line_len < (int)sizeof(p->line) - 1)
			p->line[p->line_len++] = (char)c;
		else
			p->line_cut = true;
		return HTTP1_MORE;
	}
	p->cr = false;
	p->line[p->line_len] = 0;
	int r;
	if (p->state == S_STATUS)
		r = parse_status(p);
	else if (p->state == S_HEADER)
		r = parse_header(p);
	else { /* S_TRAILER: skipped, up to the empty line */
		r = HTTP1_MORE;
		if (p->line_len == 0 && !p->line_cut) {
			p->state = S_DONE;
			r = HTTP1_DONE;
		}
	}
	p->line_len = 0;
	p->line_cut = false;
	return r;
}

int http1_feed(http1_parser *p, const char *data, size_t len, http1_body_fn on_body, void *ud,
	       size_t *ret_used)
{
	size_t i = 0;
	int r = HTTP1_MORE;
	if (p->state == S_ERROR)
		return HTTP1_ERROR;
	while (i < len && p->state != S_DONE) {
		switch (p->state) {
		case S_BODY_LEN:
		case S_CHUNK_DATA:
		case S_BODY_EOF: {
			size_t n = len - i;
			if (p->state != S_BODY_EOF && (int64_t)n > p->left)
				n = (size_t)p->left;
			if (on_body && on_body(ud, data + i, n) < 0)
				return fail(p, "stopped");
			i += n;
			if (p->state == S_BODY_EOF)
				break;
			p->left -= (int64_t)n;
			if (p->left == 0) {
				if (p->state == S_BODY_LEN) {
					p->state = S_DONE;
					r = HTTP1_DONE;
				} else
					p->state = S_CHUNK_CRLF;
			}
			break;
		}
		case S_CHUNK_CRLF: {
			unsigned char c = (unsigned char)data[i++];
			if (c == '\r' && !p->cr)
				p->cr = true;
			else if (c == '\n') {
				p->cr = false;
				p->state = S_CHUNK_SIZE;
			} else
				return fail(p, "missing CRLF after a chunk");
			break;
		}
		default:
			r = line_byte(p, (unsigned char)data[i++]);
			if (r == HTTP1_ERROR)
				return r;
			break;
		}
	}
	if (ret_used)
		*ret_used = i;
	return p->state == S_DONE ? HTTP1_DONE : HTTP1_MORE;
}

int http1_eof(http1_parser *p)
{
	if (p->state == S_DONE || p->state == S_BODY_EOF) {
		p->state = S_DONE;
		return HTTP1_DONE;
	}
	if (p->state == S_ERROR)
		return HTTP1_ERROR;
	return fail(p, "the connection closed before the response was complete");
}
