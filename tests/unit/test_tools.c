/* The MCP tool table (src/server/tools.c): every built-in schema loads and
 * passes the argument checker's start-up check; a row's own content items
 * (environment_run_code's images). The checker itself is
 * tests/unit/test_jschema.c's. */
#include <jansson.h>

#include "server/tools.h"
#include "unit.h"

TEST(builtin_schemas_load)
{
	CHECK(tools_init() == 0);
	CHECK(tools_init_error() == NULL);
	json_t *l = tools_list_json();
	CHECK(json_array_size(l) >= 13);
	json_decref(l);
}

/* Every row of the table goes through tools_row_schemas at start-up: a
 * schema with a keyword the checker does not implement fails it, naming the
 * tool, the schema and the keyword, and tools_init then fails, so the
 * servers refuse to start (mcp_server_new, transport_http) rather than
 * publish a schema they would not hold a client to. */
static int row(const char *in, const char *out, char **msg)
{
	tool t = {.name = "t_row", .input_schema = in, .output_schema = out};
	json_t *s[2] = {NULL, NULL};
	int r = tools_row_schemas(&t, s, msg);
	json_decref(s[0]);
	json_decref(s[1]);
	return r;
}

TEST(unknown_keyword_refused_at_start)
{
	const char *ok = "{'type':'object','properties':{'a':{'type':'string','minLength':1}}}";
	char *msg = NULL;
	CHECK(row(ok, "{'type':'object'}", &msg) == 0);
	CHECK(msg == NULL);
	/* Unknown keywords anywhere in either schema. */
	const struct {
		const char *in, *out, *want;
	} bad[] = {
	    {"{'type':'object','properties':{'u':{'type':'string','format':'uri'}}}", "{}",
	     "tool t_row's input schema: #.u: keyword 'format' is not implemented"},
	    {ok, "{'type':'object','properties':{'x':{'$ref':'#/definitions/x'}}}",
	     "tool t_row's output schema: #.x: keyword '$ref'"},
	    {"{'type':'array','items':{'const':1}}", "{}", "keyword 'const'"},
	    {"{'oneOf':[{'type':'string'},{'not':{}}]}", "{}", "keyword 'not'"},
	    {"{'type':'object','allOf':[]}", "{}", "keyword 'allOf'"},
	    {"{'type':'object','patternProperties':{}}", "{}", "keyword 'patternProperties'"},
	    {"{'type':'object','dependencies':{}}", "{}", "keyword 'dependencies'"},
	    {"{'type':'array','uniqueItems':true}", "{}", "keyword 'uniqueItems'"},
	    {"{'type':'integer','multipleOf':2}", "{}", "keyword 'multipleOf'"},
	    {"{'type':'integer','exclusiveMinimum':2}", "{}", "keyword 'exclusiveMinimum'"},
	    {"{'type':'object','properties':{'a':true}}", "{}", "a schema must be an object"},
	    {"{'type':'object'", "{}", "tool t_row's input schema is not valid JSON"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		msg = NULL;
		int r = row(bad[i].in, bad[i].out, &msg);
		if (r != -1 || !msg || !strstr(msg, bad[i].want))
			fprintf(stderr, "  [%zu] r=%d message '%s' lacks '%s'\n", i, r, msg ? msg : "(null)",
				bad[i].want);
		CHECK(r == -1 && msg && strstr(msg, bad[i].want));
		free(msg);
	}
}

/* environment_run_code's images follow the text item as MCP image content;
 * a tool without content items answers exactly what tools_result does. */
TEST(run_code_images_as_image_content)
{
	const char *sc = "{\"results\":[{\"is_main_result\":false,\"png\":\"iVBORw0KGgo=\"},{\"text\":\"1\","
			 "\"jpeg\":\"/9j/\"}],\"stdout\":\"\",\"stderr\":\"\",\"context_id\":\"c\"}";
	const tool *t = tools_find("environment.run_code");
	CHECK(t && strcmp(t->name, "environment_run_code") == 0);
	json_t *r = tools_result_of(t, json_loads(sc, 0, NULL));
	json_t *content = json_object_get(r, "content");
	CHECK(json_array_size(content) == 3);
	CHECK(strcmp(json_string_value(json_object_get(json_array_get(content, 0), "type")), "text") == 0);
	json_t *png = json_array_get(content, 1), *jpeg = json_array_get(content, 2);
	CHECK(strcmp(json_string_value(json_object_get(png, "type")), "image") == 0);
	CHECK(strcmp(json_string_value(json_object_get(png, "data")), "iVBORw0KGgo=") == 0);
	CHECK(strcmp(json_string_value(json_object_get(png, "mimeType")), "image/png") == 0);
	CHECK(strcmp(json_string_value(json_object_get(jpeg, "mimeType")), "image/jpeg") == 0);
	CHECK(json_is_false(json_object_get(r, "isError")));
	json_decref(r);
	/* No images: the text item only. */
	r = tools_result_of(t, json_loads("{\"results\":[{\"text\":\"1\"}]}", 0, NULL));
	CHECK(json_array_size(json_object_get(r, "content")) == 1);
	json_decref(r);
	/* Another tool: byte-identical to tools_result. */
	const tool *ls = tools_find("environment_list");
	json_t *a = tools_result_of(ls, json_loads(sc, 0, NULL)), *b = tools_result(json_loads(sc, 0, NULL));
	char *da = json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER),
	     *db = json_dumps(b, JSON_COMPACT | JSON_PRESERVE_ORDER);
	CHECK(da && db && strcmp(da, db) == 0);
	free(da);
	free(db);
	json_decref(a);
	json_decref(b);
}
