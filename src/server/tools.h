/* The MCP tool table: name, dotted alias, description, schemas, annotations
 * and handler of every tool whose capability exists. Each handler parses its
 * (already schema-checked) arguments, makes one sbx_* call and shapes the
 * result as API.md's structuredContent. Protocol concerns (JSON-RPC ids,
 * threads, cancellation bookkeeping, progress rate) live in mcp.c. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sbx.h"

typedef struct tool_call {
	sbx_ctx *ctx;
	const json_t *args;	 /* the arguments object, already validated against the input schema */
	int cancel_fd;		 /* -1, or an fd that becomes readable when the call is cancelled */
	sbx_output_fn on_output; /* execute: output as it arrives (progress), may be NULL */
	void *userdata;
	char *bad_params; /* set (malloc'd) by a handler whose arguments are malformed: -32602 */
} tool_call;

/* Returns 0 and the structuredContent in *ret; or negative with *err set
 * (a tool error: isError) or with c->bad_params set (invalid params). */
typedef int (*tool_fn)(tool_call *c, json_t **ret, sbx_err **err);
/* Undoes a successful call whose request was cancelled meanwhile (the client
 * will never learn of its result), e.g. removes a created environment. */
typedef void (*tool_undo_fn)(tool_call *c, const json_t *result);

typedef struct tool {
	const char *name;  /* published name: [a-zA-Z0-9_-] only */
	const char *alias; /* dotted name of the environment-control extension */
	const char *title;
	const char *description;
	const char *input_schema; /* JSON Schema text (the subset server/jschema.h checks) */
	const char *output_schema;
	/* Arguments of capabilities that have not landed: not in the schema,
	 * but accepted so that the handler can say "not available yet". */
	const char *const *reserved;
	/* Top-level string arguments that are bytes, so may hold NUL (\u0000):
	 * file content, stdin. Every other string holding one is refused. */
	const char *const *binary;
	bool read_only, destructive, idempotent, open_world;
	tool_fn run;
	tool_undo_fn undo;
	/* Content items that follow the text item of a success (images), from
	 * its structuredContent; NULL: the text item only. */
	json_t *(*content)(const json_t *structured);
	/* A structuredContent member that goes out only through content (a
	 * screenshot's PNG): removed from structuredContent and its text once
	 * content has its items. NULL: none. */
	const char *content_only;
} tool;

/* By published name or dotted alias; NULL if none. */
const tool *tools_find(const char *name);
/* The tools/list "tools" array (a new reference). NULL on ENOMEM. */
json_t *tools_list_json(void);
/* Checks args against t's input schema. Returns 0, or -1 with *ret_msg (malloc'd)
 * naming the offending field and what it should be. */
int tools_validate(const tool *t, const json_t *args, char **ret_msg);
/* The CallToolResult for a success (steals structured) or an sbx error:
 * structuredContent plus the same JSON as a text content item; on error
 * isError true and structuredContent.error = {code, message}. */
json_t *tools_result(json_t *structured);
/* tools_result, plus t's own content items (t->content) after the text. */
json_t *tools_result_of(const tool *t, json_t *structured);
json_t *tools_error_result(sbx_code code, const char *message);
/* Parses the schemas once; returns -1 if a built-in schema is malformed or
 * uses a keyword server/jschema.h does not implement (a bug caught by
 * the tests: the servers refuse to start, saying tools_init_error()).
 * Thread-safe, idempotent. */
int tools_init(void);
/* Why tools_init() failed (which tool, schema and keyword); NULL if it did not. */
const char *tools_init_error(void);
/* What tools_init() does for each row: parses t's two schema texts and
 * checks them with jschema_supported(). Returns 0 with both schemas in ret
 * (new references), or -1 with *ret_msg (malloc'd) naming the tool, the
 * schema and the keyword: "tool T's input schema: #.tag: keyword
 * 'format' is not implemented by the argument checker". */
int tools_row_schemas(const tool *t, json_t *ret[2], char **ret_msg);

/* The largest CallToolResult a tool returns, in bytes of JSON: under the
 * 10 MiB message limit of the TypeScript SDK's stdio transport. A command's
 * output beyond it is cut (stdout_truncated / stderr_truncated). */
#define TOOLS_RESULT_MAX ((size_t)8 << 20)
/* The serialized size of tools_result(structured), closely estimated. */
size_t tools_result_size(const json_t *structured);
/* Cuts res's "stdout"/"stderr" strings (the longer first) until
 * tools_result_size(res) <= budget, setting the matching *_truncated flag.
 * Returns 0, -ENOMEM, or -E2BIG if it cannot fit without them. */
int tools_fit_output(json_t *res, size_t budget);
