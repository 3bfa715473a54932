/* libFuzzer target: the multipart/form-data parser (src/server/multipart.h),
 * which reads E2B's POST /files bodies. The input's first line is a
 * Content-Type value (its boundary taken by multipart_boundary, else "b");
 * the rest is the body, parsed twice, whole and in pieces whose size the
 * input's first byte picks. Checked: no crash (ASan, UBSan), both parses
 * agree on the outcome, the parts, every filename and every data byte; data
 * is never longer than the body; begin/end calls pair up; a filename has no
 * control character. tests/fuzz/corpus/multipart holds the seeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/multipart.h"

typedef struct seen {
	unsigned char *data;
	size_t len, cap;
	unsigned long names; /* a hash of the filenames, in order */
	int begun, ended;
} seen;

static int on_begin(void *ud, const multipart_part *p)
{
	seen *s = ud;
	if (s->begun != s->ended)
		abort(); /* a part begun before the last one ended */
	for (const char *c = p->filename; *c; c++) {
		if ((unsigned char)*c < 0x20 && *c != '\t')
			abort();
		s->names = s->names * 31 + (unsigned char)*c;
	}
	s->names = s->names * 31 + (p->has_filename ? 7 : 3);
	s->begun++;
	return 0;
}

static int on_data(void *ud, const char *d, size_t n)
{
	seen *s = ud;
	if (n == 0 || s->begun != s->ended + 1 || s->len + n > s->cap)
		abort();
	memcpy(s->data + s->len, d, n);
	s->len += n;
	return 0;
}

static int on_end(void *ud)
{
	seen *s = ud;
	if (s->begun != s->ended + 1)
		abort();
	s->ended++;
	return 0;
}

static const multipart_cb cb = {on_begin, on_data, on_end};

static int parse(const char *boundary, const uint8_t *body, size_t size, size_t step, seen *s)
{
	multipart_parser p;
	multipart_init(&p, boundary);
	int r = MULTIPART_MORE;
	for (size_t off = 0; off < size && r == MULTIPART_MORE;) {
		size_t n = step && step < size - off ? step : size - off;
		r = multipart_feed(&p, (const char *)body + off, n, &cb, s);
		off += n;
	}
	if (r == MULTIPART_MORE)
		r = multipart_eof(&p);
	if (r == MULTIPART_ERROR && !p.error)
		abort();
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	if (!nl)
		return 0;
	size_t hlen = (size_t)(nl - data);
	char *ct = malloc(hlen + 1);
	if (!ct)
		return 0;
	memcpy(ct, data, hlen);
	ct[hlen] = 0;
	char boundary[MULTIPART_BOUNDARY_MAX + 1];
	if (multipart_boundary(ct, boundary) < 0)
		strcpy(boundary, "b");
	else if (!*boundary || strchr(boundary, '\r') || strchr(boundary, '\n'))
		abort();
	free(ct);
	const uint8_t *body = nl + 1;
	size_t blen = size - hlen - 1;
	seen a = {.data = malloc(blen + 1), .cap = blen}, b = {.data = malloc(blen + 1), .cap = blen};
	if (!a.data || !b.data)
		abort();
	int ra = parse(boundary, body, blen, 0, &a);
	int rb = parse(boundary, body, blen, (size ? data[0] % 7 : 0) + 1, &b);
	if (ra != rb || a.len != b.len || memcmp(a.data, b.data, a.len) || a.names != b.names ||
	    a.begun != b.begun || a.ended != b.ended)
		abort();
	if (ra == MULTIPART_DONE && a.begun != a.ended)
		abort();
	free(a.data);
	free(b.data);
	return 0;
}
