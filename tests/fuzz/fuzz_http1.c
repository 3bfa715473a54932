/* libFuzzer target: the HTTP/1.1 response parser (src/util/http1.h), which
 * reads what the code interpreter's bridge inside an environment answers.
 * Each input is parsed twice, whole and in pieces whose sizes the input's
 * first byte picks; checked: no crash (ASan, UBSan), both parses agree on
 * the outcome, the status, the framing and the body bytes, a body is never
 * longer than the input, and a Content-Length body that completes is
 * exactly that long. Built and run by tests/fuzz/run; tests/fuzz/corpus/http1
 * holds the seeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/http1.h"

typedef struct body {
	char *p;
	size_t len, cap;
} body;

static int on_body(void *ud, const char *data, size_t len)
{
	body *b = ud;
	if (len == 0)
		abort(); /* never called with nothing */
	if (b->len + len > b->cap)
		abort(); /* more body than input */
	memcpy(b->p + b->len, data, len);
	b->len += len;
	return 0;
}

static int parse(const uint8_t *data, size_t size, size_t step, http1_parser *p, body *b)
{
	http1_init(p);
	size_t off = 0;
	int r = HTTP1_MORE;
	while (off < size) {
		size_t n = step && step < size - off ? step : size - off, used = 0;
		r = http1_feed(p, (const char *)data + off, n, on_body, b, &used);
		if (used > n)
			abort();
		if (r != HTTP1_MORE)
			break;
		off += n;
	}
	if (r == HTTP1_MORE)
		r = http1_eof(p);
	if (r == HTTP1_ERROR && !p->error)
		abort();
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = data[0] % 7 + 1;
	data++;
	size--;
	body a = {malloc(size + 1), 0, size}, c = {malloc(size + 1), 0, size};
	http1_parser pa, pc;
	if (!a.p || !c.p)
		abort();
	int ra = parse(data, size, 0, &pa, &a), rc = parse(data, size, step, &pc, &c);
	if (ra != rc || pa.status != pc.status || pa.chunked != pc.chunked ||
	    pa.content_length != pc.content_length || a.len != c.len || memcmp(a.p, c.p, a.len) != 0)
		abort();
	if (ra == HTTP1_DONE && pa.head_done && !pa.chunked && pa.content_length >= 0 && pa.status != 204 &&
	    pa.status != 304 && (int64_t)a.len != pa.content_length)
		abort();
	if (strlen(pa.content_type) >= HTTP1_CTYPE_MAX)
		abort();
	free(a.p);
	free(c.p);
	return 0;
}
