/* The multipart/form-data parser (src/server/multipart.h): bodies as
 * undici's FormData writes them (e2b's files.write), fed whole and one byte
 * at a time, data that holds most of a delimiter, and the refusals. */
#include <string.h>

#include "server/multipart.h"
#include "unit.h"

typedef struct got {
	char names[8][256], files[8][256];
	char data[8][512];
	size_t len[8];
	int begun, ended;
} got;

static int on_begin(void *ud, const multipart_part *p)
{
	got *g = ud;
	if (g->begun >= 8)
		return -1;
	snprintf(g->names[g->begun], 256, "%.200s", p->name);
	snprintf(g->files[g->begun], 256, "%s%.200s", p->has_filename ? "" : "(none)", p->filename);
	g->begun++;
	return 0;
}

static int on_data(void *ud, const char *d, size_t n)
{
	got *g = ud;
	int i = g->begun - 1;
	if (n == 0 || g->len[i] + n > sizeof(g->data[i]))
		return -1;
	memcpy(g->data[i] + g->len[i], d, n);
	g->len[i] += n;
	return 0;
}

static int on_end(void *ud)
{
	((got *)ud)->ended++;
	return 0;
}

static const multipart_cb cb = {on_begin, on_data, on_end};

/* Parses body whole (step 0) or in pieces of step bytes; the last feed's result. */
static int parse(const char *boundary, const char *body, size_t len, size_t step, got *g, const char **why)
{
	multipart_parser p;
	multipart_init(&p, boundary);
	memset(g, 0, sizeof(*g));
	int r = MULTIPART_MORE;
	for (size_t off = 0; off < len && r == MULTIPART_MORE;) {
		size_t n = step && len - off > step ? step : len - off;
		r = multipart_feed(&p, body + off, n, &cb, g);
		off += n;
	}
	if (r == MULTIPART_MORE)
		r = multipart_eof(&p);
	*why = p.error;
	return r;
}

#define BODY                                                                                                 \
	"--B0undary\r\n"                                                                                     \
	"Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"                   \
	"Content-Type: application/octet-stream\r\n\r\n"                                                     \
	"hello\r\n--B0undar\r\n-\r\n"                                                                        \
	"\r\n--B0undary\r\n"                                                                                 \
	"Content-Disposition: form-data; name=file; filename=\"dir/q\\\"uote\"\r\n\r\n"                      \
	"\r\n--B0undary--\r\nepilogue"

TEST(two_parts_whole_and_bytewise)
{
	static const char body[] = BODY;
	static const char first[] = "hello\r\n--B0undar\r\n-\r\n";
	for (size_t step = 0; step <= 7; step++) {
		got g;
		const char *why;
		CHECK(parse("B0undary", body, sizeof(body) - 1, step, &g, &why) == MULTIPART_DONE);
		CHECK(g.begun == 2 && g.ended == 2);
		CHECK_STREQ(g.names[0], "file");
		CHECK_STREQ(g.files[0], "/home/user/a.txt");
		CHECK(g.len[0] == sizeof(first) - 1 && memcmp(g.data[0], first, g.len[0]) == 0);
		CHECK_STREQ(g.files[1], "dir/q\"uote");
		CHECK(g.len[1] == 0);
	}
}

TEST(binary_data_with_nul_and_cr)
{
	char body[256];
	static const char head[] = "preamble\r\n--x\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n";
	static const char data[] = {0, '\r', '\r', '\n', '-', 0, (char)0xff, '\r'};
	static const char tail[] = "\r\n--x--";
	size_t n = 0;
	memcpy(body, head, sizeof(head) - 1);
	n += sizeof(head) - 1;
	memcpy(body + n, data, sizeof(data));
	n += sizeof(data);
	memcpy(body + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	for (size_t step = 0; step <= 3; step++) {
		got g;
		const char *why;
		CHECK(parse("x", body, n, step, &g, &why) == MULTIPART_DONE);
		CHECK(g.begun == 1 && g.ended == 1);
		CHECK_STREQ(g.files[0], "(none)");
		CHECK(g.len[0] == sizeof(data) && memcmp(g.data[0], data, sizeof(data)) == 0);
	}
}

TEST(refusals)
{
	static const struct {
		const char *body, *why;
	} bad[] = {
	    {"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc", "truncated"},
	    {"--b\r\nContent-Disposition: form-data; name=\"file\"\r\n", "truncated"},
	    {"", "truncated"},
	    {"--b\r\nno colon here\r\n\r\n\r\n--b--", "no colon"},
	    {"--b\r\nContent-Disposition: form-data; filename=\"a\0b\"\r\n\r\n\r\n--b--",
	     "control character"},
	    {"--b\r\nContent-Disposition: form-data; filename=\"a\r\n\r\n\r\n--b--", "malformed"},
	    {"--bX\r\n", "neither"},
	    {"--b\r\nX: y\rZ\r\n\r\n\r\n--b--", "CR"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = strlen(bad[i].body);
		if (strstr(bad[i].why, "control"))
			len = 62; /* holds a NUL: its whole length */
		got g;
		const char *why = NULL;
		CHECK(parse("b", bad[i].body, len, 0, &g, &why) == MULTIPART_ERROR);
		CHECK(why && strstr(why, bad[i].why));
	}
}

TEST(limits)
{
	static char body[MULTIPART_HEAD_MAX + 512];
	int n = snprintf(body, sizeof(body), "--b\r\nX-Long: ");
	memset(body + n, 'a', MULTIPART_HEAD_MAX);
	memcpy(body + n + MULTIPART_HEAD_MAX, "\r\n\r\n", 4);
	got g;
	const char *why;
	CHECK(parse("b", body, (size_t)n + MULTIPART_HEAD_MAX + 4, 0, &g, &why) == MULTIPART_ERROR);
	CHECK(strstr(why, "16 KiB"));
	/* a filename over the bound */
	n = snprintf(body, sizeof(body), "--b\r\nContent-Disposition: form-data; filename=\"");
	memset(body + n, 'f', MULTIPART_VALUE_MAX + 1);
	n += MULTIPART_VALUE_MAX + 1;
	n += snprintf(body + n, sizeof(body) - (size_t)n, "\"\r\n\r\n\r\n--b--");
	CHECK(parse("b", body, (size_t)n, 0, &g, &why) == MULTIPART_ERROR);
}

TEST(boundary_from_content_type)
{
	char b[MULTIPART_BOUNDARY_MAX + 1];
	CHECK(multipart_boundary("multipart/form-data; boundary=----formdata-undici-0123", b) == 0);
	CHECK_STREQ(b, "----formdata-undici-0123");
	CHECK(multipart_boundary("Multipart/Form-Data;charset=utf-8; boundary=\"a b\"", b) == 0);
	CHECK_STREQ(b, "a b");
	CHECK(multipart_boundary("multipart/form-data", b) < 0);
	CHECK(multipart_boundary("multipart/mixed; boundary=x", b) < 0);
	CHECK(multipart_boundary("multipart/form-data; boundary=", b) < 0);
	CHECK(multipart_boundary("multipart/form-data; boundary=\"a\r\nb\"", b) < 0);
	CHECK(multipart_boundary("multipart/form-data; boundary=\"trailing \"", b) < 0);
	CHECK(multipart_boundary("multipart/form-data; boundary="
				 "12345678901234567890123456789012345678901234567890123456789012345678901",
				 b) < 0);
	CHECK(multipart_boundary(NULL, b) < 0);
}
