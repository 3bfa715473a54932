/* libFuzzer target: the MCP argument checker (src/server/jschema.c, pure).
 * An input that is a JSON array [schema, value] checks value against
 * schema when jschema_supported() accepts it; any other JSON document is
 * checked as a value against a fixed schema that uses every keyword.
 * Checked: no crash, no leak (ASan); a refusal or failure always says why;
 * the verdict and message are the same twice (no hidden state). Any
 * pattern is tried: jschema_supported() refuses one whose automaton would
 * take glibc's regcomp seconds (nested bounds such as (a{0,99}){0,99}). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "server/jschema.h"

static const char every_keyword[] =
    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"id\"],\"properties\":{"
    "\"id\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8,\"pattern\":\"^[a-z][a-z0-9_-]{0,7}$\"},"
    "\"n\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":9223372036854775807},"
    "\"x\":{\"type\":\"number\",\"minimum\":0.5,\"maximum\":1024},"
    "\"u\":{\"type\":[\"string\",\"integer\"],\"minimum\":0},"
    "\"e\":{\"enum\":[\"a\",1,null,[1],{\"k\":true}]},"
    "\"net\":{\"oneOf\":[{\"type\":\"string\",\"enum\":[\"none\",\"open\"]},{\"type\":\"object\","
    "\"additionalProperties\":false,\"required\":[\"allow\"],\"properties\":{\"allow\":{\"type\":"
    "\"array\",\"minItems\":1,\"maxItems\":3,\"items\":{\"type\":\"string\",\"minLength\":1}}}}]},"
    "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
    "\"any\":{\"anyOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}],\"description\":\"d\"}}}";

static void check_twice(const json_t *schema, const json_t *v)
{
	const char *const extra[] = {"reserved", NULL};
	char *m1 = NULL, *m2 = NULL;
	int r1 = jschema_check(schema, v, extra, &m1), r2 = jschema_check(schema, v, extra, &m2);
	if ((r1 != 0 && r1 != -1) || r1 != r2)
		abort();
	if (r1 < 0 && (!m1 || !m2 || strcmp(m1, m2) != 0))
		abort();
	if (!jschema_noun(v))
		abort();
	free(m1);
	free(m2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (!in)
		return 0;
	if (json_is_array(in) && json_array_size(in) == 2) {
		json_t *schema = json_array_get(in, 0);
		char *why = NULL;
		int r = jschema_supported(schema, &why);
		if (r == -1 && !why)
			abort();
		free(why);
		if (r == 0)
			check_twice(schema, json_array_get(in, 1));
	}
	static json_t *fixed;
	if (!fixed) {
		fixed = json_loads(every_keyword, 0, NULL);
		char *why = NULL;
		if (!fixed || jschema_supported(fixed, &why) != 0)
			abort();
	}
	check_twice(fixed, in);
	json_decref(in);
	return 0;
}
