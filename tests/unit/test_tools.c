/* The MCP tools' argument checker (src/server/tools.c): every keyword the
 * schemas use is checked, and a schema with one it does not implement is
 * refused at start-up instead of being published unchecked. */
#include <jansson.h>

#include "server/tools.h"
#include "unit.h"

static json_t *js(const char *text)
{
	return json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

/* 0 if v passes schema; else -1, and the message contains want (if given). */
static int val(const char *schema, const char *v, const char *want)
{
	json_t *s = js(schema), *j = js(v);
	char *msg = NULL;
	int r = s && j ? tools_check_value(s, j, &msg) : -2;
	if (r < 0 && want && (!msg || !strstr(msg, want))) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", msg ? msg : "(null)", want);
		r = -3;
	}
	free(msg);
	json_decref(s);
	json_decref(j);
	return r;
}

static int sup(const char *schema, const char *want)
{
	json_t *s = js(schema);
	char *msg = NULL;
	int r = s ? tools_schema_supported(s, &msg) : -2;
	if (r < 0 && want && (!msg || !strstr(msg, want))) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", msg ? msg : "(null)", want);
		r = -3;
	}
	free(msg);
	json_decref(s);
	return r;
}

TEST(builtin_schemas_load)
{
	CHECK(tools_init() == 0);
	CHECK(tools_init_error() == NULL);
	json_t *l = tools_list_json();
	CHECK(json_array_size(l) >= 13);
	json_decref(l);
}

TEST(unknown_keywords_refused)
{
	CHECK(sup("{\"type\":\"string\",\"format\":\"uri\"}", "format") == -1);
	CHECK(sup("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/x\"}}}", "$ref") == -1);
	CHECK(sup("{\"oneOf\":[{\"type\":\"string\"},{\"not\":{}}]}", "not") == -1);
	CHECK(sup("{\"items\":{\"const\":1}}", "const") == -1);
	CHECK(sup("{\"additionalProperties\":{\"patternProperties\":{}}}", "patternProperties") == -1);
	CHECK(sup("{\"type\":\"string\",\"pattern\":\"([a-z\"}", "pattern") == -1);
	CHECK(sup("{\"type\":\"strin\"}", "type") == -1);
	CHECK(sup("{\"oneOf\":[]}", "oneOf") == -1);
	CHECK(sup("{\"type\":\"string\",\"pattern\":\"^[a-z]{1,3}$\",\"description\":\"d\",\"title\":\"t\"}",
		  NULL) == 0);
}

TEST(one_of)
{
	const char *s =
	    "{\"oneOf\":[{\"type\":\"string\",\"enum\":[\"strict\",\"dev\"]},{\"type\":\"object\"}]}";
	CHECK(val(s, "\"strict\"", NULL) == 0);
	CHECK(val(s, "{}", NULL) == 0);
	CHECK(val(s, "123", "a string or an object") == -1);
	CHECK(val(s, "[\"strict\"]", "not an array") == -1);
	CHECK(val(s, "\"lax\"", "one of") == -1);
	/* Two alternatives matching is a oneOf failure. */
	CHECK(val("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "3", "more than one") == -1);
	/* The nested complaint of the alternative of the right type. */
	CHECK(val("{\"type\":\"object\",\"properties\":{\"network\":{\"oneOf\":[{\"type\":\"string\"},{"
		  "\"type\":"
		  "\"object\",\"properties\":{\"allow\":{\"type\":\"array\"}}}]}}}",
		  "{\"network\":{\"allow\":\"x\"}}", "network.allow") == -1);
}

TEST(any_of)
{
	const char *s = "{\"type\":\"object\",\"anyOf\":[{\"required\":[\"a\"]},{\"required\":[\"b\"]}]}";
	CHECK(val(s, "{\"a\":1}", NULL) == 0);
	CHECK(val(s, "{\"a\":1,\"b\":2}", NULL) == 0);
	CHECK(val(s, "{\"c\":1}", NULL) == -1);
}

TEST(pattern_and_lengths)
{
	const char *s =
	    "{\"type\":\"string\",\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9._-]{0,3}$\",\"maxLength\":4}";
	CHECK(val(s, "\"ab.c\"", NULL) == 0);
	CHECK(val(s, "\"a b\"", "pattern") == -1);
	CHECK(val(s, "\".ab\"", "pattern") == -1);
	CHECK(val(s, "\"a\\u0000b\"", "pattern") == -1); /* NUL never matches */
	CHECK(val("{\"type\":\"string\",\"maxLength\":2}", "\"abc\"", "at most 2") == -1);
	CHECK(val("{\"type\":\"array\",\"maxItems\":1}", "[1,2]", "at most 1") == -1);
}

TEST(integers_and_bounds)
{
	const char *s = "{\"type\":\"integer\",\"minimum\":1,\"maximum\":4194304}";
	CHECK(val(s, "4194304", NULL) == 0);
	CHECK(val(s, "4194305", "at most") == -1);
	CHECK(val(s, "0", "at least") == -1);
	CHECK(val(s, "-1", "at least") == -1);
	CHECK(val(s, "1e9", "an integer") == -1);
	CHECK(val(s, "2.5", "an integer") == -1);
	CHECK(val("{\"type\":\"integer\",\"maximum\":9223372036854775806}", "9223372036854775807",
		  "at most") == -1);
}
