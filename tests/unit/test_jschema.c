/* The MCP tools' argument checker (src/server/jschema.c): every keyword the
 * schemas use is checked, and a schema with one it does not implement is
 * refused (tools_init then refuses to start the servers) instead of being
 * published unchecked. */
#include <jansson.h>

#include "server/jschema.h"
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
	int r = s && j ? jschema_check(s, j, NULL, &msg) : -2;
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
	int r = s ? jschema_supported(s, &msg) : -2;
	if (r < 0 && want && (!msg || !strstr(msg, want))) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", msg ? msg : "(null)", want);
		r = -3;
	}
	free(msg);
	json_decref(s);
	return r;
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

/* A string's length is in characters (Unicode code points), not bytes: the
 * suite's minLength and maxLength cases with U+1F4A9 (4 bytes in UTF-8). */
TEST(lengths_count_characters)
{
	CHECK(val("{\"minLength\":2}", "\"\\ud83d\\udca9\"", "at least 2 characters") == -1);
	CHECK(val("{\"maxLength\":2}", "\"\\ud83d\\udca9\\ud83d\\udca9\"", NULL) == 0);
	CHECK(val("{\"maxLength\":2}", "\"\\u00e9t\\u00e9\"", "at most 2 characters") == -1);
	CHECK(val("{\"minLength\":3,\"maxLength\":3}", "\"\\u00e9t\\u00e9\"", NULL) == 0);
	/* minLength 1, every one of the tools' own: the old message. */
	CHECK(val("{\"minLength\":1}", "\"\"", "must not be empty") == -1);
	CHECK(val("{\"minLength\":1}", "\"\\u0000\"", NULL) == 0);
}

/* A pattern is a POSIX ERE run by regexec, published to clients that read
 * it as ECMA-262: only what both read alike is accepted. glibc reads \d as
 * "d", so ^\d+$ accepted "ddd" and refused "123" while the client's
 * validator did the opposite. */
TEST(patterns_read_alike)
{
	CHECK(val("{\"pattern\":\"^\\\\d+$\"}", "\"123\"", NULL) == 0 ||
	      sup("{\"pattern\":\"^\\\\d+$\"}", NULL) == -1);
	const char *refused[] = {
	    "^\\\\d+$", "\\\\w",   "\\\\s", "\\\\bx",	   "(a)\\\\1", "(?:a)",	  "a*?",
	    "a+?",	"a{1,2}?", "a**",   "[[:alpha:]]", "[[=a=]]",  "[[.a.]]", "[\\\\d]",
	    "[]a]",	"[^a]",	   "a.b",   "\\u00e9",	   "a{",       "a{x}",	  "a{2,1}x{1",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char schema[128];
		snprintf(schema, sizeof(schema), "{\"pattern\":\"%s\"}", refused[i]);
		if (sup(schema, "pattern") != -1)
			fprintf(stderr, "  [%zu] %s accepted\n", i, schema);
		CHECK(sup(schema, "pattern") == -1);
	}
	/* The tools' own, and what both read alike. */
	const char *accepted[] = {
	    "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$",
	    "^p[1-9][0-9]{0,8}$",
	    "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$",
	    "^(ab|cd)+\\\\.x?$",
	    "a{2}",
	    "a{2,}",
	    "^\\\\[\\\\]\\\\{\\\\}\\\\(\\\\)\\\\*\\\\+\\\\?\\\\|\\\\^\\\\$\\\\\\\\/$",
	};
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		char schema[160];
		snprintf(schema, sizeof(schema), "{\"pattern\":\"%s\"}", accepted[i]);
		if (sup(schema, NULL) != 0)
			fprintf(stderr, "  [%zu] %s refused\n", i, schema);
		CHECK(sup(schema, NULL) == 0);
	}
	CHECK(val("{\"pattern\":\"^(ab|cd)+\\\\.x?$\"}", "\"abcd.x\"", NULL) == 0);
	CHECK(val("{\"pattern\":\"^(ab|cd)+\\\\.x?$\"}", "\"abXd.x\"", "pattern") == -1);
}

/* glibc's regcomp spells out repetitions (a+ as aa*, a{0,99} as 99
 * optional copies), so nested quantified groups multiply: the fuzzer's
 * "^ax?mum++++...+*" took 2 GB before the lexical checks ran. Such a
 * pattern is refused before regcomp sees it, and says why. */
TEST(patterns_too_large_refused_before_regcomp)
{
	char pat[200] = "^ax?mum", schema[300];
	memset(pat + 7, '+', 60);
	strcpy(pat + 67, "*");
	snprintf(schema, sizeof(schema), "{\"pattern\":\"%s\"}", pat);
	CHECK(sup(schema, "quantifier after a quantifier") == -1);
	const char *large[] = {"((a{0,99}){0,99}){0,99}",
			       "(((((((((((((((((a+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+)+",
			       "(a{0,1500})(b{0,1500})", "a{0,32000}b{0,32000}c{0,32000}"};
	for (size_t i = 0; i < sizeof(large) / sizeof(large[0]); i++) {
		snprintf(schema, sizeof(schema), "{\"pattern\":\"%s\"}", large[i]);
		CHECK(sup(schema, "too large") == -1);
	}
	/* Below the bound they compile and match as before. */
	CHECK(val("{\"pattern\":\"^((a{0,9}){0,9}b)+$\"}", "\"aaab\"", NULL) == 0);
	CHECK(val("{\"pattern\":\"^(((a+)+)+)+$\"}", "\"aa\"", NULL) == 0);
}

/* ---- the JSON-Schema-Test-Suite ----------------------------------------------
 * Debian's json-schema-test-suite (scripts/deps.sh test installs it) holds
 * the official cases of each draft, one file per keyword: {description,
 * schema, tests: [{description, data, valid}]}. The checker implements
 * draft-07's keywords (the newest draft Debian 12 ships; the keywords it
 * implements read the same in 2020-12). For each keyword it implements, its
 * file runs: a group whose schema uses a keyword the checker refuses
 * (jschema_supported) is skipped with that reason, every other case must
 * give the suite's verdict, except the departures jschema.h names, which
 * are listed below and must still depart (a stale entry fails). For every
 * other keyword file of the draft, the keyword must be refused. */

#include <dirent.h>
#include <stdbool.h>
#include <sys/stat.h>

static const char *suite_dir(void)
{
	const char *d = getenv("SBX_JSON_SCHEMA_SUITE");
	return d && *d ? d : "/usr/share/json-schema-test-suite/tests/draft7";
}

/* The keyword each run file tests; description, title, default and examples
 * are annotations (default.json). */
static const char *const suite_run[][2] = {
    {"type.json", "type"},
    {"optional/zeroTerminatedFloats.json", "type"},
    {"optional/bignum.json", "type"},
    {"enum.json", "enum"},
    {"oneOf.json", "oneOf"},
    {"anyOf.json", "anyOf"},
    {"minimum.json", "minimum"},
    {"maximum.json", "maximum"},
    {"minLength.json", "minLength"},
    {"maxLength.json", "maxLength"},
    {"pattern.json", "pattern"},
    {"minItems.json", "minItems"},
    {"maxItems.json", "maxItems"},
    {"items.json", "items"},
    {"properties.json", "properties"},
    {"additionalProperties.json", "additionalProperties"},
    {"required.json", "required"},
    {"default.json", "default"},
};

/* Cases where the checker departs from the suite on purpose (jschema.h). */
static const struct {
	const char *file, *group, *test, *why;
} suite_departs[] = {
    {"optional/zeroTerminatedFloats.json",
     "some languages do not distinguish between different types of numeric value",
     "a float without fractional part is an integer",
     "an integer is a number written without a fraction or exponent: the handlers read integers with "
     "json_int, which takes 1.0 for absent"},
    {NULL, NULL, NULL, NULL},
};

typedef struct suite_count {
	int passed, failed, departed, skipped;
} suite_count;

static int suite_departure(const char *file, const char *group, const char *test, bool *seen)
{
	for (size_t i = 0; suite_departs[i].file; i++)
		if (strcmp(suite_departs[i].file, file) == 0 && strcmp(suite_departs[i].group, group) == 0 &&
		    strcmp(suite_departs[i].test, test) == 0) {
			seen[i] = true;
			return 1;
		}
	return 0;
}

static int suite_file(const char *file, suite_count *c, bool *seen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", suite_dir(), file);
	json_error_t jerr;
	json_t *groups = json_load_file(path, JSON_ALLOW_NUL, &jerr);
	if (!groups && strstr(jerr.text, "too big")) {
		/* Integers past int64 (bignum.json): jansson, the servers' JSON
		 * parser, refuses the whole message, so no such value reaches the
		 * checker. Counted (read as reals) and skipped. */
		groups = json_load_file(path, JSON_ALLOW_NUL | JSON_DECODE_INT_AS_REAL, NULL);
		size_t gi;
		json_t *g;
		json_array_foreach(groups, gi, g) c->skipped +=
		    (int)json_array_size(json_object_get(g, "tests"));
		printf("    skipped %d: integers past int64, which jansson refuses (%s)\n", c->skipped,
		       jerr.text);
		json_decref(groups);
		return c->skipped > 0 ? 0 : -1;
	}
	if (!json_is_array(groups)) {
		fprintf(stderr, "  %s: %s\n", path, jerr.text);
		json_decref(groups);
		return -1;
	}
	size_t gi, ti;
	json_t *g, *t;
	json_array_foreach(groups, gi, g)
	{
		const char *gd = json_string_value(json_object_get(g, "description"));
		json_t *schema = json_object_get(g, "schema"), *tests = json_object_get(g, "tests");
		char *why = NULL;
		if (jschema_supported(schema, &why) < 0) {
			printf("    skipped %zu of '%s': %s\n", json_array_size(tests), gd, why ? why : "?");
			c->skipped += (int)json_array_size(tests);
			free(why);
			continue;
		}
		json_array_foreach(tests, ti, t)
		{
			const char *td = json_string_value(json_object_get(t, "description"));
			bool valid = json_is_true(json_object_get(t, "valid"));
			char *msg = NULL;
			int r = jschema_check(schema, json_object_get(t, "data"), NULL, &msg);
			if ((r == 0) == valid)
				c->passed++;
			else if (suite_departure(file, gd, td, seen))
				c->departed++;
			else {
				c->failed++;
				printf("    FAILED '%s' / '%s': expected %s, got %s\n", gd, td,
				       valid ? "valid" : "invalid",
				       r == 0 ? "valid"
				       : msg  ? msg
					      : "invalid");
			}
			free(msg);
		}
	}
	json_decref(groups);
	return 0;
}

TEST(json_schema_test_suite)
{
	struct stat st;
	if (stat(suite_dir(), &st) < 0)
		SKIP("no JSON-Schema-Test-Suite at /usr/share/json-schema-test-suite/tests/draft7 "
		     "(apt-get install json-schema-test-suite, or scripts/deps.sh test; or set "
		     "SBX_JSON_SCHEMA_SUITE to its tests/draft7)");
	bool seen[sizeof(suite_departs) / sizeof(suite_departs[0])] = {0};
	suite_count total = {0};
	bool ok = true;
	for (size_t i = 0; i < sizeof(suite_run) / sizeof(suite_run[0]); i++) {
		suite_count c = {0};
		if (suite_file(suite_run[i][0], &c, seen) < 0) {
			ok = false;
			continue;
		}
		printf("  draft7 %-20s %3d passed, %d failed, %d departed, %2d skipped  (%s)\n",
		       suite_run[i][1], c.passed, c.failed, c.departed, c.skipped, suite_run[i][0]);
		/* A file that passes nothing proves nothing (the optional ones
		 * hold only a departure or what cannot reach the checker). */
		ok = ok && c.failed == 0 && (c.passed > 0 || strncmp(suite_run[i][0], "optional/", 9) == 0);
		total.passed += c.passed;
		total.failed += c.failed;
		total.departed += c.departed;
		total.skipped += c.skipped;
	}
	printf("  draft7 total: %d passed, %d failed, %d departed (on purpose), %d skipped\n", total.passed,
	       total.failed, total.departed, total.skipped);
	for (size_t i = 0; suite_departs[i].file; i++)
		if (!seen[i]) {
			printf("  stale departure: %s '%s' / '%s' now gives the suite's verdict\n",
			       suite_departs[i].file, suite_departs[i].group, suite_departs[i].test);
			ok = false;
		}
	CHECK(ok);
}

/* Every other keyword file of the draft names a keyword the checker does
 * not implement: it must be refused, so that tools_init refuses a schema
 * that uses it. */
TEST(json_schema_test_suite_other_keywords_refused)
{
	DIR *d = opendir(suite_dir());
	if (!d)
		SKIP("no JSON-Schema-Test-Suite (apt-get install json-schema-test-suite)");
	struct dirent *de;
	int refused = 0;
	bool ok = true;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		bool run = false;
		for (size_t i = 0; i < sizeof(suite_run) / sizeof(suite_run[0]); i++)
			run = run || strcmp(suite_run[i][0], de->d_name) == 0;
		if (run)
			continue;
		char kw[64];
		snprintf(kw, sizeof(kw), "%.*s", (int)(n - 5), de->d_name);
		/* The files not named after their keyword. */
		if (strcmp(kw, "if-then-else") == 0)
			snprintf(kw, sizeof(kw), "if");
		else if (strcmp(kw, "ref") == 0 || strcmp(kw, "refRemote") == 0)
			snprintf(kw, sizeof(kw), "$ref");
		char schema[128], want[96];
		if (strcmp(kw, "boolean_schema") == 0) {
			snprintf(schema, sizeof(schema), "{\"items\":true}");
			snprintf(want, sizeof(want), "a schema must be an object");
		} else {
			snprintf(schema, sizeof(schema), "{\"%s\":{}}", kw);
			snprintf(want, sizeof(want), "keyword '%s' is not implemented", kw);
		}
		if (sup(schema, want) != -1) {
			printf("  %s: %s is not refused\n", de->d_name, schema);
			ok = false;
		} else
			refused++;
	}
	closedir(d);
	printf("  draft7: %d other keyword files, every keyword refused\n", refused);
	CHECK(ok);
	CHECK(refused >= 15);
}
