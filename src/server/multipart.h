/* A multipart/form-data parser (RFC 7578, RFC 2046 section 5.1):
 * incremental and pure (no I/O, nothing allocated), for request bodies
 * that are hostile input (E2B's POST /files, src/server/e2b_files.c). The
 * caller feeds the body in pieces of any size; each part's headers come out
 * once they are complete (multipart_part), its data through a callback in
 * order, without copies, then its end.
 *
 * Accepted: a preamble (skipped), then "--BOUNDARY" with optional spaces or
 * tabs and CRLF, a part's header lines ("Name: value", CRLF; at most
 * MULTIPART_HEAD_MAX bytes in all), an empty line, the data up to
 * "CRLF--BOUNDARY"; after the boundary "--" ends the body (the epilogue
 * is skipped) and CRLF starts the next part. Of the headers,
 * Content-Disposition's `name` and `filename` parameters (a token or a
 * quoted string with backslash escapes) and Content-Type are kept; others
 * are skipped. filename* (RFC 5987) is not decoded; a part with it alone
 * has no filename.
 * Refused (MULTIPART_ERROR, p->error says why): a header line without a
 * colon, header bytes over the bound, a control character (NUL included)
 * in a header, a parameter over MULTIPART_VALUE_MAX, more than
 * MULTIPART_PARTS_MAX parts, anything but CRLF or "--" after a boundary;
 * multipart_eof before the closing boundary ("truncated").
 *
 * multipart_boundary takes the boundary out of a Content-Type value:
 * multipart/form-data (any case) with a boundary parameter of 1-70
 * characters of RFC 2046's bchars, not ending in a space; so the
 * delimiter never holds CR or LF, which the data scan relies on. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#define MULTIPART_BOUNDARY_MAX 70
#define MULTIPART_HEAD_MAX (16 << 10)
#define MULTIPART_VALUE_MAX 4096
#define MULTIPART_PARTS_MAX 1000

enum {
	MULTIPART_MORE = 0,   /* everything fed was used; feed more */
	MULTIPART_DONE = 1,   /* the closing boundary was seen (the rest is epilogue) */
	MULTIPART_ERROR = -1, /* malformed or stopped: p->error says why; feed no more */
};

typedef struct multipart_part {
	char name[MULTIPART_VALUE_MAX + 1];	/* "" if none */
	char filename[MULTIPART_VALUE_MAX + 1]; /* "" if none */
	bool has_filename;
	char content_type[128]; /* "" if none; cut at the bound */
} multipart_part;

/* Each returns 0 to go on, negative to stop (multipart_feed then returns
 * MULTIPART_ERROR with error "stopped"). data runs are never empty. */
typedef struct multipart_cb {
	int (*begin)(void *ud, const multipart_part *part);
	int (*data)(void *ud, const char *data, size_t len);
	int (*end)(void *ud);
} multipart_cb;

typedef struct multipart_parser {
	const char *error; /* static text, after MULTIPART_ERROR */
	unsigned parts;	   /* parts begun so far */
	/* private */
	char delim[MULTIPART_BOUNDARY_MAX + 5]; /* "\r\n--" BOUNDARY */
	size_t delim_len;
	int state;
	size_t match; /* bytes of delim matched so far */
	size_t head_len;
	char line[MULTIPART_VALUE_MAX + 256]; /* the current header line */
	size_t line_len;
	bool line_cut;
	bool cr;
	multipart_part part;
} multipart_parser;

/* The boundary of a Content-Type value (see the top) into out; 0, or -1 if
 * it is not multipart/form-data with a valid boundary. */
int multipart_boundary(const char *content_type, char out[MULTIPART_BOUNDARY_MAX + 1]);
/* boundary as multipart_boundary gives it. */
void multipart_init(multipart_parser *p, const char *boundary);
int multipart_feed(multipart_parser *p, const char *data, size_t len, const multipart_cb *cb, void *ud);
/* The body ended: MULTIPART_DONE if the closing boundary was seen, else
 * MULTIPART_ERROR ("truncated"). */
int multipart_eof(multipart_parser *p);
