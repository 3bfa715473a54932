/* Unit tests: src/server/jsonrpc.c, the id of a request too large to parse
 * (jsonrpc_peek_id): the client's call must end with an error carrying its
 * id, not wait for its timeout on "id": null. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "server/jsonrpc.h"
#include "unit.h"

/* The id peeked from the first n bytes of text, as JSON ("-" when none). */
static char *peek(const char *text, size_t n)
{
	json_t *id = jsonrpc_peek_id(text, n);
	char *s = id ? json_dumps(id, JSON_ENCODE_ANY) : strdup("-");
	json_decref(id);
	return s;
}

static bool peeks(const char *text, size_t n, const char *want)
{
	char *got = peek(text, n);
	bool ok = !strcmp(got, want);
	if (!ok)
		fprintf(stderr, "peek '%.*s': got %s, want %s\n", (int)n, text, got, want);
	free(got);
	return ok;
}

TEST(peek_finds_the_id_before_the_cut)
{
	const char *a = "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/call\",\"params\":{\"x\":\"aaaa";
	CHECK(peeks(a, strlen(a), "77"));
	const char *b = " {\"method\":\"m\", \"id\" : \"req-1\" ,\"params\":[1,{\"id\":2}";
	CHECK(peeks(b, strlen(b), "\"req-1\""));
	/* after values with nesting, escapes and braces inside strings */
	const char *c = "{\"params\":{\"a\":[\"}\\\"]\",{\"id\":9}]},\"k\\\"\":1,\"id\":-5,\"z\":\"";
	CHECK(peeks(c, strlen(c), "-5"));
}

TEST(peek_refuses_what_it_cannot_read_whole)
{
	const char *a = "{\"jsonrpc\":\"2.0\",\"params\":{\"x\":\"aaaa\"},\"id\":12";
	CHECK(peeks(a, strlen(a), "-"));		       /* the id may go on: 123 */
	CHECK(peeks("{\"params\":\"aaaa", 15, "-"));	       /* cut before any id */
	CHECK(peeks("{\"id\":{\"a\":1},\"x\":1", 19, "-"));    /* an object id */
	CHECK(peeks("{\"id\":null,\"x\":1", 16, "-"));	       /* null */
	CHECK(peeks("{\"id\":1.5,\"x\":1", 15, "-"));	       /* not an integer */
	CHECK(peeks("[{\"id\":1,\"x\":1}]", 16, "-"));	       /* a batch */
	CHECK(peeks("{\"params\":{\"id\":3},\"x\"", 22, "-")); /* a nested id only */
	CHECK(peeks("", 0, "-"));
	CHECK(peeks("{\"i\\d\":4,\"x\":1", 14, "-")); /* an escaped key is not "id" */
	char big[600];
	memset(big, 'a', sizeof(big));
	memcpy(big, "{\"id\":\"", 7);
	memcpy(big + 500, "\",\"x\":1", 7);
	CHECK(peeks(big, 507 + 1, "-")); /* an id string of more than 256 bytes */
}

/* What the transports send: the error carries the id. */
TEST(too_large_answers_with_the_id)
{
	json_t *id = json_integer(77);
	json_t *e = jsonrpc_too_large(5 << 20, id);
	CHECK(e && json_integer_value(json_object_get(e, "id")) == 77);
	CHECK(json_integer_value(json_object_get(json_object_get(e, "error"), "code")) == -32600);
	json_decref(e);
	json_decref(id);
	size_t n = (4 << 20) + 100;
	char *m = malloc(n);
	CHECK(m);
	memset(m, 'a', n);
	const char *head = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"params\":{\"p\":\"";
	memcpy(m, head, strlen(head));
	json_t *msg = NULL, *err = NULL;
	CHECK(jsonrpc_parse(m, n, &msg, &err) == -32600 && !msg && err);
	CHECK(json_integer_value(json_object_get(err, "id")) == 5);
	json_decref(err);
	free(m);
}
