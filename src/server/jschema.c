/* The argument checker of the MCP tools (see jschema.h). */
#include "server/jschema.h"

#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"

static bool type_is(const char *type, const json_t *v)
{
	if (streq(type, "object"))
		return json_is_object(v);
	if (streq(type, "array"))
		return json_is_array(v);
	if (streq(type, "string"))
		return json_is_string(v);
	if (streq(type, "integer"))
		return json_is_integer(v);
	if (streq(type, "number"))
		return json_is_number(v);
	if (streq(type, "boolean"))
		return json_is_boolean(v);
	if (streq(type, "null"))
		return json_is_null(v);
	return false;
}

static const char *type_noun(const char *type)
{
	if (streq(type, "object"))
		return "an object";
	if (streq(type, "array"))
		return "an array";
	if (streq(type, "integer"))
		return "an integer";
	if (streq(type, "null"))
		return "null";
	return streq(type, "string") ? "a string" : streq(type, "number") ? "a number" : "a boolean";
}

static const char *json_noun(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a non-integer number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static int fail(char **msg, const char *fmt, ...) _printf_(2, 3);
static int fail(char **msg, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(msg, fmt, ap) < 0)
		*msg = NULL;
	va_end(ap);
	return -1;
}

static int check(const json_t *s, const json_t *v, const char *path, const char *const *reserved, char **msg);

/* "a string or an object": the types an alternative's "type" names. */
static void alt_types(FILE *f, const json_t *alts)
{
	size_t i;
	json_t *a;
	json_array_foreach(alts, i, a)
	{
		json_t *t = json_object_get(a, "type");
		fprintf(f, "%s%s",
			i == 0				 ? ""
			: i + 1 == json_array_size(alts) ? " or "
							 : ", ",
			json_is_string(t) ? type_noun(json_string_value(t)) : "a value of another form");
	}
}

/* oneOf (exactly one alternative matches) and anyOf (at least one). The
 * error names the deepest field: when one alternative has the value's type,
 * its own complaint is the one that helps. */
static int check_alternatives(const json_t *alts, bool one, const json_t *v, const char *path, char **msg)
{
	size_t i, matched = 0, typed = 0;
	json_t *a;
	char *typed_msg = NULL;
	json_array_foreach(alts, i, a)
	{
		char *m = NULL;
		if (check(a, v, path, NULL, &m) == 0) {
			matched++;
			continue;
		}
		json_t *t = json_object_get(a, "type");
		if (json_is_string(t) && type_is(json_string_value(t), v)) {
			typed++;
			free(typed_msg);
			typed_msg = m;
		} else
			free(m);
	}
	if (matched == 1 || (!one && matched > 1)) {
		free(typed_msg);
		return 0;
	}
	if (matched > 1) {
		free(typed_msg);
		return fail(msg, "'%s' matches more than one of its accepted forms", path);
	}
	if (typed == 1) {
		*msg = typed_msg;
		return -1;
	}
	free(typed_msg);
	_cleanup_free_ char *forms = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&forms, &len);
	if (f) {
		alt_types(f, alts);
		fclose(f);
	}
	return fail(msg, "'%s' must be %s, not %s", path, forms ? forms : "of an accepted form",
		    json_noun(v));
}

/* Code points in s[0..n) (valid UTF-8): the bytes that do not continue one. */
static size_t utf8_chars(const char *s, size_t n)
{
	size_t chars = 0;
	for (size_t i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xC0) != 0x80;
	return chars;
}

/* Why ERE (regexec, here) and ECMA-262 (the clients' validators) could
 * read pattern p differently, or NULL if they read it alike. Accepted:
 * ASCII literals, escaped punctuation, ^ $ | ( ), the quantifiers * + ?
 * {n} {n,} {n,m} (one per atom), bracket expressions of literals and
 * ranges. Refused, each for a difference: \d \w \s \b and any other escape
 * of a letter or digit (glibc reads \d as "d"; \1 is a back-reference),
 * (?...) groups, a quantifier after a quantifier (a*? is lazy in ECMA-262),
 * '.' outside brackets (it matches a newline in ERE only), [^...] and
 * non-ASCII bytes (ERE here matches bytes, ECMA-262 characters), [:class:]
 * [=x=] [.x.] and '\' inside brackets, [] and a '{' that is not a bound. */
static const char *pattern_alien(const char *p)
{
	bool quantified = false; /* the previous token was a quantifier */
	for (; *p; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch >= 0x80 || ch < 0x20)
			return "non-ASCII or control characters (ERE matches bytes, ECMA-262 characters)";
		bool q = ch == '*' || ch == '+' || ch == '?' || ch == '{';
		if (q && quantified)
			return "a quantifier after a quantifier (a*? is lazy in ECMA-262)";
		quantified = q;
		if (ch == '\\') {
			if (!p[1] || !strchr(".[]{}()\\*+?^$|/-", p[1]))
				return "an escape other than of punctuation (glibc reads \\d as d; \\1 is a "
				       "back-reference)";
			p++;
		} else if (ch == '(' && p[1] == '?')
			return "a (?...) group";
		else if (ch == '.')
			return "'.' outside brackets (it matches a newline in ERE only)";
		else if (ch == '{') {
			char *end;
			unsigned long lo = strtoul(p + 1, &end, 10), hi = lo;
			if (end == p + 1)
				return "a '{' that is not a bound {n}, {n,} or {n,m}";
			if (*end == ',' && end[1] != '}') {
				const char *m = end + 1;
				hi = strtoul(m, &end, 10);
				if (end == m)
					return "a '{' that is not a bound {n}, {n,} or {n,m}";
			} else if (*end == ',')
				end++;
			if (*end != '}' || hi < lo)
				return "a '{' that is not a bound {n}, {n,} or {n,m}";
			p = end;
		} else if (ch == '[') {
			if (p[1] == '^')
				return "a negated bracket [^...] (ERE here matches bytes, ECMA-262 "
				       "characters)";
			if (p[1] == ']')
				return "[] (a literal ']' in ERE, an empty class in ECMA-262)";
			for (p++; *p != ']'; p++) {
				if (!*p)
					return "an unclosed bracket";
				if (*p == '\\' || (unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
					return "'\\' or non-ASCII inside brackets";
				if (*p == '[' && p[1] && strchr(":=.", p[1]))
					return "a [:class:], [=x=] or [.x.] (literals in ECMA-262)";
			}
		}
	}
	return NULL;
}

/* How many nodes glibc's regcomp builds for pattern p, roughly: it copies
 * a quantified atom once per repetition it must spell out (a+ is aa*,
 * a{2,5} five copies), so nested quantified groups multiply, and its time
 * and memory grow faster than the count (a{0,1999}: 0.1 s and 33 MB;
 * a{0,4999}: 0.5 s and 200 MB; three {0,32000}: 100 s and 24 GB). The
 * tools' own patterns cost about 130. Saturates at PATTERN_COST_MAX; -1
 * for groups nested deeper than the stack. Called on a pattern
 * pattern_alien() accepted (bounds are well formed). */
#define PATTERN_COST_MAX 2000UL
static long pattern_cost(const char *p)
{
	enum { DEPTH = 32 };
	unsigned long sum[DEPTH] = {0}, last[DEPTH] = {0};
	int d = 0;
	for (; *p; p++) {
		unsigned long atom = 1, mult = 0;
		if (*p == '(') {
			if (++d == DEPTH)
				return -1;
			sum[d] = last[d] = 0;
			continue;
		} else if (*p == ')' && d > 0) {
			atom = sum[d--];
		} else if (*p == '+') {
			mult = 2;
		} else if (*p == '*' || *p == '?') {
			mult = 1;
		} else if (*p == '{') {
			char *end;
			unsigned long lo = strtoul(p + 1, &end, 10), hi = lo;
			if (*end == ',')
				hi = end[1] == '}' ? lo + 1 : strtoul(end + 1, &end, 10);
			p = strchr(p, '}') ? strchr(p, '}') : p + strlen(p) - 1;
			mult = hi > 0 ? hi : 1;
		} else if (*p == '|') {
			last[d] = 0;
			continue;
		} else if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '[') {
			p = strchr(p + 1, ']') ? strchr(p + 1, ']') : p + strlen(p) - 1;
		}
		if (mult) { /* the quantifier repeats the previous atom */
			unsigned long extra = last[d] * (mult - 1);
			if (mult - 1 && extra / (mult - 1) != last[d])
				extra = PATTERN_COST_MAX;
			sum[d] = sum[d] + extra > PATTERN_COST_MAX ? PATTERN_COST_MAX : sum[d] + extra;
			last[d] = last[d] + extra > PATTERN_COST_MAX ? PATTERN_COST_MAX : last[d] + extra;
			continue;
		}
		last[d] = atom;
		sum[d] = sum[d] + atom > PATTERN_COST_MAX ? PATTERN_COST_MAX : sum[d] + atom;
	}
	while (d > 0) { /* an unclosed group: regcomp refuses it; count it anyway */
		unsigned long inner = sum[d--];
		sum[d] = sum[d] + inner > PATTERN_COST_MAX ? PATTERN_COST_MAX : sum[d] + inner;
	}
	return (long)sum[0];
}

/* The schemas' "pattern", as a POSIX extended regular expression: the
 * patterns in the table keep to what ERE and ECMA-262 read alike (anchors,
 * bracket expressions, bounded repeats), which tools_schema_supported checks
 * by compiling them. */
static int check_pattern(const char *pattern, const json_t *v, const char *path, char **msg)
{
	regex_t re;
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		return fail(msg, "internal error: the schema pattern for '%s' does not compile", path);
	size_t n = json_string_length(v);
	const char *str = json_string_value(v);
	bool ok = strlen(str) == n && regexec(&re, str, 0, NULL, 0) == 0; /* a NUL never matches */
	regfree(&re);
	if (!ok)
		return fail(msg, "'%s' must match the pattern %s", path, pattern);
	return 0;
}

static int check(const json_t *s, const json_t *v, const char *path, const char *const *reserved, char **msg)
{
	json_t *type = json_object_get(s, "type");
	if (json_is_string(type) && !type_is(json_string_value(type), v))
		return fail(msg, "'%s' must be %s, not %s", path, type_noun(json_string_value(type)),
			    json_noun(v));
	if (json_is_array(type)) {
		bool ok = false;
		size_t i;
		json_t *t;
		json_array_foreach(type, i, t) ok = ok || type_is(json_string_value(t) ?: "", v);
		if (!ok)
			return fail(msg, "'%s' has the wrong type (%s)", path, json_noun(v));
	}
	json_t *en = json_object_get(s, "enum");
	if (en) {
		bool ok = false;
		size_t i;
		json_t *e;
		json_array_foreach(en, i, e) ok = ok || json_equal(e, v);
		if (!ok) {
			_cleanup_free_ char *list = json_dumps(en, JSON_COMPACT);
			return fail(msg, "'%s' must be one of %s", path, list ? list : "the listed values");
		}
	}
	json_t *alts;
	if ((alts = json_object_get(s, "oneOf")) && check_alternatives(alts, true, v, path, msg) < 0)
		return -1;
	if ((alts = json_object_get(s, "anyOf")) && check_alternatives(alts, false, v, path, msg) < 0)
		return -1;
	if (json_is_number(v)) {
		json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
		/* Integers compare as integers: a double cannot hold every int64. */
		bool lo = json_is_integer(v) && json_is_integer(mn)
			      ? json_integer_value(v) < json_integer_value(mn)
			      : mn && json_number_value(v) < json_number_value(mn);
		bool hi = json_is_integer(v) && json_is_integer(mx)
			      ? json_integer_value(v) > json_integer_value(mx)
			      : mx && json_number_value(v) > json_number_value(mx);
		if (lo)
			return fail(msg, "'%s' must be at least %.17g", path, json_number_value(mn));
		if (hi)
			return fail(msg, "'%s' must be at most %.17g", path, json_number_value(mx));
	}
	if (json_is_string(v)) {
		/* Lengths are in characters (code points), as JSON Schema counts
		 * them; jansson's strings are valid UTF-8. */
		size_t chars = utf8_chars(json_string_value(v), json_string_length(v));
		json_int_t mn = json_int(s, "minLength", 0), mx = json_int(s, "maxLength", 0);
		if (json_object_get(s, "minLength") && chars < (size_t)mn)
			return mn <= 1 ? fail(msg, "'%s' must not be empty", path)
				       : fail(msg, "'%s' must be at least %lld characters long", path,
					      (long long)mn);
		if (json_object_get(s, "maxLength") && chars > (size_t)mx)
			return fail(msg, "'%s' must be at most %lld characters long", path, (long long)mx);
		json_t *pat = json_object_get(s, "pattern");
		if (json_is_string(pat) && check_pattern(json_string_value(pat), v, path, msg) < 0)
			return -1;
	}
	if (json_is_array(v)) {
		if (json_array_size(v) < (size_t)json_int(s, "minItems", 0))
			return fail(msg, "'%s' must not be empty", path);
		if (json_object_get(s, "maxItems") && json_array_size(v) > (size_t)json_int(s, "maxItems", 0))
			return fail(msg, "'%s' may have at most %lld items", path,
				    (long long)json_int(s, "maxItems", 0));
		json_t *items = json_object_get(s, "items");
		size_t i;
		json_t *e;
		if (items)
			json_array_foreach(v, i, e)
			{
				_cleanup_free_ char *p = NULL;
				if (asprintf(&p, "%s[%zu]", path, i) < 0)
					return fail(msg, "out of memory");
				if (check(items, e, p, NULL, msg) < 0)
					return -1;
			}
	}
	if (json_is_object(v)) {
		json_t *props = json_object_get(s, "properties"),
		       *addl = json_object_get(s, "additionalProperties");
		size_t i;
		json_t *r;
		json_array_foreach(json_object_get(s, "required"), i, r)
		{
			const char *k = json_string_value(r);
			if (k && !json_object_get(v, k)) {
				if (!*path)
					return fail(msg, "missing required argument '%s'", k);
				return fail(msg, "'%s' is missing its required field '%s'", path, k);
			}
		}
		const char *k;
		json_t *e;
		json_object_foreach((json_t *)v, k, e)
		{
			_cleanup_free_ char *p = NULL;
			if (asprintf(&p, "%s%s%s", path, *path ? "." : "", k) < 0)
				return fail(msg, "out of memory");
			json_t *ps = json_object_get(props, k);
			if (!ps && json_is_object(addl))
				ps = addl;
			if (ps) {
				if (check(ps, e, p, NULL, msg) < 0)
					return -1;
				continue;
			}
			bool ok = !json_is_false(addl);
			for (const char *const *q = reserved; !ok && q && *q; q++)
				ok = streq(*q, k);
			if (!ok) {
				_cleanup_free_ char *known = NULL;
				size_t len = 0;
				FILE *f = open_memstream(&known, &len);
				const char *pk;
				json_t *pv;
				bool first = true;
				if (f) {
					json_object_foreach(props, pk, pv)
					{
						fprintf(f, "%s%s", first ? "" : ", ", pk);
						first = false;
					}
					fclose(f);
				}
				return fail(msg, "unknown argument '%s' (accepted: %s)", p,
					    known && *known ? known : "none");
			}
		}
	}
	return 0;
}

static bool known_type(const char *t)
{
	static const char *const types[] = {"object", "array",	 "string", "integer",
					    "number", "boolean", "null"};
	for (size_t i = 0; t && i < ARRAY_SIZE(types); i++)
		if (streq(types[i], t))
			return true;
	return false;
}

/* The keywords check() implements, and the annotations it may ignore. */
static const char *const schema_keywords[] = {
    "type",	 "enum",	"oneOf",    "anyOf",	"minimum",  "maximum",	  "minLength",
    "maxLength", "pattern",	"minItems", "maxItems", "items",    "properties", "additionalProperties",
    "required",	 "description", "title",    "default",	"examples", NULL,
};

static int supported(const json_t *s, const char *path, char **msg)
{
	if (!json_is_object(s))
		return fail(msg, "%s: a schema must be an object", path);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)s, k, v)
	{
		bool known = false;
		for (const char *const *q = schema_keywords; *q && !known; q++)
			known = streq(*q, k);
		if (!known)
			return fail(msg, "%s: keyword '%s' is not implemented by the argument checker", path,
				    k);
		_cleanup_free_ char *sub = NULL;
		if (streq(k, "properties")) {
			if (!json_is_object(v))
				return fail(msg, "%s: properties must be an object", path);
			const char *pk;
			json_t *pv;
			json_object_foreach(v, pk, pv)
			{
				_cleanup_free_ char *pp = NULL;
				if (asprintf(&pp, "%s.%s", path, pk) < 0 || supported(pv, pp, msg) < 0)
					return pp ? -1 : fail(msg, "out of memory");
			}
		} else if (streq(k, "items") || (streq(k, "additionalProperties") && !json_is_boolean(v))) {
			if (asprintf(&sub, "%s.%s", path, k) < 0 || supported(v, sub, msg) < 0)
				return sub ? -1 : fail(msg, "out of memory");
		} else if (streq(k, "oneOf") || streq(k, "anyOf")) {
			if (!json_is_array(v) || json_array_size(v) == 0)
				return fail(msg, "%s: %s must be a non-empty array", path, k);
			size_t i;
			json_t *a;
			json_array_foreach(v, i, a)
			{
				_cleanup_free_ char *ap = NULL;
				if (asprintf(&ap, "%s.%s[%zu]", path, k, i) < 0 || supported(a, ap, msg) < 0)
					return ap ? -1 : fail(msg, "out of memory");
			}
		} else if (streq(k, "pattern")) {
			/* The lexical checks first: regcomp of a pattern such as
			 * ((a+)+)+... or a+++++ takes seconds and gigabytes. */
			if (!json_is_string(v))
				return fail(msg, "%s: pattern must be a string", path);
			const char *why = pattern_alien(json_string_value(v));
			if (why)
				return fail(msg, "%s: pattern %s: ERE and ECMA-262 read it differently: %s",
					    path, json_string_value(v), why);
			long cost = pattern_cost(json_string_value(v));
			if (cost < 0 || (unsigned long)cost >= PATTERN_COST_MAX)
				return fail(msg,
					    "%s: pattern %s: too large once its repetitions are spelled out",
					    path, json_string_value(v));
			regex_t re;
			if (regcomp(&re, json_string_value(v), REG_EXTENDED | REG_NOSUB) != 0)
				return fail(msg, "%s: pattern is not a POSIX extended regular expression",
					    path);
			regfree(&re);
		} else if (streq(k, "type")) {
			bool ok =
			    json_is_string(v) ? known_type(json_string_value(v)) : json_array_size(v) > 0;
			size_t i;
			json_t *t;
			json_array_foreach(v, i, t) ok = ok && known_type(json_string_value(t));
			if (!ok)
				return fail(msg, "%s: unknown type", path);
		} else if ((streq(k, "minimum") || streq(k, "maximum")) && !json_is_number(v))
			return fail(msg, "%s: %s must be a number", path, k);
		else if ((streq(k, "minLength") || streq(k, "maxLength") || streq(k, "minItems") ||
			  streq(k, "maxItems")) &&
			 (!json_is_integer(v) || json_integer_value(v) < 0))
			return fail(msg, "%s: %s must be a non-negative integer", path, k);
		else if ((streq(k, "enum") || streq(k, "required")) && !json_is_array(v))
			return fail(msg, "%s: %s must be an array", path, k);
	}
	return 0;
}

int jschema_supported(const json_t *schema, char **ret_msg)
{
	return supported(schema, "#", ret_msg);
}

int jschema_check(const json_t *schema, const json_t *v, const char *const *extra_top, char **ret_msg)
{
	return check(schema, v, "", extra_top, ret_msg);
}

const char *jschema_noun(const json_t *v)
{
	return json_noun(v);
}
