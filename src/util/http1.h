/* An HTTP/1.1 response parser: incremental, pure (no I/O), for answers that
 * are hostile input (the code interpreter's bridge runs inside an
 * environment, docs/code.md). The caller reads what it likes and feeds it;
 * body bytes come out through a callback, in order, without copies.
 *
 * Accepted: a status line "HTTP/1.x DDD reason", header lines "Name: value"
 * (the whole head at most HTTP1_HEAD_MAX bytes, CRLF or bare LF line ends),
 * then a body framed by Transfer-Encoding: chunked (chunk extensions and
 * trailers skipped, trailers bounded too), by Content-Length, or else by the
 * end of the connection. 1xx answers are skipped; 204 and 304 have no body.
 * Refused (HTTP1_ERROR, with a reason in p->error): a malformed status line
 * or header, a head or trailer over the bound, a Content-Length that is not
 * all digits, over 2^62 or given twice with two values, a Transfer-Encoding
 * other than "chunked", a malformed chunk size, a missing CRLF after a
 * chunk. Nothing is allocated. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP1_HEAD_MAX (64 << 10)
#define HTTP1_CTYPE_MAX 128

enum {
	HTTP1_MORE = 0,	  /* everything fed was used; feed more */
	HTTP1_DONE = 1,	  /* the response is complete (bytes after it are not used) */
	HTTP1_ERROR = -1, /* malformed: p->error says why; feed no more */
};

/* Called with each run of body bytes (never empty); a negative return stops
 * the parse: http1_feed returns HTTP1_ERROR with error "stopped". */
typedef int (*http1_body_fn)(void *ud, const char *data, size_t len);

typedef struct http1_parser {
	/* out, once the head is parsed (head_done) */
	bool head_done;
	int status;			    /* 100-599 */
	int64_t content_length;		    /* -1: none */
	bool chunked;			    /* Transfer-Encoding: chunked */
	char content_type[HTTP1_CTYPE_MAX]; /* "" if none; cut at the bound */
	const char *error;		    /* static text, after HTTP1_ERROR */
	/* private */
	int state;
	size_t head_len;  /* bytes of the head (or trailer) seen so far */
	int line_len;	  /* bytes of the current head line kept in line */
	char line[1024];  /* the current header line, cut at the bound (only the start matters) */
	bool line_cut;	  /* the current line was longer than line */
	int64_t left;	  /* body or chunk bytes still to come */
	int chunk_digits; /* hex digits of the current chunk size */
	bool chunk_ext;	  /* in a chunk extension */
	bool cr;	  /* the previous byte was CR (line ends) */
	bool saw_cl;	  /* a Content-Length header was seen */
} http1_parser;

void http1_init(http1_parser *p);
/* Parses data[0..len); *ret_used (may be NULL) is how many bytes were used
 * (less than len only at HTTP1_DONE). */
int http1_feed(http1_parser *p, const char *data, size_t len, http1_body_fn on_body, void *ud,
	       size_t *ret_used);
/* The connection ended: HTTP1_DONE when that completes the response (a body
 * framed by the end of the connection, or one already complete), else
 * HTTP1_ERROR ("the connection closed before the response was complete"). */
int http1_eof(http1_parser *p);
