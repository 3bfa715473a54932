/* A JSON Schema checker for the MCP tools' argument schemas: the subset of
 * draft-07 (read alike by draft 2020-12) that the tool table uses, checked
 * field by field with messages that name the field and say what it should
 * be. Pure: no I/O, no global state, thread-safe.
 *
 * Keywords implemented: type (a name or an array of names), enum, oneOf,
 * anyOf, minimum, maximum, minLength, maxLength (in characters), pattern,
 * minItems, maxItems, items (one schema for every element), properties,
 * additionalProperties (false or a schema), required. Annotations allowed
 * and ignored: description, title, default, examples. Every other keyword
 * (format, $ref, not, const, allOf, boolean schemas, items as an array,
 * ...) is refused by jschema_supported(): a schema is published only if
 * every keyword in it is held to, so the servers refuse to start with one
 * that is not (tools_init).
 *
 * Where it departs from the standard, on purpose (docs/server.md,
 * "Arguments", with the JSON-Schema-Test-Suite's counts): "integer" is a
 * JSON number written without a fraction or exponent (1.0 and 1e9 are not
 * integers: the handlers read integers with json_int), and "pattern" is a
 * POSIX extended regular expression, kept by jschema_supported() to what
 * ERE and ECMA-262 read alike.
 *
 * Messages are malloc'd (NULL only when memory ran out) and go to the client
 * as they are: "'limits.pids' must be at most 4194304". */
#pragma once
#include <jansson.h>

/* Returns 0 if every keyword of schema, recursively, is one jschema_check()
 * implements and its value has the form that keyword needs (a pattern that
 * compiles, a non-negative length, ...). Else -1 and *ret_msg naming the
 * place ("#.properties.tag: ...") and the keyword. */
int jschema_supported(const json_t *schema, char **ret_msg);

/* Checks v against schema (one that jschema_supported() accepted). Returns
 * 0, or -1 with *ret_msg naming the offending field by its path from v
 * ("limits.pids", "argv[2]", "" for v itself). extra_top (NULL-terminated,
 * may be NULL) names keys of v itself that are accepted although the
 * schema's additionalProperties is false. */
int jschema_check(const json_t *schema, const json_t *v, const char *const *extra_top, char **ret_msg);

/* What v is, for messages: "an object", "a non-integer number", "null", ... */
const char *jschema_noun(const json_t *v);
